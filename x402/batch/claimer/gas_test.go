package claimer_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"

	"github.com/seed1284c1d2/svc/internal/anviltest"
	"github.com/seed1284c1d2/svc/x402"
	"github.com/seed1284c1d2/svc/x402/batch/claimer"
	"github.com/seed1284c1d2/svc/x402/exact"
)

// BenchmarkGas measures, on anvil with the official facilitator, the gas
// of the claimer's transactions and the gas per paid call of
// batch-settlement against one exact transferWithAuthorization:
//
//   - a claim of 1, 10 and 100 channels, and a sweep;
//   - 1,000 calls over 10 channels (100 each): 10 deposits + one claim of
//     10 channels + one sweep, divided by 1,000;
//   - the same for 10, 100 and 1,000 calls a channel.
//
// The figures are reported as metrics (gas/...); run it once:
// go test ./x402/batch/claimer -run '^$' -bench Gas -benchtime 1x
func BenchmarkGas(b *testing.B) {
	e := newEnv(b)
	ctx := context.Background()
	var table strings.Builder

	// One exact payment settled by the same facilitator.
	n, _ := x402.LookupNetwork(x402.NetworkBase)
	exactReq := x402.PaymentRequirements{Scheme: x402.SchemeExact, Network: n.CAIP2, Amount: "1000", Asset: n.USDC, PayTo: e.payTo.Hex(),
		MaxTimeoutSeconds: 60, Extra: map[string]any{"name": n.EIP712Name, "version": n.EIP712Version}}
	// Two payments from two payers: the first one's transfer creates
	// payTo's balance, the second is the usual case.
	var exactGas [2]uint64
	for i := range exactGas {
		key, addr := anviltest.NewKey(b)
		e.chain.Mint(b, addr, big.NewInt(1_000_000))
		pl, err := exact.NewPayload(key, exactReq, time.Now(), time.Minute)
		if err != nil {
			b.Fatal(err)
		}
		raw, _ := json.Marshal(pl)
		resp, err := e.fac.Settle(ctx, x402.PaymentPayload{X402Version: 2, Accepted: exactReq, Payload: raw}, exactReq)
		if err != nil || !resp.Success {
			b.Fatalf("exact settlement: %+v, %v", resp, err)
		}
		exactGas[i] = e.chain.WaitReceipt(b, common.HexToHash(resp.Transaction)).GasUsed
	}
	fmt.Fprintf(&table, "exact transferWithAuthorization: %d gas per paid call (%d for the first payment to payTo)\n", exactGas[1], exactGas[0])
	b.ReportMetric(float64(exactGas[1]), "gas/exact-call")

	// claimAll opens channels, charges each calls times and claims and
	// sweeps them with a fresh claimer: deposit, claim and sweep gas.
	claimAll := func(channels, calls int) (deposits, claimGas, sweepGas uint64) {
		chans, log := claimer.NewMemoryChannels(), claimer.NewMemoryLog()
		for i := 0; i < channels; i++ {
			p := e.open(b, int64(calls)*price+price)
			deposits += p.depositGas
			chans.Put(e.serve(b, p, calls, time.Now()))
		}
		c := e.newClaimer(b, chans, log, claimer.Policy{MaxBatch: 1000}, nil, nil)
		rep, err := c.ClaimNow(ctx)
		if err != nil || rep.Claims != 1 || rep.Channels != channels || rep.Sweeps != 1 {
			b.Fatalf("claim of %d channels: %+v, %v", channels, rep, err)
		}
		recent, _ := log.Recent(ctx, x402.NetworkBase, 1)
		claimGas = e.chain.WaitReceipt(b, common.HexToHash(recent[0].Tx)).GasUsed
		return deposits, claimGas, rep.GasUsed - claimGas
	}
	for _, k := range []int{1, 10, 100} {
		dep, claim, sweep := claimAll(k, 1)
		fmt.Fprintf(&table, "claim of %3d channels: %8d gas (%6d a channel); sweep %d gas; deposit %d gas a channel\n", k, claim, claim/uint64(k), sweep, dep/uint64(k))
		b.ReportMetric(float64(claim), fmt.Sprintf("gas/claim-%d", k))
		if k == 1 {
			b.ReportMetric(float64(sweep), "gas/sweep")
		}
	}
	for _, calls := range []int{10, 100, 1000} {
		dep, claim, sweep := claimAll(10, calls)
		total := dep + claim + sweep
		perCall := float64(total) / float64(10*calls)
		fmt.Fprintf(&table, "%5d calls over 10 channels (%4d each): deposits %d + claim %d + sweep %d = %d gas, %.0f gas per paid call (exact: %d, %.1fx less)\n",
			10*calls, calls, dep, claim, sweep, total, perCall, exactGas[1], float64(exactGas[1])/perCall)
		b.ReportMetric(perCall, fmt.Sprintf("gas/call-at-%d-a-channel", calls))
	}
	b.Log("\n" + table.String())
	for i := 0; i < b.N; i++ {
	}
}

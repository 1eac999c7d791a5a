package claimer_test

import (
	"context"
	"errors"
	"math/big"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/seed1284c1d2/svc/internal/anviltest"
	"github.com/seed1284c1d2/svc/x402"
	"github.com/seed1284c1d2/svc/x402/batch"
	"github.com/seed1284c1d2/svc/x402/batch/claimer"
)

// Twelve channels funded through the official facilitator and charged
// for many calls each are claimed in one claimWithSignature and swept:
// each channel's totalClaimed is what it was charged, payTo holds the
// sum. The policy's threshold and batch size then shape later claims.
func TestClaimManyChannelsInOneTransaction(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	clk := &clock{now: time.Now()}
	chans, log := claimer.NewMemoryChannels(), claimer.NewMemoryLog()
	reg := prometheus.NewRegistry()
	c := e.newClaimer(t, chans, log, claimer.Policy{}, clk, reg)

	var payers []*payer
	charged := new(big.Int)
	for i := 0; i < 12; i++ {
		p := e.open(t, 100_000)
		chans.Put(e.serve(t, p, 5+i, clk.Now().Add(-time.Duration(i)*time.Second)))
		payers = append(payers, p)
		charged.Add(charged, p.charged)
	}

	// No threshold, no idle rule, no withdrawal: a pass claims nothing
	// but reads and reports what is outstanding.
	rep, err := c.Tick(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Claims != 0 || rep.Outstanding != 12 || rep.Unclaimed.Cmp(charged) != 0 {
		t.Fatalf("a pass without a rule that applies: %+v, want no claim, 12 channels, %s unclaimed", rep, charged)
	}
	if got := metricValue(t, reg, "svc_batch_unclaimed_atomic"); got != float(charged) {
		t.Fatalf("unclaimed gauge %v, want %s", got, charged)
	}

	rep, err = c.ClaimNow(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Claims != 1 || rep.Channels != 12 || rep.Amount.Cmp(charged) != 0 || rep.Sweeps != 1 || rep.Swept.Cmp(charged) != 0 {
		t.Fatalf("ClaimNow: %+v, want one claim of 12 channels for %s and one sweep", rep, charged)
	}
	for _, p := range payers {
		if st := anviltest.EscrowChannel(t, e.chain.Client, p.id); st.TotalClaimed.Cmp(p.charged) != 0 {
			t.Fatalf("channel %s: totalClaimed %s, charged %s", p.id, st.TotalClaimed, p.charged)
		}
	}
	if got := e.chain.TokenBalance(t, e.payTo); got.Cmp(charged) != 0 {
		t.Fatalf("payTo holds %s after the sweep, charged %s", got, charged)
	}
	recent, _ := log.Recent(ctx, x402.NetworkBase, 10)
	if len(recent) != 1 || recent[0].State != claimer.Done || len(recent[0].Rows) != 12 {
		t.Fatalf("claim log: %+v", recent)
	}
	receipt := e.chain.WaitReceipt(t, common.HexToHash(recent[0].Tx))
	if receipt.Status != types.ReceiptStatusSuccessful || claimedEvents(receipt) != 12 {
		t.Fatalf("the claim transaction: status %d, %d Claimed events, want 12", receipt.Status, claimedEvents(receipt))
	}
	if n := metricValue(t, reg, "svc_batch_claims_total", "outcome", claimer.OutcomeClaimed); n != 1 {
		t.Fatalf("claims counter %v", n)
	}
	if n := metricValue(t, reg, "svc_batch_claimed_atomic_total"); n != float(charged) {
		t.Fatalf("claimed amount counter %v, want %s", n, charged)
	}
	if g := metricValue(t, reg, "svc_batch_gas_used_total", "op", "claim"); uint64(g) != receipt.GasUsed {
		t.Fatalf("claim gas counter %v, receipt %d", g, receipt.GasUsed)
	}
	// The mirror is up to date: nothing is claimable, a pass claims
	// nothing more.
	if left, _ := chans.Claimable(ctx, x402.NetworkBase, 100); len(left) != 0 {
		t.Fatalf("claimable after the claim: %d channels", len(left))
	}

	// Another instance sharing the claim log stands by while this one
	// holds its lease.
	other, err := claimer.New(claimer.Config{Network: x402.NetworkBase, Channels: chans, Log: log, Facilitator: e.fac, Chain: e.chain.Client,
		AuthorizerKey: e.authKey, Owner: "instance-2", Now: clk.Now, Policy: claimer.Policy{Threshold: big.NewInt(1)}})
	if err != nil {
		t.Fatal(err)
	}
	if rep, err := other.Tick(ctx); err != nil || !rep.Standby {
		t.Fatalf("a second instance's pass: %+v, %v; want standby", rep, err)
	}

	// A threshold: three channels charged again, below it then at it; a
	// batch size of two splits the claim.
	pol := claimer.Policy{Threshold: big.NewInt(6000), MaxBatch: 2}
	c2 := e.newClaimer(t, chans, log, pol, clk, reg)
	more := new(big.Int)
	for _, p := range payers[:3] {
		before := new(big.Int).Set(p.charged)
		chans.Put(e.serve(t, p, 1, clk.Now()))
		more.Add(more, new(big.Int).Sub(p.charged, before))
	}
	if rep, err = c2.Tick(ctx); err != nil || rep.Claims != 0 || rep.Unclaimed.Cmp(more) != 0 {
		t.Fatalf("below the threshold: %+v, %v", rep, err)
	}
	for _, p := range payers[:3] {
		before := new(big.Int).Set(p.charged)
		chans.Put(e.serve(t, p, 2, clk.Now()))
		more.Add(more, new(big.Int).Sub(p.charged, before))
	}
	if more.Cmp(pol.Threshold) < 0 {
		t.Fatalf("the test charged %s, below its threshold", more)
	}
	rep, err = c2.Tick(ctx)
	if err != nil || rep.Claims != 2 || rep.Channels != 3 || rep.Amount.Cmp(more) != 0 {
		t.Fatalf("at the threshold with batches of two: %+v, %v; want 2 claims of 3 channels for %s", rep, err, more)
	}
	for _, p := range payers {
		if st := anviltest.EscrowChannel(t, e.chain.Client, p.id); st.TotalClaimed.Cmp(p.charged) != 0 {
			t.Fatalf("channel %s: totalClaimed %s, charged %s", p.id, st.TotalClaimed, p.charged)
		}
	}
	if got, want := e.chain.TokenBalance(t, e.payTo), new(big.Int).Add(charged, more); got.Cmp(want) != 0 {
		t.Fatalf("payTo holds %s, charged %s", got, want)
	}

	// Idle channels: one charged channel, claimed once idle long enough.
	idle := claimer.Policy{IdleAfter: time.Hour}
	c3 := e.newClaimer(t, chans, log, idle, clk, reg)
	chans.Put(e.serve(t, payers[5], 3, clk.Now()))
	if rep, _ = c3.Tick(ctx); rep.Claims != 0 {
		t.Fatalf("a channel charged just now was claimed: %+v", rep)
	}
	clk.Add(time.Hour)
	if rep, err = c3.Tick(ctx); err != nil || rep.Claims != 1 || rep.Channels != 1 {
		t.Fatalf("an hour idle: %+v, %v", rep, err)
	}
	if st := anviltest.EscrowChannel(t, e.chain.Client, payers[5].id); st.TotalClaimed.Cmp(payers[5].charged) != 0 {
		t.Fatalf("idle channel: totalClaimed %s, charged %s", st.TotalClaimed, payers[5].charged)
	}
}

// claimedEvents counts the escrow's Claimed events in r.
func claimedEvents(r *types.Receipt) int {
	id := batch.SettlementABI().Events["Claimed"].ID
	n := 0
	for _, l := range r.Logs {
		if l.Address == anviltest.Escrow && len(l.Topics) > 0 && l.Topics[0] == id {
			n++
		}
	}
	return n
}

// metricValue is the value of a gauge or counter of reg with the labels
// given (name, value pairs; the network label is implied).
func metricValue(t *testing.T, reg *prometheus.Registry, name string, labels ...string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	metric:
		for _, m := range mf.GetMetric() {
			have := map[string]string{}
			for _, lp := range m.GetLabel() {
				have[lp.GetName()] = lp.GetValue()
			}
			for i := 0; i+1 < len(labels); i += 2 {
				if have[labels[i]] != labels[i+1] {
					continue metric
				}
			}
			if m.GetGauge() != nil {
				return m.GetGauge().GetValue()
			}
			return m.GetCounter().GetValue()
		}
	}
	t.Fatalf("metric %s %v not found", name, labels)
	return 0
}

func float(v *big.Int) float64 {
	f, _ := new(big.Float).SetInt(v).Float64()
	return f
}

// A record whose voucher the escrow refuses (signed by another key) makes
// the facilitator refuse the whole claim; the claimer splits it until the
// bad row is alone, so every other channel is claimed.
func TestBadVoucherDoesNotHoldBackTheOthers(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	chans, log := claimer.NewMemoryChannels(), claimer.NewMemoryLog()
	reg := prometheus.NewRegistry()
	c := e.newClaimer(t, chans, log, claimer.Policy{}, nil, reg)
	var payers []*payer
	for i := 0; i < 5; i++ {
		p := e.open(t, 100_000)
		rec := e.serve(t, p, 4, time.Now())
		if i == 2 {
			other, _ := anviltest.NewKey(t)
			sig, err := e.domain.SignVoucher(other, p.id, rec.SignedMax)
			if err != nil {
				t.Fatal(err)
			}
			rec.Signature = common.FromHex(sig)
		}
		chans.Put(rec)
		payers = append(payers, p)
	}
	rep, err := c.ClaimNow(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Channels != 4 {
		t.Fatalf("claimed %d channels, want the 4 good ones: %+v", rep.Channels, rep)
	}
	for i, p := range payers {
		want := p.charged
		if i == 2 {
			want = new(big.Int)
		}
		if st := anviltest.EscrowChannel(t, e.chain.Client, p.id); st.TotalClaimed.Cmp(want) != 0 {
			t.Fatalf("channel %d: totalClaimed %s, want %s", i, st.TotalClaimed, want)
		}
	}
	if pend, _ := log.Pending(ctx, x402.NetworkBase); len(pend) != 0 {
		t.Fatalf("pending claims left: %d", len(pend))
	}
	if n := metricValue(t, reg, "svc_batch_claims_total", "outcome", claimer.OutcomeRefused); n < 2 {
		t.Fatalf("refused claims %v, want the whole batch and the bad row at least", n)
	}
}

// failFirstSweep is the official facilitator behind a connection that
// drops the first sweep request.
type failFirstSweep struct {
	claimer.Settler
	failed bool
}

func (f *failFirstSweep) Settle(ctx context.Context, p x402.PaymentPayload, req x402.PaymentRequirements) (x402.SettleResponse, error) {
	if !f.failed && batch.PayloadType(p.Payload) == batch.TypeSettle {
		f.failed = true
		return x402.SettleResponse{}, errors.New("connection reset")
	}
	return f.Settler.Settle(ctx, p, req)
}

// A sweep that fails after its claim went through is retried by the next
// pass, even when that pass has nothing to claim.
func TestFailedSweepIsRetried(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	chans, log := claimer.NewMemoryChannels(), claimer.NewMemoryLog()
	c, err := claimer.New(claimer.Config{Network: x402.NetworkBase, Channels: chans, Log: log, Facilitator: &failFirstSweep{Settler: e.fac},
		Chain: e.chain.Client, AuthorizerKey: e.authKey})
	if err != nil {
		t.Fatal(err)
	}
	p := e.open(t, 100_000)
	chans.Put(e.serve(t, p, 9, time.Now()))
	if _, err := c.ClaimNow(ctx); err == nil {
		t.Fatal("the failed sweep went unreported")
	}
	if st := anviltest.EscrowChannel(t, e.chain.Client, p.id); st.TotalClaimed.Cmp(p.charged) != 0 {
		t.Fatalf("totalClaimed %s, charged %s", st.TotalClaimed, p.charged)
	}
	if got := e.chain.TokenBalance(t, e.payTo); got.Sign() != 0 {
		t.Fatalf("payTo holds %s before any sweep", got)
	}
	rep, err := c.Tick(ctx)
	if err != nil || rep.Claims != 0 || rep.Sweeps != 1 || rep.Swept.Cmp(p.charged) != 0 {
		t.Fatalf("the next pass: %+v, %v; want the sweep of %s", rep, err, p.charged)
	}
	if got := e.chain.TokenBalance(t, e.payTo); got.Cmp(p.charged) != 0 {
		t.Fatalf("payTo holds %s, want %s", got, p.charged)
	}
}

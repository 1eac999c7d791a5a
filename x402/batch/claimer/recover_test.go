package claimer_test

import (
	"context"
	"math/big"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"

	"github.com/seed1284c1d2/svc/internal/anviltest"
	"github.com/seed1284c1d2/svc/x402"
	"github.com/seed1284c1d2/svc/x402/batch"
	"github.com/seed1284c1d2/svc/x402/batch/claimer"
)

// A claim left pending (its process died after logging it) whose row the
// chain can no longer honour, because the payer's withdrawal ended in the
// meantime and left the channel less than the row claims, is not sent
// again (it would revert): it is marked superseded, and the channel is
// claimed anew up to what its balance still holds.
func TestPendingClaimOvertakenByAWithdrawal(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	chans, log := claimer.NewMemoryChannels(), claimer.NewMemoryLog()
	p := e.open(t, 100_000)
	rec := e.serve(t, p, 30, time.Now())
	chans.Put(rec)

	// What a claimer killed right after logging its claim leaves behind.
	row := claimer.Row{ChannelID: p.id, Channel: p.ch, MaxClaimable: rec.SignedMax, Signature: rec.Signature, TotalClaimed: rec.Charged, Previous: new(big.Int)}
	sig, err := e.domain.SignClaimBatch(e.authKey, e.domain.ClaimEntries([]batch.Claim{row.Claim()}))
	if err != nil {
		t.Fatal(err)
	}
	if err := log.Begin(ctx, claimer.Record{ID: "killed", Network: x402.NetworkBase, Rows: []claimer.Row{row},
		AuthorizerSignature: common.FromHex(sig), CreatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}

	// Meanwhile the payer withdraws 80000 of the 100000 and waits out the
	// delay: 20000 are left, less than the 29000-odd charged.
	e.chain.SetBalance(t, p.addr, anviltest.Ether(1))
	payerSide := anviltest.Actor{T: t, EC: e.chain.Client, Key: p.key}
	data, err := batch.InitiateWithdrawCalldata(p.ch, big.NewInt(80_000))
	payerSide.OK("initiateWithdraw", data, err)
	e.chain.IncreaseTime(t, int64(p.ch.WithdrawDelay)+1)
	data, err = batch.FinalizeWithdrawCalldata(p.ch)
	payerSide.OK("finalizeWithdraw", data, err)
	if st := anviltest.EscrowChannel(t, e.chain.Client, p.id); st.Balance.Int64() != 20_000 || rec.Charged.Int64() <= 20_000 {
		t.Fatalf("after the withdrawal: %+v, charged %s", st, rec.Charged)
	}

	c := e.newClaimer(t, chans, log, claimer.Policy{}, nil, nil)
	rep, err := c.ClaimNow(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Recovered != 1 || rep.Claims != 1 || rep.Amount.Int64() != 20_000 {
		t.Fatalf("report %+v: want the pending claim superseded and a new claim of the 20000 left", rep)
	}
	if st := anviltest.EscrowChannel(t, e.chain.Client, p.id); st.TotalClaimed.Int64() != 20_000 {
		t.Fatalf("totalClaimed %s, want 20000", st.TotalClaimed)
	}
	recent, _ := log.Recent(ctx, x402.NetworkBase, 10)
	if len(recent) != 2 || recent[1].ID != "killed" || recent[1].State != claimer.Failed || recent[0].State != claimer.Done {
		t.Fatalf("claim log: %+v", recent)
	}
	if got := e.chain.TokenBalance(t, e.payTo); got.Int64() != 20_000 {
		t.Fatalf("payTo holds %s, want 20000", got)
	}
}

package claimer_test

import (
	"context"
	"math/big"
	"testing"
	"time"

	"github.com/seed1284c1d2/svc/internal/anviltest"
	"github.com/seed1284c1d2/svc/x402/batch/claimer"
)

// The operator's refund of idle channels, through the official
// facilitator: a dry run changes nothing; the refund claims what an idle
// channel was charged, then returns the rest to its payer with a
// refundWithSignature signed by the receiver authorizer, for a channel
// with unclaimed charges (from the channel store) and for one whose
// charges were claimed before (from the claim log); an active channel is
// left alone unless named.
func TestRefundIdleChannels(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	clk := &clock{now: time.Now()}
	chans, log := claimer.NewMemoryChannels(), claimer.NewMemoryLog()
	c := e.newClaimer(t, chans, log, claimer.Policy{}, clk, nil)

	a, b, active := e.open(t, 100_000), e.open(t, 100_000), e.open(t, 100_000)
	chans.Put(e.serve(t, b, 7, clk.Now()))
	if rep, err := c.ClaimNow(ctx); err != nil || rep.Channels != 1 {
		t.Fatalf("claim of b: %+v, %v", rep, err)
	}
	chans.Put(e.serve(t, a, 11, clk.Now()))
	clk.Add(25 * time.Hour)
	chans.Put(e.serve(t, active, 3, clk.Now()))

	dry, err := c.Refund(ctx, claimer.RefundOptions{IdleFor: 24 * time.Hour, DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(dry) != 2 {
		t.Fatalf("dry run: %d channels, want the 2 idle ones", len(dry))
	}
	for _, r := range dry {
		p, unclaimed := a, a.charged
		if r.ChannelID == b.id {
			p, unclaimed = b, new(big.Int)
		}
		if r.ChannelID != p.id || r.Unclaimed.Cmp(unclaimed) != 0 || r.Refund.Cmp(new(big.Int).Sub(big.NewInt(100_000), p.charged)) != 0 || r.Tx != "" {
			t.Fatalf("dry run of %s: %+v", p.id, r)
		}
	}
	if st := anviltest.EscrowChannel(t, e.chain.Client, a.id); st.TotalClaimed.Sign() != 0 || st.Balance.Int64() != 100_000 {
		t.Fatalf("the dry run changed the chain: %+v", st)
	}

	res, err := c.Refund(ctx, claimer.RefundOptions{IdleFor: 24 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 2 {
		t.Fatalf("refund: %d results", len(res))
	}
	for _, r := range res {
		if r.Err != nil || r.Tx == "" || r.GasUsed == 0 {
			t.Fatalf("refund of %s: %+v", r.ChannelID, r)
		}
	}
	for _, p := range []*payer{a, b} {
		st := anviltest.EscrowChannel(t, e.chain.Client, p.id)
		if st.TotalClaimed.Cmp(p.charged) != 0 || st.Balance.Cmp(p.charged) != 0 || st.RefundNonce.Int64() != 1 {
			t.Fatalf("channel %s after the refund: %+v, charged %s", p.id, st, p.charged)
		}
		if got, want := e.chain.TokenBalance(t, p.addr), new(big.Int).Sub(big.NewInt(100_000), p.charged); got.Cmp(want) != 0 {
			t.Fatalf("payer %s got %s back, want %s", p.addr, got, want)
		}
	}
	if got, want := e.chain.TokenBalance(t, e.payTo), sum(a.charged, b.charged); got.Cmp(want) != 0 {
		t.Fatalf("payTo holds %s, want %s", got, want)
	}
	if st := anviltest.EscrowChannel(t, e.chain.Client, active.id); st.TotalClaimed.Sign() != 0 || st.Balance.Int64() != 100_000 {
		t.Fatalf("the active channel was touched: %+v", st)
	}

	// Again: nothing is left to refund.
	again, err := c.Refund(ctx, claimer.RefundOptions{IdleFor: 24 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range again {
		if r.Refund.Sign() != 0 || r.Tx != "" {
			t.Fatalf("a second refund moved funds: %+v", r)
		}
	}

	// The active channel: refused as not idle, refunded when named alone.
	if _, err := c.Refund(ctx, claimer.RefundOptions{IdleFor: 24 * time.Hour, Channel: &active.id}); err == nil {
		t.Fatal("an active channel was selected as idle")
	}
	res, err = c.Refund(ctx, claimer.RefundOptions{Channel: &active.id})
	if err != nil || len(res) != 1 || res[0].Err != nil {
		t.Fatalf("refund of the named channel: %+v, %v", res, err)
	}
	if st := anviltest.EscrowChannel(t, e.chain.Client, active.id); st.TotalClaimed.Cmp(active.charged) != 0 || st.Balance.Cmp(active.charged) != 0 {
		t.Fatalf("the named channel after its refund: %+v", st)
	}
}

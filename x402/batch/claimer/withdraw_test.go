package claimer_test

import (
	"context"
	"errors"
	"math/big"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/core/types"

	"github.com/seed1284c1d2/svc/internal/anviltest"
	"github.com/seed1284c1d2/svc/x402"
	"github.com/seed1284c1d2/svc/x402/batch"
	"github.com/seed1284c1d2/svc/x402/batch/claimer"
)

// The withdrawal proof: Run's passes claim nothing while no rule applies;
// the payer initiates a withdrawal of everything; the next pass claims
// that channel at once (and only it), well before the withdrawal delay
// ends; once the chain's clock passes the delay, finalizeWithdraw returns
// the payer only what was not charged.
func TestPendingWithdrawalIsClaimedBeforeTheDelayEnds(t *testing.T) {
	e := newEnv(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	chans, log := claimer.NewMemoryChannels(), claimer.NewMemoryLog()

	a := e.open(t, 100_000)
	chans.Put(e.serve(t, a, 31, time.Now()))
	b := e.open(t, 50_000)
	chans.Put(e.serve(t, b, 4, time.Now()))

	// Run's clock: each wait is reported, and a pass starts when the test
	// says so.
	waits := make(chan time.Duration, 10)
	ticks := make(chan time.Time)
	pol := claimer.Policy{Interval: time.Minute, WithdrawInterval: 5 * time.Second, Threshold: big.NewInt(10_000_000)}
	c, err := claimer.New(claimer.Config{Network: x402.NetworkBase, Channels: chans, Log: log, Facilitator: e.fac, Chain: e.chain.Client,
		AuthorizerKey: e.authKey, Policy: pol,
		After: func(d time.Duration) <-chan time.Time { waits <- d; return ticks }})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	wait := func(want time.Duration) {
		t.Helper()
		select {
		case d := <-waits:
			if d != want {
				t.Fatalf("Run waits %s, want %s", d, want)
			}
		case <-time.After(60 * time.Second):
			t.Fatal("Run's pass did not end within 60 s")
		}
	}
	wait(time.Minute)
	if st := anviltest.EscrowChannel(t, e.chain.Client, a.id); st.TotalClaimed.Sign() != 0 {
		t.Fatalf("claimed without a rule: %+v", st)
	}

	// The payer's escape hatch: a withdrawal of everything unclaimed.
	e.chain.SetBalance(t, a.addr, anviltest.Ether(1))
	payerSide := anviltest.Actor{T: t, EC: e.chain.Client, Key: a.key}
	data, err := batch.InitiateWithdrawCalldata(a.ch, big.NewInt(100_000))
	payerSide.OK("initiateWithdraw", data, err)
	st := anviltest.EscrowChannel(t, e.chain.Client, a.id)
	if st.WithdrawRequestedAt == 0 || st.WithdrawAmount.Int64() != 100_000 {
		t.Fatalf("after initiateWithdraw: %+v", st)
	}
	deadline := st.WithdrawRequestedAt + a.ch.WithdrawDelay

	ticks <- time.Now()
	// The pass that saw the withdrawal asks for a quick next pass.
	wait(5 * time.Second)
	st = anviltest.EscrowChannel(t, e.chain.Client, a.id)
	if st.TotalClaimed.Cmp(a.charged) != 0 {
		t.Fatalf("after the pass: totalClaimed %s, charged %s", st.TotalClaimed, a.charged)
	}
	head, err := e.chain.Client.HeaderByNumber(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if head.Time >= deadline {
		t.Fatalf("claimed at chain time %d, the withdrawal ended at %d", head.Time, deadline)
	}
	if st := anviltest.EscrowChannel(t, e.chain.Client, b.id); st.TotalClaimed.Sign() != 0 {
		t.Fatalf("the channel without a withdrawal was claimed too: %+v", st)
	}
	if got := e.chain.TokenBalance(t, e.payTo); got.Cmp(a.charged) != 0 {
		t.Fatalf("payTo holds %s, want %s", got, a.charged)
	}
	ticks <- time.Now()
	wait(time.Minute)

	// Too early, the payer cannot finalize; after the delay it gets back
	// only what was not charged.
	data, err = batch.FinalizeWithdrawCalldata(a.ch)
	payerSide.Refused("finalizeWithdraw before the delay", data, err)
	e.chain.IncreaseTime(t, int64(a.ch.WithdrawDelay)+1)
	r := payerSide.OK("finalizeWithdraw", data, err)
	if r.Status != types.ReceiptStatusSuccessful {
		t.Fatal("finalizeWithdraw reverted")
	}
	rest := new(big.Int).Sub(big.NewInt(100_000), a.charged)
	if got := e.chain.TokenBalance(t, a.addr); got.Cmp(rest) != 0 {
		t.Fatalf("the payer got %s back, want %s (100000 less the %s charged)", got, rest, a.charged)
	}

	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Run returned %v", err)
	}
}

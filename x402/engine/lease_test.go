package engine_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/seed1284c1d2/svc/x402"
	"github.com/seed1284c1d2/svc/x402/engine"
)

// runningClock is a clock that runs with real time from a settable
// offset: an engine's clock after a jump (NTP, a VM resumed).
type runningClock struct{ offset atomic.Int64 }

func (c *runningClock) Now() time.Time       { return time.Now().Add(time.Duration(c.offset.Load())) }
func (c *runningClock) Jump(d time.Duration) { c.offset.Add(int64(d)) }

// stuckFacilitator never answers a settlement until the caller gives up
// (its first settlement fails at once), and records how many settlements
// of one authorization are in flight at the same time.
type stuckFacilitator struct {
	chainFacilitator
	mu              sync.Mutex
	calls, inFlight int
	maxInFlight     int
}

func (f *stuckFacilitator) Settle(ctx context.Context, p x402.PaymentPayload, req x402.PaymentRequirements) (x402.SettleResponse, error) {
	f.mu.Lock()
	f.calls++
	first := f.calls == 1
	f.inFlight++
	f.maxInFlight = max(f.maxInFlight, f.inFlight)
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		f.inFlight--
		f.mu.Unlock()
	}()
	if !first {
		<-ctx.Done()
	}
	return x402.SettleResponse{}, errors.New("stuck: no answer")
}

// TestBackgroundResolutionStaysWithinTheLease: a settlement without a
// decision is resolved in the background by its engine, and by another
// instance's recovery once the row's lease has ended. The lease is on the
// engines' clock, which jumped: the background resolution reads it there
// and gives the row up rather than settle past the lease, so at no time
// are two settlements of the authorization in flight.
func TestBackgroundResolutionStaysWithinTheLease(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for the background resolution (seconds)")
	}
	h := newHarness(t)
	clk := &runningClock{}
	fac := &stuckFacilitator{chainFacilitator: *newChain(nil)}
	cfg := func(c *engine.Config) {
		c.Now, c.SettleTimeout, c.DeadAfter, c.Heartbeat = clk.Now, 3*time.Second, time.Minute, 200*time.Millisecond
	}
	a := h.newEngine(fac, "a", cfg)
	defer a.Close()
	b := h.newEngine(fac, "b", cfg)
	defer b.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = a.Run(ctx) }() // a stays alive: only the lease's end lets b claim the row

	p := h.sign(time.Hour)
	var r runs
	wantKind(t, a.Serve(context.Background(), h.call(p, "A"), r.answer(`{}`)), engine.Pending, engine.ReasonSettlementPending)
	lease := h.row(p).LeaseUntil
	// The clock jumps to 2 s before the lease ends: a's background
	// resolution, about to wake, has too little of the lease left.
	clk.Jump(lease.Add(-2 * time.Second).Sub(clk.Now()))
	start := time.Now()
	for time.Since(start) < 6*time.Second {
		if _, err := b.Recover(context.Background()); err != nil {
			t.Fatal(err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	fac.mu.Lock()
	defer fac.mu.Unlock()
	if fac.maxInFlight > 1 {
		t.Fatalf("%d settlements of one authorization were in flight at once (%d calls)", fac.maxInFlight, fac.calls)
	}
	if rec := h.row(p); rec.Owner != "b" || fac.calls < 2 {
		t.Fatalf("the row is owned by %q after the lease (%d settle calls): recovery did not take it over", rec.Owner, fac.calls)
	}
}

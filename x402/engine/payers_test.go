package engine_test

import (
	"context"
	"crypto/ecdsa"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/crypto"

	"github.com/seed1284c1d2/svc/x402"
	"github.com/seed1284c1d2/svc/x402/engine"
	"github.com/seed1284c1d2/svc/x402/exact"
)

// timedOut is the error of a tool that ran out of time on its input.
type timedOut struct{}

func (timedOut) Error() string { return "the tool timed out" }

// signBy signs a fresh payment of the harness's offer with key.
func signBy(t *testing.T, h *harness, key *ecdsa.PrivateKey) x402.PaymentPayload {
	t.Helper()
	p, err := exact.NewPayload(key, h.req(), h.clock.Now(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	return h.wrap(p)
}

// TestPayerBudget: a payer whose paid calls keep timing out, each with a
// fresh authorization, gets Throttled after PayerBurst runs, before
// anything runs or is written again, until the budget refills; other
// payers, a replay of its settled payment and transient failures are not
// affected.
func TestPayerBudget(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t)
	chain := newChain(h.journal)
	const burst = 3
	e := h.newEngine(chain, "a", func(c *engine.Config) { c.PayerBurst, c.PayerRefill = burst, time.Minute })
	var r runs
	slow := func(context.Context) (engine.Answer, error) {
		r.n.Add(1)
		return engine.Answer{Status: 504}, timedOut{}
	}

	settled := h.sign(time.Hour)
	wantKind(t, e.Serve(ctx, h.call(settled, "paid"), r.answer(`{"ok":true}`)), engine.Paid, "")
	r.n.Store(0)

	// Transient failures (an upstream down) are not the payer's doing.
	for range 2 * burst {
		wantKind(t, e.Serve(ctx, h.call(h.sign(time.Hour), "down"), func(context.Context) (engine.Answer, error) {
			return engine.Answer{}, fmt.Errorf("run: %w", transientErr{})
		}), engine.RunFailed, "")
	}

	var failed, throttled []x402.PaymentPayload
	for i := range 50 {
		p := h.sign(time.Hour)
		out := e.Serve(ctx, h.call(p, fmt.Sprintf("regex-%d", i)), slow)
		if i < burst {
			wantKind(t, out, engine.RunFailed, "")
			failed = append(failed, p)
			continue
		}
		wantKind(t, out, engine.Throttled, engine.ReasonPayerThrottled)
		if out.RetryAfter < time.Second || out.RetryAfter > time.Minute {
			t.Fatalf("retry after %s", out.RetryAfter)
		}
		throttled = append(throttled, p)
	}
	if r.n.Load() != burst {
		t.Fatalf("%d runs, want %d", r.n.Load(), burst)
	}
	// Nothing was written for the throttled authorizations: they may be
	// presented again.
	for _, p := range throttled[:3] {
		if _, err := h.journal.Get(ctx, h.keyOf(p)); err == nil {
			t.Fatal("a throttled authorization was journaled")
		}
	}
	// A retry of the settled payment runs nothing: it is answered.
	wantKind(t, e.Serve(ctx, h.call(settled, "paid"), r.answer(`{"ok":true}`)), engine.Replayed, "")
	// A released authorization with attempts left would run: throttled too,
	// and its attempts are not used up.
	wantKind(t, e.Serve(ctx, h.call(failed[0], "regex-0"), slow), engine.Throttled, engine.ReasonPayerThrottled)
	if rec := h.row(failed[0]); rec.State != engine.StateReleased || rec.Attempts != 1 {
		t.Fatalf("row %s with %d attempts, want released with 1", rec.State, rec.Attempts)
	}

	// Another payer is not affected.
	other, err := crypto.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	wantKind(t, e.Serve(ctx, h.call(signBy(t, h, other), "other"), r.answer(`{"ok":true}`)), engine.Paid, "")

	// One token comes back per PayerRefill.
	h.clock.Advance(time.Minute)
	wantKind(t, e.Serve(ctx, h.call(throttled[0], "regex-3"), r.answer(`{"ok":true}`)), engine.Paid, "")
	wantKind(t, e.Serve(ctx, h.call(throttled[1], "regex-4"), slow), engine.RunFailed, "")
	wantKind(t, e.Serve(ctx, h.call(throttled[2], "regex-5"), slow), engine.Throttled, engine.ReasonPayerThrottled)
	if runs := r.n.Load(); runs != burst+3 {
		t.Fatalf("%d runs, want %d", runs, burst+3)
	}
	if chain.settles.Load() != 3 {
		t.Fatalf("%d settlements, want 3", chain.settles.Load())
	}
}

// TestPayerBudgetConcurrent: many fresh authorizations of one payer at once
// run at most PayerConcurrency at a time, the others throttled while those
// run; when they all fail, the payer owes each failure past its budget.
func TestPayerBudgetConcurrent(t *testing.T) {
	h := newHarness(t)
	chain := newChain(h.journal)
	const burst, concurrency, n = 2, 4, 40
	e := h.newEngine(chain, "a", func(c *engine.Config) {
		c.PayerBurst, c.PayerRefill, c.PayerConcurrency = burst, time.Minute, concurrency
	})
	var r runs
	release := make(chan struct{})
	results := make(chan engine.Outcome, n)
	payments := make([]x402.PaymentPayload, n)
	for i := range payments {
		payments[i] = h.sign(time.Hour)
	}
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			results <- e.Serve(context.Background(), h.call(payments[i], fmt.Sprint(i)), func(ctx context.Context) (engine.Answer, error) {
				r.n.Add(1)
				<-release
				return engine.Answer{}, timedOut{}
			})
		})
	}
	// While the admitted runs go on, every other call is answered without
	// running.
	kinds := map[engine.OutcomeKind]int{}
	deadline := time.After(20 * time.Second)
	for range n - concurrency {
		select {
		case o := <-results:
			kinds[o.Kind]++
		case <-deadline:
			t.Fatalf("outcomes so far %v, runs %d", kinds, r.n.Load())
		}
	}
	close(release)
	wg.Wait()
	close(results)
	for o := range results {
		kinds[o.Kind]++
	}
	if r.n.Load() != concurrency || kinds[engine.RunFailed] != concurrency || kinds[engine.Throttled] != n-concurrency {
		t.Fatalf("runs %d, outcomes %v", r.n.Load(), kinds)
	}
	// Four failures on a budget of two: the payer owes two, and waits for
	// three refills before its next call.
	out := e.Serve(context.Background(), h.call(h.sign(time.Hour), "next"), r.answer(`{}`))
	wantKind(t, out, engine.Throttled, engine.ReasonPayerThrottled)
	if out.RetryAfter != 3*time.Minute {
		t.Fatalf("retry after %s, want 3m", out.RetryAfter)
	}
	h.clock.Advance(3 * time.Minute)
	wantKind(t, e.Serve(context.Background(), h.call(h.sign(time.Hour), "later"), r.answer(`{}`)), engine.Paid, "")
}

// TestPayerBudgetParallelPayer: a payer whose calls deliver runs more calls
// at once than its failure budget: only PayerConcurrency bounds it.
func TestPayerBudgetParallelPayer(t *testing.T) {
	h := newHarness(t)
	chain := newChain(h.journal)
	const n = 12
	e := h.newEngine(chain, "a", func(c *engine.Config) { c.PayerBurst, c.PayerRefill, c.PayerConcurrency = 2, time.Hour, n })
	var r runs
	var wg sync.WaitGroup
	var running sync.WaitGroup
	running.Add(n)
	outs := make([]engine.Outcome, n)
	for i := range n {
		p := h.sign(time.Hour)
		wg.Go(func() {
			outs[i] = e.Serve(context.Background(), h.call(p, fmt.Sprint(i)), func(context.Context) (engine.Answer, error) {
				r.n.Add(1)
				running.Done()
				running.Wait() // all n run at once
				return engine.Answer{Status: 200, Body: []byte(`{}`)}, nil
			})
		})
	}
	wg.Wait()
	for _, o := range outs {
		wantKind(t, o, engine.Paid, "")
	}
	if r.n.Load() != n || chain.settles.Load() != n {
		t.Fatalf("%d runs, %d settlements", r.n.Load(), chain.settles.Load())
	}
}

// TestPayerBudgetCallerLeft: a caller that leaves once its call ran (the
// answer is never settled) spent the run for nothing: it is charged to the
// payer's budget, as a refused settlement is.
func TestPayerBudgetCallerLeft(t *testing.T) {
	h := newHarness(t)
	chain := newChain(h.journal)
	e := h.newEngine(chain, "a", func(c *engine.Config) { c.PayerBurst, c.PayerRefill = 2, time.Hour })
	var r runs
	ctx, cancel := context.WithCancel(context.Background())
	out := e.Serve(ctx, h.call(h.sign(time.Hour), "left"), func(context.Context) (engine.Answer, error) {
		r.n.Add(1)
		cancel()
		return engine.Answer{Status: 200, Body: []byte(`{}`)}, nil
	})
	wantKind(t, out, engine.Unavailable, engine.ReasonStoreUnavailable)
	chain.setMode(settleRefuse)
	if out := e.Serve(context.Background(), h.call(h.sign(time.Hour), "refused"), r.answer(`{}`)); out.Kind != engine.SettleFailed {
		t.Fatalf("outcome %s, want a refused settlement", out.Kind)
	}
	chain.setMode(settleOK)
	wantKind(t, e.Serve(context.Background(), h.call(h.sign(time.Hour), "next"), r.answer(`{}`)), engine.Throttled, engine.ReasonPayerThrottled)
	if r.n.Load() != 2 || chain.settles.Load() != 1 {
		t.Fatalf("%d runs, %d settlements", r.n.Load(), chain.settles.Load())
	}
}

package engine_test

import (
	"context"
	"testing"
	"time"

	"github.com/seed1284c1d2/svc/x402"
	"github.com/seed1284c1d2/svc/x402/engine"
	exactserver "github.com/seed1284c1d2/svc/x402/exact/server"
)

// TestRecoverNonDeduplicatingWithStatus checks recovery through a
// facilitator that neither deduplicates nor tells a status ("already
// used" to every settlement presented again, as a plain chain-backed
// facilitator answers), given a status query of its own (Config.Status,
// as a reader of the chain): the row is resolved from the chain, never
// left unknown because of the facilitator's answer.
func TestRecoverNonDeduplicatingWithStatus(t *testing.T) {
	type edit func(n int64, truth x402.AuthorizationStatus) (x402.AuthorizationStatus, error)
	for _, tc := range []struct {
		name     string
		mode     settleMode // of the original settlement
		again    settleMode // of the settlement presented again
		override edit
		expire   bool
		report   engine.RecoveryReport
		state    engine.State
		statuses int64 // status queries
		settles  int64 // Settle calls during recovery
	}{
		{"settled, seen at once", settleLost, settleSaysUsed, nil, false, engine.RecoveryReport{Settled: 1}, engine.StateSettled, 1, 0},
		// The chain's node lags behind the facilitator's: unused at first,
		// the facilitator says "already used", the node then sees it.
		{"settled, seen after already used", settleLost, settleSaysUsed, func(n int64, st x402.AuthorizationStatus) (x402.AuthorizationStatus, error) {
			if n == 1 {
				return x402.AuthorizationStatus{}, nil
			}
			return st, nil
		}, false, engine.RecoveryReport{Settled: 1}, engine.StateSettled, 2, 1},
		// Refused and unused on chain: nothing to prove yet; the row waits
		// for the chain (used later, or expired).
		{"refused, unused and valid", settleTimeout, settleRefuse, nil, false, engine.RecoveryReport{Unresolved: 1}, engine.StateSettling, 2, 1},
		{"refused, unused and valid, already used", settleTimeout, settleSaysUsed, nil, false, engine.RecoveryReport{Unresolved: 1}, engine.StateSettling, 2, 1},
		{"unused and expired", settleTimeout, settleSaysUsed, nil, true, engine.RecoveryReport{Released: 1}, engine.StateReleased, 1, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			chain := newChain(h.journal)
			status := &statusFacilitator{chainFacilitator: chain, now: h.clock.Now}
			withStatus := func(c *exactserver.Config) { c.Status = status }
			a := h.newEngine(chain, "a", h.withExact(chain, withStatus))
			b := h.newEngine(chain, "b", h.withExact(chain, withStatus))
			if h.exact(chain, withStatus).StatusChecker() != status {
				t.Fatal("the exact scheme does not ask Config.Status")
			}
			p := pendingRow(t, h, chain, a, tc.mode, "A")
			chain.setMode(tc.again)
			if tc.override != nil {
				status.override = func(st x402.AuthorizationStatus) (x402.AuthorizationStatus, error) {
					return tc.override(status.statuses.Load(), st)
				}
			}
			if tc.expire {
				h.clock.Advance(2 * time.Hour)
			}
			status.statuses.Store(0)
			before := chain.settles.Load()
			rep, err := b.Recover(context.Background())
			if err != nil || rep != tc.report {
				t.Fatalf("recovery %+v %v, want %+v", rep, err, tc.report)
			}
			rec := h.row(p)
			if rec.State != tc.state || status.statuses.Load() != tc.statuses || chain.settles.Load()-before != tc.settles {
				t.Fatalf("row %s (%q), %d status queries, %d settles; want %s, %d, %d", rec.State, rec.Reason,
					status.statuses.Load(), chain.settles.Load()-before, tc.state, tc.statuses, tc.settles)
			}
			ledger := h.journal.Ledger()
			if settled := tc.state == engine.StateSettled; settled != (len(ledger) == 1) || len(ledger) > 1 {
				t.Fatalf("state %s with ledger %+v", rec.State, ledger)
			}
			if tc.state == engine.StateSettled {
				tx := chain.transaction(rec.Key)
				if tx == "" || ledger[0].Transaction != tx || rec.Settlement.Transaction != tx {
					t.Fatalf("ledger %+v, settlement %+v, chain transaction %s", ledger, rec.Settlement, tx)
				}
				var r runs
				out := b.Serve(context.Background(), h.call(p, "A"), r.answer("{}"))
				wantKind(t, out, engine.Replayed, "")
				if string(out.Answer.Body) != `{"fp":"A"}` || out.Settlement.Transaction != tx || r.n.Load() != 0 {
					t.Fatalf("replay %+v", out)
				}
			}
			if transfers, v := chain.state(); transfers > 1 || len(v) != 0 {
				t.Fatalf("transfers %d, violations %v", transfers, v)
			}
		})
	}
}

// TestLiveSettleLostResolvedByStatus checks the live path: a settlement
// whose answer is lost is presented again in the background; the
// facilitator, which does not deduplicate, answers "already used" to its
// own settlement, and the status query (Config.Status) resolves the row to
// settled with the chain's transaction instead of unknown.
func TestLiveSettleLostResolvedByStatus(t *testing.T) {
	h := newHarness(t)
	chain := newChain(h.journal)
	status := &statusFacilitator{chainFacilitator: chain, now: h.clock.Now}
	// The first status query misses the transfer (a lagging node): the
	// settlement is presented again, and refused as already used.
	status.override = func(st x402.AuthorizationStatus) (x402.AuthorizationStatus, error) {
		if status.statuses.Load() == 1 {
			return x402.AuthorizationStatus{}, nil
		}
		return st, nil
	}
	a := h.newEngine(chain, "a", h.withExact(chain, func(c *exactserver.Config) { c.Status = status }))
	defer a.Close()
	p := pendingRow(t, h, chain, a, settleLost, "A")
	chain.setMode(settleSaysUsed)
	deadline := time.Now().Add(20 * time.Second)
	for h.row(p).State == engine.StateSettling && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	rec := h.row(p)
	tx := chain.transaction(rec.Key)
	if rec.State != engine.StateSettled || rec.Settlement == nil || rec.Settlement.Transaction != tx {
		t.Fatalf("row %s (%q), settlement %+v, chain transaction %s", rec.State, rec.Reason, rec.Settlement, tx)
	}
	if ledger := h.journal.Ledger(); len(ledger) != 1 || ledger[0].Transaction != tx {
		t.Fatalf("ledger %+v", ledger)
	}
	if n := chain.settles.Load(); n != 2 {
		t.Fatalf("%d settlements presented, want 2 (the lost one and once again)", n)
	}
}

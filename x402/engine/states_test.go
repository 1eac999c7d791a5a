package engine_test

import (
	"testing"

	"github.com/seed1284c1d2/svc/x402/engine"
)

// TestTransitionTable pins the transition table to the payment state
// machine the engine's invariants rest on: which states each transition
// leaves, where it goes and on whose behalf. The journals derive their
// checks and SQL from the table and the conformance suite walks it
// against them; this is the table's own specification.
func TestTransitionTable(t *testing.T) {
	const (
		r  = engine.StateReserved
		sg = engine.StateSettling
		sd = engine.StateSettled
		rl = engine.StateReleased
		f  = engine.StateFailed
		u  = engine.StateUnknown
	)
	want := map[engine.Transition]struct {
		from    []engine.State
		to      engine.State
		owner   engine.OwnerRule
		done    []engine.State
		creates bool
	}{
		engine.TransitionReserve:        {[]engine.State{sd, rl, f}, r, engine.AnyCaller, nil, true},
		engine.TransitionReserveAgain:   {[]engine.State{rl}, r, engine.AnyCaller, nil, false},
		engine.TransitionSettling:       {[]engine.State{r}, sg, engine.Holder, nil, false},
		engine.TransitionSettle:         {[]engine.State{sg, rl, f, u}, sd, engine.AnyCaller, []engine.State{sd}, false},
		engine.TransitionRelease:        {[]engine.State{r, sg}, rl, engine.Holder, nil, false},
		engine.TransitionFail:           {[]engine.State{sg}, f, engine.Holder, nil, false},
		engine.TransitionMarkUnknown:    {[]engine.State{sg}, u, engine.Holder, nil, false},
		engine.TransitionRecoverRelease: {[]engine.State{r}, rl, engine.HolderGone, nil, false},
		engine.TransitionRecoverClaim:   {[]engine.State{sg}, sg, engine.HolderGone, nil, false},
	}
	if len(engine.Transitions()) != len(want) {
		t.Fatalf("%d transitions, want %d", len(engine.Transitions()), len(want))
	}
	for _, tr := range engine.Transitions() {
		w, ok := want[tr]
		if !ok {
			t.Fatalf("transition %v is not specified here", tr)
		}
		got := tr.Rule()
		if got.From != engine.SetOf(w.from...) || got.To != w.to || got.Owner != w.owner ||
			got.Done != engine.SetOf(w.done...) || got.Creates != w.creates {
			t.Errorf("%v = %+v (from %v, done %v)\nwant from %v to %v, %v, done %v, creates %v",
				tr, got, got.From, got.Done, w.from, w.to, w.owner, w.done, w.creates)
		}
		if got.From&got.Done != 0 {
			t.Errorf("%v: a state both left and done: %v", tr, got.From&got.Done)
		}
	}
	if engine.Prunable != engine.SetOf(sd, rl, f) {
		t.Errorf("Prunable = %v, want settled, released and failed", engine.Prunable)
	}
	// What is in flight or unresolved is never pruned, and a prunable row
	// past KeepUntil is what Reserve may replace.
	for _, s := range []engine.State{r, sg, u} {
		if engine.Prunable.Has(s) {
			t.Errorf("%v is prunable", s)
		}
	}
	if engine.TransitionReserve.Rule().From != engine.Prunable {
		t.Errorf("Reserve replaces %v, want the prunable states %v", engine.TransitionReserve.Rule().From, engine.Prunable)
	}
	for _, s := range engine.States() {
		if s.Final() != (s == sd) {
			t.Errorf("%v.Final() = %v; only settled is final", s, s.Final())
		}
	}
	if engine.State(2).Final() || engine.SetOf(engine.States()...) != engine.AllStates {
		t.Errorf("AllStates = %v, want %v", engine.AllStates, engine.States())
	}
}

// TestRuleAllows: a rule moves a row only from its states, and only on
// behalf of whom its owner rule names.
func TestRuleAllows(t *testing.T) {
	for _, c := range []struct {
		tr                engine.Transition
		from              engine.State
		holds, gone, want bool
	}{
		{engine.TransitionSettling, engine.StateReserved, true, false, true},
		{engine.TransitionSettling, engine.StateReserved, false, false, false},
		{engine.TransitionSettling, engine.StateSettling, true, false, false},
		{engine.TransitionSettle, engine.StateUnknown, false, false, true},
		{engine.TransitionSettle, engine.StateReserved, true, false, false},
		{engine.TransitionRecoverClaim, engine.StateSettling, false, true, true},
		{engine.TransitionRecoverClaim, engine.StateSettling, true, false, false},
		{engine.TransitionRecoverRelease, engine.StateSettling, false, true, false},
		{engine.Transition(0), engine.StateReserved, true, true, false},
	} {
		if got := c.tr.Rule().Allows(c.from, c.holds, c.gone); got != c.want {
			t.Errorf("%v.Allows(%v, holds %v, gone %v) = %v, want %v", c.tr, c.from, c.holds, c.gone, got, c.want)
		}
	}
}

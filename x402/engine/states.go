package engine

import (
	"math/bits"
	"strings"
)

// State is the life-cycle state of one payment authorization in the
// journal. The values are stored by journals; never renumber them.
type State int

// The states of a payment. A row is created reserved; the answer and the
// payment are recorded with the move to settling, in one commit, before
// the facilitator is asked to settle; settled is written with the ledger
// entry in one commit. Which transition leaves which state, and on whose
// behalf, is the transition table (Transition.Rule); journals derive their
// checks from it.
//
//	reserved ──► settling ──► settled
//	   │            ├───────► failed   (the facilitator refused for good)
//	   │            ├───────► released (refused before anything reached the chain)
//	   │            └───────► unknown  (recovery could not tell; kept for the operator)
//	   └──► released (the call failed, the facilitator refused /verify, or the
//	                  process died before settling: nothing was settled)
//
// A released row may be reserved again, for at most MaxAttempts failed
// admissions in all.
const (
	StateReserved State = 1
	StateSettling State = 3
	StateSettled  State = 4
	StateReleased State = 5
	StateFailed   State = 6
	StateUnknown  State = 7
)

// String names the state as journals, logs and metrics spell it.
func (s State) String() string {
	switch s {
	case StateReserved:
		return "reserved"
	case StateSettling:
		return "settling"
	case StateSettled:
		return "settled"
	case StateReleased:
		return "released"
	case StateFailed:
		return "failed"
	case StateUnknown:
		return "unknown"
	}
	return "invalid"
}

// States lists every state, in life-cycle order.
func States() []State { return AllStates.States() }

// Final reports whether no transition moves a row out of s: the row keeps
// it for good, until it is pruned past its KeepUntil (and its key may then
// be reserved afresh, as a new row: TransitionReserve).
func (s State) Final() bool {
	for _, t := range Transitions() {
		if r := t.Rule(); !r.Creates && r.From.Has(s) {
			return false
		}
	}
	return AllStates.Has(s)
}

// StateSet is a set of states (bit s stands for State s).
type StateSet uint16

// Sets of states the journals and the operator's tools work with.
const (
	// AllStates holds every state.
	AllStates = StateSet(1<<StateReserved | 1<<StateSettling | 1<<StateSettled | 1<<StateReleased |
		1<<StateFailed | 1<<StateUnknown)
	// Prunable holds the states whose rows Prune deletes once past
	// KeepUntil (and Reserve then treats as absent), and whose answers it
	// forgets past AnswerUntil: nothing is in flight and nothing is left
	// to resolve. Reserved, settling and unknown rows are never pruned.
	Prunable = StateSet(1<<StateSettled | 1<<StateReleased | 1<<StateFailed)
)

// SetOf returns the set of states.
func SetOf(states ...State) StateSet {
	var set StateSet
	for _, s := range states {
		if s > 0 && s < 16 {
			set |= 1 << s
		}
	}
	return set
}

// Has reports whether s holds st.
func (s StateSet) Has(st State) bool { return st > 0 && st < 16 && s&(1<<st) != 0 }

// States lists the states of s in life-cycle order (their stored values
// ascending).
func (s StateSet) States() []State {
	out := make([]State, 0, bits.OnesCount16(uint16(s)))
	for st := State(1); st < 16; st++ {
		if s.Has(st) {
			out = append(out, st)
		}
	}
	return out
}

// String lists the states of s by name: "settled|released|failed".
func (s StateSet) String() string {
	names := make([]string, 0, bits.OnesCount16(uint16(s)))
	for _, st := range s.States() {
		names = append(names, st.String())
	}
	return strings.Join(names, "|")
}

// OwnerRule says on whose behalf a transition may move a row.
type OwnerRule int

// The owner rules of the transition table.
const (
	// AnyCaller: the row's owner is not checked (a new reservation; a
	// settlement the facilitator confirmed is the truth whoever asks).
	AnyCaller OwnerRule = iota + 1
	// Holder: only the engine instance holding the row (its Owner).
	Holder
	// HolderGone: only once the row's holder is gone (recovery): its
	// lease ended, or its last heartbeat is too old or absent.
	HolderGone
)

// String names the rule.
func (r OwnerRule) String() string {
	switch r {
	case AnyCaller:
		return "any caller"
	case Holder:
		return "holder"
	case HolderGone:
		return "holder gone"
	}
	return "invalid"
}

// Transition is a move of the payment state machine: a Journal method, or
// one half of Recover.
type Transition int

// The transitions, in life-cycle order.
const (
	// TransitionReserve creates the row of a new key, or replaces a
	// prunable row past its KeepUntil (Journal.Reserve).
	TransitionReserve Transition = iota + 1
	// TransitionReserveAgain reserves a released row with attempts left
	// for a new admission, in place (Journal.Reserve).
	TransitionReserveAgain
	// TransitionSettling records the answer and the payment before the
	// settle (Journal.Settling).
	TransitionSettling
	// TransitionSettle records a confirmed settlement with its ledger
	// entry (Journal.Settle).
	TransitionSettle
	// TransitionRelease gives a reservation up: nothing was settled
	// (Journal.Release).
	TransitionRelease
	// TransitionFail records the facilitator's definitive refusal
	// (Journal.Fail).
	TransitionFail
	// TransitionMarkUnknown leaves a payment nobody could resolve to the
	// operator (Journal.MarkUnknown).
	TransitionMarkUnknown
	// TransitionRecoverRelease releases an abandoned reservation
	// (Journal.Recover).
	TransitionRecoverRelease
	// TransitionRecoverClaim takes an abandoned settling row over for the
	// recovering instance (Journal.Recover).
	TransitionRecoverClaim
)

// Transitions lists every transition.
func Transitions() []Transition {
	return []Transition{TransitionReserve, TransitionReserveAgain, TransitionSettling, TransitionSettle,
		TransitionRelease, TransitionFail, TransitionMarkUnknown, TransitionRecoverRelease, TransitionRecoverClaim}
}

// String names the transition as journals' errors spell it.
func (t Transition) String() string {
	switch t {
	case TransitionReserve:
		return "reserve"
	case TransitionReserveAgain:
		return "reserve again"
	case TransitionSettling:
		return "settling"
	case TransitionSettle:
		return "settle"
	case TransitionRelease:
		return "release"
	case TransitionFail:
		return "fail"
	case TransitionMarkUnknown:
		return "mark unknown"
	case TransitionRecoverRelease:
		return "recover release"
	case TransitionRecoverClaim:
		return "recover claim"
	}
	return "invalid"
}

// Rule is the transition table's line of one transition. Conditions on a
// row's other columns (KeepUntil for TransitionReserve, Attempts for
// TransitionReserveAgain, RequestHash for TransitionSettling) are the
// Journal method's, documented there.
type Rule struct {
	// From is the set of states the transition leaves.
	From StateSet
	// To is the state it moves the row to.
	To State
	// Owner says on whose behalf it may.
	Owner OwnerRule
	// Done is the set of states in which it is already done: it succeeds
	// and changes nothing.
	Done StateSet
	// Creates is true when the transition also creates the row of an
	// absent key; any other transition of an absent key is refused.
	Creates bool
}

// Rule returns t's line of the transition table (the zero Rule for an
// invalid t: it leaves no state).
func (t Transition) Rule() Rule {
	switch t {
	case TransitionReserve:
		// A prunable row past KeepUntil counts as absent.
		return Rule{From: Prunable, To: StateReserved, Owner: AnyCaller, Creates: true}
	case TransitionReserveAgain:
		return Rule{From: SetOf(StateReleased), To: StateReserved, Owner: AnyCaller}
	case TransitionSettling:
		return Rule{From: SetOf(StateReserved), To: StateSettling, Owner: Holder}
	case TransitionSettle:
		// What recovery or a refusal concluded gives way to a confirmed
		// settlement; only a reservation, which recorded no answer, does not.
		return Rule{From: SetOf(StateSettling, StateUnknown, StateReleased, StateFailed), To: StateSettled,
			Owner: AnyCaller, Done: SetOf(StateSettled)}
	case TransitionRelease:
		return Rule{From: SetOf(StateReserved, StateSettling), To: StateReleased, Owner: Holder}
	case TransitionFail:
		return Rule{From: SetOf(StateSettling), To: StateFailed, Owner: Holder}
	case TransitionMarkUnknown:
		return Rule{From: SetOf(StateSettling), To: StateUnknown, Owner: Holder}
	case TransitionRecoverRelease:
		return Rule{From: SetOf(StateReserved), To: StateReleased, Owner: HolderGone}
	case TransitionRecoverClaim:
		return Rule{From: SetOf(StateSettling), To: StateSettling, Owner: HolderGone}
	}
	return Rule{}
}

// Allows reports whether the rule moves a row in state from: from is one
// of the states it leaves and its owner rule holds, given whether the
// caller holds the row (its Owner is the caller) and whether the row's
// holder is gone.
func (r Rule) Allows(from State, callerHolds, holderGone bool) bool {
	if !r.From.Has(from) {
		return false
	}
	switch r.Owner {
	case AnyCaller:
		return true
	case Holder:
		return callerHolds
	case HolderGone:
		return holderGone
	}
	return false
}

// Package journaltest is the conformance suite of engine.Journal: every
// implementation (engine.MemoryJournal, the SQLite and PostgreSQL stores,
// any future one) must pass Run. The suite is the executable definition of
// the rules documented on engine.Journal.
//
// Instants the suite passes are whole milliseconds; implementations keep at
// least nanoseconds, so they must come back equal.
package journaltest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/seed1284c1d2/svc/x402"
	"github.com/seed1284c1d2/svc/x402/engine"
	"github.com/seed1284c1d2/svc/x402/exact"
)

// LedgerReader is implemented by journals whose ledger the suite can read:
// LedgerEntry returns the entry Settle wrote for an authorization (found is
// false if none), comparing asset, payer and nonce case-insensitively. The
// ledger checks are skipped for a journal that does not implement it.
type LedgerReader interface {
	LedgerEntry(ctx context.Context, network, asset, payer, nonce string) (e engine.LedgerEntry, found bool, err error)
}

// Constants of the records the suite writes.
const (
	network = "eip155:8453"
	asset   = "0x833589fcd6edb6e08f4c7c32d4f71b54bda02913" // USDC on Base
	payTo   = "0x209693bc6afc0c5328ba36faf03c514ef312287c"
	refCode = "GLRDO4D5FF"
	waitFor = 60 * time.Second // bound of every concurrent case
)

// base is the suite's "now": a fixed instant, whole milliseconds.
var base = time.Date(2031, 5, 6, 7, 8, 9, 123_000_000, time.UTC)

// Run runs the conformance suite against journals made by open, which
// returns a fresh, empty journal for one test (and registers its cleanup
// with t).
func Run(t *testing.T, open func(t *testing.T) engine.Journal) {
	s := &suite{open: open}
	t.Run("ReserveCreates", s.reserveCreates)
	t.Run("ReserveOfAKnownKeyIsTaken", s.reserveTaken)
	t.Run("ReserveAgainAfterRelease", s.reserveAgain)
	t.Run("PastKeepUntil", s.pastKeepUntil)
	t.Run("Settling", s.settling)
	t.Run("Settle", s.settle)
	t.Run("Release", s.release)
	t.Run("FailAndMarkUnknown", s.failAndUnknown)
	t.Run("GetNotFound", s.getNotFound)
	t.Run("Recover", s.recover)
	t.Run("RecoverLeaseAndLimit", s.recoverLease)
	t.Run("RecoverConcurrent", s.recoverConcurrent)
	t.Run("ListAndCounts", s.listAndCounts)
	t.Run("Prune", s.prune)
	t.Run("PruneInBatches", s.pruneInBatches)
	t.Run("ConcurrentReservesOneWinner", s.concurrentReserve)
	t.Run("ConcurrentTransitionsAreDurable", s.concurrentTransitions)
	t.Run("TransitionTable", s.transitionTable)
	t.Run("TransitionTableRecover", s.transitionTableRecover)
}

// suite holds what the cases share.
type suite struct {
	open func(t *testing.T) engine.Journal
	seq  atomic.Int64 // numbers authorizations: every record is new
}

// record returns a new reserved record held by owner, created at base,
// lease until base+1m, kept until base+1h.
func (s *suite) record(owner string) engine.Record {
	n := s.seq.Add(1)
	payer := fmt.Sprintf("0x%040x", 0xb0b0000+n)
	nonce := fmt.Sprintf("0x%064x", 0xfeed0000+n)
	return engine.Record{
		Key:     exact.NonceKey(network, asset, payer, nonce),
		Network: network, Asset: asset, Payer: payer, Nonce: nonce, PayTo: payTo, Amount: "3400",
		RequestHash: fmt.Sprintf("sha256:request-%d", n),
		Resource:    "POST /api/risk-levels", Product: "risk_levels", Transport: "http",
		RefCode: refCode, RequestID: fmt.Sprintf("req-%d", n), X402Version: 2,
		State: engine.StateReserved, Owner: owner,
		LeaseUntil: base.Add(time.Minute), KeepUntil: base.Add(time.Hour),
		CreatedAt: base, UpdatedAt: base,
	}
}

// reservation is the reservation that creates rec (the suite's records
// are created reserved, at CreatedAt, with no attempt and nothing
// recorded).
func reservation(rec engine.Record) engine.Reservation {
	return engine.Reservation{
		Key: rec.Key, Network: rec.Network, Asset: rec.Asset, Payer: rec.Payer, Nonce: rec.Nonce, PayTo: rec.PayTo,
		Amount: rec.Amount,
		Request: engine.Request{Hash: rec.RequestHash, Resource: rec.Resource, Product: rec.Product,
			Transport: rec.Transport, RefCode: rec.RefCode, RequestID: rec.RequestID, X402Version: rec.X402Version},
		Owner: rec.Owner, LeaseUntil: rec.LeaseUntil, KeepUntil: rec.KeepUntil, Now: rec.CreatedAt,
	}
}

// settlingOf is what the move to settling of rec records.
func settlingOf(rec engine.Record) engine.Settling {
	return engine.Settling{
		Answer: engine.Answer{
			Status: 201,
			Header: map[string][]string{"Content-Type": {"application/json"}, "Vary": {"Accept", "Origin"}, "X-Empty": {""}},
			Body:   []byte("{\"ok\":true,\"key\":\"" + rec.Key + "\"}\x00\xff\n"),
		},
		AnswerUntil:  base.Add(24 * time.Hour),
		Payload:      []byte(`{"x402Version":2,"accepted":{"scheme":"exact","network":"eip155:8453"},"payload":{"signature":"0xabcdef"}}`),
		Requirements: []byte(`{"scheme":"exact","network":"eip155:8453","amount":"3400","payTo":"` + payTo + `"}`),
		Payer:        strings.ToUpper(rec.Payer[:2]) + rec.Payer[2:], // as the facilitator is told
		Amount:       "3400",
		LeaseUntil:   base.Add(2 * time.Minute),
	}
}

// settleResponse is a successful settlement of rec, with nested extras.
func settleResponse(rec engine.Record, tx int) x402.SettleResponse {
	return x402.SettleResponse{
		Success: true, Payer: rec.Payer, Transaction: fmt.Sprintf("0x%064x", tx), Network: network, Amount: rec.Amount,
		Extensions: map[string]any{"note": "dev", "n": float64(2)},
		Extra:      map[string]any{"nested": map[string]any{"a": []any{"x", true, nil}}},
	}
}

// refusal is a facilitator's refusal.
func refusal(rec engine.Record) x402.SettleResponse {
	return x402.SettleResponse{Success: false, ErrorReason: "insufficient_funds", ErrorMessage: "balance too low", Payer: rec.Payer, Network: network}
}

// withSettling applies what Settling records to rec.
func withSettling(rec engine.Record, st engine.Settling) engine.Record {
	ans := st.Answer
	rec.State = engine.StateSettling
	rec.Answer, rec.AnswerUntil = &ans, st.AnswerUntil
	rec.Payload, rec.Requirements = st.Payload, st.Requirements
	rec.Payer, rec.Amount, rec.LeaseUntil = st.Payer, st.Amount, st.LeaseUntil
	return rec
}

// drive creates rec and moves it to state through the legal transitions
// (released: a counted release) and returns what the journal then holds.
func drive(t *testing.T, j engine.Journal, rec engine.Record, state engine.State) engine.Record {
	t.Helper()
	ctx := context.Background()
	mustReserve(t, j, rec, 3)
	var err error
	switch state {
	case engine.StateReserved:
	case engine.StateReleased:
		err = j.Release(ctx, rec.Key, rec.Owner, "tool failed", true)
	default:
		if err = j.Settling(ctx, rec.Key, rec.Owner, settlingOf(rec)); err != nil {
			break
		}
		switch state {
		case engine.StateSettling:
		case engine.StateSettled:
			err = j.Settle(ctx, rec.Key, settleResponse(rec, 1), base.Add(time.Second))
		case engine.StateFailed:
			err = j.Fail(ctx, rec.Key, rec.Owner, "insufficient_funds", refusal(rec))
		case engine.StateUnknown:
			err = j.MarkUnknown(ctx, rec.Key, rec.Owner, "status query inconclusive")
		default:
			t.Fatalf("drive to %v: not a state", state)
		}
	}
	if err != nil {
		t.Fatalf("driving %s to %v: %v", rec.Key, state, err)
	}
	got := mustGet(t, j, rec.Key)
	if got.State != state {
		t.Fatalf("driving %s to %v: the row is %v", rec.Key, state, got.State)
	}
	return got
}

func (s *suite) reserveCreates(t *testing.T) {
	ctx := context.Background()
	j := s.open(t)
	rec := s.record("owner-a")
	got, err := j.Reserve(ctx, reservation(rec), 3)
	if err != nil {
		t.Fatalf("Reserve of a new key: %v", err)
	}
	want := rec
	want.State = engine.StateReserved
	if got.Key != rec.Key || got.State != engine.StateReserved || got.Attempts != 0 {
		t.Fatalf("Reserve returned %+v, want the reserved row", got)
	}
	checkRecord(t, "Get after Reserve", mustGet(t, j, rec.Key), want, true)

	// An empty key is refused (and is not ErrTaken).
	bad := s.record("owner-a")
	bad.Key = ""
	if _, err := j.Reserve(ctx, reservation(bad), 3); err == nil || errors.Is(err, engine.ErrTaken) {
		t.Fatalf("Reserve without a key err = %v, want a refusal", err)
	}
	// A canceled context fails the call and writes nothing.
	canceled, cancel := context.WithCancel(ctx)
	cancel()
	late := s.record("owner-a")
	if _, err := j.Reserve(canceled, reservation(late), 3); !errors.Is(err, context.Canceled) {
		t.Fatalf("Reserve with a canceled context err = %v, want context.Canceled", err)
	}
	if _, err := j.Get(ctx, late.Key); !errors.Is(err, engine.ErrNotFound) {
		t.Fatalf("Get after a canceled Reserve err = %v, want ErrNotFound", err)
	}
}

func (s *suite) reserveTaken(t *testing.T) {
	ctx := context.Background()
	j := s.open(t)
	for _, state := range []engine.State{engine.StateReserved, engine.StateSettling, engine.StateSettled,
		engine.StateFailed, engine.StateUnknown, engine.StateReleased} {
		rec := s.record("owner-a")
		before := drive(t, j, rec, state)
		other := rec
		other.RequestHash, other.Owner, other.RequestID = "sha256:another-request", "owner-b", "req-other"
		other.CreatedAt = base.Add(time.Minute)
		// A released row out of attempts (1 counted release, limit 1).
		existing, err := j.Reserve(ctx, reservation(other), 1)
		if !errors.Is(err, engine.ErrTaken) {
			t.Fatalf("%v: Reserve of a known key err = %v, want ErrTaken", state, err)
		}
		checkRecord(t, fmt.Sprintf("%v: the existing record", state), existing, before, false)
		if (state == engine.StateSettling || state == engine.StateSettled) && existing.Answer == nil {
			t.Fatalf("%v: the existing record lacks its answer: %+v", state, existing)
		}
		if state == engine.StateSettled && existing.Settlement == nil {
			t.Fatalf("settled: the existing record lacks its settlement: %+v", existing)
		}
		wantUnchanged(t, j, before)
	}
}

func (s *suite) reserveAgain(t *testing.T) {
	ctx := context.Background()
	j := s.open(t)
	rec := s.record("owner-a")
	mustReserve(t, j, rec, 3)
	if err := j.Release(ctx, rec.Key, "owner-a", "tool failed", true); err != nil {
		t.Fatalf("Release: %v", err)
	}
	again := rec
	again.RequestHash, again.Owner, again.LeaseUntil = "sha256:retry", "owner-b", base.Add(3*time.Minute)
	again.Resource, again.Product, again.Transport = "tools/call risk_levels", "risk_levels_v2", "mcp"
	again.RefCode, again.RequestID, again.X402Version = "", "req-retry", 1
	// Not taken from rec: the row's own.
	again.KeepUntil, again.CreatedAt = base.Add(2*time.Hour), base.Add(time.Minute)
	again.PayTo, again.Amount = "0x0000000000000000000000000000000000000001", "1"
	got, err := j.Reserve(ctx, reservation(again), 3)
	if err != nil {
		t.Fatalf("Reserve of a released key with attempts left: %v", err)
	}
	if got.State != engine.StateReserved || got.Attempts != 1 || got.RequestHash != "sha256:retry" {
		t.Fatalf("Reserve again returned %+v, want the reserved row with 1 attempt", got)
	}
	want := rec
	want.State, want.Attempts = engine.StateReserved, 1
	want.RequestHash, want.Owner, want.LeaseUntil = again.RequestHash, again.Owner, again.LeaseUntil
	want.Resource, want.Product, want.Transport = again.Resource, again.Product, again.Transport
	want.RefCode, want.RequestID, want.X402Version = again.RefCode, again.RequestID, again.X402Version
	checkRecord(t, "the re-reserved row", mustGet(t, j, rec.Key), want, true)

	// The new holder carries on; the old one holds nothing.
	if err := j.Settling(ctx, rec.Key, "owner-a", settlingOf(rec)); !errors.Is(err, engine.ErrState) {
		t.Fatalf("Settling by the previous holder err = %v, want ErrState", err)
	}
	// An uncounted release (a crash) keeps Attempts; a counted one adds one.
	if err := j.Release(ctx, rec.Key, "owner-b", "crashed", false); err != nil {
		t.Fatalf("uncounted Release: %v", err)
	}
	if r := mustGet(t, j, rec.Key); r.Attempts != 1 || r.State != engine.StateReleased || r.Reason != "crashed" {
		t.Fatalf("after an uncounted release: %+v, want released with 1 attempt", r)
	}
	mustReserve(t, j, again, 3)
	if err := j.Release(ctx, rec.Key, "owner-b", "tool failed", true); err != nil {
		t.Fatalf("counted Release: %v", err)
	}
	mustReserve(t, j, again, 3) // attempts 2 < 3
	if err := j.Release(ctx, rec.Key, "owner-b", "tool failed", true); err != nil {
		t.Fatalf("counted Release: %v", err)
	}
	// Attempts 3: refused at a limit of 3, admitted at 4.
	before := mustGet(t, j, rec.Key)
	if before.Attempts != 3 {
		t.Fatalf("Attempts = %d after three counted releases, want 3", before.Attempts)
	}
	existing, err := j.Reserve(ctx, reservation(again), 3)
	if !errors.Is(err, engine.ErrTaken) || existing.State != engine.StateReleased || existing.Attempts != 3 {
		t.Fatalf("Reserve out of attempts = %+v, %v; want the released row and ErrTaken", existing, err)
	}
	wantUnchanged(t, j, before)
	if got, err := j.Reserve(ctx, reservation(again), 4); err != nil || got.Attempts != 3 {
		t.Fatalf("Reserve under a higher limit = %+v, %v; want reserved with 3 attempts", got, err)
	}
}

func (s *suite) pastKeepUntil(t *testing.T) {
	ctx := context.Background()
	j := s.open(t)
	for _, state := range []engine.State{engine.StateSettled, engine.StateReleased, engine.StateFailed} {
		rec := s.record("owner-a")
		before := drive(t, j, rec, state)
		fresh := rec
		fresh.RequestHash, fresh.Owner, fresh.PayTo = "sha256:fresh", "owner-b", "0x0000000000000000000000000000000000000002"
		fresh.CreatedAt, fresh.UpdatedAt = rec.KeepUntil, rec.KeepUntil // at KeepUntil: still kept
		fresh.LeaseUntil, fresh.KeepUntil = rec.KeepUntil.Add(time.Minute), rec.KeepUntil.Add(time.Hour)
		if _, err := j.Reserve(ctx, reservation(fresh), 1); !errors.Is(err, engine.ErrTaken) {
			t.Fatalf("%v: Reserve at KeepUntil err = %v, want ErrTaken", state, err)
		}
		wantUnchanged(t, j, before)
		fresh.CreatedAt = rec.KeepUntil.Add(time.Millisecond)
		fresh.UpdatedAt = fresh.CreatedAt
		got, err := j.Reserve(ctx, reservation(fresh), 1)
		if err != nil || got.State != engine.StateReserved || got.Attempts != 0 {
			t.Fatalf("%v: Reserve past KeepUntil = %+v, %v; want a fresh reservation", state, got, err)
		}
		checkRecord(t, fmt.Sprintf("%v: the row replaced past KeepUntil", state), mustGet(t, j, rec.Key), fresh, true)
	}
	for _, state := range []engine.State{engine.StateReserved, engine.StateSettling, engine.StateUnknown} {
		rec := s.record("owner-a")
		before := drive(t, j, rec, state)
		late := rec
		late.RequestHash, late.Owner = "sha256:late", "owner-b"
		late.CreatedAt = rec.KeepUntil.Add(24 * time.Hour)
		existing, err := j.Reserve(ctx, reservation(late), 10)
		if !errors.Is(err, engine.ErrTaken) || existing.State != state {
			t.Fatalf("%v: Reserve past KeepUntil = %+v, %v; want the row kept and ErrTaken", state, existing, err)
		}
		wantUnchanged(t, j, before)
	}
}

func (s *suite) settling(t *testing.T) {
	ctx := context.Background()
	j := s.open(t)
	rec := s.record("owner-a")
	before := drive(t, j, rec, engine.StateReserved)
	st := settlingOf(rec)
	if err := j.Settling(ctx, rec.Key, "owner-b", st); !errors.Is(err, engine.ErrState) {
		t.Fatalf("Settling by another owner err = %v, want ErrState", err)
	}
	wantUnchanged(t, j, before)
	// A call of another request (its reservation released and the key
	// admitted again for this one) does not move the row.
	other := st
	other.RequestHash = rec.RequestHash + "-other"
	if err := j.Settling(ctx, rec.Key, "owner-a", other); !errors.Is(err, engine.ErrState) {
		t.Fatalf("Settling for another request err = %v, want ErrState", err)
	}
	wantUnchanged(t, j, before)
	st.RequestHash = rec.RequestHash
	if err := j.Settling(ctx, rec.Key, "owner-a", st); err != nil {
		t.Fatalf("Settling: %v", err)
	}
	want := withSettling(rec, st)
	settling := mustGet(t, j, rec.Key)
	checkRecord(t, "the settling row", settling, want, true)
	// Settling is left only once.
	if err := j.Settling(ctx, rec.Key, "owner-a", st); !errors.Is(err, engine.ErrState) {
		t.Fatalf("second Settling err = %v, want ErrState", err)
	}
	wantUnchanged(t, j, settling)
	for _, state := range []engine.State{engine.StateSettled, engine.StateReleased, engine.StateFailed, engine.StateUnknown} {
		r := s.record("owner-a")
		b := drive(t, j, r, state)
		if err := j.Settling(ctx, r.Key, "owner-a", settlingOf(r)); !errors.Is(err, engine.ErrState) {
			t.Fatalf("Settling from %v err = %v, want ErrState", state, err)
		}
		wantUnchanged(t, j, b)
	}
	absent := s.record("owner-a")
	if err := j.Settling(ctx, absent.Key, "owner-a", settlingOf(absent)); !errors.Is(err, engine.ErrState) || !errors.Is(err, engine.ErrNotFound) {
		t.Fatalf("Settling of an absent key err = %v, want ErrState and ErrNotFound", err)
	}
	if _, err := j.Get(ctx, absent.Key); !errors.Is(err, engine.ErrNotFound) {
		t.Fatalf("Settling of an absent key created it: Get err = %v", err)
	}
}

func (s *suite) settle(t *testing.T) {
	ctx := context.Background()
	j := s.open(t)
	lr, hasLedger := j.(LedgerReader)
	if !hasLedger {
		t.Logf("the journal does not implement journaltest.LedgerReader: ledger entries are not checked")
	}
	checkLedger := func(rec engine.Record, sr x402.SettleResponse, at time.Time) {
		t.Helper()
		if !hasLedger {
			return
		}
		e, found, err := lr.LedgerEntry(ctx, rec.Network, strings.ToUpper(rec.Asset), rec.Payer, strings.ToUpper(rec.Nonce))
		if err != nil || !found {
			t.Fatalf("ledger entry of %s: found %v, %v; want it written with the settled state", rec.Key, found, err)
		}
		if e.Network != rec.Network || !strings.EqualFold(e.Asset, rec.Asset) || !strings.EqualFold(e.Payer, rec.Payer) ||
			!strings.EqualFold(e.Nonce, rec.Nonce) || e.Product != rec.Product || e.Amount != rec.Amount ||
			e.Transaction != sr.Transaction || e.RefCode != rec.RefCode || e.Resource != rec.Resource ||
			e.Transport != rec.Transport || !e.SettledAt.Equal(at) {
			t.Fatalf("ledger entry = %+v\nwant the settlement of %+v (transaction %s, at %v)", e, rec, sr.Transaction, at)
		}
	}
	noLedger := func(rec engine.Record) {
		t.Helper()
		if !hasLedger {
			return
		}
		if _, found, err := lr.LedgerEntry(ctx, rec.Network, rec.Asset, rec.Payer, rec.Nonce); err != nil || found {
			t.Fatalf("ledger entry of %s: found %v, %v; want none", rec.Key, found, err)
		}
	}

	// From settling, by anyone (no owner is named).
	rec := s.record("owner-a")
	settling := drive(t, j, rec, engine.StateSettling)
	noLedger(settling)
	sr := settleResponse(rec, 7)
	at := base.Add(90 * time.Second)
	if err := j.Settle(ctx, rec.Key, sr, at); err != nil {
		t.Fatalf("Settle: %v", err)
	}
	want := settling
	want.State, want.Settlement = engine.StateSettled, &sr
	settled := mustGet(t, j, rec.Key)
	checkRecord(t, "the settled row", settled, want, true)
	checkLedger(settling, sr, at)
	// Twice: a no-op returning nil; the first settlement stays.
	if err := j.Settle(ctx, rec.Key, settleResponse(rec, 8), at.Add(time.Minute)); err != nil {
		t.Fatalf("second Settle err = %v, want nil", err)
	}
	wantUnchanged(t, j, settled)
	checkLedger(settling, sr, at)

	// From unknown: a confirmed settlement is the truth.
	rec2 := s.record("owner-a")
	unknown := drive(t, j, rec2, engine.StateUnknown)
	sr2 := settleResponse(rec2, 9)
	if err := j.Settle(ctx, rec2.Key, sr2, at); err != nil {
		t.Fatalf("Settle from unknown: %v", err)
	}
	want2 := unknown
	want2.State, want2.Settlement = engine.StateSettled, &sr2
	checkRecord(t, "the row settled from unknown", mustGet(t, j, rec2.Key), want2, true)
	checkLedger(unknown, sr2, at)

	// From released or failed too (recovery or a refusal concluded nothing
	// was paid, but the facilitator confirms a settlement: it wins), with
	// the ledger entry; not from reserved (no answer was recorded).
	for i, state := range []engine.State{engine.StateReleased, engine.StateFailed} {
		r := s.record("owner-a")
		drive(t, j, r, state)
		sr := settleResponse(r, 20+i)
		if err := j.Settle(ctx, r.Key, sr, at); err != nil {
			t.Fatalf("Settle from %v: %v", state, err)
		}
		if got := mustGet(t, j, r.Key); got.State != engine.StateSettled || got.Settlement == nil || got.Settlement.Transaction != sr.Transaction {
			t.Fatalf("Settle from %v: row %v", state, got.State)
		}
		if lr, ok := j.(LedgerReader); ok {
			if _, found, err := lr.LedgerEntry(ctx, r.Network, r.Asset, r.Payer, r.Nonce); err != nil || !found {
				t.Fatalf("Settle from %v: no ledger entry (%v)", state, err)
			}
		}
	}
	{
		r := s.record("owner-a")
		b := drive(t, j, r, engine.StateReserved)
		if err := j.Settle(ctx, r.Key, settleResponse(r, 10), at); !errors.Is(err, engine.ErrState) {
			t.Fatalf("Settle from reserved err = %v, want ErrState", err)
		}
		wantUnchanged(t, j, b)
		noLedger(r)
	}
	absent := s.record("owner-a")
	if err := j.Settle(ctx, absent.Key, settleResponse(absent, 11), at); !errors.Is(err, engine.ErrState) || !errors.Is(err, engine.ErrNotFound) {
		t.Fatalf("Settle of an absent key err = %v, want ErrState and ErrNotFound", err)
	}
	noLedger(absent)
}

func (s *suite) release(t *testing.T) {
	ctx := context.Background()
	j := s.open(t)
	// From reserved, counted.
	rec := s.record("owner-a")
	before := drive(t, j, rec, engine.StateReserved)
	if err := j.Release(ctx, rec.Key, "owner-b", "not mine", true); !errors.Is(err, engine.ErrState) {
		t.Fatalf("Release by another owner err = %v, want ErrState", err)
	}
	wantUnchanged(t, j, before)
	if err := j.Release(ctx, rec.Key, "owner-a", "tool failed", true); err != nil {
		t.Fatalf("Release: %v", err)
	}
	want := before
	want.State, want.Attempts, want.Reason = engine.StateReleased, 1, "tool failed"
	released := mustGet(t, j, rec.Key)
	checkRecord(t, "the released row", released, want, true)
	if err := j.Release(ctx, rec.Key, "owner-a", "again", true); !errors.Is(err, engine.ErrState) {
		t.Fatalf("Release of a released row err = %v, want ErrState", err)
	}
	wantUnchanged(t, j, released)

	// From settling, uncounted.
	rec2 := s.record("owner-a")
	settling := drive(t, j, rec2, engine.StateSettling)
	if err := j.Release(ctx, rec2.Key, "owner-b", "not mine", false); !errors.Is(err, engine.ErrState) {
		t.Fatalf("Release of a settling row by another owner err = %v, want ErrState", err)
	}
	wantUnchanged(t, j, settling)
	if err := j.Release(ctx, rec2.Key, "owner-a", "settlement refused before the chain", false); err != nil {
		t.Fatalf("Release from settling: %v", err)
	}
	got := mustGet(t, j, rec2.Key)
	if got.State != engine.StateReleased || got.Attempts != 0 || got.Reason != "settlement refused before the chain" {
		t.Fatalf("the row released from settling = %+v, want released, 0 attempts, the reason", got)
	}

	for _, state := range []engine.State{engine.StateSettled, engine.StateFailed, engine.StateUnknown} {
		r := s.record("owner-a")
		b := drive(t, j, r, state)
		if err := j.Release(ctx, r.Key, "owner-a", "x", true); !errors.Is(err, engine.ErrState) {
			t.Fatalf("Release from %v err = %v, want ErrState", state, err)
		}
		wantUnchanged(t, j, b)
	}
	absent := s.record("owner-a")
	if err := j.Release(ctx, absent.Key, "owner-a", "x", true); !errors.Is(err, engine.ErrState) || !errors.Is(err, engine.ErrNotFound) {
		t.Fatalf("Release of an absent key err = %v, want ErrState and ErrNotFound", err)
	}
}

func (s *suite) failAndUnknown(t *testing.T) {
	ctx := context.Background()
	j := s.open(t)
	type move struct {
		name  string
		to    engine.State
		apply func(key, owner string) error
	}
	rec0 := s.record("owner-a")
	moves := []move{
		{"Fail", engine.StateFailed, func(key, owner string) error {
			return j.Fail(ctx, key, owner, "insufficient_funds", refusal(rec0))
		}},
		{"MarkUnknown", engine.StateUnknown, func(key, owner string) error {
			return j.MarkUnknown(ctx, key, owner, "status query inconclusive")
		}},
	}
	for _, m := range moves {
		rec := s.record("owner-a")
		settling := drive(t, j, rec, engine.StateSettling)
		if err := m.apply(rec.Key, "owner-b"); !errors.Is(err, engine.ErrState) {
			t.Fatalf("%s by another owner err = %v, want ErrState", m.name, err)
		}
		wantUnchanged(t, j, settling)
		if err := m.apply(rec.Key, "owner-a"); err != nil {
			t.Fatalf("%s: %v", m.name, err)
		}
		want := settling
		want.State = m.to
		if m.to == engine.StateFailed {
			sr := refusal(rec0)
			want.Settlement, want.Reason = &sr, "insufficient_funds"
		} else {
			want.Reason = "status query inconclusive"
		}
		done := mustGet(t, j, rec.Key)
		checkRecord(t, "the row after "+m.name, done, want, true)
		if err := m.apply(rec.Key, "owner-a"); !errors.Is(err, engine.ErrState) {
			t.Fatalf("second %s err = %v, want ErrState", m.name, err)
		}
		wantUnchanged(t, j, done)
		for _, state := range []engine.State{engine.StateReserved, engine.StateSettled, engine.StateReleased} {
			r := s.record("owner-a")
			b := drive(t, j, r, state)
			if err := m.apply(r.Key, "owner-a"); !errors.Is(err, engine.ErrState) {
				t.Fatalf("%s from %v err = %v, want ErrState", m.name, state, err)
			}
			wantUnchanged(t, j, b)
		}
		absent := s.record("owner-a")
		if err := m.apply(absent.Key, "owner-a"); !errors.Is(err, engine.ErrState) || !errors.Is(err, engine.ErrNotFound) {
			t.Fatalf("%s of an absent key err = %v, want ErrState and ErrNotFound", m.name, err)
		}
	}
}

func (s *suite) getNotFound(t *testing.T) {
	j := s.open(t)
	if _, err := j.Get(context.Background(), s.record("x").Key); !errors.Is(err, engine.ErrNotFound) {
		t.Fatalf("Get of an absent key err = %v, want ErrNotFound", err)
	}
}

func (s *suite) recover(t *testing.T) {
	ctx := context.Background()
	j := s.open(t)
	now := base.Add(30 * time.Second)
	deadBefore := base.Add(-time.Minute)
	for owner, at := range map[string]time.Time{
		"alive": base, "edge": deadBefore, "dead": deadBefore.Add(-time.Millisecond), "gone": base,
	} {
		if err := j.Heartbeat(ctx, owner, at); err != nil {
			t.Fatalf("Heartbeat(%s): %v", owner, err)
		}
	}
	if err := j.Leave(ctx, "gone"); err != nil {
		t.Fatalf("Leave: %v", err)
	}
	type row struct {
		owner string
		lease time.Time
		state engine.State
		// what Recover must do
		release, claim bool
	}
	live, ended := base.Add(time.Minute), now.Add(-time.Millisecond)
	rows := map[string]row{
		"reserved, alive, leased":         {"alive", live, engine.StateReserved, false, false},
		"reserved, alive, lease ends now": {"alive", now, engine.StateReserved, false, false},
		"reserved, heartbeat at the edge": {"edge", live, engine.StateReserved, false, false},
		"reserved, lease ended":           {"alive", ended, engine.StateReserved, true, false},
		"reserved, dead owner":            {"dead", live, engine.StateReserved, true, false},
		"reserved, never seen":            {"ghost", live, engine.StateReserved, true, false},
		"reserved, owner left":            {"gone", live, engine.StateReserved, true, false},
		"settling, alive, leased":         {"alive", live, engine.StateSettling, false, false},
		"settling, heartbeat at the edge": {"edge", live, engine.StateSettling, false, false},
		"settling, lease ended":           {"alive", ended, engine.StateSettling, false, true},
		"settling, dead owner":            {"dead", live, engine.StateSettling, false, true},
		"settling, never seen":            {"ghost", live, engine.StateSettling, false, true},
		"settling, owner left":            {"gone", live, engine.StateSettling, false, true},
		"settled, dead owner":             {"dead", ended, engine.StateSettled, false, false},
		"failed, dead owner":              {"dead", ended, engine.StateFailed, false, false},
		"unknown, dead owner":             {"dead", ended, engine.StateUnknown, false, false},
		"released, dead owner":            {"dead", ended, engine.StateReleased, false, false},
	}
	before := map[string]engine.Record{} // by case name
	byKey := map[string]string{}         // key → case name
	for name, r := range rows {
		rec := s.record(r.owner)
		rec.LeaseUntil = r.lease
		st := settlingOf(rec)
		st.LeaseUntil = r.lease
		mustReserve(t, j, rec, 3)
		var err error
		switch r.state {
		case engine.StateReserved:
		case engine.StateReleased:
			err = j.Release(ctx, rec.Key, r.owner, "tool failed", true)
		default:
			err = j.Settling(ctx, rec.Key, r.owner, st)
			switch {
			case err != nil:
			case r.state == engine.StateSettled:
				err = j.Settle(ctx, rec.Key, settleResponse(rec, 1), base)
			case r.state == engine.StateFailed:
				err = j.Fail(ctx, rec.Key, r.owner, "refused", refusal(rec))
			case r.state == engine.StateUnknown:
				err = j.MarkUnknown(ctx, rec.Key, r.owner, "inconclusive")
			}
		}
		if err != nil {
			t.Fatalf("%s: setting up: %v", name, err)
		}
		before[name] = mustGet(t, j, rec.Key)
		byKey[rec.Key] = name
	}
	newLease := base.Add(5 * time.Minute)
	claimed, released, err := j.Recover(ctx, "recoverer", now, deadBefore, newLease, 100)
	if err != nil {
		t.Fatalf("Recover: %v", err)
	}
	wantReleased, wantClaimed := 0, 0
	for _, r := range rows {
		if r.release {
			wantReleased++
		}
		if r.claim {
			wantClaimed++
		}
	}
	if released != wantReleased {
		t.Errorf("Recover released %d rows, want %d", released, wantReleased)
	}
	seen := map[string]bool{}
	for _, c := range claimed {
		name, ok := byKey[c.Key]
		if !ok || !rows[name].claim || seen[c.Key] {
			t.Fatalf("Recover claimed %q (case %q), which it must not (or twice)", c.Key, name)
		}
		seen[c.Key] = true
		want := before[name]
		want.Owner, want.LeaseUntil = "recoverer", newLease
		checkRecord(t, "claimed row "+name, c, want, true)
	}
	if len(claimed) != wantClaimed {
		t.Fatalf("Recover claimed %d rows, want %d", len(claimed), wantClaimed)
	}
	for name, r := range rows {
		b := before[name]
		got := mustGet(t, j, b.Key)
		switch {
		case r.release:
			want := b
			want.State, want.Reason = engine.StateReleased, "abandoned" // uncounted: Attempts kept
			checkRecord(t, "released row "+name, got, want, true)
		case r.claim:
			want := b
			want.Owner, want.LeaseUntil = "recoverer", newLease
			checkRecord(t, "claimed row "+name, got, want, true)
		default:
			checkRecord(t, "untouched row "+name, got, b, false)
		}
	}
	// The claims are the recoverer's: a second caller at the same instant
	// gets nothing, though the recoverer never sent a heartbeat of its own.
	claimed, released, err = j.Recover(ctx, "second", now, deadBefore, newLease.Add(time.Minute), 100)
	if err != nil || len(claimed) != 0 || released != 0 {
		t.Fatalf("second Recover = %d claimed, %d released, %v; want nothing", len(claimed), released, err)
	}
	// The recoverer now holds them: it may settle, release or mark them.
	for name, r := range rows {
		if r.claim {
			if err := j.MarkUnknown(ctx, before[name].Key, "recoverer", "inconclusive"); err != nil {
				t.Fatalf("MarkUnknown of claimed row %s by its new owner: %v", name, err)
			}
			break
		}
	}
}

func (s *suite) recoverLease(t *testing.T) {
	ctx := context.Background()
	j := s.open(t)
	var keys []string
	for i := range 3 {
		rec := s.record("crashed")
		rec.CreatedAt = base.Add(time.Duration(i) * time.Millisecond)
		mustReserve(t, j, rec, 3)
		if err := j.Settling(ctx, rec.Key, "crashed", settlingOf(rec)); err != nil {
			t.Fatalf("Settling: %v", err)
		}
		keys = append(keys, rec.Key)
	}
	now := base.Add(time.Minute)
	lease := now.Add(time.Minute)
	// "crashed" never sent a heartbeat: its rows are claimable at once, up
	// to the limit per call.
	first, _, err := j.Recover(ctx, "r1", now, now.Add(-30*time.Second), lease, 2)
	if err != nil || len(first) != 2 {
		t.Fatalf("Recover with limit 2 = %d rows, %v; want 2", len(first), err)
	}
	second, _, err := j.Recover(ctx, "r2", now, now.Add(-30*time.Second), lease, 2)
	if err != nil || len(second) != 1 {
		t.Fatalf("next Recover = %d rows, %v; want the remaining 1", len(second), err)
	}
	all := []string{first[0].Key, first[1].Key, second[0].Key}
	slices.Sort(all)
	want := slices.Clone(keys)
	slices.Sort(want)
	if !slices.Equal(all, want) {
		t.Fatalf("claimed %v, want each of %v once", all, want)
	}
	// r1 and r2 stay alive: nobody else gets their rows until the lease
	// ends, which is after, not at, LeaseUntil; then anyone may.
	later := lease
	if err := j.Heartbeat(ctx, "r1", later); err != nil {
		t.Fatalf("Heartbeat: %v", err)
	}
	if err := j.Heartbeat(ctx, "r2", later); err != nil {
		t.Fatalf("Heartbeat: %v", err)
	}
	got, _, err := j.Recover(ctx, "r3", later, later.Add(-30*time.Second), later.Add(time.Minute), 10)
	if err != nil || len(got) != 0 {
		t.Fatalf("Recover at the end of the lease = %d rows, %v; want none", len(got), err)
	}
	after := lease.Add(time.Millisecond)
	got, _, err = j.Recover(ctx, "r3", after, after.Add(-30*time.Second), after.Add(time.Minute), 10)
	if err != nil || len(got) != 3 {
		t.Fatalf("Recover after the lease = %d rows, %v; want all 3", len(got), err)
	}
	for _, r := range got {
		if r.Owner != "r3" || !r.LeaseUntil.Equal(after.Add(time.Minute)) || r.State != engine.StateSettling {
			t.Fatalf("reclaimed row = %+v, want settling, held by r3 until %v", r, after.Add(time.Minute))
		}
	}
	// The previous holder lost them.
	if err := j.MarkUnknown(ctx, first[0].Key, "r1", "late"); !errors.Is(err, engine.ErrState) {
		t.Fatalf("MarkUnknown by the previous holder err = %v, want ErrState", err)
	}
}

func (s *suite) recoverConcurrent(t *testing.T) {
	ctx := context.Background()
	j := s.open(t)
	const rowsN, callers = 30, 20
	settling := map[string]bool{}
	reserved := map[string]bool{}
	for i := range rowsN {
		rec := s.record("crashed")
		rec.CreatedAt = base.Add(time.Duration(i) * time.Millisecond)
		mustReserve(t, j, rec, 3)
		if err := j.Settling(ctx, rec.Key, "crashed", settlingOf(rec)); err != nil {
			t.Fatalf("Settling: %v", err)
		}
		settling[rec.Key] = true
		res := s.record("crashed")
		mustReserve(t, j, res, 3)
		reserved[res.Key] = true
	}
	now := base.Add(time.Minute)
	var mu sync.Mutex
	claimedBy := map[string][]string{}
	var released atomic.Int64
	claimAll := func(owner string) error {
		for {
			got, n, err := j.Recover(ctx, owner, now, now.Add(-30*time.Second), now.Add(time.Minute), 4)
			released.Add(int64(n))
			if err != nil {
				return err
			}
			mu.Lock()
			for _, r := range got {
				claimedBy[r.Key] = append(claimedBy[r.Key], owner)
			}
			mu.Unlock()
			if len(got) == 0 {
				return nil
			}
		}
	}
	for _, err := range Concurrently(callers, waitFor, func(i int) error { return claimAll(fmt.Sprintf("instance-%d", i)) }) {
		t.Fatalf("concurrent Recover: %v", err)
	}
	// Rows a concurrent caller skipped are claimed by the next round.
	if err := claimAll("mop-up"); err != nil {
		t.Fatalf("Recover: %v", err)
	}
	for key := range settling {
		if len(claimedBy[key]) != 1 {
			t.Fatalf("row %s claimed by %v, want exactly one instance", key, claimedBy[key])
		}
		r := mustGet(t, j, key)
		if r.Owner != claimedBy[key][0] || r.State != engine.StateSettling {
			t.Fatalf("row %s = %v held by %q, want settling, held by its claimer %q", key, r.State, r.Owner, claimedBy[key][0])
		}
	}
	if len(claimedBy) != rowsN {
		t.Fatalf("%d rows claimed, want %d", len(claimedBy), rowsN)
	}
	if released.Load() != rowsN {
		t.Fatalf("%d rows released in all, want %d (each once)", released.Load(), rowsN)
	}
	for key := range reserved {
		if r := mustGet(t, j, key); r.State != engine.StateReleased || r.Attempts != 0 {
			t.Fatalf("abandoned reservation %s = %v with %d attempts, want released, uncounted", key, r.State, r.Attempts)
		}
	}
}

func (s *suite) listAndCounts(t *testing.T) {
	ctx := context.Background()
	j := s.open(t)
	counts, err := j.Counts(ctx)
	if err != nil {
		t.Fatalf("Counts: %v", err)
	}
	for _, st := range engine.States() {
		if counts[st] != 0 {
			t.Fatalf("Counts of an empty journal = %v", counts)
		}
	}
	want := map[engine.State]int64{}
	listed := map[engine.State][]string{}
	// Created out of order: List sorts oldest first.
	offsets := []int{5, 1, 4, 0, 3, 2}
	for i, state := range []engine.State{engine.StateReserved, engine.StateSettling, engine.StateSettled,
		engine.StateReleased, engine.StateFailed, engine.StateUnknown} {
		for k := range i + 1 {
			rec := s.record("owner-a")
			rec.CreatedAt = base.Add(time.Duration(offsets[k%len(offsets)]) * time.Second)
			drive(t, j, rec, state)
			want[state]++
			listed[state] = append(listed[state], rec.Key)
		}
	}
	counts, err = j.Counts(ctx)
	if err != nil {
		t.Fatalf("Counts: %v", err)
	}
	for _, st := range engine.States() {
		if counts[st] != want[st] {
			t.Fatalf("Counts = %v, want %v", counts, want)
		}
	}
	for state, keys := range listed {
		got, err := j.List(ctx, state, 100)
		if err != nil {
			t.Fatalf("List(%v): %v", state, err)
		}
		if len(got) != len(keys) {
			t.Fatalf("List(%v) = %d rows, want %d", state, len(got), len(keys))
		}
		for i, r := range got {
			if r.State != state || !slices.Contains(keys, r.Key) {
				t.Fatalf("List(%v) returned %v row %s", state, r.State, r.Key)
			}
			if i > 0 && r.CreatedAt.Before(got[i-1].CreatedAt) {
				t.Fatalf("List(%v) is not oldest first: %v after %v", state, r.CreatedAt, got[i-1].CreatedAt)
			}
		}
		if state == engine.StateSettled && (got[0].Answer == nil || got[0].Settlement == nil || len(got[0].Payload) == 0) {
			t.Fatalf("List(settled) lost the answer, settlement or payload: %+v", got[0])
		}
	}
	got, err := j.List(ctx, engine.StateUnknown, 2)
	if err != nil || len(got) != 2 || got[0].CreatedAt.After(got[1].CreatedAt) {
		t.Fatalf("List(unknown, 2) = %d rows, %v; want the 2 oldest", len(got), err)
	}
	all, _ := j.List(ctx, engine.StateUnknown, 100)
	if got[0].Key != all[0].Key || got[1].Key != all[1].Key {
		t.Fatalf("List(unknown, 2) = %s, %s; want the first two of the full list", got[0].Key, got[1].Key)
	}
}

func (s *suite) prune(t *testing.T) {
	ctx := context.Background()
	j := s.open(t)
	now := base.Add(48 * time.Hour)
	type row struct {
		state           engine.State
		keep, answer    time.Time
		deleted, forget bool
	}
	past, future := now.Add(-time.Millisecond), now.Add(time.Hour)
	rows := map[string]row{
		"settled past keep":            {engine.StateSettled, past, past, true, false},
		"settled at keep":              {engine.StateSettled, now, past, false, true},
		"settled, answer kept":         {engine.StateSettled, future, future, false, false},
		"settled, answer at its limit": {engine.StateSettled, future, now, false, false},
		"settled, answer forgotten":    {engine.StateSettled, future, past, false, true},
		"released past keep":           {engine.StateReleased, past, past, true, false},
		"failed past keep":             {engine.StateFailed, past, past, true, false},
		"failed, answer forgotten":     {engine.StateFailed, future, past, false, true},
		"settling past keep":           {engine.StateSettling, past, past, false, false},
		"unknown past keep":            {engine.StateUnknown, past, past, false, false},
		"reserved past keep":           {engine.StateReserved, past, past, false, false},
	}
	keys := map[string]string{}
	before := map[string]engine.Record{}
	for name, r := range rows {
		rec := s.pruneRow(t, j, r.state, r.keep, r.answer)
		keys[name] = rec.Key
		before[name] = rec
	}
	got, err := j.Prune(ctx, now, engine.PruneOptions{})
	deleted, forgotten := got.Deleted, got.Forgotten
	if err != nil {
		t.Fatalf("Prune: %v", err)
	}
	var wantDeleted, wantForgotten int64
	for name, r := range rows {
		got, err := j.Get(ctx, keys[name])
		switch {
		case r.deleted:
			wantDeleted++
			if !errors.Is(err, engine.ErrNotFound) {
				t.Fatalf("%s: Get after Prune err = %v, want ErrNotFound", name, err)
			}
			continue
		case err != nil:
			t.Fatalf("%s: Get after Prune: %v", name, err)
		case r.forget:
			wantForgotten++
			if got.Answer != nil {
				t.Fatalf("%s: the answer survived Prune", name)
			}
			want := before[name]
			want.Answer = nil
			checkRecord(t, name+" after Prune", got, want, true)
		default:
			checkRecord(t, name+" after Prune", got, before[name], true)
		}
	}
	if deleted != wantDeleted || forgotten != wantForgotten {
		t.Fatalf("Prune = %d deleted, %d forgotten; want %d, %d", deleted, forgotten, wantDeleted, wantForgotten)
	}
	// Pruning again finds nothing more.
	if again, err := j.Prune(ctx, now, engine.PruneOptions{}); err != nil || again != (engine.PruneTotals{}) {
		t.Fatalf("second Prune = %+v, %v; want nothing", again, err)
	}
	// A deleted key may be reserved afresh.
	for name, r := range rows {
		if r.deleted {
			rec := before[name]
			rec.State, rec.Answer, rec.Settlement, rec.Payload, rec.Requirements, rec.Reason = engine.StateReserved, nil, nil, nil, nil, ""
			rec.Attempts, rec.AnswerUntil, rec.CreatedAt = 0, time.Time{}, now
			if _, err := j.Reserve(ctx, reservation(rec), 3); err != nil {
				t.Fatalf("%s: Reserve after Prune: %v", name, err)
			}
		}
	}
}

// pruneRow creates a record held by owner-a, kept until keep, and drives
// it to state (settling, settled, failed and unknown rows with an answer
// kept until answer) and returns what the journal then holds.
func (s *suite) pruneRow(t *testing.T, j engine.Journal, state engine.State, keep, answer time.Time) engine.Record {
	t.Helper()
	ctx := context.Background()
	rec := s.record("owner-a")
	rec.KeepUntil = keep
	mustReserve(t, j, rec, 3)
	st := settlingOf(rec)
	st.AnswerUntil = answer
	var err error
	switch state {
	case engine.StateReserved:
	case engine.StateReleased:
		err = j.Release(ctx, rec.Key, "owner-a", "x", true)
	default:
		err = j.Settling(ctx, rec.Key, "owner-a", st)
		switch {
		case err != nil:
		case state == engine.StateSettled:
			err = j.Settle(ctx, rec.Key, settleResponse(rec, 1), base)
		case state == engine.StateFailed:
			err = j.Fail(ctx, rec.Key, "owner-a", "refused", refusal(rec))
		case state == engine.StateUnknown:
			err = j.MarkUnknown(ctx, rec.Key, "owner-a", "x")
		}
	}
	if err != nil {
		t.Fatalf("setting up a %v row: %v", state, err)
	}
	return mustGet(t, j, rec.Key)
}

// pruneBatch is the batch of the batched prune cases: many batches from
// a few rows.
const pruneBatch = 2

// pruneInBatches checks that Prune works in batches of at most
// PruneOptions.Batch rows, that a Prune interrupted by its context (or
// stopped by After) keeps what its batches committed and that the next
// Prune finishes the work, that rows in a state outside Prunable are
// never touched, and that the journal's writes go on between batches: a
// whole paid call (Reserve, Settling, Settle) issued while a prune runs
// completes before the prune's next batch.
func (s *suite) pruneInBatches(t *testing.T) {
	ctx := context.Background()
	j := s.open(t)
	now := base.Add(48 * time.Hour)
	past, future := now.Add(-time.Millisecond), now.Add(time.Hour)
	var gone, forgotten, kept []engine.Record
	for i := range 7 {
		st := []engine.State{engine.StateSettled, engine.StateReleased, engine.StateFailed}[i%3]
		gone = append(gone, s.pruneRow(t, j, st, past.Add(-time.Duration(i%2)*time.Minute), past))
	}
	for i := range 5 {
		st := []engine.State{engine.StateSettled, engine.StateFailed}[i%2]
		forgotten = append(forgotten, s.pruneRow(t, j, st, future, past.Add(-time.Duration(i%2)*time.Minute)))
	}
	// Rows no Prune may touch, past both instants, some among the
	// prunable ones in the order of each index.
	for _, st := range []engine.State{engine.StateReserved, engine.StateSettling, engine.StateUnknown} {
		kept = append(kept, s.pruneRow(t, j, st, past, past))
		kept = append(kept, s.pruneRow(t, j, st, past.Add(-time.Minute), past.Add(-time.Minute)))
	}
	kept = append(kept, s.pruneRow(t, j, engine.StateSettled, future, future))
	want := engine.PruneTotals{Deleted: int64(len(gone)), Forgotten: int64(len(forgotten))}

	// Interrupted by its context after two batches: what they committed
	// stays, the rest is left.
	stopAt := 2
	cctx, cancel := context.WithCancel(ctx)
	var steps []engine.PruneTotals
	first, err := j.Prune(cctx, now, engine.PruneOptions{Batch: pruneBatch, After: func(tot engine.PruneTotals) error {
		steps = append(steps, tot)
		if len(steps) == stopAt {
			cancel()
		}
		return nil
	}})
	cancel()
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Prune whose context ends after %d batches err = %v, want context.Canceled", stopAt, err)
	}
	checkSteps(t, steps)
	if len(steps) != stopAt || first != steps[len(steps)-1] {
		t.Fatalf("interrupted Prune = %+v after batches %+v; want the totals of %d batches", first, steps, stopAt)
	}
	s.checkPruned(t, j, gone, forgotten, kept, first)

	// Stopped by After: the same.
	stop := errors.New("stop")
	second, err := j.Prune(ctx, now, engine.PruneOptions{Batch: pruneBatch, After: func(engine.PruneTotals) error { return stop }})
	if !errors.Is(err, stop) || second.Batches != 1 || second.Deleted+second.Forgotten > pruneBatch {
		t.Fatalf("Prune stopped by After = %+v, %v; want one batch and After's error", second, err)
	}
	done := engine.PruneTotals{Deleted: first.Deleted + second.Deleted, Forgotten: first.Forgotten + second.Forgotten}
	s.checkPruned(t, j, gone, forgotten, kept, done)

	// The rest, with paid calls going on: one completes between every two
	// batches, whether issued from the hook (while the prune waits) or
	// from a caller running alongside.
	var calls atomic.Int64
	stopCalls := make(chan struct{})
	callErr := make(chan error, 1)
	go func() {
		defer close(callErr)
		for {
			select {
			case <-stopCalls:
				return
			default:
			}
			if err := s.paidCall(ctx, j); err != nil {
				callErr <- err
				return
			}
			calls.Add(1)
		}
	}()
	steps = nil
	seen := calls.Load()
	third, err := j.Prune(ctx, now, engine.PruneOptions{Batch: pruneBatch, After: func(tot engine.PruneTotals) error {
		steps = append(steps, tot)
		if err := s.paidCall(ctx, j); err != nil {
			return fmt.Errorf("a paid call between batches: %w", err)
		}
		deadline := time.Now().Add(waitFor)
		for calls.Load() == seen {
			if time.Now().After(deadline) {
				return fmt.Errorf("no concurrent paid call completed within %v between batches", waitFor)
			}
			time.Sleep(time.Millisecond)
		}
		seen = calls.Load()
		return nil
	}})
	close(stopCalls)
	if err != nil {
		t.Fatalf("Prune with paid calls going on: %v", err)
	}
	if err := <-callErr; err != nil {
		t.Fatalf("a paid call alongside the prune: %v", err)
	}
	checkSteps(t, steps)
	done.Deleted, done.Forgotten = done.Deleted+third.Deleted, done.Forgotten+third.Forgotten
	if done.Deleted != want.Deleted || done.Forgotten != want.Forgotten || third.Batches < 2 {
		t.Fatalf("the three Prunes deleted %d and forgot %d (last in %d batches); want %d and %d, the last in several batches",
			done.Deleted, done.Forgotten, third.Batches, want.Deleted, want.Forgotten)
	}
	s.checkPruned(t, j, gone, forgotten, kept, done)
	if again, err := j.Prune(ctx, now, engine.PruneOptions{Batch: pruneBatch}); err != nil || again != (engine.PruneTotals{}) {
		t.Fatalf("Prune once all is pruned = %+v, %v; want nothing", again, err)
	}
}

// checkSteps checks the totals After saw: one more batch each time, each
// batch deleting or forgetting between 1 and pruneBatch rows.
func checkSteps(t *testing.T, steps []engine.PruneTotals) {
	t.Helper()
	var prev engine.PruneTotals
	for i, st := range steps {
		n := st.Deleted + st.Forgotten - prev.Deleted - prev.Forgotten
		if st.Batches != i+1 || n < 1 || n > pruneBatch || st.Deleted < prev.Deleted || st.Forgotten < prev.Forgotten {
			t.Fatalf("batch %d: totals %+v after %+v; want one more batch of 1 to %d rows", i+1, st, prev, pruneBatch)
		}
		prev = st
	}
}

// checkPruned checks the journal after prunes that, in all, deleted and
// forgot what tot says: that many rows of gone are absent and the others
// unchanged, that many answers of forgotten are gone and the rows
// otherwise unchanged, and kept is untouched.
func (s *suite) checkPruned(t *testing.T, j engine.Journal, gone, forgotten, kept []engine.Record, tot engine.PruneTotals) {
	t.Helper()
	ctx := context.Background()
	var absent, blank int64
	for _, rec := range gone {
		got, err := j.Get(ctx, rec.Key)
		switch {
		case errors.Is(err, engine.ErrNotFound):
			absent++
		case err != nil:
			t.Fatalf("Get %s: %v", rec.Key, err)
		default:
			checkRecord(t, "a row not pruned yet", got, rec, false)
		}
	}
	for _, rec := range forgotten {
		got := mustGet(t, j, rec.Key)
		if got.Answer == nil {
			blank++
			rec.Answer = nil
		}
		checkRecord(t, "a row whose answer is kept or forgotten", got, rec, false)
	}
	for _, rec := range kept {
		checkRecord(t, "a row Prune may not touch", mustGet(t, j, rec.Key), rec, false)
	}
	if absent != tot.Deleted || blank != tot.Forgotten {
		t.Fatalf("%d rows deleted and %d answers forgotten; Prune said %+v", absent, blank, tot)
	}
}

// paidCall runs the journal's writes of one paid call on a new key:
// Reserve, Settling, Settle; the row and its answer are kept for a year
// (no prune of the suite touches them).
func (s *suite) paidCall(ctx context.Context, j engine.Journal) error {
	rec := s.record("owner-b")
	rec.KeepUntil = base.AddDate(1, 0, 0)
	if _, err := j.Reserve(ctx, reservation(rec), 3); err != nil {
		return fmt.Errorf("reserve: %w", err)
	}
	st := settlingOf(rec)
	st.AnswerUntil = rec.KeepUntil
	if err := j.Settling(ctx, rec.Key, rec.Owner, st); err != nil {
		return fmt.Errorf("settling: %w", err)
	}
	if err := j.Settle(ctx, rec.Key, settleResponse(rec, 2), base); err != nil {
		return fmt.Errorf("settle: %w", err)
	}
	return nil
}

func (s *suite) concurrentReserve(t *testing.T) {
	ctx := context.Background()
	j := s.open(t)
	rec := s.record("")
	const n = 50
	var wins atomic.Int64
	winner := make([]bool, n)
	seen := make([]string, n)
	errs := Concurrently(n, waitFor, func(i int) error {
		r := rec
		r.Owner, r.RequestHash = fmt.Sprintf("instance-%d", i), fmt.Sprintf("sha256:race-%d", i)
		got, err := j.Reserve(ctx, reservation(r), 3)
		switch {
		case err == nil:
			wins.Add(1)
			winner[i] = true
			return nil
		case errors.Is(err, engine.ErrTaken):
			seen[i] = got.RequestHash
			return nil
		}
		return err
	})
	for _, err := range errs {
		t.Errorf("Reserve: %v", err)
	}
	if wins.Load() != 1 {
		t.Fatalf("%d winners, want exactly 1", wins.Load())
	}
	w := slices.Index(winner, true)
	for i, h := range seen {
		if i != w && h != fmt.Sprintf("sha256:race-%d", w) {
			t.Fatalf("loser %d saw request hash %q, want the winner's (%d)", i, h, w)
		}
	}
	if got := mustGet(t, j, rec.Key); got.Owner != fmt.Sprintf("instance-%d", w) || got.State != engine.StateReserved {
		t.Fatalf("the row = %+v, want held by the winner %d", got, w)
	}
}

func (s *suite) concurrentTransitions(t *testing.T) {
	ctx := context.Background()
	j := s.open(t)
	const n = 96
	recs := make([]engine.Record, n)
	for i := range recs {
		recs[i] = s.record(fmt.Sprintf("instance-%d", i%7))
	}
	outcome := func(i int) engine.State {
		return []engine.State{engine.StateSettled, engine.StateReleased, engine.StateFailed, engine.StateUnknown, engine.StateSettled, engine.StateSettling}[i%6]
	}
	errs := Concurrently(n, waitFor, func(i int) error {
		rec := recs[i]
		if _, err := j.Reserve(ctx, reservation(rec), 3); err != nil {
			return fmt.Errorf("reserve %d: %w", i, err)
		}
		if i%3 == 0 {
			if err := j.Heartbeat(ctx, rec.Owner, base.Add(time.Duration(i)*time.Millisecond)); err != nil {
				return fmt.Errorf("heartbeat %d: %w", i, err)
			}
		}
		if outcome(i) == engine.StateReleased {
			return j.Release(ctx, rec.Key, rec.Owner, "tool failed", true)
		}
		if err := j.Settling(ctx, rec.Key, rec.Owner, settlingOf(rec)); err != nil {
			return fmt.Errorf("settling %d: %w", i, err)
		}
		switch outcome(i) {
		case engine.StateSettled:
			return j.Settle(ctx, rec.Key, settleResponse(rec, i), base.Add(time.Second))
		case engine.StateFailed:
			return j.Fail(ctx, rec.Key, rec.Owner, "refused", refusal(rec))
		case engine.StateUnknown:
			return j.MarkUnknown(ctx, rec.Key, rec.Owner, "inconclusive")
		}
		return nil
	})
	for _, err := range errs {
		t.Fatalf("concurrent transitions: %v", err)
	}
	want := map[engine.State]int64{}
	lr, hasLedger := j.(LedgerReader)
	for i, rec := range recs {
		got := mustGet(t, j, rec.Key)
		want[outcome(i)]++
		if got.State != outcome(i) {
			t.Fatalf("row %d = %v, want %v", i, got.State, outcome(i))
		}
		if got.State == engine.StateSettled {
			sr := settleResponse(rec, i)
			if got.Settlement == nil || got.Settlement.Transaction != sr.Transaction || got.Answer == nil ||
				!bytes.Equal(got.Answer.Body, settlingOf(rec).Answer.Body) {
				t.Fatalf("settled row %d lost its settlement or answer: %+v", i, got)
			}
			if hasLedger {
				e, found, err := lr.LedgerEntry(ctx, rec.Network, rec.Asset, rec.Payer, rec.Nonce)
				if err != nil || !found || e.Transaction != sr.Transaction {
					t.Fatalf("ledger entry of settled row %d = %+v, %v, %v", i, e, found, err)
				}
			}
		}
	}
	counts, err := j.Counts(ctx)
	if err != nil {
		t.Fatalf("Counts: %v", err)
	}
	for _, st := range engine.States() {
		if counts[st] != want[st] {
			t.Fatalf("Counts = %v, want %v", counts, want)
		}
	}
}

// transitionTable walks engine's transition table: every transition of a
// Journal method, applied to a row in every state (and to an absent key)
// by the row's holder and by another instance, does what the table says
// and nothing else: it moves the row to the rule's To state, succeeds
// without a change in a Done state, or is refused (ErrState; ErrTaken for
// Reserve) with the row unchanged.
func (s *suite) transitionTable(t *testing.T) {
	ctx := context.Background()
	j := s.open(t)
	n := 0
	for _, tr := range engine.Transitions() {
		rule := tr.Rule()
		if rule.Owner == engine.HolderGone {
			continue // Recover's: transitionTableRecover
		}
		// A rule for any caller is applied by another instance; a rule
		// for the holder by both.
		callers := []string{"other"}
		if rule.Owner == engine.Holder {
			callers = append(callers, "holder")
		}
		for _, from := range engine.States() {
			for _, caller := range callers {
				n++
				name := fmt.Sprintf("%v from %v by %s", tr, from, caller)
				rec := s.record("holder")
				before := drive(t, j, rec, from)
				want, err := s.apply(ctx, j, tr, rec, caller, n)
				switch {
				case rule.Done.Has(from):
					if err != nil {
						t.Fatalf("%s err = %v, want nil (done already)", name, err)
					}
					wantUnchanged(t, j, before)
				case rule.Allows(from, caller == rec.Owner, false):
					if err != nil {
						t.Fatalf("%s err = %v, want the move to %v", name, err, rule.To)
					}
					got := mustGet(t, j, rec.Key)
					if got.State != rule.To || (tr == engine.TransitionReserve || tr == engine.TransitionReserveAgain) && got.Owner != caller {
						t.Fatalf("%s: the row is %v held by %q, want %v", name, got.State, got.Owner, rule.To)
					}
					if want.Key != "" {
						checkRecord(t, name, got, want, true)
					}
				default:
					refusal := engine.ErrState
					if tr == engine.TransitionReserve || tr == engine.TransitionReserveAgain {
						refusal = engine.ErrTaken
					}
					if !errors.Is(err, refusal) {
						t.Fatalf("%s err = %v, want %v", name, err, refusal)
					}
					wantUnchanged(t, j, before)
				}
			}
		}
		if tr == engine.TransitionReserveAgain {
			continue // the same method as TransitionReserve: an absent key is created
		}
		n++
		absent := s.record("holder")
		_, err := s.apply(ctx, j, tr, absent, "holder", n)
		switch got, gerr := j.Get(ctx, absent.Key); {
		case rule.Creates:
			if err != nil || gerr != nil || got.State != rule.To {
				t.Fatalf("%v of an absent key = %v, %v (row %v, %v); want it created %v", tr, err, gerr, got.State, gerr, rule.To)
			}
		case !errors.Is(err, engine.ErrState) || !errors.Is(err, engine.ErrNotFound):
			t.Fatalf("%v of an absent key err = %v, want ErrState and ErrNotFound", tr, err)
		case !errors.Is(gerr, engine.ErrNotFound):
			t.Fatalf("%v of an absent key created it: Get err = %v", tr, gerr)
		}
	}
}

// apply applies tr to the row of rec on behalf of caller (n numbers the
// call) and returns the record the row must then hold when the
// transition is allowed (want.Key empty when the walk checks the state
// and holder only).
func (s *suite) apply(ctx context.Context, j engine.Journal, tr engine.Transition, rec engine.Record, caller string, n int) (want engine.Record, err error) {
	switch tr {
	case engine.TransitionReserve:
		// Past the row's KeepUntil, with no attempt allowed: only a
		// replacement (or a creation) may succeed.
		fresh := rec
		fresh.Owner, fresh.RequestHash = caller, fmt.Sprintf("sha256:walk-%d", n)
		fresh.CreatedAt = rec.KeepUntil.Add(time.Millisecond)
		fresh.LeaseUntil, fresh.KeepUntil = fresh.CreatedAt.Add(time.Minute), fresh.CreatedAt.Add(time.Hour)
		fresh.State = engine.StateReserved
		_, err = j.Reserve(ctx, reservation(fresh), 0)
		return fresh, err
	case engine.TransitionReserveAgain:
		// Before the row's KeepUntil, with attempts left.
		again := rec
		again.Owner, again.RequestHash = caller, fmt.Sprintf("sha256:walk-%d", n)
		again.CreatedAt = base.Add(time.Minute)
		_, err = j.Reserve(ctx, reservation(again), 10)
		return engine.Record{}, err
	case engine.TransitionSettling:
		st := settlingOf(rec)
		st.RequestHash = rec.RequestHash
		return engine.Record{}, j.Settling(ctx, rec.Key, caller, st)
	case engine.TransitionSettle:
		return engine.Record{}, j.Settle(ctx, rec.Key, settleResponse(rec, 1000+n), base.Add(time.Second))
	case engine.TransitionRelease:
		return engine.Record{}, j.Release(ctx, rec.Key, caller, "walk", false)
	case engine.TransitionFail:
		return engine.Record{}, j.Fail(ctx, rec.Key, caller, "walk", refusal(rec))
	case engine.TransitionMarkUnknown:
		return engine.Record{}, j.MarkUnknown(ctx, rec.Key, caller, "walk")
	}
	return engine.Record{}, fmt.Errorf("no Journal method applies %v", tr)
}

// transitionTableRecover walks the transition table's recovery rules: of
// rows in every state, Recover releases or claims those whose holder is
// gone exactly as the rules say, and leaves the others, and every row of a
// live holder, unchanged.
func (s *suite) transitionTableRecover(t *testing.T) {
	ctx := context.Background()
	j := s.open(t)
	now := base.Add(30 * time.Second)
	if err := j.Heartbeat(ctx, "live", now); err != nil {
		t.Fatalf("Heartbeat: %v", err)
	}
	type row struct {
		from   engine.State
		gone   bool
		before engine.Record
	}
	var rows []row
	for _, from := range engine.States() {
		for _, holder := range []string{"live", "gone"} { // "gone" never sent a heartbeat
			rows = append(rows, row{from, holder == "gone", drive(t, j, s.record(holder), from)})
		}
	}
	newLease := now.Add(5 * time.Minute)
	claimed, released, err := j.Recover(ctx, "recoverer", now, now.Add(-time.Minute), newLease, 100)
	if err != nil {
		t.Fatalf("Recover: %v", err)
	}
	release, claim := engine.TransitionRecoverRelease.Rule(), engine.TransitionRecoverClaim.Rule()
	wantReleased, wantClaimed := 0, 0
	for _, r := range rows {
		name := fmt.Sprintf("a %v row of a %s holder", r.from, map[bool]string{true: "gone", false: "live"}[r.gone])
		got := mustGet(t, j, r.before.Key)
		want := r.before
		switch {
		case release.Allows(r.from, false, r.gone):
			wantReleased++
			want.State, want.Reason = release.To, "abandoned"
			checkRecord(t, name+" after Recover", got, want, true)
		case claim.Allows(r.from, false, r.gone):
			wantClaimed++
			want.State, want.Owner, want.LeaseUntil = claim.To, "recoverer", newLease
			checkRecord(t, name+" after Recover", got, want, true)
			if !slices.ContainsFunc(claimed, func(c engine.Record) bool { return c.Key == r.before.Key }) {
				t.Fatalf("%s: claimed but not returned by Recover", name)
			}
		default:
			checkRecord(t, name+" after Recover", got, want, false)
		}
	}
	if released != wantReleased || len(claimed) != wantClaimed {
		t.Fatalf("Recover = %d claimed, %d released; want %d, %d", len(claimed), released, wantClaimed, wantReleased)
	}
}

// mustReserve reserves rec, which must be new or reservable again.
func mustReserve(t *testing.T, j engine.Journal, rec engine.Record, maxAttempts int) engine.Record {
	t.Helper()
	got, err := j.Reserve(context.Background(), reservation(rec), maxAttempts)
	if err != nil {
		t.Fatalf("Reserve(%s): %v", rec.Key, err)
	}
	if got.Key != rec.Key || got.State != engine.StateReserved {
		t.Fatalf("Reserve(%s) returned %+v, want the reserved row", rec.Key, got)
	}
	return got
}

// mustGet returns the record of key.
func mustGet(t *testing.T, j engine.Journal, key string) engine.Record {
	t.Helper()
	got, err := j.Get(context.Background(), key)
	if err != nil {
		t.Fatalf("Get(%s): %v", key, err)
	}
	return got
}

// wantUnchanged checks that the row of before.Key is still exactly before.
func wantUnchanged(t *testing.T, j engine.Journal, before engine.Record) {
	t.Helper()
	checkRecord(t, "the row after a refused call", mustGet(t, j, before.Key), before, false)
}

// checkRecord compares every field of got with want; UpdatedAt only when
// !ignoreUpdated (journals stamp it from their own clock).
func checkRecord(t *testing.T, what string, got, want engine.Record, ignoreUpdated bool) {
	t.Helper()
	var diffs []string
	str := func(name, g, w string) {
		if g != w {
			diffs = append(diffs, fmt.Sprintf("%s = %q, want %q", name, g, w))
		}
	}
	num := func(name string, g, w int) {
		if g != w {
			diffs = append(diffs, fmt.Sprintf("%s = %d, want %d", name, g, w))
		}
	}
	inst := func(name string, g, w time.Time) {
		if !g.Equal(w) {
			diffs = append(diffs, fmt.Sprintf("%s = %v, want %v", name, g, w))
		}
	}
	str("Key", got.Key, want.Key)
	str("Network", got.Network, want.Network)
	str("Asset", got.Asset, want.Asset)
	str("Payer", got.Payer, want.Payer)
	str("Nonce", got.Nonce, want.Nonce)
	str("PayTo", got.PayTo, want.PayTo)
	str("Amount", got.Amount, want.Amount)
	str("RequestHash", got.RequestHash, want.RequestHash)
	str("Resource", got.Resource, want.Resource)
	str("Product", got.Product, want.Product)
	str("Transport", got.Transport, want.Transport)
	str("RefCode", got.RefCode, want.RefCode)
	str("RequestID", got.RequestID, want.RequestID)
	num("X402Version", got.X402Version, want.X402Version)
	str("State", got.State.String(), want.State.String())
	num("Attempts", got.Attempts, want.Attempts)
	str("Owner", got.Owner, want.Owner)
	inst("LeaseUntil", got.LeaseUntil, want.LeaseUntil)
	if !bytes.Equal(got.Payload, want.Payload) {
		diffs = append(diffs, fmt.Sprintf("Payload = %q, want %q", got.Payload, want.Payload))
	}
	if !bytes.Equal(got.Requirements, want.Requirements) {
		diffs = append(diffs, fmt.Sprintf("Requirements = %q, want %q", got.Requirements, want.Requirements))
	}
	if !sameAnswer(got.Answer, want.Answer) {
		diffs = append(diffs, fmt.Sprintf("Answer = %+v, want %+v", got.Answer, want.Answer))
	}
	inst("AnswerUntil", got.AnswerUntil, want.AnswerUntil)
	if !reflect.DeepEqual(got.Settlement, want.Settlement) {
		diffs = append(diffs, fmt.Sprintf("Settlement = %#v, want %#v", got.Settlement, want.Settlement))
	}
	str("Reason", got.Reason, want.Reason)
	inst("KeepUntil", got.KeepUntil, want.KeepUntil)
	inst("CreatedAt", got.CreatedAt, want.CreatedAt)
	if !ignoreUpdated {
		inst("UpdatedAt", got.UpdatedAt, want.UpdatedAt)
	}
	if len(diffs) > 0 {
		t.Fatalf("%s (%s):\n  %s", what, want.Key, strings.Join(diffs, "\n  "))
	}
}

// sameAnswer compares two answers, nil and empty bodies alike.
func sameAnswer(a, b *engine.Answer) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Status == b.Status && bytes.Equal(a.Body, b.Body) &&
		(len(a.Header) == 0 && len(b.Header) == 0 || reflect.DeepEqual(a.Header, b.Header))
}

package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/seed1284c1d2/svc/x402"
)

// LedgerEntry is the ledger row Settle writes with the settled state: one
// per authorization (Network, Asset, Payer, Nonce), the first one kept.
type LedgerEntry struct {
	Network     string
	Asset       string
	Payer       string
	Nonce       string
	Product     string
	Amount      string // atomic units, decimal
	Transaction string
	RefCode     string
	Resource    string
	Transport   string
	SettledAt   time.Time
}

// MemoryJournal is a Journal held in memory: safe for concurrent use by
// one process, nothing survives it. For tests and for embedding the engine
// where no store is configured. Its ledger is readable with LedgerEntry
// and Ledger. The zero value is not usable; call NewMemoryJournal.
type MemoryJournal struct {
	pruneMu sync.Mutex // one Prune at a time: it alone shortens order

	mu   sync.Mutex
	rows map[string]*Record
	// order lists every key of rows once, in creation order: Prune walks
	// it a batch at a time, releasing mu in between.
	order     []string
	instances map[string]time.Time
	ledger    map[string]int // ledger key → index in entries
	entries   []LedgerEntry
}

// NewMemoryJournal returns an empty MemoryJournal.
func NewMemoryJournal() *MemoryJournal {
	return &MemoryJournal{
		rows:      map[string]*Record{},
		instances: map[string]time.Time{},
		ledger:    map[string]int{},
	}
}

var _ Journal = (*MemoryJournal)(nil)

// Reserve implements Journal.
func (m *MemoryJournal) Reserve(ctx context.Context, r Reservation, maxAttempts int) (Record, error) {
	if err := ctx.Err(); err != nil {
		return Record{}, fmt.Errorf("engine: memory journal: reserve: %w", err)
	}
	if r.Key == "" {
		return Record{}, errors.New("engine: memory journal: reserve: the reservation has no key")
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	cur, ok := m.rows[r.Key]
	switch {
	case !ok || (TransitionReserve.Rule().Allows(cur.State, false, false) && cur.KeepUntil.Before(r.Now)):
		row := r.Record()
		m.rows[r.Key] = &row
		if !ok {
			m.order = append(m.order, r.Key)
		}
		return cloneRecord(row), nil
	case TransitionReserveAgain.Rule().Allows(cur.State, false, false) && cur.Attempts < maxAttempts:
		*cur = r.Again(*cur)
		return cloneRecord(*cur), nil
	}
	return cloneRecord(*cur), ErrTaken
}

// Settling implements Journal.
func (m *MemoryJournal) Settling(ctx context.Context, key, owner string, s Settling) error {
	return m.transition(ctx, TransitionSettling, key, owner, func(r *Record) error {
		if s.RequestHash != "" && s.RequestHash != r.RequestHash {
			return stateError(r)
		}
		ans := cloneAnswer(&s.Answer)
		r.Answer, r.AnswerUntil = ans, s.AnswerUntil
		r.Payload, r.Requirements = slices.Clone(s.Payload), slices.Clone(s.Requirements)
		r.Payer, r.Amount, r.LeaseUntil = s.Payer, s.Amount, s.LeaseUntil
		r.UpdatedAt = time.Now()
		return nil
	})
}

// Settle implements Journal.
func (m *MemoryJournal) Settle(ctx context.Context, key string, sr x402.SettleResponse, at time.Time) error {
	settlement, err := cloneSettlement(&sr)
	if err != nil {
		return fmt.Errorf("engine: memory journal: settle: %w", err)
	}
	return m.transition(ctx, TransitionSettle, key, "", func(r *Record) error {
		r.Settlement, r.UpdatedAt = settlement, at
		lk := ledgerKey(r.Network, r.Asset, r.Payer, r.Nonce)
		if _, dup := m.ledger[lk]; !dup {
			m.ledger[lk] = len(m.entries)
			m.entries = append(m.entries, LedgerEntry{
				Network: r.Network, Asset: r.Asset, Payer: r.Payer, Nonce: r.Nonce,
				Product: r.Product, Amount: r.Amount, Transaction: sr.Transaction, RefCode: r.RefCode,
				Resource: r.Resource, Transport: r.Transport, SettledAt: at,
			})
		}
		return nil
	})
}

// Release implements Journal.
func (m *MemoryJournal) Release(ctx context.Context, key, owner, reason string, counted bool) error {
	return m.transition(ctx, TransitionRelease, key, owner, func(r *Record) error {
		r.Reason, r.UpdatedAt = reason, time.Now()
		if counted {
			r.Attempts++
		}
		return nil
	})
}

// Fail implements Journal.
func (m *MemoryJournal) Fail(ctx context.Context, key, owner, reason string, sr x402.SettleResponse) error {
	settlement, err := cloneSettlement(&sr)
	if err != nil {
		return fmt.Errorf("engine: memory journal: fail: %w", err)
	}
	return m.transition(ctx, TransitionFail, key, owner, func(r *Record) error {
		r.Settlement, r.Reason, r.UpdatedAt = settlement, reason, time.Now()
		return nil
	})
}

// MarkUnknown implements Journal.
func (m *MemoryJournal) MarkUnknown(ctx context.Context, key, owner, reason string) error {
	return m.transition(ctx, TransitionMarkUnknown, key, owner, func(r *Record) error {
		r.Reason, r.UpdatedAt = reason, time.Now()
		return nil
	})
}

// transition moves the row of key by t on behalf of owner, under the
// lock, as t's rule allows: the row takes t's To state and f records the
// rest (f may still refuse). A row in one of the rule's Done states is
// left as is; an absent key is an error matching ErrState and
// ErrNotFound.
func (m *MemoryJournal) transition(ctx context.Context, t Transition, key, owner string, f func(r *Record) error) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("engine: memory journal: %s: %w", t, err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.rows[key]
	if !ok {
		return fmt.Errorf("engine: memory journal: %s: %w: %w", t, ErrState, ErrNotFound)
	}
	rule := t.Rule()
	switch {
	case rule.Done.Has(r.State):
		return nil
	case !rule.Allows(r.State, r.Owner == owner, false):
		return fmt.Errorf("engine: memory journal: %s: %w", t, stateError(r))
	}
	// f changes a copy: a refused transition leaves the row unchanged.
	next := *r
	next.State = rule.To
	if err := f(&next); err != nil {
		return fmt.Errorf("engine: memory journal: %s: %w", t, err)
	}
	*r = next
	return nil
}

// stateError is the ErrState of a transition refused for r.
func stateError(r *Record) error {
	return fmt.Errorf("%w: the row is %s, held by %q", ErrState, r.State, r.Owner)
}

// Get implements Journal.
func (m *MemoryJournal) Get(ctx context.Context, key string) (Record, error) {
	if err := ctx.Err(); err != nil {
		return Record{}, fmt.Errorf("engine: memory journal: get: %w", err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.rows[key]
	if !ok {
		return Record{}, fmt.Errorf("engine: memory journal: get: %w", ErrNotFound)
	}
	return cloneRecord(*r), nil
}

// Heartbeat implements Journal. A heartbeat never moves an instance's last
// sign of life backwards.
func (m *MemoryJournal) Heartbeat(ctx context.Context, owner string, now time.Time) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("engine: memory journal: heartbeat: %w", err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.beat(owner, now)
	return nil
}

// beat records owner alive at now; the caller holds m.mu.
func (m *MemoryJournal) beat(owner string, now time.Time) {
	if seen, ok := m.instances[owner]; !ok || now.After(seen) {
		m.instances[owner] = now
	}
}

// Leave implements Journal.
func (m *MemoryJournal) Leave(ctx context.Context, owner string) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("engine: memory journal: leave: %w", err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.instances, owner)
	return nil
}

// Recover implements Journal. Claimed rows come oldest first.
func (m *MemoryJournal) Recover(ctx context.Context, owner string, now, deadBefore, leaseUntil time.Time, limit int) ([]Record, int, error) {
	if err := ctx.Err(); err != nil {
		return nil, 0, fmt.Errorf("engine: memory journal: recover: %w", err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.beat(owner, now)
	abandoned := func(r *Record) bool {
		if r.LeaseUntil.Before(now) {
			return true
		}
		seen, ok := m.instances[r.Owner]
		return !ok || seen.Before(deadBefore)
	}
	release, claim := TransitionRecoverRelease.Rule(), TransitionRecoverClaim.Rule()
	released := 0
	var settling []*Record
	for _, r := range m.rows {
		switch {
		case release.Allows(r.State, false, abandoned(r)):
			r.State, r.Reason, r.UpdatedAt = release.To, "abandoned", now
			released++
		case claim.Allows(r.State, false, abandoned(r)):
			settling = append(settling, r)
		}
	}
	sortOldestFirst(settling)
	var claimed []Record
	for _, r := range settling {
		if len(claimed) >= limit {
			break
		}
		r.State, r.Owner, r.LeaseUntil, r.UpdatedAt = claim.To, owner, leaseUntil, now
		claimed = append(claimed, cloneRecord(*r))
	}
	return claimed, released, nil
}

// List implements Journal.
func (m *MemoryJournal) List(ctx context.Context, state State, limit int) ([]Record, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("engine: memory journal: list: %w", err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	var rows []*Record
	for _, r := range m.rows {
		if r.State == state {
			rows = append(rows, r)
		}
	}
	sortOldestFirst(rows)
	out := []Record{}
	for _, r := range rows {
		if len(out) >= limit {
			break
		}
		out = append(out, cloneRecord(*r))
	}
	return out, nil
}

// sortOldestFirst orders rows by CreatedAt, then Key.
func sortOldestFirst(rows []*Record) {
	slices.SortFunc(rows, func(a, b *Record) int {
		if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(a.Key, b.Key)
	})
}

// Counts implements Journal: every state is present, zero or not.
func (m *MemoryJournal) Counts(ctx context.Context) (map[State]int64, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("engine: memory journal: counts: %w", err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	out := map[State]int64{}
	for _, s := range States() {
		out[s] = 0
	}
	for _, r := range m.rows {
		out[r.State]++
	}
	return out, nil
}

// Prune implements Journal. The ledger is kept. A batch examines at most
// o.Batch rows under the journal's lock (so it changes at most as many);
// the lock is released between batches.
func (m *MemoryJournal) Prune(ctx context.Context, now time.Time, o PruneOptions) (PruneTotals, error) {
	m.pruneMu.Lock()
	defer m.pruneMu.Unlock()
	var t PruneTotals
	// read walks order up to end, its length when the walk starts (rows
	// created since are left to the next Prune); write is where the next
	// kept key goes: order is compacted in place (Reserve only appends
	// past end).
	read, write := 0, 0
	m.mu.Lock()
	end := len(m.order)
	m.mu.Unlock()
	for {
		if err := ctx.Err(); err != nil {
			m.mu.Lock()
			m.closeGap(read, write)
			m.mu.Unlock()
			return t, fmt.Errorf("engine: memory journal: prune: %w", err)
		}
		started := time.Now()
		deleted, forgotten, done := m.pruneBatch(now, &read, &write, end, o.BatchSize())
		took := time.Since(started)
		err := o.Step(&t, deleted, forgotten)
		if err == nil && !done {
			err = o.Pause(ctx, took)
		}
		if err != nil {
			m.mu.Lock()
			m.closeGap(read, write)
			m.mu.Unlock()
			return t, fmt.Errorf("engine: memory journal: prune: %w", err)
		}
		if done {
			return t, nil
		}
	}
}

// pruneBatch examines up to n keys of order from *read to end, keeping
// those not deleted at *write; done reports that the walk reached end
// (order is then compacted).
func (m *MemoryJournal) pruneBatch(now time.Time, read, write *int, end, n int) (deleted, forgotten int64, done bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for ; n > 0 && *read < end; n-- {
		k := m.order[*read]
		*read++
		r := m.rows[k]
		switch {
		case !Prunable.Has(r.State):
		case r.KeepUntil.Before(now):
			delete(m.rows, k)
			deleted++
			continue
		case r.Answer != nil && r.AnswerUntil.Before(now):
			r.Answer = nil
			forgotten++
		}
		m.order[*write] = k
		*write++
	}
	if *read < end {
		return deleted, forgotten, false
	}
	m.closeGap(*read, *write)
	return deleted, forgotten, true
}

// closeGap drops order[write:read], the slots of keys Prune deleted (m.mu
// held).
func (m *MemoryJournal) closeGap(read, write int) {
	n := copy(m.order[write:], m.order[read:])
	clear(m.order[write+n:])
	m.order = m.order[:write+n]
}

// LedgerEntry returns the ledger entry of an authorization; found is false
// when none was written. Asset, payer and nonce compare case-insensitively.
func (m *MemoryJournal) LedgerEntry(ctx context.Context, network, asset, payer, nonce string) (e LedgerEntry, found bool, err error) {
	if err := ctx.Err(); err != nil {
		return LedgerEntry{}, false, fmt.Errorf("engine: memory journal: ledger entry: %w", err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	i, ok := m.ledger[ledgerKey(network, asset, payer, nonce)]
	if !ok {
		return LedgerEntry{}, false, nil
	}
	return m.entries[i], true, nil
}

// Ledger returns every ledger entry, in the order they were written.
func (m *MemoryJournal) Ledger() []LedgerEntry {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.entries)
}

// ledgerKey identifies a ledger entry: the network as given, the rest in
// lower case (as the durable stores compare them).
func ledgerKey(network, asset, payer, nonce string) string {
	return strings.TrimSpace(network) + "/" + strings.ToLower(strings.TrimSpace(asset)) + "/" +
		strings.ToLower(strings.TrimSpace(payer)) + "/" + strings.ToLower(strings.TrimSpace(nonce))
}

// cloneRecord returns a deep copy of r: callers never share memory with
// the journal.
func cloneRecord(r Record) Record {
	r.Payload = slices.Clone(r.Payload)
	r.Requirements = slices.Clone(r.Requirements)
	r.Answer = cloneAnswer(r.Answer)
	if r.Settlement != nil {
		sr := *r.Settlement
		sr.Extensions = cloneJSONMap(sr.Extensions)
		sr.Extra = cloneJSONMap(sr.Extra)
		r.Settlement = &sr
	}
	return r
}

// cloneAnswer returns a deep copy of a (nil for nil).
func cloneAnswer(a *Answer) *Answer {
	if a == nil {
		return nil
	}
	c := Answer{Status: a.Status, Body: slices.Clone(a.Body)}
	if a.Header != nil {
		c.Header = make(map[string][]string, len(a.Header))
		for k, v := range a.Header {
			c.Header[k] = slices.Clone(v)
		}
	}
	return &c
}

// cloneSettlement stores sr as the durable journals do: through its JSON
// form, so that what comes back is the same whatever the journal (numbers
// in Extensions and Extra become float64).
func cloneSettlement(sr *x402.SettleResponse) (*x402.SettleResponse, error) {
	if sr == nil {
		return nil, nil
	}
	raw, err := json.Marshal(sr)
	if err != nil {
		return nil, fmt.Errorf("encode the settlement: %w", err)
	}
	var out x402.SettleResponse
	if err := json.Unmarshal(raw, &out); err != nil {
		return nil, fmt.Errorf("decode the settlement: %w", err)
	}
	return &out, nil
}

// cloneJSONMap deep-copies a decoded JSON object.
func cloneJSONMap(m map[string]any) map[string]any {
	if m == nil {
		return nil
	}
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = cloneJSON(v)
	}
	return out
}

// cloneJSON deep-copies a decoded JSON value.
func cloneJSON(v any) any {
	switch x := v.(type) {
	case map[string]any:
		return cloneJSONMap(x)
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = cloneJSON(e)
		}
		return out
	}
	return v
}

package claimer

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"sort"
	"sync"
	"time"

	"github.com/ethereum/go-ethereum/common"

	"github.com/seed1284c1d2/svc/x402/batch"
)

// State is a logged claim's state.
type State string

// States of a logged claim.
const (
	// Pending: signed and written, maybe sent, maybe mined; the next pass
	// resolves it from the chain.
	Pending State = "pending"
	// Done: the escrow covers every row (totalClaimed at least the row's).
	Done State = "done"
	// Failed: refused by the facilitator, or overtaken by the chain (a row
	// no longer claimable as signed); its channels are claimed again from
	// the channel store.
	Failed State = "failed"
)

// Row is one channel of a claim: the latest voucher and the cumulative
// total the claim sets.
type Row struct {
	// ChannelID is the channel's id under the escrow's domain.
	ChannelID common.Hash
	// Channel is the channel's configuration.
	Channel batch.Channel
	// MaxClaimable and Signature are the voucher's ceiling and the payer
	// authorizer's signature.
	MaxClaimable *big.Int
	Signature    []byte
	// TotalClaimed is the channel's claimed total after the claim (at most
	// MaxClaimable).
	TotalClaimed *big.Int
	// Previous is the channel's claimed total on chain when the claim was
	// built (nil: unknown); TotalClaimed - Previous is what it claims.
	Previous *big.Int
}

// Claim converts r to the row of a claimWithSignature.
func (r Row) Claim() batch.Claim {
	return batch.Claim{Channel: r.Channel, MaxClaimableAmount: r.MaxClaimable, Signature: r.Signature, TotalClaimed: r.TotalClaimed}
}

// Record is one logged claim.
type Record struct {
	// ID identifies the claim (32 hex digits, random).
	ID string
	// Network is the CAIP-2 id of the claim's chain.
	Network string
	// Rows are the claim's rows, in the order they were signed.
	Rows []Row
	// AuthorizerSignature is the receiver authorizer's ClaimBatch
	// signature of Rows.
	AuthorizerSignature []byte
	// State is the claim's state; Tx the transaction that claimed it (when
	// known); Reason why it failed, or how it was resolved.
	State  State
	Tx     string
	Reason string
	// Attempts counts the times the claim was sent to a facilitator.
	Attempts int
	// CreatedAt is when it was written, UpdatedAt its last transition.
	CreatedAt time.Time
	UpdatedAt time.Time
}

// Claimed is the latest voucher claimed from one channel (from a done
// claim): what the log knows of a channel after its charges were claimed.
type Claimed struct {
	Row
	// Network is the channel's network; ClaimID the claim that claimed it
	// last, at ClaimedAt.
	Network   string
	ClaimID   string
	ClaimedAt time.Time
}

// ErrNotPending is returned by Log.Finish for a claim that is not
// pending (or not known).
var ErrNotPending = errors.New("claimer: the claim is not pending")

// Log is the claimer's durable claim log. Every method returns once its
// change is committed.
type Log interface {
	// Begin writes rec (state Pending). An ID already logged is refused.
	Begin(ctx context.Context, rec Record) error
	// Attempt counts one more sending of the pending claim id.
	Attempt(ctx context.Context, id string, at time.Time) error
	// Finish moves the pending claim id to Done or Failed with its
	// transaction and reason; for Done it also records each row as its
	// channel's latest claimed voucher (unless a later claim already is),
	// in the same transaction. A claim that is not pending gives
	// ErrNotPending.
	Finish(ctx context.Context, id string, state State, tx, reason string, at time.Time) error
	// Pending lists the pending claims of network, oldest first.
	Pending(ctx context.Context, network string) ([]Record, error)
	// Claimed lists the latest claimed voucher of up to limit channels of
	// network, least recently claimed first.
	Claimed(ctx context.Context, network string, limit int) ([]Claimed, error)
	// Recent lists up to limit claims of network, newest first.
	Recent(ctx context.Context, network string, limit int) ([]Record, error)
	// Lease makes owner the one instance that runs network's claimer
	// passes until `until`, unless another owner holds a lease that has
	// not ended at now; it reports whether owner holds the lease.
	Lease(ctx context.Context, network, owner string, now, until time.Time) (bool, error)
}

// CheckRecord checks what Begin needs of rec: an id, a network, at least
// one row, each with a channel id, a voucher and totals (0 < total ≤
// ceiling), and a signature. Log implementations call it.
func CheckRecord(rec Record) error {
	switch {
	case rec.ID == "" || len(rec.ID) > 64:
		return errors.New("claimer: record: id must be 1 to 64 characters")
	case rec.Network == "":
		return errors.New("claimer: record: network is required")
	case len(rec.Rows) == 0:
		return errors.New("claimer: record: at least one row is required")
	case len(rec.AuthorizerSignature) != 65:
		return errors.New("claimer: record: the authorizer signature must be 65 bytes")
	case rec.CreatedAt.IsZero():
		return errors.New("claimer: record: createdAt is required")
	}
	for i, r := range rec.Rows {
		if r.ChannelID == (common.Hash{}) || r.MaxClaimable == nil || r.TotalClaimed == nil || len(r.Signature) == 0 {
			return fmt.Errorf("claimer: record: row %d: channel id, voucher ceiling, signature and total are required", i)
		}
		if r.TotalClaimed.Sign() <= 0 || r.TotalClaimed.Cmp(r.MaxClaimable) > 0 {
			return fmt.Errorf("claimer: record: row %d: totalClaimed must be positive and at most the voucher's ceiling", i)
		}
	}
	return nil
}

// MemoryLog is a Log in memory (tests, examples, a process that accepts
// losing its log: recovery then relies on the channel store and the
// chain alone). Safe for concurrent use.
type MemoryLog struct {
	mu      sync.Mutex
	claims  map[string]*Record
	order   []string
	claimed map[string]Claimed // network + channel id
	leases  map[string]lease   // by network
}

type lease struct {
	owner string
	until time.Time
}

// NewMemoryLog returns an empty MemoryLog.
func NewMemoryLog() *MemoryLog {
	return &MemoryLog{claims: map[string]*Record{}, claimed: map[string]Claimed{}, leases: map[string]lease{}}
}

var _ Log = (*MemoryLog)(nil)

// Begin implements Log.
func (m *MemoryLog) Begin(_ context.Context, rec Record) error {
	if err := CheckRecord(rec); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, dup := m.claims[rec.ID]; dup {
		return fmt.Errorf("claimer: claim %s already logged", rec.ID)
	}
	rec.State, rec.UpdatedAt = Pending, rec.CreatedAt
	rec.Rows = append([]Row(nil), rec.Rows...)
	m.claims[rec.ID] = &rec
	m.order = append(m.order, rec.ID)
	return nil
}

// Attempt implements Log.
func (m *MemoryLog) Attempt(_ context.Context, id string, at time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.claims[id]
	if !ok || r.State != Pending {
		return ErrNotPending
	}
	r.Attempts++
	r.UpdatedAt = at
	return nil
}

// Finish implements Log.
func (m *MemoryLog) Finish(_ context.Context, id string, state State, tx, reason string, at time.Time) error {
	if state != Done && state != Failed {
		return fmt.Errorf("claimer: finish: state %q is not done or failed", state)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.claims[id]
	if !ok || r.State != Pending {
		return ErrNotPending
	}
	r.State, r.Tx, r.Reason, r.UpdatedAt = state, tx, reason, at
	if state == Done {
		for _, row := range r.Rows {
			k := r.Network + "/" + row.ChannelID.Hex()
			if prev, ok := m.claimed[k]; ok && prev.TotalClaimed.Cmp(row.TotalClaimed) > 0 {
				continue
			}
			m.claimed[k] = Claimed{Row: row, Network: r.Network, ClaimID: id, ClaimedAt: at}
		}
	}
	return nil
}

// Pending implements Log.
func (m *MemoryLog) Pending(_ context.Context, network string) ([]Record, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []Record
	for _, id := range m.order {
		if r := m.claims[id]; r.Network == network && r.State == Pending {
			out = append(out, *r)
		}
	}
	return out, nil
}

// Claimed implements Log.
func (m *MemoryLog) Claimed(_ context.Context, network string, limit int) ([]Claimed, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []Claimed
	for _, c := range m.claimed {
		if c.Network == network {
			out = append(out, c)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].ClaimedAt.Equal(out[j].ClaimedAt) {
			return out[i].ClaimedAt.Before(out[j].ClaimedAt)
		}
		return out[i].ChannelID.Hex() < out[j].ChannelID.Hex()
	})
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

// Recent implements Log.
func (m *MemoryLog) Recent(_ context.Context, network string, limit int) ([]Record, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []Record
	for i := len(m.order) - 1; i >= 0 && (limit <= 0 || len(out) < limit); i-- {
		if r := m.claims[m.order[i]]; r.Network == network {
			out = append(out, *r)
		}
	}
	return out, nil
}

// Lease implements Log.
func (m *MemoryLog) Lease(_ context.Context, network, owner string, now, until time.Time) (bool, error) {
	if owner == "" {
		return false, errors.New("claimer: lease: owner is required")
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if l, ok := m.leases[network]; ok && l.owner != owner && l.until.After(now) {
		return false, nil
	}
	m.leases[network] = lease{owner: owner, until: until}
	return true, nil
}

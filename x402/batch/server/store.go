package server

import (
	"bytes"
	"context"
	"math/big"
	"sort"
	"sync"
	"time"

	"github.com/ethereum/go-ethereum/common"

	"github.com/seed1284c1d2/svc/x402/batch"
)

// Store keeps the receiver's channel records (batch.ChannelRecord), one
// per (network, channel id), and each channel's hold: the per-channel
// serialization of paid requests, durable and leased so that several
// servers sharing one database never run two requests of one channel at
// once, and a crashed holder's hold ends with its lease. Every write but
// a hold is durable when it returns. The store keeps, with each record, whether it
// has charges to claim (Charged above the mirrored OnChain.TotalClaimed),
// for Claimable.
type Store interface {
	// Channel returns the record of channel id on network and its hold;
	// found is false when there is none.
	Channel(ctx context.Context, network string, id common.Hash) (rec Held, found bool, err error)
	// Hold takes the hold of rec's channel for holder until until: taken
	// when the channel is not held, its hold ended by now, or holder holds
	// it already. A channel without a record gets rec as its record (a
	// new channel: nothing charged, no voucher). It returns the stored
	// record and its hold after the attempt. A hold need not be durable
	// when Hold returns (a hold lost in a crash is one whose lease ended),
	// but every later write of the store must see it.
	Hold(ctx context.Context, rec batch.ChannelRecord, holder string, now, until time.Time) (held Held, taken bool, err error)
	// Unhold frees the hold of the channel when holder holds it.
	Unhold(ctx context.Context, network string, id common.Hash, holder string) error
	// Commit writes a charge: when the stored Charged is expect (a channel
	// without a record counts as zero and gets one), it sets Charged,
	// SignedMax, Signature and LastRequestAt from rec, mirrors rec.OnChain
	// when rec.SyncedAt is later than the stored mirror, and frees the
	// hold of holder; done is false, and nothing is written, otherwise.
	Commit(ctx context.Context, rec batch.ChannelRecord, expect *big.Int, holder string) (done bool, err error)
	// Mirror records the escrow's view of a channel read at at (ignored
	// when the record was synced later than at, or there is no record).
	Mirror(ctx context.Context, network string, id common.Hash, oc batch.OnChain, at time.Time) error
	// Delete removes the record of a channel when its stored Charged is
	// expect (a full refund closes it); done is false otherwise.
	Delete(ctx context.Context, network string, id common.Hash, expect *big.Int) (done bool, err error)
	// Claimable lists up to limit channel records of network whose
	// Charged exceeds their mirrored OnChain.TotalClaimed, least recently
	// charged first.
	Claimable(ctx context.Context, network string, limit int) ([]batch.ChannelRecord, error)
}

// Held is a channel record with its hold: Holder holds the channel until
// HeldUntil (no holder: not held).
type Held struct {
	batch.ChannelRecord
	Holder    string
	HeldUntil time.Time
}

// HeldBy reports whether someone other than holder holds the channel at
// now.
func (h Held) HeldBy(holder string, now time.Time) bool {
	return h.Holder != "" && h.Holder != holder && h.HeldUntil.After(now)
}

// ClaimPending reports whether rec has charges to claim: Charged above
// the mirrored OnChain.TotalClaimed. Every Store keeps it with the record.
func ClaimPending(rec batch.ChannelRecord) bool { return rec.Unclaimed().Sign() > 0 }

// MemoryStore is a Store in memory, for tests and for embedders that
// keep a single process (nothing survives it). Safe for concurrent use.
type MemoryStore struct {
	mu   sync.Mutex
	rows map[memKey]Held
}

type memKey struct {
	network string
	id      common.Hash
}

var _ Store = (*MemoryStore)(nil)

// NewMemoryStore returns an empty MemoryStore.
func NewMemoryStore() *MemoryStore { return &MemoryStore{rows: map[memKey]Held{}} }

// Channel implements Store.
func (m *MemoryStore) Channel(_ context.Context, network string, id common.Hash) (Held, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	h, ok := m.rows[memKey{network, id}]
	return CopyHeld(h), ok, nil
}

// Hold implements Store.
func (m *MemoryStore) Hold(_ context.Context, rec batch.ChannelRecord, holder string, now, until time.Time) (Held, bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	k := memKey{rec.Network, rec.ID}
	h, ok := m.rows[k]
	if !ok {
		h = Held{ChannelRecord: NewRecord(rec)}
	}
	if h.HeldBy(holder, now) {
		return CopyHeld(h), false, nil
	}
	h.Holder, h.HeldUntil = holder, until
	m.rows[k] = h
	return CopyHeld(h), true, nil
}

// Unhold implements Store.
func (m *MemoryStore) Unhold(_ context.Context, network string, id common.Hash, holder string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	k := memKey{network, id}
	if h, ok := m.rows[k]; ok && h.Holder == holder {
		h.Holder, h.HeldUntil = "", time.Time{}
		m.rows[k] = h
	}
	return nil
}

// Commit implements Store.
func (m *MemoryStore) Commit(_ context.Context, rec batch.ChannelRecord, expect *big.Int, holder string) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	k := memKey{rec.Network, rec.ID}
	h, ok := m.rows[k]
	if !ok {
		h = Held{ChannelRecord: NewRecord(rec)}
	}
	if h.Charged.Cmp(expect) != 0 {
		return false, nil
	}
	h.ChannelRecord = ApplyCommit(h.ChannelRecord, rec)
	if holder != "" && h.Holder == holder {
		h.Holder, h.HeldUntil = "", time.Time{}
	}
	m.rows[k] = h
	return true, nil
}

// Mirror implements Store.
func (m *MemoryStore) Mirror(_ context.Context, network string, id common.Hash, oc batch.OnChain, at time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	k := memKey{network, id}
	h, ok := m.rows[k]
	if !ok || !at.After(h.SyncedAt) {
		return nil
	}
	h.OnChain, h.SyncedAt = CopyOnChain(oc), at
	m.rows[k] = h
	return nil
}

// Delete implements Store.
func (m *MemoryStore) Delete(_ context.Context, network string, id common.Hash, expect *big.Int) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	k := memKey{network, id}
	h, ok := m.rows[k]
	if !ok || h.Charged.Cmp(expect) != 0 {
		return false, nil
	}
	delete(m.rows, k)
	return true, nil
}

// Claimable implements Store.
func (m *MemoryStore) Claimable(_ context.Context, network string, limit int) ([]batch.ChannelRecord, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []batch.ChannelRecord
	for k, h := range m.rows {
		if k.network == network && ClaimPending(h.ChannelRecord) {
			out = append(out, CopyHeld(h).ChannelRecord)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].LastRequestAt.Equal(out[j].LastRequestAt) {
			return out[i].LastRequestAt.Before(out[j].LastRequestAt)
		}
		return bytes.Compare(out[i].ID[:], out[j].ID[:]) < 0
	})
	if limit >= 0 && len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

// NewRecord returns the record a new channel starts with: rec's network,
// id and channel, nothing charged, no voucher, no mirror.
func NewRecord(rec batch.ChannelRecord) batch.ChannelRecord {
	return batch.ChannelRecord{Network: rec.Network, ID: rec.ID, Channel: rec.Channel, Charged: new(big.Int), SignedMax: new(big.Int),
		OnChain: CopyOnChain(batch.OnChain{})}
}

// ApplyCommit returns stored with the charge of rec applied as
// Store.Commit writes it: Charged, SignedMax, Signature and LastRequestAt
// from rec, and rec's mirror when it is later than stored's.
func ApplyCommit(stored, rec batch.ChannelRecord) batch.ChannelRecord {
	out := CopyRecord(stored)
	out.Charged = new(big.Int).Set(rec.Charged)
	out.SignedMax = new(big.Int).Set(rec.SignedMax)
	out.Signature = bytes.Clone(rec.Signature)
	out.LastRequestAt = rec.LastRequestAt
	if rec.SyncedAt.After(stored.SyncedAt) {
		out.OnChain, out.SyncedAt = CopyOnChain(rec.OnChain), rec.SyncedAt
	}
	return out
}

// CopyHeld returns a deep copy of h.
func CopyHeld(h Held) Held {
	h.ChannelRecord = CopyRecord(h.ChannelRecord)
	return h
}

// CopyRecord returns a deep copy of r, with every amount non-nil.
func CopyRecord(r batch.ChannelRecord) batch.ChannelRecord {
	r.Charged = copyInt(r.Charged)
	r.SignedMax = copyInt(r.SignedMax)
	r.Signature = bytes.Clone(r.Signature)
	r.OnChain = CopyOnChain(r.OnChain)
	return r
}

// CopyOnChain returns a deep copy of oc, with every amount non-nil.
func CopyOnChain(oc batch.OnChain) batch.OnChain {
	oc.Balance = copyInt(oc.Balance)
	oc.TotalClaimed = copyInt(oc.TotalClaimed)
	oc.WithdrawAmount = copyInt(oc.WithdrawAmount)
	oc.RefundNonce = copyInt(oc.RefundNonce)
	return oc
}

func copyInt(v *big.Int) *big.Int {
	if v == nil {
		return new(big.Int)
	}
	return new(big.Int).Set(v)
}

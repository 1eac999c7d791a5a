package claimer

import (
	"context"
	"math/big"
	"sort"
	"sync"
	"time"

	"github.com/ethereum/go-ethereum/common"

	"github.com/seed1284c1d2/svc/x402/batch"
)

// Channels is what the claimer needs of the server's channel store.
type Channels interface {
	// Claimable lists up to limit channel records of network whose
	// Charged exceeds their mirrored OnChain.TotalClaimed, least recently
	// charged first.
	Claimable(ctx context.Context, network string, limit int) ([]batch.ChannelRecord, error)
	// Mirror records the escrow's view of a channel read at `at` (ignored
	// when the record was synced later than at).
	Mirror(ctx context.Context, network string, id common.Hash, oc batch.OnChain, at time.Time) error
}

// MemoryChannels is a channel store in memory with the two methods the
// claimer uses, and Put to add or replace a record. Safe for concurrent
// use.
type MemoryChannels struct {
	mu   sync.Mutex
	recs map[string]batch.ChannelRecord
}

// NewMemoryChannels returns an empty store.
func NewMemoryChannels() *MemoryChannels {
	return &MemoryChannels{recs: map[string]batch.ChannelRecord{}}
}

var _ Channels = (*MemoryChannels)(nil)

func memKey(network string, id common.Hash) string { return network + "/" + id.Hex() }

// Put adds or replaces r.
func (m *MemoryChannels) Put(r batch.ChannelRecord) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.recs[memKey(r.Network, r.ID)] = cloneRecord(r)
}

// Get returns the record of id on network.
func (m *MemoryChannels) Get(network string, id common.Hash) (batch.ChannelRecord, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r, ok := m.recs[memKey(network, id)]
	return cloneRecord(r), ok
}

// Claimable implements Channels.
func (m *MemoryChannels) Claimable(_ context.Context, network string, limit int) ([]batch.ChannelRecord, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []batch.ChannelRecord
	for _, r := range m.recs {
		if r.Network == network && r.Unclaimed().Sign() > 0 {
			out = append(out, cloneRecord(r))
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].LastRequestAt.Equal(out[j].LastRequestAt) {
			return out[i].LastRequestAt.Before(out[j].LastRequestAt)
		}
		return out[i].ID.Hex() < out[j].ID.Hex()
	})
	if limit > 0 && len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

// Mirror implements Channels.
func (m *MemoryChannels) Mirror(_ context.Context, network string, id common.Hash, oc batch.OnChain, at time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	k := memKey(network, id)
	r, ok := m.recs[k]
	if !ok || r.SyncedAt.After(at) {
		return nil
	}
	r.OnChain, r.SyncedAt = cloneOnChain(oc), at
	m.recs[k] = r
	return nil
}

func cloneInt(v *big.Int) *big.Int {
	if v == nil {
		return nil
	}
	return new(big.Int).Set(v)
}

func cloneOnChain(o batch.OnChain) batch.OnChain {
	return batch.OnChain{Balance: cloneInt(o.Balance), TotalClaimed: cloneInt(o.TotalClaimed), WithdrawAmount: cloneInt(o.WithdrawAmount),
		WithdrawRequestedAt: o.WithdrawRequestedAt, RefundNonce: cloneInt(o.RefundNonce)}
}

func cloneRecord(r batch.ChannelRecord) batch.ChannelRecord {
	r.Charged, r.SignedMax = cloneInt(r.Charged), cloneInt(r.SignedMax)
	r.Signature = append([]byte(nil), r.Signature...)
	r.OnChain = cloneOnChain(r.OnChain)
	return r
}

package x402

import (
	"container/heap"
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"
)

// Errors of NonceStore implementations besides ErrNonceTaken.
var (
	// ErrNonceNotReserved: Complete of a key that is not reserved (never
	// reserved, released, or expired and forgotten).
	ErrNonceNotReserved = errors.New("x402: payment nonce is not reserved")
	// ErrNonceSettled: Release or Complete of a key already settled.
	ErrNonceSettled = errors.New("x402: payment nonce is already settled")
	// ErrNonceRecord: Reserve of a malformed record (empty key, zero
	// ExpiresAt, or a state other than reserved).
	ErrNonceRecord = errors.New("x402: invalid nonce record")
)

// ValidateNonceRecord checks a record given to NonceStore.Reserve: non-empty
// Key, non-zero ExpiresAt, State NonceReserved (or zero, taken as
// NonceReserved) and no Response. Store implementations call it first.
func ValidateNonceRecord(rec NonceRecord) (NonceRecord, error) {
	switch {
	case rec.Key == "":
		return rec, fmt.Errorf("%w: empty key", ErrNonceRecord)
	case rec.ExpiresAt.IsZero():
		return rec, fmt.Errorf("%w: zero ExpiresAt", ErrNonceRecord)
	case rec.State != 0 && rec.State != NonceReserved:
		return rec, fmt.Errorf("%w: state %d, want NonceReserved", ErrNonceRecord, rec.State)
	case rec.Response != nil:
		return rec, fmt.Errorf("%w: a reservation carries no response", ErrNonceRecord)
	}
	rec.State = NonceReserved
	return rec, nil
}

// pruneBatch bounds the expired records dropped by one MemoryNonceStore call.
const pruneBatch = 32

// MemoryNonceStore is a NonceStore for one process. Records are forgotten
// once past ExpiresAt (the chain refuses the authorization by then):
// pruning is lazy, done a bounded batch at a time by Reserve, so no call
// does more than O(pruneBatch · log n) extra work. A record past ExpiresAt
// is treated as absent even before it is pruned. Safe for concurrent use.
type MemoryNonceStore struct {
	now func() time.Time

	mu      sync.Mutex
	records map[string]*memNonce
	expiry  expiryHeap
	seq     uint64
}

type memNonce struct {
	rec NonceRecord
	seq uint64 // identifies this reservation in the expiry heap
}

// NewMemoryNonceStore returns an empty store; now is the clock used for
// expiry (nil means time.Now).
func NewMemoryNonceStore(now func() time.Time) *MemoryNonceStore {
	if now == nil {
		now = time.Now
	}
	return &MemoryNonceStore{now: now, records: make(map[string]*memNonce)}
}

var _ NonceStore = (*MemoryNonceStore)(nil)

// Reserve implements NonceStore.
func (s *MemoryNonceStore) Reserve(ctx context.Context, rec NonceRecord) (NonceRecord, error) {
	if err := ctx.Err(); err != nil {
		return NonceRecord{}, err
	}
	rec, err := ValidateNonceRecord(rec)
	if err != nil {
		return NonceRecord{}, err
	}
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pruneLocked(now)
	if cur, ok := s.records[rec.Key]; ok && !now.After(cur.rec.ExpiresAt) {
		return copyNonceRecord(cur.rec), ErrNonceTaken
	}
	s.seq++
	s.records[rec.Key] = &memNonce{rec: rec, seq: s.seq}
	heap.Push(&s.expiry, expiryItem{at: rec.ExpiresAt, key: rec.Key, seq: s.seq})
	return NonceRecord{}, nil
}

// Complete implements NonceStore. The response is copied.
func (s *MemoryNonceStore) Complete(ctx context.Context, key string, resp RecordedResponse) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	now := s.now()
	s.mu.Lock()
	defer s.mu.Unlock()
	cur, ok := s.records[key]
	if !ok || now.After(cur.rec.ExpiresAt) {
		return fmt.Errorf("%w (complete)", ErrNonceNotReserved)
	}
	if cur.rec.State == NonceSettled {
		return fmt.Errorf("%w (complete)", ErrNonceSettled)
	}
	r := copyRecordedResponse(resp)
	cur.rec.State = NonceSettled
	cur.rec.Response = &r
	return nil
}

// Release implements NonceStore. Releasing an absent key is a no-op;
// releasing a settled key fails with ErrNonceSettled.
func (s *MemoryNonceStore) Release(ctx context.Context, key string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	cur, ok := s.records[key]
	if !ok {
		return nil
	}
	if cur.rec.State == NonceSettled {
		return fmt.Errorf("%w (release)", ErrNonceSettled)
	}
	delete(s.records, key)
	return nil
}

// Len returns the number of records held, expired ones not yet pruned
// included.
func (s *MemoryNonceStore) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.records)
}

// pruneLocked drops at most pruneBatch records past their expiry.
func (s *MemoryNonceStore) pruneLocked(now time.Time) {
	for i := 0; i < pruneBatch && s.expiry.Len() > 0; i++ {
		top := s.expiry[0]
		if !now.After(top.at) {
			return
		}
		heap.Pop(&s.expiry)
		if cur, ok := s.records[top.key]; ok && cur.seq == top.seq {
			delete(s.records, top.key)
		}
	}
}

// copyNonceRecord returns rec with its response deep-copied.
func copyNonceRecord(rec NonceRecord) NonceRecord {
	if rec.Response != nil {
		r := copyRecordedResponse(*rec.Response)
		rec.Response = &r
	}
	return rec
}

func copyRecordedResponse(r RecordedResponse) RecordedResponse {
	out := r
	if r.Header != nil {
		out.Header = r.Header.Clone()
	} else {
		out.Header = http.Header{}
	}
	if r.Body != nil {
		out.Body = append([]byte(nil), r.Body...)
	}
	out.Settlement.Extensions = copyJSONMap(r.Settlement.Extensions)
	out.Settlement.Extra = copyJSONMap(r.Settlement.Extra)
	return out
}

// copyJSONMap copies the top level of a JSON object map.
func copyJSONMap(m map[string]any) map[string]any {
	if m == nil {
		return nil
	}
	out := make(map[string]any, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

type expiryItem struct {
	at  time.Time
	key string
	seq uint64
}

// expiryHeap is a min-heap of reservations by expiry time.
type expiryHeap []expiryItem

func (h expiryHeap) Len() int           { return len(h) }
func (h expiryHeap) Less(i, j int) bool { return h[i].at.Before(h[j].at) }
func (h expiryHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *expiryHeap) Push(x any)        { *h = append(*h, x.(expiryItem)) }
func (h *expiryHeap) Pop() any {
	old := *h
	it := old[len(old)-1]
	*h = old[:len(old)-1]
	return it
}

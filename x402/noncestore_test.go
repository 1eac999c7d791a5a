package x402

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"
)

// fakeClock is a settable clock safe for concurrent use.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func TestMemoryNonceStoreExpiry(t *testing.T) {
	ctx := context.Background()
	clock := &fakeClock{t: testNow}
	s := NewMemoryNonceStore(clock.Now)
	rec := NonceRecord{Key: "k", RequestHash: "h1", ExpiresAt: testNow.Add(time.Minute)}
	if _, err := s.Reserve(ctx, rec); err != nil {
		t.Fatal(err)
	}
	if err := s.Complete(ctx, "k", RecordedResponse{Status: 200}); err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Minute) // ExpiresAt itself still counts as alive
	if _, err := s.Reserve(ctx, rec); !errors.Is(err, ErrNonceTaken) {
		t.Fatalf("at expiry: %v", err)
	}
	clock.Advance(time.Second)
	// Past expiry the record is absent: a new reservation takes the key.
	rec2 := rec
	rec2.RequestHash = "h2"
	rec2.ExpiresAt = clock.Now().Add(time.Minute)
	if _, err := s.Reserve(ctx, rec2); err != nil {
		t.Fatalf("after expiry: %v", err)
	}
	got, err := s.Reserve(ctx, rec2)
	if !errors.Is(err, ErrNonceTaken) || got.RequestHash != "h2" || got.State != NonceReserved {
		t.Fatalf("re-reserved record: %+v, %v", got, err)
	}
	// Complete of an expired reservation fails.
	clock.Advance(2 * time.Minute)
	if err := s.Complete(ctx, "k", RecordedResponse{}); !errors.Is(err, ErrNonceNotReserved) {
		t.Fatalf("Complete after expiry: %v", err)
	}
}

func TestMemoryNonceStorePruningIsBoundedAndComplete(t *testing.T) {
	ctx := context.Background()
	clock := &fakeClock{t: testNow}
	s := NewMemoryNonceStore(clock.Now)
	const n = 1000
	for i := 0; i < n; i++ {
		if _, err := s.Reserve(ctx, NonceRecord{Key: fmt.Sprint("old", i), ExpiresAt: testNow.Add(time.Second)}); err != nil {
			t.Fatal(err)
		}
	}
	if s.Len() != n {
		t.Fatalf("Len = %d", s.Len())
	}
	clock.Advance(time.Hour)
	// One call prunes at most pruneBatch records.
	if _, err := s.Reserve(ctx, NonceRecord{Key: "new0", ExpiresAt: clock.Now().Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	if got := s.Len(); got != n-pruneBatch+1 {
		t.Fatalf("after one call Len = %d, want %d", got, n-pruneBatch+1)
	}
	// Enough calls prune everything expired, and nothing alive.
	for i := 1; i <= n/pruneBatch+1; i++ {
		if _, err := s.Reserve(ctx, NonceRecord{Key: fmt.Sprint("new", i), ExpiresAt: clock.Now().Add(time.Hour)}); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := s.Len(), n/pruneBatch+2; got != want {
		t.Fatalf("Len = %d, want %d (only the live records)", got, want)
	}
}

func TestMemoryNonceStoreStaleHeapEntry(t *testing.T) {
	// A key released and re-reserved with a later expiry must not be pruned
	// at the first reservation's expiry.
	ctx := context.Background()
	clock := &fakeClock{t: testNow}
	s := NewMemoryNonceStore(clock.Now)
	if _, err := s.Reserve(ctx, NonceRecord{Key: "k", ExpiresAt: testNow.Add(time.Second)}); err != nil {
		t.Fatal(err)
	}
	if err := s.Release(ctx, "k"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Reserve(ctx, NonceRecord{Key: "k", ExpiresAt: testNow.Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Minute)
	if _, err := s.Reserve(ctx, NonceRecord{Key: "other", ExpiresAt: testNow.Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Reserve(ctx, NonceRecord{Key: "k", ExpiresAt: testNow.Add(time.Hour)}); !errors.Is(err, ErrNonceTaken) {
		t.Fatalf("live reservation lost: %v", err)
	}
}

func TestMemoryNonceStoreCopies(t *testing.T) {
	ctx := context.Background()
	s := NewMemoryNonceStore(nil)
	rec := NonceRecord{Key: "k", ExpiresAt: time.Now().Add(time.Hour)}
	if _, err := s.Reserve(ctx, rec); err != nil {
		t.Fatal(err)
	}
	resp := RecordedResponse{Status: 200, Header: http.Header{"X": {"1"}}, Body: []byte("body")}
	if err := s.Complete(ctx, "k", resp); err != nil {
		t.Fatal(err)
	}
	resp.Body[0] = 'X'
	resp.Header.Set("X", "2")
	got, _ := s.Reserve(ctx, rec)
	if string(got.Response.Body) != "body" || got.Response.Header.Get("X") != "1" {
		t.Fatalf("store shares the caller's response: %+v", got.Response)
	}
	got.Response.Body[0] = 'Y'
	again, _ := s.Reserve(ctx, rec)
	if string(again.Response.Body) != "body" {
		t.Fatal("store shares its response with callers")
	}
}

func TestMemoryNonceStoreContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	s := NewMemoryNonceStore(nil)
	if _, err := s.Reserve(ctx, NonceRecord{Key: "k", ExpiresAt: time.Now().Add(time.Hour)}); !errors.Is(err, context.Canceled) {
		t.Fatalf("Reserve with a cancelled context: %v", err)
	}
}

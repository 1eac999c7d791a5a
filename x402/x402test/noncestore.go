// Package x402test holds test helpers for code built on package x402: a
// conformance suite that every x402.NonceStore implementation can run.
package x402test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/seed1284c1d2/svc/x402"
)

// TestNonceStore runs the NonceStore conformance suite against stores made
// by newStore (one fresh store per subtest; it may register cleanups with
// t). It checks: a first Reserve wins and returns no error; a second Reserve
// of the same key fails with x402.ErrNonceTaken and returns the existing
// record; Complete records the response, after which Reserve returns the
// settled record with it (the idempotent replay); Release frees a reserved
// key so it can be reserved again; Release of a settled key fails;
// Complete of an unknown or already settled key fails; malformed records
// are refused; and 50 concurrent Reserves of one key have exactly one
// winner. Records expire an hour after the test starts, so a store's clock
// must be close to the real time.
func TestNonceStore(t *testing.T, newStore func(t *testing.T) x402.NonceStore) {
	t.Helper()
	ctx := context.Background()
	expires := time.Now().Add(time.Hour).Truncate(time.Second)
	var seq atomic.Int64
	newRecord := func(hash string) x402.NonceRecord {
		n := seq.Add(1)
		return x402.NonceRecord{
			Key:         x402.NonceKey(x402.NetworkBase, "0x833589fcd6edb6e08f4c7c32d4f71b54bda02913", "0x857b06519e91e3a54538791bdbb0e22373e36b66", fmt.Sprintf("0x%064x", n)),
			RequestHash: hash,
			State:       x402.NonceReserved,
			ExpiresAt:   expires,
		}
	}
	response := func() x402.RecordedResponse {
		return x402.RecordedResponse{
			Status: http.StatusOK,
			Header: http.Header{"Content-Type": {"application/json"}},
			Body:   []byte(`{"ok":true}`),
			Settlement: x402.SettleResponse{
				Success: true, Transaction: "0x" + fmt.Sprintf("%064x", 7), Network: x402.NetworkBase,
				Payer: "0x857b06519e91e3a54538791bdbb0e22373e36b66", Amount: "3400",
			},
		}
	}

	t.Run("ReserveThenConflict", func(t *testing.T) {
		s := newStore(t)
		rec := newRecord("GET /a")
		if _, err := s.Reserve(ctx, rec); err != nil {
			t.Fatalf("first Reserve: %v", err)
		}
		other := rec
		other.RequestHash = "GET /b"
		got, err := s.Reserve(ctx, other)
		if !errors.Is(err, x402.ErrNonceTaken) {
			t.Fatalf("second Reserve: err = %v, want ErrNonceTaken", err)
		}
		if got.Key != rec.Key || got.RequestHash != "GET /a" || got.State != x402.NonceReserved || got.Response != nil {
			t.Fatalf("second Reserve returned %+v, want the first reservation", got)
		}
		if !got.ExpiresAt.Equal(rec.ExpiresAt) {
			t.Fatalf("ExpiresAt = %v, want %v", got.ExpiresAt, rec.ExpiresAt)
		}
	})

	t.Run("CompleteThenReplay", func(t *testing.T) {
		s := newStore(t)
		rec := newRecord("POST /tool")
		if _, err := s.Reserve(ctx, rec); err != nil {
			t.Fatalf("Reserve: %v", err)
		}
		want := response()
		if err := s.Complete(ctx, rec.Key, want); err != nil {
			t.Fatalf("Complete: %v", err)
		}
		got, err := s.Reserve(ctx, rec)
		if !errors.Is(err, x402.ErrNonceTaken) {
			t.Fatalf("Reserve after Complete: err = %v, want ErrNonceTaken", err)
		}
		if got.State != x402.NonceSettled || got.RequestHash != rec.RequestHash || got.Response == nil {
			t.Fatalf("Reserve after Complete returned %+v, want the settled record", got)
		}
		r := got.Response
		if r.Status != want.Status || string(r.Body) != string(want.Body) || r.Header.Get("Content-Type") != "application/json" {
			t.Fatalf("recorded response = %+v, want %+v", *r, want)
		}
		if r.Settlement.Transaction != want.Settlement.Transaction || !r.Settlement.Success || r.Settlement.Amount != "3400" || r.Settlement.Network != want.Settlement.Network {
			t.Fatalf("recorded settlement = %+v, want %+v", r.Settlement, want.Settlement)
		}
		if err := s.Complete(ctx, rec.Key, want); err == nil {
			t.Fatal("second Complete of a settled key succeeded")
		}
	})

	t.Run("ReleaseThenReserveAgain", func(t *testing.T) {
		s := newStore(t)
		rec := newRecord("GET /a")
		if _, err := s.Reserve(ctx, rec); err != nil {
			t.Fatalf("Reserve: %v", err)
		}
		if err := s.Release(ctx, rec.Key); err != nil {
			t.Fatalf("Release: %v", err)
		}
		rec.RequestHash = "GET /again"
		if _, err := s.Reserve(ctx, rec); err != nil {
			t.Fatalf("Reserve after Release: %v", err)
		}
		got, err := s.Reserve(ctx, rec)
		if !errors.Is(err, x402.ErrNonceTaken) || got.RequestHash != "GET /again" {
			t.Fatalf("Reserve of the re-reserved key: %+v, %v", got, err)
		}
	})

	t.Run("ReleaseOfSettledIsError", func(t *testing.T) {
		s := newStore(t)
		rec := newRecord("GET /a")
		if _, err := s.Reserve(ctx, rec); err != nil {
			t.Fatalf("Reserve: %v", err)
		}
		if err := s.Complete(ctx, rec.Key, response()); err != nil {
			t.Fatalf("Complete: %v", err)
		}
		if err := s.Release(ctx, rec.Key); err == nil {
			t.Fatal("Release of a settled key succeeded")
		}
		got, err := s.Reserve(ctx, rec)
		if !errors.Is(err, x402.ErrNonceTaken) || got.State != x402.NonceSettled {
			t.Fatalf("the settled record did not survive the refused Release: %+v, %v", got, err)
		}
	})

	t.Run("CompleteUnknownIsError", func(t *testing.T) {
		s := newStore(t)
		if err := s.Complete(ctx, newRecord("GET /a").Key, response()); err == nil {
			t.Fatal("Complete of a key never reserved succeeded")
		}
		rec := newRecord("GET /b")
		if _, err := s.Reserve(ctx, rec); err != nil {
			t.Fatalf("Reserve: %v", err)
		}
		if err := s.Release(ctx, rec.Key); err != nil {
			t.Fatalf("Release: %v", err)
		}
		if err := s.Complete(ctx, rec.Key, response()); err == nil {
			t.Fatal("Complete of a released key succeeded")
		}
	})

	t.Run("KeysAreIndependent", func(t *testing.T) {
		s := newStore(t)
		a, b := newRecord("GET /a"), newRecord("GET /b")
		if _, err := s.Reserve(ctx, a); err != nil {
			t.Fatalf("Reserve a: %v", err)
		}
		if _, err := s.Reserve(ctx, b); err != nil {
			t.Fatalf("Reserve b while a is reserved: %v", err)
		}
		if err := s.Complete(ctx, a.Key, response()); err != nil {
			t.Fatalf("Complete a: %v", err)
		}
		if err := s.Release(ctx, b.Key); err != nil {
			t.Fatalf("Release b: %v", err)
		}
		if _, err := s.Reserve(ctx, b); err != nil {
			t.Fatalf("Reserve b again: %v", err)
		}
	})

	t.Run("MalformedRecordsRefused", func(t *testing.T) {
		s := newStore(t)
		for name, rec := range map[string]x402.NonceRecord{
			"empty key":     {RequestHash: "x", State: x402.NonceReserved, ExpiresAt: expires},
			"zero expiry":   {Key: newRecord("x").Key, RequestHash: "x", State: x402.NonceReserved},
			"settled state": {Key: newRecord("x").Key, RequestHash: "x", State: x402.NonceSettled, ExpiresAt: expires},
		} {
			if _, err := s.Reserve(ctx, rec); err == nil || errors.Is(err, x402.ErrNonceTaken) {
				t.Errorf("%s: Reserve err = %v, want a validation error", name, err)
			}
		}
	})

	t.Run("ConcurrentReservesOneWinner", func(t *testing.T) {
		s := newStore(t)
		rec := newRecord("GET /race")
		const n = 50
		var wg sync.WaitGroup
		var wins, taken atomic.Int64
		errs := make(chan error, n)
		start := make(chan struct{})
		for i := 0; i < n; i++ {
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				<-start
				r := rec
				r.RequestHash = fmt.Sprintf("GET /race/%d", i)
				_, err := s.Reserve(ctx, r)
				switch {
				case err == nil:
					wins.Add(1)
				case errors.Is(err, x402.ErrNonceTaken):
					taken.Add(1)
				default:
					errs <- err
				}
			}(i)
		}
		close(start)
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Errorf("unexpected Reserve error: %v", err)
		}
		if wins.Load() != 1 || taken.Load() != n-1 {
			t.Fatalf("%d winners and %d ErrNonceTaken, want 1 and %d", wins.Load(), taken.Load(), n-1)
		}
	})
}

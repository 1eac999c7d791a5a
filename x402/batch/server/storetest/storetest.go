// Package storetest is the conformance suite of the batch-settlement
// channel store (server.Store): every implementation (the memory one,
// SQLite, PostgreSQL) runs it and behaves alike.
package storetest

import (
	"bytes"
	"context"
	"fmt"
	"math/big"
	"sync"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"

	"github.com/seed1284c1d2/svc/x402/batch"
	"github.com/seed1284c1d2/svc/x402/batch/server"
)

// Network is the network the suite's channels are on.
const Network = "eip155:8453"

// Record returns a channel record of channel n (distinct n, distinct
// channels).
func Record(n int) batch.ChannelRecord {
	ch := batch.Channel{
		Payer:              common.BigToAddress(big.NewInt(int64(1000 + n))),
		PayerAuthorizer:    common.BigToAddress(big.NewInt(int64(2000 + n))),
		Receiver:           common.HexToAddress("0x00000000000000000000000000000000000000aa"),
		ReceiverAuthorizer: common.HexToAddress("0x00000000000000000000000000000000000000bb"),
		Token:              common.HexToAddress("0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913"),
		WithdrawDelay:      900,
		Salt:               common.BigToHash(big.NewInt(int64(n))),
	}
	return batch.ChannelRecord{Network: Network, ID: batch.NewDomain(8453).ChannelID(ch), Channel: ch}
}

// charge returns rec charged to total with a voucher of ceiling total.
func charge(rec batch.ChannelRecord, total int64, at time.Time) batch.ChannelRecord {
	out := server.CopyRecord(rec)
	out.Charged, out.SignedMax = big.NewInt(total), big.NewInt(total)
	out.Signature = bytes.Repeat([]byte{byte(total)}, 65)
	out.LastRequestAt = at
	return out
}

// onChain is an escrow view.
func onChain(balance, claimed int64) batch.OnChain {
	return batch.OnChain{Balance: big.NewInt(balance), TotalClaimed: big.NewInt(claimed), WithdrawAmount: big.NewInt(0), RefundNonce: big.NewInt(1)}
}

// Run runs the suite; open returns an empty store for one test.
func Run(t *testing.T, open func(t *testing.T) server.Store) {
	ctx := context.Background()
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 6000, time.UTC)

	t.Run("HoldCreatesAndSerializes", func(t *testing.T) {
		s := open(t)
		rec := Record(1)
		if _, found, err := s.Channel(ctx, Network, rec.ID); err != nil || found {
			t.Fatalf("a new channel: found %v, %v", found, err)
		}
		h, taken, err := s.Hold(ctx, rec, "a", t0, t0.Add(time.Minute))
		if err != nil || !taken || h.Holder != "a" || h.Charged.Sign() != 0 || len(h.Signature) != 0 || h.Channel != rec.Channel {
			t.Fatalf("first hold: %+v taken %v, %v", h, taken, err)
		}
		if _, taken, _ := s.Hold(ctx, rec, "b", t0.Add(time.Second), t0.Add(time.Minute)); taken {
			t.Fatal("a second holder took a held channel")
		}
		if _, taken, _ := s.Hold(ctx, rec, "a", t0.Add(time.Second), t0.Add(2*time.Minute)); !taken {
			t.Fatal("the holder could not hold again")
		}
		if _, taken, _ := s.Hold(ctx, rec, "b", t0.Add(3*time.Minute), t0.Add(4*time.Minute)); !taken {
			t.Fatal("an ended hold was not taken over")
		}
		if err := s.Unhold(ctx, Network, rec.ID, "a"); err != nil {
			t.Fatal(err)
		}
		got, found, err := s.Channel(ctx, Network, rec.ID)
		if err != nil || !found || got.Holder != "b" || !got.HeldUntil.Equal(t0.Add(4*time.Minute)) {
			t.Fatalf("another holder's unhold freed the hold: %+v %v %v", got, found, err)
		}
		if err := s.Unhold(ctx, Network, rec.ID, "b"); err != nil {
			t.Fatal(err)
		}
		if got, _, _ = s.Channel(ctx, Network, rec.ID); got.Holder != "" {
			t.Fatalf("unhold left %q", got.Holder)
		}
	})

	t.Run("CommitIsCompareAndSet", func(t *testing.T) {
		s := open(t)
		rec := Record(2)
		if _, _, err := s.Hold(ctx, rec, "k1", t0, t0.Add(time.Minute)); err != nil {
			t.Fatal(err)
		}
		c1 := charge(rec, 1000, t0.Add(time.Second))
		c1.OnChain, c1.SyncedAt = onChain(100000, 0), t0.Add(time.Second)
		if done, err := s.Commit(ctx, c1, big.NewInt(0), "k1"); err != nil || !done {
			t.Fatalf("commit 0 → 1000: %v %v", done, err)
		}
		got, _, _ := s.Channel(ctx, Network, rec.ID)
		if got.Charged.Int64() != 1000 || got.SignedMax.Int64() != 1000 || !bytes.Equal(got.Signature, c1.Signature) || got.Holder != "" ||
			got.OnChain.Balance.Int64() != 100000 || !got.SyncedAt.Equal(c1.SyncedAt) || !got.LastRequestAt.Equal(c1.LastRequestAt) {
			t.Fatalf("after the commit: %+v", got)
		}
		if done, err := s.Commit(ctx, charge(rec, 2000, t0), big.NewInt(0), ""); err != nil || done {
			t.Fatalf("a commit from a stale charged amount: %v %v", done, err)
		}
		// An older mirror in a commit does not replace a newer one.
		c2 := charge(rec, 2000, t0.Add(2*time.Second))
		c2.OnChain, c2.SyncedAt = onChain(5, 0), t0
		if done, err := s.Commit(ctx, c2, big.NewInt(1000), ""); err != nil || !done {
			t.Fatalf("commit 1000 → 2000: %v %v", done, err)
		}
		if got, _, _ = s.Channel(ctx, Network, rec.ID); got.Charged.Int64() != 2000 || got.OnChain.Balance.Int64() != 100000 {
			t.Fatalf("after the second commit: %+v", got)
		}
		// A commit to a channel without a record from zero creates it.
		r3 := charge(Record(3), 700, t0)
		if done, err := s.Commit(ctx, r3, big.NewInt(0), ""); err != nil || !done {
			t.Fatalf("commit to a new channel: %v %v", done, err)
		}
		if done, _ := s.Commit(ctx, charge(Record(4), 700, t0), big.NewInt(5), ""); done {
			t.Fatal("a commit from a non-zero amount created a channel")
		}
		if _, found, _ := s.Channel(ctx, Network, Record(4).ID); found {
			t.Fatal("a refused commit created a record")
		}
	})

	t.Run("ConcurrentCommitsChargeOnce", func(t *testing.T) {
		s := open(t)
		rec := Record(5)
		const n = 8
		var wg sync.WaitGroup
		wins := make(chan int64, n)
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				done, err := s.Commit(ctx, charge(rec, int64(100+i), t0), big.NewInt(0), "")
				if err != nil {
					t.Error(err)
				}
				if done {
					wins <- int64(100 + i)
				}
			}()
		}
		wg.Wait()
		close(wins)
		var won []int64
		for w := range wins {
			won = append(won, w)
		}
		got, _, _ := s.Channel(ctx, Network, rec.ID)
		if len(won) != 1 || got.Charged.Int64() != won[0] {
			t.Fatalf("%d concurrent commits from 0: %v won, charged %v", n, won, got.Charged)
		}
	})

	t.Run("MirrorKeepsTheLatest", func(t *testing.T) {
		s := open(t)
		rec := Record(6)
		if err := s.Mirror(ctx, Network, rec.ID, onChain(1, 0), t0); err != nil {
			t.Fatal(err)
		}
		if _, found, _ := s.Channel(ctx, Network, rec.ID); found {
			t.Fatal("a mirror created a record")
		}
		if _, err := s.Commit(ctx, charge(rec, 500, t0), big.NewInt(0), ""); err != nil {
			t.Fatal(err)
		}
		oc := onChain(9000, 200)
		oc.WithdrawRequestedAt, oc.WithdrawAmount = 1_700_000_000, big.NewInt(300)
		if err := s.Mirror(ctx, Network, rec.ID, oc, t0.Add(time.Minute)); err != nil {
			t.Fatal(err)
		}
		if err := s.Mirror(ctx, Network, rec.ID, onChain(1, 1), t0.Add(time.Second)); err != nil {
			t.Fatal(err)
		}
		got, _, _ := s.Channel(ctx, Network, rec.ID)
		if got.OnChain.Balance.Int64() != 9000 || got.OnChain.TotalClaimed.Int64() != 200 || got.OnChain.WithdrawRequestedAt != 1_700_000_000 ||
			got.OnChain.WithdrawAmount.Int64() != 300 || got.OnChain.RefundNonce.Int64() != 1 || !got.SyncedAt.Equal(t0.Add(time.Minute)) {
			t.Fatalf("the mirror: %+v at %v", got.OnChain, got.SyncedAt)
		}
	})

	t.Run("ClaimableFollowsClaims", func(t *testing.T) {
		s := open(t)
		for i := range 4 {
			rec := Record(10 + i)
			if _, err := s.Commit(ctx, charge(rec, 100, t0.Add(time.Duration(4-i)*time.Second)), big.NewInt(0), ""); err != nil {
				t.Fatal(err)
			}
		}
		other := Record(20)
		other.Network = "eip155:84532"
		if _, err := s.Commit(ctx, charge(other, 100, t0), big.NewInt(0), ""); err != nil {
			t.Fatal(err)
		}
		got, err := s.Claimable(ctx, Network, 10)
		if err != nil || len(got) != 4 {
			t.Fatalf("claimable: %d, %v", len(got), err)
		}
		for i, r := range got {
			if r.ID != Record(13-i).ID {
				t.Fatalf("claimable[%d] is not the least recently charged: %v", i, r.LastRequestAt)
			}
		}
		// Claimed in full: no longer claimable; charged again: claimable.
		if err := s.Mirror(ctx, Network, Record(13).ID, onChain(1000, 100), t0.Add(time.Minute)); err != nil {
			t.Fatal(err)
		}
		if err := s.Mirror(ctx, Network, Record(12).ID, onChain(1000, 50), t0.Add(time.Minute)); err != nil {
			t.Fatal(err)
		}
		got, _ = s.Claimable(ctx, Network, 2)
		if len(got) != 2 || got[0].ID != Record(12).ID || got[1].ID != Record(11).ID || got[0].Unclaimed().Int64() != 50 {
			t.Fatalf("claimable after claims: %v", ids(got))
		}
		if _, err := s.Commit(ctx, charge(Record(13), 200, t0.Add(time.Hour)), big.NewInt(100), ""); err != nil {
			t.Fatal(err)
		}
		got, _ = s.Claimable(ctx, Network, 10)
		if len(got) != 4 || got[3].ID != Record(13).ID {
			t.Fatalf("claimable after a new charge: %v", ids(got))
		}
		if got, _ := s.Claimable(ctx, Network, 0); len(got) != 0 {
			t.Fatal("limit 0 listed records")
		}
	})

	t.Run("ClaimPendingComparesAmounts", func(t *testing.T) {
		s := open(t)
		rec := Record(50)
		claimable := func() bool {
			t.Helper()
			got, err := s.Claimable(ctx, Network, 10)
			if err != nil {
				t.Fatal(err)
			}
			return len(got) == 1
		}
		steps := []struct {
			charged, from int64 // a charge from → charged (from -1: none)
			claimed       int64 // then a mirror of this total claimed (-1: none)
			want          bool
		}{
			{charged: 90, from: 0, claimed: 100, want: false}, // "90" < "100": fewer digits
			{charged: 95, from: 90, claimed: -1, want: false}, // "95" > "100" as text, not as an amount
			{charged: 999, from: 95, claimed: 999, want: false},
			{charged: 1000, from: 999, claimed: -1, want: true}, // more digits
			{charged: 1001, from: 1000, claimed: 1000, want: true},
			{charged: 1100, from: 1001, claimed: 1100, want: false},
		}
		at := t0
		for i, st := range steps {
			at = at.Add(time.Second)
			if done, err := s.Commit(ctx, charge(rec, st.charged, at), big.NewInt(st.from), ""); err != nil || !done {
				t.Fatalf("step %d: commit %d → %d: %v %v", i, st.from, st.charged, done, err)
			}
			if st.claimed >= 0 {
				if err := s.Mirror(ctx, Network, rec.ID, onChain(10_000, st.claimed), at); err != nil {
					t.Fatal(err)
				}
			}
			if got := claimable(); got != st.want {
				t.Fatalf("step %d: charged %d, claimed %d: claimable %v, want %v", i, st.charged, st.claimed, got, st.want)
			}
		}
	})

	t.Run("DeleteIsCompareAndSet", func(t *testing.T) {
		s := open(t)
		rec := Record(30)
		if _, err := s.Commit(ctx, charge(rec, 300, t0), big.NewInt(0), ""); err != nil {
			t.Fatal(err)
		}
		if done, err := s.Delete(ctx, Network, rec.ID, big.NewInt(200)); err != nil || done {
			t.Fatalf("delete from a stale amount: %v %v", done, err)
		}
		if done, err := s.Delete(ctx, Network, rec.ID, big.NewInt(300)); err != nil || !done {
			t.Fatalf("delete: %v %v", done, err)
		}
		if _, found, _ := s.Channel(ctx, Network, rec.ID); found {
			t.Fatal("the record survived its deletion")
		}
		if got, _ := s.Claimable(ctx, Network, 10); len(got) != 0 {
			t.Fatal("a deleted record is claimable")
		}
	})

	t.Run("LargeAmounts", func(t *testing.T) {
		s := open(t)
		rec := Record(40)
		huge := batch.MaxAmount()
		c := charge(rec, 1, t0)
		c.Charged, c.SignedMax = huge, huge
		if _, err := s.Commit(ctx, c, big.NewInt(0), ""); err != nil {
			t.Fatal(err)
		}
		got, _, _ := s.Channel(ctx, Network, rec.ID)
		if got.Charged.Cmp(huge) != 0 || got.SignedMax.Cmp(huge) != 0 {
			t.Fatalf("uint128 amounts: %v", got.Charged)
		}
	})
}

func ids(rs []batch.ChannelRecord) []string {
	out := make([]string, len(rs))
	for i, r := range rs {
		out[i] = fmt.Sprintf("%s…(charged %v claimed %v)", r.ID.Hex()[:10], r.Charged, r.OnChain.TotalClaimed)
	}
	return out
}

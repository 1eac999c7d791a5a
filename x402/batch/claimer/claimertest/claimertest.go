// Package claimertest is the conformance suite of claimer.Log: every
// claim log (the memory one, the SQLite and PostgreSQL stores) passes it.
package claimertest

import (
	"context"
	"crypto/rand"
	"errors"
	"math/big"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"

	"github.com/seed1284c1d2/svc/x402/batch"
	"github.com/seed1284c1d2/svc/x402/batch/claimer"
)

// Row returns a well-formed row of a random channel claiming total (at
// most its ceiling max), signed by a random key.
func Row(t testing.TB, total, max int64) claimer.Row {
	t.Helper()
	key, err := crypto.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	addr := crypto.PubkeyToAddress(key.PublicKey)
	var salt common.Hash
	_, _ = rand.Read(salt[:])
	ch := batch.Channel{Payer: addr, PayerAuthorizer: addr, Receiver: common.HexToAddress("0x00000000000000000000000000000000000000aa"),
		ReceiverAuthorizer: common.HexToAddress("0x00000000000000000000000000000000000000bb"),
		Token:              common.HexToAddress("0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913"), WithdrawDelay: 900, Salt: salt}
	d := batch.NewDomain(8453)
	id := d.ChannelID(ch)
	sig, err := d.SignVoucher(key, id, big.NewInt(max))
	if err != nil {
		t.Fatal(err)
	}
	return claimer.Row{ChannelID: id, Channel: ch, MaxClaimable: big.NewInt(max), Signature: common.FromHex(sig), TotalClaimed: big.NewInt(total), Previous: big.NewInt(0)}
}

// record returns a pending record of rows created at at.
func record(id, network string, at time.Time, rows ...claimer.Row) claimer.Record {
	sig := make([]byte, 65)
	_, _ = rand.Read(sig)
	return claimer.Record{ID: id, Network: network, Rows: rows, AuthorizerSignature: sig, State: claimer.Pending, CreatedAt: at}
}

func sameRow(t testing.TB, what string, got, want claimer.Row) {
	t.Helper()
	if got.ChannelID != want.ChannelID || got.Channel != want.Channel || got.MaxClaimable.Cmp(want.MaxClaimable) != 0 ||
		string(got.Signature) != string(want.Signature) || got.TotalClaimed.Cmp(want.TotalClaimed) != 0 ||
		(want.Previous != nil && (got.Previous == nil || got.Previous.Cmp(want.Previous) != 0)) {
		t.Fatalf("%s: row %+v, want %+v", what, got, want)
	}
}

// TestLog runs the suite against logs open returns (each call a fresh,
// empty log).
func TestLog(t *testing.T, open func(t *testing.T) claimer.Log) {
	ctx := context.Background()
	const net = "eip155:8453"
	t0 := time.Date(2026, 5, 1, 12, 0, 0, 123456789, time.UTC)

	t.Run("BeginPendingFinish", func(t *testing.T) {
		l := open(t)
		a, b := Row(t, 1500, 2000), Row(t, 700, 700)
		rec := record("c1", net, t0, a, b)
		if err := l.Begin(ctx, rec); err != nil {
			t.Fatal(err)
		}
		if err := l.Begin(ctx, rec); err == nil {
			t.Fatal("the same claim id was logged twice")
		}
		pend, err := l.Pending(ctx, net)
		if err != nil || len(pend) != 1 {
			t.Fatalf("pending: %v, %v", pend, err)
		}
		p := pend[0]
		if p.ID != "c1" || p.State != claimer.Pending || p.Network != net || string(p.AuthorizerSignature) != string(rec.AuthorizerSignature) ||
			!p.CreatedAt.Equal(t0) || len(p.Rows) != 2 || p.Attempts != 0 {
			t.Fatalf("pending record %+v", p)
		}
		sameRow(t, "row 0", p.Rows[0], a)
		sameRow(t, "row 1", p.Rows[1], b)
		if other, _ := l.Pending(ctx, "eip155:84532"); len(other) != 0 {
			t.Fatalf("another network's pending claims: %v", other)
		}
		if err := l.Attempt(ctx, "c1", t0.Add(time.Second)); err != nil {
			t.Fatal(err)
		}
		if err := l.Attempt(ctx, "nope", t0); !errors.Is(err, claimer.ErrNotPending) {
			t.Fatalf("attempt of an unknown claim: %v", err)
		}
		if pend, _ = l.Pending(ctx, net); pend[0].Attempts != 1 {
			t.Fatalf("attempts %d, want 1", pend[0].Attempts)
		}
		tx := "0x" + common.Bytes2Hex(make([]byte, 32))
		if err := l.Finish(ctx, "c1", claimer.Done, tx, "", t0.Add(2*time.Second)); err != nil {
			t.Fatal(err)
		}
		if err := l.Finish(ctx, "c1", claimer.Failed, "", "late", t0.Add(3*time.Second)); !errors.Is(err, claimer.ErrNotPending) {
			t.Fatalf("a finished claim finished again: %v", err)
		}
		if err := l.Finish(ctx, "c1", claimer.Pending, "", "", t0); err == nil {
			t.Fatal("Finish accepted the pending state")
		}
		if pend, _ = l.Pending(ctx, net); len(pend) != 0 {
			t.Fatalf("pending after finish: %v", pend)
		}
		recent, err := l.Recent(ctx, net, 10)
		if err != nil || len(recent) != 1 || recent[0].State != claimer.Done || recent[0].Tx != tx || !recent[0].UpdatedAt.Equal(t0.Add(2*time.Second)) {
			t.Fatalf("recent: %+v, %v", recent, err)
		}
		claimed, err := l.Claimed(ctx, net, 10)
		if err != nil || len(claimed) != 2 {
			t.Fatalf("claimed: %+v, %v", claimed, err)
		}
		for _, c := range claimed {
			want := a
			if c.ChannelID == b.ChannelID {
				want = b
			}
			sameRow(t, "claimed", c.Row, want)
			if c.ClaimID != "c1" || c.Network != net || !c.ClaimedAt.Equal(t0.Add(2*time.Second)) {
				t.Fatalf("claimed %+v", c)
			}
		}
	})

	t.Run("FailedClaimsClaimNothing", func(t *testing.T) {
		l := open(t)
		if err := l.Begin(ctx, record("f1", net, t0, Row(t, 10, 10))); err != nil {
			t.Fatal(err)
		}
		if err := l.Finish(ctx, "f1", claimer.Failed, "", "refused", t0); err != nil {
			t.Fatal(err)
		}
		if c, _ := l.Claimed(ctx, net, 0); len(c) != 0 {
			t.Fatalf("a failed claim recorded claimed channels: %+v", c)
		}
		if r, _ := l.Recent(ctx, net, 1); len(r) != 1 || r[0].State != claimer.Failed || r[0].Reason != "refused" {
			t.Fatalf("recent %+v", r)
		}
	})

	t.Run("LatestClaimPerChannel", func(t *testing.T) {
		l := open(t)
		r1 := Row(t, 1000, 1000)
		r2 := r1
		r2.TotalClaimed, r2.MaxClaimable = big.NewInt(3000), big.NewInt(3500)
		r0 := r1
		r0.TotalClaimed = big.NewInt(500)
		for i, step := range []struct {
			id  string
			row claimer.Row
		}{{"a", r1}, {"b", r2}, {"c", r0}} {
			at := t0.Add(time.Duration(i) * time.Minute)
			if err := l.Begin(ctx, record(step.id, net, at, step.row)); err != nil {
				t.Fatal(err)
			}
			if err := l.Finish(ctx, step.id, claimer.Done, "", "", at); err != nil {
				t.Fatal(err)
			}
		}
		c, err := l.Claimed(ctx, net, 0)
		if err != nil || len(c) != 1 || c[0].ClaimID != "b" || c[0].TotalClaimed.Int64() != 3000 {
			t.Fatalf("claimed %+v, %v: want claim b's 3000 (a later, lower one does not replace it)", c, err)
		}
		recent, _ := l.Recent(ctx, net, 2)
		if len(recent) != 2 || recent[0].ID != "c" || recent[1].ID != "b" {
			t.Fatalf("recent newest first, limited to 2: %+v", recent)
		}
	})

	t.Run("Lease", func(t *testing.T) {
		l := open(t)
		held := func(owner string, now, until time.Time) bool {
			t.Helper()
			ok, err := l.Lease(ctx, net, owner, now, until)
			if err != nil {
				t.Fatal(err)
			}
			return ok
		}
		if !held("a", t0, t0.Add(time.Minute)) {
			t.Fatal("a free lease was not granted")
		}
		if held("b", t0.Add(30*time.Second), t0.Add(90*time.Second)) {
			t.Fatal("b took a's lease before it ended")
		}
		if !held("a", t0.Add(50*time.Second), t0.Add(2*time.Minute)) {
			t.Fatal("a could not renew its lease")
		}
		if held("b", t0.Add(90*time.Second), t0.Add(3*time.Minute)) {
			t.Fatal("b took a's renewed lease before it ended")
		}
		if ok, err := l.Lease(ctx, "eip155:84532", "b", t0, t0.Add(time.Minute)); err != nil || !ok {
			t.Fatalf("another network's lease: %v, %v", ok, err)
		}
		if !held("b", t0.Add(2*time.Minute), t0.Add(3*time.Minute)) {
			t.Fatal("b could not take a lease that ended")
		}
		if held("a", t0.Add(2*time.Minute), t0.Add(3*time.Minute)) {
			t.Fatal("a took b's lease back")
		}
		if _, err := l.Lease(ctx, net, "", t0, t0); err == nil {
			t.Fatal("a lease without an owner")
		}
	})

	t.Run("InvalidRecords", func(t *testing.T) {
		l := open(t)
		good := record("ok", net, t0, Row(t, 5, 10))
		for name, bad := range map[string]func(r *claimer.Record){
			"no id":           func(r *claimer.Record) { r.ID = "" },
			"no network":      func(r *claimer.Record) { r.Network = "" },
			"no rows":         func(r *claimer.Record) { r.Rows = nil },
			"short signature": func(r *claimer.Record) { r.AuthorizerSignature = r.AuthorizerSignature[:10] },
			"above ceiling":   func(r *claimer.Record) { r.Rows = []claimer.Row{Row(t, 11, 10)} },
			"zero total":      func(r *claimer.Record) { r.Rows = []claimer.Row{Row(t, 0, 10)} },
			"no time":         func(r *claimer.Record) { r.CreatedAt = time.Time{} },
		} {
			r := good
			r.Rows = append([]claimer.Row(nil), good.Rows...)
			bad(&r)
			if err := l.Begin(ctx, r); err == nil {
				t.Errorf("%s: Begin accepted it", name)
			}
		}
		if pend, _ := l.Pending(ctx, net); len(pend) != 0 {
			t.Fatalf("refused records were logged: %+v", pend)
		}
	})
}

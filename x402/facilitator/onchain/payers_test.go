package onchain

import (
	"context"
	"errors"
	"math/big"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
)

// TestPayersAccount: a payer's settlements stay in flight while anyone
// holds them, its lock admits one at a time and gives up with the
// context, reverts leave the window, and an empty account is forgotten
// (memory stays bounded by what is in flight or recent).
func TestPayersAccount(t *testing.T) {
	p := newPayers()
	a, b := common.HexToAddress("0xa"), common.HexToAddress("0xb")
	pa := &payment{from: a, key: "k1", value: big.NewInt(5)}
	pa.nonce[0] = 1
	pb := &payment{from: a, key: "k2", value: big.NewInt(7)}

	unlock, err := p.lock(context.Background(), a)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, err := p.lock(ctx, a); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a second admission of the same payer: %v, want to wait until its context ends", err)
	}
	unlockB, err := p.lock(context.Background(), b)
	if err != nil {
		t.Fatalf("another payer waits: %v", err)
	}
	unlockB()
	p.hold(pa) // admitted
	unlock()
	p.hold(pa) // its transaction followed
	p.hold(pb)
	if got := p.inFlight(a, "k2"); len(got) != 1 || got[0].value.Int64() != 5 || got[0].nonce != pa.nonce {
		t.Fatalf("in flight besides k2: %+v", got)
	}
	p.drop(pa)
	if got := p.inFlight(a, ""); len(got) != 2 {
		t.Fatalf("after one of two holds dropped: %d in flight, want 2", len(got))
	}
	p.drop(pa)
	p.drop(pb)
	p.drop(pb) // more drops than holds: harmless
	if got := p.inFlight(a, ""); len(got) != 0 || len(p.by) != 0 {
		t.Fatalf("after every hold dropped: %d in flight, %d accounts", len(got), len(p.by))
	}

	now := time.Now()
	p.reverted(a, now.Add(-2*time.Hour), now.Add(-3*time.Hour))
	p.reverted(a, now, now.Add(-time.Hour))
	if n := p.reverts(a, now.Add(-time.Hour)); n != 1 {
		t.Fatalf("%d reverts within the window, want 1", n)
	}
	p.reverted(b, now, now.Add(-time.Hour))
	if n := p.reverts(a, now.Add(time.Second)); n != 0 || p.by[a] != nil {
		t.Fatalf("reverts past the window: %d, account kept %v", n, p.by[a] != nil)
	}
	if n := p.reverts(b, now.Add(-time.Hour)); n != 1 {
		t.Fatalf("another payer's reverts: %d, want 1", n)
	}
}

package onchain_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/seed1284c1d2/svc/internal/anviltest"
	"github.com/seed1284c1d2/svc/x402/facilitator/onchain"
)

// TestReconcile settles one payment for real and reconciles records of
// it: the true one (with and without its payee), one with another amount,
// one with another payee and one without a transaction.
func TestReconcile(t *testing.T) {
	e := newEnv(t, anviltest.Options{})
	f := e.facilitator(t, nil)
	ctx := context.Background()
	req := requirements(t, "0.01")
	payload, p := pay(t, e.payerKey, req, time.Now())
	res, err := f.Settle(ctx, payload, req)
	if err != nil || !res.Success {
		t.Fatalf("settle: %+v %v", res, err)
	}
	good := onchain.Settled{Transaction: res.Transaction, Token: req.Asset, Payer: e.payer.Hex(), Nonce: p.Authorization.Nonce,
		Amount: req.Amount, PayTo: payTo.Hex()}
	noPayee, otherAmount, otherPayee, noTx := good, good, good, good
	noPayee.PayTo = ""
	otherAmount.Amount = "1"
	otherPayee.PayTo = e.relayer.Hex()
	noTx.Transaction = "pending"
	rows := []onchain.Settled{good, noPayee, otherAmount, otherPayee, noTx}
	rec, err := onchain.Reconcile(ctx, e.chain.Client, func(yield func(int, onchain.Settled) error) error {
		for i, s := range rows {
			if err := yield(i, s); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if rec.Checked != 5 || rec.NoPayee != 1 || len(rec.Mismatches) != 3 {
		t.Fatalf("%+v", rec)
	}
	for i, want := range []struct {
		row  int
		kind string
	}{{2, onchain.MismatchAmount}, {3, onchain.MismatchPayTo}, {4, onchain.MismatchNoTransaction}} {
		if m := rec.Mismatches[i]; m.Row != want.row || m.Mismatch.Kind != want.kind {
			t.Errorf("mismatch %d: %+v, want row %d %s", i, m, want.row, want.kind)
		}
	}
	// The source's error stops the comparison and comes back as is.
	stop := errors.New("journal down")
	rec, err = onchain.Reconcile(ctx, e.chain.Client, func(yield func(int, onchain.Settled) error) error {
		if err := yield(0, good); err != nil {
			return err
		}
		return stop
	})
	if !errors.Is(err, stop) || rec.Checked != 1 {
		t.Errorf("%+v %v", rec, err)
	}
	// The chain's error is wrapped.
	e.chain.Stop()
	_, err = onchain.Reconcile(ctx, e.chain.Client, func(yield func(int, onchain.Settled) error) error { return yield(0, good) })
	if err == nil || !strings.HasPrefix(err.Error(), "reconcile: ") {
		t.Errorf("chain down: %v", err)
	}
}

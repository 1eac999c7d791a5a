package onchain_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/seed1284c1d2/svc/internal/anviltest"
	"github.com/seed1284c1d2/svc/x402"
	"github.com/seed1284c1d2/svc/x402/facilitator/onchain"
)

// TestStatusReaderReadsTheChainWithoutAKey: a StatusReader built from an
// RPC URL alone (no relayer key) tells what the chain says of an
// authorization: unused (and not expired) before the settlement; used,
// with the transaction, payer, payTo and amount of its Transfer, after
// another party (here an on-chain facilitator) settled it; unused and
// expired for an old authorization. It answers exactly what the
// facilitator's own Status answers.
func TestStatusReaderReadsTheChainWithoutAKey(t *testing.T) {
	e := newEnv(t, anviltest.Options{})
	ctx := context.Background()
	r, err := onchain.NewStatusReader(ctx, onchain.StatusConfig{RPCURL: e.chain.URL, Network: x402.NetworkBase})
	if err != nil {
		t.Fatal(err)
	}
	if r.Network() != x402.NetworkBase {
		t.Fatalf("network %q", r.Network())
	}
	f := e.facilitator(t, nil)
	req := requirements(t, "0.01")
	payload, _ := pay(t, e.payerKey, req, time.Now())
	st, err := r.Status(ctx, payload, req)
	if err != nil || st.Used || st.Expired || st.Transaction != "" {
		t.Fatalf("before the settlement: %+v %v", st, err)
	}
	sr, err := f.Settle(ctx, payload, req)
	if err != nil || !sr.Success {
		t.Fatalf("settle: %+v %v", sr, err)
	}
	st, err = r.Status(ctx, payload, req)
	if err != nil {
		t.Fatal(err)
	}
	want := x402.AuthorizationStatus{Used: true, Transaction: sr.Transaction, Payer: e.payer.Hex(), PayTo: payTo.Hex(),
		Amount: amount(t, req).String(), Asset: anviltest.USDC.Hex(), Network: x402.NetworkBase}
	if st != want {
		t.Fatalf("after the settlement: %+v, want %+v", st, want)
	}
	if fst, err := f.Status(ctx, payload, req); err != nil || fst != st {
		t.Fatalf("the facilitator's Status %+v %v, the reader's %+v", fst, err, st)
	}
	old, _ := pay(t, e.payerKey, req, time.Now().Add(-time.Hour))
	if st, err := r.Status(ctx, old, req); err != nil || st.Used || !st.Expired {
		t.Fatalf("expired: %+v %v", st, err)
	}
}

// TestStatusReaderChecksItsChain: the reader refuses an endpoint of
// another chain id (a configuration error naming the RPC URL field) and a
// token address without a contract; asked about requirements of another
// network or asset, it answers an error rather than a status.
func TestStatusReaderChecksItsChain(t *testing.T) {
	e := newEnv(t, anviltest.Options{})
	ctx := context.Background()
	var ce *x402.ConfigError
	_, err := onchain.NewStatusReader(ctx, onchain.StatusConfig{RPCURL: e.chain.URL, Network: x402.NetworkBaseSepolia})
	if !errors.As(err, &ce) || ce.Field != "RPCURL" || !strings.Contains(ce.Message, "chain id 8453") {
		t.Fatalf("another chain: %v", err)
	}
	_, err = onchain.NewStatusReader(ctx, onchain.StatusConfig{RPCURL: e.chain.URL, Network: x402.NetworkBase, Token: "0x1111111111111111111111111111111111111111"})
	if !errors.As(err, &ce) || ce.Field != "Token" {
		t.Fatalf("no token contract: %v", err)
	}
	if _, err := onchain.NewStatusReader(ctx, onchain.StatusConfig{Network: x402.NetworkBase}); !errors.As(err, &ce) || ce.Field != "RPCURL" {
		t.Fatalf("no RPC URL: %v", err)
	}
	r, err := onchain.NewStatusReader(ctx, onchain.StatusConfig{RPCURL: e.chain.URL, Network: x402.NetworkBase})
	if err != nil {
		t.Fatal(err)
	}
	req := requirements(t, "0.01")
	payload, _ := pay(t, e.payerKey, req, time.Now())
	sepolia := req
	sepolia.Network = x402.NetworkBaseSepolia
	other := req
	other.Asset = "0x1111111111111111111111111111111111111111"
	for name, q := range map[string]x402.PaymentRequirements{"network": sepolia, "asset": other} {
		if st, err := r.Status(ctx, payload, q); err == nil {
			t.Errorf("another %s: status %+v, want an error", name, st)
		}
	}
}

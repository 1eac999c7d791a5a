package main

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/seed1284c1d2/svc/x402"
	"github.com/seed1284c1d2/svc/x402/engine"
	exactserver "github.com/seed1284c1d2/svc/x402/exact/server"
	"github.com/seed1284c1d2/svc/x402/facilitator"
	"github.com/seed1284c1d2/svc/x402/nethttp"
)

// TestSignPayments: the pre-signed payments are distinct, valid payments
// of the offer the server makes.
func TestSignPayments(t *testing.T) {
	const payTo = "0x209693Bc6afc0C5328bA36FaF03C514EF312287C"
	local, err := facilitator.NewLocal(facilitator.LocalConfig{PayTo: payTo})
	if err != nil {
		t.Fatal(err)
	}
	scheme, err := exactserver.New(exactserver.Config{Facilitator: local})
	if err != nil {
		t.Fatal(err)
	}
	journal := engine.NewMemoryJournal()
	eng, err := engine.New(engine.Config{Schemes: []x402.ServerScheme{scheme}, Journal: journal, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	offer, err := eng.NewOffer("POST /pay", "pay", x402.Route{Price: "0.005", PayTo: payTo})
	if err != nil {
		t.Fatal(err)
	}
	mw, err := nethttp.New(nethttp.Config{
		Engine: eng,
		Offer:  func(*http.Request) (*engine.Offer, bool) { return offer, true },
		Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(mw.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(`{"ok":true}`))
	})))
	defer srv.Close()
	newReq := func() (*http.Request, error) {
		return http.NewRequest(http.MethodPost, srv.URL+"/pay", strings.NewReader(`{}`))
	}
	payments, err := signPayments(srv.Client(), newReq, "0x4c0883a69102937d6231471b5dbb6204fe5129617082792ae468d01a3f362318", 8)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, p := range payments {
		if seen[p] {
			t.Fatal("a payment was signed twice")
		}
		seen[p] = true
		req, _ := newReq()
		req.Header.Set(x402.HeaderPaymentSignature, p)
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("pre-signed payment answered %d", resp.StatusCode)
		}
	}
	if n := len(local.Settlements()); n != len(payments) {
		t.Fatalf("%d settlements for %d payments", n, len(payments))
	}
	if n := len(journal.Ledger()); n != len(payments) {
		t.Fatalf("%d ledger entries for %d payments", n, len(payments))
	}
}

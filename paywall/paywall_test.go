package paywall_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/seed1284c1d2/svc/paywall"
	"github.com/seed1284c1d2/svc/x402/client"
	"github.com/seed1284c1d2/svc/x402/facilitator"
)

const payTo = "0x209693Bc6afc0C5328bA36FaF03C514EF312287C"

func TestNewRefusesWhatCannotWork(t *testing.T) {
	ctx := context.Background()
	journal := filepath.Join(t.TempDir(), "j.db")
	routes := paywall.Routes{"GET /a": {Price: "$0.001"}}
	for name, tc := range map[string]struct {
		cfg  paywall.Config
		want string
	}{
		"no routes":         {paywall.Config{PayTo: payTo, Dev: true, Journal: journal}, "Routes is empty"},
		"bad payTo":         {paywall.Config{Routes: routes, PayTo: "0x12", Dev: true, Journal: journal}, "PayTo"},
		"no way to settle":  {paywall.Config{Routes: routes, PayTo: payTo, Journal: journal}, "no way to settle"},
		"two facilitators":  {paywall.Config{Routes: routes, PayTo: payTo, FacilitatorURL: "http://127.0.0.1:1", Facilitator: &facilitator.Local{}, Journal: journal}, "not both"},
		"bad price":         {paywall.Config{Routes: paywall.Routes{"GET /a": {Price: "cheap"}}, PayTo: payTo, Dev: true, Journal: journal}, `route "GET /a"`},
		"bad pattern":       {paywall.Config{Routes: paywall.Routes{"GET": {Price: "$0.001"}}, PayTo: payTo, Dev: true, Journal: journal}, `route "GET"`},
		"conflicting paths": {paywall.Config{Routes: paywall.Routes{"GET /a/{x}": {Price: "$0.001"}, "GET /a/{y}": {Price: "$0.002"}}, PayTo: payTo, Dev: true, Journal: journal}, "route"},
		"unknown network":   {paywall.Config{Routes: routes, PayTo: payTo, Network: "eip155:1234567", Dev: true, Journal: journal}, "Network"},
	} {
		pw, err := paywall.New(ctx, tc.cfg)
		if err == nil {
			pw.Close()
			t.Errorf("%s: accepted", name)
			continue
		}
		if !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", name, err, tc.want)
		}
	}
}

// TestFacilitatorURLAndRestart: a paywall settling through a facilitator
// over HTTP charges a wildcard route by method and pattern; after Close, a
// new paywall on the same journal answers a retry of the same payment with
// the recorded answer and settles nothing again.
func TestFacilitatorURLAndRestart(t *testing.T) {
	ctx := context.Background()
	local, err := facilitator.NewLocal(facilitator.LocalConfig{})
	if err != nil {
		t.Fatal(err)
	}
	fac := httptest.NewServer(facilitator.Handler(local))
	defer fac.Close()
	journal := filepath.Join(t.TempDir(), "journal.db")
	cfg := paywall.Config{Routes: paywall.Routes{"POST /items/{id}": {Price: "0.002"}}, PayTo: payTo, FacilitatorURL: fac.URL, Deduplicates: true, Journal: journal}
	runs := 0
	mux := http.NewServeMux()
	mux.HandleFunc("/items/{id}", func(w http.ResponseWriter, r *http.Request) {
		runs++
		io.WriteString(w, `{"item":"`+r.PathValue("id")+`"}`)
	})

	pw, err := paywall.New(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(pw.Wrap(mux))
	if resp, err := http.Get(srv.URL + "/items/7"); err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET of a route priced for POST: %v %v", resp, err)
	}
	runs = 0
	payer, _ := client.ParseSigner("59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d")
	var header string
	base := http.DefaultTransport
	spy := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		if h := r.Header.Get("PAYMENT-SIGNATURE"); h != "" {
			header = h
		}
		return base.RoundTrip(r)
	})
	resp, err := client.New(payer, client.WithBase(spy)).Post(srv.URL+"/items/7", "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(body) != `{"item":"7"}` || header == "" || len(local.Settlements()) != 1 {
		t.Fatalf("paid call: %d %s, %d settlements", resp.StatusCode, body, len(local.Settlements()))
	}
	srv.Close()
	if err := pw.Close(); err != nil {
		t.Fatal(err)
	}

	pw, err = paywall.New(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer pw.Close()
	srv = httptest.NewServer(pw.Wrap(mux))
	defer srv.Close()
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/items/7", strings.NewReader(`{}`))
	req.Header.Set("PAYMENT-SIGNATURE", header)
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(body) != `{"item":"7"}` || runs != 1 || len(local.Settlements()) != 1 {
		t.Fatalf("retry after a restart: %d %s, %d runs, %d settlements", resp.StatusCode, body, runs, len(local.Settlements()))
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

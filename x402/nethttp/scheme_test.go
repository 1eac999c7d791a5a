package nethttp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/seed1284c1d2/svc/internal/schemetest"
	"github.com/seed1284c1d2/svc/x402"
	"github.com/seed1284c1d2/svc/x402/client"
	"github.com/seed1284c1d2/svc/x402/engine"
	exactserver "github.com/seed1284c1d2/svc/x402/exact/server"
	"github.com/seed1284c1d2/svc/x402/facilitator"
	"github.com/seed1284c1d2/svc/x402/nethttp"
)

// TestSecondScheme sells one route with the exact scheme and the toy
// ticket scheme of this test, registered with the engine in the
// operator's order: the 402 lists both entries in that order; a ticket of
// a stale sequence gets a corrective 402 with the scheme's state; a good
// ticket is checked, journaled and settled by the scheme (its own
// payment-response extras), and its retry replays the recorded answer; a
// ticket presented for another request is refused; an exact payment still
// pays the same route, and a client paying with the ticket scheme alone
// picks the ticket entry.
func TestSecondScheme(t *testing.T) {
	local, err := facilitator.NewLocal(facilitator.LocalConfig{})
	if err != nil {
		t.Fatal(err)
	}
	exact := schemetest.Exact(t, exactserver.Config{Facilitator: local, SkipFacilitatorVerify: true, Deduplicates: true})[0]
	tickets := schemetest.NewTickets()
	journal := engine.NewMemoryJournal()
	eng, err := engine.New(engine.Config{Schemes: []x402.ServerScheme{tickets, exact}, Journal: journal, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	offer, err := eng.NewOffer("GET /tool", "tool", x402.Route{Price: price, PayTo: payTo})
	if err != nil {
		t.Fatal(err)
	}
	if a := offer.PaymentRequired.Accepts; len(a) != 2 || a[0].Scheme != schemetest.Name || a[1].Scheme != x402.SchemeExact || a[0].Amount != a[1].Amount {
		t.Fatalf("accepts: %+v", a)
	}
	mw, err := nethttp.New(nethttp.Config{Engine: eng, Logger: slog.New(slog.DiscardHandler),
		Offer: func(*http.Request) (*engine.Offer, bool) { return offer, true }})
	if err != nil {
		t.Fatal(err)
	}
	var runs atomic.Int64
	srv := httptest.NewServer(mw.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := runs.Add(1)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"run":%d,"q":%q}`, n, r.URL.Query().Get("q"))
	})))
	defer srv.Close()

	get := func(query string, p *x402.PaymentPayload) (*http.Response, string) {
		t.Helper()
		req, err := http.NewRequest(http.MethodGet, srv.URL+"/tool?q="+query, nil)
		if err != nil {
			t.Fatal(err)
		}
		if p != nil {
			h, err := x402.EncodeHeader(*p)
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set(x402.HeaderPaymentSignature, h)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return resp, string(body)
	}

	resp, _ := get("a", nil)
	pr, err := client.PaymentRequiredOf(resp)
	if err != nil || resp.StatusCode != http.StatusPaymentRequired || len(pr.Accepts) != 2 || pr.Accepts[0].Scheme != schemetest.Name {
		t.Fatalf("402: %d %+v %v", resp.StatusCode, pr, err)
	}
	offered := pr.Accepts[0]

	stale := tickets.Sign("alice", 7, offered)
	resp, _ = get("a", &stale)
	pr, err = client.PaymentRequiredOf(resp)
	if err != nil || resp.StatusCode != http.StatusPaymentRequired || pr.Error != schemetest.ReasonStale || pr.Accepts[0].Extra[schemetest.ExtraNext] != float64(0) ||
		pr.Accepts[1].Scheme != x402.SchemeExact {
		t.Fatalf("stale ticket: %d %+v %v", resp.StatusCode, pr, err)
	}
	forged := tickets.Sign("alice", 0, offered)
	forged.Payload = json.RawMessage(`{"payer":"alice","seq":0,"mac":"00"}`)
	if resp, _ = get("a", &forged); resp.StatusCode != http.StatusPaymentRequired {
		t.Fatalf("forged ticket: %d", resp.StatusCode)
	}
	if runs.Load() != 0 || tickets.Settles() != 0 {
		t.Fatalf("refused tickets ran %d times, settled %d", runs.Load(), tickets.Settles())
	}

	good := tickets.Sign("alice", 0, offered)
	resp, body := get("a", &good)
	sr, err := client.PaymentResponse(resp)
	if err != nil || resp.StatusCode != http.StatusOK || body != `{"run":1,"q":"a"}` || !sr.Success || sr.Payer != "alice" ||
		sr.Network != x402.NetworkBase || sr.Amount != offered.Amount || sr.Extra["charged"] != offered.Amount || sr.Extra[schemetest.ExtraNext] != float64(1) {
		t.Fatalf("paid with a ticket: %d %s %+v %v", resp.StatusCode, body, sr, err)
	}
	rec, err := journal.Get(context.Background(), schemetest.Key("alice", 0))
	if err != nil || rec.State != engine.StateSettled || rec.Payer != "alice" || rec.Nonce != "0" || rec.Amount != offered.Amount {
		t.Fatalf("journal row: %+v %v", rec, err)
	}
	if resp, again := get("a", &good); resp.StatusCode != http.StatusOK || again != body {
		t.Fatalf("retry: %d %s", resp.StatusCode, again)
	}
	if resp, other := get("b", &good); resp.StatusCode != http.StatusPaymentRequired || runs.Load() != 1 || tickets.Settles() != 1 {
		t.Fatalf("ticket for another request: %d %s (runs %d, settles %d)", resp.StatusCode, other, runs.Load(), tickets.Settles())
	}

	// The exact entry of the same offer pays as ever.
	signer, err := client.NewSigner(testKey(t))
	if err != nil {
		t.Fatal(err)
	}
	resp, err = client.New(signer).Get(srv.URL + "/tool?q=c")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if sr, err := client.PaymentResponse(resp); err != nil || resp.StatusCode != http.StatusOK || !sr.Success || len(local.Settlements()) != 1 {
		t.Fatalf("paid with exact: %d %+v %v", resp.StatusCode, sr, err)
	}

	// A client paying with the ticket scheme alone picks its entry.
	resp, err = client.New(nil, client.WithSchemes(tickets.Client("alice", 1))).Get(srv.URL + "/tool?q=d")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if sr, err := client.PaymentResponse(resp); err != nil || resp.StatusCode != http.StatusOK || sr.Extra[schemetest.ExtraNext] != float64(2) {
		t.Fatalf("paid by the ticket client: %d %+v %v", resp.StatusCode, sr, err)
	}

	// The operator's order is the offer's.
	swapped, err := engine.New(engine.Config{Schemes: []x402.ServerScheme{exact, tickets}})
	if err != nil {
		t.Fatal(err)
	}
	o, err := swapped.NewOffer("GET /tool", "tool", x402.Route{Price: price, PayTo: payTo}, x402.Route{Price: price, PayTo: payTo, Network: x402.NetworkBaseSepolia})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, a := range o.PaymentRequired.Accepts {
		got = append(got, a.Scheme+"@"+a.Network)
	}
	if want := []string{"exact@eip155:8453", "ticket@eip155:8453", "exact@eip155:84532"}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("accepts %v, want %v", got, want)
	}
}

package nethttp_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/seed1284c1d2/svc/x402"
	"github.com/seed1284c1d2/svc/x402/client"
	"github.com/seed1284c1d2/svc/x402/engine"
	exactserver "github.com/seed1284c1d2/svc/x402/exact/server"
	"github.com/seed1284c1d2/svc/x402/facilitator"
	"github.com/seed1284c1d2/svc/x402/internal/x402test"
	"github.com/seed1284c1d2/svc/x402/nethttp"
)

// ticketScheme is a toy payment scheme of this test only: a payer spends
// numbered tickets, each an HMAC of (payer, sequence, amount, payTo) under
// a key the payer shares with the server. The server checks a ticket
// locally, settles it by recording the charge in memory (no facilitator,
// nothing on chain), answers with its own payment-response extras (the
// payer's next sequence), and refuses a ticket of a stale sequence with a
// corrective offer carrying the next one. It proves that a scheme plugs
// into the engine without the engine knowing it.
type ticketScheme struct {
	key []byte

	mu      sync.Mutex
	next    map[string]int    // payer → next sequence
	charged map[string]string // payment key → amount
	settles atomic.Int64
}

// ticket is the ticket scheme's payload.
type ticket struct {
	Payer string `json:"payer"`
	Seq   int    `json:"seq"`
	MAC   string `json:"mac"`
}

const (
	ticketName        = "ticket"
	ticketStale       = "invalid_ticket_stale_sequence"
	ticketBadMAC      = "invalid_ticket_mac"
	ticketExtraNext   = "nextSeq"
	ticketExtraIssuer = "issuer"
)

func newTicketScheme() *ticketScheme {
	return &ticketScheme{key: []byte("toy ticket key"), next: map[string]int{}, charged: map[string]string{}}
}

func (s *ticketScheme) Scheme() string     { return ticketName }
func (s *ticketScheme) Networks() []string { return []string{x402.NetworkBase} }

func (s *ticketScheme) Requirements(rt x402.Route) (x402.PaymentRequirements, error) {
	req, err := rt.Requirements() // the price, asset and payTo of the route
	if err != nil {
		return req, err
	}
	req.Scheme, req.MaxTimeoutSeconds = ticketName, 60
	req.Extra = map[string]any{ticketExtraIssuer: "toy"}
	return req, nil
}

func (s *ticketScheme) mac(payer string, seq int, req x402.PaymentRequirements) string {
	m := hmac.New(sha256.New, s.key)
	fmt.Fprintf(m, "%s|%d|%s|%s", payer, seq, req.Amount, req.PayTo)
	return hex.EncodeToString(m.Sum(nil))
}

// sign builds the payment of ticket seq of payer for req.
func (s *ticketScheme) sign(t testing.TB, payer string, seq int, req x402.PaymentRequirements) x402.PaymentPayload {
	t.Helper()
	raw, err := json.Marshal(ticket{Payer: payer, Seq: seq, MAC: s.mac(payer, seq, req)})
	if err != nil {
		t.Fatal(err)
	}
	return x402.PaymentPayload{X402Version: 2, Accepted: req, Payload: raw}
}

type ticketRefusal struct{ reason string }

func (e ticketRefusal) Error() string         { return "ticket refused: " + e.reason }
func (e ticketRefusal) RefusalReason() string { return e.reason }

func (s *ticketScheme) Check(_ context.Context, p x402.PaymentPayload, req x402.PaymentRequirements) (x402.Payment, error) {
	var tk ticket
	if err := json.Unmarshal(p.Payload, &tk); err != nil || !hmac.Equal([]byte(tk.MAC), []byte(s.mac(tk.Payer, tk.Seq, req))) {
		return x402.Payment{}, ticketRefusal{ticketBadMAC}
	}
	pm := x402.Payment{Key: ticketName + "/" + tk.Payer + "/" + strconv.Itoa(tk.Seq), Payer: tk.Payer, ID: strconv.Itoa(tk.Seq), Amount: req.Amount}
	s.mu.Lock()
	next := s.next[tk.Payer]
	_, spent := s.charged[pm.Key]
	s.mu.Unlock()
	if tk.Seq != next && !spent { // a spent ticket is the journal's: replayed or refused there
		corrected := req
		corrected.Extra = map[string]any{ticketExtraIssuer: "toy", ticketExtraNext: next}
		return pm, &x402.CorrectiveRefusal{Reason: ticketStale, Message: "the next ticket is " + strconv.Itoa(next), Accepted: corrected}
	}
	return pm, nil
}

func (s *ticketScheme) Verify(_ context.Context, _ x402.PaymentPayload, _ x402.PaymentRequirements, pm x402.Payment) (x402.VerifyResponse, error) {
	return x402.VerifyResponse{IsValid: true, Payer: pm.Payer}, nil
}

// Settle records the charge: the scheme's settlement is local.
func (s *ticketScheme) Settle(_ context.Context, p x402.PaymentPayload, _ x402.PaymentRequirements, pm x402.Payment) (x402.Settlement, error) {
	s.settles.Add(1)
	var tk ticket
	if err := json.Unmarshal(p.Payload, &tk); err != nil {
		return x402.Settlement{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.charged[pm.Key] = pm.Amount
	s.next[tk.Payer] = max(s.next[tk.Payer], tk.Seq+1)
	return x402.Settlement{Status: x402.Settled, Response: x402.SettleResponse{
		Extra: map[string]any{"charged": pm.Amount, ticketExtraNext: s.next[tk.Payer]},
	}}, nil
}

func (s *ticketScheme) Resolve(_ context.Context, p x402.PaymentPayload, req x402.PaymentRequirements, payer string) x402.Settlement {
	pm, err := s.Check(context.Background(), p, req)
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.charged[pm.Key]; err == nil && ok {
		return x402.Settlement{Status: x402.Settled, Response: x402.SettleResponse{Payer: payer}}
	}
	return x402.Settlement{Status: x402.Released, Reason: "never charged"}
}

func (s *ticketScheme) SameProof(recorded, presented x402.PaymentPayload) bool {
	var a, b ticket
	return json.Unmarshal(recorded.Payload, &a) == nil && json.Unmarshal(presented.Payload, &b) == nil && a.MAC == b.MAC
}

// ticketClient is the ticket scheme's part in a paying client.
type ticketClient struct {
	scheme *ticketScheme
	payer  string
	seq    int
	t      testing.TB
}

func (c *ticketClient) Scheme() string     { return ticketName }
func (c *ticketClient) Networks() []string { return []string{x402.NetworkBase} }

func (c *ticketClient) Payload(_ context.Context, req x402.PaymentRequirements, _ time.Time, _ time.Duration) (json.RawMessage, error) {
	p := c.scheme.sign(c.t, c.payer, c.seq, req)
	c.seq++
	return p.Payload, nil
}

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
	exact := x402test.Exact(t, exactserver.Config{Facilitator: local, SkipFacilitatorVerify: true, Deduplicates: true})[0]
	tickets := newTicketScheme()
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
	if a := offer.PaymentRequired.Accepts; len(a) != 2 || a[0].Scheme != ticketName || a[1].Scheme != x402.SchemeExact || a[0].Amount != a[1].Amount {
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
	if err != nil || resp.StatusCode != http.StatusPaymentRequired || len(pr.Accepts) != 2 || pr.Accepts[0].Scheme != ticketName {
		t.Fatalf("402: %d %+v %v", resp.StatusCode, pr, err)
	}
	offered := pr.Accepts[0]

	stale := tickets.sign(t, "alice", 7, offered)
	resp, _ = get("a", &stale)
	pr, err = client.PaymentRequiredOf(resp)
	if err != nil || resp.StatusCode != http.StatusPaymentRequired || pr.Error != ticketStale || pr.Accepts[0].Extra[ticketExtraNext] != float64(0) ||
		pr.Accepts[1].Scheme != x402.SchemeExact {
		t.Fatalf("stale ticket: %d %+v %v", resp.StatusCode, pr, err)
	}
	forged := tickets.sign(t, "alice", 0, offered)
	forged.Payload = json.RawMessage(`{"payer":"alice","seq":0,"mac":"00"}`)
	if resp, _ = get("a", &forged); resp.StatusCode != http.StatusPaymentRequired {
		t.Fatalf("forged ticket: %d", resp.StatusCode)
	}
	if runs.Load() != 0 || tickets.settles.Load() != 0 {
		t.Fatalf("refused tickets ran %d times, settled %d", runs.Load(), tickets.settles.Load())
	}

	good := tickets.sign(t, "alice", 0, offered)
	resp, body := get("a", &good)
	sr, err := client.PaymentResponse(resp)
	if err != nil || resp.StatusCode != http.StatusOK || body != `{"run":1,"q":"a"}` || !sr.Success || sr.Payer != "alice" ||
		sr.Network != x402.NetworkBase || sr.Amount != offered.Amount || sr.Extra["charged"] != offered.Amount || sr.Extra[ticketExtraNext] != float64(1) {
		t.Fatalf("paid with a ticket: %d %s %+v %v", resp.StatusCode, body, sr, err)
	}
	rec, err := journal.Get(context.Background(), "ticket/alice/0")
	if err != nil || rec.State != engine.StateSettled || rec.Payer != "alice" || rec.Nonce != "0" || rec.Amount != offered.Amount {
		t.Fatalf("journal row: %+v %v", rec, err)
	}
	if resp, again := get("a", &good); resp.StatusCode != http.StatusOK || again != body {
		t.Fatalf("retry: %d %s", resp.StatusCode, again)
	}
	if resp, other := get("b", &good); resp.StatusCode != http.StatusPaymentRequired || runs.Load() != 1 || tickets.settles.Load() != 1 {
		t.Fatalf("ticket for another request: %d %s (runs %d, settles %d)", resp.StatusCode, other, runs.Load(), tickets.settles.Load())
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
	tc := &ticketClient{scheme: tickets, payer: "alice", seq: 1, t: t}
	resp, err = client.New(nil, client.WithSchemes(tc)).Get(srv.URL + "/tool?q=d")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if sr, err := client.PaymentResponse(resp); err != nil || resp.StatusCode != http.StatusOK || sr.Extra[ticketExtraNext] != float64(2) {
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

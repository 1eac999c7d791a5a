package nethttp_test

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/crypto"

	"github.com/seed1284c1d2/svc/internal/schemetest"
	"github.com/seed1284c1d2/svc/x402"
	"github.com/seed1284c1d2/svc/x402/engine"
	"github.com/seed1284c1d2/svc/x402/exact"
	exactserver "github.com/seed1284c1d2/svc/x402/exact/server"
	"github.com/seed1284c1d2/svc/x402/facilitator"
	"github.com/seed1284c1d2/svc/x402/nethttp"
)

// Fixtures of the binding's tests.
const (
	// keyHex is the payer's key (a public test key).
	keyHex = "ac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80"
	// payer is its address.
	payer = "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266"
	// payTo receives the payments.
	payTo = "0x70997970C51812dc3A010C7d01b50e0d17dc79C8"
	// other is an address that is not the payTo.
	other = "0x000000000000000000000000000000000000dEaD"
	// price is the test route's price (2500 atomic units of USDC).
	price  = "0.0025"
	amount = "2500"
	// usdcBase is the USDC contract on Base.
	usdcBase = "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913"
)

func testKey(t testing.TB) *ecdsa.PrivateKey {
	t.Helper()
	k, err := crypto.HexToECDSA(keyHex)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// testOffer is the offer of the paid test route.
func testOffer(t testing.TB) *engine.Offer {
	t.Helper()
	return schemetest.ExactOffer(t, "GET /tool", "tool", x402.Route{
		Price:    price,
		PayTo:    payTo,
		Resource: x402.ResourceInfo{Description: "test tool", MimeType: "application/json"},
		Bazaar: &x402.BazaarInfo{
			Method:        "GET",
			InputExample:  map[string]any{"x": "1"},
			OutputExample: map[string]any{"ok": true},
		},
	})
}

// fakeFacilitator wraps a facilitator, counts the calls and injects
// answers.
type fakeFacilitator struct {
	inner    x402.Facilitator
	verifies atomic.Int64
	settles  atomic.Int64 // successful settlements of the inner facilitator

	mu           sync.Mutex
	verifyResp   *x402.VerifyResponse
	verifyErr    error
	settleResp   *x402.SettleResponse
	settleErr    error
	settleGate   chan struct{} // when set, Settle waits for it to close
	settleEnter  chan struct{} // when set, Settle closes it on entry
	settleReturn chan struct{} // when set, Settle closes it when done
}

func (f *fakeFacilitator) Verify(ctx context.Context, p x402.PaymentPayload, r x402.PaymentRequirements) (x402.VerifyResponse, error) {
	f.verifies.Add(1)
	f.mu.Lock()
	resp, err := f.verifyResp, f.verifyErr
	f.mu.Unlock()
	if err != nil {
		return x402.VerifyResponse{}, err
	}
	if resp != nil {
		return *resp, nil
	}
	return f.inner.Verify(ctx, p, r)
}

func (f *fakeFacilitator) Settle(ctx context.Context, p x402.PaymentPayload, r x402.PaymentRequirements) (x402.SettleResponse, error) {
	f.mu.Lock()
	resp, err, gate, enter, done := f.settleResp, f.settleErr, f.settleGate, f.settleEnter, f.settleReturn
	f.mu.Unlock()
	if done != nil {
		defer close(done)
	}
	if enter != nil {
		close(enter)
	}
	if gate != nil {
		select {
		case <-gate:
		case <-ctx.Done():
			return x402.SettleResponse{}, ctx.Err()
		}
	}
	if err != nil {
		return x402.SettleResponse{}, err
	}
	if resp != nil {
		return *resp, nil
	}
	sr, serr := f.inner.Settle(ctx, p, r)
	if serr == nil && sr.Success {
		f.settles.Add(1)
	}
	return sr, serr
}

func (f *fakeFacilitator) Supported(ctx context.Context) (x402.SupportedResponse, error) {
	return f.inner.Supported(ctx)
}

func (f *fakeFacilitator) set(fn func(f *fakeFacilitator)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fn(f)
}

// env is a paid test server on 127.0.0.1: the binding over an engine with
// a MemoryJournal and a facilitator.Local (behind fakeFacilitator).
type env struct {
	srv     *httptest.Server
	handler http.Handler // the wrapped handler, for direct calls
	fac     *fakeFacilitator
	local   *facilitator.Local
	journal engine.Journal
	engine  *engine.Engine
	offer   atomic.Pointer[engine.Offer] // the paid route's offer
	key     *ecdsa.PrivateKey
	// onRequest, when set, sees every request the server gets first.
	onRequest atomic.Pointer[func(r *http.Request)]
	runs      atomic.Int64 // paid handler runs
	failRuns  atomic.Int64 // the handler answers failStatus (503 when 0) while > 0
	failCode  atomic.Int64

	mu     sync.Mutex
	events []engine.Event
}

// option adjusts the engine's and the binding's configuration of an env.
type option func(ec *engine.Config, mc *nethttp.Config)

// tool is the paid handler: GET /tool?x=… answers {"ok":true,"x":…,
// "run":n,"body":…}; /big writes 2 KiB; /panic panics.
func (e *env) tool(w http.ResponseWriter, r *http.Request) {
	n := e.runs.Add(1)
	if e.failRuns.Load() > 0 {
		e.failRuns.Add(-1)
		w.Header().Set("Content-Type", "application/problem+json")
		code := int(e.failCode.Load())
		if code == 0 {
			code = http.StatusServiceUnavailable
		}
		w.WriteHeader(code)
		_, _ = io.WriteString(w, `{"title":"upstream down"}`)
		return
	}
	switch r.URL.Path {
	case "/big":
		_, _ = w.Write(bytes.Repeat([]byte("a"), 2048))
		return
	case "/panic":
		panic(http.ErrAbortHandler)
	}
	body, _ := io.ReadAll(r.Body)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Tool", "yes")
	_ = json.NewEncoder(w).Encode(map[string]any{"ok": true, "x": r.URL.Query().Get("x"), "run": n, "body": string(body)})
}

func newEnv(t *testing.T, opts ...option) *env {
	t.Helper()
	local, err := facilitator.NewLocal(facilitator.LocalConfig{})
	if err != nil {
		t.Fatal(err)
	}
	e := &env{
		fac:     &fakeFacilitator{inner: local},
		local:   local,
		journal: engine.NewMemoryJournal(),
		key:     testKey(t),
	}
	e.offer.Store(testOffer(t))
	logger := slog.New(slog.DiscardHandler)
	ec := engine.Config{
		Schemes: schemetest.Exact(t, exactserver.Config{Facilitator: e.fac}),
		Journal: e.journal,
		Logger:  logger,
		Observe: func(ev engine.Event) {
			e.mu.Lock()
			e.events = append(e.events, ev)
			e.mu.Unlock()
		},
	}
	mc := nethttp.Config{
		Offer: func(r *http.Request) (*engine.Offer, bool) {
			if r.URL.Path == "/free" {
				return nil, false
			}
			return e.offer.Load(), true
		},
		Logger:           logger,
		MaxResponseBytes: 1024,
		MaxRequestBytes:  4096,
	}
	for _, o := range opts {
		o(&ec, &mc)
	}
	if ec.Journal != nil {
		e.journal = ec.Journal
	}
	e.engine, err = engine.New(ec)
	if err != nil {
		t.Fatal(err)
	}
	mc.Engine = e.engine
	mw, err := nethttp.New(mc)
	if err != nil {
		t.Fatal(err)
	}
	e.handler = mw.Wrap(http.HandlerFunc(e.tool))
	e.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if f := e.onRequest.Load(); f != nil {
			(*f)(r)
		}
		e.handler.ServeHTTP(w, r)
	}))
	t.Cleanup(e.srv.Close)
	return e
}

func (e *env) req() x402.PaymentRequirements { return e.offer.Load().PaymentRequired.Accepts[0] }

// settled returns the journal's settled rows.
func (e *env) settled(t testing.TB) []engine.Record {
	t.Helper()
	recs, err := e.journal.List(context.Background(), engine.StateSettled, 1000)
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

// observed returns the Observe events of the given kind.
func (e *env) observed(kind engine.OutcomeKind) []engine.Event {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []engine.Event
	for _, ev := range e.events {
		if ev.Kind == kind {
			out = append(out, ev)
		}
	}
	return out
}

// record returns the journal row of a signed payment.
func (e *env) record(t testing.TB, p exact.ExactEVMPayload) engine.Record {
	t.Helper()
	key := exact.NonceKey(e.req().Network, e.req().Asset, p.Authorization.From, p.Authorization.Nonce)
	rec, err := e.journal.Get(context.Background(), key)
	if err != nil {
		t.Fatalf("journal row of the payment: %v", err)
	}
	return rec
}

// result is a response read in full.
type result struct {
	status int
	header http.Header
	body   []byte
}

func (r result) json(t testing.TB) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.body, &m); err != nil {
		t.Fatalf("body is not a JSON object: %v: %s", err, r.body)
	}
	return m
}

// paymentRequired decodes PAYMENT-REQUIRED, failing if absent.
func (r result) paymentRequired(t testing.TB) x402.PaymentRequired {
	t.Helper()
	h := r.header.Get(x402.HeaderPaymentRequired)
	if h == "" {
		t.Fatalf("no PAYMENT-REQUIRED header (status %d, body %s)", r.status, r.body)
	}
	pr, err := x402.DecodePaymentRequired(h)
	if err != nil {
		t.Fatalf("PAYMENT-REQUIRED: %v", err)
	}
	return pr
}

func (r result) settlement(t testing.TB, name string) x402.SettleResponse {
	t.Helper()
	h := r.header.Get(name)
	if h == "" {
		t.Fatalf("no %s header (status %d, body %s)", name, r.status, r.body)
	}
	sr, err := x402.DecodeSettleResponse(h)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return sr
}

// fetch sends a request and reads its answer in full.
func fetch(method, url string, header map[string]string, body string) (result, error) {
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		return result{}, err
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return result{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return result{}, fmt.Errorf("reading the answer: %w", err)
	}
	return result{status: resp.StatusCode, header: resp.Header, body: b}, nil
}

// do is fetch on the test's goroutine, failing the test on an error.
func do(t testing.TB, method, url string, header map[string]string, body string) result {
	t.Helper()
	r, err := fetch(method, url, header, body)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// goFetch runs fetch on another goroutine; its result (an error as status
// 0 and the error text as body) comes on the channel.
func goFetch(method, url string, header map[string]string, body string) <-chan result {
	c := make(chan result, 1)
	go func() {
		r, err := fetch(method, url, header, body)
		if err != nil {
			r = result{body: []byte(err.Error())}
		}
		c <- r
	}()
	return c
}

// sign signs a payment of req with key, valid from now on.
func sign(t testing.TB, key *ecdsa.PrivateKey, req x402.PaymentRequirements, now time.Time) exact.ExactEVMPayload {
	t.Helper()
	p, err := exact.NewPayload(key, req, now, 0)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// header encodes a v2 PAYMENT-SIGNATURE value.
func header(t testing.TB, accepted x402.PaymentRequirements, p exact.ExactEVMPayload) string {
	t.Helper()
	raw, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	v, err := x402.EncodeHeader(x402.PaymentPayload{X402Version: 2, Accepted: accepted, Payload: raw})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// pay signs a fresh valid payment for the env's route.
func (e *env) pay(t testing.TB) string {
	t.Helper()
	return header(t, e.req(), sign(t, e.key, e.req(), time.Now()))
}

func sig(v string) map[string]string { return map[string]string{x402.HeaderPaymentSignature: v} }

// expectRefused checks a refusal: a 402 whose PAYMENT-REQUIRED and body
// carry reason, or a problem of status with reason; the handler ran
// runsBefore times in all, and every settlement at the facilitator is in
// the journal.
func expectRefused(t *testing.T, e *env, r result, status int, reason string, runsBefore int64) {
	t.Helper()
	if r.status != status {
		t.Fatalf("status %d, want %d; body %s", r.status, status, r.body)
	}
	if status == http.StatusPaymentRequired {
		if pr := r.paymentRequired(t); pr.Error != reason {
			t.Fatalf("PAYMENT-REQUIRED error %q, want %q", pr.Error, reason)
		}
		if got := r.json(t)["error"]; got != reason {
			t.Fatalf("body error %v, want %q", got, reason)
		}
	} else {
		if r.header.Get(x402.HeaderPaymentRequired) != "" {
			t.Fatalf("status %d must not carry PAYMENT-REQUIRED", status)
		}
		if got := r.json(t)["reason"]; got != reason {
			t.Fatalf("problem reason %v, want %q; body %s", got, reason, r.body)
		}
	}
	if n := e.runs.Load(); n != runsBefore {
		t.Fatalf("the paid handler ran (%d runs, want %d)", n, runsBefore)
	}
	if n, s := len(e.settled(t)), e.fac.settles.Load(); int64(n) != s {
		t.Fatalf("%d settled rows for %d settlements", n, s)
	}
}

func exposes(t *testing.T, h http.Header) {
	t.Helper()
	v := h.Get("Access-Control-Expose-Headers")
	for _, name := range []string{"PAYMENT-REQUIRED", "PAYMENT-RESPONSE", "X-PAYMENT-RESPONSE"} {
		if !strings.Contains(v, name) {
			t.Fatalf("Access-Control-Expose-Headers %q lacks %s", v, name)
		}
	}
}

// TestUnpaid checks the 402 of a request without payment: the
// PAYMENT-REQUIRED header decodes to the offer's v2 terms with the full
// request URL, and the JSON body carries the v1 answer.
func TestUnpaid(t *testing.T) {
	e := newEnv(t)
	r := do(t, "GET", e.srv.URL+"/tool?x=1&a=2", nil, "")
	if r.status != http.StatusPaymentRequired {
		t.Fatalf("status %d, want 402", r.status)
	}
	pr := r.paymentRequired(t)
	if pr.X402Version != 2 || pr.Error != engine.ReasonPaymentRequired || len(pr.Accepts) != 1 {
		t.Fatalf("PAYMENT-REQUIRED = %+v", pr)
	}
	if want := e.srv.URL + "/tool?x=1&a=2"; pr.Resource.URL != want {
		t.Fatalf("resource.url %q, want %q", pr.Resource.URL, want)
	}
	a := pr.Accepts[0]
	if a.Scheme != "exact" || a.Network != "eip155:8453" || a.Amount != amount || a.PayTo != payTo ||
		a.Asset != usdcBase || a.Extra["name"] != "USD Coin" || a.Extra["version"] != "2" {
		t.Fatalf("accepts[0] = %+v", a)
	}
	if _, ok := pr.Extensions[x402.BazaarExtensionKey]; !ok {
		t.Fatalf("bazaar extension missing: %v", pr.Extensions)
	}
	if ct := r.header.Get("Content-Type"); ct != "application/json" {
		t.Fatalf("Content-Type %q", ct)
	}
	if cc := r.header.Get("Cache-Control"); cc != "no-store" {
		t.Fatalf("Cache-Control %q", cc)
	}
	exposes(t, r.header)

	var body x402.PaymentRequiredV1
	if err := json.Unmarshal(r.body, &body); err != nil {
		t.Fatal(err)
	}
	if body.X402Version != 1 || body.Error != engine.ReasonPaymentRequired || len(body.Accepts) != 1 {
		t.Fatalf("body = %s", r.body)
	}
	v1 := body.Accepts[0]
	if v1.Network != "base" || v1.MaxAmountRequired != amount || v1.Resource != pr.Resource.URL ||
		v1.PayTo != payTo || v1.Asset != a.Asset || v1.Description != "test tool" || v1.MimeType != "application/json" ||
		v1.MaxTimeoutSeconds != a.MaxTimeoutSeconds || v1.Extra["name"] != "USD Coin" || v1.OutputSchema["input"] == nil {
		t.Fatalf("v1 accepts[0] = %+v", v1)
	}
	// The v1 document, and a note for a person reading it: where the v2
	// offer is.
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(r.body, &keys); err != nil || len(keys) != 4 || string(keys["x402v2"]) != strconv.Quote(nethttp.V2Note) {
		t.Fatalf("body members %v, want x402Version, error, accepts and x402v2 only: %s", keys, r.body)
	}
	if e.runs.Load() != 0 || e.fac.verifies.Load() != 0 {
		t.Fatal("an unpaid request ran the handler or reached the facilitator")
	}

	// Free routes and CORS preflights go straight to the handler.
	if r := do(t, "GET", e.srv.URL+"/free", nil, ""); r.status != 200 || r.header.Get(x402.HeaderPaymentRequired) != "" {
		t.Fatalf("free route: %d", r.status)
	}
	if r := do(t, "OPTIONS", e.srv.URL+"/tool", nil, ""); r.status != 200 || r.header.Get(x402.HeaderPaymentRequired) != "" {
		t.Fatalf("OPTIONS: %d", r.status)
	}
	if e.runs.Load() != 2 {
		t.Fatalf("runs %d, want 2 (free route and OPTIONS)", e.runs.Load())
	}
}

// TestOfferWithResourceURL checks that an offer whose resource URL is set
// is answered with it, whatever the request's URL (the encoded-once path).
func TestOfferWithResourceURL(t *testing.T) {
	e := newEnv(t)
	o := testOffer(t)
	o.PaymentRequired.Resource.URL = "https://api.example.com/tool"
	e.offer.Store(o)
	for range 2 {
		r := do(t, "GET", e.srv.URL+"/tool?x=1", nil, "")
		pr := r.paymentRequired(t)
		if r.status != 402 || pr.Resource.URL != "https://api.example.com/tool" || pr.Error != engine.ReasonPaymentRequired {
			t.Fatalf("%d %+v", r.status, pr)
		}
		if cl := r.header.Get("Content-Length"); cl != fmt.Sprint(len(r.body)) {
			t.Fatalf("Content-Length %q for %d bytes", cl, len(r.body))
		}
	}
}

// TestPublicBaseURL checks that resource.url uses the configured public
// base URL.
func TestPublicBaseURL(t *testing.T) {
	e := newEnv(t, func(_ *engine.Config, c *nethttp.Config) { c.PublicBaseURL = "https://api.example.com/" })
	r := do(t, "GET", e.srv.URL+"/tool?x=1", nil, "")
	if got := r.paymentRequired(t).Resource.URL; got != "https://api.example.com/tool?x=1" {
		t.Fatalf("resource.url %q", got)
	}
}

type statusErr struct{ status int }

func (e statusErr) Error() string   { return fmt.Sprintf("preflight says %d", e.status) }
func (e statusErr) HTTPStatus() int { return e.status }

// TestPreflight checks that Preflight runs before any 402 (and before a
// payment is even looked at), that its errors are answered as
// problem+json with the error's status, and that the handler still gets
// the body Preflight read.
func TestPreflight(t *testing.T) {
	var seen atomic.Value
	e := newEnv(t, func(_ *engine.Config, c *nethttp.Config) {
		c.Preflight = func(r *http.Request) error {
			b, _ := io.ReadAll(r.Body)
			seen.Store(string(b))
			switch r.URL.Query().Get("x") {
			case "bad":
				return errors.New("x: must be a number")
			case "down":
				return statusErr{http.StatusServiceUnavailable}
			}
			return nil
		}
	})
	for _, tc := range []struct {
		x      string
		status int
	}{{"bad", 400}, {"down", 503}} {
		// With and without a payment: the preflight answers first.
		for _, h := range []map[string]string{nil, sig(e.pay(t))} {
			r := do(t, "GET", e.srv.URL+"/tool?x="+tc.x, h, "")
			if r.status != tc.status || r.header.Get(x402.HeaderPaymentRequired) != "" {
				t.Fatalf("x=%s: status %d (PAYMENT-REQUIRED %q), want %d", tc.x, r.status, r.header.Get(x402.HeaderPaymentRequired), tc.status)
			}
			if ct := r.header.Get("Content-Type"); ct != "application/problem+json" {
				t.Fatalf("Content-Type %q", ct)
			}
			if m := r.json(t); m["status"] != float64(tc.status) || m["detail"] == "" {
				t.Fatalf("problem %s", r.body)
			}
		}
	}
	if e.fac.verifies.Load() != 0 || e.runs.Load() != 0 {
		t.Fatal("a refused preflight reached the facilitator or the handler")
	}
	if n, _ := e.journal.Counts(context.Background()); len(nonZero(n)) != 0 {
		t.Fatalf("a refused preflight reached the journal: %v", n)
	}
	// A good request: preflight read the body, and so does the handler.
	r := do(t, "POST", e.srv.URL+"/tool?x=1", sig(e.pay(t)), `{"a":1}`)
	if r.status != 200 {
		t.Fatalf("status %d: %s", r.status, r.body)
	}
	if seen.Load() != `{"a":1}` || r.json(t)["body"] != `{"a":1}` {
		t.Fatalf("preflight saw %q, handler saw %v", seen.Load(), r.json(t)["body"])
	}
}

// nonZero keeps the states with rows.
func nonZero(m map[engine.State]int64) map[engine.State]int64 {
	out := map[engine.State]int64{}
	for k, v := range m {
		if v != 0 {
			out[k] = v
		}
	}
	return out
}

// TestCustomWriteError checks that WriteError answers Preflight errors when
// set.
func TestCustomWriteError(t *testing.T) {
	e := newEnv(t, func(_ *engine.Config, c *nethttp.Config) {
		c.Preflight = func(*http.Request) error { return errors.New("nope") }
		c.WriteError = func(w http.ResponseWriter, _ *http.Request, err error) {
			w.WriteHeader(http.StatusTeapot)
			_, _ = io.WriteString(w, err.Error())
		}
	})
	r := do(t, "GET", e.srv.URL+"/tool", nil, "")
	if r.status != http.StatusTeapot || string(r.body) != "nope" {
		t.Fatalf("%d %s", r.status, r.body)
	}
}

// TestCustomWriteProblem checks that WriteProblem writes the binding's own
// error answers when set.
func TestCustomWriteProblem(t *testing.T) {
	var got nethttp.Problem
	e := newEnv(t, func(_ *engine.Config, c *nethttp.Config) {
		c.WriteProblem = func(w http.ResponseWriter, _ *http.Request, p nethttp.Problem) {
			got = p
			w.WriteHeader(p.Status)
			_, _ = io.WriteString(w, "custom "+p.Reason)
		}
	})
	r := do(t, "GET", e.srv.URL+"/tool", sig("%%%"), "")
	if r.status != 400 || string(r.body) != "custom "+nethttp.ReasonInvalidPaymentHeader || got.Reason != nethttp.ReasonInvalidPaymentHeader {
		t.Fatalf("%d %s %+v", r.status, r.body, got)
	}
}

// TestMalformedHeader checks that undecodable, oversized or wrong-version
// payment headers get 400 without PAYMENT-REQUIRED.
func TestMalformedHeader(t *testing.T) {
	e := newEnv(t)
	enc := func(s string) string { v, _ := x402.EncodeHeader(json.RawMessage(s)); return v }
	cases := []struct {
		name, header, value, reason string
	}{
		{"not base64", x402.HeaderPaymentSignature, "%%%not-base64%%%", nethttp.ReasonInvalidPaymentHeader},
		{"url-safe base64", x402.HeaderPaymentSignature, "eyJ4NDAyVmVyc2lvbiI6Mn0_-", nethttp.ReasonInvalidPaymentHeader},
		{"not JSON", x402.HeaderPaymentSignature, "aGVsbG8gd29ybGQ=", nethttp.ReasonInvalidPaymentHeader},
		{"no accepted", x402.HeaderPaymentSignature, enc(`{"x402Version":2,"payload":{}}`), nethttp.ReasonInvalidPaymentHeader},
		{"no version", x402.HeaderPaymentSignature, enc(`{"accepted":{"scheme":"exact","network":"eip155:8453"},"payload":{}}`), nethttp.ReasonInvalidPaymentHeader},
		{"version 3", x402.HeaderPaymentSignature, enc(`{"x402Version":3,"accepted":{"scheme":"exact","network":"eip155:8453"},"payload":{}}`), x402.ReasonInvalidX402Version},
		{"version 0 v1 header", x402.HeaderV1Payment, enc(`{"x402Version":0,"scheme":"exact","network":"base","payload":{}}`), x402.ReasonInvalidX402Version},
		{"oversized", x402.HeaderPaymentSignature, strings.Repeat("A", x402.MaxHeaderBytes+4), nethttp.ReasonPaymentHeaderTooLarge},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := do(t, "GET", e.srv.URL+"/tool", map[string]string{tc.header: tc.value}, "")
			expectRefused(t, e, r, http.StatusBadRequest, tc.reason, 0)
			if ct := r.header.Get("Content-Type"); ct != "application/problem+json" {
				t.Fatalf("Content-Type %q", ct)
			}
			exposes(t, r.header)
		})
	}
	if e.fac.verifies.Load() != 0 {
		t.Fatal("a malformed payment reached the facilitator")
	}
}

// TestNoMatch checks that a payment whose accepted terms differ from every
// offered requirement is a 402 "No matching payment requirements" and runs
// nothing.
func TestNoMatch(t *testing.T) {
	e := newEnv(t)
	sepolia, err := x402.Route{Price: price, PayTo: payTo, Network: x402.NetworkBaseSepolia}.Requirements()
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string]func(r *x402.PaymentRequirements){
		"amount":  func(r *x402.PaymentRequirements) { r.Amount = "1" },
		"payTo":   func(r *x402.PaymentRequirements) { r.PayTo = other },
		"network": func(r *x402.PaymentRequirements) { *r = sepolia },
		"asset":   func(r *x402.PaymentRequirements) { r.Asset = other },
		"timeout": func(r *x402.PaymentRequirements) { r.MaxTimeoutSeconds++ },
		"scheme":  func(r *x402.PaymentRequirements) { r.Scheme = "upto" },
		"extra dropped": func(r *x402.PaymentRequirements) {
			r.Extra = map[string]any{"name": "USD Coin"}
		},
		"extra changed": func(r *x402.PaymentRequirements) {
			r.Extra = map[string]any{"name": "USDC", "version": "2"}
		},
	}
	for name, mutate := range cases {
		t.Run(name, func(t *testing.T) {
			acc := e.req()
			acc.Extra = map[string]any{"name": "USD Coin", "version": "2"}
			mutate(&acc)
			p := sign(t, e.key, e.req(), time.Now())
			r := do(t, "GET", e.srv.URL+"/tool", sig(header(t, acc, p)), "")
			expectRefused(t, e, r, http.StatusPaymentRequired, engine.ReasonNoMatchingRequirements, 0)
		})
	}
	// Case-insensitive addresses and extra additions still match.
	acc := e.req()
	acc.PayTo = strings.ToLower(acc.PayTo)
	acc.Asset = "0x" + strings.ToUpper(acc.Asset[2:])
	acc.Extra = map[string]any{"name": "USD Coin", "version": "2", "clientNote": "added"}
	r := do(t, "GET", e.srv.URL+"/tool", sig(header(t, acc, sign(t, e.key, e.req(), time.Now()))), "")
	if r.status != 200 {
		t.Fatalf("case-insensitive match: status %d %s", r.status, r.body)
	}
}

// TestLocalVerifyFailures checks each local verification failure: 402
// whose error is the Verifier's reason; facilitator, handler and journal
// untouched.
func TestLocalVerifyFailures(t *testing.T) {
	e := newEnv(t)
	req := e.req()
	now := time.Now()
	otherReq := req
	otherReq.PayTo = other
	cases := []struct {
		name   string
		header func() string
		reason string
	}{
		{"value tampered after signing", func() string {
			p := sign(t, e.key, req, now)
			p.Authorization.Value = "2499"
			return header(t, req, p)
		}, exact.ReasonValueMismatch},
		{"signed for another recipient", func() string {
			return header(t, req, sign(t, e.key, otherReq, now))
		}, exact.ReasonRecipientMismatch},
		{"expired", func() string {
			return header(t, req, sign(t, e.key, req, now.Add(-2*time.Hour)))
		}, exact.ReasonValidBefore},
		{"not yet valid", func() string {
			p, err := exact.NewPayload(e.key, req, now.Add(time.Hour), 2*time.Hour)
			if err != nil {
				t.Fatal(err)
			}
			return header(t, req, p)
		}, exact.ReasonValidAfter},
		{"nonce tampered after signing", func() string {
			p := sign(t, e.key, req, now)
			p.Authorization.Nonce = "0x" + strings.Repeat("ab", 32)
			return header(t, req, p)
		}, exact.ReasonInvalidSignature},
		{"signed by someone else", func() string {
			p := sign(t, e.key, req, now)
			p.Authorization.From = other
			return header(t, req, p)
		}, exact.ReasonInvalidSignature},
		{"missing signature", func() string {
			p := sign(t, e.key, req, now)
			p.Signature = ""
			return header(t, req, p)
		}, exact.ReasonMissingSignature},
		{"short signature", func() string {
			p := sign(t, e.key, req, now)
			p.Signature = p.Signature[:20]
			return header(t, req, p)
		}, exact.ReasonSignatureFormat},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := do(t, "GET", e.srv.URL+"/tool", sig(tc.header()), "")
			expectRefused(t, e, r, http.StatusPaymentRequired, tc.reason, 0)
		})
	}
	if e.fac.verifies.Load() != 0 {
		t.Fatalf("%d facilitator verifies for locally refused payments", e.fac.verifies.Load())
	}
	if n, _ := e.journal.Counts(context.Background()); len(nonZero(n)) != 0 {
		t.Fatalf("locally refused payments reached the journal: %v", n)
	}
}

// TestFacilitatorInvalid checks that isValid:false in an HTTP 200 answer of
// a remote facilitator is a refusal (402 with its reason), the handler
// does not run, and the reservation is released.
func TestFacilitatorInvalid(t *testing.T) {
	var valid atomic.Bool
	local, err := facilitator.NewLocal(facilitator.LocalConfig{})
	if err != nil {
		t.Fatal(err)
	}
	real := facilitator.Handler(local)
	remote := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/verify" && !valid.Load() {
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"isValid":false,"invalidReason":"invalid_exact_evm_insufficient_balance","payer":"`+payer+`"}`)
			return
		}
		real.ServeHTTP(w, r)
	}))
	t.Cleanup(remote.Close)
	hf, err := facilitator.NewHTTP(facilitator.HTTPConfig{URL: remote.URL})
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, func(c *engine.Config, _ *nethttp.Config) {
		c.Schemes = schemetest.Exact(t, exactserver.Config{Facilitator: hf})
	})
	p := sign(t, e.key, e.req(), time.Now())
	h := sig(header(t, e.req(), p))
	r := do(t, "GET", e.srv.URL+"/tool", h, "")
	expectRefused(t, e, r, http.StatusPaymentRequired, "invalid_exact_evm_insufficient_balance", 0)
	if rec := e.record(t, p); rec.State != engine.StateReleased || rec.Attempts != 1 {
		t.Fatalf("after the refusal: %s, %d attempts", rec.State, rec.Attempts)
	}
	// Released: the same payment goes through once the payer is funded.
	valid.Store(true)
	r = do(t, "GET", e.srv.URL+"/tool", h, "")
	if r.status != 200 || e.runs.Load() != 1 || len(local.Settlements()) != 1 {
		t.Fatalf("after funding: status %d, runs %d, settlements %d", r.status, e.runs.Load(), len(local.Settlements()))
	}
}

// TestFacilitatorError checks that a facilitator that cannot answer /verify
// gives 502 (504 on timeout), no handler run, and a released reservation
// (not counted as an attempt).
func TestFacilitatorError(t *testing.T) {
	e := newEnv(t)
	p := sign(t, e.key, e.req(), time.Now())
	h := sig(header(t, e.req(), p))
	e.fac.set(func(f *fakeFacilitator) { f.verifyErr = errors.New("connection refused") })
	r := do(t, "GET", e.srv.URL+"/tool", h, "")
	expectRefused(t, e, r, http.StatusBadGateway, engine.ReasonFacilitatorUnavailable, 0)
	e.fac.set(func(f *fakeFacilitator) { f.verifyErr = fmt.Errorf("slow: %w", context.DeadlineExceeded) })
	r = do(t, "GET", e.srv.URL+"/tool", h, "")
	expectRefused(t, e, r, http.StatusGatewayTimeout, engine.ReasonFacilitatorUnavailable, 0)
	if rec := e.record(t, p); rec.State != engine.StateReleased || rec.Attempts != 0 {
		t.Fatalf("after the errors: %s, %d attempts", rec.State, rec.Attempts)
	}
	e.fac.set(func(f *fakeFacilitator) { f.verifyErr = nil })
	if r := do(t, "GET", e.srv.URL+"/tool", h, ""); r.status != 200 {
		t.Fatalf("after recovery: %d %s", r.status, r.body)
	}
}

// TestHandlerFailure checks that a handler answering ≥ 400 is passed on
// unchanged, nothing is settled, and the same payment then works.
func TestHandlerFailure(t *testing.T) {
	e := newEnv(t)
	h := sig(e.pay(t))
	e.failRuns.Store(1)
	r := do(t, "GET", e.srv.URL+"/tool?x=1", h, "")
	if r.status != http.StatusServiceUnavailable || string(r.body) != `{"title":"upstream down"}` ||
		r.header.Get("Content-Type") != "application/problem+json" {
		t.Fatalf("handler failure not passed on: %d %q %s", r.status, r.header.Get("Content-Type"), r.body)
	}
	if r.header.Get(x402.HeaderPaymentResponse) != "" || e.fac.settles.Load() != 0 || len(e.settled(t)) != 0 {
		t.Fatal("a failed handler was settled")
	}
	if ev := e.observed(engine.RunFailed); len(ev) != 1 {
		t.Fatalf("%d run-failed events", len(ev))
	}
	exposes(t, r.header)
	r = do(t, "GET", e.srv.URL+"/tool?x=1", h, "")
	if r.status != 200 || e.runs.Load() != 2 || e.fac.settles.Load() != 1 {
		t.Fatalf("retry with the same payment: status %d runs %d settles %d", r.status, e.runs.Load(), e.fac.settles.Load())
	}
}

// TestPayerThrottled: a payer whose paid calls keep failing (a 504 from the
// handler), each with a fresh authorization, gets 429 with Retry-After
// before the handler runs again once the engine's payer budget is spent; a
// transient failure (503) is not charged.
func TestPayerThrottled(t *testing.T) {
	const burst = 2
	e := newEnv(t, func(ec *engine.Config, _ *nethttp.Config) { ec.PayerBurst, ec.PayerRefill = burst, time.Hour })
	e.failRuns.Store(3)
	e.failCode.Store(http.StatusServiceUnavailable)
	for range 3 {
		if r := do(t, "GET", e.srv.URL+"/tool?x=1", sig(e.pay(t)), ""); r.status != http.StatusServiceUnavailable {
			t.Fatalf("transient failure: %d %s", r.status, r.body)
		}
	}
	e.failRuns.Store(100)
	e.failCode.Store(http.StatusGatewayTimeout)
	for range burst {
		if r := do(t, "GET", e.srv.URL+"/tool?x=1", sig(e.pay(t)), ""); r.status != http.StatusGatewayTimeout {
			t.Fatalf("failure: %d %s", r.status, r.body)
		}
	}
	for range 5 {
		r := do(t, "GET", e.srv.URL+"/tool?x=1", sig(e.pay(t)), "")
		expectRefused(t, e, r, http.StatusTooManyRequests, nethttp.ReasonRateLimited, 3+burst)
		if ra, err := strconv.Atoi(r.header.Get("Retry-After")); err != nil || ra < 1 {
			t.Fatalf("Retry-After %q", r.header.Get("Retry-After"))
		}
	}
	if ev := e.observed(engine.Throttled); len(ev) != 5 {
		t.Fatalf("%d throttled events", len(ev))
	}
}

// TestHandlerPanic checks that the engine turns a panicking handler into a
// failed run: a 500 problem, nothing settled, the payment released for
// another try.
func TestHandlerPanic(t *testing.T) {
	e := newEnv(t)
	p := sign(t, e.key, e.req(), time.Now())
	h := sig(header(t, e.req(), p))
	r := do(t, "GET", e.srv.URL+"/panic", h, "")
	expectRefused(t, e, r, http.StatusInternalServerError, "internal", 1)
	if strings.Contains(string(r.body), "panic") || strings.Contains(string(r.body), "abort") {
		t.Fatalf("the problem leaks the panic: %s", r.body)
	}
	if e.fac.settles.Load() != 0 || r.header.Get(x402.HeaderPaymentResponse) != "" {
		t.Fatal("settled after a panic")
	}
	if rec := e.record(t, p); rec.State != engine.StateReleased || rec.Attempts != 1 || rec.Answer != nil {
		t.Fatalf("after the panic: %s, %d attempts, answer %v", rec.State, rec.Attempts, rec.Answer)
	}
	if ev := e.observed(engine.RunFailed); len(ev) != 1 {
		t.Fatalf("%d run-failed events", len(ev))
	}
	if r := do(t, "GET", e.srv.URL+"/tool", h, ""); r.status != 200 {
		t.Fatalf("payment not released: %d %s", r.status, r.body)
	}
}

// TestResponseOverflow checks that a handler writing past MaxResponseBytes
// settles nothing and frees the payment.
func TestResponseOverflow(t *testing.T) {
	e := newEnv(t)
	h := sig(e.pay(t))
	r := do(t, "GET", e.srv.URL+"/big", h, "")
	expectRefused(t, e, r, http.StatusInternalServerError, nethttp.ReasonResponseTooLarge, 1)
	if bytes.Contains(r.body, []byte("aaaa")) {
		t.Fatal("part of the oversized answer went out")
	}
	if r := do(t, "GET", e.srv.URL+"/tool", h, ""); r.status != 200 {
		t.Fatalf("payment not released: %d %s", r.status, r.body)
	}
}

// TestRequestTooLarge checks the 413 of an oversized body, declared or
// streamed.
func TestRequestTooLarge(t *testing.T) {
	e := newEnv(t)
	r := do(t, "POST", e.srv.URL+"/tool", nil, strings.Repeat("x", 5000))
	expectRefused(t, e, r, http.StatusRequestEntityTooLarge, nethttp.ReasonRequestTooLarge, 0)
	// Without a Content-Length (chunked), with a payment.
	req, err := http.NewRequest("POST", e.srv.URL+"/tool", io.MultiReader(strings.NewReader(strings.Repeat("x", 5000))))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set(x402.HeaderPaymentSignature, e.pay(t))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	expectRefused(t, e, result{status: resp.StatusCode, header: resp.Header, body: b}, http.StatusRequestEntityTooLarge, nethttp.ReasonRequestTooLarge, 0)
	if e.fac.verifies.Load() != 0 {
		t.Fatal("an oversized request reached the facilitator")
	}
}

// TestSettleRefused checks a settlement refusal: 402 with a failing
// PAYMENT-RESPONSE, no PAYMENT-REQUIRED, the handler's output dropped; the
// refusal releases the payment (one attempt).
func TestSettleRefused(t *testing.T) {
	e := newEnv(t)
	p := sign(t, e.key, e.req(), time.Now())
	h := sig(header(t, e.req(), p))
	e.fac.set(func(f *fakeFacilitator) {
		f.settleResp = &x402.SettleResponse{Success: false, ErrorReason: "invalid_exact_evm_insufficient_balance", Network: "eip155:8453"}
	})
	r := do(t, "GET", e.srv.URL+"/tool?x=secret-output", h, "")
	if r.status != http.StatusPaymentRequired || r.header.Get(x402.HeaderPaymentRequired) != "" {
		t.Fatalf("status %d, PAYMENT-REQUIRED %q", r.status, r.header.Get(x402.HeaderPaymentRequired))
	}
	sr := r.settlement(t, x402.HeaderPaymentResponse)
	if sr.Success || sr.ErrorReason != "invalid_exact_evm_insufficient_balance" || sr.Transaction != "" ||
		sr.Network != "eip155:8453" || !strings.EqualFold(sr.Payer, payer) {
		t.Fatalf("PAYMENT-RESPONSE %+v", sr)
	}
	if bytes.Contains(r.body, []byte("secret-output")) || r.json(t)["error"] != "invalid_exact_evm_insufficient_balance" {
		t.Fatalf("body %s", r.body)
	}
	if e.runs.Load() != 1 || len(e.settled(t)) != 0 {
		t.Fatalf("runs %d settled %d", e.runs.Load(), len(e.settled(t)))
	}
	if rec := e.record(t, p); rec.State != engine.StateReleased || rec.Attempts != 1 {
		t.Fatalf("after the refusal: %s, %d attempts", rec.State, rec.Attempts)
	}
	// Released: the same payment settles once the payer is funded.
	e.fac.set(func(f *fakeFacilitator) { f.settleResp = nil })
	if r := do(t, "GET", e.srv.URL+"/tool?x=1", h, ""); r.status != 200 || e.fac.settles.Load() != 1 {
		t.Fatalf("after funding: %d %s", r.status, r.body)
	}
}

// TestSettleError checks a settlement without a decision (the facilitator
// errs): 503 settlement_pending with Retry-After and the answer withheld;
// the row stays settling, so the same payment for the same request is
// "in progress" and runs nothing.
func TestSettleError(t *testing.T) {
	e := newEnv(t)
	p := sign(t, e.key, e.req(), time.Now())
	h := sig(header(t, e.req(), p))
	e.fac.set(func(f *fakeFacilitator) { f.settleErr = errors.New("timeout talking to the chain") })
	r := do(t, "GET", e.srv.URL+"/tool?x=secret-output", h, "")
	expectRefused(t, e, r, http.StatusServiceUnavailable, engine.ReasonSettlementPending, 1)
	if r.header.Get("Retry-After") == "" || bytes.Contains(r.body, []byte("secret-output")) || r.header.Get(x402.HeaderPaymentResponse) != "" {
		t.Fatalf("pending answer: %v %s", r.header, r.body)
	}
	rec := e.record(t, p)
	if rec.State != engine.StateSettling || rec.Answer == nil || !bytes.Contains(rec.Answer.Body, []byte("secret-output")) {
		t.Fatalf("after the error: %s, answer %v", rec.State, rec.Answer)
	}
	e.fac.set(func(f *fakeFacilitator) { f.settleErr = nil })
	r = do(t, "GET", e.srv.URL+"/tool?x=secret-output", h, "")
	expectRefused(t, e, r, http.StatusServiceUnavailable, engine.ReasonPaymentInProgress, 1)
	if ra := r.header.Get("Retry-After"); ra == "" || ra == "0" {
		t.Fatalf("in progress without Retry-After: %q", ra)
	}
	// For another request it is a used authorization.
	r = do(t, "GET", e.srv.URL+"/tool?x=other", h, "")
	expectRefused(t, e, r, http.StatusPaymentRequired, exact.ReasonNonceAlreadyUsed, 1)
}

// TestSuccess checks a paid call: 200 with the handler's answer,
// PAYMENT-RESPONSE, exposed headers, private caching, one settled journal
// row with what the ledger needs, and one Paid event.
func TestSuccess(t *testing.T) {
	e := newEnv(t, func(_ *engine.Config, c *nethttp.Config) {
		c.RequestID = func(r *http.Request) string { return r.Header.Get("X-Req") }
		c.RefCode = func(r *http.Request) string { return r.URL.Query().Get("ref") }
	})
	signed := sign(t, e.key, e.req(), time.Now())
	hdr := sig(header(t, e.req(), signed))
	hdr["X-Req"] = "req-42"
	r := do(t, "GET", e.srv.URL+"/tool?x=7&ref=friend", hdr, "")
	if r.status != 200 {
		t.Fatalf("status %d: %s", r.status, r.body)
	}
	if m := r.json(t); m["ok"] != true || m["x"] != "7" || m["run"] != float64(1) {
		t.Fatalf("body %s", r.body)
	}
	if r.header.Get("X-Tool") != "yes" || r.header.Get("Content-Type") != "application/json" || r.header.Get("Cache-Control") != "private" {
		t.Fatalf("headers %v", r.header)
	}
	if r.header.Get(x402.HeaderPaymentRequired) != "" || r.header.Get(x402.HeaderV1PaymentResponse) != "" {
		t.Fatal("unexpected payment headers on success")
	}
	exposes(t, r.header)
	sr := r.settlement(t, x402.HeaderPaymentResponse)
	if !sr.Success || !strings.HasPrefix(sr.Transaction, facilitator.LocalTransactionPrefix) || sr.Network != "eip155:8453" ||
		!strings.EqualFold(sr.Payer, payer) || sr.Amount != amount {
		t.Fatalf("PAYMENT-RESPONSE %+v", sr)
	}
	rows := e.settled(t)
	if len(rows) != 1 {
		t.Fatalf("%d settled rows", len(rows))
	}
	rec := rows[0]
	if rec.RequestID != "req-42" || rec.RefCode != "friend" || rec.Resource != "GET /tool" || rec.Product != "tool" || rec.Transport != "http" ||
		!strings.EqualFold(rec.Payer, payer) || rec.Amount != amount || !strings.EqualFold(rec.Asset, usdcBase) || rec.Network != "eip155:8453" ||
		rec.PayTo != payTo || rec.Nonce != signed.Authorization.Nonce || rec.X402Version != 2 ||
		rec.Settlement == nil || rec.Settlement.Transaction != sr.Transaction || rec.Answer == nil || rec.Answer.Status != 200 ||
		!bytes.Equal(rec.Answer.Body, r.body) || rec.RequestHash == "" {
		t.Fatalf("settled row %+v", rec)
	}
	ev := e.observed(engine.Paid)
	if len(ev) != 1 || ev[0].Amount != amount || ev[0].Network != "eip155:8453" || !strings.EqualFold(ev[0].Asset, usdcBase) ||
		ev[0].Resource != "GET /tool" || ev[0].Product != "tool" || ev[0].Transport != "http" || ev[0].Recovered {
		t.Fatalf("paid events %+v", ev)
	}
}

// TestIdempotentReplay checks that the same settled payment presented again
// for the same request returns the recorded answer without running the
// handler or settling again, and that for any other request it is refused
// with 402 invalid_exact_evm_nonce_already_used.
func TestIdempotentReplay(t *testing.T) {
	e := newEnv(t)
	h := sig(e.pay(t))
	first := do(t, "GET", e.srv.URL+"/tool?x=1&y=2", h, "")
	if first.status != 200 {
		t.Fatalf("first: %d %s", first.status, first.body)
	}
	// Same request (query order differs: the hash sorts it).
	again := do(t, "GET", e.srv.URL+"/tool?y=2&x=1", h, "")
	if again.status != 200 || !bytes.Equal(again.body, first.body) ||
		again.header.Get(x402.HeaderPaymentResponse) != first.header.Get(x402.HeaderPaymentResponse) || again.header.Get("X-Tool") != "yes" {
		t.Fatalf("replay: %d %s (first %s)", again.status, again.body, first.body)
	}
	exposes(t, again.header)
	if e.runs.Load() != 1 || e.fac.settles.Load() != 1 || len(e.settled(t)) != 1 || len(e.local.Settlements()) != 1 {
		t.Fatalf("runs %d settles %d settled rows %d", e.runs.Load(), e.fac.settles.Load(), len(e.settled(t)))
	}
	if len(e.observed(engine.Paid)) != 1 || len(e.observed(engine.Replayed)) != 1 {
		t.Fatalf("paid events %d, replayed events %d", len(e.observed(engine.Paid)), len(e.observed(engine.Replayed)))
	}
	// Another request with the same payment: refused.
	for _, u := range []string{"/tool?x=2&y=2", "/other?x=1&y=2"} {
		r := do(t, "GET", e.srv.URL+u, h, "")
		expectRefused(t, e, r, http.StatusPaymentRequired, exact.ReasonNonceAlreadyUsed, 1)
	}
	r := do(t, "POST", e.srv.URL+"/tool?x=1&y=2", h, `{}`)
	expectRefused(t, e, r, http.StatusPaymentRequired, exact.ReasonNonceAlreadyUsed, 1)
}

// TestSamePaymentOtherRequest checks that a payment admitted for one
// request is refused for another (another body) while the first one is in
// flight and after it settled, without asking the facilitator.
func TestSamePaymentOtherRequest(t *testing.T) {
	e := newEnv(t)
	gate, enter := make(chan struct{}), make(chan struct{})
	e.fac.set(func(f *fakeFacilitator) { f.settleGate, f.settleEnter = gate, enter })
	h := sig(e.pay(t))
	done := goFetch("POST", e.srv.URL+"/tool", h, `{"n":1}`)
	<-enter
	// In flight (settling) for {"n":1}: {"n":2} is another request.
	r := do(t, "POST", e.srv.URL+"/tool", h, `{"n":2}`)
	expectRefused(t, e, r, http.StatusPaymentRequired, exact.ReasonNonceAlreadyUsed, 1)
	close(gate)
	if r := <-done; r.status != 200 || r.json(t)["body"] != `{"n":1}` {
		t.Fatalf("first: %d %s", r.status, r.body)
	}
	verifies := e.fac.verifies.Load()
	r = do(t, "POST", e.srv.URL+"/tool", h, `{"n":2}`)
	expectRefused(t, e, r, http.StatusPaymentRequired, exact.ReasonNonceAlreadyUsed, 1)
	if e.fac.verifies.Load() != verifies {
		t.Fatal("a used authorization reached the facilitator")
	}
}

// TestHEADNeverPays checks that HEAD on a paid route is answered as the
// unpaid GET (without a body), even with a valid payment: the handler does
// not run, nothing is verified, reserved or settled, and the payment stays
// usable.
func TestHEADNeverPays(t *testing.T) {
	e := newEnv(t)
	p := sign(t, e.key, e.req(), time.Now())
	h := sig(header(t, e.req(), p))
	get := do(t, "GET", e.srv.URL+"/tool?x=1", nil, "")
	for _, hdr := range []map[string]string{nil, h, {x402.HeaderV1Payment: h[x402.HeaderPaymentSignature]}} {
		head := do(t, "HEAD", e.srv.URL+"/tool?x=1", hdr, "")
		if head.status != http.StatusPaymentRequired || len(head.body) != 0 {
			t.Fatalf("HEAD: %d %q", head.status, head.body)
		}
		if head.header.Get(x402.HeaderPaymentRequired) != get.header.Get(x402.HeaderPaymentRequired) ||
			head.header.Get("Content-Type") != get.header.Get("Content-Type") || head.header.Get("Cache-Control") != "no-store" ||
			head.header.Get(x402.HeaderPaymentResponse) != "" {
			t.Fatalf("HEAD headers %v, GET headers %v", head.header, get.header)
		}
		exposes(t, head.header)
	}
	// Straight through the handler too: no body is written for HEAD.
	for _, withURL := range []bool{false, true} {
		if withURL {
			o := testOffer(t)
			o.PaymentRequired.Resource.URL = "https://api.example.com/tool"
			e.offer.Store(o)
		}
		rec := httptest.NewRecorder()
		req := httptest.NewRequest("HEAD", "http://127.0.0.1/tool?x=1", nil)
		req.Header.Set(x402.HeaderPaymentSignature, h[x402.HeaderPaymentSignature])
		e.handler.ServeHTTP(rec, req)
		if rec.Code != http.StatusPaymentRequired || rec.Body.Len() != 0 || rec.Header().Get(x402.HeaderPaymentRequired) == "" {
			t.Fatalf("HEAD (resource URL set: %v): %d %q", withURL, rec.Code, rec.Body)
		}
	}
	e.offer.Store(testOffer(t))
	if e.runs.Load() != 0 || e.fac.verifies.Load() != 0 || e.fac.settles.Load() != 0 {
		t.Fatalf("HEAD ran %d times, verified %d, settled %d", e.runs.Load(), e.fac.verifies.Load(), e.fac.settles.Load())
	}
	if n, _ := e.journal.Counts(context.Background()); len(nonZero(n)) != 0 {
		t.Fatalf("HEAD reached the journal: %v", n)
	}
	if r := do(t, "GET", e.srv.URL+"/tool?x=1", h, ""); r.status != 200 {
		t.Fatalf("the payment after HEAD: %d %s", r.status, r.body)
	}
	// Once paid, HEAD still gets the offer, not the recorded answer.
	if head := do(t, "HEAD", e.srv.URL+"/tool?x=1", h, ""); head.status != http.StatusPaymentRequired || head.header.Get(x402.HeaderPaymentResponse) != "" {
		t.Fatalf("HEAD after payment: %d %v", head.status, head.header)
	}
	if e.runs.Load() != 1 || e.fac.settles.Load() != 1 {
		t.Fatalf("runs %d settles %d", e.runs.Load(), e.fac.settles.Load())
	}
}

// TestAttemptsExhausted checks that an authorization whose calls keep
// failing is admitted at most MaxAttempts times, then refused with
// payment_attempts_exhausted before the facilitator or the handler. A 503
// (an upstream down after the preflight) is not the payer's failure and
// does not count.
func TestAttemptsExhausted(t *testing.T) {
	e := newEnv(t, func(c *engine.Config, _ *nethttp.Config) { c.MaxAttempts = 2 })
	p := sign(t, e.key, e.req(), time.Now())
	h := sig(header(t, e.req(), p))
	e.failRuns.Store(100)
	for i := range 3 {
		if r := do(t, "GET", e.srv.URL+"/tool?x=1", h, ""); r.status != http.StatusServiceUnavailable {
			t.Fatalf("uncounted attempt %d: %d %s", i+1, r.status, r.body)
		}
	}
	if rec := e.record(t, p); rec.State != engine.StateReleased || rec.Attempts != 0 {
		t.Fatalf("after 503s: row %s, %d attempts", rec.State, rec.Attempts)
	}
	e.failCode.Store(http.StatusGatewayTimeout)
	for i := range 2 {
		if r := do(t, "GET", e.srv.URL+"/tool?x=1", h, ""); r.status != http.StatusGatewayTimeout {
			t.Fatalf("attempt %d: %d %s", i+1, r.status, r.body)
		}
	}
	if e.runs.Load() != 5 || e.fac.verifies.Load() != 5 {
		t.Fatalf("runs %d verifies %d", e.runs.Load(), e.fac.verifies.Load())
	}
	for range 2 {
		r := do(t, "GET", e.srv.URL+"/tool?x=1", h, "")
		expectRefused(t, e, r, http.StatusPaymentRequired, engine.ReasonAttemptsExhausted, 5)
	}
	if e.fac.verifies.Load() != 5 {
		t.Fatalf("an exhausted authorization reached the facilitator (%d verifies)", e.fac.verifies.Load())
	}
	if rec := e.record(t, p); rec.State != engine.StateReleased || rec.Attempts != 2 {
		t.Fatalf("row %s, %d attempts", rec.State, rec.Attempts)
	}
	// A fresh authorization is admitted.
	e.failRuns.Store(0)
	if r := do(t, "GET", e.srv.URL+"/tool?x=1", sig(e.pay(t)), ""); r.status != 200 {
		t.Fatalf("fresh payment: %d %s", r.status, r.body)
	}
}

// readFlag is a request body that records whether it was read.
type readFlag struct {
	r    io.Reader
	read atomic.Bool
}

func (b *readFlag) Read(p []byte) (int, error) {
	b.read.Store(true)
	return b.r.Read(p)
}

// TestAdmitUnpaid checks the unpaid rate limit hook: a refused unpaid
// request gets 429 with Retry-After before its body is read or Preflight
// runs; requests with a payment are not asked.
func TestAdmitUnpaid(t *testing.T) {
	var asked, preflights atomic.Int64
	e := newEnv(t, func(_ *engine.Config, c *nethttp.Config) {
		c.AdmitUnpaid = func(r *http.Request) (bool, time.Duration) {
			asked.Add(1)
			return r.Header.Get("X-Limited") == "", 7 * time.Second
		}
		c.Preflight = func(*http.Request) error { preflights.Add(1); return nil }
	})
	body := &readFlag{r: strings.NewReader(`{"a":1}`)}
	req := httptest.NewRequest("POST", "http://127.0.0.1/tool", body)
	req.Header.Set("X-Limited", "1")
	rec := httptest.NewRecorder()
	e.handler.ServeHTTP(rec, req)
	var prob map[string]any
	_ = json.Unmarshal(rec.Body.Bytes(), &prob)
	if rec.Code != http.StatusTooManyRequests || rec.Header().Get("Retry-After") != "7" || prob["reason"] != nethttp.ReasonRateLimited ||
		rec.Header().Get(x402.HeaderPaymentRequired) != "" {
		t.Fatalf("limited: %d %v %s", rec.Code, rec.Header(), rec.Body)
	}
	if body.read.Load() || preflights.Load() != 0 || asked.Load() != 1 {
		t.Fatalf("body read %v, preflights %d, asked %d", body.read.Load(), preflights.Load(), asked.Load())
	}
	// Admitted: the usual 402.
	if r := do(t, "GET", e.srv.URL+"/tool", nil, ""); r.status != 402 || asked.Load() != 2 {
		t.Fatalf("admitted: %d, asked %d", r.status, asked.Load())
	}
	// A paid request is never asked, limited or not.
	if r := do(t, "GET", e.srv.URL+"/tool", map[string]string{x402.HeaderPaymentSignature: e.pay(t), "X-Limited": "1"}, ""); r.status != 200 || asked.Load() != 2 {
		t.Fatalf("paid: %d, asked %d", r.status, asked.Load())
	}
	// Neither is a free route.
	if r := do(t, "GET", e.srv.URL+"/free", map[string]string{"X-Limited": "1"}, ""); r.status != 200 || asked.Load() != 2 {
		t.Fatalf("free: %d, asked %d", r.status, asked.Load())
	}
}

// TestAdmitPayment checks the refused-payment limit hooks: a request with
// a payment is asked AdmitPayment before anything else (429 with
// Retry-After, body unread, engine untouched, when refused);
// PaymentRefused hears of refused payments only, never of good ones nor of
// requests without payment.
func TestAdmitPayment(t *testing.T) {
	var admitAsked, refusedTold, preflights atomic.Int64
	e := newEnv(t, func(_ *engine.Config, c *nethttp.Config) {
		c.AdmitPayment = func(r *http.Request) (bool, time.Duration) {
			admitAsked.Add(1)
			return r.Header.Get("X-Limited") == "", 3 * time.Second
		}
		c.PaymentRefused = func(*http.Request) { refusedTold.Add(1) }
		c.Preflight = func(*http.Request) error { preflights.Add(1); return nil }
	})
	bad := sign(t, e.key, e.req(), time.Now())
	bad.Authorization.Value = "2499"
	badHeader := header(t, e.req(), bad)

	body := &readFlag{r: strings.NewReader(`{"a":1}`)}
	req := httptest.NewRequest("POST", "http://127.0.0.1/tool", body)
	req.Header.Set("X-Limited", "1")
	req.Header.Set(x402.HeaderPaymentSignature, e.pay(t))
	rec := httptest.NewRecorder()
	e.handler.ServeHTTP(rec, req)
	var prob map[string]any
	_ = json.Unmarshal(rec.Body.Bytes(), &prob)
	if rec.Code != http.StatusTooManyRequests || rec.Header().Get("Retry-After") != "3" || prob["reason"] != nethttp.ReasonRateLimited {
		t.Fatalf("limited: %d %v %s", rec.Code, rec.Header(), rec.Body)
	}
	if body.read.Load() || preflights.Load() != 0 || e.runs.Load() != 0 || admitAsked.Load() != 1 || refusedTold.Load() != 0 {
		t.Fatalf("body read %v, preflights %d, runs %d, asked %d, told %d", body.read.Load(), preflights.Load(), e.runs.Load(), admitAsked.Load(), refusedTold.Load())
	}
	// A refused payment is told of; a good one and an unpaid request are not.
	if r := do(t, "GET", e.srv.URL+"/tool", sig(badHeader), ""); r.status != http.StatusPaymentRequired || refusedTold.Load() != 1 {
		t.Fatalf("refused payment: %d, told %d", r.status, refusedTold.Load())
	}
	if r := do(t, "GET", e.srv.URL+"/tool", sig(e.pay(t)), ""); r.status != http.StatusOK || refusedTold.Load() != 1 {
		t.Fatalf("good payment: %d, told %d", r.status, refusedTold.Load())
	}
	if r := do(t, "GET", e.srv.URL+"/tool", nil, ""); r.status != http.StatusPaymentRequired || refusedTold.Load() != 1 || admitAsked.Load() != 3 {
		t.Fatalf("unpaid: %d, told %d, asked %d", r.status, refusedTold.Load(), admitAsked.Load())
	}
}

// TestBodyMemoryBudget checks the global budget of request bodies: with
// room for two large bodies, a third waits and is answered 503 server_busy
// after BodyWait, a small one still fits, the bodies held at once never
// exceed the budget, and the room comes back once requests end.
func TestBodyMemoryBudget(t *testing.T) {
	const (
		limit  = 4096
		budget = 8192
		large  = 4000
		small  = 100
	)
	var (
		held, maxHeld atomic.Int64
		entered       = make(chan int64, 16)
		release       = make(chan struct{})
	)
	e := newEnv(t, func(_ *engine.Config, c *nethttp.Config) {
		c.MaxRequestBytes, c.BodyMemory, c.BodyWait = limit, budget, 50*time.Millisecond
		c.Preflight = func(r *http.Request) error {
			n := held.Add(r.ContentLength)
			for {
				m := maxHeld.Load()
				if n <= m || maxHeld.CompareAndSwap(m, n) {
					break
				}
			}
			entered <- r.ContentLength
			<-release
			held.Add(-r.ContentLength)
			return nil
		}
	})
	bodyOf := func(n int) string { return strings.Repeat("x", n) }
	var pending []<-chan result
	for range 2 {
		pending = append(pending, goFetch("POST", e.srv.URL+"/tool", nil, bodyOf(large)))
	}
	for range 2 {
		if n := <-entered; n != large {
			t.Fatalf("entered with %d bytes", n)
		}
	}
	// No room for a third large body: 503 once BodyWait is over.
	start := time.Now()
	r := do(t, "POST", e.srv.URL+"/tool", sig(e.pay(t)), bodyOf(large))
	expectRefused(t, e, r, http.StatusServiceUnavailable, nethttp.ReasonBusy, 0)
	if waited := time.Since(start); waited < 50*time.Millisecond || r.header.Get("Retry-After") == "" {
		t.Fatalf("busy after %s, Retry-After %q", waited, r.header.Get("Retry-After"))
	}
	// A small one fits in what is left.
	pending = append(pending, goFetch("POST", e.srv.URL+"/tool", nil, bodyOf(small)))
	if n := <-entered; n != small {
		t.Fatalf("entered with %d bytes", n)
	}
	close(release)
	for _, c := range pending {
		if r := <-c; r.status != http.StatusPaymentRequired {
			t.Fatalf("admitted request: %d %s", r.status, r.body)
		}
	}
	if m := maxHeld.Load(); m > budget || m != 2*large+small {
		t.Fatalf("at most %d bytes held at once, budget %d", m, budget)
	}
	// The room is back.
	if r := do(t, "POST", e.srv.URL+"/tool", nil, bodyOf(large)); r.status != http.StatusPaymentRequired {
		t.Fatalf("after release: %d %s", r.status, r.body)
	}
	if e.runs.Load() != 0 {
		t.Fatal("the handler ran")
	}
}

// TestV1 checks the v1 path: X-PAYMENT with a v1 payload (network "base")
// is verified with the same checks and answered with X-PAYMENT-RESPONSE.
func TestV1(t *testing.T) {
	e := newEnv(t)
	v1Header := func(network string, p exact.ExactEVMPayload) map[string]string {
		raw, _ := json.Marshal(p)
		v, err := x402.EncodeHeader(x402.PaymentPayloadV1{X402Version: 1, Scheme: "exact", Network: network, Payload: raw})
		if err != nil {
			t.Fatal(err)
		}
		return map[string]string{x402.HeaderV1Payment: v}
	}
	p := sign(t, e.key, e.req(), time.Now())
	r := do(t, "GET", e.srv.URL+"/tool?x=v1", v1Header("base", p), "")
	if r.status != 200 || r.json(t)["x"] != "v1" {
		t.Fatalf("v1: %d %s", r.status, r.body)
	}
	if r.header.Get(x402.HeaderPaymentResponse) != "" {
		t.Fatal("v1 client answered with PAYMENT-RESPONSE")
	}
	sr := r.settlement(t, x402.HeaderV1PaymentResponse)
	if !sr.Success || sr.Network != "base" || !strings.EqualFold(sr.Payer, payer) {
		t.Fatalf("X-PAYMENT-RESPONSE %+v", sr)
	}
	if rows := e.settled(t); len(rows) != 1 || rows[0].X402Version != 1 || rows[0].Network != "eip155:8453" {
		t.Fatalf("settled rows %+v", rows)
	}
	// Same v1 payment, same request: replayed with X-PAYMENT-RESPONSE.
	again := do(t, "GET", e.srv.URL+"/tool?x=v1", v1Header("base", p), "")
	if again.status != 200 || !bytes.Equal(again.body, r.body) || again.header.Get(x402.HeaderV1PaymentResponse) != r.header.Get(x402.HeaderV1PaymentResponse) {
		t.Fatalf("v1 replay: %d", again.status)
	}
	// The v2 checks apply to v1 payments.
	tampered := sign(t, e.key, e.req(), time.Now())
	tampered.Authorization.Value = "1"
	expectRefused(t, e, do(t, "GET", e.srv.URL+"/tool", v1Header("base", tampered), ""), 402, exact.ReasonValueMismatch, 1)
	expired := sign(t, e.key, e.req(), time.Now().Add(-2*time.Hour))
	expectRefused(t, e, do(t, "GET", e.srv.URL+"/tool", v1Header("base", expired), ""), 402, exact.ReasonValidBefore, 1)
	fresh := sign(t, e.key, e.req(), time.Now())
	for _, n := range []string{"base-sepolia", "eip155:84532", "solana"} {
		expectRefused(t, e, do(t, "GET", e.srv.URL+"/tool", v1Header(n, fresh), ""), 402, engine.ReasonNoMatchingRequirements, 1)
	}
	// A v1 payment of an authorization already used by v2 is a replay.
	p2 := sign(t, e.key, e.req(), time.Now())
	if r := do(t, "GET", e.srv.URL+"/tool?x=a", sig(header(t, e.req(), p2)), ""); r.status != 200 {
		t.Fatalf("v2: %d", r.status)
	}
	expectRefused(t, e, do(t, "GET", e.srv.URL+"/tool?x=b", v1Header("base", p2), ""), 402, exact.ReasonNonceAlreadyUsed, 2)
}

// TestConcurrentSamePayment sends one signed payment in 50 concurrent
// requests: exactly one handler run and one settlement; every other
// request gets the recorded answer or 503 payment_in_progress.
func TestConcurrentSamePayment(t *testing.T) {
	e := newEnv(t)
	h := sig(e.pay(t))
	const n = 50
	results := make([]result, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			var err error
			if results[i], err = fetch("GET", e.srv.URL+"/tool?x=race", h, ""); err != nil {
				results[i].body = []byte(err.Error())
			}
		})
	}
	close(start)
	wg.Wait()
	if e.runs.Load() != 1 || e.fac.settles.Load() != 1 || len(e.local.Settlements()) != 1 || len(e.settled(t)) != 1 {
		t.Fatalf("runs %d, settles %d, settled rows %d; want 1 each", e.runs.Load(), e.fac.settles.Load(), len(e.settled(t)))
	}
	var ok, inProgress int
	var body []byte
	for _, r := range results {
		switch {
		case r.status == 200:
			if body != nil && !bytes.Equal(body, r.body) {
				t.Fatalf("different bodies: %s vs %s", body, r.body)
			}
			body = r.body
			ok++
		case r.status == 503 && r.json(t)["reason"] == engine.ReasonPaymentInProgress:
			if r.header.Get("Retry-After") == "" {
				t.Fatal("payment_in_progress without Retry-After")
			}
			inProgress++
		default:
			t.Fatalf("unexpected answer %d %s", r.status, r.body)
		}
	}
	if ok < 1 || ok+inProgress != n {
		t.Fatalf("ok %d, in progress %d", ok, inProgress)
	}
}

// TestClientGoneDuringSettle checks that a client disconnecting while the
// payment settles loses nothing: the settlement completes and is recorded,
// and the same request with the same payment then gets the recorded
// answer.
func TestClientGoneDuringSettle(t *testing.T) {
	e := newEnv(t)
	noticed := make(chan struct{})
	var once sync.Once
	watch := func(r *http.Request) {
		if r.URL.Query().Get("x") == "gone" {
			// The request's context ends when the client goes (the
			// request is blocked in the settlement until then).
			go func() {
				<-r.Context().Done()
				once.Do(func() { close(noticed) })
			}()
		}
	}
	e.onRequest.Store(&watch)
	gate, enter, done := make(chan struct{}), make(chan struct{}), make(chan struct{})
	e.fac.set(func(f *fakeFacilitator) { f.settleGate, f.settleEnter, f.settleReturn = gate, enter, done })
	pay := e.pay(t)
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "GET", e.srv.URL+"/tool?x=gone", nil)
	req.Header.Set(x402.HeaderPaymentSignature, pay)
	errc := make(chan error, 1)
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		errc <- err
	}()
	<-enter
	cancel()
	if err := <-errc; err == nil {
		t.Fatal("the request was not cancelled")
	}
	<-noticed
	close(gate)
	<-done
	// The settlement is recorded right after Settle returns, on the
	// request's goroutine: poll for it.
	deadline := time.After(5 * time.Second)
	for len(e.settled(t)) == 0 {
		select {
		case <-deadline:
			t.Fatal("the settlement was not recorded")
		case <-time.After(time.Millisecond):
		}
	}
	if e.fac.settles.Load() != 1 || len(e.settled(t)) != 1 {
		t.Fatalf("settles %d settled rows %d", e.fac.settles.Load(), len(e.settled(t)))
	}
	e.fac.set(func(f *fakeFacilitator) { f.settleGate, f.settleEnter, f.settleReturn = nil, nil, nil })
	r := do(t, "GET", e.srv.URL+"/tool?x=gone", sig(pay), "")
	if r.status != 200 || r.json(t)["x"] != "gone" || e.runs.Load() != 1 || e.fac.settles.Load() != 1 {
		t.Fatalf("retry: %d %s, runs %d settles %d", r.status, r.body, e.runs.Load(), e.fac.settles.Load())
	}
}

// TestNewConfig checks the configuration errors of the binding, the engine
// and offers.
func TestNewConfig(t *testing.T) {
	local, err := facilitator.NewLocal(facilitator.LocalConfig{})
	if err != nil {
		t.Fatal(err)
	}
	eng, err := engine.New(engine.Config{Schemes: schemetest.Exact(t, exactserver.Config{Facilitator: local})})
	if err != nil {
		t.Fatal(err)
	}
	offer := func(*http.Request) (*engine.Offer, bool) { return nil, false }
	for name, cfg := range map[string]nethttp.Config{
		"no engine":          {Offer: offer},
		"no offer":           {Engine: eng},
		"bad base URL":       {Engine: eng, Offer: offer, PublicBaseURL: "ftp://x"},
		"query base URL":     {Engine: eng, Offer: offer, PublicBaseURL: "https://x/?a=1"},
		"fragment base URL":  {Engine: eng, Offer: offer, PublicBaseURL: "https://x/#a"},
		"user base URL":      {Engine: eng, Offer: offer, PublicBaseURL: "https://u:p@x/"},
		"relative base URL":  {Engine: eng, Offer: offer, PublicBaseURL: "/api"},
		"negative request":   {Engine: eng, Offer: offer, MaxRequestBytes: -1},
		"negative response":  {Engine: eng, Offer: offer, MaxResponseBytes: -1},
		"negative wait":      {Engine: eng, Offer: offer, BodyWait: -1},
		"budget below limit": {Engine: eng, Offer: offer, MaxRequestBytes: 4096, BodyMemory: 4095},
	} {
		if _, err := nethttp.New(cfg); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if _, err := nethttp.New(nethttp.Config{Engine: eng, Offer: offer, PublicBaseURL: "https://api.example.com/v1/"}); err != nil {
		t.Errorf("a good config: %v", err)
	}
	schemes := schemetest.Exact(t, exactserver.Config{Facilitator: local})
	for name, cfg := range map[string]engine.Config{
		"no scheme":         {},
		"negative timeout":  {Schemes: schemes, SettleTimeout: -1},
		"negative attempts": {Schemes: schemes, MaxAttempts: -1},
		"dead before beat":  {Schemes: schemes, Heartbeat: time.Second, DeadAfter: time.Second},
		"scheme twice":      {Schemes: append(schemes, schemes...)},
	} {
		if _, err := engine.New(cfg); err == nil {
			t.Errorf("engine %s: accepted", name)
		}
	}
	if _, err := eng.NewOffer("x", "x"); err == nil {
		t.Error("NewOffer without routes accepted")
	}
	if _, err := eng.NewOffer("x", "x", x402.Route{Price: "-1", PayTo: payTo}); err == nil {
		t.Error("NewOffer with a bad price accepted")
	}
	if _, err := eng.NewOffer("x", "x", x402.Route{Price: "0.01", PayTo: payTo}, x402.Route{Price: "0", PayTo: payTo}); err == nil {
		t.Error("NewOffer with a bad second price accepted")
	}
	two, err := eng.NewOffer("x", "x", x402.Route{Price: "0.01", PayTo: payTo}, x402.Route{Price: "0.01", PayTo: payTo, Network: "base-sepolia"})
	if err != nil || len(two.PaymentRequired.Accepts) != 2 || two.PaymentRequired.Accepts[1].Network != x402.NetworkBaseSepolia {
		t.Errorf("two routes: %v %+v", err, two)
	}
}

// TestRequestHash checks what identifies a request.
func TestRequestHash(t *testing.T) {
	mk := func(method, target string) *http.Request { return httptest.NewRequest(method, target, nil) }
	base := nethttp.RequestHash(mk("GET", "/a?x=1&y=2"), nil)
	if nethttp.RequestHash(mk("GET", "/a?y=2&x=1"), nil) != base {
		t.Error("query key order changes the hash")
	}
	if nethttp.RequestHash(mk("HEAD", "/a?x=1&y=2"), nil) != base {
		t.Error("HEAD and GET hash differently")
	}
	withHeader := mk("GET", "/a?x=1&y=2")
	withHeader.Header.Set("X-Anything", "1")
	if nethttp.RequestHash(withHeader, nil) != base {
		t.Error("a header changes the hash")
	}
	for _, o := range []string{
		nethttp.RequestHash(mk("POST", "/a?x=1&y=2"), nil),
		nethttp.RequestHash(mk("GET", "/b?x=1&y=2"), nil),
		nethttp.RequestHash(mk("GET", "/a?x=1&y=3"), nil),
		nethttp.RequestHash(mk("GET", "/a?x=1&y=2&y=3"), nil),
		nethttp.RequestHash(mk("GET", "/a?x=1&y=3&y=2"), nil),
		nethttp.RequestHash(mk("GET", "/a?x=1&y=2"), []byte("{}")),
		nethttp.RequestHash(mk("GET", "/a?x=1y=2"), nil),
	} {
		if o == base {
			t.Error("different requests share a hash")
		}
	}
	if nethttp.RequestHash(mk("GET", "/a?x=1&y=2&y=3"), nil) == nethttp.RequestHash(mk("GET", "/a?x=1&y=3&y=2"), nil) {
		t.Error("the order of a key's values is lost")
	}

	// A JSON body is hashed without its insignificant white space.
	post := func(contentType, body string) string {
		r := httptest.NewRequest("POST", "/a", nil)
		r.Header.Set("Content-Type", contentType)
		return nethttp.RequestHash(r, []byte(body))
	}
	compact := post("application/json", `{"address":"0xaa","n":[1,2]}`)
	for _, same := range []string{
		post("application/json", `{"address": "0xaa", "n": [1, 2]}`),
		post("application/json", `{"address":"0xaa","n":[1,2]}`+"\n"),
		post("application/json; charset=utf-8", "\t{\r\n \"address\" : \"0xaa\",\n\"n\":[ 1,2 ] }\n"),
		post("application/problem+json", `{"address":"0xaa", "n":[1,2]}`),
	} {
		if same != compact {
			t.Error("white space in a JSON body changes the hash")
		}
	}
	for _, other := range []string{
		post("application/json", `{"address":"0xab","n":[1,2]}`),
		post("application/json", `{"address":"0x aa","n":[1,2]}`),
		post("application/json", `{"address":"0xaa","n":[2,1]}`),
		post("text/plain", `{"address": "0xaa", "n": [1, 2]}`),
	} {
		if other == compact {
			t.Error("another body shares the hash")
		}
	}
	if post("text/plain", "a b") == post("text/plain", "a  b") || post("application/json", "{") == post("application/json", "{ ") {
		t.Error("white space in a body that is not JSON is lost")
	}
}

// BenchmarkPaid measures one paid request through the binding and the
// engine (decode, match, local verify, journal, facilitator.Local verify
// and settle), without the network and without the client's signing.
func BenchmarkPaid(b *testing.B) {
	local, err := facilitator.NewLocal(facilitator.LocalConfig{})
	if err != nil {
		b.Fatal(err)
	}
	eng, err := engine.New(engine.Config{Schemes: schemetest.Exact(b, exactserver.Config{Facilitator: local}), Journal: engine.NewMemoryJournal(),
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	offer := testOffer(b)
	mw, err := nethttp.New(nethttp.Config{
		Engine: eng,
		Offer:  func(*http.Request) (*engine.Offer, bool) { return offer, true },
		Logger: slog.New(slog.DiscardHandler),
	})
	if err != nil {
		b.Fatal(err)
	}
	h := mw.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, `{"ok":true}`)
	}))
	key := testKey(b)
	req := offer.PaymentRequired.Accepts[0]
	headers := make([]string, b.N)
	for i := range headers {
		headers[i] = header(b, req, sign(b, key, req, time.Now()))
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		r := httptest.NewRequest("GET", "http://127.0.0.1/tool?x=1", nil)
		r.Header.Set(x402.HeaderPaymentSignature, headers[i])
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != 200 {
			b.Fatalf("status %d: %s", w.Code, w.Body)
		}
	}
}

package x402_test

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
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/crypto"

	"github.com/seed1284c1d2/svc/x402"
)

// Fixtures shared by the middleware, client, v1 and e2e tests.
const (
	// mwKeyHex is the payer's key (facts sheet vector B, a public test key).
	mwKeyHex = "ac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80"
	// mwPayer is its address.
	mwPayer = "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266"
	// mwPayTo receives the payments.
	mwPayTo = "0x70997970C51812dc3A010C7d01b50e0d17dc79C8"
	// mwOther is an address that is not the payTo.
	mwOther = "0x000000000000000000000000000000000000dEaD"
	// mwPrice is the test route's price (2500 atomic units of USDC).
	mwPrice  = "0.0025"
	mwAmount = "2500"
)

func mwKey(t testing.TB) *ecdsa.PrivateKey {
	t.Helper()
	k, err := crypto.HexToECDSA(mwKeyHex)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func mwTerms(t testing.TB) x402.Terms {
	t.Helper()
	terms, err := x402.NewTerms("GET /tool", x402.Route{
		Price:    mwPrice,
		PayTo:    mwPayTo,
		Resource: x402.ResourceInfo{Description: "test tool", MimeType: "application/json"},
		Bazaar: &x402.BazaarInfo{
			Method:        "GET",
			InputExample:  map[string]any{"x": "1"},
			OutputExample: map[string]any{"ok": true},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	return terms
}

// mwFacilitator wraps a facilitator, counts the calls and injects answers.
type mwFacilitator struct {
	inner    x402.Facilitator
	verifies atomic.Int64
	settles  atomic.Int64

	mu           sync.Mutex
	verifyResp   *x402.VerifyResponse
	verifyErr    error
	settleResp   *x402.SettleResponse
	settleErr    error
	settleGate   chan struct{} // when set, Settle waits for it to close
	settleEnter  chan struct{} // when set, Settle closes it on entry
	settleReturn chan struct{} // when set, Settle closes it when done
}

func (f *mwFacilitator) Verify(ctx context.Context, p x402.PaymentPayload, r x402.PaymentRequirements) (x402.VerifyResponse, error) {
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

func (f *mwFacilitator) Settle(ctx context.Context, p x402.PaymentPayload, r x402.PaymentRequirements) (x402.SettleResponse, error) {
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

func (f *mwFacilitator) Supported(ctx context.Context) (x402.SupportedResponse, error) {
	return f.inner.Supported(ctx)
}

func (f *mwFacilitator) set(fn func(f *mwFacilitator)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fn(f)
}

// mwEnv is a paid test server on 127.0.0.1 with a LocalFacilitator.
type mwEnv struct {
	srv      *httptest.Server
	fac      *mwFacilitator
	local    *x402.LocalFacilitator
	store    *x402.MemoryNonceStore
	terms    x402.Terms
	key      *ecdsa.PrivateKey
	runs     atomic.Int64 // paid handler runs
	failRuns atomic.Int64 // the handler answers 503 while > 0

	mu      sync.Mutex
	settled []x402.SettledEvent
	replays []x402.SettledEvent // OnSettled events of replayed answers
}

// mwTool is the paid handler: GET /tool?x=… answers {"ok":true,"x":…,
// "run":n}; POST /tool echoes the body; /big writes 2 KiB; /panic panics.
func (e *mwEnv) tool(w http.ResponseWriter, r *http.Request) {
	n := e.runs.Add(1)
	if e.failRuns.Load() > 0 {
		e.failRuns.Add(-1)
		w.Header().Set("Content-Type", "application/problem+json")
		w.WriteHeader(http.StatusServiceUnavailable)
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

func newMWEnv(t *testing.T, mutate ...func(*x402.Config)) *mwEnv {
	t.Helper()
	local, err := x402.NewLocalFacilitator(x402.LocalFacilitatorConfig{})
	if err != nil {
		t.Fatal(err)
	}
	e := &mwEnv{
		fac:   &mwFacilitator{inner: local},
		local: local,
		store: x402.NewMemoryNonceStore(nil),
		terms: mwTerms(t),
		key:   mwKey(t),
	}
	cfg := x402.Config{
		Facilitator: e.fac,
		NonceStore:  e.store,
		Terms: func(r *http.Request) (x402.Terms, bool) {
			if r.URL.Path == "/free" {
				return x402.Terms{}, false
			}
			return e.terms, true
		},
		OnSettled: func(_ context.Context, ev x402.SettledEvent) {
			e.mu.Lock()
			if ev.Replay {
				e.replays = append(e.replays, ev)
			} else {
				e.settled = append(e.settled, ev)
			}
			e.mu.Unlock()
		},
		Logger:           slog.New(slog.DiscardHandler),
		MaxResponseBytes: 1024,
		MaxRequestBytes:  4096,
	}
	for _, m := range mutate {
		m(&cfg)
	}
	mw, err := x402.NewMiddleware(cfg)
	if err != nil {
		t.Fatal(err)
	}
	e.srv = httptest.NewServer(mw.Wrap(http.HandlerFunc(e.tool)))
	t.Cleanup(e.srv.Close)
	return e
}

func (e *mwEnv) req() x402.PaymentRequirements { return e.terms.PaymentRequired.Accepts[0] }

func (e *mwEnv) events() []x402.SettledEvent {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]x402.SettledEvent(nil), e.settled...)
}

// mwResult is a response read in full.
type mwResult struct {
	status int
	header http.Header
	body   []byte
}

func (r mwResult) json(t testing.TB) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.body, &m); err != nil {
		t.Fatalf("body is not a JSON object: %v: %s", err, r.body)
	}
	return m
}

// paymentRequired decodes PAYMENT-REQUIRED, failing if absent.
func (r mwResult) paymentRequired(t testing.TB) x402.PaymentRequired {
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

func (r mwResult) settlement(t testing.TB, name string) x402.SettleResponse {
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

func mwDo(t testing.TB, method, url string, header map[string]string, body string) mwResult {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return mwResult{status: resp.StatusCode, header: resp.Header, body: b}
}

// mwSign signs a payment of req with key, valid from now on.
func mwSign(t testing.TB, key *ecdsa.PrivateKey, req x402.PaymentRequirements, now time.Time) x402.ExactEVMPayload {
	t.Helper()
	p, err := x402.NewExactPayload(key, req, now, 0)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// mwHeader encodes a v2 PAYMENT-SIGNATURE value.
func mwHeader(t testing.TB, accepted x402.PaymentRequirements, p x402.ExactEVMPayload) string {
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
func (e *mwEnv) pay(t testing.TB) string {
	t.Helper()
	return mwHeader(t, e.req(), mwSign(t, e.key, e.req(), time.Now()))
}

func mwSig(v string) map[string]string { return map[string]string{x402.HeaderPaymentSignature: v} }

func mwExpectRefused(t *testing.T, e *mwEnv, r mwResult, status int, reason string, runsBefore int64) {
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
	if len(e.events()) != int(e.fac.settles.Load()) {
		t.Fatalf("%d OnSettled events for %d settlements", len(e.events()), e.fac.settles.Load())
	}
}

func mwExposes(t *testing.T, h http.Header) {
	t.Helper()
	v := h.Get("Access-Control-Expose-Headers")
	for _, name := range []string{"PAYMENT-REQUIRED", "PAYMENT-RESPONSE", "X-PAYMENT-RESPONSE"} {
		if !strings.Contains(v, name) {
			t.Fatalf("Access-Control-Expose-Headers %q lacks %s", v, name)
		}
	}
}

// TestMiddlewareUnpaid checks the 402 of a request without payment: the
// PAYMENT-REQUIRED header decodes to the route's v2 terms with the full
// request URL, and the JSON body carries the v1 answer plus the v2 object.
func TestMiddlewareUnpaid(t *testing.T) {
	e := newMWEnv(t)
	r := mwDo(t, "GET", e.srv.URL+"/tool?x=1&a=2", nil, "")
	if r.status != http.StatusPaymentRequired {
		t.Fatalf("status %d, want 402", r.status)
	}
	pr := r.paymentRequired(t)
	if pr.X402Version != 2 || pr.Error != "Payment required" || len(pr.Accepts) != 1 {
		t.Fatalf("PAYMENT-REQUIRED = %+v", pr)
	}
	if want := e.srv.URL + "/tool?x=1&a=2"; pr.Resource.URL != want {
		t.Fatalf("resource.url %q, want %q", pr.Resource.URL, want)
	}
	a := pr.Accepts[0]
	if a.Scheme != "exact" || a.Network != "eip155:8453" || a.Amount != mwAmount || a.PayTo != mwPayTo ||
		a.Asset != "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913" || a.Extra["name"] != "USD Coin" || a.Extra["version"] != "2" {
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
	mwExposes(t, r.header)

	var body x402.PaymentRequiredBody
	if err := json.Unmarshal(r.body, &body); err != nil {
		t.Fatal(err)
	}
	if body.X402Version != 1 || body.Error != "Payment required" || len(body.Accepts) != 1 {
		t.Fatalf("body = %s", r.body)
	}
	v1 := body.Accepts[0]
	if v1.Network != "base" || v1.MaxAmountRequired != mwAmount || v1.Resource != pr.Resource.URL ||
		v1.PayTo != mwPayTo || v1.Asset != a.Asset || v1.Description != "test tool" || v1.MimeType != "application/json" ||
		v1.MaxTimeoutSeconds != a.MaxTimeoutSeconds || v1.Extra["name"] != "USD Coin" || v1.OutputSchema["input"] == nil {
		t.Fatalf("v1 accepts[0] = %+v", v1)
	}
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(r.body, &keys); err != nil || len(keys) != 3 {
		t.Fatalf("body members %v, want x402Version, error and accepts only: %s", keys, r.body)
	}
	if e.runs.Load() != 0 {
		t.Fatal("the paid handler ran without payment")
	}

	// Free routes and CORS preflights go straight to the handler.
	if r := mwDo(t, "GET", e.srv.URL+"/free", nil, ""); r.status != 200 || r.header.Get("PAYMENT-REQUIRED") != "" {
		t.Fatalf("free route: %d", r.status)
	}
	if r := mwDo(t, "OPTIONS", e.srv.URL+"/tool", nil, ""); r.status != 200 {
		t.Fatalf("OPTIONS: %d", r.status)
	}
}

// TestMiddlewarePublicBaseURL checks that resource.url uses the configured
// public base URL.
func TestMiddlewarePublicBaseURL(t *testing.T) {
	e := newMWEnv(t, func(c *x402.Config) { c.PublicBaseURL = "https://api.example.com/" })
	r := mwDo(t, "GET", e.srv.URL+"/tool?x=1", nil, "")
	if got := r.paymentRequired(t).Resource.URL; got != "https://api.example.com/tool?x=1" {
		t.Fatalf("resource.url %q", got)
	}
}

type mwStatusErr struct{ status int }

func (e mwStatusErr) Error() string   { return fmt.Sprintf("preflight says %d", e.status) }
func (e mwStatusErr) HTTPStatus() int { return e.status }

// TestMiddlewarePreflight checks that Preflight runs before any 402 (and
// before a payment is even looked at), that its errors are answered as
// problem+json with the error's status, and that the handler still gets
// the body Preflight read.
func TestMiddlewarePreflight(t *testing.T) {
	var seen atomic.Value
	e := newMWEnv(t, func(c *x402.Config) {
		c.Preflight = func(r *http.Request) error {
			b, _ := io.ReadAll(r.Body)
			seen.Store(string(b))
			switch r.URL.Query().Get("x") {
			case "bad":
				return errors.New("x: must be a number")
			case "down":
				return mwStatusErr{http.StatusServiceUnavailable}
			}
			return nil
		}
	})
	for _, tc := range []struct {
		x      string
		status int
	}{{"bad", 400}, {"down", 503}} {
		// With and without a payment: the preflight answers first.
		for _, h := range []map[string]string{nil, mwSig(e.pay(t))} {
			r := mwDo(t, "GET", e.srv.URL+"/tool?x="+tc.x, h, "")
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
	// A good request: preflight read the body, and so does the handler.
	r := mwDo(t, "POST", e.srv.URL+"/tool?x=1", mwSig(e.pay(t)), `{"a":1}`)
	if r.status != 200 {
		t.Fatalf("status %d: %s", r.status, r.body)
	}
	if seen.Load() != `{"a":1}` || r.json(t)["body"] != `{"a":1}` {
		t.Fatalf("preflight saw %q, handler saw %v", seen.Load(), r.json(t)["body"])
	}
}

// TestMiddlewareCustomWriteError checks that WriteError answers Preflight
// errors when set.
func TestMiddlewareCustomWriteError(t *testing.T) {
	e := newMWEnv(t, func(c *x402.Config) {
		c.Preflight = func(*http.Request) error { return errors.New("nope") }
		c.WriteError = func(w http.ResponseWriter, _ *http.Request, err error) {
			w.WriteHeader(http.StatusTeapot)
			_, _ = io.WriteString(w, err.Error())
		}
	})
	r := mwDo(t, "GET", e.srv.URL+"/tool", nil, "")
	if r.status != http.StatusTeapot || string(r.body) != "nope" {
		t.Fatalf("%d %s", r.status, r.body)
	}
}

// TestMiddlewareMalformedHeader checks that undecodable, oversized or
// wrong-version payment headers get 400 without PAYMENT-REQUIRED.
func TestMiddlewareMalformedHeader(t *testing.T) {
	e := newMWEnv(t)
	enc := func(s string) string { v, _ := x402.EncodeHeader(json.RawMessage(s)); return v }
	cases := []struct {
		name, header, value, reason string
	}{
		{"not base64", x402.HeaderPaymentSignature, "%%%not-base64%%%", x402.ReasonInvalidPaymentHeader},
		{"url-safe base64", x402.HeaderPaymentSignature, "eyJ4NDAyVmVyc2lvbiI6Mn0_-", x402.ReasonInvalidPaymentHeader},
		{"not JSON", x402.HeaderPaymentSignature, "aGVsbG8gd29ybGQ=", x402.ReasonInvalidPaymentHeader},
		{"no accepted", x402.HeaderPaymentSignature, enc(`{"x402Version":2,"payload":{}}`), x402.ReasonInvalidPaymentHeader},
		{"no version", x402.HeaderPaymentSignature, enc(`{"accepted":{"scheme":"exact","network":"eip155:8453"},"payload":{}}`), x402.ReasonInvalidPaymentHeader},
		{"version 3", x402.HeaderPaymentSignature, enc(`{"x402Version":3,"accepted":{"scheme":"exact","network":"eip155:8453"},"payload":{}}`), x402.ReasonInvalidX402Version},
		{"version 0 v1 header", x402.HeaderV1Payment, enc(`{"x402Version":0,"scheme":"exact","network":"base","payload":{}}`), x402.ReasonInvalidX402Version},
		{"oversized", x402.HeaderPaymentSignature, strings.Repeat("A", x402.MaxHeaderBytes+4), x402.ReasonPaymentHeaderTooLarge},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := mwDo(t, "GET", e.srv.URL+"/tool", map[string]string{tc.header: tc.value}, "")
			mwExpectRefused(t, e, r, http.StatusBadRequest, tc.reason, 0)
			if ct := r.header.Get("Content-Type"); ct != "application/problem+json" {
				t.Fatalf("Content-Type %q", ct)
			}
			mwExposes(t, r.header)
		})
	}
	if e.fac.verifies.Load() != 0 {
		t.Fatal("a malformed payment reached the facilitator")
	}
}

// TestMiddlewareNoMatch checks that a payment whose accepted terms differ
// from every offered requirement is a 402 "No matching payment
// requirements" and runs nothing.
func TestMiddlewareNoMatch(t *testing.T) {
	e := newMWEnv(t)
	sepolia, err := x402.Route{Price: mwPrice, PayTo: mwPayTo, Network: x402.NetworkBaseSepolia}.Requirements()
	if err != nil {
		t.Fatal(err)
	}
	cases := map[string]func(r *x402.PaymentRequirements){
		"amount":  func(r *x402.PaymentRequirements) { r.Amount = "1" },
		"payTo":   func(r *x402.PaymentRequirements) { r.PayTo = mwOther },
		"network": func(r *x402.PaymentRequirements) { *r = sepolia },
		"asset":   func(r *x402.PaymentRequirements) { r.Asset = mwOther },
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
			// Signed for what it claims, where that is signable.
			p := mwSign(t, e.key, e.req(), time.Now())
			r := mwDo(t, "GET", e.srv.URL+"/tool", mwSig(mwHeader(t, acc, p)), "")
			mwExpectRefused(t, e, r, http.StatusPaymentRequired, x402.ErrorNoMatchingRequirements, 0)
		})
	}
	// Case-insensitive addresses and extra additions still match.
	acc := e.req()
	acc.PayTo = strings.ToLower(acc.PayTo)
	acc.Asset = strings.ToUpper(acc.Asset[:2]) + strings.ToUpper(acc.Asset[2:])
	acc.Asset = "0x" + acc.Asset[2:]
	acc.Extra = map[string]any{"name": "USD Coin", "version": "2", "clientNote": "added"}
	r := mwDo(t, "GET", e.srv.URL+"/tool", mwSig(mwHeader(t, acc, mwSign(t, e.key, e.req(), time.Now()))), "")
	if r.status != 200 {
		t.Fatalf("case-insensitive match: status %d %s", r.status, r.body)
	}
}

// TestMiddlewareLocalVerifyFailures checks each local verification failure:
// 402 whose error is the Verifier's reason, facilitator and handler untouched.
func TestMiddlewareLocalVerifyFailures(t *testing.T) {
	e := newMWEnv(t)
	req := e.req()
	now := time.Now()
	other := req
	other.PayTo = mwOther
	cases := []struct {
		name   string
		header func() string
		reason string
	}{
		{"value tampered after signing", func() string {
			p := mwSign(t, e.key, req, now)
			p.Authorization.Value = "2499"
			return mwHeader(t, req, p)
		}, x402.ReasonValueMismatch},
		{"signed for another recipient", func() string {
			return mwHeader(t, req, mwSign(t, e.key, other, now))
		}, x402.ReasonRecipientMismatch},
		{"expired", func() string {
			return mwHeader(t, req, mwSign(t, e.key, req, now.Add(-2*time.Hour)))
		}, x402.ReasonValidBefore},
		{"not yet valid", func() string {
			p, err := x402.NewExactPayload(e.key, req, now.Add(time.Hour), 2*time.Hour)
			if err != nil {
				t.Fatal(err)
			}
			return mwHeader(t, req, p)
		}, x402.ReasonValidAfter},
		{"nonce tampered after signing", func() string {
			p := mwSign(t, e.key, req, now)
			p.Authorization.Nonce = "0x" + strings.Repeat("ab", 32)
			return mwHeader(t, req, p)
		}, x402.ReasonInvalidSignature},
		{"signed by someone else", func() string {
			p := mwSign(t, e.key, req, now)
			p.Authorization.From = mwOther
			return mwHeader(t, req, p)
		}, x402.ReasonInvalidSignature},
		{"missing signature", func() string {
			p := mwSign(t, e.key, req, now)
			p.Signature = ""
			return mwHeader(t, req, p)
		}, x402.ReasonMissingSignature},
		{"short signature", func() string {
			p := mwSign(t, e.key, req, now)
			p.Signature = p.Signature[:20]
			return mwHeader(t, req, p)
		}, x402.ReasonSignatureFormat},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := mwDo(t, "GET", e.srv.URL+"/tool", mwSig(tc.header()), "")
			mwExpectRefused(t, e, r, http.StatusPaymentRequired, tc.reason, 0)
		})
	}
	if e.fac.verifies.Load() != 0 {
		t.Fatalf("%d facilitator verifies for locally refused payments", e.fac.verifies.Load())
	}
}

// TestMiddlewareFacilitatorInvalid checks that isValid:false in an HTTP 200
// answer of a remote facilitator is a refusal (402 with its reason), the
// handler does not run, and the reservation is released.
func TestMiddlewareFacilitatorInvalid(t *testing.T) {
	var valid atomic.Bool
	local, err := x402.NewLocalFacilitator(x402.LocalFacilitatorConfig{})
	if err != nil {
		t.Fatal(err)
	}
	real := x402.FacilitatorHandler(local)
	remote := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/verify" && !valid.Load() {
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"isValid":false,"invalidReason":"invalid_exact_evm_insufficient_balance","payer":"`+mwPayer+`"}`)
			return
		}
		real.ServeHTTP(w, r)
	}))
	t.Cleanup(remote.Close)
	hf, err := x402.NewHTTPFacilitator(x402.HTTPFacilitatorConfig{URL: remote.URL})
	if err != nil {
		t.Fatal(err)
	}
	e := newMWEnv(t, func(c *x402.Config) { c.Facilitator = hf })
	h := mwSig(e.pay(t))
	r := mwDo(t, "GET", e.srv.URL+"/tool", h, "")
	mwExpectRefused(t, e, r, http.StatusPaymentRequired, "invalid_exact_evm_insufficient_balance", 0)
	// Released: the same payment goes through once the payer is funded.
	valid.Store(true)
	r = mwDo(t, "GET", e.srv.URL+"/tool", h, "")
	if r.status != 200 || e.runs.Load() != 1 || len(local.Settlements()) != 1 {
		t.Fatalf("after funding: status %d, runs %d, settlements %d", r.status, e.runs.Load(), len(local.Settlements()))
	}
}

// TestMiddlewareFacilitatorError checks that a facilitator that cannot
// answer /verify gives 502 (504 on timeout), no handler run, and a released
// reservation.
func TestMiddlewareFacilitatorError(t *testing.T) {
	e := newMWEnv(t)
	h := mwSig(e.pay(t))
	e.fac.set(func(f *mwFacilitator) { f.verifyErr = errors.New("connection refused") })
	r := mwDo(t, "GET", e.srv.URL+"/tool", h, "")
	mwExpectRefused(t, e, r, http.StatusBadGateway, x402.ReasonFacilitatorUnavailable, 0)
	e.fac.set(func(f *mwFacilitator) { f.verifyErr = fmt.Errorf("slow: %w", context.DeadlineExceeded) })
	r = mwDo(t, "GET", e.srv.URL+"/tool", h, "")
	mwExpectRefused(t, e, r, http.StatusGatewayTimeout, x402.ReasonFacilitatorUnavailable, 0)
	e.fac.set(func(f *mwFacilitator) { f.verifyErr = nil })
	if r := mwDo(t, "GET", e.srv.URL+"/tool", h, ""); r.status != 200 {
		t.Fatalf("after recovery: %d %s", r.status, r.body)
	}
}

// TestMiddlewareHandlerFailure checks that a handler answering ≥ 400 is
// passed on unchanged, nothing is settled, and the same payment then works.
func TestMiddlewareHandlerFailure(t *testing.T) {
	e := newMWEnv(t)
	h := mwSig(e.pay(t))
	e.failRuns.Store(1)
	r := mwDo(t, "GET", e.srv.URL+"/tool?x=1", h, "")
	if r.status != http.StatusServiceUnavailable || string(r.body) != `{"title":"upstream down"}` ||
		r.header.Get("Content-Type") != "application/problem+json" {
		t.Fatalf("handler failure not passed on: %d %q %s", r.status, r.header.Get("Content-Type"), r.body)
	}
	if r.header.Get(x402.HeaderPaymentResponse) != "" || e.fac.settles.Load() != 0 || len(e.events()) != 0 {
		t.Fatal("a failed handler was settled")
	}
	mwExposes(t, r.header)
	r = mwDo(t, "GET", e.srv.URL+"/tool?x=1", h, "")
	if r.status != 200 || e.runs.Load() != 2 || e.fac.settles.Load() != 1 {
		t.Fatalf("retry with the same payment: status %d runs %d settles %d", r.status, e.runs.Load(), e.fac.settles.Load())
	}
}

// TestMiddlewareHandlerPanicAndOverflow checks that a panicking handler or
// one writing past MaxResponseBytes settles nothing and frees the payment.
func TestMiddlewareHandlerPanicAndOverflow(t *testing.T) {
	e := newMWEnv(t)
	h := mwSig(e.pay(t))
	r := mwDo(t, "GET", e.srv.URL+"/big", h, "")
	mwExpectRefused(t, e, r, http.StatusInternalServerError, x402.ReasonResponseTooLarge, 1)
	req, _ := http.NewRequest("GET", e.srv.URL+"/panic", nil)
	req.Header.Set(x402.HeaderPaymentSignature, h[x402.HeaderPaymentSignature])
	if resp, err := http.DefaultClient.Do(req); err == nil {
		resp.Body.Close()
		t.Fatalf("panic: got status %d, want an aborted connection", resp.StatusCode)
	}
	if e.fac.settles.Load() != 0 {
		t.Fatal("settled after a failure")
	}
	if r := mwDo(t, "GET", e.srv.URL+"/tool", h, ""); r.status != 200 {
		t.Fatalf("payment not released: %d %s", r.status, r.body)
	}
}

// TestMiddlewareRequestTooLarge checks the 413 of an oversized body.
func TestMiddlewareRequestTooLarge(t *testing.T) {
	e := newMWEnv(t)
	r := mwDo(t, "POST", e.srv.URL+"/tool", nil, strings.Repeat("x", 5000))
	mwExpectRefused(t, e, r, http.StatusRequestEntityTooLarge, x402.ReasonRequestTooLarge, 0)
}

// TestMiddlewareSettleFailure checks a settlement refusal: 402 with a
// failing PAYMENT-RESPONSE, no PAYMENT-REQUIRED, the handler's output
// dropped; a definite refusal frees the payment, an error keeps it.
func TestMiddlewareSettleFailure(t *testing.T) {
	e := newMWEnv(t)
	h := mwSig(e.pay(t))
	e.fac.set(func(f *mwFacilitator) {
		f.settleResp = &x402.SettleResponse{Success: false, ErrorReason: "invalid_exact_evm_insufficient_balance", Network: "eip155:8453"}
	})
	r := mwDo(t, "GET", e.srv.URL+"/tool?x=secret-output", h, "")
	if r.status != http.StatusPaymentRequired || r.header.Get(x402.HeaderPaymentRequired) != "" {
		t.Fatalf("status %d, PAYMENT-REQUIRED %q", r.status, r.header.Get(x402.HeaderPaymentRequired))
	}
	sr := r.settlement(t, x402.HeaderPaymentResponse)
	if sr.Success || sr.ErrorReason != "invalid_exact_evm_insufficient_balance" || sr.Transaction != "" ||
		sr.Network != "eip155:8453" || sr.Payer != mwPayer {
		t.Fatalf("PAYMENT-RESPONSE %+v", sr)
	}
	if bytes.Contains(r.body, []byte("secret-output")) || r.json(t)["error"] != "invalid_exact_evm_insufficient_balance" {
		t.Fatalf("body %s", r.body)
	}
	if e.runs.Load() != 1 || len(e.events()) != 0 {
		t.Fatalf("runs %d events %d", e.runs.Load(), len(e.events()))
	}
	// Definite refusal: released, so the same payment can be retried.
	e.fac.set(func(f *mwFacilitator) { f.settleResp, f.settleErr = nil, errors.New("timeout talking to the chain") })
	r = mwDo(t, "GET", e.srv.URL+"/tool?x=1", h, "")
	sr = r.settlement(t, x402.HeaderPaymentResponse)
	if r.status != 402 || sr.Success || sr.ErrorReason != x402.ReasonUnexpectedSettleError {
		t.Fatalf("settle error: %d %+v", r.status, sr)
	}
	// Ambiguous failure: the reservation is kept.
	e.fac.set(func(f *mwFacilitator) { f.settleErr = nil })
	r = mwDo(t, "GET", e.srv.URL+"/tool?x=1", h, "")
	mwExpectRefused(t, e, r, http.StatusPaymentRequired, x402.ReasonPaymentInProgress, 2)
}

// TestMiddlewareSuccess checks a paid call: 200 with the handler's answer,
// PAYMENT-RESPONSE, exposed headers, private caching and one OnSettled.
func TestMiddlewareSuccess(t *testing.T) {
	e := newMWEnv(t, func(c *x402.Config) {
		c.RequestID = func(r *http.Request) string { return r.Header.Get("X-Req") }
	})
	signed := mwSign(t, e.key, e.req(), time.Now())
	hdr := mwSig(mwHeader(t, e.req(), signed))
	hdr["X-Req"] = "req-42"
	r := mwDo(t, "GET", e.srv.URL+"/tool?x=7", hdr, "")
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
	mwExposes(t, r.header)
	sr := r.settlement(t, x402.HeaderPaymentResponse)
	if !sr.Success || !strings.HasPrefix(sr.Transaction, x402.LocalTransactionPrefix) || sr.Network != "eip155:8453" ||
		!strings.EqualFold(sr.Payer, mwPayer) || sr.Amount != mwAmount {
		t.Fatalf("PAYMENT-RESPONSE %+v", sr)
	}
	ev := e.events()
	if len(ev) != 1 {
		t.Fatalf("%d OnSettled events", len(ev))
	}
	want := x402.SettledEvent{
		RequestID: "req-42", Route: "GET /tool", Method: "GET", Path: "/tool", Payer: sr.Payer, Amount: mwAmount,
		Asset: e.req().Asset, Network: "eip155:8453", PayTo: mwPayTo, Transaction: sr.Transaction, Nonce: signed.Authorization.Nonce, X402Version: 2, Status: 200,
	}
	got := ev[0]
	if got.SettledAt.IsZero() {
		t.Fatal("SettledAt not set")
	}
	got.SettledAt = time.Time{}
	if got != want {
		t.Fatalf("event\n got %+v\nwant %+v", got, want)
	}
}

// TestMiddlewareIdempotentReplay checks that the same settled payment
// presented again for the same request returns the recorded answer without
// running the handler or settling again, and that for any other request it
// is a replay refused with 402.
func TestMiddlewareIdempotentReplay(t *testing.T) {
	e := newMWEnv(t)
	h := mwSig(e.pay(t))
	first := mwDo(t, "GET", e.srv.URL+"/tool?x=1&y=2", h, "")
	if first.status != 200 {
		t.Fatalf("first: %d %s", first.status, first.body)
	}
	// Same request (query order differs: the hash sorts it).
	again := mwDo(t, "GET", e.srv.URL+"/tool?y=2&x=1", h, "")
	if again.status != 200 || !bytes.Equal(again.body, first.body) ||
		again.header.Get(x402.HeaderPaymentResponse) != first.header.Get(x402.HeaderPaymentResponse) || again.header.Get("X-Tool") != "yes" {
		t.Fatalf("replay: %d %s (first %s)", again.status, again.body, first.body)
	}
	mwExposes(t, again.header)
	if e.runs.Load() != 1 || e.fac.settles.Load() != 1 || len(e.events()) != 1 || len(e.local.Settlements()) != 1 {
		t.Fatalf("runs %d settles %d events %d", e.runs.Load(), e.fac.settles.Load(), len(e.events()))
	}
	// The replay re-announces the settlement (for a ledger that may have
	// missed it), marked as a replay and identical otherwise.
	e.mu.Lock()
	replays := append([]x402.SettledEvent(nil), e.replays...)
	e.mu.Unlock()
	if len(replays) != 1 || replays[0].Nonce != e.events()[0].Nonce || replays[0].Transaction != e.events()[0].Transaction ||
		replays[0].Payer != e.events()[0].Payer || replays[0].Amount != e.events()[0].Amount {
		t.Fatalf("replay events %+v, first %+v", replays, e.events())
	}
	// Another request with the same payment: refused.
	for _, u := range []string{"/tool?x=2&y=2", "/other?x=1&y=2"} {
		r := mwDo(t, "GET", e.srv.URL+u, h, "")
		mwExpectRefused(t, e, r, http.StatusPaymentRequired, x402.ReasonNonceAlreadyUsed, 1)
	}
	r := mwDo(t, "POST", e.srv.URL+"/tool?x=1&y=2", h, `{}`)
	mwExpectRefused(t, e, r, http.StatusPaymentRequired, x402.ReasonNonceAlreadyUsed, 1)
}

// TestMiddlewareV1 checks the v1 path: X-PAYMENT with a v1 payload (network
// "base") is verified with the same checks and answered with
// X-PAYMENT-RESPONSE.
func TestMiddlewareV1(t *testing.T) {
	e := newMWEnv(t)
	v1Header := func(network string, p x402.ExactEVMPayload) map[string]string {
		raw, _ := json.Marshal(p)
		v, err := x402.EncodeHeader(x402.PaymentPayloadV1{X402Version: 1, Scheme: "exact", Network: network, Payload: raw})
		if err != nil {
			t.Fatal(err)
		}
		return map[string]string{x402.HeaderV1Payment: v}
	}
	p := mwSign(t, e.key, e.req(), time.Now())
	r := mwDo(t, "GET", e.srv.URL+"/tool?x=v1", v1Header("base", p), "")
	if r.status != 200 || r.json(t)["x"] != "v1" {
		t.Fatalf("v1: %d %s", r.status, r.body)
	}
	if r.header.Get(x402.HeaderPaymentResponse) != "" {
		t.Fatal("v1 client answered with PAYMENT-RESPONSE")
	}
	sr := r.settlement(t, x402.HeaderV1PaymentResponse)
	if !sr.Success || sr.Network != "base" || !strings.EqualFold(sr.Payer, mwPayer) {
		t.Fatalf("X-PAYMENT-RESPONSE %+v", sr)
	}
	if ev := e.events(); len(ev) != 1 || ev[0].X402Version != 1 || ev[0].Network != "eip155:8453" {
		t.Fatalf("events %+v", ev)
	}
	// Same v1 payment, same request: replayed with X-PAYMENT-RESPONSE.
	again := mwDo(t, "GET", e.srv.URL+"/tool?x=v1", v1Header("base", p), "")
	if again.status != 200 || !bytes.Equal(again.body, r.body) || again.header.Get(x402.HeaderV1PaymentResponse) == "" {
		t.Fatalf("v1 replay: %d", again.status)
	}
	// The v2 checks apply to v1 payments.
	tampered := mwSign(t, e.key, e.req(), time.Now())
	tampered.Authorization.Value = "1"
	mwExpectRefused(t, e, mwDo(t, "GET", e.srv.URL+"/tool", v1Header("base", tampered), ""), 402, x402.ReasonValueMismatch, 1)
	expired := mwSign(t, e.key, e.req(), time.Now().Add(-2*time.Hour))
	mwExpectRefused(t, e, mwDo(t, "GET", e.srv.URL+"/tool", v1Header("base", expired), ""), 402, x402.ReasonValidBefore, 1)
	fresh := mwSign(t, e.key, e.req(), time.Now())
	for _, n := range []string{"base-sepolia", "eip155:84532", "solana"} {
		mwExpectRefused(t, e, mwDo(t, "GET", e.srv.URL+"/tool", v1Header(n, fresh), ""), 402, x402.ErrorNoMatchingRequirements, 1)
	}
	// A v1 payment of an authorization already used by v2 is a replay.
	p2 := mwSign(t, e.key, e.req(), time.Now())
	if r := mwDo(t, "GET", e.srv.URL+"/tool?x=a", mwSig(mwHeader(t, e.req(), p2)), ""); r.status != 200 {
		t.Fatalf("v2: %d", r.status)
	}
	mwExpectRefused(t, e, mwDo(t, "GET", e.srv.URL+"/tool?x=b", v1Header("base", p2), ""), 402, x402.ReasonNonceAlreadyUsed, 2)
}

// TestMiddlewareConcurrentSamePayment sends one signed payment in 50
// concurrent requests: exactly one handler run and one settlement; every
// other request gets the recorded answer or 402 payment_in_progress.
func TestMiddlewareConcurrentSamePayment(t *testing.T) {
	e := newMWEnv(t)
	h := mwSig(e.pay(t))
	const n = 50
	results := make([]mwResult, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			results[i] = mwDo(t, "GET", e.srv.URL+"/tool?x=race", h, "")
		}()
	}
	close(start)
	wg.Wait()
	if e.runs.Load() != 1 || e.fac.settles.Load() != 1 || len(e.local.Settlements()) != 1 || len(e.events()) != 1 {
		t.Fatalf("runs %d, settles %d, events %d; want 1 each", e.runs.Load(), e.fac.settles.Load(), len(e.events()))
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
		case r.status == 402 && r.paymentRequired(t).Error == x402.ReasonPaymentInProgress:
			inProgress++
		default:
			t.Fatalf("unexpected answer %d %s", r.status, r.body)
		}
	}
	if ok < 1 || ok+inProgress != n {
		t.Fatalf("ok %d, in progress %d", ok, inProgress)
	}
}

// TestMiddlewareClientGoneDuringSettle checks that a client disconnecting
// while the payment settles loses nothing: the settlement completes, and
// the same request with the same payment then gets the recorded answer.
func TestMiddlewareClientGoneDuringSettle(t *testing.T) {
	e := newMWEnv(t)
	gate, enter, done := make(chan struct{}), make(chan struct{}), make(chan struct{})
	e.fac.set(func(f *mwFacilitator) { f.settleGate, f.settleEnter, f.settleReturn = gate, enter, done })
	sig := e.pay(t)
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "GET", e.srv.URL+"/tool?x=gone", nil)
	req.Header.Set(x402.HeaderPaymentSignature, sig)
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
	time.Sleep(50 * time.Millisecond) // let the server notice the disconnection
	close(gate)
	<-done
	deadline := time.Now().Add(5 * time.Second)
	for len(e.events()) == 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if e.fac.settles.Load() != 1 || len(e.events()) != 1 {
		t.Fatalf("settles %d events %d", e.fac.settles.Load(), len(e.events()))
	}
	e.fac.set(func(f *mwFacilitator) { f.settleGate, f.settleEnter, f.settleReturn = nil, nil, nil })
	r := mwDo(t, "GET", e.srv.URL+"/tool?x=gone", mwSig(sig), "")
	if r.status != 200 || r.json(t)["x"] != "gone" || e.runs.Load() != 1 || e.fac.settles.Load() != 1 {
		t.Fatalf("retry: %d %s, runs %d settles %d", r.status, r.body, e.runs.Load(), e.fac.settles.Load())
	}
}

// TestNewMiddlewareConfig checks the configuration errors.
func TestNewMiddlewareConfig(t *testing.T) {
	local, _ := x402.NewLocalFacilitator(x402.LocalFacilitatorConfig{})
	terms := func(*http.Request) (x402.Terms, bool) { return x402.Terms{}, false }
	for name, cfg := range map[string]x402.Config{
		"no facilitator": {Terms: terms},
		"no terms":       {Facilitator: local},
		"bad base URL":   {Facilitator: local, Terms: terms, PublicBaseURL: "ftp://x"},
		"query base URL": {Facilitator: local, Terms: terms, PublicBaseURL: "https://x/?a=1"},
		"negative":       {Facilitator: local, Terms: terms, SettleTimeout: -1},
	} {
		var ce *x402.ConfigError
		if _, err := x402.NewMiddleware(cfg); !errors.As(err, &ce) {
			t.Errorf("%s: err %v, want *ConfigError", name, err)
		}
	}
	if _, err := x402.NewTerms("x"); err == nil {
		t.Error("NewTerms without routes accepted")
	}
	if _, err := x402.NewTerms("x", x402.Route{Price: "-1", PayTo: mwPayTo}); err == nil {
		t.Error("NewTerms with a bad price accepted")
	}
	two, err := x402.NewTerms("x", x402.Route{Price: "0.01", PayTo: mwPayTo}, x402.Route{Price: "0.01", PayTo: mwPayTo, Network: "base-sepolia"})
	if err != nil || len(two.PaymentRequired.Accepts) != 2 || two.PaymentRequired.Accepts[1].Network != x402.NetworkBaseSepolia {
		t.Errorf("two routes: %v %+v", err, two)
	}
}

// TestRequestHash checks what identifies a request.
func TestRequestHash(t *testing.T) {
	mk := func(method, target string) *http.Request { return httptest.NewRequest(method, target, nil) }
	base := x402.RequestHash(mk("GET", "/a?x=1&y=2"), nil)
	if x402.RequestHash(mk("GET", "/a?y=2&x=1"), nil) != base {
		t.Error("query key order changes the hash")
	}
	for _, other := range []string{
		x402.RequestHash(mk("POST", "/a?x=1&y=2"), nil),
		x402.RequestHash(mk("GET", "/b?x=1&y=2"), nil),
		x402.RequestHash(mk("GET", "/a?x=1&y=3"), nil),
		x402.RequestHash(mk("GET", "/a?x=1&y=2"), []byte("{}")),
	} {
		if other == base {
			t.Error("different requests share a hash")
		}
	}
}

// BenchmarkMiddlewarePaid measures one paid request through the pipeline
// (decode, match, local verify, reservation, LocalFacilitator verify and
// settle, recording), without the network and without the client's
// signing.
func BenchmarkMiddlewarePaid(b *testing.B) {
	local, err := x402.NewLocalFacilitator(x402.LocalFacilitatorConfig{})
	if err != nil {
		b.Fatal(err)
	}
	terms := mwTerms(b)
	mw, err := x402.NewMiddleware(x402.Config{
		Facilitator: local,
		Terms:       func(*http.Request) (x402.Terms, bool) { return terms, true },
		Logger:      slog.New(slog.DiscardHandler),
	})
	if err != nil {
		b.Fatal(err)
	}
	h := mw.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, `{"ok":true}`)
	}))
	key := mwKey(b)
	req := terms.PaymentRequired.Accepts[0]
	headers := make([]string, b.N)
	for i := range headers {
		headers[i] = mwHeader(b, req, mwSign(b, key, req, time.Now()))
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

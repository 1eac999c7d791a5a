package facilitator

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/seed1284c1d2/svc/x402"
	"github.com/seed1284c1d2/svc/x402/exact"
)

func newTestHTTPFacilitator(t *testing.T, url string, mut func(*HTTPConfig)) *HTTP {
	t.Helper()
	cfg := HTTPConfig{URL: url + "/", Timeout: 2 * time.Second, SupportedBackoff: time.Millisecond, MaxRetryAfter: 50 * time.Millisecond}
	if mut != nil {
		mut(&cfg)
	}
	f, err := NewHTTP(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// cannedServer answers every request with status and body, counting calls.
func cannedServer(t *testing.T, status int, contentType, body string) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		w.Header().Set("Content-Type", contentType)
		w.WriteHeader(status)
		_, _ = w.Write([]byte(body))
	}))
	t.Cleanup(srv.Close)
	return srv, &calls
}

func TestHTTPFacilitatorAgainstLocal(t *testing.T) {
	local := newTestLocal(t, LocalConfig{})
	var paths []string
	var auth []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		paths = append(paths, r.Method+" "+r.URL.Path)
		auth = append(auth, r.Header.Get("Authorization"))
		if r.Method == http.MethodPost && r.Header.Get("Content-Type") != "application/json" {
			t.Errorf("content type %q", r.Header.Get("Content-Type"))
		}
		http.StripPrefix("/facilitator", Handler(local)).ServeHTTP(w, r)
	}))
	defer srv.Close()
	f := newTestHTTPFacilitator(t, srv.URL+"/facilitator", func(c *HTTPConfig) {
		c.AuthHeaders = func(ctx context.Context, op string) (http.Header, error) {
			return http.Header{"Authorization": {"Bearer token-for-" + op}}, nil
		}
	})
	if f.URL() != srv.URL+"/facilitator" {
		t.Fatalf("URL %s", f.URL())
	}
	ctx := context.Background()
	req := testRequirements(t, x402.NetworkBase)
	payload, _ := testPayment(t, vecKey(t), req)

	sup, err := f.Supported(ctx)
	if err != nil || len(sup.Kinds) != 4 || sup.Kinds[0].Network != x402.NetworkBase {
		t.Fatalf("supported: %+v, %v", sup, err)
	}
	vr, err := f.Verify(ctx, payload, req)
	if err != nil || !vr.IsValid || vr.Payer != vecAddrB {
		t.Fatalf("verify: %+v, %v", vr, err)
	}
	sr, err := f.Settle(ctx, payload, req)
	if err != nil || !sr.Success || !localTxPattern.MatchString(sr.Transaction) || sr.Extra["onChain"] != false {
		t.Fatalf("settle: %+v, %v", sr, err)
	}
	// Presented again: the local facilitator deduplicates, the original
	// settlement comes back.
	sr2, err := f.Settle(ctx, payload, req)
	if err != nil || !sr2.Success || sr2.Transaction != sr.Transaction {
		t.Fatalf("second settle: %+v, %v", sr2, err)
	}
	// For other requirements: a refusal in a 200 comes back as a
	// response, not an error.
	other := req
	other.Amount = "5000"
	sr, err = f.Settle(ctx, payload, other)
	if err != nil || sr.Success || sr.ErrorReason != exact.ReasonNonceAlreadyUsed {
		t.Fatalf("settle for other requirements: %+v, %v", sr, err)
	}
	vr, err = f.Verify(ctx, payload, req)
	if err != nil || vr.IsValid || vr.InvalidReason != exact.ReasonNonceAlreadyUsed {
		t.Fatalf("verify after settle: %+v, %v", vr, err)
	}
	want := []string{"GET /facilitator/supported", "POST /facilitator/verify", "POST /facilitator/settle", "POST /facilitator/settle", "POST /facilitator/settle", "POST /facilitator/verify"}
	if strings.Join(paths, ",") != strings.Join(want, ",") {
		t.Fatalf("paths %v", paths)
	}
	wantAuth := "Bearer token-for-supported,Bearer token-for-verify,Bearer token-for-settle,Bearer token-for-settle,Bearer token-for-settle,Bearer token-for-verify"
	if strings.Join(auth, ",") != wantAuth {
		t.Fatalf("auth headers %v", auth)
	}
}

func TestHTTPFacilitatorV1Payload(t *testing.T) {
	local := newTestLocal(t, LocalConfig{})
	srv := httptest.NewServer(Handler(local))
	defer srv.Close()
	f := newTestHTTPFacilitator(t, srv.URL, nil)
	req := testRequirements(t, x402.NetworkBase)
	_, p := testPayment(t, vecKey(t), req)
	payload := wrapPayment(t, x402.PaymentRequirements{Scheme: x402.SchemeExact, Network: x402.NetworkBase}, p)
	payload.X402Version = 1
	sr, err := f.Settle(context.Background(), payload, req)
	if err != nil || !sr.Success || sr.Network != "base" {
		t.Fatalf("v1 settle: %+v, %v", sr, err)
	}
}

func TestHTTPFacilitatorAnswers(t *testing.T) {
	req := testRequirements(t, x402.NetworkBase)
	payload, _ := testPayment(t, vecKey(t), req)
	ctx := context.Background()
	type want struct {
		status  int    // Error.StatusCode, or 0 for no error
		reason  string // response reason or Error.Reason
		message string // substring of the error
	}
	for _, c := range []struct {
		name        string
		status      int
		ctype, body string
		verify      want
		settle      want
	}{
		{"200 isValid false / success false", 200, "application/json",
			`{"isValid":false,"invalidReason":"invalid_exact_evm_signature","success":false,"errorReason":"invalid_exact_evm_signature","transaction":"","network":"eip155:8453"}`,
			want{reason: exact.ReasonInvalidSignature}, want{reason: exact.ReasonInvalidSignature}},
		{"500 with x402 JSON", 500, "application/json",
			`{"isValid":false,"invalidReason":"insufficient_funds","success":false,"errorReason":"insufficient_funds","transaction":"","network":"eip155:8453"}`,
			want{reason: "insufficient_funds"}, want{reason: "insufficient_funds"}},
		{"500 with other JSON", 500, "application/json", `{"error":"database down"}`,
			want{status: 500, message: "database down"}, want{status: 500, message: "database down"}},
		{"400 with isValid true", 400, "application/json", `{"isValid":true,"success":true,"transaction":"0x1","network":"eip155:8453"}`,
			want{status: 400}, want{status: 400}},
		{"502 with isValid false but no reason", 502, "application/json", `{"isValid":false,"success":false,"network":"eip155:8453"}`,
			want{status: 502}, want{status: 502}},
		{"500 with HTML", 500, "text/html", `<html><body>Internal Server Error</body></html>`,
			want{status: 500, message: "non-JSON body"}, want{status: 500, message: "non-JSON body"}},
		{"malformed 200", 200, "application/json", `{"isValid":tru`,
			want{status: 200, message: "malformed response"}, want{status: 200, message: "malformed response"}},
		{"200 HTML", 200, "text/html", `<html></html>`,
			want{status: 200, message: "malformed response"}, want{status: 200, message: "malformed response"}},
		{"200 missing fields", 200, "application/json", `{"payer":"0x1"}`,
			want{status: 200, message: "isValid is required"}, want{status: 200, message: "success is required"}},
		{"200 settle without network", 200, "application/json", `{"isValid":true,"success":true,"transaction":"0x1"}`,
			want{}, want{status: 200, message: "network is required"}},
		{"200 settle success without transaction", 200, "application/json", `{"isValid":true,"success":true,"network":"eip155:8453"}`,
			want{}, want{status: 200, message: "transaction is required"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv, calls := cannedServer(t, c.status, c.ctype, c.body)
			f := newTestHTTPFacilitator(t, srv.URL, nil)
			vr, verr := f.Verify(ctx, payload, req)
			checkAnswer(t, "verify", verr, vr.IsValid, vr.InvalidReason, c.verify)
			sr, serr := f.Settle(ctx, payload, req)
			checkAnswer(t, "settle", serr, sr.Success, sr.ErrorReason, c.settle)
			if calls.Load() != 2 {
				t.Fatalf("%d calls, want 2 (no retry)", calls.Load())
			}
		})
	}
}

func checkAnswer(t *testing.T, op string, err error, ok bool, reason string, w struct {
	status  int
	reason  string
	message string
}) {
	t.Helper()
	if w.status == 0 {
		if err != nil {
			t.Fatalf("%s: unexpected error %v", op, err)
		}
		if w.reason != "" && (ok || reason != w.reason) {
			t.Fatalf("%s: ok=%v reason=%q, want refusal %q", op, ok, reason, w.reason)
		}
		return
	}
	var fe *Error
	if !errors.As(err, &fe) {
		t.Fatalf("%s: err = %v, want *Error", op, err)
	}
	if fe.Op != op || fe.StatusCode != w.status || !strings.Contains(fe.Error(), w.message) {
		t.Fatalf("%s: %+v (%v), want status %d and %q", op, fe, fe, w.status, w.message)
	}
	if strings.Contains(fe.Error(), "<html>") {
		t.Fatalf("%s: error echoes the body: %v", op, fe)
	}
}

func TestHTTPFacilitatorTimeout(t *testing.T) {
	release := make(chan struct{})
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(release)
	// Without a caller deadline, /settle is bounded by SettleTimeout, the
	// others by Timeout.
	f := newTestHTTPFacilitator(t, srv.URL, func(c *HTTPConfig) {
		c.Timeout = 50 * time.Millisecond
		c.SettleTimeout = 80 * time.Millisecond
	})
	req := testRequirements(t, x402.NetworkBase)
	payload, _ := testPayment(t, vecKey(t), req)
	for _, op := range []string{OpVerify, OpSettle, OpSupported} {
		start := time.Now()
		var err error
		switch op {
		case OpVerify:
			_, err = f.Verify(context.Background(), payload, req)
		case OpSettle:
			_, err = f.Settle(context.Background(), payload, req)
		case OpSupported:
			_, err = f.Supported(context.Background())
		}
		var fe *Error
		if !errors.As(err, &fe) || !fe.Timeout() || fe.Op != op || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("%s: err = %v, want a timeout", op, err)
		}
		if d := time.Since(start); d > time.Second {
			t.Fatalf("%s took %v", op, d)
		}
		if op == OpSettle && !strings.Contains(err.Error(), "outcome is unknown") {
			t.Fatalf("settle timeout message: %v", err)
		}
	}
	if calls.Load() != 3 {
		t.Fatalf("%d calls, want 3", calls.Load())
	}
	// The caller's own deadline applies too.
	f = newTestHTTPFacilitator(t, srv.URL, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	if _, err := f.Verify(ctx, payload, req); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("caller deadline: %v", err)
	}
}

func TestHTTPFacilitatorRetries429OnlyForSupported(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := calls.Add(1)
		if r.URL.Path == "/supported" && n >= 3 {
			_, _ = w.Write([]byte(`{"kinds":[{"x402Version":2,"scheme":"exact","network":"eip155:8453"}],"extensions":[],"signers":{}}`))
			return
		}
		w.Header().Set("Retry-After", "3600") // capped by MaxRetryAfter
		w.WriteHeader(http.StatusTooManyRequests)
	}))
	defer srv.Close()
	f := newTestHTTPFacilitator(t, srv.URL, nil)
	start := time.Now()
	sup, err := f.Supported(context.Background())
	if err != nil || len(sup.Kinds) != 1 || calls.Load() != 3 {
		t.Fatalf("supported: %+v, %v after %d calls", sup, err, calls.Load())
	}
	if d := time.Since(start); d < 100*time.Millisecond || d > 2*time.Second {
		t.Fatalf("two capped waits took %v, want ≈ 2 × 50 ms", d)
	}
	// Verify and settle: one call each, 429 is an error.
	req := testRequirements(t, x402.NetworkBase)
	payload, _ := testPayment(t, vecKey(t), req)
	calls.Store(0)
	_, err = f.Verify(context.Background(), payload, req)
	var fe *Error
	if !errors.As(err, &fe) || fe.StatusCode != 429 {
		t.Fatalf("verify: %v", err)
	}
	_, err = f.Settle(context.Background(), payload, req)
	if !errors.As(err, &fe) || fe.StatusCode != 429 {
		t.Fatalf("settle: %v", err)
	}
	if calls.Load() != 2 {
		t.Fatalf("%d calls for verify+settle, want 2", calls.Load())
	}
	// Supported gives up after SupportedAttempts.
	calls.Store(-100)
	_, err = f.Supported(context.Background())
	if !errors.As(err, &fe) || fe.StatusCode != 429 || calls.Load() != -100+DefaultSupportedAttempts {
		t.Fatalf("supported exhausted: %v after %d calls", err, calls.Load()+100)
	}
}

func TestHTTPFacilitatorSettleNeverRetried(t *testing.T) {
	for _, status := range []int{429, 500, 502, 503} {
		srv, calls := cannedServer(t, status, "text/plain", "busy")
		f := newTestHTTPFacilitator(t, srv.URL, nil)
		req := testRequirements(t, x402.NetworkBase)
		payload, _ := testPayment(t, vecKey(t), req)
		if _, err := f.Settle(context.Background(), payload, req); err == nil {
			t.Fatalf("%d: no error", status)
		}
		if calls.Load() != 1 {
			t.Fatalf("%d: %d settle calls", status, calls.Load())
		}
	}
	// A dropped connection is not retried either.
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		hj, ok := w.(http.Hijacker)
		if !ok {
			t.Error("no hijacker")
			return
		}
		conn, _, _ := hj.Hijack()
		conn.Close()
	}))
	defer srv.Close()
	f := newTestHTTPFacilitator(t, srv.URL, nil)
	req := testRequirements(t, x402.NetworkBase)
	payload, _ := testPayment(t, vecKey(t), req)
	_, err := f.Settle(context.Background(), payload, req)
	var fe *Error
	if !errors.As(err, &fe) || fe.StatusCode != 0 || calls.Load() != 1 {
		t.Fatalf("dropped connection: %v after %d calls", err, calls.Load())
	}
}

func TestHTTPFacilitatorAuthHookError(t *testing.T) {
	srv, calls := cannedServer(t, 200, "application/json", `{"isValid":true}`)
	boom := errors.New("no credentials")
	f := newTestHTTPFacilitator(t, srv.URL, func(c *HTTPConfig) {
		c.AuthHeaders = func(context.Context, string) (http.Header, error) { return nil, boom }
	})
	req := testRequirements(t, x402.NetworkBase)
	payload, _ := testPayment(t, vecKey(t), req)
	if _, err := f.Verify(context.Background(), payload, req); !errors.Is(err, boom) {
		t.Fatalf("err = %v", err)
	}
	if calls.Load() != 0 {
		t.Fatal("request sent without auth")
	}
}

func TestHTTPFacilitatorLargeResponse(t *testing.T) {
	srv, _ := cannedServer(t, 200, "application/json", `{"isValid":true,"pad":"`+strings.Repeat("x", MaxResponseBytes)+`"}`)
	f := newTestHTTPFacilitator(t, srv.URL, nil)
	req := testRequirements(t, x402.NetworkBase)
	payload, _ := testPayment(t, vecKey(t), req)
	_, err := f.Verify(context.Background(), payload, req)
	var fe *Error
	if !errors.As(err, &fe) || !strings.Contains(err.Error(), "larger than") {
		t.Fatalf("err = %v", err)
	}
}

func TestNewHTTPFacilitatorConfig(t *testing.T) {
	for _, u := range []string{"", "facilitator", "ftp://x", "http://", "https://x/#frag", "https://x/?", "://x", "mailto:a@b", "https://u:secret@/p"} {
		_, err := NewHTTP(HTTPConfig{URL: u})
		if err == nil {
			t.Errorf("%q accepted", u)
		} else if strings.Contains(err.Error(), "secret") {
			t.Errorf("%q: the error repeats the URL: %v", u, err)
		}
	}
	f, err := NewHTTP(HTTPConfig{URL: "https://x402.org/facilitator///"})
	if err != nil || f.URL() != "https://x402.org/facilitator" || f.cfg.Timeout != DefaultTimeout || f.cfg.SettleTimeout != DefaultSettleTimeout {
		t.Fatalf("%v %v", f, err)
	}
	// A query (an API key) is kept for the requests, not in URL().
	f, err = NewHTTP(HTTPConfig{URL: "https://key:secret@fac.example/v2/?key=k1&x=y"})
	if err != nil || f.URL() != "https://fac.example/v2" || f.base != "https://key:secret@fac.example/v2" || f.query != "key=k1&x=y" {
		t.Fatalf("%+v %v", f, err)
	}
	if _, err := NewHTTP(HTTPConfig{URL: "https://x", SettleTimeout: -1}); err == nil {
		t.Fatal("negative SettleTimeout accepted")
	}
}

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		v    string
		want time.Duration
	}{
		{"", time.Second}, {"2", 2 * time.Second}, {"0", 0}, {"3600", 30 * time.Second}, {"99999999999999999", 30 * time.Second},
		{"-5", time.Second}, {"soon", time.Second},
		{now.Add(5 * time.Second).Format(http.TimeFormat), 5 * time.Second}, {now.Add(-time.Hour).Format(http.TimeFormat), 0},
	} {
		if got := retryAfter(c.v, now, time.Second, 30*time.Second); got != c.want {
			t.Errorf("retryAfter(%q) = %v, want %v", c.v, got, c.want)
		}
	}
}

// slowFacilitator answers /settle and /verify after delay on 127.0.0.1.
func slowFacilitator(t *testing.T, delay time.Duration) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-time.After(delay):
		case <-r.Context().Done():
			return
		}
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/settle":
			_, _ = w.Write([]byte(`{"success":true,"transaction":"0xabc","network":"eip155:8453","payer":"` + vecAddrB + `"}`))
		case "/verify":
			_, _ = w.Write([]byte(`{"isValid":true,"payer":"` + vecAddrB + `"}`))
		default:
			_, _ = w.Write([]byte(`{"kinds":[]}`))
		}
	}))
	t.Cleanup(srv.Close)
	if !strings.HasPrefix(srv.URL, "http://127.0.0.1:") {
		t.Fatalf("test server on %s, want 127.0.0.1", srv.URL)
	}
	return srv
}

// TestHTTPFacilitatorSettleOutlivesTimeout checks that /settle is bounded by
// the caller's deadline only: a facilitator settling in longer than Timeout
// but within the deadline is a success, whatever limits the http.Client and
// its transport carry; /verify keeps the Timeout bound.
func TestHTTPFacilitatorSettleOutlivesTimeout(t *testing.T) {
	const timeout, delay, deadline = 200 * time.Millisecond, 600 * time.Millisecond, 2 * time.Second
	srv := slowFacilitator(t, delay)
	req := testRequirements(t, x402.NetworkBase)
	payload, _ := testPayment(t, vecKey(t), req)
	userTransport := &http.Transport{ResponseHeaderTimeout: 100 * time.Millisecond}
	for name, client := range map[string]*http.Client{
		"default client":                  nil,
		"client with Timeout":             {Timeout: 100 * time.Millisecond},
		"transport with response timeout": {Transport: userTransport, Timeout: 150 * time.Millisecond},
	} {
		t.Run(name, func(t *testing.T) {
			f := newTestHTTPFacilitator(t, srv.URL, func(c *HTTPConfig) {
				c.Timeout = timeout
				c.HTTPClient = client
			})
			ctx, cancel := context.WithTimeout(context.Background(), deadline)
			defer cancel()
			start := time.Now()
			sr, err := f.Settle(ctx, payload, req)
			if err != nil || !sr.Success || sr.Transaction != "0xabc" {
				t.Fatalf("settle after %v: %+v, %v", time.Since(start), sr, err)
			}
			if d := time.Since(start); d < delay {
				t.Fatalf("settle answered in %v, before the facilitator did", d)
			}
			// /verify keeps its own bound.
			start = time.Now()
			_, err = f.Verify(ctx, payload, req)
			var fe *Error
			if !errors.As(err, &fe) || !fe.Timeout() || fe.Op != OpVerify {
				t.Fatalf("verify: %v, want a timeout", err)
			}
			if d := time.Since(start); d < timeout-10*time.Millisecond || d > delay {
				t.Fatalf("verify timed out after %v, want about %v", d, timeout)
			}
		})
	}
	if userTransport.ResponseHeaderTimeout != 100*time.Millisecond {
		t.Fatal("the caller's transport was modified")
	}

	// The caller's deadline still bounds /settle.
	f := newTestHTTPFacilitator(t, srv.URL, func(c *HTTPConfig) { c.Timeout = timeout })
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := f.Settle(ctx, payload, req)
	var fe *Error
	if !errors.As(err, &fe) || !fe.Timeout() || !strings.Contains(err.Error(), "outcome is unknown") {
		t.Fatalf("settle past the caller's deadline: %v", err)
	}
	if d := time.Since(start); d > delay {
		t.Fatalf("settle returned after %v, past the caller's deadline", d)
	}
	// A caller deadline shorter than Timeout bounds /verify.
	vctx, vcancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer vcancel()
	start = time.Now()
	if _, err := f.Verify(vctx, payload, req); !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > timeout {
		t.Fatalf("verify with a short caller deadline: %v after %v", err, time.Since(start))
	}
}

// TestHTTPFacilitatorErrorsRedactURL checks that facilitator errors name
// the endpoint and the authorization but never the URL's credentials or
// query, while the requests do carry them.
func TestHTTPFacilitatorErrorsRedactURL(t *testing.T) {
	var gotKey, gotUser, gotPass string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotKey = r.URL.Query().Get("key")
		gotUser, gotPass, _ = r.BasicAuth()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadGateway)
		_, _ = w.Write([]byte(`{"error":"upstream down"}`))
	}))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	secretURL := "http://apiuser:s3cr3tpass@" + host + "/fac/?key=k3yvalue"
	f := newTestHTTPFacilitator(t, "", func(c *HTTPConfig) { c.URL = secretURL })
	req := testRequirements(t, x402.NetworkBase)
	payload, p := testPayment(t, vecKey(t), req)
	leaks := func(s string) bool {
		return strings.Contains(s, "apiuser") || strings.Contains(s, "s3cr3t") || strings.Contains(s, "k3yvalue") || strings.Contains(s, "key=")
	}

	_, err := f.Settle(context.Background(), payload, req)
	var fe *Error
	if !errors.As(err, &fe) || fe.StatusCode != http.StatusBadGateway {
		t.Fatalf("settle: %v", err)
	}
	if gotKey != "k3yvalue" || gotUser != "apiuser" || gotPass != "s3cr3tpass" {
		t.Fatalf("the request lacks the URL's query or credentials: key %q user %q pass %q", gotKey, gotUser, gotPass)
	}
	msg := err.Error()
	if leaks(msg) || leaks(fmt.Sprintf("%+v", *fe)) {
		t.Fatalf("the error leaks the URL's secrets: %s", msg)
	}
	for _, want := range []string{"settle", srv.URL + "/fac/settle", "HTTP 502", "upstream down", x402.NetworkBase, p.Authorization.From, p.Authorization.Nonce} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q lacks %q", msg, want)
		}
	}
	if fe.Endpoint != srv.URL+"/fac/settle" || fe.Payer != p.Authorization.From || fe.Nonce != p.Authorization.Nonce || fe.Network != x402.NetworkBase || fe.Elapsed <= 0 {
		t.Fatalf("error fields %+v", *fe)
	}
	if strings.Contains(msg, p.Signature[2:20]) {
		t.Fatal("the error carries the signature")
	}
	if leaks(f.URL()) {
		t.Fatalf("URL() = %s", f.URL())
	}

	// A transport failure: net/http's *url.Error names the URL; ours is
	// redacted and still unwraps.
	srv.Close()
	for _, op := range []string{OpVerify, OpSettle, OpSupported} {
		var err error
		switch op {
		case OpVerify:
			_, err = f.Verify(context.Background(), payload, req)
		case OpSettle:
			_, err = f.Settle(context.Background(), payload, req)
		default:
			_, err = f.Supported(context.Background())
		}
		var ue *url.Error
		if !errors.As(err, &fe) || !errors.As(err, &ue) || fe.StatusCode != 0 {
			t.Fatalf("%s: %v", op, err)
		}
		if leaks(err.Error()) || leaks(ue.URL) {
			t.Fatalf("%s: the error leaks the URL's secrets: %v", op, err)
		}
		if !strings.Contains(err.Error(), srv.URL+"/fac/"+op) {
			t.Fatalf("%s: the error does not name the endpoint: %v", op, err)
		}
	}

	// Logs: the warning records carry the same redacted text.
	var logs strings.Builder
	f = newTestHTTPFacilitator(t, "", func(c *HTTPConfig) {
		c.URL = secretURL
		c.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	})
	_, _ = f.Settle(context.Background(), payload, req)
	if logs.Len() == 0 || leaks(logs.String()) {
		t.Fatalf("logs: %s", logs.String())
	}
}

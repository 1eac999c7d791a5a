package httpserver_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/seed1284c1d2/svc/httpserver"
	"github.com/seed1284c1d2/svc/store"
	"github.com/seed1284c1d2/svc/tools"
	"github.com/seed1284c1d2/svc/x402"
	"github.com/seed1284c1d2/svc/x402/client"
	"github.com/seed1284c1d2/svc/x402/engine"
	"github.com/seed1284c1d2/svc/x402/exact"
	"github.com/seed1284c1d2/svc/xau"
)

func TestNotFoundAndMethodNotAllowed(t *testing.T) {
	f := newFixture(t, fixtureOptions{})
	resp, body := do(t, f.rawQueryRequest(t, "/api/nope", "secret=abc"))
	p := mustProblem(t, resp, body, http.StatusNotFound)
	if p.Code != "not_found" || p.Instance != "/api/nope" || p.RequestID == "" {
		t.Fatalf("404 problem %s", body)
	}

	req, _ := http.NewRequest(http.MethodDelete, f.url+"/api/risk-levels", nil)
	resp, body = do(t, req)
	p = mustProblem(t, resp, body, http.StatusMethodNotAllowed)
	if p.Code != "method_not_allowed" || resp.Header.Get("Allow") != "OPTIONS, POST" {
		t.Fatalf("405 problem %s, Allow %q", body, resp.Header.Get("Allow"))
	}
	req, _ = http.NewRequest(http.MethodPost, f.url+"/api/session-state", strings.NewReader("{}"))
	resp, body = do(t, req)
	mustProblem(t, resp, body, http.StatusMethodNotAllowed)
	if allow := resp.Header.Get("Allow"); !strings.Contains(allow, "GET") {
		t.Fatalf("Allow %q", allow)
	}
}

func TestBodyLimit413(t *testing.T) {
	const limit = 4096
	f := newFixture(t, fixtureOptions{bodyLimit: limit})
	big := `{"csv":"` + strings.Repeat("a,b\\n", limit) + `"}`
	// Announced length over the limit.
	resp, body := do(t, f.request(t, f.tool(t, "csv-profile"), big))
	p := mustProblem(t, resp, body, http.StatusRequestEntityTooLarge)
	if resp.Header.Get(x402.HeaderPaymentRequired) != "" || p.Code != "too_large" {
		t.Fatalf("413 %s with an offer %q", body, resp.Header.Get(x402.HeaderPaymentRequired))
	}
	// Chunked body (no Content-Length) over the limit.
	req, _ := http.NewRequest(http.MethodPost, f.url+"/api/csv-profile", io.MultiReader(strings.NewReader(big)))
	req.ContentLength = -1
	resp, body = do(t, req)
	if resp.StatusCode != http.StatusRequestEntityTooLarge || resp.Header.Get(x402.HeaderPaymentRequired) != "" {
		t.Fatalf("chunked: status %d %s", resp.StatusCode, body)
	}
	// Under the limit: offered payment.
	resp, _ = do(t, f.request(t, f.tool(t, "csv-profile"), `{"csv":"a,b\n1,2"}`))
	if resp.StatusCode != http.StatusPaymentRequired {
		t.Fatalf("small body: status %d", resp.StatusCode)
	}
}

func TestRateLimitFreeRoutesOnly(t *testing.T) {
	f := newFixture(t, fixtureOptions{rate: 1, burst: 3})
	for i := range 3 {
		resp, body := do(t, f.rawQueryRequest(t, "/metrics", ""))
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("request %d: %d %s", i, resp.StatusCode, body)
		}
	}
	resp, body := do(t, f.rawQueryRequest(t, "/health", ""))
	p := mustProblem(t, resp, body, http.StatusTooManyRequests)
	ra, err := strconv.Atoi(resp.Header.Get("Retry-After"))
	if err != nil || ra < 1 || p.Code != "rate_limited" {
		t.Fatalf("429 Retry-After %q, problem %s", resp.Header.Get("Retry-After"), body)
	}
	// Unknown routes are free routes too.
	resp, body = do(t, f.rawQueryRequest(t, "/nope", ""))
	mustProblem(t, resp, body, http.StatusTooManyRequests)
	// Paid routes are not limited.
	tool := f.tool(t, "risk-levels")
	for i := range 20 {
		resp, body := do(t, f.request(t, tool, string(tool.ExampleInput)))
		if resp.StatusCode != http.StatusPaymentRequired {
			t.Fatalf("paid request %d: %d %s", i, resp.StatusCode, body)
		}
	}
}

// slowTerminal wraps a terminal: Quote signals that it started and waits
// for release (or its context).
type slowTerminal struct {
	xau.Terminal
	started chan struct{}
	release chan struct{}
	once    sync.Once
}

func (s *slowTerminal) Quote(ctx context.Context, symbol string) (xau.Quote, error) {
	s.once.Do(func() { close(s.started) })
	select {
	case <-s.release:
	case <-ctx.Done():
		return xau.Quote{}, ctx.Err()
	}
	return s.Terminal.Quote(ctx, symbol)
}

// TestGracefulShutdownDrainsPaidCall: Shutdown waits for a paid call in
// flight, which completes with its settlement.
func TestGracefulShutdownDrainsPaidCall(t *testing.T) {
	slow := &slowTerminal{Terminal: simulated(t), started: make(chan struct{}), release: make(chan struct{})}
	f := newFixture(t, fixtureOptions{terminal: slow})
	payer := newPayer(t)
	type result struct {
		status int
		sr     *x402.SettleResponse
		body   string
		err    error
	}
	done := make(chan result, 1)
	go func() {
		req, _ := http.NewRequest(http.MethodGet, f.url+"/api/xau/quote", nil)
		resp, err := client.New(payer, client.WithMaxAmount("$0.10")).Do(req)
		if err != nil {
			done <- result{err: err}
			return
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		sr, _ := client.PaymentResponse(resp)
		done <- result{status: resp.StatusCode, sr: sr, body: string(b)}
	}()
	select {
	case <-slow.started:
	case <-time.After(10 * time.Second):
		t.Fatal("the paid call never reached the tool")
	}
	if n := f.srv.InFlight(); n != 1 {
		t.Fatalf("%d requests in flight, want 1", n)
	}
	shut := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		shut <- f.srv.Shutdown(ctx)
	}()
	// New connections are refused once shutdown began.
	deadline := time.Now().Add(5 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", strings.TrimPrefix(f.url, "http://"), 200*time.Millisecond)
		if err != nil {
			break
		}
		c.Close()
		if time.Now().After(deadline) {
			t.Fatal("the listener still accepts connections during shutdown")
		}
		time.Sleep(10 * time.Millisecond)
	}
	select {
	case err := <-shut:
		t.Fatalf("Shutdown returned %v before the paid call finished", err)
	case <-time.After(100 * time.Millisecond):
	}
	close(slow.release)
	r := <-done
	if r.err != nil || r.status != http.StatusOK || r.sr == nil || !r.sr.Success {
		t.Fatalf("paid call during shutdown: %+v", r)
	}
	if err := <-shut; err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	ps, err := f.st.PayerStats(context.Background(), payer.Address())
	if err != nil || ps.PaidCalls != 1 {
		t.Fatalf("ledger after shutdown: %+v %v", ps, err)
	}
}

// TestToolFailureAfterVerificationNotSettled: a terminal that passes the
// health check but fails the call gives 503, and a regex over its time
// limit gives 504; neither is settled nor recorded.
func TestToolFailureAfterVerificationNotSettled(t *testing.T) {
	sc := xau.NewScripted(testNow)
	sc.SetFailure(&xau.Error{Op: "quote", Kind: xau.ErrUnavailable, Reason: "upstream timed out"})
	f := newFixture(t, fixtureOptions{terminal: sc, env: tools.Env{RegexTimeout: 20 * time.Millisecond}})
	payer := newPayer(t)

	resp, body := pay(t, payer, f.rawQueryRequest(t, "/api/xau/quote", ""))
	mustProblem(t, resp, body, http.StatusServiceUnavailable)
	if resp.Header.Get(x402.HeaderPaymentResponse) != "" {
		t.Fatal("a failed call carries a PAYMENT-RESPONSE")
	}

	start := time.Now()
	resp, body = pay(t, payer, f.request(t, f.tool(t, "regex-test"), `{"pattern":"(a+)+$","text":"`+strings.Repeat("a", 40)+`!"}`))
	p := mustProblem(t, resp, body, http.StatusGatewayTimeout)
	if p.Code != "timeout" || time.Since(start) > 5*time.Second {
		t.Fatalf("regex timeout: %s after %s", body, time.Since(start))
	}
	if n := len(f.local.Settlements()); n != 0 {
		t.Fatalf("%d settlements after failed calls", n)
	}
	ps, err := f.st.PayerStats(context.Background(), payer.Address())
	if err != nil || ps.PaidCalls != 0 {
		t.Fatalf("ledger: %+v %v", ps, err)
	}
	if sc.Calls().Quote != 1 {
		t.Fatalf("terminal quote calls %d, want 1 (after payment verification)", sc.Calls().Quote)
	}
}

func TestDevModeRefusesPublicAddress(t *testing.T) {
	cat, local := devParts(t)
	st := openTestStore(t)
	cfg := httpserver.Config{Catalog: cat, Facilitator: local, Store: st, PayTo: testPayTo, Logger: slog.New(slog.DiscardHandler)}
	for _, addr := range []string{"0.0.0.0:8080", ":8080", "[::]:8080", "192.0.2.1:8080"} {
		c := cfg
		c.Addr = addr
		if _, err := httpserver.New(c); err == nil || !strings.Contains(err.Error(), "dev mode") {
			t.Fatalf("dev mode on %s: %v", addr, err)
		}
	}
	for _, addr := range []string{"127.0.0.1:8080", "[::1]:8080", "localhost:8080"} {
		c := cfg
		c.Addr = addr
		if _, err := httpserver.New(c); err != nil {
			t.Fatalf("dev mode on %s: %v", addr, err)
		}
	}
	// Serve refuses a listener on all interfaces, even without Addr: the
	// local facilitator means dev mode whatever DevMode says.
	srv, err := httpserver.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !srv.DevMode() {
		t.Fatal("a local facilitator must mean dev mode")
	}
	ln, err := net.Listen("tcp", "0.0.0.0:0")
	if err != nil {
		t.Skipf("cannot listen on all interfaces: %v", err)
	}
	if err := srv.Serve(ln); err == nil || !strings.Contains(err.Error(), "dev mode") {
		t.Fatalf("Serve on %s: %v", ln.Addr(), err)
	}
}

func TestConfigErrors(t *testing.T) {
	cat, local := devParts(t)
	st := openTestStore(t)
	ok := httpserver.Config{Catalog: cat, Facilitator: local, Store: st, PayTo: testPayTo}
	cases := map[string]func(*httpserver.Config){
		"no catalog":     func(c *httpserver.Config) { c.Catalog = nil },
		"no facilitator": func(c *httpserver.Config) { c.Facilitator = nil },
		"no store":       func(c *httpserver.Config) { c.Store = nil },
		"bad payTo":      func(c *httpserver.Config) { c.PayTo = "0x1234" },
		"zero payTo":     func(c *httpserver.Config) { c.PayTo = "0x0000000000000000000000000000000000000000" },
		"other network":  func(c *httpserver.Config) { c.Network = "eip155:84532" },
		"body limit":     func(c *httpserver.Config) { c.BodyLimit = 1 << 10 },
		"route conflict": func(c *httpserver.Config) {
			c.Routes = []httpserver.Route{{Pattern: "POST /api/risk-levels", Handler: http.NotFoundHandler(), Free: true}}
		},
	}
	for name, mut := range cases {
		c := ok
		mut(&c)
		if _, err := httpserver.New(c); err == nil {
			t.Errorf("%s: New accepted the configuration", name)
		}
	}
	if _, err := httpserver.New(ok); err != nil {
		t.Fatal(err)
	}
}

// TestMountedRoutes: extra routes are served and free ones rate-limited;
// the server has no catalog listing of its own (discovery mounts it), and
// its 404 answers point at the listing once one is mounted.
func TestMountedRoutes(t *testing.T) {
	find := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"ok":true,"q":"`+r.URL.Query().Get("q")+`"}`)
	})
	catalog := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, `{"mounted":true}`)
	})
	f := newFixture(t, fixtureOptions{rate: 1, burst: 2, routes: []httpserver.Route{
		{Pattern: "GET /api/find", Handler: find, Free: true},
		{Pattern: "GET /api/catalog", Handler: catalog, Free: true},
	}})
	resp, body := do(t, f.rawQueryRequest(t, "/api/find", "q=gold"))
	if resp.StatusCode != http.StatusOK || string(body) != `{"ok":true,"q":"gold"}` {
		t.Fatalf("find: %d %s", resp.StatusCode, body)
	}
	resp, body = do(t, f.rawQueryRequest(t, "/api/catalog", ""))
	if resp.StatusCode != http.StatusOK || string(body) != `{"mounted":true}` {
		t.Fatalf("mounted catalog: %d %s", resp.StatusCode, body)
	}
	resp, body = do(t, f.rawQueryRequest(t, "/api/find", "q=x"))
	mustProblem(t, resp, body, http.StatusTooManyRequests)

	// Without a mounted listing there is none, and a 404 does not point at it.
	g := newFixture(t, fixtureOptions{})
	resp, body = do(t, g.rawQueryRequest(t, "/api/catalog", ""))
	if p := mustProblem(t, resp, body, http.StatusNotFound); strings.Contains(p.Detail, "/api/catalog") {
		t.Fatalf("404 without a listing points at it: %s", body)
	}
	h := newFixture(t, fixtureOptions{routes: []httpserver.Route{{Pattern: "GET /api/catalog", Handler: catalog, Free: true}}})
	resp, body = do(t, h.rawQueryRequest(t, "/nope", ""))
	if p := mustProblem(t, resp, body, http.StatusNotFound); !strings.Contains(p.Detail, "GET /api/catalog") {
		t.Fatalf("404 with a listing does not point at it: %s", body)
	}
	if err := f.srv.Mount("GET /late", find, true); err == nil {
		t.Fatal("Mount after the server started succeeded")
	}
}

func TestHealth(t *testing.T) {
	sw := xau.NewSwitchable(simulated(t))
	f := newFixture(t, fixtureOptions{terminal: sw})
	resp, body := do(t, f.rawQueryRequest(t, "/health", ""))
	var h httpserver.Health
	if err := json.Unmarshal(body, &h); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("health %d %s: %v", resp.StatusCode, body, err)
	}
	if h.Status != "ok" || !h.DevMode || !strings.Contains(h.DevModeNote, "settles nothing on chain") || h.Version != "test" ||
		h.Network != "eip155:8453" || h.PayTo != testPayTo || h.Tools != 13 ||
		h.Terminal.Status != "up" || h.Terminal.Source != "simulated" || h.Store.Status != "up" || h.Store.Kind == "" ||
		h.Facilitator.Status != "up" || h.Facilitator.Kind != "local" {
		t.Fatalf("health %s", body)
	}
	// A terminal that goes down degrades the service (after the cache TTL).
	sw.SetDown(true)
	time.Sleep(xau.DefaultHealthTTL + 100*time.Millisecond)
	resp, body = do(t, f.rawQueryRequest(t, "/health", ""))
	if err := json.Unmarshal(body, &h); err != nil || resp.StatusCode != http.StatusOK || h.Status != "degraded" || h.Terminal.Status != "down" {
		t.Fatalf("health with the terminal down: %d %s", resp.StatusCode, body)
	}
}

// TestRequestIDAndAccessLog: X-Request-Id is echoed (or generated), and the
// access log has one line per request without bodies, query values or
// payment headers.
func TestRequestIDAndAccessLog(t *testing.T) {
	f := newFixture(t, fixtureOptions{})
	payer := newPayer(t)
	req := f.request(t, f.tool(t, "risk-levels"), `{"entry":3500,"direction":"long","slPct":0.05,"tpPct":0.04}`)
	req.URL.RawQuery = "ref=SECRETREFCODE1"
	req.Header.Set("X-Request-Id", "client-id-42")
	resp, body := pay(t, payer, req)
	if resp.StatusCode != http.StatusOK || resp.Header.Get("X-Request-Id") != "client-id-42" {
		t.Fatalf("status %d, request id %q, body %s", resp.StatusCode, resp.Header.Get("X-Request-Id"), body)
	}
	req = f.rawQueryRequest(t, "/health", "")
	req.Header.Set("X-Request-Id", "bad id with spaces")
	resp, _ = do(t, req)
	if id := resp.Header.Get("X-Request-Id"); id == "" || strings.Contains(id, " ") {
		t.Fatalf("generated request id %q", id)
	}

	var lines []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(f.logs.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("log line %q: %v", l, err)
		}
		if m["msg"] == "http request" {
			lines = append(lines, m)
		}
	}
	// The paid call is two requests (402, then the paid retry) and /health one.
	if len(lines) != 3 {
		t.Fatalf("%d access log lines, want 3:\n%s", len(lines), f.logs.String())
	}
	for _, k := range []string{"method", "path", "route", "status", "duration", "bytes", "request_id"} {
		if _, ok := lines[1][k]; !ok {
			t.Fatalf("access log line lacks %s: %v", k, lines[1])
		}
	}
	if lines[0]["status"] != float64(402) || lines[1]["status"] != float64(200) || lines[1]["request_id"] != "client-id-42" || lines[1]["path"] != "/api/risk-levels" {
		t.Fatalf("access log lines %v", lines)
	}
	all := f.logs.String()
	sig := ""
	for _, s := range []string{"SECRETREFCODE1", "3498.25", `"entry"`, "PAYMENT-SIGNATURE", "Payment-Signature", "eyJ"} {
		if strings.Contains(all, s) {
			sig = s
		}
	}
	if sig != "" {
		t.Fatalf("the logs contain %q:\n%s", sig, all)
	}
}

func TestMetrics(t *testing.T) {
	f := newFixture(t, fixtureOptions{})
	payer := newPayer(t)
	tool := f.tool(t, "tick-pnl")
	if resp, body := pay(t, payer, f.request(t, tool, string(tool.ExampleInput))); resp.StatusCode != 200 {
		t.Fatalf("paid call %d %s", resp.StatusCode, body)
	}
	do(t, f.request(t, tool, `{}`))
	do(t, f.rawQueryRequest(t, "/nope", ""))
	m := scrape(t, f.url+"/metrics")
	for _, c := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"svc_http_requests_total", map[string]string{"route": "/api/tick-pnl", "kind": "paid", "method": "POST", "status": "402"}, 1},
		{"svc_http_requests_total", map[string]string{"route": "/api/tick-pnl", "kind": "paid", "method": "POST", "status": "200"}, 1},
		{"svc_http_requests_total", map[string]string{"route": "/api/tick-pnl", "kind": "paid", "method": "POST", "status": "400"}, 1},
		{"svc_http_requests_total", map[string]string{"route": "unmatched", "kind": "unmatched", "method": "GET", "status": "404"}, 1},
		{"svc_x402_payment_required_total", map[string]string{"route": "/api/tick-pnl"}, 1},
		{"svc_x402_settlements_total", map[string]string{"route": "/api/tick-pnl"}, 1},
		{"svc_failures_total", map[string]string{"reason": "invalid_input"}, 1},
		{"svc_failures_total", map[string]string{"reason": "not_found"}, 1},
		{"svc_http_request_duration_seconds_count", map[string]string{"route": "/api/tick-pnl"}, 3},
	} {
		if got, ok := m.value(c.name, c.labels); !ok || got != c.want {
			t.Fatalf("%s%v = %v (found %v), want %v", c.name, c.labels, got, ok, c.want)
		}
	}
	// A refused payment counts under its reason.
	req := f.request(t, tool, string(tool.ExampleInput))
	req.Header.Set(x402.HeaderPaymentSignature, "bm90IGpzb24")
	do(t, req)
	m = scrape(t, f.url+"/metrics")
	if got, _ := m.value("svc_failures_total", map[string]string{"reason": "invalid_payment_header"}); got != 1 {
		t.Fatalf("svc_failures_total{reason=invalid_payment_header} = %v, want 1", got)
	}
}

// TestServeAfterShutdown: Serve returns ErrServerClosed after Shutdown,
// also when Shutdown came first.
func TestServeAfterShutdown(t *testing.T) {
	f := newFixture(t, fixtureOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := f.srv.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-f.done; !errors.Is(err, http.ErrServerClosed) {
		t.Fatalf("Serve after Shutdown: %v", err)
	}
	f.done <- http.ErrServerClosed // for the cleanup
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if err := f.srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		t.Fatalf("Serve after Shutdown: %v", err)
	}
}

// journalFault is a store whose payment journal refuses the settling or
// the settled transition while its switch is on.
type journalFault struct {
	store.Store
	settling, settled atomic.Bool
}

func (j *journalFault) Settling(ctx context.Context, key, owner string, s engine.Settling) error {
	if j.settling.Load() {
		return errors.New("journal down")
	}
	return j.Store.Settling(ctx, key, owner, s)
}

func (j *journalFault) Settle(ctx context.Context, key string, sr x402.SettleResponse, at time.Time) error {
	if j.settled.Load() {
		return errors.New("journal down")
	}
	return j.Store.Settle(ctx, key, sr, at)
}

// TestJournalDownBeforeSettlingSettlesNothing: when the journal cannot take
// the settling state, nothing is settled and the answer is 503.
func TestJournalDownBeforeSettlingSettlesNothing(t *testing.T) {
	jf := &journalFault{}
	f := newFixture(t, fixtureOptions{wrapStore: func(s store.Store) httpserver.Store { jf.Store = s; return jf }})
	jf.settling.Store(true)
	tool := f.tool(t, "tick-pnl")
	resp, body := pay(t, newPayer(t), f.request(t, tool, string(tool.ExampleInput)))
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(body), engine.ReasonStoreUnavailable) {
		t.Fatalf("status %d %s", resp.StatusCode, body)
	}
	if n := len(f.local.Settlements()); n != 0 {
		t.Fatalf("%d settlements with the journal down", n)
	}
}

// TestJournalDownAfterSettlingRecordsLater: a payment settled while the
// journal refuses the settled state is answered 503 settlement_pending; once
// the journal is back the settlement and its ledger row are recorded, and
// the client's retry of the same payment gets the answer.
func TestJournalDownAfterSettlingRecordsLater(t *testing.T) {
	jf := &journalFault{}
	f := newFixture(t, fixtureOptions{wrapStore: func(s store.Store) httpserver.Store { jf.Store = s; return jf }})
	jf.settled.Store(true)
	payer := newPayer(t)
	tool := f.tool(t, "tick-pnl")
	req := f.request(t, tool, string(tool.ExampleInput))
	header := paymentHeader(t, payer, req)
	req.Header.Set(x402.HeaderPaymentSignature, header)
	resp, body := do(t, req)
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(body), engine.ReasonSettlementPending) || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("status %d %s", resp.StatusCode, body)
	}
	if n := len(f.local.Settlements()); n != 1 {
		t.Fatalf("%d settlements, want 1", n)
	}
	jf.settled.Store(false)
	deadline := time.Now().Add(20 * time.Second)
	for {
		ps, err := f.st.PayerStats(context.Background(), payer.Address())
		if err != nil {
			t.Fatal(err)
		}
		if ps.PaidCalls == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the settlement was not recorded once the journal came back: %+v", ps)
		}
		time.Sleep(50 * time.Millisecond)
	}
	retry := f.request(t, tool, string(tool.ExampleInput))
	retry.Header.Set(x402.HeaderPaymentSignature, header)
	resp, body = do(t, retry)
	if resp.StatusCode != http.StatusOK || resp.Header.Get(x402.HeaderPaymentResponse) == "" {
		t.Fatalf("retry: status %d %s", resp.StatusCode, body)
	}
	if n := len(f.local.Settlements()); n != 1 {
		t.Fatalf("%d settlements after the retry, want 1", n)
	}
}

// TestRefusedPaymentLimit: on the paid routes a client whose payments were
// refused more than the burst gets 429 before its next payment is checked,
// good or not, and nothing is settled for it; good payments never take
// from that bucket, and unpaid requests have a bucket of their own.
func TestRefusedPaymentLimit(t *testing.T) {
	f := newFixture(t, fixtureOptions{unpaidRate: 0.001, unpaidBurst: 3})
	payer := newPayer(t)
	tool := f.tool(t, "tick-pnl")
	resp, body := do(t, f.request(t, tool, string(tool.ExampleInput)))
	pr, err := client.PaymentRequiredOf(resp)
	if err != nil || resp.StatusCode != http.StatusPaymentRequired {
		t.Fatalf("offer: %d %v %s", resp.StatusCode, err, body)
	}
	// send sends the tool's example paid with a fresh payment of payer;
	// tamper, when set, changes it after signing.
	send := func(tamper func(*exact.ExactEVMPayload)) (*http.Response, []byte) {
		t.Helper()
		req := f.request(t, tool, string(tool.ExampleInput))
		req.Header.Set(x402.HeaderPaymentSignature, signedHeader(t, payer, pr.Accepts[0], tamper))
		return do(t, req)
	}
	underpay := func(ep *exact.ExactEVMPayload) { ep.Authorization.Value = "1" }
	for i := range 5 {
		if resp, body := send(nil); resp.StatusCode != http.StatusOK {
			t.Fatalf("good payment %d: %d %s", i, resp.StatusCode, body)
		}
	}
	for i := range 3 {
		if resp, body := send(underpay); resp.StatusCode != http.StatusPaymentRequired {
			t.Fatalf("refused payment %d: %d %s", i, resp.StatusCode, body)
		}
	}
	resp, body = send(underpay)
	if p := mustProblem(t, resp, body, http.StatusTooManyRequests); p.Code != "rate_limited" || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("refused payment past the burst: %+v %v", p, resp.Header)
	}
	resp, body = send(nil)
	mustProblem(t, resp, body, http.StatusTooManyRequests)
	if n := len(f.local.Settlements()); n != 5 {
		t.Fatalf("%d settlements, want the 5 good payments", n)
	}
	// Unpaid requests still get their offer: two tokens of their own left.
	for i := range 2 {
		if resp, body := do(t, f.request(t, tool, string(tool.ExampleInput))); resp.StatusCode != http.StatusPaymentRequired {
			t.Fatalf("unpaid request %d: %d %s", i, resp.StatusCode, body)
		}
	}
}

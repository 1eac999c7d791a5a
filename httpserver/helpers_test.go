package httpserver_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/seed1284c1d2/svc/httpserver"
	"github.com/seed1284c1d2/svc/store"
	"github.com/seed1284c1d2/svc/tools"
	"github.com/seed1284c1d2/svc/wire"
	"github.com/seed1284c1d2/svc/x402"
	"github.com/seed1284c1d2/svc/x402/client"
	"github.com/seed1284c1d2/svc/x402/exact"
	"github.com/seed1284c1d2/svc/x402/facilitator"
	"github.com/seed1284c1d2/svc/xau"
)

// testPayTo is the receiving wallet of the test servers.
const testPayTo = "0x209693Bc6afc0C5328bA36FaF03C514EF312287C"

// baseUSDC is USDC on Base mainnet, the asset every 402 must name.
const baseUSDC = "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913"

// testNow is a Wednesday afternoon (UTC) when the simulated market is
// open: the simulated terminal's clock.
func testNow() time.Time { return time.Date(2025, time.June, 4, 13, 45, 0, 0, time.UTC) }

// syncBuffer is a goroutine-safe buffer for captured logs.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// fixture is a server on a real 127.0.0.1 listener with a real store.
type fixture struct {
	srv   *httpserver.Server
	url   string
	st    store.Store
	cat   *tools.Catalog
	local *facilitator.Local
	logs  *syncBuffer
	done  chan error
}

// fixtureOptions adjust a fixture's configuration.
type fixtureOptions struct {
	terminal    xau.Terminal // nil: a simulated terminal on testNow
	noTerminal  bool
	bodyLimit   int64
	rate        float64
	burst       int
	toolTimeout time.Duration
	env         tools.Env
	routes      []httpserver.Route
	// routesFor, when set, adds the routes it returns for the server's
	// base URL (the discovery surfaces).
	routesFor func(t *testing.T, base string, cat *tools.Catalog) []httpserver.Route
	// requestBaseURL leaves PublicBaseURL empty: resource URLs are then
	// the requests' own.
	requestBaseURL bool
	// wrapStore, when set, wraps the store given to the server.
	wrapStore func(store.Store) httpserver.Store
	// useStore, when set, is the store (instead of a new one).
	useStore store.Store
	// unpaidRate is Config.UnpaidRate (zero: the limit is off in tests).
	unpaidRate  float64
	unpaidBurst int
	// separateAdmin is Config.SeparateAdmin.
	separateAdmin bool
	// payerBurst, payerRefill and payerConcurrency are Config.PayerBurst,
	// PayerRefill and PayerConcurrency.
	payerBurst       int
	payerRefill      time.Duration
	payerConcurrency int
	// now is Config.Now (nil: time.Now).
	now func() time.Time
	// bodyMemory and bodyClientMemory are Config.BodyMemory and
	// Config.BodyClientMemory; bodyRate is Config.BodyRate.
	bodyMemory       int64
	bodyClientMemory int64
	bodyRate         float64
	// largeBodyWork is Config.LargeBodyWork.
	largeBodyWork int
}

// openTestStore opens the store of a test: PostgreSQL when
// SVC_TEST_DATABASE_URL is set, else a SQLite file in a temporary
// directory.
func openTestStore(t *testing.T) store.Store {
	t.Helper()
	dsn := os.Getenv("SVC_TEST_DATABASE_URL")
	if dsn == "" || testing.Short() { // -short: SQLite, not PostgreSQL
		dsn = filepath.Join(t.TempDir(), "svc.db")
	}
	st, err := store.Open(context.Background(), dsn)
	if err != nil {
		t.Fatalf("store: %v", err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return st
}

func simulated(t *testing.T) xau.Terminal {
	t.Helper()
	sim, err := xau.NewSimulated(xau.SimConfig{Seed: 7, Now: testNow})
	if err != nil {
		t.Fatal(err)
	}
	return sim
}

func newFixture(t *testing.T, o fixtureOptions) *fixture {
	t.Helper()
	cat, err := tools.New(tools.Options{BodyLimit: o.bodyLimit})
	if err != nil {
		t.Fatal(err)
	}
	local, err := facilitator.NewLocal(facilitator.LocalConfig{Networks: []string{x402.NetworkBase}, PayTo: testPayTo})
	if err != nil {
		t.Fatal(err)
	}
	term := o.terminal
	if term == nil && !o.noTerminal {
		term = simulated(t)
	}
	logs := &syncBuffer{}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	st := o.useStore
	if st == nil {
		st = openTestStore(t)
	}
	base := "http://" + ln.Addr().String()
	public := base
	if o.requestBaseURL {
		public = ""
	}
	routes := o.routes
	if o.routesFor != nil {
		routes = append(slices.Clone(routes), o.routesFor(t, base, cat)...)
	}
	var serverStore httpserver.Store = st
	if o.wrapStore != nil {
		serverStore = o.wrapStore(st)
	}
	srv, err := httpserver.New(httpserver.Config{
		PublicBaseURL:    public,
		Catalog:          cat,
		Terminal:         term,
		Env:              o.env,
		Facilitator:      local,
		Store:            serverStore,
		PayTo:            testPayTo,
		DevMode:          true,
		Addr:             ln.Addr().String(),
		RateLimit:        o.rate,
		RateBurst:        o.burst,
		ToolTimeout:      o.toolTimeout,
		Routes:           routes,
		UnpaidRate:       cmpOr(o.unpaidRate, -1),
		UnpaidBurst:      o.unpaidBurst,
		Logger:           slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelInfo})),
		Version:          "test",
		SeparateAdmin:    o.separateAdmin,
		PayerBurst:       o.payerBurst,
		PayerRefill:      o.payerRefill,
		PayerConcurrency: o.payerConcurrency,
		Now:              o.now,

		BodyMemory:       o.bodyMemory,
		BodyClientMemory: o.bodyClientMemory,
		BodyRate:         o.bodyRate,
		LargeBodyWork:    o.largeBodyWork,
	})
	if err != nil {
		_ = ln.Close()
		t.Fatal(err)
	}
	f := &fixture{srv: srv, url: base, st: st, cat: cat, local: local, logs: logs, done: make(chan error, 1)}
	go func() { f.done <- srv.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		if err := <-f.done; err != nil && !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("Serve: %v", err)
		}
	})
	return f
}

// newPayer returns a fresh random payer.
func newPayer(t testing.TB) *client.Signer {
	t.Helper()
	var k [32]byte
	if _, err := rand.Read(k[:]); err != nil {
		t.Fatal(err)
	}
	s, err := client.ParseSigner(hex.EncodeToString(k[:]))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// request builds the unpaid request of tool t with a JSON input object
// (turned into query parameters for a GET tool).
func (f *fixture) request(t *testing.T, tool *tools.Tool, input string) *http.Request {
	t.Helper()
	return buildRequest(t, f.url, tool, input)
}

func buildRequest(t *testing.T, base string, tool *tools.Tool, input string) *http.Request {
	t.Helper()
	target := base + tool.Path
	var body io.Reader
	if tool.Method == http.MethodGet {
		if input != "" {
			q, err := tools.QueryOf(json.RawMessage(input))
			if err != nil {
				t.Fatalf("%s: query from %s: %v", tool.Key, input, err)
			}
			if len(q) > 0 {
				target += "?" + q.Encode()
			}
		}
	} else {
		body = strings.NewReader(input)
	}
	req, err := http.NewRequest(tool.Method, target, body)
	if err != nil {
		t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	return req
}

// rawQueryRequest builds a GET request with a raw query string.
func (f *fixture) rawQueryRequest(t *testing.T, path, rawQuery string) *http.Request {
	t.Helper()
	u := f.url + path
	if rawQuery != "" {
		u += "?" + rawQuery
	}
	req, err := http.NewRequest(http.MethodGet, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	return req
}

// do sends req with a plain client and returns the answer and its body.
func do(t *testing.T, req *http.Request) (*http.Response, []byte) {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", req.Method, req.URL, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, b
}

// pay sends req with the Go paying client of payer.
func pay(t *testing.T, payer *client.Signer, req *http.Request) (*http.Response, []byte) {
	t.Helper()
	client := client.New(payer, client.WithMaxAmount("$0.10"))
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("paying %s %s: %v", req.Method, req.URL, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, b
}

// problem is a decoded problem+json answer.
type problem struct {
	Type      string `json:"type"`
	Title     string `json:"title"`
	Status    int    `json:"status"`
	Detail    string `json:"detail"`
	Instance  string `json:"instance"`
	Code      string `json:"code"`
	RequestID string `json:"requestId"`
	Errors    []struct {
		Field   string `json:"field"`
		Rule    string `json:"rule"`
		Message string `json:"message"`
	} `json:"errors"`
}

// mustProblem checks that an answer is a problem+json of status and
// returns it.
func mustProblem(t *testing.T, resp *http.Response, body []byte, status int) problem {
	t.Helper()
	if resp.StatusCode != status {
		t.Fatalf("status %d, want %d; body %s", resp.StatusCode, status, body)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, wire.ProblemContentType) {
		t.Fatalf("Content-Type %q, want %s; body %s", ct, wire.ProblemContentType, body)
	}
	var p problem
	if err := json.Unmarshal(body, &p); err != nil {
		t.Fatalf("problem body %s: %v", body, err)
	}
	if p.Status != status || p.Title == "" || p.Type == "" {
		t.Fatalf("problem %+v lacks status/title/type", p)
	}
	return p
}

// hasField reports whether the problem names field (and rule, when not
// empty).
func (p problem) hasField(field, rule string) bool {
	for _, e := range p.Errors {
		if e.Field == field && (rule == "" || e.Rule == rule) {
			return true
		}
	}
	return false
}

// catalogTool returns a tool by key.
func (f *fixture) tool(t *testing.T, key string) *tools.Tool {
	t.Helper()
	tool, ok := f.cat.ByKey(key)
	if !ok {
		t.Fatalf("no tool %s", key)
	}
	return tool
}

// queryEscape is url.QueryEscape, for readability in tables.
func queryEscape(s string) string { return url.QueryEscape(s) }

// devParts returns the default catalog and a local facilitator paying
// testPayTo.
func devParts(tb testing.TB) (*tools.Catalog, *facilitator.Local) {
	tb.Helper()
	cat, err := tools.New(tools.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	local, err := facilitator.NewLocal(facilitator.LocalConfig{PayTo: testPayTo})
	if err != nil {
		tb.Fatal(err)
	}
	return cat, local
}

// cmpOr returns v, or def when v is zero.
func cmpOr(v, def float64) float64 {
	if v == 0 {
		return def
	}
	return v
}

// paymentHeader fetches req's offer (an unpaid copy of req) and returns a
// PAYMENT-SIGNATURE of payer for its first requirement, valid for an hour.
func paymentHeader(t *testing.T, payer *client.Signer, req *http.Request) string {
	t.Helper()
	unpaid := req.Clone(req.Context())
	if req.GetBody != nil {
		b, err := req.GetBody()
		if err != nil {
			t.Fatal(err)
		}
		unpaid.Body = b
	}
	resp, body := do(t, unpaid)
	pr, err := client.PaymentRequiredOf(resp)
	if err != nil || resp.StatusCode != http.StatusPaymentRequired {
		t.Fatalf("offer: %d %v %s", resp.StatusCode, err, body)
	}
	return signedHeader(t, payer, pr.Accepts[0], nil)
}

// signedHeader is a PAYMENT-SIGNATURE of payer for accepted, valid for an
// hour; tamper, when set, changes the payload after signing.
func signedHeader(t *testing.T, payer *client.Signer, accepted x402.PaymentRequirements, tamper func(*exact.ExactEVMPayload)) string {
	t.Helper()
	ep, err := payer.NewPayload(accepted, time.Now(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if tamper != nil {
		tamper(&ep)
	}
	raw, err := json.Marshal(ep)
	if err != nil {
		t.Fatal(err)
	}
	hdr, err := x402.EncodeHeader(x402.PaymentPayload{X402Version: 2, Accepted: accepted, Payload: raw})
	if err != nil {
		t.Fatal(err)
	}
	return hdr
}

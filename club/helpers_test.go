package club_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/seed1284c1d2/svc/club"
	"github.com/seed1284c1d2/svc/internal/evmaddr"
	"github.com/seed1284c1d2/svc/store"
	"github.com/seed1284c1d2/svc/wire"
)

// store.Store satisfies the club's consumer-owned interface.
var _ club.Store = store.Store(nil)

// pgEnv names the environment variable holding the URL of a PostgreSQL
// database the tests may create and drop schemas in.
const pgEnv = "SVC_TEST_DATABASE_URL"

// t0 is the fixed start of every test clock (with a nanosecond part, so
// that the store's exact round trip of instants is exercised).
var t0 = time.Date(2026, 5, 4, 10, 30, 0, 123456789, time.UTC)

// usdc is USDC on Base.
const usdc = "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913"

// clock is a manual clock. Safe for concurrent use.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: t0} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// wallet returns a deterministic lower-case test wallet numbered i.
func wallet(i int) string { return fmt.Sprintf("0x%040x", 0xc1b000+i) }

// checksum returns the EIP-55 form of w.
func checksum(t *testing.T, w string) string {
	t.Helper()
	cs, ok := evmaddr.Checksum(w)
	if !ok {
		t.Fatalf("%q is not an address", w)
	}
	return cs
}

// opener opens a fresh, empty store for one test.
type opener func(t *testing.T) store.Store

// eachStore runs f against a SQLite store and, when SVC_TEST_DATABASE_URL
// is set, a PostgreSQL store in a schema of its own.
func eachStore(t *testing.T, f func(t *testing.T, open opener)) {
	t.Run("sqlite", func(t *testing.T) { f(t, openSQLite) })
	t.Run("postgres", func(t *testing.T) {
		if os.Getenv(pgEnv) == "" {
			t.Skipf("%s is not set: skipping the club tests against PostgreSQL", pgEnv)
		}
		if testing.Short() {
			t.Skip("-short: PostgreSQL (the full go test runs it)")
		}
		f(t, openPostgres)
	})
}

// openSQLite opens a fresh SQLite store in a temporary file.
func openSQLite(t *testing.T) store.Store {
	t.Helper()
	s, err := store.OpenSQLite(context.Background(), filepath.Join(t.TempDir(), "svc.db"))
	if err != nil {
		t.Fatalf("OpenSQLite: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// openPostgres opens a fresh PostgreSQL store in a new schema
// svc_club_test_<random>, dropped when the test ends.
func openPostgres(t *testing.T) store.Store {
	t.Helper()
	base := os.Getenv(pgEnv)
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatalf("random schema name: %v", err)
	}
	schema := "svc_club_test_" + hex.EncodeToString(b[:])
	pgExec(t, base, `CREATE SCHEMA `+schema)
	t.Cleanup(func() { pgExec(t, base, `DROP SCHEMA `+schema+` CASCADE`) })
	u, err := url.Parse(base)
	if err != nil {
		t.Fatalf("%s is not a URL: %v", pgEnv, err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	s, err := store.Open(context.Background(), u.String())
	if err != nil {
		t.Fatalf("Open(postgres): %v", err)
	}
	t.Cleanup(func() { _ = s.Close() }) // runs before the schema is dropped
	return s
}

// pgExec runs one statement on a connection of its own.
func pgExec(t *testing.T, dsn, stmt string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatalf("connect to %s: %v", pgEnv, err)
	}
	defer c.Close(ctx)
	if _, err := c.Exec(ctx, stmt); err != nil {
		t.Fatalf("%s: %v", stmt, err)
	}
}

// fixture is a club served by a real HTTP server on 127.0.0.1.
type fixture struct {
	st    store.Store
	clk   *clock
	club  *club.Club
	srv   *httptest.Server
	nonce *atomic.Int64
}

// newFixture serves a club over st; mod adjusts the configuration.
func newFixture(t *testing.T, st store.Store, clk *clock, mod func(*club.Config)) *fixture {
	t.Helper()
	cfg := club.Config{Store: st, BaseURL: "https://svc.example/", Now: clk.Now, Logger: slog.New(slog.DiscardHandler)}
	if mod != nil {
		mod(&cfg)
	}
	c, err := club.New(cfg)
	if err != nil {
		t.Fatalf("club.New: %v", err)
	}
	srv := httptest.NewServer(c.Handler())
	t.Cleanup(srv.Close)
	if !strings.HasPrefix(srv.URL, "http://127.0.0.1:") {
		t.Fatalf("test server at %s, want 127.0.0.1", srv.URL)
	}
	return &fixture{st: st, clk: clk, club: c, srv: srv, nonce: new(atomic.Int64)}
}

// settle appends n settled payments of payer carrying ref to the ledger.
func (f *fixture) settle(t *testing.T, payer, ref string, n int) {
	t.Helper()
	for range n {
		nonce := f.nonce.Add(1)
		_, err := f.st.Append(context.Background(), store.Settlement{
			Payer: payer, ToolKey: "risk-levels", Amount: "5000", Asset: usdc, Network: "eip155:8453",
			Transaction: fmt.Sprintf("0x%064x", nonce), Nonce: fmt.Sprintf("0x%064x", nonce),
			RefCode: ref, SettledAt: f.clk.Now().Add(time.Duration(nonce) * time.Second),
		})
		if err != nil {
			t.Fatalf("Append: %v", err)
		}
	}
}

// response is an answer read whole.
type response struct {
	status int
	header http.Header
	body   []byte
}

func (r response) String() string { return fmt.Sprintf("%d %s", r.status, r.body) }

// do sends req and reads the answer.
func do(t *testing.T, req *http.Request) response {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", req.Method, req.URL, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("reading %s: %v", req.URL, err)
	}
	return response{resp.StatusCode, resp.Header, b}
}

func (f *fixture) get(t *testing.T, path string, header ...string) response {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, f.srv.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	return do(t, req)
}

func (f *fixture) post(t *testing.T, path, body string, header ...string) response {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, f.srv.URL+path, bytes.NewBufferString(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	return do(t, req)
}

// decode decodes a JSON answer of the wanted status into v.
func decode(t *testing.T, r response, status int, v any) {
	t.Helper()
	if r.status != status {
		t.Fatalf("status %d, want %d; body %s", r.status, status, r.body)
	}
	if ct := r.header.Get("Content-Type"); ct != "application/json" {
		t.Fatalf("Content-Type %q, want application/json", ct)
	}
	if err := json.Unmarshal(r.body, v); err != nil {
		t.Fatalf("decoding %s: %v", r.body, err)
	}
}

// problem decodes a problem+json answer of the wanted status.
func problem(t *testing.T, r response, status int) club.Problem {
	t.Helper()
	if r.status != status {
		t.Fatalf("status %d, want %d; body %s", r.status, status, r.body)
	}
	if ct := r.header.Get("Content-Type"); ct != wire.ProblemContentType {
		t.Fatalf("Content-Type %q, want %s", ct, wire.ProblemContentType)
	}
	var p club.Problem
	if err := json.Unmarshal(r.body, &p); err != nil {
		t.Fatalf("decoding %s: %v", r.body, err)
	}
	if p.Status != status || p.Title != http.StatusText(status) || p.Type != "urn:svc:problem:"+p.Code || p.Code == "" {
		t.Fatalf("malformed problem %s", r.body)
	}
	return p
}

// hasRule reports whether p lists field with rule.
func hasRule(p club.Problem, field, rule string) bool {
	for _, e := range p.Errors {
		if e.Field == field && e.Rule == rule && strings.HasPrefix(e.Message, field) {
			return true
		}
	}
	return false
}

// mustRule fails unless the answer is a 400 listing field with rule.
func mustRule(t *testing.T, r response, field, rule string) club.Problem {
	t.Helper()
	p := problem(t, r, http.StatusBadRequest)
	if p.Code != club.CodeInvalidInput || !hasRule(p, field, rule) {
		t.Fatalf("want field %q rule %q; got %s", field, rule, r.body)
	}
	return p
}

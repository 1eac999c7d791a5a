package httpserver_test

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/seed1284c1d2/svc/httpserver"
	"github.com/seed1284c1d2/svc/store"
	"github.com/seed1284c1d2/svc/x402/engine"
)

// exposition is a parsed GET /metrics answer.
type exposition map[string]*dto.MetricFamily

// scrape fetches and parses a Prometheus text exposition.
func scrape(t *testing.T, u string) exposition {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatalf("GET %s: %v", u, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain; version=0.0.4") {
		t.Fatalf("GET %s: %d %q", u, resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("parsing %s: %v", u, err)
	}
	return fams
}

// value returns the value of the series of name whose labels include
// labels (a histogram's _count and _sum are read from the histogram).
func (e exposition) value(name string, labels map[string]string) (float64, bool) {
	fam, suffix := e[name], ""
	if fam == nil {
		for _, s := range []string{"_count", "_sum"} {
			if base, ok := strings.CutSuffix(name, s); ok && e[base] != nil {
				fam, suffix = e[base], s
			}
		}
	}
	if fam == nil {
		return 0, false
	}
next:
	for _, m := range fam.GetMetric() {
		have := map[string]string{}
		for _, lp := range m.GetLabel() {
			have[lp.GetName()] = lp.GetValue()
		}
		for k, v := range labels {
			if have[k] != v {
				continue next
			}
		}
		switch {
		case suffix == "_count":
			return float64(m.GetHistogram().GetSampleCount()), true
		case suffix == "_sum":
			return m.GetHistogram().GetSampleSum(), true
		case m.Counter != nil:
			return m.GetCounter().GetValue(), true
		case m.Gauge != nil:
			return m.GetGauge().GetValue(), true
		case m.Untyped != nil:
			return m.GetUntyped().GetValue(), true
		}
	}
	return 0, false
}

// TestMetricsBusiness: build info, the runtime and process collectors,
// revenue in atomic units, the payment journal by state and the
// dependencies' state are exposed, from a registry of the server's own.
func TestMetricsBusiness(t *testing.T) {
	f := newFixture(t, fixtureOptions{useStore: freshStore(t)})
	payer := newPayer(t)
	tool := f.tool(t, "tick-pnl")
	do(t, f.request(t, tool, string(tool.ExampleInput))) // a 402
	for range 2 {
		if resp, body := pay(t, payer, f.request(t, tool, string(tool.ExampleInput))); resp.StatusCode != 200 {
			t.Fatalf("paid call %d %s", resp.StatusCode, body)
		}
	}
	m := scrape(t, f.url+"/metrics")
	want := func(name string, labels map[string]string, v float64) {
		t.Helper()
		if got, ok := m.value(name, labels); !ok || got != v {
			t.Fatalf("%s%v = %v (found %v), want %v", name, labels, got, ok, v)
		}
	}
	want("svc_build_info", map[string]string{"version": "test"}, 1)
	if fam := m["svc_build_info"]; fam == nil || len(fam.GetMetric()) != 1 {
		t.Fatal("no svc_build_info")
	} else {
		for _, lp := range fam.GetMetric()[0].GetLabel() {
			if lp.GetName() == "goversion" && !strings.HasPrefix(lp.GetValue(), "go") {
				t.Fatalf("goversion label %q", lp.GetValue())
			}
		}
	}
	for _, name := range []string{"go_goroutines", "go_memstats_alloc_bytes", "process_start_time_seconds", "svc_uptime_seconds"} {
		if m[name] == nil {
			t.Fatalf("no %s in the exposition", name)
		}
	}
	atomic := float64(tool.PriceAtomic)
	want("svc_x402_revenue_atomic_total", map[string]string{"route": "/api/tick-pnl", "network": "eip155:8453",
		"asset": strings.ToLower(baseUSDC)}, 2*atomic)
	want("svc_x402_charged_atomic_total", map[string]string{"route": "/api/tick-pnl", "network": "eip155:8453",
		"asset": strings.ToLower(baseUSDC), "scheme": "exact"}, 2*atomic)
	// A channel's charge (batch-settlement) is charged, not yet settled:
	// its money is counted when the claimer claims it.
	f.srv.ObservePayment(engine.Event{Kind: engine.Paid, Resource: "POST /api/tick-pnl", Product: tool.Key, Transport: "http",
		Network: "eip155:8453", Asset: baseUSDC, Amount: fmt.Sprint(tool.PriceAtomic), Scheme: "batch-settlement"})
	m = scrape(t, f.url+"/metrics")
	want("svc_x402_charged_atomic_total", map[string]string{"route": "/api/tick-pnl", "network": "eip155:8453",
		"asset": strings.ToLower(baseUSDC), "scheme": "batch-settlement"}, atomic)
	want("svc_x402_revenue_atomic_total", map[string]string{"route": "/api/tick-pnl", "network": "eip155:8453",
		"asset": strings.ToLower(baseUSDC)}, 2*atomic)
	want("svc_x402_settlements_total", map[string]string{"route": "/api/tick-pnl"}, 3)
	want("svc_x402_payment_required_total", map[string]string{"route": "/api/tick-pnl"}, 3) // the client's unpaid tries too
	want("svc_x402_payments", map[string]string{"state": "settled"}, 2)
	want("svc_x402_payments", map[string]string{"state": "unknown"}, 0)
	want("svc_x402_recovered_total", map[string]string{"result": "unknown"}, 0)
	want("svc_terminal_up", nil, 1)
	want("svc_facilitator_up", nil, 1)
	if _, ok := m.value("svc_terminal_lag_seconds", nil); !ok {
		t.Fatal("no svc_terminal_lag_seconds")
	}

	// The counts other reports read are those of the exposition.
	for _, rc := range f.srv.Counts() {
		if rc.Route == "/api/tick-pnl" && (rc.Settled != 3 || rc.PaymentRequired != 3 || rc.Requests != 5 || rc.ByClass[2] != 2 || rc.ByClass[4] != 3) {
			t.Fatalf("Counts of the route: %+v", rc)
		}
	}
}

// serveAdmin serves srv's admin handler on 127.0.0.1 and returns its URL.
func serveAdmin(t *testing.T, srv *httpserver.Server) string {
	t.Helper()
	ts := httptest.NewServer(srv.AdminHandler())
	t.Cleanup(ts.Close)
	return ts.URL
}

// TestMetricsDependenciesDown: without a terminal, svc_terminal_up is 0.
func TestMetricsDependenciesDown(t *testing.T) {
	f := newFixture(t, fixtureOptions{noTerminal: true})
	m := scrape(t, f.url+"/metrics")
	if v, ok := m.value("svc_terminal_up", nil); !ok || v != 0 {
		t.Fatalf("svc_terminal_up = %v (%v), want 0", v, ok)
	}
}

// readyz fetches /readyz.
func readyz(t *testing.T, base string) (int, httpserver.Readiness) {
	t.Helper()
	resp, body := do(t, mustGet(t, base+"/readyz"))
	var rd httpserver.Readiness
	if err := json.Unmarshal(body, &rd); err != nil {
		t.Fatalf("/readyz body %s: %v", body, err)
	}
	if resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("/readyz content type %q", resp.Header.Get("Content-Type"))
	}
	return resp.StatusCode, rd
}

func mustGet(t *testing.T, u string) *http.Request {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, u, nil)
	if err != nil {
		t.Fatal(err)
	}
	return req
}

// TestProbesSQLite: /livez and /readyz on SQLite; dropping a table makes
// the server not ready while /livez stays up.
func TestProbesSQLite(t *testing.T) {
	path := filepath.Join(t.TempDir(), "svc.db")
	st, err := store.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	testProbes(t, st, func(table string) {
		// From another connection, as an operator's mistake would come.
		db, err := sql.Open("sqlite", path)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		if _, err := db.Exec(`DROP TABLE ` + table); err != nil {
			t.Fatalf("drop %s: %v", table, err)
		}
	})
}

// TestProbesPostgres: the same on PostgreSQL, in a schema of its own.
func TestProbesPostgres(t *testing.T) {
	if testing.Short() {
		t.Skip("needs PostgreSQL (skipped under -short)")
	}
	base := os.Getenv("SVC_TEST_DATABASE_URL")
	if base == "" {
		t.Skip("SVC_TEST_DATABASE_URL is not set: no PostgreSQL to test against")
	}
	st, schema := openSchemaStore(t, base)
	testProbes(t, st, func(table string) { pgExec(t, base, `DROP TABLE `+schema+`.`+table+` CASCADE`) })
}

// openSchemaStore opens a PostgreSQL store in a new schema of its own,
// dropped when the test ends.
func openSchemaStore(t *testing.T, base string) (store.Store, string) {
	t.Helper()
	var b [6]byte
	_, _ = rand.Read(b[:])
	schema := "svc_ops_test_" + hex.EncodeToString(b[:])
	pgExec(t, base, `CREATE SCHEMA `+schema)
	t.Cleanup(func() { pgExec(t, base, `DROP SCHEMA `+schema+` CASCADE`) })
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	st, err := store.Open(context.Background(), u.String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return st, schema
}

// freshStore is an empty store: a schema of its own on PostgreSQL when
// SVC_TEST_DATABASE_URL is set, else a new SQLite file.
func freshStore(t *testing.T) store.Store {
	t.Helper()
	if base := os.Getenv("SVC_TEST_DATABASE_URL"); base != "" {
		st, _ := openSchemaStore(t, base)
		return st
	}
	return openTestStore(t)
}

func pgExec(t *testing.T, dsn, stmt string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer c.Close(ctx)
	if _, err := c.Exec(ctx, stmt); err != nil {
		t.Fatalf("%s: %v", stmt, err)
	}
}

func testProbes(t *testing.T, st store.Store, drop func(table string)) {
	f := newFixture(t, fixtureOptions{useStore: st, noTerminal: true})
	resp, body := do(t, mustGet(t, f.url+"/livez"))
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "alive") {
		t.Fatalf("/livez %d %s", resp.StatusCode, body)
	}
	code, rd := readyz(t, f.url)
	if code != http.StatusOK || rd.Status != "ready" || rd.Checks.Store.Status != "up" || rd.Checks.Schema.Status != "up" ||
		rd.Checks.Facilitator.Status != "up" {
		t.Fatalf("/readyz %d %+v", code, rd)
	}
	// No terminal: reported for the gold routes, readiness unaffected.
	tc := rd.Checks.Terminal
	if tc.Status != "down" || tc.Required || len(tc.Routes) != 3 {
		t.Fatalf("terminal check %+v", tc)
	}
	for _, r := range tc.Routes {
		if !strings.Contains(r, "xau") {
			t.Fatalf("terminal check names %q, not a gold route", r)
		}
	}

	drop("payments")
	code, rd = readyz(t, f.url)
	if code != http.StatusServiceUnavailable || rd.Status != "not ready" || rd.Checks.Store.Status != "up" || rd.Checks.Schema.Status != "down" {
		t.Fatalf("/readyz after dropping the journal: %d %+v", code, rd)
	}
	if resp, _ := do(t, mustGet(t, f.url+"/livez")); resp.StatusCode != http.StatusOK {
		t.Fatalf("/livez after dropping the journal: %d", resp.StatusCode)
	}
}

// TestAdminHandler: with SeparateAdmin, /metrics leaves the public routes
// for the admin handler, which also serves the dashboard, the probes and
// pprof.
func TestAdminHandler(t *testing.T) {
	f := newFixture(t, fixtureOptions{separateAdmin: true})
	if resp, _ := do(t, mustGet(t, f.url+"/metrics")); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("public /metrics with a separate admin listener: %d", resp.StatusCode)
	}
	if resp, _ := do(t, mustGet(t, f.url+"/debug/pprof/")); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("public pprof: %d", resp.StatusCode)
	}
	admin := serveAdmin(t, f.srv)
	m := scrape(t, admin+"/metrics")
	if m["svc_build_info"] == nil {
		t.Fatal("admin /metrics lacks svc_build_info")
	}
	for path, want := range map[string]string{"/": "operator dashboard", "/debug/pprof/": "goroutine", "/livez": "alive", "/readyz": "ready"} {
		resp, body := do(t, mustGet(t, admin+path))
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), want) {
			t.Fatalf("admin %s: %d %.300s", path, resp.StatusCode, body)
		}
	}
	if resp, _ := do(t, mustGet(t, admin+"/?from=nonsense")); resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("dashboard with a bad period: %d", resp.StatusCode)
	}
}

// TestPublicMetricsWithoutAdmin: without a separate admin listener,
// /metrics stays public and nothing else of the admin handler is.
func TestPublicMetricsWithoutAdmin(t *testing.T) {
	f := newFixture(t, fixtureOptions{})
	scrape(t, f.url+"/metrics")
	if resp, _ := do(t, mustGet(t, f.url+"/debug/pprof/")); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("public pprof: %d", resp.StatusCode)
	}
}

// TestAdminHandlerHidesCommandLine: the admin listener does not serve the
// process's command line (/debug/pprof/cmdline), where an operator's
// credentials may be (--db postgres://user:password@..., an RPC URL with
// its API key).
func TestAdminHandlerHidesCommandLine(t *testing.T) {
	const secret = "postgres://svc:s3cretPassw0rd@db.internal/svc"
	saved := os.Args
	os.Args = append(append([]string(nil), os.Args...), "--db", secret)
	t.Cleanup(func() { os.Args = saved })
	f := newFixture(t, fixtureOptions{separateAdmin: true})
	admin := serveAdmin(t, f.srv)
	for _, path := range []string{"/debug/pprof/cmdline", "/debug/pprof/cmdline?debug=1", "/debug/pprof/"} {
		_, body := do(t, mustGet(t, admin+path))
		if strings.Contains(string(body), "s3cretPassw0rd") {
			t.Errorf("admin %s shows the command line's credentials: %.300s", path, body)
		}
	}
}

// TestRouteDocsDescribeBuiltins: the routes RouteDocs describes are the
// server's own free routes, answered on its public handler; /metrics is
// described only when the public handler serves it.
func TestRouteDocsDescribeBuiltins(t *testing.T) {
	for _, separate := range []bool{false, true} {
		f := newFixture(t, fixtureOptions{separateAdmin: separate})
		docs := httpserver.RouteDocs(!separate)
		described := map[string]bool{}
		for _, d := range docs {
			described[d.Method+" "+d.Path] = true
			if d.Method != http.MethodGet || d.OperationID == "" || d.Summary == "" || d.Response == nil {
				t.Errorf("separate admin %v: %s %s: incomplete %+v", separate, d.Method, d.Path, d)
			}
			if resp, _ := do(t, mustGet(t, f.url+d.Path)); resp.StatusCode == http.StatusNotFound || resp.StatusCode == http.StatusMethodNotAllowed {
				t.Errorf("separate admin %v: described %s answers %d", separate, d.Path, resp.StatusCode)
			}
		}
		for _, p := range []string{"/health", "/livez", "/readyz"} {
			if !described["GET "+p] {
				t.Errorf("separate admin %v: %s not described", separate, p)
			}
		}
		if described["GET /metrics"] == separate {
			t.Errorf("separate admin %v: /metrics described %v", separate, described["GET /metrics"])
		}
		if resp, _ := do(t, mustGet(t, f.url+"/metrics")); (resp.StatusCode == http.StatusOK) != !separate {
			t.Errorf("separate admin %v: public /metrics answers %d", separate, resp.StatusCode)
		}
	}
}

package main

// Helpers of the cluster, durability and concurrency tests (cluster_test.go):
// real `svc serve` processes built once per test binary, PostgreSQL schemas
// of their own, payments signed by hand so that one authorization can be
// presented many times, and direct reads of the ledger tables.

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	_ "modernc.org/sqlite" // the ledger of a SQLite store is read back directly

	"github.com/seed1284c1d2/svc/x402"
	"github.com/seed1284c1d2/svc/x402/client"
	"github.com/seed1284c1d2/svc/x402/engine"
	"github.com/seed1284c1d2/svc/x402/exact"
)

// The paid route the tests buy: POST, cheap to run, and its answer depends
// on the body, so that two bodies are two different requests.
const (
	clusterToolPath = "/api/evm-address-syntax"
	clusterToolKey  = "evm-address-syntax"
	// clusterToolAmount is the tool's price (0.01 USDC) in atomic units.
	clusterToolAmount = "10000"
	// clusterPGEnv names the PostgreSQL database the tests create schemas in.
	clusterPGEnv = "SVC_TEST_DATABASE_URL"
)

// clusterBin is the svc binary, built once per test binary into the
// directory TestMain creates (and removes).
var clusterBin struct {
	once sync.Once
	dir  string
	path string
	err  error
}

// clusterBinary builds the svc binary on first use and returns its path. It
// skips in -short mode.
func clusterBinary(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: builds and runs svc serve processes (the full go test runs it)")
	}
	clusterBin.once.Do(func() {
		goBin, err := exec.LookPath("go")
		if err != nil {
			clusterBin.err = fmt.Errorf("go not in PATH: %w", err)
			return
		}
		dir := clusterBin.dir
		if dir == "" {
			clusterBin.err = errors.New("no build directory: TestMain did not run")
			return
		}
		path := filepath.Join(dir, "svc")
		start := time.Now()
		// The crash tests' build: with the hook that stalls a paid call at
		// a payment step (stall_crashtest.go), absent from the release.
		out, err := exec.Command(goBin, "build", "-tags", "svc_crashtest", "-o", path, ".").CombinedOutput()
		if err != nil {
			clusterBin.err = fmt.Errorf("go build: %w\n%s", err, out)
			return
		}
		clusterBin.path = path
		fmt.Fprintf(os.Stderr, "cluster tests: built %s in %v\n", path, time.Since(start).Round(time.Millisecond))
	})
	if clusterBin.err != nil {
		t.Fatal(clusterBin.err)
	}
	return clusterBin.path
}

// clusterLog is a goroutine-safe buffer for a process's output.
type clusterLog struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *clusterLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *clusterLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// clusterEnv is the environment without SVC_* variables, so that only the
// flags configure the servers.
func clusterEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "SVC_") {
			env = append(env, kv)
		}
	}
	return env
}

var clusterListeningRE = regexp.MustCompile(`listening on (http://127\.0\.0\.1:[0-9]+)`)

// clusterNode is one running `svc serve` process.
type clusterNode struct {
	name    string
	base    string
	cmd     *exec.Cmd
	out     *clusterLog
	exited  chan struct{}
	waitErr error
}

// clusterPayTo is the wallet the production-mode servers are paid to.
const clusterPayTo = "0x5eed00000000000000000000000000000000c0de"

// clusterOptions configures a `svc serve` process of clusterStartWith.
type clusterOptions struct {
	// dir is the working directory; empty means a new t.TempDir().
	dir string
	// facilitator is the facilitator's base URL: production mode, paid to
	// clusterPayTo. Empty means dev mode (the local facilitator).
	facilitator string
	// settleTimeout is --settle-timeout in production mode (default 60s).
	settleTimeout time.Duration
	// stallAt sets SVC_TEST_STALL_AT: every paid call stops for good at
	// that step of the payment engine (a hook point).
	stallAt string
	// logLevel is --log-level (default warn in dev mode, info in
	// production mode: the tests read the engine's decisions).
	logLevel string
}

// clusterStart starts `svc serve` in dev mode (local facilitator, default
// dev payTo) on a free loopback port with the given --db, and waits for the
// banner naming the bound address. The process is killed at cleanup if it
// is still running; its output is logged when the test failed.
func clusterStart(t *testing.T, name, db string) *clusterNode {
	t.Helper()
	return clusterStartWith(t, name, db, clusterOptions{})
}

// clusterStartWith is clusterStart with options: production mode against
// a facilitator, a crash-test stall point, a working directory.
func clusterStartWith(t *testing.T, name, db string, o clusterOptions) *clusterNode {
	t.Helper()
	bin := clusterBinary(t)
	if o.dir == "" {
		o.dir = t.TempDir()
	}
	args := []string{"serve", "--addr", "127.0.0.1:0", "--db", db, "--shutdown-timeout", "10s", "--unpaid-rate", "-1"}
	if o.facilitator != "" {
		if o.settleTimeout == 0 {
			o.settleTimeout = 60 * time.Second
		}
		if o.logLevel == "" {
			o.logLevel = "info"
		}
		args = append(args, "--facilitator-url", o.facilitator, "--pay-to", clusterPayTo, "--settle-timeout", o.settleTimeout.String())
	} else {
		args = append(args, "--dev") // dev mode on PostgreSQL is on purpose
	}
	if o.logLevel == "" {
		o.logLevel = "warn"
	}
	args = append(args, "--log-level", o.logLevel)
	cmd := exec.Command(bin, args...)
	cmd.Dir = o.dir
	cmd.Env = clusterEnv()
	if o.stallAt != "" {
		cmd.Env = append(cmd.Env, "SVC_TEST_STALL_AT="+o.stallAt)
	}
	n := &clusterNode{name: name, cmd: cmd, out: &clusterLog{}, exited: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = n.out, n.out
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	go func() { n.waitErr = cmd.Wait(); close(n.exited) }()
	t.Cleanup(func() {
		select {
		case <-n.exited:
		default:
			_ = cmd.Process.Kill()
			<-n.exited
		}
		if t.Failed() {
			t.Logf("output of %s:\n%s", name, clusterTail(n.out.String(), 6000))
		}
	})
	deadline := time.Now().Add(30 * time.Second)
	for {
		if m := clusterListeningRE.FindStringSubmatch(n.out.String()); m != nil {
			n.base = m[1]
			return n
		}
		select {
		case <-n.exited:
			t.Fatalf("%s exited before listening (%v):\n%s", name, n.waitErr, n.out.String())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not print its address:\n%s", name, n.out.String())
		}
	}
}

// clusterStallRE matches the log line of a paid call stopped at a
// crash-test point (text log format), capturing the point and the key.
var clusterStallRE = regexp.MustCompile(`paid call stalled for a crash test"? point=(\S+) key=(\S+)`)

// stalled returns the journal keys of the paid calls stopped at point.
func (n *clusterNode) stalled(point string) map[string]bool {
	keys := map[string]bool{}
	for _, m := range clusterStallRE.FindAllStringSubmatch(n.out.String(), -1) {
		if m[1] == point {
			keys[strings.Trim(m[2], `"`)] = true
		}
	}
	return keys
}

// clusterStop closes the client's idle connections, then stops the nodes
// with SIGTERM. Closing first matters: the client's transport may hold a
// connection it dialed and never used, and net/http's Shutdown waits 5 s
// before it treats such a connection (StateNew) as idle.
func clusterStop(t *testing.T, c *http.Client, nodes ...*clusterNode) {
	t.Helper()
	c.CloseIdleConnections()
	for _, n := range nodes {
		n.stop(t)
	}
}

// stop sends SIGTERM and expects a clean exit.
func (n *clusterNode) stop(t *testing.T) {
	t.Helper()
	if err := n.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatalf("SIGTERM %s: %v", n.name, err)
	}
	select {
	case <-n.exited:
	case <-time.After(20 * time.Second):
		t.Fatalf("%s did not stop on SIGTERM", n.name)
	}
	if n.waitErr != nil {
		t.Fatalf("%s exited with %v", n.name, n.waitErr)
	}
}

// kill sends SIGKILL and waits for the process to be gone.
func (n *clusterNode) kill(t *testing.T) {
	t.Helper()
	if err := n.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatalf("SIGKILL %s: %v", n.name, err)
	}
	select {
	case <-n.exited:
	case <-time.After(20 * time.Second):
		t.Fatalf("%s did not die on SIGKILL", n.name)
	}
}

// clusterTail returns the last n bytes of s.
func clusterTail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "..." + s[len(s)-n:]
}

// clusterHTTP returns a client with a connection pool large enough for the
// tests' parallelism (no port exhaustion, no dial storms).
func clusterHTTP(t *testing.T) *http.Client {
	tr := &http.Transport{MaxIdleConns: 256, MaxIdleConnsPerHost: 128, IdleConnTimeout: 30 * time.Second}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: 30 * time.Second}
}

// clusterAnswer is one HTTP answer, read whole.
type clusterAnswer struct {
	status int
	header http.Header
	body   []byte
}

// reason is the refusal reason of a 402 (PAYMENT-REQUIRED's error), "" when
// the answer has no decodable PAYMENT-REQUIRED.
func (a clusterAnswer) reason() string {
	if pr, err := x402.DecodePaymentRequired(a.header.Get(x402.HeaderPaymentRequired)); err == nil {
		return pr.Error
	}
	var p struct {
		Code string `json:"code"`
	}
	if json.Unmarshal(a.body, &p) == nil {
		return p.Code
	}
	return ""
}

// settlement decodes PAYMENT-RESPONSE.
func (a clusterAnswer) settlement() (x402.SettleResponse, error) {
	v := a.header.Get(x402.HeaderPaymentResponse)
	if v == "" {
		return x402.SettleResponse{}, client.ErrNoPaymentResponse
	}
	return x402.DecodeSettleResponse(v)
}

func (a clusterAnswer) String() string {
	return fmt.Sprintf("%d reason=%q body=%s", a.status, a.reason(), clusterTail(string(a.body), 300))
}

// clusterDo sends one request; payment, when not empty, goes in
// PAYMENT-SIGNATURE. Safe to call from any goroutine (no t.Fatal).
func clusterDo(ctx context.Context, c *http.Client, method, rawURL, body, payment string) (clusterAnswer, error) {
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, rawURL, rd)
	if err != nil {
		return clusterAnswer{}, fmt.Errorf("%s %s: %w", method, rawURL, err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if payment != "" {
		req.Header.Set(x402.HeaderPaymentSignature, payment)
	}
	resp, err := c.Do(req)
	if err != nil {
		return clusterAnswer{}, fmt.Errorf("%s %s: %w", method, rawURL, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return clusterAnswer{}, fmt.Errorf("%s %s: reading the body: %w", method, rawURL, err)
	}
	return clusterAnswer{status: resp.StatusCode, header: resp.Header, body: b}, nil
}

// clusterMust is clusterDo failing the test on a transport error (test
// goroutine only).
func clusterMust(t *testing.T, c *http.Client, method, rawURL, body, payment string) clusterAnswer {
	t.Helper()
	a, err := clusterDo(context.Background(), c, method, rawURL, body, payment)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// clusterGetJSON GETs rawURL, expects want and decodes the body into v.
func clusterGetJSON(t *testing.T, c *http.Client, rawURL string, want int, v any) []byte {
	t.Helper()
	a := clusterMust(t, c, http.MethodGet, rawURL, "", "")
	if a.status != want {
		t.Fatalf("GET %s: %s, want %d", rawURL, a, want)
	}
	if v != nil {
		if err := json.Unmarshal(a.body, v); err != nil {
			t.Fatalf("GET %s: %v: %s", rawURL, err, a.body)
		}
	}
	return a.body
}

// clusterSigner returns a payer with a fresh random key.
func clusterSigner(t *testing.T) *client.Signer {
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

// clusterAddress returns a random lower-case EVM address (a distinct
// request body each time).
func clusterAddress() string {
	var b [20]byte
	_, _ = rand.Read(b[:])
	return "0x" + hex.EncodeToString(b[:])
}

// clusterBody is the tool's request body for address.
func clusterBody(address string) string {
	return `{"address":"` + address + `"}`
}

// clusterOffer fetches the tool's 402 offer from base (an unpaid call).
func clusterOffer(t *testing.T, c *http.Client, base string) x402.PaymentRequired {
	t.Helper()
	a := clusterMust(t, c, http.MethodPost, base+clusterToolPath, clusterBody(clusterAddress()), "")
	if a.status != http.StatusPaymentRequired {
		t.Fatalf("unpaid call: %s", a)
	}
	pr, err := x402.DecodePaymentRequired(a.header.Get(x402.HeaderPaymentRequired))
	if err != nil {
		t.Fatalf("the offer: %v", err)
	}
	if len(pr.Accepts) != 1 || pr.Accepts[0].Amount != clusterToolAmount {
		t.Fatalf("the offer: %+v", pr)
	}
	return pr
}

// clusterSign signs a payment of the offer with a fresh nonce and returns
// the PAYMENT-SIGNATURE value and the nonce. Safe from any goroutine.
func clusterSign(s *client.Signer, pr x402.PaymentRequired) (header, nonce string, err error) {
	req := pr.Accepts[0]
	ep, err := s.NewPayload(req, time.Now(), 0)
	if err != nil {
		return "", "", fmt.Errorf("sign: %w", err)
	}
	raw, err := json.Marshal(ep)
	if err != nil {
		return "", "", fmt.Errorf("sign: %w", err)
	}
	res := pr.Resource
	h, err := x402.EncodeHeader(x402.PaymentPayload{X402Version: x402.Version, Resource: &res, Accepted: req, Payload: raw})
	if err != nil {
		return "", "", fmt.Errorf("sign: %w", err)
	}
	return h, ep.Authorization.Nonce, nil
}

// clusterMustSign is clusterSign failing the test.
func clusterMustSign(t *testing.T, s *client.Signer, pr x402.PaymentRequired) (header, nonce string) {
	t.Helper()
	h, n, err := clusterSign(s, pr)
	if err != nil {
		t.Fatal(err)
	}
	return h, n
}

// clusterNonceOf reads the authorization nonce of a PAYMENT-SIGNATURE value.
func clusterNonceOf(header string) (string, error) {
	p, err := x402.DecodePaymentPayload(header)
	if err != nil {
		return "", err
	}
	ep, err := exact.ParseExactEVMPayload(p.Payload)
	if err != nil {
		return "", err
	}
	return ep.Authorization.Nonce, nil
}

// clusterMetric sums the samples of the Prometheus metric name (every label
// set) on base's /metrics.
func clusterMetric(t *testing.T, c *http.Client, base, name string) int64 {
	t.Helper()
	a := clusterMust(t, c, http.MethodGet, base+"/metrics", "", "")
	if a.status != http.StatusOK {
		t.Fatalf("GET /metrics: %s", a)
	}
	var sum int64
	found := false
	for _, line := range strings.Split(string(a.body), "\n") {
		if !strings.HasPrefix(line, name+"{") && !strings.HasPrefix(line, name+" ") {
			continue
		}
		f := strings.Fields(line)
		v, err := strconv.ParseFloat(f[len(f)-1], 64)
		if err != nil {
			t.Fatalf("metrics line %q: %v", line, err)
		}
		sum += int64(v)
		found = true
	}
	if !found {
		t.Fatalf("metric %s not exposed:\n%s", name, a.body)
	}
	return sum
}

// clusterPGDSN creates a fresh schema in the database of
// SVC_TEST_DATABASE_URL (dropped at cleanup) and returns a URL whose
// sessions use it. Without the variable it skips, except under CI=true.
func clusterPGDSN(t *testing.T) string {
	t.Helper()
	base := os.Getenv(clusterPGEnv)
	if base == "" {
		msg := clusterPGEnv + " is not set: the multi-instance tests need a PostgreSQL database they may create schemas in " +
			"(e.g. postgres://postgres@127.0.0.1:5432/test?sslmode=disable)"
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	schema := "svc_cluster_" + hex.EncodeToString(b[:])
	clusterPGExec(t, base, "CREATE SCHEMA "+schema)
	t.Cleanup(func() { clusterPGExec(t, base, "DROP SCHEMA "+schema+" CASCADE") })
	u, err := url.Parse(base)
	if err != nil {
		t.Fatalf("%s is not a URL: %v", clusterPGEnv, err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}

// clusterPGExec runs one statement on a connection of its own.
func clusterPGExec(t *testing.T, dsn, stmt string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatalf("connect to %s: %v", clusterPGEnv, err)
	}
	defer c.Close(ctx)
	if _, err := c.Exec(ctx, stmt); err != nil {
		t.Fatalf("%s: %v", stmt, err)
	}
}

// clusterLedgerRow is one row of the settlements table.
type clusterLedgerRow struct {
	Network, Asset, Payer, Nonce, ToolKey, Amount, Tx, RefCode string
}

// The queries reading a store back: the whole ledger, and the payment
// journal's key and state of every authorization.
const (
	clusterLedgerQuery   = `SELECT network, asset, payer, nonce, tool_key, CAST(amount AS TEXT), tx, COALESCE(ref_code, '') FROM settlements ORDER BY id`
	clusterPaymentsQuery = `SELECT key, state FROM payments`
)

// clusterLedger is the ledger and the payment journal of a store, read
// directly from its tables.
type clusterLedger struct {
	rows []clusterLedgerRow
	// payments maps each journal key (exact.NonceKey) to its state
	// (engine.State values: 1 reserved, 3 settling, 4 settled, 5
	// released, 6 failed, 7 unknown).
	payments map[string]engine.State
}

// byNonce counts the ledger rows per lower-case nonce.
func (l clusterLedger) byNonce() map[string]int {
	m := map[string]int{}
	for _, r := range l.rows {
		m[strings.ToLower(r.Nonce)]++
	}
	return m
}

// states counts the journal rows per state.
func (l clusterLedger) states() map[engine.State]int {
	m := map[engine.State]int{}
	for _, s := range l.payments {
		m[s]++
	}
	return m
}

// stateOfNonce returns the journal state of the one row whose key ends
// with nonce (0 when there is none).
func (l clusterLedger) stateOfNonce(nonce string) engine.State {
	suffix := "/" + strings.ToLower(nonce)
	for k, s := range l.payments {
		if strings.HasSuffix(k, suffix) {
			return s
		}
	}
	return 0
}

// clusterQuerier is what the ledger readers need of a database handle.
type clusterQuerier interface {
	query(ctx context.Context, q string) (clusterRows, error)
}

// clusterRows is a result set.
type clusterRows interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
	Close()
}

// clusterReadLedger reads both tables through q.
func clusterReadLedger(t *testing.T, ctx context.Context, q clusterQuerier) clusterLedger {
	t.Helper()
	l := clusterLedger{payments: map[string]engine.State{}}
	rows, err := q.query(ctx, clusterLedgerQuery)
	if err != nil {
		t.Fatalf("read the ledger: %v", err)
	}
	for rows.Next() {
		var r clusterLedgerRow
		if err := rows.Scan(&r.Network, &r.Asset, &r.Payer, &r.Nonce, &r.ToolKey, &r.Amount, &r.Tx, &r.RefCode); err != nil {
			t.Fatalf("read the ledger: %v", err)
		}
		l.rows = append(l.rows, r)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		t.Fatalf("read the ledger: %v", err)
	}
	rows, err = q.query(ctx, clusterPaymentsQuery)
	if err != nil {
		t.Fatalf("read the payment journal: %v", err)
	}
	for rows.Next() {
		var key string
		var state int64
		if err := rows.Scan(&key, &state); err != nil {
			t.Fatalf("read the payment journal: %v", err)
		}
		l.payments[key] = engine.State(state)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		t.Fatalf("read the payment journal: %v", err)
	}
	return l
}

// pgQuerier reads through a pgx connection or transaction.
type pgQuerier struct {
	c interface {
		Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	}
}

func (q pgQuerier) query(ctx context.Context, s string) (clusterRows, error) {
	rows, err := q.c.Query(ctx, s)
	if err != nil {
		return nil, err
	}
	return pgRows{rows}, nil
}

// pgRows adapts pgx.Rows.
type pgRows struct{ pgx.Rows }

// sqlQuerier reads through a database/sql handle or transaction.
type sqlQuerier struct {
	db interface {
		QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	}
}

func (q sqlQuerier) query(ctx context.Context, s string) (clusterRows, error) {
	rows, err := q.db.QueryContext(ctx, s)
	if err != nil {
		return nil, err
	}
	return sqlRows{rows}, nil
}

// sqlRows adapts *sql.Rows.
type sqlRows struct{ *sql.Rows }

func (r sqlRows) Close() { _ = r.Rows.Close() }

// clusterPGLedger reads the ledger and the payment journal of the
// PostgreSQL store at dsn.
func clusterPGLedger(t *testing.T, dsn string) clusterLedger {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer c.Close(ctx)
	// Both tables from one snapshot: a settlement recorded between two
	// separate reads would look like a payment without its ledger row.
	tx, err := c.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly})
	if err != nil {
		t.Fatalf("begin: %v", err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	return clusterReadLedger(t, ctx, pgQuerier{tx})
}

// clusterSQLiteLedger reads the ledger and the payment journal of the
// SQLite file at path through a query-only connection (WAL lets it run
// next to a live server).
func clusterSQLiteLedger(t *testing.T, path string) clusterLedger {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	db, err := sql.Open("sqlite", path+"?_pragma=query_only(1)&_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatalf("open %s: %v", path, err)
	}
	defer db.Close()
	// Both tables from one snapshot (a read transaction keeps the WAL
	// snapshot of its first read): a settlement recorded between two
	// separate reads would look like a payment without its ledger row.
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatalf("begin: %v", err)
	}
	defer func() { _ = tx.Rollback() }()
	return clusterReadLedger(t, ctx, sqlQuerier{tx})
}

// clusterSQLiteExec runs statements on the SQLite file at path (a
// connection of its own, next to the live servers).
func clusterSQLiteExec(t *testing.T, path string, stmts ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	db, err := sql.Open("sqlite", path+"?_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatalf("open %s: %v", path, err)
	}
	defer db.Close()
	for _, s := range stmts {
		if _, err := db.ExecContext(ctx, s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
}

// clusterMetricSample returns the value of one sample of base's /metrics:
// the metric name with exactly the label set labels (e.g.
// `state="unknown"`); ok is false when it is not exposed.
func clusterMetricSample(t *testing.T, c *http.Client, base, name, labels string) (v int64, ok bool) {
	t.Helper()
	a := clusterMust(t, c, http.MethodGet, base+"/metrics", "", "")
	if a.status != http.StatusOK {
		t.Fatalf("GET /metrics: %s", a)
	}
	prefix := name + "{" + labels + "} "
	for _, line := range strings.Split(string(a.body), "\n") {
		if rest, found := strings.CutPrefix(line, prefix); found {
			f, err := strconv.ParseFloat(strings.TrimSpace(rest), 64)
			if err != nil {
				t.Fatalf("metrics line %q: %v", line, err)
			}
			return int64(f), true
		}
	}
	return 0, false
}

// clusterEventually polls cond every 100 ms until it returns "" (done) or
// timeout passes; it then fails the test with cond's last message.
func clusterEventually(t *testing.T, timeout time.Duration, cond func() string) time.Duration {
	t.Helper()
	start := time.Now()
	for {
		msg := cond()
		if msg == "" {
			return time.Since(start)
		}
		if time.Since(start) > timeout {
			t.Fatalf("after %v: %s", timeout, msg)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// clusterCheckSettledRecorded fails the test unless the ledger and the
// settled payments of the journal match one to one (settled means
// recorded: both are written in one commit).
func clusterCheckSettledRecorded(t *testing.T, l clusterLedger) {
	t.Helper()
	ledger := l.byNonce()
	for nonce, n := range ledger {
		if n != 1 {
			t.Fatalf("nonce %s has %d ledger rows", nonce, n)
		}
		if st := l.stateOfNonce(nonce); st != engine.StateSettled {
			t.Fatalf("nonce %s has a ledger row and is %v in the payment journal", nonce, st)
		}
	}
	for key, st := range l.payments {
		if nonce := key[strings.LastIndex(key, "/")+1:]; st == engine.StateSettled && ledger[nonce] != 1 {
			t.Fatalf("payment %s is settled without its ledger row", key)
		}
	}
}

// clusterNonceKey is the payment journal key of a payment of the offer by payer.
func clusterNonceKey(pr x402.PaymentRequired, payer, nonce string) string {
	req := pr.Accepts[0]
	return exact.NonceKey(req.Network, req.Asset, payer, nonce)
}

// clusterUnmarshal decodes a JSON body.
func clusterUnmarshal(b []byte, v any) error {
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("decode %s: %w", clusterTail(string(b), 200), err)
	}
	return nil
}

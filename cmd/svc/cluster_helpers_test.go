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
		t.Skip("builds and runs svc serve processes")
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
		out, err := exec.Command(goBin, "build", "-o", path, ".").CombinedOutput()
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

// clusterStart starts `svc serve` in dev mode (local facilitator, default
// dev payTo) on a free loopback port with the given --db, and waits for the
// banner naming the bound address. The process is killed at cleanup if it
// is still running; its output is logged when the test failed.
func clusterStart(t *testing.T, name, db string) *clusterNode {
	t.Helper()
	return clusterStartIn(t, name, db, t.TempDir())
}

// clusterStartIn is clusterStart with the working directory dir (where
// the default ledger spool lives).
func clusterStartIn(t *testing.T, name, db, dir string) *clusterNode {
	t.Helper()
	bin := clusterBinary(t)
	cmd := exec.Command(bin, "serve", "--addr", "127.0.0.1:0", "--db", db, "--log-level", "warn", "--shutdown-timeout", "10s")
	cmd.Dir = dir
	cmd.Env = clusterEnv()
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
			t.Logf("output of %s:\n%s", name, clusterTail(n.out.String(), 4000))
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
	pr, err := x402.DecodePaymentRequired(a.header.Get(x402.HeaderPaymentRequired))
	if err != nil {
		return ""
	}
	return pr.Error
}

// settlement decodes PAYMENT-RESPONSE.
func (a clusterAnswer) settlement() (x402.SettleResponse, error) {
	v := a.header.Get(x402.HeaderPaymentResponse)
	if v == "" {
		return x402.SettleResponse{}, x402.ErrNoPaymentResponse
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
func clusterSigner(t *testing.T) *x402.Signer {
	t.Helper()
	var k [32]byte
	if _, err := rand.Read(k[:]); err != nil {
		t.Fatal(err)
	}
	s, err := x402.ParseSigner(hex.EncodeToString(k[:]))
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
func clusterSign(s *x402.Signer, pr x402.PaymentRequired) (header, nonce string, err error) {
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
func clusterMustSign(t *testing.T, s *x402.Signer, pr x402.PaymentRequired) (header, nonce string) {
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
	ep, err := x402.ParseExactEVMPayload(p.Payload)
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

// clusterLedgerQuery reads the whole ledger and the nonce records' states.
const (
	clusterLedgerQuery = `SELECT network, asset, payer, nonce, tool_key, CAST(amount AS TEXT), tx, COALESCE(ref_code, '') FROM settlements ORDER BY id`
	clusterNonceQuery  = `SELECT nonce_key, state FROM nonces`
)

// clusterLedger is the ledger and the nonce records of a store, read
// directly from its tables.
type clusterLedger struct {
	rows   []clusterLedgerRow
	nonces map[string]int // nonce key → state (1 reserved, 2 settled)
}

// byNonce counts the ledger rows per lower-case nonce.
func (l clusterLedger) byNonce() map[string]int {
	m := map[string]int{}
	for _, r := range l.rows {
		m[strings.ToLower(r.Nonce)]++
	}
	return m
}

// states counts the nonce records per state.
func (l clusterLedger) states() map[int]int {
	m := map[int]int{}
	for _, s := range l.nonces {
		m[s]++
	}
	return m
}

// clusterPGLedger reads the ledger of the PostgreSQL store at dsn.
func clusterPGLedger(t *testing.T, dsn string) clusterLedger {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer c.Close(ctx)
	l := clusterLedger{nonces: map[string]int{}}
	rows, err := c.Query(ctx, clusterLedgerQuery)
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
	if err := rows.Err(); err != nil {
		t.Fatalf("read the ledger: %v", err)
	}
	rows, err = c.Query(ctx, clusterNonceQuery)
	if err != nil {
		t.Fatalf("read the nonces: %v", err)
	}
	for rows.Next() {
		var key string
		var state int16
		if err := rows.Scan(&key, &state); err != nil {
			t.Fatalf("read the nonces: %v", err)
		}
		l.nonces[key] = int(state)
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("read the nonces: %v", err)
	}
	return l
}

// clusterSQLiteLedger reads the ledger of the SQLite file at path through
// a query-only connection (WAL lets it run next to a live server).
func clusterSQLiteLedger(t *testing.T, path string) clusterLedger {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	db, err := sql.Open("sqlite", path+"?_query_only=1&_busy_timeout=5000")
	if err != nil {
		t.Fatalf("open %s: %v", path, err)
	}
	defer db.Close()
	l := clusterLedger{nonces: map[string]int{}}
	rows, err := db.QueryContext(ctx, clusterLedgerQuery)
	if err != nil {
		t.Fatalf("read the ledger: %v", err)
	}
	defer rows.Close()
	for rows.Next() {
		var r clusterLedgerRow
		if err := rows.Scan(&r.Network, &r.Asset, &r.Payer, &r.Nonce, &r.ToolKey, &r.Amount, &r.Tx, &r.RefCode); err != nil {
			t.Fatalf("read the ledger: %v", err)
		}
		l.rows = append(l.rows, r)
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("read the ledger: %v", err)
	}
	nrows, err := db.QueryContext(ctx, clusterNonceQuery)
	if err != nil {
		t.Fatalf("read the nonces: %v", err)
	}
	defer nrows.Close()
	for nrows.Next() {
		var key string
		var state int
		if err := nrows.Scan(&key, &state); err != nil {
			t.Fatalf("read the nonces: %v", err)
		}
		l.nonces[key] = state
	}
	if err := nrows.Err(); err != nil {
		t.Fatalf("read the nonces: %v", err)
	}
	return l
}

// clusterNonceKey is the nonce store key of a payment of the offer by payer.
func clusterNonceKey(pr x402.PaymentRequired, payer, nonce string) string {
	req := pr.Accepts[0]
	return x402.NonceKey(req.Network, req.Asset, payer, nonce)
}

// clusterUnmarshal decodes a JSON body.
func clusterUnmarshal(b []byte, v any) error {
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("decode %s: %w", clusterTail(string(b), 200), err)
	}
	return nil
}

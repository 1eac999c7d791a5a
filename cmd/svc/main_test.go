package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/seed1284c1d2/svc/httpserver"
	"github.com/seed1284c1d2/svc/internal/envflag"
	"github.com/seed1284c1d2/svc/store"
	"github.com/seed1284c1d2/svc/x402"
	"github.com/seed1284c1d2/svc/x402/client"
	"github.com/seed1284c1d2/svc/x402/engine"
	"github.com/seed1284c1d2/svc/x402/exact"
	"github.com/seed1284c1d2/svc/x402/facilitator"
)

// lockedBuffer is a goroutine-safe output buffer.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

var listeningRE = regexp.MustCompile(`listening on (http://127\.0\.0\.1:[0-9]+)`)

// waitListening waits for the banner line naming the bound address.
func waitListening(t *testing.T, out interface{ String() string }, done <-chan struct{}) string {
	t.Helper()
	deadline := time.After(60 * time.Second)
	for {
		if m := listeningRE.FindStringSubmatch(out.String()); m != nil {
			return m[1]
		}
		select {
		case <-done:
			t.Fatalf("svc serve exited before listening:\n%s", out.String())
		case <-deadline:
			t.Fatalf("svc serve did not print its address:\n%s", out.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func randomKey(t *testing.T) string {
	t.Helper()
	var k [32]byte
	if _, err := rand.Read(k[:]); err != nil {
		t.Fatal(err)
	}
	return "0x" + hex.EncodeToString(k[:])
}

func getJSON(t *testing.T, url string, v any) int {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if v != nil {
		if err := json.Unmarshal(b, v); err != nil {
			t.Fatalf("GET %s: %v: %s", url, err, b)
		}
	}
	return resp.StatusCode
}

// TestServeFromCleanCheckout builds the binary and starts `svc serve` with
// no configuration in an empty working directory (a free port is the only
// flag), then calls /health (free), a paid route unpaid (402) and paid
// with `svc call` (the Go client), lists the tools with `svc tools --url`
// and stops it with SIGTERM.
func TestServeFromCleanCheckout(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: builds and runs the svc binary (the full go test runs it)")
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go not in PATH")
	}
	bin := filepath.Join(t.TempDir(), "svc")
	build := exec.Command(goBin, "build", "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	// The release binary cannot stall a payment: the crash tests' hook is
	// compiled only with -tags svc_crashtest.
	if b, err := os.ReadFile(bin); err != nil || bytes.Contains(b, []byte("SVC_TEST_STALL_AT")) || bytes.Contains(b, []byte("stalled for a crash test")) {
		t.Fatalf("the release binary holds the crash tests' stall hook (%v)", err)
	}
	work := t.TempDir()
	cmd := exec.Command(bin, "serve", "--addr", "127.0.0.1:0")
	cmd.Dir = work
	cmd.Env = cleanEnv()
	stderr := &lockedBuffer{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	var waitErr error
	go func() { waitErr = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		select {
		case <-exited:
		default:
			_ = cmd.Process.Kill()
			<-exited
		}
	})
	base := waitListening(t, stderr, exited)
	banner := stderr.String()
	for _, want := range []string{"DEV MODE", "NOTHING is settled on chain", "SIMULATED", "never send funds", "sqlite"} {
		if !strings.Contains(banner, want) {
			t.Fatalf("banner lacks %q:\n%s", want, banner)
		}
	}

	var health struct {
		Status      string `json:"status"`
		DevMode     bool   `json:"devMode"`
		DevModeNote string `json:"devModeNote"`
		Terminal    struct {
			Source string `json:"source"`
		} `json:"terminal"`
		Store struct {
			Status string `json:"status"`
			Kind   string `json:"kind"`
		} `json:"store"`
	}
	if code := getJSON(t, base+"/health", &health); code != 200 || !health.DevMode || health.Store.Kind != "sqlite" || health.Terminal.Source != "simulated" {
		t.Fatalf("health %d %+v", code, health)
	}
	if _, err := os.Stat(filepath.Join(work, "svc-data", "svc.db")); err != nil {
		t.Fatalf("the default SQLite file: %v", err)
	}

	// The club's routes answer other methods with 405 and Allow through the
	// server too (GET on the create route is not a referral code).
	for _, c := range []struct{ method, path, allow string }{
		{http.MethodGet, "/api/club/referral/create", "POST"},
		{http.MethodDelete, "/api/club/lounge", "GET, HEAD"},
	} {
		req, _ := http.NewRequest(c.method, base+c.path, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusMethodNotAllowed || resp.Header.Get("Allow") != c.allow || !strings.Contains(string(body), `"code":"method_not_allowed"`) {
			t.Fatalf("%s %s: %d Allow %q %s", c.method, c.path, resp.StatusCode, resp.Header.Get("Allow"), body)
		}
	}

	resp, err := http.Post(base+"/api/tick-pnl", "application/json", strings.NewReader(`{"entry":100,"exit":101,"contracts":2,"tickSize":0.25,"tickValue":12.5,"direction":"long"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	pr, err := client.PaymentRequiredOf(resp)
	if resp.StatusCode != http.StatusPaymentRequired || err != nil || pr.Accepts[0].Amount != "50000" || pr.Accepts[0].Network != "eip155:8453" {
		t.Fatalf("unpaid call: %d %+v %v", resp.StatusCode, pr, err)
	}

	key := randomKey(t)
	call := exec.Command(bin, "call", "tick-pnl", "--url", base, "--key-env", "PAYER_KEY",
		"--json", `{"entry":100,"exit":101,"contracts":2,"tickSize":0.25,"tickValue":12.5,"direction":"long"}`)
	call.Dir = work
	call.Env = append(cleanEnv(), "PAYER_KEY="+key)
	var callErr bytes.Buffer
	call.Stderr = &callErr
	out, err := call.Output()
	if err != nil {
		t.Fatalf("svc call: %v\n%s\n%s", err, out, callErr.String())
	}
	if strings.Contains(string(out)+callErr.String(), strings.TrimPrefix(key, "0x")) {
		t.Fatal("svc call printed the private key")
	}
	var co struct {
		Status int `json:"status"`
		Result struct {
			Ticks json.Number `json:"ticks"`
			PnL   json.Number `json:"pnl"`
		} `json:"result"`
		Settlement x402.SettleResponse `json:"settlement"`
	}
	if err := json.Unmarshal(out, &co); err != nil {
		t.Fatalf("svc call output %s: %v", out, err)
	}
	if co.Status != 200 || co.Result.Ticks != "4" || co.Result.PnL != "100" || !co.Settlement.Success || co.Settlement.Extra["onChain"] != false {
		t.Fatalf("svc call output %s", out)
	}

	// A GET tool with --query, flags before and after the tool key: none
	// is dropped.
	call = exec.Command(bin, "call", "--url", base, "--key-env", "PAYER_KEY", "xau-bars", "--query", "timeframe=H1", "--query", "count=10")
	call.Env = append(cleanEnv(), "PAYER_KEY="+key)
	if out, err := call.Output(); err != nil || !strings.Contains(string(out), `"timeframe": "H1"`) || !strings.Contains(string(out), `"count": 10,`) ||
		!strings.Contains(string(out), `"source": "simulated"`) {
		t.Fatalf("svc call xau-bars: %v\n%s", err, out)
	}
	// A stray argument is refused before anything is paid.
	call = exec.Command(bin, "call", "--url", base, "--key-env", "PAYER_KEY", "xau-bars", "count=10")
	call.Env = append(cleanEnv(), "PAYER_KEY="+key)
	var strayErr bytes.Buffer
	call.Stderr = &strayErr
	if out, err := call.Output(); err == nil || call.ProcessState.ExitCode() != 2 || len(out) != 0 ||
		!strings.Contains(strayErr.String(), `unexpected argument "count=10" after the tool key "xau-bars"`) {
		t.Fatalf("svc call with a stray argument: %v\n%s\n%s", err, out, strayErr.String())
	}

	// The aggregate stats saw the 402 and both settled calls (the server
	// reports every answer to them).
	var stats struct {
		PaymentRequired int64 `json:"paymentRequired"`
		Settled         int64 `json:"settled"`
	}
	if code := getJSON(t, base+"/api/distribution/stats", &stats); code != 200 || stats.PaymentRequired < 1 || stats.Settled != 2 {
		t.Fatalf("stats %d %+v, want at least one 402 and 2 settled calls", code, stats)
	}

	list := exec.Command(bin, "tools", "--url", base)
	out, err = list.Output()
	if err != nil || strings.Count(string(out), "/api/") != 13 || !strings.Contains(string(out), "regex-test") {
		t.Fatalf("svc tools --url: %v\n%s", err, out)
	}
	// SVC_URL names the server as --url does.
	list = exec.Command(bin, "tools", "--json")
	list.Env = append(os.Environ(), "SVC_URL="+base)
	if out, err = list.Output(); err != nil || !strings.Contains(string(out), base+"/api/regex-test") {
		t.Fatalf("svc tools with SVC_URL: %v\n%s", err, out)
	}

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-exited:
	case <-time.After(30 * time.Second):
		t.Fatal("svc serve did not stop on SIGTERM")
	}
	if waitErr != nil {
		t.Fatalf("svc serve exited with %v:\n%s", waitErr, stderr.String())
	}
}

// cleanEnv is the environment without SVC_* variables.
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "SVC_") {
			env = append(env, kv)
		}
	}
	return env
}

func envOf(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func TestParseServe(t *testing.T) {
	c, err := parseServe(nil, io.Discard, envOf(nil))
	if err != nil {
		t.Fatal(err)
	}
	dev, _ := devPayTo()
	if !c.devMode || !c.devPayTo || c.payTo != dev || c.addr != "127.0.0.1:8080" || c.network != "eip155:8453" ||
		c.terminal != "simulated" || c.db != "svc-data/svc.db" || c.bodyLimit != 2<<20 {
		t.Fatalf("defaults %+v", c)
	}
	if c.bodyMemory != httpserver.DefaultBodyMemory || c.bodyRate != httpserver.DefaultBodyRate {
		t.Fatalf("body defaults: memory %d, rate %v", c.bodyMemory, c.bodyRate)
	}
	c, err = parseServe([]string{"--body-memory", "64MiB", "--body-rate", "off"}, io.Discard, envOf(nil))
	if err != nil || c.bodyMemory != 64<<20 || c.bodyRate != -1 {
		t.Fatalf("body flags %+v %v", c, err)
	}
	if c.unpaidRate != httpserver.DefaultUnpaidRate || c.unpaidBurst != httpserver.DefaultUnpaidBurst || c.settleTimeout != engine.DefaultSettleTimeout {
		t.Fatalf("payment defaults %+v", c)
	}
	if c.payerBurst != engine.DefaultPayerBurst || c.payerRefill != engine.DefaultPayerRefill || c.payerConcurrency != engine.DefaultPayerConcurrency {
		t.Fatalf("payer budget defaults %d %s %d", c.payerBurst, c.payerRefill, c.payerConcurrency)
	}
	c, err = parseServe([]string{"--unpaid-rate", "-1", "--settle-timeout", "90s"}, io.Discard, envOf(nil))
	if err != nil || c.unpaidRate != -1 || c.settleTimeout != 90*time.Second {
		t.Fatalf("payment flags %+v %v", c, err)
	}
	c, err = parseServe([]string{"--payer-burst", "3", "--payer-concurrency", "8"}, io.Discard, envOf(map[string]string{"SVC_PAYER_REFILL": "1m"}))
	if err != nil || c.payerBurst != 3 || c.payerRefill != time.Minute || c.payerConcurrency != 8 {
		t.Fatalf("payer budget flags %+v %v", c, err)
	}
	for _, bad := range [][]string{{"--payer-refill", "0s"}, {"--payer-refill", "-1s"}, {"--payer-concurrency", "0"}} {
		if _, err := parseServe(bad, io.Discard, envOf(nil)); err == nil || !strings.Contains(err.Error(), bad[0]) {
			t.Fatalf("%v: %v", bad, err)
		}
	}

	env := envOf(map[string]string{
		"SVC_ADDR": "0.0.0.0:9000", "SVC_FACILITATOR_URL": "https://fac.example", "SVC_PAY_TO": "0x209693Bc6afc0C5328bA36FaF03C514EF312287C",
		"SVC_PRICES": "regex-test=0.004, tick-pnl=$0.06", "SVC_BODY_LIMIT": "512KiB", "SVC_MT5_BRIDGE_URL": "http://10.0.0.2:8765",
		"SVC_MT5_BRIDGE_TOKEN": "a-long-bridge-token-123", "SVC_DATABASE_URL": "postgres://u:p@db/svc", "SVC_RATE": "5", "SVC_BURST": "10",
		"SVC_FACILITATOR_AUTH_HEADER": "Authorization: Bearer abc", "SVC_TRUSTED_PROXIES": "10.0.0.0/8,192.0.2.7",
	})
	c, err = parseServe(nil, io.Discard, env)
	if err != nil {
		t.Fatal(err)
	}
	if c.devMode || c.addr != "0.0.0.0:9000" || c.prices["regex-test"] != "0.004" || c.prices["tick-pnl"] != "0.06" || c.bodyLimit != 512<<10 ||
		c.terminal != "bridge" || c.bridgeToken != "a-long-bridge-token-123" || c.db != "postgres://u:p@db/svc" || c.rate != 5 || c.burst != 10 ||
		len(c.trusted) != 2 || c.trusted[1].String() != "192.0.2.7/32" {
		t.Fatalf("from the environment %+v", c)
	}
	// Flags win over the environment; a repeated --price replaces SVC_PRICES.
	c, err = parseServe([]string{"--addr", "127.0.0.1:9001", "--price", "csv-profile=0.003", "--terminal", "none"}, io.Discard, env)
	if err != nil {
		t.Fatal(err)
	}
	if c.addr != "127.0.0.1:9001" || len(c.prices) != 1 || c.prices["csv-profile"] != "0.003" || c.terminal != "none" {
		t.Fatalf("flags over the environment %+v", c)
	}

	bad := map[string]struct {
		args []string
		env  map[string]string
	}{
		"payTo required in production": {env: map[string]string{"SVC_FACILITATOR_URL": "https://fac.example"}},
		"bad payTo":                    {args: []string{"--pay-to", "0x12"}},
		"unknown network":              {args: []string{"--network", "eip155:1"}},
		"bad price":                    {args: []string{"--price", "regex-test"}},
		"bad body limit":               {args: []string{"--body-limit", "lots"}},
		"body memory under the limit":  {args: []string{"--body-memory", "1MiB"}},
		"bad body rate":                {args: []string{"--body-rate", "fast"}},
		"bad terminal":                 {args: []string{"--terminal", "mt4"}},
		"bridge without token":         {args: []string{"--bridge-url", "http://127.0.0.1:8765"}},
		"replay without file":          {args: []string{"--terminal", "replay"}},
		"auth header format":           {args: []string{"--facilitator-url", "https://f.example", "--pay-to", "0x209693Bc6afc0C5328bA36FaF03C514EF312287C", "--facilitator-auth-header", "Bearer abc"}},
		"auth header in dev mode":      {args: []string{"--facilitator-auth-header", "Authorization: Bearer abc"}},
		"bad env duration":             {env: map[string]string{"SVC_REGEX_TIMEOUT": "soon"}},
		"bad trusted proxy":            {args: []string{"--trusted-proxy", "proxy.example"}},
		"arguments":                    {args: []string{"extra"}},
	}
	for name, tc := range bad {
		if _, err := parseServe(tc.args, io.Discard, envOf(tc.env)); err == nil {
			t.Errorf("%s: accepted", name)
		} else if _, ok := err.(envflag.UsageError); !ok {
			t.Errorf("%s: %T %v is not a usage error", name, err, err)
		}
	}
}

func TestServeRefusesDevModeOnPublicAddress(t *testing.T) {
	var stderr bytes.Buffer
	code := run(context.Background(), []string{"serve", "--addr", "0.0.0.0:0", "--db", filepath.Join(t.TempDir(), "x.db")}, io.Discard, &stderr, envOf(nil))
	if code != 2 || !strings.Contains(stderr.String(), "dev mode") || !strings.Contains(stderr.String(), "loopback") {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
}

// TestServeProductionFacilitator runs `svc serve` in process against a
// remote facilitator (a local one served over HTTP) that requires an
// authorization header: a paid call settles through it, and the header's
// value never reaches the logs.
func TestServeProductionFacilitator(t *testing.T) {
	const secret = "s3cr3t-facilitator-token"
	const payTo = "0x209693Bc6afc0C5328bA36FaF03C514EF312287C"
	local, err := facilitator.NewLocal(facilitator.LocalConfig{PayTo: payTo})
	if err != nil {
		t.Fatal(err)
	}
	var authOK, authBad int
	var mu sync.Mutex
	fh := facilitator.Handler(local)
	fac := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		if r.Header.Get("Authorization") == "Bearer "+secret {
			authOK++
		} else {
			authBad++
		}
		mu.Unlock()
		fh.ServeHTTP(w, r)
	}))
	defer fac.Close()

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stderr := &lockedBuffer{}
	done := make(chan struct{})
	var code int
	go func() {
		code = run(ctx, []string{"serve", "--addr", "127.0.0.1:0", "--db", filepath.Join(t.TempDir(), "svc.db"), "--log-level", "debug", "--log-format", "json"},
			io.Discard, stderr, envOf(map[string]string{
				"SVC_FACILITATOR_URL": fac.URL, "SVC_PAY_TO": payTo,
				"SVC_FACILITATOR_AUTH_HEADER": "Authorization: Bearer " + secret,
			}))
		close(done)
	}()
	base := waitListening(t, stderr, done)
	var health struct {
		DevMode     bool `json:"devMode"`
		Facilitator struct {
			Status string `json:"status"`
			Kind   string `json:"kind"`
		} `json:"facilitator"`
		Terminal struct {
			Status string `json:"status"`
		} `json:"terminal"`
		Status string `json:"status"`
	}
	if c := getJSON(t, base+"/health", &health); c != 200 || health.DevMode || health.Facilitator.Kind != "remote" || health.Facilitator.Status != "up" ||
		health.Terminal.Status != "down" || health.Status != "degraded" {
		t.Fatalf("health %d %+v", c, health)
	}
	var out, errOut bytes.Buffer
	if c := run(ctx, []string{"call", "evm-address-syntax", "--url", base, "--key-env", "K", "--json", `{"address":"` + payTo + `"}`},
		&out, &errOut, envOf(map[string]string{"K": randomKey(t)})); c != 0 {
		t.Fatalf("svc call exit %d: %s %s", c, out.String(), errOut.String())
	}
	if !strings.Contains(out.String(), `"valid": true`) || !strings.Contains(out.String(), `"success": true`) {
		t.Fatalf("svc call output %s", out.String())
	}
	// The gold routes answer 503 with no terminal configured.
	resp, err := http.Get(base + "/api/xau/quote")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("gold route without a terminal: %d", resp.StatusCode)
	}
	cancel()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("serve did not stop")
	}
	if code != 0 {
		t.Fatalf("serve exit %d:\n%s", code, stderr.String())
	}
	mu.Lock()
	defer mu.Unlock()
	if authOK < 3 || authBad != 0 { // supported, verify, settle
		t.Fatalf("facilitator saw %d authorized and %d unauthorized requests", authOK, authBad)
	}
	if strings.Contains(stderr.String(), secret) {
		t.Fatal("the facilitator auth header reached the logs")
	}
	if len(local.Settlements()) != 1 {
		t.Fatalf("%d settlements", len(local.Settlements()))
	}
}

func TestRunCommands(t *testing.T) {
	var out, errOut bytes.Buffer
	if c := run(context.Background(), []string{"version"}, &out, &errOut, envOf(nil)); c != 0 || !strings.Contains(out.String(), "interface 2.0.0") {
		t.Fatalf("version: %d %q", c, out.String())
	}
	out.Reset()
	if c := run(context.Background(), []string{"help"}, &out, &errOut, envOf(nil)); c != 0 || !strings.Contains(out.String(), "svc serve") {
		t.Fatalf("help: %d %q", c, out.String())
	}
	if c := run(context.Background(), []string{"bogus"}, &out, &errOut, envOf(nil)); c != 2 {
		t.Fatalf("unknown command: exit %d", c)
	}
	if c := run(context.Background(), nil, &out, &errOut, envOf(nil)); c != 2 {
		t.Fatalf("no command: exit %d", c)
	}
	errOut.Reset()
	if c := run(context.Background(), []string{"help", "serve"}, &out, &errOut, envOf(nil)); c != 0 || !strings.Contains(errOut.String(), "SVC_FACILITATOR_URL") {
		t.Fatalf("help serve: %d %q", c, errOut.String())
	}

	out.Reset()
	if c := run(context.Background(), []string{"tools"}, &out, &errOut, envOf(nil)); c != 0 {
		t.Fatalf("tools: exit %d %s", c, errOut.String())
	}
	sc := bufio.NewScanner(strings.NewReader(out.String()))
	rows := 0
	for sc.Scan() {
		if strings.Contains(sc.Text(), "/api/") {
			rows++
		}
	}
	if rows != 13 || !strings.Contains(out.String(), "0.0034") {
		t.Fatalf("tools table:\n%s", out.String())
	}
	out.Reset()
	if c := run(context.Background(), []string{"tools", "--json"}, &out, &errOut, envOf(nil)); c != 0 {
		t.Fatalf("tools --json: exit %d", c)
	}
	var items []map[string]any
	if err := json.Unmarshal(out.Bytes(), &items); err != nil || len(items) != 13 {
		t.Fatalf("tools --json: %v %d", err, len(items))
	}

	for name, args := range map[string][]string{
		"no key env":     {"call", "risk-levels"},
		"no tool":        {"call", "--key-env", "K"},
		"empty key":      {"call", "risk-levels", "--key-env", "EMPTY"},
		"json and query": {"call", "risk-levels", "--key-env", "K", "--json", "{}", "--query", "a=b"},
		"stray argument": {"call", "--key-env", "K", "risk-levels", "--json", "{}", "extra"},
		"two tool keys":  {"call", "risk-levels", "tick-pnl", "--key-env", "K"},
		"repeated query": {"call", "--key-env", "K", "risk-levels", "--query", "entry=1", "--query", "entry=2"},
	} {
		errOut.Reset()
		if c := run(context.Background(), args, &out, &errOut, envOf(map[string]string{"K": randomKey(t)})); c != 2 {
			t.Errorf("%s: exit %d (%s)", name, c, errOut.String())
		}
	}
	// The commands without positional arguments name a stray one.
	for _, cmd := range []string{"serve", "facilitator", "reconcile", "ledger", "payments", "tools"} {
		errOut.Reset()
		if c := run(context.Background(), []string{cmd, "stray"}, &out, &errOut, envOf(nil)); c != 2 ||
			!strings.Contains(errOut.String(), "svc "+cmd+` takes no arguments, got "stray"`) {
			t.Errorf("%s stray: exit %d %q", cmd, c, errOut.String())
		}
	}
	// A malformed key is refused without being echoed.
	errOut.Reset()
	if c := run(context.Background(), []string{"call", "risk-levels", "--key-env", "K"}, &out, &errOut, envOf(map[string]string{"K": "0xnotakey-SECRETISH"})); c != 1 || strings.Contains(errOut.String(), "SECRETISH") {
		t.Fatalf("malformed key: exit %d %q", c, errOut.String())
	}
}

// TestServeReplayTerminal: --terminal replay serves the gold tools from an
// MT5 history export, and /health and the answers say so.
func TestServeReplayTerminal(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stderr := &lockedBuffer{}
	done := make(chan struct{})
	var code int
	go func() {
		code = run(ctx, []string{"serve", "--addr", "127.0.0.1:0", "--db", filepath.Join(t.TempDir(), "svc.db"),
			"--replay-file", filepath.Join("..", "..", "xau", "replay", "testdata", "XAUUSD_M1_sample.csv"), "--log-level", "warn"},
			io.Discard, stderr, envOf(nil))
		close(done)
	}()
	base := waitListening(t, stderr, done)
	var health struct {
		Terminal struct {
			Status string `json:"status"`
			Source string `json:"source"`
		} `json:"terminal"`
	}
	if c := getJSON(t, base+"/health", &health); c != 200 || health.Terminal.Status != "up" || health.Terminal.Source != "replay" {
		t.Fatalf("health %d %+v", c, health)
	}
	var out, errOut bytes.Buffer
	if c := run(ctx, []string{"call", "xau-quote", "--url", base, "--key-env", "K"}, &out, &errOut, envOf(map[string]string{"K": randomKey(t)})); c != 0 {
		t.Fatalf("svc call exit %d: %s %s", c, out.String(), errOut.String())
	}
	if !strings.Contains(out.String(), `"source": "replay"`) || !strings.Contains(out.String(), `"symbol": "XAUUSD"`) {
		t.Fatalf("xau-quote from the replay: %s", out.String())
	}
	cancel()
	<-done
	if code != 0 {
		t.Fatalf("serve exit %d:\n%s", code, stderr.String())
	}
}

// TestPaymentsCommand: `svc payments` counts the journal's rows by state
// and lists the rows of one state (unknown by default), without payloads;
// a bad state is a usage error.
func TestPaymentsCommand(t *testing.T) {
	ctx := context.Background()
	db := filepath.Join(t.TempDir(), "svc.db")
	st, err := store.Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	payer, nonce := "0x857b06519e91e3a54538791bdbb0e22373e36b66", "0x"+strings.Repeat("ab", 32)
	asset := "0x833589fcd6edb6e08f4c7c32d4f71b54bda02913"
	rec := engine.Reservation{Key: exact.NonceKey(x402.NetworkBase, asset, payer, nonce), Network: x402.NetworkBase, Asset: asset,
		Payer: payer, Nonce: nonce, PayTo: payer, Amount: "3400",
		Request: engine.Request{Hash: "h", Resource: "POST /api/risk-levels", Product: "risk-levels", Transport: "mcp",
			RequestID: "req-1", X402Version: 2},
		Owner: "a", LeaseUntil: now.Add(time.Minute), KeepUntil: now.Add(time.Hour), Now: now}
	if _, err := st.Reserve(ctx, rec, 3); err != nil {
		t.Fatal(err)
	}
	if err := st.Settling(ctx, rec.Key, "a", engine.Settling{Answer: engine.Answer{Status: 200, Body: []byte(`{"secret":"answer"}`)},
		AnswerUntil: now.Add(time.Hour), Payload: []byte(`{"signature":"0xdeadbeef"}`), Requirements: []byte(`{}`),
		Payer: payer, Amount: "3400", LeaseUntil: now.Add(time.Minute)}); err != nil {
		t.Fatal(err)
	}
	if err := st.MarkUnknown(ctx, rec.Key, "a", "settling again: invalid_exact_evm_nonce_already_used"); err != nil {
		t.Fatal(err)
	}
	_ = st.Close()

	var out, errOut bytes.Buffer
	if code := run(ctx, []string{"payments", "--db", db}, &out, &errOut, envOf(nil)); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	text := out.String()
	for _, want := range []string{"unknown 1", "settled 0", "POST /api/risk-levels", "mcp", payer, nonce, "req-1", "nonce_already_used"} {
		if !strings.Contains(text, want) {
			t.Fatalf("output lacks %q:\n%s", want, text)
		}
	}
	out.Reset()
	if code := run(ctx, []string{"payments", "--db", db, "--json"}, &out, &errOut, envOf(nil)); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	var row map[string]any
	if err := json.Unmarshal(out.Bytes(), &row); err != nil || row["state"] != "unknown" || row["key"] != rec.Key || row["transport"] != "mcp" {
		t.Fatalf("json row %v %v: %s", row, err, out.String())
	}
	if strings.Contains(out.String(), "deadbeef") || strings.Contains(out.String(), "secret") {
		t.Fatalf("the listing shows a payload or an answer: %s", out.String())
	}
	out.Reset()
	if code := run(ctx, []string{"payments", "--db", db, "--state", "settled"}, &out, &errOut, envOf(nil)); code != 0 || strings.Contains(out.String(), payer) {
		t.Fatalf("settled listing (exit %d): %s", code, out.String())
	}
	if code := run(ctx, []string{"payments", "--db", db, "--state", "bogus"}, &out, &errOut, envOf(nil)); code != 2 {
		t.Fatalf("a bad state exits %d, want 2", code)
	}
}

// TestHelpStyle: every command's -h lists its flags in one style (two
// dashes, one flag a line), and a flag without an environment variable
// names none.
func TestHelpStyle(t *testing.T) {
	for _, cmd := range []string{"serve", "call", "tools", "payments", "ledger", "facilitator", "reconcile"} {
		var out, errOut bytes.Buffer
		if code := run(context.Background(), []string{"help", cmd}, &out, &errOut, envOf(nil)); code != 0 {
			t.Fatalf("svc help %s: exit %d: %s", cmd, code, errOut.String())
		}
		text := out.String() + errOut.String()
		if !strings.Contains(text, "\n  --") {
			t.Errorf("svc help %s lists no --flag:\n%s", cmd, text)
		}
		for _, bad := range []string{"\n  -", "(env ,", "(env )"} {
			for _, line := range strings.SplitAfter(text, "\n") {
				if strings.HasPrefix("\n"+line, bad) && !strings.HasPrefix(line, "  --") {
					t.Errorf("svc help %s: %q", cmd, line)
				}
			}
			if bad != "\n  -" && strings.Contains(text, bad) {
				t.Errorf("svc help %s holds %q:\n%s", cmd, bad, text)
			}
		}
	}
}

// TestPayToErrors: a --pay-to with a wrong EIP-55 checksum is refused with
// the right spelling of its digits; the zero address and a non-address are
// refused with their own reason.
func TestPayToErrors(t *testing.T) {
	const right = "0x209693Bc6afc0C5328bA36FaF03C514EF312287C"
	wrong := "0x209693bc" + right[10:]
	for in, want := range map[string]string{
		wrong: "wrong EIP-55 checksum (the case of its letters): these digits spelled with their checksum are " + right,
		"0x0000000000000000000000000000000000000000": "is the zero address",
		"0x12": `"0x12" is not an address: want 0x followed by 40 hex digits`,
		"0x00000000000000000000000000000000000000F1": "give it in lower case or in its EIP-55 form 0x00000000000000000000000000000000000000f1",
	} {
		_, err := parseServe([]string{"--facilitator-url", "http://127.0.0.1:1", "--pay-to", in}, io.Discard, envOf(nil))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("--pay-to %s: %v, want %q", in, err, want)
		}
	}
	if _, err := parseServe([]string{"--facilitator-url", "http://127.0.0.1:1", "--pay-to", right}, io.Discard, envOf(nil)); err != nil {
		t.Fatalf("--pay-to %s: %v", right, err)
	}
	var out, errOut bytes.Buffer
	if code := run(context.Background(), []string{"reconcile", "--rpc-url", "http://127.0.0.1:1", "--pay-to", wrong}, &out, &errOut, envOf(nil)); code != 2 || !strings.Contains(errOut.String(), right) {
		t.Fatalf("svc reconcile --pay-to %s: exit %d: %s", wrong, code, errOut.String())
	}
}

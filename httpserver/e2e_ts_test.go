package httpserver_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/seed1284c1d2/svc/x402"
)

// tsInstallTimeout bounds `npm ci` in e2e/; tsScriptTimeout one client run.
const (
	tsInstallTimeout = 5 * time.Minute
	tsScriptTimeout  = 60 * time.Second
)

// tsSkipOrFail skips the test, or fails it under CI=true, where the
// official client must run.
func tsSkipOrFail(t *testing.T, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	if os.Getenv("CI") == "true" {
		t.Fatalf("end-to-end test cannot run under CI=true: %s", msg)
	}
	t.Skipf("end-to-end test skipped: %s", msg)
}

// tsSetup finds node (20 or later) and e2e/, installing the locked
// clients with `npm ci` when they are missing (see e2e/README.md).
func tsSetup(t *testing.T) (node, dir string) {
	t.Helper()
	if os.Getenv("SVC_E2E") == "0" {
		t.Skip("end-to-end test skipped: SVC_E2E=0")
	}
	dir, err := filepath.Abs(filepath.Join("..", "e2e"))
	if err != nil {
		t.Fatal(err)
	}
	node, err = exec.LookPath("node")
	if err != nil {
		tsSkipOrFail(t, "node not found in PATH")
	}
	out, err := exec.Command(node, "-e", "process.stdout.write(process.versions.node)").Output()
	if err != nil {
		tsSkipOrFail(t, "node does not run: %v", err)
	}
	var major int
	if _, err := fmt.Sscanf(string(out), "%d.", &major); err != nil || major < 20 {
		tsSkipOrFail(t, "node %s found, version 20 or later needed", out)
	}
	installed := func() bool {
		for _, p := range []string{"@x402/fetch", "@x402/evm", "@x402/core", "viem"} {
			if _, err := os.Stat(filepath.Join(dir, "node_modules", filepath.FromSlash(p), "package.json")); err != nil {
				return false
			}
		}
		return true
	}
	if installed() {
		return node, dir
	}
	// Other packages' tests may install at the same time (go test runs
	// packages in parallel): take the install lock, then look again.
	unlock := tsInstallLock(t, dir)
	defer unlock()
	if installed() {
		return node, dir
	}
	npm, err := exec.LookPath("npm")
	if err != nil {
		tsSkipOrFail(t, "e2e/node_modules is missing and npm is not in PATH")
	}
	ctx, cancel := context.WithTimeout(context.Background(), tsInstallTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, npm, "ci", "--no-audit", "--no-fund", "--loglevel=error")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		tsSkipOrFail(t, "npm ci in e2e/ failed: %v\n%s", err, out)
	}
	if !installed() {
		tsSkipOrFail(t, "npm ci in e2e/ did not install the clients")
	}
	return node, dir
}

// tsInstallLock serializes `npm ci` in dir between test processes with an
// exclusively created lock file (a lock older than the install timeout is
// stale and taken over).
func tsInstallLock(t *testing.T, dir string) (unlock func()) {
	t.Helper()
	path := filepath.Join(dir, ".npm-ci.lock")
	deadline := time.Now().Add(tsInstallTimeout)
	for {
		f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
		if err == nil {
			f.Close()
			return func() { _ = os.Remove(path) }
		}
		if fi, serr := os.Stat(path); serr == nil && time.Since(fi.ModTime()) > tsInstallTimeout {
			_ = os.Remove(path)
			continue
		}
		if time.Now().After(deadline) {
			tsSkipOrFail(t, "waited %s for another npm ci in e2e/", tsInstallTimeout)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// tsResult is what e2e/pay-call.mjs prints.
type tsResult struct {
	Status          int                   `json:"status"`
	Body            json.RawMessage       `json:"body"`
	PaymentResponse *x402.SettleResponse  `json:"paymentResponse"`
	PaymentRequired *x402.PaymentRequired `json:"paymentRequired"`
	Error           string                `json:"error"`
}

// TestOfficialTSClient pays a POST and a GET tool of the full server with
// the official TypeScript client (@x402/fetch 2.27 + @x402/evm).
func TestOfficialTSClient(t *testing.T) {
	node, dir := tsSetup(t)
	f := newFixture(t, fixtureOptions{})
	var k [32]byte
	if _, err := rand.Read(k[:]); err != nil {
		t.Fatal(err)
	}
	keyHex := "0x" + hex.EncodeToString(k[:])
	payer, err := x402.ParseSigner(keyHex)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		key, method, url, body string
		atomic                 string
	}{
		{"risk-levels", "POST", f.url + "/api/risk-levels", `{"entry":3500,"direction":"long","slPct":0.05,"tpPct":0.04}`, "5000"},
		{"session-state", "GET", f.url + "/api/session-state?dateTime=" + queryEscape("2025-03-31T09:15:00+02:00") + "&src=e2e", "", "5000"},
		{"regex-test", "POST", f.url + "/api/regex-test", `{"pattern":"(\\d{4})-(\\d{2})","flags":"g","text":"2025-03 and 2026-11"}`, "3400"},
		{"xau-bars", "GET", f.url + "/api/xau/bars?timeframe=M15&count=10", "", "20000"},
	}
	for _, tc := range cases {
		t.Run(tc.key, func(t *testing.T) {
			args := []string{"pay-call.mjs", tc.method, tc.url}
			if tc.body != "" {
				args = append(args, tc.body)
			}
			ctx, cancel := context.WithTimeout(context.Background(), tsScriptTimeout)
			defer cancel()
			cmd := exec.CommandContext(ctx, node, args...)
			cmd.Dir = dir
			cmd.Env = append(os.Environ(), "E2E_PRIVATE_KEY="+keyHex)
			var stderr strings.Builder
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			var res tsResult
			if jerr := json.Unmarshal(out, &res); jerr != nil || res.Error != "" || err != nil {
				t.Fatalf("node %v: %v / %v / %s\nstdout: %s\nstderr: %s", args, err, jerr, res.Error, out, stderr.String())
			}
			if res.Status != http.StatusOK {
				t.Fatalf("status %d, body %s", res.Status, res.Body)
			}
			sr := res.PaymentResponse
			if sr == nil || !sr.Success || sr.Network != x402.NetworkBase || sr.Amount != tc.atomic ||
				!strings.EqualFold(sr.Payer, payer.Address()) || !strings.HasPrefix(sr.Transaction, x402.LocalTransactionPrefix) {
				t.Fatalf("payment response %+v", sr)
			}
			checkFields(t, tc.key, res.Body)
		})
	}
	ps, err := f.st.PayerStats(context.Background(), payer.Address())
	if err != nil || ps.PaidCalls != int64(len(cases)) {
		t.Fatalf("ledger: %+v %v", ps, err)
	}
}

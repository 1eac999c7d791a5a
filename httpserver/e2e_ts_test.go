package httpserver_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/seed1284c1d2/svc/internal/nodetest"
	"github.com/seed1284c1d2/svc/x402"
	"github.com/seed1284c1d2/svc/x402/client"
	"github.com/seed1284c1d2/svc/x402/facilitator"
)

// tsScriptTimeout bounds one client run.
const tsScriptTimeout = 60 * time.Second

// tsSkipOrFail skips the test, or fails it under CI=true, where the
// official client must run.
func tsSkipOrFail(t *testing.T, format string, args ...any) {
	t.Helper()
	nodetest.SkipOrFail(t, format, args...)
}

// tsSetup finds node (20 or later) and e2e/, installing the locked
// clients with `npm ci` when they are missing (see e2e/README.md).
func tsSetup(t *testing.T) (node, dir string) {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("..", "e2e"))
	if err != nil {
		t.Fatal(err)
	}
	return nodetest.Setup(t, 20, dir, "@x402/fetch", "@x402/evm", "@x402/core", "viem"), dir
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
	payer, err := client.ParseSigner(keyHex)
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
				!strings.EqualFold(sr.Payer, payer.Address()) || !strings.HasPrefix(sr.Transaction, facilitator.LocalTransactionPrefix) {
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

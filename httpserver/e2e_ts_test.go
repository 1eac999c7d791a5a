package httpserver_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"io"
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

// TestOfficialTSClient pays every tool of the full server (its catalog
// example input) with the official TypeScript clients: v2 (@x402/fetch 2.27
// + @x402/evm, PAYMENT-SIGNATURE) and v1 (x402-fetch 1.x, which reads the
// 402 body and pays with X-PAYMENT); every payment is settled once and
// recorded in the ledger.
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
	paid := 0
	for _, tool := range f.cat.All() {
		req := f.request(t, tool, string(tool.ExampleInput))
		body := ""
		if req.Body != nil {
			b, err := io.ReadAll(req.Body)
			if err != nil {
				t.Fatal(err)
			}
			body = string(b)
		}
		atomic, err := x402.PriceToAtomic(tool.Price, 6)
		if err != nil {
			t.Fatal(err)
		}
		for _, version := range []string{"v2", "v1"} {
			t.Run(tool.Key+"/"+version, func(t *testing.T) {
				args := []string{"pay-call.mjs", tool.Method, req.URL.String()}
				if version == "v1" {
					args = []string{"pay-v1.mjs", "pay", req.URL.String(), tool.Method}
				}
				if body != "" {
					args = append(args, body)
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
				paid++
				sr := res.PaymentResponse
				network := x402.NetworkBase
				if version == "v1" {
					network = "base" // v1 clients read the v1 network name
				}
				if sr == nil || !sr.Success || sr.Network != network || sr.Amount != atomic ||
					!strings.EqualFold(sr.Payer, payer.Address()) || !strings.HasPrefix(sr.Transaction, facilitator.LocalTransactionPrefix) {
					t.Fatalf("payment response %+v", sr)
				}
				checkFields(t, tool.Key, res.Body)
			})
		}
	}
	ps, err := f.st.PayerStats(context.Background(), payer.Address())
	if err != nil || ps.PaidCalls != int64(paid) || paid != 2*len(f.cat.All()) {
		t.Fatalf("ledger: %+v %v (%d paid calls)", ps, err, paid)
	}
}

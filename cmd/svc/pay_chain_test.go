package main

import (
	"context"
	"encoding/json"
	"io"
	"math/big"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"

	"github.com/seed1284c1d2/svc/internal/anviltest"
	"github.com/seed1284c1d2/svc/x402/batch"
)

// svcPay runs `svc pay args...` as w's payer (its key in PAY_TEST_KEY).
func (w *chainWorld) svcPay(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, w.bin, append([]string{"pay"}, args...)...)
	cmd.Env = append(clusterEnv(), "PAY_TEST_KEY="+keyHex(w.payerKey))
	var o, e strings.Builder
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		return o.String(), e.String(), ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return o.String(), e.String(), 0
}

// TestChainPayOfficialExpress: svc pay pays the official @x402/express
// middleware (settled by svc facilitator on anvil): the route's answer is
// printed, the payer's balance falls and payTo's rises by the price; a dry
// run and a price over the cap move nothing.
func TestChainPayOfficialExpress(t *testing.T) {
	w := newChainWorld(t, anviltest.Options{})
	const token = "chain-test-token-0123456789"
	fac := w.svc(t, "svc facilitator", []string{"CHAIN_TEST_RELAYER_KEY=" + keyHex(w.relayerKey), "CHAIN_TEST_TOKEN=" + token},
		"facilitator", "--addr", "127.0.0.1:0", "--rpc-url", w.chain.URL, "--relayer-key-env", "CHAIN_TEST_RELAYER_KEY", "--token-env", "CHAIN_TEST_TOKEN")
	app := w.nodeApp(t, "express", "express-server.mjs", "FACILITATOR_URL="+fac.base, "FACILITATOR_TOKEN="+token, "PAY_TO="+chainPayTo.Hex())
	pay := func(args ...string) (stdout, stderr string, code int) { return w.svcPay(t, args...) }
	balances := func() (*big.Int, *big.Int) {
		return w.chain.TokenBalance(t, w.payer), w.chain.TokenBalance(t, chainPayTo)
	}
	payer0, payTo0 := balances()

	out, errOut, code := pay("--dry-run", "-d", `{"n":1}`, app.base+"/api/paid")
	var dry payOutput
	if err := json.Unmarshal([]byte(out), &dry); err != nil || code != 0 || dry.Status != 402 || dry.WouldPay == nil || dry.WouldPay.Amount != "10000" {
		t.Fatalf("svc pay --dry-run: exit %d (%v)\n%s\n%s", code, err, out, errOut)
	}
	if _, _, code := pay("--max", "0.005", "-d", `{"n":1}`, "--key-env", "PAY_TEST_KEY", app.base+"/api/paid"); code != 2 {
		t.Fatalf("svc pay over the cap: exit %d", code)
	}
	if p, q := balances(); p.Cmp(payer0) != 0 || q.Cmp(payTo0) != 0 {
		t.Fatalf("a dry run or a refused price moved money: payer %s → %s, payTo %s → %s", payer0, p, payTo0, q)
	}

	out, errOut, code = pay("-X", "POST", "-H", "Content-Type: application/json", "-d", `{"n":7}`, "--key-env", "PAY_TEST_KEY", app.base+"/api/paid")
	if code != 0 || !strings.Contains(out, `"echo":{"n":7}`) || !strings.Contains(errOut, "svc pay: paid 0.01 USDC on eip155:8453") {
		t.Fatalf("svc pay: exit %d\nstdout %s\nstderr %s", code, out, errOut)
	}
	p, q := balances()
	if new(big.Int).Sub(payer0, p).Int64() != 10_000 || new(big.Int).Sub(q, payTo0).Int64() != 10_000 {
		t.Fatalf("balances: payer %s → %s, payTo %s → %s; want 0.01 USDC moved", payer0, p, payTo0, q)
	}
}

// TestChainPayBatchOfficialExpress: svc pay --scheme batch-settlement pays
// the official @x402/express server with the official batch-settlement
// server scheme and facilitator on anvil with our escrow: a dry run shows
// the batch offer and moves nothing; the first call deposits --deposit,
// the next ones are vouchers (no transaction); after the official channel
// manager's claim and sweep payTo holds exactly the sum of the prices and
// the escrow's totalClaimed matches; svc pay --refund gets the remainder
// back to the payer.
func TestChainPayBatchOfficialExpress(t *testing.T) {
	w := newChainWorld(t, anviltest.Options{})
	authKey, _ := anviltest.NewKey(t)
	app := w.nodeApp(t, "batch express", "batch-express.mjs", "RPC_URL="+w.chain.URL, "RELAYER_KEY="+keyHex(w.relayerKey),
		"AUTHORIZER_KEY="+keyHex(authKey), "PAY_TO="+chainPayTo.Hex(), "PRICE=2500")
	channels := t.TempDir()
	batchArgs := []string{"--scheme", batch.Scheme, "--channels", channels, "--key-env", "PAY_TEST_KEY", "-d", `{"n":1}`}
	payer0, payTo0 := w.chain.TokenBalance(t, w.payer), w.chain.TokenBalance(t, chainPayTo)

	out, errOut, code := w.svcPay(t, "--dry-run", "--scheme", batch.Scheme, "-d", `{"n":1}`, app.base+"/api/paid")
	var dry payOutput
	if err := json.Unmarshal([]byte(out), &dry); err != nil || code != 0 || dry.WouldPay == nil || dry.WouldPay.Scheme != batch.Scheme || dry.WouldPay.Extra["receiverAuthorizer"] == nil {
		t.Fatalf("svc pay --dry-run --scheme batch-settlement: exit %d (%v)\n%s\n%s", code, err, out, errOut)
	}
	out, _, code = w.svcPay(t, "--dry-run", "-d", `{"n":1}`, app.base+"/api/paid")
	if dry = (payOutput{}); json.Unmarshal([]byte(out), &dry) != nil || code != 0 || dry.WouldPay != nil || len(dry.Why) != 1 {
		t.Fatalf("svc pay --dry-run (exact) of a batch-only offer: exit %d\n%s", code, out)
	}

	const n = 6
	for i := 0; i < n; i++ {
		args := append([]string{}, batchArgs...)
		if i == 0 {
			args = append(args, "--deposit", "0.10")
		}
		out, errOut, code := w.svcPay(t, append(args, app.base+"/api/paid")...)
		want := "svc pay: charged 0.0025 USDC on channel"
		if i == 0 {
			want = "svc pay: deposited 0.1 USDC (transaction 0x"
		}
		if code != 0 || !strings.Contains(out, `"echo":{"n":1}`) || !strings.Contains(errOut, want) {
			t.Fatalf("svc pay %d: exit %d\nstdout %s\nstderr %s", i, code, out, errOut)
		}
	}
	if got := new(big.Int).Sub(payer0, w.chain.TokenBalance(t, w.payer)); got.Int64() != 100_000 {
		t.Fatalf("the payer spent %s, want the deposit 100000", got)
	}

	resp, err := http.Post(app.base+"/admin/claim", "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	want := big.NewInt(n * 2500)
	if got := new(big.Int).Sub(w.chain.TokenBalance(t, chainPayTo), payTo0); resp.StatusCode != 200 || got.Cmp(want) != 0 {
		t.Fatalf("after the official claim (%d %s): payTo received %s, want %s", resp.StatusCode, body, got, want)
	}
	var st struct {
		ChannelID string `json:"channelId"`
	}
	files, _ := filepathGlob(channels)
	if len(files) != 1 || json.Unmarshal(files[0], &st) != nil {
		t.Fatalf("channel state files: %d", len(files))
	}
	if oc := anviltest.EscrowChannel(t, w.chain.Client, common.HexToHash(st.ChannelID)); oc.TotalClaimed.Cmp(want) != 0 {
		t.Fatalf("the escrow's totalClaimed %s, want %s", oc.TotalClaimed, want)
	}

	out, errOut, code = w.svcPay(t, append(append([]string{}, batchArgs...), "--refund", app.base+"/api/paid")...)
	if code != 0 || !strings.Contains(errOut, "svc pay: refunded 0.085 USDC") {
		t.Fatalf("svc pay --refund: exit %d\nstdout %s\nstderr %s", code, out, errOut)
	}
	if got := new(big.Int).Sub(payer0, w.chain.TokenBalance(t, w.payer)); got.Cmp(want) != 0 {
		t.Fatalf("after the refund the payer spent %s, want the sum of the prices %s", got, want)
	}
}

// filepathGlob reads every JSON file of dir.
func filepathGlob(dir string) ([][]byte, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return nil, err
	}
	var out [][]byte
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		out = append(out, b)
	}
	return out, nil
}

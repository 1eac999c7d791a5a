package main

import (
	"context"
	"encoding/json"
	"math/big"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/seed1284c1d2/svc/internal/anviltest"
)

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
	pay := func(args ...string) (stdout, stderr string, code int) {
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

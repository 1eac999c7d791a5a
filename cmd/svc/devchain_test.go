package main

// svc devchain and svc serve --chain embedded, as processes: the official
// @x402/fetch client pays svc serve --settle onchain on svc devchain, the
// README's local on-chain section is run as written, and the embedded
// chain settles for real. Skipped under -short (they build and run svc).

import (
	"bufio"
	"context"
	"encoding/json"
	"math/big"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	ethereum "github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/ethclient"

	"github.com/seed1284c1d2/svc/internal/anviltest"
	"github.com/seed1284c1d2/svc/internal/devchain"
)

// devchainProc is a running `svc devchain` and what it printed.
type devchainProc struct {
	proc    *chainProc
	exports map[string]string // the export lines
	client  *ethclient.Client
}

var exportRE = regexp.MustCompile(`(?m)^export ([A-Z_]+)=(\S+)$`)

// startDevchain runs `svc devchain --addr 127.0.0.1:0` and reads its
// export lines.
func startDevchain(t *testing.T, bin string) *devchainProc {
	t.Helper()
	cmd := exec.Command(bin, "devchain", "--addr", "127.0.0.1:0")
	cmd.Dir = t.TempDir()
	cmd.Env = clusterEnv()
	p := chainStart(t, "svc devchain", cmd)
	d := &devchainProc{proc: p, exports: waitExports(t, p.out, 5)}
	if d.exports["SVC_RPC_URL"] != p.base {
		t.Fatalf("SVC_RPC_URL %q, listening on %q", d.exports["SVC_RPC_URL"], p.base)
	}
	c, err := ethclient.Dial(p.base)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	d.client = c
	return d
}

// waitExports waits for n export lines in out.
func waitExports(t *testing.T, out *clusterLog, n int) map[string]string {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		m := exportRE.FindAllStringSubmatch(out.String(), -1)
		if len(m) >= n {
			ex := map[string]string{}
			for _, x := range m {
				ex[x[1]] = x[2]
			}
			return ex
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d export lines, want %d:\n%s", len(m), n, out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// usdcOf reads the test USDC balance of addr on the chain c serves.
func usdcOf(t *testing.T, c *ethclient.Client, addr string) *big.Int {
	t.Helper()
	_, parsed, err := anviltest.LoadArtifact()
	if err != nil {
		t.Fatal(err)
	}
	data, err := parsed.Pack("balanceOf", common.HexToAddress(addr))
	if err != nil {
		t.Fatal(err)
	}
	out, err := c.CallContract(context.Background(), ethereum.CallMsg{To: &devchain.USDC, Data: data}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return new(big.Int).SetBytes(out)
}

// successfulReceipt checks that hash was mined with status 1 on c's chain.
func successfulReceipt(t *testing.T, c *ethclient.Client, hash string) *types.Receipt {
	t.Helper()
	r, err := c.TransactionReceipt(context.Background(), common.HexToHash(hash))
	if err != nil {
		t.Fatalf("receipt of %s: %v", hash, err)
	}
	if r.Status != types.ReceiptStatusSuccessful {
		t.Fatalf("receipt of %s: status %d", hash, r.Status)
	}
	return r
}

// TestDevchainOfficialClientPays: `svc serve --settle onchain` with the
// relayer key svc devchain printed, paid by the official @x402/fetch
// client with the printed payer key: balances move by exactly the price,
// the transaction has a receipt, svc reconcile passes; svc devchain fund
// mints to an address and svc devchain advance moves the latest block's
// timestamp by exactly the duration.
func TestDevchainOfficialClientPays(t *testing.T) {
	bin := clusterBinary(t)
	node, dir := anviltest.Setup(t)
	d := startDevchain(t, bin)
	ex := d.exports
	db := filepath.Join(t.TempDir(), "svc.db")
	srvCmd := exec.Command(bin, "serve", "--addr", "127.0.0.1:0", "--db", db, "--unpaid-rate", "-1",
		"--settle", "onchain", "--rpc-url", ex["SVC_RPC_URL"], "--pay-to", ex["SVC_PAY_TO"])
	srvCmd.Dir = t.TempDir()
	srvCmd.Env = append(clusterEnv(), "SVC_RELAYER_KEY="+ex["SVC_RELAYER_KEY"])
	srv := chainStart(t, "svc serve", srvCmd)

	payerBefore, payToBefore := usdcOf(t, d.client, ex["PAYER"]), usdcOf(t, d.client, ex["SVC_PAY_TO"])
	if payerBefore.Int64() != devchain.DefaultPayerUSDC || payToBefore.Sign() != 0 {
		t.Fatalf("at start: payer %s, payTo %s", payerBefore, payToBefore)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	pay := exec.CommandContext(ctx, node, "pay.mjs", "POST", srv.base+"/api/risk-levels", `{"entry":3500,"direction":"long","slPct":0.05,"tpPct":0.04}`)
	pay.Dir = dir
	pay.Env = append(clusterEnv(), "E2E_PRIVATE_KEY="+ex["PAYER_KEY"])
	out, err := pay.Output()
	var res chainPaid
	if jerr := json.Unmarshal(out, &res); jerr != nil || res.Error != "" || res.Status != 200 || res.PaymentResponse == nil || !res.PaymentResponse.Success {
		t.Fatalf("pay.mjs: %v %v %s", err, jerr, out)
	}
	price, _ := new(big.Int).SetString(res.PaymentResponse.Amount, 10)
	if price == nil || price.Sign() <= 0 {
		t.Fatalf("payment response amount %q", res.PaymentResponse.Amount)
	}
	successfulReceipt(t, d.client, res.PaymentResponse.Transaction)
	if got := new(big.Int).Sub(payerBefore, usdcOf(t, d.client, ex["PAYER"])); got.Cmp(price) != 0 {
		t.Fatalf("the payer paid %s, want %s", got, price)
	}
	if got := usdcOf(t, d.client, ex["SVC_PAY_TO"]); got.Cmp(price) != 0 {
		t.Fatalf("payTo received %s, want %s", got, price)
	}
	if o, code := runSvc(t, "reconcile", "--db", db, "--rpc-url", ex["SVC_RPC_URL"]); code != 0 || !strings.Contains(o, "1 settled payments checked against the chain, 0 mismatches") {
		t.Fatalf("reconcile: exit %d\n%s", code, o)
	}

	// The faucet.
	to := "0x5eed00000000000000000000000000000000f0d1"
	if o, code := runSvc(t, "devchain", "fund", to, "2.5", "--eth", "0.1", "--rpc-url", ex["SVC_RPC_URL"]); code != 0 || !strings.Contains(o, "it now holds 2.5 test USDC") {
		t.Fatalf("devchain fund: exit %d\n%s", code, o)
	}
	if got := usdcOf(t, d.client, to); got.Int64() != 2_500_000 {
		t.Fatalf("funded address holds %s", got)
	}
	if wei, err := d.client.BalanceAt(context.Background(), common.HexToAddress(to), nil); err != nil || wei.String() != "100000000000000000" {
		t.Fatalf("funded address ETH %v, %v", wei, err)
	}
	// The clock.
	h0, err := d.client.HeaderByNumber(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if o, code := runSvc(t, "devchain", "advance", "1h", "--rpc-url", ex["SVC_RPC_URL"]); code != 0 {
		t.Fatalf("devchain advance: exit %d\n%s", code, o)
	}
	h1, err := d.client.HeaderByNumber(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if h1.Time != h0.Time+3600 || h1.Number.Uint64() != h0.Number.Uint64()+1 {
		t.Fatalf("after advance 1h: block %d at %d, before block %d at %d", h1.Number, h1.Time, h0.Number, h0.Time)
	}
	// Bad input is refused with the argument named, before any call.
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"devchain", "fund", "0x12", "1"}, "ADDRESS"},
		{[]string{"devchain", "fund", to, "ten"}, "USDC"},
		{[]string{"devchain", "fund", to, "0.0000001"}, "more than 6 decimals"},
		{[]string{"devchain", "advance", "soon"}, "DURATION"},
		{[]string{"devchain", "advance", "1500ms"}, "whole seconds"},
		{[]string{"devchain", "--addr", "0.0.0.0:0"}, "loopback"},
	} {
		if o, code := runSvc(t, c.args...); code != 2 || !strings.Contains(o, c.want) {
			t.Errorf("svc %v: exit %d, want 2 naming %q\n%s", c.args, code, c.want, o)
		}
	}
	if o, code := runSvc(t, "devchain", "fund", to, "1", "--rpc-url", srv.base); code != 1 || !strings.Contains(o, "not an svc devchain") {
		t.Errorf("fund against a non-devchain endpoint: exit %d\n%s", code, o)
	}
}

// readmeSection returns the shell commands ("$ " lines) of README.md's
// local on-chain section.
func readmeSection(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	i, j := strings.Index(s, "<!-- devchain:begin -->"), strings.Index(s, "<!-- devchain:end -->")
	if i < 0 || j < i {
		t.Fatal("README.md has no <!-- devchain:begin --> … <!-- devchain:end --> section")
	}
	var cmds []string
	sc := bufio.NewScanner(strings.NewReader(s[i:j]))
	for sc.Scan() {
		if line := strings.TrimSpace(sc.Text()); strings.HasPrefix(line, "$ ") {
			cmds = append(cmds, strings.TrimPrefix(line, "$ "))
		}
	}
	return cmds
}

// TestDevchainREADME runs README.md's local on-chain section as written,
// in a shell with the built svc first in PATH: `svc devchain` and `svc
// serve` in the background (on free ports, through SVC_DEVCHAIN_ADDR and
// SVC_ADDR), the export lines the devchain printed in the environment of
// the commands after it. The paid call moves the payer's and payTo's test
// USDC by exactly the price, fund adds 10 USDC, and svc reconcile passes.
func TestDevchainREADME(t *testing.T) {
	bin := clusterBinary(t)
	cmds := readmeSection(t)
	if len(cmds) < 5 || cmds[0] != "svc devchain" || !strings.HasPrefix(cmds[1], "svc serve ") {
		t.Fatalf("README section commands: %q", cmds)
	}
	work := t.TempDir()
	env := append(clusterEnv(), "PATH="+filepath.Dir(bin)+string(os.PathListSeparator)+os.Getenv("PATH"),
		"SVC_DEVCHAIN_ADDR=127.0.0.1:0", "SVC_ADDR=127.0.0.1:0")
	shell := func(ctx context.Context, line string) *exec.Cmd {
		cmd := exec.CommandContext(ctx, "sh", "-c", "exec "+line)
		cmd.Dir, cmd.Env = work, env
		return cmd
	}
	var chain *ethclient.Client
	var ex map[string]string
	var price *big.Int
	var payerBefore *big.Int
	for _, line := range cmds {
		switch {
		case line == "svc devchain":
			p := chainStart(t, line, shell(context.Background(), line))
			ex = waitExports(t, p.out, 5)
			for k, v := range ex {
				env = append(env, k+"="+v)
			}
			c, err := ethclient.Dial(ex["SVC_RPC_URL"])
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(c.Close)
			chain = c
			payerBefore = usdcOf(t, chain, ex["PAYER"])
		case strings.HasPrefix(line, "svc serve "):
			p := chainStart(t, line, shell(context.Background(), line))
			env = append(env, "SVC_URL="+p.base)
		default:
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			out, err := shell(ctx, line).CombinedOutput()
			cancel()
			if err != nil {
				t.Fatalf("%s: %v\n%s", line, err, out)
			}
			t.Logf("$ %s\n%s", line, out)
			if strings.HasPrefix(line, "svc call ") {
				var r struct {
					Status     int `json:"status"`
					Settlement struct {
						Success     bool   `json:"success"`
						Transaction string `json:"transaction"`
						Amount      string `json:"amount"`
					} `json:"settlement"`
				}
				if err := json.Unmarshal(out, &r); err != nil || r.Status != 200 || !r.Settlement.Success {
					t.Fatalf("svc call: %v\n%s", err, out)
				}
				price, _ = new(big.Int).SetString(r.Settlement.Amount, 10)
				successfulReceipt(t, chain, r.Settlement.Transaction)
			}
			if strings.HasPrefix(line, "svc reconcile ") && !strings.Contains(string(out), "1 settled payments checked against the chain, 0 mismatches") {
				t.Fatalf("reconcile:\n%s", out)
			}
		}
	}
	if chain == nil || price == nil {
		t.Fatal("the section has no svc devchain or no svc call")
	}
	want := new(big.Int).Sub(payerBefore, price)
	want.Add(want, big.NewInt(10_000_000)) // svc devchain fund "$PAYER" 10
	if got := usdcOf(t, chain, ex["PAYER"]); got.Cmp(want) != 0 {
		t.Fatalf("payer holds %s, want %s (price %s)", got, want, price)
	}
	if got := usdcOf(t, chain, ex["SVC_PAY_TO"]); got.Cmp(price) != 0 {
		t.Fatalf("payTo holds %s, want the price %s", got, price)
	}
}

var (
	bannerChainRE = regexp.MustCompile(`dev chain:\s+(http://127\.0\.0\.1:[0-9]+)`)
	bannerStoreRE = regexp.MustCompile(`store:\s+sqlite \(([^)]+)\)`)
	bannerKeyRE   = regexp.MustCompile(`export PAYER_KEY=(0x[0-9a-f]{64})`)
)

// TestServeEmbeddedChainSettles: `svc serve --dev --chain embedded` runs
// the dev chain in the server, says so in its banner (DEV MODE, the
// embedded chain, its RPC URL), and a paid call settles for real on it: a
// receipt exists at the printed URL, balances moved by the price, and svc
// reconcile passes against the store the banner names.
func TestServeEmbeddedChainSettles(t *testing.T) {
	bin := clusterBinary(t)
	cmd := exec.Command(bin, "serve", "--dev", "--chain", "embedded", "--addr", "127.0.0.1:0", "--unpaid-rate", "-1")
	cmd.Dir = t.TempDir()
	cmd.Env = append(clusterEnv(), "TMPDIR="+t.TempDir()) // the run's store, left by the kill
	srv := chainStart(t, "svc serve --chain embedded", cmd)
	banner := srv.out.String()
	m, s, k := bannerChainRE.FindStringSubmatch(banner), bannerStoreRE.FindStringSubmatch(banner), bannerKeyRE.FindStringSubmatch(banner)
	if m == nil || s == nil || k == nil || !strings.Contains(banner, "DEV MODE") || !strings.Contains(banner, "EMBEDDED DEV CHAIN") {
		t.Fatalf("banner:\n%s", banner)
	}
	chain, err := ethclient.Dial(m[1])
	if err != nil {
		t.Fatal(err)
	}
	defer chain.Close()
	if id, err := chain.ChainID(context.Background()); err != nil || id.Int64() != 8453 {
		t.Fatalf("chain id %v, %v", id, err)
	}
	// /health says it is a dev chain, as it says dev mode.
	var health struct {
		DevChain    bool   `json:"devChain"`
		DevModeNote string `json:"devModeNote"`
	}
	clusterGetJSON(t, clusterHTTP(t), srv.base+"/health", http.StatusOK, &health)
	if !health.DevChain || !strings.Contains(health.DevModeNote, "local EVM chain") {
		t.Fatalf("/health of the embedded chain: %+v", health)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	call := exec.CommandContext(ctx, bin, "call", "risk-levels", "--json", `{"entry":3500,"direction":"long","slPct":0.05,"tpPct":0.04}`, "--key-env", "PAYER_KEY", "--url", srv.base)
	call.Env = append(clusterEnv(), "PAYER_KEY="+k[1])
	out, err := call.Output()
	var r struct {
		Status     int `json:"status"`
		Settlement struct {
			Success     bool   `json:"success"`
			Transaction string `json:"transaction"`
			Amount      string `json:"amount"`
			Payer       string `json:"payer"`
			Extra       struct {
				PayTo string `json:"payTo"`
			} `json:"extra"`
		} `json:"settlement"`
	}
	if jerr := json.Unmarshal(out, &r); jerr != nil || r.Status != 200 || !r.Settlement.Success {
		t.Fatalf("svc call: %v %v\n%s", err, jerr, out)
	}
	rcpt := successfulReceipt(t, chain, r.Settlement.Transaction)
	if len(rcpt.Logs) == 0 {
		t.Fatal("the settlement's receipt has no Transfer event")
	}
	price, _ := new(big.Int).SetString(r.Settlement.Amount, 10)
	if got := usdcOf(t, chain, r.Settlement.Extra.PayTo); got.Cmp(price) != 0 {
		t.Fatalf("payTo holds %s, want the price %s", got, price)
	}
	want := new(big.Int).Sub(big.NewInt(devchain.DefaultPayerUSDC), price)
	if got := usdcOf(t, chain, r.Settlement.Payer); got.Cmp(want) != 0 {
		t.Fatalf("payer holds %s, want %s", got, want)
	}
	if o, code := runSvc(t, "reconcile", "--db", s[1], "--rpc-url", m[1]); code != 0 || !strings.Contains(o, "1 settled payments checked against the chain, 0 mismatches") {
		t.Fatalf("reconcile: exit %d\n%s", code, o)
	}
}

// TestDevchainOfficialFacilitatorSettles: the official TypeScript
// facilitator (@x402/core + @x402/evm with a viem wallet: nonce, fees,
// gas estimate, raw transaction, receipt polling) settles on svc devchain
// with the printed relayer key a call the official @x402/fetch client
// pays to svc serve: the transaction is the relayer's, mined with a
// successful receipt, and the payer's and payTo's test USDC move by
// exactly the price.
func TestDevchainOfficialFacilitatorSettles(t *testing.T) {
	bin := clusterBinary(t)
	node, dir := anviltest.Setup(t)
	d := startDevchain(t, bin)
	ex := d.exports
	tsfCmd := exec.Command(node, "ts-facilitator.mjs")
	tsfCmd.Dir = dir
	tsfCmd.Env = append(clusterEnv(), "RPC_URL="+ex["SVC_RPC_URL"], "RELAYER_KEY="+ex["SVC_RELAYER_KEY"])
	tsf := chainStart(t, "ts facilitator", tsfCmd)
	srvCmd := exec.Command(bin, "serve", "--addr", "127.0.0.1:0", "--db", filepath.Join(t.TempDir(), "svc.db"), "--unpaid-rate", "-1",
		"--facilitator-url", tsf.base, "--pay-to", ex["SVC_PAY_TO"])
	srvCmd.Dir = t.TempDir()
	srvCmd.Env = clusterEnv()
	srv := chainStart(t, "svc serve", srvCmd)

	payerBefore := usdcOf(t, d.client, ex["PAYER"])
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	pay := exec.CommandContext(ctx, node, "pay.mjs", "POST", srv.base+"/api/risk-levels", `{"entry":3500,"direction":"long","slPct":0.05,"tpPct":0.04}`)
	pay.Dir = dir
	pay.Env = append(clusterEnv(), "E2E_PRIVATE_KEY="+ex["PAYER_KEY"])
	out, err := pay.Output()
	var res chainPaid
	if jerr := json.Unmarshal(out, &res); jerr != nil || res.Error != "" || res.Status != 200 || res.PaymentResponse == nil || !res.PaymentResponse.Success {
		t.Fatalf("pay.mjs: %v %v %s", err, jerr, out)
	}
	price, _ := new(big.Int).SetString(res.PaymentResponse.Amount, 10)
	if price == nil || price.Sign() <= 0 {
		t.Fatalf("payment response amount %q", res.PaymentResponse.Amount)
	}
	rcpt := successfulReceipt(t, d.client, res.PaymentResponse.Transaction)
	tx, pending, err := d.client.TransactionByHash(context.Background(), rcpt.TxHash)
	if err != nil || pending {
		t.Fatalf("settlement transaction: pending %v, %v", pending, err)
	}
	relayerKey, err := crypto.HexToECDSA(strings.TrimPrefix(ex["SVC_RELAYER_KEY"], "0x"))
	if err != nil {
		t.Fatal(err)
	}
	if from, err := types.Sender(types.LatestSignerForChainID(tx.ChainId()), tx); err != nil || from != crypto.PubkeyToAddress(relayerKey.PublicKey) {
		t.Fatalf("the settlement was sent by %s (%v), not the printed relayer", from, err)
	}
	if got := new(big.Int).Sub(payerBefore, usdcOf(t, d.client, ex["PAYER"])); got.Cmp(price) != 0 {
		t.Fatalf("the payer paid %s, want %s", got, price)
	}
	if got := usdcOf(t, d.client, ex["SVC_PAY_TO"]); got.Cmp(price) != 0 {
		t.Fatalf("payTo received %s, want %s", got, price)
	}
}

package main

// The on-chain proofs: real svc processes, the official x402 TypeScript
// client, server and facilitator, and anvil (a local EVM with chain id
// 8453 and a USDC-compatible token at Base USDC's address), nothing
// mocked. Skipped under -short and without Node.js (failed under CI=true).

import (
	"context"
	"crypto/ecdsa"
	"encoding/hex"
	"encoding/json"
	"math/big"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"

	"github.com/seed1284c1d2/svc/internal/anviltest"
	"github.com/seed1284c1d2/svc/x402"
	"github.com/seed1284c1d2/svc/x402/client"
	"github.com/seed1284c1d2/svc/x402/engine"
	"github.com/seed1284c1d2/svc/x402/exact"
)

// chainPayTo receives the payments of the chain tests.
var chainPayTo = common.HexToAddress(clusterPayTo)

// chainWorld is anvil with a funded relayer and a payer holding USDC.
type chainWorld struct {
	bin                  string // the svc binary
	chain                *anviltest.Chain
	node, dir            string
	relayerKey, payerKey *ecdsa.PrivateKey
	relayer, payer       common.Address
}

func newChainWorld(t *testing.T, opts anviltest.Options) *chainWorld {
	t.Helper()
	return startChainWorld(t, clusterBinary(t), opts) // skips under -short; builds once
}

func startChainWorld(t testing.TB, bin string, opts anviltest.Options) *chainWorld {
	t.Helper()
	w := &chainWorld{bin: bin}
	w.node, w.dir = anviltest.Setup(t)
	w.chain = anviltest.Start(t, opts)
	w.relayerKey, w.relayer = anviltest.NewKey(t)
	w.payerKey, w.payer = anviltest.NewKey(t)
	w.chain.SetBalance(t, w.relayer, anviltest.Ether(10))
	w.chain.Mint(t, w.payer, big.NewInt(100_000_000))
	return w
}

func keyHex(k *ecdsa.PrivateKey) string { return "0x" + hex.EncodeToString(crypto.FromECDSA(k)) }

// chainProc is a process of a chain test that prints "listening on
// http://127.0.0.1:PORT".
type chainProc struct {
	name   string
	base   string
	cmd    *exec.Cmd
	out    *clusterLog
	exited chan struct{}
}

// chainStart starts cmd and waits for its listening line; the process is
// killed at cleanup, and its output logged if the test failed.
func chainStart(t testing.TB, name string, cmd *exec.Cmd) *chainProc {
	t.Helper()
	p := &chainProc{name: name, cmd: cmd, out: &clusterLog{}, exited: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = p.out, p.out
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	go func() { _ = cmd.Wait(); close(p.exited) }()
	t.Cleanup(func() {
		select {
		case <-p.exited:
		default:
			_ = cmd.Process.Kill()
			<-p.exited
		}
		if t.Failed() {
			t.Logf("output of %s:\n%s", name, clusterTail(p.out.String(), 6000))
		}
	})
	deadline := time.Now().Add(60 * time.Second)
	for {
		if m := clusterListeningRE.FindStringSubmatch(p.out.String()); m != nil {
			p.base = m[1]
			return p
		}
		select {
		case <-p.exited:
			t.Fatalf("%s exited before listening:\n%s", name, p.out.String())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not print its address:\n%s", name, p.out.String())
		}
	}
}

// kill sends SIGKILL and waits.
func (p *chainProc) kill(t *testing.T) {
	t.Helper()
	_ = p.cmd.Process.Kill()
	select {
	case <-p.exited:
	case <-time.After(20 * time.Second):
		t.Fatalf("%s did not die", p.name)
	}
}

// svc starts `svc args...` with env added to the SVC_*-free environment.
func (w *chainWorld) svc(t testing.TB, name string, env []string, args ...string) *chainProc {
	t.Helper()
	cmd := exec.Command(w.bin, args...)
	cmd.Dir = t.TempDir()
	cmd.Env = append(clusterEnv(), env...)
	return chainStart(t, name, cmd)
}

// nodeApp starts one of e2e/chain's node apps.
func (w *chainWorld) nodeApp(t testing.TB, name, script string, env ...string) *chainProc {
	t.Helper()
	cmd := exec.Command(w.node, script)
	cmd.Dir = w.dir
	cmd.Env = append(clusterEnv(), env...)
	return chainStart(t, name, cmd)
}

// serveOnchain starts `svc serve --settle onchain` on w's chain.
func (w *chainWorld) serveOnchain(t *testing.T, db string, env []string, extra ...string) *chainProc {
	t.Helper()
	args := append([]string{"serve", "--addr", "127.0.0.1:0", "--db", db, "--unpaid-rate", "-1", "--log-level", "info",
		"--settle", "onchain", "--rpc-url", w.chain.URL, "--relayer-key-env", "CHAIN_TEST_RELAYER_KEY", "--pay-to", chainPayTo.Hex()}, extra...)
	return w.svc(t, "svc serve", append(env, "CHAIN_TEST_RELAYER_KEY="+keyHex(w.relayerKey)), args...)
}

// chainPaid is what pay.mjs reports.
type chainPaid struct {
	Status          int                  `json:"status"`
	Body            json.RawMessage      `json:"body"`
	PaymentResponse *x402.SettleResponse `json:"paymentResponse"`
	Error           string               `json:"error"`
}

// pay pays one call with the official @x402/fetch client, as w's payer.
func (w *chainWorld) pay(t *testing.T, method, url, body string) chainPaid {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, w.node, "pay.mjs", method, url, body)
	cmd.Dir = w.dir
	cmd.Env = append(clusterEnv(), "E2E_PRIVATE_KEY="+keyHex(w.payerKey))
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	var res chainPaid
	if jerr := json.Unmarshal(out, &res); jerr != nil || res.Error != "" {
		t.Fatalf("pay.mjs %s %s: %v %s (exit %v)\nstdout: %s\nstderr: %s", method, url, jerr, res.Error, err, out, stderr.String())
	}
	return res
}

// checkPaidOnChain checks an answer paid on chain: 200, a PAYMENT-RESPONSE
// with a mined transaction (receipt status 1) of the payer; the payer's
// balance fell and payTo's rose by exactly amount.
func (w *chainWorld) checkPaidOnChain(t *testing.T, res chainPaid, payerBefore, payToBefore *big.Int, amount int64) *types.Receipt {
	t.Helper()
	if res.Status != http.StatusOK || res.PaymentResponse == nil || !res.PaymentResponse.Success {
		t.Fatalf("paid call: status %d, payment response %+v, body %s", res.Status, res.PaymentResponse, res.Body)
	}
	rcpt := w.chain.WaitReceipt(t, common.HexToHash(res.PaymentResponse.Transaction))
	if rcpt.Status != types.ReceiptStatusSuccessful {
		t.Fatalf("receipt status %d", rcpt.Status)
	}
	if got := new(big.Int).Sub(payerBefore, w.chain.TokenBalance(t, w.payer)); got.Int64() != amount {
		t.Fatalf("the payer paid %s, want %d", got, amount)
	}
	if got := new(big.Int).Sub(w.chain.TokenBalance(t, chainPayTo), payToBefore); got.Int64() != amount {
		t.Fatalf("payTo received %s, want %d", got, amount)
	}
	if !strings.EqualFold(res.PaymentResponse.Payer, w.payer.Hex()) {
		t.Fatalf("payment response payer %s, want %s", res.PaymentResponse.Payer, w.payer.Hex())
	}
	return rcpt
}

// TestChainServeSettlesAndReconciles: `svc serve --settle onchain`, paid by
// the official @x402/fetch client, settles on anvil (balances move by
// exactly the price, the ledger holds the real transaction, receipt status
// 1); `svc reconcile` agrees with the chain, then finds a mismatch planted
// in the ledger.
func TestChainServeSettlesAndReconciles(t *testing.T) {
	w := newChainWorld(t, anviltest.Options{})
	db := filepath.Join(t.TempDir(), "svc.db")
	srv := w.serveOnchain(t, db, nil)
	if !strings.Contains(srv.out.String(), "ON CHAIN") {
		t.Fatalf("banner does not say payments settle on chain:\n%s", srv.out.String())
	}
	payerBefore, payToBefore := w.chain.TokenBalance(t, w.payer), w.chain.TokenBalance(t, chainPayTo)
	res := w.pay(t, "POST", srv.base+clusterToolPath, clusterBody(clusterAddress()))
	rcpt := w.checkPaidOnChain(t, res, payerBefore, payToBefore, 10_000)
	if strings.Contains(srv.out.String(), keyHex(w.relayerKey)[2:]) {
		t.Fatal("the server printed the relayer key")
	}

	l := clusterSQLiteLedger(t, db)
	if len(l.rows) != 1 || l.rows[0].Tx != rcpt.TxHash.Hex() || !strings.EqualFold(l.rows[0].Payer, w.payer.Hex()) || l.rows[0].Amount != clusterToolAmount {
		t.Fatalf("ledger %+v, want one row of transaction %s", l.rows, rcpt.TxHash.Hex())
	}
	clusterCheckSettledRecorded(t, l)

	// Operator signals: the relayer's gas and pending transactions in
	// /metrics, its readiness in /health.
	c := clusterHTTP(t)
	if m := clusterMust(t, c, http.MethodGet, srv.base+"/metrics", "", ""); !strings.Contains(string(m.body), "svc_relayer_pending_transactions 0") ||
		!strings.Contains(string(m.body), "svc_relayer_balance_wei ") {
		t.Fatalf("/metrics lacks the relayer:\n%s", m.body)
	}
	var health struct {
		Status      string `json:"status"`
		Facilitator struct{ Status, Kind, Error string }
	}
	clusterGetJSON(t, c, srv.base+"/health", http.StatusOK, &health)
	if health.Facilitator.Kind != "onchain" || health.Facilitator.Status != "up" {
		t.Fatalf("/health: %+v", health)
	}
	// Relayer out of gas: a paid call is answered 503 before anything is
	// settled, and /health says why.
	w.chain.SetBalance(t, w.relayer, big.NewInt(0))
	signer, err := client.ParseSigner(hex.EncodeToString(crypto.FromECDSA(w.payerKey)))
	if err != nil {
		t.Fatal(err)
	}
	header, _ := clusterMustSign(t, signer, clusterOffer(t, c, srv.base))
	if a := clusterMust(t, c, http.MethodPost, srv.base+clusterToolPath, clusterBody(clusterAddress()), header); a.status != http.StatusServiceUnavailable ||
		a.header.Get("Retry-After") == "" {
		t.Fatalf("paid call with the relayer out of gas: %s", a)
	}
	clusterGetJSON(t, c, srv.base+"/health", http.StatusServiceUnavailable, &health)
	if health.Facilitator.Status != "down" || !strings.Contains(health.Facilitator.Error, "relayer_out_of_gas") {
		t.Fatalf("/health with the relayer out of gas: %+v", health)
	}
	if got := w.chain.TokenBalance(t, w.payer); new(big.Int).Sub(payerBefore, got).Int64() != 10_000 {
		t.Fatalf("the payer paid again while the relayer had no gas (balance %s)", got)
	}
	w.chain.SetBalance(t, w.relayer, anviltest.Ether(10))

	// Reconcile: the ledger agrees with the chain...
	day := time.Now().UTC()
	from, to := day.Add(-24*time.Hour).Format("2006-01-02"), day.Add(48*time.Hour).Format("2006-01-02")
	out, code := runSvc(t, "reconcile", "--db", db, "--rpc-url", w.chain.URL, "--from", from, "--to", to)
	if code != 0 || !strings.Contains(out, "1 settled payments checked against the chain, 0 mismatches") {
		t.Fatalf("reconcile of a true ledger: exit %d\n%s", code, out)
	}
	// ...until an amount is planted in it.
	clusterSQLiteExec(t, db, `UPDATE settlements SET amount = '20000'`)
	out, code = runSvc(t, "reconcile", "--db", db, "--rpc-url", w.chain.URL, "--from", from, "--to", to, "--json")
	if code != 1 || !strings.Contains(out, `"mismatch":"amount_differs"`) || !strings.Contains(out, rcpt.TxHash.Hex()) {
		t.Fatalf("reconcile of a planted mismatch: exit %d\n%s", code, out)
	}
}

// TestChainServeContractWallet: `svc serve --settle onchain` takes a
// payment from a smart-contract wallet (ERC-1271) signed by its owner: the
// local checks leave that signature to the on-chain facilitator, which has
// the token judge it; the wallet pays exactly the price and the ledger has
// one row of the wallet. The same wallet's payment signed by a stranger is
// refused with the signature reason before any gas is spent.
func TestChainServeContractWallet(t *testing.T) {
	w := newChainWorld(t, anviltest.Options{})
	ownerKey, owner := anviltest.NewKey(t)
	strangerKey, _ := anviltest.NewKey(t)
	wallet := w.chain.InstallWallet(t, owner)
	w.chain.Mint(t, wallet, big.NewInt(1_000_000))
	db := filepath.Join(t.TempDir(), "svc.db")
	srv := w.serveOnchain(t, db, nil)
	c := clusterHTTP(t)
	pr := clusterOffer(t, c, srv.base)
	req := pr.Accepts[0]
	// walletPayment is a PAYMENT-SIGNATURE from the wallet, signed by key.
	walletPayment := func(key *ecdsa.PrivateKey) string {
		t.Helper()
		raw, err := json.Marshal(anviltest.WalletPayment(t, key, wallet, req))
		if err != nil {
			t.Fatal(err)
		}
		res := pr.Resource
		h, err := x402.EncodeHeader(x402.PaymentPayload{X402Version: x402.Version, Resource: &res, Accepted: req, Payload: raw})
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	relayerNonce := func() uint64 {
		t.Helper()
		nonce, err := w.chain.Client.PendingNonceAt(context.Background(), w.relayer)
		if err != nil {
			t.Fatal(err)
		}
		return nonce
	}
	n0 := relayerNonce()
	bad := clusterMust(t, c, http.MethodPost, srv.base+clusterToolPath, clusterBody(clusterAddress()), walletPayment(strangerKey))
	if bad.status != http.StatusPaymentRequired || bad.reason() != exact.ReasonInvalidSignature {
		t.Fatalf("the wallet's payment signed by a stranger: %s", bad)
	}
	if relayerNonce() != n0 {
		t.Fatal("a refused wallet payment cost gas")
	}

	payToBefore := w.chain.TokenBalance(t, chainPayTo)
	good := clusterMust(t, c, http.MethodPost, srv.base+clusterToolPath, clusterBody(clusterAddress()), walletPayment(ownerKey))
	sr, err := good.settlement()
	if good.status != http.StatusOK || err != nil || !sr.Success || !strings.EqualFold(sr.Payer, wallet.Hex()) {
		t.Fatalf("the wallet's payment signed by its owner: %s (settlement %+v, %v)", good, sr, err)
	}
	if rcpt := w.chain.WaitReceipt(t, common.HexToHash(sr.Transaction)); rcpt.Status != types.ReceiptStatusSuccessful {
		t.Fatalf("receipt status %d", rcpt.Status)
	}
	amount, _ := new(big.Int).SetString(req.Amount, 10)
	if got := w.chain.TokenBalance(t, wallet); new(big.Int).Sub(big.NewInt(1_000_000), got).Cmp(amount) != 0 {
		t.Fatalf("the wallet holds %s, want 1000000 - %s", got, amount)
	}
	if got := new(big.Int).Sub(w.chain.TokenBalance(t, chainPayTo), payToBefore); got.Cmp(amount) != 0 {
		t.Fatalf("payTo received %s, want %s", got, amount)
	}
	l := clusterSQLiteLedger(t, db)
	if len(l.rows) != 1 || l.rows[0].Tx != sr.Transaction || !strings.EqualFold(l.rows[0].Payer, wallet.Hex()) {
		t.Fatalf("ledger %+v, want one row of the wallet's transaction %s", l.rows, sr.Transaction)
	}
	clusterCheckSettledRecorded(t, l)
}

// runSvc runs the svc binary to completion and returns its output and exit
// code.
func runSvc(t *testing.T, args ...string) (string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, clusterBinary(t), args...)
	cmd.Env = clusterEnv()
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); ok {
		return string(out), ee.ExitCode()
	}
	if err != nil {
		t.Fatalf("svc %v: %v\n%s", args, err, out)
	}
	return string(out), 0
}

// TestChainOfficialExpressWithSvcFacilitator: the official @x402/express
// server, configured with `svc facilitator` (bearer token), settles on
// anvil; the facilitator refuses calls without the token, and with a
// relayer out of gas answers 503 and is not ready.
func TestChainOfficialExpressWithSvcFacilitator(t *testing.T) {
	w := newChainWorld(t, anviltest.Options{})
	const token = "chain-test-token-0123456789"
	fac := w.svc(t, "svc facilitator", []string{"CHAIN_TEST_RELAYER_KEY=" + keyHex(w.relayerKey), "CHAIN_TEST_TOKEN=" + token},
		"facilitator", "--addr", "127.0.0.1:0", "--rpc-url", w.chain.URL, "--relayer-key-env", "CHAIN_TEST_RELAYER_KEY", "--token-env", "CHAIN_TEST_TOKEN")
	c := clusterHTTP(t)
	if a := clusterMust(t, c, http.MethodGet, fac.base+"/supported", "", ""); a.status != http.StatusUnauthorized {
		t.Fatalf("/supported without the token: %s", a)
	}
	if a := clusterMust(t, c, http.MethodGet, fac.base+"/ready", "", ""); a.status != http.StatusOK {
		t.Fatalf("/ready: %s", a)
	}
	app := w.nodeApp(t, "express", "express-server.mjs", "FACILITATOR_URL="+fac.base, "FACILITATOR_TOKEN="+token, "PAY_TO="+chainPayTo.Hex())
	payerBefore, payToBefore := w.chain.TokenBalance(t, w.payer), w.chain.TokenBalance(t, chainPayTo)
	res := w.pay(t, "POST", app.base+"/api/paid", `{"n":1}`)
	rcpt := w.checkPaidOnChain(t, res, payerBefore, payToBefore, 10_000)
	if tx, _, err := w.chain.Client.TransactionByHash(context.Background(), rcpt.TxHash); err != nil || tx.To() == nil || *tx.To() != anviltest.USDC {
		t.Fatalf("the settlement is not a call of the token: %v", err)
	}
	if m := clusterMust(t, c, http.MethodGet, fac.base+"/metrics", "", ""); !strings.Contains(string(m.body), "svc_relayer_pending_transactions 0") ||
		!strings.Contains(string(m.body), "svc_relayer_balance_wei ") {
		t.Fatalf("/metrics:\n%s", m.body)
	}

	// Out of gas: /settle answers 503, /ready 503.
	w.chain.SetBalance(t, w.relayer, big.NewInt(0))
	body := chainSettleBody(t, w.payerKey)
	req, _ := http.NewRequest(http.MethodPost, fac.base+"/settle", strings.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("/settle with the relayer out of gas: %d", resp.StatusCode)
	}
	if a := clusterMust(t, c, http.MethodGet, fac.base+"/ready", "", ""); a.status != http.StatusServiceUnavailable || !strings.Contains(string(a.body), "relayer_out_of_gas") {
		t.Fatalf("/ready with the relayer out of gas: %s", a)
	}
}

// chainSettleBody is a v2 /settle body of a fresh payment of 0.01 USDC by
// key to chainPayTo.
func chainSettleBody(t testing.TB, key *ecdsa.PrivateKey) string {
	t.Helper()
	req, err := x402.Route{Price: "0.01", Network: x402.NetworkBase, PayTo: chainPayTo.Hex()}.Requirements()
	if err != nil {
		t.Fatal(err)
	}
	s, err := client.ParseSigner(hex.EncodeToString(crypto.FromECDSA(key)))
	if err != nil {
		t.Fatal(err)
	}
	ep, err := s.NewPayload(req, time.Now(), 0)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(ep)
	b, _ := json.Marshal(map[string]any{"x402Version": 2, "paymentPayload": x402.PaymentPayload{X402Version: 2, Accepted: req, Payload: raw}, "paymentRequirements": req})
	return string(b)
}

// TestChainSvcServeWithOfficialFacilitator: svc's server in production
// mode with the official TypeScript facilitator (@x402/core + @x402/evm
// with a viem wallet) settles on anvil.
func TestChainSvcServeWithOfficialFacilitator(t *testing.T) {
	w := newChainWorld(t, anviltest.Options{})
	tsf := w.nodeApp(t, "ts facilitator", "ts-facilitator.mjs", "RPC_URL="+w.chain.URL, "RELAYER_KEY="+keyHex(w.relayerKey))
	db := filepath.Join(t.TempDir(), "svc.db")
	srv := w.svc(t, "svc serve", nil, "serve", "--addr", "127.0.0.1:0", "--db", db, "--unpaid-rate", "-1", "--log-level", "info",
		"--facilitator-url", tsf.base, "--pay-to", chainPayTo.Hex())
	payerBefore, payToBefore := w.chain.TokenBalance(t, w.payer), w.chain.TokenBalance(t, chainPayTo)
	res := w.pay(t, "POST", srv.base+clusterToolPath, clusterBody(clusterAddress()))
	rcpt := w.checkPaidOnChain(t, res, payerBefore, payToBefore, 10_000)
	tx, _, err := w.chain.Client.TransactionByHash(context.Background(), rcpt.TxHash)
	if err != nil {
		t.Fatal(err)
	}
	if from, err := types.Sender(types.LatestSignerForChainID(tx.ChainId()), tx); err != nil || from != w.relayer {
		t.Fatalf("the settlement was not sent by the official facilitator's wallet: %v", err)
	}
	l := clusterSQLiteLedger(t, db)
	if len(l.rows) != 1 || l.rows[0].Tx != rcpt.TxHash.Hex() {
		t.Fatalf("ledger %+v, want one row of transaction %s", l.rows, rcpt.TxHash.Hex())
	}
}

// TestChainKillAfterBroadcast: `svc serve --settle onchain` is killed
// (SIGKILL) after the settlement transaction was broadcast and before its
// receipt (the chain does not mine until then). After the restart,
// recovery finds the transaction through the status query: the ledger has
// it once, nothing was sent twice, and the client retrying the same
// payment gets the recorded answer.
func TestChainKillAfterBroadcast(t *testing.T) {
	w := newChainWorld(t, anviltest.Options{})
	ctx := context.Background()
	db := filepath.Join(t.TempDir(), "svc.db")
	srv := w.serveOnchain(t, db, nil, "--settle-timeout", "5s")
	c := clusterHTTP(t)
	pr := clusterOffer(t, c, srv.base)
	signer, err := client.ParseSigner(hex.EncodeToString(crypto.FromECDSA(w.payerKey)))
	if err != nil {
		t.Fatal(err)
	}
	header, nonce := clusterMustSign(t, signer, pr)
	body := clusterBody(clusterAddress())
	p := &faultPayment{header: header, nonce: nonce, body: body, payer: signer.Address()}

	w.chain.SetAutomine(t, false)
	go func() {
		_, _ = clusterDo(context.Background(), &http.Client{}, http.MethodPost, srv.base+clusterToolPath, body, header)
	}()
	// Broadcast: the relayer's transaction is in the pool, not mined.
	clusterEventually(t, 30*time.Second, func() string {
		if n, _ := w.chain.Client.PendingNonceAt(ctx, w.relayer); n == 1 {
			return ""
		}
		return "the settlement transaction was not broadcast"
	})
	srv.kill(t)
	if n, _ := w.chain.Client.NonceAt(ctx, w.relayer, nil); n != 0 {
		t.Fatalf("mined before the kill (nonce %d)", n)
	}
	w.chain.SetAutomine(t, true)
	w.chain.Mine(t, 1)
	if n, _ := w.chain.Client.NonceAt(ctx, w.relayer, nil); n != 1 {
		t.Fatalf("the broadcast transaction was not mined (relayer nonce %d)", n)
	}
	if l := clusterSQLiteLedger(t, db); len(l.rows) != 0 || l.states()[engine.StateSettling] != 1 {
		t.Fatalf("before the restart: ledger %+v, states %v; want none and one settling", l.rows, l.states())
	}

	srv2 := w.serveOnchain(t, db, nil, "--settle-timeout", "5s")
	clusterEventually(t, faultRecoveryTimeout, func() string {
		if l := clusterSQLiteLedger(t, db); len(l.rows) != 1 {
			return "recovery did not record the settlement"
		}
		return ""
	})
	clusterEventually(t, 30*time.Second, func() string { // the log is flushed periodically
		if !strings.Contains(srv2.out.String(), "recovery: settlement recorded") {
			return "the restarted server did not log a settlement recorded by recovery"
		}
		return ""
	})
	l := clusterSQLiteLedger(t, db)
	clusterCheckSettledRecorded(t, l)
	var txHash string
	for _, r := range l.rows {
		txHash = r.Tx
	}
	rcpt := w.chain.WaitReceipt(t, common.HexToHash(txHash))
	if rcpt.Status != types.ReceiptStatusSuccessful {
		t.Fatalf("the recorded transaction %s did not succeed", txHash)
	}
	if n, _ := w.chain.Client.NonceAt(ctx, w.relayer, nil); n != 1 {
		t.Fatalf("the relayer sent %d transactions, want 1", n)
	}
	a := faultRetry(t, c, srv2.base, p, 30*time.Second)
	if a.status != http.StatusOK {
		t.Fatalf("retry after recovery: %s", a)
	}
	sr, err := a.settlement()
	if err != nil || sr.Transaction != txHash {
		t.Fatalf("retry after recovery: settlement %+v %v, want %s", sr, err, txHash)
	}
	if n, _ := w.chain.Client.NonceAt(ctx, w.relayer, nil); n != 1 {
		t.Fatalf("the retry sent another transaction (relayer nonce %d)", n)
	}
}

// TestChainServeReadinessFollowsRelayerBalance: `svc serve --settle
// onchain --min-relayer-balance 0.5` is ready while its relayer holds at
// least 0.5 ETH; below that /readyz answers 503 naming the relayer's gas
// and a paid call is answered 503 before anything is settled; funded
// again, it is ready and settles. /metrics exposes the relayer's balance
// as the chain has it, and a settlement awaiting its block as pending.
func TestChainServeReadinessFollowsRelayerBalance(t *testing.T) {
	w := newChainWorld(t, anviltest.Options{})
	ctx := context.Background()
	funded, low := big.NewInt(1_000_000_000_000_000_000), big.NewInt(250_000_000_000_000_000) // 1 and 0.25 ETH
	w.chain.SetBalance(t, w.relayer, funded)
	db := filepath.Join(t.TempDir(), "svc.db")
	srv := w.serveOnchain(t, db, nil, "--min-relayer-balance", "0.5")
	c := clusterHTTP(t)
	type readiness struct {
		Status string `json:"status"`
		Checks struct {
			Facilitator struct{ Status, Error string } `json:"facilitator"`
		} `json:"checks"`
	}
	var rd readiness
	clusterGetJSON(t, c, srv.base+"/readyz", http.StatusOK, &rd)
	if rd.Status != "ready" || rd.Checks.Facilitator.Status != "up" {
		t.Fatalf("/readyz with a funded relayer: %+v", rd)
	}
	if got := clusterMetric(t, c, srv.base, "svc_relayer_balance_wei"); got != funded.Int64() {
		t.Fatalf("svc_relayer_balance_wei %d, want %s", got, funded)
	}

	// Below the minimum (not empty): not ready, and no settlement.
	w.chain.SetBalance(t, w.relayer, low)
	rd = readiness{}
	clusterGetJSON(t, c, srv.base+"/readyz", http.StatusServiceUnavailable, &rd)
	if rd.Status != "not ready" || rd.Checks.Facilitator.Status != "down" || !strings.Contains(rd.Checks.Facilitator.Error, "relayer_out_of_gas") ||
		!strings.Contains(rd.Checks.Facilitator.Error, "fund the relayer "+w.relayer.Hex()) {
		t.Fatalf("/readyz with the relayer below the minimum: %+v", rd)
	}
	// The banner and /health name the relayer to fund, /health with its
	// balance.
	if !strings.Contains(srv.out.String(), "relayer:     "+w.relayer.Hex()) {
		t.Fatalf("the banner does not name the relayer %s:\n%s", w.relayer.Hex(), clusterTail(srv.out.String(), 3000))
	}
	var health struct {
		Facilitator struct{ Relayer, RelayerBalanceWei string } `json:"facilitator"`
	}
	clusterGetJSON(t, c, srv.base+"/health", http.StatusServiceUnavailable, &health)
	if health.Facilitator.Relayer != w.relayer.Hex() || health.Facilitator.RelayerBalanceWei != low.String() {
		t.Fatalf("/health facilitator %+v, want relayer %s with %s wei", health.Facilitator, w.relayer.Hex(), low)
	}
	if got := clusterMetric(t, c, srv.base, "svc_relayer_balance_wei"); got != low.Int64() {
		t.Fatalf("svc_relayer_balance_wei %d, want %s", got, low)
	}
	signer, err := client.ParseSigner(hex.EncodeToString(crypto.FromECDSA(w.payerKey)))
	if err != nil {
		t.Fatal(err)
	}
	header, _ := clusterMustSign(t, signer, clusterOffer(t, c, srv.base))
	if a := clusterMust(t, c, http.MethodPost, srv.base+clusterToolPath, clusterBody(clusterAddress()), header); a.status != http.StatusServiceUnavailable ||
		a.header.Get("Retry-After") == "" {
		t.Fatalf("paid call with the relayer below the minimum: %s", a)
	}
	if n, _ := w.chain.Client.PendingNonceAt(ctx, w.relayer); n != 0 {
		t.Fatalf("the relayer sent %d transactions below its minimum balance", n)
	}

	// Funded again: ready; a settlement held in the pool (automine off) is
	// pending in /metrics until its block.
	w.chain.SetBalance(t, w.relayer, funded)
	rd = readiness{}
	clusterGetJSON(t, c, srv.base+"/readyz", http.StatusOK, &rd)
	if rd.Status != "ready" || rd.Checks.Facilitator.Status != "up" {
		t.Fatalf("/readyz after funding: %+v", rd)
	}
	if got := clusterMetric(t, c, srv.base, "svc_relayer_pending_transactions"); got != 0 {
		t.Fatalf("svc_relayer_pending_transactions %d before any settlement", got)
	}
	payerBefore, payToBefore := w.chain.TokenBalance(t, w.payer), w.chain.TokenBalance(t, chainPayTo)
	w.chain.SetAutomine(t, false)
	header, _ = clusterMustSign(t, signer, clusterOffer(t, c, srv.base))
	paid := make(chan clusterAnswer, 1)
	go func() {
		a, err := clusterDo(ctx, &http.Client{Timeout: time.Minute}, http.MethodPost, srv.base+clusterToolPath, clusterBody(clusterAddress()), header)
		if err != nil {
			a.body = []byte(err.Error())
		}
		paid <- a
	}()
	clusterEventually(t, 30*time.Second, func() string {
		if n := clusterMetric(t, c, srv.base, "svc_relayer_pending_transactions"); n != 1 {
			return "svc_relayer_pending_transactions is not 1 while the settlement awaits its block"
		}
		return ""
	})
	w.chain.SetAutomine(t, true)
	w.chain.Mine(t, 1)
	var a clusterAnswer
	select {
	case a = <-paid:
	case <-time.After(60 * time.Second):
		t.Fatal("the paid call did not end after its block")
	}
	sr, err := a.settlement()
	if a.status != http.StatusOK || err != nil || !sr.Success {
		t.Fatalf("paid call after funding: %s (%v)", a, err)
	}
	w.checkPaidOnChain(t, chainPaid{Status: a.status, PaymentResponse: &sr}, payerBefore, payToBefore, 10_000)
	if got := clusterMetric(t, c, srv.base, "svc_relayer_pending_transactions"); got != 0 {
		t.Fatalf("svc_relayer_pending_transactions %d after the settlement", got)
	}
}

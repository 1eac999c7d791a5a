package onchain_test

import (
	"context"
	"crypto/ecdsa"
	"errors"
	"math/big"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"

	"github.com/seed1284c1d2/svc/internal/anviltest"
	"github.com/seed1284c1d2/svc/x402"
	"github.com/seed1284c1d2/svc/x402/exact"
	"github.com/seed1284c1d2/svc/x402/facilitator/onchain"
)

// checkSettled checks a settlement on chain: receipt status 1, sent by the
// relayer to the token, with the payment's AuthorizationUsed and Transfer.
func checkSettled(t *testing.T, e *env, resp x402.SettleResponse, p exact.ExactEVMPayload, req x402.PaymentRequirements) *types.Receipt {
	t.Helper()
	if !resp.Success {
		t.Fatalf("settle refused: %s: %s", resp.ErrorReason, resp.ErrorMessage)
	}
	rcpt := e.chain.WaitReceipt(t, common.HexToHash(resp.Transaction))
	if rcpt.Status != types.ReceiptStatusSuccessful {
		t.Fatalf("receipt status %d", rcpt.Status)
	}
	from := common.HexToAddress(p.Authorization.From)
	var used, transferred bool
	for _, l := range rcpt.Logs {
		if l.Address != anviltest.USDC {
			t.Errorf("log from %s", l.Address)
		}
		switch l.Topics[0] {
		case e.chain.ABI.Events["AuthorizationUsed"].ID:
			used = common.BytesToAddress(l.Topics[1][:]) == from && l.Topics[2] == common.Hash(nonceOf(t, p))
		case e.chain.ABI.Events["Transfer"].ID:
			transferred = common.BytesToAddress(l.Topics[1][:]) == from && common.BytesToAddress(l.Topics[2][:]) == payTo &&
				new(big.Int).SetBytes(l.Data).Cmp(amount(t, req)) == 0
		}
	}
	if !used || !transferred {
		t.Fatalf("events: AuthorizationUsed %v, Transfer %v", used, transferred)
	}
	if !e.chain.AuthorizationState(t, from, nonceOf(t, p)) {
		t.Fatal("authorizationState is false after the settlement")
	}
	return rcpt
}

// TestSettleBothSignatureForms settles one payment with each of USDC's
// transferWithAuthorization forms: the balances move by exactly the
// amount and the receipt has the payment's events.
func TestSettleBothSignatureForms(t *testing.T) {
	e := newEnv(t, anviltest.Options{})
	for _, form := range []onchain.SignatureForm{onchain.FormVRS, onchain.FormBytes} {
		f := e.facilitator(t, func(c *onchain.Config) { c.Form = form })
		req := requirements(t, "0.25")
		payload, p := pay(t, e.payerKey, req, time.Now())
		before, beforeTo := e.chain.TokenBalance(t, e.payer), e.chain.TokenBalance(t, payTo)
		vr, err := f.Verify(context.Background(), payload, req)
		if err != nil || !vr.IsValid {
			t.Fatalf("form %d: verify %+v %v", form, vr, err)
		}
		resp, err := f.Settle(context.Background(), payload, req)
		if err != nil {
			t.Fatalf("form %d: %v", form, err)
		}
		rcpt := checkSettled(t, e, resp, p, req)
		tx, _, err := e.chain.Client.TransactionByHash(context.Background(), rcpt.TxHash)
		if err != nil {
			t.Fatal(err)
		}
		want := map[onchain.SignatureForm]int{onchain.FormVRS: 4 + 9*32, onchain.FormBytes: 4 + 7*32 + 32 + 96}[form]
		if len(tx.Data()) != want {
			t.Errorf("form %d: calldata of %d bytes, want %d", form, len(tx.Data()), want)
		}
		if tx.Type() != types.DynamicFeeTxType {
			t.Errorf("transaction type %d, want EIP-1559", tx.Type())
		}
		after, afterTo := e.chain.TokenBalance(t, e.payer), e.chain.TokenBalance(t, payTo)
		if d := new(big.Int).Sub(before, after); d.Cmp(amount(t, req)) != 0 {
			t.Errorf("payer paid %s, want %s", d, req.Amount)
		}
		if d := new(big.Int).Sub(afterTo, beforeTo); d.Cmp(amount(t, req)) != 0 {
			t.Errorf("payTo got %s, want %s", d, req.Amount)
		}
		if resp.Payer != p.Authorization.From || resp.Network != x402.NetworkBase || resp.Amount != req.Amount {
			t.Errorf("response %+v", resp)
		}
	}
}

// TestSettledAuthorizationPresentedAgain: the chain refuses a used
// authorization, Verify refuses it, Status reports its transaction, and
// Settle of the same payment returns the original settlement without a
// new transaction, also from a facilitator that never saw it.
func TestSettledAuthorizationPresentedAgain(t *testing.T) {
	e := newEnv(t, anviltest.Options{})
	f := e.facilitator(t, nil)
	ctx := context.Background()
	req := requirements(t, "0.01")
	payload, p := pay(t, e.payerKey, req, time.Now())
	first, err := f.Settle(ctx, payload, req)
	if err != nil {
		t.Fatal(err)
	}
	checkSettled(t, e, first, p, req)
	balance := e.chain.TokenBalance(t, e.payer)
	relayerNonce, err := e.chain.Client.NonceAt(ctx, e.relayer, nil)
	if err != nil {
		t.Fatal(err)
	}

	// The chain itself refuses it.
	sig := common.FromHex(p.Signature)
	data, err := e.chain.ABI.Pack(bytesForm(e), e.payer, payTo, amount(t, req),
		mustBig(p.Authorization.ValidAfter), mustBig(p.Authorization.ValidBefore), nonceOf(t, p), sig)
	if err != nil {
		t.Fatal(err)
	}
	var out hexutil.Bytes
	err = e.chain.RPC.CallContext(ctx, &out, "eth_call", map[string]any{"from": e.relayer, "to": anviltest.USDC, "data": hexutil.Bytes(data)}, "latest")
	if err == nil || !strings.Contains(err.Error(), "FiatTokenV2: authorization is used or canceled") {
		t.Fatalf("the chain accepts a used authorization: %v", err)
	}

	vr, err := f.Verify(ctx, payload, req)
	if err != nil || vr.IsValid || vr.InvalidReason != exact.ReasonNonceAlreadyUsed {
		t.Fatalf("verify of a used authorization: %+v %v", vr, err)
	}
	for i, g := range []*onchain.Facilitator{f, e.facilitator(t, nil)} {
		again, err := g.Settle(ctx, payload, req)
		if err != nil {
			t.Fatal(err)
		}
		if !again.Success || again.Transaction != first.Transaction || again.Amount != req.Amount {
			t.Fatalf("facilitator %d: presented again: %+v, want the original %s", i, again, first.Transaction)
		}
		st, err := g.Status(ctx, payload, req)
		if err != nil {
			t.Fatal(err)
		}
		if !st.Used || st.Transaction != first.Transaction || !strings.EqualFold(st.PayTo, payTo.Hex()) || st.Amount != req.Amount ||
			!strings.EqualFold(st.Payer, e.payer.Hex()) || st.Network != x402.NetworkBase || st.Expired {
			t.Fatalf("facilitator %d: status %+v", i, st)
		}
	}
	// The same authorization for another payee's requirements is refused.
	other := req
	other.PayTo = "0x00000000000000000000000000000000000000aa"
	if r, err := f.Settle(ctx, payload, other); err != nil || r.Success {
		t.Fatalf("settled for other requirements: %+v %v", r, err)
	}
	if got := e.chain.TokenBalance(t, e.payer); got.Cmp(balance) != 0 {
		t.Fatalf("payer balance moved from %s to %s", balance, got)
	}
	if n, _ := e.chain.Client.NonceAt(ctx, e.relayer, nil); n != relayerNonce {
		t.Fatalf("relayer sent %d more transactions", n-relayerNonce)
	}
}

func mustBig(s string) *big.Int {
	b, ok := new(big.Int).SetString(s, 10)
	if !ok {
		panic("not a number: " + s)
	}
	return b
}

// TestStatusOfUnusedAndExpired: an unused authorization is not Used; its
// Expired follows validBefore against the chain's time.
func TestStatusOfUnusedAndExpired(t *testing.T) {
	e := newEnv(t, anviltest.Options{})
	f := e.facilitator(t, nil)
	req := requirements(t, "0.01")
	payload, _ := pay(t, e.payerKey, req, time.Now())
	st, err := f.Status(context.Background(), payload, req)
	if err != nil || st.Used || st.Expired || st.Transaction != "" {
		t.Fatalf("unused: %+v %v", st, err)
	}
	old, _ := pay(t, e.payerKey, req, time.Now().Add(-time.Hour))
	st, err = f.Status(context.Background(), old, req)
	if err != nil || st.Used || !st.Expired {
		t.Fatalf("expired: %+v %v", st, err)
	}
}

// TestRefusedBeforeAnyGas: a payer balance too low, an expired
// authorization, another chain, another token and a bad signature are
// refused with their reasons, by Verify and Settle, without any
// transaction; a relayer without gas is unavailable (and not ready), and
// so is a base fee above the cap.
func TestRefusedBeforeAnyGas(t *testing.T) {
	e := newEnv(t, anviltest.Options{})
	f := e.facilitator(t, nil)
	ctx := context.Background()
	req := requirements(t, "0.01")
	poorKey, _ := anviltest.NewKey(t)

	sepolia, err := x402.Route{Price: "0.01", Network: x402.NetworkBaseSepolia, PayTo: payTo.Hex()}.Requirements()
	if err != nil {
		t.Fatal(err)
	}
	otherToken := req
	otherToken.Asset = "0x1111111111111111111111111111111111111111"
	tampered, tp := pay(t, e.payerKey, req, time.Now())
	tp.Authorization.Value = "9"
	tampered.Payload = mustJSON(t, tp)
	tamperedReq := req
	tamperedReq.Amount = "9"
	tamperedReq.Extra = req.Extra
	tampered.Accepted = tamperedReq

	cases := []struct {
		name    string
		payload x402.PaymentPayload
		req     x402.PaymentRequirements
		reason  string
	}{
		{"balance too low", first(pay(t, poorKey, req, time.Now())), req, onchain.ReasonInsufficientBalance},
		{"expired", first(pay(t, e.payerKey, req, time.Now().Add(-time.Hour))), req, exact.ReasonValidBefore},
		{"wrong chain", first(pay(t, e.payerKey, sepolia, time.Now())), sepolia, x402.ReasonInvalidNetwork},
		{"wrong token", first(pay(t, e.payerKey, otherToken, time.Now())), otherToken, exact.ReasonAssetMismatch},
		{"bad signature", tampered, tamperedReq, exact.ReasonInvalidSignature},
	}
	n0, _ := e.chain.Client.NonceAt(ctx, e.relayer, nil)
	gas0, _ := f.RelayerBalance(ctx)
	for _, c := range cases {
		vr, err := f.Verify(ctx, c.payload, c.req)
		if err != nil || vr.IsValid || vr.InvalidReason != c.reason {
			t.Errorf("%s: verify %+v %v, want %s", c.name, vr, err, c.reason)
		}
		sr, err := f.Settle(ctx, c.payload, c.req)
		if err != nil || sr.Success || sr.ErrorReason != c.reason || sr.Transaction != "" {
			t.Errorf("%s: settle %+v %v, want %s", c.name, sr, err, c.reason)
		}
	}
	if n, _ := e.chain.Client.NonceAt(ctx, e.relayer, nil); n != n0 {
		t.Errorf("the refusals sent %d transactions", n-n0)
	}
	if g, _ := f.RelayerBalance(ctx); g.Cmp(gas0) != 0 {
		t.Errorf("the refusals spent %s wei of gas", new(big.Int).Sub(gas0, g))
	}

	// A signature only a contract wallet could accept, from an EOA.
	long, lp := pay(t, e.payerKey, req, time.Now())
	lp.Signature += "00"
	long.Payload = mustJSON(t, lp)
	if sr, err := f.Settle(ctx, long, req); err != nil || sr.Success || sr.ErrorReason != exact.ReasonInvalidSignature ||
		!strings.Contains(sr.ErrorMessage, "contract wallet") {
		t.Fatalf("settle with a 66-byte signature: %+v %v", sr, err)
	}
	// The payer spends its balance between verify and settle.
	spender, spenderAddr := anviltest.NewKey(t)
	e.chain.Mint(t, spenderAddr, amount(t, req))
	payload, _ := pay(t, spender, req, time.Now())
	if vr, err := f.Verify(ctx, payload, req); err != nil || !vr.IsValid {
		t.Fatalf("verify: %+v %v", vr, err)
	}
	e.chain.SetBalance(t, spenderAddr, anviltest.Ether(1))
	transferAll(t, e.chain, spender, amount(t, req))
	if sr, err := f.Settle(ctx, payload, req); err != nil || sr.Success || sr.ErrorReason != onchain.ReasonInsufficientBalance {
		t.Fatalf("settle after the balance left: %+v %v", sr, err)
	}

	// Out of gas: unavailable, not ready, nothing sent. With a little gas
	// left the node refuses the transaction; with none, the facilitator
	// does not try.
	if err := f.Ready(ctx); err != nil {
		t.Fatalf("ready with gas: %v", err)
	}
	good, _ := pay(t, e.payerKey, req, time.Now())
	var ue *onchain.UnavailableError
	for _, wei := range []int64{1000, 0} {
		e.chain.SetBalance(t, e.relayer, big.NewInt(wei))
		_, err = f.Settle(ctx, good, req)
		if !errors.As(err, &ue) || ue.Reason != onchain.UnavailableOutOfGas || !errors.Is(err, onchain.ErrRelayerOutOfGas) {
			t.Fatalf("settle with %d wei of gas: %v", wei, err)
		}
	}
	if err := f.Ready(ctx); !errors.As(err, &ue) || ue.Reason != onchain.UnavailableOutOfGas {
		t.Fatalf("ready without gas: %v", err)
	}
	if _, err := f.Verify(ctx, good, req); !errors.As(err, &ue) || ue.Reason != onchain.UnavailableOutOfGas {
		t.Fatalf("verify without gas: %v", err)
	}
	if f.Pending() != 0 {
		t.Fatalf("%d pending after a refused send", f.Pending())
	}
	// With a minimum balance, refused before sending anything.
	e.chain.SetBalance(t, e.relayer, big.NewInt(1_000_000))
	g := e.facilitator(t, func(c *onchain.Config) { c.MinRelayerBalance = anviltest.Ether(1) })
	if _, err := g.Settle(ctx, good, req); !errors.As(err, &ue) || ue.Reason != onchain.UnavailableOutOfGas {
		t.Fatalf("settle under the minimum balance: %v", err)
	}
	if err := g.Ready(ctx); err == nil {
		t.Fatal("ready under the minimum balance")
	}
	// Gas back: the same payment settles.
	e.chain.SetBalance(t, e.relayer, anviltest.Ether(10))
	if sr, err := f.Settle(ctx, good, req); err != nil || !sr.Success {
		t.Fatalf("settle with gas back: %+v %v", sr, err)
	}
	// A fee cap below the base fee: unavailable.
	h := e.facilitator(t, func(c *onchain.Config) { c.MaxFeePerGas = big.NewInt(1) })
	later, _ := pay(t, e.payerKey, req, time.Now())
	if _, err := h.Settle(ctx, later, req); !errors.As(err, &ue) || ue.Reason != onchain.UnavailableFeeCap {
		t.Fatalf("settle above the fee cap: %v", err)
	}
}

// TestNewChecksTheChain: a facilitator for another network than the
// endpoint's, or for a token with no contract, is not built.
func TestNewChecksTheChain(t *testing.T) {
	e := newEnv(t, anviltest.Options{})
	for name, mod := range map[string]func(*onchain.Config){
		"wrong chain": func(c *onchain.Config) { c.Network = x402.NetworkBaseSepolia },
		"wrong token": func(c *onchain.Config) { c.Token = "0x2222222222222222222222222222222222222222" },
	} {
		cfg := onchain.Config{RPCURL: e.chain.URL, Network: x402.NetworkBase, RelayerKey: e.relayerKey}
		mod(&cfg)
		_, err := onchain.New(context.Background(), cfg)
		var ce *x402.ConfigError
		if !errors.As(err, &ce) {
			t.Errorf("%s: %v", name, err)
		}
		if err != nil && strings.Contains(err.Error(), common.Bytes2Hex(e.relayerKey.D.Bytes())) {
			t.Errorf("%s: the error shows the relayer key", name)
		}
	}
}

// TestConcurrentSettlements settles 200 payments at once with one relayer:
// all are mined, the relayer's nonces are contiguous, nothing is left
// pending; a new facilitator (a restart) continues from the chain's nonce.
func TestConcurrentSettlements(t *testing.T) {
	const n = 200
	e := newEnv(t, anviltest.Options{})
	f := e.facilitator(t, nil)
	ctx := context.Background()
	req := requirements(t, "0.001")
	n0, err := e.chain.Client.NonceAt(ctx, e.relayer, nil)
	if err != nil {
		t.Fatal(err)
	}
	payloads := make([]x402.PaymentPayload, n)
	for i := range payloads {
		payloads[i], _ = pay(t, e.payerKey, req, time.Now())
	}
	before := e.chain.TokenBalance(t, payTo)
	results := make([]x402.SettleResponse, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range payloads {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i], errs[i] = f.Settle(ctx, payloads[i], req)
		}()
	}
	wg.Wait()
	nonces := map[uint64]bool{}
	for i := range results {
		if errs[i] != nil || !results[i].Success {
			t.Fatalf("settlement %d: %+v %v", i, results[i], errs[i])
		}
		tx, pending, err := e.chain.Client.TransactionByHash(ctx, common.HexToHash(results[i].Transaction))
		if err != nil || pending {
			t.Fatalf("settlement %d: transaction %s pending %v: %v", i, results[i].Transaction, pending, err)
		}
		if nonces[tx.Nonce()] {
			t.Fatalf("nonce %d used twice", tx.Nonce())
		}
		nonces[tx.Nonce()] = true
	}
	for k := n0; k < n0+n; k++ {
		if !nonces[k] {
			t.Fatalf("nonce %d missing: nonces are not contiguous", k)
		}
	}
	latest, _ := e.chain.Client.NonceAt(ctx, e.relayer, nil)
	pendingNonce, _ := e.chain.Client.PendingNonceAt(ctx, e.relayer)
	if latest != n0+n || pendingNonce != latest {
		t.Fatalf("relayer nonce %d (pending %d), want %d: stuck transactions", latest, pendingNonce, n0+n)
	}
	if f.Pending() != 0 {
		t.Fatalf("%d settlements still pending", f.Pending())
	}
	got := new(big.Int).Sub(e.chain.TokenBalance(t, payTo), before)
	if want := new(big.Int).Mul(amount(t, req), big.NewInt(n)); got.Cmp(want) != 0 {
		t.Fatalf("payTo received %s, want %s", got, want)
	}
	// A restarted facilitator takes the next nonce from the chain.
	g := e.facilitator(t, nil)
	payload, _ := pay(t, e.payerKey, req, time.Now())
	sr, err := g.Settle(ctx, payload, req)
	if err != nil || !sr.Success {
		t.Fatalf("after restart: %+v %v", sr, err)
	}
	tx, _, _ := e.chain.Client.TransactionByHash(ctx, common.HexToHash(sr.Transaction))
	if tx.Nonce() != n0+n {
		t.Fatalf("after restart: nonce %d, want %d", tx.Nonce(), n0+n)
	}
}

// TestDroppedTransactionIsSentAgain: a settlement transaction the node
// drops from its pool is broadcast again and mined.
func TestDroppedTransactionIsSentAgain(t *testing.T) {
	e := newEnv(t, anviltest.Options{})
	f := e.facilitator(t, func(c *onchain.Config) { c.ResendAfter = 300 * time.Millisecond })
	ctx := context.Background()
	req := requirements(t, "0.01")
	payload, p := pay(t, e.payerKey, req, time.Now())
	e.chain.SetAutomine(t, false)
	done := settleAsync(ctx, f, payload, req)
	waitSent(t, f)
	if err := e.chain.RPC.CallContext(ctx, nil, "anvil_dropAllTransactions"); err != nil {
		t.Fatal(err)
	}
	if n, _ := e.chain.Client.PendingNonceAt(ctx, e.relayer); n != 0 {
		t.Fatalf("pool still holds the relayer's transaction (pending nonce %d)", n)
	}
	// Mine empty blocks until the settlement lands again.
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		for {
			select {
			case <-stop:
				return
			case <-time.After(100 * time.Millisecond):
				_ = e.chain.RPC.CallContext(ctx, nil, "evm_mine")
			}
		}
	}()
	select {
	case sr := <-done:
		checkSettled(t, e, sr, p, req)
	case <-time.After(30 * time.Second):
		t.Fatal("the dropped settlement was not sent again")
	}
}

func first(p x402.PaymentPayload, _ exact.ExactEVMPayload) x402.PaymentPayload { return p }

// bytesForm names the `bytes signature` transferWithAuthorization in the
// token's ABI (go-ethereum suffixes overloads by their order).
func bytesForm(e *env) string {
	for name, m := range e.chain.ABI.Methods {
		if m.RawName == "transferWithAuthorization" && len(m.Inputs) == 7 {
			return name
		}
	}
	panic("no transferWithAuthorization(..., bytes)")
}

// settleInBackground starts f.Settle and waits until its transaction is
// sent (unmined: automine is off); the channel receives the answer.
func settleInBackground(t *testing.T, f *onchain.Facilitator, payload x402.PaymentPayload, req x402.PaymentRequirements) <-chan x402.SettleResponse {
	t.Helper()
	done := settleAsync(context.Background(), f, payload, req)
	waitSent(t, f)
	return done
}

// waitSent waits until f has a settlement transaction in flight.
func waitSent(t *testing.T, f *onchain.Facilitator) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for f.Pending() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the settlement was never sent")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// mineEvery mines a block every interval until the test ends.
func mineEvery(t *testing.T, c *anviltest.Chain, interval time.Duration) {
	stop := make(chan struct{})
	t.Cleanup(func() { close(stop) })
	go func() {
		for {
			select {
			case <-stop:
				return
			case <-time.After(interval):
				_ = c.RPC.CallContext(context.Background(), nil, "evm_mine")
			}
		}
	}()
}

// pooled returns the relayer's transaction with nonce n in the node's pool.
func pooled(t *testing.T, e *env, n uint64) *types.Transaction {
	t.Helper()
	var content struct {
		Pending map[string]map[string]*types.Transaction `json:"pending"`
	}
	if err := e.chain.RPC.CallContext(context.Background(), &content, "txpool_content"); err != nil {
		t.Fatal(err)
	}
	for addr, byNonce := range content.Pending {
		if common.HexToAddress(addr) == e.relayer {
			if tx := byNonce[big.NewInt(int64(n)).String()]; tx != nil {
				return tx
			}
		}
	}
	t.Fatalf("no pooled transaction of the relayer with nonce %d", n)
	return nil
}

// TestReplacedTransactionIsSentAgain: when another transaction of the
// relayer takes a settlement's nonce (the key used elsewhere), the
// settlement is sent again with the next nonce and mined.
func TestReplacedTransactionIsSentAgain(t *testing.T) {
	e := newEnv(t, anviltest.Options{})
	f := e.facilitator(t, func(c *onchain.Config) { c.ResendAfter = 300 * time.Millisecond })
	ctx := context.Background()
	req := requirements(t, "0.01")
	payload, p := pay(t, e.payerKey, req, time.Now())
	e.chain.SetAutomine(t, false)
	done := settleInBackground(t, f, payload, req)
	first := pooled(t, e, 0)
	// The same key sends another transaction with nonce 0 and higher fees.
	to := e.relayer
	other, err := types.SignNewTx(e.relayerKey, types.LatestSignerForChainID(big.NewInt(anviltest.ChainID)), &types.DynamicFeeTx{
		ChainID: big.NewInt(anviltest.ChainID), Nonce: 0, GasTipCap: new(big.Int).Mul(first.GasTipCap(), big.NewInt(3)),
		GasFeeCap: new(big.Int).Mul(first.GasFeeCap(), big.NewInt(3)), Gas: 21_000, To: &to,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := e.chain.Client.SendTransaction(ctx, other); err != nil {
		t.Fatal(err)
	}
	mineEvery(t, e.chain, 100*time.Millisecond)
	var sr x402.SettleResponse
	select {
	case sr = <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the replaced settlement was not sent again")
	}
	rcpt := checkSettled(t, e, sr, p, req)
	tx, _, err := e.chain.Client.TransactionByHash(ctx, rcpt.TxHash)
	if err != nil || tx.Nonce() != 1 || tx.Hash() == first.Hash() {
		t.Fatalf("settled by %s with nonce %d (%v); want a new transaction with nonce 1", rcpt.TxHash, tx.Nonce(), err)
	}
	if r := e.chain.WaitReceipt(t, other.Hash()); r.Status != types.ReceiptStatusSuccessful {
		t.Fatal("the other transaction failed")
	}
}

// TestStuckTransactionIsReplacedWithHigherFees: a settlement whose fee cap
// falls below the base fee is replaced (same nonce) with higher fees within
// the operator's cap, and mined.
func TestStuckTransactionIsReplacedWithHigherFees(t *testing.T) {
	e := newEnv(t, anviltest.Options{})
	feeCap := big.NewInt(100_000_000_000) // 100 gwei
	f := e.facilitator(t, func(c *onchain.Config) { c.ResendAfter = 300 * time.Millisecond; c.MaxFeePerGas = feeCap })
	ctx := context.Background()
	req := requirements(t, "0.01")
	payload, p := pay(t, e.payerKey, req, time.Now())
	e.chain.SetAutomine(t, false)
	done := settleInBackground(t, f, payload, req)
	first := pooled(t, e, 0)
	// The base fee jumps above the transaction's fee cap: it cannot be mined.
	if err := e.chain.RPC.CallContext(ctx, nil, "anvil_setNextBlockBaseFeePerGas", hexutil.Big(*big.NewInt(50_000_000_000))); err != nil {
		t.Fatal(err)
	}
	e.chain.Mine(t, 1)
	if n, _ := e.chain.Client.NonceAt(ctx, e.relayer, nil); n != 0 {
		t.Fatal("the settlement was mined above its fee cap")
	}
	mineEvery(t, e.chain, 100*time.Millisecond)
	var sr x402.SettleResponse
	select {
	case sr = <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the stuck settlement was not replaced")
	}
	rcpt := checkSettled(t, e, sr, p, req)
	tx, _, err := e.chain.Client.TransactionByHash(ctx, rcpt.TxHash)
	if err != nil || tx.Nonce() != 0 || tx.Hash() == first.Hash() || tx.GasFeeCap().Cmp(first.GasFeeCap()) <= 0 || tx.GasFeeCap().Cmp(feeCap) > 0 {
		t.Fatalf("settled by %s (nonce %d, fee cap %s; first fee cap %s, cap %s): want a replacement with nonce 0 and higher fees within the cap",
			rcpt.TxHash, tx.Nonce(), tx.GasFeeCap(), first.GasFeeCap(), feeCap)
	}
	if f.Pending() != 0 {
		t.Fatalf("%d pending", f.Pending())
	}
}

// TestCanceledAuthorization: an authorization its payer canceled on chain
// is refused (nonce used) by Verify and Settle, and Status reports it used
// by no transfer (not proof of payment).
func TestCanceledAuthorization(t *testing.T) {
	e := newEnv(t, anviltest.Options{})
	f := e.facilitator(t, nil)
	ctx := context.Background()
	req := requirements(t, "0.01")
	payload, p := pay(t, e.payerKey, req, time.Now())
	nonce := nonceOf(t, p)
	sep := exact.Domain(mustNetwork(t)).Separator()
	sh := crypto.Keccak256(crypto.Keccak256([]byte("CancelAuthorization(address authorizer,bytes32 nonce)")), common.LeftPadBytes(e.payer.Bytes(), 32), nonce[:])
	sig, err := crypto.Sign(crypto.Keccak256([]byte{0x19, 0x01}, sep[:], sh), e.payerKey)
	if err != nil {
		t.Fatal(err)
	}
	sig[64] += 27
	var cancel string
	for name, m := range e.chain.ABI.Methods {
		if m.RawName == "cancelAuthorization" && len(m.Inputs) == 3 {
			cancel = name
		}
	}
	data, err := e.chain.ABI.Pack(cancel, e.payer, nonce, sig)
	if err != nil {
		t.Fatal(err)
	}
	var accounts []common.Address
	if err := e.chain.RPC.CallContext(ctx, &accounts, "eth_accounts"); err != nil {
		t.Fatal(err)
	}
	var hash common.Hash
	if err := e.chain.RPC.CallContext(ctx, &hash, "eth_sendTransaction", map[string]any{"from": accounts[0], "to": anviltest.USDC, "data": hexutil.Bytes(data)}); err != nil {
		t.Fatal(err)
	}
	if r := e.chain.WaitReceipt(t, hash); r.Status != types.ReceiptStatusSuccessful {
		t.Fatal("cancelAuthorization reverted")
	}
	if vr, err := f.Verify(ctx, payload, req); err != nil || vr.IsValid || vr.InvalidReason != exact.ReasonNonceAlreadyUsed {
		t.Fatalf("verify of a canceled authorization: %+v %v", vr, err)
	}
	if sr, err := f.Settle(ctx, payload, req); err != nil || sr.Success || sr.ErrorReason != exact.ReasonNonceAlreadyUsed {
		t.Fatalf("settle of a canceled authorization: %+v %v", sr, err)
	}
	st, err := f.Status(ctx, payload, req)
	if err != nil || !st.Used || st.Transaction != "" || st.PayTo != "" || st.Amount != "" {
		t.Fatalf("status of a canceled authorization: %+v %v", st, err)
	}
}

func mustNetwork(t *testing.T) x402.Network {
	t.Helper()
	n, ok := x402.LookupNetwork(x402.NetworkBase)
	if !ok {
		t.Fatal("no Base network")
	}
	return n
}

// TestSettlementPendingThenFound: a settlement not mined within its
// context answers settlement_pending with its transaction; once mined,
// Status finds it and presenting it again returns it.
func TestSettlementPendingThenFound(t *testing.T) {
	e := newEnv(t, anviltest.Options{})
	f := e.facilitator(t, nil)
	req := requirements(t, "0.01")
	payload, p := pay(t, e.payerKey, req, time.Now())
	e.chain.SetAutomine(t, false)
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	sr, err := f.Settle(ctx, payload, req)
	if err != nil || sr.Success || sr.ErrorReason != onchain.ReasonSettlementPending || len(sr.Transaction) != 66 {
		t.Fatalf("unmined settlement: %+v %v", sr, err)
	}
	st, err := f.Status(context.Background(), payload, req)
	if err != nil || st.Used {
		t.Fatalf("status before mining: %+v %v", st, err)
	}
	e.chain.Mine(t, 1)
	st, err = f.Status(context.Background(), payload, req)
	if err != nil || !st.Used || st.Transaction != sr.Transaction {
		t.Fatalf("status after mining: %+v %v, want %s", st, err, sr.Transaction)
	}
	again, err := f.Settle(context.Background(), payload, req)
	if err != nil || !again.Success || again.Transaction != sr.Transaction {
		t.Fatalf("presented again: %+v %v", again, err)
	}
	checkSettled(t, e, again, p, req)
	if _, err := f.RelayerBalance(context.Background()); err != nil {
		t.Fatal(err)
	}
	if f.Pending() != 0 {
		t.Fatalf("%d pending after the transaction was mined", f.Pending())
	}
}

// TestContractWalletSignature: a payment from a smart-contract wallet
// (ERC-1271), signed by its owner, is verified by the chain's simulation
// and settled with the `bytes signature` form; a signature its owner did
// not make is refused by the simulation, before any gas.
func TestContractWalletSignature(t *testing.T) {
	e := newEnv(t, anviltest.Options{})
	ownerKey, owner := anviltest.NewKey(t)
	wallet := e.chain.InstallWallet(t, owner)
	e.chain.Mint(t, wallet, big.NewInt(1_000_000))
	f := e.facilitator(t, nil)
	ctx := context.Background()
	req := requirements(t, "0.01")
	walletPayment := func(signer *ecdsa.PrivateKey) (x402.PaymentPayload, exact.ExactEVMPayload) {
		p := anviltest.WalletPayment(t, signer, wallet, req)
		return x402.PaymentPayload{X402Version: 2, Accepted: req, Payload: mustJSON(t, p)}, p
	}
	n0, _ := e.chain.Client.NonceAt(ctx, e.relayer, nil)
	strangerKey, _ := anviltest.NewKey(t)
	bad, _ := walletPayment(strangerKey)
	if vr, err := f.Verify(ctx, bad, req); err != nil || vr.IsValid || vr.InvalidReason != exact.ReasonInvalidSignature {
		t.Fatalf("verify of a stranger's signature for the wallet: %+v %v", vr, err)
	}
	if sr, err := f.Settle(ctx, bad, req); err != nil || sr.Success || sr.ErrorReason != exact.ReasonInvalidSignature ||
		!strings.Contains(sr.ErrorMessage, "FiatTokenV2: invalid signature") {
		t.Fatalf("settle of a stranger's signature for the wallet: %+v %v", sr, err)
	}
	if n, _ := e.chain.Client.NonceAt(ctx, e.relayer, nil); n != n0 {
		t.Fatal("a refused wallet payment cost gas")
	}
	good, p := walletPayment(ownerKey)
	if vr, err := f.Verify(ctx, good, req); err != nil || !vr.IsValid {
		t.Fatalf("verify of the owner's signature: %+v %v", vr, err)
	}
	sr, err := f.Settle(ctx, good, req)
	if err != nil {
		t.Fatal(err)
	}
	rcpt := checkSettled(t, e, sr, p, req)
	tx, _, err := e.chain.Client.TransactionByHash(ctx, rcpt.TxHash)
	if err != nil || len(tx.Data()) != 4+7*32+32+96 {
		t.Fatalf("the wallet payment was not sent in the bytes form (%d bytes of calldata, %v)", len(tx.Data()), err)
	}
	if got := e.chain.TokenBalance(t, wallet); got.Int64() != 1_000_000-10_000 {
		t.Fatalf("wallet balance %s", got)
	}
}

// TestSettleAfterCloseSendsNothing: once Close has begun, a settlement is
// unavailable (the caller answers 503) and no transaction leaves the
// relayer; Close may be called while settlements are refused.
func TestSettleAfterCloseSendsNothing(t *testing.T) {
	e := newEnv(t, anviltest.Options{})
	f := e.facilitator(t, nil)
	req := requirements(t, "0.25")
	payload, _ := pay(t, e.payerKey, req, time.Now())
	nonceBefore, err := e.chain.Client.PendingNonceAt(context.Background(), f.Relayer())
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	_, err = f.Settle(context.Background(), payload, req)
	var ue *onchain.UnavailableError
	if !errors.As(err, &ue) || ue.Reason != onchain.UnavailableClosed {
		t.Fatalf("settle after Close: %v, want an UnavailableError %s", err, onchain.UnavailableClosed)
	}
	nonceAfter, err := e.chain.Client.PendingNonceAt(context.Background(), f.Relayer())
	if err != nil {
		t.Fatal(err)
	}
	if nonceAfter != nonceBefore {
		t.Fatalf("the relayer sent %d transactions after Close", nonceAfter-nonceBefore)
	}
}

package onchain_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"math/big"
	"net/http"
	"sync"
	"testing"
	"time"

	ethereum "github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/rpc"

	"github.com/seed1284c1d2/svc/internal/anviltest"
	"github.com/seed1284c1d2/svc/x402"
	"github.com/seed1284c1d2/svc/x402/facilitator/onchain"
)

// observer is a transparent http.RoundTripper in front of the node that
// counts the JSON-RPC methods a facilitator calls, when it calls them: a
// call counted proves that the facilitator was still at work when it
// made it.
type observer struct {
	mu    sync.Mutex
	calls map[string]int
}

func (o *observer) RoundTrip(r *http.Request) (*http.Response, error) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return nil, err
	}
	_ = r.Body.Close()
	var one struct {
		Method string `json:"method"`
	}
	var many []struct {
		Method string `json:"method"`
	}
	o.mu.Lock()
	if json.Unmarshal(body, &many) == nil {
		for _, m := range many {
			o.calls[m.Method]++
		}
	} else if json.Unmarshal(body, &one) == nil {
		o.calls[one.Method]++
	}
	o.mu.Unlock()
	r2 := r.Clone(r.Context())
	r2.Body = io.NopCloser(bytes.NewReader(body))
	r2.ContentLength = int64(len(body))
	return http.DefaultTransport.RoundTrip(r2)
}

func (o *observer) count(method string) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.calls[method]
}

// waitCalls waits until method was called n times (at most 30 s).
func (o *observer) waitCalls(t *testing.T, method string, n int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for o.count(method) < n {
		if time.Now().After(deadline) {
			t.Fatalf("the facilitator called %s %d times, want %d", method, o.count(method), n)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// observed builds a facilitator on e's chain whose JSON-RPC goes through
// an observer.
func (e *env) observed(t *testing.T, mod func(*onchain.Config)) (*onchain.Facilitator, *observer) {
	t.Helper()
	o := &observer{calls: map[string]int{}}
	rc, err := rpc.DialOptions(context.Background(), e.chain.URL, rpc.WithHTTPClient(&http.Client{Transport: o}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rc.Close)
	f := e.facilitator(t, func(c *onchain.Config) {
		c.Client = rc
		if mod != nil {
			mod(c)
		}
	})
	return f, o
}

// stillWaiting fails the test if done already holds an answer.
func stillWaiting(t *testing.T, done <-chan x402.SettleResponse, when string) {
	t.Helper()
	select {
	case sr := <-done:
		t.Fatalf("%s: the settlement answered %+v", when, sr)
	default:
	}
}

// settleAsync runs f.Settle with ctx in the background; the channel
// receives its answer (an error in ErrorMessage).
func settleAsync(ctx context.Context, f *onchain.Facilitator, payload x402.PaymentPayload, req x402.PaymentRequirements) <-chan x402.SettleResponse {
	done := make(chan x402.SettleResponse, 1)
	go func() {
		sr, err := f.Settle(ctx, payload, req)
		if err != nil {
			sr.ErrorMessage = err.Error()
		}
		done <- sr
	}()
	return done
}

// minedSettlement waits until the relayer's transaction with nonce n is
// mined and returns its receipt. The node may answer the account's new
// nonce a moment before the block that holds the transaction: the blocks
// are searched again until it is found.
func minedSettlement(t *testing.T, e *env, n uint64) *types.Receipt {
	t.Helper()
	ctx := context.Background()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if mined, err := e.chain.Client.NonceAt(ctx, e.relayer, nil); err != nil {
			t.Fatal(err)
		} else if mined > n {
			if h, ok := relayerTransaction(t, e, n); ok {
				return e.chain.WaitReceipt(t, h)
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the relayer's transaction %d was not mined", n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// relayerTransaction finds the relayer's transaction with nonce n in the
// blocks, newest first (the relayer's only transactions are settlements).
func relayerTransaction(t *testing.T, e *env, n uint64) (common.Hash, bool) {
	t.Helper()
	ctx := context.Background()
	head, err := e.chain.Client.BlockNumber(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for b := int64(head); b >= 0; b-- {
		var block struct {
			Transactions []common.Hash `json:"transactions"`
		}
		if err := e.chain.RPC.CallContext(ctx, &block, "eth_getBlockByNumber", hexutil.EncodeBig(big.NewInt(b)), false); err != nil {
			t.Fatal(err)
		}
		for _, h := range block.Transactions {
			tx, _, err := e.chain.Client.TransactionByHash(ctx, h)
			if err != nil {
				t.Fatal(err)
			}
			from, err := types.Sender(types.LatestSignerForChainID(tx.ChainId()), tx)
			if err == nil && from == e.relayer && tx.Nonce() == n {
				return h, true
			}
		}
	}
	return common.Hash{}, false
}

// TestSettlementAwaitsConfirmations: with 3 confirmations, a settlement
// mined in block N is not reported while the head is N or N+1, even after
// the facilitator has read its receipt and the head (nor by another
// instance the payment is presented to, nor by its status query); it is
// reported, with its transaction, once block N+2 exists.
func TestSettlementAwaitsConfirmations(t *testing.T) {
	e := newEnv(t, anviltest.Options{})
	f, obs := e.observed(t, func(c *onchain.Config) { c.Confirmations = 3 })
	ctx := context.Background()
	req := requirements(t, "0.02")
	payload, p := pay(t, e.payerKey, req, time.Now())
	done := settleAsync(context.Background(), f, payload, req)

	rcpt := minedSettlement(t, e, 0) // automine: mined when sent
	n := rcpt.BlockNumber.Uint64()
	// Two reads of the head after the receipt exists: the first (head N)
	// was answered and the facilitator went on waiting.
	obs.waitCalls(t, "eth_blockNumber", obs.count("eth_blockNumber")+2)
	stillWaiting(t, done, "1 confirmation")
	// Another instance, presented the payment, finds it mined and answers
	// it pending, not settled.
	other := e.facilitator(t, func(c *onchain.Config) { c.Confirmations = 3 })
	if r, err := other.Settle(ctx, payload, req); err != nil || r.Success || r.ErrorReason != onchain.ReasonSettlementPending || r.Transaction != rcpt.TxHash.Hex() {
		t.Fatalf("another instance at 1 confirmation: %+v %v; want pending on %s", r, err, rcpt.TxHash.Hex())
	}
	// Nor does its status query (the engine's recovery) call it proof yet.
	if st, err := other.Status(ctx, payload, req); !errors.Is(err, onchain.ErrNotConfirmed) {
		t.Fatalf("status at 1 confirmation: %+v %v; want %v", st, err, onchain.ErrNotConfirmed)
	}

	e.chain.Mine(t, 1)
	obs.waitCalls(t, "eth_blockNumber", obs.count("eth_blockNumber")+2)
	if head, _ := e.chain.Client.BlockNumber(ctx); head != n+1 {
		t.Fatalf("head %d, want %d", head, n+1)
	}
	stillWaiting(t, done, "2 confirmations")
	if f.Pending() != 1 {
		t.Fatalf("%d pending while awaiting confirmations, want 1", f.Pending())
	}

	e.chain.Mine(t, 1)
	var sr x402.SettleResponse
	select {
	case sr = <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("no answer after 3 confirmations")
	}
	if sr.Transaction != rcpt.TxHash.Hex() {
		t.Fatalf("settled by %s, want %s", sr.Transaction, rcpt.TxHash.Hex())
	}
	checkSettled(t, e, sr, p, req)
	if f.Pending() != 0 {
		t.Fatalf("%d pending after the settlement", f.Pending())
	}
	if r, err := other.Settle(ctx, payload, req); err != nil || !r.Success || r.Transaction != rcpt.TxHash.Hex() {
		t.Fatalf("another instance at 3 confirmations: %+v %v; want settled by %s", r, err, rcpt.TxHash.Hex())
	}
	if st, err := other.Status(ctx, payload, req); err != nil || !st.Used || st.Transaction != rcpt.TxHash.Hex() {
		t.Fatalf("status at 3 confirmations: %+v %v; want used by %s", st, err, rcpt.TxHash.Hex())
	}
}

// TestReorganisedSettlementIsSentAgain: a settlement whose block is
// reorganised away (evm_revert) before its 3 confirmations is not
// reported on the strength of the vanished receipt: the transaction is
// broadcast again, mined in another block, and reported once that block
// has its confirmations; the payer pays once.
func TestReorganisedSettlementIsSentAgain(t *testing.T) {
	e := newEnv(t, anviltest.Options{})
	f, obs := e.observed(t, func(c *onchain.Config) { c.Confirmations = 3; c.ResendAfter = 200 * time.Millisecond })
	ctx := context.Background()
	req := requirements(t, "0.03")
	payload, p := pay(t, e.payerKey, req, time.Now())
	before := e.chain.TokenBalance(t, e.payer)
	var snap hexutil.Big
	if err := e.chain.RPC.CallContext(ctx, &snap, "evm_snapshot"); err != nil {
		t.Fatal(err)
	}
	done := settleAsync(context.Background(), f, payload, req)
	first := minedSettlement(t, e, 0)
	obs.waitCalls(t, "eth_blockNumber", obs.count("eth_blockNumber")+2)
	stillWaiting(t, done, "1 confirmation")

	// The block goes away; the chain grows past the confirmations the
	// first receipt needed, without the transaction.
	sends := obs.count("eth_sendRawTransaction")
	var reverted bool
	if err := e.chain.RPC.CallContext(ctx, &reverted, "evm_revert", &snap); err != nil || !reverted {
		t.Fatalf("evm_revert: %v %v", reverted, err)
	}
	if _, err := e.chain.Client.TransactionReceipt(ctx, first.TxHash); !errors.Is(err, ethereum.NotFound) {
		t.Fatalf("the receipt survived the reorganisation: %v", err)
	}
	if e.chain.AuthorizationState(t, e.payer, nonceOf(t, p)) {
		t.Fatal("the authorization is still used after the reorganisation")
	}
	e.chain.Mine(t, 3)
	if h, err := e.chain.Client.HeaderByNumber(ctx, first.BlockNumber); err != nil || h.Hash() == first.BlockHash {
		t.Fatalf("block %d was not replaced (%v)", first.BlockNumber, err)
	}
	stillWaiting(t, done, "after the reorganisation")

	// The facilitator broadcasts it again; automine mines it.
	obs.waitCalls(t, "eth_sendRawTransaction", sends+1)
	second := minedSettlement(t, e, 0)
	if second.TxHash != first.TxHash || second.BlockHash == first.BlockHash {
		t.Fatalf("mined again as %s in %s; want %s in another block than %s", second.TxHash, second.BlockHash, first.TxHash, first.BlockHash)
	}
	obs.waitCalls(t, "eth_blockNumber", obs.count("eth_blockNumber")+2)
	stillWaiting(t, done, "1 confirmation of the new block")
	e.chain.Mine(t, 2)
	var sr x402.SettleResponse
	select {
	case sr = <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("no answer after the new block's confirmations")
	}
	rcpt := checkSettled(t, e, sr, p, req)
	if rcpt.BlockHash != second.BlockHash {
		t.Fatalf("reported in block %s, want %s", rcpt.BlockHash, second.BlockHash)
	}
	paid := new(big.Int).Sub(before, e.chain.TokenBalance(t, e.payer))
	if paid.Cmp(amount(t, req)) != 0 {
		t.Fatalf("the payer paid %s, want %s once", paid, req.Amount)
	}
}

// TestAbandonedSettlementIsStillFollowed: a settlement whose caller
// stopped waiting (settlement_pending) is still followed: when the node
// drops its transaction, the facilitator broadcasts it again; presenting
// the payment again meanwhile awaits that transaction instead of sending
// another; once mined, both answers are the one transaction and the
// relayer sent exactly one.
func TestAbandonedSettlementIsStillFollowed(t *testing.T) {
	e := newEnv(t, anviltest.Options{})
	f, obs := e.observed(t, func(c *onchain.Config) { c.ResendAfter = 500 * time.Millisecond })
	req := requirements(t, "0.01")
	payload, p := pay(t, e.payerKey, req, time.Now())
	e.chain.SetAutomine(t, false)

	ctx, cancel := context.WithCancel(context.Background())
	abandoned := settleAsync(ctx, f, payload, req)
	waitSent(t, f) // in the pool: automine is off
	cancel()
	var sr x402.SettleResponse
	select {
	case sr = <-abandoned:
	case <-time.After(30 * time.Second):
		t.Fatal("the abandoned settlement did not answer")
	}
	if sr.Success || sr.ErrorReason != onchain.ReasonSettlementPending || len(sr.Transaction) != 66 {
		t.Fatalf("abandoned settlement: %+v; want %s with its transaction", sr, onchain.ReasonSettlementPending)
	}

	// The node drops it; nobody waits for it any more.
	sends := obs.count("eth_sendRawTransaction")
	if err := e.chain.RPC.CallContext(context.Background(), nil, "anvil_dropAllTransactions"); err != nil {
		t.Fatal(err)
	}
	if n, _ := e.chain.Client.PendingNonceAt(context.Background(), e.relayer); n != 0 {
		t.Fatalf("the pool still holds the relayer's transaction (pending nonce %d)", n)
	}
	obs.waitCalls(t, "eth_sendRawTransaction", sends+1)
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(2 * time.Millisecond) {
		if n, _ := e.chain.Client.PendingNonceAt(context.Background(), e.relayer); n == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the dropped transaction is not back in the pool")
		}
	}
	// Back in the pool: the same transaction (or, on a slow machine, its
	// replacement with higher fees: the same nonce and call).
	if again := pooled(t, e, 0); again.To() == nil || *again.To() != anviltest.USDC {
		t.Fatalf("broadcast again: %s is not a call of the token", again.Hash())
	}
	if f.Pending() != 1 {
		t.Fatalf("%d pending, want the followed transaction", f.Pending())
	}

	// Presented again before it is mined: it joins the transaction. With
	// a context already ended, the answer is that transaction, pending,
	// and not one call reached the node.
	reads := func() int { return obs.count("eth_call") + obs.count("eth_estimateGas") + obs.count("eth_getBalance") }
	calls := reads()
	ended, end := context.WithCancel(context.Background())
	end()
	if r, err := f.Settle(ended, payload, req); err != nil || r.ErrorReason != onchain.ReasonSettlementPending || r.Transaction != sr.Transaction {
		t.Fatalf("presented again with an ended context: %+v %v; want pending on %s", r, err, sr.Transaction)
	}
	if n := reads(); n != calls {
		t.Fatalf("presenting it again read the chain %d times, want none", n-calls)
	}
	estimates := obs.count("eth_estimateGas")
	rejoined := settleAsync(context.Background(), f, payload, req)
	e.chain.Mine(t, 1)
	var got x402.SettleResponse
	select {
	case got = <-rejoined:
	case <-time.After(30 * time.Second):
		t.Fatal("the payment presented again did not answer")
	}
	rcpt := checkSettled(t, e, got, p, req)
	if tx, _, err := e.chain.Client.TransactionByHash(context.Background(), rcpt.TxHash); err != nil || tx.Nonce() != 0 {
		t.Fatalf("settled by %s (%v); want the followed transaction, nonce 0", rcpt.TxHash, err)
	}
	if n := obs.count("eth_estimateGas"); n != estimates {
		t.Fatalf("presenting it again simulated it %d times", n-estimates)
	}
	if n, _ := e.chain.Client.PendingNonceAt(context.Background(), e.relayer); n != 1 {
		t.Fatalf("the relayer sent %d transactions, want 1", n)
	}
	if f.Pending() != 0 {
		t.Fatalf("%d pending after the transaction was mined", f.Pending())
	}
}

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

// settleAsync runs f.Settle in the background; the channel receives its
// answer.
func settleAsync(f *onchain.Facilitator, payload x402.PaymentPayload, req x402.PaymentRequirements) <-chan x402.SettleResponse {
	done := make(chan x402.SettleResponse, 1)
	go func() {
		sr, err := f.Settle(context.Background(), payload, req)
		if err != nil {
			sr.ErrorMessage = err.Error()
		}
		done <- sr
	}()
	return done
}

// minedSettlement waits until the relayer's transaction with nonce n is
// mined and returns its receipt.
func minedSettlement(t *testing.T, e *env, n uint64) *types.Receipt {
	t.Helper()
	ctx := context.Background()
	deadline := time.Now().Add(30 * time.Second)
	for {
		mined, err := e.chain.Client.NonceAt(ctx, e.relayer, nil)
		if err != nil {
			t.Fatal(err)
		}
		if mined > n {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the relayer's transaction %d was not mined", n)
		}
		time.Sleep(5 * time.Millisecond)
	}
	// The relayer's only transactions are settlements: find nonce n's in
	// the blocks, newest first.
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
				return e.chain.WaitReceipt(t, h)
			}
		}
	}
	t.Fatalf("no transaction of the relayer with nonce %d", n)
	return nil
}

// TestSettlementAwaitsConfirmations: with 3 confirmations, a settlement
// mined in block N is not reported while the head is N or N+1, even after
// the facilitator has read its receipt and the head; it is reported, with
// its transaction, once block N+2 exists.
func TestSettlementAwaitsConfirmations(t *testing.T) {
	e := newEnv(t, anviltest.Options{})
	f, obs := e.observed(t, func(c *onchain.Config) { c.Confirmations = 3 })
	ctx := context.Background()
	req := requirements(t, "0.02")
	payload, p := pay(t, e.payerKey, req, time.Now())
	done := settleAsync(f, payload, req)

	rcpt := minedSettlement(t, e, 0) // automine: mined when sent
	n := rcpt.BlockNumber.Uint64()
	// Two reads of the head after the receipt exists: the first (head N)
	// was answered and the facilitator went on waiting.
	obs.waitCalls(t, "eth_blockNumber", obs.count("eth_blockNumber")+2)
	stillWaiting(t, done, "1 confirmation")

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
	done := settleAsync(f, payload, req)
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

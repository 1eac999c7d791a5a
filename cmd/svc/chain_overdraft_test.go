package main

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/big"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"

	"github.com/seed1284c1d2/svc/internal/anviltest"
	"github.com/seed1284c1d2/svc/x402"
	"github.com/seed1284c1d2/svc/x402/client"
	"github.com/seed1284c1d2/svc/x402/facilitator/onchain"
)

// The overdraft attack: a payer holding 0.01 USDC signs 20 authorizations
// of 0.01 and presents them at once. Each passes the checks alone;
// together they overdraw. The relayer must send exactly one transaction,
// and none may revert.

// overdraftModes are the chains the attack runs on: automine, and a block
// every second (the settlements wait in the pool).
var overdraftModes = []struct {
	name string
	opts anviltest.Options
}{{"automine", anviltest.Options{}}, {"block time 1s", anviltest.Options{BlockTime: 1}}}

// poorPayer returns a payer holding exactly amount atomic USDC.
func (w *chainWorld) poorPayer(t *testing.T, amount int64) *client.Signer {
	t.Helper()
	key, addr := anviltest.NewKey(t)
	w.chain.Mint(t, addr, big.NewInt(amount))
	s, err := client.ParseSigner(hex.EncodeToString(crypto.FromECDSA(key)))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// relayerTransactions waits until the relayer's transactions are mined
// and counts them (the relayer's nonce), and those that reverted (their
// receipts). The blocks are searched until they hold them all: the node
// may answer a new nonce a moment before its block.
func (w *chainWorld) relayerTransactions(t *testing.T) (sent, reverted int) {
	t.Helper()
	ctx := context.Background()
	deadline := time.Now().Add(30 * time.Second)
	for {
		pending, err1 := w.chain.Client.PendingNonceAt(ctx, w.relayer)
		mined, err2 := w.chain.Client.NonceAt(ctx, w.relayer, nil)
		if err1 != nil || err2 != nil {
			t.Fatal(err1, err2)
		}
		if pending == mined {
			if found, reverted := w.relayerReceipts(t); uint64(found) == mined {
				return found, reverted
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the relayer's transactions are not all mined: nonce %d, pending %d", mined, pending)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// relayerReceipts counts the relayer's transactions in the blocks, and
// those that reverted.
func (w *chainWorld) relayerReceipts(t *testing.T) (found, reverted int) {
	t.Helper()
	ctx := context.Background()
	head, err := w.chain.Client.BlockNumber(ctx)
	if err != nil {
		t.Fatal(err)
	}
	signer := types.LatestSignerForChainID(big.NewInt(anviltest.ChainID))
	for n := uint64(0); n <= head; n++ {
		b, err := w.chain.Client.BlockByNumber(ctx, new(big.Int).SetUint64(n))
		if err != nil {
			t.Fatal(err)
		}
		for _, tx := range b.Transactions() {
			if from, err := types.Sender(signer, tx); err != nil || from != w.relayer {
				continue
			}
			found++
			if r, err := w.chain.Client.TransactionReceipt(ctx, tx.Hash()); err != nil {
				t.Fatal(err)
			} else if r.Status != types.ReceiptStatusSuccessful {
				reverted++
			}
		}
	}
	return found, reverted
}

// concurrently runs do(i) for i in [0, n) at once and returns the
// answers; a transport error fails the test.
func concurrently(t *testing.T, n int, do func(ctx context.Context, i int) (clusterAnswer, error)) []clusterAnswer {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	answers := make([]clusterAnswer, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			answers[i], errs[i] = do(ctx, i)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
	}
	return answers
}

// TestChainFacilitatorOverdraft: the attack against `svc facilitator`
// over HTTP: one settlement succeeds, 19 are refused for the balance, one
// transaction, none reverted; presenting them again sends nothing.
func TestChainFacilitatorOverdraft(t *testing.T) {
	bin := clusterBinary(t)
	for _, mode := range overdraftModes {
		t.Run(mode.name, func(t *testing.T) {
			w := startChainWorld(t, bin, mode.opts)
			const token = "chain-test-token-0123456789"
			fac := w.svc(t, "svc facilitator", []string{"CHAIN_TEST_RELAYER_KEY=" + keyHex(w.relayerKey), "CHAIN_TEST_TOKEN=" + token},
				"facilitator", "--addr", "127.0.0.1:0", "--rpc-url", w.chain.URL, "--relayer-key-env", "CHAIN_TEST_RELAYER_KEY", "--token-env", "CHAIN_TEST_TOKEN")
			payer := w.poorPayer(t, 10_000)
			bodies := make([]string, 20)
			for i := range bodies {
				bodies[i] = overdraftSettleBody(t, payer)
			}
			c := clusterHTTP(t)
			settle := func(ctx context.Context, i int) (clusterAnswer, error) {
				req, err := http.NewRequestWithContext(ctx, http.MethodPost, fac.base+"/settle", strings.NewReader(bodies[i]))
				if err != nil {
					return clusterAnswer{}, err
				}
				req.Header.Set("Authorization", "Bearer "+token)
				req.Header.Set("Content-Type", "application/json")
				resp, err := c.Do(req)
				if err != nil {
					return clusterAnswer{}, err
				}
				defer resp.Body.Close()
				var a clusterAnswer
				a.status, a.header = resp.StatusCode, resp.Header
				var sr x402.SettleResponse
				if err := json.NewDecoder(resp.Body).Decode(&sr); err != nil {
					return a, fmt.Errorf("decode /settle: %w", err)
				}
				a.body, _ = json.Marshal(sr)
				return a, nil
			}
			check := func(round string, answers []clusterAnswer, wantSettled int) {
				t.Helper()
				settled := 0
				for i, a := range answers {
					var sr x402.SettleResponse
					_ = json.Unmarshal(a.body, &sr)
					switch {
					case a.status != http.StatusOK:
						t.Errorf("%s %d: status %d %s", round, i, a.status, a.body)
					case sr.Success:
						settled++
					case sr.ErrorReason != onchain.ReasonInsufficientBalance || sr.Transaction != "":
						t.Errorf("%s %d: %s, want refused for the balance without a transaction", round, i, a.body)
					}
				}
				if settled != wantSettled {
					t.Errorf("%s: %d settled, want %d", round, settled, wantSettled)
				}
			}
			check("settlement", concurrently(t, len(bodies), settle), 1)
			if sent, reverted := w.relayerTransactions(t); sent != 1 || reverted != 0 {
				t.Fatalf("the relayer sent %d transactions, %d reverted; want 1 and 0", sent, reverted)
			}
			// The same authorizations again (a server retrying): the one
			// settled is answered with its settlement, the others refused.
			check("retry", concurrently(t, len(bodies), settle), 1)
			if sent, reverted := w.relayerTransactions(t); sent != 1 || reverted != 0 {
				t.Fatalf("after the retries the relayer sent %d transactions, %d reverted; want 1 and 0", sent, reverted)
			}
		})
	}
}

// overdraftSettleBody is a v2 /settle body of a fresh payment of 0.01
// USDC by s to chainPayTo.
func overdraftSettleBody(t *testing.T, s *client.Signer) string {
	t.Helper()
	req, err := x402.Route{Price: "0.01", Network: x402.NetworkBase, PayTo: chainPayTo.Hex()}.Requirements()
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

// TestChainServeOverdraft: the attack through `svc serve --settle
// onchain`: 20 concurrent paid calls from a wallet holding one call's
// price. One call is answered 200 with its settlement, the others 402
// refused for the balance; one transaction, none reverted; presenting the
// same payments again (released authorizations have attempts left) sends
// nothing more. The ledger holds the one payment.
func TestChainServeOverdraft(t *testing.T) {
	bin := clusterBinary(t)
	for _, mode := range overdraftModes {
		t.Run(mode.name, func(t *testing.T) {
			w := startChainWorld(t, bin, mode.opts)
			db := filepath.Join(t.TempDir(), "svc.db")
			srv := w.serveOnchain(t, db, nil)
			payer := w.poorPayer(t, 10_000)
			c := clusterHTTP(t)
			offer := clusterOffer(t, c, srv.base)
			headers, bodies := make([]string, 20), make([]string, 20)
			for i := range headers {
				headers[i], _ = clusterMustSign(t, payer, offer)
				bodies[i] = clusterBody(clusterAddress())
			}
			call := func(ctx context.Context, i int) (clusterAnswer, error) {
				return clusterDo(ctx, c, http.MethodPost, srv.base+clusterToolPath, bodies[i], headers[i])
			}
			paid := 0
			for i, a := range concurrently(t, len(headers), call) {
				sr, err := a.settlement()
				switch {
				case a.status == http.StatusOK && err == nil && sr.Success:
					paid++
				case a.status != http.StatusPaymentRequired:
					t.Errorf("call %d: %s, want 200 or 402", i, a)
				case err == nil && (sr.ErrorReason != onchain.ReasonInsufficientBalance || sr.Transaction != ""):
					t.Errorf("call %d: settlement %+v, want refused for the balance", i, sr)
				}
			}
			if paid != 1 {
				t.Errorf("%d calls paid, want 1", paid)
			}
			if sent, reverted := w.relayerTransactions(t); sent != 1 || reverted != 0 {
				t.Fatalf("the relayer sent %d transactions, %d reverted; want 1 and 0", sent, reverted)
			}
			for i, a := range concurrently(t, len(headers), call) {
				if a.status >= 500 {
					t.Errorf("retry %d: %s", i, a)
				}
			}
			if sent, reverted := w.relayerTransactions(t); sent != 1 || reverted != 0 {
				t.Fatalf("after the retries the relayer sent %d transactions, %d reverted; want 1 and 0", sent, reverted)
			}
			if l := clusterSQLiteLedger(t, db); len(l.rows) != 1 {
				t.Fatalf("ledger %+v, want one payment", l.rows)
			}
		})
	}
}

// TestChainServeInstancesShareThePool: two `svc serve --settle onchain`
// instances with one relayer see each other's settlements in the node's
// pool: while the first instance's settlement waits to be mined, a second
// payment from the same wallet (holding one call's price) to the other
// instance is refused for the balance (402) without a transaction.
func TestChainServeInstancesShareThePool(t *testing.T) {
	w := newChainWorld(t, anviltest.Options{})
	a := w.serveOnchain(t, filepath.Join(t.TempDir(), "a.db"), nil)
	b := w.serveOnchain(t, filepath.Join(t.TempDir(), "b.db"), nil)
	payer := w.poorPayer(t, 10_000)
	c := clusterHTTP(t)
	first, _ := clusterMustSign(t, payer, clusterOffer(t, c, a.base))
	second, _ := clusterMustSign(t, payer, clusterOffer(t, c, b.base))
	w.chain.SetAutomine(t, false)
	done := make(chan clusterAnswer, 1)
	go func() {
		ans, err := clusterDo(context.Background(), c, http.MethodPost, a.base+clusterToolPath, clusterBody(clusterAddress()), first)
		if err != nil {
			ans.body = []byte(err.Error())
		}
		done <- ans
	}()
	ctx := context.Background()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if n, err := w.chain.Client.PendingNonceAt(ctx, w.relayer); err == nil && n == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the first instance never sent its settlement")
		}
		time.Sleep(10 * time.Millisecond)
	}
	ans := clusterMust(t, c, http.MethodPost, b.base+clusterToolPath, clusterBody(clusterAddress()), second)
	if sr, err := ans.settlement(); ans.status != http.StatusPaymentRequired || err != nil || sr.ErrorReason != onchain.ReasonInsufficientBalance {
		t.Fatalf("the second payment on the other instance: %s (settlement %+v, %v)", ans, sr, err)
	}
	if n, _ := w.chain.Client.PendingNonceAt(ctx, w.relayer); n != 1 {
		t.Fatalf("relayer pending nonce %d, want 1", n)
	}
	w.chain.Mine(t, 1)
	if ans := <-done; ans.status != http.StatusOK {
		t.Fatalf("the first payment: %s", ans)
	}
	if sent, reverted := w.relayerTransactions(t); sent != 1 || reverted != 0 {
		t.Fatalf("the relayer sent %d transactions, %d reverted; want 1 and 0", sent, reverted)
	}
}

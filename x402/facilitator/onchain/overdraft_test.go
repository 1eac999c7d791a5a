package onchain_test

import (
	"context"
	"crypto/ecdsa"
	"math/big"
	"sync"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"

	"github.com/seed1284c1d2/svc/internal/anviltest"
	"github.com/seed1284c1d2/svc/x402"
	"github.com/seed1284c1d2/svc/x402/facilitator/onchain"
)

// settleAll settles every payload at once and returns the answers.
func settleAll(t *testing.T, f *onchain.Facilitator, payloads []x402.PaymentPayload, req x402.PaymentRequirements) []x402.SettleResponse {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	results := make([]x402.SettleResponse, len(payloads))
	errs := make([]error, len(payloads))
	var wg sync.WaitGroup
	for i := range payloads {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i], errs[i] = f.Settle(ctx, payloads[i], req)
		}()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("settlement %d: %v", i, err)
		}
	}
	return results
}

// relayerSent waits until every transaction the relayer sent since nonce
// n0 is mined and returns how many there are (the relayer's nonce) and how
// many reverted (their receipts). The blocks are searched until they hold
// them all: the node may answer a new nonce a moment before its block.
func relayerSent(t *testing.T, e *env, n0 uint64) (sent, reverted int) {
	t.Helper()
	ctx := context.Background()
	deadline := time.Now().Add(30 * time.Second)
	for {
		pending, err1 := e.chain.Client.PendingNonceAt(ctx, e.relayer)
		mined, err2 := e.chain.Client.NonceAt(ctx, e.relayer, nil)
		if err1 != nil || err2 != nil {
			t.Fatal(err1, err2)
		}
		if pending == mined {
			if found, reverted := relayerReceipts(t, e.chain, e.relayer, n0); uint64(found) == mined-n0 {
				return found, reverted
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the relayer's transactions are not all mined: nonce %d, pending %d", mined, pending)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// relayerReceipts counts the transactions of relayer from nonce n0 in
// c's blocks, and those that reverted.
func relayerReceipts(t *testing.T, c *anviltest.Chain, relayer common.Address, n0 uint64) (found, reverted int) {
	t.Helper()
	ctx := context.Background()
	head, err := c.Client.BlockNumber(ctx)
	if err != nil {
		t.Fatal(err)
	}
	signer := types.LatestSignerForChainID(big.NewInt(anviltest.ChainID))
	for n := uint64(0); n <= head; n++ {
		b, err := c.Client.BlockByNumber(ctx, new(big.Int).SetUint64(n))
		if err != nil {
			t.Fatal(err)
		}
		for _, tx := range b.Transactions() {
			if from, err := types.Sender(signer, tx); err != nil || from != relayer || tx.Nonce() < n0 {
				continue
			}
			found++
			r, err := c.Client.TransactionReceipt(ctx, tx.Hash())
			if err != nil {
				t.Fatal(err)
			}
			if r.Status != types.ReceiptStatusSuccessful {
				reverted++
			}
		}
	}
	return found, reverted
}

// TestOverdraftSendsOneTransaction: a payer holding 0.01 USDC presents 20
// authorizations of 0.01 at once. Each alone passes every check; together
// they overdraw. Exactly one is settled, the 19 others are refused for
// the balance before any gas: one transaction, none reverted — with
// automine and with a block every second (settlements in the pool).
func TestOverdraftSendsOneTransaction(t *testing.T) {
	for _, opts := range []anviltest.Options{{}, {BlockTime: 1}} {
		t.Run(map[int]string{0: "automine", 1: "block time 1s"}[opts.BlockTime], func(t *testing.T) {
			e := newEnv(t, opts)
			f := e.facilitator(t, nil)
			req := requirements(t, "0.01")
			key, addr := anviltest.NewKey(t)
			e.chain.Mint(t, addr, amount(t, req))
			n0, err := e.chain.Client.NonceAt(context.Background(), e.relayer, nil)
			if err != nil {
				t.Fatal(err)
			}
			payloads := make([]x402.PaymentPayload, 20)
			for i := range payloads {
				payloads[i], _ = pay(t, key, req, time.Now())
			}
			var settled int
			for i, r := range settleAll(t, f, payloads, req) {
				switch {
				case r.Success:
					settled++
				case r.ErrorReason != onchain.ReasonInsufficientBalance || r.Transaction != "":
					t.Errorf("settlement %d: %+v, want refused for the balance without a transaction", i, r)
				}
			}
			if settled != 1 {
				t.Errorf("%d settled, want 1", settled)
			}
			if sent, reverted := relayerSent(t, e, n0); sent != 1 || reverted != 0 {
				t.Errorf("the relayer sent %d transactions, %d reverted; want 1 and 0", sent, reverted)
			}
			if b := e.chain.TokenBalance(t, addr); b.Sign() != 0 {
				t.Errorf("the payer still holds %s", b)
			}
			if f.Pending() != 0 {
				t.Errorf("%d pending", f.Pending())
			}
			// Presented again (an engine's retry of a released
			// authorization): still refused before gas.
			for i, r := range settleAll(t, f, payloads[:5], req) {
				if !r.Success && (r.ErrorReason != onchain.ReasonInsufficientBalance || r.Transaction != "") {
					t.Errorf("retry %d: %+v", i, r)
				}
			}
			if sent, _ := relayerSent(t, e, n0); sent != 1 {
				t.Errorf("the retries sent %d more transactions", sent-1)
			}
		})
	}
}

// TestPartlyFundedPayerSettlesWhatItHolds: a payer holding 3 payments'
// worth presents 10 at once: 3 settle, 7 are refused, 3 transactions.
func TestPartlyFundedPayerSettlesWhatItHolds(t *testing.T) {
	e := newEnv(t, anviltest.Options{BlockTime: 1})
	f := e.facilitator(t, nil)
	req := requirements(t, "0.01")
	key, addr := anviltest.NewKey(t)
	e.chain.Mint(t, addr, new(big.Int).Mul(amount(t, req), big.NewInt(3)))
	payloads := make([]x402.PaymentPayload, 10)
	for i := range payloads {
		payloads[i], _ = pay(t, key, req, time.Now())
	}
	var settled int
	for _, r := range settleAll(t, f, payloads, req) {
		if r.Success {
			settled++
		}
	}
	if settled != 3 {
		t.Errorf("%d settled, want 3", settled)
	}
	if sent, reverted := relayerSent(t, e, 0); sent != 3 || reverted != 0 {
		t.Errorf("the relayer sent %d transactions, %d reverted; want 3 and 0", sent, reverted)
	}
}

// TestHonestWalletsSettleConcurrently: 200 funded wallets, one payment
// each, settled at once: all settle (the admission lock is per payer).
func TestHonestWalletsSettleConcurrently(t *testing.T) {
	const n = 200
	e := newEnv(t, anviltest.Options{})
	f := e.facilitator(t, nil)
	req := requirements(t, "0.01")
	payloads := make([]x402.PaymentPayload, n)
	for i := range payloads {
		key, addr := anviltest.NewKey(t)
		e.chain.Mint(t, addr, amount(t, req))
		payloads[i], _ = pay(t, key, req, time.Now())
	}
	start := time.Now()
	results := settleAll(t, f, payloads, req)
	t.Logf("%d settlements from %d wallets in %s", n, n, time.Since(start).Round(time.Millisecond))
	for i, r := range results {
		if !r.Success {
			t.Fatalf("settlement %d: %+v", i, r)
		}
	}
	if sent, reverted := relayerSent(t, e, 0); sent != n || reverted != 0 {
		t.Errorf("the relayer sent %d transactions, %d reverted; want %d and 0", sent, reverted, n)
	}
}

// TestPoolCountsAcrossInstances: two facilitators sharing one relayer
// (two svc instances) see each other's settlements waiting in the node's
// pool: a second payment the payer's balance cannot cover with the first
// is refused before gas, and the same authorization presented to the
// other instance is answered pending, without a second transaction.
func TestPoolCountsAcrossInstances(t *testing.T) {
	e := newEnv(t, anviltest.Options{})
	a, b := e.facilitator(t, nil), e.facilitator(t, nil)
	ctx := context.Background()
	req := requirements(t, "0.01")
	key, addr := anviltest.NewKey(t)
	e.chain.Mint(t, addr, amount(t, req))
	first, p := pay(t, key, req, time.Now())
	second, _ := pay(t, key, req, time.Now())
	e.chain.SetAutomine(t, false)
	done := settleInBackground(t, a, first, req)
	if r, err := b.Settle(ctx, second, req); err != nil || r.Success || r.ErrorReason != onchain.ReasonInsufficientBalance || r.Transaction != "" {
		t.Fatalf("another payment while the first is in the pool: %+v %v", r, err)
	}
	if r, err := b.Settle(ctx, first, req); err != nil || r.Success || r.ErrorReason != onchain.ReasonSettlementPending || r.Transaction != "" {
		t.Fatalf("the same payment on the other instance: %+v %v", r, err)
	}
	if n, _ := e.chain.Client.PendingNonceAt(ctx, e.relayer); n != 1 {
		t.Fatalf("relayer pending nonce %d, want 1 (one transaction)", n)
	}
	e.chain.Mine(t, 1)
	checkSettled(t, e, <-done, p, req)
	if sent, reverted := relayerSent(t, e, 0); sent != 1 || reverted != 0 {
		t.Errorf("the relayer sent %d transactions, %d reverted; want 1 and 0", sent, reverted)
	}
}

// TestRevertCountsAgainstThePayer: a settlement that reverts for a reason
// no check could foresee (the payer moves its balance away in the same
// block, ahead of the settlement) counts against the payer: with a budget
// of one revert, its next payment is refused before gas, by Verify and
// Settle, while other payers settle.
func TestRevertCountsAgainstThePayer(t *testing.T) {
	e := newEnv(t, anviltest.Options{})
	f := e.facilitator(t, func(c *onchain.Config) { c.MaxPayerReverts = 1 })
	ctx := context.Background()
	req := requirements(t, "0.01")
	key, addr := anviltest.NewKey(t)
	e.chain.Mint(t, addr, amount(t, req))
	e.chain.SetBalance(t, addr, anviltest.Ether(1))
	payload, _ := pay(t, key, req, time.Now())
	e.chain.SetAutomine(t, false)
	done := settleInBackground(t, f, payload, req)
	frontRun(t, e.chain, key, amount(t, req))
	e.chain.Mine(t, 1)
	if r := <-done; r.Success || r.ErrorReason != onchain.ReasonTransactionFailed {
		t.Fatalf("the front-run settlement: %+v", r)
	}
	if sent, reverted := relayerSent(t, e, 0); sent != 1 || reverted != 1 {
		t.Fatalf("the relayer sent %d transactions, %d reverted; want 1 and 1", sent, reverted)
	}
	e.chain.SetAutomine(t, true)
	e.chain.Mint(t, addr, amount(t, req))
	again, _ := pay(t, key, req, time.Now())
	if vr, err := f.Verify(ctx, again, req); err != nil || vr.IsValid || vr.InvalidReason != onchain.ReasonRevertBudgetExhausted {
		t.Fatalf("verify after the revert: %+v %v", vr, err)
	}
	for _, p := range []x402.PaymentPayload{again, payload} {
		if r, err := f.Settle(ctx, p, req); err != nil || r.Success || r.ErrorReason != onchain.ReasonRevertBudgetExhausted {
			t.Fatalf("settle after the revert: %+v %v", r, err)
		}
	}
	if sent, _ := relayerSent(t, e, 0); sent != 1 {
		t.Fatalf("the payer over its budget made the relayer send %d more transactions", sent-1)
	}
	other, _ := pay(t, e.payerKey, req, time.Now())
	if r, err := f.Settle(ctx, other, req); err != nil || !r.Success {
		t.Fatalf("another payer: %+v %v", r, err)
	}
}

// frontRun sends value of key's tokens away with a high priority fee, so
// that it is mined ahead of the settlements in the pool.
func frontRun(t *testing.T, c *anviltest.Chain, key *ecdsa.PrivateKey, value *big.Int) {
	t.Helper()
	ctx := context.Background()
	data, err := c.ABI.Pack("transfer", common.HexToAddress("0x00000000000000000000000000000000000000bb"), value)
	if err != nil {
		t.Fatal(err)
	}
	nonce, err := c.Client.PendingNonceAt(ctx, addressOf(key))
	if err != nil {
		t.Fatal(err)
	}
	to := anviltest.USDC
	tip := big.NewInt(100_000_000_000)
	tx, err := types.SignNewTx(key, types.LatestSignerForChainID(big.NewInt(anviltest.ChainID)), &types.DynamicFeeTx{
		ChainID: big.NewInt(anviltest.ChainID), Nonce: nonce, GasTipCap: tip, GasFeeCap: new(big.Int).Mul(tip, big.NewInt(2)),
		Gas: 100_000, To: &to, Data: data,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Client.SendTransaction(ctx, tx); err != nil {
		t.Fatal(err)
	}
}

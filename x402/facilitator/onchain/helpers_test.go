package onchain_test

import (
	"context"
	"crypto/ecdsa"
	"encoding/json"
	"log/slog"
	"math/big"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"

	"github.com/seed1284c1d2/svc/internal/anviltest"
	"github.com/seed1284c1d2/svc/x402"
	"github.com/seed1284c1d2/svc/x402/exact"
	"github.com/seed1284c1d2/svc/x402/facilitator/onchain"
)

// payTo receives the test payments.
var payTo = common.HexToAddress("0x70997970C51812dc3A010C7d01b50e0d17dc79C8")

// env is a chain with a funded relayer and a payer holding 1,000 USDC.
type env struct {
	chain      *anviltest.Chain
	relayerKey *ecdsa.PrivateKey
	relayer    common.Address
	payerKey   *ecdsa.PrivateKey
	payer      common.Address
}

func newEnv(t testing.TB, opts anviltest.Options) *env {
	t.Helper()
	c := anviltest.Start(t, opts)
	e := &env{chain: c}
	e.relayerKey, e.relayer = anviltest.NewKey(t)
	e.payerKey, e.payer = anviltest.NewKey(t)
	c.SetBalance(t, e.relayer, anviltest.Ether(10))
	if !opts.NoMining {
		c.Mint(t, e.payer, big.NewInt(1_000_000_000))
	}
	return e
}

// facilitator builds an on-chain facilitator on e's chain.
func (e *env) facilitator(t testing.TB, mod func(*onchain.Config)) *onchain.Facilitator {
	t.Helper()
	cfg := onchain.Config{
		RPCURL:       e.chain.URL,
		Network:      x402.NetworkBase,
		RelayerKey:   e.relayerKey,
		PollInterval: 10 * time.Millisecond,
		Logger:       slog.New(slog.DiscardHandler),
	}
	if mod != nil {
		mod(&cfg)
	}
	f, err := onchain.New(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.Close)
	return f
}

// requirements returns the requirements of a route priced in atomic USDC.
func requirements(t testing.TB, price string) x402.PaymentRequirements {
	t.Helper()
	req, err := x402.Route{Price: price, Network: x402.NetworkBase, PayTo: payTo.Hex()}.Requirements()
	if err != nil {
		t.Fatal(err)
	}
	return req
}

// pay signs a payment of req by key, valid from now.
func pay(t testing.TB, key *ecdsa.PrivateKey, req x402.PaymentRequirements, now time.Time) (x402.PaymentPayload, exact.ExactEVMPayload) {
	t.Helper()
	p, err := exact.NewPayload(key, req, now, 0)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	return x402.PaymentPayload{X402Version: 2, Accepted: req, Payload: raw}, p
}

func nonceOf(t testing.TB, p exact.ExactEVMPayload) [32]byte {
	t.Helper()
	var n [32]byte
	copy(n[:], common.FromHex(p.Authorization.Nonce))
	return n
}

func amount(t testing.TB, req x402.PaymentRequirements) *big.Int {
	t.Helper()
	a, ok := new(big.Int).SetString(req.Amount, 10)
	if !ok {
		t.Fatalf("amount %q", req.Amount)
	}
	return a
}

func addressOf(k *ecdsa.PrivateKey) common.Address { return crypto.PubkeyToAddress(k.PublicKey) }

func mustJSON(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// transferAll sends value of key's tokens away (an ERC-20 transfer signed
// by key) and waits for it.
func transferAll(t testing.TB, c *anviltest.Chain, key *ecdsa.PrivateKey, value *big.Int) {
	t.Helper()
	ctx := context.Background()
	data, err := c.ABI.Pack("transfer", common.HexToAddress("0x00000000000000000000000000000000000000bb"), value)
	if err != nil {
		t.Fatal(err)
	}
	from := addressOf(key)
	nonce, err := c.Client.PendingNonceAt(ctx, from)
	if err != nil {
		t.Fatal(err)
	}
	head, err := c.Client.HeaderByNumber(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	to := anviltest.USDC
	tx, err := types.SignNewTx(key, types.LatestSignerForChainID(big.NewInt(anviltest.ChainID)), &types.DynamicFeeTx{
		ChainID: big.NewInt(anviltest.ChainID), Nonce: nonce, GasTipCap: big.NewInt(1), GasFeeCap: new(big.Int).Add(new(big.Int).Mul(head.BaseFee, big.NewInt(2)), big.NewInt(1)),
		Gas: 100_000, To: &to, Data: data,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Client.SendTransaction(ctx, tx); err != nil {
		t.Fatal(err)
	}
	if r := c.WaitReceipt(t, tx.Hash()); r.Status != types.ReceiptStatusSuccessful {
		t.Fatal("transfer reverted")
	}
}

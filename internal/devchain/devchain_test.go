package devchain

import (
	"context"
	"encoding/json"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/ethclient"
	"github.com/ethereum/go-ethereum/rpc"

	"github.com/seed1284c1d2/svc/internal/anviltest"
	"github.com/seed1284c1d2/svc/x402/batch"
)

func startChain(t *testing.T, cfg Config) (*Chain, *rpc.Client, *ethclient.Client) {
	t.Helper()
	if cfg.Addr == "" {
		cfg.Addr = "127.0.0.1:0"
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c, err := Start(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
	})
	r, err := rpc.DialContext(ctx, c.URL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Close)
	return c, r, ethclient.NewClient(r)
}

// The chain served over HTTP is Base's chain id with TestUSDC at Base
// USDC's address, a relayer with gas and a payer holding test USDC.
func TestStartServesBaseWithTestUSDC(t *testing.T) {
	c, _, ec := startChain(t, Config{})
	ctx := context.Background()
	if !strings.HasPrefix(c.URL(), "http://127.0.0.1:") {
		t.Fatalf("URL %q", c.URL())
	}
	id, err := ec.ChainID(ctx)
	if err != nil || id.Int64() != 8453 {
		t.Fatalf("chain id %v, %v", id, err)
	}
	code, err := ec.CodeAt(ctx, USDC, nil)
	if err != nil || len(code) == 0 {
		t.Fatalf("no code at USDC: %v", err)
	}
	a := c.Accounts()
	if bal, err := c.USDCBalance(ctx, a.Payer.Address); err != nil || bal.Int64() != DefaultPayerUSDC {
		t.Fatalf("payer USDC %v, %v", bal, err)
	}
	if bal, err := ec.BalanceAt(ctx, a.Relayer.Address, nil); err != nil || bal.Sign() <= 0 {
		t.Fatalf("relayer ETH %v, %v", bal, err)
	}
	if got := crypto.PubkeyToAddress(a.Payer.Key.PublicKey); got != a.Payer.Address {
		t.Fatalf("payer key of %s, address %s", got, a.Payer.Address)
	}
}

// Fund, directly and as devchain_fund over JSON-RPC, moves test USDC and
// ETH to an address.
func TestFund(t *testing.T) {
	c, r, ec := startChain(t, Config{PayerUSDC: big.NewInt(0)})
	ctx := context.Background()
	to := common.HexToAddress("0x00000000000000000000000000000000000000a1")
	if _, err := c.Fund(ctx, to, big.NewInt(5_000_000), big.NewInt(params1Ether)); err != nil {
		t.Fatal(err)
	}
	if bal, _ := c.USDCBalance(ctx, to); bal.Int64() != 5_000_000 {
		t.Fatalf("USDC %v after Fund", bal)
	}
	if bal, _ := ec.BalanceAt(ctx, to, nil); bal.Cmp(big.NewInt(params1Ether)) != 0 {
		t.Fatalf("ETH %v after Fund", bal)
	}
	var res FundResult
	if err := r.CallContext(ctx, &res, "devchain_fund", to, "2500000"); err != nil {
		t.Fatal(err)
	}
	if res.USDCBalance.ToInt().Int64() != 7_500_000 || len(res.Transactions) != 1 {
		t.Fatalf("devchain_fund: %+v", res)
	}
	if bal, _ := c.USDCBalance(ctx, c.Accounts().Payer.Address); bal.Sign() != 0 {
		t.Fatalf("payer holds %v with PayerUSDC 0", bal)
	}
	err := r.CallContext(ctx, &res, "devchain_fund", to, "-1")
	if err == nil || !strings.Contains(err.Error(), "non-negative integer") {
		t.Fatalf("negative amount: %v", err)
	}
	if _, err := c.Fund(ctx, common.Address{}, big.NewInt(1), nil); err == nil {
		t.Fatal("Fund of the zero address succeeded")
	}
}

const params1Ether = 1_000_000_000_000_000_000

// Advance, evm_increaseTime and devchain_advance move the latest block's
// timestamp by exactly the amount; evm_mine seals a block.
func TestClockAdvances(t *testing.T) {
	c, r, ec := startChain(t, Config{})
	ctx := context.Background()
	head := func() (uint64, uint64) {
		h, err := ec.HeaderByNumber(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		return h.Number.Uint64(), h.Time
	}
	_, t0 := head()
	ts, err := c.Advance(ctx, time.Hour)
	if err != nil || ts != t0+3600 {
		t.Fatalf("Advance: %d, %v; want %d", ts, err, t0+3600)
	}
	if _, t1 := head(); t1 != t0+3600 {
		t.Fatalf("head time %d, want %d", t1, t0+3600)
	}
	var adv hexutil.Uint64
	if err := r.CallContext(ctx, &adv, "evm_increaseTime", 90); err != nil || adv != 90 {
		t.Fatalf("evm_increaseTime: %d, %v", adv, err)
	}
	if _, t2 := head(); t2 != t0+3690 {
		t.Fatalf("head time %d after evm_increaseTime, want %d", t2, t0+3690)
	}
	var res AdvanceResult
	if err := r.CallContext(ctx, &res, "devchain_advance", "0x3c"); err != nil || uint64(res.Timestamp) != t0+3750 {
		t.Fatalf("devchain_advance: %+v, %v", res, err)
	}
	n0, _ := head()
	if err := r.CallContext(ctx, nil, "evm_mine"); err != nil {
		t.Fatal(err)
	}
	if n1, _ := head(); n1 != n0+1 {
		t.Fatalf("evm_mine: block %d, want %d", n1, n0+1)
	}
	if err := r.CallContext(ctx, &adv, "evm_increaseTime", 0); err == nil {
		t.Fatal("evm_increaseTime 0 accepted")
	}
}

// Only loopback addresses are served.
func TestStartRefusesNonLoopback(t *testing.T) {
	for _, addr := range []string{"0.0.0.0:0", "192.0.2.1:8545", "example.com:8545", "nonsense"} {
		_, err := Start(context.Background(), Config{Addr: addr})
		if err == nil {
			t.Fatalf("%s: started", addr)
		}
	}
}

// A seed gives the same keys on every run; no seed, fresh ones.
func TestSeededKeys(t *testing.T) {
	a, _ := newAccounts("demo")
	b, _ := newAccounts("demo")
	c, _ := newAccounts("")
	if a.Payer.Address != b.Payer.Address || a.Relayer.Address != b.Relayer.Address {
		t.Fatal("seeded keys differ")
	}
	if a.Payer.Address == c.Payer.Address || a.Payer.Address == a.Relayer.Address {
		t.Fatal("keys repeat")
	}
}

// The embedded artifacts are the ones anvil tests install.
func TestArtifactIsAnviltests(t *testing.T) {
	for name, pair := range map[string][2][]byte{
		"testusdc.json":         {testUSDCJSON, anviltest.ArtifactJSON},
		"batchsettlement.json":  {batchSettlementJSON, anviltest.BatchSettlementArtifactJSON},
		"erc3009collector.json": {erc3009CollectorJSON, anviltest.ERC3009CollectorArtifactJSON},
		"multicall3.json":       {multicall3JSON, anviltest.Multicall3ArtifactJSON},
	} {
		var mine, theirs struct {
			RuntimeBytecode string `json:"runtimeBytecode"`
		}
		if err := json.Unmarshal(pair[0], &mine); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(pair[1], &theirs); err != nil {
			t.Fatal(err)
		}
		if mine.RuntimeBytecode != theirs.RuntimeBytecode {
			t.Errorf("internal/devchain/%s differs from internal/anviltest/%s: copy the compiled artifact here too", name, name)
		}
	}
}

// Faucet payments asked for at once are all mined while the clock advances
// between them: every one lands and each advance moves the clock by at
// least its amount.
func TestConcurrentTransactionsAndAdvance(t *testing.T) {
	c, _, ec := startChain(t, Config{PayerUSDC: big.NewInt(0)})
	ctx := context.Background()
	to := common.HexToAddress("0x00000000000000000000000000000000000000b2")
	h0, err := ec.HeaderByNumber(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	const funds, advances = 8, 4
	errs := make(chan error, funds+advances)
	for range funds {
		go func() { _, err := c.Fund(ctx, to, big.NewInt(1_000), nil); errs <- err }()
	}
	for range advances {
		go func() { _, err := c.Advance(ctx, time.Minute); errs <- err }()
	}
	for range funds + advances {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	if bal, _ := c.USDCBalance(ctx, to); bal.Int64() != funds*1_000 {
		t.Fatalf("USDC %v, want %d", bal, funds*1_000)
	}
	h1, err := ec.HeaderByNumber(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if h1.Time < h0.Time+advances*60 {
		t.Fatalf("head time %d, want at least %d", h1.Time, h0.Time+advances*60)
	}
}

// The genesis holds the batch-settlement escrow, its EIP-3009 deposit
// collector and Multicall3 at their canonical addresses, and they work on
// this chain: deposit, vouchers, a signed claim, the sweep to payTo and a
// signed refund, relayed by the relayer.
func TestBatchSettlementContracts(t *testing.T) {
	c, _, ec := startChain(t, Config{})
	for _, addr := range []common.Address{anviltest.Escrow, common.HexToAddress(batch.ERC3009CollectorAddress), Multicall3} {
		if code, err := ec.CodeAt(context.Background(), addr, nil); err != nil || len(code) == 0 {
			t.Fatalf("no code at %s: %v", addr, err)
		}
	}
	a := c.Accounts()
	anviltest.BatchRoundTrip(t, ec, a.Relayer.Key, a.Payer.Key)
}

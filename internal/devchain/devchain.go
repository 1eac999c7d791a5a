// Package devchain runs a local EVM chain inside the Go process, for
// trying on-chain settlement without a third party: go-ethereum's block
// chain over an in-memory database, its EVM and state, a block sealed as
// soon as a transaction arrives, and a JSON-RPC endpoint over HTTP on a
// loopback address answering the eth_ methods that wallets, viem and
// go-ethereum's ethclient use.
//
// The chain has chain id 8453 (Base), so that code and clients configured
// for Base work unchanged, and the test token TestUSDC (an EIP-3009 token
// that behaves like USDC; anyone may mint) at Base USDC's address, from the
// genesis allocation, as are the contracts of the batch-settlement scheme
// (the x402BatchSettlement escrow and its EIP-3009 deposit collector) and a
// Multicall3, at their canonical addresses. It holds no real money: its accounts' keys are dev
// keys, printed, and valid on this chain only.
//
// Start funds a relayer (ETH for gas), a payer (ETH and test USDC, minted
// through a transaction at start) and a faucet that Chain.Fund spends
// from; Chain.Advance moves the chain's clock forward. Besides the
// standard eth_, net_ and web3_ methods, the endpoint answers
// devchain_fund, devchain_advance, evm_increaseTime and evm_mine (see
// Chain.Fund and Chain.Advance), so that tools that drive anvil or hardhat
// can drive it too.
package devchain

import (
	"context"
	"crypto/ecdsa"
	"crypto/sha256"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"time"

	ethereum "github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/accounts/abi"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/consensus"
	"github.com/ethereum/go-ethereum/consensus/beacon"
	"github.com/ethereum/go-ethereum/consensus/ethash"
	"github.com/ethereum/go-ethereum/core"
	"github.com/ethereum/go-ethereum/core/rawdb"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/eth/gasprice"
	"github.com/ethereum/go-ethereum/ethclient"
	"github.com/ethereum/go-ethereum/ethdb"
	"github.com/ethereum/go-ethereum/params"
	"github.com/ethereum/go-ethereum/rpc"

	"github.com/seed1284c1d2/svc/x402/batch"
)

// ChainID is the chain's id: Base mainnet's.
const ChainID = 8453

// USDC is Base USDC's address, where the chain holds TestUSDC.
var USDC = common.HexToAddress("0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913")

// DefaultAddr is the listen address of the JSON-RPC endpoint when
// Config.Addr is empty.
const DefaultAddr = "127.0.0.1:8545"

// DefaultPayerUSDC is the test USDC minted for the payer at start, in
// atomic units (1000 USDC).
const DefaultPayerUSDC = 1000_000_000

// testUSDCJSON is TestUSDC's committed artifact (runtime bytecode and
// ABI), the same file internal/anviltest installs on anvil.
//
//go:embed testusdc.json
var testUSDCJSON []byte

// The committed artifacts of the batch-settlement escrow, its EIP-3009
// deposit collector and Multicall3, the files internal/anviltest installs
// on anvil.
var (
	//go:embed batchsettlement.json
	batchSettlementJSON []byte
	//go:embed erc3009collector.json
	erc3009CollectorJSON []byte
	//go:embed multicall3.json
	multicall3JSON []byte
)

// Multicall3 is Multicall3's well-known address, where the chain holds ours.
var Multicall3 = common.HexToAddress("0xcA11bde05977b3631167028862bE2a173976CA11")

// contracts returns the code the genesis allocation holds besides
// TestUSDC, by address.
func contracts() (map[common.Address][]byte, error) {
	out := make(map[common.Address][]byte, 3)
	for addr, raw := range map[common.Address][]byte{
		common.HexToAddress(batch.SettlementAddress):       batchSettlementJSON,
		common.HexToAddress(batch.ERC3009CollectorAddress): erc3009CollectorJSON,
		Multicall3: multicall3JSON,
	} {
		var a struct {
			Contract        string `json:"contract"`
			RuntimeBytecode string `json:"runtimeBytecode"`
		}
		if err := json.Unmarshal(raw, &a); err != nil {
			return nil, fmt.Errorf("devchain: decode the artifact for %s: %w", addr, err)
		}
		code, err := hexutil.Decode(a.RuntimeBytecode)
		if err != nil {
			return nil, fmt.Errorf("devchain: %s bytecode: %w", a.Contract, err)
		}
		out[addr] = code
	}
	return out, nil
}

// Config configures Start.
type Config struct {
	// Addr is the JSON-RPC listen address (DefaultAddr when empty; port 0
	// picks a free port). It must be a loopback address.
	Addr string
	// Seed, when set, derives the accounts' keys from it, so that they
	// are the same on every run (for demos). Empty draws fresh keys.
	Seed string
	// PayerUSDC is the test USDC minted for the payer at start, in atomic
	// units; nil means DefaultPayerUSDC.
	PayerUSDC *big.Int
	// Logger receives the chain's events (blocks sealed with
	// transactions at debug level); nil discards them.
	Logger *slog.Logger
}

// Account is a dev account of the chain: a key valid on this chain only.
type Account struct {
	Key     *ecdsa.PrivateKey
	Address common.Address
}

// KeyHex is the account's private key, 0x-prefixed hex.
func (a Account) KeyHex() string { return hexutil.Encode(crypto.FromECDSA(a.Key)) }

// Accounts are the chain's dev accounts.
type Accounts struct {
	// Relayer holds ETH to pay the gas of settlements.
	Relayer Account
	// Payer holds ETH and test USDC, to pay for calls.
	Payer Account
	// PayTo holds nothing at start: a wallet to receive payments.
	PayTo Account
	// Faucet holds the ETH that Fund sends and mints the USDC it gives.
	Faucet Account
}

// gasCeil is the gas limit blocks are sealed with (go-ethereum's miner
// default).
const gasCeil = 60_000_000

// Chain is a running dev chain.
type Chain struct {
	accounts Accounts
	config   *params.ChainConfig
	signer   types.Signer
	db       ethdb.Database
	engine   consensus.Engine
	bc       *core.BlockChain
	oracle   *gasprice.Oracle
	rpc      *rpc.Server
	http     *http.Server
	client   *ethclient.Client // in-process
	token    abi.ABI
	url      string
	log      *slog.Logger

	// mu serialises the chain's changes: sealing a block, admitting a
	// transaction.
	mu sync.Mutex
	// queued holds the transactions that arrived ahead of their sender's
	// nonce, by sender, in nonce order; they are mined once the gap closes.
	queued map[common.Address][]*types.Transaction

	filters filters // of eth_newFilter and eth_newBlockFilter

	fundMu sync.Mutex // the faucet's transactions, one at a time

	serveDone chan struct{}
	closeOnce sync.Once
	closeErr  error
}

// Start builds the chain, serves its JSON-RPC endpoint on cfg.Addr and
// funds the payer. Close stops it; ctx bounds the start only.
func Start(ctx context.Context, cfg Config) (*Chain, error) {
	if cfg.Addr == "" {
		cfg.Addr = DefaultAddr
	}
	host, port, err := splitLoopback(cfg.Addr)
	if err != nil {
		return nil, err
	}
	if cfg.PayerUSDC == nil {
		cfg.PayerUSDC = big.NewInt(DefaultPayerUSDC)
	}
	if cfg.PayerUSDC.Sign() < 0 {
		return nil, errors.New("devchain: Config.PayerUSDC is negative")
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	code, token, err := testUSDC()
	if err != nil {
		return nil, err
	}
	others, err := contracts()
	if err != nil {
		return nil, err
	}
	accts, err := newAccounts(cfg.Seed)
	if err != nil {
		return nil, err
	}

	chainConf := *params.AllDevChainProtocolChanges
	chainConf.ChainID = big.NewInt(ChainID)
	alloc := core.SystemContractAllocs()
	eth1k := new(big.Int).Mul(big.NewInt(1000), big.NewInt(params.Ether))
	alloc[USDC] = types.Account{Code: code, Balance: new(big.Int)}
	for addr, c := range others {
		alloc[addr] = types.Account{Code: c, Balance: new(big.Int)}
	}
	alloc[accts.Relayer.Address] = types.Account{Balance: eth1k}
	alloc[accts.Payer.Address] = types.Account{Balance: big.NewInt(params.Ether)}
	alloc[accts.Faucet.Address] = types.Account{Balance: new(big.Int).Mul(big.NewInt(1_000_000), big.NewInt(params.Ether))}
	genesis := &core.Genesis{Config: &chainConf, GasLimit: gasCeil, Alloc: alloc, Timestamp: uint64(time.Now().Unix())}

	// The chain: in memory, every state kept (calls at any past block
	// answer), transactions indexed as their blocks are sealed.
	db := rawdb.NewMemoryDatabase()
	engine := beacon.New(ethash.NewFaker())
	bcConf := core.DefaultConfig()
	bcConf.ArchiveMode = true
	bcConf.SnapshotLimit = 0
	bcConf.TrieCleanLimit = 16
	bcConf.TrieDirtyLimit = 16
	bcConf.TxLookupLimit = -1 // written when a block is sealed
	bc, err := core.NewBlockChain(db, genesis, engine, bcConf)
	if err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("devchain: block chain: %w", err)
	}
	c := &Chain{accounts: accts, config: bc.Config(), signer: types.LatestSigner(bc.Config()), db: db, engine: engine, bc: bc,
		token: token, log: log, queued: map[common.Address][]*types.Transaction{}, serveDone: make(chan struct{})}
	c.oracle = gasprice.NewOracle(oracleBackend{c}, gasprice.Config{Blocks: 20, Percentile: 60, MaxHeaderHistory: 1024, MaxBlockHistory: 1024,
		MaxPrice: gasprice.DefaultMaxPrice, IgnorePrice: gasprice.DefaultIgnorePrice}, big.NewInt(params.GWei/1000))

	c.rpc = rpc.NewServer()
	for _, api := range []struct {
		namespace string
		service   any
	}{
		{"eth", &ethAPI{c: c}},
		{"net", &netAPI{c: c}},
		{"web3", &web3API{}},
		{"txpool", &txpoolAPI{c: c}},
		{"evm", &evmAPI{c: c}},
		{"devchain", &devchainAPI{c: c}},
	} {
		if err := c.rpc.RegisterName(api.namespace, api.service); err != nil {
			c.stopChain()
			return nil, fmt.Errorf("devchain: register the %s API: %w", api.namespace, err)
		}
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(port)))
	if err != nil {
		c.stopChain()
		return nil, fmt.Errorf("devchain: start the node on %s: %w", cfg.Addr, err)
	}
	c.url = "http://" + ln.Addr().String()
	c.http = &http.Server{Handler: httpHandler(c.rpc), ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute}
	go func() {
		defer close(c.serveDone)
		_ = c.http.Serve(ln)
	}()
	c.client = ethclient.NewClient(rpc.DialInProc(c.rpc))
	if cfg.PayerUSDC.Sign() > 0 {
		if _, err := c.Fund(ctx, accts.Payer.Address, cfg.PayerUSDC, nil); err != nil {
			_ = c.Close()
			return nil, fmt.Errorf("devchain: fund the payer: %w", err)
		}
	}
	log.Info("devchain: serving", "url", c.url, "chain_id", ChainID)
	return c, nil
}

// httpHandler serves the JSON-RPC server to browsers too (CORS from any
// origin) and refuses requests naming a host other than an IP address or
// localhost (DNS rebinding).
func httpHandler(srv *rpc.Server) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host := r.Host
		if h, _, err := net.SplitHostPort(host); err == nil {
			host = h
		}
		host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
		if _, err := netip.ParseAddr(host); err != nil && !strings.EqualFold(host, "localhost") {
			http.Error(w, "invalid host specified", http.StatusForbidden)
			return
		}
		if r.Header.Get("Origin") != "" {
			w.Header().Set("Access-Control-Allow-Origin", "*")
			if r.Method == http.MethodOptions {
				w.Header().Set("Access-Control-Allow-Methods", "POST, GET, OPTIONS")
				w.Header().Set("Access-Control-Allow-Headers", "Content-Type")
				if h := r.Header.Get("Access-Control-Request-Headers"); h != "" {
					w.Header().Set("Access-Control-Allow-Headers", h)
				}
				w.Header().Set("Access-Control-Max-Age", "600")
				w.WriteHeader(http.StatusNoContent)
				return
			}
		}
		srv.ServeHTTP(w, r)
	})
}

// URL is the JSON-RPC endpoint, http://127.0.0.1:PORT.
func (c *Chain) URL() string { return c.url }

// ChainID returns the chain's id, ChainID.
func (c *Chain) ChainID() int64 { return ChainID }

// Accounts returns the chain's dev accounts.
func (c *Chain) Accounts() Accounts { return c.accounts }

// Client returns an in-process client of the chain (closed by Close).
func (c *Chain) Client() *ethclient.Client { return c.client }

// Close stops the chain. It is safe to call more than once.
func (c *Chain) Close() error {
	c.closeOnce.Do(func() {
		if c.http != nil {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			c.closeErr = c.http.Shutdown(ctx)
			cancel()
			<-c.serveDone
		}
		if c.client != nil {
			c.client.Close()
		}
		c.stopChain()
	})
	return c.closeErr
}

// stopChain stops the JSON-RPC server and the block chain, and drops the
// database.
func (c *Chain) stopChain() {
	if c.rpc != nil {
		c.rpc.Stop()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.bc.Stop()
	_ = c.db.Close()
}

// Advance moves the chain's clock forward by d (whole seconds, at least
// one): it seals a block whose timestamp is the last block's plus d, and
// returns that timestamp. Later blocks are never earlier than it (each
// one is at least a second after the one before it, or at the wall clock
// when that is later).
func (c *Chain) Advance(ctx context.Context, d time.Duration) (uint64, error) {
	if d < time.Second {
		return 0, fmt.Errorf("devchain: advance by %s: the clock moves by whole seconds, at least 1s", d)
	}
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	parent := c.bc.CurrentBlock()
	block, _, err := c.sealLocked(ctx, nil, parent.Time+uint64(d/time.Second))
	if err != nil {
		return 0, fmt.Errorf("devchain: advance the clock: %w", err)
	}
	return block.Time(), nil
}

// Mine seals one empty block (transactions are mined as they arrive) and
// returns its number.
func (c *Chain) Mine(ctx context.Context) (uint64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	block, _, err := c.sealLocked(ctx, nil, uint64(time.Now().Unix()))
	if err != nil {
		return 0, fmt.Errorf("devchain: mine: %w", err)
	}
	return block.NumberU64(), nil
}

// Fund sends wei (when positive) and mints usdc atomic units of test USDC
// (when positive) to addr, from the faucet, and waits for both to be
// mined. It returns the transactions' hashes.
func (c *Chain) Fund(ctx context.Context, addr common.Address, usdc, wei *big.Int) ([]common.Hash, error) {
	if addr == (common.Address{}) {
		return nil, errors.New("devchain: fund: the address is the zero address")
	}
	if (usdc == nil || usdc.Sign() == 0) && (wei == nil || wei.Sign() == 0) {
		return nil, errors.New("devchain: fund: nothing to send (both amounts are zero)")
	}
	if (usdc != nil && usdc.Sign() < 0) || (wei != nil && wei.Sign() < 0) {
		return nil, errors.New("devchain: fund: an amount is negative")
	}
	c.fundMu.Lock()
	defer c.fundMu.Unlock()
	var hashes []common.Hash
	if wei != nil && wei.Sign() > 0 {
		h, err := c.send(ctx, addr, wei, nil)
		if err != nil {
			return hashes, fmt.Errorf("devchain: send ETH: %w", err)
		}
		hashes = append(hashes, h)
	}
	if usdc != nil && usdc.Sign() > 0 {
		data, err := c.token.Pack("mint", addr, usdc)
		if err != nil {
			return hashes, fmt.Errorf("devchain: mint: %w", err)
		}
		h, err := c.send(ctx, USDC, nil, data)
		if err != nil {
			return hashes, fmt.Errorf("devchain: mint USDC: %w", err)
		}
		hashes = append(hashes, h)
	}
	return hashes, nil
}

// send signs a transaction of the faucet, sends it and waits for its
// successful receipt.
func (c *Chain) send(ctx context.Context, to common.Address, value *big.Int, data []byte) (common.Hash, error) {
	from := c.accounts.Faucet
	nonce, err := c.client.PendingNonceAt(ctx, from.Address)
	if err != nil {
		return common.Hash{}, fmt.Errorf("nonce: %w", err)
	}
	tip, err := c.client.SuggestGasTipCap(ctx)
	if err != nil {
		return common.Hash{}, fmt.Errorf("tip: %w", err)
	}
	head, err := c.client.HeaderByNumber(ctx, nil)
	if err != nil {
		return common.Hash{}, fmt.Errorf("head: %w", err)
	}
	feeCap := new(big.Int).Add(new(big.Int).Mul(head.BaseFee, big.NewInt(2)), tip)
	gas, err := c.client.EstimateGas(ctx, ethereum.CallMsg{From: from.Address, To: &to, Value: value, Data: data})
	if err != nil {
		return common.Hash{}, fmt.Errorf("estimate gas: %w", err)
	}
	tx, err := types.SignTx(types.NewTx(&types.DynamicFeeTx{ChainID: big.NewInt(ChainID), Nonce: nonce,
		GasTipCap: tip, GasFeeCap: feeCap, Gas: gas, To: &to, Value: value, Data: data}),
		types.LatestSignerForChainID(big.NewInt(ChainID)), from.Key)
	if err != nil {
		return common.Hash{}, fmt.Errorf("sign: %w", err)
	}
	if err := c.client.SendTransaction(ctx, tx); err != nil {
		return common.Hash{}, fmt.Errorf("send: %w", err)
	}
	r, err := c.waitReceipt(ctx, tx.Hash())
	if err != nil {
		return tx.Hash(), err
	}
	if r.Status != types.ReceiptStatusSuccessful {
		return tx.Hash(), fmt.Errorf("transaction %s reverted", tx.Hash())
	}
	return tx.Hash(), nil
}

// waitReceipt polls for the receipt of hash until ctx ends.
func (c *Chain) waitReceipt(ctx context.Context, hash common.Hash) (*types.Receipt, error) {
	t := time.NewTicker(5 * time.Millisecond)
	defer t.Stop()
	for {
		r, err := c.client.TransactionReceipt(ctx, hash)
		if err == nil {
			return r, nil
		}
		if !errors.Is(err, ethereum.NotFound) {
			return nil, fmt.Errorf("receipt of %s: %w", hash, err)
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("receipt of %s: %w", hash, ctx.Err())
		case <-t.C:
		}
	}
}

// USDCBalance returns the test USDC balance of addr, in atomic units.
func (c *Chain) USDCBalance(ctx context.Context, addr common.Address) (*big.Int, error) {
	data, err := c.token.Pack("balanceOf", addr)
	if err != nil {
		return nil, err
	}
	out, err := c.client.CallContract(ctx, ethereum.CallMsg{To: &USDC, Data: data}, nil)
	if err != nil {
		return nil, fmt.Errorf("devchain: balanceOf: %w", err)
	}
	v, err := c.token.Unpack("balanceOf", out)
	if err != nil {
		return nil, fmt.Errorf("devchain: balanceOf: %w", err)
	}
	return v[0].(*big.Int), nil
}

// testUSDC decodes the embedded artifact: runtime bytecode and ABI.
func testUSDC() ([]byte, abi.ABI, error) {
	var a struct {
		RuntimeBytecode string          `json:"runtimeBytecode"`
		ABI             json.RawMessage `json:"abi"`
	}
	if err := json.Unmarshal(testUSDCJSON, &a); err != nil {
		return nil, abi.ABI{}, fmt.Errorf("devchain: decode testusdc.json: %w", err)
	}
	code, err := hexutil.Decode(a.RuntimeBytecode)
	if err != nil {
		return nil, abi.ABI{}, fmt.Errorf("devchain: TestUSDC bytecode: %w", err)
	}
	parsed, err := abi.JSON(strings.NewReader(string(a.ABI)))
	if err != nil {
		return nil, abi.ABI{}, fmt.Errorf("devchain: TestUSDC ABI: %w", err)
	}
	return code, parsed, nil
}

// newAccounts draws the accounts' keys, or derives them from seed.
func newAccounts(seed string) (Accounts, error) {
	mk := func(role string) (Account, error) {
		var k *ecdsa.PrivateKey
		var err error
		if seed == "" {
			k, err = crypto.GenerateKey()
		} else {
			sum := sha256.Sum256([]byte("svc devchain dev key\x00" + seed + "\x00" + role))
			k, err = crypto.ToECDSA(sum[:])
		}
		if err != nil {
			return Account{}, fmt.Errorf("devchain: %s key: %w", role, err)
		}
		return Account{Key: k, Address: crypto.PubkeyToAddress(k.PublicKey)}, nil
	}
	var a Accounts
	var err error
	for _, x := range []struct {
		role string
		to   *Account
	}{{"relayer", &a.Relayer}, {"payer", &a.Payer}, {"payTo", &a.PayTo}, {"faucet", &a.Faucet}} {
		if *x.to, err = mk(x.role); err != nil {
			return a, err
		}
	}
	return a, nil
}

// splitLoopback splits a loopback listen address into host and port.
func splitLoopback(addr string) (string, int, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, fmt.Errorf("devchain: address %q: %w", addr, err)
	}
	if strings.EqualFold(host, "localhost") {
		host = "127.0.0.1"
	}
	ip, err := netip.ParseAddr(host)
	if err != nil || !ip.Unmap().IsLoopback() {
		return "", 0, fmt.Errorf("devchain: address %q: the dev chain listens on a loopback address only (127.0.0.1 or [::1])", addr)
	}
	p, err := net.LookupPort("tcp", port)
	if err != nil {
		return "", 0, fmt.Errorf("devchain: address %q: port: %w", addr, err)
	}
	return host, p, nil
}

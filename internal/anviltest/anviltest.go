// Package anviltest runs a local EVM for tests: anvil from the pinned npm
// package in e2e/chain, on 127.0.0.1, with chain id 8453 (Base), the
// TestUSDC token installed at Base USDC's address, and the contracts of the
// batch-settlement scheme (the x402BatchSettlement escrow, its EIP-3009
// deposit collector) and a Multicall3 at their canonical addresses, so
// that code and clients configured for Base USDC work unchanged. It is for
// tests only.
//
// Like the other end-to-end helpers (internal/nodetest), a missing Node.js
// or a failed install skips the test, and fails it under CI=true; under
// go test -short the test is skipped.
package anviltest

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	ethereum "github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/accounts/abi"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/ethclient"
	"github.com/ethereum/go-ethereum/rpc"

	"github.com/seed1284c1d2/svc/internal/nodetest"
	"github.com/seed1284c1d2/svc/x402"
	"github.com/seed1284c1d2/svc/x402/batch"
	"github.com/seed1284c1d2/svc/x402/exact"
)

// USDC is Base USDC's address, where Start installs TestUSDC.
var USDC = common.HexToAddress("0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913")

// ChainID is the chain id anvil runs with (Base mainnet).
const ChainID = 8453

// ArtifactJSON is the committed TestUSDC artifact written by
// e2e/chain/compile.mjs: runtime bytecode, ABI, compiler and settings.
//
//go:embed testusdc.json
var ArtifactJSON []byte

// WalletArtifactJSON is the committed TestWallet artifact (a minimal
// ERC-1271 wallet accepting its owner's signatures), same format.
//
//go:embed testwallet.json
var WalletArtifactJSON []byte

// FeeArtifactJSON is the committed TestFeeUSDC artifact (TestUSDC keeping
// one atomic unit of every transfer as a fee), same format.
//
//go:embed testfeeusdc.json
var FeeArtifactJSON []byte

// BatchSettlementArtifactJSON, ERC3009CollectorArtifactJSON and
// Multicall3ArtifactJSON are the committed artifacts of the
// batch-settlement escrow, its EIP-3009 deposit collector and Multicall3,
// same format.
var (
	//go:embed batchsettlement.json
	BatchSettlementArtifactJSON []byte
	//go:embed erc3009collector.json
	ERC3009CollectorArtifactJSON []byte
	//go:embed multicall3.json
	Multicall3ArtifactJSON []byte
)

// Multicall3 is Multicall3's well-known address, where Start installs ours.
var Multicall3 = common.HexToAddress("0xcA11bde05977b3631167028862bE2a173976CA11")

// Installed maps each address Start installs code at to the artifact it
// installs there: TestUSDC at USDC, the escrow and its collector at the
// batch-settlement scheme's canonical addresses, Multicall3. It returns a
// fresh map.
func Installed() map[common.Address][]byte {
	return map[common.Address][]byte{
		USDC: ArtifactJSON,
		common.HexToAddress(batch.SettlementAddress):       BatchSettlementArtifactJSON,
		common.HexToAddress(batch.ERC3009CollectorAddress): ERC3009CollectorArtifactJSON,
		Multicall3: Multicall3ArtifactJSON,
	}
}

// Artifact is the decoded ArtifactJSON.
type Artifact struct {
	Contract        string          `json:"contract"`
	Compiler        string          `json:"compiler"`
	RuntimeBytecode string          `json:"runtimeBytecode"`
	ABI             json.RawMessage `json:"abi"`
}

// LoadArtifact decodes ArtifactJSON.
func LoadArtifact() (Artifact, abi.ABI, error) {
	var a Artifact
	if err := json.Unmarshal(ArtifactJSON, &a); err != nil {
		return a, abi.ABI{}, fmt.Errorf("anviltest: decode testusdc.json: %w", err)
	}
	parsed, err := abi.JSON(strings.NewReader(string(a.ABI)))
	if err != nil {
		return a, abi.ABI{}, fmt.Errorf("anviltest: parse the TestUSDC ABI: %w", err)
	}
	return a, parsed, nil
}

// Dir returns the absolute path of e2e/chain (the npm folder with anvil,
// solc and the official x402 peers).
func Dir(t testing.TB) string {
	t.Helper()
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("anviltest: cannot locate the source folder")
	}
	return filepath.Join(filepath.Dir(file), "..", "..", "e2e", "chain")
}

// Setup skips under -short, finds node and installs e2e/chain's locked
// packages. It returns the node binary and the folder.
func Setup(t testing.TB) (node, dir string) {
	t.Helper()
	if testing.Short() {
		t.Skip("anvil test skipped under -short (it needs Node.js and a local chain)")
	}
	dir = Dir(t)
	node = nodetest.Setup(t, 20, dir, "@foundry-rs/anvil", "solc", "@x402/core", "@x402/evm", "@x402/express", "@x402/fetch", "viem", "express")
	return node, dir
}

// Binary returns the path of the anvil binary of this platform in
// e2e/chain's node_modules.
func Binary(t testing.TB, dir string) string {
	t.Helper()
	osName := runtime.GOOS
	if osName == "windows" {
		osName = "win32"
	}
	p := filepath.Join(dir, "node_modules", "@foundry-rs", "anvil-"+osName+"-"+runtime.GOARCH, "bin", "anvil")
	if _, err := os.Stat(p); err != nil {
		nodetest.SkipOrFail(t, "no anvil binary for %s/%s in %s: %v", runtime.GOOS, runtime.GOARCH, dir, err)
	}
	return p
}

// Chain is a running anvil with TestUSDC installed.
type Chain struct {
	// URL is the JSON-RPC endpoint, http://127.0.0.1:port.
	URL string
	// Client is connected to URL.
	Client *ethclient.Client
	// RPC is the raw JSON-RPC client (for anvil_* methods).
	RPC *rpc.Client
	// ABI is TestUSDC's.
	ABI abi.ABI

	cmd  *exec.Cmd
	out  *lockedBuffer
	done chan struct{}
	stop sync.Once
}

// Options tunes Start. The zero value is automine with the default gas
// settings.
type Options struct {
	// BlockTime, when positive, mines a block every BlockTime seconds
	// instead of one per transaction.
	BlockTime int
	// NoMining starts with automine off (mine with Mine).
	NoMining bool
}

var listening = regexp.MustCompile(`Listening on (127\.0\.0\.1:\d+)`)

// Start runs anvil on 127.0.0.1 (a free port chosen by anvil) with chain id
// ChainID and installs the contracts of Installed. It is stopped when the
// test ends.
func Start(t testing.TB, opts Options) *Chain {
	t.Helper()
	_, dir := Setup(t)
	bin := Binary(t, dir)
	_, parsed, err := LoadArtifact()
	if err != nil {
		t.Fatal(err)
	}
	args := []string{"--host", "127.0.0.1", "--port", "0", "--chain-id", fmt.Sprint(ChainID), "--hardfork", "cancun", "--accounts", "2", "--balance", "1000000"}
	if opts.BlockTime > 0 {
		args = append(args, "--block-time", fmt.Sprint(opts.BlockTime))
	}
	if opts.NoMining {
		args = append(args, "--no-mining")
	}
	cmd := exec.Command(bin, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	c := &Chain{cmd: cmd, out: &lockedBuffer{}, done: make(chan struct{}), ABI: parsed}
	cmd.Stderr = c.out
	if err := cmd.Start(); err != nil {
		nodetest.SkipOrFail(t, "anvil does not start: %v", err)
	}
	go func() { _ = cmd.Wait(); close(c.done) }()
	t.Cleanup(c.Stop)

	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		sent := false
		for sc.Scan() {
			line := sc.Text()
			c.out.WriteString(line + "\n")
			if m := listening.FindStringSubmatch(line); m != nil && !sent {
				addr <- m[1]
				sent = true
			}
		}
		_, _ = io.Copy(io.Discard, stdout)
	}()
	select {
	case a := <-addr:
		c.URL = "http://" + a
	case <-c.done:
		t.Fatalf("anvil exited before listening:\n%s", c.out.String())
	case <-time.After(30 * time.Second):
		t.Fatalf("anvil did not listen within 30 s:\n%s", c.out.String())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c.RPC, err = rpc.DialContext(ctx, c.URL)
	if err != nil {
		t.Fatal(err)
	}
	c.Client = ethclient.NewClient(c.RPC)
	t.Cleanup(c.Client.Close)
	for addr, raw := range Installed() {
		var a Artifact
		if err := json.Unmarshal(raw, &a); err != nil {
			t.Fatal(err)
		}
		if err := c.RPC.CallContext(ctx, nil, "anvil_setCode", addr, a.RuntimeBytecode); err != nil {
			t.Fatalf("anvil_setCode %s (%s): %v", addr, a.Contract, err)
		}
	}
	return c
}

// Stop stops anvil (SIGTERM, then SIGKILL after 5 s) and waits for it. It
// is safe to call more than once.
func (c *Chain) Stop() {
	c.stop.Do(func() {
		if c.cmd.Process == nil {
			return
		}
		_ = syscall.Kill(-c.cmd.Process.Pid, syscall.SIGTERM)
		select {
		case <-c.done:
		case <-time.After(5 * time.Second):
			_ = syscall.Kill(-c.cmd.Process.Pid, syscall.SIGKILL)
			<-c.done
		}
	})
}

// Log returns what anvil printed so far.
func (c *Chain) Log() string { return c.out.String() }

// InstallWallet installs a TestWallet owned by owner at a new address and
// returns that address (a contract account: signatures for it are checked
// with ERC-1271).
func (c *Chain) InstallWallet(t testing.TB, owner common.Address) common.Address {
	t.Helper()
	var a Artifact
	if err := json.Unmarshal(WalletArtifactJSON, &a); err != nil {
		t.Fatal(err)
	}
	_, addr := NewKey(t)
	ctx := context.Background()
	if err := c.RPC.CallContext(ctx, nil, "anvil_setCode", addr, a.RuntimeBytecode); err != nil {
		t.Fatalf("anvil_setCode: %v", err)
	}
	if err := c.RPC.CallContext(ctx, nil, "anvil_setStorageAt", addr, common.Hash{}, common.BytesToHash(owner.Bytes())); err != nil {
		t.Fatalf("anvil_setStorageAt: %v", err)
	}
	return addr
}

// WalletPayment is an exact payload from wallet (a TestWallet) paying req,
// valid from ten minutes ago for five minutes from now, with a fresh
// nonce, signed by key the way TestWallet checks (ERC-1271: its owner's
// signature over the authorization's EIP-712 digest).
func WalletPayment(t testing.TB, key *ecdsa.PrivateKey, wallet common.Address, req x402.PaymentRequirements) exact.ExactEVMPayload {
	t.Helper()
	n, ok := x402.LookupNetwork(req.Network)
	if !ok {
		t.Fatalf("network %q", req.Network)
	}
	nonce, err := exact.NewNonce()
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().Unix()
	a := exact.Authorization{From: wallet.Hex(), To: req.PayTo, Value: req.Amount,
		ValidAfter: big.NewInt(now - 600).String(), ValidBefore: big.NewInt(now + 300).String(), Nonce: nonce}
	digest, err := exact.AuthorizationDigest(exact.Domain(n), a)
	if err != nil {
		t.Fatal(err)
	}
	sig, err := crypto.Sign(digest[:], key)
	if err != nil {
		t.Fatal(err)
	}
	sig[64] += 27
	return exact.ExactEVMPayload{Signature: hexutil.Encode(sig), Authorization: a}
}

// InstallFeeToken replaces the code at USDC with TestFeeUSDC, keeping the
// storage (balances and authorization states): from then on every
// transfer of value pays value - 1 to its recipient and 1 to the fee sink,
// so an EIP-3009 transfer's Transfer event is not the amount authorised.
func (c *Chain) InstallFeeToken(t testing.TB) {
	t.Helper()
	var a Artifact
	if err := json.Unmarshal(FeeArtifactJSON, &a); err != nil {
		t.Fatal(err)
	}
	if err := c.RPC.CallContext(context.Background(), nil, "anvil_setCode", USDC, a.RuntimeBytecode); err != nil {
		t.Fatalf("anvil_setCode: %v", err)
	}
}

// SetBalance sets the native (gas) balance of addr, in wei.
func (c *Chain) SetBalance(t testing.TB, addr common.Address, wei *big.Int) {
	t.Helper()
	if err := c.RPC.CallContext(context.Background(), nil, "anvil_setBalance", addr, (*hexutil.Big)(wei)); err != nil {
		t.Fatalf("anvil_setBalance: %v", err)
	}
}

// Ether is n ether in wei.
func Ether(n int64) *big.Int {
	return new(big.Int).Mul(big.NewInt(n), big.NewInt(1_000_000_000_000_000_000))
}

// Mint creates amount atomic units (6 decimals) of TestUSDC for to,
// through a transaction from anvil's first dev account, and waits for it.
func (c *Chain) Mint(t testing.TB, to common.Address, amount *big.Int) {
	t.Helper()
	data, err := c.ABI.Pack("mint", to, amount)
	if err != nil {
		t.Fatal(err)
	}
	if r := c.Transact(t, USDC, data); r.Status != types.ReceiptStatusSuccessful {
		t.Fatalf("mint %s reverted", r.TxHash)
	}
}

// Relayer returns anvil's first dev account (unlocked: Transact sends
// from it).
func (c *Chain) Relayer(t testing.TB) common.Address {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var accounts []common.Address
	if err := c.RPC.CallContext(ctx, &accounts, "eth_accounts"); err != nil || len(accounts) == 0 {
		t.Fatalf("eth_accounts: %v (%d accounts)", err, len(accounts))
	}
	return accounts[0]
}

// Transact sends a transaction calling to with data from Relayer, waits
// for it and returns its receipt (reverted or not; a transaction the node
// refuses, for example because its gas estimate reverts, fails the test).
func (c *Chain) Transact(t testing.TB, to common.Address, data []byte) *types.Receipt {
	t.Helper()
	from := c.Relayer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var hash common.Hash
	if err := c.RPC.CallContext(ctx, &hash, "eth_sendTransaction", map[string]any{"from": from, "to": to, "data": hexutil.Bytes(data)}); err != nil {
		t.Fatalf("transaction to %s: %v", to, err)
	}
	return c.WaitReceipt(t, hash)
}

// Call runs eth_call of to with data at the latest block and returns the
// answer, or the error (a revert) for the test to judge.
func (c *Chain) Call(t testing.TB, from, to common.Address, data []byte) ([]byte, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var res hexutil.Bytes
	err := c.RPC.CallContext(ctx, &res, "eth_call", map[string]any{"from": from, "to": to, "data": hexutil.Bytes(data)}, "latest")
	return res, err
}

// WaitReceipt waits up to 30 s for the receipt of hash.
func (c *Chain) WaitReceipt(t testing.TB, hash common.Hash) *types.Receipt {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for {
		r, err := c.Client.TransactionReceipt(ctx, hash)
		if err == nil {
			return r
		}
		if !errors.Is(err, ethereum.NotFound) && ctx.Err() == nil {
			t.Fatalf("receipt of %s: %v", hash, err)
		}
		select {
		case <-ctx.Done():
			t.Fatalf("no receipt for %s within 30 s", hash)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// TokenBalance returns the TestUSDC balance of addr.
func (c *Chain) TokenBalance(t testing.TB, addr common.Address) *big.Int {
	t.Helper()
	out := c.call(t, "balanceOf", addr)
	return out[0].(*big.Int)
}

// AuthorizationState returns TestUSDC's authorizationState(authorizer, nonce).
func (c *Chain) AuthorizationState(t testing.TB, authorizer common.Address, nonce [32]byte) bool {
	t.Helper()
	return c.call(t, "authorizationState", authorizer, nonce)[0].(bool)
}

func (c *Chain) call(t testing.TB, method string, args ...any) []any {
	t.Helper()
	data, err := c.ABI.Pack(method, args...)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var res hexutil.Bytes
	if err := c.RPC.CallContext(ctx, &res, "eth_call", map[string]any{"to": USDC, "data": hexutil.Bytes(data)}, "latest"); err != nil {
		t.Fatalf("%s: %v", method, err)
	}
	out, err := c.ABI.Unpack(method, res)
	if err != nil {
		t.Fatalf("%s: %v", method, err)
	}
	return out
}

// SetAutomine switches automine on or off.
func (c *Chain) SetAutomine(t testing.TB, on bool) {
	t.Helper()
	if err := c.RPC.CallContext(context.Background(), nil, "evm_setAutomine", on); err != nil {
		t.Fatalf("evm_setAutomine: %v", err)
	}
}

// Mine mines n blocks.
func (c *Chain) Mine(t testing.TB, n int) {
	t.Helper()
	if err := c.RPC.CallContext(context.Background(), nil, "anvil_mine", hexutil.Uint64(n)); err != nil {
		t.Fatalf("anvil_mine: %v", err)
	}
}

// NewKey returns a new private key and its address.
func NewKey(t testing.TB) (*ecdsa.PrivateKey, common.Address) {
	t.Helper()
	k, err := crypto.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	return k, crypto.PubkeyToAddress(k.PublicKey)
}

// lockedBuffer is a strings.Builder safe for concurrent use.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) WriteString(s string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.b.WriteString(s)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// IncreaseTime moves the chain's clock forward by seconds and mines a
// block at the new time.
func (c *Chain) IncreaseTime(t testing.TB, seconds int64) {
	t.Helper()
	if err := c.RPC.CallContext(context.Background(), nil, "evm_increaseTime", seconds); err != nil {
		t.Fatalf("evm_increaseTime: %v", err)
	}
	c.Mine(t, 1)
}

package anviltest

import (
	"bytes"
	"context"
	"math/big"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"

	"github.com/seed1284c1d2/svc/x402/batch"
)

// TestArtifactIsCompiledSource recompiles the test contracts with the
// pinned solc and checks that the committed artifacts are exactly what it
// produces.
func TestArtifactIsCompiledSource(t *testing.T) {
	node, dir := Setup(t)
	out := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "compile.mjs", out)
	cmd.Dir = dir
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("compile.mjs: %v\n%s", err, b)
	}
	for name, committed := range map[string][]byte{
		"testusdc.json": ArtifactJSON, "testwallet.json": WalletArtifactJSON, "testfeeusdc.json": FeeArtifactJSON,
		"batchsettlement.json": BatchSettlementArtifactJSON, "erc3009collector.json": ERC3009CollectorArtifactJSON, "multicall3.json": Multicall3ArtifactJSON,
	} {
		if !bytes.Equal(readFile(t, filepath.Join(out, name)), committed) {
			t.Errorf("internal/anviltest/%s is not what e2e/chain/compile.mjs produces from the source: run `node compile.mjs` in e2e/chain and commit the result", name)
		}
	}
}

// TestTokenOnAnvil checks the installed token's metadata, domain, type
// hashes and mint.
func TestTokenOnAnvil(t *testing.T) {
	c := Start(t, Options{})
	ctx := context.Background()
	id, err := c.Client.ChainID(ctx)
	if err != nil || id.Int64() != ChainID {
		t.Fatalf("chain id %v, %v; want %d", id, err, ChainID)
	}
	if got := c.call(t, "name")[0].(string); got != "USD Coin" {
		t.Errorf("name %q", got)
	}
	if got := c.call(t, "version")[0].(string); got != "2" {
		t.Errorf("version %q", got)
	}
	if got := c.call(t, "decimals")[0].(uint8); got != 6 {
		t.Errorf("decimals %d", got)
	}
	for method, typ := range map[string]string{
		"TRANSFER_WITH_AUTHORIZATION_TYPEHASH": "TransferWithAuthorization(address from,address to,uint256 value,uint256 validAfter,uint256 validBefore,bytes32 nonce)",
		"RECEIVE_WITH_AUTHORIZATION_TYPEHASH":  "ReceiveWithAuthorization(address from,address to,uint256 value,uint256 validAfter,uint256 validBefore,bytes32 nonce)",
		"CANCEL_AUTHORIZATION_TYPEHASH":        "CancelAuthorization(address authorizer,bytes32 nonce)",
	} {
		got := common.Hash(c.call(t, method)[0].([32]byte))
		if got != crypto.Keccak256Hash([]byte(typ)) {
			t.Errorf("%s = %s", method, got)
		}
	}
	// The domain separator of USDC on Base, as clients compute it.
	want := crypto.Keccak256Hash(
		crypto.Keccak256([]byte("EIP712Domain(string name,string version,uint256 chainId,address verifyingContract)")),
		crypto.Keccak256([]byte("USD Coin")), crypto.Keccak256([]byte("2")),
		common.LeftPadBytes(big.NewInt(ChainID).Bytes(), 32), common.LeftPadBytes(USDC.Bytes(), 32))
	if got := common.Hash(c.call(t, "DOMAIN_SEPARATOR")[0].([32]byte)); got != want {
		t.Errorf("DOMAIN_SEPARATOR %s, want %s", got, want)
	}
	_, a := NewKey(t)
	c.Mint(t, a, big.NewInt(1_500_000))
	if got := c.TokenBalance(t, a); got.Cmp(big.NewInt(1_500_000)) != 0 {
		t.Errorf("balance after mint %s", got)
	}
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// The escrow ABI that package batch embeds is the compiled escrow's: every
// function and event it names has the same signature and outputs there.
func TestBatchABIIsTheEscrows(t *testing.T) {
	compiled := ArtifactABI(t, BatchSettlementArtifactJSON)
	embedded := batch.SettlementABI()
	if len(embedded.Methods) < 17 {
		t.Fatalf("the embedded ABI has %d methods", len(embedded.Methods))
	}
	for name, m := range embedded.Methods {
		c, ok := compiled.Methods[name]
		if !ok || c.Sig != m.Sig || c.String() != m.String() || c.StateMutability != m.StateMutability {
			t.Errorf("%s: embedded %s, compiled %s", name, m, c)
		}
	}
	for name, e := range embedded.Events {
		if c, ok := compiled.Events[name]; !ok || c.ID != e.ID {
			t.Errorf("event %s differs", name)
		}
	}
}

// Multicall3: aggregate3 honours allowFailure, tryAggregate reports
// failures, aggregate reverts on one, and the block getters answer.
func TestMulticall3(t *testing.T) {
	c := Start(t, Options{})
	mc := ArtifactABI(t, Multicall3ArtifactJSON)
	bal, _ := c.ABI.Pack("balanceOf", USDC)
	bad := []byte{0xde, 0xad, 0xbe, 0xef}
	type call3 struct {
		Target       common.Address
		AllowFailure bool
		CallData     []byte
	}
	run := func(method string, args ...any) ([]any, error) {
		data, err := mc.Pack(method, args...)
		if err != nil {
			t.Fatal(err)
		}
		out, err := c.Call(t, common.Address{}, Multicall3, data)
		if err != nil {
			return nil, err
		}
		return mc.Unpack(method, out)
	}
	out, err := run("aggregate3", []call3{{USDC, false, bal}, {USDC, true, bad}})
	if err != nil {
		t.Fatal(err)
	}
	rows := out[0].([]struct {
		Success    bool    `json:"success"`
		ReturnData []uint8 `json:"returnData"`
	})
	if len(rows) != 2 || !rows[0].Success || rows[1].Success || len(rows[0].ReturnData) != 32 {
		t.Fatalf("aggregate3 %+v", rows)
	}
	if _, err := run("aggregate3", []call3{{USDC, false, bad}}); err == nil {
		t.Fatal("aggregate3 without allowFailure did not revert")
	}
	type call struct {
		Target   common.Address
		CallData []byte
	}
	if _, err := run("aggregate", []call{{USDC, bal}, {USDC, bad}}); err == nil {
		t.Fatal("aggregate did not revert")
	}
	if out, err := run("getChainId"); err != nil || out[0].(*big.Int).Int64() != ChainID {
		t.Fatalf("getChainId %v, %v", out, err)
	}
	if out, err := run("getBlockNumber"); err != nil || out[0].(*big.Int).Sign() < 0 {
		t.Fatalf("getBlockNumber %v, %v", out, err)
	}
}

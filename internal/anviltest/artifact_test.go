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

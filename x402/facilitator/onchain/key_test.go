package onchain

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/rpc"
)

const testKeyHex = "4c0883a69102937d6231471b5dbb6204fe5129617082792ae468d01a3f362318"

func TestKeyFromEnvAndFile(t *testing.T) {
	t.Setenv("ONCHAIN_TEST_KEY", " 0x"+testKeyHex+"\n")
	k, err := KeyFromEnv("ONCHAIN_TEST_KEY")
	if err != nil || crypto.PubkeyToAddress(k.PublicKey).Hex() != "0x2c7536E3605D9C16a7a3D7b1898e529396a65c23" {
		t.Fatalf("KeyFromEnv: %v", err)
	}
	path := filepath.Join(t.TempDir(), "key")
	if err := os.WriteFile(path, []byte(testKeyHex+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if k2, err := KeyFromFile(path); err != nil || !k2.Equal(k) {
		t.Fatalf("KeyFromFile: %v", err)
	}
	if _, err := KeyFromEnv("ONCHAIN_TEST_UNSET"); err == nil || !strings.Contains(err.Error(), "ONCHAIN_TEST_UNSET") {
		t.Fatalf("unset variable: %v", err)
	}
	if _, err := KeyFromFile(filepath.Join(t.TempDir(), "none")); err == nil {
		t.Fatal("a missing file gave a key")
	}
	// Malformed keys: the error names the problem, never the value.
	for _, bad := range []string{testKeyHex[:63] + "z", testKeyHex + "00", "0x" + strings.Repeat("0", 64), "secret-passphrase"} {
		t.Setenv("ONCHAIN_TEST_KEY", bad)
		_, err := KeyFromEnv("ONCHAIN_TEST_KEY")
		if err == nil {
			t.Fatalf("%q accepted", bad)
		}
		if strings.Contains(err.Error(), bad) || strings.Contains(err.Error(), testKeyHex[:16]) {
			t.Fatalf("the error shows the key: %v", err)
		}
	}
}

// FuzzParseKey: whatever the input, ParseKey never panics and its error
// never contains the input.
func FuzzParseKey(f *testing.F) {
	f.Add(testKeyHex)
	f.Add("0x" + testKeyHex)
	f.Add("")
	f.Add(strings.Repeat("f", 64))
	f.Fuzz(func(t *testing.T, s string) {
		k, err := ParseKey(s)
		if err == nil {
			if k == nil {
				t.Fatal("nil key without error")
			}
			return
		}
		in := strings.TrimPrefix(strings.TrimSpace(s), "0x")
		if len(in) >= 16 && strings.Trim(in, "0123456789abcdefABCDEF") == "" && strings.Contains(err.Error(), in) {
			t.Fatalf("the error %q echoes the input", err)
		}
	})
}

func TestClassifySend(t *testing.T) {
	rpcErr := func(msg string) error { return &jsonError{msg} }
	for _, c := range []struct {
		err  error
		want sendKind
	}{
		{nil, sendTaken},
		{rpcErr("already known"), sendTaken},
		{rpcErr("nonce too low: next nonce 5, tx nonce 4"), sendBadNonce},
		{rpcErr("Insufficient funds for gas * price + value"), sendNoFunds},
		{rpcErr("replacement transaction underpriced"), sendOccupied},
		{rpcErr("transaction underpriced: tip needed 1, tip permitted 0"), sendUnderpriced},
		{rpcErr("max fee per gas less than block base fee"), sendUnderpriced},
		{rpcErr("intrinsic gas too low"), sendRefused},
		{errors.New("dial tcp 127.0.0.1:1: connection refused"), sendMaybe},
		{rpc.HTTPError{StatusCode: 400}, sendRefused},
		{rpc.HTTPError{StatusCode: 502}, sendMaybe},
	} {
		if got := classifySend(c.err); got != c.want {
			t.Errorf("%v: %d, want %d", c.err, got, c.want)
		}
	}
}

// jsonError is a JSON-RPC error answer (rpc.Error).
type jsonError struct{ msg string }

func (e *jsonError) Error() string  { return e.msg }
func (e *jsonError) ErrorCode() int { return -32000 }

func TestRevertReason(t *testing.T) {
	for text, want := range map[string]string{
		"FiatTokenV2: authorization is used or canceled": "invalid_exact_evm_nonce_already_used",
		"FiatTokenV2: authorization is expired":          "invalid_exact_evm_payload_authorization_valid_before",
		"FiatTokenV2: authorization is not yet valid":    "invalid_exact_evm_payload_authorization_valid_after",
		"FiatTokenV2: invalid signature":                 "invalid_exact_evm_signature",
		"ECRecover: invalid signature length":            "invalid_exact_evm_signature",
		"ERC20: transfer amount exceeds balance":         ReasonInsufficientBalance,
		"Pausable: paused":                               ReasonSimulationFailed,
	} {
		if got := revertReason(text); got != want {
			t.Errorf("%q: %s, want %s", text, got, want)
		}
	}
}

package anviltest

import (
	"context"
	"crypto/ecdsa"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
)

// typedDigest is the EIP-712 digest of a struct hash under USDC's domain on
// this chain, computed here independently of the code under test.
func typedDigest(structHash []byte) []byte {
	sep := crypto.Keccak256(
		crypto.Keccak256([]byte("EIP712Domain(string name,string version,uint256 chainId,address verifyingContract)")),
		crypto.Keccak256([]byte("USD Coin")), crypto.Keccak256([]byte("2")),
		common.LeftPadBytes(big.NewInt(ChainID).Bytes(), 32), common.LeftPadBytes(USDC.Bytes(), 32))
	return crypto.Keccak256([]byte{0x19, 0x01}, sep, structHash)
}

func word(b []byte) []byte { return common.LeftPadBytes(b, 32) }

// auth is an EIP-3009 authorization for the tests.
type auth struct {
	from, to             common.Address
	value, after, before *big.Int
	nonce                [32]byte
}

func (a auth) sign(t *testing.T, key *ecdsa.PrivateKey, typ string) []byte {
	t.Helper()
	sh := crypto.Keccak256(crypto.Keccak256([]byte(typ+"(address from,address to,uint256 value,uint256 validAfter,uint256 validBefore,bytes32 nonce)")),
		word(a.from.Bytes()), word(a.to.Bytes()), word(a.value.Bytes()), word(a.after.Bytes()), word(a.before.Bytes()), a.nonce[:])
	sig, err := crypto.Sign(typedDigest(sh), key)
	if err != nil {
		t.Fatal(err)
	}
	sig[64] += 27
	return sig
}

// revert eth_calls the token from `from` and returns the revert text ("" if
// the call succeeds).
func (c *Chain) revert(t *testing.T, from common.Address, method string, args ...any) string {
	t.Helper()
	data, err := c.ABI.Pack(method, args...)
	if err != nil {
		t.Fatal(err)
	}
	var out hexutil.Bytes
	err = c.RPC.CallContext(context.Background(), &out, "eth_call", map[string]any{"from": from, "to": USDC, "data": hexutil.Bytes(data)}, "latest")
	if err == nil {
		return ""
	}
	return err.Error()
}

func methodFor(c *Chain, name string, inputs int) string {
	for n, m := range c.ABI.Methods {
		if m.RawName == name && len(m.Inputs) == inputs {
			return n
		}
	}
	panic("no method " + name)
}

// TestTokenRevertsAsUSDC checks TestUSDC's EIP-3009 behaviour: both
// transferWithAuthorization forms, receiveWithAuthorization,
// cancelAuthorization, the events and USDC's revert reasons.
func TestTokenRevertsAsUSDC(t *testing.T) {
	c := Start(t, Options{})
	payerKey, payer := NewKey(t)
	relayerKey, relayer := NewKey(t)
	_, payee := NewKey(t)
	c.SetBalance(t, relayer, Ether(1))
	c.Mint(t, payer, big.NewInt(5_000_000))
	now := time.Now().Unix()
	fresh := func(value int64) auth {
		var n [32]byte
		copy(n[:], crypto.Keccak256([]byte(time.Now().String()), big.NewInt(value).Bytes()))
		return auth{from: payer, to: payee, value: big.NewInt(value), after: big.NewInt(now - 600), before: big.NewInt(now + 600), nonce: n}
	}
	vrs := methodFor(c, "transferWithAuthorization", 9)
	byBytes := methodFor(c, "transferWithAuthorization", 7)
	call := func(a auth, sig []byte, form string) string {
		if form == vrs {
			var r, s [32]byte
			copy(r[:], sig[:32])
			copy(s[:], sig[32:64])
			return c.revert(t, relayer, vrs, a.from, a.to, a.value, a.after, a.before, a.nonce, sig[64], r, s)
		}
		return c.revert(t, relayer, byBytes, a.from, a.to, a.value, a.after, a.before, a.nonce, sig)
	}

	for _, form := range []string{vrs, byBytes} {
		expired := fresh(1)
		expired.before = big.NewInt(now - 1)
		early := fresh(2)
		early.after = big.NewInt(now + 600)
		tooMuch := fresh(6_000_000)
		wrongSigner := fresh(3)
		good := fresh(4)
		highS := good.sign(t, payerKey, "TransferWithAuthorization")
		s := new(big.Int).SetBytes(highS[32:64])
		s.Sub(crypto.S256().Params().N, s)
		copy(highS[32:64], word(s.Bytes()))
		highS[64] ^= 1 // 27 <-> 28
		for name, tc := range map[string]struct {
			a    auth
			sig  []byte
			want string
		}{
			"expired":       {expired, expired.sign(t, payerKey, "TransferWithAuthorization"), "FiatTokenV2: authorization is expired"},
			"not yet valid": {early, early.sign(t, payerKey, "TransferWithAuthorization"), "FiatTokenV2: authorization is not yet valid"},
			"balance":       {tooMuch, tooMuch.sign(t, payerKey, "TransferWithAuthorization"), "ERC20: transfer amount exceeds balance"},
			"wrong signer":  {wrongSigner, wrongSigner.sign(t, relayerKey, "TransferWithAuthorization"), "FiatTokenV2: invalid signature"},
			"receive type":  {good, good.sign(t, payerKey, "ReceiveWithAuthorization"), "FiatTokenV2: invalid signature"},
			"high s":        {good, highS, "ECRecover: invalid signature 's' value"},
		} {
			if got := call(tc.a, tc.sig, form); !strings.Contains(got, tc.want) {
				t.Errorf("%s, %s: %q, want %q", form, name, got, tc.want)
			}
		}
		if got := call(good, good.sign(t, payerKey, "TransferWithAuthorization"), form); got != "" {
			t.Errorf("%s: a good authorization reverts: %s", form, got)
		}
	}
	if got := c.revert(t, relayer, byBytes, payer, payee, big.NewInt(1), big.NewInt(now-600), big.NewInt(now+600), [32]byte{9}, make([]byte, 64)); !strings.Contains(got, "ECRecover: invalid signature length") {
		t.Errorf("64-byte signature: %q", got)
	}

	// receiveWithAuthorization: only the payee may submit it.
	recv := fresh(7)
	rsig := recv.sign(t, payerKey, "ReceiveWithAuthorization")
	recvBytes := methodFor(c, "receiveWithAuthorization", 7)
	if got := c.revert(t, relayer, recvBytes, recv.from, recv.to, recv.value, recv.after, recv.before, recv.nonce, rsig); !strings.Contains(got, "FiatTokenV2: caller must be the payee") {
		t.Errorf("receive by another: %q", got)
	}
	if got := c.revert(t, payee, recvBytes, recv.from, recv.to, recv.value, recv.after, recv.before, recv.nonce, rsig); got != "" {
		t.Errorf("receive by the payee: %q", got)
	}

	// A transfer, then the same authorization again; a cancellation, then
	// its authorization.
	used := fresh(11)
	sig := used.sign(t, payerKey, "TransferWithAuthorization")
	rcpt := c.send(t, relayerKey, byBytes, used.from, used.to, used.value, used.after, used.before, used.nonce, sig)
	if len(rcpt.Logs) != 2 || rcpt.Logs[0].Topics[0] != c.ABI.Events["AuthorizationUsed"].ID || rcpt.Logs[1].Topics[0] != c.ABI.Events["Transfer"].ID {
		t.Fatalf("transfer events: %+v", rcpt.Logs)
	}
	if got := call(used, sig, vrs); !strings.Contains(got, "FiatTokenV2: authorization is used or canceled") {
		t.Errorf("used again: %q", got)
	}
	canceled := fresh(12)
	csh := crypto.Keccak256(crypto.Keccak256([]byte("CancelAuthorization(address authorizer,bytes32 nonce)")), word(payer.Bytes()), canceled.nonce[:])
	csig, err := crypto.Sign(typedDigest(csh), payerKey)
	if err != nil {
		t.Fatal(err)
	}
	csig[64] += 27
	rcpt = c.send(t, relayerKey, methodFor(c, "cancelAuthorization", 3), payer, canceled.nonce, csig)
	if len(rcpt.Logs) != 1 || rcpt.Logs[0].Topics[0] != c.ABI.Events["AuthorizationCanceled"].ID {
		t.Fatalf("cancel events: %+v", rcpt.Logs)
	}
	if !c.AuthorizationState(t, payer, canceled.nonce) {
		t.Error("a canceled authorization is not marked")
	}
	if got := call(canceled, canceled.sign(t, payerKey, "TransferWithAuthorization"), byBytes); !strings.Contains(got, "FiatTokenV2: authorization is used or canceled") {
		t.Errorf("canceled, then used: %q", got)
	}
	if got := c.TokenBalance(t, payee); got.Int64() != 11 {
		t.Errorf("payee balance %s, want 11", got)
	}
}

// send signs and sends a call of the token from key and waits for its
// successful receipt.
func (c *Chain) send(t *testing.T, key *ecdsa.PrivateKey, method string, args ...any) *types.Receipt {
	t.Helper()
	ctx := context.Background()
	data, err := c.ABI.Pack(method, args...)
	if err != nil {
		t.Fatal(err)
	}
	from := crypto.PubkeyToAddress(key.PublicKey)
	nonce, err := c.Client.PendingNonceAt(ctx, from)
	if err != nil {
		t.Fatal(err)
	}
	head, err := c.Client.HeaderByNumber(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	to := USDC
	tx, err := types.SignNewTx(key, types.LatestSignerForChainID(big.NewInt(ChainID)), &types.DynamicFeeTx{
		ChainID: big.NewInt(ChainID), Nonce: nonce, GasTipCap: big.NewInt(1),
		GasFeeCap: new(big.Int).Add(new(big.Int).Mul(head.BaseFee, big.NewInt(2)), big.NewInt(1)), Gas: 200_000, To: &to, Data: data,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Client.SendTransaction(ctx, tx); err != nil {
		t.Fatal(err)
	}
	r := c.WaitReceipt(t, tx.Hash())
	if r.Status != types.ReceiptStatusSuccessful {
		t.Fatalf("%s reverted", method)
	}
	return r
}

// The batch-settlement contracts installed at their canonical addresses
// work on anvil: deposit, vouchers, a signed claim, the sweep to payTo and
// a signed refund.
func TestBatchSettlementOnAnvil(t *testing.T) {
	c := Start(t, Options{})
	relayer, relayerAddr := NewKey(t)
	payer, payerAddr := NewKey(t)
	c.SetBalance(t, relayerAddr, Ether(10))
	c.Mint(t, payerAddr, big.NewInt(1_000_000))
	BatchRoundTrip(t, c.Client, relayer, payer)
}

package exact

import (
	"crypto/ecdsa"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"

	"github.com/seed1284c1d2/svc/x402"
	"github.com/seed1284c1d2/svc/x402/internal/evmaddr"
)

// Test vectors. A: the signed payment example of the x402 v2
// specification (coinbase/x402, specs/x402-specification-v2.md), an
// EIP-3009 transferWithAuthorization on Base Sepolia signed over its
// EIP-712 domain; vecAOther is what the same signature recovers to under
// the domain name "USD Coin". B: the first development key of Hardhat and
// Anvil. C1 (Base) and C2 (Base Sepolia, A's authorization to another
// payee): deterministic (RFC 6979) signatures by key B, computed with
// viem.
const (
	vecKeyB     = "ac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80"
	vecAddrB    = "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266"
	vecAFrom    = "0x857b06519E91e3A54538791bDbb0E22373e36b66"
	vecATo      = "0x209693Bc6afc0C5328bA36FaF03C514EF312287C"
	vecANonce   = "0xf3746613c2d920b5fdabc0856f2aeb2d4f88ee6037b8cc5d04a71a4462f13480"
	vecASig     = "0x2d6a7588d6acca505cbf0d9a4a227e0c52c6c34008c8e8986a1283259764173608a2ce6496642e377d6da8dbbf5836e9bd15092f9ecab05ded3d6293af148b571c"
	vecAStruct  = "0x49ad644555c7bdf3ea4fc022a4940ae5589b230b1dde0065c5504fa19bbe39a4"
	vecADigest  = "0xf256992871671abcb27ff92885a7afa46218724e5fc0bac35d050115aa1d22e6"
	vecAOther   = "0xED07B31Fa76779c7A25BA712fB1bFBECefa2ad7e"
	vecCTo      = "0x70997970C51812dc3A010C7d01b50e0d17dc79C8"
	vecC1Struct = "0xb356af543e352423ea691ce0401e3da9b8448de478fdba9363a74b61da1c66f3"
	vecC1Digest = "0xca1b93651796c7e06c3844a2c00ee21b5b12a5bc3cbbd6caacad6bca4e6370ca"
	vecC1Sig    = "0x96970b86cd78787cd45dcd7be869ca393975f4ea420e3890d81123417db87de86b19b466566a126b607ab74e5e88377e603993caf7b416d12cbc499ffdb92e631c"
	vecC2Struct = "0x06e588254ea3b3b6fcb40f1eec279f28af77c9f9ba2f9ba7b0cdf0ef559eb03b"
	vecC2Digest = "0xdd936365f5320446e7317e2ff2a02257f642c4528ebbb626575491ff58f0366d"
	vecC2Sig    = "0x6f561d84da69dea3bf562f243b08ec7d3b6b140f7466c7c797d2a24554ed477b60b03719ddabe477324676e2ede73876c8ae62be1c0630b75bb5f050f48b21d71c"
)

func vecAAuth() Authorization {
	return Authorization{From: vecAFrom, To: vecATo, Value: "10000", ValidAfter: "1740672089", ValidBefore: "1740672154", Nonce: vecANonce}
}

func vecC1Auth() Authorization {
	return Authorization{From: vecAddrB, To: vecCTo, Value: "2500", ValidAfter: "0", ValidBefore: "1900000000", Nonce: "0x" + strings.Repeat("01", 32)}
}

func vecC2Auth() Authorization {
	a := vecAAuth()
	a.From, a.To = vecAddrB, vecCTo
	return a
}

func mustNetwork(t testing.TB, id string) x402.Network {
	t.Helper()
	n, ok := x402.LookupNetwork(id)
	if !ok {
		t.Fatalf("network %s unknown", id)
	}
	return n
}

func vecKey(t testing.TB) *ecdsa.PrivateKey {
	t.Helper()
	k, err := crypto.HexToECDSA(vecKeyB)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func mustSig(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.TrimPrefix(s, "0x"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestTypeHashesAndSeparators(t *testing.T) {
	th := typeHashes()
	if got := th[0].Hex(); got != "0x7c7c6cdb67a18743f49ec6fa9b35f50d52ed05cbed4cc592e13b44501c1a2267" {
		t.Errorf("TransferWithAuthorization typehash = %s", got)
	}
	if got := th[1].Hex(); got != "0x8b73c3c69bb8fe3d512ecc4cf759cc79239f7b179b0ffacaa9a75d522b39400f" {
		t.Errorf("EIP712Domain typehash = %s", got)
	}
	for _, c := range []struct{ net, sep string }{
		{x402.NetworkBase, "0x02fa7265e7c5d81118673727957699e4d68f74cd74b7db77da710fe8a2c7834f"},
		{x402.NetworkBaseSepolia, "0x71f17a3b2ff373b803d70a5a07c046c1a2bc8e89c09ef722fcb047abe94c9818"},
	} {
		d := Domain(mustNetwork(t, c.net))
		if got := d.Separator().Hex(); got != c.sep {
			t.Errorf("%s separator = %s, want %s", c.net, got, c.sep)
		}
		if got := domainSeparatorCached(d).Hex(); got != c.sep {
			t.Errorf("%s cached separator = %s, want %s", c.net, got, c.sep)
		}
	}
}

func TestVectorA(t *testing.T) {
	d := Domain(mustNetwork(t, x402.NetworkBaseSepolia))
	sh, err := AuthorizationStructHash(vecAAuth())
	if err != nil || sh.Hex() != vecAStruct {
		t.Fatalf("struct hash = %s, %v; want %s", sh.Hex(), err, vecAStruct)
	}
	digest, err := AuthorizationDigest(d, vecAAuth())
	if err != nil || digest.Hex() != vecADigest {
		t.Fatalf("digest = %s, %v; want %s", digest.Hex(), err, vecADigest)
	}
	signer, err := RecoverSigner(digest[:], mustSig(t, vecASig))
	if err != nil || signer.Hex() != vecAFrom {
		t.Fatalf("signer = %s, %v; want %s", signer.Hex(), err, vecAFrom)
	}
	// The same signature under the Base mainnet name recovers someone else.
	d.Name = "USD Coin"
	digest2, err := AuthorizationDigest(d, vecAAuth())
	if err != nil {
		t.Fatal(err)
	}
	other, err := RecoverSigner(digest2[:], mustSig(t, vecASig))
	if err != nil || other.Hex() != vecAOther {
		t.Fatalf("signer under wrong name = %s, %v; want %s", other.Hex(), err, vecAOther)
	}
	// v as 0/1 recovers the same address.
	sig := mustSig(t, vecASig)
	sig[64] -= 27
	if s2, err := RecoverSigner(digest[:], sig); err != nil || s2.Hex() != vecAFrom {
		t.Fatalf("v=1: signer = %s, %v", s2.Hex(), err)
	}
}

func TestVectorBKeyAddress(t *testing.T) {
	if got := crypto.PubkeyToAddress(vecKey(t).PublicKey).Hex(); got != vecAddrB {
		t.Fatalf("address = %s, want %s", got, vecAddrB)
	}
}

func TestVectorsC(t *testing.T) {
	key := vecKey(t)
	for _, c := range []struct {
		name, net            string
		auth                 Authorization
		structH, digest, sig string
	}{
		{"C1 Base", x402.NetworkBase, vecC1Auth(), vecC1Struct, vecC1Digest, vecC1Sig},
		{"C2 Base Sepolia", x402.NetworkBaseSepolia, vecC2Auth(), vecC2Struct, vecC2Digest, vecC2Sig},
	} {
		t.Run(c.name, func(t *testing.T) {
			n := mustNetwork(t, c.net)
			sh, err := AuthorizationStructHash(c.auth)
			if err != nil || sh.Hex() != c.structH {
				t.Errorf("struct hash = %s, %v; want %s", sh.Hex(), err, c.structH)
			}
			digest, err := AuthorizationDigest(Domain(n), c.auth)
			if err != nil || digest.Hex() != c.digest {
				t.Errorf("digest = %s, %v; want %s", digest.Hex(), err, c.digest)
			}
			sig, err := SignAuthorization(key, n, "", c.auth)
			if err != nil || sig != c.sig {
				t.Errorf("signature = %s, %v; want %s", sig, err, c.sig)
			}
			signer, err := RecoverSigner(digest[:], mustSig(t, c.sig))
			if err != nil || signer.Hex() != vecAddrB {
				t.Errorf("signer = %s, %v", signer.Hex(), err)
			}
		})
	}
}

func TestNewPayload(t *testing.T) {
	key := vecKey(t)
	req := testRequirements(t, x402.NetworkBase)
	p, err := NewPayload(key, req, testNow, 0)
	if err != nil {
		t.Fatal(err)
	}
	a := p.Authorization
	if a.From != vecAddrB || a.To != testPayTo || a.Value != "3400" ||
		a.ValidAfter != fmt.Sprint(testNow.Unix()-600) || a.ValidBefore != fmt.Sprint(testNow.Unix()+300) {
		t.Fatalf("authorization %+v", a)
	}
	var nonce [32]byte
	if !evmaddr.DecodeHex(nonce[:], a.Nonce) || nonce == ([32]byte{}) {
		t.Fatalf("nonce %q", a.Nonce)
	}
	p2, _ := NewPayload(key, req, testNow, 0)
	if p2.Authorization.Nonce == a.Nonce {
		t.Fatal("nonce repeated")
	}
	// The signature recovers to the key under the requirements' domain.
	digest, _ := AuthorizationDigest(Domain(mustNetwork(t, x402.NetworkBase)), a)
	if s, err := RecoverSigner(digest[:], mustSig(t, p.Signature)); err != nil || s.Hex() != vecAddrB {
		t.Fatalf("recovered %s, %v", s.Hex(), err)
	}
	// Explicit validity; maxTimeoutSeconds 0 falls back to the default.
	p, _ = NewPayload(key, req, testNow, 90*time.Second)
	if p.Authorization.ValidBefore != fmt.Sprint(testNow.Unix()+90) {
		t.Fatalf("validBefore %s", p.Authorization.ValidBefore)
	}
	r0 := req
	r0.MaxTimeoutSeconds = 0
	p, _ = NewPayload(key, r0, testNow, 0)
	if p.Authorization.ValidBefore != fmt.Sprint(testNow.Unix()+x402.DefaultMaxTimeoutSeconds) {
		t.Fatalf("validBefore %s", p.Authorization.ValidBefore)
	}
	// validAfter never goes below zero.
	p, _ = NewPayload(key, req, time.Unix(100, 0), 0)
	if p.Authorization.ValidAfter != "0" {
		t.Fatalf("validAfter %s", p.Authorization.ValidAfter)
	}
	for name, mut := range map[string]func(*x402.PaymentRequirements){
		"scheme":     func(r *x402.PaymentRequirements) { r.Scheme = "upto" },
		"network":    func(r *x402.PaymentRequirements) { r.Network = "eip155:1" },
		"no extra":   func(r *x402.PaymentRequirements) { r.Extra = nil },
		"no version": func(r *x402.PaymentRequirements) { r.Extra = map[string]any{"name": "USD Coin"} },
		"payTo":      func(r *x402.PaymentRequirements) { r.PayTo = "nobody" },
		"amount 0":   func(r *x402.PaymentRequirements) { r.Amount = "0" },
		"amount bad": func(r *x402.PaymentRequirements) { r.Amount = "1.5" },
		"asset":      func(r *x402.PaymentRequirements) { r.Asset = "usdc" },
	} {
		r := req
		mut(&r)
		if _, err := NewPayload(key, r, testNow, 0); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	if _, err := NewPayload(nil, req, testNow, 0); err == nil {
		t.Error("nil key accepted")
	}
}

func TestSignAuthorizationErrors(t *testing.T) {
	key := vecKey(t)
	n := mustNetwork(t, x402.NetworkBase)
	if _, err := SignAuthorization(key, n, "", vecAAuth()); err == nil || !strings.Contains(err.Error(), "not the key's address") {
		t.Fatalf("foreign from: %v", err)
	}
	bad := vecC1Auth()
	bad.Nonce = "0x01"
	if _, err := SignAuthorization(key, n, "", bad); err == nil || !strings.Contains(err.Error(), "nonce") {
		t.Fatalf("bad nonce: %v", err)
	}
	if _, err := SignAuthorization(key, n, "0x12", vecC1Auth()); err == nil {
		t.Fatal("bad asset accepted")
	}
	if _, err := SignAuthorization(key, x402.Network{}, n.USDC, vecC1Auth()); err == nil {
		t.Fatal("empty domain accepted")
	}
	if _, err := SignAuthorization(nil, n, "", vecC1Auth()); err == nil {
		t.Fatal("nil key accepted")
	}
	if _, err := AuthorizationDigest(Domain(n), Authorization{}); err == nil {
		t.Fatal("empty authorization hashed")
	}
	if _, err := AuthorizationStructHash(Authorization{From: vecAddrB}); err == nil || !strings.Contains(err.Error(), "authorization.to") {
		t.Fatalf("struct hash of a bad authorization: %v", err)
	}
}

func TestRecoverSignerRejects(t *testing.T) {
	digest := common.HexToHash(vecADigest)
	sig := mustSig(t, vecASig)
	cases := map[string]struct {
		digest, sig []byte
		want        error
	}{
		"short digest": {digest[:31], sig, nil},
		"short sig":    {digest[:], sig[:64], ErrSignatureFormat},
		"long sig":     {digest[:], append(append([]byte{}, sig...), 0), ErrSignatureFormat},
		"v=29":         {digest[:], withByte(sig, 64, 29), ErrSignatureFormat},
		"v=2":          {digest[:], withByte(sig, 64, 2), ErrSignatureFormat},
		"r zero":       {digest[:], withRange(sig, 0, 32, 0), ErrSignatureFormat},
		"s zero":       {digest[:], withRange(sig, 32, 64, 0), ErrSignatureFormat},
		"r ≥ n":        {digest[:], withRange(sig, 0, 32, 0xff), ErrSignatureFormat},
		"high s":       {digest[:], mustSig(t, highS(t, vecASig)), ErrSignatureHighS},
		"s = n/2 + 1":  {digest[:], withS(sig, halfNPlus(1)), ErrSignatureHighS},
	}
	for name, c := range cases {
		_, err := RecoverSigner(c.digest, c.sig)
		if err == nil || (c.want != nil && !errors.Is(err, c.want)) {
			t.Errorf("%s: err = %v, want %v", name, err, c.want)
		}
	}
	// The high-s twin of a valid signature still recovers the signer
	// mathematically: only the explicit check refuses it.
	twin := mustSig(t, highS(t, vecASig))
	twin[64] -= 27
	if pub, err := crypto.Ecrecover(digest[:], twin); err != nil || common.BytesToAddress(crypto.Keccak256(pub[1:])[12:]).Hex() != vecAFrom {
		t.Fatalf("high-s twin does not recover the signer: %v", err)
	}
	// s exactly n/2 is low (accepted by the format check; recovery decides).
	if _, err := RecoverSigner(digest[:], withS(sig, secpHalfN)); errors.Is(err, ErrSignatureHighS) {
		t.Error("s = n/2 refused as high")
	}
}

func withByte(b []byte, i int, v byte) []byte {
	out := append([]byte{}, b...)
	out[i] = v
	return out
}

func withRange(b []byte, from, to int, v byte) []byte {
	out := append([]byte{}, b...)
	for i := from; i < to; i++ {
		out[i] = v
	}
	return out
}

func withS(b []byte, s [32]byte) []byte {
	out := append([]byte{}, b...)
	copy(out[32:64], s[:])
	return out
}

func halfNPlus(k byte) [32]byte {
	s := secpHalfN
	s[31] += k
	return s
}

package exact

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/crypto"

	"github.com/seed1284c1d2/svc/x402"
)

func testVerifier() Verifier { return Verifier{Now: testClock} }

func TestVerifyAcceptsValidPayment(t *testing.T) {
	key := vecKey(t)
	for _, network := range []string{x402.NetworkBase, x402.NetworkBaseSepolia} {
		req := testRequirements(t, network)
		payload, p := testPayment(t, key, req)
		payer, err := testVerifier().Verify(payload, req)
		if err != nil {
			t.Fatalf("%s: %v", network, err)
		}
		if payer != vecAddrB || p.Authorization.From != vecAddrB {
			t.Fatalf("%s: payer = %s", network, payer)
		}
	}
}

// TestVerifyVectorA verifies the real signature of the specification at a
// time inside its validity window.
func TestVerifyVectorA(t *testing.T) {
	n := mustNetwork(t, x402.NetworkBaseSepolia)
	req := x402.PaymentRequirements{
		Scheme: x402.SchemeExact, Network: n.CAIP2, Amount: "10000", Asset: n.USDC, PayTo: vecATo,
		MaxTimeoutSeconds: 60, Extra: map[string]any{"name": "USDC", "version": "2"},
	}
	payload := wrapPayment(t, req, ExactEVMPayload{Signature: vecASig, Authorization: vecAAuth()})
	v := Verifier{Now: func() time.Time { return time.Unix(1740672100, 0) }}
	payer, err := v.Verify(payload, req)
	if err != nil || payer != vecAFrom {
		t.Fatalf("payer %s, err %v", payer, err)
	}
	// One second later fewer than 6 s of validity remain.
	v.Now = func() time.Time { return time.Unix(1740672149, 0) }
	if _, err := v.Verify(payload, req); reasonOf(err) != ReasonValidBefore {
		t.Fatalf("err = %v, want %s", err, ReasonValidBefore)
	}
}

func reasonOf(err error) string {
	var ve *VerifyError
	if errors.As(err, &ve) {
		return ve.Reason
	}
	if err == nil {
		return "<nil>"
	}
	return "not a VerifyError: " + err.Error()
}

// TestVerifyReasons changes one thing in a valid payment per case and checks
// the reason of the refusal.
func TestVerifyReasons(t *testing.T) {
	key := vecKey(t)
	base := testRequirements(t, x402.NetworkBase)
	_, good := testPayment(t, key, base)

	type mutation struct {
		name   string
		reason string
		// req and payload mutate copies of the requirements, the accepted
		// requirements, and the exact payload.
		mutate func(req, acc *x402.PaymentRequirements, p *ExactEVMPayload, pp *x402.PaymentPayload)
		now    time.Time
	}
	resign := func(p *ExactEVMPayload, req x402.PaymentRequirements) {
		sig, err := SignAuthorization(key, mustNetwork(t, req.Network), req.Asset, p.Authorization)
		if err != nil {
			t.Fatal(err)
		}
		p.Signature = sig
	}
	cases := []mutation{
		{name: "version 3", reason: x402.ReasonInvalidX402Version, mutate: func(_, _ *x402.PaymentRequirements, _ *ExactEVMPayload, pp *x402.PaymentPayload) { pp.X402Version = 3 }},
		{name: "version 0", reason: x402.ReasonInvalidX402Version, mutate: func(_, _ *x402.PaymentRequirements, _ *ExactEVMPayload, pp *x402.PaymentPayload) { pp.X402Version = 0 }},
		{name: "accepted scheme", reason: ReasonScheme, mutate: func(_, acc *x402.PaymentRequirements, _ *ExactEVMPayload, _ *x402.PaymentPayload) {
			acc.Scheme = "upto"
		}},
		{name: "required scheme", reason: ReasonScheme, mutate: func(req, acc *x402.PaymentRequirements, _ *ExactEVMPayload, _ *x402.PaymentPayload) {
			req.Scheme, acc.Scheme = "upto", "upto"
		}},
		{name: "network mismatch", reason: ReasonNetworkMismatch, mutate: func(_, acc *x402.PaymentRequirements, _ *ExactEVMPayload, _ *x402.PaymentPayload) {
			acc.Network = x402.NetworkBaseSepolia
		}},
		{name: "unknown network", reason: x402.ReasonInvalidNetwork, mutate: func(req, acc *x402.PaymentRequirements, _ *ExactEVMPayload, _ *x402.PaymentPayload) {
			req.Network, acc.Network = "eip155:1", "eip155:1"
		}},
		{name: "accepted asset", reason: ReasonAssetMismatch, mutate: func(_, acc *x402.PaymentRequirements, _ *ExactEVMPayload, _ *x402.PaymentPayload) {
			acc.Asset = "0x036CbD53842c5426634e7929541eC2318f3dCF7e"
		}},
		{name: "accepted payTo", reason: ReasonRequirementsMismatch, mutate: func(_, acc *x402.PaymentRequirements, _ *ExactEVMPayload, _ *x402.PaymentPayload) { acc.PayTo = vecATo }},
		{name: "accepted amount", reason: ReasonRequirementsMismatch, mutate: func(_, acc *x402.PaymentRequirements, _ *ExactEVMPayload, _ *x402.PaymentPayload) {
			acc.Amount = "3401"
		}},
		{name: "accepted maxTimeoutSeconds", reason: ReasonRequirementsMismatch, mutate: func(_, acc *x402.PaymentRequirements, _ *ExactEVMPayload, _ *x402.PaymentPayload) {
			acc.MaxTimeoutSeconds = 60
		}},
		{name: "asset not USDC", reason: ReasonAssetMismatch, mutate: func(req, acc *x402.PaymentRequirements, _ *ExactEVMPayload, _ *x402.PaymentPayload) {
			req.Asset, acc.Asset = vecATo, vecATo
		}},
		{name: "missing domain", reason: ReasonMissingEIP712Domain, mutate: func(req, _ *x402.PaymentRequirements, _ *ExactEVMPayload, _ *x402.PaymentPayload) { req.Extra = nil }},
		{name: "missing version", reason: ReasonMissingEIP712Domain, mutate: func(req, _ *x402.PaymentRequirements, _ *ExactEVMPayload, _ *x402.PaymentPayload) {
			req.Extra = map[string]any{"name": "USD Coin"}
		}},
		{name: "wrong token name", reason: ReasonTokenNameMismatch, mutate: func(req, _ *x402.PaymentRequirements, _ *ExactEVMPayload, _ *x402.PaymentPayload) {
			req.Extra = map[string]any{"name": "USDC", "version": "2"}
		}},
		{name: "wrong token version", reason: ReasonTokenVersionMismatch, mutate: func(req, _ *x402.PaymentRequirements, _ *ExactEVMPayload, _ *x402.PaymentPayload) {
			req.Extra = map[string]any{"name": "USD Coin", "version": "1"}
		}},
		{name: "payload not an object", reason: ReasonInvalidPayload, mutate: func(_, _ *x402.PaymentRequirements, _ *ExactEVMPayload, pp *x402.PaymentPayload) {
			pp.Payload = json.RawMessage(`"x"`)
		}},
		{name: "payload without authorization", reason: ReasonInvalidPayload, mutate: func(_, _ *x402.PaymentRequirements, _ *ExactEVMPayload, pp *x402.PaymentPayload) {
			pp.Payload = json.RawMessage(`{"signature":"0x00","permit2Authorization":{}}`)
		}},
		{name: "payload wrong type", reason: ReasonInvalidPayload, mutate: func(_, _ *x402.PaymentRequirements, _ *ExactEVMPayload, pp *x402.PaymentPayload) {
			pp.Payload = json.RawMessage(`{"signature":1,"authorization":{}}`)
		}},
		{name: "missing signature", reason: ReasonMissingSignature, mutate: func(_, _ *x402.PaymentRequirements, p *ExactEVMPayload, _ *x402.PaymentPayload) { p.Signature = "" }},
		{name: "signature not hex", reason: ReasonSignatureFormat, mutate: func(_, _ *x402.PaymentRequirements, p *ExactEVMPayload, _ *x402.PaymentPayload) {
			p.Signature = "0x" + strings.Repeat("zz", 65)
		}},
		{name: "signature too long (smart wallet)", reason: ReasonSignatureFormat, mutate: func(_, _ *x402.PaymentRequirements, p *ExactEVMPayload, _ *x402.PaymentPayload) {
			p.Signature += "00"
		}},
		{name: "signature without 0x", reason: ReasonSignatureFormat, mutate: func(_, _ *x402.PaymentRequirements, p *ExactEVMPayload, _ *x402.PaymentPayload) {
			p.Signature = p.Signature[2:] + "00"
		}},
		{name: "from not an address", reason: ReasonInvalidPayload, mutate: func(_, _ *x402.PaymentRequirements, p *ExactEVMPayload, _ *x402.PaymentPayload) {
			p.Authorization.From = "0x1234"
		}},
		{name: "to not an address", reason: ReasonInvalidPayload, mutate: func(_, _ *x402.PaymentRequirements, p *ExactEVMPayload, _ *x402.PaymentPayload) {
			p.Authorization.To = "70997970C51812dc3A010C7d01b50e0d17dc79C8aa"
		}},
		{name: "value with sign", reason: ReasonInvalidPayload, mutate: func(_, _ *x402.PaymentRequirements, p *ExactEVMPayload, _ *x402.PaymentPayload) {
			p.Authorization.Value = "+3400"
		}},
		{name: "value hex", reason: ReasonInvalidPayload, mutate: func(_, _ *x402.PaymentRequirements, p *ExactEVMPayload, _ *x402.PaymentPayload) {
			p.Authorization.Value = "0xd48"
		}},
		{name: "value above 2^256", reason: ReasonInvalidPayload, mutate: func(_, _ *x402.PaymentRequirements, p *ExactEVMPayload, _ *x402.PaymentPayload) {
			p.Authorization.Value = "115792089237316195423570985008687907853269984665640564039457584007913129639936"
		}},
		{name: "validBefore junk", reason: ReasonInvalidPayload, mutate: func(_, _ *x402.PaymentRequirements, p *ExactEVMPayload, _ *x402.PaymentPayload) {
			p.Authorization.ValidBefore = "17e9"
		}},
		{name: "nonce short", reason: ReasonNonceFormat, mutate: func(_, _ *x402.PaymentRequirements, p *ExactEVMPayload, _ *x402.PaymentPayload) {
			p.Authorization.Nonce = "0x01"
		}},
		{name: "nonce without 0x", reason: ReasonNonceFormat, mutate: func(_, _ *x402.PaymentRequirements, p *ExactEVMPayload, _ *x402.PaymentPayload) {
			p.Authorization.Nonce = strings.Repeat("01", 33)
		}},
		{name: "recipient", reason: ReasonRecipientMismatch, mutate: func(req, _ *x402.PaymentRequirements, p *ExactEVMPayload, _ *x402.PaymentPayload) {
			p.Authorization.To = vecATo
			resign(p, *req)
		}},
		{name: "value lower", reason: ReasonValueMismatch, mutate: func(req, _ *x402.PaymentRequirements, p *ExactEVMPayload, _ *x402.PaymentPayload) {
			p.Authorization.Value = "3399"
			resign(p, *req)
		}},
		{name: "value higher", reason: ReasonValueMismatch, mutate: func(req, _ *x402.PaymentRequirements, p *ExactEVMPayload, _ *x402.PaymentPayload) {
			p.Authorization.Value = "3400000"
			resign(p, *req)
		}},
		{name: "valid before too soon", reason: ReasonValidBefore, mutate: func(req, _ *x402.PaymentRequirements, p *ExactEVMPayload, _ *x402.PaymentPayload) {
			p.Authorization.ValidBefore = fmt.Sprint(testNow.Unix() + 5)
			resign(p, *req)
		}},
		{name: "expired (clock moved)", reason: ReasonValidBefore, now: testNow.Add(time.Hour)},
		{name: "not yet valid", reason: ReasonValidAfter, mutate: func(req, _ *x402.PaymentRequirements, p *ExactEVMPayload, _ *x402.PaymentPayload) {
			p.Authorization.ValidAfter = fmt.Sprint(testNow.Unix() + 1)
			resign(p, *req)
		}},
		{name: "signature by another key", reason: ReasonInvalidSignature, mutate: func(req, _ *x402.PaymentRequirements, p *ExactEVMPayload, _ *x402.PaymentPayload) {
			other := newTestKey(t)
			a := p.Authorization
			a.From = crypto.PubkeyToAddress(other.PublicKey).Hex()
			sig, err := SignAuthorization(other, mustNetwork(t, req.Network), "", a)
			if err != nil {
				t.Fatal(err)
			}
			p.Signature = sig
		}},
		{name: "tampered value after signing", reason: ReasonInvalidSignature, mutate: func(req, acc *x402.PaymentRequirements, p *ExactEVMPayload, _ *x402.PaymentPayload) {
			req.Amount, acc.Amount = "3500", "3500"
			p.Authorization.Value = "3500"
		}},
		{name: "signed for another network", reason: ReasonInvalidSignature, mutate: func(_, _ *x402.PaymentRequirements, p *ExactEVMPayload, _ *x402.PaymentPayload) {
			sig, err := SignAuthorization(key, mustNetwork(t, x402.NetworkBaseSepolia), "", p.Authorization)
			if err != nil {
				t.Fatal(err)
			}
			p.Signature = sig
		}},
		{name: "high s", reason: ReasonInvalidSignature, mutate: func(_, _ *x402.PaymentRequirements, p *ExactEVMPayload, _ *x402.PaymentPayload) {
			p.Signature = highS(t, p.Signature)
		}},
		{name: "bad v", reason: ReasonInvalidSignature, mutate: func(_, _ *x402.PaymentRequirements, p *ExactEVMPayload, _ *x402.PaymentPayload) {
			p.Signature = p.Signature[:130] + "1d"
		}},
		{name: "zero r", reason: ReasonInvalidSignature, mutate: func(_, _ *x402.PaymentRequirements, p *ExactEVMPayload, _ *x402.PaymentPayload) {
			p.Signature = "0x" + strings.Repeat("0", 64) + p.Signature[66:]
		}},
	}
	seen := map[string]bool{}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			req := base
			req.Extra = map[string]any{"name": "USD Coin", "version": "2"}
			acc := req
			p := good
			pp := x402.PaymentPayload{X402Version: 2}
			if c.mutate != nil {
				c.mutate(&req, &acc, &p, &pp)
			}
			payload := wrapPayment(t, acc, p)
			if pp.X402Version != 2 {
				payload.X402Version = pp.X402Version
			}
			if pp.Payload != nil {
				payload.Payload = pp.Payload
			}
			v := testVerifier()
			if !c.now.IsZero() {
				v.Now = func() time.Time { return c.now }
			}
			payer, err := v.Verify(payload, req)
			if got := reasonOf(err); got != c.reason {
				t.Fatalf("reason = %s (%v), want %s", got, err, c.reason)
			}
			var ve *VerifyError
			errors.As(err, &ve)
			if ve.Message == "" || !strings.Contains(err.Error(), c.reason) {
				t.Fatalf("error %q lacks a message or the reason", err)
			}
			if c.name == "high s" && !strings.Contains(ve.Message, "high s") {
				t.Fatalf("high s refused for another cause: %v", err)
			}
			if c.reason == ReasonInvalidSignature && payer != p.Authorization.From {
				t.Fatalf("payer = %q on a signature failure, want %q", payer, p.Authorization.From)
			}
			// VerifyExceptSignature: a signature that is hex bytes comes
			// back as sigErr with Verify's reason, every other refusal as
			// err.
			payer2, sigErr, err2 := v.VerifyExceptSignature(payload, req)
			left := c.reason == ReasonInvalidSignature || (c.reason == ReasonSignatureFormat && isHexBytes(p.Signature))
			switch {
			case left && (err2 != nil || reasonOf(sigErr) != c.reason || payer2 != payer):
				t.Fatalf("VerifyExceptSignature: sigErr %v, err %v, payer %q; want the signature left with %s", sigErr, err2, payer2, c.reason)
			case !left && (sigErr != nil || reasonOf(err2) != c.reason):
				t.Fatalf("VerifyExceptSignature: sigErr %v, err %v; want refused with %s", sigErr, err2, c.reason)
			}
		})
		seen[c.reason] = true
	}
	for _, r := range []string{x402.ReasonInvalidX402Version, ReasonScheme, ReasonNetworkMismatch, x402.ReasonInvalidNetwork,
		ReasonRequirementsMismatch, ReasonAssetMismatch, ReasonMissingEIP712Domain, ReasonTokenNameMismatch,
		ReasonTokenVersionMismatch, ReasonInvalidPayload, ReasonMissingSignature, ReasonSignatureFormat, ReasonNonceFormat,
		ReasonRecipientMismatch, ReasonValueMismatch, ReasonValidBefore, ReasonValidAfter, ReasonInvalidSignature} {
		if !seen[r] {
			t.Errorf("no case for reason %s", r)
		}
	}
}

// highS replaces s by n − s and flips the parity in v: the same signature
// in its malleable high-s form, which still recovers to the same key.
func highS(t testing.TB, sigHex string) string {
	t.Helper()
	sig := mustSig(t, sigHex)
	var s [32]byte
	copy(s[:], sig[32:64])
	// n − s, big-endian subtraction.
	var out [32]byte
	borrow := 0
	for i := 31; i >= 0; i-- {
		d := int(secpN[i]) - int(s[i]) - borrow
		borrow = 0
		if d < 0 {
			d += 256
			borrow = 1
		}
		out[i] = byte(d)
	}
	copy(sig[32:64], out[:])
	if sig[64] >= 27 { // 27 ↔ 28, 0 ↔ 1
		sig[64] = 55 - sig[64]
	} else {
		sig[64] ^= 1
	}
	return fmt.Sprintf("0x%x", sig)
}

// TestVerifyExceptSignatureAccepts: a valid payment passes both with no
// sigErr; a contract wallet's long signature passes only with its sigErr.
func TestVerifyExceptSignatureAccepts(t *testing.T) {
	req := testRequirements(t, x402.NetworkBase)
	payload, p := testPayment(t, vecKey(t), req)
	payer, sigErr, err := testVerifier().VerifyExceptSignature(payload, req)
	if err != nil || sigErr != nil || payer != p.Authorization.From {
		t.Fatalf("valid payment: payer %q, sigErr %v, err %v", payer, sigErr, err)
	}
	p.Signature = "0x" + strings.Repeat("ab", 200) // an ERC-1271 wallet's
	long := wrapPayment(t, req, p)
	if _, sigErr, err := testVerifier().VerifyExceptSignature(long, req); err != nil || reasonOf(sigErr) != ReasonSignatureFormat {
		t.Fatalf("long signature: sigErr %v, err %v", sigErr, err)
	}
	if _, err := testVerifier().Verify(long, req); reasonOf(err) != ReasonSignatureFormat {
		t.Fatalf("Verify of a long signature: %v", err)
	}
}

func TestVerifyToleratesCaseAndEquivalentNumbers(t *testing.T) {
	key := vecKey(t)
	req := testRequirements(t, x402.NetworkBase)
	_, p := testPayment(t, key, req)
	// Lower-case addresses in the payload and accepted, v as 0/1, amount
	// with leading zeros: all equivalent.
	acc := req
	acc.Asset = strings.ToLower(acc.Asset)
	acc.PayTo = strings.ToLower(acc.PayTo)
	acc.Amount = "0003400"
	p.Authorization.From = strings.ToLower(p.Authorization.From)
	p.Authorization.To = strings.ToUpper(p.Authorization.To[2:])
	p.Authorization.To = "0x" + p.Authorization.To
	sig := mustSig(t, p.Signature)
	sig[64] -= 27
	p.Signature = fmt.Sprintf("0x%X", sig)
	payer, err := testVerifier().Verify(wrapPayment(t, acc, p), req)
	if err != nil || payer != p.Authorization.From {
		t.Fatalf("payer %s, err %v", payer, err)
	}
}

func TestVerifyV1Payload(t *testing.T) {
	key := vecKey(t)
	req := testRequirements(t, x402.NetworkBase)
	req.Network = "base" // v1 name
	_, p := testPayment(t, key, testRequirements(t, x402.NetworkBase))
	payload := wrapPayment(t, x402.PaymentRequirements{Scheme: x402.SchemeExact, Network: "base"}, p)
	payload.X402Version = 1
	if payer, err := testVerifier().Verify(payload, req); err != nil || payer != vecAddrB {
		t.Fatalf("payer %s, err %v", payer, err)
	}
	// v1 name against CAIP-2 requirements: the same network.
	if payer, err := testVerifier().Verify(payload, testRequirements(t, x402.NetworkBase)); err != nil || payer != vecAddrB {
		t.Fatalf("v1 name vs CAIP-2: payer %s, err %v", payer, err)
	}
	// ... but not another network, and not for v2 payloads.
	if _, err := testVerifier().Verify(payload, testRequirements(t, x402.NetworkBaseSepolia)); reasonOf(err) != ReasonNetworkMismatch {
		t.Fatalf("v1 other network: %v", err)
	}
	payload.X402Version = 2
	if _, err := testVerifier().Verify(payload, testRequirements(t, x402.NetworkBase)); reasonOf(err) != ReasonNetworkMismatch {
		t.Fatalf("v2 with a v1 name: %v", err)
	}
}

func TestVerifyMinValidity(t *testing.T) {
	key := vecKey(t)
	req := testRequirements(t, x402.NetworkBase)
	payload, _ := testPayment(t, key, req) // valid for 300 s
	v := Verifier{Now: testClock, MinValidity: 299 * time.Second}
	if _, err := v.Verify(payload, req); err != nil {
		t.Fatalf("299 s: %v", err)
	}
	v.MinValidity = 301 * time.Second
	if _, err := v.Verify(payload, req); reasonOf(err) != ReasonValidBefore {
		t.Fatalf("301 s: %v", err)
	}
}

func TestNonceKey(t *testing.T) {
	a := NonceKey("base", "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913", vecAFrom, strings.ToUpper(vecANonce[2:]))
	b := NonceKey(x402.NetworkBase, strings.ToLower("0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913"), strings.ToLower(vecAFrom), strings.ToLower(vecANonce[2:]))
	if a != b {
		t.Fatalf("keys differ: %s vs %s", a, b)
	}
	want := "eip155:8453/0x833589fcd6edb6e08f4c7c32d4f71b54bda02913/0x857b06519e91e3a54538791bdbb0e22373e36b66/" + vecANonce[2:]
	if a != want {
		t.Fatalf("key = %s, want %s", a, want)
	}
	if NonceKey(x402.NetworkBaseSepolia, "", vecAFrom, vecANonce) == NonceKey(x402.NetworkBase, "", vecAFrom, vecANonce) {
		t.Fatal("networks must give different keys")
	}
}

// FuzzVerifyExceptSignature checks VerifyExceptSignature against Verify on
// payments changed in their signature and authorization fields: a payment
// Verify accepts passes with no sigErr; one it passes with no sigErr,
// Verify accepts; its sigErr is exactly Verify's refusal; and what it
// refuses, Verify refuses too.
func FuzzVerifyExceptSignature(f *testing.F) {
	req := testRequirements(f, x402.NetworkBase)
	_, good := testPayment(f, vecKey(f), req)
	a := good.Authorization
	f.Add(good.Signature, a.From, a.Value, a.ValidBefore, a.Nonce)
	f.Add(good.Signature+"00", a.From, a.Value, a.ValidBefore, a.Nonce)
	f.Add("0x"+strings.Repeat("ab", 300), a.From, "1", a.ValidBefore, a.Nonce)
	f.Add(highS(f, good.Signature), a.From, a.Value, "1", a.Nonce)
	f.Add("0x", vecATo, a.Value, a.ValidBefore, "0x01")
	f.Fuzz(func(t *testing.T, sig, from, value, validBefore, nonce string) {
		p := good
		p.Signature = sig
		p.Authorization.From, p.Authorization.Value = from, value
		p.Authorization.ValidBefore, p.Authorization.Nonce = validBefore, nonce
		payload := wrapPayment(t, req, p)
		v := testVerifier()
		payer, err := v.Verify(payload, req)
		payer2, sigErr, err2 := v.VerifyExceptSignature(payload, req)
		switch {
		case err == nil && (sigErr != nil || err2 != nil || payer2 != payer):
			t.Fatalf("Verify accepts; VerifyExceptSignature: sigErr %v, err %v, payer %q/%q", sigErr, err2, payer2, payer)
		case sigErr == nil && err2 == nil && err != nil:
			t.Fatalf("VerifyExceptSignature accepts with no sigErr; Verify refuses: %v", err)
		case sigErr != nil && (err2 != nil || err == nil || err.Error() != sigErr.Error() || payer2 != payer):
			t.Fatalf("sigErr %v, err %v; Verify: %v", sigErr, err2, err)
		case err2 != nil && err == nil:
			t.Fatalf("VerifyExceptSignature refuses (%v); Verify accepts", err2)
		}
	})
}

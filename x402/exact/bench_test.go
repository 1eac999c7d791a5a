package exact

import (
	"testing"

	"github.com/ethereum/go-ethereum/crypto"

	"github.com/seed1284c1d2/svc/x402"
)

// BenchmarkVerifyLocal measures the whole local verification of a payment:
// decoding the PAYMENT-SIGNATURE header, every check, the EIP-712 digest and
// the signature recovery.
func BenchmarkVerifyLocal(b *testing.B) {
	req := testRequirements(b, x402.NetworkBase)
	payload, _ := testPayment(b, vecKey(b), req)
	header, err := x402.EncodeHeader(payload)
	if err != nil {
		b.Fatal(err)
	}
	v := testVerifier()
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		p, err := x402.DecodePaymentPayload(header)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := v.Verify(p, req); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRecoverBare measures the bare secp256k1 public-key recovery of
// the same signature over the same digest (go-ethereum crypto.Ecrecover),
// the floor of BenchmarkVerifyLocal.
func BenchmarkRecoverBare(b *testing.B) {
	req := testRequirements(b, x402.NetworkBase)
	_, p := testPayment(b, vecKey(b), req)
	digest, err := AuthorizationDigest(Domain(mustNetwork(b, x402.NetworkBase)), p.Authorization)
	if err != nil {
		b.Fatal(err)
	}
	sig := mustSig(b, p.Signature)
	sig[64] -= 27
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, err := crypto.Ecrecover(digest[:], sig); err != nil {
			b.Fatal(err)
		}
	}
}

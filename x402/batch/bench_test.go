package batch_test

import (
	"testing"

	"github.com/seed1284c1d2/svc/x402/batch"
)

// The server's local work on a voucher-paid request: parse the payload,
// hold it against the requirements, recover the voucher's signer.
func BenchmarkVoucherCheck(b *testing.B) {
	f := newFixture(&testing.T{})
	raw := voucher(&testing.T{}, f.d, f.ch, f.id, 5000, f.payer.hex)
	b.ReportAllocs()
	for b.Loop() {
		p, err := batch.ParsePayload(raw)
		if err != nil {
			b.Fatal(err)
		}
		d, err := p.Check(f.req)
		if err != nil {
			b.Fatal(err)
		}
		if err := d.VerifyVoucher(p); err != nil {
			b.Fatal(err)
		}
	}
}

// The receiver authorizer's signature of a claim of 100 channels.
func BenchmarkClaimBatchDigest100(b *testing.B) {
	f := newFixture(&testing.T{})
	claims := make([]batch.Claim, 100)
	p, _ := batch.ParsePayload(voucher(&testing.T{}, f.d, f.ch, f.id, 5000, f.payer.hex))
	for i := range claims {
		claims[i] = batch.Claim{Channel: f.ch, MaxClaimableAmount: p.MaxClaimableAmount, Signature: p.Signature, TotalClaimed: p.MaxClaimableAmount}
	}
	b.ReportAllocs()
	for b.Loop() {
		_ = f.d.ClaimBatchDigest(f.d.ClaimEntries(claims))
	}
}

package exact

import (
	"testing"

	"github.com/ethereum/go-ethereum/common"

	"github.com/seed1284c1d2/svc/x402"
)

// TestSignerCache: a Verifier with a cache accepts and refuses exactly what
// one without accepts and refuses; the cache answers a repeated recovery,
// never remembers a failed one, and holds at most its size.
func TestSignerCache(t *testing.T) {
	key := vecKey(t)
	req := testRequirements(t, x402.NetworkBase)
	cache := NewSignerCache(2)
	with := testVerifier()
	with.Signers = cache
	for i := range 5 {
		payload, _ := testPayment(t, key, req)
		for range 2 { // the second check is answered by the cache
			payer, err := with.Verify(payload, req)
			if err != nil || payer != vecAddrB {
				t.Fatalf("payment %d: %s %v", i, payer, err)
			}
		}
		if n := len(cache.known); n > 2 || n != len(cache.ring) {
			t.Fatalf("cache holds %d (ring %d), size 2", n, len(cache.ring))
		}
	}
	// A remembered pair answers what RecoverSigner answers.
	for k, a := range cache.known {
		got, err := RecoverSigner(k[:32], k[32:])
		if err != nil || got != a {
			t.Fatalf("remembered %s, recovery says %s %v", a, got, err)
		}
	}
	// A signature that does not recover is refused, with or without cache,
	// and is not remembered.
	before := len(cache.known)
	var digest common.Hash
	var sig [65]byte
	sig[64] = 27
	if _, err := cache.recover(digest, sig); err == nil {
		t.Fatal("an all-zero signature recovered")
	}
	if len(cache.known) != before {
		t.Fatal("a failed recovery was remembered")
	}
	var nilCache *SignerCache
	if _, err := nilCache.recover(digest, sig); err == nil {
		t.Fatal("an all-zero signature recovered without cache")
	}
}

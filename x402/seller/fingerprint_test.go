package seller_test

import (
	"testing"

	"github.com/seed1284c1d2/svc/x402/seller"
)

// TestFingerprint: the transport and the name separate fingerprints, and
// the length prefixes keep their boundaries from moving.
func TestFingerprint(t *testing.T) {
	in := []byte(`{"a":1}`)
	fp := seller.Fingerprint
	if fp("http", "x", in) != fp("http", "x", []byte(`{"a":1}`)) {
		t.Error("the same parts, another fingerprint")
	}
	if fp("http", "x", in) == fp("mcp", "x", in) || fp("http", "x", in) == fp("http", "y", in) ||
		fp("ab", "c", in) == fp("a", "bc", in) || fp("a", "b", []byte("c")) == fp("a", "", []byte("bc")) {
		t.Error("transport and name do not separate fingerprints")
	}
}

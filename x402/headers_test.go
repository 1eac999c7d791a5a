package x402_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/seed1284c1d2/svc/x402"
)

// TestHeaderNames: the canonical constants are the canonical forms of the
// names, and the CORS lists name every header of their direction.
func TestHeaderNames(t *testing.T) {
	for name, canonical := range map[string]string{
		x402.HeaderPaymentRequired:  x402.CanonicalPaymentRequired,
		x402.HeaderPaymentSignature: x402.CanonicalPaymentSignature,
		x402.HeaderPaymentResponse:  x402.CanonicalPaymentResponse,
		x402.HeaderV1Payment:        x402.CanonicalV1Payment,
	} {
		if got := http.CanonicalHeaderKey(name); got != canonical {
			t.Errorf("canonical %s = %s, the constant says %s", name, got, canonical)
		}
	}
	for list, names := range map[string][]string{
		x402.RequestHeaders:  {x402.HeaderPaymentSignature, x402.HeaderV1Payment},
		x402.ResponseHeaders: {x402.HeaderPaymentRequired, x402.HeaderPaymentResponse, x402.HeaderV1PaymentResponse},
	} {
		if got := strings.Split(list, ", "); strings.Join(got, "|") != strings.Join(names, "|") {
			t.Errorf("list %q, want %q", list, names)
		}
	}
}

package x402_test

import (
	"testing"

	"github.com/seed1284c1d2/svc/x402"
	"github.com/seed1284c1d2/svc/x402/x402test"
)

func TestMemoryNonceStoreConformance(t *testing.T) {
	x402test.TestNonceStore(t, func(t *testing.T) x402.NonceStore { return x402.NewMemoryNonceStore(nil) })
}

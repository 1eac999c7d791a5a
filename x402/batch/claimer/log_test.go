package claimer_test

import (
	"testing"

	"github.com/seed1284c1d2/svc/x402/batch/claimer"
	"github.com/seed1284c1d2/svc/x402/batch/claimer/claimertest"
)

func TestMemoryLog(t *testing.T) {
	claimertest.TestLog(t, func(*testing.T) claimer.Log { return claimer.NewMemoryLog() })
}

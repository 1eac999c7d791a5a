package store_test

import (
	"testing"

	"github.com/seed1284c1d2/svc/x402/batch/claimer"
	"github.com/seed1284c1d2/svc/x402/batch/claimer/claimertest"
)

func TestSQLiteBatchClaims(t *testing.T) {
	claimertest.TestLog(t, func(t *testing.T) claimer.Log { return openSQLite(t).BatchClaims() })
}

func TestPostgresBatchClaims(t *testing.T) {
	claimertest.TestLog(t, func(t *testing.T) claimer.Log { return openPostgres(t).BatchClaims() })
}

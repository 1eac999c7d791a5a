package server_test

import (
	"testing"

	"github.com/seed1284c1d2/svc/x402/batch/server"
	"github.com/seed1284c1d2/svc/x402/batch/server/storetest"
)

// TestMemoryStore runs the channel store's conformance suite on the
// memory store.
func TestMemoryStore(t *testing.T) {
	storetest.Run(t, func(t *testing.T) server.Store { return server.NewMemoryStore() })
}

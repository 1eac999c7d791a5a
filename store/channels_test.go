package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/seed1284c1d2/svc/store"
	"github.com/seed1284c1d2/svc/x402/batch/server"
	"github.com/seed1284c1d2/svc/x402/batch/server/storetest"
)

// TestChannelsSQLite runs the channel store's conformance suite on SQLite.
func TestChannelsSQLite(t *testing.T) {
	storetest.Run(t, func(t *testing.T) server.Store { return openSQLite(t).Channels() })
}

// TestChannelsPostgres runs the channel store's conformance suite on
// PostgreSQL.
func TestChannelsPostgres(t *testing.T) {
	storetest.Run(t, func(t *testing.T) server.Store {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		s, err := store.OpenPostgres(ctx, pgSchemaDSN(t))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		return s.Channels()
	})
}

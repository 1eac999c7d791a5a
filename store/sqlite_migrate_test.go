package store

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/seed1284c1d2/svc/x402/engine"
)

// A database at version 1 (nonce table, ledger without route and
// transport) upgrades in place: its ledger is kept, the nonce table goes,
// the journal works.
func TestSQLiteUpgradesFromVersion1(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "svc.db")
	ms, err := migrations("sqlite")
	if err != nil || len(ms) < 2 || ms[0].version != 1 {
		t.Fatalf("migrations = %d, %v", len(ms), err)
	}
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatalf("sql.Open: %v", err)
	}
	for _, q := range []string{
		`CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL) STRICT`,
		ms[0].sql,
		`INSERT INTO schema_migrations VALUES (1, 'init', 0)`,
		`INSERT INTO settlements (network, asset, payer, nonce, tool_key, amount, tx, settled_at)
			VALUES ('eip155:8453', '0xasset', '0x00000000000000000000000000000000000000aa', '0x01', 'risk_levels', '3400', '0xtx', 1)`,
		`INSERT INTO nonces (nonce_key, request_hash, state, expires_at, reserved_at) VALUES ('k', 'h', 1, 1, 1)`,
	} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			db.Close()
			t.Fatalf("%.60s: %v", q, err)
		}
	}
	db.Close()

	st, err := OpenSQLite(ctx, path)
	if err != nil {
		t.Fatalf("OpenSQLite of a version 1 database: %v", err)
	}
	defer st.Close()
	s := st.(*sqliteStore)
	var versions, nonces int
	if err := s.r.QueryRowContext(ctx, `SELECT count(*) FROM schema_migrations`).Scan(&versions); err != nil || versions != len(ms) {
		t.Fatalf("%d migrations recorded (%v), want %d", versions, err, len(ms))
	}
	if err := s.r.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_master WHERE name = 'nonces'`).Scan(&nonces); err != nil || nonces != 0 {
		t.Fatalf("the nonce table survived the upgrade (%d, %v)", nonces, err)
	}
	e, found, err := s.LedgerEntry(ctx, "eip155:8453", "0xASSET", "0x00000000000000000000000000000000000000AA", "0x01")
	if err != nil || !found || e.Resource != "" || e.Transport != "" || e.Transaction != "0xtx" || !e.SettledAt.Equal(fromNanos(1)) {
		t.Fatalf("the version 1 ledger entry = %+v, %v, %v", e, found, err)
	}
	now := time.Now()
	rec := engine.Reservation{Key: "k", Owner: "o", Now: now, LeaseUntil: now.Add(time.Minute), KeepUntil: now.Add(time.Hour)}
	if _, err := s.Reserve(ctx, rec, 3); err != nil {
		t.Fatalf("Reserve after the upgrade: %v", err)
	}
	if _, err := s.Reserve(ctx, rec, 3); !errors.Is(err, engine.ErrTaken) {
		t.Fatalf("second Reserve err = %v, want ErrTaken", err)
	}
}

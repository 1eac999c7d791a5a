package store_test

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/seed1284c1d2/svc/store"
	"github.com/seed1284c1d2/svc/store/storetest"
)

// openSQLite opens a fresh SQLite store in a temporary file.
func openSQLite(t *testing.T, opts ...store.Option) store.Store {
	t.Helper()
	s, err := store.OpenSQLite(context.Background(), filepath.Join(t.TempDir(), "svc.db"), opts...)
	if err != nil {
		t.Fatalf("OpenSQLite: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

func TestSQLiteConformance(t *testing.T) {
	storetest.Run(t, openSQLite)
}

func TestSQLiteOpen(t *testing.T) {
	storetest.RunOpen(t, func(t *testing.T) string {
		// A directory that does not exist yet: Open creates it.
		return filepath.Join(t.TempDir(), "data", "svc.db")
	})
}

func TestSQLiteOpenPrefixAndDialect(t *testing.T) {
	ctx := context.Background()
	s, err := store.Open(ctx, "sqlite:"+filepath.Join(t.TempDir(), "svc.db"))
	if err != nil {
		t.Fatalf("Open(sqlite:...): %v", err)
	}
	defer s.Close()
	if s.Dialect() != "sqlite" {
		t.Fatalf("Dialect = %q, want sqlite", s.Dialect())
	}
}

func TestSQLiteOpenRefusesUnsupportedPaths(t *testing.T) {
	ctx := context.Background()
	for _, dsn := range []string{"", "   ", ":memory:", "sqlite::memory:", "file:svc.db?mode=memory", "svc.db?_pragma=foo"} {
		if s, err := store.Open(ctx, dsn); !errors.Is(err, store.ErrInvalid) {
			if s != nil {
				s.Close()
			}
			t.Errorf("Open(%q) err = %v, want ErrInvalid", dsn, err)
		}
	}
}

func TestSQLiteUsesWALAndSchemaVersion(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "svc.db")
	s, err := store.OpenSQLite(ctx, path)
	if err != nil {
		t.Fatalf("OpenSQLite: %v", err)
	}
	defer s.Close()
	mode, versions := sqliteInspect(t, path)
	if mode != "wal" {
		t.Fatalf("journal_mode = %q, want wal", mode)
	}
	if len(versions) == 0 || versions[0] != 1 {
		t.Fatalf("schema_migrations versions = %v, want 1 first", versions)
	}
}

// sqliteInspect reads the journal mode and the applied migration versions of
// the database file at path through a connection of its own.
func sqliteInspect(t *testing.T, path string) (mode string, versions []int) {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatalf("sql.Open: %v", err)
	}
	defer db.Close()
	if err := db.QueryRow(`PRAGMA journal_mode`).Scan(&mode); err != nil {
		t.Fatalf("journal_mode: %v", err)
	}
	rows, err := db.Query(`SELECT version FROM schema_migrations ORDER BY version`)
	if err != nil {
		t.Fatalf("schema_migrations: %v", err)
	}
	defer rows.Close()
	for rows.Next() {
		var v int
		if err := rows.Scan(&v); err != nil {
			t.Fatalf("schema_migrations: %v", err)
		}
		versions = append(versions, v)
	}
	return mode, versions
}

// TestSQLiteCheckSchemaFindsADroppedTable: a database that lost a table
// answers pings but fails CheckSchema with ErrSchema.
func TestSQLiteCheckSchemaFindsADroppedTable(t *testing.T) {
	path := filepath.Join(t.TempDir(), "svc.db")
	s, err := store.OpenSQLite(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`DROP TABLE settlements`); err != nil {
		t.Fatal(err)
	}
	if err := s.Ping(context.Background()); err != nil {
		t.Fatalf("Ping: %v", err)
	}
	if err := s.CheckSchema(context.Background()); !errors.Is(err, store.ErrSchema) {
		t.Fatalf("CheckSchema after dropping settlements: %v, want ErrSchema", err)
	}
}

// TestSQLiteCheckSchemaFindsAMissingMigration: a database whose newest
// migration is not recorded is reported as outdated.
func TestSQLiteCheckSchemaFindsAMissingMigration(t *testing.T) {
	path := filepath.Join(t.TempDir(), "svc.db")
	s, err := store.OpenSQLite(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`DELETE FROM schema_migrations WHERE version = (SELECT max(version) FROM schema_migrations)`); err != nil {
		t.Fatal(err)
	}
	if err := s.CheckSchema(context.Background()); !errors.Is(err, store.ErrSchema) {
		t.Fatalf("CheckSchema with the newest migration unrecorded: %v, want ErrSchema", err)
	}
}

func TestSQLiteReadOnlyCreatesNothing(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "nope")
	s, err := store.Open(context.Background(), filepath.Join(dir, "svc.db"), store.ReadOnly())
	if !errors.Is(err, store.ErrNoDatabase) {
		if s != nil {
			s.Close()
		}
		t.Fatalf("read-only Open of a missing file: %v, want ErrNoDatabase", err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the read-only Open created %s (%v)", dir, err)
	}
}

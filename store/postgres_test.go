package store_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/seed1284c1d2/svc/store"
	"github.com/seed1284c1d2/svc/store/storetest"
)

// pgEnv names the environment variable holding the URL of a PostgreSQL
// database the tests may create and drop schemas in.
const pgEnv = "SVC_TEST_DATABASE_URL"

// pgSchemaDSN creates a fresh schema svc_test_<random> in the database of
// SVC_TEST_DATABASE_URL, drops it when the test ends, and returns a DSN whose
// sessions use it (search_path). It skips the test when the variable is
// unset.
func pgSchemaDSN(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: PostgreSQL (the full go test runs it)")
	}
	base := os.Getenv(pgEnv)
	if base == "" {
		t.Skipf("%s is not set: skipping the PostgreSQL store tests", pgEnv)
	}
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatalf("random schema name: %v", err)
	}
	schema := "svc_test_" + hex.EncodeToString(b[:])
	pgAdmin(t, base, `CREATE SCHEMA `+schema)
	t.Cleanup(func() { pgAdmin(t, base, `DROP SCHEMA `+schema+` CASCADE`) })
	u, err := url.Parse(base)
	if err != nil {
		t.Fatalf("%s is not a URL: %v", pgEnv, err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}

// pgAdmin runs one statement on a connection of its own.
func pgAdmin(t *testing.T, dsn, stmt string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatalf("connect to %s: %v", pgEnv, err)
	}
	defer c.Close(ctx)
	if _, err := c.Exec(ctx, stmt); err != nil {
		t.Fatalf("%s: %v", stmt, err)
	}
}

// openPostgres opens a fresh PostgreSQL store in a schema of its own.
func openPostgres(t *testing.T, opts ...store.Option) store.Store {
	t.Helper()
	dsn := pgSchemaDSN(t)
	s, err := store.Open(context.Background(), dsn, opts...)
	if err != nil {
		t.Fatalf("Open(postgres): %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

// requirePostgres skips the test, once, when no database is configured.
func requirePostgres(t *testing.T) {
	t.Helper()
	if os.Getenv(pgEnv) == "" {
		t.Skipf("%s is not set: skipping the PostgreSQL store tests", pgEnv)
	}
}

func TestPostgresConformance(t *testing.T) {
	requirePostgres(t)
	storetest.Run(t, openPostgres)
}

func TestPostgresOpen(t *testing.T) {
	requirePostgres(t)
	storetest.RunOpen(t, pgSchemaDSN)
}

func TestPostgresOpenOptions(t *testing.T) {
	dsn := pgSchemaDSN(t)
	ctx := context.Background()
	// pool_max_conns is the pool's, not a session setting; the scheme may be
	// spelled postgresql and in any case.
	u, _ := url.Parse(dsn)
	q := u.Query()
	q.Set("pool_max_conns", "2")
	u.RawQuery = q.Encode()
	u.Scheme = "PostgreSQL"
	s, err := store.Open(ctx, u.String())
	if err != nil {
		t.Fatalf("Open with pool_max_conns: %v", err)
	}
	defer s.Close()
	if s.Dialect() != "postgres" {
		t.Fatalf("Dialect = %q, want postgres", s.Dialect())
	}
	if err := s.Ping(ctx); err != nil {
		t.Fatalf("Ping: %v", err)
	}
	q.Set("pool_max_conns", "zero")
	u.RawQuery = q.Encode()
	if _, err := store.Open(ctx, u.String()); !errors.Is(err, store.ErrInvalid) {
		t.Fatalf("Open with pool_max_conns=zero err = %v, want ErrInvalid", err)
	}
}

func TestPostgresOpenErrorsDoNotLeakPasswords(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := store.Open(ctx, "postgres://svc:s3cr3t-pw@127.0.0.1:1/x?sslmode=disable&connect_timeout=2")
	if err == nil {
		t.Fatal("Open of an unreachable server succeeded")
	}
	if strings.Contains(err.Error(), "s3cr3t-pw") {
		t.Fatalf("error leaks the password: %v", err)
	}
	_, err = store.Open(ctx, "postgres://svc:s3cr3t-pw@127.0.0.1:5432/x?sslmode=bogus")
	if !errors.Is(err, store.ErrInvalid) || strings.Contains(err.Error(), "s3cr3t-pw") {
		t.Fatalf("unparsable DSN err = %v, want ErrInvalid without the password", err)
	}
}

package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// openGrouped opens a SQLite store whose group committer waits linger for
// more writes, so that writes sent together share a transaction.
func openGrouped(t *testing.T, linger time.Duration) *sqliteStore {
	t.Helper()
	st, err := OpenSQLite(context.Background(), filepath.Join(t.TempDir(), "svc.db"), withGroupLinger(linger))
	if err != nil {
		t.Fatalf("OpenSQLite: %v", err)
	}
	t.Cleanup(func() { _ = st.Close() })
	s := st.(*sqliteStore)
	if s.group == nil {
		t.Fatal("the group committer is off by default")
	}
	return s
}

// exec runs statements on the writer outside the group committer.
func exec(t *testing.T, s *sqliteStore, stmts ...string) {
	t.Helper()
	for _, q := range stmts {
		if _, err := s.w.ExecContext(context.Background(), q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}

// count returns the number of rows of table (read pool: committed data).
func count(t *testing.T, s *sqliteStore, table string) int {
	t.Helper()
	var n int
	if err := s.r.QueryRowContext(context.Background(), `SELECT count(*) FROM `+table).Scan(&n); err != nil {
		t.Fatalf("count %s: %v", table, err)
	}
	return n
}

// together runs f(0..n-1) concurrently and returns their results.
func together(n int, f func(i int) error) []error {
	errs := make([]error, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			errs[i] = f(i)
		}()
	}
	close(start)
	wg.Wait()
	return errs
}

// One write's SQL error rolls back that write alone: the others of its
// transaction commit.
func TestGroupCommitIsolatesAFailingWrite(t *testing.T) {
	s := openGrouped(t, 200*time.Millisecond)
	exec(t, s, `CREATE TABLE gc (k INTEGER PRIMARY KEY)`)
	const n, bad = 12, 5
	errs := together(n, func(i int) error {
		return s.group.do(context.Background(), func(ctx context.Context, tx *sql.Tx) error {
			if _, err := tx.ExecContext(ctx, `INSERT INTO gc (k) VALUES (?)`, 100+i); err != nil {
				return err
			}
			if i == bad { // after a write of its own, which the savepoint undoes
				_, err := tx.ExecContext(ctx, `INSERT INTO no_such_table VALUES (1)`)
				return err
			}
			return nil
		})
	})
	for i, err := range errs {
		if (err != nil) != (i == bad) {
			t.Fatalf("write %d err = %v; want an error for write %d alone", i, err, bad)
		}
	}
	if got := count(t, s, "gc"); got != n-1 {
		t.Fatalf("%d rows committed, want %d", got, n-1)
	}
	if b, w := s.group.batches.Load(), s.group.writes.Load(); b != 1 || w != n {
		t.Fatalf("%d writes in %d transactions, want %d in 1", w, b, n)
	}
	var k int
	if err := s.r.QueryRow(`SELECT count(*) FROM gc WHERE k = ?`, 100+bad).Scan(&k); err != nil || k != 0 {
		t.Fatalf("the failing write's own insert survived: %d, %v", k, err)
	}
}

// A failed commit fails every write of the batch, and the writer goes on.
func TestGroupCommitFailedCommitFailsTheBatch(t *testing.T) {
	s := openGrouped(t, 200*time.Millisecond)
	exec(t, s, `CREATE TABLE gc_parent (id INTEGER PRIMARY KEY)`,
		`CREATE TABLE gc_child (id INTEGER PRIMARY KEY, parent INTEGER REFERENCES gc_parent (id) DEFERRABLE INITIALLY DEFERRED)`)
	const n = 8
	errs := together(n, func(i int) error {
		return s.group.do(context.Background(), func(ctx context.Context, tx *sql.Tx) error {
			if i == 0 { // violates a deferred foreign key: checked at COMMIT
				_, err := tx.ExecContext(ctx, `INSERT INTO gc_child (id, parent) VALUES (1, 404)`)
				return err
			}
			_, err := tx.ExecContext(ctx, `INSERT INTO gc_parent (id) VALUES (?)`, i)
			return err
		})
	})
	for i, err := range errs {
		if err == nil {
			t.Fatalf("write %d succeeded in a batch whose commit failed", i)
		}
	}
	if got := count(t, s, "gc_parent") + count(t, s, "gc_child"); got != 0 {
		t.Fatalf("%d rows of a failed commit are visible", got)
	}
	// The writer connection is usable again: the next batch commits.
	if err := s.group.do(context.Background(), func(ctx context.Context, tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO gc_parent (id) VALUES (1000)`)
		return err
	}); err != nil {
		t.Fatalf("write after a failed commit: %v", err)
	}
	if got := count(t, s, "gc_parent"); got != 1 {
		t.Fatalf("%d rows after the next batch, want 1", got)
	}
}

// Close stops the writer: writes in flight are answered (committed or
// ErrClosed), none hangs, later writes fail with ErrClosed.
func TestGroupCommitClose(t *testing.T) {
	st, err := OpenSQLite(context.Background(), filepath.Join(t.TempDir(), "svc.db"))
	if err != nil {
		t.Fatalf("OpenSQLite: %v", err)
	}
	s := st.(*sqliteStore)
	var wg sync.WaitGroup
	results := make(chan error, 1000)
	for w := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 50 {
				err := s.Heartbeat(context.Background(), fmt.Sprintf("o-%d-%d", w, i), time.Now())
				results <- err
				if err != nil {
					return
				}
			}
		}()
	}
	time.Sleep(5 * time.Millisecond)
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("writers still blocked 30 s after Close")
	}
	close(results)
	for err := range results {
		if err != nil && !errors.Is(err, ErrClosed) {
			t.Fatalf("a write in flight at Close got %v, want nil or ErrClosed", err)
		}
	}
	if err := s.Heartbeat(context.Background(), "late", time.Now()); !errors.Is(err, ErrClosed) {
		t.Fatalf("Heartbeat after Close err = %v, want ErrClosed", err)
	}
}

// A write that panics fails its whole batch, rolled back, and the writer
// goes on with the next batch.
func TestGroupCommitSurvivesAPanickingWrite(t *testing.T) {
	s := openGrouped(t, 200*time.Millisecond)
	exec(t, s, `CREATE TABLE gp (k INTEGER PRIMARY KEY)`)
	const n, bad = 6, 2
	errs := together(n, func(i int) error {
		return s.group.do(context.Background(), func(ctx context.Context, tx *sql.Tx) error {
			if _, err := tx.ExecContext(ctx, `INSERT INTO gp (k) VALUES (?)`, i); err != nil {
				return err
			}
			if i == bad {
				panic("a broken write")
			}
			return nil
		})
	})
	for i, err := range errs {
		if err == nil {
			t.Fatalf("write %d of the panicking batch succeeded", i)
		}
	}
	if got := count(t, s, "gp"); got != 0 {
		t.Fatalf("%d rows of the panicking batch committed", got)
	}
	if err := s.group.do(context.Background(), func(ctx context.Context, tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO gp (k) VALUES (100)`)
		return err
	}); err != nil || count(t, s, "gp") != 1 {
		t.Fatalf("the writer did not go on: %v", err)
	}
}

package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// stmtCache keeps the statements the journal's writes run, prepared once
// on the SQLite writer connection at open: SQLite then neither parses nor
// plans them again (the writer is the bottleneck of the group commit). It
// is read-only once built.
type stmtCache struct {
	m map[string]*sql.Stmt
}

// newStmtCache prepares queries on db (whose only connection must be
// free).
func newStmtCache(ctx context.Context, db *sql.DB, queries ...string) (*stmtCache, error) {
	c := &stmtCache{m: make(map[string]*sql.Stmt, len(queries))}
	for _, q := range queries {
		if _, ok := c.m[q]; ok {
			continue
		}
		st, err := db.PrepareContext(ctx, q)
		if err != nil {
			_ = c.close()
			return nil, fmt.Errorf("prepare %.60q: %w", q, err)
		}
		c.m[q] = st
	}
	return c, nil
}

// stmt returns the statement of query within tx; a query not prepared at
// open is prepared on tx's connection for this use.
func (c *stmtCache) stmt(ctx context.Context, tx *sql.Tx, query string) (*sql.Stmt, error) {
	if st, ok := c.m[query]; ok {
		return tx.StmtContext(ctx, st), nil
	}
	return tx.PrepareContext(ctx, query)
}

// exec runs query in tx.
func (c *stmtCache) exec(ctx context.Context, tx *sql.Tx, query string, args ...any) (sql.Result, error) {
	st, err := c.stmt(ctx, tx, query)
	if err != nil {
		return nil, err
	}
	return st.ExecContext(ctx, args...)
}

// queryRow runs a single-row query in tx.
func (c *stmtCache) queryRow(ctx context.Context, tx *sql.Tx, query string, args ...any) rowScanner {
	st, err := c.stmt(ctx, tx, query)
	if err != nil {
		return errRow{err}
	}
	return st.QueryRowContext(ctx, args...)
}

// close closes every statement.
func (c *stmtCache) close() error {
	var errs []error
	for _, st := range c.m {
		errs = append(errs, st.Close())
	}
	return errors.Join(errs...)
}

// errRow is a row whose query could not run.
type errRow struct{ err error }

// Scan implements rowScanner.
func (r errRow) Scan(...any) error { return r.err }

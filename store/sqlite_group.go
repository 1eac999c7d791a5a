package store

import (
	"context"
	"database/sql"
	"fmt"
	"sync/atomic"
	"time"
)

// groupCommitter runs the writes of concurrent callers in shared IMMEDIATE
// transactions on the SQLite writer connection: one goroutine takes a
// write, then every write already waiting (they queue while the previous
// transaction commits), and, with a linger, what arrives within it, up to
// max; it runs each inside a savepoint of its own, commits once and
// answers every caller. See OpenSQLite.
type groupCommitter struct {
	db      *sql.DB
	stmts   *stmtCache    // holds the savepoint statements
	timeout time.Duration // bound of one batch's transaction
	max     int
	linger  time.Duration

	ops     chan *groupOp // unbuffered: a write is either taken or not sent
	quit    chan struct{} // closed by close
	stopped chan struct{} // closed when run returns

	batches, writes atomic.Int64 // transactions run and writes taken (tests, benchmarks)

}

// The savepoint around each write of a batch.
const (
	sqliteSavepoint        = `SAVEPOINT journal_write`
	sqliteRollbackTo       = `ROLLBACK TO journal_write`
	sqliteReleaseSavepoint = `RELEASE journal_write`
)

// groupOp is one queued write and the channel its result goes to.
type groupOp struct {
	f    func(ctx context.Context, tx *sql.Tx) error
	done chan error
	// early answers the caller as soon as f has run, before the commit
	// (doEarly); sent records that it was answered.
	early, sent bool
}

// newGroupCommitter starts the writer goroutine; close stops it.
func newGroupCommitter(db *sql.DB, stmts *stmtCache, timeout time.Duration, max int, linger time.Duration) *groupCommitter {
	g := &groupCommitter{
		db: db, stmts: stmts, timeout: timeout, max: max, linger: linger,
		ops: make(chan *groupOp), quit: make(chan struct{}), stopped: make(chan struct{}),
	}
	if g.max < 1 {
		g.max = 1
	}
	go g.run()
	return g
}

// do runs f in the next batch and returns its result once the batch is
// committed (or failed). A caller whose ctx ends while its write waits to
// be taken gets ctx's error and nothing is written; once taken, the write
// is waited for (a batch is bounded by the operation timeout).
func (g *groupCommitter) do(ctx context.Context, f func(ctx context.Context, tx *sql.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	op := &groupOp{f: f, done: make(chan error, 1)}
	select {
	case g.ops <- op:
	case <-ctx.Done():
		return ctx.Err()
	case <-g.quit:
		return ErrClosed
	}
	return <-op.done
}

// doEarly is do answered as soon as f has run in its batch, before the
// batch commits: for writes whose loss is harmless (a lease that a failed
// commit leaves untaken is as good as one that ended) and whose result is
// needed at once. Every later write runs after it on the one writer
// connection, in its transaction or a later one, and sees it. f's error
// is returned as do returns it.
func (g *groupCommitter) doEarly(ctx context.Context, f func(ctx context.Context, tx *sql.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	op := &groupOp{f: f, done: make(chan error, 1), early: true}
	select {
	case g.ops <- op:
	case <-ctx.Done():
		return ctx.Err()
	case <-g.quit:
		return ErrClosed
	}
	return <-op.done
}

// answer sends err to op's caller unless it was answered already.
func (op *groupOp) answer(err error) {
	if !op.sent {
		op.sent = true
		op.done <- err
	}
}

// close stops the writer after its current batch and waits for it. Writes
// not yet taken fail with ErrClosed.
func (g *groupCommitter) close() {
	close(g.quit)
	<-g.stopped
}

// run is the writer goroutine.
func (g *groupCommitter) run() {
	defer close(g.stopped)
	batch := make([]*groupOp, 0, g.max)
	errs := make([]error, g.max)
	for {
		select {
		case <-g.quit:
			return
		default:
		}
		select {
		case <-g.quit:
			return
		case op := <-g.ops:
			batch = append(batch[:0], op)
		}
		batch = g.collect(batch)
		g.batches.Add(1)
		g.writes.Add(int64(len(batch)))
		g.commit(batch, errs[:len(batch)])
		clear(batch)
	}
}

// collect adds to batch the writes waiting to be taken and, with a linger,
// those arriving within it, up to max.
func (g *groupCommitter) collect(batch []*groupOp) []*groupOp {
	for len(batch) < g.max {
		select {
		case op := <-g.ops:
			batch = append(batch, op)
			continue
		default:
		}
		break
	}
	if g.linger <= 0 || len(batch) >= g.max {
		return batch
	}
	t := time.NewTimer(g.linger)
	defer t.Stop()
	for len(batch) < g.max {
		select {
		case op := <-g.ops:
			batch = append(batch, op)
		case <-t.C:
			return batch
		case <-g.quit:
			return batch
		}
	}
	return batch
}

// commit runs batch in one transaction and answers each write. errs (as
// long as batch) is scratch space for the writes' own results.
func (g *groupCommitter) commit(batch []*groupOp, errs []error) {
	ctx, cancel := context.WithTimeout(context.Background(), g.timeout)
	defer cancel()
	fail := func(err error) {
		for _, op := range batch {
			op.answer(err)
		}
	}
	tx, err := g.db.BeginTx(ctx, nil)
	if err != nil {
		fail(fmt.Errorf("group commit: begin: %w", err))
		return
	}
	// A write that panics fails its whole batch (rolled back) instead of
	// killing the writer and leaving every caller waiting.
	answered := false
	defer func() {
		if v := recover(); v != nil && !answered {
			_ = tx.Rollback()
			fail(fmt.Errorf("group commit: a write panicked: %v", v))
		}
	}()
	if len(batch) == 1 {
		// Alone in its transaction: no savepoint needed.
		if err := batch[0].f(ctx, tx); err != nil {
			_ = tx.Rollback()
			answered = true
			batch[0].answer(err)
			return
		}
		if batch[0].early {
			batch[0].answer(nil)
		}
	} else {
		for i, op := range batch {
			if err := g.inSavepoint(ctx, tx, op, &errs[i]); err != nil {
				_ = tx.Rollback()
				answered = true
				fail(fmt.Errorf("group commit: %w", err))
				return
			}
		}
	}
	if err := tx.Commit(); err != nil {
		answered = true
		fail(fmt.Errorf("group commit: commit: %w", err))
		return
	}
	answered = true
	for i, op := range batch {
		if len(batch) == 1 {
			op.answer(nil)
			continue
		}
		op.answer(errs[i])
		errs[i] = nil
	}
}

// inSavepoint runs op inside a savepoint, rolled back if op fails; *opErr
// receives op's result. The error returned is the savepoint's own: the
// transaction is then unusable.
func (g *groupCommitter) inSavepoint(ctx context.Context, tx *sql.Tx, op *groupOp, opErr *error) error {
	if _, err := g.stmts.exec(ctx, tx, sqliteSavepoint); err != nil {
		return fmt.Errorf("savepoint: %w", err)
	}
	*opErr = op.f(ctx, tx)
	if *opErr != nil {
		if _, err := g.stmts.exec(ctx, tx, sqliteRollbackTo); err != nil {
			return fmt.Errorf("rollback to savepoint: %w", err)
		}
	}
	if _, err := g.stmts.exec(ctx, tx, sqliteReleaseSavepoint); err != nil {
		return fmt.Errorf("release savepoint: %w", err)
	}
	if op.early {
		op.answer(*opErr)
	}
	return nil
}

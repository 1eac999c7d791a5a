package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/seed1284c1d2/svc/x402"
	"github.com/seed1284c1d2/svc/x402/engine"
)

// The PostgreSQL engine.Journal: every write is one statement or one
// transaction; rows, not processes, are locked, so any number of instances
// may share the journal.

// pgAppendSQL inserts a ledger entry unless the authorization has one.
const pgAppendSQL = `INSERT INTO settlements
	(network, asset, payer, nonce, tool_key, amount, tx, ref_code, route, transport, settled_at)
	VALUES ($1, $2, $3, $4, $5, $6::text::numeric, $7, $8, $9, $10, $11)
	ON CONFLICT (network, asset, payer, nonce) DO NOTHING`

// pgReplaceable is true, in ON CONFLICT DO UPDATE, when the existing row is
// past its keep_until at the new row's created_at and Prune may delete it:
// the new row then replaces it entirely.
var pgReplaceable = `(` + sqlGuard(engine.TransitionReserve, "payments", "") + ` AND payments.keep_until < EXCLUDED.created_at)`

// pgReserveSQL creates the row, replaces a prunable row past keep_until,
// or reserves a released row with attempts left ($28 is maxAttempts) again
// in place; it returns no row when the key is taken. PostgreSQL locks the
// conflicting row and evaluates the WHERE on its latest version, so of any
// number of concurrent callers on any number of instances one wins.
var pgReserveSQL = `INSERT INTO payments (` + paymentCols + `)
	VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20,
		$21, $22, $23, $24, $25, $26, $27)
	ON CONFLICT (key) DO UPDATE SET ` + pgReserveSet() + `
	WHERE ` + pgReplaceable + ` OR (` + sqlGuard(engine.TransitionReserveAgain, "payments", "") + ` AND payments.attempts < $28)
	RETURNING ` + paymentCols

// pgReserveSet is the SET list of pgReserveSQL: a replacement takes every
// column from the new row; a reservation again takes the columns
// engine.Journal.Reserve names, keeps the row's identity, amounts, attempts,
// retention and creation, and clears what the previous admission recorded.
func pgReserveSet() string {
	var sets []string
	pick := func(col, otherwise string) {
		sets = append(sets, fmt.Sprintf("%[1]s = CASE WHEN %[2]s THEN EXCLUDED.%[1]s ELSE %[3]s END", col, pgReplaceable, otherwise))
	}
	for _, col := range []string{"network", "asset", "payer", "nonce", "pay_to", "amount", "attempts", "keep_until", "created_at"} {
		pick(col, "payments."+col)
	}
	for _, col := range []string{"payload", "requirements", "answer", "settlement"} {
		pick(col, "NULL")
	}
	pick("answer_until", "0")
	pick("reason", "''")
	pick("updated_at", "EXCLUDED.created_at")
	for _, col := range []string{"request_hash", "resource", "product", "transport", "ref_code", "request_id",
		"x402_version", "owner", "lease_until", "state"} {
		sets = append(sets, col+" = EXCLUDED."+col)
	}
	return strings.Join(sets, ", ")
}

// pgAbandoned is the condition of a row whose holder is gone: its lease
// ended before $1 (now), or its owner's last heartbeat is before $2
// (deadBefore) or absent.
const pgAbandoned = `(payments.lease_until < $1 OR NOT EXISTS (SELECT 1 FROM engine_instances i
	WHERE i.owner = payments.owner AND i.seen_at >= $2))`

// Reserve implements engine.Journal with one INSERT ... ON CONFLICT DO
// UPDATE ... WHERE (see pgReserveSQL), then, when the key is taken, a read
// of the existing row.
func (s *postgresStore) Reserve(ctx context.Context, rsv engine.Reservation, maxAttempts int) (engine.Record, error) {
	row, err := encodeRecord(rsv.Record())
	if err != nil {
		return engine.Record{}, fmt.Errorf("store: postgres: reserve: %w", err)
	}
	args := append(row.args(), int64(maxAttempts))
	var out engine.Record
	taken := false
	err = s.withConn(ctx, "reserve", func(ctx context.Context, c *pgx.Conn) error {
		for range pgReserveAttempts {
			got, err := scanPayment(c.QueryRow(ctx, pgReserveSQL, args...))
			if err == nil {
				out = got
				return nil
			}
			if !errors.Is(err, pgx.ErrNoRows) {
				return fmt.Errorf("claim: %w", err)
			}
			cur, found, err := pgGetPayment(ctx, c, row.key)
			if err != nil {
				return err
			}
			if found {
				out, taken = cur, true
				return nil
			}
			// Pruned in between: claim again.
		}
		return fmt.Errorf("key %q kept changing after %d attempts", row.key, pgReserveAttempts)
	})
	switch {
	case err != nil:
		return engine.Record{}, err
	case taken:
		return out, engine.ErrTaken
	}
	return out, nil
}

// pgQuerier is what pgGetPayment needs of a *pgx.Conn or pgx.Tx.
type pgQuerier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// pgExecer is what the journal's statements need of a *pgx.Conn or pgx.Tx.
type pgExecer interface {
	pgQuerier
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

// pgGetPayment reads the row of key.
func pgGetPayment(ctx context.Context, q pgQuerier, key string) (engine.Record, bool, error) {
	rec, err := scanPayment(q.QueryRow(ctx, `SELECT `+paymentCols+` FROM payments WHERE key = $1`, key))
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return engine.Record{}, false, nil
	case err != nil:
		return engine.Record{}, false, fmt.Errorf("read: %w", err)
	}
	return rec, true, nil
}

// pgTransition runs a conditional UPDATE of key ($1) and returns nil when
// it changed the row, or the reason it did not.
func pgTransition(ctx context.Context, c pgExecer, key, query string, args ...any) error {
	tag, err := c.Exec(ctx, query, append([]any{key}, args...)...)
	if err != nil {
		return fmt.Errorf("update: %w", err)
	}
	if tag.RowsAffected() == 1 {
		return nil
	}
	return pgStateError(ctx, c, key)
}

// pgStateError explains why a transition of key changed nothing.
func pgStateError(ctx context.Context, c pgQuerier, key string) error {
	var state int64
	err := c.QueryRow(ctx, `SELECT state FROM payments WHERE key = $1`, key).Scan(&state)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return stateError(false, 0)
	case err != nil:
		return fmt.Errorf("read state: %w", err)
	}
	return stateError(true, state)
}

// Settling implements engine.Journal.
func (s *postgresStore) Settling(ctx context.Context, key, owner string, st engine.Settling) error {
	r, err := encodeSettling(st)
	if err != nil {
		return fmt.Errorf("store: postgres: settling: %w", err)
	}
	now := instant(s.cfg.now())
	return s.withConn(ctx, "settling", func(ctx context.Context, c *pgx.Conn) error {
		return pgTransition(ctx, c, key, `UPDATE payments SET `+sqlSetState(engine.TransitionSettling)+`, answer = $2,
			answer_until = $3, payload = $4, requirements = $5, payer = $6, amount = $7, lease_until = $8, updated_at = $9
			WHERE key = $1 AND `+sqlGuard(engine.TransitionSettling, "payments", "$10")+` AND ($11 = '' OR request_hash = $11)`,
			r.answer, r.answerUntil, r.payload, r.requirements, r.payer, r.amount, r.leaseUntil, now, owner, st.RequestHash)
	})
}

// Settle implements engine.Journal: the settled state and the ledger entry
// in one transaction.
func (s *postgresStore) Settle(ctx context.Context, key string, sr x402.SettleResponse, at time.Time) error {
	raw, err := encodeSettlement(&sr)
	if err != nil {
		return fmt.Errorf("store: postgres: settle: %w", err)
	}
	return s.withTx(ctx, "settle", func(ctx context.Context, tx pgx.Tx) error {
		var rec engine.Record
		err := tx.QueryRow(ctx, `UPDATE payments SET `+sqlSetState(engine.TransitionSettle)+`, settlement = $2,
			updated_at = $3 WHERE key = $1 AND `+sqlGuard(engine.TransitionSettle, "payments", "")+`
			RETURNING network, asset, payer, nonce, product, amount, ref_code, resource, transport`,
			key, raw, instant(at)).Scan(&rec.Network, &rec.Asset, &rec.Payer,
			&rec.Nonce, &rec.Product, &rec.Amount, &rec.RefCode, &rec.Resource, &rec.Transport)
		if errors.Is(err, pgx.ErrNoRows) {
			var state int64
			err := tx.QueryRow(ctx, `SELECT state FROM payments WHERE key = $1`, key).Scan(&state)
			switch {
			case errors.Is(err, pgx.ErrNoRows):
				return stateError(false, 0)
			case err != nil:
				return fmt.Errorf("read state: %w", err)
			case engine.TransitionSettle.Rule().Done.Has(engine.State(state)):
				return nil // settled already: a no-op
			}
			return stateError(true, state)
		}
		if err != nil {
			return fmt.Errorf("update: %w", err)
		}
		entry, err := ledgerSettlement(rec, sr.Transaction, at)
		if errors.Is(err, errNoSale) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("ledger entry: %w", err)
		}
		if _, err := tx.Exec(ctx, pgAppendSQL, entry.args()...); err != nil {
			return fmt.Errorf("ledger: %w", err)
		}
		return nil
	})
}

// Release implements engine.Journal.
func (s *postgresStore) Release(ctx context.Context, key, owner, reason string, counted bool) error {
	add := int64(0)
	if counted {
		add = 1
	}
	now := instant(s.cfg.now())
	return s.withConn(ctx, "release", func(ctx context.Context, c *pgx.Conn) error {
		return pgTransition(ctx, c, key, `UPDATE payments SET `+sqlSetState(engine.TransitionRelease)+`,
			attempts = attempts + $2, reason = $3, updated_at = $4
			WHERE key = $1 AND `+sqlGuard(engine.TransitionRelease, "payments", "$5"),
			add, cleanReason(reason), now, owner)
	})
}

// Fail implements engine.Journal.
func (s *postgresStore) Fail(ctx context.Context, key, owner, reason string, sr x402.SettleResponse) error {
	raw, err := encodeSettlement(&sr)
	if err != nil {
		return fmt.Errorf("store: postgres: fail: %w", err)
	}
	now := instant(s.cfg.now())
	return s.withConn(ctx, "fail", func(ctx context.Context, c *pgx.Conn) error {
		return pgTransition(ctx, c, key, `UPDATE payments SET `+sqlSetState(engine.TransitionFail)+`, settlement = $2,
			reason = $3, updated_at = $4 WHERE key = $1 AND `+sqlGuard(engine.TransitionFail, "payments", "$5"),
			raw, cleanReason(reason), now, owner)
	})
}

// MarkUnknown implements engine.Journal.
func (s *postgresStore) MarkUnknown(ctx context.Context, key, owner, reason string) error {
	now := instant(s.cfg.now())
	return s.withConn(ctx, "mark unknown", func(ctx context.Context, c *pgx.Conn) error {
		return pgTransition(ctx, c, key, `UPDATE payments SET `+sqlSetState(engine.TransitionMarkUnknown)+`, reason = $2,
			updated_at = $3 WHERE key = $1 AND `+sqlGuard(engine.TransitionMarkUnknown, "payments", "$4"),
			cleanReason(reason), now, owner)
	})
}

// Get implements engine.Journal.
func (s *postgresStore) Get(ctx context.Context, key string) (engine.Record, error) {
	var rec engine.Record
	found := false
	err := s.withConn(ctx, "get", func(ctx context.Context, c *pgx.Conn) error {
		var err error
		rec, found, err = pgGetPayment(ctx, c, key)
		return err
	})
	switch {
	case err != nil:
		return engine.Record{}, err
	case !found:
		return engine.Record{}, fmt.Errorf("store: postgres: get: %w", engine.ErrNotFound)
	}
	return rec, nil
}

// Heartbeat implements engine.Journal. A heartbeat never moves an
// instance's last sign of life backwards.
func (s *postgresStore) Heartbeat(ctx context.Context, owner string, now time.Time) error {
	if err := checkText("owner", owner, false); err != nil {
		return fmt.Errorf("store: postgres: heartbeat: %w", err)
	}
	return s.withConn(ctx, "heartbeat", func(ctx context.Context, c *pgx.Conn) error {
		return pgBeat(ctx, c, owner, now)
	})
}

// pgBeat records owner alive at now.
func pgBeat(ctx context.Context, c pgExecer, owner string, now time.Time) error {
	if _, err := c.Exec(ctx, `INSERT INTO engine_instances (owner, seen_at) VALUES ($1, $2)
		ON CONFLICT (owner) DO UPDATE SET seen_at = GREATEST(engine_instances.seen_at, EXCLUDED.seen_at)`,
		owner, instant(now)); err != nil {
		return fmt.Errorf("heartbeat: %w", err)
	}
	return nil
}

// Leave implements engine.Journal.
func (s *postgresStore) Leave(ctx context.Context, owner string) error {
	return s.withConn(ctx, "leave", func(ctx context.Context, c *pgx.Conn) error {
		if _, err := c.Exec(ctx, `DELETE FROM engine_instances WHERE owner = $1`, owner); err != nil {
			return fmt.Errorf("delete: %w", err)
		}
		return nil
	})
}

// Recover implements engine.Journal in one transaction. Rows are locked
// with SELECT ... FOR UPDATE SKIP LOCKED (a row another caller is handling
// is left to it, never waited for) and changed by a second statement that
// checks the condition again: in READ COMMITTED that statement sees every
// commit made before the locks were granted, so a row another instance
// claimed (with its heartbeat, in the same commit) in the meantime is not
// claimed twice. Claimed rows come oldest first.
func (s *postgresStore) Recover(ctx context.Context, owner string, now, deadBefore, leaseUntil time.Time, limit int) ([]engine.Record, int, error) {
	if err := checkText("owner", owner, false); err != nil {
		return nil, 0, fmt.Errorf("store: postgres: recover: %w", err)
	}
	nowN, deadN := instant(now), instant(deadBefore)
	var claimed []engine.Record
	released := 0
	err := s.withTx(ctx, "recover", func(ctx context.Context, tx pgx.Tx) error {
		claimed, released = nil, 0
		if err := pgBeat(ctx, tx, owner, now); err != nil {
			return err
		}
		release := sqlGuard(engine.TransitionRecoverRelease, "payments", "") + ` AND ` + pgAbandoned
		keys, err := pgLockKeys(ctx, tx, `SELECT key FROM payments WHERE `+release+`
			FOR UPDATE SKIP LOCKED`, nowN, deadN)
		if err != nil {
			return fmt.Errorf("lock reservations: %w", err)
		}
		if len(keys) > 0 {
			tag, err := tx.Exec(ctx, `UPDATE payments SET `+sqlSetState(engine.TransitionRecoverRelease)+`, reason = $3,
				updated_at = $1 WHERE key = ANY($4) AND `+release,
				nowN, deadN, abandonedReason, keys)
			if err != nil {
				return fmt.Errorf("release: %w", err)
			}
			released = int(tag.RowsAffected())
		}
		if !validLimit(limit) {
			return nil
		}
		claim := sqlGuard(engine.TransitionRecoverClaim, "payments", "") + ` AND ` + pgAbandoned
		keys, err = pgLockKeys(ctx, tx, `SELECT key FROM payments WHERE `+claim+`
			ORDER BY created_at, key LIMIT $3 FOR UPDATE SKIP LOCKED`, nowN, deadN, int64(limit))
		if err != nil {
			return fmt.Errorf("lock settling rows: %w", err)
		}
		if len(keys) == 0 {
			return nil
		}
		rows, err := tx.Query(ctx, `UPDATE payments SET `+sqlSetState(engine.TransitionRecoverClaim)+`, owner = $3,
			lease_until = $4, updated_at = $1 WHERE key = ANY($5) AND `+claim+`
			RETURNING `+paymentCols, nowN, deadN, owner, instant(leaseUntil), keys)
		if err != nil {
			return fmt.Errorf("claim: %w", err)
		}
		defer rows.Close()
		if claimed, err = appendPayments(claimed, rows); err != nil {
			return fmt.Errorf("claim: %w", err)
		}
		return nil
	})
	if err != nil {
		return nil, 0, err
	}
	sortRecords(claimed)
	return claimed, released, nil
}

// pgLockKeys runs a SELECT key ... FOR UPDATE query and returns the keys.
func pgLockKeys(ctx context.Context, tx pgx.Tx, query string, args ...any) ([]string, error) {
	rows, err := tx.Query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}

// List implements engine.Journal.
func (s *postgresStore) List(ctx context.Context, state engine.State, limit int) ([]engine.Record, error) {
	out := []engine.Record{}
	if !validLimit(limit) {
		return out, nil
	}
	err := s.withConn(ctx, "list", func(ctx context.Context, c *pgx.Conn) error {
		rows, err := c.Query(ctx, `SELECT `+paymentCols+` FROM payments WHERE state = $1
			ORDER BY created_at, key LIMIT $2`, int64(state), int64(limit))
		if err != nil {
			return err
		}
		defer rows.Close()
		out, err = appendPayments(out, rows)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Counts implements engine.Journal: every state is present, zero or not.
func (s *postgresStore) Counts(ctx context.Context) (map[engine.State]int64, error) {
	out := allCounts()
	err := s.withConn(ctx, "counts", func(ctx context.Context, c *pgx.Conn) error {
		rows, err := c.Query(ctx, `SELECT state, count(*) FROM payments GROUP BY state`)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var state, n int64
			if err := rows.Scan(&state, &n); err != nil {
				return err
			}
			out[engine.State(state)] = n
		}
		return rows.Err()
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// Prune implements engine.Journal: each batch is one statement (its own
// transaction) that locks the rows it changes, skipping rows another
// transaction holds (FOR UPDATE SKIP LOCKED: a concurrent Reserve or
// Settle never waits for a prune, and a row it holds is left to the next
// Prune).
func (s *postgresStore) Prune(ctx context.Context, now time.Time, o engine.PruneOptions) (engine.PruneTotals, error) {
	return runPrune(ctx, "store: postgres", pgPrunePhases, o, func(ctx context.Context, ph prunePhase, after pruneCursor) (int64, pruneCursor, error) {
		var n int64
		err := s.withConn(ctx, "prune", func(ctx context.Context, c *pgx.Conn) error {
			var err error
			n, after, err = pgPruneBatch(ctx, c, ph.sql, instant(now), after, o.BatchSize())
			return err
		})
		return n, after, err
	})
}

// pgPrunePhases are sqlitePrunePhases on PostgreSQL, with the row's key
// as its place among rows of the same instant: the batch is locked (SKIP
// LOCKED) and its condition checked again on the locked rows; the index
// is entered at the cursor's instant ($2).
var pgPrunePhases = []prunePhase{
	{
		sql: `WITH batch AS (SELECT key FROM payments
				WHERE keep_until < $1 AND keep_until >= $2 AND (keep_until, key) > ($2, $3)
					AND state IN ` + sqlStates(engine.Prunable) + `
				ORDER BY keep_until, key LIMIT $4 FOR UPDATE SKIP LOCKED)
			DELETE FROM payments p USING batch WHERE p.key = batch.key
				AND p.keep_until < $1 AND p.state IN ` + sqlStates(engine.Prunable) + `
			RETURNING p.keep_until, p.key`,
		counts: func(n int64) (int64, int64) { return n, 0 },
	},
	{
		sql: `WITH batch AS (SELECT key FROM payments
				WHERE answer IS NOT NULL AND answer_until < $1 AND answer_until >= $2 AND (answer_until, key) > ($2, $3)
					AND state IN ` + sqlStates(engine.Prunable) + `
				ORDER BY answer_until, key LIMIT $4 FOR UPDATE SKIP LOCKED)
			UPDATE payments p SET answer = NULL FROM batch WHERE p.key = batch.key
				AND p.answer IS NOT NULL AND p.answer_until < $1 AND p.state IN ` + sqlStates(engine.Prunable) + `
			RETURNING p.answer_until, p.key`,
		counts: func(n int64) (int64, int64) { return 0, n },
	},
}

// pgPruneBatch runs one batch of a prune phase: it changes up to limit
// rows after the cursor (instant and key) and returns how many, and the
// cursor past the last.
func pgPruneBatch(ctx context.Context, c *pgx.Conn, query string, now int64, after pruneCursor, limit int) (int64, pruneCursor, error) {
	rows, err := c.Query(ctx, query, now, after.at, after.key, limit)
	if err != nil {
		return 0, after, err
	}
	defer rows.Close()
	var n int64
	for rows.Next() {
		d := pruneCursor{row: after.row}
		if err := rows.Scan(&d.at, &d.key); err != nil {
			return 0, after, err
		}
		n++
		after = after.max(d)
	}
	return n, after, rows.Err()
}

// LedgerEntry returns the ledger entry of an authorization (found false if
// none); asset, payer and nonce compare case-insensitively, the payer comes
// back EIP-55 checksummed. It implements journaltest.LedgerReader.
func (s *postgresStore) LedgerEntry(ctx context.Context, network, asset, payer, nonce string) (engine.LedgerEntry, bool, error) {
	n, a, p, no, ok := ledgerLookup(network, asset, payer, nonce)
	if !ok {
		return engine.LedgerEntry{}, false, nil
	}
	var e engine.LedgerEntry
	var at int64
	found := false
	err := s.withConn(ctx, "ledger entry", func(ctx context.Context, c *pgx.Conn) error {
		err := c.QueryRow(ctx, `SELECT network, asset, payer, nonce, tool_key, amount::text, tx, COALESCE(ref_code, ''),
			route, transport, settled_at FROM settlements WHERE network = $1 AND asset = $2 AND payer = $3 AND nonce = $4`,
			n, a, p, no).Scan(&e.Network, &e.Asset, &e.Payer, &e.Nonce, &e.Product, &e.Amount, &e.Transaction, &e.RefCode,
			&e.Resource, &e.Transport, &at)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		found = err == nil
		return err
	})
	if err != nil || !found {
		return engine.LedgerEntry{}, false, err
	}
	e.Payer, e.SettledAt = displayAddress(e.Payer), fromNanos(at)
	return e, true, nil
}

package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/seed1284c1d2/svc/x402"
	"github.com/seed1284c1d2/svc/x402/engine"
)

// The SQLite engine.Journal. Writes run through s.journalWrite (the group
// committer, or one transaction each when it is off); reads run on the
// read pool and see committed data only.

// sqliteAppendSQL inserts a ledger entry unless the authorization has one.
const sqliteAppendSQL = `INSERT INTO settlements
	(network, asset, payer, nonce, tool_key, amount, tx, ref_code, route, transport, settled_at)
	VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
	ON CONFLICT (network, asset, payer, nonce) DO NOTHING`

// sqliteValues is the VALUES list of a payments row (paymentCols).
const sqliteValues = `VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`

// The statements of the journal's writes, prepared on the writer
// connection at open (sqliteJournalStmts). Their states come from the
// transition table.
var (
	// sqliteCreatePayment creates a row unless the key has one.
	sqliteCreatePayment = `INSERT INTO payments (` + paymentCols + `) ` + sqliteValues + ` ON CONFLICT (key) DO NOTHING`
	// sqliteReplacePayment replaces the row of the key.
	sqliteReplacePayment = `INSERT OR REPLACE INTO payments (` + paymentCols + `) ` + sqliteValues
	sqliteSelectPayment  = `SELECT ` + paymentCols + ` FROM payments WHERE key = ?`
	sqliteSelectState    = `SELECT state FROM payments WHERE key = ?`
	// sqliteReserveAgain reserves the row of the key again; the caller
	// checked the transition.
	sqliteReserveAgain = `UPDATE payments SET ` + sqlSetState(engine.TransitionReserveAgain) + `, request_hash = ?,
		owner = ?, lease_until = ?, resource = ?, product = ?, transport = ?, ref_code = ?, request_id = ?,
		x402_version = ?, payload = NULL, requirements = NULL, answer = NULL, answer_until = 0, settlement = NULL,
		reason = '', updated_at = ? WHERE key = ?`
	sqliteSettling = `UPDATE payments SET ` + sqlSetState(engine.TransitionSettling) + `, answer = ?, answer_until = ?,
		payload = ?, requirements = ?, payer = ?, amount = ?, lease_until = ?, updated_at = ?
		WHERE key = ? AND ` + sqlGuard(engine.TransitionSettling, "payments", "?") + ` AND (? = '' OR request_hash = ?)`
	sqliteSettleRead = `SELECT state, network, asset, payer, nonce, product, amount, ref_code,
		resource, transport FROM payments WHERE key = ?`
	// sqliteSettle settles the row of the key; the caller checked the
	// transition.
	sqliteSettle  = `UPDATE payments SET ` + sqlSetState(engine.TransitionSettle) + `, settlement = ?, updated_at = ? WHERE key = ?`
	sqliteRelease = `UPDATE payments SET ` + sqlSetState(engine.TransitionRelease) + `, attempts = attempts + ?,
		reason = ?, updated_at = ? WHERE key = ? AND ` + sqlGuard(engine.TransitionRelease, "payments", "?")
	sqliteFail = `UPDATE payments SET ` + sqlSetState(engine.TransitionFail) + `, settlement = ?, reason = ?,
		updated_at = ? WHERE key = ? AND ` + sqlGuard(engine.TransitionFail, "payments", "?")
	sqliteMarkUnknown = `UPDATE payments SET ` + sqlSetState(engine.TransitionMarkUnknown) + `, reason = ?,
		updated_at = ? WHERE key = ? AND ` + sqlGuard(engine.TransitionMarkUnknown, "payments", "?")
	sqliteBeat = `INSERT INTO engine_instances (owner, seen_at) VALUES (?, ?)
		ON CONFLICT (owner) DO UPDATE SET seen_at = max(seen_at, excluded.seen_at)`
	sqliteLeave = `DELETE FROM engine_instances WHERE owner = ?`
)

// sqliteJournalStmts lists the statements prepared at open.
func sqliteJournalStmts() []string {
	return []string{sqliteAppendSQL, sqliteCreatePayment, sqliteReplacePayment, sqliteSelectPayment, sqliteSelectState,
		sqliteReserveAgain, sqliteSettling, sqliteSettleRead, sqliteSettle, sqliteRelease, sqliteFail, sqliteMarkUnknown,
		sqliteBeat, sqliteLeave, sqliteSavepoint, sqliteRollbackTo, sqliteReleaseSavepoint,
		sqliteChannelSelect, sqliteChannelPut, sqliteChannelUpdate, sqliteChannelDelete, channelFastHoldSQL, channelFastCommitSQL}
}

// sqliteAbandoned is the condition of a row whose holder is gone: its
// lease ended before ?1 (now), or its owner's last heartbeat is before ?2
// (deadBefore) or absent.
const sqliteAbandoned = `(lease_until < ?1 OR NOT EXISTS (SELECT 1 FROM engine_instances i
	WHERE i.owner = payments.owner AND i.seen_at >= ?2))`

// withoutGroupCommit turns the SQLite group commit off: each journal write
// is a transaction of its own. For benchmarks only.
func withoutGroupCommit() Option {
	return func(c *config) { c.noGroupCommit = true }
}

// withGroupLinger makes the SQLite group committer wait up to d for more
// writes after taking the queued ones. For benchmarks only.
func withGroupLinger(d time.Duration) Option {
	return func(c *config) { c.groupLinger = d }
}

// journalWrite runs f as one journal write: through the group committer
// (inside a savepoint of a shared transaction) or in a transaction of its
// own. f must leave the database unchanged when it returns an error.
// Errors are prefixed with "store: sqlite: op".
func (s *sqliteStore) journalWrite(ctx context.Context, op string, f func(ctx context.Context, tx *sql.Tx) error) error {
	if s.group == nil {
		return s.writeTx(ctx, op, f)
	}
	ctx, cancel := s.cfg.withTimeout(ctx) // bounds the wait to be taken
	defer cancel()
	if err := s.group.do(ctx, f); err != nil {
		return fmt.Errorf("store: sqlite: %s: %w", op, err)
	}
	return nil
}

// Reserve implements engine.Journal.
func (s *sqliteStore) Reserve(ctx context.Context, rsv engine.Reservation, maxAttempts int) (engine.Record, error) {
	row, err := encodeRecord(rsv.Record())
	if err != nil {
		return engine.Record{}, fmt.Errorf("store: sqlite: reserve: %w", err)
	}
	var out engine.Record
	taken := false
	args := row.args()
	err = s.journalWrite(ctx, "reserve", func(ctx context.Context, tx *sql.Tx) error {
		taken = false
		// The common case, a new key, is one statement.
		res, err := s.stmts.exec(ctx, tx, sqliteCreatePayment, args...)
		if err != nil {
			return fmt.Errorf("insert: %w", err)
		}
		if n, err := res.RowsAffected(); err != nil || n == 1 {
			if err != nil {
				return fmt.Errorf("insert: %w", err)
			}
			out, err = decodeRow(row)
			return err
		}
		cur, err := scanPayment(s.stmts.queryRow(ctx, tx, sqliteSelectPayment, row.key))
		if err != nil {
			return fmt.Errorf("read: %w", err)
		}
		switch {
		case engine.TransitionReserve.Rule().Allows(cur.State, false, false) && instant(cur.KeepUntil) < row.createdAt:
			if _, err := s.stmts.exec(ctx, tx, sqliteReplacePayment, args...); err != nil {
				return fmt.Errorf("replace: %w", err)
			}
			out, err = decodeRow(row)
			return err
		case engine.TransitionReserveAgain.Rule().Allows(cur.State, false, false) && cur.Attempts < maxAttempts:
			if _, err := s.stmts.exec(ctx, tx, sqliteReserveAgain,
				row.requestHash, row.owner, row.leaseUntil, row.resource, row.product, row.transport,
				row.refCode, row.requestID, row.x402Version, row.createdAt, row.key); err != nil {
				return fmt.Errorf("reserve again: %w", err)
			}
			// As the row reads back: instants are stored in nanoseconds.
			out = rsv.Again(cur)
			out.LeaseUntil, out.UpdatedAt = fromInstant(row.leaseUntil), fromInstant(row.createdAt)
			return nil
		}
		out, taken = cur, true
		return nil
	})
	switch {
	case err != nil:
		return engine.Record{}, err
	case taken:
		return out, engine.ErrTaken
	}
	return out, nil
}

// decodeRow is the record a freshly written row reads back as.
func decodeRow(r paymentRow) (engine.Record, error) {
	vals := r.args()
	return scanPayment(valuesRow(vals))
}

// valuesRow scans already known values (args order) like a row.
type valuesRow []any

// Scan implements rowScanner for the types paymentRow.args holds.
func (v valuesRow) Scan(dest ...any) error {
	if len(dest) != len(v) {
		return fmt.Errorf("scan %d values into %d destinations", len(v), len(dest))
	}
	for i, d := range dest {
		switch d := d.(type) {
		case *string:
			*d = v[i].(string)
		case *int64:
			*d = v[i].(int64)
		case *sql.NullString:
			*d = sql.NullString{}
			if s, ok := v[i].(string); ok {
				*d = sql.NullString{String: s, Valid: true}
			}
		default:
			return fmt.Errorf("scan into %T", d)
		}
	}
	return nil
}

// Settling implements engine.Journal.
func (s *sqliteStore) Settling(ctx context.Context, key, owner string, st engine.Settling) error {
	r, err := encodeSettling(st)
	if err != nil {
		return fmt.Errorf("store: sqlite: settling: %w", err)
	}
	now := instant(s.cfg.now())
	return s.journalWrite(ctx, "settling", func(ctx context.Context, tx *sql.Tx) error {
		res, err := s.stmts.exec(ctx, tx, sqliteSettling,
			r.answer, r.answerUntil, r.payload, r.requirements, r.payer, r.amount, r.leaseUntil, now,
			key, owner, st.RequestHash, st.RequestHash)
		return s.transitioned(ctx, tx, res, err, key)
	})
}

// transitioned turns the result of a conditional UPDATE of key into nil
// (one row changed) or the reason nothing changed.
func (s *sqliteStore) transitioned(ctx context.Context, tx *sql.Tx, res sql.Result, err error, key string) error {
	if err != nil {
		return fmt.Errorf("update: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return fmt.Errorf("rows affected: %w", err)
	}
	if n == 1 {
		return nil
	}
	var state int64
	err = s.stmts.queryRow(ctx, tx, sqliteSelectState, key).Scan(&state)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return stateError(false, 0)
	case err != nil:
		return fmt.Errorf("read state: %w", err)
	}
	return stateError(true, state)
}

// Settle implements engine.Journal: the settled state and the ledger entry
// in one commit.
func (s *sqliteStore) Settle(ctx context.Context, key string, sr x402.SettleResponse, at time.Time) error {
	raw, err := encodeSettlement(&sr)
	if err != nil {
		return fmt.Errorf("store: sqlite: settle: %w", err)
	}
	return s.journalWrite(ctx, "settle", func(ctx context.Context, tx *sql.Tx) error {
		var rec engine.Record
		var state int64
		err := s.stmts.queryRow(ctx, tx, sqliteSettleRead, key).Scan(&state, &rec.Network, &rec.Asset, &rec.Payer,
			&rec.Nonce, &rec.Product, &rec.Amount, &rec.RefCode, &rec.Resource, &rec.Transport)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			return stateError(false, 0)
		case err != nil:
			return fmt.Errorf("read: %w", err)
		case engine.TransitionSettle.Rule().Done.Has(engine.State(state)):
			return nil
		case !engine.TransitionSettle.Rule().Allows(engine.State(state), false, false):
			return stateError(true, state)
		}
		entry, err := ledgerSettlement(rec, sr.Transaction, at)
		sale := !errors.Is(err, errNoSale)
		if err != nil && sale {
			return fmt.Errorf("ledger entry: %w", err)
		}
		if _, err := s.stmts.exec(ctx, tx, sqliteSettle, raw, instant(at), key); err != nil {
			return fmt.Errorf("update: %w", err)
		}
		if !sale {
			return nil
		}
		if _, err := s.stmts.exec(ctx, tx, sqliteAppendSQL, entry.args()...); err != nil {
			return fmt.Errorf("ledger: %w", err)
		}
		return nil
	})
}

// Release implements engine.Journal.
func (s *sqliteStore) Release(ctx context.Context, key, owner, reason string, counted bool) error {
	add := int64(0)
	if counted {
		add = 1
	}
	reason = cleanReason(reason)
	now := instant(s.cfg.now())
	return s.journalWrite(ctx, "release", func(ctx context.Context, tx *sql.Tx) error {
		res, err := s.stmts.exec(ctx, tx, sqliteRelease, add, reason, now, key, owner)
		return s.transitioned(ctx, tx, res, err, key)
	})
}

// Fail implements engine.Journal.
func (s *sqliteStore) Fail(ctx context.Context, key, owner, reason string, sr x402.SettleResponse) error {
	raw, err := encodeSettlement(&sr)
	if err != nil {
		return fmt.Errorf("store: sqlite: fail: %w", err)
	}
	reason = cleanReason(reason)
	now := instant(s.cfg.now())
	return s.journalWrite(ctx, "fail", func(ctx context.Context, tx *sql.Tx) error {
		res, err := s.stmts.exec(ctx, tx, sqliteFail, raw, reason, now, key, owner)
		return s.transitioned(ctx, tx, res, err, key)
	})
}

// MarkUnknown implements engine.Journal.
func (s *sqliteStore) MarkUnknown(ctx context.Context, key, owner, reason string) error {
	reason = cleanReason(reason)
	now := instant(s.cfg.now())
	return s.journalWrite(ctx, "mark unknown", func(ctx context.Context, tx *sql.Tx) error {
		res, err := s.stmts.exec(ctx, tx, sqliteMarkUnknown, reason, now, key, owner)
		return s.transitioned(ctx, tx, res, err, key)
	})
}

// Get implements engine.Journal.
func (s *sqliteStore) Get(ctx context.Context, key string) (engine.Record, error) {
	ctx, cancel := s.cfg.withTimeout(ctx)
	defer cancel()
	rec, err := scanPayment(s.r.QueryRowContext(ctx, sqliteSelectPayment, key))
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return engine.Record{}, fmt.Errorf("store: sqlite: get: %w", engine.ErrNotFound)
	case err != nil:
		return engine.Record{}, fmt.Errorf("store: sqlite: get: %w", err)
	}
	return rec, nil
}

// Heartbeat implements engine.Journal. A heartbeat never moves an
// instance's last sign of life backwards.
func (s *sqliteStore) Heartbeat(ctx context.Context, owner string, now time.Time) error {
	if err := checkText("owner", owner, false); err != nil {
		return fmt.Errorf("store: sqlite: heartbeat: %w", err)
	}
	return s.journalWrite(ctx, "heartbeat", func(ctx context.Context, tx *sql.Tx) error {
		return s.beat(ctx, tx, owner, now)
	})
}

// beat records owner alive at now.
func (s *sqliteStore) beat(ctx context.Context, tx *sql.Tx, owner string, now time.Time) error {
	if _, err := s.stmts.exec(ctx, tx, sqliteBeat, owner, instant(now)); err != nil {
		return fmt.Errorf("heartbeat: %w", err)
	}
	return nil
}

// Leave implements engine.Journal.
func (s *sqliteStore) Leave(ctx context.Context, owner string) error {
	return s.journalWrite(ctx, "leave", func(ctx context.Context, tx *sql.Tx) error {
		if _, err := s.stmts.exec(ctx, tx, sqliteLeave, owner); err != nil {
			return fmt.Errorf("delete: %w", err)
		}
		return nil
	})
}

// Recover implements engine.Journal in one IMMEDIATE transaction: the
// single writer makes it atomic against every other write. Claimed rows
// come oldest first.
func (s *sqliteStore) Recover(ctx context.Context, owner string, now, deadBefore, leaseUntil time.Time, limit int) ([]engine.Record, int, error) {
	if err := checkText("owner", owner, false); err != nil {
		return nil, 0, fmt.Errorf("store: sqlite: recover: %w", err)
	}
	nowN, deadN := instant(now), instant(deadBefore)
	var claimed []engine.Record
	released := 0
	err := s.writeTx(ctx, "recover", func(ctx context.Context, tx *sql.Tx) error {
		claimed, released = nil, 0
		if err := s.beat(ctx, tx, owner, now); err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx, `UPDATE payments SET `+sqlSetState(engine.TransitionRecoverRelease)+`,
			reason = ?3, updated_at = ?1
			WHERE `+sqlGuard(engine.TransitionRecoverRelease, "payments", "")+` AND `+sqliteAbandoned,
			nowN, deadN, abandonedReason)
		if err != nil {
			return fmt.Errorf("release: %w", err)
		}
		n, err := res.RowsAffected()
		if err != nil {
			return fmt.Errorf("release: %w", err)
		}
		released = int(n)
		if !validLimit(limit) {
			return nil
		}
		rows, err := tx.QueryContext(ctx, `UPDATE payments SET `+sqlSetState(engine.TransitionRecoverClaim)+`,
			owner = ?3, lease_until = ?4, updated_at = ?1
			WHERE key IN (SELECT key FROM payments WHERE `+sqlGuard(engine.TransitionRecoverClaim, "payments", "")+`
				AND `+sqliteAbandoned+` ORDER BY created_at, key LIMIT ?5)
			RETURNING `+paymentCols, nowN, deadN, owner, instant(leaseUntil), limit)
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

// sortRecords orders records oldest first (CreatedAt, then Key).
func sortRecords(recs []engine.Record) {
	slices.SortFunc(recs, func(a, b engine.Record) int {
		if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(a.Key, b.Key)
	})
}

// List implements engine.Journal.
func (s *sqliteStore) List(ctx context.Context, state engine.State, limit int) ([]engine.Record, error) {
	out := []engine.Record{}
	if !validLimit(limit) {
		return out, nil
	}
	ctx, cancel := s.cfg.withTimeout(ctx)
	defer cancel()
	rows, err := s.r.QueryContext(ctx, `SELECT `+paymentCols+` FROM payments WHERE state = ?
		ORDER BY created_at, key LIMIT ?`, int64(state), limit)
	if err != nil {
		return nil, fmt.Errorf("store: sqlite: list: %w", err)
	}
	defer rows.Close()
	if out, err = appendPayments(out, rows); err != nil {
		return nil, fmt.Errorf("store: sqlite: list: %w", err)
	}
	return out, nil
}

// Counts implements engine.Journal: every state is present, zero or not.
func (s *sqliteStore) Counts(ctx context.Context) (map[engine.State]int64, error) {
	ctx, cancel := s.cfg.withTimeout(ctx)
	defer cancel()
	rows, err := s.r.QueryContext(ctx, `SELECT state, count(*) FROM payments GROUP BY state`)
	if err != nil {
		return nil, fmt.Errorf("store: sqlite: counts: %w", err)
	}
	defer rows.Close()
	out := allCounts()
	for rows.Next() {
		var state, n int64
		if err := rows.Scan(&state, &n); err != nil {
			return nil, fmt.Errorf("store: sqlite: counts: %w", err)
		}
		out[engine.State(state)] = n
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: sqlite: counts: %w", err)
	}
	return out, nil
}

// Prune implements engine.Journal: each batch is one IMMEDIATE
// transaction on the writer connection, which the group committer takes
// in between.
func (s *sqliteStore) Prune(ctx context.Context, now time.Time, o engine.PruneOptions) (engine.PruneTotals, error) {
	return runPrune(ctx, "store: sqlite", sqlitePrunePhases, o, func(ctx context.Context, ph prunePhase, after pruneCursor) (int64, pruneCursor, error) {
		var n int64
		err := s.writeTx(ctx, "prune", func(ctx context.Context, tx *sql.Tx) error {
			var err error
			n, after, err = sqlitePruneBatch(ctx, tx, ph.sql, instant(now), after, o.BatchSize())
			return err
		})
		return n, after, err
	})
}

// sqlitePrunePhases delete the prunable rows past keep_until (index
// payments_keep_until, in (keep_until, rowid) order), then forget the
// answers past answer_until of the prunable rows left (partial index
// payments_answer_until).
var sqlitePrunePhases = []prunePhase{
	{
		sql: `DELETE FROM payments WHERE rowid IN (SELECT rowid FROM payments INDEXED BY payments_keep_until
			WHERE keep_until < ?1 AND (keep_until, rowid) > (?2, ?3) AND state IN ` + sqlStates(engine.Prunable) + `
			ORDER BY keep_until, rowid LIMIT ?4) RETURNING keep_until, rowid`,
		counts: func(n int64) (int64, int64) { return n, 0 },
	},
	{
		sql: `UPDATE payments SET answer = NULL WHERE rowid IN (SELECT rowid FROM payments INDEXED BY payments_answer_until
			WHERE answer IS NOT NULL AND answer_until < ?1 AND (answer_until, rowid) > (?2, ?3)
				AND state IN ` + sqlStates(engine.Prunable) + `
			ORDER BY answer_until, rowid LIMIT ?4) RETURNING answer_until, rowid`,
		counts: func(n int64) (int64, int64) { return 0, n },
	},
}

// sqlitePruneBatch runs one batch of a prune phase in tx: it changes up to
// limit rows after the cursor and returns how many, and the cursor past
// the last.
func sqlitePruneBatch(ctx context.Context, tx *sql.Tx, query string, now int64, after pruneCursor, limit int) (int64, pruneCursor, error) {
	rows, err := tx.QueryContext(ctx, query, now, after.at, after.row, limit)
	if err != nil {
		return 0, after, err
	}
	defer rows.Close()
	var n int64
	for rows.Next() {
		var c pruneCursor
		if err := rows.Scan(&c.at, &c.row); err != nil {
			return 0, after, err
		}
		n++
		after = after.max(c)
	}
	return n, after, rows.Err()
}

// LedgerEntry returns the ledger entry of an authorization (found false if
// none); asset, payer and nonce compare case-insensitively, the payer comes
// back EIP-55 checksummed. It implements journaltest.LedgerReader.
func (s *sqliteStore) LedgerEntry(ctx context.Context, network, asset, payer, nonce string) (engine.LedgerEntry, bool, error) {
	n, a, p, no, ok := ledgerLookup(network, asset, payer, nonce)
	if !ok {
		return engine.LedgerEntry{}, false, nil
	}
	ctx, cancel := s.cfg.withTimeout(ctx)
	defer cancel()
	var e engine.LedgerEntry
	var at int64
	err := s.r.QueryRowContext(ctx, `SELECT network, asset, payer, nonce, tool_key, amount, tx, COALESCE(ref_code, ''),
		route, transport, settled_at FROM settlements WHERE network = ? AND asset = ? AND payer = ? AND nonce = ?`,
		n, a, p, no).Scan(&e.Network, &e.Asset, &e.Payer, &e.Nonce, &e.Product, &e.Amount, &e.Transaction, &e.RefCode,
		&e.Resource, &e.Transport, &at)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return engine.LedgerEntry{}, false, nil
	case err != nil:
		return engine.LedgerEntry{}, false, fmt.Errorf("store: sqlite: ledger entry: %w", err)
	}
	e.Payer, e.SettledAt = displayAddress(e.Payer), fromNanos(at)
	return e, true, nil
}

package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/big"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"modernc.org/sqlite" // registers the "sqlite" database/sql driver
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/seed1284c1d2/svc/club"
	"github.com/seed1284c1d2/svc/ledger"
	"github.com/seed1284c1d2/svc/x402/engine"
)

// sqliteDefaultReaders is the default size of the SQLite read pool.
const sqliteDefaultReaders = 4

// sqliteStore is the SQLite Store. Writes go through w, a pool of exactly one
// connection whose transactions begin IMMEDIATE (the write lock is taken at
// BEGIN, so a read-modify-write never fails to upgrade and other processes
// wait on busy_timeout); reads go through r, read-only connections that WAL
// lets run alongside the writer. The journal's writes go through group, the
// group committer (nil when a benchmark turns it off), which uses w too.
type sqliteStore struct {
	cfg   config
	path  string
	w     *sql.DB
	r     *sql.DB
	stmts *stmtCache // the journal's writes, prepared on w
	group *groupCommitter

	closeOnce sync.Once
	closeErr  error

	// chanRead is the channel store's read, prepared on the reader pool
	// at its first use.
	chanRead struct {
		once sync.Once
		stmt *sql.Stmt
		err  error
	}
}

// OpenSQLite opens (creating if needed, with its directory) the SQLite
// database file at path and applies pending migrations. path is a plain file
// path: it may not contain '?', be a "file:" URI or name an in-memory
// database.
//
// Durability: the file is in WAL mode with synchronous=NORMAL. A committed
// transaction has been written to the WAL (handed to the operating system)
// before the commit returns, so it survives the crash or kill -9 of the
// process; only an operating-system crash or a power loss can lose the last
// transactions committed since the WAL was last synced (at checkpoints).
// synchronous=FULL would add an fsync per commit for that case.
//
// Group commit: the journal's writes (Reserve, Settling, Settle, Release,
// Fail, MarkUnknown, Heartbeat, Leave) are queued to one writer goroutine.
// It takes every write that arrived while its previous transaction was
// committing (up to 128), runs them in one IMMEDIATE transaction on the
// writer connection, each inside a savepoint of its own so that one
// write's SQL error rolls back that write alone, commits, and answers each
// caller with its own result; a failed commit fails every write of the
// batch. Each caller returns only once its write is committed. Close stops
// the goroutine after its current transaction.
func OpenSQLite(ctx context.Context, path string, opts ...Option) (Store, error) {
	cfg := newConfig(opts)
	path = strings.TrimSpace(path)
	switch {
	case path == "":
		return nil, invalid("sqlite path", "is required")
	case strings.Contains(path, "?"), strings.HasPrefix(strings.ToLower(path), "file:"):
		return nil, invalid("sqlite path", "must be a plain file path (no '?', no file: URI)")
	case strings.Contains(strings.ToLower(path), ":memory:"):
		return nil, invalid("sqlite path", "in-memory databases are not supported (each connection would get its own); use a temporary file")
	}
	if cfg.readOnly {
		return openSQLiteReadOnly(ctx, cfg, path)
	}
	if dir := filepath.Dir(path); dir != "." {
		if err := os.MkdirAll(dir, 0o750); err != nil {
			return nil, fmt.Errorf("store: sqlite: create directory of %s: %w", path, err)
		}
	}
	busy := strconv.FormatInt(max(cfg.opTimeout.Milliseconds(), 1000), 10)
	common := url.Values{}
	common.Set("_busy_timeout", busy)
	common.Set("_foreign_keys", "1")
	wq := url.Values{}
	for k, v := range common {
		wq[k] = v
	}
	wq.Set("_journal_mode", "WAL")
	wq.Set("_synchronous", "NORMAL")
	wq.Set("_txlock", "immediate")
	rq := common
	rq.Set("_query_only", "1")

	s := &sqliteStore{cfg: cfg, path: path}
	var err error
	if s.w, err = sql.Open("sqlite", path+"?"+wq.Encode()); err != nil {
		return nil, fmt.Errorf("store: sqlite: open %s: %w", path, err)
	}
	s.w.SetMaxOpenConns(1)
	s.w.SetMaxIdleConns(1)
	s.w.SetConnMaxIdleTime(0)
	s.w.SetConnMaxLifetime(0)
	if err := s.migrateRetrying(ctx); err != nil {
		_ = s.w.Close()
		return nil, err
	}
	if s.r, err = sql.Open("sqlite", path+"?"+rq.Encode()); err != nil {
		_ = s.w.Close()
		return nil, fmt.Errorf("store: sqlite: open %s for reading: %w", path, err)
	}
	readers := sqliteDefaultReaders
	if cfg.maxConns > 0 {
		readers = cfg.maxConns
	}
	s.r.SetMaxOpenConns(readers)
	s.r.SetMaxIdleConns(readers)
	if err := s.r.PingContext(ctx); err != nil {
		_ = s.Close()
		return nil, fmt.Errorf("store: sqlite: open %s for reading: %w", path, err)
	}
	if s.stmts, err = newStmtCache(ctx, s.w, sqliteJournalStmts()...); err != nil {
		_ = s.Close()
		return nil, fmt.Errorf("store: sqlite: open %s: %w", path, err)
	}
	if !cfg.noGroupCommit {
		s.group = newGroupCommitter(s.w, s.stmts, cfg.opTimeout, cfg.groupMax, cfg.groupLinger)
	}
	return s, nil
}

// openSQLiteReadOnly opens an existing database file with query_only
// connections, applies no migration and checks the schema (see ReadOnly).
// Its journal writes fail: the statements they need are not prepared.
func openSQLiteReadOnly(ctx context.Context, cfg config, path string) (Store, error) {
	if fi, err := os.Stat(path); err != nil || !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%w: %s", ErrNoDatabase, path)
	}
	q := url.Values{}
	q.Set("_busy_timeout", strconv.FormatInt(max(cfg.opTimeout.Milliseconds(), 1000), 10))
	q.Set("_query_only", "1")
	db, err := sql.Open("sqlite", path+"?"+q.Encode())
	if err != nil {
		return nil, fmt.Errorf("store: sqlite: open %s: %w", path, err)
	}
	readers := sqliteDefaultReaders
	if cfg.maxConns > 0 {
		readers = cfg.maxConns
	}
	db.SetMaxOpenConns(readers)
	db.SetMaxIdleConns(readers)
	s := &sqliteStore{cfg: cfg, path: path, w: db, r: db, stmts: &stmtCache{}}
	if err := s.CheckSchema(ctx); err != nil {
		_ = db.Close()
		return nil, err
	}
	return s, nil
}

// migrate applies the pending SQLite migrations in one IMMEDIATE transaction:
// the write lock serializes concurrent openers (in this or other processes).
// It is bounded by ctx, not by the operation timeout.
// migrateRetrying runs migrate, again after a pause while SQLite answers
// SQLITE_BUSY (at most ten times, within ctx): processes that open one new
// database together race to turn it into WAL mode, and the loser of that
// race can be refused outright, without the busy timeout.
func (s *sqliteStore) migrateRetrying(ctx context.Context) error {
	for attempt := 1; ; attempt++ {
		err := s.migrate(ctx)
		var se *sqlite.Error
		if err == nil || attempt == 10 || !errors.As(err, &se) || se.Code()&0xff != sqlite3.SQLITE_BUSY {
			return err
		}
		// The connection that failed is not reused.
		s.w.SetMaxIdleConns(0)
		s.w.SetMaxIdleConns(1)
		select {
		case <-ctx.Done():
			return err
		case <-time.After(time.Duration(attempt) * 20 * time.Millisecond):
		}
	}
}

func (s *sqliteStore) migrate(ctx context.Context) error {
	ms, err := migrations("sqlite")
	if err != nil {
		return err
	}
	return s.writeTxNoTimeout(ctx, "migrate", func(ctx context.Context, tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
			version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL) STRICT`); err != nil {
			return fmt.Errorf("create schema_migrations: %w", err)
		}
		applied := map[int]bool{}
		rows, err := tx.QueryContext(ctx, `SELECT version FROM schema_migrations`)
		if err != nil {
			return fmt.Errorf("read schema_migrations: %w", err)
		}
		for rows.Next() {
			var v int
			if err := rows.Scan(&v); err != nil {
				rows.Close()
				return fmt.Errorf("read schema_migrations: %w", err)
			}
			applied[v] = true
		}
		if err := errors.Join(rows.Err(), rows.Close()); err != nil {
			return fmt.Errorf("read schema_migrations: %w", err)
		}
		for _, m := range ms {
			if applied[m.version] {
				continue
			}
			if _, err := tx.ExecContext(ctx, m.sql); err != nil {
				return fmt.Errorf("apply migration %d_%s: %w", m.version, m.name, err)
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)`,
				m.version, m.name, toNanos(s.cfg.now())); err != nil {
				return fmt.Errorf("record migration %d_%s: %w", m.version, m.name, err)
			}
		}
		return nil
	})
}

// writeTx runs f in an IMMEDIATE transaction on the writer connection under
// the operation timeout, committing if f returns nil. Errors are prefixed
// with "store: sqlite: op".
func (s *sqliteStore) writeTx(ctx context.Context, op string, f func(ctx context.Context, tx *sql.Tx) error) error {
	ctx, cancel := s.cfg.withTimeout(ctx)
	defer cancel()
	return s.writeTxNoTimeout(ctx, op, f)
}

// writeTxNoTimeout is writeTx bounded by ctx alone (for migrations, which
// may legitimately take longer than an operation).
func (s *sqliteStore) writeTxNoTimeout(ctx context.Context, op string, f func(ctx context.Context, tx *sql.Tx) error) error {
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("store: sqlite: %s: begin: %w", op, err)
	}
	if err := f(ctx, tx); err != nil {
		_ = tx.Rollback()
		return fmt.Errorf("store: sqlite: %s: %w", op, err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("store: sqlite: %s: commit: %w", op, err)
	}
	return nil
}

// Dialect implements Store.
func (s *sqliteStore) Dialect() string { return "sqlite" }

// Ping implements Store: both pools must answer.
func (s *sqliteStore) Ping(ctx context.Context) error {
	ctx, cancel := s.cfg.withTimeout(ctx)
	defer cancel()
	if err := s.w.PingContext(ctx); err != nil {
		return fmt.Errorf("store: sqlite: ping writer: %w", err)
	}
	if err := s.r.PingContext(ctx); err != nil {
		return fmt.Errorf("store: sqlite: ping reader: %w", err)
	}
	return nil
}

// Close implements Store. It is idempotent; later calls return the first
// call's result. The group committer finishes its current transaction
// first; writes still queued fail with ErrClosed.
func (s *sqliteStore) Close() error {
	s.closeOnce.Do(func() {
		if s.group != nil {
			s.group.close()
		}
		var errs []error
		if s.stmts != nil {
			errs = append(errs, s.stmts.close())
		}
		if s.chanRead.stmt != nil {
			errs = append(errs, s.chanRead.stmt.Close())
		}
		if s.r != nil {
			errs = append(errs, s.r.Close())
		}
		if s.w != nil {
			errs = append(errs, s.w.Close())
		}
		if err := errors.Join(errs...); err != nil {
			s.closeErr = fmt.Errorf("store: sqlite: close %s: %w", s.path, err)
		}
	})
	return s.closeErr
}

// Append implements Ledger.
func (s *sqliteStore) Append(ctx context.Context, st Settlement) (bool, error) {
	r, err := normalizeSettlement(st)
	if err != nil {
		return false, fmt.Errorf("store: sqlite: append: %w", err)
	}
	ctx, cancel := s.cfg.withTimeout(ctx)
	defer cancel()
	res, err := s.w.ExecContext(ctx, sqliteAppendSQL, r.args()...)
	if err != nil {
		return false, fmt.Errorf("store: sqlite: append: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return false, fmt.Errorf("store: sqlite: append: rows affected: %w", err)
	}
	return n == 1, nil
}

// PayerStats implements Ledger.
func (s *sqliteStore) PayerStats(ctx context.Context, wallet string) (club.PayerStats, error) {
	key, err := walletKey("wallet", wallet)
	if err != nil {
		return club.PayerStats{}, fmt.Errorf("store: sqlite: payer stats: %w", err)
	}
	ctx, cancel := s.cfg.withTimeout(ctx)
	defer cancel()
	ps := club.PayerStats{Wallet: displayAddress(key)}
	var first, last sql.NullInt64
	err = s.r.QueryRowContext(ctx, `SELECT count(*), count(DISTINCT tool_key), min(settled_at), max(settled_at)
		FROM settlements WHERE payer = ?`, key).Scan(&ps.PaidCalls, &ps.Tools, &first, &last)
	if err != nil {
		return club.PayerStats{}, fmt.Errorf("store: sqlite: payer stats: %w", err)
	}
	if first.Valid {
		ps.FirstPaid, ps.LastPaid = fromNanos(first.Int64), fromNanos(last.Int64)
	}
	return ps, nil
}

// ReferralStats implements Ledger.
func (s *sqliteStore) ReferralStats(ctx context.Context, code string) (club.ReferralStats, error) {
	norm, ok := club.NormalizeReferralCode(code)
	if !ok {
		return club.ReferralStats{Code: code}, nil
	}
	ctx, cancel := s.cfg.withTimeout(ctx)
	defer cancel()
	rs := club.ReferralStats{Code: norm}
	var owner string
	var created int64
	err := s.r.QueryRowContext(ctx, `SELECT r.owner, r.created_at, count(DISTINCT s.payer), count(s.payer)
		FROM referrals r LEFT JOIN settlements s ON s.ref_code = r.code AND s.payer <> r.owner
		WHERE r.code = ? GROUP BY r.owner, r.created_at`, norm).Scan(&owner, &created, &rs.ReferredPayers, &rs.PaidCalls)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return rs, nil
	case err != nil:
		return club.ReferralStats{}, fmt.Errorf("store: sqlite: referral stats: %w", err)
	}
	rs.Registered, rs.Owner, rs.CreatedAt = true, displayAddress(owner), fromNanos(created)
	return rs, nil
}

// sqliteAmountChunks is the number of 9-digit chunks a 78-digit amount
// splits into (see sqliteRevenueQuery).
const sqliteAmountChunks = 9

// sqliteRevenueQuery sums atomic amounts exactly although SQLite has no
// big-number type: every amount is split into 9-digit chunks from the right,
// each chunk summed as an integer (no overflow below 9·10⁹ rows), and the
// chunk sums combined in Go (Σ chunk_i · 10^(9i)).
func sqliteRevenueQuery() string {
	var b strings.Builder
	b.WriteString("SELECT network, asset, count(*)")
	for i := range sqliteAmountChunks {
		hi := 9 * i // digits already taken from the right
		fmt.Fprintf(&b, `, sum(CASE WHEN length(amount) <= %[1]d THEN 0
			WHEN length(amount) - %[2]d >= 1 THEN CAST(substr(amount, length(amount) - %[2]d, 9) AS INTEGER)
			ELSE CAST(substr(amount, 1, length(amount) - %[1]d) AS INTEGER) END)`, hi, hi+8)
	}
	b.WriteString(" FROM settlements GROUP BY network, asset ORDER BY network, asset")
	return b.String()
}

// Totals implements Ledger.
func (s *sqliteStore) Totals(ctx context.Context) (Totals, error) {
	ctx, cancel := s.cfg.withTimeout(ctx)
	defer cancel()
	var t Totals
	if err := s.r.QueryRowContext(ctx, `SELECT count(*), count(DISTINCT payer) FROM settlements`).Scan(&t.SettledCalls, &t.Payers); err != nil {
		return Totals{}, fmt.Errorf("store: sqlite: totals: %w", err)
	}
	if err := s.r.QueryRowContext(ctx, `SELECT count(*) FROM referrals`).Scan(&t.ReferralCodes); err != nil {
		return Totals{}, fmt.Errorf("store: sqlite: totals: referrals: %w", err)
	}
	rows, err := s.r.QueryContext(ctx, sqliteRevenueQuery())
	if err != nil {
		return Totals{}, fmt.Errorf("store: sqlite: totals: revenue: %w", err)
	}
	defer rows.Close()
	base := new(big.Int).Exp(big.NewInt(10), big.NewInt(9), nil)
	for rows.Next() {
		var rv Revenue
		chunks := make([]int64, sqliteAmountChunks)
		dest := []any{&rv.Network, &rv.Asset, &rv.Calls}
		for i := range chunks {
			dest = append(dest, &chunks[i])
		}
		if err := rows.Scan(dest...); err != nil {
			return Totals{}, fmt.Errorf("store: sqlite: totals: revenue: %w", err)
		}
		sum := new(big.Int)
		for i := len(chunks) - 1; i >= 0; i-- {
			sum.Mul(sum, base).Add(sum, big.NewInt(chunks[i]))
		}
		rv.Amount = sum.String()
		t.Revenue = append(t.Revenue, rv)
	}
	if err := rows.Err(); err != nil {
		return Totals{}, fmt.Errorf("store: sqlite: totals: revenue: %w", err)
	}
	return t, nil
}

// PutReferral implements ReferralStore.
func (s *sqliteStore) PutReferral(ctx context.Context, owner string, createdAt time.Time) (club.Referral, error) {
	key, err := walletKey("owner", owner)
	if err != nil {
		return club.Referral{}, fmt.Errorf("store: sqlite: put referral: %w", err)
	}
	if createdAt.IsZero() {
		return club.Referral{}, fmt.Errorf("store: sqlite: put referral: %w", invalid("createdAt", "is required"))
	}
	code, _ := club.ReferralCode(key)
	var got club.Referral
	err = s.writeTx(ctx, "put referral", func(ctx context.Context, tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `INSERT INTO referrals (code, owner, created_at) VALUES (?, ?, ?)
			ON CONFLICT DO NOTHING`, code, key, toNanos(createdAt)); err != nil {
			return err
		}
		var storedOwner string
		var created int64
		if err := tx.QueryRowContext(ctx, `SELECT owner, created_at FROM referrals WHERE code = ?`, code).Scan(&storedOwner, &created); err != nil {
			return fmt.Errorf("read back %s: %w", code, err)
		}
		if storedOwner != key {
			return fmt.Errorf("code %s: %w", code, club.ErrReferralCollision)
		}
		got = club.Referral{Code: code, Owner: displayAddress(key), CreatedAt: fromNanos(created)}
		return nil
	})
	return got, err
}

// Referral implements ReferralStore.
func (s *sqliteStore) Referral(ctx context.Context, code string) (club.Referral, bool, error) {
	norm, ok := club.NormalizeReferralCode(code)
	if !ok {
		return club.Referral{}, false, nil
	}
	return s.referral(ctx, "referral", `SELECT code, owner, created_at FROM referrals WHERE code = ?`, norm)
}

// ReferralByOwner implements ReferralStore.
func (s *sqliteStore) ReferralByOwner(ctx context.Context, wallet string) (club.Referral, bool, error) {
	key, err := walletKey("wallet", wallet)
	if err != nil {
		return club.Referral{}, false, fmt.Errorf("store: sqlite: referral by owner: %w", err)
	}
	return s.referral(ctx, "referral by owner", `SELECT code, owner, created_at FROM referrals WHERE owner = ?`, key)
}

// referral runs a single-row referral lookup.
func (s *sqliteStore) referral(ctx context.Context, op, query string, arg string) (club.Referral, bool, error) {
	ctx, cancel := s.cfg.withTimeout(ctx)
	defer cancel()
	var r club.Referral
	var owner string
	var created int64
	err := s.r.QueryRowContext(ctx, query, arg).Scan(&r.Code, &owner, &created)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return club.Referral{}, false, nil
	case err != nil:
		return club.Referral{}, false, fmt.Errorf("store: sqlite: %s: %w", op, err)
	}
	r.Owner, r.CreatedAt = displayAddress(owner), fromNanos(created)
	return r, true, nil
}

// CheckIn implements LoungeStore.
func (s *sqliteStore) CheckIn(ctx context.Context, e club.LoungeEntry) error {
	r, err := normalizeLounge(e)
	if err != nil {
		return fmt.Errorf("store: sqlite: check in: %w", err)
	}
	return s.writeTx(ctx, "check in", func(ctx context.Context, tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `INSERT INTO lounge (wallet, agent_name, role, interests, checked_in_at)
			VALUES (?, ?, ?, ?, ?)
			ON CONFLICT (wallet) DO UPDATE SET agent_name = excluded.agent_name, role = excluded.role,
				interests = excluded.interests, checked_in_at = excluded.checked_in_at
			WHERE excluded.checked_in_at >= lounge.checked_in_at`,
			r.wallet, r.agentName, r.role, r.interests, r.checkedInAt); err != nil {
			return fmt.Errorf("upsert: %w", err)
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM lounge WHERE wallet NOT IN
			(SELECT wallet FROM lounge ORDER BY checked_in_at DESC, wallet LIMIT ?)`, club.LoungeCap); err != nil {
			return fmt.Errorf("cap: %w", err)
		}
		return nil
	})
}

// Lounge implements LoungeStore. It runs on the writer because it prunes.
func (s *sqliteStore) Lounge(ctx context.Context, now time.Time, limit int) ([]club.LoungeEntry, error) {
	cutoff := toNanos(now.Add(-club.LoungeTTL))
	out := []club.LoungeEntry{}
	err := s.writeTx(ctx, "lounge", func(ctx context.Context, tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `DELETE FROM lounge WHERE checked_in_at <= ?`, cutoff); err != nil {
			return fmt.Errorf("prune: %w", err)
		}
		rows, err := tx.QueryContext(ctx, `SELECT wallet, agent_name, role, interests, checked_in_at FROM lounge
			ORDER BY checked_in_at DESC, wallet LIMIT ?`, loungeLimit(limit))
		if err != nil {
			return fmt.Errorf("list: %w", err)
		}
		defer rows.Close()
		out, err = scanLounge(rows, out)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// PruneAll implements Store: the journal's Prune in batches
// (engine.DefaultPruneBatch), then the lounge in one transaction.
func (s *sqliteStore) PruneAll(ctx context.Context, now time.Time) (Pruned, error) {
	t, err := s.Prune(ctx, now, engine.PruneOptions{})
	p := Pruned{Payments: t.Deleted, Answers: t.Forgotten}
	if err != nil {
		return p, err
	}
	err = s.writeTx(ctx, "prune all", func(ctx context.Context, tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM lounge WHERE checked_in_at <= ?`, toNanos(now.Add(-club.LoungeTTL)))
		if err != nil {
			return fmt.Errorf("lounge: %w", err)
		}
		if p.LoungeEntries, err = res.RowsAffected(); err != nil {
			return fmt.Errorf("lounge: %w", err)
		}
		return nil
	})
	return p, err
}

// CheckSchema implements Store.
func (s *sqliteStore) CheckSchema(ctx context.Context) error {
	ctx, cancel := s.cfg.withTimeout(ctx)
	defer cancel()
	err := checkSchema(ctx, "sqlite", func(ctx context.Context, q string) error {
		_, err := s.r.ExecContext(ctx, q)
		return err
	}, func(ctx context.Context) (int, error) {
		var v int
		err := s.r.QueryRowContext(ctx, `SELECT COALESCE(max(version), 0) FROM schema_migrations`).Scan(&v)
		return v, err
	})
	if err != nil {
		return fmt.Errorf("store: sqlite: check schema: %w", err)
	}
	return nil
}

// EachSettlement implements Store.
func (s *sqliteStore) EachSettlement(ctx context.Context, from, to time.Time, yield func(ledger.Settlement) error) error {
	return eachSettlement(ctx, s.cfg, "store: sqlite: settlements", from, to, s.settlementPage, yield)
}

// settlementPage implements settlementPage on the read pool.
func (s *sqliteStore) settlementPage(ctx context.Context, to, afterAt, afterID int64, limit int) ([]ledger.Settlement, []int64, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT id, network, asset, payer, nonce, tool_key, amount, tx, COALESCE(ref_code, ''),
		route, transport, settled_at FROM settlements
		WHERE settled_at >= ? AND settled_at < ? AND (settled_at > ? OR id > ?) ORDER BY settled_at, id LIMIT ?`,
		afterAt, to, afterAt, afterID, limit)
	if err != nil {
		return nil, nil, err
	}
	defer rows.Close()
	return scanSettlements(rows, limit)
}

package store

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/seed1284c1d2/svc/club"
	"github.com/seed1284c1d2/svc/ledger"
	"github.com/seed1284c1d2/svc/x402/engine"
)

// pgDefaultMaxConns is the default PostgreSQL pool size.
const pgDefaultMaxConns = 10

// pgReserveAttempts bounds the upsert-then-read loop of Reserve (a row can
// be pruned between the two statements).
const pgReserveAttempts = 5

// postgresStore is the PostgreSQL Store. Every read-modify-write is a single
// statement (INSERT ... ON CONFLICT, conditional UPDATE or DELETE) or a
// transaction, so several instances may share one database. Its journal
// writes are plain statements and transactions: PostgreSQL's own commit
// handling (one WAL flush serves the commits that wait on it) groups the
// commits of concurrent callers.
type postgresStore struct {
	cfg  config
	pool *pgxpool.Pool
}

// OpenPostgres connects to the PostgreSQL database at dsn (a URL or
// keyword/value string as pgx parses it) and applies pending migrations.
// Query parameters pgx does not know become session settings, so
// search_path=myschema places the store in that schema. pool_max_conns=N in
// a URL sets the pool size (as with pgxpool); WithMaxConns overrides it.
func OpenPostgres(ctx context.Context, dsn string, opts ...Option) (Store, error) {
	cfg := newConfig(opts)
	// pgx only knows the lower-case schemes; Open accepts any case.
	if scheme, rest, ok := strings.Cut(dsn, "://"); ok && (strings.EqualFold(scheme, "postgres") || strings.EqualFold(scheme, "postgresql")) {
		dsn = strings.ToLower(scheme) + "://" + rest
	}
	pcfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		// The parse error may echo the DSN, password included: do not wrap it.
		return nil, invalid("postgres dsn", "cannot be parsed")
	}
	if cfg.maxConns > 0 {
		pcfg.MaxConns = int32(min(cfg.maxConns, math.MaxInt32))
	} else if !strings.Contains(dsn, "pool_max_conns") {
		pcfg.MaxConns = pgDefaultMaxConns
	}
	if cfg.readOnly {
		pcfg.ConnConfig.RuntimeParams["default_transaction_read_only"] = "on"
	}
	pool, err := pgxpool.NewWithConfig(ctx, pcfg)
	if err != nil {
		return nil, fmt.Errorf("store: postgres: pool: %w", err)
	}
	s := &postgresStore{cfg: cfg, pool: pool}
	if cfg.readOnly {
		if err := s.CheckSchema(ctx); err != nil {
			s.pool.Close()
			return nil, err
		}
		return s, nil
	}
	if err := s.migrate(ctx); err != nil {
		s.pool.Close()
		return nil, err
	}
	return s, nil
}

// withConn runs f on a pooled connection under the operation timeout,
// prefixing errors with "store: postgres: op".
func (s *postgresStore) withConn(ctx context.Context, op string, f func(ctx context.Context, c *pgx.Conn) error) error {
	ctx, cancel := s.cfg.withTimeout(ctx)
	defer cancel()
	err := s.pool.AcquireFunc(ctx, func(c *pgxpool.Conn) error { return f(ctx, c.Conn()) })
	if err != nil {
		return fmt.Errorf("store: postgres: %s: %w", op, err)
	}
	return nil
}

// withTx runs f in a transaction on a pooled connection.
func (s *postgresStore) withTx(ctx context.Context, op string, f func(ctx context.Context, tx pgx.Tx) error) error {
	return s.withConn(ctx, op, func(ctx context.Context, c *pgx.Conn) error {
		return pgx.BeginFunc(ctx, c, func(tx pgx.Tx) error { return f(ctx, tx) })
	})
}

// migrate applies the pending PostgreSQL migrations in one transaction that
// first takes a transaction-scoped advisory lock keyed by the current
// schema: instances starting together apply them once, one after the other.
func (s *postgresStore) migrate(ctx context.Context) error {
	ms, err := migrations("postgres")
	if err != nil {
		return err
	}
	err = s.pool.AcquireFunc(ctx, func(c *pgxpool.Conn) error {
		return pgx.BeginFunc(ctx, c, func(tx pgx.Tx) error { return s.applyMigrations(ctx, tx, ms) })
	})
	if err != nil {
		return fmt.Errorf("store: postgres: migrate: %w", err)
	}
	return nil
}

// applyMigrations applies, within tx, the migrations of ms not yet recorded.
func (s *postgresStore) applyMigrations(ctx context.Context, tx pgx.Tx, ms []migration) error {
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtextextended('svc/store migrations:' || coalesce(current_schema(), ''), 0))`); err != nil {
		return fmt.Errorf("advisory lock: %w", err)
	}
	if _, err := tx.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at BIGINT NOT NULL)`); err != nil {
		return fmt.Errorf("create schema_migrations: %w", err)
	}
	rows, err := tx.Query(ctx, `SELECT version FROM schema_migrations`)
	if err != nil {
		return fmt.Errorf("read schema_migrations: %w", err)
	}
	versions, err := pgx.CollectRows(rows, pgx.RowTo[int32])
	if err != nil {
		return fmt.Errorf("read schema_migrations: %w", err)
	}
	applied := map[int]bool{}
	for _, v := range versions {
		applied[int(v)] = true
	}
	for _, m := range ms {
		if applied[m.version] {
			continue
		}
		if _, err := tx.Exec(ctx, m.sql); err != nil {
			return fmt.Errorf("apply migration %d_%s: %w", m.version, m.name, err)
		}
		if _, err := tx.Exec(ctx, `INSERT INTO schema_migrations (version, name, applied_at) VALUES ($1, $2, $3)`,
			m.version, m.name, toNanos(s.cfg.now())); err != nil {
			return fmt.Errorf("record migration %d_%s: %w", m.version, m.name, err)
		}
	}
	return nil
}

// Dialect implements Store.
func (s *postgresStore) Dialect() string { return "postgres" }

// Ping implements Store.
func (s *postgresStore) Ping(ctx context.Context) error {
	return s.withConn(ctx, "ping", func(ctx context.Context, c *pgx.Conn) error { return c.Ping(ctx) })
}

// Close implements Store. It is idempotent. Connections in use when it is
// called are closed as they are returned.
func (s *postgresStore) Close() error {
	s.pool.Close()
	return nil
}

// Append implements Ledger.
func (s *postgresStore) Append(ctx context.Context, st Settlement) (bool, error) {
	r, err := normalizeSettlement(st)
	if err != nil {
		return false, fmt.Errorf("store: postgres: append: %w", err)
	}
	var inserted bool
	err = s.withConn(ctx, "append", func(ctx context.Context, c *pgx.Conn) error {
		tag, err := c.Exec(ctx, pgAppendSQL, r.args()...)
		inserted = tag.RowsAffected() == 1
		return err
	})
	return inserted, err
}

// PayerStats implements Ledger.
func (s *postgresStore) PayerStats(ctx context.Context, wallet string) (club.PayerStats, error) {
	key, err := walletKey("wallet", wallet)
	if err != nil {
		return club.PayerStats{}, fmt.Errorf("store: postgres: payer stats: %w", err)
	}
	ps := club.PayerStats{Wallet: displayAddress(key)}
	var first, last *int64
	err = s.withConn(ctx, "payer stats", func(ctx context.Context, c *pgx.Conn) error {
		return c.QueryRow(ctx, `SELECT count(*), count(DISTINCT tool_key), min(settled_at), max(settled_at)
			FROM settlements WHERE payer = $1`, key).Scan(&ps.PaidCalls, &ps.Tools, &first, &last)
	})
	if err != nil {
		return club.PayerStats{}, err
	}
	if first != nil && last != nil {
		ps.FirstPaid, ps.LastPaid = fromNanos(*first), fromNanos(*last)
	}
	return ps, nil
}

// ReferralStats implements Ledger.
func (s *postgresStore) ReferralStats(ctx context.Context, code string) (club.ReferralStats, error) {
	norm, ok := club.NormalizeReferralCode(code)
	if !ok {
		return club.ReferralStats{Code: code}, nil
	}
	rs := club.ReferralStats{Code: norm}
	var owner string
	var created int64
	err := s.withConn(ctx, "referral stats", func(ctx context.Context, c *pgx.Conn) error {
		err := c.QueryRow(ctx, `SELECT r.owner, r.created_at, count(DISTINCT s.payer), count(s.payer)
			FROM referrals r LEFT JOIN settlements s ON s.ref_code = r.code AND s.payer <> r.owner
			WHERE r.code = $1 GROUP BY r.owner, r.created_at`, norm).Scan(&owner, &created, &rs.ReferredPayers, &rs.PaidCalls)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		rs.Registered = err == nil
		return err
	})
	if err != nil {
		return club.ReferralStats{}, err
	}
	if rs.Registered {
		rs.Owner, rs.CreatedAt = displayAddress(owner), fromNanos(created)
	}
	return rs, nil
}

// Totals implements Ledger.
func (s *postgresStore) Totals(ctx context.Context) (Totals, error) {
	var t Totals
	err := s.withConn(ctx, "totals", func(ctx context.Context, c *pgx.Conn) error {
		if err := c.QueryRow(ctx, `SELECT count(*), count(DISTINCT payer) FROM settlements`).Scan(&t.SettledCalls, &t.Payers); err != nil {
			return err
		}
		if err := c.QueryRow(ctx, `SELECT count(*) FROM referrals`).Scan(&t.ReferralCodes); err != nil {
			return fmt.Errorf("referrals: %w", err)
		}
		rows, err := c.Query(ctx, `SELECT network, asset, count(*), sum(amount)::text
			FROM settlements GROUP BY network, asset ORDER BY network, asset`)
		if err != nil {
			return fmt.Errorf("revenue: %w", err)
		}
		t.Revenue, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (Revenue, error) {
			var rv Revenue
			err := row.Scan(&rv.Network, &rv.Asset, &rv.Calls, &rv.Amount)
			return rv, err
		})
		if err != nil {
			return fmt.Errorf("revenue: %w", err)
		}
		return nil
	})
	if err != nil {
		return Totals{}, err
	}
	if len(t.Revenue) == 0 {
		t.Revenue = nil
	}
	return t, nil
}

// PutReferral implements ReferralStore.
func (s *postgresStore) PutReferral(ctx context.Context, owner string, createdAt time.Time) (club.Referral, error) {
	key, err := walletKey("owner", owner)
	if err != nil {
		return club.Referral{}, fmt.Errorf("store: postgres: put referral: %w", err)
	}
	if createdAt.IsZero() {
		return club.Referral{}, fmt.Errorf("store: postgres: put referral: %w", invalid("createdAt", "is required"))
	}
	code, _ := club.ReferralCode(key)
	var got club.Referral
	err = s.withConn(ctx, "put referral", func(ctx context.Context, c *pgx.Conn) error {
		if _, err := c.Exec(ctx, `INSERT INTO referrals (code, owner, created_at) VALUES ($1, $2, $3)
			ON CONFLICT DO NOTHING`, code, key, toNanos(createdAt)); err != nil {
			return err
		}
		var storedOwner string
		var created int64
		if err := c.QueryRow(ctx, `SELECT owner, created_at FROM referrals WHERE code = $1`, code).Scan(&storedOwner, &created); err != nil {
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
func (s *postgresStore) Referral(ctx context.Context, code string) (club.Referral, bool, error) {
	norm, ok := club.NormalizeReferralCode(code)
	if !ok {
		return club.Referral{}, false, nil
	}
	return s.referral(ctx, "referral", `SELECT code, owner, created_at FROM referrals WHERE code = $1`, norm)
}

// ReferralByOwner implements ReferralStore.
func (s *postgresStore) ReferralByOwner(ctx context.Context, wallet string) (club.Referral, bool, error) {
	key, err := walletKey("wallet", wallet)
	if err != nil {
		return club.Referral{}, false, fmt.Errorf("store: postgres: referral by owner: %w", err)
	}
	return s.referral(ctx, "referral by owner", `SELECT code, owner, created_at FROM referrals WHERE owner = $1`, key)
}

// referral runs a single-row referral lookup.
func (s *postgresStore) referral(ctx context.Context, op, query, arg string) (club.Referral, bool, error) {
	var r club.Referral
	var owner string
	var created int64
	found := false
	err := s.withConn(ctx, op, func(ctx context.Context, c *pgx.Conn) error {
		err := c.QueryRow(ctx, query, arg).Scan(&r.Code, &owner, &created)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		found = err == nil
		return err
	})
	if err != nil || !found {
		return club.Referral{}, false, err
	}
	r.Owner, r.CreatedAt = displayAddress(owner), fromNanos(created)
	return r, true, nil
}

// CheckIn implements LoungeStore.
func (s *postgresStore) CheckIn(ctx context.Context, e club.LoungeEntry) error {
	r, err := normalizeLounge(e)
	if err != nil {
		return fmt.Errorf("store: postgres: check in: %w", err)
	}
	return s.withTx(ctx, "check in", func(ctx context.Context, tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `INSERT INTO lounge (wallet, agent_name, role, interests, checked_in_at)
			VALUES ($1, $2, $3, $4, $5)
			ON CONFLICT (wallet) DO UPDATE SET agent_name = EXCLUDED.agent_name, role = EXCLUDED.role,
				interests = EXCLUDED.interests, checked_in_at = EXCLUDED.checked_in_at
			WHERE EXCLUDED.checked_in_at >= lounge.checked_in_at`,
			r.wallet, r.agentName, r.role, r.interests, r.checkedInAt); err != nil {
			return fmt.Errorf("upsert: %w", err)
		}
		if _, err := tx.Exec(ctx, `DELETE FROM lounge WHERE wallet NOT IN
			(SELECT wallet FROM lounge ORDER BY checked_in_at DESC, wallet LIMIT $1)`, club.LoungeCap); err != nil {
			return fmt.Errorf("cap: %w", err)
		}
		return nil
	})
}

// Lounge implements LoungeStore.
func (s *postgresStore) Lounge(ctx context.Context, now time.Time, limit int) ([]club.LoungeEntry, error) {
	cutoff := toNanos(now.Add(-club.LoungeTTL))
	out := []club.LoungeEntry{}
	err := s.withConn(ctx, "lounge", func(ctx context.Context, c *pgx.Conn) error {
		if _, err := c.Exec(ctx, `DELETE FROM lounge WHERE checked_in_at <= $1`, cutoff); err != nil {
			return fmt.Errorf("prune: %w", err)
		}
		rows, err := c.Query(ctx, `SELECT wallet, agent_name, role, interests, checked_in_at FROM lounge
			WHERE checked_in_at > $1 ORDER BY checked_in_at DESC, wallet LIMIT $2`, cutoff, loungeLimit(limit))
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
// (engine.DefaultPruneBatch), then the lounge in one statement.
func (s *postgresStore) PruneAll(ctx context.Context, now time.Time) (Pruned, error) {
	t, err := s.Prune(ctx, now, engine.PruneOptions{})
	p := Pruned{Payments: t.Deleted, Answers: t.Forgotten}
	if err != nil {
		return p, err
	}
	err = s.withConn(ctx, "prune all", func(ctx context.Context, c *pgx.Conn) error {
		tag, err := c.Exec(ctx, `DELETE FROM lounge WHERE checked_in_at <= $1`, toNanos(now.Add(-club.LoungeTTL)))
		if err != nil {
			return fmt.Errorf("lounge: %w", err)
		}
		p.LoungeEntries = tag.RowsAffected()
		return nil
	})
	return p, err
}

// CheckSchema implements Store.
func (s *postgresStore) CheckSchema(ctx context.Context) error {
	return s.withConn(ctx, "check schema", func(ctx context.Context, c *pgx.Conn) error {
		return checkSchema(ctx, "postgres", func(ctx context.Context, q string) error {
			_, err := c.Exec(ctx, q)
			return err
		}, func(ctx context.Context) (int, error) {
			var v int
			err := c.QueryRow(ctx, `SELECT COALESCE(max(version), 0) FROM schema_migrations`).Scan(&v)
			return v, err
		})
	})
}

// EachSettlement implements Store.
func (s *postgresStore) EachSettlement(ctx context.Context, from, to time.Time, yield func(ledger.Settlement) error) error {
	return eachSettlement(ctx, s.cfg, "store: postgres: settlements", from, to, s.settlementPage, yield)
}

// settlementPage implements settlementPage on a pooled connection.
func (s *postgresStore) settlementPage(ctx context.Context, to, afterAt, afterID int64, limit int) ([]ledger.Settlement, []int64, error) {
	rows, err := s.pool.Query(ctx, `SELECT id, network, asset, payer, nonce, tool_key, amount::text, tx, COALESCE(ref_code, ''),
		route, transport, settled_at FROM settlements
		WHERE settled_at >= $1 AND settled_at < $2 AND (settled_at > $1 OR id > $3) ORDER BY settled_at, id LIMIT $4`,
		afterAt, to, afterID, limit)
	if err != nil {
		return nil, nil, err
	}
	defer rows.Close()
	return scanSettlements(rows, limit)
}

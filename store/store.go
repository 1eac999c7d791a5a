// Package store is svc's durable state: the x402 payment journal
// (engine.Journal: one row per payment authorization, every transition
// committed before the engine acts on it), the settlement ledger the club's
// tiers are computed from, referral codes and the lounge, and the
// batch-settlement scheme's channel records (Store.Channels: the batch
// server's store, and what a claimer lists and mirrors).
//
// Two implementations share one behaviour, pinned by the conformance suite in
// package store/storetest:
//
//   - SQLite (modernc.org/sqlite, pure Go): the embedded default for a single
//     instance. One file in WAL mode; a single writer connection whose
//     transactions begin IMMEDIATE, so that every read-modify-write is atomic
//     even when another process opens the same file; a small pool of
//     read-only connections for queries; busy_timeout and foreign keys on
//     every connection. The journal's writes are group committed: one writer
//     goroutine runs the writes of concurrent callers in one transaction,
//     each in a savepoint of its own, and answers each caller once the
//     transaction is committed (see OpenSQLite).
//   - PostgreSQL (github.com/jackc/pgx/v5, through a small bounded pool of
//     connections): for several instances sharing one database. Atomicity
//     comes from single statements (INSERT ... ON CONFLICT, conditional
//     UPDATE and DELETE), transactions and row locks (recovery claims rows
//     with SELECT ... FOR UPDATE SKIP LOCKED), never from process-local
//     locks.
//
// Durability: every write returns once committed. SQLite runs in WAL mode
// with synchronous=NORMAL: a commit hands its WAL frames to the operating
// system before returning, so committed transactions survive the crash or
// kill -9 of the process; an operating-system crash or power loss may lose
// the transactions committed since the last WAL sync (at checkpoints).
// PostgreSQL's durability is the server's (synchronous_commit).
//
// Open picks one from the DSN: a URL whose scheme is postgres or postgresql
// selects PostgreSQL; anything else is a SQLite file path (an optional
// "sqlite:" prefix is stripped). Both apply the embedded, versioned
// migrations for their dialect at Open (see migrate.go), idempotently and,
// on PostgreSQL, under an advisory lock so that instances starting together
// do not race.
//
// Conventions shared by both implementations:
//
//   - Every instant is stored as Unix nanoseconds (a 64-bit integer), so a
//     time.Time survives the round trip exactly (as an instant: values come
//     back in UTC). Instants outside the years 1678–2262 are clamped.
//   - EVM addresses are keys in lower case; values returned to callers carry
//     the EIP-55 checksummed form where the field is a wallet (an address
//     is accepted in any case, with "0x" or "0X", surrounding space
//     ignored).
//   - Every operation runs under a timeout (Options: [WithOpTimeout]), on top
//     of the caller's context.
//   - Errors are wrapped with the operation's name; invalid arguments wrap
//     [ErrInvalid].
//
// The consumers own the contracts, as they own the rules: the payment
// engine defines engine.Journal (and its records), the club defines
// club.Store with its types (club.LoungeEntry, club.Referral, ...) and its
// rules (club.ReferralCode, club.LoungeCap, club.LoungeTTL,
// club.MaxInterests), and this package implements both, importing them;
// neither imports store. [Ledger] (imports append, the club reads),
// [ReferralStore] and [LoungeStore] are the store's own groupings; [Store]
// is all of them plus housekeeping. Both implementations pass the
// journal's conformance suite, engine/journaltest, and the club store's,
// through storetest.
package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/seed1284c1d2/svc/club"
	"github.com/seed1284c1d2/svc/ledger"
	"github.com/seed1284c1d2/svc/x402/engine"
)

// Sentinel errors. Every error the store returns for a bad argument wraps
// ErrInvalid. The journal's life-cycle errors are engine's own
// (engine.ErrTaken, engine.ErrState, engine.ErrNotFound).
var (
	// ErrInvalid marks an argument the store refuses (missing key, malformed
	// address, oversized field, payload that is not JSON). The message names
	// the field.
	ErrInvalid = errors.New("store: invalid argument")
	// ErrClosed is returned by the journal's writes once the store is
	// closed.
	ErrClosed = errors.New("store: closed")
	// ErrNoDatabase is returned by a read-only open (ReadOnly) of a SQLite
	// database file that does not exist.
	ErrNoDatabase = errors.New("store: no such database")
)

// Limits applied by the store itself. They bound what a row may hold; the
// club's rules (club.LoungeCap, club.LoungeTTL, club.MaxInterests) apply on
// top, and the club checks its stricter character and length rules before
// calling.
const (
	// MaxFieldBytes bounds every free-text field the store keeps (tool key,
	// agent name, role, each interest, network, transaction, and every text
	// field of a journal record but its JSON ones; a longer reason is cut).
	MaxFieldBytes = 1024
	// DefaultOpTimeout bounds each store operation unless WithOpTimeout says
	// otherwise.
	DefaultOpTimeout = 5 * time.Second
)

// Settlement is one settled payment as recorded in the ledger. Payer, Asset
// and Nonce are kept in lower case; (Network, Asset, Payer, Nonce) identifies
// the payment, so recording it twice is harmless.
type Settlement struct {
	Payer       string    // the wallet that paid (EVM address)
	ToolKey     string    // the catalog key of the tool bought
	Amount      string    // atomic units of Asset, a decimal integer ("3400")
	Asset       string    // token contract address
	Network     string    // CAIP-2 network, e.g. "eip155:8453"
	Transaction string    // settlement transaction hash; empty if none (dev facilitator)
	Nonce       string    // the EIP-3009 authorization nonce (0x + 64 hex digits)
	RefCode     string    // referral code carried by the call; empty if none
	Route       string    // what was sold ("POST /api/risk-levels"); may be empty
	Transport   string    // how the call arrived ("http", "mcp", "a2a"); may be empty
	SettledAt   time.Time // when settlement succeeded
}

// Revenue is the settled volume of one (network, asset) pair.
type Revenue struct {
	Network string
	Asset   string // lower case
	Calls   int64
	Amount  string // exact sum of atomic amounts, a decimal integer
}

// Totals are ledger-wide aggregates for /health and statistics: counts only,
// no wallet.
type Totals struct {
	SettledCalls  int64
	Payers        int64 // distinct payers
	ReferralCodes int64 // registered codes
	Revenue       []Revenue
}

// Pruned reports what PruneAll deleted.
type Pruned struct {
	Payments      int64 // journal rows deleted (engine.Journal.Prune)
	Answers       int64 // recorded answers forgotten (engine.Journal.Prune)
	LoungeEntries int64 // lounge entries older than club.LoungeTTL
}

// Ledger is the settlement ledger: the payment journal writes it with each
// settlement (engine.Journal.Settle), imports append, the club and
// statistics read.
type Ledger interface {
	// Append records a settled payment. It is idempotent on (Network, Asset,
	// Payer, Nonce), compared in lower case: inserted is false when the
	// payment was already recorded (the first record is kept). A malformed
	// RefCode is recorded as none: a settled payment is recorded whatever
	// the code it carried.
	Append(ctx context.Context, s Settlement) (inserted bool, err error)
	// PayerStats summarizes the settled payments of wallet.
	PayerStats(ctx context.Context, wallet string) (club.PayerStats, error)
	// ReferralStats reports what code converted (see club.ReferralStats).
	ReferralStats(ctx context.Context, code string) (club.ReferralStats, error)
	// Totals returns ledger-wide aggregates.
	Totals(ctx context.Context) (Totals, error)
}

// ReferralStore keeps the referral codes wallets registered.
type ReferralStore interface {
	// PutReferral registers the code of owner (derived with club.ReferralCode) at
	// createdAt. It is idempotent: registering again returns the first
	// registration unchanged.
	PutReferral(ctx context.Context, owner string, createdAt time.Time) (club.Referral, error)
	// Referral looks a code up (case-insensitively); found is false for an
	// unknown code.
	Referral(ctx context.Context, code string) (r club.Referral, found bool, err error)
	// ReferralByOwner looks up the code registered by wallet.
	ReferralByOwner(ctx context.Context, wallet string) (r club.Referral, found bool, err error)
}

// LoungeStore keeps the lounge: one entry per wallet, the newest
// club.LoungeCap, each for club.LoungeTTL.
type LoungeStore interface {
	// CheckIn records e, replacing the wallet's previous entry unless that
	// one has a later CheckedInAt (latest wins, whatever the arrival order).
	// Entries beyond the newest club.LoungeCap are dropped.
	CheckIn(ctx context.Context, e club.LoungeEntry) error
	// Lounge lists up to limit entries (limit outside 1..club.LoungeCap
	// means club.LoungeCap), newest first (ties by wallet), excluding and
	// deleting those checked in club.LoungeTTL or more before now.
	Lounge(ctx context.Context, now time.Time, limit int) ([]club.LoungeEntry, error)
}

// Store is every store the server needs plus housekeeping. It is safe for
// concurrent use; the PostgreSQL implementation is also safe for several
// processes sharing one database.
//
// As an engine.Journal it follows that interface's contract, checked by
// engine/journaltest. Besides:
//
//   - UpdatedAt is the caller's (the reservation's Now), at (Settle), now
//     (Recover) or the store's clock (the other transitions).
//   - Text fields of a reservation or a record are at most MaxFieldBytes
//     of UTF-8 without NUL, Payload and Requirements must be JSON
//     (ErrInvalid otherwise); a longer Reason is cut.
//   - Settle validates the ledger entry as Append does (the payer an EVM
//     address, the amount a decimal integer): a record that cannot be
//     entered in the ledger stays settling, with an ErrInvalid error.
//   - The ledger entry of a SQLite or PostgreSQL journal is readable with a
//     LedgerEntry(ctx, network, asset, payer, nonce) (engine.LedgerEntry,
//     bool, error) method (journaltest.LedgerReader).
type Store interface {
	Ledger
	ReferralStore
	LoungeStore
	engine.Journal
	BatchClaimsStore

	// PruneAll is the periodic housekeeping: the journal's Prune (rows past
	// KeepUntil, answers past AnswerUntil) with the default
	// engine.PruneOptions, in batches, then the lounge entries older than
	// club.LoungeTTL. When ctx ends first it returns what the committed
	// batches did with ctx's error; the next call takes up the rest.
	// Correctness never depends on it.
	PruneAll(ctx context.Context, now time.Time) (Pruned, error)
	// Ping checks that the database answers (for /health).
	Ping(ctx context.Context) error
	// CheckSchema checks that the database holds svc's schema: every
	// table and column the code uses, and the build's migrations applied
	// (an error wrapping ErrSchema otherwise). For readiness probes.
	CheckSchema(ctx context.Context) error
	// EachSettlement calls yield with every settled payment of the ledger
	// in the period [from, to), oldest first (ties in recording order):
	// payers EIP-55 checksummed, instants in UTC. It reads a page of rows
	// at a time (WithReadPage), each page one short query under the
	// operation timeout, and calls yield outside any query: a period of any
	// size streams in bounded memory, and yield may take its time. It stops
	// at yield's first error and returns it unwrapped.
	EachSettlement(ctx context.Context, from, to time.Time, yield func(ledger.Settlement) error) error
	// Channels is the batch-settlement scheme's channel store (the batch
	// server's Store, and the claimer's Claimable and Mirror), in the
	// same database.
	Channels() Channels
	// Dialect names the implementation: "sqlite" or "postgres".
	Dialect() string
	// Close releases the database handles (and stops the SQLite writer
	// goroutine); it is idempotent. Every other method fails once the store
	// is closed.
	Close() error
}

// Every Store is the club's store.
var _ club.Store = Store(nil)

// Option adjusts how a store is opened.
type Option func(*config)

// config holds the options of a store; immutable once opened.
type config struct {
	opTimeout time.Duration
	now       func() time.Time
	maxConns  int

	// SQLite group commit of the journal's writes: on unless a benchmark
	// turns it off (withoutGroupCommit); at most groupMax writes a
	// transaction; groupLinger is how long the writer waits for more writes
	// after taking what is queued (0: it does not wait).
	noGroupCommit bool
	groupMax      int
	groupLinger   time.Duration

	readOnly bool // ReadOnly
	readPage int  // WithReadPage
}

// sqliteGroupMax is the default bound of a group-committed batch.
const sqliteGroupMax = 128

func newConfig(opts []Option) config {
	c := config{
		opTimeout: DefaultOpTimeout,
		now:       time.Now,
		groupMax:  sqliteGroupMax,
		readPage:  DefaultReadPage,
	}
	for _, o := range opts {
		if o != nil {
			o(&c)
		}
	}
	return c
}

// WithOpTimeout bounds each store operation (default DefaultOpTimeout). A
// non-positive d keeps the default.
func WithOpTimeout(d time.Duration) Option {
	return func(c *config) {
		if d > 0 {
			c.opTimeout = d
		}
	}
}

// WithClock replaces time.Now as the store's clock: the UpdatedAt of the
// journal's transitions that carry no instant of their own, and migration
// times (tests use a fake clock). A nil now keeps time.Now.
func WithClock(now func() time.Time) Option {
	return func(c *config) {
		if now != nil {
			c.now = now
		}
	}
}

// WithMaxConns bounds the connections a store opens: the PostgreSQL pool
// size (default 10, or pool_max_conns in the URL) and the SQLite read pool
// (default 4; SQLite always has exactly one writer connection). A
// non-positive n keeps the default.
func WithMaxConns(n int) Option {
	return func(c *config) {
		if n > 0 {
			c.maxConns = n
		}
	}
}

// DefaultReadPage is the number of rows a streamed read
// (Store.EachSettlement) takes in one query unless WithReadPage says
// otherwise.
const DefaultReadPage = 1000

// WithReadPage sets the rows a streamed read takes in one query (default
// DefaultReadPage). A non-positive n keeps the default.
func WithReadPage(n int) Option {
	return func(c *config) {
		if n > 0 {
			c.readPage = n
		}
	}
}

// settlementPage reads, before to, at most limit settlements recorded
// after the one at (afterAt, afterID) in (settled_at, id) order, and
// returns them with their ids. The index on settled_at is entered at
// afterAt: a page costs its own rows, not the period's rows before it.
type settlementPage func(ctx context.Context, to, afterAt, afterID int64, limit int) ([]ledger.Settlement, []int64, error)

// settlementRows is what scanSettlements reads: *sql.Rows and pgx.Rows.
type settlementRows interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
}

// scanSettlements reads the rows of a settlementPage query (id, network,
// asset, payer, nonce, tool_key, amount, tx, ref_code, route, transport,
// settled_at).
func scanSettlements(rows settlementRows, limit int) ([]ledger.Settlement, []int64, error) {
	out, ids := make([]ledger.Settlement, 0, limit), make([]int64, 0, limit)
	for rows.Next() {
		var st ledger.Settlement
		var id, at int64
		if err := rows.Scan(&id, &st.Network, &st.Asset, &st.Payer, &st.Nonce, &st.ToolKey, &st.Amount, &st.Transaction,
			&st.RefCode, &st.Route, &st.Transport, &at); err != nil {
			return nil, nil, err
		}
		st.Payer, st.SettledAt = displayAddress(st.Payer), fromNanos(at)
		out, ids = append(out, st), append(ids, id)
	}
	return out, ids, rows.Err()
}

// eachSettlement streams the settlements of [from, to) to yield, one page
// of read at a time (keyset pagination on (settled_at, id)). Its own errors
// are prefixed with op; yield's are returned as they are.
func eachSettlement(ctx context.Context, cfg config, op string, from, to time.Time, read settlementPage, yield func(ledger.Settlement) error) error {
	if err := validPeriod(from, to); err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	f, t := toNanos(from), toNanos(to)
	afterAt, afterID := f, int64(-1) // ids are positive: the first page starts at from itself
	for {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("%s: %w", op, err)
		}
		pctx, cancel := cfg.withTimeout(ctx)
		rows, ids, err := read(pctx, t, afterAt, afterID, cfg.readPage)
		cancel()
		if err != nil {
			return fmt.Errorf("%s: %w", op, err)
		}
		for _, r := range rows {
			if err := yield(r); err != nil {
				return err
			}
		}
		if len(rows) < cfg.readPage {
			return nil
		}
		afterAt, afterID = toNanos(rows[len(rows)-1].SettledAt), ids[len(ids)-1]
	}
}

// ReadOnly opens an existing store for reading only, as the operator's
// reports do: a SQLite file that does not exist is refused (ErrNoDatabase)
// instead of created, no migration is applied (a database without this
// build's schema is refused with ErrSchema), and every connection refuses
// writes (SQLite's query_only, PostgreSQL's default_transaction_read_only).
func ReadOnly() Option {
	return func(c *config) { c.readOnly = true }
}

// Open opens the store named by dsn and applies pending migrations.
//
//   - "postgres://..." or "postgresql://..." (case-insensitive scheme): a
//     PostgreSQL connection URL as pgx parses it; extra query parameters
//     become session settings (for example search_path=myschema), and
//     pool_max_conns=N sets the pool size.
//   - anything else: a SQLite database file path, created if missing, with
//     an optional "sqlite:" prefix. In-memory databases are refused (each
//     connection would see its own empty database); use a temporary file.
func Open(ctx context.Context, dsn string, opts ...Option) (Store, error) {
	lower := strings.ToLower(dsn)
	switch {
	case strings.HasPrefix(lower, "postgres://"), strings.HasPrefix(lower, "postgresql://"):
		return OpenPostgres(ctx, dsn, opts...)
	case strings.HasPrefix(lower, "sqlite:"):
		return OpenSQLite(ctx, dsn[len("sqlite:"):], opts...)
	default:
		return OpenSQLite(ctx, dsn, opts...)
	}
}

// invalid builds an error wrapping ErrInvalid that names the field.
func invalid(field, format string, args ...any) error {
	return fmt.Errorf("%w: %s: %s", ErrInvalid, field, fmt.Sprintf(format, args...))
}

package store

import (
	"context"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"math/big"
	"strings"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/jackc/pgx/v5"

	"github.com/seed1284c1d2/svc/x402/batch"
	batchserver "github.com/seed1284c1d2/svc/x402/batch/server"
)

// Channels is the batch-settlement scheme's channel store (table
// batch_channels): the batch server's Store, and what a claimer reads
// (Claimable) and writes (Mirror). Every write is a read-modify-write in
// one transaction (SQLite: a write of the group committer, in a savepoint
// of the writer connection's IMMEDIATE transaction; PostgreSQL: the row
// locked FOR UPDATE), which keeps claim_pending (charged
// above the mirrored total claimed) right on every write.
type Channels interface {
	batchserver.Store
}

// channelColumns are batch_channels' columns in the order channelRow's
// values and scan use.
const channelColumns = `network, channel_id, payer, payer_authorizer, receiver, receiver_authorizer, token, withdraw_delay, salt,
	charged, signed_max, signature, balance, total_claimed, withdraw_amount, withdraw_requested_at, refund_nonce,
	synced_at, last_request_at, claim_pending, holder, held_until`

// channelTx is one transaction of a channel store's dialect.
type channelTx interface {
	// get reads (PostgreSQL: and locks) a row.
	get(ctx context.Context, network, id string) (batchserver.Held, bool, error)
	// put inserts (found false) or rewrites (found true) a row.
	put(ctx context.Context, h batchserver.Held, found bool) error
	// del deletes a row.
	del(ctx context.Context, network, id string) error
}

// channelStore implements Channels over a dialect's transactions.
type channelStore struct {
	dialect string
	// tx runs f in one write transaction; create, when set, is inserted
	// first unless the row exists (PostgreSQL: so that the row can be
	// locked).
	tx func(ctx context.Context, op string, create *batchserver.Held, f func(ctx context.Context, t channelTx) error) error
	// early runs a hold's write: as tx, or (SQLite) answered once it ran,
	// before its batch commits (see groupCommitter.doEarly): every later
	// write sees it at once, reads once it is committed, and a hold lost
	// with a failed commit is a hold whose lease ended.
	early func(ctx context.Context, op string, create *batchserver.Held, f func(ctx context.Context, t channelTx) error) error
	// fastHold and fastCommit are the common cases in one statement: a
	// hold of an existing record not held by another, and a charge of an
	// existing record with no newer mirror to apply; false sends the
	// caller to the general read-modify-write.
	fastHold   func(ctx context.Context, network, id, holder string, now, until time.Time) (batchserver.Held, bool, error)
	fastCommit func(ctx context.Context, rec batch.ChannelRecord, expect *big.Int, holder string) (bool, error)
	// query runs a read.
	claimable func(ctx context.Context, network string, limit int) ([]batchserver.Held, error)
	get       func(ctx context.Context, network, id string) (batchserver.Held, bool, error)
}

var _ Channels = (*channelStore)(nil)

func channelKey(network string, id common.Hash) (string, string, error) {
	network = strings.TrimSpace(network)
	if err := checkText("network", network, true); err != nil {
		return "", "", err
	}
	return network, strings.ToLower(id.Hex()), nil
}

// Channel implements batchserver.Store.
func (s *channelStore) Channel(ctx context.Context, network string, id common.Hash) (batchserver.Held, bool, error) {
	n, k, err := channelKey(network, id)
	if err != nil {
		return batchserver.Held{}, false, fmt.Errorf("store: %s: channel: %w", s.dialect, err)
	}
	return s.get(ctx, n, k)
}

// Hold implements batchserver.Store.
func (s *channelStore) Hold(ctx context.Context, rec batch.ChannelRecord, holder string, now, until time.Time) (batchserver.Held, bool, error) {
	n, k, err := channelKey(rec.Network, rec.ID)
	if err == nil {
		err = checkText("holder", holder, true)
	}
	if err != nil {
		return batchserver.Held{}, false, fmt.Errorf("store: %s: hold channel: %w", s.dialect, err)
	}
	rec.Network = n
	if s.fastHold != nil {
		if h, ok, err := s.fastHold(ctx, n, k, holder, now, until); err != nil || ok {
			return h, ok, err
		}
	}
	fresh := batchserver.Held{ChannelRecord: batchserver.NewRecord(rec)}
	var out batchserver.Held
	var taken bool
	err = s.early(ctx, "hold channel", &fresh, func(ctx context.Context, t channelTx) error {
		h, found, err := t.get(ctx, n, k)
		if err != nil {
			return err
		}
		if !found {
			h = fresh
		}
		if h.HeldBy(holder, now) {
			out = h
			return nil
		}
		h.Holder, h.HeldUntil = holder, until
		taken, out = true, h
		return t.put(ctx, h, found)
	})
	return out, taken, err
}

// Unhold implements batchserver.Store.
func (s *channelStore) Unhold(ctx context.Context, network string, id common.Hash, holder string) error {
	n, k, err := channelKey(network, id)
	if err != nil {
		return fmt.Errorf("store: %s: unhold channel: %w", s.dialect, err)
	}
	return s.tx(ctx, "unhold channel", nil, func(ctx context.Context, t channelTx) error {
		h, found, err := t.get(ctx, n, k)
		if err != nil || !found || h.Holder != holder {
			return err
		}
		h.Holder, h.HeldUntil = "", time.Time{}
		return t.put(ctx, h, found)
	})
}

// Commit implements batchserver.Store.
func (s *channelStore) Commit(ctx context.Context, rec batch.ChannelRecord, expect *big.Int, holder string) (bool, error) {
	n, k, err := channelKey(rec.Network, rec.ID)
	if err == nil && (rec.Charged == nil || rec.SignedMax == nil || expect == nil) {
		err = invalid("charged", "Charged, SignedMax and expect are required")
	}
	if err != nil {
		return false, fmt.Errorf("store: %s: commit charge: %w", s.dialect, err)
	}
	rec.Network = n
	if s.fastCommit != nil {
		if done, err := s.fastCommit(ctx, rec, expect, holder); err != nil || done {
			return done, err
		}
	}
	var fresh *batchserver.Held
	if expect.Sign() == 0 {
		fresh = &batchserver.Held{ChannelRecord: batchserver.NewRecord(rec)}
	}
	var done bool
	err = s.tx(ctx, "commit charge", fresh, func(ctx context.Context, t channelTx) error {
		h, found, err := t.get(ctx, n, k)
		if err != nil {
			return err
		}
		if !found {
			if fresh == nil {
				return nil
			}
			h = *fresh
		}
		if h.Charged.Cmp(expect) != 0 {
			return nil
		}
		h.ChannelRecord = batchserver.ApplyCommit(h.ChannelRecord, rec)
		if holder != "" && h.Holder == holder {
			h.Holder, h.HeldUntil = "", time.Time{}
		}
		done = true
		return t.put(ctx, h, found)
	})
	return done, err
}

// Mirror implements batchserver.Store (and is what a claimer records the
// escrow's view with).
func (s *channelStore) Mirror(ctx context.Context, network string, id common.Hash, oc batch.OnChain, at time.Time) error {
	n, k, err := channelKey(network, id)
	if err != nil {
		return fmt.Errorf("store: %s: mirror channel: %w", s.dialect, err)
	}
	return s.tx(ctx, "mirror channel", nil, func(ctx context.Context, t channelTx) error {
		h, found, err := t.get(ctx, n, k)
		if err != nil || !found || !at.After(h.SyncedAt) {
			return err
		}
		h.OnChain, h.SyncedAt = batchserver.CopyOnChain(oc), at
		return t.put(ctx, h, found)
	})
}

// Delete implements batchserver.Store.
func (s *channelStore) Delete(ctx context.Context, network string, id common.Hash, expect *big.Int) (bool, error) {
	n, k, err := channelKey(network, id)
	if err != nil {
		return false, fmt.Errorf("store: %s: delete channel: %w", s.dialect, err)
	}
	var done bool
	err = s.tx(ctx, "delete channel", nil, func(ctx context.Context, t channelTx) error {
		h, found, err := t.get(ctx, n, k)
		if err != nil || !found || h.Charged.Cmp(expect) != 0 {
			return err
		}
		done = true
		return t.del(ctx, n, k)
	})
	return done, err
}

// Claimable lists up to limit channel records of network whose Charged
// exceeds their mirrored OnChain.TotalClaimed, least recently charged
// first (from the claim_pending index).
func (s *channelStore) Claimable(ctx context.Context, network string, limit int) ([]batch.ChannelRecord, error) {
	network = strings.TrimSpace(network)
	if err := checkText("network", network, true); err != nil {
		return nil, fmt.Errorf("store: %s: claimable channels: %w", s.dialect, err)
	}
	if limit <= 0 {
		return nil, nil
	}
	hs, err := s.claimable(ctx, network, limit)
	if err != nil {
		return nil, err
	}
	out := make([]batch.ChannelRecord, len(hs))
	for i, h := range hs {
		out[i] = h.ChannelRecord
	}
	return out, nil
}

// channelValues returns h's column values (channelColumns order); the
// boolean claim_pending as claim.
func channelValues(h batchserver.Held, claim any) []any {
	r := h.ChannelRecord
	c := r.Channel
	oc := batchserver.CopyOnChain(r.OnChain)
	lower := func(a common.Address) string { return strings.ToLower(a.Hex()) }
	sig := ""
	if len(r.Signature) > 0 {
		sig = "0x" + hex.EncodeToString(r.Signature)
	}
	return []any{r.Network, strings.ToLower(r.ID.Hex()), lower(c.Payer), lower(c.PayerAuthorizer), lower(c.Receiver), lower(c.ReceiverAuthorizer),
		lower(c.Token), int64(c.WithdrawDelay), strings.ToLower(c.Salt.Hex()),
		amountText(r.Charged), amountText(r.SignedMax), sig, oc.Balance.String(), oc.TotalClaimed.String(), oc.WithdrawAmount.String(),
		int64(oc.WithdrawRequestedAt), oc.RefundNonce.String(), instant(r.SyncedAt), instant(r.LastRequestAt), claim, h.Holder, instant(h.HeldUntil)}
}

// channelScan holds one row as scanned.
type channelScan struct {
	network, id, payer, payerAuth, receiver, receiverAuth, token string
	delay                                                        int64
	salt, charged, signedMax, sig, balance, claimed, wdAmount    string
	wdAt                                                         int64
	nonce                                                        string
	synced, last                                                 int64
	holder                                                       string
	heldUntil                                                    int64
}

// dests returns the scan destinations; claim receives claim_pending.
func (c *channelScan) dests(claim any) []any {
	return []any{&c.network, &c.id, &c.payer, &c.payerAuth, &c.receiver, &c.receiverAuth, &c.token, &c.delay, &c.salt,
		&c.charged, &c.signedMax, &c.sig, &c.balance, &c.claimed, &c.wdAmount, &c.wdAt, &c.nonce, &c.synced, &c.last, claim, &c.holder, &c.heldUntil}
}

// held decodes a scanned row.
func (c *channelScan) held() (batchserver.Held, error) {
	var h batchserver.Held
	r := &h.ChannelRecord
	r.Network, r.ID = c.network, common.HexToHash(c.id)
	r.Channel = batch.Channel{Payer: common.HexToAddress(c.payer), PayerAuthorizer: common.HexToAddress(c.payerAuth), Receiver: common.HexToAddress(c.receiver),
		ReceiverAuthorizer: common.HexToAddress(c.receiverAuth), Token: common.HexToAddress(c.token), WithdrawDelay: uint64(c.delay), Salt: common.HexToHash(c.salt)}
	var err error
	amt := func(s string) *big.Int {
		v, ok := new(big.Int).SetString(s, 10)
		if !ok {
			err = fmt.Errorf("batch_channels %s: amount %q is not decimal", c.id, s)
			return new(big.Int)
		}
		return v
	}
	r.Charged, r.SignedMax = amt(c.charged), amt(c.signedMax)
	r.OnChain = batch.OnChain{Balance: amt(c.balance), TotalClaimed: amt(c.claimed), WithdrawAmount: amt(c.wdAmount), WithdrawRequestedAt: uint64(c.wdAt), RefundNonce: amt(c.nonce)}
	if c.sig != "" {
		if r.Signature, err = hex.DecodeString(strings.TrimPrefix(c.sig, "0x")); err != nil {
			return h, fmt.Errorf("batch_channels %s: signature: %w", c.id, err)
		}
	}
	r.SyncedAt, r.LastRequestAt = fromInstant(c.synced), fromInstant(c.last)
	h.Holder, h.HeldUntil = c.holder, fromInstant(c.heldUntil)
	return h, err
}

func amountText(v *big.Int) string {
	if v == nil {
		return "0"
	}
	return v.String()
}

// ---- SQLite ----

// Channels implements Store: the batch-settlement channel store.
func (s *sqliteStore) Channels() Channels {
	return &channelStore{dialect: "sqlite", tx: s.channelTx, early: s.channelEarly, claimable: s.channelsClaimable, get: s.channelGet,
		fastHold: s.channelFastHold, fastCommit: s.channelFastCommit}
}

// channelFastHoldSQL takes the hold of an existing record that no other
// holder holds (placeholders: 1 network, 2 channel id, 3 holder, 4 until,
// 5 now) and returns the record.
const channelFastHoldSQL = `UPDATE batch_channels SET holder = ?3, held_until = ?4
	WHERE network = ?1 AND channel_id = ?2 AND (holder = '' OR holder = ?3 OR held_until <= ?5)
	RETURNING ` + channelColumns

// channelFastCommitSQL charges an existing record whose charged amount is
// the expected one and whose mirror is not newer than the charge's (1
// network, 2 channel id, 3 charged, 4 signed max, 5 signature, 6 last
// request, 7 holder, 8 expected, 9 the charge's mirror time), keeping
// claim_pending (decimal amounts compare as their lengths, then as text).
const channelFastCommitSQL = `UPDATE batch_channels SET charged = ?3, signed_max = ?4, signature = ?5, last_request_at = ?6,
	claim_pending = (length(?3) > length(total_claimed) OR (length(?3) = length(total_claimed) AND ?3 > total_claimed)),
	holder = CASE WHEN holder = ?7 THEN '' ELSE holder END, held_until = CASE WHEN holder = ?7 THEN 0 ELSE held_until END
	WHERE network = ?1 AND channel_id = ?2 AND charged = ?8 AND synced_at >= ?9`

// The channel store's SQLite statements, prepared on the writer
// connection with the journal's (sqliteJournalStmts).
const (
	sqliteChannelSelect = `SELECT ` + channelColumns + ` FROM batch_channels WHERE network = ? AND channel_id = ?`
	sqliteChannelPut    = `INSERT OR REPLACE INTO batch_channels (` + channelColumns + `)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`
	sqliteChannelDelete = `DELETE FROM batch_channels WHERE network = ? AND channel_id = ?`
	// sqliteChannelUpdate rewrites the mutable columns of a row (an update
	// in place: cheaper than a replace, which deletes and inserts).
	sqliteChannelUpdate = `UPDATE batch_channels SET charged = ?3, signed_max = ?4, signature = ?5, balance = ?6, total_claimed = ?7,
		withdraw_amount = ?8, withdraw_requested_at = ?9, refund_nonce = ?10, synced_at = ?11, last_request_at = ?12,
		claim_pending = ?13, holder = ?14, held_until = ?15 WHERE network = ?1 AND channel_id = ?2`
)

type sqliteChannelTx struct {
	tx    *sql.Tx
	stmts *stmtCache
}

func (t sqliteChannelTx) get(ctx context.Context, network, id string) (batchserver.Held, bool, error) {
	return scanSQLiteChannel(t.stmts.queryRow(ctx, t.tx, sqliteChannelSelect, network, id))
}

func (t sqliteChannelTx) put(ctx context.Context, h batchserver.Held, found bool) error {
	claim := 0
	if batchserver.ClaimPending(h.ChannelRecord) {
		claim = 1
	}
	v := channelValues(h, claim)
	if !found {
		_, err := t.stmts.exec(ctx, t.tx, sqliteChannelPut, v...)
		return err
	}
	// The key (0, 1) and the mutable columns (9 to 21) of channelColumns.
	_, err := t.stmts.exec(ctx, t.tx, sqliteChannelUpdate, append(v[0:2:2], v[9:]...)...)
	return err
}

func (t sqliteChannelTx) del(ctx context.Context, network, id string) error {
	_, err := t.stmts.exec(ctx, t.tx, sqliteChannelDelete, network, id)
	return err
}

func scanSQLiteChannel(row interface{ Scan(...any) error }) (batchserver.Held, bool, error) {
	var c channelScan
	var claim int64
	if err := row.Scan(c.dests(&claim)...); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return batchserver.Held{}, false, nil
		}
		return batchserver.Held{}, false, err
	}
	h, err := c.held()
	return h, err == nil, err
}

// channelTx runs f as one write of the group committer (in a savepoint of
// a shared IMMEDIATE transaction on the writer connection, like the
// journal's writes): atomic, and committed with the writes around it.
func (s *sqliteStore) channelTx(ctx context.Context, op string, _ *batchserver.Held, f func(ctx context.Context, t channelTx) error) error {
	return s.journalWrite(ctx, op, func(ctx context.Context, tx *sql.Tx) error { return f(ctx, sqliteChannelTx{tx: tx, stmts: s.stmts}) })
}

// channelEarly runs a hold's write in the group committer, answered as
// soon as it ran: every later write (the charge that frees it) runs after
// it on the one writer connection and commits only with or after it.
func (s *sqliteStore) channelEarly(ctx context.Context, op string, _ *batchserver.Held, f func(ctx context.Context, t channelTx) error) error {
	w := func(ctx context.Context, tx *sql.Tx) error { return f(ctx, sqliteChannelTx{tx: tx, stmts: s.stmts}) }
	if s.group == nil {
		return s.writeTx(ctx, op, w)
	}
	ctx, cancel := s.cfg.withTimeout(ctx)
	defer cancel()
	if err := s.group.doEarly(ctx, w); err != nil {
		return fmt.Errorf("store: sqlite: %s: %w", op, err)
	}
	return nil
}

// commitArgs are channelFastCommitSQL's arguments.
func commitArgs(network, id string, rec batch.ChannelRecord, expect *big.Int, holder string) []any {
	sig := ""
	if len(rec.Signature) > 0 {
		sig = "0x" + hex.EncodeToString(rec.Signature)
	}
	return []any{network, id, amountText(rec.Charged), amountText(rec.SignedMax), sig, instant(rec.LastRequestAt), holder, expect.String(), instant(rec.SyncedAt)}
}

func (s *sqliteStore) channelFastHold(ctx context.Context, network, id, holder string, now, until time.Time) (batchserver.Held, bool, error) {
	var h batchserver.Held
	var found bool
	err := s.channelEarly(ctx, "hold channel", nil, func(ctx context.Context, t channelTx) error {
		st := t.(sqliteChannelTx)
		var err error
		h, found, err = scanSQLiteChannel(st.stmts.queryRow(ctx, st.tx, channelFastHoldSQL, network, id, holder, instant(until), instant(now)))
		return err
	})
	return h, found, err
}

func (s *sqliteStore) channelFastCommit(ctx context.Context, rec batch.ChannelRecord, expect *big.Int, holder string) (bool, error) {
	var done bool
	err := s.channelTx(ctx, "commit charge", nil, func(ctx context.Context, t channelTx) error {
		st := t.(sqliteChannelTx)
		res, err := st.stmts.exec(ctx, st.tx, channelFastCommitSQL, commitArgs(rec.Network, strings.ToLower(rec.ID.Hex()), rec, expect, holder)...)
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		done = n == 1
		return err
	})
	return done, err
}

func (s *sqliteStore) channelGet(ctx context.Context, network, id string) (batchserver.Held, bool, error) {
	ctx, cancel := s.cfg.withTimeout(ctx)
	defer cancel()
	s.chanRead.once.Do(func() {
		s.chanRead.stmt, s.chanRead.err = s.r.PrepareContext(context.WithoutCancel(ctx), sqliteChannelSelect)
	})
	if s.chanRead.err != nil {
		return batchserver.Held{}, false, fmt.Errorf("store: sqlite: channel: %w", s.chanRead.err)
	}
	h, found, err := scanSQLiteChannel(s.chanRead.stmt.QueryRowContext(ctx, network, id))
	if err != nil {
		return h, false, fmt.Errorf("store: sqlite: channel: %w", err)
	}
	return h, found, nil
}

func (s *sqliteStore) channelsClaimable(ctx context.Context, network string, limit int) ([]batchserver.Held, error) {
	ctx, cancel := s.cfg.withTimeout(ctx)
	defer cancel()
	rows, err := s.r.QueryContext(ctx, `SELECT `+channelColumns+` FROM batch_channels
		WHERE network = ? AND claim_pending = 1 ORDER BY last_request_at, channel_id LIMIT ?`, network, limit)
	if err != nil {
		return nil, fmt.Errorf("store: sqlite: claimable channels: %w", err)
	}
	defer rows.Close()
	var out []batchserver.Held
	for rows.Next() {
		h, _, err := scanSQLiteChannel(rows)
		if err != nil {
			return nil, fmt.Errorf("store: sqlite: claimable channels: %w", err)
		}
		out = append(out, h)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: sqlite: claimable channels: %w", err)
	}
	return out, nil
}

// ---- PostgreSQL ----

// Channels implements Store: the batch-settlement channel store.
func (s *postgresStore) Channels() Channels {
	return &channelStore{dialect: "postgres", tx: s.channelTx, early: s.channelTx, claimable: s.channelsClaimable, get: s.channelGet,
		fastHold: s.channelFastHold, fastCommit: s.channelFastCommit}
}

type pgChannelTx struct{ tx pgx.Tx }

func pgChannelQuery(lock bool) string {
	q := `SELECT ` + channelColumns + ` FROM batch_channels WHERE network = $1 AND channel_id = $2`
	if lock {
		q += ` FOR UPDATE`
	}
	return q
}

const pgChannelUpsert = `INSERT INTO batch_channels (` + channelColumns + `)
	VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22)
	ON CONFLICT (network, channel_id) DO UPDATE SET payer = EXCLUDED.payer, payer_authorizer = EXCLUDED.payer_authorizer,
	receiver = EXCLUDED.receiver, receiver_authorizer = EXCLUDED.receiver_authorizer, token = EXCLUDED.token,
	withdraw_delay = EXCLUDED.withdraw_delay, salt = EXCLUDED.salt, charged = EXCLUDED.charged, signed_max = EXCLUDED.signed_max,
	signature = EXCLUDED.signature, balance = EXCLUDED.balance, total_claimed = EXCLUDED.total_claimed,
	withdraw_amount = EXCLUDED.withdraw_amount, withdraw_requested_at = EXCLUDED.withdraw_requested_at,
	refund_nonce = EXCLUDED.refund_nonce, synced_at = EXCLUDED.synced_at, last_request_at = EXCLUDED.last_request_at,
	claim_pending = EXCLUDED.claim_pending, holder = EXCLUDED.holder, held_until = EXCLUDED.held_until`

func (t pgChannelTx) get(ctx context.Context, network, id string) (batchserver.Held, bool, error) {
	return scanPGChannel(t.tx.QueryRow(ctx, pgChannelQuery(true), network, id))
}

func (t pgChannelTx) put(ctx context.Context, h batchserver.Held, _ bool) error {
	_, err := t.tx.Exec(ctx, pgChannelUpsert, channelValues(h, batchserver.ClaimPending(h.ChannelRecord))...)
	return err
}

func (t pgChannelTx) del(ctx context.Context, network, id string) error {
	_, err := t.tx.Exec(ctx, `DELETE FROM batch_channels WHERE network = $1 AND channel_id = $2`, network, id)
	return err
}

func scanPGChannel(row pgx.Row) (batchserver.Held, bool, error) {
	var c channelScan
	var claim bool
	if err := row.Scan(c.dests(&claim)...); err != nil {
		if errors.Is(err, pgx.ErrNoRows) {
			return batchserver.Held{}, false, nil
		}
		return batchserver.Held{}, false, err
	}
	h, err := c.held()
	return h, err == nil, err
}

func (s *postgresStore) channelTx(ctx context.Context, op string, create *batchserver.Held, f func(ctx context.Context, t channelTx) error) error {
	return s.withTx(ctx, op, func(ctx context.Context, tx pgx.Tx) error {
		if create != nil {
			// The row must exist to be locked: two transactions creating
			// one channel meet at its primary key, and the second then
			// waits for the first's lock.
			if _, err := tx.Exec(ctx, `INSERT INTO batch_channels (`+channelColumns+`)
				VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22)
				ON CONFLICT (network, channel_id) DO NOTHING`, channelValues(*create, false)...); err != nil {
				return err
			}
		}
		return f(ctx, pgChannelTx{tx})
	})
}

// pgNumbered turns the ?N placeholders of a shared statement into $N,
// and its text comparisons of amounts into byte-wise ones.
func pgNumbered(q string) string {
	q = strings.ReplaceAll(q, "?3 > total_claimed", `?3 COLLATE "C" > total_claimed COLLATE "C"`)
	for i := 9; i >= 1; i-- {
		q = strings.ReplaceAll(q, fmt.Sprintf("?%d", i), fmt.Sprintf("$%d", i))
	}
	return q
}

var (
	pgFastHoldSQL   = pgNumbered(channelFastHoldSQL)
	pgFastCommitSQL = pgNumbered(strings.Replace(channelFastCommitSQL, "length(?3)", "length(?3::text)", 1))
)

func (s *postgresStore) channelFastHold(ctx context.Context, network, id, holder string, now, until time.Time) (batchserver.Held, bool, error) {
	var h batchserver.Held
	var found bool
	err := s.withConn(ctx, "hold channel", func(ctx context.Context, c *pgx.Conn) error {
		var err error
		h, found, err = scanPGChannel(c.QueryRow(ctx, pgFastHoldSQL, network, id, holder, instant(until), instant(now)))
		return err
	})
	return h, found, err
}

func (s *postgresStore) channelFastCommit(ctx context.Context, rec batch.ChannelRecord, expect *big.Int, holder string) (bool, error) {
	var done bool
	err := s.withConn(ctx, "commit charge", func(ctx context.Context, c *pgx.Conn) error {
		tag, err := c.Exec(ctx, pgFastCommitSQL, commitArgs(rec.Network, strings.ToLower(rec.ID.Hex()), rec, expect, holder)...)
		done = tag.RowsAffected() == 1
		return err
	})
	return done, err
}

func (s *postgresStore) channelGet(ctx context.Context, network, id string) (batchserver.Held, bool, error) {
	var h batchserver.Held
	var found bool
	err := s.withConn(ctx, "channel", func(ctx context.Context, c *pgx.Conn) error {
		var err error
		h, found, err = scanPGChannel(c.QueryRow(ctx, pgChannelQuery(false), network, id))
		return err
	})
	return h, found, err
}

func (s *postgresStore) channelsClaimable(ctx context.Context, network string, limit int) ([]batchserver.Held, error) {
	var out []batchserver.Held
	err := s.withConn(ctx, "claimable channels", func(ctx context.Context, c *pgx.Conn) error {
		rows, err := c.Query(ctx, `SELECT `+channelColumns+` FROM batch_channels
			WHERE network = $1 AND claim_pending ORDER BY last_request_at, channel_id LIMIT $2`, network, limit)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			h, _, err := scanPGChannel(rows)
			if err != nil {
				return err
			}
			out = append(out, h)
		}
		return rows.Err()
	})
	return out, err
}

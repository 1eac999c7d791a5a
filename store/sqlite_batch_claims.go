package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/seed1284c1d2/svc/x402/batch/claimer"
)

// sqliteClaims is the claim log in a SQLite store.
type sqliteClaims struct{ s *sqliteStore }

var _ claimer.Log = sqliteClaims{}

// BatchClaims implements BatchClaimsStore.
func (s *sqliteStore) BatchClaims() claimer.Log { return sqliteClaims{s} }

// Begin implements claimer.Log.
func (l sqliteClaims) Begin(ctx context.Context, rec claimer.Record) error {
	rows, sig, err := checkClaimBegin(rec)
	if err != nil {
		return fmt.Errorf("store: sqlite: begin claim: %w", err)
	}
	return l.s.writeTx(ctx, "begin claim", func(ctx context.Context, tx *sql.Tx) error {
		at := toNanos(rec.CreatedAt)
		_, err := tx.ExecContext(ctx, `INSERT INTO batch_claims (id, network, state, claim_rows, authorizer_sig, created_at, updated_at)
			VALUES (?, ?, 'pending', ?, ?, ?, ?)`, rec.ID, rec.Network, rows, sig, at, at)
		return err
	})
}

// Attempt implements claimer.Log.
func (l sqliteClaims) Attempt(ctx context.Context, id string, at time.Time) error {
	return l.s.writeTx(ctx, "claim attempt", func(ctx context.Context, tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE batch_claims SET attempts = attempts + 1, updated_at = ? WHERE id = ? AND state = 'pending'`, toNanos(at), id)
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return claimer.ErrNotPending
		}
		return nil
	})
}

// Finish implements claimer.Log.
func (l sqliteClaims) Finish(ctx context.Context, id string, state claimer.State, txHash, reason string, at time.Time) error {
	reason, err := checkClaimFinish(id, state, txHash, reason)
	if err != nil {
		return fmt.Errorf("store: sqlite: finish claim: %w", err)
	}
	return l.s.writeTx(ctx, "finish claim", func(ctx context.Context, tx *sql.Tx) error {
		var network, rows string
		err := tx.QueryRowContext(ctx, `SELECT network, claim_rows FROM batch_claims WHERE id = ? AND state = 'pending'`, id).Scan(&network, &rows)
		if errors.Is(err, sql.ErrNoRows) {
			return claimer.ErrNotPending
		}
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE batch_claims SET state = ?, tx = ?, reason = ?, updated_at = ? WHERE id = ?`,
			string(state), txHash, reason, toNanos(at), id); err != nil {
			return err
		}
		if state != claimer.Done {
			return nil
		}
		rs, err := decodeClaimRows(rows)
		if err != nil {
			return err
		}
		for _, r := range rs {
			var prev string
			err := tx.QueryRowContext(ctx, `SELECT claim_row FROM batch_claimed_channels WHERE network = ? AND channel_id = ?`, network, r.ChannelID.Hex()).Scan(&prev)
			if err != nil && !errors.Is(err, sql.ErrNoRows) {
				return err
			}
			if err == nil && laterClaimed(prev, r) {
				continue
			}
			raw, err := encodeClaimRow(r)
			if err != nil {
				return err
			}
			if _, err := tx.ExecContext(ctx, `INSERT INTO batch_claimed_channels (network, channel_id, claim_id, claim_row, claimed_at) VALUES (?, ?, ?, ?, ?)
				ON CONFLICT (network, channel_id) DO UPDATE SET claim_id = excluded.claim_id, claim_row = excluded.claim_row, claimed_at = excluded.claimed_at`,
				network, r.ChannelID.Hex(), id, string(raw), toNanos(at)); err != nil {
				return err
			}
		}
		return nil
	})
}

// Pending implements claimer.Log.
func (l sqliteClaims) Pending(ctx context.Context, network string) ([]claimer.Record, error) {
	return l.records(ctx, "pending claims", `SELECT id, network, state, claim_rows, authorizer_sig, tx, reason, attempts, created_at, updated_at
		FROM batch_claims WHERE network = ? AND state = 'pending' ORDER BY created_at, id`, network)
}

// Recent implements claimer.Log.
func (l sqliteClaims) Recent(ctx context.Context, network string, limit int) ([]claimer.Record, error) {
	return l.records(ctx, "recent claims", `SELECT id, network, state, claim_rows, authorizer_sig, tx, reason, attempts, created_at, updated_at
		FROM batch_claims WHERE network = ? ORDER BY created_at DESC, id DESC LIMIT ?`, network, claimLimit(limit))
}

func (l sqliteClaims) records(ctx context.Context, op, q string, args ...any) ([]claimer.Record, error) {
	ctx, cancel := l.s.cfg.withTimeout(ctx)
	defer cancel()
	rows, err := l.s.r.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("store: sqlite: %s: %w", op, err)
	}
	defer rows.Close()
	var out []claimer.Record
	for rows.Next() {
		var id, network, state, rs, sig, tx, reason string
		var attempts int
		var created, updated int64
		if err := rows.Scan(&id, &network, &state, &rs, &sig, &tx, &reason, &attempts, &created, &updated); err != nil {
			return nil, fmt.Errorf("store: sqlite: %s: %w", op, err)
		}
		rec, err := claimRecord(id, network, state, rs, sig, tx, reason, attempts, created, updated)
		if err != nil {
			return nil, fmt.Errorf("store: sqlite: %s: %w", op, err)
		}
		out = append(out, rec)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: sqlite: %s: %w", op, err)
	}
	return out, nil
}

// Claimed implements claimer.Log.
func (l sqliteClaims) Claimed(ctx context.Context, network string, limit int) ([]claimer.Claimed, error) {
	ctx, cancel := l.s.cfg.withTimeout(ctx)
	defer cancel()
	rows, err := l.s.r.QueryContext(ctx, `SELECT claim_id, claim_row, claimed_at FROM batch_claimed_channels
		WHERE network = ? ORDER BY claimed_at, channel_id LIMIT ?`, network, claimLimit(limit))
	if err != nil {
		return nil, fmt.Errorf("store: sqlite: claimed channels: %w", err)
	}
	defer rows.Close()
	var out []claimer.Claimed
	for rows.Next() {
		var claimID, row string
		var at int64
		if err := rows.Scan(&claimID, &row, &at); err != nil {
			return nil, fmt.Errorf("store: sqlite: claimed channels: %w", err)
		}
		c, err := claimedChannel(network, claimID, row, at)
		if err != nil {
			return nil, fmt.Errorf("store: sqlite: claimed channels: %w", err)
		}
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: sqlite: claimed channels: %w", err)
	}
	return out, nil
}

// Lease implements claimer.Log.
func (l sqliteClaims) Lease(ctx context.Context, network, owner string, now, until time.Time) (bool, error) {
	if err := checkText("owner", owner, true); err != nil {
		return false, fmt.Errorf("store: sqlite: claimer lease: %w", err)
	}
	held := false
	err := l.s.writeTx(ctx, "claimer lease", func(ctx context.Context, tx *sql.Tx) error {
		var cur string
		var end int64
		err := tx.QueryRowContext(ctx, `SELECT owner, lease_until FROM batch_claimer_leases WHERE network = ?`, network).Scan(&cur, &end)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		if err == nil && cur != owner && end > toNanos(now) {
			return nil
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO batch_claimer_leases (network, owner, lease_until) VALUES (?, ?, ?)
			ON CONFLICT (network) DO UPDATE SET owner = excluded.owner, lease_until = excluded.lease_until`, network, owner, toNanos(until)); err != nil {
			return err
		}
		held = true
		return nil
	})
	return held, err
}

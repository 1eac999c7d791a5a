package store

import (
	"context"
	"errors"

	"fmt"
	"github.com/jackc/pgx/v5"
	"time"

	"github.com/seed1284c1d2/svc/x402/batch/claimer"
)

// postgresClaims is the claim log in a SQLite store.
type postgresClaims struct{ s *postgresStore }

var _ claimer.Log = postgresClaims{}

// BatchClaims implements BatchClaimsStore.
func (s *postgresStore) BatchClaims() claimer.Log { return postgresClaims{s} }

// Begin implements claimer.Log.
func (l postgresClaims) Begin(ctx context.Context, rec claimer.Record) error {
	rows, sig, err := checkClaimBegin(rec)
	if err != nil {
		return fmt.Errorf("store: postgres: begin claim: %w", err)
	}
	return l.s.withConn(ctx, "begin claim", func(ctx context.Context, c *pgx.Conn) error {
		at := toNanos(rec.CreatedAt)
		_, err := c.Exec(ctx, `INSERT INTO batch_claims (id, network, state, claim_rows, authorizer_sig, created_at, updated_at)
			VALUES ($1, $2, 'pending', $3, $4, $5, $6)`, rec.ID, rec.Network, rows, sig, at, at)
		return err
	})
}

// Attempt implements claimer.Log.
func (l postgresClaims) Attempt(ctx context.Context, id string, at time.Time) error {
	return l.s.withConn(ctx, "claim attempt", func(ctx context.Context, c *pgx.Conn) error {
		tag, err := c.Exec(ctx, `UPDATE batch_claims SET attempts = attempts + 1, updated_at = $1 WHERE id = $2 AND state = 'pending'`, toNanos(at), id)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return claimer.ErrNotPending
		}
		return nil
	})
}

// Finish implements claimer.Log.
func (l postgresClaims) Finish(ctx context.Context, id string, state claimer.State, txHash, reason string, at time.Time) error {
	reason, err := checkClaimFinish(id, state, txHash, reason)
	if err != nil {
		return fmt.Errorf("store: postgres: finish claim: %w", err)
	}
	return l.s.withTx(ctx, "finish claim", func(ctx context.Context, tx pgx.Tx) error {
		var network, rows string
		err := tx.QueryRow(ctx, `SELECT network, claim_rows FROM batch_claims WHERE id = $1 AND state = 'pending' FOR UPDATE`, id).Scan(&network, &rows)
		if errors.Is(err, pgx.ErrNoRows) {
			return claimer.ErrNotPending
		}
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `UPDATE batch_claims SET state = $1, tx = $2, reason = $3, updated_at = $4 WHERE id = $5`,
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
			err := tx.QueryRow(ctx, `SELECT claim_row FROM batch_claimed_channels WHERE network = $1 AND channel_id = $2 FOR UPDATE`, network, r.ChannelID.Hex()).Scan(&prev)
			if err != nil && !errors.Is(err, pgx.ErrNoRows) {
				return err
			}
			if err == nil && laterClaimed(prev, r) {
				continue
			}
			raw, err := encodeClaimRow(r)
			if err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, `INSERT INTO batch_claimed_channels (network, channel_id, claim_id, claim_row, claimed_at) VALUES ($1, $2, $3, $4, $5)
				ON CONFLICT (network, channel_id) DO UPDATE SET claim_id = excluded.claim_id, claim_row = excluded.claim_row, claimed_at = excluded.claimed_at`,
				network, r.ChannelID.Hex(), id, string(raw), toNanos(at)); err != nil {
				return err
			}
		}
		return nil
	})
}

// Pending implements claimer.Log.
func (l postgresClaims) Pending(ctx context.Context, network string) ([]claimer.Record, error) {
	return l.records(ctx, "pending claims", `SELECT id, network, state, claim_rows, authorizer_sig, tx, reason, attempts, created_at, updated_at
		FROM batch_claims WHERE network = $1 AND state = 'pending' ORDER BY created_at, id`, network)
}

// Recent implements claimer.Log.
func (l postgresClaims) Recent(ctx context.Context, network string, limit int) ([]claimer.Record, error) {
	return l.records(ctx, "recent claims", `SELECT id, network, state, claim_rows, authorizer_sig, tx, reason, attempts, created_at, updated_at
		FROM batch_claims WHERE network = $1 ORDER BY created_at DESC, id DESC LIMIT $2`, network, claimLimit(limit))
}

func (l postgresClaims) records(ctx context.Context, op, q string, args ...any) ([]claimer.Record, error) {
	var out []claimer.Record
	err := l.s.withConn(ctx, op, func(ctx context.Context, c *pgx.Conn) error {
		rows, err := c.Query(ctx, q, args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var id, network, state, rs, sig, tx, reason string
			var attempts int32
			var created, updated int64
			if err := rows.Scan(&id, &network, &state, &rs, &sig, &tx, &reason, &attempts, &created, &updated); err != nil {
				return err
			}
			rec, err := claimRecord(id, network, state, rs, sig, tx, reason, int(attempts), created, updated)
			if err != nil {
				return err
			}
			out = append(out, rec)
		}
		return rows.Err()
	})
	return out, err
}

// Claimed implements claimer.Log.
func (l postgresClaims) Claimed(ctx context.Context, network string, limit int) ([]claimer.Claimed, error) {
	var out []claimer.Claimed
	err := l.s.withConn(ctx, "claimed channels", func(ctx context.Context, c *pgx.Conn) error {
		rows, err := c.Query(ctx, `SELECT claim_id, claim_row, claimed_at FROM batch_claimed_channels
			WHERE network = $1 ORDER BY claimed_at, channel_id LIMIT $2`, network, claimLimit(limit))
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var claimID, row string
			var at int64
			if err := rows.Scan(&claimID, &row, &at); err != nil {
				return err
			}
			cl, err := claimedChannel(network, claimID, row, at)
			if err != nil {
				return err
			}
			out = append(out, cl)
		}
		return rows.Err()
	})
	return out, err
}

// Lease implements claimer.Log: one statement, so that instances asking
// together cannot both win.
func (l postgresClaims) Lease(ctx context.Context, network, owner string, now, until time.Time) (bool, error) {
	if err := checkText("owner", owner, true); err != nil {
		return false, fmt.Errorf("store: postgres: claimer lease: %w", err)
	}
	held := false
	err := l.s.withConn(ctx, "claimer lease", func(ctx context.Context, c *pgx.Conn) error {
		var got string
		err := c.QueryRow(ctx, `INSERT INTO batch_claimer_leases (network, owner, lease_until) VALUES ($1, $2, $3)
			ON CONFLICT (network) DO UPDATE SET owner = excluded.owner, lease_until = excluded.lease_until
			WHERE batch_claimer_leases.owner = excluded.owner OR batch_claimer_leases.lease_until <= $4
			RETURNING owner`, network, owner, toNanos(until), toNanos(now)).Scan(&got)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		held = err == nil
		return err
	})
	return held, err
}

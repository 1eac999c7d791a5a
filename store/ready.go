package store

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// ErrSchema marks a database that answers but lacks svc's schema (a table
// dropped, or migrations older than the build's): CheckSchema's error wraps
// it.
var ErrSchema = errors.New("store: schema missing or outdated")

// schemaTables are the tables the current migrations leave, with the
// columns the code reads and writes; CheckSchema selects them (no rows),
// which fails when a table or column is missing.
func schemaTables() []string {
	return []string{
		"settlements (network, asset, payer, nonce, tool_key, amount, tx, ref_code, settled_at, route, transport)",
		"referrals (code, owner, created_at)",
		"lounge (wallet, agent_name, role, interests, checked_in_at)",
		"payments (key, state, lease_until, keep_until, answer_until, created_at, updated_at)",
		"engine_instances (owner, seen_at)",
		"batch_channels (network, channel_id, charged, claim_pending, holder, held_until)",
		"batch_claims (id, network, state, claim_rows, authorizer_sig, tx, reason, attempts, created_at, updated_at)",
		"batch_claimed_channels (network, channel_id, claim_id, claim_row, claimed_at)",
		"batch_claimer_leases (network, owner, lease_until)",
	}
}

// schemaQueries returns the probe query of each table of schemaTables.
func schemaQueries() []string {
	tables := schemaTables()
	out := make([]string, 0, len(tables))
	for _, t := range tables {
		var table, cols string
		for i := range len(t) {
			if t[i] == ' ' {
				table, cols = t[:i], t[i+2:len(t)-1]
				break
			}
		}
		out = append(out, "SELECT "+cols+" FROM "+table+" WHERE 1 = 0")
	}
	return out
}

// latestMigration is the version of the newest embedded migration of
// dialect.
func latestMigration(dialect string) (int, error) {
	ms, err := migrations(dialect)
	if err != nil {
		return 0, err
	}
	if len(ms) == 0 {
		return 0, nil
	}
	return ms[len(ms)-1].version, nil
}

// checkSchema runs the probes with query (which runs one statement and
// returns its error) and compares the newest recorded migration, read
// with version, to the build's.
func checkSchema(ctx context.Context, dialect string, query func(ctx context.Context, sql string) error,
	version func(ctx context.Context) (int, error)) error {
	for _, q := range schemaQueries() {
		if err := query(ctx, q); err != nil {
			return fmt.Errorf("%w: %s: %v", ErrSchema, q, err)
		}
	}
	want, err := latestMigration(dialect)
	if err != nil {
		return err
	}
	have, err := version(ctx)
	if err != nil {
		return fmt.Errorf("%w: schema_migrations: %v", ErrSchema, err)
	}
	if have < want {
		return fmt.Errorf("%w: migration %d applied, the build needs %d", ErrSchema, have, want)
	}
	return nil
}

// validPeriod checks a [from, to) period.
func validPeriod(from, to time.Time) error {
	if from.IsZero() || to.IsZero() {
		return invalid("period", "from and to are required")
	}
	if !from.Before(to) {
		return invalid("period", "from must be before to")
	}
	return nil
}

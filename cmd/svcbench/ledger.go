package main

import (
	"context"
	"database/sql"
	"flag"
	"fmt"
	"time"

	"github.com/seed1284c1d2/svc/store"
)

// ledgerGen writes a SQLite store whose ledger holds --rows settled
// payments spread evenly over the --days days before --end (three tools,
// one payment in seven a dev-mode one, one in three with a referral code),
// for measuring the ledger's readers on a large ledger (bench/ledger.sh).
func ledgerGen(args []string) error {
	fs := flag.NewFlagSet("ledger-gen", flag.ContinueOnError)
	db := fs.String("db", "", "SQLite file to create (must not exist)")
	rows := fs.Int64("rows", 10_000_000, "settled payments to write")
	days := fs.Int("days", 365, "days the payments are spread over")
	endS := fs.String("end", "2026-11-01", "end of the period (YYYY-MM-DD, UTC, excluded)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	end, err := time.Parse("2006-01-02", *endS)
	if err != nil || *db == "" || *rows < 1 || *days < 1 {
		return fmt.Errorf("ledger-gen: want --db PATH, --rows > 0, --days > 0 and --end YYYY-MM-DD")
	}
	ctx := context.Background()
	st, err := store.Open(ctx, *db) // creates the schema
	if err != nil {
		return err
	}
	if err := st.Close(); err != nil {
		return err
	}
	h, err := sql.Open("sqlite", *db+"?_journal_mode=WAL&_synchronous=OFF")
	if err != nil {
		return err
	}
	defer h.Close()
	start := end.AddDate(0, 0, -*days).UnixNano()
	step := (end.UnixNano() - start) / *rows
	started := time.Now()
	// One statement: a recursive sequence of n, each row derived from n.
	_, err = h.ExecContext(ctx, `WITH RECURSIVE seq(n) AS (SELECT 0 UNION ALL SELECT n + 1 FROM seq WHERE n + 1 < ?)
		INSERT INTO settlements (network, asset, payer, nonce, tool_key, amount, tx, ref_code, settled_at, route, transport)
		SELECT 'eip155:8453', '0x833589fcd6edb6e08f4c7c32d4f71b54bda02913',
			printf('0x%040x', n % 50000), printf('0x%064x', n),
			CASE n % 3 WHEN 0 THEN 'risk-levels' WHEN 1 THEN 'tick-pnl' ELSE 'jwt-decode' END,
			CAST(2500 + (n % 3) * 2500 AS TEXT),
			CASE WHEN n % 7 = 0 THEN printf('local-dev:%064x', n) ELSE printf('0x%064x', n) END,
			CASE WHEN n % 3 = 0 THEN printf('REF%07d', n % 1000) ELSE NULL END,
			? + n * ?, 'POST /api/risk-levels', 'http'
		FROM seq`, *rows, start, step)
	if err != nil {
		return fmt.Errorf("ledger-gen: %w", err)
	}
	fmt.Printf("ledger-gen: %d rows over %d days before %s in %s\n", *rows, *days, *endS, time.Since(started).Round(time.Second))
	return nil
}

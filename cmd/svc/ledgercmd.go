package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/seed1284c1d2/svc/internal/envflag"
	"github.com/seed1284c1d2/svc/ledger"
)

// ledgerCmd prints the settled payments of a period from the store's
// ledger, with totals per tool, per day and per referral code, as CSV or
// JSON. Dev-mode settlements (the local facilitator's: nothing moved on
// chain) are marked and totalled apart.
func ledgerCmd(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) error {
	f := envflag.New("ledger", stderr, getenv, "svc ledger [--from DATE] [--to DATE] [--db DSN] [--format csv|json]")
	db := f.String("db", "SVC_DATABASE_URL", defaultDB, "SQLite file path, or a postgres:// URL")
	from := f.String("from", "", "", "start of the period, included: YYYY-MM-DD (UTC) or RFC 3339 (default: 30 days before --to's day)")
	to := f.String("to", "", "", "end of the period, excluded: YYYY-MM-DD (UTC) or RFC 3339 (default: the end of today, UTC)")
	format := f.String("format", "", "csv", "csv or json")
	if err := f.ParseNoArgs(args); err != nil {
		return err
	}
	fmtName := strings.ToLower(strings.TrimSpace(*format))
	if fmtName != "csv" && fmtName != "json" {
		return envflag.UsageError(fmt.Sprintf("--format %q: want csv or json", *format))
	}
	start, end, err := ledger.ParsePeriod(*from, *to, time.Now())
	if err != nil {
		return envflag.UsageError("--" + err.Error())
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	st, err := openStoreReadOnly(ctx, strings.TrimSpace(*db))
	if err != nil {
		return err
	}
	defer st.Close()
	// Streamed: a period of any size prints in bounded memory.
	return ledger.Write(ctx, st, start, end, ledger.Format(fmtName), stdout)
}

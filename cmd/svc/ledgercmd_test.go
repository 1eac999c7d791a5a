package main

import (
	"bytes"
	"context"
	"encoding/csv"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/seed1284c1d2/svc/club"
	"github.com/seed1284c1d2/svc/store"
	"github.com/seed1284c1d2/svc/x402"
	"github.com/seed1284c1d2/svc/x402/facilitator"
)

// TestLedgerCommand: svc ledger prints the settled payments of the period
// as CSV (dev-mode rows marked, totals per tool, day and code) and refuses
// bad flags with a usage error.
func TestLedgerCommand(t *testing.T) {
	ctx := context.Background()
	db := filepath.Join(t.TempDir(), "svc.db")
	st, err := store.Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 3, 14, 10, 0, 0, 0, time.UTC)
	ref, _ := club.ReferralCode("0x209693Bc6afc0C5328bA36FaF03C514EF312287C")
	for i, s := range []store.Settlement{
		{ToolKey: "risk-levels", Amount: "3400", Transaction: "0x" + strings.Repeat("a", 64), RefCode: ref, Transport: "mcp", Route: "POST /api/risk-levels"},
		{ToolKey: "tick-pnl", Amount: "5000", Transaction: facilitator.LocalTransactionPrefix + "1", Transport: "http", Route: "POST /api/tick-pnl"},
		{ToolKey: "tick-pnl", Amount: "5000", Transaction: "0x" + strings.Repeat("b", 64), Transport: "http"}, // outside the period
	} {
		s.Payer, s.Network, s.Asset = "0x857b06519e91e3a54538791bdbb0e22373e36b66", x402.NetworkBase, "0x833589fcd6edb6e08f4c7c32d4f71b54bda02913"
		s.Nonce = "0x" + strings.Repeat(string(rune('1'+i)), 64)
		s.SettledAt = at.Add(time.Duration(i) * 24 * time.Hour)
		if _, err := st.Append(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	_ = st.Close()

	var out, errOut bytes.Buffer
	if code := run(ctx, []string{"ledger", "--db", db, "--from", "2026-03-14", "--to", "2026-03-16"}, &out, &errOut, envOf(nil)); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	text := out.String()
	recs, err := csv.NewReader(strings.NewReader(text)).ReadAll()
	if err != nil {
		t.Fatalf("csv: %v\n%s", err, out.String())
	}
	kinds := map[string]int{}
	for _, r := range recs[1:] {
		kinds[r[0]]++
	}
	if kinds["payment"] != 2 || kinds["tool"] != 2 || kinds["day"] != 2 || kinds["ref_code"] != 1 || kinds["total"] != 1 {
		t.Fatalf("records %v:\n%s", kinds, out.String())
	}
	for _, want := range []string{"payment,2026-03-14T10:00:00Z,2026-03-14,risk-levels,POST /api/risk-levels,0.003400,0x857b06519E91e3A54538791bDbb0E22373e36b66",
		",false,1,0,0.000000", ",true,0,1,0.005000", "total,,,,,0.003400,,,,,,,,1,1,0.005000", ref} {
		if !strings.Contains(text, want) {
			t.Fatalf("csv lacks %q:\n%s", want, text)
		}
	}
	for _, args := range [][]string{{"--format", "xml"}, {"--from", "yesterday"}, {"--from", "2026-03-16", "--to", "2026-03-14"}, {"extra"}} {
		errOut.Reset()
		if code := run(ctx, append([]string{"ledger", "--db", db}, args...), &out, &errOut, envOf(nil)); code != 2 {
			t.Fatalf("svc ledger %v: exit %d, want 2 (%s)", args, code, errOut.String())
		}
	}
}

// TestReportsRefuseAMissingDatabase: svc ledger, payments and reconcile
// pointed at a database that does not exist (a wrong --db, or the wrong
// directory) say so and exit 2, instead of creating an empty database and
// reporting nothing; they create neither the file nor its folder.
func TestReportsRefuseAMissingDatabase(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "nope")
	db := filepath.Join(dir, "x.db")
	for _, args := range [][]string{
		{"ledger", "--db", db},
		{"payments", "--db", db},
		{"reconcile", "--db", db, "--rpc-url", "http://127.0.0.1:1"},
	} {
		var out, errOut bytes.Buffer
		if code := run(ctx, args, &out, &errOut, envOf(nil)); code != 2 || !strings.Contains(errOut.String(), "no such database") {
			t.Errorf("svc %s: exit %d, want 2 and \"no such database\"; stdout %q, stderr %q", args[0], code, out.String(), errOut.String())
		}
		if out.Len() != 0 {
			t.Errorf("svc %s printed a report of a missing database: %q", args[0], out.String())
		}
		if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("svc %s created %s (%v)", args[0], dir, err)
		}
	}
}

// TestReconcileSkipsDevRows: dev-mode settlements (the local facilitator's,
// nothing moved on chain) are counted apart by svc reconcile, never
// reported as mismatches.
func TestReconcileSkipsDevRows(t *testing.T) {
	ctx := context.Background()
	db := filepath.Join(t.TempDir(), "svc.db")
	st, err := store.Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	at := time.Now().UTC().Add(-time.Hour)
	for i := range 3 {
		s := store.Settlement{ToolKey: "tick-pnl", Amount: "5000", Transaction: facilitator.LocalTransactionPrefix + strconv.Itoa(i), Transport: "http",
			Payer: "0x857b06519e91e3a54538791bdbb0e22373e36b66", Network: x402.NetworkBase, Asset: "0x833589fcd6edb6e08f4c7c32d4f71b54bda02913",
			Nonce: "0x" + strings.Repeat(strconv.Itoa(i+1), 64), SettledAt: at}
		if _, err := st.Append(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	_ = st.Close()
	var out, errOut bytes.Buffer
	// The RPC endpoint is never asked: no row needs the chain.
	if code := run(ctx, []string{"reconcile", "--db", db, "--rpc-url", "http://127.0.0.1:1", "--pay-to", "0x209693Bc6afc0C5328bA36FaF03C514EF312287C"}, &out, &errOut, envOf(nil)); code != 0 {
		t.Fatalf("exit %d: %s%s", code, out.String(), errOut.String())
	}
	if want := "0 settled payments checked against the chain, 0 mismatches; 3 dev-mode payments skipped"; !strings.Contains(out.String(), want) {
		t.Fatalf("output lacks %q: %s", want, out.String())
	}
}

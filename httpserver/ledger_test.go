package httpserver_test

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/seed1284c1d2/svc/httpserver"
	"github.com/seed1284c1d2/svc/store"
	"github.com/seed1284c1d2/svc/x402"
)

// flakyLedger is a store whose ledger refuses appends while down is set,
// counting the refusals.
type flakyLedger struct {
	store.Store
	down    atomic.Bool
	refused atomic.Int64
}

func (f *flakyLedger) Append(ctx context.Context, s store.Settlement) (bool, error) {
	if f.down.Load() {
		f.refused.Add(1)
		return false, errors.New("ledger down")
	}
	return f.Store.Append(ctx, s)
}

// ledgerDownFixture is a fixture (with the ledger spool spool, "" for
// none) whose ledger refuses appends until its flakyLedger's down is
// cleared.
func ledgerDownFixture(t *testing.T, spool string) (*fixture, *flakyLedger) {
	t.Helper()
	fl := &flakyLedger{}
	fl.down.Store(true)
	f := newFixture(t, fixtureOptions{ledgerSpool: spool,
		wrapStore: func(s store.Store) httpserver.Store { fl.Store = s; return fl }})
	return f, fl
}

// metricsText reads /metrics through the handler (also after Shutdown).
func metricsText(f *fixture) string {
	rec := httptest.NewRecorder()
	f.srv.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	return rec.Body.String()
}

// TestLedgerRetryRecordsLater: a settlement whose ledger append fails is
// appended again in the background once the ledger is back, exactly once.
func TestLedgerRetryRecordsLater(t *testing.T) {
	f, fl := ledgerDownFixture(t, "")
	payer := newPayer(t)
	tool := f.tool(t, "tick-pnl")
	resp, body := pay(t, payer, f.request(t, tool, string(tool.ExampleInput)))
	if resp.StatusCode != http.StatusOK || resp.Header.Get(x402.HeaderPaymentResponse) == "" {
		t.Fatalf("status %d %s", resp.StatusCode, body)
	}
	// Still down: the retries fail and the settlement waits.
	deadline := time.Now().Add(10 * time.Second)
	for fl.refused.Load() < 2 {
		if time.Now().After(deadline) {
			t.Fatal("no retry within 10 s")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if m := metricsText(f); !strings.Contains(m, "svc_ledger_retry_pending 1") || !strings.Contains(m, "svc_ledger_append_failures_total 1") {
		t.Fatalf("metrics while down:\n%s", m)
	}
	fl.down.Store(false)
	for {
		ps, err := f.st.PayerStats(context.Background(), payer.Address())
		if err != nil {
			t.Fatal(err)
		}
		if ps.PaidCalls == 1 {
			break
		}
		if ps.PaidCalls > 1 || time.Now().After(deadline) {
			t.Fatalf("ledger holds %d paid calls", ps.PaidCalls)
		}
		time.Sleep(20 * time.Millisecond)
	}
	for !strings.Contains(metricsText(f), "svc_ledger_retry_pending 0") {
		if time.Now().After(deadline) {
			t.Fatalf("metrics after recovery:\n%s", metricsText(f))
		}
		time.Sleep(20 * time.Millisecond)
	}
	if m := metricsText(f); !strings.Contains(m, "svc_ledger_unrecorded_total 0") {
		t.Fatalf("metrics after recovery:\n%s", m)
	}
	if logs := f.logs.String(); !strings.Contains(logs, "ledger: settled payment recorded after a retry") {
		t.Fatalf("logs:\n%s", logs)
	}
}

// TestLedgerRetryDrainsOnShutdown: Shutdown tries the waiting settlements
// once more; one it still cannot record is logged for reconciliation and
// counted, and none is left pending.
func TestLedgerRetryDrainsOnShutdown(t *testing.T) {
	f, _ := ledgerDownFixture(t, "")
	payer := newPayer(t)
	tool := f.tool(t, "risk-levels")
	if resp, body := pay(t, payer, f.request(t, tool, string(tool.ExampleInput))); resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d %s", resp.StatusCode, body)
	}
	f.shutdown(t)
	m := metricsText(f)
	if !strings.Contains(m, "svc_ledger_retry_pending 0") || !strings.Contains(m, "svc_ledger_unrecorded_total 1") {
		t.Fatalf("metrics after Shutdown:\n%s", m)
	}
	logs := f.logs.String()
	if !strings.Contains(logs, "ledger: stopping with a settled payment not recorded") || !strings.Contains(logs, payer.Address()) {
		t.Fatalf("logs:\n%s", logs)
	}
}

// spoolLines returns the non-empty lines of a spool file.
func spoolLines(t *testing.T, path string) []string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for l := range strings.SplitSeq(string(data), "\n") {
		if l != "" {
			lines = append(lines, l)
		}
	}
	return lines
}

// waitFor polls cond every 20 ms for up to 10 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within 10 s: %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// paidCalls returns the payer's settled calls in the ledger.
func paidCalls(t *testing.T, st store.Store, payer string) int64 {
	t.Helper()
	ps, err := st.PayerStats(context.Background(), payer)
	if err != nil {
		t.Fatal(err)
	}
	return ps.PaidCalls
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	data, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestLedgerSpoolSurvivesCrash: a settlement whose ledger append failed is
// in the spool file at once; a server started on the file a crashed one
// left records it, exactly once even when the same file is replayed
// again, and empties the file.
func TestLedgerSpoolSurvivesCrash(t *testing.T) {
	dir := t.TempDir()
	spool := filepath.Join(dir, "spool", "ledger.jsonl")
	f1, _ := ledgerDownFixture(t, spool)
	payer := newPayer(t)
	tool := f1.tool(t, "tick-pnl")
	if resp, body := pay(t, payer, f1.request(t, tool, string(tool.ExampleInput))); resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d %s", resp.StatusCode, body)
	}
	waitFor(t, "the settlement in the spool", func() bool { return len(spoolLines(t, spool)) == 1 })
	if line := spoolLines(t, spool)[0]; !strings.Contains(line, `"tool":"tick-pnl"`) || !strings.Contains(line, payer.Address()) {
		t.Fatalf("spool line %s", line)
	}
	if n := paidCalls(t, f1.st, payer.Address()); n != 0 {
		t.Fatalf("the ledger holds %d calls while down", n)
	}

	// The first server "crashed" here: a second one starts on a copy of
	// the file it left (the first keeps its own, still failing).
	left := filepath.Join(dir, "left.jsonl")
	copyFile(t, spool, left)
	again := filepath.Join(dir, "again.jsonl")
	copyFile(t, spool, again)
	f2 := newFixture(t, fixtureOptions{useStore: f1.st, ledgerSpool: left})
	waitFor(t, "the spooled settlement recorded", func() bool { return paidCalls(t, f1.st, payer.Address()) == 1 })
	waitFor(t, "the spool emptied", func() bool { return len(spoolLines(t, left)) == 0 })
	if logs := f2.logs.String(); !strings.Contains(logs, "recording the settled payments left in the spool") {
		t.Fatalf("logs:\n%s", logs)
	}

	// The same file once more (a crash right after the append, before the
	// rewrite): recorded again is recorded once.
	newFixture(t, fixtureOptions{useStore: f1.st, ledgerSpool: again})
	waitFor(t, "the replayed spool emptied", func() bool { return len(spoolLines(t, again)) == 0 })
	if n := paidCalls(t, f1.st, payer.Address()); n != 1 {
		t.Fatalf("the ledger holds %d calls, want 1", n)
	}
}

// TestLedgerSpoolKeptAtShutdown: what Shutdown cannot record stays in the
// spool (not counted as unrecorded), and the next start records it.
func TestLedgerSpoolKeptAtShutdown(t *testing.T) {
	spool := filepath.Join(t.TempDir(), "ledger.jsonl")
	f, _ := ledgerDownFixture(t, spool)
	payer := newPayer(t)
	tool := f.tool(t, "risk-levels")
	for _, in := range []string{string(tool.ExampleInput), `{"entry":100,"direction":"short","slPct":1,"tpPct":2}`} {
		if resp, body := pay(t, payer, f.request(t, tool, in)); resp.StatusCode != http.StatusOK {
			t.Fatalf("status %d %s", resp.StatusCode, body)
		}
	}
	f.shutdown(t)
	if m := metricsText(f); !strings.Contains(m, "svc_ledger_unrecorded_total 0") || !strings.Contains(m, "svc_ledger_retry_pending 0") {
		t.Fatalf("metrics after Shutdown:\n%s", m)
	}
	if logs := f.logs.String(); !strings.Contains(logs, "stays in the spool and is recorded at the next start") {
		t.Fatalf("logs:\n%s", logs)
	}
	if lines := spoolLines(t, spool); len(lines) != 2 {
		t.Fatalf("spool after Shutdown: %q", lines)
	}
	newFixture(t, fixtureOptions{useStore: f.st, ledgerSpool: spool})
	waitFor(t, "both settlements recorded", func() bool { return paidCalls(t, f.st, payer.Address()) == 2 })
	waitFor(t, "the spool emptied", func() bool { return len(spoolLines(t, spool)) == 0 })
}

// TestLedgerSpoolUnreadable: a spool that cannot be read stops New with
// an error naming it.
func TestLedgerSpoolUnreadable(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "file"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	cat, local := devParts(t)
	_, err := httpserver.New(httpserver.Config{Catalog: cat, Facilitator: local, Store: openTestStore(t), PayTo: testPayTo,
		DevMode: true, LedgerSpool: filepath.Join(dir, "file", "spool.jsonl"), Logger: slog.New(slog.DiscardHandler)})
	if !errors.Is(err, httpserver.ErrLedgerSpool) {
		t.Fatalf("New with a spool under a file: %v", err)
	}
}

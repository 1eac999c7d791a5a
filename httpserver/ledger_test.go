package httpserver_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
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

// metricsText reads /metrics through the handler (also after Shutdown).
func metricsText(f *fixture) string {
	rec := httptest.NewRecorder()
	f.srv.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	return rec.Body.String()
}

// TestLedgerRetryRecordsLater: a settlement whose ledger append fails is
// appended again in the background once the ledger is back, exactly once.
func TestLedgerRetryRecordsLater(t *testing.T) {
	fl := &flakyLedger{}
	fl.down.Store(true)
	f := newFixture(t, fixtureOptions{wrapStore: func(s store.Store) httpserver.Store { fl.Store = s; return fl }})
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
	fl := &flakyLedger{}
	fl.down.Store(true)
	f := newFixture(t, fixtureOptions{wrapStore: func(s store.Store) httpserver.Store { fl.Store = s; return fl }})
	payer := newPayer(t)
	tool := f.tool(t, "risk-levels")
	if resp, body := pay(t, payer, f.request(t, tool, string(tool.ExampleInput))); resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d %s", resp.StatusCode, body)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := f.srv.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	<-f.done
	f.done <- http.ErrServerClosed // for the cleanup
	m := metricsText(f)
	if !strings.Contains(m, "svc_ledger_retry_pending 0") || !strings.Contains(m, "svc_ledger_unrecorded_total 1") {
		t.Fatalf("metrics after Shutdown:\n%s", m)
	}
	logs := f.logs.String()
	if !strings.Contains(logs, "ledger: stopping with a settled payment not recorded") || !strings.Contains(logs, payer.Address()) {
		t.Fatalf("logs:\n%s", logs)
	}
}

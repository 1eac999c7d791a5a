package engine_test

import (
	"context"
	"testing"
	"time"

	"github.com/seed1284c1d2/svc/x402"
	"github.com/seed1284c1d2/svc/x402/engine"
	"github.com/seed1284c1d2/svc/x402/engine/journaltest"
	"github.com/seed1284c1d2/svc/x402/exact"
)

func TestMemoryJournalConformance(t *testing.T) {
	journaltest.Run(t, func(t *testing.T) engine.Journal { return engine.NewMemoryJournal() })
}

// The memory journal's ledger is readable (the suite checks it through
// journaltest.LedgerReader) and callers never share memory with it.
func TestMemoryJournalLedgerAndCopies(t *testing.T) {
	ctx := context.Background()
	j := engine.NewMemoryJournal()
	var _ journaltest.LedgerReader = j
	at := time.Date(2031, 1, 2, 3, 4, 5, 0, time.UTC)
	payer := "0x00000000000000000000000000000000000000aa"
	nonce := "0x" + "ab"
	rec := engine.Reservation{
		Key: exact.NonceKey("eip155:8453", "0xasset", payer, nonce), Network: "eip155:8453", Asset: "0xasset",
		Payer: payer, Nonce: nonce, Amount: "5", Request: engine.Request{Product: "p"}, Owner: "o",
		LeaseUntil: at.Add(time.Minute), KeepUntil: at.Add(time.Hour), Now: at,
	}
	if _, err := j.Reserve(ctx, rec, 1); err != nil {
		t.Fatal(err)
	}
	body := []byte("answer")
	if err := j.Settling(ctx, rec.Key, "o", engine.Settling{Answer: engine.Answer{Status: 200, Body: body}, Payer: payer, Amount: "5"}); err != nil {
		t.Fatal(err)
	}
	body[0] = 'X' // the caller's buffer is not the journal's
	sr := x402.SettleResponse{Success: true, Transaction: "0xt", Extra: map[string]any{"k": "v"}}
	if err := j.Settle(ctx, rec.Key, sr, at); err != nil {
		t.Fatal(err)
	}
	sr.Extra["k"] = "changed"
	got, err := j.Get(ctx, rec.Key)
	if err != nil {
		t.Fatal(err)
	}
	if string(got.Answer.Body) != "answer" || got.Settlement.Extra["k"] != "v" {
		t.Fatalf("the journal shares memory with its caller: %+v", got)
	}
	got.Answer.Body[0] = 'Y'
	got.Settlement.Extra["k"] = "mutated"
	again, _ := j.Get(ctx, rec.Key)
	if string(again.Answer.Body) != "answer" || again.Settlement.Extra["k"] != "v" {
		t.Fatalf("a returned record shares memory with the journal: %+v", again)
	}
	entries := j.Ledger()
	if len(entries) != 1 || entries[0].Transaction != "0xt" || entries[0].Amount != "5" || !entries[0].SettledAt.Equal(at) {
		t.Fatalf("Ledger = %+v, want the one settlement", entries)
	}
	if _, found, err := j.LedgerEntry(ctx, "eip155:8453", "0xASSET", payer, "0xAB"); err != nil || !found {
		t.Fatalf("LedgerEntry with other letter case: found %v, %v", found, err)
	}
}

package store

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/seed1284c1d2/svc/x402"
	"github.com/seed1284c1d2/svc/x402/engine"
	"github.com/seed1284c1d2/svc/x402/exact"
)

// BenchmarkJournalPaidCall measures the journal writes of one paid call
// (Reserve → Settling → Settle, the last with its ledger entry) on SQLite,
// from many concurrent callers (b.RunParallel, 16 goroutines per CPU: paid
// calls wait on the network, so many are in flight at once), with the
// group commit (the default), with it waiting up to 1 ms for more writes,
// and without it (a transaction per write).
//
//	go test -run '^$' -bench BenchmarkJournalPaidCall -benchtime 3s ./store/
func BenchmarkJournalPaidCall(b *testing.B) {
	for _, c := range []struct {
		name string
		opts []Option
	}{
		{"grouped", nil},
		{"grouped-linger-1ms", []Option{withGroupLinger(time.Millisecond)}},
		{"ungrouped", []Option{withoutGroupCommit()}},
	} {
		b.Run(c.name, func(b *testing.B) { benchPaidCall(b, c.opts...) })
	}
}

func benchPaidCall(b *testing.B, opts ...Option) {
	ctx := context.Background()
	st, err := OpenSQLite(ctx, filepath.Join(b.TempDir(), "svc.db"), opts...)
	if err != nil {
		b.Fatalf("OpenSQLite: %v", err)
	}
	defer st.Close()
	s := st.(*sqliteStore)
	now := time.Now().UTC()
	answer := engine.Answer{Status: 200, Header: map[string][]string{"Content-Type": {"application/json"}},
		Body: []byte(`{"levels":[{"price":"2345.10","kind":"support"},{"price":"2361.80","kind":"resistance"}]}`)}
	payload := []byte(`{"x402Version":2,"accepted":{"scheme":"exact","network":"eip155:8453"},"payload":{"signature":"0x` +
		strings.Repeat("ab", 65) + `","authorization":{"from":"0x00000000000000000000000000000000000000aa"}}}`)
	requirements := []byte(`{"scheme":"exact","network":"eip155:8453","amount":"3400","asset":"0x833589fcd6edb6e08f4c7c32d4f71b54bda02913"}`)
	var seq atomic.Int64
	b.SetParallelism(16)
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			n := seq.Add(1)
			payer := fmt.Sprintf("0x%040x", n)
			nonce := fmt.Sprintf("0x%064x", n)
			rec := engine.Record{
				Key: exact.NonceKey("eip155:8453", "0x833589fcd6edb6e08f4c7c32d4f71b54bda02913", payer, nonce), Network: "eip155:8453",
				Asset: "0x833589fcd6edb6e08f4c7c32d4f71b54bda02913", Payer: payer, Nonce: nonce, PayTo: payer, Amount: "3400",
				RequestHash: "sha256:bench", Resource: "POST /api/risk-levels", Product: "risk_levels", Transport: "http",
				RequestID: "bench", X402Version: 2, State: engine.StateReserved, Owner: "bench",
				LeaseUntil: now.Add(time.Minute), KeepUntil: now.Add(time.Hour), CreatedAt: now, UpdatedAt: now,
			}
			if _, err := s.Reserve(ctx, rec, 3); err != nil {
				b.Errorf("Reserve: %v", err)
				return
			}
			if err := s.Settling(ctx, rec.Key, "bench", engine.Settling{Answer: answer, AnswerUntil: now.Add(24 * time.Hour),
				Payload: payload, Requirements: requirements, Payer: payer, Amount: "3400", LeaseUntil: now.Add(time.Minute)}); err != nil {
				b.Errorf("Settling: %v", err)
				return
			}
			if err := s.Settle(ctx, rec.Key, x402.SettleResponse{Success: true, Transaction: nonce, Network: "eip155:8453"}, now); err != nil {
				b.Errorf("Settle: %v", err)
				return
			}
		}
	})
	b.StopTimer()
	if s.group != nil && s.group.batches.Load() > 0 {
		b.ReportMetric(float64(s.group.writes.Load())/float64(s.group.batches.Load()), "writes/commit")
	}
}

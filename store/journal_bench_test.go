package store

import (
	"context"
	"fmt"
	"path/filepath"
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
		Body: []byte(`{"direction":"long","entry":3500,"riskReward":0.8,"slPct":0.05,"stop":3498.25,"stopDistance":1.75,"target":3501.4,"targetDistance":1.4,"tpPct":0.04}`)}
	payload := []byte(benchPayload)
	requirements := []byte(benchRequirements)
	var seq atomic.Int64
	b.SetParallelism(16)
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			n := seq.Add(1)
			payer := fmt.Sprintf("0x%040x", n)
			nonce := fmt.Sprintf("0x%064x", n)
			rec := engine.Reservation{
				Key: exact.NonceKey("eip155:8453", "0x833589fcd6edb6e08f4c7c32d4f71b54bda02913", payer, nonce), Network: "eip155:8453",
				Asset: "0x833589fcd6edb6e08f4c7c32d4f71b54bda02913", Payer: payer, Nonce: nonce, PayTo: payer, Amount: "3400",
				Request: engine.Request{Hash: "sha256:bench", Resource: "POST /api/risk-levels", Product: "risk_levels",
					Transport: "http", RequestID: "bench", X402Version: 2},
				Owner: "bench", LeaseUntil: now.Add(time.Minute), KeepUntil: now.Add(time.Hour), Now: now,
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

// benchRequirements is the shape of a real offer's requirements (~230 B).
const benchRequirements = `{"scheme":"exact","network":"eip155:8453","amount":"5000",` +
	`"asset":"0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913","payTo":"0x209693Bc6afc0C5328bA36FaF03C514EF312287C",` +
	`"maxTimeoutSeconds":300,"extra":{"name":"USD Coin","version":"2"}}`

// benchPayload is the shape of a real payment payload (~2.4 KB): the
// client echoes the offer's resource and bazaar extension, so the row
// overflows SQLite's local payload limit.
const benchPayload = `{"x402Version":2,"resource":{"url":"http://127.0.0.1:8080/api/risk-levels",` +
	`"description":"Computes stop-loss and take-profit prices from an entry price, a direction and distances in percent of the entry.",` +
	`"mimeType":"application/json"},"accepted":` + benchRequirements + `,` +
	`"payload":{"signature":"0xafd3653ebb459badcb06df163e5098c3b8a8dcbffffe2fbce10b2570838037767cf82b1f15ed5b64faad10bd1816362abdf4f8298f71e8f5da4fa31e9daf7c561b",` +
	`"authorization":{"from":"0x7CB7D2FcCFF164A4EF209b9e4caB25Ecc0d19Cc8","to":"0x209693Bc6afc0C5328bA36FaF03C514EF312287C","value":"5000",` +
	`"validAfter":"1795657532","validBefore":"1795661732","nonce":"0x75440e5f82792a03a01f8b9ef653f661b782a59260ea3ae1aefe4b858bee5a7b"}},` +
	`"extensions":{"bazaar":{"info":{"input":{"body":{"direction":"long","entry":3500,"slPct":0.05,"tpPct":0.04},"bodyType":"json","method":"POST","type":"http"},` +
	`"output":{"example":{"direction":"long","entry":3500,"riskReward":0.8,"slPct":0.05,"stop":3498.25,"stopDistance":1.75,"target":3501.4,"targetDistance":1.4,"tpPct":0.04},"type":"json"}},` +
	`"schema":{"$schema":"https://json-schema.org/draft/2020-12/schema","properties":{"input":{"properties":{"body":{"additionalProperties":false,` +
	`"description":"Input of risk_levels, sent as the JSON request body. Unknown members are invalid. Numbers are JSON numbers; a string holding a decimal (\"3500.25\") is accepted too and read exactly.",` +
	`"properties":{"direction":{"description":"Trade direction: long or short.","enum":["long","short"],"type":"string"},` +
	`"entry":{"description":"Entry price, \u003e 0.","exclusiveMinimum":0,"type":"number"},` +
	`"slPct":{"description":"Stop distance in percent of the entry, \u003e 0 (0.05 means 0.05 %).","exclusiveMinimum":0,"type":"number"},` +
	`"tpPct":{"description":"Target distance in percent of the entry, \u003e 0 (0.04 means 0.04 %).","exclusiveMinimum":0,"type":"number"}},` +
	`"required":["entry","direction","slPct","tpPct"],"type":"object"},"bodyType":{"enum":["json"],"type":"string"},"method":{"enum":["POST"],"type":"string"},` +
	`"type":{"const":"http","type":"string"}},"required":["type","method","bodyType","body"],"type":"object"},` +
	`"output":{"properties":{"example":{},"type":{"type":"string"}},"required":["type"],"type":"object"}},"required":["input"],"type":"object"}}}}`

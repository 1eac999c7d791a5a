package httpserver_test

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/seed1284c1d2/svc/httpserver"
	"github.com/seed1284c1d2/svc/store"
	"github.com/seed1284c1d2/svc/x402"
)

// benchHandler builds a dev-mode server handler for in-process benchmarks.
func benchHandler(b *testing.B) http.Handler {
	b.Helper()
	cat, local := devParts(b)
	st, err := store.Open(b.Context(), filepath.Join(b.TempDir(), "svc.db"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = st.Close() })
	srv, err := httpserver.New(httpserver.Config{Catalog: cat, Facilitator: local, Store: st, PayTo: testPayTo, PublicBaseURL: "http://127.0.0.1:8080",
		Logger: slog.New(slog.DiscardHandler), RateLimit: 1e9, RateBurst: 1e9})
	if err != nil {
		b.Fatal(err)
	}
	return srv.Handler()
}

// BenchmarkPaymentRequired measures the 402 answer of a valid unpaid call
// through the whole handler (decode, validate, build the offer), without
// the network.
func BenchmarkPaymentRequired(b *testing.B) {
	h := benchHandler(b)
	const body = `{"entry":3500,"direction":"long","slPct":0.05,"tpPct":0.04}`
	b.ReportAllocs()
	for b.Loop() {
		req := httptest.NewRequest(http.MethodPost, "/api/risk-levels", strings.NewReader(body))
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code != http.StatusPaymentRequired {
			b.Fatalf("status %d", w.Code)
		}
	}
}

// BenchmarkBareHandler is the floor: a handler writing a fixed answer.
func BenchmarkBareHandler(b *testing.B) {
	body := []byte(`{"ok":true}` + "\n")
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(body)
	})
	b.ReportAllocs()
	for b.Loop() {
		req := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(`{"entry":3500}`))
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
	}
}

// BenchmarkPaidCall measures a paid call with local verification through
// the whole handler: decode, verify the signature, reserve, run the tool,
// journal the answer, settle (dev facilitator) and journal the settlement
// with its ledger row (SQLite, group-committed), in parallel. Payments are
// signed before the clock starts, one per call.
func BenchmarkPaidCall(b *testing.B) {
	h := benchHandler(b)
	const body = `{"entry":3500,"direction":"long","slPct":0.05,"tpPct":0.04}`
	req := httptest.NewRequest(http.MethodPost, "/api/risk-levels", strings.NewReader(body))
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	pr, err := x402.DecodePaymentRequired(w.Header().Get(x402.HeaderPaymentRequired))
	if err != nil {
		b.Fatal(err)
	}
	payer := newPayer(b)
	n := b.N
	headers := make([]string, n)
	for i := range headers {
		ep, err := payer.NewPayload(pr.Accepts[0], time.Now(), time.Hour)
		if err != nil {
			b.Fatal(err)
		}
		raw, _ := json.Marshal(ep)
		headers[i], err = x402.EncodeHeader(x402.PaymentPayload{X402Version: 2, Accepted: pr.Accepts[0], Payload: raw})
		if err != nil {
			b.Fatal(err)
		}
	}
	var next atomic.Int64
	b.ReportAllocs()
	b.SetParallelism(8)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			i := next.Add(1) - 1
			req := httptest.NewRequest(http.MethodPost, "/api/risk-levels", strings.NewReader(body))
			req.Header.Set(x402.HeaderPaymentSignature, headers[i])
			w := httptest.NewRecorder()
			h.ServeHTTP(w, req)
			if w.Code != http.StatusOK {
				b.Errorf("status %d: %s", w.Code, w.Body)
				return
			}
		}
	})
}

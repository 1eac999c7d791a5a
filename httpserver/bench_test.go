package httpserver_test

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/seed1284c1d2/svc/httpserver"
	"github.com/seed1284c1d2/svc/store"
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

package httpserver_test

import (
	"bytes"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"path/filepath"
	"testing"

	"github.com/seed1284c1d2/svc/httpserver"
	"github.com/seed1284c1d2/svc/store"
	"github.com/seed1284c1d2/svc/tools"
)

// The benchmarks below measure the handler alone: the request is built
// once and its body rewound, and the answer goes to a writer that keeps
// nothing, so that httptest's own costs (parsing a request, cloning the
// answer's header) do not hide the server's. BenchmarkPaymentRequired and
// BenchmarkBareHandler (bench_test.go) include them.

// benchHandlerLog is benchHandler with the given logger.
func benchHandlerLog(b *testing.B, log *slog.Logger) http.Handler {
	b.Helper()
	cat, local := devParts(b)
	st, err := store.Open(b.Context(), filepath.Join(b.TempDir(), "svc.db"))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = st.Close() })
	srv, err := httpserver.New(httpserver.Config{Catalog: cat, Facilitator: local, Store: st, PayTo: testPayTo, PublicBaseURL: "http://127.0.0.1:8080",
		Logger: log, RateLimit: 1e9, RateBurst: 1e9, UnpaidRate: -1})
	if err != nil {
		b.Fatal(err)
	}
	return srv.Handler()
}

// discardWriter is a ResponseWriter that keeps the status and nothing else.
type discardWriter struct {
	h      http.Header
	status int
	n      int
}

func (d *discardWriter) Header() http.Header { return d.h }
func (d *discardWriter) WriteHeader(code int) {
	if d.status == 0 {
		d.status = code
	}
}
func (d *discardWriter) Write(p []byte) (int, error) {
	if d.status == 0 {
		d.status = http.StatusOK
	}
	d.n += len(p)
	return len(p), nil
}

// benchServe runs h on one POST of body per iteration, the request and
// writer reused.
func benchServe(b *testing.B, h http.Handler, path, body string, want int) {
	b.Helper()
	u, _ := url.Parse("http://127.0.0.1:8080" + path)
	rd := bytes.NewReader([]byte(body))
	req := &http.Request{Method: http.MethodPost, URL: u, Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1, Host: u.Host,
		RemoteAddr: "127.0.0.1:50000", RequestURI: path, ContentLength: int64(len(body))}
	req = req.WithContext(b.Context())
	w := &discardWriter{}
	b.ReportAllocs()
	for b.Loop() {
		rd.Reset([]byte(body))
		req.Body = io.NopCloser(rd)
		req.Header = http.Header{"Content-Type": {"application/json"}, "User-Agent": {"wrk"}}
		w.h = http.Header{}
		w.status = 0
		h.ServeHTTP(w, req)
		if w.status != want {
			b.Fatalf("status %d", w.status)
		}
	}
}

const benchRiskLevelsBody = `{"entry":3500,"direction":"long","slPct":0.05,"tpPct":0.04}`

// BenchmarkPaymentRequiredHandler is the server's own work for one 402:
// request id, routing, body, strict decoding, validation, the recorded
// offer, metrics; access log off (as in bench/run.sh).
func BenchmarkPaymentRequiredHandler(b *testing.B) {
	benchServe(b, benchHandlerLog(b, slog.New(slog.DiscardHandler)), "/api/risk-levels", benchRiskLevelsBody, http.StatusPaymentRequired)
}

// BenchmarkPaymentRequiredHandlerAccessLog is the same with the default
// access log (level info: one line per request, text format).
func BenchmarkPaymentRequiredHandlerAccessLog(b *testing.B) {
	log := slog.New(slog.NewTextHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelInfo}))
	benchServe(b, benchHandlerLog(b, log), "/api/risk-levels", benchRiskLevelsBody, http.StatusPaymentRequired)
}

// BenchmarkInvalidInputHandler is a 400 (a missing member): the slow path
// of the strict decoder, with its detailed errors.
func BenchmarkInvalidInputHandler(b *testing.B) {
	benchServe(b, benchHandlerLog(b, slog.New(slog.DiscardHandler)), "/api/risk-levels",
		`{"entry":3500,"direction":"long","slPct":0.05}`, http.StatusBadRequest)
}

// BenchmarkBareHandlerOnly is the floor of BenchmarkPaymentRequiredHandler:
// a handler reading the body and writing a fixed answer.
func BenchmarkBareHandlerOnly(b *testing.B) {
	body := []byte(`{"ok":true}` + "\n")
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(body)
	})
	benchServe(b, h, "/", benchRiskLevelsBody, http.StatusOK)
}

// BenchmarkDecodeOnly is tools.Tool.Decode of the risk_levels body alone.
func BenchmarkDecodeOnly(b *testing.B) {
	cat, err := tools.New(tools.Options{})
	if err != nil {
		b.Fatal(err)
	}
	tl, _ := cat.ByKey("risk-levels")
	u, _ := url.Parse("http://127.0.0.1:8080" + tl.Path)
	rd := bytes.NewReader([]byte(benchRiskLevelsBody))
	req := &http.Request{Method: http.MethodPost, URL: u, Header: http.Header{"Content-Type": {"application/json"}},
		ContentLength: int64(len(benchRiskLevelsBody))}
	b.ReportAllocs()
	for b.Loop() {
		rd.Reset([]byte(benchRiskLevelsBody))
		req.Body = io.NopCloser(rd)
		if _, err := tl.Decode(b.Context(), req); err != nil {
			b.Fatal(err)
		}
	}
}

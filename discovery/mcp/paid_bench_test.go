package mcp_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/seed1284c1d2/svc/x402"
	x402mcp "github.com/seed1284c1d2/svc/x402/mcp"
)

// BenchmarkPaidMCPvsHTTP measures paid calls of risk_levels with local
// verification through the whole server handler, over MCP (tools/call on
// 2026-07-28, the payment object in _meta) and over HTTP (POST with
// PAYMENT-SIGNATURE), in the same run on the same engine and journal:
// decode, verify the signature, reserve, run, journal the answer, settle
// (local facilitator) and journal the settlement. The journal is the store
// (SQLite, or PostgreSQL with SVC_TEST_DATABASE_URL; with its ledger row)
// or, to show the transports' own cost, the in-memory one. Payments are
// signed before the clock starts, one per call; calls run in parallel.
// The MCP rate should be at least 0.8 of the HTTP rate. "memory-sdk"
// leaves the paid calls to the SDK's stateless handler (no direct
// answers), the measure of what the direct answers save.
func BenchmarkPaidMCPvsHTTP(b *testing.B) {
	for _, journal := range []string{"store", "memory", "memory-sdk"} {
		b.Run(journal, func(b *testing.B) {
			benchPaid(b, newPaidEnv(b, paidOptions{memory: journal != "store", sdkOnly: journal == "memory-sdk"}))
		})
	}
}

// benchPaid runs the mcp and http sub-benchmarks on e.
func benchPaid(b *testing.B, e *paidEnv) {
	const body = `{"entry":3500,"direction":"long","slPct":0.05,"tpPct":0.04}`
	var args map[string]any
	if err := json.Unmarshal([]byte(body), &args); err != nil {
		b.Fatal(err)
	}

	b.Run("mcp", func(b *testing.B) {
		pr := offerOf(b, e.callTool(b, modern, "risk_levels", args, nil))
		bodies := make([]string, b.N)
		for i := range bodies {
			meta := map[string]any{
				x402mcp.MetaPayment:                          asObject(b, e.signFor(b, pr.Accepts[0])),
				"io.modelcontextprotocol/protocolVersion":    "2026-07-28",
				"io.modelcontextprotocol/clientCapabilities": map[string]any{},
				"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "bench", "version": "1.0.0"},
			}
			bodies[i] = string(mustJSON(b, map[string]any{"jsonrpc": "2.0", "id": i + 1, "method": "tools/call",
				"params": map[string]any{"name": "risk_levels", "arguments": args, "_meta": meta}}))
		}
		headers := modernHeaders("tools/call", "risk_levels")
		headers["Content-Type"] = "application/json"
		headers["Accept"] = "application/json, text/event-stream"
		run(b, func(i int) *http.Request {
			req := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(bodies[i]))
			for k, v := range headers {
				req.Header.Set(k, v)
			}
			return req
		}, func(w *httptest.ResponseRecorder) bool {
			return w.Code == http.StatusOK && strings.Contains(w.Body.String(), `"x402/payment-response":{"success":true`)
		}, e)
	})

	b.Run("http", func(b *testing.B) {
		res := httptest.NewRecorder()
		e.handler.ServeHTTP(res, httptest.NewRequest(http.MethodPost, "/api/risk-levels", strings.NewReader(body)))
		pr, err := x402.DecodePaymentRequired(res.Header().Get(x402.HeaderPaymentRequired))
		if err != nil {
			b.Fatal(err)
		}
		headers := make([]string, b.N)
		for i := range headers {
			if headers[i], err = x402.EncodeHeader(e.signFor(b, pr.Accepts[0])); err != nil {
				b.Fatal(err)
			}
		}
		run(b, func(i int) *http.Request {
			req := httptest.NewRequest(http.MethodPost, "/api/risk-levels", strings.NewReader(body))
			req.Header.Set(x402.HeaderPaymentSignature, headers[i])
			return req
		}, func(w *httptest.ResponseRecorder) bool {
			return w.Code == http.StatusOK && w.Header().Get(x402.HeaderPaymentResponse) != ""
		}, e)
	})
}

// signFor signs a payment of req valid for an hour.
func (e *paidEnv) signFor(b *testing.B, req x402.PaymentRequirements) x402.PaymentPayload {
	b.Helper()
	ep, err := e.signer.NewPayload(req, time.Now(), time.Hour)
	if err != nil {
		b.Fatal(err)
	}
	return x402.PaymentPayload{X402Version: x402.Version, Accepted: req, Payload: mustJSON(b, ep)}
}

// run sends b.N requests through the handler, 8 goroutines per CPU,
// failing on an answer that is not a paid one.
func run(b *testing.B, newReq func(i int) *http.Request, paid func(*httptest.ResponseRecorder) bool, e *paidEnv) {
	var next atomic.Int64
	b.ReportAllocs()
	b.SetParallelism(8)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			i := int(next.Add(1) - 1)
			w := httptest.NewRecorder()
			e.handler.ServeHTTP(w, newReq(i))
			if !paid(w) {
				b.Errorf("not paid: %d %s", w.Code, w.Body)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "calls/s")
}

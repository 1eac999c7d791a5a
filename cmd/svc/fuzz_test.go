package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// FuzzServe sends arbitrary requests (method, path, query, body, payment
// header) through the whole dev-mode server in process: every paid and
// free route, MCP and A2A included. Whatever the request: no panic, no
// 5xx, no hang (10 s), and an error answer other than a 402 outside the
// JSON-RPC endpoints (/mcp, /a2a) is problem+json.
func FuzzServe(f *testing.F) {
	dir := f.TempDir()
	c, err := parseServe([]string{"--db", filepath.Join(dir, "svc.db"), "--rate", "-1"}, io.Discard, envOf(nil))
	if err != nil {
		f.Fatal(err)
	}
	a, err := assemble(context.Background(), c, slog.New(slog.DiscardHandler), "127.0.0.1:8080")
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = a.srv.Shutdown(ctx)
		_ = a.st.Close()
	})
	h := a.srv.Handler()
	for _, t := range a.catalog.All() {
		f.Add(t.Method == http.MethodGet, t.Path, "", string(t.ExampleInput), "")
		f.Add(t.Method == http.MethodGet, t.Path, "count=abc&timeframe=H1", "", "eyJ4NDAyVmVyc2lvbiI6Mn0=")
	}
	for _, p := range []string{"/api/find", "/api/route", "/api/try", "/api/catalog", "/openapi.json", "/skill.md", "/mcp", "/a2a",
		"/.well-known/x402", "/.well-known/agent-card.json", "/api/club", "/health", "/metrics", "/nope", "//a/../b", "/api/distribution/stats"} {
		f.Add(true, p, "q=stop+loss&need=gold+price&tool=risk-levels", "", "")
		f.Add(false, p, "", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, "")
	}
	f.Fuzz(func(t *testing.T, get bool, path, query, body, payment string) {
		if !strings.HasPrefix(path, "/") {
			path = "/" + path
		}
		method := http.MethodPost
		if get {
			method = http.MethodGet
		}
		req := httptest.NewRequest(method, "/", strings.NewReader(body))
		req.URL.Path, req.URL.RawPath, req.URL.RawQuery = path, "", query
		req.RequestURI = req.URL.RequestURI()
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if payment != "" {
			req.Header.Set("PAYMENT-SIGNATURE", payment)
		}
		wd := time.AfterFunc(10*time.Second, func() { panic(fmt.Sprintf("slow request %s %q ? %q body %q", method, path, query, body)) })
		defer wd.Stop()
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code >= 500 {
			t.Fatalf("%s %q ? %q body %q payment %q: %d %s", method, path, query, body, payment, rec.Code, rec.Body)
		}
		// 402 carries the x402 body; the JSON-RPC endpoints answer in JSON-RPC.
		if rec.Code >= 400 && rec.Code != http.StatusPaymentRequired && path != "/mcp" && path != "/a2a" {
			if ct := rec.Header().Get("Content-Type"); ct != "application/problem+json" {
				t.Fatalf("%s %q ? %q: %d with Content-Type %q: %s", method, path, query, rec.Code, ct, rec.Body)
			}
		}
	})
}

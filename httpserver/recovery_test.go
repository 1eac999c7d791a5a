package httpserver_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/seed1284c1d2/svc/httpserver"
	"github.com/seed1284c1d2/svc/internal/anviltest"
	"github.com/seed1284c1d2/svc/tools"
	"github.com/seed1284c1d2/svc/x402"
	"github.com/seed1284c1d2/svc/x402/engine"
	exactserver "github.com/seed1284c1d2/svc/x402/exact/server"
	"github.com/seed1284c1d2/svc/x402/facilitator"
	"github.com/seed1284c1d2/svc/x402/facilitator/onchain"
)

// TestRecoveryBackingReported: /health and /readyz say what the recovery
// of an interrupted settlement relies on, without making the server
// unready: the local facilitator's records in dev mode; the facilitator
// deduplicating for a facilitator reached over HTTP alone; the chain when
// the engine is given a reader of it (onchain.StatusReader).
func TestRecoveryBackingReported(t *testing.T) {
	dev := newFixture(t, fixtureOptions{})
	if code, rd := readyz(t, dev.url); code != http.StatusOK || rd.Recovery.Backing != httpserver.RecoveryLocal {
		t.Fatalf("dev mode /readyz %d %+v", code, rd)
	}

	local, err := facilitator.NewLocal(facilitator.LocalConfig{Networks: []string{x402.NetworkBase}, PayTo: testPayTo})
	if err != nil {
		t.Fatal(err)
	}
	remote := httptest.NewServer(facilitator.Handler(local))
	t.Cleanup(remote.Close)
	fac, err := facilitator.NewHTTP(facilitator.HTTPConfig{URL: remote.URL})
	if err != nil {
		t.Fatal(err)
	}
	base := serveRemote(t, fac, nil)
	for _, path := range []string{"/readyz", "/health"} {
		var got struct {
			Status   string                    `json:"status"`
			Recovery httpserver.RecoveryHealth `json:"recovery"`
		}
		resp, body := do(t, mustGet(t, base+path))
		if err := json.Unmarshal(body, &got); err != nil || resp.StatusCode != http.StatusOK ||
			got.Recovery.Backing != httpserver.RecoveryDeduplication || got.Recovery.Note == "" {
			t.Fatalf("%s over HTTP alone: %d %s", path, resp.StatusCode, body)
		}
	}

	chain := anviltest.Start(t, anviltest.Options{}) // skips under -short
	reader, err := onchain.NewStatusReader(context.Background(), onchain.StatusConfig{RPCURL: chain.URL, Network: x402.NetworkBase})
	if err != nil {
		t.Fatal(err)
	}
	base = serveRemote(t, fac, reader)
	var h httpserver.Health
	resp, body := do(t, mustGet(t, base+"/health"))
	if err := json.Unmarshal(body, &h); err != nil || resp.StatusCode != http.StatusOK || h.Recovery.Backing != httpserver.RecoveryChain {
		t.Fatalf("/health with a chain reader: %d %s", resp.StatusCode, body)
	}
	if code, rd := readyz(t, base); code != http.StatusOK || rd.Recovery.Backing != httpserver.RecoveryChain {
		t.Fatalf("/readyz with a chain reader: %d %+v", code, rd)
	}
}

// serveRemote serves the tools in production mode through fac, with an
// engine whose status query is status (nil: none), and returns the URL.
func serveRemote(t *testing.T, fac x402.Facilitator, status x402.StatusChecker) string {
	t.Helper()
	cat, err := tools.New(tools.Options{})
	if err != nil {
		t.Fatal(err)
	}
	st := openTestStore(t)
	log := slog.New(slog.DiscardHandler)
	scheme, err := exactserver.New(exactserver.Config{Facilitator: fac, Status: status})
	if err != nil {
		t.Fatal(err)
	}
	cfg := engine.Config{Schemes: []x402.ServerScheme{scheme}, Journal: st, Logger: log}
	eng, err := engine.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv, err := httpserver.New(httpserver.Config{Catalog: cat, Facilitator: fac, Store: st, Engine: eng, PayTo: testPayTo,
		Terminal: simulated(t), Addr: ln.Addr().String(), UnpaidRate: -1, Logger: log, Version: "test"})
	if err != nil {
		_ = ln.Close()
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		if err := <-done; err != nil && !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("Serve: %v", err)
		}
		eng.Close()
	})
	return "http://" + ln.Addr().String()
}

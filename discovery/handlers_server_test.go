package discovery_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/seed1284c1d2/svc/discovery"
	"github.com/seed1284c1d2/svc/discovery/routedoc"
	"github.com/seed1284c1d2/svc/discovery/stats"
	"github.com/seed1284c1d2/svc/httpserver"
	"github.com/seed1284c1d2/svc/store"
	"github.com/seed1284c1d2/svc/tools"
	"github.com/seed1284c1d2/svc/wire"
	"github.com/seed1284c1d2/svc/x402"
	"github.com/seed1284c1d2/svc/x402/facilitator"
	"github.com/seed1284c1d2/svc/xau"
)

const serverTestPayTo = "0x209693Bc6afc0C5328bA36FaF03C514EF312287C"

// serverFixture is the reference server with the discovery routes mounted
// (as cmd/svc wires it), on a real 127.0.0.1 listener, with the stats
// middleware around it.
type serverFixture struct {
	base     string
	disc     *discovery.Service
	mounted  []string // "METHOD /path" of every route the server mounts
	builtins []string
}

func newServerFixture(t *testing.T) *serverFixture {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + ln.Addr().String()
	cat, err := tools.New(tools.Options{BaseURL: base})
	if err != nil {
		t.Fatal(err)
	}
	local, err := facilitator.NewLocal(facilitator.LocalConfig{Networks: []string{x402.NetworkBase}, PayTo: serverTestPayTo})
	if err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(context.Background(), filepath.Join(t.TempDir(), "svc.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	sim, err := xau.NewSimulated(xau.SimConfig{Seed: 7, Now: func() time.Time { return time.Date(2025, 6, 4, 13, 45, 0, 0, time.UTC) }})
	if err != nil {
		t.Fatal(err)
	}
	// httpserver's own free routes, declared to discovery; /mcp, /a2a and
	// the club are not mounted on this server.
	builtins := []string{"GET /health", "GET /metrics", "GET /livez", "GET /readyz"}
	var ext []routedoc.Route
	for _, d := range httpserver.RouteDocs(true) {
		if slices.Contains(builtins, d.Method+" "+d.Path) {
			ext = append(ext, d)
		}
	}
	disc, err := discovery.New(discovery.Config{Catalog: cat, BaseURL: base, PayTo: serverTestPayTo, DevMode: true, FreeRoutes: ext})
	if err != nil {
		t.Fatal(err)
	}
	var routes []httpserver.Route
	var mounted []string
	for _, r := range disc.Routes() {
		routes = append(routes, httpserver.Route(r))
		mounted = append(mounted, r.Pattern)
	}
	for _, tl := range cat.All() {
		mounted = append(mounted, tl.Method+" "+tl.Path)
	}
	mounted = append(mounted, builtins...)
	srv, err := httpserver.New(httpserver.Config{
		PublicBaseURL: base, Catalog: cat, Terminal: sim, Facilitator: local, Store: st, PayTo: serverTestPayTo,
		DevMode: true, RateLimit: -1, Routes: routes, Version: "test",
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{Handler: disc.Stats().Middleware(srv.Handler()), ReadHeaderTimeout: 10 * time.Second}
	done := make(chan error, 1)
	go func() { done <- hs.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = hs.Shutdown(ctx)
		if err := <-done; err != nil && !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("serve: %v", err)
		}
	})
	return &serverFixture{base: base, disc: disc, mounted: mounted, builtins: builtins}
}

func (f *serverFixture) send(t *testing.T, method, path, body string) (*http.Response, []byte) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, f.base+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, b
}

func TestServerServesExactlyTheDocumentedRoutes(t *testing.T) {
	f := newServerFixture(t)
	resp, body := f.send(t, "GET", "/openapi.json", "")
	if resp.StatusCode != 200 {
		t.Fatalf("openapi.json through httpserver: %d", resp.StatusCode)
	}
	var doc struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(body, &doc); err != nil {
		t.Fatal(err)
	}
	var documented []string
	for path, ops := range doc.Paths {
		for method := range ops {
			documented = append(documented, strings.ToUpper(method)+" "+path)
		}
	}
	slices.Sort(documented)
	var mounted []string
	for _, m := range f.mounted {
		mounted = append(mounted, strings.Replace(m, "/{$}", "/", 1)) // the root alone is path "/"
	}
	slices.Sort(mounted)
	if !slices.Equal(documented, mounted) {
		t.Errorf("documented and mounted routes differ:\ndocumented %v\nmounted    %v", documented, mounted)
	}
	// Every documented operation is really served: the router answers
	// neither 404 nor 405 (a handler answers, whatever its status).
	for _, op := range documented {
		method, path, _ := strings.Cut(op, " ")
		body := ""
		if method == "POST" {
			body = "{}"
		}
		resp, b := f.send(t, method, path, body)
		var p struct {
			Code string `json:"code"`
		}
		_ = json.Unmarshal(b, &p)
		if p.Code == "not_found" || p.Code == "method_not_allowed" || resp.StatusCode == http.StatusMethodNotAllowed {
			t.Errorf("%s: not served (%d %s)", op, resp.StatusCode, p.Code)
		}
		if resp.StatusCode >= 500 {
			t.Errorf("%s: %d %s", op, resp.StatusCode, b)
		}
	}
	// An undocumented path is not served.
	resp, _ = f.send(t, "GET", "/api/nothing-here", "")
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("undocumented path: %d", resp.StatusCode)
	}
}

func TestServerMountsDiscoveryCatalog(t *testing.T) {
	f := newServerFixture(t)
	// The discovery catalog replaces httpserver's built-in listing: only it
	// knows category.
	resp, body := f.send(t, "GET", "/api/catalog?category=gold", "")
	var page discovery.CatalogPage
	if err := json.Unmarshal(body, &page); err != nil || resp.StatusCode != 200 {
		t.Fatalf("%d %v", resp.StatusCode, err)
	}
	if page.Total != 3 {
		t.Errorf("category filter not applied: total %d", page.Total)
	}
	// Invalid input on a free route is httpserver-shaped problem+json.
	resp, body = f.send(t, "POST", "/api/route", `{"query":"x","extra":1}`)
	var p struct {
		Type, Code, RequestID string
		Errors                []struct{ Field, Rule string }
	}
	if err := json.Unmarshal(body, &p); err != nil || resp.StatusCode != 400 || resp.Header.Get("Content-Type") != "application/problem+json" {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	if p.Type != wire.ProblemTypePrefix+httpserver.CodeInvalidInput || p.Code != httpserver.CodeInvalidInput || p.RequestID == "" ||
		len(p.Errors) != 1 || p.Errors[0].Field != "extra" || p.Errors[0].Rule != "unknown_field" {
		t.Errorf("problem %+v", p)
	}
	if p.RequestID != resp.Header.Get(wire.HeaderRequestID) {
		t.Errorf("request id %q vs header %q", p.RequestID, resp.Header.Get(wire.HeaderRequestID))
	}
}

func TestServerStatsCountPaymentsAndRoutes(t *testing.T) {
	f := newServerFixture(t)
	// A valid unpaid call: 402. An invalid one: 400 and no 402.
	resp, _ := f.send(t, "POST", "/api/risk-levels?src=partner", `{"entry":3500,"direction":"long","slPct":0.05,"tpPct":0.04}`)
	if resp.StatusCode != http.StatusPaymentRequired {
		t.Fatalf("unpaid call: %d", resp.StatusCode)
	}
	resp, _ = f.send(t, "POST", "/api/risk-levels", `{"entry":-1}`)
	if resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("invalid call: %d", resp.StatusCode)
	}
	f.send(t, "GET", "/api/find?q=gold&src=partner", "")
	f.send(t, "GET", "/nope", "")
	_, body := f.send(t, "GET", "/api/amplifier/stats", "")
	var snap stats.Snapshot
	if err := json.Unmarshal(body, &snap); err != nil {
		t.Fatal(err)
	}
	count := func(cs []stats.Count, name string) int64 {
		for _, c := range cs {
			if c.Name == name {
				return c.Count
			}
		}
		return 0
	}
	if snap.PaymentRequired != 1 || count(snap.Routes, "/api/risk-levels") != 2 || count(snap.Routes, "/api/find") != 1 ||
		count(snap.Routes, "unmatched") != 1 || count(snap.Sources, "partner") != 2 {
		t.Errorf("stats: 402 %d routes %v sources %v", snap.PaymentRequired, snap.Routes, snap.Sources)
	}
}

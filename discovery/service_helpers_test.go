package discovery

import (
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"

	"github.com/seed1284c1d2/svc/club"
	"github.com/seed1284c1d2/svc/discovery/routedoc"
	"github.com/seed1284c1d2/svc/httpserver"
	"github.com/seed1284c1d2/svc/tools"
	"github.com/seed1284c1d2/svc/wire"
)

// discTestPayTo is a valid checksummed receiving wallet for tests.
const discTestPayTo = "0x209693Bc6afc0C5328bA36FaF03C514EF312287C"

// discTestBase is the base URL of services built without a server.
const discTestBase = "https://svc.example.com"

// discExternalRoutes are the free routes the other components of the
// reference server describe: httpserver's, the MCP and A2A endpoints' and
// the club's. The MCP and A2A packages import this one, so their routes
// are given here by method, path, operation id and tag alone.
func discExternalRoutes() []routedoc.Route {
	return slices.Concat(httpserver.RouteDocs(true), []routedoc.Route{
		{Method: "POST", Path: wire.PathMCP, OperationID: "mcp", Tag: routedoc.TagProtocols},
		{Method: "POST", Path: wire.PathA2A, OperationID: "a2a", Tag: routedoc.TagProtocols},
	}, club.RouteDocs())
}

// discNewService builds a Service on a real catalog with the external
// routes of discExternalRoutes; mod adjusts the Config.
func discNewService(t testing.TB, base string, mod func(*Config)) *Service {
	t.Helper()
	cat, err := tools.New(tools.Options{BaseURL: base})
	if err != nil {
		t.Fatalf("tools.New: %v", err)
	}
	cfg := Config{Catalog: cat, BaseURL: base, PayTo: discTestPayTo, DevMode: true, FreeRoutes: discExternalRoutes()}
	if mod != nil {
		mod(&cfg)
	}
	s, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return s
}

// discServe starts a real HTTP server on 127.0.0.1 serving the Service
// built for its address; h wraps the service's handler when not nil.
func discServe(t testing.TB, mod func(*Config), wrap func(*Service) http.Handler) (*Service, string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	base := "http://" + ln.Addr().String()
	s := discNewService(t, base, mod)
	var h http.Handler = s.Handler()
	if wrap != nil {
		h = wrap(s)
	}
	srv := httptest.NewUnstartedServer(h)
	srv.Listener.Close()
	srv.Listener = ln
	srv.Start()
	t.Cleanup(srv.Close)
	return s, base
}

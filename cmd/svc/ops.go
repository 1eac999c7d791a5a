package main

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/seed1284c1d2/svc/club"
	"github.com/seed1284c1d2/svc/discovery/a2a"
	"github.com/seed1284c1d2/svc/discovery/mcp"
	"github.com/seed1284c1d2/svc/discovery/routedoc"
	"github.com/seed1284c1d2/svc/httpserver"
	"github.com/seed1284c1d2/svc/internal/envflag"
)

// publicOpsRoutes are the routes of other components the public
// documents describe, as each component describes them: the server's
// (/metrics only when the admin listener does not serve it instead), the
// MCP and A2A endpoints and the club.
func publicOpsRoutes(c *serveConfig) []routedoc.Route {
	return slices.Concat(httpserver.RouteDocs(c.adminAddr == ""), []routedoc.Route{mcp.RouteDoc(), a2a.RouteDoc()}, club.RouteDocs())
}

// defaultAdminTokenEnv holds the admin listener's token when
// --admin-token-env is not given.
const defaultAdminTokenEnv = "SVC_ADMIN_TOKEN"

// defaultBridgeTokenEnv holds the MT5 bridge's token when
// --bridge-token-env is not given.
const defaultBridgeTokenEnv = "SVC_MT5_BRIDGE_TOKEN"

// minTokenLen is the least length of a token svc requires of clients.
const minTokenLen = 16

// readAdminToken sets c.adminToken from the variable named by name (or
// $SVC_ADMIN_TOKEN when name is empty and it is set), recorded as a secret.
func (c *serveConfig) readAdminToken(name string, getenv func(string) string) error {
	if name == "" {
		if strings.TrimSpace(getenv(defaultAdminTokenEnv)) == "" {
			return nil
		}
		name = defaultAdminTokenEnv
	}
	if !envNameRE.MatchString(name) {
		return envflag.UsageError("--admin-token-env takes the name of an environment variable (letters, digits and _), not the token itself (the value given is not repeated here)")
	}
	c.adminToken = strings.TrimSpace(getenv(name))
	c.secrets.Add(c.adminToken)
	switch {
	case len(c.adminToken) < minTokenLen:
		return envflag.UsageError(fmt.Sprintf("the admin listener's token in %s must be at least %d characters",
			tokenVarWhere("--admin-token-env", defaultAdminTokenEnv, name), minTokenLen))
	case c.adminAddr == "":
		return envflag.UsageError("an admin token protects the admin listener: set --admin-addr too (without it /metrics is on the public port, unprotected)")
	}
	return nil
}

// tokenAuth lets through the requests that carry token as a bearer token
// or, with basic, as the password of HTTP Basic authentication (what a
// browser sends, for the dashboard); others get 401 with a challenge for
// realm. Tokens are compared in constant time.
func tokenAuth(next http.Handler, token, realm string, basic bool) http.Handler {
	want := []byte(token)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok && basic {
			_, got, ok = r.BasicAuth()
		}
		if ok && subtle.ConstantTimeCompare([]byte(strings.TrimSpace(got)), want) == 1 {
			next.ServeHTTP(w, r)
			return
		}
		scheme, how := "Bearer", "Authorization: Bearer …"
		if basic {
			scheme, how = "Basic", "Authorization: Bearer …, or the token as the password of Basic authentication"
		}
		w.Header().Set("WWW-Authenticate", scheme+` realm="`+realm+`"`)
		writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "a valid token is required (" + how + ")"})
	})
}

// writeJSON writes v as a JSON answer that is not cached.
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// adminServer serves the operator's handler (metrics, dashboard, pprof,
// probes) on its own listener.
type adminServer struct {
	srv  *http.Server
	ln   net.Listener
	errc chan error
}

// startAdmin listens on addr and serves the admin handler of srv; nil when
// addr is empty.
func startAdmin(addr, token string, srv *httpserver.Server, log *slog.Logger) (*adminServer, error) {
	if addr == "" {
		return nil, nil
	}
	h := srv.AdminHandler()
	if token != "" {
		h = tokenAuth(h, token, "svc admin", true)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("admin listener on %s: %w", addr, err)
	}
	a := &adminServer{ln: ln, errc: make(chan error, 1), srv: &http.Server{
		Handler:           h,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}}
	if ip, ok := netip.AddrFromSlice(tcpIP(ln.Addr())); token == "" && (!ok || !ip.Unmap().IsLoopback()) {
		log.Warn("the admin listener is reachable beyond this host: it serves pprof, metrics and the revenue dashboard without authentication; bind it to 127.0.0.1, set --admin-token-env, or protect it in front", "addr", ln.Addr().String())
	}
	go func() { a.errc <- a.srv.Serve(ln) }()
	return a, nil
}

// tcpIP is the IP of a TCP listener's address (nil for another kind).
func tcpIP(a net.Addr) net.IP {
	if t, ok := a.(*net.TCPAddr); ok {
		return t.IP
	}
	return nil
}

// Addr is the bound address.
func (a *adminServer) Addr() string { return a.ln.Addr().String() }

// stop closes the admin listener; profiles in progress are cut.
func (a *adminServer) stop(ctx context.Context) {
	if a == nil {
		return
	}
	if err := a.srv.Shutdown(ctx); err != nil {
		_ = a.srv.Close()
	}
	if err := <-a.errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		slog.Default().Debug("svc: admin listener", "error", err)
	}
}

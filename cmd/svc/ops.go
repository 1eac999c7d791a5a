package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"time"

	"github.com/seed1284c1d2/svc/discovery"
	"github.com/seed1284c1d2/svc/httpserver"
)

// statsTallies feeds discovery's aggregate stats from the server's
// metrics: the same requests, 402s and settlements, counted once.
func statsTallies(srv *httpserver.Server) func() []discovery.RouteTally {
	return func() []discovery.RouteTally {
		counts := srv.Counts()
		out := make([]discovery.RouteTally, len(counts))
		for i, c := range counts {
			out[i] = discovery.RouteTally{Route: c.Route, Requests: c.Requests, ByClass: c.ByClass,
				PaymentRequired: c.PaymentRequired, Settled: c.Settled}
		}
		return out
	}
}

// publicOpsRoutes are the routes of other components the public
// documents describe: all of them, but /metrics when the admin listener
// serves it instead.
func publicOpsRoutes(c *serveConfig) []discovery.RouteDoc {
	all := discovery.DefaultExternalRoutes()
	if c.adminAddr == "" {
		return all
	}
	out := all[:0]
	for _, d := range all {
		if d.Path != "/metrics" {
			out = append(out, d)
		}
	}
	return out
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
func startAdmin(addr string, srv *httpserver.Server, log *slog.Logger) (*adminServer, error) {
	if addr == "" {
		return nil, nil
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("admin listener on %s: %w", addr, err)
	}
	a := &adminServer{ln: ln, errc: make(chan error, 1), srv: &http.Server{
		Handler:           srv.AdminHandler(),
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}}
	if ip, ok := netip.AddrFromSlice(tcpIP(ln.Addr())); !ok || !ip.Unmap().IsLoopback() {
		log.Warn("the admin listener is reachable beyond this host: it serves pprof, metrics and the revenue dashboard without authentication; bind it to 127.0.0.1 or protect it in front", "addr", ln.Addr().String())
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

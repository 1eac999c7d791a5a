package main

import (
	"fmt"
	"log/slog"

	"github.com/seed1284c1d2/svc/club"
	"github.com/seed1284c1d2/svc/discovery"
	"github.com/seed1284c1d2/svc/discovery/a2a"
	"github.com/seed1284c1d2/svc/discovery/mcp"
	"github.com/seed1284c1d2/svc/httpserver"
	"github.com/seed1284c1d2/svc/store"
	"github.com/seed1284c1d2/svc/tools"
)

// freeRoutes assembles the free surfaces mounted next to the paid routes:
// discovery (finder, router, catalog, try, documents, agent card, stats),
// MCP at /mcp, A2A at /a2a and the membership club. It returns the
// discovery service too, whose stats the server feeds.
func freeRoutes(c *serveConfig, catalog *tools.Catalog, st store.Store, base string, log *slog.Logger) ([]httpserver.Route, *discovery.Service, error) {
	disc, err := discovery.New(discovery.Config{
		Catalog:       catalog,
		BaseURL:       base,
		Network:       c.network,
		PayTo:         c.payTo,
		Facilitator:   c.facilitatorURL,
		DevMode:       c.devMode,
		ManifestLinks: map[string]string{"club": base + club.BeaconPath},
	})
	if err != nil {
		return nil, nil, fmt.Errorf("discovery: %w", err)
	}
	var routes []httpserver.Route
	for _, r := range disc.Routes() {
		routes = append(routes, httpserver.Route(r))
	}

	mcpHandler, err := mcp.NewHandler(disc, mcp.Options{BaseURL: base, Version: buildVersion(), Logger: log})
	if err != nil {
		return nil, nil, fmt.Errorf("mcp: %w", err)
	}
	// No method in the pattern: the handler answers OPTIONS (CORS) and 405s itself.
	routes = append(routes, httpserver.Route{Pattern: "/mcp", Handler: mcpHandler, Free: true})

	a2aHandler, err := a2a.NewHandler(disc, a2a.Options{Logger: log})
	if err != nil {
		return nil, nil, fmt.Errorf("a2a: %w", err)
	}
	routes = append(routes, httpserver.Route{Pattern: "/a2a", Handler: a2aHandler, Free: true})

	cl, err := club.New(club.Config{Store: st, BaseURL: base, Logger: log, TrustedProxies: c.trusted})
	if err != nil {
		return nil, nil, fmt.Errorf("club: %w", err)
	}
	for _, rt := range cl.Routes() {
		routes = append(routes, httpserver.Route{Pattern: rt.Pattern(), Handler: rt.Handler, Free: true})
	}
	return routes, disc, nil
}

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
	"github.com/seed1284c1d2/svc/tools/sell"
	"github.com/seed1284c1d2/svc/x402/engine"
)

// a2aStoreBytes bounds the A2A tasks svc serve keeps for GetTask.
const a2aStoreBytes = 16 << 20

// freeRoutes assembles the free surfaces mounted next to the paid routes:
// discovery (finder, router, catalog, try, documents, agent card, stats),
// MCP at /mcp, A2A at /a2a and the membership club. It returns the
// discovery service too, whose stats the server feeds.
//
// MCP and A2A also sell the paid tools with shop over eng (the shop and
// engine of the HTTP routes: one authorization buys one call, whatever
// the transport).
// lim counts the messages of an MCP batch beyond the first against the
// client's free-route rate (the server's AdmitFree), and applies the
// server's limits of unpaid calls and refused payments to MCP and A2A.
func freeRoutes(c *serveConfig, catalog *tools.Catalog, st store.Store, base string, log *slog.Logger,
	eng *engine.Engine, shop *sell.Shop, lim *freeAdmitter) ([]httpserver.Route, *discovery.Service, error) {
	disc, err := discovery.New(discovery.Config{
		Catalog:       catalog,
		BaseURL:       base,
		Network:       c.network,
		PayTo:         c.payTo,
		Facilitator:   c.publicFacilitator,
		DevMode:       c.devMode,
		FreeRoutes:    publicOpsRoutes(c),
		ManifestLinks: map[string]string{"club": base + club.BeaconPath},
	})
	if err != nil {
		return nil, nil, fmt.Errorf("discovery: %w", err)
	}
	// Discovery's agent card (both well-known paths) declares the A2A x402
	// extension and a skill per paid tool; its documents say how each tool
	// is bought over HTTP, MCP and A2A.
	var routes []httpserver.Route
	for _, r := range disc.Routes() {
		routes = append(routes, httpserver.Route(r))
	}

	mcpHandler, err := mcp.NewHandler(disc, mcp.Options{BaseURL: base, Version: buildVersion(), Logger: log,
		Engine: eng, Shop: shop,
		ToolTimeout: c.toolTimeout, RequestID: httpserver.RequestIDOf, RefCode: club.RefFromRequest, AdmitBatch: lim.admit,
		AdmitUnpaid: lim.admitUnpaid, AdmitPayment: lim.admitPayment, PaymentRefused: lim.paymentRefused})
	if err != nil {
		return nil, nil, fmt.Errorf("mcp: %w", err)
	}
	// No method in the pattern: the handler answers OPTIONS (CORS) and 405s itself.
	routes = append(routes, httpserver.Route{Pattern: "/mcp", Handler: mcpHandler, Free: true})

	// The tasks kept for GetTask count in the process's memory bound: 16 MiB
	// holds the 1000 tasks of ordinary messages (a few KiB each), and
	// no more than a dozen tasks of the largest messages, whose plans echo
	// their input several times.
	a2aOpts := a2a.Options{Logger: log, Engine: eng, Shop: shop, ToolTimeout: c.toolTimeout, RequestID: httpserver.RequestIDOf, RefCode: club.RefFromRequest,
		MaxStoreBytes: a2aStoreBytes, AdmitUnpaid: lim.admitUnpaid, AdmitPayment: lim.admitPayment, PaymentRefused: lim.paymentRefused}
	a2aHandler, err := a2a.NewHandler(disc, a2aOpts)
	if err != nil {
		return nil, nil, fmt.Errorf("a2a: %w", err)
	}
	routes = append(routes, httpserver.Route{Pattern: "/a2a", Handler: a2aHandler, Free: true, BodyLimit: a2a.DefaultMaxBodyBytes})

	cl, err := club.New(club.Config{Store: st, BaseURL: base, Logger: log, TrustedProxies: c.trusted})
	if err != nil {
		return nil, nil, fmt.Errorf("club: %w", err)
	}
	for _, rt := range cl.Routes() {
		routes = append(routes, httpserver.Route{Pattern: rt.Pattern(), Handler: rt.Handler, Free: true})
	}
	return routes, disc, nil
}

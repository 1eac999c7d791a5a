package main

import (
	"fmt"
	"log/slog"

	"github.com/seed1284c1d2/svc/club"
	"github.com/seed1284c1d2/svc/httpserver"
	"github.com/seed1284c1d2/svc/store"
)

// freeRoutes assembles the free surfaces mounted next to the paid routes:
// the membership club (and, through the discovery package, the finder,
// router, documents, MCP and A2A).
func freeRoutes(c *serveConfig, st store.Store, base string, log *slog.Logger) ([]httpserver.Route, error) {
	cl, err := club.New(club.Config{Store: st, BaseURL: base, Logger: log, TrustedProxies: c.trusted})
	if err != nil {
		return nil, fmt.Errorf("club: %w", err)
	}
	var routes []httpserver.Route
	for _, rt := range cl.Routes() {
		routes = append(routes, httpserver.Route{Pattern: rt.Pattern(), Handler: rt.Handler, Free: true})
	}
	return routes, nil
}

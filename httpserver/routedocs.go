package httpserver

import (
	"net/http"

	"github.com/seed1284c1d2/svc/discovery/routedoc"
)

// RouteDocs describes the free routes the server mounts itself, for
// discovery's documents (discovery.Config.FreeRoutes): GET /health,
// /livez and /readyz, and GET /metrics when metrics is true (the public
// handler serves it: Config.SeparateAdmin is false).
func RouteDocs(metrics bool) []routedoc.Route {
	docs := []routedoc.Route{
		{Method: "GET", Path: "/health", OperationID: "health", Tag: routedoc.TagOperations,
			Summary:     "Service health: terminal, store, facilitator and dev mode",
			Description: "200 when paid calls can be taken (status ok or degraded), 503 when the store or the facilitator is down.",
			Response: routedoc.Object(map[string]any{
				"status":      map[string]any{"type": "string", "enum": []string{"ok", "degraded", "down"}},
				"version":     routedoc.String(""),
				"devMode":     routedoc.Bool("True when the local facilitator settles nothing on chain."),
				"network":     routedoc.String(""),
				"payTo":       routedoc.String(""),
				"tools":       routedoc.Int(""),
				"terminal":    routedoc.AnyObject(""),
				"store":       routedoc.AnyObject(""),
				"facilitator": routedoc.AnyObject(""),
			}, "status"),
			Responses: map[int]string{http.StatusServiceUnavailable: "The store or the facilitator is down: paid calls cannot be taken (same body as 200)."}},
	}
	if metrics {
		docs = append(docs, routedoc.Route{Method: "GET", Path: "/metrics", OperationID: "metrics", Tag: routedoc.TagOperations,
			Summary:      "Prometheus metrics (text exposition format)",
			ResponseType: "text/plain; version=0.0.4; charset=utf-8", Response: routedoc.String("Prometheus text exposition format.")})
	}
	return append(docs,
		routedoc.Route{Method: "GET", Path: "/livez", OperationID: "livez", Tag: routedoc.TagOperations,
			Summary:     "Liveness probe: the process serves requests",
			Description: "Always 200 while the process serves.",
			Response:    routedoc.Object(map[string]any{"status": map[string]any{"type": "string", "enum": []string{"alive"}}}, "status")},
		routedoc.Route{Method: "GET", Path: "/readyz", OperationID: "readyz", Tag: routedoc.TagOperations,
			Summary: "Readiness probe: the store (and its schema) and the facilitator",
			Description: "200 when the store answers and holds its schema and the facilitator offers the exact scheme on the network; 503 otherwise. " +
				"The gold terminal is reported with the routes it backs but never makes the service unready.",
			Response: routedoc.Object(map[string]any{
				"status": map[string]any{"type": "string", "enum": []string{"ready", "not ready"}},
				"checks": routedoc.AnyObject("Per-check results: store, schema, facilitator ({status, error}) and terminal ({status, error, required: false, routes})."),
				"time":   routedoc.String(""),
			}, "status", "checks"),
			Responses: map[int]string{http.StatusServiceUnavailable: "Not ready (same body as 200)."}},
	)
}

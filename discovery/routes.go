package discovery

import (
	"fmt"
	"strings"

	"github.com/seed1284c1d2/svc/discovery/documents"
	"github.com/seed1284c1d2/svc/discovery/routedoc"
	"github.com/seed1284c1d2/svc/discovery/stats"
	"github.com/seed1284c1d2/svc/wire"
)

// ownRouteDocs describes the routes of this package, in Routes order.
func (s *Service) ownRouteDocs() []routedoc.Route {
	q := func(desc string, required bool) routedoc.Param {
		return routedoc.Param{Name: "q", In: "query", Required: required, Description: desc,
			Schema: map[string]any{"type": "string", "minLength": 1, "maxLength": MaxQueryLen}}
	}
	cached := func(path, id, tag, summary, desc string, resp map[string]any) routedoc.Route {
		return routedoc.Route{Method: "GET", Path: path, OperationID: id, Tag: tag, Summary: summary, Description: desc, Response: resp, Cached: true}
	}
	statsDoc := func(path, id, summary string) routedoc.Route {
		return routedoc.Route{Method: "GET", Path: path, OperationID: id, Tag: routedoc.TagStats, Summary: summary,
			Description: stats.Privacy + ".", Response: routedoc.Ref("StatsSnapshot")}
	}
	return []routedoc.Route{
		{Method: "GET", Path: "/api/find", OperationID: "findTools", Tag: routedoc.TagDiscovery,
			Summary:     "Natural-language router returning ranked tool matches",
			Description: "Ranks the paid tools for a need in plain words (BM25F over names, tags, synonyms, field names and descriptions, with stemming and typo tolerance). Each match carries every catalog field, matchScore in (0, 1) and the matched tokens.",
			Params: []routedoc.Param{q("The need, in words (1 to 500 characters).", true),
				{Name: "limit", In: "query", Description: "Maximum matches, 1 to 20 (default 5).", Schema: map[string]any{"type": "integer", "minimum": 1, "maximum": MaxFindLimit, "default": DefaultFindLimit}}},
			Response: routedoc.Ref("FindResult")},
		{Method: "POST", Path: "/api/route", OperationID: "routeCall", Tag: routedoc.TagDiscovery,
			Summary:     "Machine-ready call plan for the best matching paid tool",
			Description: "Returns the method, full URL (query string for GET tools), body (POST tools), price, network, asset, payTo, the 402 → sign → retry steps, a curl line and alternatives. input, when given, is validated with the tool's own rules: inputValid and inputErrors tell a caller about a bad input before paying. Unknown members of the body are invalid. A query whose best match scores below " + fmt.Sprint(MinMatchScore) + " (" + fmt.Sprint(MinCorrectedScore) + " when it was found through typo corrections alone), and that is not a tool's name, gets matched false with the near misses as alternatives. The score counts every word of the need that the tool does not explain against it, so a need from another domain sharing a word with a tool gets no match. The body is at most " + fmt.Sprint(min(s.cfg.Catalog.BodyLimit(), MaxRouteBodyBytes)) + " bytes (413 past it): a larger input is checked by the tool's own route, which asks no payment for an invalid one.",
			Body: map[string]any{"type": "object", "additionalProperties": false, "required": []string{"query"}, "properties": map[string]any{
				"query": map[string]any{"type": "string", "minLength": 1, "maxLength": MaxQueryLen, "description": "The need in words, or a tool key, operation id or path."},
				"input": routedoc.AnyObject("The tool's input object (query parameters of a GET tool as members). Optional: without it the plan uses the tool's example input."),
			}},
			Response: routedoc.Ref("RoutePlan")},
		{Method: "GET", Path: "/api/catalog", OperationID: "listCatalog", Tag: routedoc.TagDiscovery,
			Summary:     "Paginated tool catalog",
			Description: "Every paid tool with key, name, method, path, url, priceUsd, network, description, tags, inputSchema, exampleInput, outputExample (produced by running the tool) and transports: how to buy it over HTTP, MCP (tool name) and A2A (skill and data part), on the same terms. q ranks and filters with the finder; category keeps the tools with that tag.",
			Params: []routedoc.Param{
				{Name: "offset", In: "query", Description: "First item, ≥ 0 (default 0).", Schema: map[string]any{"type": "integer", "minimum": 0, "default": 0}},
				{Name: "limit", In: "query", Description: "Items per page, 1 to 100 (default 50).", Schema: map[string]any{"type": "integer", "minimum": 1, "maximum": MaxCatalogLimit, "default": DefaultCatalogLimit}},
				{Name: "q", In: "query", Description: "Free-text filter, ranked by the finder.", Schema: map[string]any{"type": "string", "maxLength": MaxQueryLen}},
				{Name: "category", In: "query", Description: "Keep the tools with this tag (" + strings.Join(s.Categories(), ", ") + ").", Schema: map[string]any{"type": "string", "maxLength": MaxCategoryLen}},
			},
			Response: routedoc.Ref("CatalogPage")},
		{Method: "GET", Path: "/api/try", OperationID: "tryPreview", Tag: routedoc.TagDiscovery,
			Summary:     "Free capability preview and next routes",
			Description: "Without q: a tour (tool groups with prices, every free route). With q: the best match with its price, example input and output, and the next routes (/api/route, the paid URL, /openapi.json); mode no_match with near misses as alternatives when the best match scores below " + fmt.Sprint(MinMatchScore) + " (" + fmt.Sprint(MinCorrectedScore) + " when found through typo corrections alone).",
			Params:      []routedoc.Param{{Name: "q", In: "query", Description: "The need in words (optional, at most 500 characters).", Schema: map[string]any{"type": "string", "maxLength": MaxQueryLen}}},
			Response:    routedoc.Ref("TryResult")},
		cached("/openapi.json", "openapi", routedoc.TagManifests, "Machine-readable interface description (this document)", "OpenAPI 3.1.0.", routedoc.AnyObject("OpenAPI 3.1.0 document.")),
		{Method: "GET", Path: "/skill.md", OperationID: "skill", Tag: routedoc.TagManifests, Summary: "Usage summary for agents in Markdown",
			ResponseType: documents.MediaMarkdown, Response: routedoc.String("Markdown."), Cached: true},
		cached("/.well-known/x402", "x402Manifest", routedoc.TagManifests, "Payment manifest",
			"x402Version 2, payment rails (network, asset, payTo, facilitator), how each transport (HTTP, MCP, A2A) takes a payment, every paid resource with price, method, URL, input schema, the payment requirements of its 402 and its transports, and the free resources.",
			routedoc.Ref("X402Manifest")),
		cached("/.well-known/svc-router.json", "routerFeed", routedoc.TagManifests, "Router feed", "Find, route, catalog and try URLs, and every tool with its key, price and URL.", documents.ManifestSchema("Router feed.")),
		cached("/.well-known/svc-distribution.json", "distributionManifest", routedoc.TagManifests, "Distribution manifest", "Every channel the service is reachable through (HTTP, OpenAPI, MCP, A2A, x402 manifest, skill.md) and how attribution works.", documents.ManifestSchema("Distribution manifest.")),
		cached("/.well-known/svc-magnet.json", "magnetManifest", routedoc.TagManifests, "Discovery beacon manifest", "A compact beacon for scanners and agents: what the service sells, the price range and the entry points.", documents.ManifestSchema("Discovery beacon.")),
		cached("/api/magnet", "magnetBeacon", routedoc.TagManifests, "Discovery beacon manifest (same document as /.well-known/svc-magnet.json)", "", documents.ManifestSchema("Discovery beacon.")),
		cached(wire.PathAgentCard, "agentCard", routedoc.TagProtocols, "Standard A2A agent card", "Hybrid card: A2A 1.0 fields plus the 0.3 top-level fields (url, preferredTransport, protocolVersion). Declares the A2A x402 extension and has one skill per paid tool (its id is the catalog key).", routedoc.Ref("AgentCard")),
		cached(wire.PathAgentCardLegacy, "agentCardLegacy", routedoc.TagProtocols, "Legacy alias of the standard agent card (same bytes)", "", routedoc.Ref("AgentCard")),
		statsDoc("/api/amplifier/stats", "amplifierStats", "Aggregate inbound telemetry counters, including requests per minute"),
		statsDoc("/api/distribution/stats", "distributionStats", "Aggregate inbound telemetry counters"),
		statsDoc("/api/magnet/stats", "magnetStats", "Privacy-safe scanner aggregates"),
		{Method: "GET", Path: documents.PathLanding, OperationID: "landing", Tag: routedoc.TagManifests, Summary: "Landing page: what the service is and where everything is",
			Description: "Content negotiation on Accept: HTML for a browser (text/html), the llms.txt Markdown for text/markdown or text/plain, JSON otherwise (name, description, links, every tool with its price and URL).",
			Response:    routedoc.AnyObject("Landing: name, description, version, devMode, network, links, tools."), Cached: true},
		{Method: "GET", Path: documents.PathLLMs, OperationID: "llmsTxt", Tag: routedoc.TagManifests, Summary: "Index for language models (llms.txt)",
			ResponseType: documents.MediaPlain, Response: routedoc.String("Markdown in the llms.txt layout."), Cached: true},
		{Method: "GET", Path: documents.PathRobots, OperationID: "robotsTxt", Tag: routedoc.TagManifests, Summary: "Crawler rules: documents allowed, paid routes and protocol endpoints disallowed",
			ResponseType: documents.MediaPlain, Response: routedoc.String("robots.txt."), Cached: true},
		cached(documents.PathMCPServer, "mcpServerJson", routedoc.TagManifests, "MCP registry server.json of the remote MCP endpoint",
			"The MCP registry's server.json ("+documents.MCPServerSchema+"): name (reverse DNS of the host), description, version, repository and remotes [{type: streamable-http, url: /mcp}].",
			routedoc.AnyObject("MCP registry server.json.")),
	}
}

// freeDocs returns every free route: this package's, then the external
// ones.
func (s *Service) freeDocs() []routedoc.Route {
	return append(s.ownRouteDocs(), s.external...)
}

// checkRoutes refuses external routes that are malformed or collide with
// a paid route, another route or an operation id.
func (s *Service) checkRoutes() error {
	seen := map[string]bool{}
	ids := map[string]bool{}
	for _, t := range s.tools {
		seen[t.Method+" "+t.Path] = true
		ids[t.OperationID] = true
	}
	for _, d := range s.freeDocs() {
		key := d.Method + " " + d.Path
		switch {
		case d.Method != strings.ToUpper(d.Method) || d.Method == "" || !strings.HasPrefix(d.Path, "/"):
			return fmt.Errorf("discovery: route %q: want an upper-case method and a path starting with /", key)
		case seen[key]:
			return fmt.Errorf("discovery: route %q is declared twice (or is a paid route)", key)
		case d.OperationID == "" || ids[d.OperationID]:
			return fmt.Errorf("discovery: route %q: operation id %q is empty or not unique", key, d.OperationID)
		}
		seen[key], ids[d.OperationID] = true, true
	}
	return nil
}

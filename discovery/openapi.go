package discovery

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/seed1284c1d2/svc/club"
	"github.com/seed1284c1d2/svc/tools"
	"github.com/seed1284c1d2/svc/wire"
	"github.com/seed1284c1d2/svc/x402"
	x402a2a "github.com/seed1284c1d2/svc/x402/a2a"
	x402mcp "github.com/seed1284c1d2/svc/x402/mcp"
)

// OpenAPIVersion is the version of the interface description format.
const OpenAPIVersion = "3.1.0"

// Tags of the free routes in /openapi.json.
const (
	TagDiscovery  = "discovery"
	TagProtocols  = "protocols"
	TagManifests  = "manifests"
	TagStats      = "stats"
	TagClub       = "club"
	TagOperations = "operations"
	// TagPaid marks every paid operation (next to the tool's own tags).
	TagPaid = "paid"
)

// RouteDoc describes one free HTTP route for /openapi.json, the payment
// manifest's free resources and the tour of /api/try.
type RouteDoc struct {
	// Method ("GET", "POST") and Path (an http.ServeMux path, "{name}"
	// marking a path parameter) identify the route.
	Method string
	Path   string
	// OperationID is unique in the document ("findTools").
	OperationID string
	// Summary is one line; Description may be longer.
	Summary     string
	Description string
	// Tag groups the route (TagDiscovery, TagClub, ...).
	Tag string
	// Params are the query and path parameters.
	Params []ParamDoc
	// Body is the JSON Schema of a JSON request body (nil: no body).
	Body map[string]any
	// Response is the JSON Schema of the 200 answer (nil: any JSON).
	Response map[string]any
	// ResponseType is the media type of the 200 answer; "" means
	// application/json.
	ResponseType string
	// Cached marks documents served with an ETag (If-None-Match → 304).
	Cached bool
	// Responses adds statuses beyond 200 and the standard errors
	// (status → description), for instance 503 for /health.
	Responses map[int]string
}

// ParamDoc is a query or path parameter.
type ParamDoc struct {
	Name string
	// In is "query" or "path".
	In          string
	Required    bool
	Description string
	Schema      map[string]any
}

// Schema builders (JSON Schema 2020-12 as maps).

func oasObject(props map[string]any, required ...string) map[string]any {
	m := map[string]any{"type": "object", "properties": props}
	if len(required) > 0 {
		m["required"] = required
	}
	return m
}

func oasString(desc string) map[string]any {
	m := map[string]any{"type": "string"}
	if desc != "" {
		m["description"] = desc
	}
	return m
}

func oasInt(desc string) map[string]any {
	m := map[string]any{"type": "integer"}
	if desc != "" {
		m["description"] = desc
	}
	return m
}

func oasNumber(desc string) map[string]any {
	m := map[string]any{"type": "number"}
	if desc != "" {
		m["description"] = desc
	}
	return m
}

func oasBool(desc string) map[string]any {
	m := map[string]any{"type": "boolean"}
	if desc != "" {
		m["description"] = desc
	}
	return m
}

func oasArray(items map[string]any, desc string) map[string]any {
	m := map[string]any{"type": "array", "items": items}
	if desc != "" {
		m["description"] = desc
	}
	return m
}

func oasRef(name string) map[string]any {
	return map[string]any{"$ref": "#/components/schemas/" + name}
}

func oasAnyObject(desc string) map[string]any {
	m := map[string]any{"type": "object"}
	if desc != "" {
		m["description"] = desc
	}
	return m
}

func oasMap(values map[string]any, desc string) map[string]any {
	m := map[string]any{"type": "object", "additionalProperties": values}
	if desc != "" {
		m["description"] = desc
	}
	return m
}

// oasManifest is the common shape of the manifests.
func oasManifest(desc string) map[string]any {
	return map[string]any{
		"type":        "object",
		"description": desc,
		"properties": map[string]any{
			"manifestVersion": oasString("Version of the manifest format."),
			"version":         oasString("Interface version of the service."),
			"name":            oasString(""),
			"purpose":         oasString("What the document is for."),
			"links":           oasMap(oasString(""), "Absolute URLs by name."),
		},
		"required": []string{"manifestVersion", "version", "name", "purpose", "links"},
	}
}

// jsonRPCSchemas are the request and answer of a JSON-RPC 2.0 surface.
func jsonRPCRequest() map[string]any {
	return oasObject(map[string]any{
		"jsonrpc": map[string]any{"type": "string", "const": "2.0"},
		"method":  oasString(""),
		"params":  oasAnyObject(""),
		"id":      map[string]any{"type": []string{"string", "integer", "null"}},
	}, "jsonrpc", "method")
}

func jsonRPCResponse() map[string]any {
	return oasObject(map[string]any{
		"jsonrpc": map[string]any{"type": "string", "const": "2.0"},
		"id":      map[string]any{"type": []string{"string", "integer", "null"}},
		"result":  map[string]any{},
		"error": oasObject(map[string]any{
			"code":    oasInt(""),
			"message": oasString(""),
			"data":    map[string]any{},
		}, "code", "message"),
	}, "jsonrpc")
}

// DefaultExternalRoutes returns the free routes of the interface
// specification (and /health, /metrics) that other components serve:
// httpserver (/health, /metrics, /livez, /readyz), MCP (/mcp), A2A (/a2a) and the club
// (/api/club..., /.well-known/svc-club.json). It is the default of
// Config.FreeRoutes; a server mounting only some of them passes those.
func DefaultExternalRoutes() []RouteDoc {
	wallet := map[string]any{"type": "string", "pattern": "^0x[0-9a-fA-F]{40}$", "description": "Public EVM address (0x + 40 hex digits)."}
	return []RouteDoc{
		{Method: "GET", Path: "/health", OperationID: "health", Tag: TagOperations,
			Summary:     "Service health: terminal, store, facilitator and dev mode",
			Description: "200 when paid calls can be taken (status ok or degraded), 503 when the store or the facilitator is down.",
			Response: oasObject(map[string]any{
				"status":      map[string]any{"type": "string", "enum": []string{"ok", "degraded", "down"}},
				"version":     oasString(""),
				"devMode":     oasBool("True when the local facilitator settles nothing on chain."),
				"network":     oasString(""),
				"payTo":       oasString(""),
				"tools":       oasInt(""),
				"terminal":    oasAnyObject(""),
				"store":       oasAnyObject(""),
				"facilitator": oasAnyObject(""),
			}, "status"),
			Responses: map[int]string{http.StatusServiceUnavailable: "The store or the facilitator is down: paid calls cannot be taken (same body as 200)."}},
		{Method: "GET", Path: "/metrics", OperationID: "metrics", Tag: TagOperations,
			Summary:      "Prometheus metrics (text exposition format)",
			ResponseType: "text/plain; version=0.0.4; charset=utf-8", Response: oasString("Prometheus text exposition format.")},
		{Method: "GET", Path: "/livez", OperationID: "livez", Tag: TagOperations,
			Summary:     "Liveness probe: the process serves requests",
			Description: "Always 200 while the process serves.",
			Response:    oasObject(map[string]any{"status": map[string]any{"type": "string", "enum": []string{"alive"}}}, "status")},
		{Method: "GET", Path: "/readyz", OperationID: "readyz", Tag: TagOperations,
			Summary: "Readiness probe: the store (and its schema) and the facilitator",
			Description: "200 when the store answers and holds its schema and the facilitator offers the exact scheme on the network; 503 otherwise. " +
				"The gold terminal is reported with the routes it backs but never makes the service unready.",
			Response: oasObject(map[string]any{
				"status": map[string]any{"type": "string", "enum": []string{"ready", "not ready"}},
				"checks": oasAnyObject("Per-check results: store, schema, facilitator ({status, error}) and terminal ({status, error, required: false, routes})."),
				"time":   oasString(""),
			}, "status", "checks"),
			Responses: map[int]string{http.StatusServiceUnavailable: "Not ready (same body as 200)."}},
		{Method: "POST", Path: wire.PathMCP, OperationID: "mcp", Tag: TagProtocols,
			Summary: "MCP server: free discovery tools and every paid tool (JSON-RPC)",
			Description: "Model Context Protocol, 2026-07-28 stateless revision, also accepting the legacy initialize exchange. Free, read-only tools: find_tool, route_tool, catalog, tool_info. " +
				"Every paid operation is also an MCP tool named by its operationId, sold with the x402 MCP transport on the same terms as over HTTP (x-transports.mcp of each paid operation): " +
				"tools/call without payment answers the x402 PaymentRequired (isError with it in structuredContent, or resultType payment_required to a client advertising the " + x402mcp.ExtensionPayment + " extension); " +
				"the paid call carries the PaymentPayload in params._meta[\"" + x402mcp.MetaPayment + "\"] and the result the settlement in result._meta[\"" + x402mcp.MetaPaymentResponse + "\"].",
			Body: jsonRPCRequest(), Response: jsonRPCResponse(),
			Responses: map[int]string{http.StatusAccepted: "A notification was accepted (no body)."}},
		{Method: "POST", Path: wire.PathA2A, OperationID: "a2a", Tag: TagProtocols,
			Summary: "A2A agent: discovery, router and every paid tool (JSON-RPC, A2A 1.0 and 0.3)",
			Description: "A message describing a need yields a completed task whose artifact is a call plan. The agent card is at /.well-known/agent-card.json. " +
				"Every paid operation is also sold here with the A2A x402 extension (" + x402a2a.ExtensionURI + ") on the same terms as over HTTP (x-transports.a2a of each paid operation): " +
				"a message with the data part {\"tool\": \"<x-catalog-key>\", \"input\": {...}} gets a task in input-required carrying " + x402a2a.MetaRequired +
				"; a message on that task carrying " + x402a2a.MetaPayload + " gets the completed task with the output as an artifact and " + x402a2a.MetaReceipts + ".",
			Body: jsonRPCRequest(), Response: jsonRPCResponse()},
		{Method: "GET", Path: "/api/club", OperationID: "clubManifest", Tag: TagClub,
			Summary:  "Membership club manifest and tiers",
			Params:   []ParamDoc{{Name: "ref", In: "query", Description: "Referral code to attribute.", Schema: oasString("")}},
			Response: oasAnyObject("Club manifest: tiers from the settlement ledger (FOUNDING, INSIDER, PRIME), referral and lounge routes.")},
		{Method: "GET", Path: "/.well-known/svc-club.json", OperationID: "clubBeacon", Tag: TagClub,
			Summary: "Membership club invite beacon", Response: oasAnyObject("Club invite manifest.")},
		{Method: "GET", Path: "/api/club/status", OperationID: "clubStatus", Tag: TagClub,
			Summary:  "Verified membership status of a wallet (from the settlement ledger)",
			Params:   []ParamDoc{{Name: "wallet", In: "query", Required: true, Description: "Public EVM address.", Schema: wallet}},
			Response: oasAnyObject("Membership status.")},
		{Method: "POST", Path: "/api/club/referral/create", OperationID: "clubReferralCreate", Tag: TagClub,
			Summary:  "Create the deterministic, non-custodial referral code of a wallet",
			Body:     map[string]any{"type": "object", "properties": map[string]any{"wallet": wallet}, "required": []string{"wallet"}, "additionalProperties": false},
			Response: oasAnyObject("The code and its share links.")},
		{Method: "GET", Path: "/api/club/referral/{code}", OperationID: "clubReferralStatus", Tag: TagClub,
			Summary:  "Referral conversion status of a code",
			Params:   []ParamDoc{{Name: "code", In: "path", Required: true, Description: "Referral code.", Schema: oasString("")}},
			Response: oasAnyObject("Conversion status.")},
		{Method: "GET", Path: "/api/club/lounge", OperationID: "clubLounge", Tag: TagClub,
			Summary:     "Capped list of self-declared lounge entries",
			Description: "Newest first, self-declared. Roles and interests are normalized terms (pattern in the schema) safe to show as is; agentName is plain text to escape.",
			Response:    club.LoungeListSchema()},
		{Method: "POST", Path: "/api/club/lounge/check-in", OperationID: "clubLoungeCheckIn", Tag: TagClub,
			Summary:     "Opt-in lounge check-in (wallet ownership is not authenticated)",
			Description: "One entry per wallet (latest wins); entries expire after 24 h and are marked self-declared. Role and interests are free-form terms, normalized (NFC, lower case, separators to '-') and checked as the body schema describes.",
			Body:        club.CheckInSchema(),
			Response:    club.CheckInResultSchema()},
	}
}

// ownRouteDocs describes the routes of this package, in Routes order.
func (s *Service) ownRouteDocs() []RouteDoc {
	q := func(desc string, required bool) ParamDoc {
		return ParamDoc{Name: "q", In: "query", Required: required, Description: desc,
			Schema: map[string]any{"type": "string", "minLength": 1, "maxLength": MaxQueryLen}}
	}
	cached := func(path, id, tag, summary, desc string, resp map[string]any) RouteDoc {
		return RouteDoc{Method: "GET", Path: path, OperationID: id, Tag: tag, Summary: summary, Description: desc, Response: resp, Cached: true}
	}
	statsDoc := func(path, id, summary string) RouteDoc {
		return RouteDoc{Method: "GET", Path: path, OperationID: id, Tag: TagStats, Summary: summary,
			Description: StatsPrivacy + ".", Response: oasRef("StatsSnapshot")}
	}
	return []RouteDoc{
		{Method: "GET", Path: "/api/find", OperationID: "findTools", Tag: TagDiscovery,
			Summary:     "Natural-language router returning ranked tool matches",
			Description: "Ranks the paid tools for a need in plain words (BM25F over names, tags, synonyms, field names and descriptions, with stemming and typo tolerance). Each match carries every catalog field, matchScore in (0, 1) and the matched tokens.",
			Params: []ParamDoc{q("The need, in words (1 to 500 characters).", true),
				{Name: "limit", In: "query", Description: "Maximum matches, 1 to 20 (default 5).", Schema: map[string]any{"type": "integer", "minimum": 1, "maximum": MaxFindLimit, "default": DefaultFindLimit}}},
			Response: oasRef("FindResult")},
		{Method: "POST", Path: "/api/route", OperationID: "routeCall", Tag: TagDiscovery,
			Summary:     "Machine-ready call plan for the best matching paid tool",
			Description: "Returns the method, full URL (query string for GET tools), body (POST tools), price, network, asset, payTo, the 402 → sign → retry steps, a curl line and alternatives. input, when given, is validated with the tool's own rules: inputValid and inputErrors tell a caller about a bad input before paying. Unknown members of the body are invalid. A query whose best match scores below " + fmt.Sprint(MinMatchScore) + " (" + fmt.Sprint(MinCorrectedScore) + " when it was found through typo corrections alone), and that is not a tool's name, gets matched false with the near misses as alternatives. The score counts every word of the need that the tool does not explain against it, so a need from another domain sharing a word with a tool gets no match. The body is at most " + fmt.Sprint(min(s.cfg.Catalog.BodyLimit(), MaxRouteBodyBytes)) + " bytes (413 past it): a larger input is checked by the tool's own route, which asks no payment for an invalid one.",
			Body: map[string]any{"type": "object", "additionalProperties": false, "required": []string{"query"}, "properties": map[string]any{
				"query": map[string]any{"type": "string", "minLength": 1, "maxLength": MaxQueryLen, "description": "The need in words, or a tool key, operation id or path."},
				"input": oasAnyObject("The tool's input object (query parameters of a GET tool as members). Optional: without it the plan uses the tool's example input."),
			}},
			Response: oasRef("RoutePlan")},
		{Method: "GET", Path: "/api/catalog", OperationID: "listCatalog", Tag: TagDiscovery,
			Summary:     "Paginated tool catalog",
			Description: "Every paid tool with key, name, method, path, url, priceUsd, network, description, tags, inputSchema, exampleInput, outputExample (produced by running the tool) and transports: how to buy it over HTTP, MCP (tool name) and A2A (skill and data part), on the same terms. q ranks and filters with the finder; category keeps the tools with that tag.",
			Params: []ParamDoc{
				{Name: "offset", In: "query", Description: "First item, ≥ 0 (default 0).", Schema: map[string]any{"type": "integer", "minimum": 0, "default": 0}},
				{Name: "limit", In: "query", Description: "Items per page, 1 to 100 (default 50).", Schema: map[string]any{"type": "integer", "minimum": 1, "maximum": MaxCatalogLimit, "default": DefaultCatalogLimit}},
				{Name: "q", In: "query", Description: "Free-text filter, ranked by the finder.", Schema: map[string]any{"type": "string", "maxLength": MaxQueryLen}},
				{Name: "category", In: "query", Description: "Keep the tools with this tag (" + strings.Join(s.Categories(), ", ") + ").", Schema: map[string]any{"type": "string", "maxLength": MaxCategoryLen}},
			},
			Response: oasRef("CatalogPage")},
		{Method: "GET", Path: "/api/try", OperationID: "tryPreview", Tag: TagDiscovery,
			Summary:     "Free capability preview and next routes",
			Description: "Without q: a tour (tool groups with prices, every free route). With q: the best match with its price, example input and output, and the next routes (/api/route, the paid URL, /openapi.json); mode no_match with near misses as alternatives when the best match scores below " + fmt.Sprint(MinMatchScore) + " (" + fmt.Sprint(MinCorrectedScore) + " when found through typo corrections alone).",
			Params:      []ParamDoc{{Name: "q", In: "query", Description: "The need in words (optional, at most 500 characters).", Schema: map[string]any{"type": "string", "maxLength": MaxQueryLen}}},
			Response:    oasRef("TryResult")},
		cached("/openapi.json", "openapi", TagManifests, "Machine-readable interface description (this document)", "OpenAPI 3.1.0.", oasAnyObject("OpenAPI 3.1.0 document.")),
		{Method: "GET", Path: "/skill.md", OperationID: "skill", Tag: TagManifests, Summary: "Usage summary for agents in Markdown",
			ResponseType: markdownType, Response: oasString("Markdown."), Cached: true},
		cached("/.well-known/x402", "x402Manifest", TagManifests, "Payment manifest",
			"x402Version 2, payment rails (network, asset, payTo, facilitator), how each transport (HTTP, MCP, A2A) takes a payment, every paid resource with price, method, URL, input schema, the payment requirements of its 402 and its transports, and the free resources.",
			oasRef("X402Manifest")),
		cached("/.well-known/svc-router.json", "routerFeed", TagManifests, "Router feed", "Find, route, catalog and try URLs, and every tool with its key, price and URL.", oasManifest("Router feed.")),
		cached("/.well-known/svc-distribution.json", "distributionManifest", TagManifests, "Distribution manifest", "Every channel the service is reachable through (HTTP, OpenAPI, MCP, A2A, x402 manifest, skill.md) and how attribution works.", oasManifest("Distribution manifest.")),
		cached("/.well-known/svc-magnet.json", "magnetManifest", TagManifests, "Discovery beacon manifest", "A compact beacon for scanners and agents: what the service sells, the price range and the entry points.", oasManifest("Discovery beacon.")),
		cached("/api/magnet", "magnetBeacon", TagManifests, "Discovery beacon manifest (same document as /.well-known/svc-magnet.json)", "", oasManifest("Discovery beacon.")),
		cached(wire.PathAgentCard, "agentCard", TagProtocols, "Standard A2A agent card", "Hybrid card: A2A 1.0 fields plus the 0.3 top-level fields (url, preferredTransport, protocolVersion). Declares the A2A x402 extension and has one skill per paid tool (its id is the catalog key).", oasRef("AgentCard")),
		cached(wire.PathAgentCardLegacy, "agentCardLegacy", TagProtocols, "Legacy alias of the standard agent card (same bytes)", "", oasRef("AgentCard")),
		statsDoc("/api/amplifier/stats", "amplifierStats", "Aggregate inbound telemetry counters, including requests per minute"),
		statsDoc("/api/distribution/stats", "distributionStats", "Aggregate inbound telemetry counters"),
		statsDoc("/api/magnet/stats", "magnetStats", "Privacy-safe scanner aggregates"),
		{Method: "GET", Path: PathLanding, OperationID: "landing", Tag: TagManifests, Summary: "Landing page: what the service is and where everything is",
			Description: "Content negotiation on Accept: HTML for a browser (text/html), the llms.txt Markdown for text/markdown or text/plain, JSON otherwise (name, description, links, every tool with its price and URL).",
			Response:    oasAnyObject("Landing: name, description, version, devMode, network, links, tools."), Cached: true},
		{Method: "GET", Path: PathLLMs, OperationID: "llmsTxt", Tag: TagManifests, Summary: "Index for language models (llms.txt)",
			ResponseType: plainType, Response: oasString("Markdown in the llms.txt layout."), Cached: true},
		{Method: "GET", Path: PathRobots, OperationID: "robotsTxt", Tag: TagManifests, Summary: "Crawler rules: documents allowed, paid routes and protocol endpoints disallowed",
			ResponseType: plainType, Response: oasString("robots.txt."), Cached: true},
		cached(PathMCPServer, "mcpServerJson", TagManifests, "MCP registry server.json of the remote MCP endpoint",
			"The MCP registry's server.json ("+MCPServerSchema+"): name (reverse DNS of the host), description, version, repository and remotes [{type: streamable-http, url: /mcp}].",
			oasAnyObject("MCP registry server.json.")),
	}
}

// freeDocs returns every free route: this package's, then the external
// ones.
func (s *Service) freeDocs() []RouteDoc {
	out := make([]RouteDoc, 0, len(s.own)+len(s.external))
	for _, o := range s.own {
		out = append(out, o.doc)
	}
	return append(out, s.external...)
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

// buildOpenAPI builds /openapi.json.
func (s *Service) buildOpenAPI() ([]byte, error) {
	paths := map[string]map[string]any{}
	add := func(method, path string, op map[string]any) {
		if paths[path] == nil {
			paths[path] = map[string]any{}
		}
		paths[path][strings.ToLower(method)] = op
	}
	schemas := s.oasComponentSchemas()
	tagSet := map[string]bool{}
	for i, t := range s.tools {
		op, err := s.oasPaidOperation(t, s.buy[i], schemas)
		if err != nil {
			return nil, err
		}
		for _, tag := range t.Tags {
			tagSet[tag] = true
		}
		add(t.Method, t.Path, op)
	}
	for _, d := range s.freeDocs() {
		add(d.Method, d.Path, s.oasFreeOperation(d))
	}
	tags := []map[string]any{
		{"name": TagPaid, "description": "Paid tools: HTTP 402 with x402 v2 payment requirements (USDC on " + s.network.CAIP2 + "), then 200 after the retry with PAYMENT-SIGNATURE; each is also sold over MCP (POST /mcp) and A2A (POST /a2a) on the same terms. See x-payment-info and x-transports on each operation."},
		{"name": TagDiscovery, "description": "Free finder, router, catalog and preview."},
		{"name": TagProtocols, "description": "MCP and A2A: free discovery, and every paid tool sold with x402 (see x-transports), and the agent card."},
		{"name": TagManifests, "description": "Free machine-readable documents (cached, with ETag)."},
		{"name": TagStats, "description": "Free aggregate counters (no per-client data)."},
		{"name": TagClub, "description": "Free membership club surface."},
		{"name": TagOperations, "description": "Health and metrics."},
	}
	toolTags := make([]string, 0, len(tagSet))
	for tag := range tagSet {
		toolTags = append(toolTags, tag)
	}
	slices.Sort(toolTags)
	for _, tag := range toolTags {
		tags = append(tags, map[string]any{"name": tag, "description": "Paid tools tagged " + tag + "."})
	}
	limit := s.cfg.Catalog.BodyLimit()
	doc := map[string]any{
		"openapi": OpenAPIVersion,
		"info": map[string]any{
			"title":   s.cfg.Name,
			"version": s.cfg.Version,
			"summary": "Pay-per-call market intelligence and utility tools for autonomous agents (x402 v2, USDC).",
			"description": serviceDescription + "\n\n" +
				"Payment: every paid operation answers 402 with a PAYMENT-REQUIRED header (base64 JSON, x402 v2); pay with the exact scheme (EIP-3009 USDC authorization) and retry the identical request with PAYMENT-SIGNATURE; the 200 carries PAYMENT-RESPONSE. " +
				"Invalid input is answered 400 (application/problem+json with errors [{field, rule, message}]) before any 402, so nobody pays for a call that cannot succeed; unknown JSON members and unknown query parameters are invalid (ref and src, which carry attribution, excepted), and so is a tool parameter given twice (no value is picked). " +
				fmt.Sprintf("Request bodies are limited to %d bytes (413 past it). Free routes are rate-limited per client address (429 with Retry-After); paid ones are not.", limit) + "\n\n" +
				"Three ways to buy each paid operation, on the same price, network, asset and payTo (x-payment-info), through one payment engine (one authorization buys one call, whatever the transport); x-transports on each operation names them:\n\n" +
				"- HTTP: the operation itself, as above.\n" +
				"- MCP (" + s.absURL(wire.PathMCP) + "): " + MCPCallMethod + " with the operationId as the tool name and the input as arguments; the unpaid call answers the x402 PaymentRequired (tool-result binding: isError, structuredContent; extension binding " + x402mcp.ExtensionPayment + " on protocol 2026-07-28: resultType payment_required); send the PaymentPayload in params._meta[\"" + x402mcp.MetaPayment + "\"]; the settlement is in result._meta[\"" + x402mcp.MetaPaymentResponse + "\"] (x402 specs/transports-v2/mcp.md).\n" +
				"- A2A (" + s.absURL(wire.PathA2A) + ", agent card " + s.absURL(wire.PathAgentCard) + "): the A2A x402 extension v0.2 (" + x402a2a.ExtensionURI + "); a message with the data part {\"tool\": \"<x-catalog-key>\", \"input\": {...}} gets a task in input-required with " + x402a2a.MetaRequired + "; a message on that task with " + x402a2a.MetaPayload + " gets the completed task with the output as an artifact and " + x402a2a.MetaReceipts + ".",
			"x-body-limit-bytes": limit,
			"x-dev-mode":         s.cfg.DevMode,
		},
		"servers":      []map[string]any{{"url": s.base, "description": "Public base URL"}},
		"tags":         tags,
		"externalDocs": map[string]any{"description": "Usage summary for agents", "url": s.absURL("/skill.md")},
		"paths":        paths,
		"components": map[string]any{
			"schemas":   schemas,
			"responses": s.oasResponses(),
			"headers": map[string]any{
				"PaymentRequired": map[string]any{"description": "Base64 (standard, padded) of the JSON x402 v2 PaymentRequired {x402Version, error, resource, accepts, extensions}.", "schema": oasString("")},
				"PaymentResponse": map[string]any{"description": "Base64 of the JSON x402 SettleResponse {success, transaction, network, payer}.", "schema": oasString("")},
				"RetryAfter":      map[string]any{"description": "Seconds to wait.", "schema": oasInt("")},
				"ETag":            map[string]any{"description": "Strong entity tag of the document (send it back in If-None-Match).", "schema": oasString("")},
			},
		},
	}
	b, err := discMarshal(doc)
	if err != nil {
		return nil, fmt.Errorf("discovery: encoding openapi.json: %w", err)
	}
	return b, nil
}

// oasPaidOperation describes the paid operation of t, with the three ways
// to buy it (x-transports), adding its input and output schemas to
// schemas.
func (s *Service) oasPaidOperation(t *tools.Tool, tr Transports, schemas map[string]any) (map[string]any, error) {
	var in, out map[string]any
	if err := json.Unmarshal(t.InputSchema, &in); err != nil {
		return nil, fmt.Errorf("discovery: tool %s: input schema: %w", t.Key, err)
	}
	if err := json.Unmarshal(t.OutputSchema, &out); err != nil {
		return nil, fmt.Errorf("discovery: tool %s: output schema: %w", t.Key, err)
	}
	inName, outName := t.OperationID+"_input", t.OperationID+"_output"
	schemas[inName], schemas[outName] = in, out
	var example, outExample any
	_ = json.Unmarshal(t.ExampleInput, &example)
	_ = json.Unmarshal(t.OutputExample, &outExample)

	tags := append([]string{TagPaid}, t.Tags...)
	op := map[string]any{
		"operationId": t.OperationID,
		"summary":     t.Name + fmt.Sprintf(" (%s USDC per call)", t.PriceFixed6()),
		"description": t.Description,
		"tags":        tags,
		"x-payment-info": map[string]any{
			"price":       t.PriceFixed6(),
			"priceUsd":    json.Number(t.Price),
			"currency":    "USDC",
			"network":     tr.Terms.Network,
			"protocol":    "x402",
			"x402Version": x402.Version,
			"scheme":      tr.Terms.Scheme,
			"asset":       tr.Terms.Asset,
			"payTo":       tr.Terms.PayTo,
			"amount":      tr.Terms.Amount,
			"facilitator": s.facil,
		},
		"x-transports":  tr,
		"x-catalog-key": t.Key,
		"x-terminal":    t.Terminal,
	}
	params := []map[string]any{{
		"name": x402.HeaderPaymentSignature, "in": "header", "required": false,
		"description": "The paid retry: base64 of the JSON x402 v2 PaymentPayload (exact scheme, EIP-3009 authorization). Absent on the first request, which is answered 402.",
		"schema":      oasString(""),
	}}
	if t.InputLocation == tools.InputQuery {
		props, _ := in["properties"].(map[string]any)
		required := map[string]bool{}
		if rl, ok := in["required"].([]any); ok {
			for _, r := range rl {
				if n, ok := r.(string); ok {
					required[n] = true
				}
			}
		}
		exMap, _ := example.(map[string]any)
		for _, name := range t.Fields {
			ps, _ := props[name].(map[string]any)
			if ps == nil {
				ps = map[string]any{}
			}
			p := map[string]any{"name": name, "in": "query", "required": required[name], "schema": ps}
			if d, ok := ps["description"].(string); ok {
				p["description"] = d
			}
			if v, ok := exMap[name]; ok {
				p["example"] = v
			}
			params = append(params, p)
		}
	} else {
		op["requestBody"] = map[string]any{
			"required": true,
			"content": map[string]any{jsonContentType: map[string]any{
				"schema":  oasRef(inName),
				"example": example,
			}},
		}
	}
	op["parameters"] = params
	responses := map[string]any{
		"200": map[string]any{
			"description": "The tool's answer (after payment).",
			"headers":     map[string]any{x402.HeaderPaymentResponse: map[string]any{"$ref": "#/components/headers/PaymentResponse"}},
			"content":     map[string]any{jsonContentType: map[string]any{"schema": oasRef(outName), "example": outExample}},
		},
		"400": map[string]any{"$ref": "#/components/responses/InvalidInput"},
		"402": map[string]any{"$ref": "#/components/responses/PaymentRequired"},
		"413": map[string]any{"$ref": "#/components/responses/TooLarge"},
		"500": map[string]any{"$ref": "#/components/responses/Internal"},
		"503": map[string]any{"$ref": "#/components/responses/Unavailable"},
		"504": map[string]any{"$ref": "#/components/responses/Timeout"},
	}
	op["responses"] = responses
	return op, nil
}

// oasFreeOperation describes a free route.
func (s *Service) oasFreeOperation(d RouteDoc) map[string]any {
	op := map[string]any{
		"operationId": d.OperationID,
		"summary":     d.Summary,
		"tags":        []string{d.Tag},
		"x-free":      true,
	}
	if d.Description != "" {
		op["description"] = d.Description
	}
	var params []map[string]any
	for _, p := range d.Params {
		pm := map[string]any{"name": p.Name, "in": p.In, "required": p.Required || p.In == "path", "schema": p.Schema}
		if p.Schema == nil {
			pm["schema"] = oasString("")
		}
		if p.Description != "" {
			pm["description"] = p.Description
		}
		params = append(params, pm)
	}
	if d.Cached {
		params = append(params, map[string]any{"name": "If-None-Match", "in": "header", "required": false,
			"description": "An ETag received earlier: 304 when the document is unchanged.", "schema": oasString("")})
	}
	if len(params) > 0 {
		op["parameters"] = params
	}
	if d.Body != nil {
		op["requestBody"] = map[string]any{"required": true, "content": map[string]any{jsonContentType: map[string]any{"schema": d.Body}}}
	}
	ctype := d.ResponseType
	if ctype == "" {
		ctype = jsonContentType
	}
	schema := d.Response
	if schema == nil {
		schema = map[string]any{}
	}
	ok := map[string]any{"description": "Success.", "content": map[string]any{ctype: map[string]any{"schema": schema}}}
	if d.Cached {
		ok["headers"] = map[string]any{"ETag": map[string]any{"$ref": "#/components/headers/ETag"}}
	}
	responses := map[string]any{
		"200": ok,
		"429": map[string]any{"$ref": "#/components/responses/RateLimited"},
	}
	if d.Cached {
		responses["304"] = map[string]any{"description": "Not modified (If-None-Match matched the ETag)."}
	}
	if len(d.Params) > 0 || d.Body != nil {
		responses["400"] = map[string]any{"$ref": "#/components/responses/InvalidInput"}
	}
	if d.Body != nil {
		responses["413"] = map[string]any{"$ref": "#/components/responses/TooLarge"}
	}
	for status, desc := range d.Responses {
		r := map[string]any{"description": desc}
		if status != http.StatusAccepted && status != http.StatusNoContent {
			r["content"] = map[string]any{ctype: map[string]any{"schema": schema}}
		}
		responses[fmt.Sprint(status)] = r
	}
	op["responses"] = responses
	return op
}

// oasResponses are the shared error answers.
func (s *Service) oasResponses() map[string]any {
	problem := func(desc string) map[string]any {
		return map[string]any{"description": desc, "content": map[string]any{wire.ProblemContentType: map[string]any{"schema": oasRef("Problem")}}}
	}
	rl := problem("Too many requests from this client address (free routes only).")
	rl["headers"] = map[string]any{"Retry-After": map[string]any{"$ref": "#/components/headers/RetryAfter"}}
	return map[string]any{
		"InvalidInput": problem("Invalid input (no payment is asked): errors lists each broken rule as {field, rule, message}."),
		"TooLarge":     problem(fmt.Sprintf("The request body is over the limit of %d bytes.", s.cfg.Catalog.BodyLimit())),
		"RateLimited":  rl,
		"Unavailable":  problem("The upstream market-data terminal is unavailable; the availability check runs before any 402, so nothing is paid."),
		"Timeout":      problem("The tool ran out of time; nothing is settled."),
		"Internal":     problem("Internal error; nothing is settled."),
		"PaymentRequired": map[string]any{
			"description": "Payment required: the PAYMENT-REQUIRED header carries the x402 v2 requirements (also in the body, with the x402 v1 fields). Also answered when a payment is refused (the reason is in error).",
			"headers":     map[string]any{x402.HeaderPaymentRequired: map[string]any{"$ref": "#/components/headers/PaymentRequired"}},
			"content":     map[string]any{jsonContentType: map[string]any{"schema": oasRef("PaymentRequiredBody")}},
		},
	}
}

// oasComponentSchemas are the shared schemas (the tools' are added by
// oasPaidOperation).
func (s *Service) oasComponentSchemas() map[string]any {
	fieldError := oasObject(map[string]any{
		"field":   oasString("Field path in the input's JSON notation (bars[3].high); empty for the whole body."),
		"rule":    oasString("The broken rule (required, gt, oneof, unknown_field, json, ...)."),
		"message": oasString("Names the field and the rule."),
	}, "field", "rule", "message")
	item := oasObject(map[string]any{
		"key":           oasString("Catalog key (risk-levels, xau-quote)."),
		"name":          oasString(""),
		"method":        map[string]any{"type": "string", "enum": []string{"GET", "POST"}},
		"path":          oasString(""),
		"url":           oasString("Absolute URL."),
		"priceUsd":      oasNumber("Price per call in USD (USDC)."),
		"network":       oasString("CAIP-2 payment network."),
		"description":   oasString(""),
		"tags":          oasArray(oasString(""), ""),
		"inputSchema":   oasAnyObject("JSON Schema 2020-12 of the input."),
		"exampleInput":  map[string]any{"description": "A realistic input."},
		"outputExample": map[string]any{"description": "The tool's output for exampleInput."},
		"operationId":   oasString(""),
		"price":         oasString("Price with six decimals (0.005000)."),
		"inputLocation": map[string]any{"type": "string", "enum": []string{"query", "body"}},
		"outputSchema":  oasAnyObject("JSON Schema 2020-12 of the 200 answer."),
		"terminal":      oasBool("Reads the trading terminal (503 before any 402 when it is down)."),
		"transports":    oasRef("Transports"),
	}, "transports", "key", "name", "method", "path", "url", "priceUsd", "network", "description", "tags", "inputSchema", "exampleInput", "outputExample")
	link := oasObject(map[string]any{"method": oasString(""), "url": oasString(""), "purpose": oasString("")}, "method", "url", "purpose")
	alt := oasObject(map[string]any{
		"key": oasString(""), "name": oasString(""), "method": oasString(""), "url": oasString(""),
		"priceUsd": oasNumber(""), "matchScore": oasNumber(""),
	}, "key", "name", "method", "url", "priceUsd", "matchScore")
	counts := oasArray(oasObject(map[string]any{"name": oasString(""), "count": oasInt("")}, "name", "count"), "")
	return map[string]any{
		"Problem": oasObject(map[string]any{
			"type":      oasString("urn:svc:problem:<code>"),
			"title":     oasString(""),
			"status":    oasInt(""),
			"detail":    oasString(""),
			"instance":  oasString("The request path."),
			"code":      oasString("invalid_input, too_large, unavailable, timeout, internal, rate_limited, not_found, method_not_allowed, ..."),
			"errors":    oasArray(oasRef("FieldError"), "Each broken input rule."),
			"requestId": oasString("Repeats the X-Request-Id header."),
		}, "type", "title", "status"),
		"FieldError": fieldError,
		"PaymentTerms": oasObject(map[string]any{
			"protocol": oasString("x402"), "x402Version": oasInt(""), "scheme": oasString("exact"), "network": oasString("CAIP-2."),
			"asset": oasString("USDC token address."), "currency": oasString(""), "priceUsd": oasNumber(""),
			"price": oasString("Six decimals."), "amount": oasString("USDC atomic units."), "payTo": oasString(""), "maxTimeoutSeconds": oasInt(""),
		}, "protocol", "x402Version", "scheme", "network", "asset", "currency", "priceUsd", "price", "amount", "payTo", "maxTimeoutSeconds"),
		"Transports": map[string]any{
			"type":        "object",
			"description": "The three ways to buy the tool, all on terms.",
			"required":    []string{"terms", "http", "mcp", "a2a"},
			"properties": map[string]any{
				"terms": oasRef("PaymentTerms"),
				"http": oasObject(map[string]any{
					"method": oasString(""), "path": oasString(""), "url": oasString(""),
					"inputLocation":         map[string]any{"type": "string", "enum": []string{"query", "body"}},
					"paymentRequiredHeader": oasString(""), "paymentHeader": oasString(""), "settlementHeader": oasString(""), "how": oasString(""),
				}, "method", "path", "url", "paymentHeader", "how"),
				"mcp": oasObject(map[string]any{
					"url": oasString("The MCP endpoint."), "method": oasString(MCPCallMethod), "tool": oasString("MCP tool name: the operationId."),
					"paymentMeta": oasString("params._meta key of the PaymentPayload."), "settlementMeta": oasString("result._meta key of the settlement."),
					"extension": oasString("Capability of the extension binding."), "how": oasString(""),
				}, "url", "method", "tool", "paymentMeta", "how"),
				"a2a": oasObject(map[string]any{
					"url": oasString("The A2A endpoint."), "card": oasString("The agent card."), "skill": oasString("Agent card skill id: the catalog key."),
					"extension": oasString("URI of the A2A x402 extension."), "dataPart": oasAnyObject("The data part asking for the tool: {tool, input}."),
					"paymentRequiredMeta": oasString(""), "paymentMeta": oasString(""), "receiptsMeta": oasString(""), "how": oasString(""),
				}, "url", "skill", "extension", "dataPart", "how"),
			},
		},
		"CatalogItem": item,
		"Link":        link,
		"Alternative": alt,
		"PaymentRequiredBody": map[string]any{
			"type":        "object",
			"description": "The x402 v1 offer, read by x402Version 1 clients. x402 v2 clients read the PAYMENT-REQUIRED header (base64 JSON PaymentRequired, x402Version 2).",
			"properties": map[string]any{
				"x402Version": oasInt("1"),
				"error":       oasString(""),
				"accepts":     oasArray(oasAnyObject("v1 PaymentRequirements: scheme, network (base), maxAmountRequired, resource, description, mimeType, outputSchema, payTo, maxTimeoutSeconds, asset, extra."), ""),
			},
		},
		"FindResult": oasObject(map[string]any{
			"ok":    oasBool(""),
			"query": oasString(""),
			"matches": oasArray(map[string]any{"allOf": []any{oasRef("CatalogItem"), oasObject(map[string]any{
				"matchScore":    oasNumber("Relevance in (0, 1), comparable across queries."),
				"matchedTokens": oasArray(oasString(""), "Query tokens that contributed."),
			}, "matchScore", "matchedTokens")}}, "Best first."),
		}, "ok", "query", "matches"),
		"CatalogPage": oasObject(map[string]any{
			"ok": oasBool(""), "total": oasInt("Tools after filtering."), "offset": oasInt(""), "limit": oasInt(""),
			"items": oasArray(oasRef("CatalogItem"), ""),
		}, "ok", "total", "offset", "limit", "items"),
		"RoutePlan": oasObject(map[string]any{
			"ok": oasBool(""), "query": oasString(""), "matched": oasBool("False when no tool matches."), "message": oasString(""),
			"tool": oasString("Catalog key."), "operationId": oasString(""), "name": oasString(""),
			"matchScore": oasNumber(""), "matchedTokens": oasArray(oasString(""), ""),
			"method": oasString(""), "url": oasString("Full URL; for GET tools with the input as query string."), "path": oasString(""),
			"headers": oasMap(oasString(""), "Headers to send."),
			"body":    map[string]any{"description": "JSON body of a POST tool."},
			"price": oasObject(map[string]any{
				"usd": oasNumber(""), "fixed6": oasString("Six decimals."), "atomic": oasString("USDC atomic units."), "currency": oasString(""),
			}, "usd", "fixed6", "atomic", "currency"),
			"network": oasString(""), "asset": oasString(""), "payTo": oasString(""), "scheme": oasString(""), "x402Version": oasInt(""),
			"inputSource": map[string]any{"type": "string", "enum": []string{"caller", "example"}},
			"inputValid":  oasBool("Whether the input passes the tool's own validation."),
			"inputErrors": oasArray(oasRef("FieldError"), ""),
			"inputSchema": oasAnyObject(""),
			"steps": oasArray(oasObject(map[string]any{
				"step": oasInt(""), "action": oasString(""), "header": oasString(""), "description": oasString(""),
			}, "step", "action", "description"), "The x402 exchange."),
			"curl": oasString("First request (answered 402)."), "curlPaid": oasString("The paid retry."), "devMode": oasBool(""),
			"transports":   oasRef("Transports"),
			"alternatives": oasArray(oasRef("Alternative"), ""),
			"nextRoutes":   oasArray(oasRef("Link"), ""),
		}, "ok", "query", "matched", "message", "inputValid", "inputErrors", "alternatives", "nextRoutes"),
		"TryResult": oasObject(map[string]any{
			"ok": oasBool(""), "mode": map[string]any{"type": "string", "enum": []string{"tour", "match", "no_match"}},
			"query": oasString(""), "message": oasString(""),
			"service": oasObject(map[string]any{
				"name": oasString(""), "description": oasString(""), "version": oasString(""), "tools": oasInt(""),
				"network": oasString(""), "currency": oasString(""), "protocol": oasString(""), "devMode": oasBool(""),
			}, "name", "version", "tools", "network"),
			"match": oasObject(map[string]any{
				"key": oasString(""), "name": oasString(""), "method": oasString(""), "path": oasString(""), "url": oasString(""),
				"priceUsd": oasNumber(""), "price": oasString(""), "network": oasString(""), "summary": oasString(""),
				"tags": oasArray(oasString(""), ""), "matchScore": oasNumber(""), "matchedTokens": oasArray(oasString(""), ""),
				"exampleInput": map[string]any{}, "outputExample": map[string]any{},
			}, "key", "method", "url", "priceUsd", "exampleInput", "outputExample"),
			"alternatives": oasArray(oasRef("Alternative"), ""),
			"groups": oasArray(oasObject(map[string]any{
				"group": oasString(""), "title": oasString(""),
				"tools": oasArray(oasObject(map[string]any{
					"key": oasString(""), "name": oasString(""), "method": oasString(""), "url": oasString(""), "priceUsd": oasNumber(""),
				}, "key", "method", "url", "priceUsd"), ""),
			}, "group", "tools"), ""),
			"freeRoutes": oasArray(oasRef("Link"), ""),
			"nextRoutes": oasArray(oasRef("Link"), ""),
		}, "ok", "mode", "message", "service", "nextRoutes"),
		"StatsSnapshot": oasObject(map[string]any{
			"ok": oasBool(""), "surface": oasString(""), "purpose": oasString(""), "since": oasString("RFC 3339."),
			"uptimeSeconds": oasInt(""), "requests": oasInt(""), "requestsPerMinute": oasInt("Sliding 60 s window."),
			"paymentRequired": oasInt("402s issued."), "settled": oasInt("Paid calls settled."), "discoveryHits": oasInt(""),
			"status": oasMap(oasInt(""), "By status class."), "clients": oasMap(oasInt(""), "By client kind: mcp, a2a, x402, browser, crawler, other."),
			"routes": counts, "sources": counts,
			"limits":  oasAnyObject(""),
			"privacy": oasString(""),
		}, "ok", "surface", "requests", "requestsPerMinute", "paymentRequired", "settled", "routes", "sources", "clients", "privacy"),
		"X402Manifest": oasObject(map[string]any{
			"x402Version": oasInt(""), "manifestVersion": oasString(""), "version": oasString(""), "name": oasString(""), "purpose": oasString(""),
			"rails":         oasArray(oasAnyObject(""), "Payment rails: network, asset, payTo, facilitator."),
			"resources":     oasArray(oasAnyObject(""), "Paid resources."),
			"freeResources": oasArray(oasAnyObject(""), "Free resources."),
			"transports":    oasAnyObject("How HTTP, MCP and A2A take a payment."),
			"links":         oasMap(oasString(""), ""),
		}, "x402Version", "rails", "transports", "resources", "freeResources", "links"),
		"AgentCard": oasObject(map[string]any{
			"name": oasString(""), "description": oasString(""), "version": oasString(""),
			"supportedInterfaces": oasArray(oasAnyObject(""), ""), "url": oasString(""), "preferredTransport": oasString(""),
			"protocolVersion": oasString(""), "capabilities": oasAnyObject(""),
			"defaultInputModes": oasArray(oasString(""), ""), "defaultOutputModes": oasArray(oasString(""), ""),
			"skills": oasArray(oasAnyObject(""), ""),
		}, "name", "description", "version", "supportedInterfaces", "url", "capabilities", "defaultInputModes", "defaultOutputModes", "skills"),
	}
}

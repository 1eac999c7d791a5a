package documents

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/seed1284c1d2/svc/discovery/stats"
	"github.com/seed1284c1d2/svc/wire"
	"github.com/seed1284c1d2/svc/x402"
	x402a2a "github.com/seed1284c1d2/svc/x402/a2a"
	x402mcp "github.com/seed1284c1d2/svc/x402/mcp"
)

// ManifestVersion is the version of the format of the svc manifests
// (svc-router, svc-distribution, svc-magnet, the x402 manifest).
const ManifestVersion = "1.0"

// ServiceDescription says what the service is, in every document.
const ServiceDescription = "Small, mostly deterministic tools for autonomous agents, sold per call with x402 v2 payments in USDC over HTTP, MCP and A2A: " +
	"trading-session state (Europe/Vienna), risk-level, strategy-grade and tick P&L calculators, gold (XAUUSD) quote, bars and market state " +
	"from a read-only trading terminal, local CSV and JSON profiling, JWT decoding, EVM address syntax, OHLCV statistics and JavaScript " +
	"regular expressions. Discovery (find, route, catalog, try, MCP, A2A, manifests) is free."

// Paths of the static documents.
const (
	PathOpenAPI          = "/openapi.json"
	PathSkill            = "/skill.md"
	PathX402Manifest     = "/.well-known/x402"
	PathRouterFeed       = "/.well-known/svc-router.json"
	PathDistribution     = "/.well-known/svc-distribution.json"
	PathMagnet           = "/.well-known/svc-magnet.json"
	PathMagnetAPI        = "/api/magnet"
	PathAmplifierStats   = "/api/amplifier/stats"
	PathDistributionStat = "/api/distribution/stats"
	PathMagnetStats      = "/api/magnet/stats"
)

// buildDocs builds every static document once.
func (s *Set) buildDocs() error {
	s.docs = map[string]*staticDoc{}
	oas, err := s.buildOpenAPI()
	if err != nil {
		return err
	}
	s.docs[PathOpenAPI] = newStaticDoc(oas, jsonContentType)
	s.docs[PathSkill] = newStaticDoc([]byte(s.buildSkill()), markdownType)
	builders := []struct {
		path string
		doc  func() (any, error)
	}{
		{PathX402Manifest, s.x402Manifest},
		{PathRouterFeed, func() (any, error) { return s.routerFeed(), nil }},
		{PathDistribution, func() (any, error) { return s.distributionManifest(), nil }},
		{PathMagnet, func() (any, error) { return s.magnetManifest(), nil }},
		{wire.PathAgentCard, func() (any, error) { return s.agentCard(), nil }},
	}
	for _, b := range builders {
		v, err := b.doc()
		if err != nil {
			return err
		}
		body, err := discMarshal(v)
		if err != nil {
			return fmt.Errorf("discovery: encoding %s: %w", b.path, err)
		}
		s.docs[b.path] = newStaticDoc(body, jsonContentType)
	}
	if err := s.buildEntryDocs(); err != nil {
		return err
	}
	s.docs[PathMagnetAPI] = s.docs[PathMagnet]
	s.docs[wire.PathAgentCardLegacy] = s.docs[wire.PathAgentCard]
	s.card = s.docs[wire.PathAgentCard]
	return nil
}

// Document returns the bytes of a static document by path (PathOpenAPI,
// PathSkill, PathX402Manifest, ...) and whether it exists. The bytes are
// a copy.
func (s *Set) Document(path string) ([]byte, bool) {
	d, ok := s.docs[path]
	if !ok {
		return nil, false
	}
	return bytes.Clone(d.body), true
}

// discMarshal encodes v as indented JSON without HTML escaping, ending
// with a newline.
func discMarshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// links are the links of every manifest: the built-in ones plus
// Config.ManifestLinks.
func (s *Set) links() map[string]string {
	m := map[string]string{
		"self":              s.base,
		"find":              s.absURL("/api/find"),
		"route":             s.absURL("/api/route"),
		"catalog":           s.absURL("/api/catalog"),
		"try":               s.absURL("/api/try"),
		"openapi":           s.absURL(PathOpenAPI),
		"skill":             s.absURL(PathSkill),
		"x402":              s.absURL(PathX402Manifest),
		"router":            s.absURL(PathRouterFeed),
		"distribution":      s.absURL(PathDistribution),
		"magnet":            s.absURL(PathMagnet),
		"agentCard":         s.absURL(wire.PathAgentCard),
		"mcp":               s.absURL(wire.PathMCP),
		"a2a":               s.absURL(wire.PathA2A),
		"amplifierStats":    s.absURL(PathAmplifierStats),
		"distributionStats": s.absURL(PathDistributionStat),
		"magnetStats":       s.absURL(PathMagnetStats),
	}
	for k, v := range s.cfg.ManifestLinks {
		if _, taken := m[k]; !taken {
			m[k] = v
		}
	}
	return m
}

// paymentHeaders names the x402 headers.
func paymentHeaders() map[string]string {
	return map[string]string{
		"paymentRequired":  x402.HeaderPaymentRequired,
		"paymentSignature": x402.HeaderPaymentSignature,
		"paymentResponse":  x402.HeaderPaymentResponse,
	}
}

// rail is the payment rail of the service.
func (s *Set) rail() map[string]any {
	return map[string]any{
		"scheme":            x402.SchemeExact,
		"network":           s.network.CAIP2,
		"chainId":           s.network.ChainID,
		"asset":             s.asset,
		"assetSymbol":       "USDC",
		"decimals":          s.network.USDCDecimals,
		"payTo":             s.payTo,
		"facilitator":       s.facil,
		"transferMethod":    "eip3009",
		"eip712":            map[string]any{"name": s.network.EIP712Name, "version": s.network.EIP712Version},
		"maxTimeoutSeconds": x402.DefaultMaxTimeoutSeconds,
		"devMode":           s.cfg.DevMode,
		"testnet":           s.network.Testnet,
	}
}

// x402Manifest is /.well-known/x402.
func (s *Set) x402Manifest() (any, error) {
	resources := []map[string]any{}
	for i, t := range s.tools {
		it := s.items[i]
		offer := s.offers[i]
		resources = append(resources, map[string]any{
			"key":           t.Key,
			"operationId":   t.OperationID,
			"name":          t.Name,
			"method":        t.Method,
			"url":           it.URL,
			"path":          t.Path,
			"price":         t.PriceFixed6(),
			"priceUsd":      it.PriceUSD,
			"amount":        offer.Accepts[0].Amount,
			"currency":      "USDC",
			"description":   offer.Resource.Description,
			"mimeType":      offer.Resource.MimeType,
			"inputLocation": t.InputLocation,
			"inputSchema":   json.RawMessage(t.InputSchema),
			"outputSchema":  json.RawMessage(t.OutputSchema),
			"terminal":      t.Terminal,
			"tags":          t.Tags,
			// The offer as the 402 states it: resource, accepts and
			// extensions (the bazaar description, without the output
			// schema the 402 leaves out; it is outputSchema above).
			"resource":   offer.Resource,
			"accepts":    offer.Accepts,
			"extensions": offer.Extensions,
			"transports": s.buy[i].Clone(),
		})
	}
	free := []map[string]any{}
	for _, d := range s.cfg.Routes {
		free = append(free, map[string]any{"method": d.Method, "url": s.absURL(d.Path), "purpose": d.Summary, "free": true})
	}
	return map[string]any{
		"x402Version":     x402.Version,
		"manifestVersion": ManifestVersion,
		"version":         s.cfg.Version,
		"name":            s.cfg.Name,
		"description":     ServiceDescription,
		"purpose":         "Payment manifest: how every paid resource of this service is paid for with x402 v2 (exact scheme, EIP-3009 USDC) over HTTP, MCP and A2A on the same terms, and which resources are free.",
		"protocol":        "x402",
		"headers":         paymentHeaders(),
		"flow": []string{
			"send the request without payment",
			"receive 402 with the " + x402.HeaderPaymentRequired + " header (base64 JSON PaymentRequired)",
			"sign an EIP-3009 TransferWithAuthorization for the chosen accepts entry (x402 exact scheme)",
			"retry the identical request with the " + x402.HeaderPaymentSignature + " header (base64 JSON PaymentPayload)",
			"read the 200 answer and the " + x402.HeaderPaymentResponse + " header (base64 JSON SettleResponse)",
		},
		"rails":         []map[string]any{s.rail()},
		"transports":    s.transportSummary(),
		"resources":     resources,
		"freeResources": free,
		"links":         s.links(),
		"devMode":       s.cfg.DevMode,
	}, nil
}

// mcpToolNames are the MCP names of the paid tools (operation ids), in
// catalog order.
func (s *Set) mcpToolNames() []string {
	out := make([]string, len(s.buy))
	for i, tr := range s.buy {
		out[i] = tr.MCP.Tool
	}
	return out
}

// toolKeys are the catalog keys (the A2A skill ids), in catalog order.
func (s *Set) toolKeys() []string {
	out := make([]string, len(s.tools))
	for i, t := range s.tools {
		out[i] = t.Key
	}
	return out
}

// toolSummaries is the short tool list of the feeds.
func (s *Set) toolSummaries() []map[string]any {
	out := []map[string]any{}
	for i, t := range s.tools {
		it := s.items[i]
		out = append(out, map[string]any{
			"key": t.Key, "operationId": t.OperationID, "name": t.Name, "method": t.Method, "url": it.URL, "path": t.Path,
			"priceUsd": it.PriceUSD, "price": t.PriceFixed6(), "network": s.network.CAIP2, "tags": t.Tags,
			"inputLocation": t.InputLocation, "terminal": t.Terminal, "summary": Summary(t.Description),
			"transports": s.buy[i].Clone(),
		})
	}
	return out
}

// routerFeed is /.well-known/svc-router.json.
func (s *Set) routerFeed() any {
	return map[string]any{
		"manifestVersion": ManifestVersion,
		"version":         s.cfg.Version,
		"name":            s.cfg.Name,
		"description":     ServiceDescription,
		"purpose":         "Router feed: how to turn a need in words into a paid call (find, route, catalog, try) and the list of paid tools with keys, prices, URLs and how to buy each over HTTP, MCP and A2A.",
		"router": map[string]any{
			"find":    map[string]any{"method": "GET", "url": s.absURL("/api/find"), "params": map[string]any{"q": "need in words, 1-500 characters (required)", "limit": "1-20, default 5"}},
			"route":   map[string]any{"method": "POST", "url": s.absURL("/api/route"), "body": map[string]any{"query": "need in words or a tool key (required)", "input": "the tool's input object (optional; validated for free)"}},
			"catalog": map[string]any{"method": "GET", "url": s.absURL("/api/catalog"), "params": map[string]any{"offset": ">= 0, default 0", "limit": "1-100, default 50", "q": "free-text filter", "category": "tag filter"}},
			"try":     map[string]any{"method": "GET", "url": s.absURL("/api/try"), "params": map[string]any{"q": "optional need in words"}},
			"mcp":     map[string]any{"method": "POST", "url": s.absURL(wire.PathMCP), "tools": []string{"find_tool", "route_tool", "catalog", "tool_info"}, "paidTools": s.mcpToolNames()},
			"a2a":     map[string]any{"method": "POST", "url": s.absURL(wire.PathA2A), "card": s.absURL(wire.PathAgentCard), "extension": x402a2a.ExtensionURI, "paidSkills": s.toolKeys()},
		},
		"categories": s.cfg.Categories,
		"payment":    map[string]any{"protocol": "x402", "x402Version": x402.Version, "network": s.network.CAIP2, "asset": s.asset, "currency": "USDC", "payTo": s.payTo, "headers": paymentHeaders()},
		"transports": s.transportSummary(),
		"tools":      s.toolSummaries(),
		"links":      s.links(),
		"devMode":    s.cfg.DevMode,
	}
}

// distributionManifest is /.well-known/svc-distribution.json.
func (s *Set) distributionManifest() any {
	return map[string]any{
		"manifestVersion": ManifestVersion,
		"version":         s.cfg.Version,
		"name":            s.cfg.Name,
		"description":     ServiceDescription,
		"purpose":         "Distribution manifest: every channel through which agents and programs can discover and call this service, and how inbound traffic is attributed (aggregate counters only).",
		"channels": []map[string]any{
			{"kind": "http", "url": s.base, "description": "Paid tools over HTTP with x402 v2; free discovery routes", "spec": s.absURL(PathOpenAPI)},
			{"kind": "openapi", "url": s.absURL(PathOpenAPI), "version": OpenAPIVersion},
			{"kind": "mcp", "url": s.absURL(wire.PathMCP), "transport": "streamable-http", "protocolVersion": wire.MCPProtocolVersion, "legacyInitialize": true,
				"description": "Free discovery tools, and every paid tool by its operation id, paid with the x402 MCP transport (params._meta[\"" + x402mcp.MetaPayment + "\"]; extension " + x402mcp.ExtensionPayment + ")", "paidTools": s.mcpToolNames()},
			{"kind": "a2a", "url": s.absURL(wire.PathA2A), "card": s.absURL(wire.PathAgentCard), "protocolVersions": []string{wire.A2AVersion, wire.A2ALegacyVersion},
				"description": "Free discovery skills, and every paid tool as a skill (its key), paid with the A2A x402 extension", "extension": x402a2a.ExtensionURI, "paidSkills": s.toolKeys()},
			{"kind": "x402", "url": s.absURL(PathX402Manifest), "x402Version": x402.Version},
			{"kind": "skill", "url": s.absURL(PathSkill), "mediaType": "text/markdown"},
			{"kind": "router", "url": s.absURL(PathRouterFeed)},
			{"kind": "beacon", "url": s.absURL(PathMagnet)},
			{"kind": "go", "module": "github.com/seed1284c1d2/svc", "description": "The tools as plain Go functions: no HTTP, no payment"},
		},
		"attribution": map[string]any{
			"sourceParam": "src",
			"description": "Append ?src=<your-id> (letters, digits, . _ -; at most 48 characters) to any URL to be counted in the aggregate per-source counters. Identifier-like values (e-mail addresses, wallets, tokens) are redacted; at most 100 distinct sources are kept.",
			"referral":    "A paid call carrying ref (query) or X-Ref (header) attributes the settled payer to the referral code's owner (membership club).",
			"stats":       s.absURL(PathDistributionStat),
		},
		"pricing":  s.priceRange(),
		"payment":  map[string]any{"protocol": "x402", "x402Version": x402.Version, "network": s.network.CAIP2, "asset": s.asset, "currency": "USDC", "transports": []string{TransportHTTP, TransportMCP, TransportA2A}},
		"tools":    len(s.tools),
		"links":    s.links(),
		"privacy":  stats.Privacy,
		"devMode":  s.cfg.DevMode,
		"freeOnly": []string{"discovery", "manifests", "stats", "club"},
	}
}

// priceRange is the cheapest and dearest tool.
func (s *Set) priceRange() map[string]any {
	lo, hi := 0, 0
	for i, t := range s.tools {
		if t.PriceAtomic < s.tools[lo].PriceAtomic {
			lo = i
		}
		if t.PriceAtomic > s.tools[hi].PriceAtomic {
			hi = i
		}
	}
	return map[string]any{
		"currency": "USDC", "minUsd": s.items[lo].PriceUSD, "maxUsd": s.items[hi].PriceUSD,
		"min": s.tools[lo].PriceFixed6(), "max": s.tools[hi].PriceFixed6(), "unit": "per call",
	}
}

// magnetManifest is /.well-known/svc-magnet.json and /api/magnet.
func (s *Set) magnetManifest() any {
	keys := make([]string, len(s.tools))
	for i, t := range s.tools {
		keys[i] = t.Key
	}
	return map[string]any{
		"manifestVersion": ManifestVersion,
		"version":         s.cfg.Version,
		"name":            s.cfg.Name,
		"beacon":          true,
		"description":     ServiceDescription,
		"purpose":         "Discovery beacon: a compact document for scanners and agents saying what this service sells, for how much, and where to start.",
		"capabilities":    s.cfg.Categories,
		"tools":           keys,
		"pricing":         s.priceRange(),
		"payment":         map[string]any{"protocol": "x402", "x402Version": x402.Version, "network": s.network.CAIP2, "currency": "USDC", "transports": []string{TransportHTTP, TransportMCP, TransportA2A}},
		"entryPoints": []Link{
			{Method: http.MethodGet, URL: s.absURL("/api/try"), Purpose: "free tour and previews"},
			{Method: http.MethodGet, URL: s.absURL("/api/find") + "?q=", Purpose: "rank the tools for a need in words"},
			{Method: http.MethodPost, URL: s.absURL("/api/route"), Purpose: "call plan with free input validation"},
			{Method: http.MethodGet, URL: s.absURL(wire.PathAgentCard), Purpose: "A2A agent card"},
			{Method: http.MethodPost, URL: s.absURL(wire.PathMCP), Purpose: "MCP server (free discovery; every paid tool with x402)"},
			{Method: http.MethodPost, URL: s.absURL(wire.PathA2A), Purpose: "A2A agent (free discovery; every paid tool with the x402 extension)"},
			{Method: http.MethodGet, URL: s.absURL(PathOpenAPI), Purpose: "OpenAPI 3.1"},
		},
		"stats":   s.absURL(PathMagnetStats),
		"privacy": stats.Privacy,
		"links":   s.links(),
		"devMode": s.cfg.DevMode,
	}
}

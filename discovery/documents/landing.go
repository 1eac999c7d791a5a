package documents

import (
	"bytes"
	"fmt"
	"html/template"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/seed1284c1d2/svc/wire"
	"github.com/seed1284c1d2/svc/x402/facilitator"
	x402mcp "github.com/seed1284c1d2/svc/x402/mcp"
)

// Paths of the entry documents: the landing page, llms.txt, robots.txt and
// the MCP registry description of the remote MCP endpoint.
const (
	PathLanding   = "/"
	PathLLMs      = "/llms.txt"
	PathRobots    = "/robots.txt"
	PathMCPServer = "/server.json"
)

// MCPServerSchema is the JSON Schema of the MCP registry's server.json
// that /server.json declares in its $schema member.
const MCPServerSchema = "https://static.modelcontextprotocol.io/schemas/2025-12-11/server.schema.json"

// RepositoryURL is the source repository named in /server.json.
const RepositoryURL = "https://github.com/seed1284c1d2/svc"

// mcpServerDescription is the server.json description: at most 100
// characters (the registry's limit).
const mcpServerDescription = "Deterministic tools for agents (trading, gold, CSV, JSON, JWT, EVM, regex), paid per call via x402"

// Media types of the entry documents.
const (
	htmlType = "text/html; charset=utf-8"
	// MediaPlain is the media type of /llms.txt and /robots.txt.
	MediaPlain = "text/plain; charset=utf-8"
	plainType  = MediaPlain
)

// Landing is the JSON form of the landing page (GET / for a client that
// does not ask for HTML): what the service is and where everything is.
type Landing struct {
	Name        string            `json:"name"`
	Description string            `json:"description"`
	Version     string            `json:"version"`
	DevMode     bool              `json:"devMode"`
	Network     string            `json:"network"`
	Links       map[string]string `json:"links"`
	Tools       []LandingTool     `json:"tools"`
}

// LandingTool is one paid tool on the landing page.
type LandingTool struct {
	Key      string `json:"key"`
	Name     string `json:"name"`
	Method   string `json:"method"`
	URL      string `json:"url"`
	PriceUSD string `json:"priceUsd"`
	Summary  string `json:"summary"`
}

// MCPServer is the MCP registry's server.json describing the remote MCP
// endpoint (/mcp, streamable HTTP).
type MCPServer struct {
	Schema      string         `json:"$schema"`
	Name        string         `json:"name"`
	Title       string         `json:"title"`
	Description string         `json:"description"`
	Version     string         `json:"version"`
	WebsiteURL  string         `json:"websiteUrl"`
	Repository  MCPRepository  `json:"repository"`
	Remotes     []MCPTransport `json:"remotes"`
}

// MCPRepository is the source repository of a server.json.
type MCPRepository struct {
	URL    string `json:"url"`
	Source string `json:"source"`
}

// MCPTransport is a remote transport of a server.json.
type MCPTransport struct {
	Type string `json:"type"`
	URL  string `json:"url"`
}

// buildEntryDocs builds the entry documents into s.docs.
func (s *Set) buildEntryDocs() error {
	land := s.landing()
	body, err := discMarshal(land)
	if err != nil {
		return fmt.Errorf("discovery: encoding the landing page: %w", err)
	}
	s.docs[PathLanding] = newStaticDoc(body, jsonContentType)
	page, err := s.landingHTML(land)
	if err != nil {
		return err
	}
	s.landingPage = newStaticDoc(page, htmlType)
	llms := []byte(s.buildLLMs())
	s.docs[PathLLMs] = newStaticDoc(llms, plainType)
	s.landingText = newStaticDoc(llms, markdownType)
	s.docs[PathRobots] = newStaticDoc([]byte(s.buildRobots()), plainType)
	body, err = discMarshal(s.mcpServer())
	if err != nil {
		return fmt.Errorf("discovery: encoding %s: %w", PathMCPServer, err)
	}
	s.docs[PathMCPServer] = newStaticDoc(body, jsonContentType)
	return nil
}

// firstSentence returns the first sentence of a description.
func firstSentence(s string) string {
	if i := strings.Index(s, ". "); i >= 0 {
		return s[:i+1]
	}
	return s
}

// landing is the JSON landing page.
func (s *Set) landing() Landing {
	l := Landing{Name: s.cfg.Name, Description: ServiceDescription, Version: s.cfg.Version, DevMode: s.cfg.DevMode,
		Network: s.network.CAIP2, Links: s.links()}
	l.Links["llms"] = s.absURL(PathLLMs)
	l.Links["mcpServer"] = s.absURL(PathMCPServer)
	for _, t := range s.tools {
		l.Tools = append(l.Tools, LandingTool{Key: t.Key, Name: t.Name, Method: t.Method, URL: s.absURL(t.Path),
			PriceUSD: t.Price, Summary: firstSentence(t.Description)})
	}
	return l
}

// landingTemplate is the HTML landing page: no script, no external
// resource.
var landingTemplate = template.Must(template.New("landing").Parse(`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{.Name}} — pay-per-call tools for agents</title>
<link rel="alternate" type="application/json" href="{{.Links.openapi}}" title="OpenAPI">
<link rel="alternate" type="text/markdown" href="{{.Links.skill}}" title="skill.md">
<style>
body{font-family:system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem;line-height:1.5;color:#1d1d1f}
table{border-collapse:collapse;width:100%}th,td{text-align:left;padding:.3rem .5rem;border-bottom:1px solid #ddd;vertical-align:top}
code{background:#f3f3f3;padding:0 .2rem}.dev{background:#fff3cd;border:1px solid #e0c36c;padding:.5rem 1rem}
</style>
</head>
<body>
<h1>{{.Name}}</h1>
<p>{{.Description}}</p>
{{if .DevMode}}<p class="dev"><strong>Dev mode.</strong> {{.DevNote}}</p>{{end}}
<h2>For agents and developers</h2>
<ul>
<li><a href="{{.Links.catalog}}">Catalog</a> — every tool with schemas, examples and prices (<code>GET /api/catalog</code>)</li>
<li><a href="{{.Links.openapi}}">OpenAPI 3.1</a> — the whole interface</li>
<li><a href="{{.Links.skill}}">skill.md</a> — how to discover and pay, in Markdown</li>
<li><a href="{{.Links.llms}}">llms.txt</a> — the index for language models</li>
<li><a href="{{.Links.mcp}}">MCP</a> — <code>POST {{.Links.mcp}}</code> (streamable HTTP; <a href="{{.Links.mcpServer}}">server.json</a>)</li>
<li><a href="{{.Links.agentCard}}">A2A agent card</a> — <code>POST {{.Links.a2a}}</code></li>
<li><a href="{{.Links.x402}}">x402 payment manifest</a> — USDC on <code>{{.Network}}</code></li>
<li><a href="{{.Links.find}}?q=stop+loss">Find a tool</a> — <code>GET /api/find?q=...</code>, free</li>
</ul>
<h2>Tools</h2>
<table>
<thead><tr><th>Tool</th><th>Call</th><th>Price (USD)</th><th>What it does</th></tr></thead>
<tbody>
{{range .Tools}}<tr><td>{{.Name}}<br><code>{{.Key}}</code></td><td><code>{{.Method}} {{.URL}}</code></td><td>{{.PriceUSD}}</td><td>{{.Summary}}</td></tr>
{{end}}</tbody>
</table>
<p>Each call is paid with x402 v2: the first request is answered 402 with the price; sign it and retry. Invalid input is refused before any payment is asked.</p>
</body>
</html>
`))

// landingHTML renders the HTML landing page.
func (s *Set) landingHTML(l Landing) ([]byte, error) {
	var buf bytes.Buffer
	data := struct {
		Landing
		DevNote string
	}{l, "This server's local facilitator verifies payment signatures for real but settles nothing on chain (transactions start with " +
		facilitator.LocalTransactionPrefix + "). Use it to integrate, not to buy."}
	if err := landingTemplate.Execute(&buf, data); err != nil {
		return nil, fmt.Errorf("discovery: rendering the landing page: %w", err)
	}
	return buf.Bytes(), nil
}

// buildLLMs renders /llms.txt (the llms.txt convention: a title, a summary
// quote, then sections of links).
func (s *Set) buildLLMs() string {
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	p("# %s\n\n> %s\n\n", s.cfg.Name, ServiceDescription)
	p("Every paid call uses x402 v2: the first request answers 402 with a PAYMENT-REQUIRED header naming the price in USDC on %s; "+
		"sign an EIP-3009 authorization and retry with PAYMENT-SIGNATURE. Invalid input is answered 400 before any payment is asked. "+
		"The same tools are sold over MCP and A2A on the same terms.\n\n", s.network.CAIP2)
	if s.cfg.DevMode {
		p("Dev mode: this server settles nothing on chain; use it to integrate, not to buy.\n\n")
	}
	p("## Docs\n\n")
	p("- [skill.md](%s): how to discover, pay and call, with an example\n", s.absURL(PathSkill))
	p("- [OpenAPI 3.1](%s): the whole interface, with x-payment-info per paid route\n", s.absURL(PathOpenAPI))
	p("- [Catalog](%s): every tool with input schema, example input and output, price\n", s.absURL("/api/catalog"))
	p("- [Find](%s?q=stop+loss): rank the tools for a need in words (free)\n", s.absURL("/api/find"))
	p("- [x402 manifest](%s): payment rails and every paid resource\n\n", s.absURL(PathX402Manifest))
	p("## Tools\n\n")
	for _, t := range s.tools {
		p("- [%s](%s): %s %s, $%s a call. %s\n", t.Name, s.absURL(t.Path), t.Method, t.Path, t.Price, firstSentence(t.Description))
	}
	p("\n## Protocols\n\n")
	p("- [MCP](%s): streamable HTTP; paid tools take the payment in params._meta[\"%s\"]\n", s.absURL(wire.PathMCP), x402mcp.MetaPayment)
	p("- [MCP server.json](%s): the MCP registry description of the endpoint above\n", s.absURL(PathMCPServer))
	p("- [A2A agent card](%s): the A2A x402 extension, one skill per tool; endpoint %s\n", s.absURL(wire.PathAgentCard), s.absURL(wire.PathA2A))
	return b.String()
}

// buildRobots renders /robots.txt: crawlers are welcome on the documents
// and kept off the paid routes (which answer 402) and the protocol
// endpoints (POST only).
func (s *Set) buildRobots() string {
	var b strings.Builder
	fmt.Fprintf(&b, "# %s: pay-per-call tools for agents. Start at %s or %s.\n", s.cfg.Name, s.absURL(PathLLMs), s.absURL(PathSkill))
	b.WriteString("User-agent: *\nAllow: /\n")
	seen := map[string]bool{}
	for _, t := range s.tools {
		if !seen[t.Path] {
			seen[t.Path] = true
			fmt.Fprintf(&b, "Disallow: %s\n", t.Path)
		}
	}
	fmt.Fprintf(&b, "Disallow: %s\nDisallow: %s\n", wire.PathMCP, wire.PathA2A)
	return b.String()
}

// mcpServer is /server.json: the MCP registry's description of the remote
// MCP endpoint. Its name is the reverse-DNS form of the base URL's host
// (tools.example.com → com.example.tools/svc), the namespace a DNS-verified
// publisher owns.
func (s *Set) mcpServer() MCPServer {
	return MCPServer{
		Schema: MCPServerSchema, Name: mcpRegistryName(s.base, s.cfg.Name), Title: s.cfg.Name,
		Description: mcpServerDescription, Version: s.cfg.Version, WebsiteURL: s.base,
		Repository: MCPRepository{URL: RepositoryURL, Source: "github"},
		Remotes:    []MCPTransport{{Type: "streamable-http", URL: s.absURL(wire.PathMCP)}},
	}
}

// mcpRegistryName is the registry name of the server at base: the host's
// labels reversed, a slash, and the service name (characters outside the
// registry's pattern replaced by '-').
func mcpRegistryName(base, name string) string {
	host := "localhost"
	if u, err := url.Parse(base); err == nil && u.Hostname() != "" {
		host = strings.ToLower(u.Hostname())
	}
	labels := strings.Split(strings.Trim(host, "[]."), ".")
	for i, j := 0, len(labels)-1; i < j; i, j = i+1, j-1 {
		labels[i], labels[j] = labels[j], labels[i]
	}
	ns := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '.' || r == '-' {
			return r
		}
		return '-'
	}, strings.Join(labels, "."))
	n := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-' {
			return r
		}
		return '-'
	}, name)
	return ns + "/" + n
}

// serveLanding answers GET /: HTML for a client that prefers it (a
// browser), Markdown (the llms.txt text) for one that prefers text, JSON
// otherwise.
func (s *Set) serveLanding(w http.ResponseWriter, r *http.Request) {
	w.Header().Add("Vary", "Accept")
	switch negotiate(r.Header.Get("Accept"), "application/json", "text/html", "text/markdown", "text/plain") {
	case "text/html":
		s.landingPage.ServeHTTP(w, r)
	case "text/markdown", "text/plain":
		s.landingText.ServeHTTP(w, r)
	default:
		s.docs[PathLanding].ServeHTTP(w, r)
	}
}

// negotiate picks the offer an Accept header prefers (RFC 9110 section
// 12.5.1: the highest q, then the most specific range; the first offer
// on a tie or without a header). Offers are type/subtype without
// parameters.
func negotiate(accept string, offers ...string) string {
	if strings.TrimSpace(accept) == "" {
		return offers[0]
	}
	best, bestQ, bestSpec := offers[0], -1.0, -1
	for _, offer := range offers {
		q, spec := -1.0, -1
		for _, part := range strings.Split(accept, ",") {
			mt, params, err := mime.ParseMediaType(strings.TrimSpace(part))
			if err != nil {
				continue
			}
			pq := 1.0
			if v, ok := params["q"]; ok {
				if f, err := strconv.ParseFloat(v, 64); err == nil {
					pq = f
				}
			}
			sp := -1
			typ, _, _ := strings.Cut(offer, "/")
			switch {
			case mt == offer:
				sp = 2
			case mt == typ+"/*":
				sp = 1
			case mt == "*/*":
				sp = 0
			}
			if sp > spec {
				q, spec = pq, sp
			}
		}
		if q > bestQ || (q == bestQ && spec > bestSpec) {
			best, bestQ, bestSpec = offer, q, spec
		}
	}
	if bestQ <= 0 {
		return offers[0]
	}
	return best
}

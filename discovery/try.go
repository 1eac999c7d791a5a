package discovery

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"github.com/seed1284c1d2/svc"
	"github.com/seed1284c1d2/svc/discovery/documents"
	"github.com/seed1284c1d2/svc/tools"
)

// TryResult is the answer of GET /api/try: a free preview of the service.
// Without q it is a tour (Mode "tour": the tool groups and the free
// routes); with q it is the best match (Mode "match") with its price,
// example input and output and the next routes to call, or Mode "no_match".
type TryResult struct {
	OK    bool   `json:"ok"`
	Mode  string `json:"mode"`
	Query string `json:"query,omitempty"`
	// Message is a one-line human summary.
	Message string `json:"message"`
	// Service says what is being previewed.
	Service TryService `json:"service"`
	// Match is the best match for q (mode "match").
	Match *TryMatch `json:"match,omitempty"`
	// Alternatives are the next best matches (mode "match").
	Alternatives []RouteAlternative `json:"alternatives,omitempty"`
	// Groups lists the paid tools by group (mode "tour").
	Groups []TryGroup `json:"groups,omitempty"`
	// FreeRoutes lists the free routes (mode "tour").
	FreeRoutes []documents.Link `json:"freeRoutes,omitempty"`
	// NextRoutes are the routes to call next.
	NextRoutes []documents.Link `json:"nextRoutes"`
}

// TryService describes the service in a preview.
type TryService struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	Version     string `json:"version"`
	Tools       int    `json:"tools"`
	Network     string `json:"network"`
	Currency    string `json:"currency"`
	Protocol    string `json:"protocol"`
	DevMode     bool   `json:"devMode"`
}

// TryMatch is the preview of one tool.
type TryMatch struct {
	Key           string          `json:"key"`
	Name          string          `json:"name"`
	Method        string          `json:"method"`
	Path          string          `json:"path"`
	URL           string          `json:"url"`
	PriceUSD      json.Number     `json:"priceUsd"`
	Price         string          `json:"price"`
	Network       string          `json:"network"`
	Summary       string          `json:"summary"`
	Tags          []string        `json:"tags"`
	MatchScore    float64         `json:"matchScore"`
	MatchedTokens []string        `json:"matchedTokens"`
	ExampleInput  json.RawMessage `json:"exampleInput"`
	OutputExample json.RawMessage `json:"outputExample"`
}

// TryGroup is a group of paid tools in the tour.
type TryGroup struct {
	Group string        `json:"group"`
	Title string        `json:"title"`
	Tools []TryGroupRef `json:"tools"`
}

// TryGroupRef is a tool in a TryGroup.
type TryGroupRef struct {
	Key      string      `json:"key"`
	Name     string      `json:"name"`
	Method   string      `json:"method"`
	URL      string      `json:"url"`
	PriceUSD json.Number `json:"priceUsd"`
}

// Try returns a free preview. Without q (blank) it is a tour: the tool
// groups with their prices and URLs, and every free route. With q (at most
// 500 characters) it is the best match (an exact key, operation id, path
// or URL first, else the finder's best) with its price, example input and
// output (produced by running the tool, see tools.Tool.OutputExample) and
// the next routes: the call plan (/api/route), the paid URL itself and
// /openapi.json; or mode "no_match" with the tour's next routes.
func (s *Service) Try(ctx context.Context, q string) (TryResult, error) {
	if err := ctx.Err(); err != nil {
		return TryResult{}, err
	}
	res := TryResult{OK: true, Service: s.tryService()}
	if strings.TrimSpace(q) == "" {
		res.Mode = "tour"
		res.Message = fmt.Sprintf("%d paid tools in %d groups, paid per call with x402 (USDC on %s); the routes below are free", len(s.tools), len(s.groups()), s.network.CAIP2)
		for _, g := range s.groups() {
			tg := TryGroup{Group: g.Tag, Title: g.Title, Tools: []TryGroupRef{}}
			for _, i := range g.Tools {
				it := s.items[i]
				tg.Tools = append(tg.Tools, TryGroupRef{Key: it.Key, Name: it.Name, Method: it.Method, URL: it.URL, PriceUSD: it.PriceUSD})
			}
			res.Groups = append(res.Groups, tg)
		}
		res.FreeRoutes = s.freeLinks()
		res.NextRoutes = s.tourNext()
		return res, nil
	}
	if n := len([]rune(q)); n > MaxQueryLen {
		return TryResult{}, svc.InvalidField("q", "max", "q must be at most %d characters, got %d", MaxQueryLen, n)
	}
	res.Query = q
	chosen, score, tokens, rest := s.resolve(q, 1+MaxAlternatives)
	if chosen < 0 {
		res.Mode = "no_match"
		res.Alternatives = s.alternatives(rest, MaxAlternatives)
		res.Message = "no paid tool matches this query well enough; the alternatives are near misses, the tour (GET /api/try without q) and the catalog list every tool"
		res.NextRoutes = s.tourNext()
		return res, nil
	}
	t, it := s.tools[chosen], s.items[chosen]
	res.Mode = "match"
	res.Match = &TryMatch{
		Key: it.Key, Name: it.Name, Method: it.Method, Path: it.Path, URL: it.URL,
		PriceUSD: it.PriceUSD, Price: it.Price, Network: it.Network, Summary: documents.Summary(it.Description),
		Tags: append([]string(nil), it.Tags...), MatchScore: score, MatchedTokens: discNonNil(tokens),
		ExampleInput: append(json.RawMessage(nil), it.ExampleInput...), OutputExample: append(json.RawMessage(nil), it.OutputExample...),
	}
	res.Alternatives = s.alternatives(rest, MaxAlternatives)
	res.Message = fmt.Sprintf("%s: %s USDC per call at %s %s; the example output below is what it returns for the example input", t.Name, t.Price, t.Method, it.URL)
	paid := it.URL
	if t.Method == http.MethodGet {
		if qv, err := tools.QueryOf(t.ExampleInput); err == nil && len(qv) > 0 {
			paid += "?" + qv.Encode()
		}
	}
	res.NextRoutes = []documents.Link{
		{Method: "POST", URL: s.absURL("/api/route"), Purpose: fmt.Sprintf(`call plan with your input validated for free: {"query": %q, "input": {...}}`, t.Key)},
		{Method: t.Method, URL: paid, Purpose: fmt.Sprintf("the paid call (%s USDC): answered 402 with PAYMENT-REQUIRED, retry with PAYMENT-SIGNATURE", t.Price)},
		{Method: "GET", URL: s.absURL("/openapi.json"), Purpose: "machine-readable interface description with the schemas (OpenAPI 3.1)"},
	}
	return res, nil
}

// tryService describes the service in previews.
func (s *Service) tryService() TryService {
	return TryService{
		Name: s.cfg.Name, Description: documents.ServiceDescription, Version: s.cfg.Version, Tools: len(s.tools),
		Network: s.network.CAIP2, Currency: "USDC", Protocol: "x402 v2 (exact scheme, EIP-3009)", DevMode: s.cfg.DevMode,
	}
}

// tourNext are the next routes of a tour.
func (s *Service) tourNext() []documents.Link {
	return []documents.Link{
		{Method: "GET", URL: s.absURL("/api/find") + "?q=stop+loss+for+a+long", Purpose: "rank the tools for a need in plain words"},
		{Method: "POST", URL: s.absURL("/api/route"), Purpose: `machine-ready call plan: {"query": "...", "input": {...}}`},
		{Method: "GET", URL: s.absURL("/api/catalog"), Purpose: "every paid tool with schemas, examples and prices"},
		{Method: "GET", URL: s.absURL("/skill.md"), Purpose: "usage summary for agents"},
	}
}

// freeLinks lists every free route (this package's and the declared
// external ones), in document order.
func (s *Service) freeLinks() []documents.Link {
	out := []documents.Link{}
	for _, d := range s.freeDocs() {
		out = append(out, documents.Link{Method: d.Method, URL: s.absURL(d.Path), Purpose: d.Summary})
	}
	return out
}

package discovery

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/seed1284c1d2/svc"
	"github.com/seed1284c1d2/svc/discovery/documents"
	"github.com/seed1284c1d2/svc/discovery/finder"
	"github.com/seed1284c1d2/svc/discovery/routedoc"
	"github.com/seed1284c1d2/svc/discovery/stats"
	"github.com/seed1284c1d2/svc/internal/clip"
	"github.com/seed1284c1d2/svc/internal/evmaddr"
	"github.com/seed1284c1d2/svc/tools"
	"github.com/seed1284c1d2/svc/x402"
)

// This file is the contract shared by every free surface: the HTTP handlers
// (/api/find, /api/route, /api/catalog, /api/try), MCP (/mcp) and A2A (/a2a)
// all answer through one Service, so a finder, a plan or a catalog page is
// computed the same way whichever protocol asks.

// Defaults of Config.
const (
	// DefaultName is the service name published in manifests and the
	// agent card.
	DefaultName = "svc"
	// DefaultVersion is the version of the service's interface, published
	// in the manifests, the agent card and the landing document.
	DefaultVersion = "2.0.0"
)

// Limits of the free surfaces' inputs.
const (
	// MaxQueryLen is the longest q (or query) accepted, in characters.
	MaxQueryLen = 500
	// DefaultFindLimit and MaxFindLimit bound /api/find's limit.
	DefaultFindLimit = 5
	MaxFindLimit     = 20
	// DefaultCatalogLimit and MaxCatalogLimit bound /api/catalog's limit.
	DefaultCatalogLimit = 50
	MaxCatalogLimit     = 100
	// MaxCategoryLen is the longest category accepted.
	MaxCategoryLen = 64
	// MaxAlternatives is the number of runner-up matches of a plan.
	MaxAlternatives = 3
	// MinMatchScore is the finder score a query's best match needs for
	// /api/route, /api/try (and A2A) to pick it, and MinCorrectedScore the
	// score of a match made through typo corrections alone (Match.Corrected).
	// Below them a query gets no match, its near misses listed as
	// alternatives. The finder's score counts every topical word of the
	// query a tool leaves unexplained against it, so a need from another
	// domain that shares a word with a tool ("order a pizza", "book a
	// flight to London") stays below. The value is the middle of the range
	// (0.38-0.42) that maximises on-topic intents routed plus off-topic
	// needs refused on the tuning half of the router's evaluation sets
	// among the thresholds that still route one-word needs naming a
	// tool's subject ("risk", "atr", "open"); see BENCHMARKS.md for the
	// curve.
	MinMatchScore     = 0.40
	MinCorrectedScore = 0.6
)

// Config is what the free surfaces need to know about the deployment.
type Config struct {
	// Catalog is the single source of truth for the paid tools.
	Catalog *tools.Catalog
	// BaseURL is the public base URL (scheme://host[:port], no trailing
	// slash). Every absolute URL a surface returns is built from it, never
	// from a request's Host header. Required; when the catalog has a base
	// URL too, both must be equal.
	BaseURL string
	// Network is the CAIP-2 network payments are taken on (eip155:8453);
	// empty means the catalog's. It must be the catalog's.
	Network string
	// PayTo is the wallet receiving payments. Required.
	PayTo string
	// Facilitator is the facilitator URL, or "" in dev mode (local
	// facilitator; the manifests name it documents.LocalFacilitator).
	Facilitator string
	// DevMode is true when the server settles nothing on chain; an empty
	// Facilitator implies it.
	DevMode bool
	// Version is the service interface version; empty means DefaultVersion
	// (2.0.0).
	Version string

	// Name is the service name in manifests, the agent card and skill.md;
	// empty means DefaultName.
	Name string
	// FreeRoutes are the free routes other components serve, as each
	// describes them (httpserver.RouteDocs for /health, /metrics, /livez
	// and /readyz; the MCP and A2A endpoints' RouteDoc; club.RouteDocs),
	// declared in /openapi.json, the manifests and the tour next to this
	// package's own routes. Pass exactly what the server mounts; a route
	// this package serves must not be listed.
	FreeRoutes []routedoc.Route
	// ManifestLinks are extra links added to the links of every manifest
	// (name → absolute URL), for instance
	// {"club": BaseURL + "/.well-known/svc-club.json"}. Names must not
	// collide with the built-in ones.
	ManifestLinks map[string]string
	// Stats are the aggregate counters the stats routes serve; nil means
	// new ones over a Traffic of their own, with the real clock. A server
	// that counts its answers gives them its Traffic (stats.New).
	Stats *stats.Aggregates
}

// FindMatch is one ranked tool: the catalog item (with its transports)
// plus why it matched.
type FindMatch struct {
	CatalogItem
	MatchScore    float64  `json:"matchScore"`
	MatchedTokens []string `json:"matchedTokens"`
}

// FindResult is the answer of GET /api/find and of the find_tool MCP tool.
type FindResult struct {
	OK      bool        `json:"ok"`
	Query   string      `json:"query"`
	Matches []FindMatch `json:"matches"`
}

// CatalogPage is the answer of GET /api/catalog and of the catalog MCP tool:
// each item says how to buy the tool over HTTP, MCP and A2A.
type CatalogPage struct {
	OK     bool          `json:"ok"`
	Total  int           `json:"total"`
	Offset int           `json:"offset"`
	Limit  int           `json:"limit"`
	Items  []CatalogItem `json:"items"`
}

// Surfaces is what a protocol adapter (HTTP handlers, MCP, A2A) needs from
// the discovery core. *Service implements it; adapters depend on this
// interface so they can be tested with the real Service.
type Surfaces interface {
	// Find ranks the paid tools for a natural-language query q (1–500
	// characters) and returns at most limit (1–20; 0 means 5) matches.
	Find(ctx context.Context, q string, limit int) (FindResult, error)
	// Route returns a machine-ready call plan for the best match of query,
	// validating input with the tool's own rules when it is given.
	Route(ctx context.Context, query string, input json.RawMessage) (RoutePlan, error)
	// Catalog returns a page of the catalog, optionally filtered by a
	// free-text q and a category (a tag). offset ≥ 0, limit 1–100 (0 means 50).
	Catalog(ctx context.Context, q, category string, offset, limit int) (CatalogPage, error)
	// ToolInfo returns the catalog item of a tool, with its transports,
	// given its key ("risk-levels"), operation id ("risk_levels") or path
	// ("/api/risk-levels").
	ToolInfo(ctx context.Context, pathOrKey string) (CatalogItem, error)
	// Try returns a free preview: the best match for q with its price,
	// example output and next routes, or a tour of the service when q is "".
	Try(ctx context.Context, q string) (TryResult, error)
}

// Service is the discovery core: the finder, the router, the catalog, the
// preview, the machine-readable documents (OpenAPI, skill.md, manifests,
// agent card) and the aggregate stats, all derived from the tools catalog
// and the Config. Documents are built once by New; a Service is immutable
// afterwards (apart from its Stats counters) and safe for concurrent use.
type Service struct {
	cfg     Config
	base    string
	network x402.Network
	asset   string
	payTo   string
	facil   string // facilitator URL or documents.LocalFacilitator

	tools []*tools.Tool
	items []tools.Item // catalog views with absolute URLs
	// offers are the tools' x402 offers for their URLs, as the HTTP
	// server answers a call without payment (tools.Tool.PaymentRequired):
	// every surface states the payment terms from them.
	offers []x402.PaymentRequired
	buy    []documents.Transports // how to buy each tool, in catalog order
	index  map[string]int
	finder *finder.Index
	stats  *stats.Aggregates

	own      []ownRoute       // routes this package serves, in Routes order
	external []routedoc.Route // free routes served by others
	docs     *documents.Set
}

var _ Surfaces = (*Service)(nil)

// New checks cfg and builds the Service: the finder index, the catalog
// views and every static document (OpenAPI, skill.md, manifests, agent
// card), so that serving them costs nothing per request.
func New(cfg Config) (*Service, error) {
	if cfg.Catalog == nil {
		return nil, errors.New("discovery: Config.Catalog is required")
	}
	base := strings.TrimRight(strings.TrimSpace(cfg.BaseURL), "/")
	u, err := url.Parse(base)
	if base == "" || err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("discovery: Config.BaseURL %q must be an absolute http(s) URL without query or fragment", cfg.BaseURL)
	}
	if cb := strings.TrimRight(cfg.Catalog.BaseURL(), "/"); cb != "" && cb != base {
		return nil, fmt.Errorf("discovery: Config.BaseURL %q differs from the catalog's base URL %q", base, cb)
	}
	if cfg.Network == "" {
		cfg.Network = cfg.Catalog.Network()
	}
	network, ok := x402.LookupNetwork(cfg.Network)
	if !ok {
		return nil, fmt.Errorf("discovery: unknown network %q", cfg.Network)
	}
	if network.CAIP2 != cfg.Catalog.Network() {
		return nil, fmt.Errorf("discovery: the catalog is priced on %s, Config.Network is %s", cfg.Catalog.Network(), network.CAIP2)
	}
	asset := network.USDC // what every offer asks for (x402.Route.Requirements)
	payTo, ok := evmaddr.Checksum(cfg.PayTo)
	if !ok || !x402.IsValidAddress(cfg.PayTo) {
		return nil, fmt.Errorf("discovery: Config.PayTo %q is not a valid EVM address", cfg.PayTo)
	}
	facil := strings.TrimSpace(cfg.Facilitator)
	if facil == "" {
		facil = documents.LocalFacilitator
		cfg.DevMode = true // the local facilitator settles nothing on chain
	}
	if cfg.Version == "" {
		cfg.Version = DefaultVersion
	}
	if cfg.Name == "" {
		cfg.Name = DefaultName
	}
	if cfg.Stats == nil {
		cfg.Stats = stats.New(nil, nil)
	}
	for name, link := range cfg.ManifestLinks {
		if lu, err := url.Parse(link); name == "" || err != nil || !lu.IsAbs() {
			return nil, fmt.Errorf("discovery: manifest link %q: %q is not an absolute URL", name, link)
		}
	}
	cfg.BaseURL = base
	s := &Service{
		cfg: cfg, base: base, network: network, asset: asset, payTo: payTo, facil: facil,
		tools: cfg.Catalog.All(), index: map[string]int{}, stats: cfg.Stats,
		external: cfg.FreeRoutes,
	}
	for i, t := range s.tools {
		it := t.Item()
		it.URL = base + t.Path
		s.items = append(s.items, it)
		offer, err := t.PaymentRequired(network.CAIP2, payTo, it.URL)
		if err != nil {
			return nil, fmt.Errorf("discovery: %w", err)
		}
		s.offers = append(s.offers, offer)
		for _, k := range []string{t.Key, t.OperationID, t.Path, t.Method + " " + t.Path, it.URL} {
			s.index[strings.ToLower(k)] = i
		}
	}
	fdocs, err := finder.DocsFromTools(s.tools)
	if err != nil {
		return nil, fmt.Errorf("discovery: %w", err)
	}
	s.finder = finder.New(fdocs)
	if err := s.buildTransports(); err != nil {
		return nil, err
	}
	if err := s.checkRoutes(); err != nil {
		return nil, err
	}
	docs, err := documents.Build(documents.Config{
		Name: cfg.Name, Version: cfg.Version, BaseURL: base, Network: network, Asset: asset, PayTo: payTo,
		Facilitator: cfg.Facilitator, DevMode: cfg.DevMode, BodyLimit: cfg.Catalog.BodyLimit(),
		Tools: s.tools, Items: s.items, Offers: s.offers, Transports: s.buy,
		Routes: s.freeDocs(), Categories: s.Categories(), ManifestLinks: cfg.ManifestLinks,
	})
	if err != nil {
		return nil, fmt.Errorf("discovery: %w", err)
	}
	s.docs = docs
	s.own = s.ownRoutes()
	return s, nil
}

// BaseURL returns the public base URL every absolute URL is built from.
func (s *Service) BaseURL() string { return s.base }

// Stats returns the aggregate counters of the stats routes (fed by the
// server that counts their Traffic, or by their Middleware).
func (s *Service) Stats() *stats.Aggregates { return s.stats }

// Finder returns the index ranking the paid tools.
func (s *Service) Finder() *finder.Index { return s.finder }

// Config returns the effective configuration (defaults filled in).
func (s *Service) Config() Config { return s.cfg }

// absURL returns the absolute URL of a path on the service.
func (s *Service) absURL(path string) string { return s.base + path }

// item returns the catalog view of tool i (a copy the caller may keep).
func (s *Service) item(i int) tools.Item {
	it := s.items[i]
	it.Tags = append([]string(nil), it.Tags...)
	return it
}

// checkQuery validates a free-text query: 1 to MaxQueryLen characters, not
// blank.
func discCheckQuery(field, q string) error {
	n := len([]rune(q))
	switch {
	case strings.TrimSpace(q) == "":
		return svc.InvalidField(field, "required", "%s is required: describe the need in words (1 to %d characters)", field, MaxQueryLen)
	case n > MaxQueryLen:
		return svc.InvalidField(field, "max", "%s must be at most %d characters, got %d", field, MaxQueryLen, n)
	}
	return nil
}

// Find ranks the paid tools for q (1–500 characters) and returns at most
// limit (1–20; 0 means 5) matches, best first, each with every catalog item
// field, its matchScore in (0, 1) and the query tokens that matched. A
// query sharing nothing with any tool has no matches (ok is still true).
func (s *Service) Find(ctx context.Context, q string, limit int) (FindResult, error) {
	if err := ctx.Err(); err != nil {
		return FindResult{}, err
	}
	var errs []svc.FieldError
	if err := discCheckQuery("q", q); err != nil {
		errs = append(errs, discFieldsOf(err)...)
	}
	if limit == 0 {
		limit = DefaultFindLimit
	}
	if limit < 1 || limit > MaxFindLimit {
		errs = append(errs, svc.FieldError{Field: "limit", Rule: "range", Message: fmt.Sprintf("limit: must be between 1 and %d, got %d", MaxFindLimit, limit)})
	}
	if len(errs) > 0 {
		return FindResult{}, &svc.Error{Kind: svc.KindInvalid, Message: "invalid input", Fields: errs}
	}
	res := FindResult{OK: true, Query: q, Matches: []FindMatch{}}
	for _, m := range s.finder.Find(q, limit) {
		i, ok := s.index[m.Key]
		if !ok {
			continue
		}
		res.Matches = append(res.Matches, FindMatch{CatalogItem: s.catalogItem(i), MatchScore: m.Score, MatchedTokens: discNonNil(m.MatchedTokens)})
	}
	return res, nil
}

// ToolInfo returns the catalog item of a tool, with how to buy it over
// each transport, named by its key
// ("risk-levels"), operation id ("risk_levels"), path ("/api/risk-levels"),
// "METHOD path" or full URL; case is ignored. An unknown name is a
// KindInvalid error on field pathOrKey (rule "unknown").
func (s *Service) ToolInfo(ctx context.Context, pathOrKey string) (CatalogItem, error) {
	if err := ctx.Err(); err != nil {
		return CatalogItem{}, err
	}
	i, ok := s.lookup(pathOrKey)
	if !ok {
		keys := make([]string, len(s.tools))
		for j, t := range s.tools {
			keys[j] = t.Key
		}
		return CatalogItem{}, svc.InvalidField("pathOrKey", "unknown", "pathOrKey: no tool %q; known keys: %s", clip.Runes(pathOrKey, 60), strings.Join(keys, ", "))
	}
	return s.catalogItem(i), nil
}

// lookup finds a tool by key, operation id, path, "METHOD path" or URL.
func (s *Service) lookup(name string) (int, bool) {
	k := strings.ToLower(strings.TrimSpace(name))
	if k == "" {
		return 0, false
	}
	i, ok := s.index[k]
	if !ok {
		i, ok = s.index[strings.TrimSuffix(k, "/")]
	}
	return i, ok
}

// fieldsOf returns the field errors of an *svc.Error.
func discFieldsOf(err error) []svc.FieldError {
	var se *svc.Error
	if errors.As(err, &se) {
		return se.Fields
	}
	return nil
}

// nonNil returns s, or an empty slice when s is nil (so it encodes as []).
func discNonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// terms returns the payment requirements of tool i (its offer's only
// accepts entry).
func (s *Service) terms(i int) x402.PaymentRequirements { return s.offers[i].Accepts[0] }

package discovery

import (
	"context"
	"encoding/json"

	"github.com/seed1284c1d2/svc/tools"
)

// This file is the contract shared by every free surface: the HTTP handlers
// (/api/find, /api/route, /api/catalog, /api/try), MCP (/mcp) and A2A (/a2a)
// all answer through one Service, so a finder, a plan or a catalog page is
// computed the same way whichever protocol asks.

// Config is what the free surfaces need to know about the deployment.
type Config struct {
	// Catalog is the single source of truth for the paid tools.
	Catalog *tools.Catalog
	// BaseURL is the public base URL (scheme://host[:port], no trailing
	// slash). Every absolute URL a surface returns is built from it, never
	// from a request's Host header.
	BaseURL string
	// Network is the CAIP-2 network payments are taken on (eip155:8453).
	Network string
	// Asset is the token address of USDC on Network.
	Asset string
	// PayTo is the wallet receiving payments.
	PayTo string
	// Facilitator is the facilitator URL, or "" in dev mode (local facilitator).
	Facilitator string
	// DevMode is true when the server settles nothing on chain.
	DevMode bool
	// Version is the service interface version (2.0.0).
	Version string
}

// FindMatch is one ranked tool: the catalog item plus why it matched.
type FindMatch struct {
	tools.Item
	MatchScore    float64  `json:"matchScore"`
	MatchedTokens []string `json:"matchedTokens"`
}

// FindResult is the answer of GET /api/find and of the find_tool MCP tool.
type FindResult struct {
	OK      bool        `json:"ok"`
	Query   string      `json:"query"`
	Matches []FindMatch `json:"matches"`
}

// CatalogPage is the answer of GET /api/catalog and of the catalog MCP tool.
type CatalogPage struct {
	OK     bool         `json:"ok"`
	Total  int          `json:"total"`
	Offset int          `json:"offset"`
	Limit  int          `json:"limit"`
	Items  []tools.Item `json:"items"`
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
	// ToolInfo returns the catalog item of a tool given its key
	// ("risk-levels"), operation id ("risk_levels") or path ("/api/risk-levels").
	ToolInfo(ctx context.Context, pathOrKey string) (tools.Item, error)
	// Try returns a free preview: the best match for q with its price,
	// example output and next routes, or a tour of the service when q is "".
	Try(ctx context.Context, q string) (TryResult, error)
}

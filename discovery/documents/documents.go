// Package documents builds the machine- and human-readable documents of
// the service once, from the tools catalog, the payment terms and the
// route documentation of every component (discovery/routedoc):
// /openapi.json (OpenAPI 3.1.0 with x-payment-info and x-transports),
// /skill.md, the x402 payment manifest, the router, distribution and
// magnet manifests, the A2A agent card, the landing page (HTML, the
// llms.txt Markdown or JSON by Accept), /llms.txt, /robots.txt and
// /server.json. A Set serves them with a strong ETag, Cache-Control and
// CORS open to all origins; it is immutable and safe for concurrent use.
package documents

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/seed1284c1d2/svc/discovery/routedoc"
	"github.com/seed1284c1d2/svc/tools"
	"github.com/seed1284c1d2/svc/x402"
)

// LocalFacilitator is the facilitator the payment manifest names when
// Config.Facilitator is empty (dev mode: the server's local facilitator
// verifies signatures and settles nothing on chain).
const LocalFacilitator = "local-dev"

// DocumentCacheControl is the Cache-Control of the documents, which also
// carry a strong ETag and answer If-None-Match with 304.
const DocumentCacheControl = "public, max-age=300"

// Media types of the documents.
const (
	jsonContentType = "application/json"
	// MediaMarkdown is the media type of /skill.md and of the landing
	// page's Markdown.
	MediaMarkdown = "text/markdown; charset=utf-8"
	markdownType  = MediaMarkdown
)

// Config is what the documents state. The slices are in catalog order and
// as long as Tools.
type Config struct {
	// Name and Version are the service's name and interface version.
	Name, Version string
	// BaseURL is the public base URL every absolute URL is built from.
	BaseURL string
	// Network is the payment network; Asset the token asked for; PayTo the
	// receiving wallet.
	Network x402.Network
	Asset   string
	PayTo   string
	// Facilitator is the facilitator URL, "" in dev mode (the manifests
	// name LocalFacilitator).
	Facilitator string
	// DevMode is true when the server settles nothing on chain.
	DevMode bool
	// BodyLimit is the request body limit of the paid routes (bytes).
	BodyLimit int64
	// Tools are the paid tools; Items their catalog views with absolute
	// URLs; Offers their x402 offers (an HTTP 402's PaymentRequired);
	// Transports how each is bought over HTTP, MCP and A2A (NewTransports).
	Tools      []*tools.Tool
	Items      []tools.Item
	Offers     []x402.PaymentRequired
	Transports []Transports
	// Routes are every free route: the discovery service's own, then the
	// other components' (routedoc).
	Routes []routedoc.Route
	// Categories are the tools' tags, for the catalog route's description.
	Categories []string
	// ManifestLinks are extra links of every manifest (name → absolute URL).
	ManifestLinks map[string]string
}

// Set is the built documents.
type Set struct {
	cfg     Config
	base    string
	network x402.Network
	asset   string
	payTo   string
	facil   string // facilitator URL or LocalFacilitator

	tools  []*tools.Tool
	items  []tools.Item
	offers []x402.PaymentRequired
	buy    []Transports

	docs map[string]*staticDoc
	card *staticDoc

	landingPage *staticDoc // GET / for browsers (HTML)
	landingText *staticDoc // GET / for text clients (the llms.txt Markdown)
}

// Build builds every document of cfg.
func Build(cfg Config) (*Set, error) {
	n := len(cfg.Tools)
	if len(cfg.Items) != n || len(cfg.Offers) != n || len(cfg.Transports) != n {
		return nil, errors.New("documents: Config.Items, Offers and Transports must have one entry per tool")
	}
	facil := strings.TrimSpace(cfg.Facilitator)
	if facil == "" {
		facil = LocalFacilitator
	}
	s := &Set{cfg: cfg, base: strings.TrimRight(cfg.BaseURL, "/"), network: cfg.Network, asset: cfg.Asset, payTo: cfg.PayTo, facil: facil,
		tools: cfg.Tools, items: cfg.Items, offers: cfg.Offers, buy: cfg.Transports}
	if err := s.buildDocs(); err != nil {
		return nil, err
	}
	return s, nil
}

// Handler serves the document at path (the landing page negotiates its
// media type on Accept); nil when there is none.
func (s *Set) Handler(path string) http.Handler {
	if path == PathLanding {
		return http.HandlerFunc(s.serveLanding)
	}
	if d, ok := s.docs[path]; ok {
		return d
	}
	return nil
}

// absURL returns the absolute URL of a path on the service.
func (s *Set) absURL(path string) string { return s.base + path }

// terms returns the payment requirements of tool i (its offer's only
// accepts entry).
func (s *Set) terms(i int) x402.PaymentRequirements { return s.offers[i].Accepts[0] }

// staticDoc is a document built once by Build: its bytes, media type and
// strong ETag (a hash of the bytes).
type staticDoc struct {
	body  []byte
	ctype string
	etag  string
}

func newStaticDoc(body []byte, ctype string) *staticDoc {
	sum := sha256.Sum256(body)
	return &staticDoc{body: body, ctype: ctype, etag: `"` + hex.EncodeToString(sum[:16]) + `"`}
}

// ServeHTTP serves the document with Cache-Control, ETag and CORS open to
// all origins; http.ServeContent answers a matching If-None-Match with 304
// (weak comparison, RFC 9110 section 13.1.2) and HEAD without a body.
func (d *staticDoc) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Cache-Control", DocumentCacheControl)
	h.Set("ETag", d.etag)
	h.Set("Access-Control-Allow-Origin", "*")
	h.Set("Content-Type", d.ctype)
	http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(d.body))
}

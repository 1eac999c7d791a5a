package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/shopspring/decimal"

	"github.com/seed1284c1d2/svc/internal/clip"
	"github.com/seed1284c1d2/svc/xau"
)

// Defaults of Options.
const (
	// DefaultNetwork is the payment network: Base mainnet.
	DefaultNetwork = "eip155:8453"
	// DefaultBodyLimit is the request body limit (2 MiB).
	DefaultBodyLimit int64 = 2 << 20
	// MinBodyLimit is the smallest body limit accepted (1 KiB).
	MinBodyLimit int64 = 1 << 10
	// USDCDecimals is the number of decimals of USDC: prices are whole
	// multiples of 0.000001.
	USDCDecimals = 6
)

// Options configure a Catalog. The zero value gives the descriptors' prices,
// relative URLs, network eip155:8453 and a 2 MiB body limit.
type Options struct {
	// Prices overrides prices by tool key ("regex-test": "0.004"): plain
	// decimals in USD, greater than zero and not finer than 0.000001.
	Prices map[string]string
	// BaseURL is the public scheme and host (and optional path prefix) of
	// the server, "https://api.example.com"; item URLs are BaseURL + path.
	// Empty means URLs are the paths alone.
	BaseURL string
	// Network is the CAIP-2 id of the payment network; empty means
	// DefaultNetwork.
	Network string
	// BodyLimit is the request body limit in bytes, enforced by Decode and
	// published in the catalog; zero means DefaultBodyLimit.
	BodyLimit int64
}

// Catalog is the set of paid tools with the operator's prices, URLs and
// limits. It is immutable and safe for concurrent use.
type Catalog struct {
	tools     []*Tool
	byKey     map[string]*Tool
	byOpID    map[string]*Tool
	byRoute   map[string]*Tool
	baseURL   string
	network   string
	bodyLimit int64
}

// New builds a catalog. It fails when an option is invalid (an unknown
// key or a malformed price override, a base URL that is not an absolute
// http(s) URL, a malformed network id, a body limit below MinBodyLimit) or
// when a descriptor is broken (a programming error that the tests catch).
//
// Schemas and examples are built once per process and shared by every
// catalog.
func New(opts Options) (*Catalog, error) {
	entries, err := builtEntries()
	if err != nil {
		return nil, err
	}
	c := &Catalog{
		byKey:     make(map[string]*Tool, len(entries)),
		byOpID:    make(map[string]*Tool, len(entries)),
		byRoute:   make(map[string]*Tool, len(entries)),
		network:   opts.Network,
		bodyLimit: opts.BodyLimit,
	}
	if c.network == "" {
		c.network = DefaultNetwork
	}
	if !caip2.MatchString(c.network) {
		return nil, fmt.Errorf("tools: network %q is not a CAIP-2 chain id such as eip155:8453", clip.Runes(c.network, 40))
	}
	if c.bodyLimit == 0 {
		c.bodyLimit = DefaultBodyLimit
	}
	if c.bodyLimit < MinBodyLimit {
		return nil, fmt.Errorf("tools: body limit %d is below the minimum of %d bytes", c.bodyLimit, MinBodyLimit)
	}
	if c.baseURL, err = normalizeBaseURL(opts.BaseURL); err != nil {
		return nil, err
	}
	for key := range opts.Prices {
		if !slices.ContainsFunc(entries, func(e *builtEntry) bool { return e.key == key }) {
			keys := make([]string, len(entries))
			for i, e := range entries {
				keys[i] = e.key
			}
			return nil, fmt.Errorf("tools: price override for unknown tool %q; the keys are %s", clip.Runes(key, 40), strings.Join(keys, ", "))
		}
	}
	for _, e := range entries {
		price := e.price
		if p, ok := opts.Prices[e.key]; ok {
			price = p
		}
		d, atomic, err := ParsePrice(price)
		if err != nil {
			return nil, fmt.Errorf("tools: price of %s: %w", e.key, err)
		}
		t := &Tool{
			Key:           e.key,
			OperationID:   e.operationID,
			Name:          e.name,
			Method:        e.method,
			Path:          e.path,
			URL:           c.baseURL + e.path,
			Price:         d.String(),
			PriceAtomic:   atomic,
			Network:       c.network,
			Tags:          slices.Clone(e.tags),
			Description:   e.description,
			InputLocation: e.location,
			Terminal:      e.terminal,
			Fields:        e.shape.names(),
			InputSchema:   e.inSchema,
			OutputSchema:  e.outSchema,
			ExampleInput:  e.exampleInput,
			OutputExample: e.outputExample,
			base:          e.entry,
			bodyLimit:     c.bodyLimit,
		}
		c.tools = append(c.tools, t)
		c.byKey[t.Key] = t
		c.byOpID[t.OperationID] = t
		c.byRoute[t.Method+" "+t.Path] = t
	}
	return c, nil
}

// caip2 matches a CAIP-2 chain id.
var caip2 = regexp.MustCompile(`^[-a-z0-9]{3,8}:[-_a-zA-Z0-9]{1,32}$`)

// normalizeBaseURL checks a base URL and drops its trailing slash.
func normalizeBaseURL(s string) (string, error) {
	if s == "" {
		return "", nil
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return "", fmt.Errorf("tools: base URL %q must be an absolute http(s) URL without query, fragment or credentials", clip.Runes(s, 80))
	}
	return strings.TrimRight(s, "/"), nil
}

// ParsePrice checks a price in USD ("0.0034"): digits with an optional
// fraction, greater than zero, not finer than USDC's smallest unit
// (0.000001; trailing zeros are fine). It returns the value and the price
// in USDC atomic units (0.0034 → 3400).
func ParsePrice(s string) (decimal.Decimal, int64, error) {
	if !priceSyntax.MatchString(s) {
		return decimal.Decimal{}, 0, fmt.Errorf("price %q is not a plain decimal such as 0.005", clip.Runes(s, 40))
	}
	d, err := decimal.NewFromString(s)
	if err != nil {
		return decimal.Decimal{}, 0, fmt.Errorf("price %q: %w", clip.Runes(s, 40), err)
	}
	if !d.IsPositive() {
		return decimal.Decimal{}, 0, fmt.Errorf("price %q must be greater than zero", s)
	}
	atomic := d.Shift(USDCDecimals)
	if !atomic.IsInteger() {
		return decimal.Decimal{}, 0, fmt.Errorf("price %q is finer than USDC's smallest unit 0.000001", s)
	}
	if !atomic.BigInt().IsInt64() {
		return decimal.Decimal{}, 0, fmt.Errorf("price %q is too large", clip.Runes(s, 40))
	}
	return d, atomic.IntPart(), nil
}

// priceSyntax is the syntax of a price: digits, optionally a point and
// digits; at most 24 characters.
var priceSyntax = regexp.MustCompile(`^[0-9]{1,16}(\.[0-9]{1,7})?$`)

// All returns the tools in catalog order (the order of the descriptor
// table). The slice is a copy; the tools are shared.
func (c *Catalog) All() []*Tool { return slices.Clone(c.tools) }

// Len returns the number of tools (13).
func (c *Catalog) Len() int { return len(c.tools) }

// ByKey returns the tool with a catalog key ("risk-levels", "xau-quote").
func (c *Catalog) ByKey(key string) (*Tool, bool) {
	t, ok := c.byKey[key]
	return t, ok
}

// ByOperationID returns the tool with an operation id ("risk_levels").
func (c *Catalog) ByOperationID(id string) (*Tool, bool) {
	t, ok := c.byOpID[id]
	return t, ok
}

// ByPath returns the tool served at method and path ("POST",
// "/api/risk-levels"). The method is compared case-insensitively, the
// path exactly.
func (c *Catalog) ByPath(method, path string) (*Tool, bool) {
	t, ok := c.byRoute[strings.ToUpper(method)+" "+path]
	return t, ok
}

// Network returns the CAIP-2 id of the payment network.
func (c *Catalog) Network() string { return c.network }

// BaseURL returns the base URL of item URLs ("" when they are relative).
func (c *Catalog) BaseURL() string { return c.baseURL }

// BodyLimit returns the request body limit in bytes.
func (c *Catalog) BodyLimit() int64 { return c.bodyLimit }

// Categories returns the distinct tags of all tools, sorted.
func (c *Catalog) Categories() []string {
	var out []string
	for _, t := range c.tools {
		for _, tag := range t.Tags {
			if !slices.Contains(out, tag) {
				out = append(out, tag)
			}
		}
	}
	slices.Sort(out)
	return out
}

// Items returns the catalog view of every tool, in order.
func (c *Catalog) Items() []Item {
	out := make([]Item, len(c.tools))
	for i, t := range c.tools {
		out[i] = t.Item()
	}
	return out
}

// Item is the JSON view of a tool in catalogs, finders and manifests: the
// item fields of /api/catalog (key, name, method, path, url, priceUsd,
// network, description, tags, inputSchema, exampleInput, outputExample)
// followed by extras.
type Item struct {
	Key           string          `json:"key"`
	Name          string          `json:"name"`
	Method        string          `json:"method"`
	Path          string          `json:"path"`
	URL           string          `json:"url"`
	PriceUSD      json.Number     `json:"priceUsd"`
	Network       string          `json:"network"`
	Description   string          `json:"description"`
	Tags          []string        `json:"tags"`
	InputSchema   json.RawMessage `json:"inputSchema"`
	ExampleInput  json.RawMessage `json:"exampleInput"`
	OutputExample json.RawMessage `json:"outputExample"`
	// OperationID is the operation id ("risk_levels").
	OperationID string `json:"operationId"`
	// Price is the price with six decimals ("0.005000").
	Price string `json:"price"`
	// InputLocation is "query" or "body".
	InputLocation InputLocation `json:"inputLocation"`
	// OutputSchema is the JSON Schema of the response.
	OutputSchema json.RawMessage `json:"outputSchema"`
	// Terminal is true for the tools that read the trading terminal.
	Terminal bool `json:"terminal"`
}

// Item returns the tool's catalog view. Its slices and raw JSON are copies.
func (t *Tool) Item() Item {
	return Item{
		Key:           t.Key,
		Name:          t.Name,
		Method:        t.Method,
		Path:          t.Path,
		URL:           t.URL,
		PriceUSD:      json.Number(t.Price),
		Network:       t.Network,
		Description:   t.Description,
		Tags:          slices.Clone(t.Tags),
		InputSchema:   slices.Clone(t.InputSchema),
		ExampleInput:  slices.Clone(t.ExampleInput),
		OutputExample: slices.Clone(t.OutputExample),
		OperationID:   t.OperationID,
		Price:         t.PriceFixed6(),
		InputLocation: t.InputLocation,
		OutputSchema:  slices.Clone(t.OutputSchema),
		Terminal:      t.Terminal,
	}
}

// InputSchemaMap returns a fresh decoded copy of the input schema, for
// APIs that take a schema as a map (x402.BazaarInfo, MCP SDKs).
func (t *Tool) InputSchemaMap() map[string]any { return decodeMap(t.InputSchema) }

// OutputSchemaMap returns a fresh decoded copy of the output schema.
func (t *Tool) OutputSchemaMap() map[string]any { return decodeMap(t.OutputSchema) }

func decodeMap(raw json.RawMessage) map[string]any {
	var m map[string]any
	_ = json.Unmarshal(raw, &m) // built by this package: always an object
	return m
}

// builtEntry is an entry with its published JSON: schemas and examples.
type builtEntry struct {
	*entry
	inSchema, outSchema         json.RawMessage
	exampleInput, outputExample json.RawMessage
}

// builtEntries builds every descriptor once per process: shapes, schemas
// (resolved once to prove them valid) and examples (run with exampleEnv).
var builtEntries = sync.OnceValues(func() ([]*builtEntry, error) {
	env, err := exampleEnv()
	if err != nil {
		return nil, err
	}
	var out []*builtEntry
	for _, d := range descriptors() {
		e, err := d()
		if err != nil {
			return nil, err
		}
		b, err := build(e, env)
		if err != nil {
			return nil, fmt.Errorf("tools: %s: %w", e.operationID, err)
		}
		out = append(out, b)
	}
	return out, nil
})

// exampleSeed is the seed of the examples' simulated terminal.
const exampleSeed = 20250604

// exampleNow is the clock of the examples: Wednesday 4 June 2025, 13:45
// UTC, when London and New York are open.
func exampleNow() time.Time { return time.Date(2025, time.June, 4, 13, 45, 0, 0, time.UTC) }

// exampleEnv is the Env of the examples: a fixed clock and a simulated
// terminal with a fixed seed, so that examples never drift.
func exampleEnv() (Env, error) {
	sim, err := xau.NewSimulated(xau.SimConfig{Seed: exampleSeed, Now: exampleNow})
	if err != nil {
		return Env{}, fmt.Errorf("tools: example terminal: %w", err)
	}
	return Env{Terminal: sim, Now: exampleNow, RegexTimeout: 5 * time.Second}, nil
}

// build derives the schemas of an entry and runs its example.
func build(e *entry, env Env) (*builtEntry, error) {
	if err := checkMeta(e); err != nil {
		return nil, err
	}
	in, err := inputSchema(e.reqType, e.shape, &e.meta)
	if err != nil {
		return nil, err
	}
	out, err := outputSchema(e.respType, &e.meta)
	if err != nil {
		return nil, err
	}
	b := &builtEntry{entry: e}
	for _, s := range []struct {
		schema *jsonschema.Schema
		dst    *json.RawMessage
	}{{in, &b.inSchema}, {out, &b.outSchema}} {
		if _, err := s.schema.Resolve(nil); err != nil {
			return nil, fmt.Errorf("schema does not resolve: %w", err)
		}
		raw, err := json.Marshal(s.schema)
		if err != nil {
			return nil, fmt.Errorf("encoding a schema: %w", err)
		}
		*s.dst = raw
	}
	var example bytes.Buffer
	if err := json.Compact(&example, []byte(e.example)); err != nil {
		return nil, fmt.Errorf("example input is not JSON: %w", err)
	}
	b.exampleInput = example.Bytes()
	t := &Tool{OperationID: e.operationID, InputLocation: e.location, base: e, bodyLimit: DefaultBodyLimit}
	ctx := context.Background()
	call, err := t.DecodeJSON(ctx, b.exampleInput)
	if err != nil {
		return nil, fmt.Errorf("example input is invalid: %w", err)
	}
	if b.outputExample, err = call.RunJSON(ctx, env); err != nil {
		return nil, fmt.Errorf("running the example: %w", err)
	}
	return b, nil
}

// checkMeta checks the parts of a descriptor that no type can: method and
// input location agree, query tools have scalar members only, the key is
// the operation id with hyphens.
func checkMeta(e *entry) error {
	switch {
	case e.key == "" || e.operationID == "" || e.name == "" || e.description == "" || len(e.tags) == 0:
		return fmt.Errorf("descriptor lacks a key, operation id, name, description or tags")
	case e.key != strings.ReplaceAll(e.operationID, "_", "-"):
		return fmt.Errorf("key %q is not the operation id with hyphens", e.key)
	case !strings.HasPrefix(e.path, "/api/"):
		return fmt.Errorf("path %q is not under /api/", e.path)
	case e.method == "GET" && e.location != InputQuery, e.method == "POST" && e.location != InputBody:
		return fmt.Errorf("method %s does not match input location %q", e.method, e.location)
	case e.method != "GET" && e.method != "POST":
		return fmt.Errorf("method %q is neither GET nor POST", e.method)
	}
	if _, _, err := ParsePrice(e.price); err != nil {
		return err
	}
	if e.location == InputQuery {
		for _, f := range e.shape.fields {
			switch f.shape.kind {
			case kindString, kindInteger, kindNumber, kindBoolean:
			default:
				return fmt.Errorf("query parameter %s is %s %s, which a query string cannot carry", f.name, f.shape.kind.article(), f.shape.kind)
			}
		}
	}
	return nil
}

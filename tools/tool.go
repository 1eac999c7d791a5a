package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/shopspring/decimal"

	"github.com/seed1284c1d2/svc"
	"github.com/seed1284c1d2/svc/internal/clip"
	"github.com/seed1284c1d2/svc/xau"
)

// InputLocation says where a tool's input travels over HTTP.
type InputLocation string

// The input locations.
const (
	// InputQuery: the query string of a GET request (session_state and the
	// three gold tools).
	InputQuery InputLocation = "query"
	// InputBody: a JSON object in the body of a POST request.
	InputBody InputLocation = "body"
)

// Env is what the operator supplies to the tools at run time. The zero Env
// is usable: no terminal (the gold tools answer KindUnavailable), the
// default gold symbol, the default regex time limit and the real clock.
type Env struct {
	// Terminal is the trading terminal of the gold tools; nil means none.
	Terminal xau.Terminal
	// DefaultSymbol is the gold symbol used when a request names none;
	// empty means svc.DefaultGoldSymbol ("XAUUSD").
	DefaultSymbol string
	// RegexTimeout is the time limit of a regex_test call; zero means
	// svc.RegexDefaultTimeout (100 ms).
	RegexTimeout time.Duration
	// Now is the clock of session_state (when no dateTime is given) and
	// jwt_decode (expired, notYetValid); nil means time.Now.
	Now func() time.Time
}

// now returns the Env's time, or the zero time (meaning "the tool's own
// clock") when Now is nil.
func (e Env) now() time.Time {
	if e.Now == nil {
		return time.Time{}
	}
	return e.Now()
}

// Tool is one paid tool as every surface presents it: HTTP route, price,
// catalog entry, JSON Schemas, examples, and the adapter that decodes,
// validates and runs a call. Tools come from a Catalog; they are shared
// and must not be modified.
type Tool struct {
	// Key is the catalog key: the operation id with hyphens
	// ("risk-levels", "xau-quote").
	Key string
	// OperationID is the tool's operationId in openapi.json
	// ("risk_levels").
	OperationID string
	// Name is a short human name ("Risk levels").
	Name string
	// Method is "GET" or "POST".
	Method string
	// Path is the route ("/api/risk-levels").
	Path string
	// URL is the catalog's base URL followed by Path, or Path alone when
	// the catalog has no base URL.
	URL string
	// Price is the price per call in USD (USDC) as a plain decimal
	// ("0.005", "0.0034"): the descriptor's list price or the operator's override.
	Price string
	// PriceAtomic is Price in USDC atomic units (6 decimals): 0.0034 → 3400.
	PriceAtomic int64
	// Network is the CAIP-2 id of the payment network ("eip155:8453").
	Network string
	// Tags are the tool's categories ("trading", "risk", "gold", "data",
	// "crypto", "utility", "regex", ...).
	Tags []string
	// Description tells an agent what the tool does, its formulas and
	// limits, and what it never does.
	Description string
	// InputLocation is InputQuery for GET tools and InputBody for POST tools.
	InputLocation InputLocation
	// Terminal is true for the three gold tools, which read the trading
	// terminal: a server checks its availability (503, no 402) before
	// asking for payment.
	Terminal bool
	// Fields are the input members (query parameters of a GET tool), in
	// order.
	Fields []string
	// InputSchema is the JSON Schema (2020-12) of the input object: the
	// query parameters of a GET tool, the body of a POST tool.
	InputSchema json.RawMessage
	// OutputSchema is the JSON Schema (2020-12) of the 200 response.
	OutputSchema json.RawMessage
	// ExampleInput is a realistic input object.
	ExampleInput json.RawMessage
	// OutputExample is the output of running the tool on ExampleInput (with
	// a fixed clock and, for the gold tools, a simulated terminal with a
	// fixed seed, so it never drifts).
	OutputExample json.RawMessage

	base      *entry
	bodyLimit int64
}

// PriceFixed6 returns Price with exactly six decimals ("0.005000"), the
// form of the interface description.
func (t *Tool) PriceFixed6() string {
	d, _ := decimal.NewFromString(t.Price)
	return d.StringFixed(6)
}

// Decode reads the input of a call from an HTTP request and validates it
// completely, without running the tool: the query string of a GET tool, the
// JSON body of a POST tool (at most the catalog's body limit). The request
// method and path are not checked (route with Catalog.ByPath).
//
// Query inputs are strict like JSON members: a parameter the tool does
// not define is invalid (rule "unknown_field", the message lists the
// allowed ones and points out a difference of case: "datetime" for
// "dateTime"), except ref and src, which carry attribution; a defined
// parameter given twice is invalid (rule "repeated": no value is picked
// for the caller) and one with an empty value counts as absent; values are
// typed by their field ("count=abc" → field count, rule "integer"). A POST
// tool's query string takes only ref and src: any other parameter is
// invalid (rule "unknown_field"), since the input travels in the body.
//
// Body inputs are strict JSON: exactly one object, no unknown member (rule
// "unknown_field", the message lists the allowed members), no member given
// twice, every required member present, each of the right JSON type (the
// rule names the expected type; null is a value of no type, except for an
// optional member, where it counts as not given); malformed JSON or data
// after the object is rule "json" with the line, column and byte offset;
// an empty body counts as {} (so the missing members are listed); a body
// over the limit is KindTooLarge (rule "max_bytes"). Any Content-Type is
// read as JSON (curl -d sends application/x-www-form-urlencoded); a
// compressed body is refused. A leading UTF-8 byte-order mark is ignored.
//
// Every error is an *svc.Error: KindInvalid (HTTP 400) or KindTooLarge
// (413) for the input, or whatever the tool's validation reports (a
// jwt_decode token over 64 KiB is KindTooLarge, for instance).
func (t *Tool) Decode(ctx context.Context, r *http.Request) (*Call, error) {
	if t.InputLocation == InputQuery {
		raw := ""
		if r.URL != nil {
			raw = r.URL.RawQuery
		}
		q, err := url.ParseQuery(raw)
		if err != nil {
			return nil, invalid(fieldErr("", RuleQuery, "the query string is malformed: %s", clip.Runes(strings.TrimPrefix(err.Error(), "invalid "), 80)))
		}
		return t.DecodeQuery(ctx, q)
	}
	if err := t.checkBodyQuery(r); err != nil {
		return nil, err
	}
	body, err := readBody(r, t.bodyLimit)
	if err != nil {
		return nil, err
	}
	return t.decodeDocument(ctx, body, nil, r)
}

// checkBodyQuery refuses the query parameters of a request to a POST tool
// other than the attribution ones (ref, src): the tool's input travels in
// the body, and a member sent in the query instead must not be silently
// left out of a paid call. A query string that does not parse is left to
// the attribution readers, as before.
func (t *Tool) checkBodyQuery(r *http.Request) error {
	if r.URL == nil || r.URL.RawQuery == "" {
		return nil
	}
	q, _ := url.ParseQuery(r.URL.RawQuery)
	if errs := unknownParams(q, nil, true); len(errs) > 0 {
		return invalid(errs...)
	}
	return nil
}

// DecodeBody is Decode for a request whose body was read already: body is
// all of it (nil when there is none), r supplies the query string and the
// headers, and r.Body is not touched. A server that reads each body once,
// bounded, hands the bytes on with it. The rules and errors are Decode's,
// a body over the tool's limit included.
func (t *Tool) DecodeBody(ctx context.Context, r *http.Request, body []byte) (*Call, error) {
	if t.InputLocation == InputQuery {
		return t.Decode(ctx, r)
	}
	if err := t.checkBodyQuery(r); err != nil {
		return nil, err
	}
	if err := checkEncoding(r); err != nil {
		return nil, err
	}
	if int64(len(body)) > t.bodyLimit {
		return nil, tooLarge(t.bodyLimit, nil)
	}
	return t.decodeDocument(ctx, bytes.TrimPrefix(body, []byte("\uFEFF")), nil, r)
}

// contentTypeHint explains, in an error about the body, that the body was
// read as JSON whatever its Content-Type said ("" for a JSON type).
func (t *Tool) contentTypeHint(r *http.Request) string {
	if jsonContentType(r) {
		return ""
	}
	return fmt.Sprintf(" (the body is read as JSON whatever its Content-Type; it says %q)", clip.Runes(r.Header.Get("Content-Type"), 40))
}

// DecodeQuery reads the input of a call from query parameters, as Decode
// does for GET tools. For a POST tool the parameters are read the same way
// when every member is a scalar; otherwise their members are reported as
// not expressible in a query.
func (t *Tool) DecodeQuery(ctx context.Context, q url.Values) (*Call, error) {
	doc, errs := queryDocument(q, t.base.shape)
	return t.decodeDocument(ctx, doc, errs, nil)
}

// DecodeJSON reads the input of a call from a JSON object: the input of
// /api/route, the arguments of an MCP tools/call, the data of an A2A
// message. It applies the rules of a JSON body (see Decode) to every tool,
// GET tools included (their query parameters become members: {"count":
// 50}). Empty input or null counts as {}. The input is not size-limited
// here: the transport bounds it.
func (t *Tool) DecodeJSON(ctx context.Context, input json.RawMessage) (*Call, error) {
	if trimmed := bytes.TrimSpace(input); bytes.Equal(trimmed, []byte("null")) {
		input = nil
	}
	return t.decodeDocument(ctx, input, nil, nil)
}

// decodeDocument checks doc against the tool's shape, decodes it and
// validates the request with the tool's own rules. pre holds errors found
// before (query typing); r is the request whose body doc is (nil for
// query parameters and JSON input), for the wording of errors.
func (t *Tool) decodeDocument(ctx context.Context, doc []byte, pre []svc.FieldError, r *http.Request) (*Call, error) {
	// Errors about the document say how a body was read.
	hint := ""
	if r != nil {
		hint = t.contentTypeHint(r)
	}
	c, err := t.base.decode(ctx, doc, pre, hint)
	if err != nil {
		return nil, err
	}
	c.tool = t
	return c, nil
}

// mergeMissing adds the missing-member errors to a validation error, each
// unless the tool reported the same field already. A failure that is not
// invalid input gives way to the missing members.
func mergeMissing(err error, missing []svc.FieldError) error {
	if len(missing) == 0 {
		return err
	}
	var e *svc.Error
	if !errors.As(err, &e) || e.Kind != svc.KindInvalid {
		return invalid(missing...)
	}
	fields := slices.Clone(missing)
	for _, f := range e.Fields {
		if !slices.ContainsFunc(missing, func(m svc.FieldError) bool { return m.Field == f.Field }) {
			fields = append(fields, f)
		}
	}
	return invalid(fields...)
}

// Invoke decodes a JSON input object and runs the tool at once: for Go
// callers, free previews and tests. Paid surfaces must decode first and
// run only after payment.
func (t *Tool) Invoke(ctx context.Context, env Env, input json.RawMessage) (json.RawMessage, error) {
	c, err := t.DecodeJSON(ctx, input)
	if err != nil {
		return nil, err
	}
	return c.RunJSON(ctx, env)
}

// Call is a decoded and validated call of one tool, ready to run. Decoding
// and running are separate steps so that a server validates before any
// 402 and runs the tool only after the payment is verified.
type Call struct {
	tool *Tool
	p    preparedCall
}

// preparedCall is the typed state behind a Call (prepared[Req, Resp]).
type preparedCall interface {
	request() any
	symbol() string
	input() (json.RawMessage, error) // encoded on first use
	run(ctx context.Context, env Env) (any, error)
}

// Tool returns the tool called.
func (c *Call) Tool() *Tool { return c.tool }

// Request returns the decoded request: a value of the tool's request type
// (svc.RiskLevelsRequest, ...).
func (c *Call) Request() any { return c.p.request() }

// Symbol returns the terminal symbol the call names: the symbol member of
// a terminal-backed tool that takes one (xau_quote), "" when the call
// names none (the operator's default symbol then applies) or the tool
// takes no symbol.
func (c *Call) Symbol() string { return c.p.symbol() }

// CheckSymbol is the symbol preflight of a call, run before any payment is
// asked: when the call names a symbol, check (an xau.HealthCache's
// CheckSymbol: cached, asked of the terminal) says whether the terminal
// serves it. It returns nil when the call names no symbol or check is
// nil; an unknown symbol is KindInvalid with field "symbol" and rule
// "unknown_symbol", as the tool itself reports it after payment; a symbol
// the terminal rejects otherwise is rule "terminal_rejected"; a terminal
// that cannot tell is KindUnavailable. The error keeps check's as Cause.
func (c *Call) CheckSymbol(ctx context.Context, check func(ctx context.Context, symbol string) error) error {
	symbol := c.Symbol()
	if symbol == "" || check == nil {
		return nil
	}
	err := check(ctx, symbol)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, xau.ErrUnknownSymbol):
		e := svc.InvalidField("symbol", "unknown_symbol", "%q is not served by the trading terminal", clip.Runes(symbol, 32))
		e.Cause = err
		return e
	case errors.Is(err, xau.ErrBadRequest):
		reason := xau.Reason(err)
		if reason == "" {
			reason = "the request was rejected"
		}
		e := svc.InvalidField("symbol", "terminal_rejected", "the trading terminal rejected the request for %q: %s", clip.Runes(symbol, 32), reason)
		e.Cause = err
		return e
	}
	return &svc.Error{Kind: svc.KindUnavailable, Message: "the trading terminal is unavailable; no payment was requested, try again later", Cause: err}
}

// Input returns the decoded input as a canonical JSON object (the request
// re-encoded: numbers in plain decimal form, defaults not filled in). It is
// the body a client sends for a POST tool.
func (c *Call) Input() json.RawMessage {
	in, _ := c.p.input() // a decoded request always encodes
	return slices.Clone(in)
}

// Query returns the input as query parameters, for building the URL of a
// GET tool (and of any tool whose members are all scalars).
func (c *Call) Query() url.Values {
	in, _ := c.p.input()
	q, _ := QueryOf(in)
	return q
}

// Run runs the tool with the operator's Env and returns its response, a
// value of the tool's response type (svc.RiskLevelsResponse, ...). For the
// tools whose output depends on the input alone, validation computed the
// output already (their rules are checked by running their own code) and
// Run returns it; the others run now: the gold tools call env.Terminal,
// session_state and jwt_decode read env.Now, regex_test matches under
// env.RegexTimeout. Errors are *svc.Error (KindUnavailable, KindTimeout,
// KindInvalid for an unknown symbol, ...). Run may be called more than
// once and from several goroutines.
func (c *Call) Run(ctx context.Context, env Env) (any, error) {
	return c.p.run(ctx, env)
}

// RunJSON is Run with the response encoded as JSON (no HTML escaping, no
// trailing newline).
func (c *Call) RunJSON(ctx context.Context, env Env) (json.RawMessage, error) {
	out, err := c.Run(ctx, env)
	if err != nil {
		return nil, err
	}
	return encodeJSON(out)
}

// encodeJSON encodes v without HTML escaping and without the trailing
// newline of json.Encoder.
func encodeJSON(v any) (json.RawMessage, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, &svc.Error{Kind: svc.KindInternal, Message: "the response could not be encoded", Cause: fmt.Errorf("tools: encoding %T: %w", v, err)}
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}

// QueryOf converts a JSON input object to query parameters: strings as
// they are, numbers in their literal form, booleans as true/false; null
// members are left out. Members holding objects or arrays cannot travel in
// a query string and are an error. It does not validate the input.
func QueryOf(input json.RawMessage) (url.Values, error) {
	q := url.Values{}
	if len(bytes.TrimSpace(input)) == 0 {
		return q, nil
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(input, &obj); err != nil {
		return nil, fmt.Errorf("tools: query from input: %w", err)
	}
	for _, k := range sortedKeys(obj) {
		v := bytes.TrimSpace(obj[k])
		switch {
		case len(v) == 0 || string(v) == "null":
		case v[0] == '"':
			var s string
			if err := json.Unmarshal(v, &s); err != nil {
				return nil, fmt.Errorf("tools: query from input: member %s: %w", k, err)
			}
			q.Set(k, s)
		case v[0] == '{' || v[0] == '[':
			return nil, fmt.Errorf("tools: query from input: member %s is an object or array", k)
		default:
			q.Set(k, string(v))
		}
	}
	return q, nil
}

// entry is the type-independent form of one descriptor: its metadata, the
// shape and schemas derived from its Go types, and its adapter.
type entry struct {
	meta
	reqType, respType reflect.Type
	shape             *shape
	// decode checks doc against shape, decodes it and validates the
	// request with the tool's rules; pre are errors found before (query
	// typing), hint ends the messages of a malformed document.
	decode func(ctx context.Context, doc []byte, pre []svc.FieldError, hint string) (*Call, error)
}

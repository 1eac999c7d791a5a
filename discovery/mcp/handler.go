// Package mcp serves svc over the Model Context Protocol at POST /mcp: the
// free discovery surface and, given a payment engine, the paid tools
// themselves, sold with x402.
//
// The endpoint is built on the official Go SDK
// (github.com/modelcontextprotocol/go-sdk) in stateless Streamable HTTP mode
// with JSON responses. One POST carries one JSON-RPC message and nothing is
// kept between requests, so it serves both eras on the same path:
//
//   - MCP 2026-07-28: every request carries the MCP-Protocol-Version,
//     Mcp-Method (and, for tools/call, Mcp-Name) headers and the _meta
//     triple (protocolVersion, clientCapabilities, clientInfo); the SDK
//     checks them and answers server/discover, with resultType and
//     _meta serverInfo on every result.
//   - The legacy initialize exchange (2024-11-05 to 2025-11-25): initialize,
//     notifications/initialized (202), then tools/list and tools/call, with
//     no Mcp-Session-Id ever issued.
//
// Four read-only tools answer through a [discovery.Surfaces]:
//
//   - find_tool {query, limit}: ranks the paid tools for a need;
//   - route_tool {query, input}: a machine-ready call plan for the best
//     match, validating input with the tool's own rules before anyone pays;
//   - catalog {q, category, offset, limit}: a page of the catalog;
//   - tool_info {pathOrKey}: one tool's catalog entry.
//
// Each has an input and an output schema; results carry structuredContent
// and the same JSON as text. Invalid arguments and errors of the discovery
// core come back as tool errors (isError true, HTTP 200) with a message
// naming the field and the rule. tools/list and server/discover carry the
// cache hints ttlMs (one hour by default) and cacheScope "public".
//
// In front of the SDK the handler adds:
//
//   - an Origin check: a browser request from another origin is refused with
//     403 unless its origin is the configured base URL's or is listed in
//     [Options.AllowedOrigins] (those also get CORS headers); requests
//     without Origin (agents, CLIs) pass;
//   - a Host check against DNS rebinding: a request that reached a loopback
//     listener must name a loopback host or the base URL's host;
//   - JSON-RPC errors where the SDK would answer in plain text: -32700 for a
//     body that is not JSON, -32600 for a message that is not a JSON-RPC 2.0
//     request, -32601 for methods this server does not offer (prompts,
//     resources, completion and logging are not declared, so they are
//     refused even though the SDK implements them). A -32601 answer has HTTP
//     status 404 on a 2026-07-28 request, 200 on a legacy one;
//   - bounded JSON-RPC batches: a batch (a JSON array) is a JSON-RPC error
//     for protocol version 2025-06-18 and later, which have none; for the
//     earlier ones (and a POST without MCP-Protocol-Version, read as
//     2025-03-26) it holds at most [Options.MaxBatch] messages, each
//     counted against the client's rate ([Options.AdmitBatch]), carries no
//     payment (a paid call goes alone in its POST) and its answers are at
//     most [Options.MaxBatchAnswerBytes], else one JSON-RPC error replaces
//     them.
//
// GET and DELETE get 405 with Allow: POST (there is no standalone stream).
//
// # Selling the paid tools
//
// With [Options.Engine] set, every catalog tool is also an MCP tool, named
// by its operation id (risk_levels, xau_quote, ...) and sold through the
// payment engine the HTTP routes use, per the x402 MCP transport (x402
// specification, transports-v2/mcp.md):
//
//   - tools/list gives each its input schema, an output schema admitting
//     the tool's output and the x402 PaymentRequired, annotations (read
//     only; idempotent and closed-world unless it reads the trading
//     terminal), the price in the description and, in _meta, the terms
//     (svc/payment) and Cloudflare's agents-x402/paymentRequired and
//     agents-x402/priceUSD;
//   - tools/call validates the arguments with the tool's decoder and, for
//     the gold tools, the terminal's availability and the symbol before
//     anything else: an invalid call, an outage or a symbol the terminal
//     does not serve is a tool error that asks for no payment;
//   - a call without payment runs nothing and answers the PaymentRequired
//     (resource.url is the endpoint with the tool as fragment,
//     BaseURL/mcp#risk_levels; extensions.bazaar describes the MCP tool):
//     by the tool-result binding (isError, structuredContent, the same JSON
//     in content[0].text and in _meta["x402/error"], where Cloudflare's
//     client reads it; resultType complete on 2026-07-28), or by the
//     extension binding (resultType payment_required with paymentRequired)
//     when a 2026-07-28 request advertises org.x402/payment, which
//     server/discover declares;
//   - the payment comes in params._meta["x402/payment"], a PaymentPayload
//     object or base64 of one; verified, reserved, run, journaled (transport
//     "mcp") and settled by the engine, the answer goes out with the
//     settlement in result._meta["x402/payment-response"]. A refused
//     payment gets the PaymentRequired again with the reason as its error;
//     a failed settlement, the same with the failed settlement in _meta,
//     the answer withheld; the same payment for the same call (see
//     [Fingerprint]: the decoded arguments, however formatted), the
//     recorded answer; for another call, or one bought over HTTP or A2A, a
//     refusal; a payer whose paid calls kept running for nothing lately,
//     or who has too many running (the engine's payer budget), a tool
//     error saying when to call again.
//
// The paid tools are sold through the x402 MCP binding (package x402/mcp)
// over the seller of the catalog's tools (package tools/sell): the same
// preflight, offer, fingerprint and run as on HTTP and A2A. Well-formed
// paid calls are answered by the binding itself, with the SDK's checks and
// result form, without the SDK's per-request session (whose JSON decoding
// costs several times the rest of a paid call); anything else goes to the
// SDK.
package mcp

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/seed1284c1d2/svc/discovery"
	"github.com/seed1284c1d2/svc/internal/clip"
	"github.com/seed1284c1d2/svc/tools/sell"
	"github.com/seed1284c1d2/svc/wire"
	"github.com/seed1284c1d2/svc/x402/engine"
	x402mcp "github.com/seed1284c1d2/svc/x402/mcp"
)

// Defaults of Options.
const (
	// ServerName is the serverInfo name.
	ServerName = "svc"
	// DefaultVersion is the serverInfo version when Options.Version is
	// empty: the service interface version.
	DefaultVersion = discovery.DefaultVersion
	// DefaultListTTL is the freshness hint (ttlMs) of tools/list and
	// server/discover: the tool list only changes with a deployment.
	DefaultListTTL = time.Hour
	// DefaultMaxBodyBytes bounds one JSON-RPC message; past it, 413.
	DefaultMaxBodyBytes int64 = 4 << 20
	// DefaultMaxBatch bounds the messages of one JSON-RPC batch (the
	// protocol versions before 2025-06-18 have batches).
	DefaultMaxBatch = 16
	// DefaultMaxBatchAnswerBytes bounds the answer to one batch (1 MiB).
	DefaultMaxBatchAnswerBytes int64 = 1 << 20
)

// Options configure the MCP handler. The zero value serves the four tools
// with serverInfo {svc, 2.0.0}, accepts browser requests from no other
// origin and bounds messages to 4 MiB.
type Options struct {
	// Version is the serverInfo version; empty means DefaultVersion.
	Version string
	// BaseURL is the public base URL of the server
	// ("https://api.example.com", path prefix allowed). Its origin is an
	// allowed browser origin and its host an allowed Host header on a
	// loopback listener (a reverse proxy on the same machine). Empty means
	// neither.
	BaseURL string
	// AllowedOrigins are further browser origins ("https://app.example.com",
	// scheme://host[:port] exactly) whose cross-origin requests are served,
	// with CORS headers.
	AllowedOrigins []string
	// AllowedHosts are further Host header values (host names, with or
	// without port) accepted on a loopback listener.
	AllowedHosts []string
	// Instructions replace the default instructions of initialize and
	// server/discover.
	Instructions string
	// ListTTL is the ttlMs hint of tools/list and server/discover; zero
	// means DefaultListTTL, negative means 0 (stale at once).
	ListTTL time.Duration
	// MaxBodyBytes bounds one request body; zero means DefaultMaxBodyBytes.
	MaxBodyBytes int64
	// MaxBatch bounds the messages of a JSON-RPC batch, and
	// MaxBatchAnswerBytes its answer; zero means DefaultMaxBatch and
	// DefaultMaxBatchAnswerBytes. Batches exist before protocol version
	// 2025-06-18 only (a POST without MCP-Protocol-Version is read as
	// 2025-03-26); later versions get a JSON-RPC error for one.
	MaxBatch            int
	MaxBatchAnswerBytes int64
	// AdmitBatch, when set, is asked before a batch of n messages is served,
	// with the n-1 messages beyond the POST itself (which the server's rate
	// limit counted already): false answers HTTP 429 with Retry-After and a
	// JSON-RPC error, so that each message of a batch counts against the
	// client's rate.
	AdmitBatch func(r *http.Request, extra int) (ok bool, retryAfter time.Duration)
	// Logger receives internal errors (never user input); nil discards them.
	Logger *slog.Logger

	// Engine, when set, sells every tool of Shop over MCP through this
	// payment engine (the one the HTTP routes use, so that one
	// authorization buys one call on one transport); nil keeps the
	// endpoint discovery-only. Shop is then required.
	Engine *engine.Engine
	// Shop is the seller of the catalog's tools (offers over Engine,
	// preflight, runs), shared with the other transports.
	Shop *sell.Shop
	// ToolTimeout bounds one paid tool run; zero means
	// seller.DefaultRunTimeout.
	ToolTimeout time.Duration
	// RequestID and RefCode read the request id and the referral code of a
	// POST carrying a paid call, for the payment journal; nil means none.
	RequestID func(r *http.Request) string
	RefCode   func(r *http.Request) string
	// AdmitUnpaid, AdmitPayment and PaymentRefused are the server's limits
	// of unpaid calls and refused payments per client address (see
	// x402/mcp.Config); nil means none.
	AdmitUnpaid    func(r *http.Request) (ok bool, retryAfter time.Duration)
	AdmitPayment   func(r *http.Request) (ok bool, retryAfter time.Duration)
	PaymentRefused func(r *http.Request)
}

// DefaultInstructions tell a model how the tools chain together.
const DefaultInstructions = "These free, read-only tools find and explain svc's paid HTTP tools; " +
	"they never call or pay for them. Start with find_tool (or catalog to browse), " +
	"then route_tool to get a ready-to-send request with its price and the x402 payment steps " +
	"(pass input to check it before paying), and tool_info for one tool's schemas and examples."

// handler is the MCP endpoint: the checks of ServeHTTP in front of the
// SDK's stateless transport.
type handler struct {
	sdk     http.Handler
	origins *http.CrossOriginProtection
	allowed map[string]bool // allowed cross origins, for CORS
	hosts   map[string]bool // allowed non-loopback hosts on a loopback listener
	maxBody int64
	// maxBatch and maxAnswer bound a batch and its answer; admit is
	// Options.AdmitBatch.
	maxBatch  int
	maxAnswer int64
	admit     func(r *http.Request, extra int) (bool, time.Duration)
	log       *slog.Logger
	// sdkOnly is the SDK's handler with the paid tools' binding but
	// without its direct answers (nil when nothing is sold), for tests
	// comparing both.
	sdkOnly http.Handler
}

// NewHandler returns the http.Handler of POST /mcp, answering through s.
// It fails when an option is malformed (a base URL or allowed origin that
// is not an absolute http(s) origin, an empty allowed host, a negative
// body limit).
//
// Mount it on the path "/mcp" for every method (not only POST), so that
// GET and DELETE get the transport's 405 and CORS preflights are answered.
func NewHandler(s discovery.Surfaces, opts Options) (http.Handler, error) {
	if s == nil {
		return nil, errors.New("mcp: nil discovery.Surfaces")
	}
	if opts.MaxBodyBytes < 0 || opts.MaxBatch < 0 || opts.MaxBatchAnswerBytes < 0 {
		return nil, fmt.Errorf("mcp: negative limit (MaxBodyBytes %d, MaxBatch %d, MaxBatchAnswerBytes %d)", opts.MaxBodyBytes, opts.MaxBatch, opts.MaxBatchAnswerBytes)
	}
	if opts.MaxBodyBytes == 0 {
		opts.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if opts.Version == "" {
		opts.Version = DefaultVersion
	}
	if opts.Instructions == "" {
		opts.Instructions = DefaultInstructions
		if opts.Engine != nil {
			opts.Instructions = DefaultSellingInstructions
		}
	}
	ttl := opts.ListTTL
	switch {
	case ttl == 0:
		ttl = DefaultListTTL
	case ttl < 0:
		ttl = 0
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}

	h := &handler{
		origins:   http.NewCrossOriginProtection(),
		allowed:   map[string]bool{},
		hosts:     map[string]bool{},
		maxBody:   opts.MaxBodyBytes,
		maxBatch:  cmp.Or(opts.MaxBatch, DefaultMaxBatch),
		maxAnswer: cmp.Or(opts.MaxBatchAnswerBytes, DefaultMaxBatchAnswerBytes),
		admit:     opts.AdmitBatch,
		log:       log,
	}
	origins := append([]string(nil), opts.AllowedOrigins...)
	if opts.BaseURL != "" {
		u, err := url.Parse(opts.BaseURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("mcp: BaseURL %q is not an absolute http(s) URL", clip.Runes(opts.BaseURL, 80))
		}
		origins = append(origins, u.Scheme+"://"+u.Host)
		h.hosts[strings.ToLower(u.Hostname())] = true
	}
	for _, o := range origins {
		if err := h.origins.AddTrustedOrigin(o); err != nil {
			return nil, fmt.Errorf("mcp: allowed origin: %w", err)
		}
		h.allowed[o] = true
	}
	for _, host := range opts.AllowedHosts {
		if host == "" {
			return nil, errors.New("mcp: empty allowed host")
		}
		h.hosts[strings.ToLower(hostOnly(host))] = true
	}
	sell, err := newSeller(opts, log)
	if err != nil {
		return nil, err
	}
	srv, err := newServer(s, opts.Version, opts.Instructions, ttl, log, sell)
	if err != nil {
		return nil, err
	}
	h.sdk = sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return srv }, &sdk.StreamableHTTPOptions{
		Stateless:    true,
		JSONResponse: true,
		// The Host check below replaces the SDK's, which refuses every
		// non-loopback Host on a loopback listener and so breaks a
		// reverse proxy on the same machine.
		DisableLocalhostProtection:   true,
		MaxRequestBodyBytes:          opts.MaxBodyBytes,
		PropagateRequestCancellation: true,
		Logger:                       log,
	})
	if sell != nil {
		// Paid calls read their HTTP request, a client of the x402
		// extension binding gets payment_required answers, and
		// well-formed paid calls are answered without the SDK's
		// per-request session.
		info := &sdk.Implementation{Name: ServerName, Title: serverTitle, Version: opts.Version}
		h.sdk, h.sdkOnly = sell.mcp.Handler(h.sdk, info), sell.mcp.Handler(h.sdk, nil)
	}
	return h, nil
}

// serverTitle is the serverInfo title.
const serverTitle = "svc discovery"

// JSON-RPC error codes answered by the handler itself.
const (
	codeParseError     = -32700
	codeInvalidRequest = -32600
	codeMethodNotFound = -32601
	codeInternalError  = -32603
)

// offered reports whether a method is served. Every other method is
// answered -32601, including those the SDK implements for features this
// server does not declare (prompts, resources, completion, logging).
func offered(method string) bool {
	switch method {
	case "initialize", // legacy handshake (the SDK refuses it with modern _meta)
		"ping",                 // legacy
		"server/discover",      // 2026-07-28
		"subscriptions/listen", // 2026-07-28; no list change is ever sent
		"tools/list",
		"tools/call",
		"notifications/initialized",
		"notifications/cancelled",
		"notifications/progress":
		return true
	}
	return false
}

// ServeHTTP checks the Host and the Origin, answers CORS preflights and
// the JSON-RPC errors the SDK would answer in plain text, and hands the
// rest to the SDK.
func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !h.hostAllowed(r) {
		writeRPCError(w, http.StatusForbidden, nil, codeInvalidRequest,
			"request refused: Host "+clip.Runes(r.Host, 100)+" is not allowed on this listener")
		return
	}
	origin := r.Header.Get("Origin")
	if origin != "" && h.allowed[origin] {
		w.Header().Set("Access-Control-Allow-Origin", origin)
		w.Header().Add("Vary", "Origin")
		if r.Method == http.MethodOptions && r.Header.Get("Access-Control-Request-Method") != "" {
			w.Header().Set("Access-Control-Allow-Methods", "POST")
			if hs := r.Header.Get("Access-Control-Request-Headers"); hs != "" {
				w.Header().Set("Access-Control-Allow-Headers", hs)
			}
			w.Header().Set("Access-Control-Max-Age", "600")
			w.WriteHeader(http.StatusNoContent)
			return
		}
	}
	if err := h.origins.Check(r); err != nil {
		writeRPCError(w, http.StatusForbidden, nil, codeInvalidRequest,
			"cross-origin request refused: Origin "+clip.Runes(origin, 100)+" is not allowed to call this MCP endpoint")
		return
	}
	if r.Method != http.MethodPost || !isJSON(r.Header.Get("Content-Type")) {
		h.sdk.ServeHTTP(w, r) // 405 with Allow: POST, 415
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, h.maxBody))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			writeRPCError(w, http.StatusRequestEntityTooLarge, nil, codeInvalidRequest,
				fmt.Sprintf("request body exceeds %d bytes", mbe.Limit))
			return
		}
		writeRPCError(w, http.StatusBadRequest, nil, codeParseError, "cannot read the request body")
		return
	}
	if isBatch(body) {
		h.serveBatch(w, r, body)
		return
	}
	m, status, code, msg := h.precheck(r, body)
	if status != 0 {
		if status == http.StatusAccepted {
			w.WriteHeader(status)
			return
		}
		writeRPCError(w, status, m.id, code, msg)
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.ContentLength = int64(len(body))
	h.sdk.ServeHTTP(w, r)
}

// precheck parses a body: it returns a non-zero status with a JSON-RPC
// error for a body that is not JSON (-32700), a message that is not a
// JSON-RPC 2.0 request (-32600) or a method that is not offered (-32601),
// 202 for a notification of a method that is not offered, and 0 to let the
// SDK serve the message, with the id, method and params read. Batches
// (JSON arrays) are served by serveBatch.
func (h *handler) precheck(r *http.Request, body []byte) (msg message, status int, code int, text string) {
	var m struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Method  *string         `json:"method"`
		Params  json.RawMessage `json:"params"`
		Result  json.RawMessage `json:"result"`
		Error   json.RawMessage `json:"error"`
	}
	if err := json.Unmarshal(body, &m); err != nil {
		if !json.Valid(body) {
			return msg, http.StatusBadRequest, codeParseError, "parse error: the body is not valid JSON"
		}
		return msg, http.StatusBadRequest, codeInvalidRequest, "invalid request: a JSON-RPC message is a JSON object"
	}
	if !validID(m.ID) {
		return msg, http.StatusBadRequest, codeInvalidRequest, "invalid request: id must be a string or a number"
	}
	msg.id = m.ID
	if m.JSONRPC != "2.0" {
		return msg, http.StatusBadRequest, codeInvalidRequest, `invalid request: jsonrpc must be "2.0"`
	}
	if m.Method == nil {
		if m.Result != nil || m.Error != nil {
			return message{}, 0, 0, "" // a response: the SDK decides
		}
		return msg, http.StatusBadRequest, codeInvalidRequest, "invalid request: method is missing"
	}
	msg.method, msg.params = *m.Method, m.Params
	if offered(*m.Method) {
		return msg, 0, 0, ""
	}
	if m.ID == nil {
		return msg, http.StatusAccepted, 0, "" // a notification is never answered
	}
	status = http.StatusOK
	if v := r.Header.Get(x402mcp.HeaderProtocolVersion); v >= wire.MCPProtocolVersion {
		status = http.StatusNotFound
	}
	return msg, status, codeMethodNotFound, "method not found: " + clip.Runes(*m.Method, 60) +
		" (this server offers tools only: tools/list, tools/call, server/discover or the legacy initialize)"
}

// message is what precheck read of a JSON-RPC request.
type message struct {
	id     json.RawMessage
	method string
	params json.RawMessage
}

// validID reports whether a JSON-RPC id is absent, a string, a number or
// null.
func validID(id json.RawMessage) bool {
	if id == nil {
		return true
	}
	switch id[0] {
	case '"', 'n', '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		return true
	}
	return false
}

// hostAllowed is the DNS rebinding guard: a request that reached a
// loopback listener must name a loopback host or an allowed one.
func (h *handler) hostAllowed(r *http.Request) bool {
	local, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	if !ok || local == nil || !isLoopback(local.String()) {
		return true
	}
	host := strings.ToLower(hostOnly(r.Host))
	return host == "" || isLoopback(host) || h.hosts[host]
}

// isLoopback reports whether an address or host name is a loopback one.
func isLoopback(addr string) bool {
	host := hostOnly(addr)
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsLoopback()
}

// hostOnly drops the port and the IPv6 brackets of a host[:port].
func hostOnly(hostport string) string {
	if host, _, err := net.SplitHostPort(hostport); err == nil {
		return host
	}
	return strings.Trim(hostport, "[]")
}

// isJSON reports whether a Content-Type is application/json.
func isJSON(contentType string) bool {
	mt, _, err := mime.ParseMediaType(contentType)
	return err == nil && mt == "application/json"
}

// writeRPCError writes a JSON-RPC error response.
func writeRPCError(w http.ResponseWriter, status int, id json.RawMessage, code int, msg string) {
	if id == nil {
		id = json.RawMessage("null")
	}
	body, _ := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   struct {
			Code    int    `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}{JSONRPC: "2.0", ID: id, Error: struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	}{code, msg}})
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

package mcp

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/seed1284c1d2/svc"
	"github.com/seed1284c1d2/svc/internal/clip"
	"github.com/seed1284c1d2/svc/tools"
	"github.com/seed1284c1d2/svc/x402"
	"github.com/seed1284c1d2/svc/x402/engine"
	"github.com/seed1284c1d2/svc/xau"
)

// Keys and values of the x402 MCP transport (x402 specification,
// transports-v2/mcp.md) and of the clients that speak it.
const (
	// MetaPayment is the params._meta key of a payment: a PaymentPayload
	// object (the specification) or a base64 string of its JSON
	// (Cloudflare's agents client).
	MetaPayment = "x402/payment"
	// MetaPaymentResponse is the result._meta key of the SettlementResponse.
	MetaPaymentResponse = "x402/payment-response"
	// MetaPaymentError is the result._meta key under which an unpaid call's
	// PaymentRequired is repeated: Cloudflare's agents client
	// (agents/x402 withX402Client) reads it there.
	MetaPaymentError = "x402/error"
	// ExtensionPayment is the MCP extension of the extension binding,
	// advertised in server/discover and, by a client, in its per-request
	// capabilities.
	ExtensionPayment = "org.x402/payment"
	// ResultTypePaymentRequired is the resultType of the extension
	// binding's answer to an unpaid call; its PaymentRequired is in the
	// result's paymentRequired member.
	ResultTypePaymentRequired = "payment_required"
	// MetaAgentsPaymentRequired and MetaAgentsPriceUSD are the tools/list
	// _meta keys Cloudflare's agents client reads to tell a model that a
	// tool is paid and what a call costs (a number, in USD).
	MetaAgentsPaymentRequired = "agents-x402/paymentRequired"
	MetaAgentsPriceUSD        = "agents-x402/priceUSD"
	// MetaPrice is the tools/list _meta key of a paid tool's terms:
	// {priceUsd, scheme, network, asset, amount, payTo, maxTimeoutSeconds,
	// resource}.
	MetaPrice = "svc/payment"
	// Transport names MCP in the payment journal.
	Transport = "mcp"
)

// Reasons of the binding's own refusals (the PaymentRequired's error),
// next to the engine's and the x402 verification reasons.
const (
	// ReasonInvalidPayment: _meta["x402/payment"] is neither a payment
	// payload object nor base64 of one.
	ReasonInvalidPayment = "invalid_payment"
)

// DefaultSellingInstructions are the instructions of a server that sells
// the paid tools over MCP (Options.Engine set).
const DefaultSellingInstructions = "Every paid svc tool is callable here by its operation id (risk_levels, xau_quote, ...), " +
	"priced in USDC with x402: a call without payment runs nothing and returns the payment requirements " +
	"(isError with the x402 PaymentRequired, or resultType payment_required when you advertise org.x402/payment); " +
	"sign one and call again with the payment in _meta[\"x402/payment\"]. " +
	"The free find_tool, catalog, route_tool and tool_info tools find the right one and check your input before you pay."

// PaidToolName is the MCP name of a paid tool: its operation id
// ("risk_levels").
func PaidToolName(t *tools.Tool) string { return t.OperationID }

// Fingerprint identifies a paid MCP call for the payment journal:
// tools.Fingerprint of "mcp", the tool name and the canonical JSON of the
// decoded arguments (tools.Call.Input: the request re-encoded, members in
// their declared order, numbers in plain decimal form), the rule of every
// transport. The same payment is replayed only to the same fingerprint, so
// an authorization used over HTTP or A2A never buys an MCP call, nor one
// tool's call another's, while arguments sent again formatted otherwise
// get the recorded answer.
func Fingerprint(tool string, input []byte) string {
	return tools.Fingerprint(Transport, tool, input)
}

// seller sells the paid tools through the payment engine.
type seller struct {
	eng       *engine.Engine
	env       tools.Env
	check     func(ctx context.Context) error
	symbols   func(ctx context.Context, symbol string) error
	timeout   time.Duration
	requestID func(*http.Request) string
	refCode   func(*http.Request) string
	log       *slog.Logger
	tools     []*paidTool
	byName    map[string]*paidTool
}

// paidTool is one paid tool as MCP sells it.
type paidTool struct {
	tool  *tools.Tool
	name  string
	offer *engine.Offer
	def   *sdk.Tool
}

// newSeller builds the offers of every catalog tool; nil when opts sells
// nothing (no Engine).
func newSeller(opts Options, log *slog.Logger) (*seller, error) {
	if opts.Engine == nil {
		return nil, nil
	}
	if opts.Catalog == nil {
		return nil, errors.New("mcp: Options.Catalog is required with Options.Engine")
	}
	network := opts.Network
	if network == "" {
		network = opts.Catalog.Network()
	}
	n, ok := x402.LookupNetwork(network)
	if !ok {
		return nil, fmt.Errorf("mcp: unknown payment network %q", clip.Runes(network, 40))
	}
	s := &seller{
		eng: opts.Engine, env: opts.Env, check: opts.TerminalCheck, symbols: opts.SymbolCheck, timeout: opts.ToolTimeout,
		requestID: opts.RequestID, refCode: opts.RefCode, log: log,
		byName: map[string]*paidTool{},
	}
	if s.timeout < 0 {
		return nil, fmt.Errorf("mcp: ToolTimeout %s is negative", s.timeout)
	}
	if s.check == nil || s.symbols == nil {
		check, symbols := terminalChecks(opts.Env.Terminal)
		if s.check == nil {
			s.check = check
		}
		if s.symbols == nil {
			s.symbols = symbols
		}
	}
	base := strings.TrimRight(opts.BaseURL, "/")
	for _, t := range opts.Catalog.All() {
		if t.Network != n.CAIP2 {
			return nil, fmt.Errorf("mcp: tool %s is priced on network %s, the MCP seller on %s", t.Key, t.Network, n.CAIP2)
		}
		name := PaidToolName(t)
		route, err := t.PaymentRoute(n.CAIP2, opts.PayTo, ResourceURL(base, name))
		if err != nil {
			return nil, fmt.Errorf("mcp: %w", err)
		}
		route.Bazaar = nil // the HTTP description; MCP has its own below
		offer, err := opts.Engine.NewOffer("tools/call "+name, t.Key, route)
		if err != nil {
			return nil, fmt.Errorf("mcp: tool %s: payment terms: %w", t.Key, err)
		}
		ext, err := bazaarExtension(t, name)
		if err != nil {
			return nil, fmt.Errorf("mcp: tool %s: %w", t.Key, err)
		}
		offer.PaymentRequired.Extensions = map[string]any{x402.BazaarExtensionKey: ext}
		pt := &paidTool{tool: t, name: name, offer: offer}
		if pt.def, err = paidToolDef(pt); err != nil {
			return nil, fmt.Errorf("mcp: tool %s: %w", t.Key, err)
		}
		s.tools = append(s.tools, pt)
		s.byName[name] = pt
	}
	return s, nil
}

// ResourceURL is the resource.url of a paid tool's offer: the MCP endpoint
// (base + "/mcp") with the tool name as fragment, so that it names the tool
// on this server and still leads to the endpoint; without a base URL, the
// x402 MCP SDK's default "mcp://tool/<name>".
func ResourceURL(base, tool string) string {
	if base == "" {
		return "mcp://tool/" + tool
	}
	return strings.TrimRight(base, "/") + "/mcp#" + tool
}

// terminalChecks are the default availability and symbol checks of the
// terminal-backed tools: a health cache in front of the Env's terminal,
// or "unavailable" when there is none (and then no symbol check: the
// availability check fails first).
func terminalChecks(t xau.Terminal) (func(ctx context.Context) error, func(ctx context.Context, symbol string) error) {
	if t == nil {
		return func(context.Context) error { return errors.New("mcp: no trading terminal is configured") }, nil
	}
	hc := xau.NewHealthCache(t, 0, nil)
	return hc.Check, hc.CheckSymbol
}

// bazaarExtension is the bazaar discovery extension of an MCP tool:
// info.input {type "mcp", toolName, description, transport, inputSchema,
// example}, info.output {type "json", example}, and the schema info
// validates against. The output example is left out when it has text
// outside Latin-1 (session_state's "Monday–Friday"): a payment echoes the
// offer's extensions, and Cloudflare's client encodes it with btoa, which
// refuses such text.
func bazaarExtension(t *tools.Tool, name string) (map[string]any, error) {
	in := t.InputSchemaMap()
	delete(in, "$schema")
	delete(in, "title")
	input := map[string]any{
		"type": "mcp", "toolName": name, "transport": "streamable-http",
		"description": resourceSentence(t.Description), "inputSchema": in,
	}
	if len(t.ExampleInput) > 0 {
		var ex map[string]any
		if err := json.Unmarshal(t.ExampleInput, &ex); err != nil {
			return nil, fmt.Errorf("example input: %w", err)
		}
		input["example"] = ex
	}
	info := map[string]any{"input": input}
	props := map[string]any{
		"input": map[string]any{
			"type": "object",
			"properties": map[string]any{
				"type":        map[string]any{"type": "string", "const": "mcp"},
				"toolName":    map[string]any{"type": "string"},
				"description": map[string]any{"type": "string"},
				"transport":   map[string]any{"type": "string", "enum": []any{"streamable-http", "sse"}},
				"inputSchema": map[string]any{"type": "object"},
				"example":     map[string]any{"type": "object"},
			},
			"required":             []any{"type", "toolName", "inputSchema"},
			"additionalProperties": false,
		},
	}
	if len(t.OutputExample) > 0 && latin1(string(t.OutputExample)) {
		var ex any
		if err := json.Unmarshal(t.OutputExample, &ex); err != nil {
			return nil, fmt.Errorf("output example: %w", err)
		}
		info["output"] = map[string]any{"type": "json", "example": ex}
		props["output"] = map[string]any{
			"type":       "object",
			"properties": map[string]any{"type": map[string]any{"type": "string"}, "example": map[string]any{}},
			"required":   []any{"type"},
		}
	}
	return map[string]any{
		"info": info,
		"schema": map[string]any{
			"$schema": x402.JSONSchemaDialect, "type": "object", "properties": props, "required": []any{"input"},
		},
	}, nil
}

// latin1 reports whether s holds Latin-1 characters only.
func latin1(s string) bool {
	for _, r := range s {
		if r > 0xFF {
			return false
		}
	}
	return true
}

// resourceSentence is the first sentence of a description, at most 200
// bytes.
func resourceSentence(d string) string {
	if i := strings.Index(d, ". "); i > 0 {
		d = d[:i+1]
	}
	if len(d) > 200 {
		d = d[:200]
	}
	return d
}

// paymentRequiredSchema describes the structured content of an unpaid
// call: the x402 PaymentRequired.
func paymentRequiredSchema() map[string]any {
	return map[string]any{
		"type":        "object",
		"title":       "x402 PaymentRequired",
		"description": "The payment requirements of an unpaid call (a tool error): sign one of accepts and call again with the payment in _meta[\"x402/payment\"].",
		"properties": map[string]any{
			"x402Version": map[string]any{"type": "integer"},
			"error":       map[string]any{"type": "string"},
			"resource":    map[string]any{"type": "object"},
			"accepts":     map[string]any{"type": "array", "items": map[string]any{"type": "object"}},
			"extensions":  map[string]any{"type": "object"},
		},
		"required": []any{"x402Version", "accepts"},
	}
}

// paidToolDef is the tools/list entry of a paid tool. Its output schema
// admits the tool's output and, for the tool error of an unpaid call, the
// x402 PaymentRequired (clients that check the structured content of tool
// errors too, such as @modelcontextprotocol/sdk 1.x, accept both).
func paidToolDef(pt *paidTool) (*sdk.Tool, error) {
	t := pt.tool
	in := t.InputSchemaMap()
	delete(in, "$schema") // 2020-12 is MCP's default dialect; older validators refuse the URI
	out := t.OutputSchemaMap()
	delete(out, "$schema")
	delete(out, "title")
	if len(in) == 0 || len(out) == 0 {
		return nil, errors.New("the descriptor's schemas are not JSON objects")
	}
	req := pt.offer.PaymentRequired.Accepts[0]
	price, err := strconv.ParseFloat(t.Price, 64)
	if err != nil {
		return nil, fmt.Errorf("price %q: %w", t.Price, err)
	}
	no, yes := false, true
	ann := &sdk.ToolAnnotations{
		Title:        t.Name,
		ReadOnlyHint: true, // no tool changes anything
		// The terminal-backed tools read a live market: a repeated call
		// may answer differently, and they reach a system outside svc.
		IdempotentHint:  !t.Terminal,
		DestructiveHint: &no,
		OpenWorldHint:   &no,
	}
	if t.Terminal {
		ann.OpenWorldHint = &yes
	}
	return &sdk.Tool{
		Name:  pt.name,
		Title: t.Name,
		Description: t.Description + fmt.Sprintf(" Paid: %s USDC per call (x402, %s). A call without payment runs nothing and "+
			"returns the payment requirements; call again with the signed payment in _meta[\"x402/payment\"].", t.Price, req.Network),
		InputSchema: in,
		OutputSchema: map[string]any{
			"type":        "object",
			"title":       t.OperationID + " output",
			"description": "The tool's output; for the tool error of an unpaid call, the x402 PaymentRequired.",
			"anyOf":       []any{out, paymentRequiredSchema()},
		},
		Annotations: ann,
		Meta: sdk.Meta{
			MetaPrice: map[string]any{
				"priceUsd": t.Price, "scheme": req.Scheme, "network": req.Network, "asset": req.Asset,
				"amount": req.Amount, "payTo": req.PayTo, "maxTimeoutSeconds": req.MaxTimeoutSeconds,
				"resource": pt.offer.PaymentRequired.Resource.URL,
			},
			MetaAgentsPaymentRequired: true,
			MetaAgentsPriceUSD:        price,
		},
	}, nil
}

// register adds the paid tools to srv, for the calls the handler does not
// answer itself (see handler.serveFast).
func (s *seller) register(srv *sdk.Server) {
	for _, pt := range s.tools {
		srv.AddTool(pt.def, func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
			var args, payment json.RawMessage
			var meta map[string]any
			if req.Params != nil {
				args, meta = req.Params.Arguments, req.Params.Meta
			}
			if v, ok := meta[MetaPayment]; ok && v != nil {
				b, err := json.Marshal(v)
				if err != nil {
					b = []byte("0") // not a payment: refused as such
				}
				payment = b
			}
			slot := slotOf(ctx)
			var r *http.Request
			if slot != nil {
				r = slot.r
			}
			a := s.call(ctx, pt, args, payment, r)
			if a.required != nil && slot != nil && slot.extension {
				if v, _ := meta[sdk.MetaKeyProtocolVersion].(string); v >= "2026-07-28" {
					slot.paymentRequired, slot.settlement = a.required, a.settlement
				}
			}
			return a.result, nil
		})
	}
}

// answer is a paid tool's answer to one call.
type answer struct {
	// result is the tool result of the tool-result binding: the answer, a
	// tool error, or the PaymentRequired as a tool error.
	result *sdk.CallToolResult
	// required is the PaymentRequired (JSON) when the call asks for
	// payment: the extension binding answers it as paymentRequired.
	required json.RawMessage
	// settlement is the failed settlement that goes with required, if any.
	settlement *x402.SettleResponse
}

// call is one tools/call of a paid tool: args are its arguments, payment
// the raw _meta["x402/payment"] (nil when absent), r the HTTP request
// carrying it (nil when unknown). The order is the HTTP seller's: nobody
// is asked to pay for a call that cannot succeed.
//
//  1. The arguments are decoded and validated with the tool's own rules:
//     invalid → a tool error naming the field, no payment requirement.
//  2. A terminal-backed tool checks the terminal's availability and the
//     symbol the call names (cached): down or a symbol the terminal does
//     not serve → a tool error, no payment requirement.
//  3. The payment is decoded; then the engine answers: payment required,
//     refused, or — verified, reserved, run, journaled and settled — the
//     answer with the settlement.
func (s *seller) call(ctx context.Context, pt *paidTool, args, payment json.RawMessage, r *http.Request) answer {
	call, err := pt.tool.DecodeJSON(ctx, args)
	if err != nil {
		return answer{result: errorResult(toolError(ctx, s.log, pt.name, err, nil))}
	}
	if pt.tool.Terminal {
		if err := s.check(ctx); err != nil {
			if ctx.Err() == nil {
				s.log.WarnContext(ctx, "mcp: terminal unavailable; no payment requested", "tool", pt.name, "err", err)
			}
			return answer{result: errorResult(errors.New(pt.name + ": the trading terminal is unavailable; no payment was requested, try again later"))}
		}
		if err := call.CheckSymbol(ctx, s.symbols); err != nil {
			if svc.KindOf(err) == svc.KindUnavailable && ctx.Err() == nil {
				s.log.WarnContext(ctx, "mcp: symbol check failed; no payment requested", "tool", pt.name, "err", err)
			}
			return answer{result: errorResult(toolError(ctx, s.log, pt.name, err, nil))}
		}
	}
	p, ok := paymentOf(payment)
	if !ok {
		return paymentRequired(pt.offer.Required(ReasonInvalidPayment), nil)
	}
	c := engine.Call{Offer: pt.offer, Fingerprint: call.Fingerprint(Transport, pt.name), Payment: p, Transport: Transport}
	if r != nil {
		if s.requestID != nil {
			c.RequestID = s.requestID(r)
		}
		if s.refCode != nil {
			c.RefCode = s.refCode(r)
		}
	}
	out := s.eng.Serve(ctx, c, func(ctx context.Context) (engine.Answer, error) {
		if s.timeout > 0 {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, s.timeout)
			defer cancel()
		}
		body, err := call.RunJSON(ctx, s.env)
		if err != nil {
			return engine.Answer{}, err
		}
		return engine.Answer{Status: http.StatusOK, Header: map[string][]string{"Content-Type": {"application/json"}}, Body: body}, nil
	})
	return s.outcome(ctx, pt, out)
}

// outcome maps an engine outcome to the answer.
func (s *seller) outcome(ctx context.Context, pt *paidTool, out engine.Outcome) answer {
	switch out.Kind {
	case engine.PaymentRequired, engine.Refused, engine.InProgress:
		return paymentRequired(*out.PaymentRequired, nil)
	case engine.SettleFailed:
		return paymentRequired(pt.offer.Required(out.Reason), out.Settlement)
	case engine.Paid, engine.Replayed:
		return answer{result: paidResult(out.Answer.Body, out.Settlement)}
	case engine.RunFailed:
		err := toolError(ctx, s.log, pt.name, out.Err, nil)
		if err == nil {
			err = errors.New(pt.name + " failed")
		}
		return answer{result: errorResult(fmt.Errorf("%w (nothing was charged)", err))}
	case engine.Pending:
		if out.Reason == engine.ReasonPaymentUnresolved {
			return answer{result: errorResult(fmt.Errorf("%s: this payment may have been settled but its outcome is not known yet; it is being reconciled: do not pay again (%s)",
				pt.name, out.Reason))}
		}
		return answer{result: errorResult(fmt.Errorf("%s: the payment is being settled; call again with the same arguments and the same payment in %s to get the answer (retry after %s; %s)",
			pt.name, MetaPayment, max(out.RetryAfter, time.Second).Round(time.Second), out.Reason))}
	case engine.Throttled:
		return answer{result: errorResult(fmt.Errorf("%s: too many paid calls of this payer ran lately without an answer (timed out or failed), or run now; nothing was run or charged: call again with the same payment in %s after %s (%s)",
			pt.name, MetaPayment, max(out.RetryAfter, time.Second).Round(time.Second), out.Reason))}
	case engine.Unavailable:
		msg := "the payment could not be processed now; nothing was charged, try again later"
		if out.Reason == engine.ReasonFacilitatorUnavailable {
			msg = "the payment facilitator could not verify the payment; nothing was charged, try again later"
		}
		return answer{result: errorResult(fmt.Errorf("%s: %s (%s)", pt.name, msg, out.Reason))}
	}
	s.log.ErrorContext(ctx, "mcp: unexpected payment outcome", "tool", pt.name, "kind", out.Kind.String())
	return answer{result: errorResult(errors.New(pt.name + ": unexpected payment outcome; nothing was charged"))}
}

// errorResult is a tool error: isError with the message as text.
func errorResult(err error) *sdk.CallToolResult {
	r := &sdk.CallToolResult{}
	r.SetError(err)
	return r
}

// paidResult is the answer of a paid call: the tool's JSON output as
// structuredContent and as text, the settlement in
// _meta["x402/payment-response"].
func paidResult(body []byte, sr *x402.SettleResponse) *sdk.CallToolResult {
	r := &sdk.CallToolResult{
		Content:           []sdk.Content{&sdk.TextContent{Text: string(body)}},
		StructuredContent: json.RawMessage(body),
	}
	if sr != nil {
		r.Meta = sdk.Meta{MetaPaymentResponse: sr}
	}
	return r
}

// paymentRequired is the answer to a call that needs (another) payment:
// pr, and the failed settlement when there is one. Its result is the
// tool-result binding's: isError true, pr as structuredContent and as JSON
// in content[0].text, and in _meta["x402/error"] (Cloudflare's client);
// the extension binding answers required as paymentRequired instead.
func paymentRequired(pr x402.PaymentRequired, sr *x402.SettleResponse) answer {
	text, err := json.Marshal(pr)
	if err != nil { // a PaymentRequired always encodes
		text = []byte(`{"x402Version":2,"error":"` + engine.ReasonPaymentRequired + `","accepts":[]}`)
	}
	r := &sdk.CallToolResult{
		IsError:           true,
		Content:           []sdk.Content{&sdk.TextContent{Text: string(text)}},
		StructuredContent: json.RawMessage(text),
		Meta:              sdk.Meta{MetaPaymentError: json.RawMessage(text)},
	}
	if sr != nil {
		r.Meta[MetaPaymentResponse] = sr
	}
	return answer{result: r, required: text, settlement: sr}
}

// paymentOf reads the raw _meta["x402/payment"]: nil and true when absent
// (or null); false when it is neither a payment payload object nor a
// base64 string of one.
func paymentOf(raw json.RawMessage) (*x402.PaymentPayload, bool) {
	raw = bytes.TrimLeft(raw, " \t\r\n")
	if len(raw) == 0 || bytes.Equal(bytes.TrimRight(raw, " \t\r\n"), []byte("null")) {
		return nil, true
	}
	switch raw[0] {
	case '"':
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, false
		}
		b, err := decodeBase64(s)
		if err != nil {
			return nil, false
		}
		raw = b
	case '{':
	default:
		return nil, false
	}
	p, err := decodePayload(raw)
	if err != nil {
		return nil, false
	}
	return &p, true
}

// decodeBase64 decodes standard base64, padded or not (btoa pads).
func decodeBase64(s string) ([]byte, error) {
	s = strings.TrimRight(s, "=")
	b, err := base64.RawStdEncoding.DecodeString(s)
	if err != nil {
		return nil, fmt.Errorf("mcp: payment is not base64: %w", err)
	}
	return b, nil
}

// decodePayload decodes a v2 PaymentPayload and checks its shape: version
// 2, an accepted requirement with scheme and network, a payload object.
// The semantics are the engine's.
func decodePayload(raw []byte) (x402.PaymentPayload, error) {
	var w struct {
		X402Version *int                      `json:"x402Version"`
		Resource    *x402.ResourceInfo        `json:"resource"`
		Accepted    *x402.PaymentRequirements `json:"accepted"`
		Payload     json.RawMessage           `json:"payload"`
		Extensions  map[string]any            `json:"extensions"`
	}
	if err := json.Unmarshal(raw, &w); err != nil {
		return x402.PaymentPayload{}, fmt.Errorf("mcp: payment payload: %w", err)
	}
	switch {
	case w.X402Version == nil || *w.X402Version != x402.Version:
		return x402.PaymentPayload{}, errors.New("mcp: payment payload: x402Version must be 2")
	case w.Accepted == nil || w.Accepted.Scheme == "" || w.Accepted.Network == "":
		return x402.PaymentPayload{}, errors.New("mcp: payment payload: accepted with scheme and network is required")
	}
	if p := bytes.TrimLeft(w.Payload, " \t\r\n"); len(p) == 0 || p[0] != '{' {
		return x402.PaymentPayload{}, errors.New("mcp: payment payload: payload must be an object")
	}
	return x402.PaymentPayload{X402Version: *w.X402Version, Resource: w.Resource, Accepted: *w.Accepted, Payload: w.Payload, Extensions: w.Extensions}, nil
}

// callSlot carries one tools/call between the HTTP handler and the tool
// handler: the request (for its id and referral code), whether the client
// advertised the extension binding, and what the tool handler asks the
// HTTP handler to answer instead of the tool result.
type callSlot struct {
	r               *http.Request
	extension       bool
	paymentRequired json.RawMessage
	settlement      *x402.SettleResponse
}

type slotKey struct{}

func slotOf(ctx context.Context) *callSlot {
	s, _ := ctx.Value(slotKey{}).(*callSlot)
	return s
}

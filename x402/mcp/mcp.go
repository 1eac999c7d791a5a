// Package mcp charges for the tools of an MCP server built on the official
// Go SDK (github.com/modelcontextprotocol/go-sdk/mcp) with x402 v2, per the
// x402 MCP transport (transports-v2/mcp.md of the x402 specification), and
// in the form Cloudflare's agents client (withX402Client) pays.
//
// A Go program adds a paid tool as it adds a free one, with an offer and a
// typed handler that runs only once the call is paid:
//
//	sell, _ := x402mcp.NewSeller(x402mcp.Config{Seller: s})
//	x402mcp.AddPaidTool(sell, srv, &sdk.Tool{Name: "quote"}, offer, quote)
//	http.Handle("/mcp", sell.Handler(sdk.NewStreamableHTTPHandler(...)))
//
// (Seller.AddTool takes a tool whose arguments the program decodes and
// checks itself.) A call is answered in this order:
//
//  1. The arguments are validated (the tool's input schema, or the
//     program's own preflight): invalid → a tool error, no payment asked.
//  2. Without a payment in params._meta["x402/payment"] (a PaymentPayload
//     object, or the base64 of its JSON): the PaymentRequired, by the
//     tool-result binding (isError, the PaymentRequired as
//     structuredContent, as JSON in content[0].text and in
//     _meta["x402/error"], where Cloudflare's client reads it), or, to a
//     2026-07-28 request that advertises the org.x402/payment extension in
//     its client capabilities, by the extension binding (resultType
//     payment_required with paymentRequired; Seller.Handler writes it).
//  3. With one: the payment engine verifies, reserves, runs the handler,
//     journals the answer and settles; the answer goes out with the
//     settlement in _meta["x402/payment-response"]. A refused payment gets
//     the PaymentRequired again with the reason as its error; a refused
//     settlement the same with the failed settlement in _meta; the same
//     payment for the same call the recorded answer.
//
// tools/list gives a paid tool the _meta keys Cloudflare's client reads
// (agents-x402/paymentRequired, agents-x402/priceUSD), and an output
// schema that admits the x402 PaymentRequired of an unpaid call's tool
// error next to the tool's output.
package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/seed1284c1d2/svc/x402"
	"github.com/seed1284c1d2/svc/x402/engine"
	"github.com/seed1284c1d2/svc/x402/seller"
)

// Keys and values of the x402 MCP transport and of the clients that speak
// it.
const (
	// MetaPayment is the params._meta key of a payment: a PaymentPayload
	// object (the specification) or a base64 string of its JSON
	// (Cloudflare's agents client).
	MetaPayment = "x402/payment"
	// MetaPaymentResponse is the result._meta key of the SettlementResponse.
	MetaPaymentResponse = "x402/payment-response"
	// MetaPaymentError is the result._meta key under which an unpaid call's
	// PaymentRequired is repeated: Cloudflare's agents client reads it
	// there.
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
	// Transport names MCP in the payment journal and in fingerprints.
	Transport = "mcp"
	// HeaderProtocolVersion is the HTTP header of MCP's streamable HTTP
	// transport naming the protocol revision of a request.
	HeaderProtocolVersion = "MCP-Protocol-Version"
	// ReasonInvalidPayment is the PaymentRequired error of a call whose
	// _meta["x402/payment"] is neither a payment payload object nor base64
	// of one.
	ReasonInvalidPayment = "invalid_payment"
	// MaxBodyBytes bounds the body Seller.Handler reads (4 MiB).
	MaxBodyBytes = 4 << 20
	// extensionVersion is the first protocol version of the extension
	// binding.
	extensionVersion = "2026-07-28"
)

// Config configures a Seller. Seller is required.
type Config struct {
	// Seller runs the paid calls through the payment engine.
	Seller *seller.Seller
	// RequestID and RefCode read the request id and the referral code of
	// the HTTP request carrying a paid call, for the payment journal (see
	// Seller.Handler); nil means none.
	RequestID func(r *http.Request) string
	RefCode   func(r *http.Request) string
	// AdmitUnpaid, when set, is asked before a call without payment is
	// answered, AdmitPayment before a call with one is sold: false answers
	// a tool error saying when to call again, and nothing runs.
	// PaymentRefused, when set, is told of each call whose payment was
	// refused. Together they slow down a client whose payments keep being
	// refused, as the net/http binding's hooks of the same names do.
	AdmitUnpaid    func(r *http.Request) (ok bool, retryAfter time.Duration)
	AdmitPayment   func(r *http.Request) (ok bool, retryAfter time.Duration)
	PaymentRefused func(r *http.Request)
	// RunError is the text of the tool error of a run that failed (nothing
	// is charged); nil means "<tool> failed on the server; try again
	// later", the error being logged.
	RunError func(ctx context.Context, tool string, err error) string
	// Logger receives the failures of paid runs; nil discards them.
	Logger *slog.Logger
}

// Seller sells MCP tools. Safe for concurrent use.
type Seller struct {
	cfg Config
	log *slog.Logger
	// tools are the paid tools added with AddTool, by name, for the
	// direct answers of Handler.
	tools map[string]*paidTool
}

// paidTool is a paid tool added with AddTool.
type paidTool struct {
	name    string
	offer   *engine.Offer
	prepare PrepareFunc
}

// NewSeller checks cfg.
func NewSeller(cfg Config) (*Seller, error) {
	if cfg.Seller == nil {
		return nil, errors.New("x402/mcp: Config.Seller is required")
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Seller{cfg: cfg, log: log, tools: map[string]*paidTool{}}, nil
}

// Prepared is a call that passed its preflight.
type Prepared struct {
	// Input is the call's canonical input (its decoded values re-encoded,
	// so that formatting does not matter): with the transport and the
	// tool's name, the call's fingerprint (seller.Fingerprint). The same
	// payment buys the same call again, never another.
	Input []byte
	// Run produces the answer (JSON) once paid; its error settles nothing.
	Run func(ctx context.Context) ([]byte, error)
}

// PrepareFunc is the preflight of a paid tool's call: its arguments
// decoded and checked. Its error is the call's tool error (its message is
// shown as is) and no payment is asked.
type PrepareFunc func(ctx context.Context, args json.RawMessage) (Prepared, error)

// AddTool adds a paid tool to srv: t (its InputSchema is required, as for
// sdk.Server.AddTool), sold at offer, each call prepared by prepare. The
// offer's first requirement gives the price the tools/list entry shows.
func (s *Seller) AddTool(srv *sdk.Server, t *sdk.Tool, offer *engine.Offer, prepare PrepareFunc) error {
	def, err := paidDef(t, offer)
	if err != nil {
		return err
	}
	pt := &paidTool{name: t.Name, offer: offer, prepare: prepare}
	s.tools[t.Name] = pt
	srv.AddTool(def, func(ctx context.Context, req *sdk.CallToolRequest) (*sdk.CallToolResult, error) {
		var args json.RawMessage
		if req.Params != nil {
			args = req.Params.Arguments
		}
		return s.fromSDK(ctx, req, func(ctx context.Context, payment json.RawMessage, r *http.Request) answer {
			return s.call(ctx, pt, args, payment, r)
		}), nil
	})
	return nil
}

// AddPaidTool adds a paid tool with a typed handler, as sdk.AddTool does
// for a free one: the arguments are validated against t's input schema
// (inferred from In when nil) and decoded into In before any payment is
// asked; h runs once the call is paid, and its output (its schema
// inferred from Out when t has none) is the answer. The fingerprint of a
// call is over In re-encoded.
func AddPaidTool[In, Out any](s *Seller, srv *sdk.Server, t *sdk.Tool, offer *engine.Offer, h func(ctx context.Context, req *sdk.CallToolRequest, in In) (Out, error)) error {
	tt := *t
	if tt.OutputSchema == nil && reflect.TypeFor[Out]() != reflect.TypeFor[any]() {
		out, err := jsonschema.For[Out](nil)
		if err != nil {
			return fmt.Errorf("x402/mcp: tool %s: output schema: %w", t.Name, err)
		}
		tt.OutputSchema = out
	}
	if tt.InputSchema == nil {
		in, err := jsonschema.For[In](nil)
		if err != nil {
			return fmt.Errorf("x402/mcp: tool %s: input schema: %w", t.Name, err)
		}
		tt.InputSchema = in
	}
	def, err := paidDef(&tt, offer)
	if err != nil {
		return err
	}
	sdk.AddTool(srv, def, func(ctx context.Context, req *sdk.CallToolRequest, in In) (*sdk.CallToolResult, any, error) {
		input, err := json.Marshal(in)
		if err != nil {
			return nil, nil, fmt.Errorf("x402/mcp: encoding the input: %w", err)
		}
		p := Prepared{Input: input, Run: func(ctx context.Context) ([]byte, error) {
			out, err := h(ctx, req, in)
			if err != nil {
				return nil, err
			}
			return json.Marshal(out)
		}}
		pt := &paidTool{name: t.Name, offer: offer}
		return s.fromSDK(ctx, req, func(ctx context.Context, payment json.RawMessage, r *http.Request) answer {
			return s.sell(ctx, pt, p, payment, r)
		}), nil, nil
	})
	return nil
}

// paidDef is the tools/list entry of a paid tool: t with Cloudflare's
// _meta keys and an output schema that admits the PaymentRequired too.
func paidDef(t *sdk.Tool, offer *engine.Offer) (*sdk.Tool, error) {
	if offer == nil || len(offer.PaymentRequired.Accepts) == 0 {
		return nil, fmt.Errorf("x402/mcp: tool %s: an offer with at least one requirement is required", t.Name)
	}
	req := offer.PaymentRequired.Accepts[0]
	decimals := 6
	if n, ok := x402.LookupNetwork(req.Network); ok {
		decimals = n.USDCDecimals
	}
	price, err := x402.AtomicToPrice(req.Amount, decimals)
	if err != nil {
		return nil, fmt.Errorf("x402/mcp: tool %s: amount: %w", t.Name, err)
	}
	usd, err := strconv.ParseFloat(price, 64)
	if err != nil {
		return nil, fmt.Errorf("x402/mcp: tool %s: price %q: %w", t.Name, price, err)
	}
	def := *t
	def.Meta = sdk.Meta{}
	for k, v := range t.Meta {
		def.Meta[k] = v
	}
	def.Meta[MetaAgentsPaymentRequired] = true
	def.Meta[MetaAgentsPriceUSD] = usd
	if t.OutputSchema != nil {
		def.OutputSchema = map[string]any{
			"type":        "object",
			"title":       t.Name + " output",
			"description": "The tool's output; for the tool error of an unpaid call, the x402 PaymentRequired.",
			"anyOf":       []any{t.OutputSchema, PaymentRequiredSchema()},
		}
	}
	return &def, nil
}

// PaymentRequiredSchema describes the structured content of an unpaid
// call's tool error: the x402 PaymentRequired.
func PaymentRequiredSchema() map[string]any {
	return map[string]any{
		"type":        "object",
		"title":       "x402 PaymentRequired",
		"description": "The payment requirements of an unpaid call (a tool error): sign one of accepts and call again with the payment in _meta[\"" + MetaPayment + "\"].",
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

// ResourceURL is the resource.url of a paid tool's offer: the MCP endpoint
// (base + "/mcp") with the tool name as fragment, so that it names the
// tool and still leads to the endpoint; without a base URL, the x402 MCP
// SDK's "mcp://tool/<name>".
func ResourceURL(base, tool string) string {
	if base == "" {
		return "mcp://tool/" + tool
	}
	return strings.TrimRight(base, "/") + "/mcp#" + tool
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

// fromSDK answers a call the SDK hands to a paid tool's handler: the
// payment in its _meta, the HTTP request from the slot of Handler; for a
// 2026-07-28 client of the extension binding, a call that needs payment
// is told to the slot, so that Handler answers payment_required.
func (s *Seller) fromSDK(ctx context.Context, req *sdk.CallToolRequest, call func(ctx context.Context, payment json.RawMessage, r *http.Request) answer) *sdk.CallToolResult {
	var meta map[string]any
	if req.Params != nil {
		meta = req.Params.Meta
	}
	var payment json.RawMessage
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
	a := call(ctx, payment, r)
	if a.required != nil && slot != nil && slot.extension {
		if v, _ := meta[sdk.MetaKeyProtocolVersion].(string); v >= extensionVersion {
			slot.paymentRequired, slot.settlement = a.required, a.settlement
		}
	}
	return a.result
}

// call is one call of a tool added with AddTool: prepared (an error is a
// tool error, no payment asked), then sold.
func (s *Seller) call(ctx context.Context, pt *paidTool, args, payment json.RawMessage, r *http.Request) answer {
	p, err := pt.prepare(ctx, args)
	if err != nil {
		return answer{result: errorResult(err.Error())}
	}
	return s.sell(ctx, pt, p, payment, r)
}

// sell is one paid call whose preflight passed: payment is the raw
// _meta["x402/payment"] (nil when absent), r the HTTP request carrying it
// (nil when unknown).
func (s *Seller) sell(ctx context.Context, pt *paidTool, p Prepared, payment json.RawMessage, r *http.Request) answer {
	pay, err := seller.Payment(payment)
	if err != nil {
		return paymentRequired(pt.offer.Required(ReasonInvalidPayment), nil)
	}
	req := seller.Request{Transport: Transport, Payment: pay}
	if r != nil {
		admit, what := s.cfg.AdmitUnpaid, "calls without payment"
		if pay != nil {
			admit, what = s.cfg.AdmitPayment, "refused payments"
		}
		if admit != nil {
			if ok, wait := admit(r); !ok {
				return answer{result: errorResult(fmt.Sprintf("%s: rate limited: too many %s from this address lately; nothing was run or charged: call again after %s",
					pt.name, what, max(wait, time.Second).Round(time.Second)))}
			}
		}
		if s.cfg.RequestID != nil {
			req.RequestID = s.cfg.RequestID(r)
		}
		if s.cfg.RefCode != nil {
			req.RefCode = s.cfg.RefCode(r)
		}
	}
	res := s.cfg.Seller.Sell(ctx, seller.Sale{Offer: pt.offer, Fingerprint: seller.Fingerprint(Transport, pt.name, p.Input), Run: p.Run}, req)
	if res.Refused() && r != nil && s.cfg.PaymentRefused != nil {
		s.cfg.PaymentRefused(r)
	}
	return s.result(ctx, pt.name, res)
}

// result maps a seller result to the answer.
func (s *Seller) result(ctx context.Context, tool string, res seller.Result) answer {
	if res.Paid() {
		return answer{result: paidResult(res.Answer, res.Settlement)}
	}
	if res.PaymentRequired != nil {
		return paymentRequired(*res.PaymentRequired, res.Settlement)
	}
	wait := res.RetryAfter.Round(time.Second)
	var text string
	switch res.Code {
	case seller.CodeRunFailed, seller.CodeRunUnavailable:
		text = tool + " failed on the server; try again later"
		if s.cfg.RunError != nil {
			text = s.cfg.RunError(ctx, tool, res.Err)
		} else if ctx.Err() == nil {
			s.log.ErrorContext(ctx, "x402/mcp: paid tool failed", "tool", tool, "err", res.Err)
		}
		text += " (nothing was charged)"
	case seller.CodeUnresolved:
		text = fmt.Sprintf("%s: this payment may have been settled but its outcome is not known yet; it is being reconciled: do not pay again (%s)", tool, res.Reason)
	case seller.CodeSettlementPending:
		text = fmt.Sprintf("%s: the payment is being settled; call again with the same arguments and the same payment in %s to get the answer (retry after %s; %s)",
			tool, MetaPayment, wait, res.Reason)
	case seller.CodeThrottled:
		text = fmt.Sprintf("%s: too many paid calls of this payer ran lately without an answer (timed out or failed), or run now; nothing was run or charged: call again with the same payment in %s after %s (%s)",
			tool, MetaPayment, wait, res.Reason)
	case seller.CodeUnavailable:
		msg := "the payment could not be processed now; nothing was charged, try again later"
		if res.Reason == engine.ReasonFacilitatorUnavailable {
			msg = "the payment facilitator could not verify the payment; nothing was charged, try again later"
		}
		text = fmt.Sprintf("%s: %s (%s)", tool, msg, res.Reason)
	default:
		text = tool + ": unexpected payment outcome; nothing was charged"
	}
	return answer{result: errorResult(text)}
}

// errorResult is a tool error: isError with text.
func errorResult(text string) *sdk.CallToolResult {
	return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: text}}}
}

// paidResult is the answer of a paid call: the JSON output as
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

// callSlot carries one request between Seller.Handler and a paid tool's
// handler: the HTTP request (for its id and referral code), whether the
// client advertised the extension binding, and the PaymentRequired the
// tool handler asks the HTTP handler to answer instead of the tool result.
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

// Handler wraps the SDK's Streamable HTTP handler (next) of the server
// the paid tools are on: it lets a paid tool read the HTTP request
// (Config.RequestID and RefCode) and, for a 2026-07-28 client that
// advertises the org.x402/payment extension, answers an unpaid call by the
// extension binding.
//
// With info, the server's serverInfo, and next in stateless mode with JSON
// responses, Handler answers a well-formed tools/call of a tool added with
// AddTool itself, exactly as the SDK would (the same checks, the same
// result) but without the SDK's per-request session, which costs several
// times the rest of a paid call; anything else goes to next. Nil info
// leaves every request to next.
func (s *Seller) Handler(next http.Handler, info *sdk.Implementation) http.Handler {
	var serverInfo sdk.Meta
	if info != nil {
		serverInfo = sdk.Meta{sdk.MetaKeyServerInfo: info}
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.Body == nil {
			next.ServeHTTP(w, r)
			return
		}
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBodyBytes))
		if err != nil {
			status := http.StatusBadRequest
			var mbe *http.MaxBytesError
			if errors.As(err, &mbe) {
				status = http.StatusRequestEntityTooLarge
			}
			http.Error(w, "cannot read the request body", status)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		slot := &callSlot{}
		r = r.WithContext(context.WithValue(r.Context(), slotKey{}, slot))
		slot.r = r
		if serverInfo != nil && s.serveDirect(w, r, body, serverInfo) {
			return
		}
		if r.Header.Get(HeaderProtocolVersion) >= extensionVersion {
			slot.extension = advertisesPayment(body)
		}
		if !slot.extension {
			next.ServeHTTP(w, r)
			return
		}
		bw := &bufferedWriter{header: w.Header()}
		next.ServeHTTP(bw, r)
		bw.finish(w, slot)
	})
}

// advertisesPayment reports whether a JSON-RPC request's params declare
// the org.x402/payment extension in their client capabilities.
func advertisesPayment(body []byte) bool {
	if !bytes.Contains(body, []byte(ExtensionPayment)) {
		return false
	}
	var m struct {
		Params struct {
			Meta struct {
				Capabilities struct {
					Extensions map[string]json.RawMessage `json:"extensions"`
				} `json:"io.modelcontextprotocol/clientCapabilities"`
			} `json:"_meta"`
		} `json:"params"`
	}
	if err := json.Unmarshal(body, &m); err != nil {
		return false
	}
	_, ok := m.Params.Meta.Capabilities.Extensions[ExtensionPayment]
	return ok
}

// bufferedWriter holds the SDK's answer to a request of a client of the
// extension binding, which a paid tool handler may ask to replace.
type bufferedWriter struct {
	header http.Header // the real writer's
	status int
	body   bytes.Buffer
}

func (b *bufferedWriter) Header() http.Header { return b.header }

func (b *bufferedWriter) WriteHeader(status int) {
	if b.status == 0 {
		b.status = status
	}
}

func (b *bufferedWriter) Write(p []byte) (int, error) {
	if b.status == 0 {
		b.status = http.StatusOK
	}
	return b.body.Write(p)
}

// finish writes the buffered answer to w: as it is, or, when a tool
// handler asked for payment, with the tool result replaced by the
// extension binding's {resultType: "payment_required", paymentRequired,
// _meta} (the result's _meta kept, but for x402/error).
func (b *bufferedWriter) finish(w http.ResponseWriter, slot *callSlot) {
	status, body := b.status, b.body.Bytes()
	if status == 0 {
		status = http.StatusOK
	}
	if slot.paymentRequired != nil && status == http.StatusOK {
		if out, err := paymentRequiredAnswer(body, slot); err == nil {
			body = out
		}
	}
	if w.Header().Get("Content-Length") != "" {
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	}
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// paymentRequiredAnswer rewrites a JSON-RPC tool result into the extension
// binding's payment_required result.
func paymentRequiredAnswer(body []byte, slot *callSlot) ([]byte, error) {
	var res struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Result  *struct {
			Meta map[string]json.RawMessage `json:"_meta"`
		} `json:"result"`
	}
	if err := json.Unmarshal(body, &res); err != nil {
		return nil, fmt.Errorf("x402/mcp: tool answer: %w", err)
	}
	if res.Result == nil {
		return nil, errors.New("x402/mcp: the tool answer is not a result")
	}
	meta := res.Result.Meta
	delete(meta, MetaPaymentError)
	if slot.settlement == nil {
		delete(meta, MetaPaymentResponse)
	}
	type result struct {
		ResultType      string                     `json:"resultType"`
		PaymentRequired json.RawMessage            `json:"paymentRequired"`
		Meta            map[string]json.RawMessage `json:"_meta,omitempty"`
	}
	out, err := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Result  result          `json:"result"`
	}{res.JSONRPC, res.ID, result{ResultTypePaymentRequired, slot.paymentRequired, meta}})
	if err != nil {
		return nil, fmt.Errorf("x402/mcp: payment_required answer: %w", err)
	}
	return out, nil
}

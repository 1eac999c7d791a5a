package a2a

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/seed1284c1d2/svc"
	"github.com/seed1284c1d2/svc/discovery"
	"github.com/seed1284c1d2/svc/internal/clip"
	"github.com/seed1284c1d2/svc/tools"
	"github.com/seed1284c1d2/svc/x402"
	"github.com/seed1284c1d2/svc/x402/engine"
	"github.com/seed1284c1d2/svc/x402/exact"
	"github.com/seed1284c1d2/svc/xau"
)

// The A2A x402 payments extension, version 0.2
// (github.com/google-agentic-commerce/a2a-x402, spec/v0.2/spec.md), in its
// standalone flow: the payment terms travel in the task's status message
// metadata, the payment in the paying message's metadata.
const (
	// ExtensionURI identifies the extension: declared in the agent card's
	// capabilities.extensions, activated by a client listing it in the
	// A2A-Extensions request header (X-A2A-Extensions in A2A 0.3).
	ExtensionURI = "https://github.com/google-agentic-commerce/a2a-x402/blob/main/spec/v0.2"
	// ExtensionURIv01 is the URI of version 0.1, which the reference Python
	// library still sends; it activates the extension too (the metadata
	// keys are the same).
	ExtensionURIv01 = "https://github.com/google-a2a/a2a-x402/v0.1"
)

// Metadata keys of the extension (message metadata).
const (
	// MetaStatus is the stage of the payment flow (Status* values).
	MetaStatus = "x402.payment.status"
	// MetaRequired holds the x402 PaymentRequired of a task asking for payment.
	MetaRequired = "x402.payment.required"
	// MetaPayload holds the client's signed x402 PaymentPayload.
	MetaPayload = "x402.payment.payload"
	// MetaReceipts is the array of every x402 SettleResponse of the task.
	MetaReceipts = "x402.payment.receipts"
	// MetaError is the short error code of a failed payment (PaymentError*).
	MetaError = "x402.payment.error"
)

// Payment statuses (the values of MetaStatus).
const (
	// StatusPaymentRequired: the task asks for payment (MetaRequired).
	StatusPaymentRequired = "payment-required"
	// StatusPaymentSubmitted: the client's message carries the payment
	// (MetaPayload); also the status while it is processed.
	StatusPaymentSubmitted = "payment-submitted"
	// StatusPaymentRejected: the client declines to pay.
	StatusPaymentRejected = "payment-rejected"
	// StatusPaymentVerified: the payment was verified (the extension's
	// intermediate stage; this agent answers once settled).
	StatusPaymentVerified = "payment-verified"
	// StatusPaymentCompleted: settled; MetaReceipts holds the settlement.
	StatusPaymentCompleted = "payment-completed"
	// StatusPaymentFailed: the payment failed (MetaError, MetaReceipts).
	StatusPaymentFailed = "payment-failed"
)

// Error codes of a failed payment (the values of MetaError): the
// extension's common codes, then this agent's own.
const (
	// PaymentErrorInsufficientFunds: the payer's balance does not cover it.
	PaymentErrorInsufficientFunds = "INSUFFICIENT_FUNDS"
	// PaymentErrorInvalidSignature: the authorization's signature or
	// payload does not verify.
	PaymentErrorInvalidSignature = "INVALID_SIGNATURE"
	// PaymentErrorExpiredPayment: outside validAfter..validBefore.
	PaymentErrorExpiredPayment = "EXPIRED_PAYMENT"
	// PaymentErrorDuplicateNonce: the authorization was used already (for
	// another call), or failed too often.
	PaymentErrorDuplicateNonce = "DUPLICATE_NONCE"
	// PaymentErrorNetworkMismatch: signed for another network.
	PaymentErrorNetworkMismatch = "NETWORK_MISMATCH"
	// PaymentErrorInvalidAmount: not the amount asked for.
	PaymentErrorInvalidAmount = "INVALID_AMOUNT"
	// PaymentErrorSettlementFailed: the settlement was refused.
	PaymentErrorSettlementFailed = "SETTLEMENT_FAILED"
	// PaymentErrorInvalidPayment: the payment does not accept the offered
	// terms (recipient, asset, scheme, time-out).
	PaymentErrorInvalidPayment = "INVALID_PAYMENT"
	// PaymentErrorInProgress: the same payment for the same call is being
	// processed; send it again later.
	PaymentErrorInProgress = "PAYMENT_IN_PROGRESS"
	// PaymentErrorUnavailable: the payment journal or the facilitator did
	// not answer; nothing was charged, send the same payment again later.
	PaymentErrorUnavailable = "PAYMENT_UNAVAILABLE"
	// PaymentErrorSettlementPending: the payment is being settled; send the
	// same payment again to get the answer.
	PaymentErrorSettlementPending = "SETTLEMENT_PENDING"
	// PaymentErrorServiceUnavailable: the tool cannot run now (the trading
	// terminal is down); nothing was charged, send the same payment again
	// later.
	PaymentErrorServiceUnavailable = "SERVICE_UNAVAILABLE"
	// PaymentErrorServiceFailed: the tool failed; nothing was charged.
	PaymentErrorServiceFailed = "SERVICE_FAILED"
)

// Transport is the engine's name of this transport, in journal rows and
// payment events.
const Transport = "a2a"

// DefaultToolTimeout bounds one paid tool run.
const DefaultToolTimeout = 20 * time.Second

// Reasons (x402 SettleResponse.errorReason of a receipt) of failures that
// happen outside the engine.
const (
	reasonTerminalUnavailable = "terminal_unavailable"
	reasonToolUnavailable     = "tool_unavailable"
	reasonToolFailed          = "tool_failed"
)

// Fingerprint identifies a paid A2A call for the payment engine:
// tools.Fingerprint of "a2a", the tool key and the canonical JSON of the
// decoded input (tools.Call.Input: the request re-encoded, members in
// their declared order, numbers in plain decimal form), the rule of every
// transport. A payment is replayed only to the same fingerprint, so an
// authorization used over HTTP or MCP, or for another tool or input,
// cannot buy an A2A call, while an input sent again formatted otherwise
// gets the recorded answer.
func Fingerprint(toolKey string, canonicalInput []byte) string {
	return tools.Fingerprint(Transport, toolKey, canonicalInput)
}

// ResourceURL is the x402 resource of a tool sold over A2A: the A2A
// endpoint under base with the tool key as fragment
// ("https://host/a2a#risk-levels"), or "a2a://tool/<key>" without a base.
func ResourceURL(base, toolKey string) string {
	if base == "" {
		return "a2a://tool/" + toolKey
	}
	return strings.TrimRight(base, "/") + discovery.PathA2A + "#" + toolKey
}

// seller sells the paid tools through the payment engine.
type seller struct {
	engine        *engine.Engine
	cat           *tools.Catalog
	offers        map[string]*engine.Offer // by tool key
	network       string
	env           tools.Env
	terminalCheck func(context.Context) error
	symbolCheck   func(ctx context.Context, symbol string) error
	toolTimeout   time.Duration
	requestID     func(*http.Request) string
	refCode       func(*http.Request) string
}

// newSeller builds the offers of every tool; nil when opts.Engine is nil.
func newSeller(opts Options) (*seller, error) {
	if opts.Engine == nil {
		return nil, nil
	}
	if opts.Catalog == nil {
		return nil, errors.New("a2a: Options.Engine needs Options.Catalog")
	}
	if opts.ToolTimeout < 0 {
		return nil, fmt.Errorf("a2a: negative ToolTimeout %s", opts.ToolTimeout)
	}
	s := &seller{engine: opts.Engine, cat: opts.Catalog, offers: map[string]*engine.Offer{}, env: opts.Env,
		terminalCheck: opts.TerminalCheck, symbolCheck: opts.SymbolCheck, toolTimeout: opts.ToolTimeout, requestID: opts.RequestID, refCode: opts.RefCode}
	s.network = opts.Network
	if s.network == "" {
		s.network = opts.Catalog.Network()
	}
	if n, ok := x402.LookupNetwork(s.network); ok {
		s.network = n.CAIP2
	}
	if s.toolTimeout == 0 {
		s.toolTimeout = DefaultToolTimeout
	}
	if s.terminalCheck == nil || s.symbolCheck == nil {
		if s.env.Terminal == nil {
			if s.terminalCheck == nil {
				s.terminalCheck = func(context.Context) error {
					return fmt.Errorf("a2a: no trading terminal configured: %w", xau.ErrUnavailable)
				}
			}
		} else {
			hc := xau.NewHealthCache(s.env.Terminal, 0, nil)
			if s.terminalCheck == nil {
				s.terminalCheck = hc.Check
			}
			if s.symbolCheck == nil {
				s.symbolCheck = hc.CheckSymbol
			}
		}
	}
	for _, t := range opts.Catalog.All() {
		if t.Network != "" && t.Network != s.network {
			return nil, fmt.Errorf("a2a: tool %s is priced on network %s, the seller on %s", t.Key, t.Network, s.network)
		}
		route, err := t.PaymentRoute(s.network, opts.PayTo, ResourceURL(opts.Catalog.BaseURL(), t.Key))
		if err != nil {
			return nil, fmt.Errorf("a2a: %w", err)
		}
		offer, err := opts.Engine.NewOffer("A2A "+t.Key, t.Key, route)
		if err != nil {
			return nil, fmt.Errorf("a2a: tool %s: payment terms: %w", t.Key, err)
		}
		s.offers[t.Key] = offer
	}
	if len(s.offers) == 0 {
		return nil, errors.New("a2a: the catalog has no tools to sell")
	}
	return s, nil
}

// lookup finds a tool by key or operation id.
func (s *seller) lookup(name string) (*tools.Tool, bool) {
	if t, ok := s.cat.ByKey(name); ok {
		return t, true
	}
	return s.cat.ByOperationID(name)
}

// keys lists the tool keys, for error messages.
func (s *seller) keys() string {
	var keys []string
	for _, t := range s.cat.All() {
		keys = append(keys, t.Key)
	}
	return strings.Join(keys, ", ")
}

// sale is the paid call of a task: the tool, the decoded input (the call
// runs it once paid), the offer and the fingerprint of the first message.
// Like tasks, a sale is never modified once stored; a change is a copy.
type sale struct {
	tool        *tools.Tool
	call        *tools.Call
	offer       *engine.Offer
	fingerprint string
	inputSize   int
	// receipts are the x402 SettleResponses of the task so far (failures
	// included), for MetaReceipts.
	receipts []x402.SettleResponse
	// paidKey is the journal key of the payment that bought the answer,
	// so that the same payment sent to the completed task gets it again.
	paidKey string
}

func (s *sale) size() int64 { return int64(s.inputSize+len(s.paidKey)) + 512*int64(len(s.receipts)+1) }

// withReceipt returns a copy of s with r appended to its receipts.
func (s *sale) withReceipt(r x402.SettleResponse) *sale {
	c := *s
	c.receipts = append(slices.Clone(s.receipts), r)
	return &c
}

// requestInfo is what the HTTP request tells the methods.
type requestInfo struct {
	r *http.Request
	// activated is true when the client listed the x402 extension in
	// A2A-Extensions or X-A2A-Extensions.
	activated bool
}

type requestInfoKey struct{}

func requestInfoOf(ctx context.Context) requestInfo {
	ri, _ := ctx.Value(requestInfoKey{}).(requestInfo)
	return ri
}

// extensionActivated reports whether the request lists the x402 extension
// (either header spelling, comma-separated URIs).
func extensionActivated(h http.Header) bool {
	for _, name := range []string{"A2A-Extensions", "X-A2A-Extensions"} {
		for _, v := range h.Values(name) {
			for uri := range strings.SplitSeq(v, ",") {
				switch strings.TrimSpace(uri) {
				case ExtensionURI, ExtensionURIv01:
					return true
				}
			}
		}
	}
	return false
}

// paymentMeta is the extension's metadata of an agent status message.
type paymentMeta struct {
	Status   string                `json:"x402.payment.status"`
	Error    string                `json:"x402.payment.error,omitempty"`
	Required *x402.PaymentRequired `json:"x402.payment.required,omitempty"`
	Receipts []x402.SettleResponse `json:"x402.payment.receipts,omitempty"`
}

// clientPayment is what a client's message says about payment.
type clientPayment struct {
	status  string
	payment *x402.PaymentPayload
}

// payloadField names the payment payload in errors.
const payloadField = `message.metadata["` + MetaPayload + `"]`

// readClientPayment reads MetaStatus and MetaPayload from a message's
// metadata. The payload is an x402 PaymentPayload object (or, as some
// clients send it, the base64 of its JSON); its shape is checked as an x402
// payment header's is.
func readClientPayment(metadata json.RawMessage) (clientPayment, *rpcError) {
	var cp clientPayment
	if len(metadata) == 0 {
		return cp, nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(metadata, &m); err != nil {
		return cp, invalidParam("message.metadata", "object", "metadata must be a JSON object")
	}
	if raw, ok := m[MetaStatus]; ok && !isNull(raw) {
		if json.Unmarshal(raw, &cp.status) != nil {
			return cp, invalidParam(`message.metadata["`+MetaStatus+`"]`, "string", "the payment status must be a string")
		}
		switch cp.status {
		case StatusPaymentSubmitted, StatusPaymentRejected:
		default:
			return cp, invalidParam(`message.metadata["`+MetaStatus+`"]`, "oneof",
				"a client's payment status is %q or %q, got %q", StatusPaymentSubmitted, StatusPaymentRejected, clip.Runes(cp.status, 40))
		}
	}
	raw, ok := m[MetaPayload]
	if !ok || isNull(raw) {
		if cp.status == StatusPaymentSubmitted {
			return cp, invalidParam(payloadField, "required", "a message with payment status %q carries the signed x402 PaymentPayload", StatusPaymentSubmitted)
		}
		return cp, nil
	}
	raw = bytes.TrimSpace(raw)
	var encoded string
	switch raw[0] {
	case '{':
		encoded = base64.StdEncoding.EncodeToString(raw)
	case '"':
		if json.Unmarshal(raw, &encoded) != nil {
			return cp, invalidParam(payloadField, "object", "the payment payload must be a JSON object")
		}
	default:
		return cp, invalidParam(payloadField, "object", "the payment payload must be an x402 PaymentPayload object")
	}
	p, err := x402.DecodePaymentPayload(encoded)
	if err != nil {
		msg := "not an x402 PaymentPayload"
		var he *x402.HeaderError
		if errors.As(err, &he) {
			msg += ": " + he.Message
		}
		return cp, invalidParam(payloadField, "x402_payload", "%s", msg)
	}
	if cp.status == "" {
		cp.status = StatusPaymentSubmitted
	}
	cp.payment = &p
	return cp, nil
}

// withoutPayload returns metadata without the payment payload (kept tasks
// hold no signatures); nil when nothing is left.
func withoutPayload(metadata json.RawMessage) json.RawMessage {
	if len(metadata) == 0 {
		return metadata
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(metadata, &m) != nil {
		return metadata
	}
	if _, ok := m[MetaPayload]; !ok {
		return metadata
	}
	delete(m, MetaPayload)
	if len(m) == 0 {
		return nil
	}
	b, err := json.Marshal(m)
	if err != nil {
		return nil
	}
	return b
}

// paymentKey is the journal key of a payment (exact.NonceKey), "" when the
// payload is not an exact EVM authorization.
func paymentKey(p *x402.PaymentPayload) string {
	ep, err := exact.ParseExactEVMPayload(p.Payload)
	if err != nil {
		return ""
	}
	return exact.NonceKey(p.Accepted.Network, p.Accepted.Asset, ep.Authorization.From, ep.Authorization.Nonce)
}

// startSale answers a message asking for a paid tool: invalid input is
// -32602 and a terminal outage a failed task, both before any payment
// requirement; then, without payment, a task in input-required with the
// offer, or, with a payment in the message (paying up front), the paid
// call at once.
func (h *handler) startSale(ctx context.Context, msg message, req ask, modes outputModes) (*task, error) {
	if h.sell == nil {
		return nil, newError(CodeUnsupportedOperation,
			`unsupported operation: this server does not sell tools over A2A; ask for a call plan ({"query": "...", "input": {...}}) and pay over HTTP`)
	}
	d, field := req.data, req.dataField
	if d.Action != "" || d.Query != nil || d.Q != "" || d.Category != "" || d.Offset != 0 || d.Limit != 0 || d.Key != "" {
		return nil, invalidParam(field, "oneof", "a paid call holds only tool and input; the discovery members (action, query, q, category, offset, limit, key) go in a message of their own")
	}
	name := strings.TrimSpace(*d.Tool)
	if name == "" {
		return nil, invalidParam(field+".tool", "required", "tool names the paid tool (a key such as risk-levels)")
	}
	tool, ok := h.sell.lookup(name)
	if !ok {
		return nil, invalidParam(field+".tool", "oneof", "unknown tool %q; the tools are %s", clip.Runes(name, 40), h.sell.keys())
	}
	cp, e := readClientPayment(msg.metadata)
	if e != nil {
		return nil, e
	}
	input := d.Input
	if isNull(input) {
		input = nil
	}
	if limit := h.sell.cat.BodyLimit(); limit > 0 && int64(len(input)) > limit {
		return nil, invalidParam(field+".input", "max_bytes", "the input is %d bytes, more than the %d a tool takes", len(input), limit)
	}
	call, err := tool.DecodeJSON(ctx, input)
	if err != nil {
		return nil, fromSurfaceError(err, field+".input")
	}
	canonical := call.Input()
	sl := &sale{tool: tool, call: call, offer: h.sell.offers[tool.Key], fingerprint: Fingerprint(tool.Key, canonical), inputSize: len(canonical)}
	t := &task{id: h.newID(), contextID: msg.contextID, timestamp: h.now(), sale: sl}
	if t.contextID == "" {
		t.contextID = h.newID()
	}
	msg.taskID, msg.contextID = t.id, t.contextID
	msg.metadata = withoutPayload(msg.metadata)
	t.history = []message{msg}
	err = h.sell.preflight(ctx, tool)
	if err == nil && tool.Terminal {
		if err = call.CheckSymbol(ctx, h.sell.symbolCheck); svc.KindOf(err) == svc.KindInvalid {
			// A symbol the terminal does not serve is invalid input.
			return nil, fromSurfaceError(err, field+".input")
		}
	}
	if err != nil {
		// Nothing can be sold now: no payment is asked for.
		t.state = stateFailed
		t.status = h.agentMessage(t, nil, unavailableText(tool, false))
		h.store.put(t)
		return t, nil
	}
	if cp.status == StatusPaymentRejected {
		t.state = stateCanceled
		t.status = h.agentMessage(t, &paymentMeta{Status: StatusPaymentRejected}, "The payment was declined; nothing was charged.")
		h.store.put(t)
		return t, nil
	}
	if cp.payment == nil {
		out := h.sell.engine.Serve(ctx, engine.Call{Offer: sl.offer, Fingerprint: sl.fingerprint, Transport: Transport,
			RequestID: h.sell.requestIDOf(ctx, msg), RefCode: h.sell.refCodeOf(ctx)}, h.sell.run(sl))
		if out.Kind != engine.PaymentRequired || out.PaymentRequired == nil {
			e := newError(CodeInternalError, "internal error")
			e.cause = fmt.Errorf("the payment engine answered %s to a call without payment", out.Kind)
			return nil, e
		}
		t.state = stateInputRequired
		t.status = h.agentMessage(t, &paymentMeta{Status: StatusPaymentRequired, Required: out.PaymentRequired}, paymentRequiredText(tool, sl.offer, t.id))
		h.store.put(t)
		return t, nil
	}
	// Paying up front: the task is working while the engine runs.
	t.state = stateWorking
	h.store.put(t)
	return h.runSale(ctx, t, msg, *cp.payment, modes), nil
}

// continueSale answers a message on the task of a paid call: the payment
// (or its refusal) for a task in input-required, the same payment again
// for a completed one.
func (h *handler) continueSale(ctx context.Context, t *task, msg message, modes outputModes) (*task, error) {
	cp, e := readClientPayment(msg.metadata)
	if e != nil {
		return nil, e
	}
	switch t.state {
	case stateWorking:
		// A payment is being processed: the task as it stands.
		return t, nil
	case stateCompleted:
		if cp.payment != nil && t.sale.paidKey != "" && paymentKey(cp.payment) == t.sale.paidKey {
			return t, nil // the same payment again: the recorded answer
		}
		return nil, newError(CodeUnsupportedOperation,
			"unsupported operation: task %q is already completed and paid; send a new message without taskId for another call", clip.Runes(t.id, 80)).
			with("taskId", clip.Runes(t.id, 80))
	case stateInputRequired:
	default:
		return nil, newError(CodeUnsupportedOperation,
			"unsupported operation: task %q is %s and takes no more messages; send a new message without taskId to start again", clip.Runes(t.id, 80), t.state.name(v03)).
			with("taskId", clip.Runes(t.id, 80))
	}
	if cp.payment == nil && cp.status != StatusPaymentRejected {
		return nil, invalidParam(payloadField, "required",
			"task %q waits for a payment: send the signed x402 PaymentPayload in message.metadata[%q] (or %q: %q to decline)",
			clip.Runes(t.id, 80), MetaPayload, MetaStatus, StatusPaymentRejected)
	}
	next := *t
	next.timestamp = h.now()
	msg.taskID, msg.contextID = t.id, t.contextID
	msg.metadata = withoutPayload(msg.metadata)
	next.history = append(slices.Clone(t.history), *t.status, msg)
	if cp.status == StatusPaymentRejected {
		next.state = stateCanceled
		next.status = h.agentMessage(&next, &paymentMeta{Status: StatusPaymentRejected, Receipts: t.sale.receipts}, "The payment was declined; nothing was charged.")
		if !h.store.swap(t, &next) {
			return h.current(t)
		}
		return &next, nil
	}
	next.state = stateWorking
	next.status = h.agentMessage(&next, &paymentMeta{Status: StatusPaymentSubmitted}, "The payment was received; verifying it.")
	if !h.store.swap(t, &next) {
		// Another message moved the task on first.
		return h.current(t)
	}
	return h.runSale(ctx, &next, msg, *cp.payment, modes), nil
}

// current returns the stored state of t after a lost race.
func (h *handler) current(t *task) (*task, error) {
	if cur, ok := h.store.get(t.id); ok {
		return cur, nil
	}
	return nil, newError(CodeTaskNotFound, "task not found: %q (expired)", clip.Runes(t.id, 80)).with("taskId", clip.Runes(t.id, 80))
}

// runSale pays for the task's call (t is working and stored): the
// terminal's availability again, then the engine (verify, reserve, run,
// settle). The final task is stored and returned.
func (h *handler) runSale(ctx context.Context, t *task, msg message, payment x402.PaymentPayload, modes outputModes) *task {
	sl := t.sale
	var out engine.Outcome
	if err := h.sell.preflight(ctx, sl.tool); err != nil {
		reason := reasonToolUnavailable
		if sl.tool.Terminal {
			reason = reasonTerminalUnavailable
		}
		out = engine.Outcome{Kind: engine.Unavailable, Reason: reason, Err: err}
	} else {
		out = h.sell.engine.Serve(ctx, engine.Call{Offer: sl.offer, Fingerprint: sl.fingerprint, Payment: &payment, Transport: Transport,
			RequestID: h.sell.requestIDOf(ctx, msg), RefCode: h.sell.refCodeOf(ctx)}, h.sell.run(sl))
	}
	final := h.conclude(t, &payment, out, modes)
	h.store.put(final)
	return final
}

// conclude builds the task that an engine outcome leaves: completed with
// the answer and the receipts; failed for a refused payment, a refused
// settlement or a failed tool; back in input-required, with the offer, for
// what the same payment may get later (in progress, unavailable, pending,
// tool or terminal unavailable).
func (h *handler) conclude(t *task, payment *x402.PaymentPayload, out engine.Outcome, modes outputModes) *task {
	next := *t
	next.timestamp = h.now()
	sl := t.sale
	failure := func(reason string) x402.SettleResponse {
		return x402.SettleResponse{Success: false, ErrorReason: reason, Network: h.sell.network, Payer: out.Payer}
	}
	retry := func(reason, code, text string) *task {
		next.sale = sl.withReceipt(failure(reason))
		next.state = stateInputRequired
		pr := out.PaymentRequired
		if pr == nil {
			r := sl.offer.Required(reason)
			pr = &r
		}
		next.status = h.agentMessage(&next, &paymentMeta{Status: StatusPaymentFailed, Error: code, Required: pr, Receipts: next.sale.receipts}, text)
		return &next
	}
	fail := func(receipt x402.SettleResponse, code, text string) *task {
		next.sale = sl.withReceipt(receipt)
		next.state = stateFailed
		next.status = h.agentMessage(&next, &paymentMeta{Status: StatusPaymentFailed, Error: code, Receipts: next.sale.receipts}, text)
		return &next
	}
	switch out.Kind {
	case engine.Paid, engine.Replayed:
		if out.Answer == nil || out.Settlement == nil {
			return fail(failure(x402.ReasonUnexpectedSettleError), PaymentErrorSettlementFailed, "The payment engine returned no answer; nothing more can be done on this task.")
		}
		next.sale = sl.withReceipt(*out.Settlement)
		next.sale.paidKey = out.Key
		next.state = stateCompleted
		next.artifacts = []artifact{h.outputArtifact(sl.tool, out.Answer.Body, modes)}
		next.status = h.agentMessage(&next, &paymentMeta{Status: StatusPaymentCompleted, Receipts: next.sale.receipts}, paidText(sl, out))
		return &next
	case engine.Refused:
		code := refusalCode(out.Reason, payment, sl.offer)
		return fail(failure(out.Reason), code,
			fmt.Sprintf("The payment was refused (%s); nothing was charged. Send a new message without taskId to start again.", clip.Runes(out.Reason, 120)))
	case engine.SettleFailed:
		receipt := failure(out.Reason)
		if out.Settlement != nil {
			receipt = *out.Settlement
		}
		code := PaymentErrorSettlementFailed
		if strings.Contains(strings.ToLower(out.Reason), "insufficient") {
			code = PaymentErrorInsufficientFunds
		}
		return fail(receipt, code, fmt.Sprintf("The settlement was refused (%s); the answer was withheld.", clip.Runes(out.Reason, 120)))
	case engine.RunFailed:
		switch svc.KindOf(out.Err) {
		case svc.KindUnavailable, svc.KindTimeout:
			return retry(reasonToolUnavailable, PaymentErrorServiceUnavailable, unavailableText(sl.tool, true))
		}
		text := fmt.Sprintf("%s failed; nothing was charged.", sl.tool.Name)
		var se *svc.Error
		if errors.As(out.Err, &se) && se.Kind != svc.KindInternal {
			text = fmt.Sprintf("%s failed (%s); nothing was charged.", sl.tool.Name, clip.Runes(svcErrorText(se), 300))
		} else {
			h.log.Error("a2a: paid tool failed", "tool", sl.tool.Key, "error", out.Err)
		}
		return fail(failure(reasonToolFailed), PaymentErrorServiceFailed, text)
	case engine.InProgress:
		return retry(out.Reason, PaymentErrorInProgress, fmt.Sprintf(
			"This payment is being processed for this call; nothing more was charged. Send the same payment again in %d s.", seconds(out.RetryAfter)))
	case engine.Throttled:
		return retry(out.Reason, PaymentErrorUnavailable, fmt.Sprintf(
			"Too many paid calls of this payer ran lately without an answer (timed out or failed), or run now; nothing was run or charged. Send the same payment again in %d s.",
			seconds(out.RetryAfter)))
	case engine.Pending:
		return retry(out.Reason, PaymentErrorSettlementPending, fmt.Sprintf(
			"The payment is being settled. Send the same payment again in %d s to get the answer.", seconds(out.RetryAfter)))
	case engine.Unavailable:
		switch out.Reason {
		case reasonTerminalUnavailable, reasonToolUnavailable:
			return retry(out.Reason, PaymentErrorServiceUnavailable, unavailableText(sl.tool, true))
		}
		if out.Err != nil {
			h.log.Warn("a2a: payment not processed", "tool", sl.tool.Key, "reason", out.Reason, "error", out.Err)
		}
		return retry(out.Reason, PaymentErrorUnavailable,
			fmt.Sprintf("The payment could not be processed now (%s); nothing was charged. Send the same payment again later.", clip.Runes(out.Reason, 80)))
	}
	h.log.Error("a2a: unexpected payment outcome", "kind", out.Kind.String())
	return fail(failure(x402.ReasonUnexpectedVerifyError), PaymentErrorInvalidPayment, "The payment could not be processed; nothing was charged.")
}

// refusalCode maps a refusal reason to the extension's error code.
func refusalCode(reason string, payment *x402.PaymentPayload, offer *engine.Offer) string {
	switch reason {
	case exact.ReasonInvalidSignature, exact.ReasonSignatureFormat, exact.ReasonMissingSignature, exact.ReasonInvalidPayload,
		exact.ReasonNonceFormat, exact.ReasonMissingEIP712Domain, exact.ReasonTokenNameMismatch, exact.ReasonTokenVersionMismatch,
		x402.ReasonUnexpectedVerifyError:
		return PaymentErrorInvalidSignature
	case exact.ReasonValidBefore, exact.ReasonValidAfter:
		return PaymentErrorExpiredPayment
	case exact.ReasonNonceAlreadyUsed, engine.ReasonAttemptsExhausted:
		return PaymentErrorDuplicateNonce
	case exact.ReasonNetworkMismatch, x402.ReasonInvalidNetwork:
		return PaymentErrorNetworkMismatch
	case exact.ReasonValueMismatch:
		return PaymentErrorInvalidAmount
	case engine.ReasonNoMatchingRequirements:
		if payment != nil && len(offer.PaymentRequired.Accepts) > 0 {
			want := offer.PaymentRequired.Accepts[0]
			if !sameNetwork(payment.Accepted.Network, want.Network) {
				return PaymentErrorNetworkMismatch
			}
			if payment.Accepted.Amount != "" && payment.Accepted.Amount != want.Amount {
				return PaymentErrorInvalidAmount
			}
		}
	}
	if strings.Contains(strings.ToLower(reason), "insufficient") {
		return PaymentErrorInsufficientFunds
	}
	return PaymentErrorInvalidPayment
}

// sameNetwork compares two network ids (CAIP-2 or v1 names).
func sameNetwork(a, b string) bool {
	if n, ok := x402.LookupNetwork(a); ok {
		a = n.CAIP2
	}
	if n, ok := x402.LookupNetwork(b); ok {
		b = n.CAIP2
	}
	return a == b
}

// preflight is the availability check of a terminal-backed tool (nil for
// the others).
func (s *seller) preflight(ctx context.Context, t *tools.Tool) error {
	if !t.Terminal {
		return nil
	}
	if err := s.terminalCheck(ctx); err != nil {
		return fmt.Errorf("a2a: terminal check: %w", err)
	}
	return nil
}

// run is the engine's run function of a sale: the tool on the decoded
// input, its JSON output recorded as the answer.
func (s *seller) run(sl *sale) engine.RunFunc {
	return func(ctx context.Context) (engine.Answer, error) {
		ctx, cancel := context.WithTimeout(ctx, s.toolTimeout)
		defer cancel()
		out, err := sl.call.RunJSON(ctx, s.env)
		if err != nil {
			return engine.Answer{}, err
		}
		return engine.Answer{Status: http.StatusOK, Header: map[string][]string{"Content-Type": {mediaJSON}}, Body: out}, nil
	}
}

func (s *seller) requestIDOf(ctx context.Context, msg message) string {
	if ri := requestInfoOf(ctx); ri.r != nil && s.requestID != nil {
		if id := s.requestID(ri.r); id != "" {
			return id
		}
	}
	return clip.Runes(msg.id, 128)
}

func (s *seller) refCodeOf(ctx context.Context) string {
	if ri := requestInfoOf(ctx); ri.r != nil && s.refCode != nil {
		return s.refCode(ri.r)
	}
	return ""
}

// agentMessage is the agent's status message of t: a text part and the
// extension's metadata (none when meta is nil).
func (h *handler) agentMessage(t *task, meta *paymentMeta, text string) *message {
	m := &message{id: h.newID(), contextID: t.contextID, taskID: t.id, role: roleAgent,
		parts: []part{{text: text, mediaType: mediaText}}}
	if meta != nil {
		b, err := json.Marshal(meta)
		if err == nil {
			m.metadata = b
		} else {
			h.log.Error("a2a: encoding the payment metadata", "error", err)
		}
	}
	return m
}

// outputArtifact is the answer of a paid tool: its JSON output as a data
// part, and the same JSON as a text part for text-only clients.
func (h *handler) outputArtifact(t *tools.Tool, body []byte, modes outputModes) artifact {
	data := bytes.TrimSpace(body)
	if len(data) == 0 || data[0] != '{' {
		// A2A 0.3 data parts are objects.
		data, _ = json.Marshal(map[string]json.RawMessage{"result": json.RawMessage(orNull(data))})
	}
	return artifact{
		id:          h.newID(),
		name:        t.Key,
		description: fmt.Sprintf("The answer of %s (%s), paid with x402", t.Name, t.Key),
		parts: modes.filter([]part{
			{data: append(json.RawMessage(nil), data...), mediaType: mediaJSON},
			{text: string(bytes.TrimSpace(body)), mediaType: mediaText},
		}),
	}
}

func orNull(b []byte) []byte {
	if len(b) == 0 || !json.Valid(b) {
		return []byte("null")
	}
	return b
}

// paymentRequiredText tells in one paragraph what to pay and how.
func paymentRequiredText(t *tools.Tool, offer *engine.Offer, taskID string) string {
	network := ""
	if len(offer.PaymentRequired.Accepts) > 0 {
		network = offer.PaymentRequired.Accepts[0].Network
	}
	return fmt.Sprintf("Payment required: %s USDC on %s for %s (%s). Sign an x402 v2 payment for the requirements in metadata[%q] "+
		"and send it in message.metadata[%q] (with %q: %q) on task %s; the answer comes with the settlement receipt.",
		t.Price, network, t.Name, t.Key, MetaRequired, MetaPayload, MetaStatus, StatusPaymentSubmitted, taskID)
}

// paidText tells that the call was paid.
func paidText(sl *sale, out engine.Outcome) string {
	verb := "Payment completed"
	if out.Kind == engine.Replayed {
		verb = "Payment already settled for this call; the recorded answer is sent again"
	}
	return fmt.Sprintf("%s: %s USDC, transaction %s. The answer of %s is in the artifact %q.",
		verb, sl.tool.Price, clip.Runes(out.Settlement.Transaction, 100), sl.tool.Name, sl.tool.Key)
}

// unavailableText says that a tool cannot run now.
func unavailableText(t *tools.Tool, paying bool) string {
	what := fmt.Sprintf("%s cannot run now", t.Name)
	if t.Terminal {
		what = fmt.Sprintf("The trading terminal behind %s is unavailable", t.Name)
	}
	if paying {
		return what + "; nothing was charged. Send the same payment again later."
	}
	return what + "; no payment was asked for. Try again later with a new message."
}

// svcErrorText is the message of a tool error with its fields.
func svcErrorText(e *svc.Error) string {
	if len(e.Fields) == 0 {
		return e.Message
	}
	var parts []string
	for _, f := range e.Fields {
		parts = append(parts, f.Field+": "+f.Message)
	}
	return strings.Join(parts, "; ")
}

// seconds rounds d up to whole seconds, at least 1.
func seconds(d time.Duration) int {
	s := int((d + time.Second - 1) / time.Second)
	return max(s, 1)
}

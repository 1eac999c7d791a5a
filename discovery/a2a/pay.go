package a2a

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/seed1284c1d2/svc"
	"github.com/seed1284c1d2/svc/internal/clip"
	"github.com/seed1284c1d2/svc/tools"
	"github.com/seed1284c1d2/svc/tools/sell"
	"github.com/seed1284c1d2/svc/wire"
	"github.com/seed1284c1d2/svc/x402"
	x402a2a "github.com/seed1284c1d2/svc/x402/a2a"
	"github.com/seed1284c1d2/svc/x402/engine"
	"github.com/seed1284c1d2/svc/x402/seller"
)

// Reasons (x402 SettleResponse.errorReason of a receipt) of failures that
// happen outside the engine.
const (
	reasonTerminalUnavailable = "terminal_unavailable"
	reasonToolUnavailable     = "tool_unavailable"
	reasonToolFailed          = "tool_failed"
	// reasonRateLimited: the address sent too many refused payments lately.
	reasonRateLimited = "rate_limited"
)

// Fingerprint identifies a paid A2A call for the payment engine:
// seller.Fingerprint of "a2a", the tool key and the canonical JSON of the
// decoded input (tools.Call.Input: the request re-encoded, members in
// their declared order, numbers in plain decimal form), the rule of every
// transport. A payment is replayed only to the same fingerprint, so an
// authorization used over HTTP or MCP, or for another tool or input,
// cannot buy an A2A call, while an input sent again formatted otherwise
// gets the recorded answer.
func Fingerprint(toolKey string, canonicalInput []byte) string {
	return seller.Fingerprint(x402a2a.Transport, toolKey, canonicalInput)
}

// ResourceURL is the x402 resource of a tool sold over A2A: the A2A
// endpoint under base with the tool key as fragment
// ("https://host/a2a#risk-levels"), or "a2a://tool/<key>" without a base.
func ResourceURL(base, toolKey string) string {
	if base == "" {
		return "a2a://tool/" + toolKey
	}
	return strings.TrimRight(base, "/") + wire.PathA2A + "#" + toolKey
}

// paidSeller sells the paid tools: the catalog's shop (offer, preflight,
// run) through the transport-neutral seller.
type paidSeller struct {
	shop      *sell.Shop
	seller    *seller.Seller
	engine    *engine.Engine
	cat       *tools.Catalog
	offers    map[string]*engine.Offer // by tool key
	network   string
	requestID func(*http.Request) string
	refCode   func(*http.Request) string
	// admitUnpaid, admitPayment and paymentRefused are Options'.
	admitUnpaid    func(*http.Request) (bool, time.Duration)
	admitPayment   func(*http.Request) (bool, time.Duration)
	paymentRefused func(*http.Request)
}

// admit asks limit (nil: no limit) about the HTTP request of ctx.
func (s *paidSeller) admit(ctx context.Context, limit func(*http.Request) (bool, time.Duration)) (bool, time.Duration) {
	if ri := requestInfoOf(ctx); limit != nil && ri.r != nil {
		return limit(ri.r)
	}
	return true, 0
}

// newSeller builds the offers of every tool; nil when opts.Engine is nil.
func newSeller(opts Options) (*paidSeller, error) {
	if opts.Engine == nil {
		return nil, nil
	}
	shop := opts.Shop
	if shop == nil {
		return nil, errors.New("a2a: Options.Engine needs Options.Shop")
	}
	if opts.ToolTimeout < 0 {
		return nil, fmt.Errorf("a2a: negative ToolTimeout %s", opts.ToolTimeout)
	}
	sl, err := seller.New(seller.Config{Engine: opts.Engine, RunTimeout: opts.ToolTimeout, Logger: opts.Logger})
	if err != nil {
		return nil, fmt.Errorf("a2a: %w", err)
	}
	s := &paidSeller{shop: shop, seller: sl, engine: opts.Engine, cat: shop.Catalog(), offers: map[string]*engine.Offer{}, network: shop.Network(),
		requestID: opts.RequestID, refCode: opts.RefCode,
		admitUnpaid: opts.AdmitUnpaid, admitPayment: opts.AdmitPayment, paymentRefused: opts.PaymentRefused}
	for _, t := range shop.Catalog().All() {
		offer, err := shop.Offer(t, "A2A "+t.Key, ResourceURL(shop.Catalog().BaseURL(), t.Key), nil)
		if err != nil {
			return nil, fmt.Errorf("a2a: %w", err)
		}
		s.offers[t.Key] = offer
	}
	if len(s.offers) == 0 {
		return nil, errors.New("a2a: the catalog has no tools to sell")
	}
	return s, nil
}

// lookup finds a tool by key or operation id.
func (s *paidSeller) lookup(name string) (*tools.Tool, bool) {
	if t, ok := s.cat.ByKey(name); ok {
		return t, true
	}
	return s.cat.ByOperationID(name)
}

// keys lists the tool keys, for error messages.
func (s *paidSeller) keys() string {
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

// payloadField names the payment payload in errors.
const payloadField = `message.metadata["` + x402a2a.MetaPayload + `"]`

// readClientPayment reads the payment status and payload of a message's
// metadata (x402a2a.ReadPayment); a malformed one is -32602 naming the
// member.
func readClientPayment(metadata json.RawMessage) (x402a2a.ClientPayment, *rpcError) {
	cp, err := x402a2a.ReadPayment(metadata)
	if err != nil {
		var me *x402a2a.MetadataError
		if errors.As(err, &me) {
			return cp, invalidParam(me.Field, me.Rule, "%s", me.Message)
		}
		return cp, invalidParam("message.metadata", "object", "%s", err.Error())
	}
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
	if _, ok := m[x402a2a.MetaPayload]; !ok {
		return metadata
	}
	delete(m, x402a2a.MetaPayload)
	if len(m) == 0 {
		return nil
	}
	b, err := json.Marshal(m)
	if err != nil {
		return nil
	}
	return b
}

// paymentKey is the journal key of a payment for the offer of sl, as its
// scheme tells it (engine.Engine.Identify); "" when no registered scheme
// accepts it.
func (s *paidSeller) paymentKey(ctx context.Context, sl *sale, p *x402.PaymentPayload) string {
	pm, err := s.engine.Identify(ctx, sl.offer, *p)
	if err != nil {
		return ""
	}
	return pm.Key
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
	if err := h.sell.shop.Check(ctx, call); err != nil {
		if svc.KindOf(err) == svc.KindInvalid {
			// A symbol the terminal does not serve is invalid input.
			return nil, fromSurfaceError(err, field+".input")
		}
		// Nothing can be sold now: no payment is asked for.
		t.state = stateFailed
		t.status = h.agentMessage(t, nil, unavailableText(tool, false))
		h.store.put(t)
		return t, nil
	}
	if cp.Status == x402a2a.StatusPaymentRejected {
		t.state = stateCanceled
		t.status = h.agentMessage(t, &x402a2a.Metadata{Status: x402a2a.StatusPaymentRejected}, "The payment was declined; nothing was charged.")
		h.store.put(t)
		return t, nil
	}
	if cp.Payment == nil {
		if ok, wait := h.sell.admit(ctx, h.sell.admitUnpaid); !ok {
			// Nothing is sold to this address now: no payment is asked for.
			t.state = stateFailed
			t.status = h.agentMessage(t, nil, fmt.Sprintf(
				"Too many calls without payment from this address lately; no payment was asked for. Try again in %d s with a new message.", seconds(wait)))
			h.store.put(t)
			return t, nil
		}
		out := h.sell.sell(ctx, sl, msg, nil)
		if out.Code != seller.CodePaymentRequired || out.PaymentRequired == nil {
			e := newError(CodeInternalError, "internal error")
			e.cause = fmt.Errorf("the payment engine answered %s to a call without payment", out.Outcome.Kind)
			return nil, e
		}
		t.state = stateInputRequired
		t.status = h.agentMessage(t, &x402a2a.Metadata{Status: x402a2a.StatusPaymentRequired, Required: out.PaymentRequired}, paymentRequiredText(tool, sl.offer, t.id))
		h.store.put(t)
		return t, nil
	}
	// Paying up front: the task is working while the engine runs.
	t.state = stateWorking
	h.store.put(t)
	return h.runSale(ctx, t, msg, *cp.Payment, modes), nil
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
		if cp.Payment != nil && t.sale.paidKey != "" && h.sell.paymentKey(ctx, t.sale, cp.Payment) == t.sale.paidKey {
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
	if cp.Payment == nil && cp.Status != x402a2a.StatusPaymentRejected {
		return nil, invalidParam(payloadField, "required",
			"task %q waits for a payment: send the signed x402 PaymentPayload in message.metadata[%q] (or %q: %q to decline)",
			clip.Runes(t.id, 80), x402a2a.MetaPayload, x402a2a.MetaStatus, x402a2a.StatusPaymentRejected)
	}
	next := *t
	next.timestamp = h.now()
	msg.taskID, msg.contextID = t.id, t.contextID
	msg.metadata = withoutPayload(msg.metadata)
	next.history = append(slices.Clone(t.history), *t.status, msg)
	if cp.Status == x402a2a.StatusPaymentRejected {
		next.state = stateCanceled
		next.status = h.agentMessage(&next, &x402a2a.Metadata{Status: x402a2a.StatusPaymentRejected, Receipts: t.sale.receipts}, "The payment was declined; nothing was charged.")
		if !h.store.swap(t, &next) {
			return h.current(t)
		}
		return &next, nil
	}
	next.state = stateWorking
	next.status = h.agentMessage(&next, &x402a2a.Metadata{Status: x402a2a.StatusPaymentSubmitted}, "The payment was received; verifying it.")
	if !h.store.swap(t, &next) {
		// Another message moved the task on first.
		return h.current(t)
	}
	return h.runSale(ctx, &next, msg, *cp.Payment, modes), nil
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
	var out seller.Result
	if ok, wait := h.sell.admit(ctx, h.sell.admitPayment); !ok {
		out = seller.Result{Code: seller.CodeThrottled, Reason: reasonRateLimited, RetryAfter: max(wait, time.Second)}
	} else if err := h.sell.shop.Check(ctx, sl.call); err != nil {
		reason := reasonToolUnavailable
		if sl.tool.Terminal {
			reason = reasonTerminalUnavailable
		}
		out = seller.Result{Code: seller.CodeRunUnavailable, Reason: reason, Err: err}
	} else {
		out = h.sell.sell(ctx, sl, msg, &payment)
		if ri := requestInfoOf(ctx); out.Refused() && ri.r != nil && h.sell.paymentRefused != nil {
			h.sell.paymentRefused(ri.r)
		}
	}
	final := h.conclude(t, out, modes)
	h.store.put(final)
	return final
}

// conclude builds the task that a seller result leaves, in the states and
// status metadata of x402a2a.Conclude (the receipts naming the offer's
// network): completed with the answer and the receipts; failed for a
// refused payment, a refused settlement or a failed tool; back in
// input-required, with the offer, for what the same payment may get later
// (in progress, unavailable, pending, tool or terminal unavailable). This
// function adds the task's text and artifact.
func (h *handler) conclude(t *task, out seller.Result, modes outputModes) *task {
	next := *t
	next.timestamp = h.now()
	sl := t.sale
	var text string
	switch {
	case out.Paid():
		text = paidText(sl, out)
	case out.Refused():
		text = fmt.Sprintf("The payment was refused (%s); nothing was charged. Send a new message without taskId to start again.", clip.Runes(out.Reason, 120))
	case out.AtSettlement:
		text = fmt.Sprintf("The settlement was refused (%s); the answer was withheld.", clip.Runes(out.Reason, 120))
	case out.Code == seller.CodeRunUnavailable:
		out.Reason = cmp.Or(out.Reason, reasonToolUnavailable)
		text = unavailableText(sl.tool, true)
	case out.Code == seller.CodeRunFailed:
		out.Reason = reasonToolFailed
		text = fmt.Sprintf("%s failed; nothing was charged.", sl.tool.Name)
		var se *svc.Error
		if errors.As(out.Err, &se) && se.Kind != svc.KindInternal {
			text = fmt.Sprintf("%s failed (%s); nothing was charged.", sl.tool.Name, clip.Runes(svcErrorText(se), 300))
		} else {
			h.log.Error("a2a: paid tool failed", "tool", sl.tool.Key, "error", out.Err)
		}
	case out.Code == seller.CodeInProgress:
		text = fmt.Sprintf("This payment is being processed for this call; nothing more was charged. Send the same payment again in %d s.", seconds(out.RetryAfter))
	case out.Code == seller.CodeThrottled && out.Reason == reasonRateLimited:
		text = fmt.Sprintf("Too many refused payments from this address lately; nothing was run or charged. Send the same payment again in %d s.", seconds(out.RetryAfter))
	case out.Code == seller.CodeThrottled:
		text = fmt.Sprintf("Too many paid calls of this payer ran lately without an answer (timed out or failed), or run now; nothing was run or charged. Send the same payment again in %d s.",
			seconds(out.RetryAfter))
	case out.Code == seller.CodeSettlementPending, out.Code == seller.CodeUnresolved:
		text = fmt.Sprintf("The payment is being settled. Send the same payment again in %d s to get the answer.", seconds(out.RetryAfter))
	case out.Code == seller.CodeUnavailable:
		if out.Err != nil {
			h.log.Warn("a2a: payment not processed", "tool", sl.tool.Key, "reason", out.Reason, "error", out.Err)
		}
		text = fmt.Sprintf("The payment could not be processed now (%s); nothing was charged. Send the same payment again later.", clip.Runes(out.Reason, 80))
	default:
		// A paid call the engine answers otherwise (asking for a payment
		// again, or an outcome the seller does not know) fails.
		h.log.Error("a2a: unexpected payment outcome", "kind", out.Outcome.Kind.String())
		out.Code, out.Reason = seller.CodeUnexpected, x402.ReasonUnexpectedVerifyError
		text = "The payment could not be processed; nothing was charged."
	}
	rep := x402a2a.Conclude(sl.offer, nil, out, sl.receipts)
	c := *sl
	c.receipts = rep.Metadata.Receipts
	next.sale = &c
	switch rep.State {
	case x402a2a.StateCompleted:
		next.state = stateCompleted
		next.sale.paidKey = out.Outcome.Key
		next.artifacts = []artifact{h.outputArtifact(sl.tool, out.Answer, modes)}
	case x402a2a.StateInputRequired:
		next.state = stateInputRequired
	default:
		next.state = stateFailed
	}
	next.status = h.agentMessage(&next, &rep.Metadata, text)
	return &next
}

// sell sells the call of a sale with payment (nil for none).
func (s *paidSeller) sell(ctx context.Context, sl *sale, msg message, payment *x402.PaymentPayload) seller.Result {
	return s.seller.Sell(ctx, seller.Sale{Offer: sl.offer, Fingerprint: sl.fingerprint, Run: func(ctx context.Context) ([]byte, error) {
		return s.shop.Run(ctx, sl.call)
	}}, seller.Request{Transport: x402a2a.Transport, Payment: payment, RequestID: s.requestIDOf(ctx, msg), RefCode: s.refCodeOf(ctx)})
}

func (s *paidSeller) requestIDOf(ctx context.Context, msg message) string {
	if ri := requestInfoOf(ctx); ri.r != nil && s.requestID != nil {
		if id := s.requestID(ri.r); id != "" {
			return id
		}
	}
	return clip.Runes(msg.id, 128)
}

func (s *paidSeller) refCodeOf(ctx context.Context) string {
	if ri := requestInfoOf(ctx); ri.r != nil && s.refCode != nil {
		return s.refCode(ri.r)
	}
	return ""
}

// agentMessage is the agent's status message of t: a text part and the
// extension's metadata (none when meta is nil).
func (h *handler) agentMessage(t *task, meta *x402a2a.Metadata, text string) *message {
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
		t.Price, network, t.Name, t.Key, x402a2a.MetaRequired, x402a2a.MetaPayload, x402a2a.MetaStatus, x402a2a.StatusPaymentSubmitted, taskID)
}

// paidText tells that the call was paid.
func paidText(sl *sale, out seller.Result) string {
	verb := "Payment completed"
	if out.Code == seller.CodeReplayed {
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

// Package seller is the one seller behind every transport binding of the
// payment engine (x402/engine): a binding reads its protocol (an MCP
// tools/call, an A2A message, ...) into a Sale and a Request, the seller
// runs them through the engine, and the binding writes the Result in its
// protocol's words. What is the same on every transport lives here once:
//
//   - the payment a message carries (Payment: a PaymentPayload object, or
//     the base64 of its JSON as some clients send it);
//   - the fingerprint of a call (Fingerprint);
//   - the time limit of a run (Config.RunTimeout, one rule for all);
//   - the mapping of an engine.Outcome to a transport-neutral Result with a
//     typed Code, which a binding maps to its own error codes and texts.
//
// The preflight (decoding and validating the input, checking what the
// call depends on) belongs to whoever builds the Sale, before any payment
// is asked: nobody pays for a call that cannot succeed.
package seller

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	"github.com/seed1284c1d2/svc/x402"
	"github.com/seed1284c1d2/svc/x402/engine"
)

// DefaultRunTimeout bounds one paid run when Config.RunTimeout is zero.
const DefaultRunTimeout = 20 * time.Second

// Config configures a Seller. Engine is required.
type Config struct {
	// Engine verifies, reserves, journals and settles the payments.
	Engine *engine.Engine
	// RunTimeout bounds one paid run; zero means DefaultRunTimeout. The
	// engine's own run time limit bounds it too.
	RunTimeout time.Duration
	// Logger receives the outcomes a binding cannot explain; nil discards.
	Logger *slog.Logger
}

// Seller sells prepared calls through the engine. Safe for concurrent use.
type Seller struct {
	engine  *engine.Engine
	schemes []x402.ServerScheme // the engine's, whose reasons Classify sorts
	timeout time.Duration
	log     *slog.Logger
}

// New checks cfg and fills in the defaults.
func New(cfg Config) (*Seller, error) {
	if cfg.Engine == nil {
		return nil, errors.New("seller: Config.Engine is required")
	}
	if cfg.RunTimeout < 0 {
		return nil, fmt.Errorf("seller: RunTimeout %s is negative", cfg.RunTimeout)
	}
	if cfg.RunTimeout == 0 {
		cfg.RunTimeout = DefaultRunTimeout
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Seller{engine: cfg.Engine, schemes: cfg.Engine.Schemes(), timeout: cfg.RunTimeout, log: cfg.Logger}, nil
}

// RunTimeout is the time limit of one paid run.
func (s *Seller) RunTimeout() time.Duration { return s.timeout }

// Sale is one call that passed its preflight: what it costs, what it is,
// and how it runs once paid.
type Sale struct {
	// Offer is the priced resource.
	Offer *engine.Offer
	// Fingerprint identifies the call (see Fingerprint): a payment is
	// replayed only to the same fingerprint.
	Fingerprint string
	// Run produces the answer (JSON) once the payment is reserved and
	// verified; its error settles nothing. ctx carries the run time limit.
	Run func(ctx context.Context) ([]byte, error)
}

// Request is what a transport tells of one call besides the sale.
type Request struct {
	// Transport names the transport in the journal ("mcp", "a2a").
	Transport string
	// Payment is the payment presented; nil for none.
	Payment *x402.PaymentPayload
	// RequestID and RefCode are recorded with the payment.
	RequestID string
	RefCode   string
}

// Sell runs one call through the engine: without payment, the offer; with
// one, verified, reserved, run (bounded by the run time limit), journaled
// and settled, or refused.
func (s *Seller) Sell(ctx context.Context, sale Sale, req Request) Result {
	c := engine.Call{Offer: sale.Offer, Fingerprint: sale.Fingerprint, Payment: req.Payment, Transport: req.Transport,
		RequestID: req.RequestID, RefCode: req.RefCode}
	out := s.engine.Serve(ctx, c, func(ctx context.Context) (engine.Answer, error) {
		ctx, cancel := context.WithTimeout(ctx, s.timeout)
		defer cancel()
		body, err := sale.Run(ctx)
		if err != nil {
			return engine.Answer{}, err
		}
		return engine.Answer{Status: http.StatusOK, Header: map[string][]string{"Content-Type": {"application/json"}}, Body: body}, nil
	})
	r := Classify(sale.Offer, req.Payment, out, s.schemes...)
	if r.Code == CodeUnexpected {
		s.log.ErrorContext(ctx, "seller: unexpected payment outcome", "resource", sale.Offer.Resource, "kind", out.Kind.String())
	}
	return r
}

// Fingerprint identifies a paid call for the payment journal, the same way
// on every transport: the hex SHA-256 over the length-prefixed parts
// transport, name (the resource as the transport names it) and input, the
// call's canonical input (its decoded values re-encoded, so that neither
// formatting nor member order changes it). Each part is written as its
// decimal byte length, ':' and the bytes. The transport and the name keep
// an authorization bought on one transport, or for one resource, from
// buying another.
func Fingerprint(transport, name string, input []byte) string {
	h := sha256.New()
	for _, part := range [][]byte{[]byte(transport), []byte(name), input} {
		h.Write(strconv.AppendInt(nil, int64(len(part)), 10))
		h.Write([]byte{':'})
		h.Write(part)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// Code classifies a Result for the bindings, which map it to their own
// error codes and texts.
type Code int

// Result codes.
const (
	// CodePaid: the answer, settled now (Answer, Settlement).
	CodePaid Code = iota + 1
	// CodeReplayed: the recorded answer of this payment for this call,
	// settled before (Answer, Settlement).
	CodeReplayed
	// CodePaymentRequired: no payment was presented (PaymentRequired).
	CodePaymentRequired
	// CodeInvalidPayment: the payment does not accept the offered terms
	// (recipient, asset, scheme, time-out), or could not be read.
	CodeInvalidPayment
	// CodeInvalidSignature: the authorization's signature or payload does
	// not verify.
	CodeInvalidSignature
	// CodeExpired: the authorization is outside its validity window.
	CodeExpired
	// CodeDuplicateNonce: the authorization was used already (for another
	// call), or failed too often.
	CodeDuplicateNonce
	// CodeNetworkMismatch: signed for another network.
	CodeNetworkMismatch
	// CodeInvalidAmount: not the amount asked for.
	CodeInvalidAmount
	// CodeInsufficientFunds: the payer's balance does not cover it.
	CodeInsufficientFunds
	// CodeSettlementFailed: the settlement was refused (Settlement); the
	// answer is withheld.
	CodeSettlementFailed
	// CodeInProgress: the same payment for the same call is being
	// processed; present it again after RetryAfter.
	CodeInProgress
	// CodeThrottled: the payer's calls kept running for nothing lately, or
	// too many run now; nothing ran, present the same payment again after
	// RetryAfter.
	CodeThrottled
	// CodeSettlementPending: the payment is being settled; present it
	// again after RetryAfter for the answer.
	CodeSettlementPending
	// CodeUnresolved: the payment may have settled and its outcome is not
	// known; it is reconciled by the operator, do not pay again.
	CodeUnresolved
	// CodeUnavailable: the journal or the facilitator did not answer;
	// nothing was charged, present the same payment again later.
	CodeUnavailable
	// CodeRunUnavailable: the run failed for a cause that may pass (an
	// upstream down: an error with a Transient() bool method reporting
	// true; a time-out: context.DeadlineExceeded or an error with a
	// Timeout() bool method reporting true); nothing was charged, present the same
	// payment again later (Err).
	CodeRunUnavailable
	// CodeRunFailed: the run failed (Err); nothing was charged.
	CodeRunFailed
	// CodeUnexpected: an outcome the seller does not know; nothing was
	// charged.
	CodeUnexpected
)

// Result is the transport-neutral answer to one call.
type Result struct {
	// Code classifies the result.
	Code Code
	// Outcome is the engine's outcome, for what a binding needs beyond the
	// fields below (the payment's key and payer, its protocol version).
	Outcome engine.Outcome
	// Reason is the x402 reason of a refusal or failure.
	Reason string
	// Answer is the paid or replayed answer (JSON).
	Answer []byte
	// Settlement is the settlement of a paid or replayed call, or the
	// failing one of CodeSettlementFailed.
	Settlement *x402.SettleResponse
	// PaymentRequired is the offer to answer with (its error the reason)
	// when the call needs a payment or another one: set for
	// CodePaymentRequired, the refusals, CodeInProgress and
	// CodeSettlementFailed; nil otherwise.
	PaymentRequired *x402.PaymentRequired
	// RetryAfter is when the same payment may be presented again
	// (CodeInProgress, CodeThrottled, CodeSettlementPending), at least a
	// second.
	RetryAfter time.Duration
	// Err is the run's error (CodeRunFailed, CodeRunUnavailable) or the
	// cause of CodeUnavailable.
	Err error
	// AtSettlement marks a failure of the settlement (CodeSettlementFailed,
	// or CodeInsufficientFunds found when settling): the call ran and its
	// answer is withheld.
	AtSettlement bool
}

// Paid reports whether the result carries an answer that was paid for.
func (r Result) Paid() bool { return r.Code == CodePaid || r.Code == CodeReplayed }

// Refused reports whether the payment was refused before the call ran (a
// CodeInvalid*, CodeExpired, CodeDuplicateNonce, CodeNetworkMismatch or
// CodeInsufficientFunds result): the call needs another payment.
func (r Result) Refused() bool {
	if r.AtSettlement {
		return false
	}
	switch r.Code {
	case CodeInvalidPayment, CodeInvalidSignature, CodeExpired, CodeDuplicateNonce, CodeNetworkMismatch,
		CodeInvalidAmount, CodeInsufficientFunds:
		return true
	}
	return false
}

// Classify maps an engine outcome of a call for offer, paid with payment
// (nil for none), to a Result. The schemes that implement
// x402.ReasonClassifier sort their own refusal reasons; the protocol's and
// the engine's are known here.
func Classify(offer *engine.Offer, payment *x402.PaymentPayload, out engine.Outcome, schemes ...x402.ServerScheme) Result {
	r := Result{Outcome: out, Reason: out.Reason, Err: out.Err}
	if out.RetryAfter > 0 || out.Kind == engine.InProgress || out.Kind == engine.Throttled || out.Kind == engine.Pending {
		r.RetryAfter = max(out.RetryAfter, time.Second)
	}
	switch out.Kind {
	case engine.Paid, engine.Replayed:
		if out.Answer == nil || out.Settlement == nil {
			r.Code = CodeUnexpected
			return r
		}
		r.Code, r.Answer, r.Settlement = CodePaid, out.Answer.Body, out.Settlement
		if out.Kind == engine.Replayed {
			r.Code = CodeReplayed
		}
	case engine.PaymentRequired:
		r.Code, r.PaymentRequired = CodePaymentRequired, out.PaymentRequired
	case engine.Refused:
		r.Code, r.PaymentRequired = refusal(out.Reason, payment, offer, schemes), out.PaymentRequired
	case engine.InProgress:
		r.Code, r.PaymentRequired = CodeInProgress, out.PaymentRequired
	case engine.SettleFailed:
		r.Code, r.Settlement, r.AtSettlement = CodeSettlementFailed, out.Settlement, true
		if classOf(out.Reason, schemes) == x402.RefusalFunds {
			r.Code = CodeInsufficientFunds
		}
		pr := offer.Required(out.Reason)
		r.PaymentRequired = &pr
	case engine.Throttled:
		r.Code = CodeThrottled
	case engine.Pending:
		r.Code = CodeSettlementPending
		if out.Reason == engine.ReasonPaymentUnresolved {
			r.Code = CodeUnresolved
		}
	case engine.Unavailable:
		r.Code = CodeUnavailable
	case engine.RunFailed:
		r.Code = CodeRunFailed
		var tr interface{ Transient() bool }
		var to interface{ Timeout() bool }
		if errors.Is(out.Err, context.DeadlineExceeded) || (errors.As(out.Err, &tr) && tr.Transient()) || (errors.As(out.Err, &to) && to.Timeout()) {
			r.Code = CodeRunUnavailable
		}
	default:
		r.Code = CodeUnexpected
	}
	if r.PaymentRequired == nil && r.Refused() {
		pr := offer.Required(out.Reason)
		r.PaymentRequired = &pr
	}
	return r
}

// classOf is the refusal class of reason: the protocol's reasons, then
// the first scheme that knows it.
func classOf(reason string, schemes []x402.ServerScheme) x402.RefusalClass {
	switch reason {
	case x402.ReasonUnexpectedVerifyError:
		return x402.RefusalSignature
	case engine.ReasonAttemptsExhausted:
		return x402.RefusalUsed
	case x402.ReasonInvalidNetwork:
		return x402.RefusalNetwork
	case x402.ReasonInsufficientFunds:
		return x402.RefusalFunds
	}
	for _, s := range schemes {
		if c, ok := s.(x402.ReasonClassifier); ok {
			if class := c.RefusalClass(reason); class != x402.RefusalOther {
				return class
			}
		}
	}
	return x402.RefusalOther
}

// refusal maps the reason of a refused payment to its code.
func refusal(reason string, payment *x402.PaymentPayload, offer *engine.Offer, schemes []x402.ServerScheme) Code {
	switch classOf(reason, schemes) {
	case x402.RefusalSignature:
		return CodeInvalidSignature
	case x402.RefusalExpired:
		return CodeExpired
	case x402.RefusalUsed:
		return CodeDuplicateNonce
	case x402.RefusalNetwork:
		return CodeNetworkMismatch
	case x402.RefusalAmount:
		return CodeInvalidAmount
	case x402.RefusalFunds:
		return CodeInsufficientFunds
	}
	if reason == engine.ReasonNoMatchingRequirements && payment != nil && len(offer.PaymentRequired.Accepts) > 0 {
		want := offer.PaymentRequired.Accepts[0]
		if !sameNetwork(payment.Accepted.Network, want.Network) {
			return CodeNetworkMismatch
		}
		if payment.Accepted.Amount != "" && payment.Accepted.Amount != want.Amount {
			return CodeInvalidAmount
		}
	}
	return CodeInvalidPayment
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

// Payment reads the payment a message carries in its metadata (MCP's
// _meta["x402/payment"], A2A's "x402.payment.payload"): nil for none
// (absent or null); an x402 PaymentPayload object; or, as some clients
// send it, the standard base64 (padded or not) of its JSON. Its shape is
// checked as a payment header's is (x402.DecodePaymentPayloadJSON); the
// error is an *x402.HeaderError for a payload of the wrong shape.
func Payment(raw json.RawMessage) (*x402.PaymentPayload, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return nil, nil
	}
	var p x402.PaymentPayload
	var err error
	switch raw[0] {
	case '{':
		p, err = x402.DecodePaymentPayloadJSON(raw)
	case '"':
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, fmt.Errorf("seller: payment: %w", err)
		}
		p, err = x402.DecodePaymentPayload(s)
	default:
		return nil, errors.New("seller: a payment is an x402 PaymentPayload object or the base64 of one")
	}
	if err != nil {
		return nil, err
	}
	return &p, nil
}

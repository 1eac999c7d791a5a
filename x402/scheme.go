package x402

import (
	"context"
	"encoding/json"
	"time"
)

// Mechanism is what every part of a payment scheme (server, facilitator,
// client) says of itself: the scheme it implements and the networks it is
// registered for.
type Mechanism interface {
	// Scheme names the scheme, as requirements spell it ("exact").
	Scheme() string
	// Networks lists the CAIP-2 ids of the networks it serves.
	Networks() []string
}

// Serves reports whether m implements scheme on network (a CAIP-2 id or a
// v1 name of a known network).
func Serves(m Mechanism, scheme, network string) bool {
	if m.Scheme() != scheme {
		return false
	}
	network = CAIP2(network)
	for _, n := range m.Networks() {
		if CAIP2(n) == network {
			return true
		}
	}
	return false
}

// CAIP2 returns the CAIP-2 id of a known network named by its id or its v1
// name, and id itself otherwise.
func CAIP2(id string) string {
	if n, ok := LookupNetwork(id); ok {
		return n.CAIP2
	}
	return id
}

// Payment is the identity of one payment as its scheme tells it: what the
// payment journal keys, records and keeps. One Key, one journal row: a key
// already known is never admitted for another request.
type Payment struct {
	// Key identifies the payment among every payment of every scheme
	// (exact: network, asset, payer and authorization nonce).
	Key string
	// Payer is the paying address.
	Payer string
	// ID is the scheme's own id of the payment among the payer's (exact:
	// the authorization nonce).
	ID string
	// Amount is what the payment pays, in atomic units of the asset.
	Amount string
	// KeepUntil is how long the key must at least be remembered (exact:
	// the authorization's validBefore); the zero time leaves it to the
	// server's key retention.
	KeepUntil time.Time
	// Unchecked says the local checks left the payment's proof (a
	// smart-contract wallet's signature) to the verification that follows
	// the reservation: a refusal there does not count against the payment,
	// and a replay of its recorded answer needs the very same proof
	// (ServerScheme.SameProof).
	Unchecked bool
	// UsedReason is the refusal reason of this payment presented for
	// another request once it is known (exact: the nonce is already used);
	// empty leaves the engine's own.
	UsedReason string
	// Operation, when not empty, says the payment is a payment operation
	// (a payment channel's cooperative refund, say), not a paid request:
	// the resource is not run, and once the payment is settled the answer
	// is this JSON body alone (status 200) with the settlement.
	Operation json.RawMessage
}

// Releaser is implemented by a ServerScheme that holds something of its
// own for a payment between Verify and Settle (a payment channel's
// per-channel hold): the engine calls Release when it frees the
// payment's reservation without settling it (the run failed or timed
// out, the caller left, the verification or the settlement refused it),
// so that the scheme frees what it holds at once rather than when a lease
// ends. Release must be safe to call for a payment the scheme holds
// nothing for.
type Releaser interface {
	Release(ctx context.Context, payload PaymentPayload, req PaymentRequirements, pm Payment)
}

// Refusal is implemented by the errors with which a scheme's checks refuse
// a payment: RefusalReason is the x402 reason string the client is told.
type Refusal interface {
	error
	RefusalReason() string
}

// CorrectiveRefusal refuses a payment with a corrected offer: the
// requirement the client should pay against instead of the one it chose,
// carrying the scheme's state in its Extra (a payment channel's charged
// amount, say). The payment-required answer lists Accepted in place of the
// matched requirement.
type CorrectiveRefusal struct {
	Reason   string
	Message  string
	Accepted PaymentRequirements
}

// Error implements error.
func (e *CorrectiveRefusal) Error() string { return "x402: " + e.Reason + ": " + e.Message }

// RefusalReason implements Refusal.
func (e *CorrectiveRefusal) RefusalReason() string { return e.Reason }

// RefusalClass sorts a refusal reason into what a binding tells a client
// alike whatever the scheme.
type RefusalClass int

// Refusal classes.
const (
	// RefusalOther: the payment does not accept the offered terms.
	RefusalOther RefusalClass = iota
	// RefusalSignature: the payment's proof or payload does not verify.
	RefusalSignature
	// RefusalExpired: outside the payment's time window.
	RefusalExpired
	// RefusalUsed: the payment was used already.
	RefusalUsed
	// RefusalNetwork: the payment is for another network.
	RefusalNetwork
	// RefusalAmount: the payment is not for the amount asked.
	RefusalAmount
	// RefusalFunds: the payer's funds do not cover the payment.
	RefusalFunds
)

// ReasonClassifier is implemented by a ServerScheme that sorts its own
// refusal reasons (its checks', its facilitator's) into RefusalClasses.
type ReasonClassifier interface {
	RefusalClass(reason string) RefusalClass
}

// SettleStatus is a scheme's verdict on a settlement.
type SettleStatus int

// Settlement verdicts.
const (
	// Settled: the payment is made (Settlement.Response says how).
	Settled SettleStatus = iota + 1
	// Undecided: the payment may have been made; ask again later
	// (ServerScheme.Resolve), and never settle it anew meanwhile.
	Undecided
	// Refused: nothing was paid; the payer may present the payment again
	// (a bounded number of times).
	Refused
	// Failed: nothing was paid and the payment can never be: refused for
	// good.
	Failed
	// Released: (recovery) nothing was paid and nothing can be any more
	// through this settlement: the payment is free again.
	Released
	// Unknown: (recovery) whether the payment was made cannot be told:
	// kept for the operator.
	Unknown
)

// Settlement is a scheme's answer to a settlement or to a question about
// an interrupted one.
type Settlement struct {
	Status SettleStatus
	// Response is the settlement's x402 answer (Settled: what the client
	// is told in the payment response, extras included; Refused and
	// Failed: the refusal).
	Response SettleResponse
	// Reason explains an Undecided, Released or Unknown verdict for logs
	// and the operator.
	Reason string
	// Verbatim says Response is the payment response exactly as the client
	// is told it (Settled): the engine fills in nothing (an empty amount
	// stays empty: a channel's charge moves no funds).
	Verbatim bool
}

// ServerScheme is a payment scheme's part in a resource server: it builds
// the scheme's offer, checks payments, settles them and resolves
// interrupted settlements. The payment engine calls it in this order for
// one payment: Check (before anything is written), Verify (after the
// payment is reserved), Settle (after the answer is journaled), and
// Resolve (recovery) for a settlement whose outcome was not learned.
type ServerScheme interface {
	Mechanism
	// Requirements builds the scheme's entry of "accepts" for a priced
	// route on one of its networks. The error is a *ConfigError.
	Requirements(route Route) (PaymentRequirements, error)
	// Check runs the scheme's local checks of payload, already matched to
	// req (an offered requirement of this scheme), and returns the
	// payment's identity. A refusal's error implements Refusal; the payer,
	// when known, comes with it in the returned Payment.
	Check(ctx context.Context, payload PaymentPayload, req PaymentRequirements) (Payment, error)
	// Verify completes the checks once the payment is reserved (a
	// facilitator's verify, where it adds something). A nil error with
	// IsValid false refuses; an error is no decision.
	Verify(ctx context.Context, payload PaymentPayload, req PaymentRequirements, pm Payment) (VerifyResponse, error)
	// Settle settles the payment. An error is no decision (it may have
	// been made: the engine resolves it later); otherwise Settled,
	// Undecided, Refused or Failed.
	Settle(ctx context.Context, payload PaymentPayload, req PaymentRequirements, pm Payment) (Settlement, error)
	// Resolve tells what became of a settlement of pm whose outcome was
	// not learned (a crash, a lost answer): Settled, Released, Unknown, or
	// Undecided to ask again later. It may settle again where that is safe
	// (a deduplicating facilitator returns the original result).
	Resolve(ctx context.Context, payload PaymentPayload, req PaymentRequirements, payer string) Settlement
	// SameProof reports whether recorded (a payload journaled with a
	// settled payment) carries the very proof of presented, for a replay
	// of a payment whose proof nobody checked locally (Payment.Unchecked).
	SameProof(recorded, presented PaymentPayload) bool
}

// FacilitatorScheme is a payment scheme's part in a facilitator: it
// verifies and settles the scheme's payments on its networks, and says
// which kinds it supports. Facilitators of several schemes dispatch to one
// per payment (facilitator.Mux).
type FacilitatorScheme interface {
	Mechanism
	Facilitator
}

// ClientScheme is a payment scheme's part in a paying client: it builds
// the payload that pays one requirement of its scheme.
type ClientScheme interface {
	Mechanism
	// Payload builds the scheme's payload (PaymentPayload.Payload) paying
	// req, signed at now and valid for validity where the scheme bounds
	// it.
	Payload(ctx context.Context, req PaymentRequirements, now time.Time, validity time.Duration) (json.RawMessage, error)
}

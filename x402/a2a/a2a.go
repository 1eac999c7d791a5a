// Package a2a is the x402 payments extension of A2A (the a2a-x402
// extension, version 0.2, and the 0.1 URI older clients send), for any
// A2A agent: the extension's URIs, metadata keys, payment statuses and
// error codes; reading the payment a client's message carries; the
// metadata of the agent's status messages; and the extension's error
// code of a seller result (x402/seller). Charge does all of it for one
// message of an agent's own paid skill. An agent prepares a paid
// call (its input validated, what it depends on checked) before it asks
// for payment, sells it with a seller.Seller (Charge), and answers with the
// task state the extension prescribes (Reply.State), keeping the task's
// receipts itself:
//
//   - without payment: input-required, with StatusPaymentRequired and the
//     PaymentRequired in the status message's metadata;
//   - with a payment (MetaPayload, an x402 PaymentPayload object or the
//     base64 of one): completed with the answer and StatusPaymentCompleted
//     with the settlement in MetaReceipts; failed with StatusPaymentFailed
//     and the error code (ErrorCode) when the payment or the settlement is
//     refused or the call fails; input-required again, with the offer, for
//     what the same payment may buy later.
package a2a

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/seed1284c1d2/svc/x402"
	"github.com/seed1284c1d2/svc/x402/internal/clip"
	"github.com/seed1284c1d2/svc/x402/seller"
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
	// HeaderExtensions is the A2A 1.0 request and answer header listing
	// the extensions a client activates and an agent applies;
	// HeaderExtensionsV03 is its A2A 0.3 spelling.
	HeaderExtensions    = "A2A-Extensions"
	HeaderExtensionsV03 = "X-A2A-Extensions"
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

// Transport names A2A in the payment journal and in fingerprints.
const Transport = "a2a"

// Activated reports whether an HTTP request activates the extension: it
// lists ExtensionURI or ExtensionURIv01 in A2A-Extensions (or
// X-A2A-Extensions, A2A 0.3's spelling), comma-separated.
func Activated(h http.Header) bool {
	for _, name := range []string{HeaderExtensions, HeaderExtensionsV03} {
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

// Metadata is the extension's metadata of an agent's status message.
type Metadata struct {
	Status   string                `json:"x402.payment.status"`
	Error    string                `json:"x402.payment.error,omitempty"`
	Required *x402.PaymentRequired `json:"x402.payment.required,omitempty"`
	Receipts []x402.SettleResponse `json:"x402.payment.receipts,omitempty"`
}

// ClientPayment is what a client's message says about payment.
type ClientPayment struct {
	// Status is StatusPaymentSubmitted (also when only a payload is sent),
	// StatusPaymentRejected, or empty.
	Status string
	// Payment is the payment sent; nil for none.
	Payment *x402.PaymentPayload
}

// MetadataError is a malformed payment member of a message's metadata:
// Field names it (message.metadata["x402.payment.payload"]), Rule the rule
// it breaks.
type MetadataError struct {
	Field   string
	Rule    string
	Message string
}

// Error implements error.
func (e *MetadataError) Error() string { return e.Field + ": " + e.Message }

// payloadField names the payment payload in errors.
const payloadField = `message.metadata["` + MetaPayload + `"]`

// ReadPayment reads MetaStatus and MetaPayload from a message's metadata
// (nil or empty: no payment). The payload is an x402 PaymentPayload
// object or, as some clients send it, the base64 of its JSON; its shape
// is checked as an x402 payment header's is (seller.Payment). A malformed
// member is a *MetadataError.
func ReadPayment(metadata json.RawMessage) (ClientPayment, error) {
	var cp ClientPayment
	if len(metadata) == 0 {
		return cp, nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(metadata, &m); err != nil {
		return cp, &MetadataError{"message.metadata", "object", "metadata must be a JSON object"}
	}
	statusField := `message.metadata["` + MetaStatus + `"]`
	if raw, ok := m[MetaStatus]; ok && !isNull(raw) {
		if json.Unmarshal(raw, &cp.Status) != nil {
			return cp, &MetadataError{statusField, "string", "the payment status must be a string"}
		}
		switch cp.Status {
		case StatusPaymentSubmitted, StatusPaymentRejected:
		default:
			return cp, &MetadataError{statusField, "oneof",
				fmt.Sprintf("a client's payment status is %q or %q, got %q", StatusPaymentSubmitted, StatusPaymentRejected, clip.Bytes(cp.Status, 40))}
		}
	}
	raw, ok := m[MetaPayload]
	if !ok || isNull(raw) {
		if cp.Status == StatusPaymentSubmitted {
			return cp, &MetadataError{payloadField, "required", fmt.Sprintf("a message with payment status %q carries the signed x402 PaymentPayload", StatusPaymentSubmitted)}
		}
		return cp, nil
	}
	if t := bytes.TrimSpace(raw); t[0] != '{' && t[0] != '"' {
		return cp, &MetadataError{payloadField, "object", "the payment payload must be an x402 PaymentPayload object"}
	}
	p, err := seller.Payment(raw)
	if err != nil {
		msg := "not an x402 PaymentPayload"
		var he *x402.HeaderError
		if errors.As(err, &he) {
			msg += ": " + he.Message
		}
		return cp, &MetadataError{payloadField, "x402_payload", msg}
	}
	if cp.Status == "" {
		cp.Status = StatusPaymentSubmitted
	}
	cp.Payment = p
	return cp, nil
}

// ErrorCode is the extension's error code (MetaError) of a seller result
// whose payment or settlement was refused, or that failed otherwise.
func ErrorCode(c seller.Code) string {
	switch c {
	case seller.CodeInvalidSignature:
		return PaymentErrorInvalidSignature
	case seller.CodeExpired:
		return PaymentErrorExpiredPayment
	case seller.CodeDuplicateNonce:
		return PaymentErrorDuplicateNonce
	case seller.CodeNetworkMismatch:
		return PaymentErrorNetworkMismatch
	case seller.CodeInvalidAmount:
		return PaymentErrorInvalidAmount
	case seller.CodeInsufficientFunds:
		return PaymentErrorInsufficientFunds
	case seller.CodeSettlementFailed:
		return PaymentErrorSettlementFailed
	case seller.CodeInProgress:
		return PaymentErrorInProgress
	case seller.CodeThrottled, seller.CodeUnavailable:
		return PaymentErrorUnavailable
	case seller.CodeSettlementPending, seller.CodeUnresolved:
		return PaymentErrorSettlementPending
	case seller.CodeRunUnavailable:
		return PaymentErrorServiceUnavailable
	case seller.CodeRunFailed:
		return PaymentErrorServiceFailed
	}
	return PaymentErrorInvalidPayment
}

// isNull reports whether raw JSON is null.
func isNull(raw json.RawMessage) bool { return bytes.Equal(bytes.TrimSpace(raw), []byte("null")) }

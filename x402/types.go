package x402

import "encoding/json"

// Version is the x402 protocol version this package speaks natively.
const Version = 2

// Header names of the x402 v2 HTTP transport (matched case-insensitively,
// as all HTTP header names are).
const (
	HeaderPaymentRequired  = "PAYMENT-REQUIRED"
	HeaderPaymentSignature = "PAYMENT-SIGNATURE"
	HeaderPaymentResponse  = "PAYMENT-RESPONSE"
	// v1 transport headers, accepted for clients of the first protocol version.
	HeaderV1Payment         = "X-PAYMENT"
	HeaderV1PaymentResponse = "X-PAYMENT-RESPONSE"
)

// Canonical forms (http.CanonicalHeaderKey) of the header names read on
// every request: indexing an http.Header with them skips the
// canonicalization http.Header.Get does on each call.
const (
	CanonicalPaymentRequired  = "Payment-Required"
	CanonicalPaymentSignature = "Payment-Signature"
	CanonicalPaymentResponse  = "Payment-Response"
	CanonicalV1Payment        = "X-Payment"
)

// The header names as CORS lists them (comma-separated, v2 then v1).
const (
	// RequestHeaders are the headers that carry a payment: a CORS
	// preflight of a paid call must allow them.
	RequestHeaders = HeaderPaymentSignature + ", " + HeaderV1Payment
	// ResponseHeaders are the headers of a payment answer (the offer and
	// the settlement): Access-Control-Expose-Headers names them so that
	// scripts can read them.
	ResponseHeaders = HeaderPaymentRequired + ", " + HeaderPaymentResponse + ", " + HeaderV1PaymentResponse
)

// SchemeExact names the exact scheme: pay exactly the amount.
const SchemeExact = "exact"

// ResourceInfo describes the resource being paid for.
type ResourceInfo struct {
	URL         string `json:"url"`
	Description string `json:"description,omitempty"`
	MimeType    string `json:"mimeType,omitempty"`
}

// PaymentRequirements is one acceptable way to pay (an entry of "accepts").
// Amount is in atomic units of Asset as a decimal string ("3400" is
// 0.0034 USDC). Extra carries the token's EIP-712 domain name and version.
type PaymentRequirements struct {
	Scheme            string         `json:"scheme"`
	Network           string         `json:"network"`
	Amount            string         `json:"amount"`
	Asset             string         `json:"asset"`
	PayTo             string         `json:"payTo"`
	MaxTimeoutSeconds int            `json:"maxTimeoutSeconds"`
	Extra             map[string]any `json:"extra,omitempty"`
}

// PaymentRequired is the body of the PAYMENT-REQUIRED header of a 402.
type PaymentRequired struct {
	X402Version int                   `json:"x402Version"`
	Error       string                `json:"error,omitempty"`
	Resource    ResourceInfo          `json:"resource"`
	Accepts     []PaymentRequirements `json:"accepts"`
	Extensions  map[string]any        `json:"extensions,omitempty"`
}

// PaymentPayload is what a client sends in PAYMENT-SIGNATURE: the chosen
// requirements copied verbatim in Accepted, and the scheme's payload (for
// exact on EVM, an ExactEVMPayload).
type PaymentPayload struct {
	X402Version int                 `json:"x402Version"`
	Resource    *ResourceInfo       `json:"resource,omitempty"`
	Accepted    PaymentRequirements `json:"accepted"`
	Payload     json.RawMessage     `json:"payload"`
	Extensions  map[string]any      `json:"extensions,omitempty"`
}

// VerifyRequest is the body of a facilitator's POST /verify and POST
// /settle (the same members).
type VerifyRequest struct {
	X402Version         int                 `json:"x402Version"`
	PaymentPayload      PaymentPayload      `json:"paymentPayload"`
	PaymentRequirements PaymentRequirements `json:"paymentRequirements"`
}

// VerifyResponse is a facilitator's answer to /verify. IsValid false is a
// failure even in an HTTP 200 answer. Extra carries what a scheme adds
// (batch-settlement: the channel's on-chain snapshot).
type VerifyResponse struct {
	IsValid        bool           `json:"isValid"`
	InvalidReason  string         `json:"invalidReason,omitempty"`
	InvalidMessage string         `json:"invalidMessage,omitempty"`
	Payer          string         `json:"payer,omitempty"`
	Extensions     map[string]any `json:"extensions,omitempty"`
	Extra          map[string]any `json:"extra,omitempty"`
}

// SettleResponse is a facilitator's answer to /settle and the body of the
// PAYMENT-RESPONSE header. Success false is a failure even in an HTTP 200.
// Asset, when set, is the token Amount is of (a batch-settlement deposit's
// answer names it).
type SettleResponse struct {
	Success      bool           `json:"success"`
	ErrorReason  string         `json:"errorReason,omitempty"`
	ErrorMessage string         `json:"errorMessage,omitempty"`
	Payer        string         `json:"payer,omitempty"`
	Transaction  string         `json:"transaction"`
	Network      string         `json:"network"`
	Amount       string         `json:"amount,omitempty"`
	Asset        string         `json:"asset,omitempty"`
	Extensions   map[string]any `json:"extensions,omitempty"`
	Extra        map[string]any `json:"extra,omitempty"`
}

// SupportedKind is one (version, scheme, network) a facilitator handles.
type SupportedKind struct {
	X402Version int            `json:"x402Version"`
	Scheme      string         `json:"scheme"`
	Network     string         `json:"network"`
	Extra       map[string]any `json:"extra,omitempty"`
}

// SupportedResponse is a facilitator's answer to GET /supported.
type SupportedResponse struct {
	Kinds      []SupportedKind     `json:"kinds"`
	Extensions []string            `json:"extensions,omitempty"`
	Signers    map[string][]string `json:"signers,omitempty"`
}

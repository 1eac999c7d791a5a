package x402

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/seed1284c1d2/svc/x402/internal/wire"
)

// MaxHeaderBytes bounds the encoded length of an x402 header value
// (PAYMENT-SIGNATURE, PAYMENT-REQUIRED, PAYMENT-RESPONSE and their v1
// equivalents). Longer values are refused before any decoding.
const MaxHeaderBytes = 16 << 10

// Sentinel errors of the header codec. A *HeaderError matches one of them
// with errors.Is; the middleware answers 400 to both.
var (
	// ErrHeaderTooLarge: the encoded value is longer than MaxHeaderBytes.
	ErrHeaderTooLarge = errors.New("x402: header too large")
	// ErrHeaderMalformed: not standard base64 of a JSON object of the
	// expected shape.
	ErrHeaderMalformed = errors.New("x402: header malformed")
)

// HeaderError describes why a header value could not be decoded. Kind is
// ErrHeaderTooLarge or ErrHeaderMalformed; Message says what was wrong
// without echoing the value; Err is the underlying cause, if any.
type HeaderError struct {
	Kind    error
	Message string
	Err     error
}

// Error implements error.
func (e *HeaderError) Error() string {
	msg := e.Kind.Error() + ": " + e.Message
	if e.Err != nil {
		msg += ": " + e.Err.Error()
	}
	return msg
}

// Unwrap returns the kind sentinel and the cause, so that errors.Is(err,
// ErrHeaderMalformed) and errors.As on the cause both work.
func (e *HeaderError) Unwrap() []error {
	if e.Err != nil {
		return []error{e.Kind, e.Err}
	}
	return []error{e.Kind}
}

func headerMalformed(cause error, format string, args ...any) *HeaderError {
	return &HeaderError{Kind: ErrHeaderMalformed, Message: fmt.Sprintf(format, args...), Err: cause}
}

// EncodeHeader returns the x402 header encoding of v: standard base64
// (alphabet A-Za-z0-9+/, "="-padded) of its JSON encoding.
func EncodeHeader(v any) (string, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return "", fmt.Errorf("x402: encode header: %w", err)
	}
	return base64.StdEncoding.EncodeToString(b), nil
}

// DecodeHeader decodes an x402 header value into v (a non-nil pointer).
//
// The value must be at most MaxHeaderBytes long (checked first), use the
// standard base64 alphabet, padded or not (URL-safe characters, whitespace
// and misplaced "=" are refused; non-zero trailing bits are tolerated, as by
// the reference decoders), and decode to a single JSON object with nothing
// after it. Unknown JSON fields are ignored (the protocol adds fields over
// time). Every failure is a *HeaderError.
func DecodeHeader(s string, v any) error {
	raw, err := decodeHeaderJSON(s)
	if err != nil {
		return err
	}
	if err := wire.Unmarshal(raw, v); err != nil {
		var ie *json.InvalidUnmarshalError
		if errors.As(err, &ie) {
			return fmt.Errorf("x402: decode header: %w", err)
		}
		return headerMalformed(err, "invalid JSON")
	}
	return nil
}

// decodeHeaderJSON checks the size and alphabet of s, decodes the base64 and
// checks that the result starts like a JSON object; the JSON decoder checks
// the rest (including trailing garbage).
func decodeHeaderJSON(s string) ([]byte, error) {
	if len(s) > MaxHeaderBytes {
		return nil, &HeaderError{Kind: ErrHeaderTooLarge, Message: fmt.Sprintf("%d bytes encoded, limit %d", len(s), MaxHeaderBytes)}
	}
	if s == "" {
		return nil, headerMalformed(nil, "empty value")
	}
	body := s
	pad := 0
	for pad < 2 && len(body) > 0 && body[len(body)-1] == '=' {
		body = body[:len(body)-1]
		pad++
	}
	// The decoder refuses every byte outside the standard alphabet except
	// CR and LF, which it would skip: refuse those here.
	if strings.IndexByte(body, '\r') >= 0 || strings.IndexByte(body, '\n') >= 0 {
		return nil, headerMalformed(nil, "line breaks are not allowed")
	}
	if pad > 0 && len(s)%4 != 0 {
		return nil, headerMalformed(nil, "bad base64 padding")
	}
	if len(body)%4 == 1 {
		return nil, headerMalformed(nil, "bad base64 length")
	}
	raw := make([]byte, base64.RawStdEncoding.DecodedLen(len(body)))
	n, err := base64.RawStdEncoding.Decode(raw, []byte(body))
	if err != nil {
		return nil, headerMalformed(err, "not standard base64")
	}
	raw = raw[:n]
	t := bytes.TrimLeft(raw, " \t\r\n")
	if len(t) == 0 || t[0] != '{' {
		return nil, headerMalformed(nil, "not a JSON object")
	}
	return raw, nil
}

// wirePaymentPayload decodes both protocol versions of a payment payload:
// v2 carries "accepted", v1 carries "scheme" and "network" at the top level.
type wirePaymentPayload struct {
	X402Version *int                 `json:"x402Version"`
	Resource    *ResourceInfo        `json:"resource"`
	Accepted    *PaymentRequirements `json:"accepted"`
	Payload     json.RawMessage      `json:"payload"`
	Extensions  map[string]any       `json:"extensions"`
	Scheme      string               `json:"scheme"`
	Network     string               `json:"network"`
}

// unmarshalWirePayload decodes the JSON of a payment payload (see
// wire.Unmarshal).
func unmarshalWirePayload(raw []byte) (wirePaymentPayload, error) {
	var w wirePaymentPayload
	err := wire.Unmarshal(raw, &w)
	return w, err
}

// DecodePaymentPayload decodes a PAYMENT-SIGNATURE (or v1 X-PAYMENT) header
// value and checks its shape: x402Version present and 1 or 2; for v2,
// accepted.scheme and accepted.network non-empty; for v1, the top-level
// scheme and network non-empty (they are copied into Accepted.Scheme and
// Accepted.Network, the other Accepted fields stay empty); payload present
// and a JSON object. Failures are *HeaderError (ErrHeaderTooLarge or
// ErrHeaderMalformed). Semantic checks are the Verifier's.
func DecodePaymentPayload(s string) (PaymentPayload, error) {
	raw, err := decodeHeaderJSON(s)
	if err != nil {
		return PaymentPayload{}, err
	}
	return DecodePaymentPayloadJSON(raw)
}

// DecodePaymentPayloadJSON decodes the JSON of a payment payload (the
// object a transport carries in its metadata rather than in a header) and
// checks its shape as DecodePaymentPayload does. Failures are
// *HeaderError (ErrHeaderMalformed).
func DecodePaymentPayloadJSON(raw []byte) (PaymentPayload, error) {
	w, err := unmarshalWirePayload(raw)
	if err != nil {
		return PaymentPayload{}, headerMalformed(err, "invalid JSON")
	}
	if w.X402Version == nil {
		return PaymentPayload{}, headerMalformed(nil, "x402Version is required")
	}
	p := PaymentPayload{X402Version: *w.X402Version, Resource: w.Resource, Payload: w.Payload, Extensions: w.Extensions}
	switch p.X402Version {
	case 2:
		if w.Accepted == nil {
			return PaymentPayload{}, headerMalformed(nil, "accepted is required")
		}
		p.Accepted = *w.Accepted
	case 1:
		p.Accepted = PaymentRequirements{Scheme: w.Scheme, Network: w.Network}
	default:
		return PaymentPayload{}, headerMalformed(nil, "x402Version must be 1 or 2")
	}
	if p.Accepted.Scheme == "" {
		return PaymentPayload{}, headerMalformed(nil, "scheme is required")
	}
	if p.Accepted.Network == "" {
		return PaymentPayload{}, headerMalformed(nil, "network is required")
	}
	if !wire.IsJSONObject(p.Payload) {
		return PaymentPayload{}, headerMalformed(nil, "payload must be a JSON object")
	}
	return p, nil
}

// DecodePaymentRequired decodes a PAYMENT-REQUIRED header value: x402Version
// must be 2 and accepts must hold at least one entry with a scheme and a
// network. Failures are *HeaderError.
func DecodePaymentRequired(s string) (PaymentRequired, error) {
	raw, err := decodeHeaderJSON(s)
	if err != nil {
		return PaymentRequired{}, err
	}
	var pr PaymentRequired
	if err := wire.Unmarshal(raw, &pr); err != nil {
		return PaymentRequired{}, headerMalformed(err, "invalid JSON")
	}
	switch {
	case pr.X402Version != 2:
		return PaymentRequired{}, headerMalformed(nil, "x402Version must be 2 in PAYMENT-REQUIRED")
	case len(pr.Accepts) == 0:
		return PaymentRequired{}, headerMalformed(nil, "accepts must list at least one payment requirement")
	}
	for i, a := range pr.Accepts {
		if a.Scheme == "" || a.Network == "" {
			return PaymentRequired{}, headerMalformed(nil, "accepts[%d]: scheme and network are required", i)
		}
	}
	return pr, nil
}

// DecodeSettleResponse decodes a PAYMENT-RESPONSE (or v1 X-PAYMENT-RESPONSE)
// header value; success and network are required. A decoded response with
// Success false is a settlement failure, not a decoding error. Failures are
// *HeaderError.
func DecodeSettleResponse(s string) (SettleResponse, error) {
	raw, err := decodeHeaderJSON(s)
	if err != nil {
		return SettleResponse{}, err
	}
	return decodeSettleJSON(raw)
}

// decodeSettleJSON decodes a SettleResponse and checks that success and
// network are present; the error is a *HeaderError (ErrHeaderMalformed).
func decodeSettleJSON(raw []byte) (SettleResponse, error) {
	var r SettleResponse
	if err := wire.Unmarshal(raw, &r); err != nil {
		return SettleResponse{}, headerMalformed(err, "invalid JSON")
	}
	if msg, err := wire.SettleFieldsMissing(raw); msg != "" {
		return SettleResponse{}, headerMalformed(err, "%s", msg)
	}
	return r, nil
}

package x402

import (
	"encoding/json"
	"fmt"
)

// The payment-identifier extension: a client-chosen idempotency key that
// resource servers and facilitators may use to deduplicate payments.

// ExtensionPaymentIdentifier is the name of the payment-identifier
// extension in PaymentRequired.extensions, PaymentPayload.extensions and
// SupportedResponse.extensions.
const ExtensionPaymentIdentifier = "payment-identifier"

// Bounds of a payment identifier: 16 to 128 characters among A-Z, a-z,
// 0-9, "_" and "-".
const (
	PaymentIdentifierMinLength = 16
	PaymentIdentifierMaxLength = 128
)

// Refusal reasons of the payment-identifier extension: the identifier is
// bound to another payment (HTTP 409), or it is malformed (HTTP 400).
const (
	ReasonPaymentIdentifierConflict = "payment_identifier_conflict"
	ReasonInvalidPaymentIdentifier  = "invalid_payment_identifier"
)

// ValidPaymentIdentifier reports whether id is a well-formed payment
// identifier.
func ValidPaymentIdentifier(id string) bool {
	if len(id) < PaymentIdentifierMinLength || len(id) > PaymentIdentifierMaxLength {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// paymentIdentifierSchema returns the JSON Schema of the extension's info.
func paymentIdentifierSchema() map[string]any {
	return map[string]any{
		"$schema": "https://json-schema.org/draft/2020-12/schema",
		"type":    "object",
		"properties": map[string]any{
			"required": map[string]any{"type": "boolean"},
			"id": map[string]any{
				"type": "string", "minLength": PaymentIdentifierMinLength, "maxLength": PaymentIdentifierMaxLength,
				"pattern": "^[a-zA-Z0-9_-]+$",
			},
		},
		"required": []any{"required"},
	}
}

// DeclarePaymentIdentifier returns the extension's declaration for
// PaymentRequired.extensions[ExtensionPaymentIdentifier]: {"info":
// {"required": required}, "schema": …}. With required true, a resource
// server answers 400 to a payment without identifier.
func DeclarePaymentIdentifier(required bool) map[string]any {
	return map[string]any{"info": map[string]any{"required": required}, "schema": paymentIdentifierSchema()}
}

// PaymentIdentifierOf returns the payment identifier a payload carries in
// extensions[ExtensionPaymentIdentifier].info.id: "" when there is none,
// an error when the extension or the identifier is malformed.
func PaymentIdentifierOf(payload PaymentPayload) (string, error) {
	ext, ok := payload.Extensions[ExtensionPaymentIdentifier]
	if !ok || ext == nil {
		return "", nil
	}
	var v struct {
		Info *struct {
			ID *json.RawMessage `json:"id"`
		} `json:"info"`
	}
	raw, err := json.Marshal(ext)
	if err == nil {
		err = json.Unmarshal(raw, &v)
	}
	if err != nil {
		return "", fmt.Errorf("x402: %s extension must be an object with an info object", ExtensionPaymentIdentifier)
	}
	if v.Info == nil || v.Info.ID == nil || string(*v.Info.ID) == "null" {
		return "", nil
	}
	var id string
	if err := json.Unmarshal(*v.Info.ID, &id); err != nil {
		return "", fmt.Errorf("x402: %s id must be a string", ExtensionPaymentIdentifier)
	}
	if !ValidPaymentIdentifier(id) {
		return "", fmt.Errorf("x402: %s id must be %d to %d characters among A-Z, a-z, 0-9, _ and -",
			ExtensionPaymentIdentifier, PaymentIdentifierMinLength, PaymentIdentifierMaxLength)
	}
	return id, nil
}

package x402

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/seed1284c1d2/svc/x402/internal/clip"
)

// VersionV1 is the first x402 protocol version, still spoken by the
// x402-fetch 1.x client family: the 402 carries the requirements in its JSON
// body, the payment comes in X-PAYMENT and the settlement goes back in
// X-PAYMENT-RESPONSE, and networks have names ("base") instead of CAIP-2 ids.
const VersionV1 = 1

// PaymentRequirementsV1 is one entry of a v1 402 body's "accepts". It
// carries the same terms as a v2 PaymentRequirements: MaxAmountRequired is
// the amount, Network the v1 network name, Resource the URL paid for.
// Description and MimeType are required by v1 clients (empty strings are
// fine); OutputSchema is the v1 discovery description.
type PaymentRequirementsV1 struct {
	Scheme            string         `json:"scheme"`
	Network           string         `json:"network"`
	MaxAmountRequired string         `json:"maxAmountRequired"`
	Resource          string         `json:"resource"`
	Description       string         `json:"description"`
	MimeType          string         `json:"mimeType"`
	OutputSchema      map[string]any `json:"outputSchema,omitempty"`
	PayTo             string         `json:"payTo"`
	MaxTimeoutSeconds int            `json:"maxTimeoutSeconds"`
	Asset             string         `json:"asset"`
	Extra             map[string]any `json:"extra,omitempty"`
}

// PaymentRequiredV1 is the JSON body of a v1 402: x402Version 1, an error
// text and the accepted requirements.
type PaymentRequiredV1 struct {
	X402Version int                     `json:"x402Version"`
	Error       string                  `json:"error,omitempty"`
	Accepts     []PaymentRequirementsV1 `json:"accepts"`
}

// PaymentPayloadV1 is what a v1 client sends in X-PAYMENT. For the exact
// scheme on EVM, Payload is an ExactEVMPayload (the same EIP-3009
// authorization and EIP-712 domain as in v2).
type PaymentPayloadV1 struct {
	X402Version int             `json:"x402Version"`
	Scheme      string          `json:"scheme"`
	Network     string          `json:"network"`
	Payload     json.RawMessage `json:"payload"`
}

// ErrNoV1Network is returned when a requirement's network has no x402 v1
// name, so v1 clients cannot be offered it.
var ErrNoV1Network = errors.New("x402: network has no x402 v1 name")

// RequirementsToV1 converts v2 requirements to a v1 "accepts" entry for the
// resource res. The network must be known and have a v1 name
// (ErrNoV1Network otherwise). outputSchema may be nil.
func RequirementsToV1(req PaymentRequirements, res ResourceInfo, outputSchema map[string]any) (PaymentRequirementsV1, error) {
	n, ok := LookupNetwork(req.Network)
	if !ok || n.V1Name == "" {
		return PaymentRequirementsV1{}, fmt.Errorf("%w: %q", ErrNoV1Network, clip.Bytes(req.Network, 40))
	}
	return PaymentRequirementsV1{
		Scheme:            req.Scheme,
		Network:           n.V1Name,
		MaxAmountRequired: req.Amount,
		Resource:          res.URL,
		Description:       res.Description,
		MimeType:          res.MimeType,
		OutputSchema:      outputSchema,
		PayTo:             req.PayTo,
		MaxTimeoutSeconds: req.MaxTimeoutSeconds,
		Asset:             req.Asset,
		Extra:             req.Extra,
	}, nil
}

// RequirementsFromV1 converts a v1 "accepts" entry to v2 requirements and
// the resource it names. The network must be known (ErrUnknownNetwork
// otherwise); the result carries its CAIP-2 id.
func RequirementsFromV1(r PaymentRequirementsV1) (PaymentRequirements, ResourceInfo, error) {
	n, ok := LookupNetwork(r.Network)
	if !ok {
		return PaymentRequirements{}, ResourceInfo{}, fmt.Errorf("%w %q", ErrUnknownNetwork, clip.Bytes(r.Network, 40))
	}
	req := PaymentRequirements{
		Scheme:            r.Scheme,
		Network:           n.CAIP2,
		Amount:            r.MaxAmountRequired,
		Asset:             r.Asset,
		PayTo:             r.PayTo,
		MaxTimeoutSeconds: r.MaxTimeoutSeconds,
		Extra:             r.Extra,
	}
	return req, ResourceInfo{URL: r.Resource, Description: r.Description, MimeType: r.MimeType}, nil
}

// PaymentRequiredToV1 converts a v2 PaymentRequired to the v1 402 body.
// Requirements on networks without a v1 name are left out (v1 clients could
// not pay them). When pr carries a bazaar extension, its input and output
// descriptions become each entry's outputSchema, as v1 discovery expected.
func PaymentRequiredToV1(pr PaymentRequired) PaymentRequiredV1 {
	out := PaymentRequiredV1{X402Version: VersionV1, Error: pr.Error, Accepts: []PaymentRequirementsV1{}}
	schema := mwV1OutputSchema(pr.Extensions)
	for _, req := range pr.Accepts {
		v1, err := RequirementsToV1(req, pr.Resource, schema)
		if err != nil {
			continue
		}
		out.Accepts = append(out.Accepts, v1)
	}
	return out
}

// mwV1OutputSchema derives a v1 outputSchema ({input, output}) from the
// bazaar extension's info, or nil.
func mwV1OutputSchema(ext map[string]any) map[string]any {
	b, ok := ext[BazaarExtensionKey].(map[string]any)
	if !ok {
		return nil
	}
	info, ok := b["info"].(map[string]any)
	if !ok {
		return nil
	}
	out := map[string]any{}
	if in, ok := info["input"]; ok {
		out["input"] = in
	}
	if o, ok := info["output"]; ok {
		out["output"] = o
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// PayloadFromV1 turns a v1 payment (as DecodePaymentPayload returns it:
// X402Version 1, Accepted holding only scheme and network) into the v2
// payment it is equivalent to, given the server's requirement req it pays:
// x402Version 2, accepted = req, the same EIP-3009 payload. The v1 network
// name must denote req's network and the schemes must agree; the caller
// then runs exactly the checks of a v2 payment on the result. ok is false
// when p is not a v1 payment for req.
func PayloadFromV1(p PaymentPayload, req PaymentRequirements) (PaymentPayload, bool) {
	if p.X402Version != VersionV1 || p.Accepted.Scheme != req.Scheme {
		return PaymentPayload{}, false
	}
	n, ok := LookupNetwork(p.Accepted.Network)
	if !ok || n.CAIP2 != req.Network {
		return PaymentPayload{}, false
	}
	return PaymentPayload{X402Version: Version, Accepted: req, Payload: p.Payload}, true
}

// SettleResponseToV1 returns s as a v1 client expects it in
// X-PAYMENT-RESPONSE: the network by its v1 name when it has one.
func SettleResponseToV1(s SettleResponse) SettleResponse {
	if n, ok := LookupNetwork(s.Network); ok && n.V1Name != "" {
		s.Network = n.V1Name
	}
	return s
}

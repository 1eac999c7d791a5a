// Package client is the exact scheme's part in a paying client (an
// x402.ClientScheme): it signs an EIP-3009 transferWithAuthorization of a
// requirement's amount to its payTo under the token's EIP-712 domain.
package client

import (
	"context"
	"crypto/ecdsa"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/seed1284c1d2/svc/x402"
	"github.com/seed1284c1d2/svc/x402/exact"
)

// Scheme pays exact requirements with one payer's key on the known
// networks. It never shows the key.
type Scheme struct {
	key *ecdsa.PrivateKey
}

var _ x402.ClientScheme = (*Scheme)(nil)

// New returns the exact scheme paying with key.
func New(key *ecdsa.PrivateKey) (*Scheme, error) {
	if key == nil || key.D == nil || key.D.Sign() <= 0 {
		return nil, errors.New("exact client: a private key is required")
	}
	return &Scheme{key: key}, nil
}

// Scheme implements x402.Mechanism.
func (s *Scheme) Scheme() string { return x402.SchemeExact }

// Networks implements x402.Mechanism: every known network.
func (s *Scheme) Networks() []string {
	var ids []string
	for _, n := range x402.Networks() {
		ids = append(ids, n.CAIP2)
	}
	return ids
}

// Payload implements x402.ClientScheme: an exact.ExactEVMPayload signed
// at now, valid for validity (≤ 0: req.MaxTimeoutSeconds; see
// exact.NewPayload).
func (s *Scheme) Payload(_ context.Context, req x402.PaymentRequirements, now time.Time, validity time.Duration) (json.RawMessage, error) {
	ep, err := exact.NewPayload(s.key, req, now, validity)
	if err != nil {
		return nil, fmt.Errorf("x402: signing the payment: %w", err)
	}
	raw, err := json.Marshal(ep)
	if err != nil {
		return nil, fmt.Errorf("x402: encoding the payment: %w", err)
	}
	return raw, nil
}

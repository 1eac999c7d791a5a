package x402

import "context"

// AuthorizationStatus is what a facilitator knows of one authorization.
type AuthorizationStatus struct {
	Used        bool   // the authorization was used (settled)
	Transaction string // the transaction that used it, if known
	// Payer, PayTo, Amount, Asset and Network describe what that
	// transaction transferred, if known.
	Payer, PayTo, Amount, Asset, Network string
	Expired                              bool // validBefore has passed (it can never be used again)
}

// StatusChecker is implemented by facilitators that can tell whether an
// authorization was used and how. facilitator.Local implements it from what
// it recorded; facilitator.HTTP does not (the x402 facilitator HTTP API has
// no status endpoint).
//
// "Used" alone is not proof of payment: a caller must check that Payer,
// PayTo, Amount, Asset and Network are those it expects.
type StatusChecker interface {
	Status(ctx context.Context, payload PaymentPayload, req PaymentRequirements) (AuthorizationStatus, error)
}

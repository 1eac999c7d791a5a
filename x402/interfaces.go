package x402

import "context"

// Facilitator verifies and settles payments. facilitator.HTTP talks to a
// remote one; facilitator.Local verifies locally and settles nothing on chain.
// An implementation returns a nil error with IsValid/Success false for a
// payment it refuses, and a non-nil error only when it could not decide.
// Callers must therefore check IsValid and Success on every nil-error
// answer: remote facilitators refuse payments in HTTP 200 answers.
type Facilitator interface {
	Verify(ctx context.Context, payload PaymentPayload, req PaymentRequirements) (VerifyResponse, error)
	Settle(ctx context.Context, payload PaymentPayload, req PaymentRequirements) (SettleResponse, error)
	Supported(ctx context.Context) (SupportedResponse, error)
}

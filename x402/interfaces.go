package x402

import (
	"context"
	"errors"
	"net/http"
	"time"
)

// Facilitator verifies and settles payments. HTTPFacilitator talks to a
// remote one; LocalFacilitator verifies locally and settles nothing on chain.
// An implementation returns a nil error with IsValid/Success false for a
// payment it refuses, and a non-nil error only when it could not decide.
// Callers must therefore check IsValid and Success on every nil-error
// answer: remote facilitators refuse payments in HTTP 200 answers.
type Facilitator interface {
	Verify(ctx context.Context, payload PaymentPayload, req PaymentRequirements) (VerifyResponse, error)
	Settle(ctx context.Context, payload PaymentPayload, req PaymentRequirements) (SettleResponse, error)
	Supported(ctx context.Context) (SupportedResponse, error)
}

// NonceState is the life-cycle state of a payment authorization nonce.
type NonceState int

// Nonce states: a reservation is taken before the paid handler runs and is
// either released (the handler failed, nothing was settled) or completed
// (settled, with the response recorded for idempotent replay).
const (
	NonceReserved NonceState = iota + 1
	NonceSettled
)

// RecordedResponse is the response a settled payment bought, kept so that
// the same payment presented again for the same request gets it again.
type RecordedResponse struct {
	Status     int            `json:"status"`
	Header     http.Header    `json:"header"`
	Body       []byte         `json:"body"`
	Settlement SettleResponse `json:"settlement"`
}

// NonceRecord is what a NonceStore keeps per payment authorization.
// Key identifies the authorization (network, asset, payer and nonce);
// RequestHash identifies the request it paid for (method, path, query and
// body); ExpiresAt is the authorization's validBefore, after which the
// record may be forgotten because the chain refuses the authorization anyway.
type NonceRecord struct {
	Key         string
	RequestHash string
	State       NonceState
	ExpiresAt   time.Time
	Response    *RecordedResponse // set once State is NonceSettled
}

// ErrNonceTaken is returned by NonceStore.Reserve when the key is already
// reserved or settled; the existing record comes with it.
var ErrNonceTaken = errors.New("x402: payment nonce already used")

// NonceStore guards against replay: each payment authorization runs the paid
// handler at most once. Implementations must make Reserve atomic across every
// process sharing the store. The in-memory MemoryNonceStore serves a single
// process; SQL-backed stores serve several instances.
type NonceStore interface {
	// Reserve claims rec.Key (rec.State is NonceReserved). If the key is
	// already present it returns the existing record and ErrNonceTaken.
	Reserve(ctx context.Context, rec NonceRecord) (existing NonceRecord, err error)
	// Complete marks a reserved key settled and records the response.
	Complete(ctx context.Context, key string, resp RecordedResponse) error
	// Release frees a reserved key (the handler failed or settlement was
	// refused before anything reached the chain). Releasing a settled key is
	// an error.
	Release(ctx context.Context, key string) error
}

package x402

// Refusal and failure reasons that the protocol defines for every scheme
// (VerifyResponse.InvalidReason, SettleResponse.ErrorReason). The
// scheme-specific reasons of exact on EVM are in package x402/exact.
const (
	ReasonInvalidX402Version    = "invalid_x402_version"
	ReasonInvalidNetwork        = "invalid_network"
	ReasonUnexpectedVerifyError = "unexpected_verify_error"
	ReasonUnexpectedSettleError = "unexpected_settle_error"
	// ReasonInsufficientFunds: the payer's balance does not cover the
	// payment.
	ReasonInsufficientFunds = "insufficient_funds"
)

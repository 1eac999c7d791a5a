package x402

// Refusal and failure reasons that the protocol defines for every scheme
// (VerifyResponse.InvalidReason, SettleResponse.ErrorReason). The
// scheme-specific reasons of exact on EVM are in package x402/exact.
const (
	ReasonInvalidX402Version    = "invalid_x402_version"
	ReasonInvalidNetwork        = "invalid_network"
	ReasonUnsupportedScheme     = "unsupported_scheme"
	ReasonUnexpectedVerifyError = "unexpected_verify_error"
	ReasonUnexpectedSettleError = "unexpected_settle_error"
	// ReasonSettlementPending: a settlement went out (or may have) and is
	// not confirmed yet; the same payment presented again gets its outcome.
	ReasonSettlementPending = "settlement_pending"
	// ReasonInsufficientFunds: the payer's balance does not cover the
	// payment.
	ReasonInsufficientFunds = "insufficient_funds"
)

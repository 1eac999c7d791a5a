package onchain

import (
	"errors"
	"strings"

	"github.com/ethereum/go-ethereum/accounts/abi"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/rpc"

	"github.com/seed1284c1d2/svc/x402/exact"
)

// tokenABI is the part of USDC's (FiatToken v2.2) interface a facilitator
// uses. go-ethereum names the second transferWithAuthorization (the
// `bytes signature` form) "transferWithAuthorization0".
const tokenABI = `[
 {"type":"function","name":"balanceOf","stateMutability":"view","inputs":[{"name":"account","type":"address"}],"outputs":[{"name":"","type":"uint256"}]},
 {"type":"function","name":"authorizationState","stateMutability":"view","inputs":[{"name":"authorizer","type":"address"},{"name":"nonce","type":"bytes32"}],"outputs":[{"name":"","type":"bool"}]},
 {"type":"function","name":"transferWithAuthorization","stateMutability":"nonpayable","inputs":[
  {"name":"from","type":"address"},{"name":"to","type":"address"},{"name":"value","type":"uint256"},
  {"name":"validAfter","type":"uint256"},{"name":"validBefore","type":"uint256"},{"name":"nonce","type":"bytes32"},
  {"name":"v","type":"uint8"},{"name":"r","type":"bytes32"},{"name":"s","type":"bytes32"}],"outputs":[]},
 {"type":"function","name":"transferWithAuthorization","stateMutability":"nonpayable","inputs":[
  {"name":"from","type":"address"},{"name":"to","type":"address"},{"name":"value","type":"uint256"},
  {"name":"validAfter","type":"uint256"},{"name":"validBefore","type":"uint256"},{"name":"nonce","type":"bytes32"},
  {"name":"signature","type":"bytes"}],"outputs":[]},
 {"type":"event","name":"Transfer","anonymous":false,"inputs":[{"name":"from","type":"address","indexed":true},{"name":"to","type":"address","indexed":true},{"name":"value","type":"uint256","indexed":false}]},
 {"type":"event","name":"AuthorizationUsed","anonymous":false,"inputs":[{"name":"authorizer","type":"address","indexed":true},{"name":"nonce","type":"bytes32","indexed":true}]},
 {"type":"event","name":"AuthorizationCanceled","anonymous":false,"inputs":[{"name":"authorizer","type":"address","indexed":true},{"name":"nonce","type":"bytes32","indexed":true}]}
]`

// Event topics of the token.
var (
	topicTransfer              = crypto.Keccak256Hash([]byte("Transfer(address,address,uint256)"))
	topicAuthorizationUsed     = crypto.Keccak256Hash([]byte("AuthorizationUsed(address,bytes32)"))
	topicAuthorizationCanceled = crypto.Keccak256Hash([]byte("AuthorizationCanceled(address,bytes32)"))
)

// parseTokenABI parses tokenABI (a constant: it cannot fail at run time
// unless the constant is broken, which the tests catch).
func parseTokenABI() (abi.ABI, error) {
	return abi.JSON(strings.NewReader(tokenABI))
}

// Reasons this facilitator adds to those of exact (the strings of the
// reference facilitators).
const (
	// ReasonInsufficientBalance: the payer's token balance is below the
	// amount.
	ReasonInsufficientBalance = "invalid_exact_evm_insufficient_balance"
	// ReasonSimulationFailed: the transfer would revert for another
	// reason (the message carries the revert text).
	ReasonSimulationFailed = "invalid_exact_evm_transaction_simulation_failed"
	// ReasonTransactionFailed: the transaction was mined and reverted.
	ReasonTransactionFailed = "invalid_exact_evm_transaction_failed"
	// ReasonTransferEventMismatch: the transaction's Transfer or
	// AuthorizationUsed events are not the payment asked for.
	ReasonTransferEventMismatch = "invalid_exact_evm_transfer_event_mismatch"
	// ReasonRevertBudgetExhausted: settlement transactions of the payer's
	// payments reverted Config.MaxPayerReverts times within
	// Config.RevertWindow; its payments are refused before any gas until
	// the window has passed.
	ReasonRevertBudgetExhausted = "invalid_exact_evm_payer_revert_budget_exhausted"
	// ReasonSettlementPending: the transaction was sent and is not
	// confirmed yet (Transaction is set); present the settlement again
	// later, or ask Status.
	ReasonSettlementPending = "settlement_pending"
)

// revertReason maps a token revert text to an x402 reason.
func revertReason(text string) string {
	switch {
	case strings.Contains(text, "authorization is used or canceled"):
		return exact.ReasonNonceAlreadyUsed
	case strings.Contains(text, "authorization is expired"):
		return exact.ReasonValidBefore
	case strings.Contains(text, "authorization is not yet valid"):
		return exact.ReasonValidAfter
	case strings.Contains(text, "invalid signature"):
		return exact.ReasonInvalidSignature
	case strings.Contains(text, "transfer amount exceeds balance"):
		return ReasonInsufficientBalance
	}
	return ReasonSimulationFailed
}

// revertText extracts the Error(string) text of a reverted call from a
// JSON-RPC error, or "" when there is none.
func revertText(err error) (string, bool) {
	var de rpc.DataError
	if errors.As(err, &de) {
		if s, ok := de.ErrorData().(string); ok {
			if b, derr := hexDecode(s); derr == nil && len(b) >= 4 {
				if text, uerr := abi.UnpackRevert(b); uerr == nil {
					return text, true
				}
				return "custom error 0x" + common.Bytes2Hex(b[:4]), true
			}
		}
	}
	msg := err.Error()
	if i := strings.Index(msg, "execution reverted"); i >= 0 {
		text := strings.TrimSpace(strings.TrimPrefix(msg[i+len("execution reverted"):], ":"))
		text = strings.TrimPrefix(text, "revert: ")
		return text, true
	}
	return "", false
}

func hexDecode(s string) ([]byte, error) {
	return hexutil.Decode(s)
}

package batch

// Refusal and failure reasons of the scheme on EVM (VerifyResponse.
// InvalidReason, SettleResponse.ErrorReason and the error of a corrective
// 402), spelled as the specification and the reference implementations
// spell them.
const (
	ReasonScheme                        = "invalid_batch_settlement_evm_scheme"
	ReasonNetworkMismatch               = "invalid_batch_settlement_evm_network_mismatch"
	ReasonPayloadType                   = "invalid_batch_settlement_evm_payload_type"
	ReasonDepositPayload                = "invalid_batch_settlement_evm_deposit_payload"
	ReasonVoucherPayload                = "invalid_batch_settlement_evm_voucher_payload"
	ReasonRefundPayload                 = "invalid_batch_settlement_evm_refund_payload"
	ReasonClaimPayload                  = "invalid_batch_settlement_evm_claim_payload"
	ReasonSettlePayload                 = "invalid_batch_settlement_evm_settle_payload"
	ReasonChannelIDMismatch             = "invalid_batch_settlement_evm_channel_id_mismatch"
	ReasonChannelIDInvalid              = "invalid_batch_settlement_evm_channel_id_invalid"
	ReasonTokenMismatch                 = "invalid_batch_settlement_evm_token_mismatch"
	ReasonReceiverMismatch              = "invalid_batch_settlement_evm_receiver_mismatch"
	ReasonReceiverAuthorizerMismatch    = "invalid_batch_settlement_evm_receiver_authorizer_mismatch"
	ReasonAuthorizerAddressMismatch     = "invalid_batch_settlement_evm_authorizer_address_mismatch"
	ReasonWithdrawDelayMismatch         = "invalid_batch_settlement_evm_withdraw_delay_mismatch"
	ReasonWithdrawDelayOutOfRange       = "invalid_batch_settlement_evm_withdraw_delay_out_of_range"
	ReasonMissingEIP712Domain           = "invalid_batch_settlement_evm_missing_eip712_domain"
	ReasonVoucherSignature              = "invalid_batch_settlement_evm_voucher_signature"
	ReasonChannelNotFound               = "invalid_batch_settlement_evm_channel_not_found"
	ReasonMissingChannel                = "invalid_batch_settlement_evm_missing_channel"
	ReasonChannelBusy                   = "invalid_batch_settlement_evm_channel_busy"
	ReasonChannelStateReadFailed        = "invalid_batch_settlement_evm_channel_state_read_failed"
	ReasonRPCReadFailed                 = "invalid_batch_settlement_evm_rpc_read_failed"
	ReasonCumulativeAmountMismatch      = "invalid_batch_settlement_evm_cumulative_amount_mismatch"
	ReasonCumulativeBelowClaimed        = "invalid_batch_settlement_evm_cumulative_below_claimed"
	ReasonCumulativeExceedsBalance      = "invalid_batch_settlement_evm_cumulative_exceeds_balance"
	ReasonChargeExceedsSignedCumulative = "invalid_batch_settlement_evm_charge_exceeds_signed_cumulative"
	ReasonInsufficientBalance           = "invalid_batch_settlement_evm_insufficient_balance"
	ReasonERC3009AuthorizationRequired  = "invalid_batch_settlement_evm_erc3009_authorization_required"
	ReasonReceiveAuthorizationSignature = "invalid_batch_settlement_evm_receive_authorization_signature"
	ReasonAuthorizationValidAfter       = "invalid_batch_settlement_evm_payload_authorization_valid_after"
	ReasonAuthorizationValidBefore      = "invalid_batch_settlement_evm_payload_authorization_valid_before"
	ReasonDepositBelowMinDeposit        = "invalid_batch_settlement_evm_deposit_below_min_deposit"
	ReasonDepositSimulationFailed       = "invalid_batch_settlement_evm_deposit_simulation_failed"
	ReasonDepositTransactionFailed      = "invalid_batch_settlement_evm_deposit_transaction_failed"
	ReasonClaimSimulationFailed         = "invalid_batch_settlement_evm_claim_simulation_failed"
	ReasonClaimTransactionFailed        = "invalid_batch_settlement_evm_claim_transaction_failed"
	ReasonSettleSimulationFailed        = "invalid_batch_settlement_evm_settle_simulation_failed"
	ReasonSettleTransactionFailed       = "invalid_batch_settlement_evm_settle_transaction_failed"
	ReasonNothingToSettle               = "invalid_batch_settlement_evm_nothing_to_settle"
	ReasonRefundAmountInvalid           = "invalid_batch_settlement_evm_refund_amount_invalid"
	ReasonRefundNoBalance               = "invalid_batch_settlement_evm_refund_no_balance"
	ReasonRefundSimulationFailed        = "invalid_batch_settlement_evm_refund_simulation_failed"
	ReasonRefundTransactionFailed       = "invalid_batch_settlement_evm_refund_transaction_failed"
	ReasonTransactionReverted           = "invalid_batch_settlement_evm_transaction_reverted"
	ReasonWaitForReceiptFailed          = "invalid_batch_settlement_evm_wait_for_receipt_failed"
	ReasonUnknownSettleAction           = "invalid_batch_settlement_evm_unknown_settle_action"
	ReasonAuthorizerNotConfigured       = "invalid_batch_settlement_evm_authorizer_not_configured"
)

// Error is a refusal with its reason (a Reason* constant) and a message
// that names the field and the rule, never more than a short prefix of the
// input.
type Error struct {
	Reason string
	Msg    string
}

func (e *Error) Error() string { return "x402 batch-settlement: " + e.Msg }

// refuse returns an *Error.
func refuse(reason, msg string) *Error { return &Error{Reason: reason, Msg: msg} }

package batch

import (
	"encoding/json"
	"math/big"

	"github.com/ethereum/go-ethereum/common"
)

// Scheme is the scheme's name in requirements and payloads.
const Scheme = "batch-settlement"

// Canonical addresses of the scheme's contracts, the same on every chain.
const (
	SettlementAddress       = "0x4020074e9dF2ce1deE5A9C1b5c3f541D02a10003"
	ERC3009CollectorAddress = "0x4020806089470a89826cB9fB1f4059150b550004"
	Permit2CollectorAddress = "0x4020425FAf3B746C082C2f942b4E5159887B0005"
)

// Bounds of a channel's withdrawal delay, in seconds (15 minutes to 30
// days).
const (
	MinWithdrawDelay = 15 * 60
	MaxWithdrawDelay = 30 * 24 * 60 * 60
)

// Payload types (the "type" member of a payload).
const (
	TypeDeposit = "deposit"
	TypeVoucher = "voucher"
	TypeRefund  = "refund"
	TypeClaim   = "claim"
	TypeSettle  = "settle"
)

// Asset transfer methods of a deposit (extra.assetTransferMethod).
const (
	TransferEIP3009 = "eip3009"
	TransferPermit2 = "permit2"
)

// ChannelConfig is a channel's immutable configuration as it travels:
// addresses 0x + 40 hex digits, withdrawDelay a number of seconds, salt
// 0x + 64 hex digits. PayerAuthorizer is the EOA that signs vouchers, or
// the zero address when vouchers are checked against Payer (ERC-1271).
type ChannelConfig struct {
	Payer              string `json:"payer"`
	PayerAuthorizer    string `json:"payerAuthorizer"`
	Receiver           string `json:"receiver"`
	ReceiverAuthorizer string `json:"receiverAuthorizer"`
	Token              string `json:"token"`
	WithdrawDelay      uint64 `json:"withdrawDelay"`
	Salt               string `json:"salt"`
}

// Voucher is a signed cumulative ceiling: the receiver may claim up to
// MaxClaimableAmount (decimal atomic units) from channel ChannelID in
// total. Signature is the payer authorizer's EIP-712 Voucher signature.
type Voucher struct {
	ChannelID          string `json:"channelId"`
	MaxClaimableAmount string `json:"maxClaimableAmount"`
	Signature          string `json:"signature"`
}

// ERC3009Authorization is a deposit's ReceiveWithAuthorization without
// the members the escrow derives (from = payer, to = the collector, value
// = the deposit, nonce = DepositNonce(channelId, salt)). ValidAfter and
// ValidBefore are decimal; Salt is a uint256 (0x-hex or decimal).
type ERC3009Authorization struct {
	ValidAfter  string `json:"validAfter"`
	ValidBefore string `json:"validBefore"`
	Salt        string `json:"salt"`
	Signature   string `json:"signature"`
}

// DepositAuthorization carries exactly one token authorization.
type DepositAuthorization struct {
	ERC3009 *ERC3009Authorization `json:"erc3009Authorization,omitempty"`
	Permit2 json.RawMessage       `json:"permit2Authorization,omitempty"`
}

// Deposit is a deposit's amount (decimal atomic units) and its token
// authorization.
type Deposit struct {
	Amount        string               `json:"amount"`
	Authorization DepositAuthorization `json:"authorization"`
}

// Payload is what a client sends (PaymentPayload.payload): a "deposit"
// (a voucher and the deposit backing it), a "voucher", or a "refund" (a
// zero-charge voucher and, optionally, the Amount to refund; none means
// everything unclaimed).
type Payload struct {
	Type          string        `json:"type"`
	ChannelConfig ChannelConfig `json:"channelConfig"`
	Voucher       Voucher       `json:"voucher"`
	Deposit       *Deposit      `json:"deposit,omitempty"`
	Amount        string        `json:"amount,omitempty"`
}

// ClaimVoucher is a voucher as a claim row names it: the full channel
// configuration and the signed ceiling.
type ClaimVoucher struct {
	Channel            ChannelConfig `json:"channel"`
	MaxClaimableAmount string        `json:"maxClaimableAmount"`
}

// VoucherClaim is one row of a claim: the voucher, its payer signature
// and the channel's new cumulative claimed total (at most the ceiling).
type VoucherClaim struct {
	Voucher      ClaimVoucher `json:"voucher"`
	Signature    string       `json:"signature"`
	TotalClaimed string       `json:"totalClaimed"`
}

// ClaimPayload asks a facilitator to claim rows in one claimWithSignature.
// ClaimAuthorizerSignature is the receiver authorizer's ClaimBatch
// signature; empty asks the facilitator to sign with its own authorizer.
type ClaimPayload struct {
	Type                     string         `json:"type"`
	Claims                   []VoucherClaim `json:"claims"`
	ClaimAuthorizerSignature string         `json:"claimAuthorizerSignature,omitempty"`
}

// SettlePayload asks a facilitator to sweep the claimed funds of Receiver
// in Token.
type SettlePayload struct {
	Type     string `json:"type"`
	Receiver string `json:"receiver"`
	Token    string `json:"token"`
}

// RefundSettlement is a client's refund completed by the server for the
// facilitator: the amount resolved, the channel's refund nonce, the claim
// of the latest voucher and the receiver authorizer's signatures (empty
// when the facilitator signs).
type RefundSettlement struct {
	Type                      string         `json:"type"`
	ChannelConfig             ChannelConfig  `json:"channelConfig"`
	Voucher                   Voucher        `json:"voucher"`
	Amount                    string         `json:"amount"`
	RefundNonce               string         `json:"refundNonce"`
	Claims                    []VoucherClaim `json:"claims"`
	RefundAuthorizerSignature string         `json:"refundAuthorizerSignature,omitempty"`
	ClaimAuthorizerSignature  string         `json:"claimAuthorizerSignature,omitempty"`
}

// Channel is a parsed ChannelConfig.
type Channel struct {
	Payer              common.Address
	PayerAuthorizer    common.Address
	Receiver           common.Address
	ReceiverAuthorizer common.Address
	Token              common.Address
	WithdrawDelay      uint64
	Salt               common.Hash
}

// Config returns c as it travels (checksummed addresses, 0x-hex salt).
func (c Channel) Config() ChannelConfig {
	return ChannelConfig{
		Payer: c.Payer.Hex(), PayerAuthorizer: c.PayerAuthorizer.Hex(), Receiver: c.Receiver.Hex(),
		ReceiverAuthorizer: c.ReceiverAuthorizer.Hex(), Token: c.Token.Hex(), WithdrawDelay: c.WithdrawDelay, Salt: c.Salt.Hex(),
	}
}

// ERC3009Deposit is a parsed deposit with an EIP-3009 authorization.
type ERC3009Deposit struct {
	Amount      *big.Int
	ValidAfter  *big.Int
	ValidBefore *big.Int
	Salt        *big.Int
	Signature   []byte
}

// Payment is a parsed and syntactically checked Payload.
type Payment struct {
	// Type is TypeDeposit, TypeVoucher or TypeRefund.
	Type    string
	Channel Channel
	// ChannelID is the voucher's channelId as sent: Check compares it
	// with the id of Channel.
	ChannelID          common.Hash
	MaxClaimableAmount *big.Int
	// Signature is the voucher's signature.
	Signature []byte
	// Deposit is set for TypeDeposit (EIP-3009 deposits only).
	Deposit *ERC3009Deposit
	// RefundAmount is the amount a refund asks for; nil means everything
	// unclaimed.
	RefundAmount *big.Int
}

// Claim is a parsed VoucherClaim.
type Claim struct {
	Channel            Channel
	MaxClaimableAmount *big.Int
	Signature          []byte
	TotalClaimed       *big.Int
}

// Row returns c as it travels.
func (c Claim) Row() VoucherClaim {
	return VoucherClaim{
		Voucher:      ClaimVoucher{Channel: c.Channel.Config(), MaxClaimableAmount: c.MaxClaimableAmount.String()},
		Signature:    hexBytes(c.Signature),
		TotalClaimed: c.TotalClaimed.String(),
	}
}

// Payload returns p as it travels (checksummed addresses, decimal
// amounts, 0x-hex signatures and salts).
func (p Payment) Payload() Payload {
	out := Payload{Type: p.Type, ChannelConfig: p.Channel.Config(),
		Voucher: Voucher{ChannelID: p.ChannelID.Hex(), MaxClaimableAmount: p.MaxClaimableAmount.String(), Signature: hexBytes(p.Signature)}}
	if p.Deposit != nil {
		out.Deposit = p.Deposit.wire()
	}
	if p.RefundAmount != nil {
		out.Amount = p.RefundAmount.String()
	}
	return out
}

// wire returns d as it travels (salt as 0x + 64 hex digits).
func (d *ERC3009Deposit) wire() *Deposit {
	var salt common.Hash
	d.Salt.FillBytes(salt[:])
	return &Deposit{Amount: d.Amount.String(), Authorization: DepositAuthorization{ERC3009: &ERC3009Authorization{
		ValidAfter: d.ValidAfter.String(), ValidBefore: d.ValidBefore.String(), Salt: salt.Hex(), Signature: hexBytes(d.Signature)}}}
}

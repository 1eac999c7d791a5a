package batch

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/big"

	"github.com/ethereum/go-ethereum/common"

	"github.com/seed1284c1d2/svc/x402"
	"github.com/seed1284c1d2/svc/x402/internal/wire"
)

// Extra is the "extra" of batch-settlement requirements. The client maps
// payTo, ReceiverAuthorizer, asset and WithdrawDelay to its channel's
// configuration; Name and Version are the token's EIP-712 domain (for the
// deposit's authorization). MinDeposit is the smallest deposit the server
// asks for (atomic units, decimal). ChannelState and VoucherState appear in
// a corrective 402 only.
type Extra struct {
	ReceiverAuthorizer  string        `json:"receiverAuthorizer"`
	WithdrawDelay       uint64        `json:"withdrawDelay"`
	Name                string        `json:"name"`
	Version             string        `json:"version"`
	AssetTransferMethod string        `json:"assetTransferMethod,omitempty"`
	MinDeposit          string        `json:"minDeposit,omitempty"`
	ChannelState        *ChannelState `json:"channelState,omitempty"`
	VoucherState        *VoucherState `json:"voucherState,omitempty"`
}

// ChannelState is the server's snapshot of a channel: the mirrored
// on-chain balance, totalClaimed, withdrawRequestedAt (Unix seconds, 0 for
// none) and refundNonce, and the server's ChargedCumulativeAmount (in
// payment responses and corrective 402s; absent in a facilitator's).
type ChannelState struct {
	ChannelID               string `json:"channelId"`
	Balance                 string `json:"balance"`
	TotalClaimed            string `json:"totalClaimed"`
	WithdrawRequestedAt     uint64 `json:"withdrawRequestedAt"`
	RefundNonce             string `json:"refundNonce"`
	ChargedCumulativeAmount string `json:"chargedCumulativeAmount,omitempty"`
}

// VoucherState is the latest voucher the server holds for a channel (its
// ceiling and the payer's signature), sent in a corrective 402 so that
// the client can check it before adopting the server's charged amount.
type VoucherState struct {
	SignedMaxClaimable string `json:"signedMaxClaimable"`
	Signature          string `json:"signature"`
}

// ResponseExtra is the "extra" of a batch-settlement payment response:
// ChargedAmount, the request's charge (absent for a refund), and the
// channel's snapshot after it.
type ResponseExtra struct {
	ChargedAmount string        `json:"chargedAmount,omitempty"`
	ChannelState  *ChannelState `json:"channelState,omitempty"`
}

// toMap converts a JSON-shaped struct to the map form of x402's Extra
// members (numbers as float64, as a decoded JSON object holds them).
func toMap(v any) map[string]any {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("x402 batch-settlement: marshal %T: %v", v, err)) // plain structs of strings and numbers
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		panic(fmt.Sprintf("x402 batch-settlement: unmarshal %T: %v", v, err))
	}
	return m
}

// Map returns e as a requirements' Extra.
func (e Extra) Map() map[string]any { return toMap(e) }

// Map returns r as a settle response's Extra.
func (r ResponseExtra) Map() map[string]any { return toMap(r) }

// ParseExtra reads the Extra of batch-settlement requirements and checks
// what a payment depends on: a non-zero receiverAuthorizer, a
// withdrawDelay within bounds, the token's EIP-712 name and version, and
// minDeposit (when present) a decimal amount. A refusal is an *Error.
func ParseExtra(m map[string]any) (Extra, error) {
	var e Extra
	b, err := json.Marshal(m)
	if err != nil {
		return e, refuse(ReasonMissingEIP712Domain, "extra: not JSON")
	}
	if err := wire.Unmarshal(b, &e); err != nil {
		return e, refuse(ReasonMissingEIP712Domain, "extra: "+wire.JSONErrorSummary(err))
	}
	if a, ok := wire.ParseAddress(e.ReceiverAuthorizer); !ok || a == (common.Address{}) {
		return e, refuse(ReasonReceiverAuthorizerMismatch, "extra.receiverAuthorizer: must be a non-zero address")
	}
	if e.WithdrawDelay < MinWithdrawDelay || e.WithdrawDelay > MaxWithdrawDelay {
		return e, refuse(ReasonWithdrawDelayOutOfRange, fmt.Sprintf("extra.withdrawDelay: %d s is outside [%d, %d]", e.WithdrawDelay, MinWithdrawDelay, MaxWithdrawDelay))
	}
	if e.Name == "" || e.Version == "" {
		return e, refuse(ReasonMissingEIP712Domain, "extra.name and extra.version: the token's EIP-712 domain is required")
	}
	if e.MinDeposit != "" {
		if _, err := parseAmount(e.MinDeposit); err != nil {
			return e, refuse(ReasonDepositPayload, "extra.minDeposit: "+err.Error())
		}
	}
	return e, nil
}

// Offer describes batch-settlement requirements.
type Offer struct {
	// Network is a known network's CAIP-2 id; its USDC is the asset.
	Network string
	// Amount is the per-request maximum, in atomic units (decimal).
	Amount string
	// PayTo is the channel's receiver.
	PayTo string
	// ReceiverAuthorizer signs claims and refunds.
	ReceiverAuthorizer common.Address
	// WithdrawDelay is the channel's withdrawal delay in seconds.
	WithdrawDelay uint64
	// MinDeposit, when not empty, is the smallest deposit asked for.
	MinDeposit string
	// MaxTimeoutSeconds bounds the deposit authorization's validity
	// (x402.DefaultMaxTimeoutSeconds when 0).
	MaxTimeoutSeconds int
}

// NewRequirements builds the requirements of o, paid in the network's
// USDC, after checking them as ParseExtra and the amounts' syntax do.
func NewRequirements(o Offer) (x402.PaymentRequirements, error) {
	n, ok := x402.LookupNetwork(o.Network)
	if !ok {
		return x402.PaymentRequirements{}, fmt.Errorf("%w %q", x402.ErrUnknownNetwork, wire.Clip(o.Network, 40))
	}
	if amt, err := parseAmount(o.Amount); err != nil || amt.Sign() == 0 {
		return x402.PaymentRequirements{}, fmt.Errorf("x402 batch-settlement: amount %q must be a positive integer below 2^128", wire.Clip(o.Amount, 40))
	}
	payTo, problem := wire.CheckPayTo(o.PayTo)
	if problem != "" {
		return x402.PaymentRequirements{}, errors.New("x402 batch-settlement: payTo: " + problem)
	}
	secs := o.MaxTimeoutSeconds
	if secs <= 0 {
		secs = x402.DefaultMaxTimeoutSeconds
	}
	e := Extra{ReceiverAuthorizer: o.ReceiverAuthorizer.Hex(), WithdrawDelay: o.WithdrawDelay, Name: n.EIP712Name, Version: n.EIP712Version, MinDeposit: o.MinDeposit}
	extra := e.Map()
	if _, err := ParseExtra(extra); err != nil {
		return x402.PaymentRequirements{}, err
	}
	return x402.PaymentRequirements{Scheme: Scheme, Network: n.CAIP2, Amount: o.Amount, Asset: n.USDC, PayTo: payTo, MaxTimeoutSeconds: secs, Extra: extra}, nil
}

// Check holds p against the requirements it pays, as the specification's
// verification rules 1 to 5 say: the channel configuration hashes to the
// voucher's channel id on the requirements' chain, the channel's token is
// the asset, its receiver is payTo, its receiver authorizer is
// extra.receiverAuthorizer and its withdrawal delay extra.withdrawDelay.
// It returns the domain of the requirements' chain for the signature
// checks. A refusal is an *Error with the rule's reason.
func (p Payment) Check(req x402.PaymentRequirements) (Domain, error) {
	if req.Scheme != Scheme {
		return Domain{}, refuse(ReasonScheme, fmt.Sprintf("scheme %q is not %s", wire.Clip(req.Scheme, 30), Scheme))
	}
	n, ok := x402.LookupNetwork(req.Network)
	if !ok {
		return Domain{}, refuse(ReasonNetworkMismatch, fmt.Sprintf("network %q is not known", wire.Clip(req.Network, 40)))
	}
	extra, err := ParseExtra(req.Extra)
	if err != nil {
		return Domain{}, err
	}
	d := NewDomain(n.ChainID)
	if d.ChannelID(p.Channel) != p.ChannelID {
		return d, refuse(ReasonChannelIDMismatch, "voucher.channelId is not the id of the channel's configuration on "+n.CAIP2)
	}
	if asset, ok := wire.ParseAddress(req.Asset); !ok || asset != p.Channel.Token {
		return d, refuse(ReasonTokenMismatch, "channel token "+p.Channel.Token.Hex()+" is not the asset")
	}
	if payTo, ok := wire.ParseAddress(req.PayTo); !ok || payTo != p.Channel.Receiver {
		return d, refuse(ReasonReceiverMismatch, "channel receiver "+p.Channel.Receiver.Hex()+" is not payTo")
	}
	if ra, _ := wire.ParseAddress(extra.ReceiverAuthorizer); ra != p.Channel.ReceiverAuthorizer {
		return d, refuse(ReasonReceiverAuthorizerMismatch, "channel receiverAuthorizer "+p.Channel.ReceiverAuthorizer.Hex()+" is not extra.receiverAuthorizer")
	}
	if extra.WithdrawDelay != p.Channel.WithdrawDelay {
		return d, refuse(ReasonWithdrawDelayMismatch, fmt.Sprintf("channel withdrawDelay %d is not extra.withdrawDelay %d", p.Channel.WithdrawDelay, extra.WithdrawDelay))
	}
	return d, nil
}

// Corrective returns req with the server's channel and voucher state in
// its extra: the accepts entry of a corrective 402
// (ReasonCumulativeAmountMismatch) from which the client resynchronises.
// vs is nil when the server holds no voucher of the channel.
func Corrective(req x402.PaymentRequirements, cs ChannelState, vs *VoucherState) x402.PaymentRequirements {
	extra := make(map[string]any, len(req.Extra)+2)
	for k, v := range req.Extra {
		extra[k] = v
	}
	extra["channelState"] = toMap(cs)
	if vs != nil {
		extra["voucherState"] = toMap(vs)
	} else {
		delete(extra, "voucherState")
	}
	req.Extra = extra
	return req
}

// ChargeResponse is the payment response of a paid request: for a
// voucher, an empty transaction and no amount (x402.SettleResponse omits
// an empty amount; clients read the charge from extra); for a deposit, the
// deposit's transaction and amount. Both carry the request's charge and
// the channel's snapshot after it.
func ChargeResponse(network, payer string, charged *big.Int, cs ChannelState, depositTx, depositAmount string) x402.SettleResponse {
	return x402.SettleResponse{
		Success: true, Transaction: depositTx, Network: network, Payer: payer, Amount: depositAmount,
		Extra: ResponseExtra{ChargedAmount: charged.String(), ChannelState: &cs}.Map(),
	}
}

// ParseResponseExtra reads the extra of a batch-settlement payment
// response, checking that the charge and the snapshot's amounts are
// decimal.
func ParseResponseExtra(m map[string]any) (ResponseExtra, error) {
	var r ResponseExtra
	b, err := json.Marshal(m)
	if err != nil {
		return r, errors.New("x402 batch-settlement: response extra: not JSON")
	}
	if err := wire.Unmarshal(b, &r); err != nil {
		return r, errors.New("x402 batch-settlement: response extra: " + wire.JSONErrorSummary(err))
	}
	if r.ChargedAmount != "" {
		if _, err := parseAmount(r.ChargedAmount); err != nil {
			return r, errors.New("x402 batch-settlement: response extra.chargedAmount: " + err.Error())
		}
	}
	if cs := r.ChannelState; cs != nil {
		for name, v := range map[string]string{"balance": cs.Balance, "totalClaimed": cs.TotalClaimed} {
			if _, err := parseAmount(v); err != nil {
				return r, fmt.Errorf("x402 batch-settlement: response extra.channelState.%s: %v", name, err)
			}
		}
		if cs.ChargedCumulativeAmount != "" {
			if _, err := parseAmount(cs.ChargedCumulativeAmount); err != nil {
				return r, errors.New("x402 batch-settlement: response extra.channelState.chargedCumulativeAmount: " + err.Error())
			}
		}
	}
	return r, nil
}

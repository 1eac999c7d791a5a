package batch

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/big"

	"github.com/ethereum/go-ethereum/common"

	"github.com/seed1284c1d2/svc/x402/internal/wire"
)

// MaxSignatureBytes bounds a signature's length: 65 bytes for an EOA,
// more for a smart wallet (ERC-1271, ERC-6492 wrappers), never unbounded.
const MaxSignatureBytes = 4096

// MaxAmount returns 2^128 - 1, the largest amount a channel holds.
func MaxAmount() *big.Int {
	return new(big.Int).Sub(new(big.Int).Lsh(big.NewInt(1), 128), big.NewInt(1))
}

// ParsePayload decodes a client's payload (deposit, voucher or refund)
// and checks its syntax: every address, the salt, the channel id, the
// amounts (uint128, decimal), the signatures (0x-hex), the withdrawal
// delay's range, and for a deposit its EIP-3009 authorization. A refusal
// is an *Error whose Reason is the payload kind's (ReasonDepositPayload,
// ReasonVoucherPayload, ReasonRefundPayload, ReasonPayloadType, ...).
// Whether the payment matches a requirement is Payment.Check's.
func ParsePayload(raw []byte) (Payment, error) {
	var p Payload
	if err := wire.Unmarshal(raw, &p); err != nil {
		return Payment{}, refuse(ReasonPayloadType, "payload: "+wire.JSONErrorSummary(err))
	}
	var reason string
	switch p.Type {
	case TypeDeposit:
		reason = ReasonDepositPayload
	case TypeVoucher:
		reason = ReasonVoucherPayload
	case TypeRefund:
		reason = ReasonRefundPayload
	default:
		return Payment{}, refuse(ReasonPayloadType, fmt.Sprintf("payload.type %q is not deposit, voucher or refund", wire.Clip(p.Type, 20)))
	}
	ch, err := ParseChannelConfig(p.ChannelConfig)
	if err != nil {
		return Payment{}, retag(err, reason, "payload.channelConfig.")
	}
	out := Payment{Type: p.Type, Channel: ch}
	if !wire.DecodeHex(out.ChannelID[:], p.Voucher.ChannelID) {
		return Payment{}, refuse(ReasonChannelIDInvalid, "payload.voucher.channelId: must be 0x followed by 64 hex digits")
	}
	if out.MaxClaimableAmount, err = parseAmount(p.Voucher.MaxClaimableAmount); err != nil {
		return Payment{}, refuse(reason, "payload.voucher.maxClaimableAmount: "+err.Error())
	}
	if out.Signature, err = parseSignature(p.Voucher.Signature); err != nil {
		return Payment{}, refuse(reason, "payload.voucher.signature: "+err.Error())
	}
	switch p.Type {
	case TypeDeposit:
		if out.Deposit, err = parseDeposit(p.Deposit); err != nil {
			return Payment{}, err
		}
	case TypeRefund:
		if p.Amount != "" {
			amt, err := parseAmount(p.Amount)
			if err != nil || amt.Sign() == 0 {
				return Payment{}, refuse(ReasonRefundAmountInvalid, "payload.amount: must be a positive decimal integer below 2^128")
			}
			out.RefundAmount = amt
		}
	}
	if p.Type != TypeDeposit && p.Deposit != nil {
		return Payment{}, refuse(reason, "payload.deposit: only a deposit payload carries one")
	}
	if p.Type != TypeRefund && p.Amount != "" {
		return Payment{}, refuse(reason, "payload.amount: only a refund payload carries one")
	}
	return out, nil
}

// parseDeposit checks a deposit: a positive amount and exactly one
// authorization, which must be EIP-3009 (the method this package
// implements).
func parseDeposit(d *Deposit) (*ERC3009Deposit, error) {
	if d == nil {
		return nil, refuse(ReasonDepositPayload, "payload.deposit: required in a deposit payload")
	}
	amt, err := parseAmount(d.Amount)
	if err != nil || amt.Sign() == 0 {
		return nil, refuse(ReasonDepositPayload, "payload.deposit.amount: must be a positive decimal integer below 2^128")
	}
	a := d.Authorization
	if a.ERC3009 != nil && len(a.Permit2) > 0 && !bytes.Equal(bytes.TrimSpace(a.Permit2), []byte("null")) {
		return nil, refuse(ReasonDepositPayload, "payload.deposit.authorization: exactly one of erc3009Authorization and permit2Authorization")
	}
	if a.ERC3009 == nil {
		return nil, refuse(ReasonERC3009AuthorizationRequired, "payload.deposit.authorization.erc3009Authorization: required (the only deposit method accepted)")
	}
	out := &ERC3009Deposit{Amount: amt}
	e := a.ERC3009
	field := "payload.deposit.authorization.erc3009Authorization."
	if out.ValidAfter, err = parseUint256(e.ValidAfter); err != nil {
		return nil, refuse(ReasonDepositPayload, field+"validAfter: "+err.Error())
	}
	if out.ValidBefore, err = parseUint256(e.ValidBefore); err != nil {
		return nil, refuse(ReasonDepositPayload, field+"validBefore: "+err.Error())
	}
	if out.Salt, err = parseUint256(e.Salt); err != nil {
		return nil, refuse(ReasonDepositPayload, field+"salt: "+err.Error())
	}
	if out.Signature, err = parseSignature(e.Signature); err != nil {
		return nil, refuse(ReasonDepositPayload, field+"signature: "+err.Error())
	}
	return out, nil
}

// ParseChannelConfig checks a channel configuration: addresses, salt,
// a non-zero payer, receiver, receiver authorizer and token, and a
// withdrawal delay within [MinWithdrawDelay, MaxWithdrawDelay] (the
// escrow refuses any other).
func ParseChannelConfig(c ChannelConfig) (Channel, error) {
	var ch Channel
	for _, f := range []struct {
		name    string
		s       string
		dst     *common.Address
		nonZero bool
	}{
		{"payer", c.Payer, &ch.Payer, true},
		{"payerAuthorizer", c.PayerAuthorizer, &ch.PayerAuthorizer, false},
		{"receiver", c.Receiver, &ch.Receiver, true},
		{"receiverAuthorizer", c.ReceiverAuthorizer, &ch.ReceiverAuthorizer, true},
		{"token", c.Token, &ch.Token, true},
	} {
		a, ok := wire.ParseAddress(f.s)
		if !ok {
			return ch, refuse("", f.name+": must be 0x followed by 40 hex digits")
		}
		if f.nonZero && a == (common.Address{}) {
			return ch, refuse("", f.name+": must not be the zero address")
		}
		*f.dst = a
	}
	if !wire.DecodeHex(ch.Salt[:], c.Salt) {
		return ch, refuse("", "salt: must be 0x followed by 64 hex digits")
	}
	if c.WithdrawDelay < MinWithdrawDelay || c.WithdrawDelay > MaxWithdrawDelay {
		return ch, refuse(ReasonWithdrawDelayOutOfRange, fmt.Sprintf("withdrawDelay: %d s is outside [%d, %d]", c.WithdrawDelay, MinWithdrawDelay, MaxWithdrawDelay))
	}
	ch.WithdrawDelay = c.WithdrawDelay
	return ch, nil
}

// ParseClaims checks the rows of a claim: each channel configuration, a
// ceiling and a total claimed (uint128, the total at most the ceiling)
// and a signature. An empty list is refused.
func ParseClaims(rows []VoucherClaim) ([]Claim, error) {
	if len(rows) == 0 {
		return nil, refuse(ReasonClaimPayload, "claims: at least one row")
	}
	out := make([]Claim, len(rows))
	for i, r := range rows {
		at := fmt.Sprintf("claims[%d].", i)
		ch, err := ParseChannelConfig(r.Voucher.Channel)
		if err != nil {
			return nil, retag(err, ReasonClaimPayload, at+"voucher.channel.")
		}
		c := Claim{Channel: ch}
		if c.MaxClaimableAmount, err = parseAmount(r.Voucher.MaxClaimableAmount); err != nil {
			return nil, refuse(ReasonClaimPayload, at+"voucher.maxClaimableAmount: "+err.Error())
		}
		if c.TotalClaimed, err = parseAmount(r.TotalClaimed); err != nil {
			return nil, refuse(ReasonClaimPayload, at+"totalClaimed: "+err.Error())
		}
		if c.TotalClaimed.Cmp(c.MaxClaimableAmount) > 0 {
			return nil, refuse(ReasonClaimPayload, at+"totalClaimed: above the voucher's maxClaimableAmount")
		}
		if c.Signature, err = parseSignature(r.Signature); err != nil {
			return nil, refuse(ReasonClaimPayload, at+"signature: "+err.Error())
		}
		out[i] = c
	}
	return out, nil
}

// retag gives a ParseChannelConfig refusal the payload's reason (unless it
// has a reason of its own) and the field's path.
func retag(err error, reason, prefix string) error {
	e, ok := err.(*Error)
	if !ok {
		return err
	}
	out := &Error{Reason: e.Reason, Msg: prefix + e.Msg}
	if out.Reason == "" {
		out.Reason = reason
	}
	return out
}

// parseAmount parses a decimal uint128.
func parseAmount(s string) (*big.Int, error) {
	w, ok := wire.ParseUint256(s)
	if !ok {
		return nil, fmt.Errorf("must be a decimal integer, got %q", wire.Clip(s, 40))
	}
	v := new(big.Int).SetBytes(w[:])
	if v.BitLen() > 128 {
		return nil, fmt.Errorf("must be below 2^128")
	}
	return v, nil
}

// parseUint256 parses a uint256 written in decimal or as 0x + 1 to 64 hex
// digits.
func parseUint256(s string) (*big.Int, error) {
	if len(s) > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X') {
		h := s[2:]
		if len(h) > 64 {
			return nil, fmt.Errorf("must fit in 256 bits")
		}
		if len(h)%2 == 1 {
			h = "0" + h
		}
		b, err := hex.DecodeString(h)
		if err != nil {
			return nil, fmt.Errorf("must be 0x-hex or decimal, got %q", wire.Clip(s, 40))
		}
		return new(big.Int).SetBytes(b), nil
	}
	w, ok := wire.ParseUint256(s)
	if !ok {
		return nil, fmt.Errorf("must be a decimal integer below 2^256 or 0x-hex, got %q", wire.Clip(s, 40))
	}
	return new(big.Int).SetBytes(w[:]), nil
}

// parseSignature decodes 0x-hex bytes: 1 to MaxSignatureBytes of them.
func parseSignature(s string) ([]byte, error) {
	if len(s) < 4 || s[0] != '0' || s[1] != 'x' || len(s)%2 != 0 {
		return nil, fmt.Errorf("must be 0x followed by an even number of hex digits")
	}
	if (len(s)-2)/2 > MaxSignatureBytes {
		return nil, fmt.Errorf("longer than %d bytes", MaxSignatureBytes)
	}
	b, err := hex.DecodeString(s[2:])
	if err != nil {
		return nil, fmt.Errorf("must be 0x followed by hex digits")
	}
	return b, nil
}

// hexBytes is b as 0x-hex.
func hexBytes(b []byte) string { return "0x" + hex.EncodeToString(b) }

// decodeJSON decodes raw into v with the package's JSON rules, for the
// payloads a facilitator receives.
func decodeJSON(raw []byte, v any, reason, what string) error {
	if err := wire.Unmarshal(raw, v); err != nil {
		return refuse(reason, what+": "+wire.JSONErrorSummary(err))
	}
	return nil
}

// ParseClaimPayload decodes a claim payload and its rows.
func ParseClaimPayload(raw []byte) (ClaimPayload, []Claim, error) {
	var p ClaimPayload
	if err := decodeJSON(raw, &p, ReasonClaimPayload, "claim payload"); err != nil {
		return p, nil, err
	}
	if p.Type != TypeClaim {
		return p, nil, refuse(ReasonPayloadType, fmt.Sprintf("type %q is not claim", wire.Clip(p.Type, 20)))
	}
	claims, err := ParseClaims(p.Claims)
	if err != nil {
		return p, nil, err
	}
	if p.ClaimAuthorizerSignature != "" {
		if _, err := parseSignature(p.ClaimAuthorizerSignature); err != nil {
			return p, nil, refuse(ReasonClaimPayload, "claimAuthorizerSignature: "+err.Error())
		}
	}
	return p, claims, nil
}

// ParseSettlePayload decodes a settle payload: its receiver and token.
func ParseSettlePayload(raw []byte) (receiver, token common.Address, err error) {
	var p SettlePayload
	if err := decodeJSON(raw, &p, ReasonSettlePayload, "settle payload"); err != nil {
		return receiver, token, err
	}
	if p.Type != TypeSettle {
		return receiver, token, refuse(ReasonPayloadType, fmt.Sprintf("type %q is not settle", wire.Clip(p.Type, 20)))
	}
	var ok bool
	if receiver, ok = wire.ParseAddress(p.Receiver); !ok || receiver == (common.Address{}) {
		return receiver, token, refuse(ReasonSettlePayload, "receiver: must be a non-zero address")
	}
	if token, ok = wire.ParseAddress(p.Token); !ok || token == (common.Address{}) {
		return receiver, token, refuse(ReasonSettlePayload, "token: must be a non-zero address")
	}
	return receiver, token, nil
}

// PayloadType reads the "type" member of a payload without decoding the
// rest ("" when raw is not an object with a string type).
func PayloadType(raw json.RawMessage) string {
	var t struct {
		Type string `json:"type"`
	}
	if wire.Unmarshal(raw, &t) != nil {
		return ""
	}
	return t.Type
}

package batch

import (
	"crypto/ecdsa"
	"crypto/rand"
	"errors"
	"fmt"
	"math/big"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"

	"github.com/seed1284c1d2/svc/x402"
	"github.com/seed1284c1d2/svc/x402/exact"
	"github.com/seed1284c1d2/svc/x402/internal/wire"
)

// NewChannel returns the channel a payer opens to pay req: receiver =
// payTo, receiver authorizer and withdrawal delay from req's extra, token
// = asset, the payer (and its voucher-signing authorizer) the key's
// address, and salt (the zero salt is the reference clients' default).
func NewChannel(payer *ecdsa.PrivateKey, req x402.PaymentRequirements, salt common.Hash) (Channel, Extra, error) {
	if payer == nil {
		return Channel{}, Extra{}, errors.New("x402 batch-settlement: new channel: nil key")
	}
	if req.Scheme != Scheme {
		return Channel{}, Extra{}, fmt.Errorf("x402 batch-settlement: new channel: scheme %q is not %s", req.Scheme, Scheme)
	}
	extra, err := ParseExtra(req.Extra)
	if err != nil {
		return Channel{}, Extra{}, err
	}
	addr := crypto.PubkeyToAddress(payer.PublicKey)
	ch := Channel{Payer: addr, PayerAuthorizer: addr, WithdrawDelay: extra.WithdrawDelay, Salt: salt}
	ch.ReceiverAuthorizer = common.HexToAddress(extra.ReceiverAuthorizer)
	var ok bool
	if ch.Receiver, ok = parseNonZero(req.PayTo); !ok {
		return Channel{}, Extra{}, errors.New("x402 batch-settlement: new channel: payTo is not a non-zero address")
	}
	if ch.Token, ok = parseNonZero(req.Asset); !ok {
		return Channel{}, Extra{}, errors.New("x402 batch-settlement: new channel: asset is not a non-zero address")
	}
	return ch, extra, nil
}

// NewVoucherPayload signs a voucher of ch with ceiling maxClaimable under
// d with the payer authorizer's key.
func NewVoucherPayload(key *ecdsa.PrivateKey, d Domain, ch Channel, maxClaimable *big.Int) (Payload, error) {
	return newPayload(TypeVoucher, key, d, ch, maxClaimable)
}

// NewRefundPayload signs the zero-charge voucher of a refund (ceiling =
// the charged cumulative amount) and asks for amount, or for everything
// unclaimed when amount is nil.
func NewRefundPayload(key *ecdsa.PrivateKey, d Domain, ch Channel, charged, amount *big.Int) (Payload, error) {
	p, err := newPayload(TypeRefund, key, d, ch, charged)
	if err != nil {
		return p, err
	}
	if amount != nil {
		if amount.Sign() <= 0 {
			return p, errors.New("x402 batch-settlement: refund amount must be positive")
		}
		p.Amount = amount.String()
	}
	return p, nil
}

// NewDepositPayload signs a deposit of amount into ch (an EIP-3009
// ReceiveWithAuthorization under the token's domain from req's extra,
// valid from 0 until now + req.MaxTimeoutSeconds, with a random salt) and
// the voucher with ceiling maxClaimable, both with the payer's key (the
// payer is its own payer authorizer).
func NewDepositPayload(key *ecdsa.PrivateKey, req x402.PaymentRequirements, ch Channel, maxClaimable, amount *big.Int, now time.Time) (Payload, error) {
	n, ok := x402.LookupNetwork(req.Network)
	if !ok {
		return Payload{}, fmt.Errorf("%w %q", x402.ErrUnknownNetwork, req.Network)
	}
	extra, err := ParseExtra(req.Extra)
	if err != nil {
		return Payload{}, err
	}
	if amount == nil || amount.Sign() <= 0 || amount.BitLen() > 128 {
		return Payload{}, errors.New("x402 batch-settlement: deposit amount must be positive and below 2^128")
	}
	secs := req.MaxTimeoutSeconds
	if secs <= 0 {
		secs = x402.DefaultMaxTimeoutSeconds
	}
	var salt common.Hash
	if _, err := rand.Read(salt[:]); err != nil {
		return Payload{}, fmt.Errorf("x402 batch-settlement: salt: %w", err)
	}
	d := NewDomain(n.ChainID)
	dep := ERC3009Deposit{Amount: amount, ValidAfter: new(big.Int), ValidBefore: big.NewInt(now.Unix() + int64(secs)), Salt: salt.Big()}
	token := exact.EIP712Domain{Name: extra.Name, Version: extra.Version, ChainID: n.ChainID, VerifyingContract: ch.Token}
	if err := SignDeposit(key, token, d.ChannelID(ch), &dep); err != nil {
		return Payload{}, err
	}
	p, err := newPayload(TypeDeposit, key, d, ch, maxClaimable)
	if err != nil {
		return p, err
	}
	p.Deposit = dep.wire()
	return p, nil
}

// newPayload signs the voucher of a payload of type typ.
func newPayload(typ string, key *ecdsa.PrivateKey, d Domain, ch Channel, maxClaimable *big.Int) (Payload, error) {
	if maxClaimable == nil || maxClaimable.Sign() < 0 || maxClaimable.BitLen() > 128 {
		return Payload{}, errors.New("x402 batch-settlement: the voucher's ceiling must be a uint128")
	}
	id := d.ChannelID(ch)
	sig, err := d.SignVoucher(key, id, maxClaimable)
	if err != nil {
		return Payload{}, err
	}
	return Payload{Type: typ, ChannelConfig: ch.Config(), Voucher: Voucher{ChannelID: id.Hex(), MaxClaimableAmount: maxClaimable.String(), Signature: sig}}, nil
}

// parseNonZero parses a non-zero address.
func parseNonZero(s string) (common.Address, bool) {
	a, ok := wire.ParseAddress(s)
	return a, ok && a != (common.Address{})
}

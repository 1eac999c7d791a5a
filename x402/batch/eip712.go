package batch

import (
	"crypto/ecdsa"
	"errors"
	"fmt"
	"math/big"
	"sync"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"

	"github.com/seed1284c1d2/svc/x402/exact"
	"github.com/seed1284c1d2/svc/x402/internal/wire"
)

// EIP-712 names of the escrow's domain and the type strings of its
// messages.
const (
	DomainName          = "x402 Batch Settlement"
	DomainVersion       = "1"
	ChannelConfigType   = "ChannelConfig(address payer,address payerAuthorizer,address receiver,address receiverAuthorizer,address token,uint40 withdrawDelay,bytes32 salt)"
	VoucherType         = "Voucher(bytes32 channelId,uint128 maxClaimableAmount)"
	RefundType          = "Refund(bytes32 channelId,uint256 nonce,uint128 amount)"
	ClaimEntryType      = "ClaimEntry(bytes32 channelId,uint128 maxClaimableAmount,uint128 totalClaimed)"
	ClaimBatchType      = "ClaimBatch(ClaimEntry[] claims)" + ClaimEntryType
	ReceiveWithAuthType = "ReceiveWithAuthorization(address from,address to,uint256 value,uint256 validAfter,uint256 validBefore,bytes32 nonce)"
)

// Domain is the escrow's EIP-712 domain on one chain: {name DomainName,
// version DomainVersion, chainId, verifyingContract}. Build it with
// NewDomain; its separator is computed once.
type Domain struct {
	ChainID  int64
	Contract common.Address
	sep      common.Hash
}

// NewDomain returns the domain of the escrow at SettlementAddress on
// chainID.
func NewDomain(chainID int64) Domain {
	return NewDomainAt(chainID, common.HexToAddress(SettlementAddress))
}

// NewDomainAt returns the domain of an escrow deployed at contract.
func NewDomainAt(chainID int64, contract common.Address) Domain {
	d := exact.EIP712Domain{Name: DomainName, Version: DomainVersion, ChainID: chainID, VerifyingContract: contract}
	return Domain{ChainID: chainID, Contract: contract, sep: d.Separator()}
}

// Separator returns the domain separator.
func (d Domain) Separator() common.Hash { return d.sep }

// digest is the EIP-712 digest of structHash under d.
func (d Domain) digest(structHash common.Hash) common.Hash {
	return wire.TypedDataDigest(d.sep, structHash)
}

// word returns v (non-negative, below 2^256) as a 32-byte big-endian word.
func word(v *big.Int) []byte {
	var w [32]byte
	v.FillBytes(w[:])
	return w[:]
}

// addrWord returns a left-padded to 32 bytes.
func addrWord(a common.Address) []byte {
	var w [32]byte
	copy(w[12:], a[:])
	return w[:]
}

// hashWords is keccak256 of the concatenated words.
func hashWords(words ...[]byte) common.Hash { return crypto.Keccak256Hash(words...) }

// typeHashes caches keccak256 of the type strings (immutable once
// computed).
var typeHashes = sync.OnceValue(func() map[string][]byte {
	m := make(map[string][]byte, 6)
	for _, t := range []string{ChannelConfigType, VoucherType, RefundType, ClaimEntryType, ClaimBatchType, ReceiveWithAuthType} {
		m[t] = crypto.Keccak256([]byte(t))
	}
	return m
})

// typeHash is keccak256 of one of the package's EIP-712 type strings.
func typeHash(t string) []byte { return typeHashes()[t] }

// StructHash returns the EIP-712 struct hash of the channel's
// configuration.
func (c Channel) StructHash() common.Hash {
	return hashWords(typeHash(ChannelConfigType), addrWord(c.Payer), addrWord(c.PayerAuthorizer), addrWord(c.Receiver),
		addrWord(c.ReceiverAuthorizer), addrWord(c.Token), word(new(big.Int).SetUint64(c.WithdrawDelay)), c.Salt[:])
}

// ChannelID returns the channel's id: the EIP-712 digest of its
// configuration under d (so the same configuration has another id on
// another chain or escrow).
func (d Domain) ChannelID(c Channel) common.Hash { return d.digest(c.StructHash()) }

// VoucherDigest returns the digest a payer authorizer signs for a voucher
// of channelID with ceiling maxClaimable.
func (d Domain) VoucherDigest(channelID common.Hash, maxClaimable *big.Int) common.Hash {
	return d.digest(hashWords(typeHash(VoucherType), channelID[:], word(maxClaimable)))
}

// RefundDigest returns the digest a receiver authorizer signs to refund
// amount from channelID with the channel's refund nonce.
func (d Domain) RefundDigest(channelID common.Hash, nonce, amount *big.Int) common.Hash {
	return d.digest(hashWords(typeHash(RefundType), channelID[:], word(nonce), word(amount)))
}

// ClaimEntry is one row of a ClaimBatch message.
type ClaimEntry struct {
	ChannelID          common.Hash
	MaxClaimableAmount *big.Int
	TotalClaimed       *big.Int
}

// ClaimEntries returns the ClaimBatch rows of claims under d.
func (d Domain) ClaimEntries(claims []Claim) []ClaimEntry {
	out := make([]ClaimEntry, len(claims))
	for i, c := range claims {
		out[i] = ClaimEntry{ChannelID: d.ChannelID(c.Channel), MaxClaimableAmount: c.MaxClaimableAmount, TotalClaimed: c.TotalClaimed}
	}
	return out
}

// ClaimBatchDigest returns the digest a receiver authorizer signs for a
// claimWithSignature of these rows (in order).
func (d Domain) ClaimBatchDigest(entries []ClaimEntry) common.Hash {
	entryType := typeHash(ClaimEntryType)
	hashes := make([]byte, 0, 32*len(entries))
	for _, e := range entries {
		h := hashWords(entryType, e.ChannelID[:], word(e.MaxClaimableAmount), word(e.TotalClaimed))
		hashes = append(hashes, h[:]...)
	}
	return d.digest(hashWords(typeHash(ClaimBatchType), crypto.Keccak256(hashes)))
}

// sign signs digest with key: r ‖ s ‖ v, v 27 or 28 (deterministic,
// RFC 6979).
func sign(key *ecdsa.PrivateKey, digest common.Hash) ([]byte, error) {
	if key == nil {
		return nil, errors.New("x402 batch-settlement: sign: nil key")
	}
	sig, err := crypto.Sign(digest[:], key)
	if err != nil {
		return nil, fmt.Errorf("x402 batch-settlement: sign: %w", err)
	}
	sig[64] += 27
	return sig, nil
}

// SignVoucher signs a voucher with the payer authorizer's key and returns
// the signature as 0x-hex.
func (d Domain) SignVoucher(key *ecdsa.PrivateKey, channelID common.Hash, maxClaimable *big.Int) (string, error) {
	sig, err := sign(key, d.VoucherDigest(channelID, maxClaimable))
	if err != nil {
		return "", err
	}
	return hexBytes(sig), nil
}

// SignClaimBatch signs a claim batch with the receiver authorizer's key
// and returns the signature as 0x-hex.
func (d Domain) SignClaimBatch(key *ecdsa.PrivateKey, entries []ClaimEntry) (string, error) {
	sig, err := sign(key, d.ClaimBatchDigest(entries))
	if err != nil {
		return "", err
	}
	return hexBytes(sig), nil
}

// SignRefund signs a refund with the receiver authorizer's key and
// returns the signature as 0x-hex.
func (d Domain) SignRefund(key *ecdsa.PrivateKey, channelID common.Hash, nonce, amount *big.Int) (string, error) {
	sig, err := sign(key, d.RefundDigest(channelID, nonce, amount))
	if err != nil {
		return "", err
	}
	return hexBytes(sig), nil
}

// VoucherSigner recovers the address that signed a voucher (65-byte
// ECDSA signature, low s).
func (d Domain) VoucherSigner(channelID common.Hash, maxClaimable *big.Int, sig []byte) (common.Address, error) {
	digest := d.VoucherDigest(channelID, maxClaimable)
	return exact.RecoverSigner(digest[:], sig)
}

// ErrNeedsEIP1271 is returned by VerifyVoucher for a channel without a
// payer authorizer: its vouchers are the payer's, possibly a contract's
// (ERC-1271), which only the chain can check (the facilitator's verify).
var ErrNeedsEIP1271 = errors.New("x402 batch-settlement: the channel has no payer authorizer: its vouchers are checked on chain (ERC-1271)")

// VerifyVoucher checks, with one ECDSA recovery and no chain access, that
// p's voucher is signed by its channel's payer authorizer over p's
// channel id and ceiling. The id itself is Check's. A channel without a
// payer authorizer gives ErrNeedsEIP1271; a wrong or malformed signature
// an *Error with ReasonVoucherSignature.
func (d Domain) VerifyVoucher(p Payment) error {
	if p.Channel.PayerAuthorizer == (common.Address{}) {
		return ErrNeedsEIP1271
	}
	signer, err := d.VoucherSigner(p.ChannelID, p.MaxClaimableAmount, p.Signature)
	if err != nil {
		return refuse(ReasonVoucherSignature, "voucher signature: "+err.Error())
	}
	if signer != p.Channel.PayerAuthorizer {
		return refuse(ReasonVoucherSignature, "voucher signature: signed by "+signer.Hex()+", not the channel's payer authorizer "+p.Channel.PayerAuthorizer.Hex())
	}
	return nil
}

// DepositNonce returns the EIP-3009 nonce of a deposit into channelID:
// keccak256(abi.encode(channelId, salt)). It binds the payer's
// authorization to one channel.
func DepositNonce(channelID common.Hash, salt *big.Int) common.Hash {
	return hashWords(channelID[:], word(salt))
}

// ReceiveAuthorizationDigest returns the digest the payer signs to
// deposit value into channelID: an EIP-3009 ReceiveWithAuthorization
// under the token's domain, from payer to the deposit collector
// (ERC3009CollectorAddress) with nonce DepositNonce(channelID, salt).
func ReceiveAuthorizationDigest(token exact.EIP712Domain, payer common.Address, channelID common.Hash, dep ERC3009Deposit) common.Hash {
	nonce := DepositNonce(channelID, dep.Salt)
	sh := hashWords(typeHash(ReceiveWithAuthType), addrWord(payer), addrWord(common.HexToAddress(ERC3009CollectorAddress)),
		word(dep.Amount), word(dep.ValidAfter), word(dep.ValidBefore), nonce[:])
	return wire.TypedDataDigest(token.Separator(), sh)
}

// SignDeposit signs dep's ReceiveWithAuthorization with the payer's key
// and sets dep.Signature.
func SignDeposit(key *ecdsa.PrivateKey, token exact.EIP712Domain, channelID common.Hash, dep *ERC3009Deposit) error {
	if key == nil {
		return errors.New("x402 batch-settlement: sign: nil key")
	}
	sig, err := sign(key, ReceiveAuthorizationDigest(token, crypto.PubkeyToAddress(key.PublicKey), channelID, *dep))
	if err != nil {
		return err
	}
	dep.Signature = sig
	return nil
}

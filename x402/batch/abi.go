package batch

import (
	_ "embed"
	"fmt"
	"math/big"
	"strings"
	"sync"

	"github.com/ethereum/go-ethereum/accounts/abi"
	"github.com/ethereum/go-ethereum/common"
)

// settlementABIJSON is the ABI of the escrow's functions and events that
// payers, servers and facilitators use.
//
//go:embed settlement.abi.json
var settlementABIJSON string

// parsedABI parses settlementABIJSON once (immutable afterwards).
var parsedABI = sync.OnceValues(func() (abi.ABI, error) {
	return abi.JSON(strings.NewReader(settlementABIJSON))
})

// SettlementABI returns the escrow's ABI: deposit, claim,
// claimWithSignature, settle, initiateWithdraw, finalizeWithdraw, refund,
// refundWithSignature, multicall, the views channels, pendingWithdrawals,
// refundNonce, receivers, getChannelId, getVoucherDigest,
// getRefundDigest and getClaimBatchDigest, and the events.
func SettlementABI() abi.ABI {
	a, err := parsedABI()
	if err != nil {
		panic("x402 batch-settlement: the embedded ABI does not parse: " + err.Error()) // a build defect, caught by the tests
	}
	return a
}

// abiChannel is a Channel in the ABI's tuple shape.
type abiChannel struct {
	Payer              common.Address
	PayerAuthorizer    common.Address
	Receiver           common.Address
	ReceiverAuthorizer common.Address
	Token              common.Address
	WithdrawDelay      *big.Int
	Salt               [32]byte
}

func toABIChannel(c Channel) abiChannel {
	return abiChannel{c.Payer, c.PayerAuthorizer, c.Receiver, c.ReceiverAuthorizer, c.Token, new(big.Int).SetUint64(c.WithdrawDelay), c.Salt}
}

type abiVoucher struct {
	Channel            abiChannel
	MaxClaimableAmount *big.Int
}

type abiVoucherClaim struct {
	Voucher      abiVoucher
	Signature    []byte
	TotalClaimed *big.Int
}

func toABIClaims(claims []Claim) []abiVoucherClaim {
	out := make([]abiVoucherClaim, len(claims))
	for i, c := range claims {
		out[i] = abiVoucherClaim{Voucher: abiVoucher{Channel: toABIChannel(c.Channel), MaxClaimableAmount: c.MaxClaimableAmount}, Signature: c.Signature, TotalClaimed: c.TotalClaimed}
	}
	return out
}

// pack packs a call of the escrow.
func pack(method string, args ...any) ([]byte, error) {
	a := SettlementABI()
	data, err := a.Pack(method, args...)
	if err != nil {
		return nil, fmt.Errorf("x402 batch-settlement: pack %s: %w", method, err)
	}
	return data, nil
}

// CollectorData is the deposit collector's data for an EIP-3009 deposit:
// abi.encode(validAfter, validBefore, salt, signature).
func CollectorData(dep ERC3009Deposit) ([]byte, error) {
	u256, _ := abi.NewType("uint256", "", nil)
	bs, _ := abi.NewType("bytes", "", nil)
	args := abi.Arguments{{Type: u256}, {Type: u256}, {Type: u256}, {Type: bs}}
	data, err := args.Pack(dep.ValidAfter, dep.ValidBefore, dep.Salt, dep.Signature)
	if err != nil {
		return nil, fmt.Errorf("x402 batch-settlement: collector data: %w", err)
	}
	return data, nil
}

// DepositCalldata is the calldata of deposit(config, amount, collector,
// collectorData) for an EIP-3009 deposit through ERC3009CollectorAddress.
func DepositCalldata(ch Channel, dep ERC3009Deposit) ([]byte, error) {
	cd, err := CollectorData(dep)
	if err != nil {
		return nil, err
	}
	return pack("deposit", toABIChannel(ch), dep.Amount, common.HexToAddress(ERC3009CollectorAddress), cd)
}

// ClaimWithSignatureCalldata is the calldata of
// claimWithSignature(claims, authorizerSignature).
func ClaimWithSignatureCalldata(claims []Claim, authorizerSig []byte) ([]byte, error) {
	return pack("claimWithSignature", toABIClaims(claims), authorizerSig)
}

// SettleCalldata is the calldata of settle(receiver, token).
func SettleCalldata(receiver, token common.Address) ([]byte, error) {
	return pack("settle", receiver, token)
}

// RefundWithSignatureCalldata is the calldata of
// refundWithSignature(config, amount, nonce, signature).
func RefundWithSignatureCalldata(ch Channel, amount, nonce *big.Int, authorizerSig []byte) ([]byte, error) {
	return pack("refundWithSignature", toABIChannel(ch), amount, nonce, authorizerSig)
}

// InitiateWithdrawCalldata is the calldata of initiateWithdraw(config,
// amount), the payer's escape hatch.
func InitiateWithdrawCalldata(ch Channel, amount *big.Int) ([]byte, error) {
	return pack("initiateWithdraw", toABIChannel(ch), amount)
}

// FinalizeWithdrawCalldata is the calldata of finalizeWithdraw(config).
func FinalizeWithdrawCalldata(ch Channel) ([]byte, error) {
	return pack("finalizeWithdraw", toABIChannel(ch))
}

// MulticallCalldata is the calldata of multicall(calls): the escrow runs
// them in order in one transaction (for example a claim and a refund).
func MulticallCalldata(calls ...[]byte) ([]byte, error) {
	return pack("multicall", calls)
}

// OnChain is a channel's on-chain state, as the escrow's views report it.
type OnChain struct {
	Balance             *big.Int
	TotalClaimed        *big.Int
	WithdrawAmount      *big.Int
	WithdrawRequestedAt uint64
	RefundNonce         *big.Int
}

// ChannelViewCalls are the calldata of channels(id), pendingWithdrawals(id)
// and refundNonce(id), in that order, for one batched read.
func ChannelViewCalls(channelID common.Hash) ([3][]byte, error) {
	var out [3][]byte
	for i, m := range []string{"channels", "pendingWithdrawals", "refundNonce"} {
		data, err := pack(m, channelID)
		if err != nil {
			return out, err
		}
		out[i] = data
	}
	return out, nil
}

// DecodeChannelViews decodes the answers to ChannelViewCalls.
func DecodeChannelViews(results [3][]byte) (OnChain, error) {
	a := SettlementABI()
	var st OnChain
	ch, err := a.Unpack("channels", results[0])
	if err != nil || len(ch) != 2 {
		return st, fmt.Errorf("x402 batch-settlement: decode channels: %v", err)
	}
	wd, err := a.Unpack("pendingWithdrawals", results[1])
	if err != nil || len(wd) != 2 {
		return st, fmt.Errorf("x402 batch-settlement: decode pendingWithdrawals: %v", err)
	}
	rn, err := a.Unpack("refundNonce", results[2])
	if err != nil || len(rn) != 1 {
		return st, fmt.Errorf("x402 batch-settlement: decode refundNonce: %v", err)
	}
	st.Balance, _ = ch[0].(*big.Int)
	st.TotalClaimed, _ = ch[1].(*big.Int)
	st.WithdrawAmount, _ = wd[0].(*big.Int)
	at, _ := wd[1].(*big.Int)
	st.RefundNonce, _ = rn[0].(*big.Int)
	if st.Balance == nil || st.TotalClaimed == nil || st.WithdrawAmount == nil || at == nil || st.RefundNonce == nil {
		return st, fmt.Errorf("x402 batch-settlement: decode channel views: unexpected types")
	}
	st.WithdrawRequestedAt = at.Uint64()
	return st, nil
}

// State returns the snapshot of the channel as a ChannelState (without a
// charged amount).
func (o OnChain) State(channelID common.Hash) ChannelState {
	return ChannelState{ChannelID: channelID.Hex(), Balance: o.Balance.String(), TotalClaimed: o.TotalClaimed.String(),
		WithdrawRequestedAt: o.WithdrawRequestedAt, RefundNonce: o.RefundNonce.String()}
}

// ChannelIDCalldata is the calldata of the view getChannelId(config).
func ChannelIDCalldata(ch Channel) ([]byte, error) {
	return pack("getChannelId", toABIChannel(ch))
}

// ClaimBatchDigestCalldata is the calldata of the view
// getClaimBatchDigest(claims).
func ClaimBatchDigestCalldata(claims []Claim) ([]byte, error) {
	return pack("getClaimBatchDigest", toABIClaims(claims))
}

// ClaimCalldata is the calldata of claim(claims), sent by the receiver or
// the receiver authorizer itself (no authorizer signature).
func ClaimCalldata(claims []Claim) ([]byte, error) {
	return pack("claim", toABIClaims(claims))
}

// RefundCalldata is the calldata of refund(config, amount), sent by the
// receiver or the receiver authorizer itself (no signature).
func RefundCalldata(ch Channel, amount *big.Int) ([]byte, error) {
	return pack("refund", toABIChannel(ch), amount)
}

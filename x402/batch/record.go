package batch

import (
	"math/big"
	"time"

	"github.com/ethereum/go-ethereum/common"
)

// ChannelRecord is a receiver's state of one channel, the scheme's
// per-channel table: what the server charged, the latest voucher the payer
// signed, and a mirror of the escrow's view of the channel. A resource
// server keeps one per channel it was paid through; its claimer claims
// Charged with the latest voucher.
type ChannelRecord struct {
	// Network is the CAIP-2 id of the channel's chain.
	Network string
	// ID is the channel id (Domain.ChannelID of Channel).
	ID common.Hash
	// Channel is the channel's configuration.
	Channel Channel
	// Charged is chargedCumulativeAmount: the sum of every charge the
	// server answered for.
	Charged *big.Int
	// SignedMax is the maxClaimableAmount of the latest voucher the payer
	// signed (never below Charged), and Signature that voucher's signature.
	SignedMax *big.Int
	Signature []byte
	// OnChain mirrors the escrow's view of the channel (balance,
	// totalClaimed, pending withdrawal, refund nonce) as of SyncedAt.
	OnChain  OnChain
	SyncedAt time.Time
	// LastRequestAt is when the last paid request was charged.
	LastRequestAt time.Time
}

// Unclaimed is what the receiver charged and has not claimed yet
// (Charged - OnChain.TotalClaimed, never negative).
func (r ChannelRecord) Unclaimed() *big.Int {
	out := new(big.Int)
	if r.Charged == nil {
		return out
	}
	out.Set(r.Charged)
	if r.OnChain.TotalClaimed != nil {
		out.Sub(out, r.OnChain.TotalClaimed)
	}
	if out.Sign() < 0 {
		out.SetInt64(0)
	}
	return out
}

// State returns r's snapshot as payment responses and corrective 402s
// carry it (the mirrored escrow view and the charged amount).
func (r ChannelRecord) State() ChannelState {
	cs := ChannelState{ChannelID: r.ID.Hex(), Balance: "0", TotalClaimed: "0", RefundNonce: "0",
		WithdrawRequestedAt: r.OnChain.WithdrawRequestedAt, ChargedCumulativeAmount: "0"}
	if r.OnChain.Balance != nil {
		cs.Balance = r.OnChain.Balance.String()
	}
	if r.OnChain.TotalClaimed != nil {
		cs.TotalClaimed = r.OnChain.TotalClaimed.String()
	}
	if r.OnChain.RefundNonce != nil {
		cs.RefundNonce = r.OnChain.RefundNonce.String()
	}
	if r.Charged != nil {
		cs.ChargedCumulativeAmount = r.Charged.String()
	}
	return cs
}

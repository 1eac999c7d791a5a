package claimer

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"sort"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"

	"github.com/seed1284c1d2/svc/x402/batch"
)

// RefundOptions selects the channels Refund returns to their payers.
type RefundOptions struct {
	// IdleFor selects the channels not charged for at least that long (a
	// channel whose charges are all claimed counts from its last claim).
	// Zero selects every channel (with Channel set: that one).
	IdleFor time.Duration
	// Channel, when set, limits the refund to that channel.
	Channel *common.Hash
	// DryRun computes what would be claimed and refunded and changes
	// nothing.
	DryRun bool
	// Limit bounds the channels considered (DefaultScanLimit when zero).
	Limit int
}

// RefundResult is the outcome of one channel's refund.
type RefundResult struct {
	ChannelID common.Hash
	Payer     common.Address
	// LastActivity is the channel's last charge (or last claim).
	LastActivity time.Time
	// Unclaimed is what was charged and not claimed before the refund
	// (claimed first); Refund what is (or, dry, would be) returned.
	Unclaimed *big.Int
	Refund    *big.Int
	// Tx is the refund's transaction, GasUsed its gas.
	Tx      string
	GasUsed uint64
	// Err says why the channel was not refunded (nil: refunded, or
	// nothing to refund).
	Err error
}

// refundCandidate is a channel Refund considers.
type refundCandidate struct {
	id           common.Hash
	channel      batch.Channel
	signedMax    *big.Int
	signature    []byte
	charged      *big.Int
	lastActivity time.Time
}

// Refund returns the unclaimed balance of idle channels to their payers:
// it claims what they were charged first (as ClaimNow does, through the
// claim log), then asks the facilitator for a refundWithSignature of the
// rest of each, signed by the receiver authorizer with the channel's
// refund nonce. Channels come from the channel store (those with unclaimed
// charges) and from the claim log (those claimed before). A refund that
// fails is reported in its result and the others go on; the error is for
// what stops them all.
func (c *Claimer) Refund(ctx context.Context, opt RefundOptions) ([]RefundResult, error) {
	if c.cfg.AuthorizerKey == nil {
		return nil, ErrNoKey
	}
	if c.cfg.Facilitator == nil && !opt.DryRun {
		return nil, ErrNoFacilitator
	}
	if opt.IdleFor < 0 {
		return nil, errors.New("claimer: refund: IdleFor must not be negative")
	}
	limit := opt.Limit
	if limit <= 0 {
		limit = DefaultScanLimit
	}
	cands, err := c.refundCandidates(ctx, opt, limit)
	if err != nil {
		return nil, err
	}
	if len(cands) == 0 {
		return nil, nil
	}
	ids := make([]common.Hash, len(cands))
	only := map[common.Hash]bool{}
	for i, cd := range cands {
		ids[i] = cd.id
		only[cd.id] = true
	}
	views, err := c.rd.views(ctx, ids)
	if err != nil {
		return nil, err
	}
	results := make([]RefundResult, len(cands))
	for i, cd := range cands {
		v := views[cd.id]
		res := RefundResult{ChannelID: cd.id, Payer: cd.channel.Payer, LastActivity: cd.lastActivity, Unclaimed: new(big.Int), Refund: new(big.Int)}
		target := claimTarget(batch.ChannelRecord{Charged: cd.charged, SignedMax: cd.signedMax, OnChain: v})
		if target.Cmp(v.TotalClaimed) > 0 {
			res.Unclaimed.Sub(target, v.TotalClaimed)
		} else {
			target.Set(v.TotalClaimed)
		}
		res.Refund.Sub(v.Balance, target)
		if res.Refund.Sign() < 0 {
			res.Refund.SetInt64(0)
		}
		results[i] = res
	}
	if opt.DryRun {
		return results, nil
	}
	// Claim first: the refund must not return what was charged.
	if _, err := c.pass(ctx, true, only); err != nil {
		return results, fmt.Errorf("claimer: refund: claim the charges first: %w", err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	views, err = c.rd.views(ctx, ids)
	if err != nil {
		return results, err
	}
	for i, cd := range cands {
		res := &results[i]
		v := views[cd.id]
		if cd.charged != nil && v.TotalClaimed.Cmp(cd.charged) < 0 && v.Balance.Cmp(cd.charged) >= 0 {
			res.Err = fmt.Errorf("its charges (%s) are not all claimed (%s on chain)", cd.charged, v.TotalClaimed)
			res.Refund.SetInt64(0)
			continue
		}
		left := new(big.Int).Sub(v.Balance, v.TotalClaimed)
		res.Refund.Set(left)
		if left.Sign() <= 0 {
			res.Refund.SetInt64(0)
			continue
		}
		res.Tx, res.GasUsed, res.Err = c.refundOne(ctx, cd, v, left)
		if res.Err != nil {
			res.Refund.SetInt64(0)
		}
	}
	return results, nil
}

// refundOne asks the facilitator to refund left from one channel.
func (c *Claimer) refundOne(ctx context.Context, cd refundCandidate, v batch.OnChain, left *big.Int) (string, uint64, error) {
	sig, err := c.domain.SignRefund(c.cfg.AuthorizerKey, cd.id, v.RefundNonce, left)
	if err != nil {
		return "", 0, err
	}
	payload := batch.RefundSettlement{Type: batch.TypeRefund, ChannelConfig: cd.channel.Config(),
		Voucher: batch.Voucher{ChannelID: cd.id.Hex(), MaxClaimableAmount: cd.signedMax.String(), Signature: hexutil.Encode(cd.signature)},
		Amount:  left.String(), RefundNonce: v.RefundNonce.String(), Claims: []batch.VoucherClaim{}, RefundAuthorizerSignature: sig}
	resp, err := c.settle(ctx, cd.channel, payload)
	if err != nil {
		return "", 0, fmt.Errorf("refund: %w", err)
	}
	if !resp.Success {
		return resp.Transaction, 0, fmt.Errorf("refund refused: %s", clip(resp.ErrorReason+": "+resp.ErrorMessage))
	}
	gas := c.rd.gasUsed(ctx, resp.Transaction)
	c.m.gas.WithLabelValues(c.cfg.Network, "refund").Add(float64(gas))
	after, err := c.rd.views(ctx, []common.Hash{cd.id})
	if err == nil {
		_ = c.cfg.Channels.Mirror(ctx, c.cfg.Network, cd.id, after[cd.id], c.cfg.Now())
	}
	c.log.Info("batch claimer: refunded an idle channel", "channel", cd.id.Hex(), "payer", cd.channel.Payer.Hex(), "amount", left.String(), "tx", resp.Transaction, "gas", gas)
	return resp.Transaction, gas, nil
}

// refundCandidates merges the channel store's claimable channels and the
// log's claimed ones, keeps this authorizer's idle ones, least recently
// active first.
func (c *Claimer) refundCandidates(ctx context.Context, opt RefundOptions, limit int) ([]refundCandidate, error) {
	recs, err := c.cfg.Channels.Claimable(ctx, c.cfg.Network, limit)
	if err != nil {
		return nil, fmt.Errorf("claimer: refund: list claimable channels: %w", err)
	}
	claimed, err := c.cfg.Log.Claimed(ctx, c.cfg.Network, limit)
	if err != nil {
		return nil, fmt.Errorf("claimer: refund: list claimed channels: %w", err)
	}
	byID := map[common.Hash]refundCandidate{}
	for _, cl := range claimed {
		byID[cl.ChannelID] = refundCandidate{id: cl.ChannelID, channel: cl.Channel, signedMax: cl.MaxClaimable, signature: cl.Signature,
			charged: cl.TotalClaimed, lastActivity: cl.ClaimedAt}
	}
	for _, r := range recs {
		byID[r.ID] = refundCandidate{id: r.ID, channel: r.Channel, signedMax: r.SignedMax, signature: r.Signature, charged: r.Charged, lastActivity: r.LastRequestAt}
	}
	now := c.cfg.Now()
	var out []refundCandidate
	for id, cd := range byID {
		if opt.Channel != nil && id != *opt.Channel {
			continue
		}
		if cd.channel.ReceiverAuthorizer != c.authorizer || c.domain.ChannelID(cd.channel) != id || cd.signedMax == nil || len(cd.signature) == 0 {
			continue
		}
		if opt.IdleFor > 0 && now.Sub(cd.lastActivity) < opt.IdleFor {
			continue
		}
		out = append(out, cd)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].lastActivity.Before(out[j].lastActivity) })
	if opt.Channel != nil && len(out) == 0 {
		return nil, fmt.Errorf("claimer: refund: channel %s is unknown to the channel store and the claim log, not this authorizer's, or not idle for %s", opt.Channel.Hex(), opt.IdleFor)
	}
	return out, nil
}

// ChannelStatus is one channel with unclaimed charges, as Status reports
// it.
type ChannelStatus struct {
	ChannelID     common.Hash
	Payer         common.Address
	Receiver      common.Address
	Charged       *big.Int
	OnChain       batch.OnChain
	Unclaimed     *big.Int
	LastRequestAt time.Time
	// WithdrawalEnds is the end of a pending withdrawal (zero: none).
	WithdrawalEnds time.Time
	// Foreign is set when another receiver authorizer signs its claims.
	Foreign bool
}

// Status is the claimer's view of its network.
type Status struct {
	Network   string
	Unclaimed *big.Int
	Channels  []ChannelStatus
	// Withdrawals counts the channels with a pending withdrawal.
	Withdrawals int
	// Pending are the claims not resolved yet; Recent the latest claims.
	Pending []Record
	Recent  []Record
}

// Status reads the channels with unclaimed charges and their escrow
// view, the pending and the recent claims (up to recent). It changes
// nothing and works without a key.
func (c *Claimer) Status(ctx context.Context, recent int) (Status, error) {
	st := Status{Network: c.cfg.Network, Unclaimed: new(big.Int)}
	recs, err := c.cfg.Channels.Claimable(ctx, c.cfg.Network, c.pol.ScanLimit)
	if err != nil {
		return st, fmt.Errorf("claimer: status: list claimable channels: %w", err)
	}
	ids := make([]common.Hash, len(recs))
	for i, r := range recs {
		ids[i] = r.ID
	}
	views, err := c.rd.views(ctx, ids)
	if err != nil {
		return st, err
	}
	for _, r := range recs {
		v := views[r.ID]
		target := claimTarget(batch.ChannelRecord{Charged: r.Charged, SignedMax: r.SignedMax, OnChain: v})
		un := new(big.Int).Sub(target, v.TotalClaimed)
		if un.Sign() < 0 {
			un.SetInt64(0)
		}
		cs := ChannelStatus{ChannelID: r.ID, Payer: r.Channel.Payer, Receiver: r.Channel.Receiver, Charged: r.Charged, OnChain: v, Unclaimed: un,
			LastRequestAt: r.LastRequestAt, Foreign: c.authorizer != (common.Address{}) && r.Channel.ReceiverAuthorizer != c.authorizer}
		if v.WithdrawRequestedAt != 0 {
			cs.WithdrawalEnds = time.Unix(int64(v.WithdrawRequestedAt)+int64(r.Channel.WithdrawDelay), 0).UTC()
			st.Withdrawals++
		}
		st.Unclaimed.Add(st.Unclaimed, un)
		st.Channels = append(st.Channels, cs)
	}
	if st.Pending, err = c.cfg.Log.Pending(ctx, c.cfg.Network); err != nil {
		return st, fmt.Errorf("claimer: status: pending claims: %w", err)
	}
	if recent > 0 {
		if st.Recent, err = c.cfg.Log.Recent(ctx, c.cfg.Network, recent); err != nil {
			return st, fmt.Errorf("claimer: status: recent claims: %w", err)
		}
	}
	return st, nil
}

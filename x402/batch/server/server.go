// Package server is the batch-settlement scheme's part in a resource
// server (an x402.ServerScheme) on EVM networks: its "accepts" entry (the
// channel parameters a client opens a channel with), the local checks of
// a deposit, voucher or refund payload against the channel's record, the
// per-channel serialization of paid requests (a durable, leased hold in
// the Store), the charge of a voucher as a compare-and-set of the
// channel's charged amount, deposits and cooperative refunds through a
// facilitator, and the resolution of a charge whose outcome was not
// learned.
//
// A voucher of a channel whose record holds a fresh mirror of the escrow
// is checked with one ECDSA recovery and the record alone; deposits,
// refunds, vouchers of smart-contract payers (ERC-1271), unknown channels
// and stale mirrors go through the facilitator's verify, whose snapshot
// of the channel is mirrored into the record. A refund is a payment
// operation (x402.Payment.Operation): the resource is not run, and the
// answer is the settlement alone.
package server

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/big"
	"strings"
	"sync"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"

	"github.com/seed1284c1d2/svc/x402"
	"github.com/seed1284c1d2/svc/x402/batch"
)

// Defaults of Config.
const (
	// DefaultWithdrawDelay is the channels' withdrawal delay offered (the
	// escrow's minimum, 15 minutes).
	DefaultWithdrawDelay = batch.MinWithdrawDelay
	// DefaultFresh is how long a mirror of the escrow is trusted for a
	// voucher checked locally.
	DefaultFresh = 5 * time.Minute
	// DefaultWithdrawMargin: a voucher of a channel whose pending
	// withdrawal can be finalized within this margin is refused (its
	// charge could not be claimed in time).
	DefaultWithdrawMargin = 5 * time.Minute
	// DefaultHoldFor is the lease of a channel's hold: a request of the
	// channel holds it from its verification to its settlement.
	DefaultHoldFor = 2 * time.Minute
)

// Config configures a Server. Facilitator and Store are required, and
// one of ReceiverAuthorizer and Key.
type Config struct {
	// Facilitator verifies deposits, refunds, vouchers it must check on
	// chain, and settles deposits and refunds.
	Facilitator x402.Facilitator
	// Store keeps the channel records and holds.
	Store Store
	// Key is the receiver authorizer's key: when set, the server signs the
	// ClaimBatch and Refund authorizations of cooperative refunds, and
	// ReceiverAuthorizer is its address. Without it, ReceiverAuthorizer
	// (a facilitator's, say) signs them.
	Key *ecdsa.PrivateKey
	// ReceiverAuthorizer is the channels' receiver authorizer, when Key is
	// not set.
	ReceiverAuthorizer common.Address
	// WithdrawDelay is the channels' withdrawal delay in seconds (within
	// batch.MinWithdrawDelay and batch.MaxWithdrawDelay); zero means
	// DefaultWithdrawDelay.
	WithdrawDelay uint64
	// MinDeposit, when not empty, is the smallest deposit asked for
	// (atomic units, decimal).
	MinDeposit string
	// Networks restricts the networks the scheme is offered and accepted
	// on (CAIP-2 ids or v1 names); empty means Base.
	Networks []string
	// Fresh, WithdrawMargin and HoldFor: see DefaultFresh,
	// DefaultWithdrawMargin and DefaultHoldFor (zero means them).
	Fresh          time.Duration
	WithdrawMargin time.Duration
	HoldFor        time.Duration
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Logger receives what the scheme could not do (never a signature);
	// nil discards.
	Logger *slog.Logger
}

// Server is the batch-settlement scheme for a resource server. Safe for
// concurrent use.
type Server struct {
	cfg      Config
	networks []string
	auth     common.Address
	log      *slog.Logger
	// held keeps, from Verify to Settle (or Release), the record of the
	// channel a payment holds, by payment key: Settle charges it without
	// reading it again (the store's compare-and-set stays the judge).
	held sync.Map
}

var (
	_ x402.ServerScheme     = (*Server)(nil)
	_ x402.Releaser         = (*Server)(nil)
	_ x402.ReasonClassifier = (*Server)(nil)
)

// New checks cfg and fills in the defaults.
func New(cfg Config) (*Server, error) {
	if cfg.Facilitator == nil {
		return nil, errors.New("batch-settlement server: Config.Facilitator is required")
	}
	if cfg.Store == nil {
		return nil, errors.New("batch-settlement server: Config.Store is required")
	}
	s := &Server{cfg: cfg, auth: cfg.ReceiverAuthorizer, log: cfg.Logger}
	if cfg.Key != nil {
		s.auth = crypto.PubkeyToAddress(cfg.Key.PublicKey)
		if cfg.ReceiverAuthorizer != (common.Address{}) && cfg.ReceiverAuthorizer != s.auth {
			return nil, errors.New("batch-settlement server: Config.ReceiverAuthorizer is not the address of Config.Key")
		}
	}
	if s.auth == (common.Address{}) {
		return nil, errors.New("batch-settlement server: a receiver authorizer is required (Config.Key or Config.ReceiverAuthorizer)")
	}
	if s.cfg.WithdrawDelay == 0 {
		s.cfg.WithdrawDelay = DefaultWithdrawDelay
	}
	if s.cfg.WithdrawDelay < batch.MinWithdrawDelay || s.cfg.WithdrawDelay > batch.MaxWithdrawDelay {
		return nil, &x402.ConfigError{Field: "WithdrawDelay", Message: fmt.Sprintf("%d s is outside [%d, %d] (15 minutes to 30 days)",
			s.cfg.WithdrawDelay, batch.MinWithdrawDelay, batch.MaxWithdrawDelay)}
	}
	if s.cfg.MinDeposit != "" {
		v, ok := new(big.Int).SetString(s.cfg.MinDeposit, 10)
		if !ok || v.Sign() < 0 || v.BitLen() > 128 {
			return nil, &x402.ConfigError{Field: "MinDeposit", Message: "must be a decimal amount of atomic units below 2^128"}
		}
	}
	if cfg.Fresh < 0 || cfg.WithdrawMargin < 0 || cfg.HoldFor < 0 {
		return nil, errors.New("batch-settlement server: durations must not be negative")
	}
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	def(&s.cfg.Fresh, DefaultFresh)
	def(&s.cfg.WithdrawMargin, DefaultWithdrawMargin)
	def(&s.cfg.HoldFor, DefaultHoldFor)
	if s.cfg.Now == nil {
		s.cfg.Now = time.Now
	}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	nets := cfg.Networks
	if len(nets) == 0 {
		nets = []string{x402.NetworkBase}
	}
	for _, id := range nets {
		n, ok := x402.LookupNetwork(id)
		if !ok {
			return nil, &x402.ConfigError{Field: "Networks", Message: fmt.Sprintf("unknown network %q", clipText(id, 40))}
		}
		s.networks = append(s.networks, n.CAIP2)
	}
	return s, nil
}

// Scheme implements x402.Mechanism.
func (s *Server) Scheme() string { return batch.Scheme }

// Networks implements x402.Mechanism.
func (s *Server) Networks() []string { return append([]string(nil), s.networks...) }

// ReceiverAuthorizer returns the channels' receiver authorizer.
func (s *Server) ReceiverAuthorizer() common.Address { return s.auth }

// Store returns the channel store.
func (s *Server) Store() Store { return s.cfg.Store }

// Requirements implements x402.ServerScheme: the route's price as the
// per-request maximum, paid to its payTo through a channel with the
// server's receiver authorizer, withdrawal delay and minimum deposit.
func (s *Server) Requirements(route x402.Route) (x402.PaymentRequirements, error) {
	base, err := route.Requirements()
	if err != nil {
		return base, err
	}
	req, err := batch.NewRequirements(batch.Offer{Network: base.Network, Amount: base.Amount, PayTo: base.PayTo, ReceiverAuthorizer: s.auth,
		WithdrawDelay: s.cfg.WithdrawDelay, MinDeposit: s.cfg.MinDeposit, MaxTimeoutSeconds: base.MaxTimeoutSeconds})
	if err != nil {
		return req, &x402.ConfigError{Field: "batch-settlement", Message: err.Error()}
	}
	return req, nil
}

// refusal is a refusal of the scheme's checks.
type refusal struct {
	reason string
	msg    string
}

func (e *refusal) Error() string         { return "x402 batch-settlement: " + e.reason + ": " + e.msg }
func (e *refusal) RefusalReason() string { return e.reason }

func refuse(reason, msg string) *refusal { return &refusal{reason: reason, msg: msg} }

// asRefusal turns a batch.Error into a refusal.
func asRefusal(err error) error {
	var be *batch.Error
	if errors.As(err, &be) {
		reason := be.Reason
		if reason == "" {
			reason = batch.ReasonVoucherPayload
		}
		return refuse(reason, be.Msg)
	}
	return err
}

// payment is a parsed payload with what Check derived from it.
type payment struct {
	p      batch.Payment
	d      batch.Domain
	amount *big.Int // the request's charge (zero for a refund)
	eoa    bool     // the voucher is an EOA's, checked locally
}

// parse parses and matches payload to req, and checks an EOA voucher's
// signature (one ECDSA recovery).
func (s *Server) parse(payload x402.PaymentPayload, req x402.PaymentRequirements) (payment, error) {
	return s.parseSig(payload, req, true)
}

// parsed parses and matches payload to req without checking its
// signature again: for the steps after Check (Verify, Settle, Resolve),
// which the engine calls with the payload Check passed (recovery: the
// payload it journaled after Check).
func (s *Server) parsed(payload x402.PaymentPayload, req x402.PaymentRequirements) (payment, error) {
	return s.parseSig(payload, req, false)
}

func (s *Server) parseSig(payload x402.PaymentPayload, req x402.PaymentRequirements, verify bool) (payment, error) {
	p, err := batch.ParsePayload(payload.Payload)
	if err != nil {
		return payment{}, asRefusal(err)
	}
	d, err := p.Check(req)
	if err != nil {
		return payment{}, asRefusal(err)
	}
	out := payment{p: p, d: d, amount: new(big.Int)}
	if p.Type != batch.TypeRefund {
		amt, ok := new(big.Int).SetString(req.Amount, 10)
		if !ok || amt.Sign() <= 0 {
			return payment{}, refuse(batch.ReasonVoucherPayload, "the requirements' amount is not a positive integer")
		}
		out.amount = amt
	}
	if p.Channel.PayerAuthorizer != (common.Address{}) {
		if verify {
			if err := d.VerifyVoucher(p); err != nil {
				return payment{}, asRefusal(err)
			}
		}
		out.eoa = true
	}
	return out, nil
}

// identity is the payment's identity in the journal.
func (s *Server) identity(network string, pp payment) x402.Payment {
	id := pp.p.ChannelID.Hex()
	ref := strings.ToLower(id) + ":" + pp.p.MaxClaimableAmount.String() + ":" + pp.p.Type
	pm := x402.Payment{
		Key:       batch.Scheme + "/" + network + "/" + ref,
		Payer:     pp.p.Channel.Payer.Hex(),
		ID:        ref,
		Amount:    pp.amount.String(),
		Unchecked: !pp.eoa,
	}
	if pp.p.Type == batch.TypeRefund {
		body, _ := json.Marshal(map[string]string{"message": "Refund acknowledged", "channelId": id}) // strings only
		pm.Operation = body
	}
	return pm
}

// baseline is the charged amount a payment of rec builds on: Charged, or
// for a channel whose record holds no voucher yet the mirrored
// totalClaimed when it is higher (the server's charges of it were lost,
// or never made).
func baseline(rec batch.ChannelRecord) *big.Int {
	if len(rec.Signature) == 0 && rec.OnChain.TotalClaimed != nil && rec.OnChain.TotalClaimed.Cmp(rec.Charged) > 0 {
		return new(big.Int).Set(rec.OnChain.TotalClaimed)
	}
	return new(big.Int).Set(rec.Charged)
}

// known reports whether rec's baseline is known: it holds a voucher, or a
// mirror of the escrow.
func known(rec batch.ChannelRecord) bool { return len(rec.Signature) > 0 || !rec.SyncedAt.IsZero() }

// holds reports whether rec holds the voucher of pp (charged).
func holds(rec batch.ChannelRecord, pp payment) bool {
	return len(rec.Signature) > 0 && rec.SignedMax.Cmp(pp.p.MaxClaimableAmount) == 0 && bytes.Equal(rec.Signature, pp.p.Signature) &&
		rec.Charged.Cmp(pp.p.MaxClaimableAmount) <= 0 && rec.Charged.Sign() > 0
}

// want is the voucher ceiling a payment of pp must carry on rec.
func want(rec batch.ChannelRecord, pp payment) *big.Int {
	return new(big.Int).Add(baseline(rec), pp.amount)
}

// corrective is the corrective refusal of a payment whose ceiling is not
// the one rec expects.
func corrective(req x402.PaymentRequirements, rec batch.ChannelRecord, pp payment, expected *big.Int) error {
	cs := rec.State()
	cs.ChargedCumulativeAmount = baseline(rec).String()
	var vs *batch.VoucherState
	if len(rec.Signature) > 0 {
		vs = &batch.VoucherState{SignedMaxClaimable: rec.SignedMax.String(), Signature: hexBytes(rec.Signature)}
	}
	return &x402.CorrectiveRefusal{Reason: batch.ReasonCumulativeAmountMismatch,
		Message:  fmt.Sprintf("voucher.maxClaimableAmount %s is not %s (the channel's charged amount %s plus this request's)", pp.p.MaxClaimableAmount, expected, baseline(rec)),
		Accepted: batch.Corrective(req, cs, vs)}
}

// Check implements x402.ServerScheme: the payload's syntax, its channel
// against the requirement (id, receiver, token, receiver authorizer,
// withdrawal delay), an EOA voucher's signature, and its ceiling against
// the channel's record: a voucher or deposit must carry the charged
// amount plus the request's amount, a refund the charged amount, or the
// client is sent the channel's state (a corrective refusal). The latest
// voucher the record holds passes, for the journal to replay its
// recorded answer. A channel held by another request is busy.
func (s *Server) Check(ctx context.Context, payload x402.PaymentPayload, req x402.PaymentRequirements) (x402.Payment, error) {
	pp, err := s.parse(payload, req)
	if err != nil {
		return x402.Payment{}, err
	}
	network := x402.CAIP2(req.Network)
	pm := s.identity(network, pp)
	if pp.p.Type == batch.TypeDeposit && s.cfg.MinDeposit != "" {
		if min, _ := new(big.Int).SetString(s.cfg.MinDeposit, 10); min != nil && pp.p.Deposit.Amount.Cmp(min) < 0 {
			return pm, refuse(batch.ReasonDepositBelowMinDeposit, fmt.Sprintf("payload.deposit.amount %s is below the minimum deposit %s", pp.p.Deposit.Amount, min))
		}
	}
	h, found, err := s.cfg.Store.Channel(ctx, network, pp.p.ChannelID)
	if err != nil {
		return pm, fmt.Errorf("batch-settlement: read channel: %w", err)
	}
	rec := h.ChannelRecord
	if found && pp.p.Type != batch.TypeRefund && holds(rec, pp) {
		return pm, nil // answered before: the journal replays it
	}
	if pp.p.Type == batch.TypeRefund && found {
		// Refunds of one charged amount differ by their amount and the
		// channel's refund nonce: each is a payment of its own.
		amount := "all"
		if pp.p.RefundAmount != nil {
			amount = pp.p.RefundAmount.String()
		}
		pm.ID += ":" + amount + ":" + copyInt(rec.OnChain.RefundNonce).String()
		pm.Key = batch.Scheme + "/" + network + "/" + pm.ID
	}
	if pp.p.Type == batch.TypeRefund {
		if !found || !known(rec) {
			return pm, refuse(batch.ReasonMissingChannel, "this server holds no record of the channel to refund")
		}
		if b := baseline(rec); pp.p.MaxClaimableAmount.Cmp(b) != 0 {
			return pm, corrective(req, rec, pp, b)
		}
	} else if found && known(rec) {
		if w := want(rec, pp); pp.p.MaxClaimableAmount.Cmp(w) != 0 {
			return pm, corrective(req, rec, pp, w)
		}
	}
	if found && h.HeldBy(pm.Key, s.cfg.Now()) {
		return pm, refuse(batch.ReasonChannelBusy, "another request of this channel is being processed; retry shortly")
	}
	return pm, nil
}

// Verify implements x402.ServerScheme: it takes the channel's hold (busy
// when another request holds it), then checks a plain EOA voucher of a
// channel with a fresh mirror locally (within the balance, above the
// claimed total, no withdrawal about to end) and every other payment
// through the facilitator's verify, whose snapshot of the channel is
// mirrored into the record.
func (s *Server) Verify(ctx context.Context, payload x402.PaymentPayload, req x402.PaymentRequirements, pm x402.Payment) (x402.VerifyResponse, error) {
	pp, err := s.parsed(payload, req)
	if err != nil {
		return invalid(pm, err), nil
	}
	network := x402.CAIP2(req.Network)
	now := s.cfg.Now()
	h, taken, err := s.cfg.Store.Hold(ctx, batch.ChannelRecord{Network: network, ID: pp.p.ChannelID, Channel: pp.p.Channel}, pm.Key, now, now.Add(s.cfg.HoldFor))
	if err != nil {
		return x402.VerifyResponse{}, fmt.Errorf("batch-settlement: hold channel: %w", err)
	}
	if !taken {
		return invalid(pm, refuse(batch.ReasonChannelBusy, "another request of this channel is being processed; retry shortly")), nil
	}
	rec := h.ChannelRecord
	local := pp.eoa && pp.p.Type == batch.TypeVoucher && len(rec.Signature) > 0 && !rec.SyncedAt.IsZero() && now.Sub(rec.SyncedAt) < s.cfg.Fresh
	if !local {
		vr, err := s.cfg.Facilitator.Verify(ctx, payload, req)
		if err != nil {
			return x402.VerifyResponse{}, err
		}
		if !vr.IsValid {
			return vr, nil
		}
		if oc, ok := snapshot(vr.Extra, pp.p.ChannelID); ok {
			if err := s.cfg.Store.Mirror(ctx, network, pp.p.ChannelID, oc, now); err != nil {
				return x402.VerifyResponse{}, fmt.Errorf("batch-settlement: mirror channel: %w", err)
			}
			rec.OnChain, rec.SyncedAt = oc, now
		} else if pp.p.Type != batch.TypeDeposit || !rec.SyncedAt.IsZero() {
			s.log.Warn("x402 batch-settlement: the facilitator's verify carries no channel snapshot", "channel", pp.p.ChannelID.Hex())
		}
	}
	if err := s.checkState(rec, pp, now); err != nil {
		return invalid(pm, err), nil
	}
	s.held.Store(pm.Key, CopyRecord(rec))
	return x402.VerifyResponse{IsValid: true, Payer: pm.Payer}, nil
}

// checkState checks pp against rec's charged amount and mirror.
func (s *Server) checkState(rec batch.ChannelRecord, pp payment, now time.Time) error {
	m := pp.p.MaxClaimableAmount
	if pp.p.Type == batch.TypeRefund {
		if m.Cmp(baseline(rec)) != 0 {
			return refuse(batch.ReasonCumulativeAmountMismatch, fmt.Sprintf("a refund's voucher.maxClaimableAmount must be the charged amount %s", baseline(rec)))
		}
		return nil
	}
	if w := want(rec, pp); m.Cmp(w) != 0 {
		return refuse(batch.ReasonCumulativeAmountMismatch, fmt.Sprintf("voucher.maxClaimableAmount %s is not %s", m, w))
	}
	if rec.SyncedAt.IsZero() {
		return nil // no mirror: the facilitator checked the chain
	}
	oc := rec.OnChain
	if pp.p.Type == batch.TypeVoucher && oc.Balance != nil && m.Cmp(oc.Balance) > 0 {
		return refuse(batch.ReasonCumulativeExceedsBalance, fmt.Sprintf("voucher.maxClaimableAmount %s exceeds the channel's balance %s", m, oc.Balance))
	}
	if oc.TotalClaimed != nil && m.Cmp(oc.TotalClaimed) <= 0 {
		return refuse(batch.ReasonCumulativeBelowClaimed, fmt.Sprintf("voucher.maxClaimableAmount %s is not above the claimed total %s", m, oc.TotalClaimed))
	}
	if at := oc.WithdrawRequestedAt; at != 0 {
		ends := time.Unix(int64(at), 0).Add(time.Duration(rec.Channel.WithdrawDelay) * time.Second)
		if ends.Before(now.Add(s.cfg.WithdrawMargin)) {
			return refuse(batch.ReasonCumulativeExceedsBalance, "a withdrawal of the channel is pending and may be finalized before this charge is claimed")
		}
	}
	return nil
}

// invalid is the VerifyResponse of a refusal.
func invalid(pm x402.Payment, err error) x402.VerifyResponse {
	reason := batch.ReasonVoucherPayload
	var rf x402.Refusal
	if errors.As(err, &rf) {
		reason = rf.RefusalReason()
	}
	msg := err.Error()
	var r *refusal
	if errors.As(err, &r) {
		msg = r.msg
	}
	return x402.VerifyResponse{IsValid: false, InvalidReason: reason, InvalidMessage: msg, Payer: pm.Payer}
}

// Settle implements x402.ServerScheme: a voucher is charged by a
// compare-and-set of the channel's charged amount (charged X → X + the
// request's amount, the voucher kept, the hold freed); a deposit is
// settled by the facilitator (on chain) first; a refund is completed and
// settled by the facilitator, and closes the record when it returns
// everything left.
func (s *Server) Settle(ctx context.Context, payload x402.PaymentPayload, req x402.PaymentRequirements, pm x402.Payment) (x402.Settlement, error) {
	pp, err := s.parsed(payload, req)
	if err != nil {
		return x402.Settlement{Status: x402.Failed, Response: failure(req, pm, err)}, nil
	}
	cached, _ := s.held.LoadAndDelete(pm.Key)
	switch pp.p.Type {
	case batch.TypeRefund:
		return s.refund(ctx, payload, req, pm, pp)
	case batch.TypeDeposit:
		return s.deposit(ctx, payload, req, pm, pp)
	}
	if rec, ok := cached.(batch.ChannelRecord); ok {
		return s.chargeOn(ctx, req, pm, pp, rec, "", "")
	}
	return s.charge(ctx, req, pm, pp, nil, "", "")
}

// charge commits the charge of pp: Settled with the payment response, or
// Refused when the channel's charged amount moved on (nothing charged).
// oc, when set, is a mirror read now (a deposit's).
func (s *Server) charge(ctx context.Context, req x402.PaymentRequirements, pm x402.Payment, pp payment, oc *batch.OnChain, tx, deposited string) (x402.Settlement, error) {
	network := x402.CAIP2(req.Network)
	h, found, err := s.cfg.Store.Channel(ctx, network, pp.p.ChannelID)
	if err != nil {
		return x402.Settlement{}, fmt.Errorf("batch-settlement: read channel: %w", err)
	}
	rec := h.ChannelRecord
	if !found {
		rec = NewRecord(batch.ChannelRecord{Network: network, ID: pp.p.ChannelID, Channel: pp.p.Channel})
	}
	if now := s.cfg.Now(); oc != nil && now.After(rec.SyncedAt) {
		rec.OnChain, rec.SyncedAt = CopyOnChain(*oc), now
	}
	return s.chargeOn(ctx, req, pm, pp, rec, tx, deposited)
}

// chargeOn commits the charge of pp on rec, the channel's record as read
// (Verify's, under the hold, or just now).
func (s *Server) chargeOn(ctx context.Context, req x402.PaymentRequirements, pm x402.Payment, pp payment, rec batch.ChannelRecord, tx, deposited string) (x402.Settlement, error) {
	network := x402.CAIP2(req.Network)
	now := s.cfg.Now()
	if holds(rec, pp) {
		return x402.Settlement{Status: x402.Settled, Response: s.chargeResponse(network, pm, pp, rec, tx, deposited), Verbatim: true}, nil
	}
	if w := want(rec, pp); pp.p.MaxClaimableAmount.Cmp(w) != 0 {
		return x402.Settlement{Status: x402.Refused, Response: failure(req, pm, refuse(batch.ReasonCumulativeAmountMismatch,
			fmt.Sprintf("the channel's charged amount moved on: voucher.maxClaimableAmount %s is not %s", pp.p.MaxClaimableAmount, w)))}, nil
	}
	next := CopyRecord(rec)
	next.Charged = new(big.Int).Set(pp.p.MaxClaimableAmount)
	next.SignedMax = new(big.Int).Set(pp.p.MaxClaimableAmount)
	next.Signature = bytes.Clone(pp.p.Signature)
	next.LastRequestAt = now
	done, err := s.cfg.Store.Commit(ctx, next, rec.Charged, pm.Key)
	if err != nil {
		return x402.Settlement{}, fmt.Errorf("batch-settlement: commit charge: %w", err)
	}
	if !done {
		return x402.Settlement{Status: x402.Refused, Response: failure(req, pm, refuse(batch.ReasonCumulativeAmountMismatch,
			"the channel's charged amount moved on while this request ran"))}, nil
	}
	return x402.Settlement{Status: x402.Settled, Response: s.chargeResponse(network, pm, pp, next, tx, deposited), Verbatim: true}, nil
}

// chargeResponse is the payment response of a charge on rec.
func (s *Server) chargeResponse(network string, pm x402.Payment, pp payment, rec batch.ChannelRecord, tx, deposited string) x402.SettleResponse {
	return batch.ChargeResponse(network, pm.Payer, pp.amount, rec.State(), tx, deposited)
}

// deposit settles a deposit through the facilitator, then charges it.
func (s *Server) deposit(ctx context.Context, payload x402.PaymentPayload, req x402.PaymentRequirements, pm x402.Payment, pp payment) (x402.Settlement, error) {
	sr, err := s.cfg.Facilitator.Settle(ctx, payload, req)
	if err != nil {
		return x402.Settlement{}, err
	}
	if !sr.Success {
		sr.Network, sr.Payer = x402.CAIP2(req.Network), pm.Payer
		return x402.Settlement{Status: x402.Refused, Response: sr}, nil
	}
	var oc *batch.OnChain
	if cs, ok := stateOf(sr.Extra); ok {
		if v, ok := snapshot(cs, pp.p.ChannelID); ok {
			oc = &v
		}
	}
	amount := sr.Amount
	if amount == "" {
		amount = pp.p.Deposit.Amount.String()
	}
	return s.charge(ctx, req, pm, pp, oc, sr.Transaction, amount)
}

// refund completes a refund (the amount, the refund nonce, the claim of
// the latest voucher, the receiver authorizer's signatures when the
// server holds the key) and has the facilitator settle it.
func (s *Server) refund(ctx context.Context, payload x402.PaymentPayload, req x402.PaymentRequirements, pm x402.Payment, pp payment) (x402.Settlement, error) {
	network := x402.CAIP2(req.Network)
	h, found, err := s.cfg.Store.Channel(ctx, network, pp.p.ChannelID)
	if err != nil {
		return x402.Settlement{}, fmt.Errorf("batch-settlement: read channel: %w", err)
	}
	if !found {
		return x402.Settlement{Status: x402.Failed, Response: failure(req, pm, refuse(batch.ReasonMissingChannel, "no record of the channel"))}, nil
	}
	rec := h.ChannelRecord
	charged := baseline(rec)
	claimed := copyInt(rec.OnChain.TotalClaimed)
	if claimed.Cmp(charged) < 0 {
		claimed = new(big.Int).Set(charged)
	}
	left := new(big.Int).Sub(copyInt(rec.OnChain.Balance), claimed)
	if left.Sign() <= 0 {
		return x402.Settlement{Status: x402.Failed, Response: failure(req, pm, refuse(batch.ReasonRefundNoBalance, "nothing is left in the channel to refund"))}, nil
	}
	amount := left
	if pp.p.RefundAmount != nil {
		if pp.p.RefundAmount.Cmp(left) > 0 {
			return x402.Settlement{Status: x402.Failed, Response: failure(req, pm, refuse(batch.ReasonRefundAmountInvalid,
				fmt.Sprintf("payload.amount %s exceeds what is left in the channel, %s", pp.p.RefundAmount, left)))}, nil
		}
		amount = new(big.Int).Set(pp.p.RefundAmount)
	}
	nonce := copyInt(rec.OnChain.RefundNonce)
	rs := batch.RefundSettlement{Type: batch.TypeRefund, ChannelConfig: pp.p.Channel.Config(),
		Voucher: batch.Voucher{ChannelID: pp.p.ChannelID.Hex(), MaxClaimableAmount: pp.p.MaxClaimableAmount.String(), Signature: hexBytes(pp.p.Signature)},
		Amount:  amount.String(), RefundNonce: nonce.String(), Claims: []batch.VoucherClaim{}}
	if len(rec.Signature) > 0 && rec.Charged.Cmp(copyInt(rec.OnChain.TotalClaimed)) > 0 {
		c := batch.Claim{Channel: pp.p.Channel, MaxClaimableAmount: rec.SignedMax, Signature: rec.Signature, TotalClaimed: rec.Charged}
		rs.Claims = append(rs.Claims, c.Row())
		if s.cfg.Key != nil {
			if rs.ClaimAuthorizerSignature, err = pp.d.SignClaimBatch(s.cfg.Key, pp.d.ClaimEntries([]batch.Claim{c})); err != nil {
				return x402.Settlement{}, fmt.Errorf("batch-settlement: sign claim: %w", err)
			}
		}
	}
	if s.cfg.Key != nil {
		if rs.RefundAuthorizerSignature, err = pp.d.SignRefund(s.cfg.Key, pp.p.ChannelID, nonce, amount); err != nil {
			return x402.Settlement{}, fmt.Errorf("batch-settlement: sign refund: %w", err)
		}
	}
	raw, err := json.Marshal(rs)
	if err != nil {
		return x402.Settlement{}, fmt.Errorf("batch-settlement: encode refund: %w", err)
	}
	completed := payload
	completed.Payload = raw
	sr, err := s.cfg.Facilitator.Settle(ctx, completed, req)
	if err != nil {
		return x402.Settlement{}, err
	}
	sr.Network = network
	if sr.Payer == "" {
		sr.Payer = pm.Payer
	}
	if !sr.Success {
		return x402.Settlement{Status: x402.Refused, Response: sr}, nil
	}
	now := s.cfg.Now()
	cs := rec.State()
	if st, ok := stateOf(sr.Extra); ok {
		if oc, ok := snapshot(st, pp.p.ChannelID); ok {
			cs = oc.State(pp.p.ChannelID)
			if amount.Cmp(left) < 0 {
				if err := s.cfg.Store.Mirror(ctx, network, pp.p.ChannelID, oc, now); err != nil {
					s.log.Error("x402 batch-settlement: mirroring a refund failed", "channel", pp.p.ChannelID.Hex(), "error", err)
				}
			}
		}
	}
	cs.ChargedCumulativeAmount = charged.String()
	if amount.Cmp(left) == 0 {
		if _, err := s.cfg.Store.Delete(ctx, network, pp.p.ChannelID, rec.Charged); err != nil {
			s.log.Error("x402 batch-settlement: closing a refunded channel's record failed", "channel", pp.p.ChannelID.Hex(), "error", err)
		}
	} else if err := s.cfg.Store.Unhold(ctx, network, pp.p.ChannelID, pm.Key); err != nil {
		s.log.Error("x402 batch-settlement: freeing a channel's hold failed (its lease ends it)", "channel", pp.p.ChannelID.Hex(), "error", err)
	}
	if sr.Amount == "" {
		sr.Amount = amount.String()
	}
	sr.Extra = batch.ResponseExtra{ChannelState: &cs}.Map()
	return x402.Settlement{Status: x402.Settled, Response: sr}, nil
}

// Resolve implements x402.ServerScheme: a charge the record holds is
// settled; a voucher that is still the channel's next one is charged now
// (safe: the compare-and-set charges it once); a deposit is presented to
// the facilitator again (its authorization can be used once: the chain
// refuses a second deposit); a refund whose record is gone is settled.
// Anything else is Released (never charged) or Unknown.
func (s *Server) Resolve(ctx context.Context, payload x402.PaymentPayload, req x402.PaymentRequirements, payer string) x402.Settlement {
	pp, err := s.parsed(payload, req)
	if err != nil {
		return x402.Settlement{Status: x402.Released, Reason: "the payment does not parse: " + err.Error()}
	}
	network := x402.CAIP2(req.Network)
	pm := s.identity(network, pp)
	h, found, err := s.cfg.Store.Channel(ctx, network, pp.p.ChannelID)
	if err != nil {
		return x402.Settlement{Status: x402.Undecided, Reason: "read channel: " + err.Error()}
	}
	switch pp.p.Type {
	case batch.TypeRefund:
		if !found {
			return x402.Settlement{Status: x402.Settled, Response: x402.SettleResponse{Success: true, Network: network, Payer: payer}}
		}
		return x402.Settlement{Status: x402.Unknown, Reason: "a refund was interrupted and the channel's record remains; read the escrow's refund nonce"}
	case batch.TypeDeposit:
		if found && holds(h.ChannelRecord, pp) {
			return x402.Settlement{Status: x402.Settled, Response: s.chargeResponse(network, pm, pp, h.ChannelRecord, "", ""), Verbatim: true}
		}
		st, err := s.deposit(ctx, payload, req, pm, pp)
		if err != nil {
			return x402.Settlement{Status: x402.Undecided, Reason: err.Error()}
		}
		if st.Status == x402.Refused {
			return x402.Settlement{Status: x402.Unknown, Reason: "the deposit presented again was refused (" + st.Response.ErrorReason + "): it may have been made"}
		}
		return st
	}
	if found && holds(h.ChannelRecord, pp) {
		return x402.Settlement{Status: x402.Settled, Response: s.chargeResponse(network, pm, pp, h.ChannelRecord, "", ""), Verbatim: true}
	}
	st, err := s.charge(ctx, req, pm, pp, nil, "", "")
	if err != nil {
		return x402.Settlement{Status: x402.Undecided, Reason: err.Error()}
	}
	if st.Status == x402.Refused {
		return x402.Settlement{Status: x402.Released, Reason: "never charged: the channel's charged amount moved on"}
	}
	return st
}

// Release implements x402.Releaser: the channel's hold is freed.
func (s *Server) Release(ctx context.Context, payload x402.PaymentPayload, req x402.PaymentRequirements, pm x402.Payment) {
	s.held.Delete(pm.Key)
	p, err := batch.ParsePayload(payload.Payload)
	if err != nil || pm.Key == "" {
		return
	}
	if err := s.cfg.Store.Unhold(context.WithoutCancel(ctx), x402.CAIP2(req.Network), p.ChannelID, pm.Key); err != nil {
		s.log.Warn("x402 batch-settlement: freeing a channel's hold failed (its lease ends it)", "channel", p.ChannelID.Hex(), "error", err)
	}
}

// SameProof implements x402.ServerScheme: the same voucher signature (and
// deposit authorization).
func (s *Server) SameProof(recorded, presented x402.PaymentPayload) bool {
	a, err1 := batch.ParsePayload(recorded.Payload)
	b, err2 := batch.ParsePayload(presented.Payload)
	if err1 != nil || err2 != nil || a.Type != b.Type || !bytes.Equal(a.Signature, b.Signature) {
		return false
	}
	if (a.Deposit == nil) != (b.Deposit == nil) {
		return false
	}
	return a.Deposit == nil || bytes.Equal(a.Deposit.Signature, b.Deposit.Signature)
}

// RefusalClass implements x402.ReasonClassifier.
func (s *Server) RefusalClass(reason string) x402.RefusalClass {
	switch reason {
	case batch.ReasonVoucherSignature, batch.ReasonReceiveAuthorizationSignature, batch.ReasonVoucherPayload, batch.ReasonDepositPayload,
		batch.ReasonRefundPayload, batch.ReasonPayloadType, batch.ReasonChannelIDMismatch, batch.ReasonChannelIDInvalid:
		return x402.RefusalSignature
	case batch.ReasonAuthorizationValidAfter, batch.ReasonAuthorizationValidBefore:
		return x402.RefusalExpired
	case batch.ReasonNetworkMismatch:
		return x402.RefusalNetwork
	case batch.ReasonCumulativeAmountMismatch, batch.ReasonCumulativeBelowClaimed, batch.ReasonChargeExceedsSignedCumulative, batch.ReasonRefundAmountInvalid:
		return x402.RefusalAmount
	case batch.ReasonCumulativeExceedsBalance, batch.ReasonInsufficientBalance, batch.ReasonDepositBelowMinDeposit, batch.ReasonRefundNoBalance:
		return x402.RefusalFunds
	}
	return x402.RefusalOther
}

// failure is the settle response of a refusal.
func failure(req x402.PaymentRequirements, pm x402.Payment, err error) x402.SettleResponse {
	v := invalid(pm, err)
	return x402.SettleResponse{Success: false, ErrorReason: v.InvalidReason, ErrorMessage: v.InvalidMessage, Network: x402.CAIP2(req.Network), Payer: pm.Payer}
}

// stateOf returns the channelState member of a settle response's extra.
func stateOf(extra map[string]any) (map[string]any, bool) {
	m, ok := extra["channelState"].(map[string]any)
	return m, ok
}

// snapshot reads a facilitator's channel snapshot (balance, totalClaimed,
// withdrawRequestedAt, refundNonce) of channel id.
func snapshot(m map[string]any, id common.Hash) (batch.OnChain, bool) {
	if len(m) == 0 {
		return batch.OnChain{}, false
	}
	raw, err := json.Marshal(m)
	if err != nil {
		return batch.OnChain{}, false
	}
	var cs struct {
		ChannelID           string          `json:"channelId"`
		Balance             string          `json:"balance"`
		TotalClaimed        string          `json:"totalClaimed"`
		WithdrawRequestedAt json.Number     `json:"withdrawRequestedAt"`
		RefundNonce         json.RawMessage `json:"refundNonce"`
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if dec.Decode(&cs) != nil {
		return batch.OnChain{}, false
	}
	if cs.ChannelID != "" && !strings.EqualFold(cs.ChannelID, id.Hex()) {
		return batch.OnChain{}, false
	}
	oc := CopyOnChain(batch.OnChain{})
	var ok bool
	if oc.Balance, ok = new(big.Int).SetString(cs.Balance, 10); !ok || oc.Balance.Sign() < 0 {
		return batch.OnChain{}, false
	}
	if oc.TotalClaimed, ok = new(big.Int).SetString(cs.TotalClaimed, 10); !ok || oc.TotalClaimed.Sign() < 0 {
		return batch.OnChain{}, false
	}
	if cs.WithdrawRequestedAt != "" {
		v, err := cs.WithdrawRequestedAt.Int64()
		if err != nil || v < 0 {
			return batch.OnChain{}, false
		}
		oc.WithdrawRequestedAt = uint64(v)
	}
	rn := strings.Trim(string(cs.RefundNonce), `"`)
	if rn != "" && rn != "null" {
		if oc.RefundNonce, ok = new(big.Int).SetString(rn, 10); !ok {
			return batch.OnChain{}, false
		}
	}
	return oc, true
}

// hexBytes is b as 0x-hex.
func hexBytes(b []byte) string { return "0x" + common.Bytes2Hex(b) }

// clipText cuts s to n bytes for a message.
func clipText(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}

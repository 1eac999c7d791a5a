package claimer

import (
	"context"
	"crypto/ecdsa"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/big"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/seed1284c1d2/svc/x402"
	"github.com/seed1284c1d2/svc/x402/batch"
)

// Settler is what the claimer asks of a facilitator: to settle the
// server-authored claim, settle (sweep) and refund payloads of the
// batch-settlement scheme. Every x402.Facilitator is one.
type Settler interface {
	Settle(ctx context.Context, payload x402.PaymentPayload, req x402.PaymentRequirements) (x402.SettleResponse, error)
}

// Defaults of Policy.
const (
	DefaultInterval         = time.Minute
	DefaultWithdrawInterval = 10 * time.Second
	DefaultWithdrawMargin   = 5 * time.Minute
	DefaultMaxBatch         = 100
	DefaultScanLimit        = 10_000
)

// Policy says when channels are claimed and swept. A channel with a
// pending withdrawal is always claimed at once; with neither Threshold
// nor IdleAfter set, that is all a pass claims (the specification's "on
// withdrawal" strategy); Threshold 1 claims everything every Interval
// (periodic); a larger Threshold bounds the unclaimed exposure.
type Policy struct {
	// Interval is the time between two passes of Run (DefaultInterval when
	// zero). Every pass reads the escrow's view of every channel with
	// unclaimed charges, so Interval also bounds how late a withdrawal is
	// seen, and an instance that dies leaves its lease to another after
	// at most 2 × Interval: 3 × Interval + WithdrawMargin must stay within
	// the shortest withdrawal delay (15 minutes).
	Interval time.Duration
	// WithdrawInterval is the time between passes while a channel with
	// unclaimed charges has a pending withdrawal (DefaultWithdrawInterval
	// when zero; at most Interval).
	WithdrawInterval time.Duration
	// WithdrawMargin is how long before a withdrawal's end its channel
	// must be claimed (DefaultWithdrawMargin when zero). A channel with a
	// pending withdrawal is claimed at once, whatever the other rules say;
	// one seen later than its end minus the margin is logged as late.
	WithdrawMargin time.Duration
	// Threshold, when set, claims every channel of the network once their
	// unclaimed total reaches it (a threshold of 1 claims everything every
	// pass).
	Threshold *big.Int
	// IdleAfter, when positive, claims a channel once it has not been
	// charged for that long.
	IdleAfter time.Duration
	// MaxBatch is the most channels one claim carries (DefaultMaxBatch
	// when zero).
	MaxBatch int
	// SweepThreshold, when set, sweeps a receiver's claimed funds to it
	// once they reach this amount; nil sweeps after every claim.
	SweepThreshold *big.Int
	// ScanLimit bounds the channels a pass reads (DefaultScanLimit when
	// zero).
	ScanLimit int
}

// withDefaults fills the zero fields.
func (p Policy) withDefaults() Policy {
	if p.Interval == 0 {
		p.Interval = DefaultInterval
	}
	if p.WithdrawInterval == 0 {
		p.WithdrawInterval = min(DefaultWithdrawInterval, p.Interval)
	}
	if p.WithdrawMargin == 0 {
		p.WithdrawMargin = DefaultWithdrawMargin
	}
	if p.MaxBatch == 0 {
		p.MaxBatch = DefaultMaxBatch
	}
	if p.ScanLimit == 0 {
		p.ScanLimit = DefaultScanLimit
	}
	return p
}

// Check validates p (after defaults), naming the field and the rule.
func (p Policy) Check() error {
	p = p.withDefaults()
	switch {
	case p.Interval < 0 || p.WithdrawInterval < 0 || p.WithdrawMargin < 0 || p.IdleAfter < 0:
		return errors.New("claimer: policy: durations must not be negative")
	case 3*p.Interval+p.WithdrawMargin > batch.MinWithdrawDelay*time.Second:
		return fmt.Errorf("claimer: policy: 3 × Interval (%s) + WithdrawMargin (%s) must be at most the shortest withdrawal delay, 15m: a withdrawal could end unseen", p.Interval, p.WithdrawMargin)
	case p.WithdrawInterval > p.Interval:
		return errors.New("claimer: policy: WithdrawInterval must be at most Interval")
	case p.MaxBatch < 1 || p.MaxBatch > 1000:
		return errors.New("claimer: policy: MaxBatch must be between 1 and 1000")
	case p.ScanLimit < 1:
		return errors.New("claimer: policy: ScanLimit must be positive")
	case p.Threshold != nil && p.Threshold.Sign() <= 0:
		return errors.New("claimer: policy: Threshold must be positive (nil disables it)")
	case p.SweepThreshold != nil && p.SweepThreshold.Sign() <= 0:
		return errors.New("claimer: policy: SweepThreshold must be positive (nil sweeps after every claim)")
	}
	return nil
}

// Config configures a Claimer.
type Config struct {
	// Network is the CAIP-2 id of the chain the claimer claims on (a
	// known network: its chain id gives the escrow's EIP-712 domain).
	Network string
	// Channels is the server's channel store.
	Channels Channels
	// Log is the durable claim log.
	Log Log
	// Facilitator settles the claim, settle and refund payloads. Nil
	// allows Status only.
	Facilitator Settler
	// Chain reads the escrow's views and the receipts.
	Chain Chain
	// AuthorizerKey is the receiver authorizer's key: it signs claims and
	// refunds of the channels that name its address (others are skipped).
	// Never logged. Nil allows Status only.
	AuthorizerKey *ecdsa.PrivateKey
	// Escrow and Multicall are the contracts' addresses; zero means the
	// canonical ones.
	Escrow    common.Address
	Multicall common.Address
	// Policy says when to claim and sweep.
	Policy Policy
	// Registerer receives the claimer's metrics; nil registers none.
	Registerer prometheus.Registerer
	// Logger receives the claimer's records; nil discards them.
	Logger *slog.Logger
	// Owner names this instance in the claim log's lease (a random id
	// when empty): of the instances sharing a log, only the lease holder
	// runs Tick's passes.
	Owner string
	// Now and After are the clock (time.Now and time.After when nil).
	Now   func() time.Time
	After func(time.Duration) <-chan time.Time
}

// Claimer claims and sweeps the charges of one network's channels. Safe
// for concurrent use; passes run one at a time.
type Claimer struct {
	cfg        Config
	pol        Policy
	domain     batch.Domain
	authorizer common.Address
	rd         reader
	m          *metrics
	log        *slog.Logger

	mu          sync.Mutex
	unswept     map[[2]common.Address]batch.Channel // receivers whose sweep failed, retried next pass
	withdrawing atomic.Bool
	hook        func(step string)
}

// ErrNoKey is returned by the operations that sign when Config has no
// AuthorizerKey.
var ErrNoKey = errors.New("claimer: no receiver authorizer key: claims and refunds cannot be signed")

// ErrNoFacilitator is returned by the operations that settle when Config
// has no Facilitator.
var ErrNoFacilitator = errors.New("claimer: no facilitator: claims, sweeps and refunds cannot be settled")

// New checks cfg and returns a Claimer.
func New(cfg Config) (*Claimer, error) {
	n, ok := x402.LookupNetwork(cfg.Network)
	if !ok {
		return nil, fmt.Errorf("claimer: network %q is not a known network", cfg.Network)
	}
	switch {
	case cfg.Channels == nil:
		return nil, errors.New("claimer: Channels is required")
	case cfg.Log == nil:
		return nil, errors.New("claimer: Log is required")
	case cfg.Chain == nil:
		return nil, errors.New("claimer: Chain is required")
	}
	if err := cfg.Policy.Check(); err != nil {
		return nil, err
	}
	if cfg.Escrow == (common.Address{}) {
		cfg.Escrow = common.HexToAddress(batch.SettlementAddress)
	}
	if cfg.Multicall == (common.Address{}) {
		cfg.Multicall = common.HexToAddress(Multicall3Address)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.After == nil {
		cfg.After = time.After
	}
	if cfg.Owner == "" {
		cfg.Owner = newID()
	}
	c := &Claimer{cfg: cfg, pol: cfg.Policy.withDefaults(), domain: batch.NewDomainAt(n.ChainID, cfg.Escrow),
		rd: reader{chain: cfg.Chain, escrow: cfg.Escrow, multicall: cfg.Multicall}, log: cfg.Logger}
	if cfg.AuthorizerKey != nil {
		c.authorizer = crypto.PubkeyToAddress(cfg.AuthorizerKey.PublicKey)
	}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	c.log = c.log.With("network", cfg.Network)
	m, err := newMetrics(cfg.Registerer, cfg.Network)
	if err != nil {
		return nil, err
	}
	c.m = m
	return c, nil
}

// Authorizer returns the receiver authorizer's address (zero without a
// key).
func (c *Claimer) Authorizer() common.Address { return c.authorizer }

// Report is what a pass did.
type Report struct {
	// Recovered counts the pending claims of earlier passes resolved.
	Recovered int
	// Claims, Channels and Amount are the claims that went through, their
	// channel rows and the amount they claimed.
	Claims   int
	Channels int
	Amount   *big.Int
	// Sweeps and Swept are the sweeps to receivers and their amount.
	Sweeps int
	Swept  *big.Int
	// Unclaimed and Outstanding are the amount charged and not claimed, and
	// the channels holding it, when the pass read the chain (before its
	// claims).
	Unclaimed   *big.Int
	Outstanding int
	// Withdrawals counts the channels with unclaimed charges and a pending
	// withdrawal.
	Withdrawals int
	// Foreign counts the channels skipped because another receiver
	// authorizer signs their claims.
	Foreign int
	// GasUsed is the gas of the pass's claims and sweeps.
	GasUsed uint64
	// Standby is set when another instance holds the claim log's lease:
	// the pass did nothing.
	Standby bool
}

func newReport() Report {
	return Report{Amount: new(big.Int), Swept: new(big.Int), Unclaimed: new(big.Int)}
}

// Tick runs one pass of the policy: it resolves the pending claims, reads
// and mirrors the escrow's view of the channels with unclaimed charges,
// claims those the policy selects (pending withdrawals first) and sweeps.
// Of the instances sharing a claim log, only the one holding its lease
// (taken or renewed for 2 × Policy.Interval by each pass) runs passes;
// the others report Standby.
func (c *Claimer) Tick(ctx context.Context) (Report, error) {
	now := c.cfg.Now()
	ok, err := c.cfg.Log.Lease(ctx, c.cfg.Network, c.cfg.Owner, now, now.Add(2*c.pol.Interval))
	if err != nil {
		return newReport(), fmt.Errorf("claimer: take the claim log's lease: %w", err)
	}
	if !ok {
		rep := newReport()
		rep.Standby = true
		return rep, nil
	}
	return c.pass(ctx, false, nil)
}

// ClaimNow runs one pass that claims every channel with unclaimed
// charges, whatever the policy's thresholds say, and sweeps. It is the
// operator's: it runs whoever holds the claim log's lease (claims are
// cumulative, so a pass of the lease holder at the same time claims
// nothing twice).
func (c *Claimer) ClaimNow(ctx context.Context) (Report, error) { return c.pass(ctx, true, nil) }

// Run runs passes until ctx ends: every Policy.Interval, every
// Policy.WithdrawInterval while a withdrawal is pending. A failed pass is
// logged and the next one tries again. It returns ctx's error.
func (c *Claimer) Run(ctx context.Context) error {
	for {
		rep, err := c.Tick(ctx)
		if err != nil && ctx.Err() == nil {
			c.log.Warn("batch claimer: pass failed", "err", err)
		} else if rep.Claims > 0 || rep.Recovered > 0 || rep.Sweeps > 0 {
			c.log.Info("batch claimer: pass", "claims", rep.Claims, "channels", rep.Channels, "amount", rep.Amount.String(),
				"recovered", rep.Recovered, "sweeps", rep.Sweeps, "swept", rep.Swept.String(), "gas", rep.GasUsed)
		}
		wait := c.pol.Interval
		if c.withdrawing.Load() {
			wait = c.pol.WithdrawInterval
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-c.cfg.After(wait):
		}
	}
}

// candidate is a channel the pass may claim.
type candidate struct {
	rec      batch.ChannelRecord
	target   *big.Int  // the total the claim sets
	deadline time.Time // end of a pending withdrawal (zero: none)
}

// pass is Tick (all false), ClaimNow (all true) or the claim before a
// refund (only: the channels to claim, all of them).
func (c *Claimer) pass(ctx context.Context, all bool, only map[common.Hash]bool) (Report, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	rep := newReport()
	if c.cfg.AuthorizerKey == nil {
		return rep, ErrNoKey
	}
	if c.cfg.Facilitator == nil {
		return rep, ErrNoFacilitator
	}
	if err := c.recover(ctx, &rep); err != nil {
		return rep, err
	}
	cands, err := c.scan(ctx, &rep)
	if err != nil {
		return rep, err
	}
	now := c.cfg.Now()
	var pick []candidate
	thresholdMet := c.pol.Threshold != nil && rep.Unclaimed.Cmp(c.pol.Threshold) >= 0
	for _, cd := range cands {
		switch {
		case only != nil:
			if only[cd.rec.ID] {
				pick = append(pick, cd)
			}
		case all, thresholdMet, !cd.deadline.IsZero():
			pick = append(pick, cd)
		case c.pol.IdleAfter > 0 && now.Sub(cd.rec.LastRequestAt) >= c.pol.IdleAfter:
			pick = append(pick, cd)
		}
	}
	// Pending withdrawals first (soonest end first), then the least
	// recently charged.
	sort.SliceStable(pick, func(i, j int) bool {
		di, dj := pick[i].deadline, pick[j].deadline
		if di.IsZero() != dj.IsZero() {
			return !di.IsZero()
		}
		if !di.Equal(dj) {
			return di.Before(dj)
		}
		return pick[i].rec.LastRequestAt.Before(pick[j].rec.LastRequestAt)
	})
	for _, cd := range pick {
		if !cd.deadline.IsZero() && now.After(cd.deadline.Add(-c.pol.WithdrawMargin)) {
			c.log.Warn("batch claimer: claiming a channel close to the end of its withdrawal", "channel", cd.rec.ID.Hex(),
				"withdrawal_ends", cd.deadline.UTC().Format(time.RFC3339))
		}
	}
	receivers := map[[2]common.Address]batch.Channel{}
	for k, ch := range c.unswept {
		receivers[k] = ch
	}
	for start := 0; start < len(pick); start += c.pol.MaxBatch {
		chunk := pick[start:min(len(pick), start+c.pol.MaxBatch)]
		rows := make([]Row, len(chunk))
		for i, cd := range chunk {
			rows[i] = Row{ChannelID: cd.rec.ID, Channel: cd.rec.Channel, MaxClaimable: cloneInt(cd.rec.SignedMax),
				Signature: append([]byte(nil), cd.rec.Signature...), TotalClaimed: cloneInt(cd.target), Previous: cloneInt(cd.rec.OnChain.TotalClaimed)}
			receivers[[2]common.Address{cd.rec.Channel.Receiver, cd.rec.Channel.Token}] = cd.rec.Channel
		}
		if err := c.claimRows(ctx, rows, &rep); err != nil {
			c.keepUnswept(receivers)
			return rep, err
		}
	}
	if err := c.sweep(ctx, receivers, &rep); err != nil {
		return rep, err
	}
	return rep, nil
}

// scan lists the channels with unclaimed charges, reads and mirrors their
// escrow view, sets the gauges and returns those this claimer can claim.
func (c *Claimer) scan(ctx context.Context, rep *Report) ([]candidate, error) {
	recs, err := c.cfg.Channels.Claimable(ctx, c.cfg.Network, c.pol.ScanLimit)
	if err != nil {
		return nil, fmt.Errorf("claimer: list claimable channels: %w", err)
	}
	ids := make([]common.Hash, len(recs))
	for i, r := range recs {
		ids[i] = r.ID
	}
	views, err := c.rd.views(ctx, ids)
	if err != nil {
		return nil, err
	}
	at := c.cfg.Now()
	var out []candidate
	var oldest time.Time
	for _, r := range recs {
		oc := views[r.ID]
		if err := c.cfg.Channels.Mirror(ctx, c.cfg.Network, r.ID, oc, at); err != nil {
			return nil, fmt.Errorf("claimer: mirror channel %s: %w", r.ID.Hex(), err)
		}
		r.OnChain, r.SyncedAt = oc, at
		target := claimTarget(r)
		if target.Cmp(oc.TotalClaimed) <= 0 {
			continue
		}
		if c.domain.ChannelID(r.Channel) != r.ID {
			c.log.Error("batch claimer: a channel record's configuration does not hash to its id; skipped", "channel", r.ID.Hex())
			continue
		}
		if r.Channel.ReceiverAuthorizer != c.authorizer {
			rep.Foreign++
			continue
		}
		rep.Outstanding++
		rep.Unclaimed.Add(rep.Unclaimed, new(big.Int).Sub(target, oc.TotalClaimed))
		if oldest.IsZero() || r.LastRequestAt.Before(oldest) {
			oldest = r.LastRequestAt
		}
		cd := candidate{rec: r, target: target}
		if oc.WithdrawRequestedAt != 0 {
			rep.Withdrawals++
			cd.deadline = time.Unix(int64(oc.WithdrawRequestedAt)+int64(r.Channel.WithdrawDelay), 0)
		}
		out = append(out, cd)
	}
	c.withdrawing.Store(rep.Withdrawals > 0)
	c.m.unclaimed.WithLabelValues(c.cfg.Network).Set(float(rep.Unclaimed))
	c.m.channels.WithLabelValues(c.cfg.Network).Set(float64(rep.Outstanding))
	c.m.withdrawals.WithLabelValues(c.cfg.Network).Set(float64(rep.Withdrawals))
	age := 0.0
	if !oldest.IsZero() {
		age = max(0, at.Sub(oldest).Seconds())
	}
	c.m.oldest.WithLabelValues(c.cfg.Network).Set(age)
	return out, nil
}

// claimTarget is the total a claim of r sets: what was charged, within
// the voucher's ceiling and the channel's balance (a claim above the
// balance would revert the whole batch; what a finished withdrawal took
// cannot be claimed anyway).
func claimTarget(r batch.ChannelRecord) *big.Int {
	t := new(big.Int)
	if r.Charged == nil || r.SignedMax == nil {
		return t
	}
	t.Set(r.Charged)
	if r.SignedMax.Cmp(t) < 0 {
		t.Set(r.SignedMax)
	}
	if r.OnChain.Balance != nil && r.OnChain.Balance.Cmp(t) < 0 {
		t.Set(r.OnChain.Balance)
	}
	return t
}

// claimRows signs a claim of rows, logs it and sends it. A claim the
// escrow refuses in simulation is split in two and each half claimed on
// its own, so that one bad row cannot hold the others back; any other
// refusal (the relayer's funds, the node) ends the pass with an error.
func (c *Claimer) claimRows(ctx context.Context, rows []Row, rep *Report) error {
	claims := make([]batch.Claim, len(rows))
	for i, r := range rows {
		claims[i] = r.Claim()
	}
	sig, err := c.domain.SignClaimBatch(c.cfg.AuthorizerKey, c.domain.ClaimEntries(claims))
	if err != nil {
		return fmt.Errorf("claimer: sign the claim batch: %w", err)
	}
	rec := Record{ID: newID(), Network: c.cfg.Network, Rows: rows, AuthorizerSignature: hexutil.MustDecode(sig), State: Pending, CreatedAt: c.cfg.Now()}
	if err := c.cfg.Log.Begin(ctx, rec); err != nil {
		return fmt.Errorf("claimer: log the claim: %w", err)
	}
	c.step("signed")
	refusal, err := c.send(ctx, rec, rep, false)
	switch {
	case err != nil:
		return err
	case refusal == "":
		return nil
	case refusal == batch.ReasonClaimSimulationFailed && len(rows) > 1:
		// The escrow refuses a row: split until the bad one is alone.
		half := len(rows) / 2
		if err := c.claimRows(ctx, rows[:half], rep); err != nil {
			return err
		}
		return c.claimRows(ctx, rows[half:], rep)
	case refusal == batch.ReasonClaimSimulationFailed:
		return nil // one channel the escrow refuses: the others go on
	}
	return fmt.Errorf("claimer: the facilitator refused claim %s of %d channels: %s (they are claimed again next pass)", rec.ID, len(rows), refusal)
}

// send asks the facilitator to claim rec, then resolves it from the
// chain: covered → Done; refused and not covered → Failed (refusal is
// the facilitator's reason); anything else leaves it pending with an
// error.
func (c *Claimer) send(ctx context.Context, rec Record, rep *Report, recovering bool) (refusal string, err error) {
	if err := c.cfg.Log.Attempt(ctx, rec.ID, c.cfg.Now()); err != nil {
		return "", fmt.Errorf("claimer: log the attempt of claim %s: %w", rec.ID, err)
	}
	payload := batch.ClaimPayload{Type: batch.TypeClaim, Claims: make([]batch.VoucherClaim, len(rec.Rows)), ClaimAuthorizerSignature: hexutil.Encode(rec.AuthorizerSignature)}
	for i, r := range rec.Rows {
		payload.Claims[i] = r.Claim().Row()
	}
	resp, serr := c.settle(ctx, rec.Rows[0].Channel, payload)
	c.step("answered")
	views, err := c.rowViews(ctx, rec.Rows)
	if err != nil {
		c.m.claims.WithLabelValues(c.cfg.Network, OutcomeError).Inc()
		return "", fmt.Errorf("claimer: claim %s: read the chain after the facilitator's answer: %w", rec.ID, err)
	}
	if covered(rec.Rows, views) {
		tx, outcome, reason := "", OutcomeRecovered, "covered on chain"
		if serr == nil && resp.Success {
			tx, outcome, reason = resp.Transaction, OutcomeClaimed, ""
		}
		if recovering && outcome == OutcomeClaimed {
			outcome = OutcomeRecovered
		}
		if err := c.done(ctx, rec, tx, reason, outcome, views, rep); err != nil {
			return "", err
		}
		return "", nil
	}
	if serr == nil && !resp.Success {
		reason := clip(resp.ErrorReason + ": " + resp.ErrorMessage)
		c.log.Warn("batch claimer: the facilitator refused a claim", "claim", rec.ID, "channels", len(rec.Rows), "reason", reason)
		if err := c.cfg.Log.Finish(ctx, rec.ID, Failed, resp.Transaction, reason, c.cfg.Now()); err != nil {
			return "", fmt.Errorf("claimer: log the refusal of claim %s: %w", rec.ID, err)
		}
		c.m.claims.WithLabelValues(c.cfg.Network, OutcomeRefused).Inc()
		return resp.ErrorReason, nil
	}
	c.m.claims.WithLabelValues(c.cfg.Network, OutcomeError).Inc()
	if serr != nil {
		return "", fmt.Errorf("claimer: claim %s of %d channels: %w (it stays pending: the next pass resolves it)", rec.ID, len(rec.Rows), serr)
	}
	return "", fmt.Errorf("claimer: claim %s: the facilitator reported transaction %s but the escrow does not cover its rows yet (it stays pending)", rec.ID, resp.Transaction)
}

// done records a covered claim, mirrors its channels and counts it.
func (c *Claimer) done(ctx context.Context, rec Record, tx, reason, outcome string, views map[common.Hash]batch.OnChain, rep *Report) error {
	at := c.cfg.Now()
	if err := c.cfg.Log.Finish(ctx, rec.ID, Done, tx, reason, at); err != nil {
		return fmt.Errorf("claimer: log claim %s as done: %w", rec.ID, err)
	}
	c.step("recorded")
	for _, r := range rec.Rows {
		if err := c.cfg.Channels.Mirror(ctx, c.cfg.Network, r.ChannelID, views[r.ChannelID], at); err != nil {
			return fmt.Errorf("claimer: mirror channel %s: %w", r.ChannelID.Hex(), err)
		}
	}
	amount := new(big.Int)
	for _, r := range rec.Rows {
		d := new(big.Int).Set(r.TotalClaimed)
		if r.Previous != nil {
			d.Sub(d, r.Previous)
		}
		if d.Sign() > 0 {
			amount.Add(amount, d)
		}
	}
	gas := c.rd.gasUsed(ctx, tx)
	c.m.claims.WithLabelValues(c.cfg.Network, outcome).Inc()
	c.m.claimedAmount.WithLabelValues(c.cfg.Network).Add(float(amount))
	c.m.claimedChannel.WithLabelValues(c.cfg.Network).Add(float64(len(rec.Rows)))
	c.m.gas.WithLabelValues(c.cfg.Network, "claim").Add(float64(gas))
	if outcome == OutcomeRecovered {
		rep.Recovered++
	} else {
		rep.Claims++
		rep.Channels += len(rec.Rows)
		rep.Amount.Add(rep.Amount, amount)
	}
	rep.GasUsed += gas
	c.log.Info("batch claimer: claim recorded", "claim", rec.ID, "outcome", outcome, "channels", len(rec.Rows), "amount", amount.String(), "tx", tx, "gas", gas)
	return nil
}

// recover resolves the log's pending claims from the chain: covered →
// Done; a row no longer claimable as signed (above the balance) →
// Failed, its channels claimed anew from the channel store; otherwise
// sent again, same rows, same signature.
func (c *Claimer) recover(ctx context.Context, rep *Report) error {
	pend, err := c.cfg.Log.Pending(ctx, c.cfg.Network)
	if err != nil {
		return fmt.Errorf("claimer: list pending claims: %w", err)
	}
	for _, rec := range pend {
		views, err := c.rowViews(ctx, rec.Rows)
		if err != nil {
			return fmt.Errorf("claimer: resolve claim %s: %w", rec.ID, err)
		}
		if covered(rec.Rows, views) {
			if err := c.done(ctx, rec, "", "covered on chain at recovery", OutcomeRecovered, views, rep); err != nil {
				return err
			}
			continue
		}
		if stale := unclaimable(rec.Rows, views); stale != "" {
			if err := c.cfg.Log.Finish(ctx, rec.ID, Failed, "", "superseded: "+stale, c.cfg.Now()); err != nil {
				return fmt.Errorf("claimer: log claim %s as superseded: %w", rec.ID, err)
			}
			c.m.claims.WithLabelValues(c.cfg.Network, OutcomeSuperseded).Inc()
			rep.Recovered++
			continue
		}
		c.log.Info("batch claimer: sending a pending claim again", "claim", rec.ID, "channels", len(rec.Rows), "attempts", rec.Attempts)
		if _, err := c.send(ctx, rec, rep, true); err != nil {
			return err
		}
	}
	return nil
}

// rowViews reads the escrow's view of the rows' channels.
func (c *Claimer) rowViews(ctx context.Context, rows []Row) (map[common.Hash]batch.OnChain, error) {
	ids := make([]common.Hash, len(rows))
	for i, r := range rows {
		ids[i] = r.ChannelID
	}
	return c.rd.views(ctx, ids)
}

// covered reports whether the escrow's claimed total of every row's
// channel is at least the row's.
func covered(rows []Row, views map[common.Hash]batch.OnChain) bool {
	for _, r := range rows {
		v, ok := views[r.ChannelID]
		if !ok || v.TotalClaimed == nil || v.TotalClaimed.Cmp(r.TotalClaimed) < 0 {
			return false
		}
	}
	return true
}

// unclaimable names the first uncovered row the escrow would refuse as
// signed (its total above the channel's balance), or "".
func unclaimable(rows []Row, views map[common.Hash]batch.OnChain) string {
	for _, r := range rows {
		v := views[r.ChannelID]
		if v.TotalClaimed != nil && v.TotalClaimed.Cmp(r.TotalClaimed) >= 0 {
			continue
		}
		if v.Balance == nil || v.Balance.Cmp(r.TotalClaimed) < 0 {
			return fmt.Sprintf("channel %s holds %v, below the claimed total %s", r.ChannelID.Hex(), v.Balance, r.TotalClaimed)
		}
	}
	return ""
}

// sweep settles the claimed funds of each receiver (after every claim, or
// once they reach Policy.SweepThreshold).
func (c *Claimer) sweep(ctx context.Context, receivers map[[2]common.Address]batch.Channel, rep *Report) error {
	keys := make([][2]common.Address, 0, len(receivers))
	for k := range receivers {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i][0].Hex()+keys[i][1].Hex() < keys[j][0].Hex()+keys[j][1].Hex() })
	for _, k := range keys {
		due, err := c.rd.unsettled(ctx, k[0], k[1])
		if err != nil {
			c.keepUnswept(receivers)
			return err
		}
		if due.Sign() == 0 || (c.pol.SweepThreshold != nil && due.Cmp(c.pol.SweepThreshold) < 0) {
			delete(c.unswept, k)
			continue
		}
		resp, err := c.settle(ctx, receivers[k], batch.SettlePayload{Type: batch.TypeSettle, Receiver: k[0].Hex(), Token: k[1].Hex()})
		if err == nil && !resp.Success {
			err = fmt.Errorf("refused: %s", clip(resp.ErrorReason+": "+resp.ErrorMessage))
		}
		if err != nil {
			c.keepUnswept(receivers)
			return fmt.Errorf("claimer: sweep to %s: %w", k[0].Hex(), err)
		}
		delete(c.unswept, k)
		gas := c.rd.gasUsed(ctx, resp.Transaction)
		c.m.gas.WithLabelValues(c.cfg.Network, "sweep").Add(float64(gas))
		rep.GasUsed += gas
		rep.Sweeps++
		if amt, ok := new(big.Int).SetString(resp.Amount, 10); ok {
			rep.Swept.Add(rep.Swept, amt)
		}
		c.log.Info("batch claimer: swept", "receiver", k[0].Hex(), "amount", resp.Amount, "tx", resp.Transaction, "gas", gas)
	}
	return nil
}

// keepUnswept remembers receivers for the next pass's sweep (their claims
// went through, their sweep did not, or not yet).
func (c *Claimer) keepUnswept(receivers map[[2]common.Address]batch.Channel) {
	if c.unswept == nil {
		c.unswept = map[[2]common.Address]batch.Channel{}
	}
	for k, ch := range receivers {
		c.unswept[k] = ch
	}
}

// settle wraps a server-authored payload for the facilitator, with
// requirements built from one of its channels.
func (c *Claimer) settle(ctx context.Context, ch batch.Channel, payload any) (x402.SettleResponse, error) {
	req, err := batch.NewRequirements(batch.Offer{Network: c.cfg.Network, Amount: "1", PayTo: ch.Receiver.Hex(),
		ReceiverAuthorizer: ch.ReceiverAuthorizer, WithdrawDelay: ch.WithdrawDelay})
	if err != nil {
		return x402.SettleResponse{}, fmt.Errorf("claimer: requirements of channel receiver %s: %w", ch.Receiver.Hex(), err)
	}
	req.Asset = ch.Token.Hex()
	raw, err := json.Marshal(payload)
	if err != nil {
		return x402.SettleResponse{}, fmt.Errorf("claimer: encode payload: %w", err)
	}
	return c.cfg.Facilitator.Settle(ctx, x402.PaymentPayload{X402Version: 2, Accepted: req, Payload: raw}, req)
}

// step calls the test hook.
func (c *Claimer) step(s string) {
	if c.hook != nil {
		c.hook(s)
	}
}

// newID returns 16 random bytes in hex.
func newID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// clip bounds a facilitator's text kept in the log.
func clip(s string) string {
	if len(s) > 512 {
		return s[:512]
	}
	return s
}

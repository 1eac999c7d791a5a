// Package client is the batch-settlement scheme's part in a paying client
// (an x402.ClientScheme): the first payment of a channel deposits into the
// escrow and signs the first voucher, later payments sign vouchers of the
// cumulative amount charged so far plus the request's maximum. The
// scheme reads the payment responses (the charge and the channel's
// snapshot) and the corrective 402s of the server to keep its state, which
// lives in one JSON file per payer and channel under a directory the
// caller chooses, written atomically before a payment leaves.
package client

import (
	"context"
	"crypto/ecdsa"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/crypto"

	"github.com/seed1284c1d2/svc/x402"
	"github.com/seed1284c1d2/svc/x402/batch"
)

// DepositMultiple is the deposit, in requests of the requirement's
// maximum, when Config.Deposit is nil and the requirement announces no
// larger minDeposit.
const DepositMultiple = 100

// Config configures a Scheme.
type Config struct {
	// Key is the payer's key; the payer is its own payer authorizer.
	Key *ecdsa.PrivateKey
	// Dir holds the channel state files (created when missing).
	Dir string
	// Deposit is the amount deposited when a channel is opened or runs
	// short (atomic units); nil means DepositMultiple requests. The
	// requirement's minDeposit and the request's maximum raise it.
	Deposit *big.Int
	// MaxDeposit caps one deposit, minDeposit included: a requirement
	// asking for more is refused before anything is signed. Nil means no
	// cap.
	MaxDeposit *big.Int
	// Salt tells channels of one payer and receiver apart; the zero salt
	// is the reference clients' default.
	Salt common.Hash
}

// State is what the client keeps of one channel: its configuration, the
// cumulative amount the server charged, the highest voucher ceiling ever
// signed, and the server's last snapshot of the escrow.
type State struct {
	ChannelID     string              `json:"channelId"`
	Network       string              `json:"network"`
	ChannelConfig batch.ChannelConfig `json:"channelConfig"`
	// Charged is the server's chargedCumulativeAmount as last learned.
	Charged string `json:"chargedCumulativeAmount"`
	// Signed is the highest ceiling signed (written before it is sent).
	Signed string `json:"signedMaxClaimable"`
	// Balance, TotalClaimed and RefundNonce mirror the escrow as the
	// server last reported it.
	Balance      string `json:"balance"`
	TotalClaimed string `json:"totalClaimed"`
	RefundNonce  string `json:"refundNonce"`
	// Pending is the type of the last payment sent whose answer was not
	// read ("" when none).
	Pending string    `json:"pending,omitempty"`
	Updated time.Time `json:"updated"`
}

// Scheme pays batch-settlement requirements with one payer's key. It
// serializes its payments: one channel's cumulative amounts advance one
// request at a time.
type Scheme struct {
	key   *ecdsa.PrivateKey
	payer common.Address
	cfg   Config
	mu    sync.Mutex
}

var _ x402.ClientScheme = (*Scheme)(nil)

// New returns the scheme paying with cfg.Key and keeping state in cfg.Dir.
func New(cfg Config) (*Scheme, error) {
	if cfg.Key == nil || cfg.Key.D == nil || cfg.Key.D.Sign() <= 0 {
		return nil, errors.New("batch-settlement client: a private key is required")
	}
	if cfg.Dir == "" {
		return nil, errors.New("batch-settlement client: a state directory is required")
	}
	if cfg.Deposit != nil && cfg.Deposit.Sign() <= 0 {
		return nil, errors.New("batch-settlement client: the deposit must be positive")
	}
	if err := os.MkdirAll(cfg.Dir, 0o700); err != nil {
		return nil, fmt.Errorf("batch-settlement client: state directory: %w", err)
	}
	return &Scheme{key: cfg.Key, payer: crypto.PubkeyToAddress(cfg.Key.PublicKey), cfg: cfg}, nil
}

// Scheme implements x402.Mechanism.
func (s *Scheme) Scheme() string { return batch.Scheme }

// Networks implements x402.Mechanism: every known network.
func (s *Scheme) Networks() []string {
	var ids []string
	for _, n := range x402.Networks() {
		ids = append(ids, n.CAIP2)
	}
	return ids
}

// channel is the channel, its domain and its state file of a requirement.
type channel struct {
	ch    batch.Channel
	extra batch.Extra
	d     batch.Domain
	id    common.Hash
	path  string
}

func (s *Scheme) channelOf(req x402.PaymentRequirements) (channel, error) {
	n, ok := x402.LookupNetwork(req.Network)
	if !ok {
		return channel{}, fmt.Errorf("%w %q", x402.ErrUnknownNetwork, req.Network)
	}
	ch, extra, err := batch.NewChannel(s.key, req, s.cfg.Salt)
	if err != nil {
		return channel{}, err
	}
	d := batch.NewDomain(n.ChainID)
	id := d.ChannelID(ch)
	name := strings.ToLower(s.payer.Hex()) + "-" + strings.ToLower(id.Hex()) + ".json"
	return channel{ch: ch, extra: extra, d: d, id: id, path: filepath.Join(s.cfg.Dir, name)}, nil
}

// open returns the channel paying req and its state.
func (s *Scheme) open(req x402.PaymentRequirements) (channel, State, error) {
	c, err := s.channelOf(req)
	if err != nil {
		return c, State{}, err
	}
	st, err := c.load(req.Network)
	return c, st, err
}

// load reads the channel's state; a missing file is a channel never paid.
func (c channel) load(network string) (State, error) {
	b, err := os.ReadFile(c.path)
	if errors.Is(err, os.ErrNotExist) {
		return State{ChannelID: c.id.Hex(), Network: network, ChannelConfig: c.ch.Config(), Charged: "0", Signed: "0", Balance: "0", TotalClaimed: "0", RefundNonce: "0"}, nil
	}
	if err != nil {
		return State{}, fmt.Errorf("batch-settlement client: reading the channel state: %w", err)
	}
	var st State
	if err := json.Unmarshal(b, &st); err != nil {
		return State{}, fmt.Errorf("batch-settlement client: channel state %s: %w", c.path, err)
	}
	if !strings.EqualFold(st.ChannelID, c.id.Hex()) {
		return State{}, fmt.Errorf("batch-settlement client: channel state %s belongs to channel %s", c.path, st.ChannelID)
	}
	return st, nil
}

// save writes st atomically: a temporary file in the same directory,
// synced, then renamed over the state file.
func (c channel) save(st State) error {
	st.Updated = time.Now().UTC()
	b, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return fmt.Errorf("batch-settlement client: encoding the channel state: %w", err)
	}
	f, err := os.CreateTemp(filepath.Dir(c.path), ".channel-*.tmp")
	if err != nil {
		return fmt.Errorf("batch-settlement client: writing the channel state: %w", err)
	}
	tmp := f.Name()
	_, err = f.Write(append(b, '\n'))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, c.path)
	}
	if err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("batch-settlement client: writing the channel state: %w", err)
	}
	return nil
}

// amount parses a decimal amount of the state ("" is zero).
func amount(s string) *big.Int {
	v, ok := new(big.Int).SetString(s, 10)
	if !ok || v.Sign() < 0 {
		return new(big.Int)
	}
	return v
}

func maxOf(a, b *big.Int) *big.Int {
	if a.Cmp(b) >= 0 {
		return a
	}
	return b
}

// State returns the state kept of the channel paying req.
func (s *Scheme) State(req x402.PaymentRequirements) (State, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, st, err := s.open(req)
	return st, err
}

// Payload implements x402.ClientScheme: a voucher of the charged amount
// plus req's amount, with a deposit when the channel holds too little for
// it (the configured deposit, at least minDeposit and the request's
// maximum). The state file records the ceiling before the payload is
// returned. validity bounds a deposit's authorization (≤ 0:
// req.MaxTimeoutSeconds).
func (s *Scheme) Payload(_ context.Context, req x402.PaymentRequirements, now time.Time, validity time.Duration) (json.RawMessage, error) {
	price, ok := new(big.Int).SetString(req.Amount, 10)
	if !ok || price.Sign() <= 0 {
		return nil, fmt.Errorf("batch-settlement client: amount %q is not a positive integer", req.Amount)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	c, st, err := s.open(req)
	if err != nil {
		return nil, err
	}
	charged := amount(st.Charged)
	ceiling := new(big.Int).Add(charged, price)
	var p batch.Payload
	if ceiling.Cmp(amount(st.Balance)) > 0 {
		dep := s.depositFor(c.extra, price)
		if s.cfg.MaxDeposit != nil && dep.Cmp(s.cfg.MaxDeposit) > 0 {
			return nil, fmt.Errorf("batch-settlement client: the deposit %s (minDeposit %q) is over the cap %s", dep, c.extra.MinDeposit, s.cfg.MaxDeposit)
		}
		if validity > 0 {
			req.MaxTimeoutSeconds = int(validity / time.Second)
		}
		p, err = batch.NewDepositPayload(s.key, req, c.ch, ceiling, dep, now)
	} else {
		p, err = batch.NewVoucherPayload(s.key, c.d, c.ch, ceiling)
	}
	if err != nil {
		return nil, err
	}
	st.Signed = maxOf(amount(st.Signed), ceiling).String()
	st.Pending = p.Type
	if err := c.save(st); err != nil {
		return nil, err
	}
	return marshal(p)
}

// depositFor is the deposit of a channel short of funds for price.
func (s *Scheme) depositFor(extra batch.Extra, price *big.Int) *big.Int {
	dep := new(big.Int).Mul(price, big.NewInt(DepositMultiple))
	if s.cfg.Deposit != nil {
		dep.Set(s.cfg.Deposit)
	}
	if extra.MinDeposit != "" {
		dep = maxOf(dep, amount(extra.MinDeposit))
	}
	return maxOf(dep, price)
}

func marshal(p batch.Payload) (json.RawMessage, error) {
	raw, err := json.Marshal(p)
	if err != nil {
		return nil, fmt.Errorf("batch-settlement client: encoding the payment: %w", err)
	}
	return raw, nil
}

// RefundPayload signs a cooperative refund of the channel paying req:
// amount (nil: everything the server has not claimed) back to the payer,
// with the zero-charge voucher at the charged amount.
func (s *Scheme) RefundPayload(_ context.Context, req x402.PaymentRequirements, amt *big.Int) (json.RawMessage, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, st, err := s.open(req)
	if err != nil {
		return nil, err
	}
	p, err := batch.NewRefundPayload(s.key, c.d, c.ch, amount(st.Charged), amt)
	if err != nil {
		return nil, err
	}
	st.Pending = batch.TypeRefund
	if err := c.save(st); err != nil {
		return nil, err
	}
	return marshal(p)
}

// Refunder returns the scheme asking for a refund of amount (nil:
// everything unclaimed) in place of a payment: a Transport paying with it
// sends RefundPayload, and the refund's answer updates this scheme's
// state.
func (s *Scheme) Refunder(amt *big.Int) *Refunder { return &Refunder{s: s, amount: amt} }

// Refunder is a Scheme asking for a refund (Scheme.Refunder).
type Refunder struct {
	s      *Scheme
	amount *big.Int
}

// Scheme implements x402.Mechanism.
func (r *Refunder) Scheme() string { return r.s.Scheme() }

// Networks implements x402.Mechanism.
func (r *Refunder) Networks() []string { return r.s.Networks() }

// Payload implements x402.ClientScheme with a refund request.
func (r *Refunder) Payload(ctx context.Context, req x402.PaymentRequirements, _ time.Time, _ time.Duration) (json.RawMessage, error) {
	return r.s.RefundPayload(ctx, req, r.amount)
}

// PaymentSettled reads a refund's answer (see Scheme.PaymentSettled).
func (r *Refunder) PaymentSettled(ctx context.Context, req x402.PaymentRequirements, resp x402.SettleResponse) error {
	return r.s.PaymentSettled(ctx, req, resp)
}

// Resync reads a corrective 402 (see Scheme.Resync).
func (r *Refunder) Resync(ctx context.Context, paid x402.PaymentRequirements, pr x402.PaymentRequired) (bool, error) {
	return r.s.Resync(ctx, paid, pr)
}

// PaymentSettled reads the payment response of a paid answer: the
// channel's snapshot (its chargedCumulativeAmount, else the previous
// charge plus extra.chargedAmount) becomes the channel's state.
func (s *Scheme) PaymentSettled(_ context.Context, req x402.PaymentRequirements, resp x402.SettleResponse) error {
	if !resp.Success {
		return nil
	}
	re, err := batch.ParseResponseExtra(resp.Extra)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	c, st, err := s.open(req)
	if err != nil {
		return err
	}
	if cs := re.ChannelState; cs != nil && cs.ChannelID != "" && !strings.EqualFold(cs.ChannelID, c.id.Hex()) {
		return fmt.Errorf("batch-settlement client: the payment response is of channel %s, not %s", cs.ChannelID, c.id.Hex())
	}
	switch {
	case re.ChannelState != nil && re.ChannelState.ChargedCumulativeAmount != "":
		st.Charged = re.ChannelState.ChargedCumulativeAmount
	case re.ChargedAmount != "":
		st.Charged = new(big.Int).Add(amount(st.Charged), amount(re.ChargedAmount)).String()
	}
	if cs := re.ChannelState; cs != nil {
		st.Balance, st.TotalClaimed, st.RefundNonce = cs.Balance, cs.TotalClaimed, cs.RefundNonce
	} else if st.Pending == batch.TypeDeposit && resp.Amount != "" {
		st.Balance = new(big.Int).Add(amount(st.Balance), amount(resp.Amount)).String()
	}
	st.Pending = ""
	return c.save(st)
}

// Resync reads the 402 answering a payment of paid: when it carries the
// server's state of this channel (a corrective 402: extra.channelState,
// and extra.voucherState whose signature must be this payer's), the
// channel's state is corrected and Resync reports that the request is
// worth paying once more. A voucher the server shows that this payer did
// not sign, or a charge beyond any ceiling signed, is an error.
func (s *Scheme) Resync(_ context.Context, paid x402.PaymentRequirements, pr x402.PaymentRequired) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, err := s.channelOf(paid)
	if err != nil {
		return false, err
	}
	for _, a := range pr.Accepts {
		if a.Scheme != batch.Scheme || a.Network != paid.Network || !strings.EqualFold(a.PayTo, paid.PayTo) || !strings.EqualFold(a.Asset, paid.Asset) {
			continue
		}
		extra, err := batch.ParseExtra(a.Extra)
		if err != nil || extra.ChannelState == nil || !strings.EqualFold(extra.ChannelState.ChannelID, c.id.Hex()) {
			continue
		}
		st, err := c.load(paid.Network)
		if err != nil {
			return false, err
		}
		if err := s.adopt(c, st, *extra.ChannelState, extra.VoucherState); err != nil {
			return false, err
		}
		return true, nil
	}
	return false, nil
}

// adopt takes the server's state of channel c after checking that the
// charge it claims is covered by a voucher of this payer.
func (s *Scheme) adopt(c channel, st State, cs batch.ChannelState, vs *batch.VoucherState) error {
	charged := amount(cs.ChargedCumulativeAmount)
	if charged.Sign() > 0 {
		if vs == nil {
			return errors.New("batch-settlement client: the server claims a charge without the voucher covering it")
		}
		ceiling, ok := new(big.Int).SetString(vs.SignedMaxClaimable, 10)
		sig, err := hexutil.Decode(vs.Signature)
		if !ok || err != nil {
			return errors.New("batch-settlement client: the server's voucher state does not decode")
		}
		signer, err := c.d.VoucherSigner(c.id, ceiling, sig)
		if err != nil || signer != s.payer {
			return errors.New("batch-settlement client: the server's voucher is not signed by this payer")
		}
		if charged.Cmp(ceiling) > 0 || ceiling.Cmp(amount(st.Signed)) > 0 {
			return fmt.Errorf("batch-settlement client: the server's charge %s is beyond the ceilings signed (%s, %s)", charged, ceiling, st.Signed)
		}
	}
	st.Charged = charged.String()
	st.Balance, st.TotalClaimed, st.RefundNonce = cs.Balance, cs.TotalClaimed, cs.RefundNonce
	st.Pending = ""
	return c.save(st)
}

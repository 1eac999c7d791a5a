// Package ledger reports the settled payments of a period, for the
// operator's books: one entry per settled payment (time, tool, route,
// amount in USDC, payer, transaction, network, referral code, transport)
// and totals per tool, per day (UTC) and per referral code, as CSV or
// JSON. `svc ledger` prints it and the admin dashboard draws it, from the
// same Report.
//
// Settlements made by the local dev-mode facilitator (their transaction id
// starts with facilitator.LocalTransactionPrefix: nothing moved on chain)
// are marked Dev and totalled apart from the real revenue.
package ledger

import (
	"context"
	"fmt"
	"math/big"
	"sort"
	"strings"
	"time"

	"github.com/seed1284c1d2/svc/x402/facilitator"
)

// USDCDecimals is the number of decimals of the amounts reported (USDC's
// on every network svc sells on).
const USDCDecimals = 6

// DayLayout formats the days of Report.ByDay.
const DayLayout = "2006-01-02"

// Settlement is one settled payment as the ledger reads it from its
// Source.
type Settlement struct {
	Payer       string    // the wallet that paid (EVM address)
	ToolKey     string    // the catalog key of the tool bought
	Amount      string    // atomic units of Asset, a decimal integer
	Asset       string    // token contract address
	Network     string    // CAIP-2 network
	Transaction string    // settlement transaction hash ("local-dev:…" in dev mode)
	Nonce       string    // the EIP-3009 authorization nonce
	RefCode     string    // referral code carried by the call; empty if none
	Route       string    // what was sold ("POST /api/risk-levels"); may be empty
	Transport   string    // how the call arrived ("http", "mcp", "a2a"); may be empty
	SettledAt   time.Time // when settlement succeeded
}

// Source streams the ledger's settled payments of a period [from, to),
// oldest first, to yield, stopping at its first error; package store
// implements it.
type Source interface {
	EachSettlement(ctx context.Context, from, to time.Time, yield func(Settlement) error) error
}

// Entry is one settled payment.
type Entry struct {
	Time         time.Time `json:"time"`
	Tool         string    `json:"tool"`
	Route        string    `json:"route"`
	AmountUSDC   string    `json:"amountUsdc"`   // decimal, 6 places
	AmountAtomic string    `json:"amountAtomic"` // the asset's atomic units
	Payer        string    `json:"payer"`
	Transaction  string    `json:"transaction"`
	Network      string    `json:"network"`
	Asset        string    `json:"asset"`
	RefCode      string    `json:"refCode"`
	Transport    string    `json:"transport"`
	// Dev marks a settlement of the local dev-mode facilitator: nothing
	// moved on chain.
	Dev bool `json:"dev"`
	// ChannelCharge marks a charge to a batch-settlement channel
	// (IsChannelCharge): accepted and answered, its money claimed from the
	// escrow and swept to payTo later, in batches.
	ChannelCharge bool `json:"channelCharge"`
}

// Total sums the payments of one key (a tool, a day, a referral code).
// Calls and AmountUSDC count real settlements; DevCalls and DevAmountUSDC
// the dev-mode ones.
type Total struct {
	Key           string `json:"key"`
	Calls         int64  `json:"calls"`
	AmountUSDC    string `json:"amountUsdc"`
	DevCalls      int64  `json:"devCalls"`
	DevAmountUSDC string `json:"devAmountUsdc"`
	// ChargeCalls and ChargeAmountUSDC are the part of Calls and
	// AmountUSDC charged to batch-settlement channels (claimed and swept
	// later, in batches; the rest was settled one payment at a time).
	ChargeCalls      int64  `json:"chargeCalls"`
	ChargeAmountUSDC string `json:"chargeAmountUsdc"`

	amount, dev, charge big.Int
}

// Report is the ledger of a period.
type Report struct {
	From    time.Time `json:"from"`
	To      time.Time `json:"to"`
	Entries []Entry   `json:"payments"`
	// ByTool is sorted by tool key, ByDay by day, ByRef by real calls then
	// dev calls (most first, ties by code); ByRef leaves out payments
	// without a code.
	ByTool []Total `json:"byTool"`
	ByDay  []Total `json:"byDay"`
	ByRef  []Total `json:"byRefCode"`
	Total  Total   `json:"total"`
}

// Summarize reads the settled payments of [from, to) from src and returns
// their totals: a Report without Entries, built in memory bounded by the
// number of tools, days and referral codes, whatever the period's size.
func Summarize(ctx context.Context, src Source, from, to time.Time) (Report, error) {
	b := newBuilder(from, to)
	if err := src.EachSettlement(ctx, from, to, func(s Settlement) error {
		_, err := b.add(s)
		return err
	}); err != nil {
		return Report{}, fmt.Errorf("ledger: %w", err)
	}
	return b.report(), nil
}

// Build makes the report of settlements (of the period [from, to)), every
// entry included.
func Build(from, to time.Time, rows []Settlement) (Report, error) {
	b := newBuilder(from, to)
	b.r.Entries = make([]Entry, 0, len(rows))
	for _, s := range rows {
		e, err := b.add(s)
		if err != nil {
			return Report{}, err
		}
		b.r.Entries = append(b.r.Entries, e)
	}
	return b.report(), nil
}

// builder adds settlements up, one at a time.
type builder struct {
	r                 Report
	tools, days, refs map[string]*Total
}

func newBuilder(from, to time.Time) *builder {
	return &builder{r: Report{From: from.UTC(), To: to.UTC(), Entries: []Entry{}, Total: Total{Key: "total"}},
		tools: map[string]*Total{}, days: map[string]*Total{}, refs: map[string]*Total{}}
}

// add counts s in the totals and returns its entry.
func (b *builder) add(s Settlement) (Entry, error) {
	amt, ok := new(big.Int).SetString(s.Amount, 10)
	if !ok || amt.Sign() < 0 {
		return Entry{}, fmt.Errorf("ledger: settlement %s of %s: amount %q is not a decimal integer", s.Nonce, s.Payer, s.Amount)
	}
	e := Entry{
		Time: s.SettledAt.UTC(), Tool: s.ToolKey, Route: s.Route, AmountUSDC: FormatUSDC(amt), AmountAtomic: amt.String(),
		Payer: s.Payer, Transaction: s.Transaction, Network: s.Network, Asset: s.Asset, RefCode: s.RefCode,
		Transport: s.Transport, Dev: IsDev(s), ChannelCharge: IsChannelCharge(s),
	}
	add(&b.r.Total, amt, e)
	add(bucket(b.tools, e.Tool), amt, e)
	add(bucket(b.days, e.Time.Format(DayLayout)), amt, e)
	if e.RefCode != "" {
		add(bucket(b.refs, e.RefCode), amt, e)
	}
	return e, nil
}

// report finishes the totals.
func (b *builder) report() Report {
	r := b.r
	r.ByTool, r.ByDay, r.ByRef = sorted(b.tools), sorted(b.days), sorted(b.refs)
	sort.SliceStable(r.ByRef, func(i, j int) bool {
		a, b := r.ByRef[i], r.ByRef[j]
		if a.Calls != b.Calls {
			return a.Calls > b.Calls
		}
		return a.DevCalls > b.DevCalls
	})
	finish(&r.Total)
	return r
}

// IsChannelCharge reports whether s is a charge to a batch-settlement
// payment channel (a voucher, or the deposit that opened or topped up the
// channel), whose money reaches payTo later, when the claimer claims the
// channel's latest voucher and sweeps: its Nonce is the scheme's payment id,
// "<channel id>:<cumulative amount>:<payload type>", and its Transaction is
// empty for a voucher. An exact payment's nonce is one 0x-hex word.
func IsChannelCharge(s Settlement) bool {
	return strings.Count(s.Nonce, ":") >= 2
}

// IsDev reports whether s was settled by the local dev-mode facilitator.
func IsDev(s Settlement) bool {
	return strings.HasPrefix(s.Transaction, facilitator.LocalTransactionPrefix)
}

func bucket(m map[string]*Total, key string) *Total {
	t := m[key]
	if t == nil {
		t = &Total{Key: key}
		m[key] = t
	}
	return t
}

func add(t *Total, amt *big.Int, e Entry) {
	if e.Dev {
		t.DevCalls++
		t.dev.Add(&t.dev, amt)
		return
	}
	t.Calls++
	t.amount.Add(&t.amount, amt)
	if e.ChannelCharge {
		t.ChargeCalls++
		t.charge.Add(&t.charge, amt)
	}
}

func finish(t *Total) {
	t.AmountUSDC, t.DevAmountUSDC, t.ChargeAmountUSDC = FormatUSDC(&t.amount), FormatUSDC(&t.dev), FormatUSDC(&t.charge)
}

// sorted lists the totals of m by key.
func sorted(m map[string]*Total) []Total {
	out := make([]Total, 0, len(m))
	for _, t := range m {
		finish(t)
		out = append(out, *t)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out
}

// FormatUSDC renders atomic USDC units as a decimal with 6 places
// ("3400" → "0.003400").
func FormatUSDC(atomic *big.Int) string {
	s := new(big.Int).Abs(atomic).String()
	if len(s) <= USDCDecimals {
		s = strings.Repeat("0", USDCDecimals-len(s)+1) + s
	}
	out := s[:len(s)-USDCDecimals] + "." + s[len(s)-USDCDecimals:]
	if atomic.Sign() < 0 {
		out = "-" + out
	}
	return out
}

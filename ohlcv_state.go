package svc

import (
	"context"
	"fmt"

	"github.com/shopspring/decimal"
)

// Limits of OHLCVState.
const (
	// OHLCVMaxBars is the largest number of bars OHLCVState accepts.
	OHLCVMaxBars = 10000
	// ohlcvMaxFieldErrors bounds the field errors reported for the bars, so
	// that 10 000 bad bars do not produce a megabyte of errors.
	ohlcvMaxFieldErrors = 20
)

// OHLCVBar is one price bar. Open, High, Low and Close are required; Time,
// Volume and TickVolume are optional, checked for sanity and otherwise not
// used, so that the bars of xau_bars (which carry time and tick_volume) can
// be passed as they are. Bars are taken oldest first.
type OHLCVBar struct {
	// Time is an optional label (for instance an RFC 3339 timestamp), at
	// most 64 characters; it is not interpreted.
	Time string `json:"time,omitempty" validate:"max=64"`
	// Open, High, Low and Close are prices > 0 with Low ≤ min(Open, Close)
	// and High ≥ max(Open, Close).
	Open  Number `json:"open" validate:"required,gt=0"`
	High  Number `json:"high" validate:"required,gt=0"`
	Low   Number `json:"low" validate:"required,gt=0"`
	Close Number `json:"close" validate:"required,gt=0"`
	// Volume and TickVolume are optional, ≥ 0 when given; not used.
	Volume     Number `json:"volume,omitzero" validate:"omitempty,gte=0"`
	TickVolume Number `json:"tick_volume,omitzero" validate:"omitempty,gte=0"`
}

// OHLCVStateRequest is the input of OHLCVState.
type OHLCVStateRequest struct {
	// Bars is the series, oldest first; 1 to 10 000 bars.
	Bars []OHLCVBar `json:"bars" validate:"required,min=1,max=10000"`
}

// OHLCVStateResponse is the output of OHLCVState.
type OHLCVStateResponse struct {
	// ReturnPct is (lastClose − firstClose)/firstClose·100.
	ReturnPct Number `json:"returnPct"`
	// RangePosition is where the last close sits in the series' range,
	// (lastClose − low)/(high − low), 0 at the low and 1 at the high; 0.5
	// when the range is zero.
	RangePosition Number `json:"rangePosition"`
	// ATR is the mean true range over all bars.
	ATR Number `json:"atr"`
	// Bars is the number of bars.
	Bars int `json:"bars"`
	// FirstClose and LastClose are the closes of the first and last bar.
	FirstClose Number `json:"firstClose"`
	LastClose  Number `json:"lastClose"`
	// High and Low are the highest high and the lowest low of the series.
	High Number `json:"high"`
	Low  Number `json:"low"`
}

// OHLCVState summarises a series of OHLC bars:
//
//	returnPct     = (lastClose − firstClose)/firstClose·100
//	rangePosition = (lastClose − min low)/(max high − min low), 0.5 when max high = min low
//	atr           = mean true range over all bars
//
// The true range of the first bar is high − low; of any later bar it is
// max(high, previous close) − min(low, previous close). Example: bars
// (100, 102, 99, 101), (101, 103, 100, 102) → returnPct ≈ 0.99009901,
// rangePosition 0.75, atr 3. Arithmetic is exact decimal; a non-terminating
// quotient is rounded half-even to 8 places. rangePosition is always in
// [0, 1] and atr ≥ 0.
//
// Rules: 1 to 10 000 bars ("required", "min", "max" on field "bars"); for
// each bar, open, high, low and close are required and > 0, low ≤ min(open,
// close) and high ≥ max(open, close) (rule "ohlc_consistency" on
// bars[i].low or bars[i].high); volume and tick_volume ≥ 0 and time at most
// 64 characters when given. Errors name the bar ("bars[3].high"). After 20
// bar errors the rest are summarised by one error with field "bars" and
// rule "too_many_errors".
func OHLCVState(ctx context.Context, req OHLCVStateRequest) (OHLCVStateResponse, error) {
	if err := ctx.Err(); err != nil {
		return OHLCVStateResponse{}, errorf(KindTimeout, err, "ohlcv_state: %v", err)
	}
	if err := req.Validate(); err != nil {
		return OHLCVStateResponse{}, err
	}

	bars := req.Bars
	first := bars[0].Close.Decimal()
	last := bars[len(bars)-1].Close.Decimal()
	hi, lo := bars[0].High.Decimal(), bars[0].Low.Decimal()
	trSum := hi.Sub(lo)
	for i := 1; i < len(bars); i++ {
		h, l := bars[i].High.Decimal(), bars[i].Low.Decimal()
		trSum = trSum.Add(ohlcvTrueRange(h, l, bars[i-1].Close.Decimal()))
		hi = decimal.Max(hi, h)
		lo = decimal.Min(lo, l)
	}
	pos := decimal.New(5, -1)
	if rng := hi.Sub(lo); rng.IsPositive() {
		pos = quo(last.Sub(lo), rng)
	}
	return OHLCVStateResponse{
		ReturnPct:     NewNumber(quo(last.Sub(first).Mul(decimal.NewFromInt(100)), first)),
		RangePosition: NewNumber(pos),
		ATR:           NewNumber(quo(trSum, decimal.NewFromInt(int64(len(bars))))),
		Bars:          len(bars),
		FirstClose:    bars[0].Close,
		LastClose:     bars[len(bars)-1].Close,
		High:          NewNumber(hi),
		Low:           NewNumber(lo),
	}, nil
}

// ohlcvTrueRange is max(high, prevClose) − min(low, prevClose).
func ohlcvTrueRange(high, low, prevClose decimal.Decimal) decimal.Decimal {
	return decimal.Max(high, prevClose).Sub(decimal.Min(low, prevClose))
}

// ohlcvValidateBars checks every bar and records the first
// ohlcvMaxFieldErrors errors, then one "too_many_errors" summary when more
// were found.
func ohlcvValidateBars(fe *fieldErrors, bars []OHLCVBar) {
	total, badBars := 0, 0
	var bfe fieldErrors
	for i := range bars {
		bfe = bfe[:0]
		ohlcvValidateBar(&bfe, fmt.Sprintf("bars[%d]", i), &bars[i])
		if len(bfe) == 0 {
			continue
		}
		badBars++
		for _, e := range bfe {
			if total < ohlcvMaxFieldErrors {
				*fe = append(*fe, e)
			}
			total++
		}
	}
	if total > ohlcvMaxFieldErrors {
		fe.add("bars", "too_many_errors", "has %d errors in %d invalid bars; only the first %d are listed",
			total, badBars, ohlcvMaxFieldErrors)
	}
}

// ohlcvBarTags are the compiled validate tags of OHLCVBar.
var ohlcvBarTags = compileTags[OHLCVBar]()

// ohlcvValidateBar records the errors of one bar under the path prefix p:
// its tags, then OHLC consistency when the four prices are valid.
func ohlcvValidateBar(fe *fieldErrors, p string, b *OHLCVBar) {
	n := len(*fe)
	ohlcvBarTags.check(fe, p, b)
	for _, e := range (*fe)[n:] {
		switch e.Field {
		case p + ".open", p + ".high", p + ".low", p + ".close":
			return
		}
	}
	o, h, l, c := b.Open.Decimal(), b.High.Decimal(), b.Low.Decimal(), b.Close.Decimal()
	if m := decimal.Min(o, c); l.GreaterThan(m) {
		fe.add(p+".low", "ohlc_consistency", "breaks OHLC consistency: low %s is above min(open, close) = %s", l.String(), m.String())
	}
	if m := decimal.Max(o, c); h.LessThan(m) {
		fe.add(p+".high", "ohlc_consistency", "breaks OHLC consistency: high %s is below max(open, close) = %s", h.String(), m.String())
	}
}

// ohlcvStateTags are the compiled validate tags of OHLCVStateRequest.
var ohlcvStateTags = compileTags[OHLCVStateRequest]()

// Validate reports whether OHLCVState accepts req, without computing: the
// same *Error (KindInvalid, one FieldError per broken rule) OHLCVState
// returns for it, or nil.
func (req *OHLCVStateRequest) Validate() error {
	if req == nil {
		return InvalidField("", "required", "the request is missing")
	}
	var fe fieldErrors
	ohlcvStateTags.check(&fe, "", req)
	if err := fe.err(); err != nil {
		return err
	}
	ohlcvValidateBars(&fe, req.Bars)
	return fe.err()
}

package svc

import (
	"context"
	"math"
	"math/big"

	"github.com/shopspring/decimal"

	"github.com/seed1284c1d2/svc/internal/clip"
	"github.com/seed1284c1d2/svc/xau"
)

// XAUATRPeriod is the period of the Wilder ATR of MarketStateOf, and the
// fewest bars it accepts.
const XAUATRPeriod = 14

// Trend is the direction of a bar series: "up", "down" or "flat".
type Trend string

// The trends MarketStateOf reports.
const (
	TrendUp   Trend = "up"
	TrendDown Trend = "down"
	TrendFlat Trend = "flat"
)

// XAUTrendThresholdPct returns the trend threshold of timeframe tf, in
// percent of the mean close per bar: a series is flat when its least-squares
// slope is smaller than this in absolute value.
//
//	M1 0.0025   M5 0.005   M15 0.01   H1 0.02   (% of price per bar)
//
// The thresholds grow with the square root of the bar length, as the
// typical move of a bar does, so that they sit at about the same fraction
// (0.08–0.09) of gold's per-bar volatility on every timeframe: at 17 % a
// year over 260 trading days, one bar moves about 0.028 % (M1), 0.062 %
// (M5), 0.11 % (M15) and 0.22 % (H1). At 3300 $/oz the M5 threshold is a
// drift of 0.165 $ a bar, 2 $ an hour. The trend describes the bars
// analysed; it is not a forecast. It returns an unset Number for an
// invalid timeframe.
func XAUTrendThresholdPct(tf xau.Timeframe) Number {
	switch tf {
	case xau.M1:
		return NewNumber(decimal.New(25, -4))
	case xau.M5:
		return NewNumber(decimal.New(5, -3))
	case xau.M15:
		return NewNumber(decimal.New(1, -2))
	case xau.H1:
		return NewNumber(decimal.New(2, -2))
	}
	return Number{}
}

// MarketState is the state of a bar series computed by MarketStateOf: the
// statistics part of XAUMarketStateResponse.
type MarketState struct {
	// Trend is "up" when SlopePctPerBar ≥ TrendThresholdPct, "down" when
	// SlopePctPerBar ≤ −TrendThresholdPct and "flat" otherwise (compared
	// exactly, before rounding).
	Trend Trend `json:"trend"`
	// Slope is the least-squares slope of the closes against the bar index,
	// in price per bar.
	Slope Number `json:"slope"`
	// SlopePctPerBar is Slope / mean close · 100.
	SlopePctPerBar Number `json:"slopePctPerBar"`
	// TrendThresholdPct is the threshold used (XAUTrendThresholdPct).
	TrendThresholdPct Number `json:"trendThresholdPct"`
	// ATR is the Wilder average true range over ATRPeriod bars.
	ATR Number `json:"atr"`
	// ATRPeriod is 14.
	ATRPeriod int `json:"atrPeriod"`
	// RealizedVolPct is the sample standard deviation of the log
	// close-to-close returns · 100 (per bar, not annualised).
	RealizedVolPct Number `json:"realizedVolPct"`
	// RangePosition and ReturnPct are those of OHLCVState over the same
	// bars; High and Low are the highest high and the lowest low.
	RangePosition Number `json:"rangePosition"`
	ReturnPct     Number `json:"returnPct"`
	High          Number `json:"high"`
	Low           Number `json:"low"`
	// FirstClose and LastClose are the closes of the first and last bar.
	FirstClose Number `json:"firstClose"`
	LastClose  Number `json:"lastClose"`
	// LastTime is the open time of the last bar, RFC 3339 in UTC.
	LastTime string `json:"lastTime"`
	// Timezone, London, NewYork, Asia and MinuteOfDay are SessionState at
	// LastTime: which sessions were open when the last bar opened, and the
	// Europe/Vienna minute of the day.
	Timezone    string `json:"timezone"`
	London      bool   `json:"london"`
	NewYork     bool   `json:"newYork"`
	Asia        bool   `json:"asia"`
	MinuteOfDay int    `json:"minuteOfDay"`
}

// MarketStateOf computes the market state of bars (oldest first) on
// timeframe tf. It is the pure arithmetic behind XAUMarketState, with no
// terminal involved. With n bars and closes c₀…cₙ₋₁:
//
//   - slope = Σ(i − ī)(cᵢ − c̄) / Σ(i − ī)² = (12·Σi·cᵢ − 6(n−1)·Σcᵢ) / (n(n²−1)),
//     the least-squares slope of the closes per bar; slopePctPerBar =
//     slope / c̄ · 100. Both are exact decimals, rounded half-even to 8
//     places when they do not terminate. trend compares slopePctPerBar
//     exactly with XAUTrendThresholdPct(tf): up at or above it, down at or
//     below its negative, flat in between. Scaling every price by k > 0
//     leaves slopePctPerBar, and so the trend, unchanged.
//   - atr is Wilder's ATR(14). The true range of the first bar is
//     high − low, of any later bar max(high, previous close) − min(low,
//     previous close); the first ATR is the mean of the first 14 true
//     ranges (bars 0–13), then for each later bar ATR = (previous ATR·13 +
//     TR)/14. The recursion runs in exact rational arithmetic and only the
//     result is rounded (half-even, 8 places), so atr scales exactly with
//     the prices up to that rounding.
//   - realizedVolPct is the sample standard deviation (n − 2 degrees of
//     freedom: n − 1 returns less one for their mean) of the log returns
//     rᵢ = ln(cᵢ/cᵢ₋₁), times 100: per bar, not annualised. It is computed
//     in float64 from the exact ratio of the closes (so it does not change
//     when prices are scaled) and rounded half-even to 8 places.
//   - rangePosition and returnPct are exactly those of OHLCVState:
//     (lastClose − min low)/(max high − min low), 0.5 for a zero range, and
//     (lastClose − firstClose)/firstClose·100.
//   - the session flags are SessionState at the last bar's open time (its
//     time field; the last bar may still be forming, so its open time is
//     the one instant it certainly covers).
//
// Rules: tf one of M1, M5, M15, H1 (field "timeframe", rule "oneof"); 14
// to 10 000 bars (field "bars", rules "min", "max"); the bars must pass
// xau.ValidateBars (field "bars", rule "bars": prices > 0, OHLC consistent,
// tick volume ≥ 0, times aligned to tf and strictly increasing), and the
// prices the number bounds of OHLCVState (below 1e30, at most 30 decimal
// places; field "bars[i].high" and so on). Errors are KindInvalid.
func MarketStateOf(bars []xau.Bar, tf xau.Timeframe) (MarketState, error) {
	var fe fieldErrors
	if !tf.Valid() {
		fe.add("timeframe", "oneof", "must be one of: M1, M5, M15, H1, got %q", clip.Runes(string(tf), 16))
	}
	switch n := len(bars); {
	case n < XAUATRPeriod:
		fe.add("bars", "min", "must have at least %d items, got %d", XAUATRPeriod, n)
	case n > OHLCVMaxBars:
		fe.add("bars", "max", "must have at most %d items, got %d", OHLCVMaxBars, n)
	case tf.Valid():
		if err := xau.ValidateBars(bars, tf); err != nil {
			fe.add("bars", "bars", "%v", err)
		}
	}
	if err := fe.err(); err != nil {
		return MarketState{}, err
	}

	ctx := context.Background()
	oh, err := OHLCVState(ctx, OHLCVStateRequest{Bars: xauOHLCVBars(bars)})
	if err != nil {
		return MarketState{}, err
	}
	sess, err := SessionState(ctx, SessionStateRequest{Now: bars[len(bars)-1].Time})
	if err != nil {
		return MarketState{}, err
	}
	slope, slopePct, trend := xauTrend(bars, tf)
	return MarketState{
		Trend:             trend,
		Slope:             NewNumber(slope),
		SlopePctPerBar:    NewNumber(slopePct),
		TrendThresholdPct: XAUTrendThresholdPct(tf),
		ATR:               NewNumber(xauWilderATR(bars)),
		ATRPeriod:         XAUATRPeriod,
		RealizedVolPct:    NewNumber(xauRealizedVolPct(bars)),
		RangePosition:     oh.RangePosition,
		ReturnPct:         oh.ReturnPct,
		High:              oh.High,
		Low:               oh.Low,
		FirstClose:        oh.FirstClose,
		LastClose:         oh.LastClose,
		LastTime:          xauTime(bars[len(bars)-1].Time),
		Timezone:          sess.Timezone,
		London:            sess.London,
		NewYork:           sess.NewYork,
		Asia:              sess.Asia,
		MinuteOfDay:       sess.MinuteOfDay,
	}, nil
}

// xauTrend returns the least-squares slope of the closes per bar, the slope
// in percent of the mean close, and the trend on tf. len(bars) ≥ 2.
func xauTrend(bars []xau.Bar, tf xau.Timeframe) (slope, slopePct decimal.Decimal, trend Trend) {
	n := int64(len(bars))
	sum, sumXC := decimal.Zero, decimal.Zero
	for i, b := range bars {
		sum = sum.Add(b.Close)
		sumXC = sumXC.Add(b.Close.Mul(decimal.NewFromInt(int64(i))))
	}
	// num/(n(n²−1)) is the slope; num·100/((n²−1)·Σc) the slope in % of the mean.
	num := sumXC.Mul(decimal.NewFromInt(12)).Sub(sum.Mul(decimal.NewFromInt(6 * (n - 1))))
	nn := decimal.NewFromInt(n*n - 1)
	slope = quo(num, nn.Mul(decimal.NewFromInt(n)))
	pctNum := num.Mul(decimal.NewFromInt(100))
	pctDen := nn.Mul(sum)
	slopePct = quo(pctNum, pctDen)
	// |slopePct| ≥ thr ⇔ |pctNum| ≥ thr·pctDen, exactly (pctDen > 0).
	bound := XAUTrendThresholdPct(tf).Decimal().Mul(pctDen)
	switch {
	case pctNum.GreaterThanOrEqual(bound):
		trend = TrendUp
	case pctNum.LessThanOrEqual(bound.Neg()):
		trend = TrendDown
	default:
		trend = TrendFlat
	}
	return slope, slopePct, trend
}

// xauWilderATR returns Wilder's ATR(XAUATRPeriod) of bars, computed
// exactly and rounded once. len(bars) ≥ XAUATRPeriod.
//
// With the true ranges as integers Tᵢ in units of 10^e (e the smallest
// exponent of the prices) and P = XAUATRPeriod, the k-th ATR is
// Aₖ / P^(k−P+2) units, where A₍P−1₎ = T₀ + … + T₍P−1₎ and
// Aₖ = (P−1)·Aₖ₋₁ + Tₖ·P^(k−P+1): the recursion ATR = (ATR·(P−1) + TR)/P
// in integers, without the cost of normalising fractions at each step.
func xauWilderATR(bars []xau.Bar) decimal.Decimal {
	e := int32(0)
	for _, b := range bars {
		e = min(e, b.High.Exponent(), b.Low.Exponent(), b.Close.Exponent())
	}
	units := func(i int) *big.Int {
		var tr decimal.Decimal
		if i == 0 {
			tr = bars[0].High.Sub(bars[0].Low)
		} else {
			tr = ohlcvTrueRange(bars[i].High, bars[i].Low, bars[i-1].Close)
		}
		return tr.Shift(-e).BigInt() // exact: tr is a multiple of 10^e
	}
	acc := new(big.Int)
	for i := range XAUATRPeriod {
		acc.Add(acc, units(i))
	}
	period := big.NewInt(XAUATRPeriod)
	keep := big.NewInt(XAUATRPeriod - 1)
	pow := big.NewInt(XAUATRPeriod) // P^(k−P+2) for the current k
	t := new(big.Int)
	for k := XAUATRPeriod; k < len(bars); k++ {
		acc.Mul(acc, keep)
		acc.Add(acc, t.Mul(units(k), pow))
		pow.Mul(pow, period)
	}
	return quo(decimal.NewFromBigInt(acc, e), decimal.NewFromBigInt(pow, 0))
}

// xauReturnPlaces is the precision, in decimal places, of the relative
// change a log return is computed from.
const xauReturnPlaces = 40

// xauRealizedVolPct returns the sample standard deviation of the log
// close-to-close returns of bars, times 100, rounded half-even to 8 places.
// len(bars) ≥ 3.
//
// Each return depends only on the ratio of two closes, so the result does
// not change when every price is scaled by the same factor. For moves
// within a factor of two it is log1p of the relative change (cᵢ − cᵢ₋₁)/cᵢ₋₁,
// computed exactly to 40 places and converted to the nearest float64
// (precise for the small returns of real bars); beyond, ln of the ratio
// converted exactly to the nearest float64, finite for any positive prices.
func xauRealizedVolPct(bars []xau.Bar) decimal.Decimal {
	m := len(bars) - 1
	rets := make([]float64, m)
	var mean float64
	two := decimal.NewFromInt(2)
	for i := 1; i < len(bars); i++ {
		c, prev := bars[i].Close, bars[i-1].Close
		var r float64
		if c.Mul(two).GreaterThanOrEqual(prev) && c.LessThanOrEqual(prev.Mul(two)) {
			rel, _ := c.Sub(prev).QuoRem(prev, xauReturnPlaces)
			f, _ := rel.Float64()
			r = math.Log1p(f)
		} else {
			f, _ := new(big.Rat).Quo(c.Rat(), prev.Rat()).Float64()
			r = math.Log(f)
		}
		rets[i-1] = r
		mean += r
	}
	mean /= float64(m)
	var ss float64
	for _, r := range rets {
		ss += (r - mean) * (r - mean)
	}
	return round8(decimal.NewFromFloat(math.Sqrt(ss/float64(m-1)) * 100))
}

// XAUMarketStateRequest is the input of XAUMarketState.
type XAUMarketStateRequest struct {
	// Timeframe is one of "M1", "M5", "M15", "H1" (exact spelling);
	// optional, default "M5".
	Timeframe string `json:"timeframe,omitempty" validate:"omitempty,oneof=M1 M5 M15 H1"`
	// Count is the number of bars analysed, 30 to 500; optional (nil),
	// default 100.
	Count *int `json:"count,omitempty" validate:"omitempty,min=30,max=500"`
	// DefaultSymbol is the operator's gold symbol; empty means
	// DefaultGoldSymbol ("XAUUSD"). It is set by the server from its
	// configuration and never read from JSON.
	DefaultSymbol string `json:"-"`
}

// XAUMarketStateResponse is the output of XAUMarketState: the symbol,
// timeframe and number of bars analysed, the MarketState of those bars
// (its fields appear at the top level of the JSON object) and the source.
type XAUMarketStateResponse struct {
	// Symbol is the terminal symbol analysed.
	Symbol string `json:"symbol"`
	// Timeframe is the bars' timeframe.
	Timeframe xau.Timeframe `json:"timeframe"`
	// Count is the number of bars analysed: the count asked for, or fewer
	// (at least 30) when the terminal has less history.
	Count int `json:"count"`
	// MarketState holds trend, slope, atr, realizedVolPct, rangePosition,
	// returnPct, the session flags of the last bar and the rest; see
	// MarketStateOf for the formulas.
	MarketState
	// Source says where the bars come from: "simulated", "mt5", "replay",
	// "scripted", ...; simulated data is never passed off as market data.
	Source xau.Source `json:"source"`
}

// xauMarketStateTags are the compiled validate tags of XAUMarketStateRequest.
var xauMarketStateTags = compileTags[XAUMarketStateRequest]()

// XAUMarketState analyses the most recent bars of the configured gold
// symbol from the trading terminal t: trend (from the least-squares slope
// of the closes, with the threshold of XAUTrendThresholdPct), slope, Wilder
// ATR(14), realized volatility, range position, return and the session
// flags of the last bar. The formulas are those of MarketStateOf.
//
// Rules, checked before t is called: timeframe one of M1, M5, M15, H1
// (rule "oneof"; default M5), count 30 to 500 (rules "min", "max"; default
// 100). The bars are checked again as untrusted data (xau.ValidateBars);
// bad bars, or fewer than 30, are KindUnavailable and never used. Terminal
// errors map to: unavailable → KindUnavailable (HTTP 503), unknown symbol →
// KindInvalid with field "symbol" and rule "unknown_symbol", a deadline →
// KindTimeout. The response carries the terminal's source.
func XAUMarketState(ctx context.Context, t xau.Terminal, req XAUMarketStateRequest) (XAUMarketStateResponse, error) {
	const tool = "xau_market_state"
	if err := ctx.Err(); err != nil {
		return XAUMarketStateResponse{}, errorf(KindTimeout, err, "%s: %v", tool, err)
	}
	var fe fieldErrors
	xauMarketStateTags.check(&fe, "", &req)
	if err := fe.err(); err != nil {
		return XAUMarketStateResponse{}, err
	}
	symbol, err := xauResolveSymbol(tool, "", req.DefaultSymbol)
	if err != nil {
		return XAUMarketStateResponse{}, err
	}
	tf := xauTimeframe(req.Timeframe)
	count := xauCount(req.Count, XAUMarketStateDefaultCount)
	bars, source, err := xauFetchBars(ctx, t, tool, symbol, tf, count, XAUMarketStateMinCount)
	if err != nil {
		return XAUMarketStateResponse{}, err
	}
	ms, err := MarketStateOf(bars, tf)
	if err != nil {
		if KindOf(err) == KindInvalid { // the terminal's bars, not the client's input
			return XAUMarketStateResponse{}, errorf(KindUnavailable, err, "%s: the trading terminal sent bars that cannot be analysed", tool)
		}
		return XAUMarketStateResponse{}, err
	}
	return XAUMarketStateResponse{
		Symbol:      symbol,
		Timeframe:   tf,
		Count:       len(bars),
		MarketState: ms,
		Source:      source,
	}, nil
}

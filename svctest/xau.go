package svctest

import (
	"math/rand"
	"reflect"
	"time"

	"github.com/leanovate/gopter"
	"github.com/leanovate/gopter/gen"
	"github.com/shopspring/decimal"

	"github.com/seed1284c1d2/svc"
	"github.com/seed1284c1d2/svc/xau"
)

// This file holds the generators of the terminal-backed gold tools:
// xau_quote, xau_bars and xau_market_state, and of terminal bar series for
// svc.MarketStateOf.

// XAUQuoteRequest generates valid svc.XAUQuoteRequest values that the
// simulated terminal with its default symbol answers: Symbol and
// DefaultSymbol are each empty or "XAUUSD". Use XAUSymbol for the full
// range of valid symbol syntax.
func XAUQuoteRequest() gopter.Gen {
	return func(p *gopter.GenParameters) *gopter.GenResult {
		r := p.Rng
		var req svc.XAUQuoteRequest
		if r.Intn(2) == 0 {
			req.Symbol = svc.DefaultGoldSymbol
		}
		if r.Intn(2) == 0 {
			req.DefaultSymbol = svc.DefaultGoldSymbol
		}
		return gopter.NewGenResult(req, gopter.NoShrinker)
	}
}

// XAUSymbol generates syntactically valid terminal symbols (xau.CheckSymbol
// accepts them): broker spellings of gold ("XAUUSD", "XAUUSD.a", "GOLD#",
// "XAUUSDm", ...) half of the time, otherwise 1 to 32 characters from
// A–Z a–z 0–9 . _ - # + !, the longest length often.
func XAUSymbol() gopter.Gen {
	known := []string{"XAUUSD", "XAUUSD.a", "XAUUSDm", "XAUUSD#", "GOLD", "GOLD.pro", "XAUUSD_i", "XAUUSD+", "XAU-USD", "xauusd", "XAUUSD!"}
	const chars = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789._-#+!"
	return func(p *gopter.GenParameters) *gopter.GenResult {
		r := p.Rng
		if r.Intn(2) == 0 {
			return gopter.NewGenResult(known[r.Intn(len(known))], gopter.NoShrinker)
		}
		n := 1 + r.Intn(xau.MaxSymbolLen)
		if r.Intn(5) == 0 {
			n = xau.MaxSymbolLen
		}
		b := make([]byte, n)
		for i := range b {
			b[i] = chars[r.Intn(len(chars))]
		}
		return gopter.NewGenResult(string(b), gopter.NoShrinker)
	}
}

// XAUTimeframe generates one of xau.M1, xau.M5, xau.M15, xau.H1.
func XAUTimeframe() gopter.Gen {
	return gen.OneConstOf(xau.M1, xau.M5, xau.M15, xau.H1)
}

// XAUBarsRequest generates valid svc.XAUBarsRequest values: the timeframe
// empty (the default) one time in five, else one of M1, M5, M15, H1; the
// count nil (the default) one time in five, else 10 to 500 with the bounds
// 10 and 500 drawn often. DefaultSymbol is empty or "XAUUSD".
func XAUBarsRequest() gopter.Gen {
	return func(p *gopter.GenParameters) *gopter.GenResult {
		r := p.Rng
		req := svc.XAUBarsRequest{
			Timeframe: xauTimeframeOrDefault(r),
			Count:     xauCountOrDefault(r, svc.XAUBarsMinCount, svc.XAUBarsMaxCount),
		}
		if r.Intn(2) == 0 {
			req.DefaultSymbol = svc.DefaultGoldSymbol
		}
		return gopter.NewGenResult(req, gopter.NoShrinker)
	}
}

// XAUMarketStateRequest generates valid svc.XAUMarketStateRequest values:
// as XAUBarsRequest, with the count 30 to 500.
func XAUMarketStateRequest() gopter.Gen {
	return func(p *gopter.GenParameters) *gopter.GenResult {
		r := p.Rng
		req := svc.XAUMarketStateRequest{
			Timeframe: xauTimeframeOrDefault(r),
			Count:     xauCountOrDefault(r, svc.XAUMarketStateMinCount, svc.XAUMarketStateMaxCount),
		}
		if r.Intn(2) == 0 {
			req.DefaultSymbol = svc.DefaultGoldSymbol
		}
		return gopter.NewGenResult(req, gopter.NoShrinker)
	}
}

// XAUBarSeries generates terminal bar series ([]xau.Bar, oldest first) of
// minBars to maxBars bars on timeframe tf (an invalid tf counts as xau.M5)
// that pass xau.ValidateBars(bars, tf). The prices and their shapes are
// those of OHLCVBars (random walks with 2–5 decimals from 1 to 10 000, one
// series in twenty flat); times are aligned to tf, start anywhere in
// 2000–2099 and follow each other by one period, with a gap of 2 to 200
// periods (a closed market) one time in fifty. Tick volumes are 0 to 5000.
// The shrinker drops bars while keeping at least minBars.
func XAUBarSeries(tf xau.Timeframe, minBars, maxBars int) gopter.Gen {
	if !tf.Valid() {
		tf = xau.M5
	}
	if minBars < 1 {
		minBars = 1
	}
	ohlc := OHLCVBars(minBars, maxBars)
	shrinker := func(v interface{}) gopter.Shrink {
		return gen.SliceShrinker(gopter.NoShrinker)(v).Filter(func(s interface{}) bool {
			return len(s.([]xau.Bar)) >= minBars
		})
	}
	return func(p *gopter.GenParameters) *gopter.GenResult {
		v, ok := ohlc(p).Retrieve()
		if !ok {
			return gopter.NewEmptyResult(reflect.TypeOf([]xau.Bar(nil)))
		}
		src := v.([]svc.OHLCVBar)
		r := p.Rng
		times := XAUBarTimes(r, tf, len(src))
		bars := make([]xau.Bar, len(src))
		for i, b := range src {
			bars[i] = xau.Bar{
				Time:       times[i],
				Open:       b.Open.Decimal(),
				High:       b.High.Decimal(),
				Low:        b.Low.Decimal(),
				Close:      b.Close.Decimal(),
				TickVolume: r.Int63n(5001),
			}
		}
		return gopter.NewGenResult(bars, shrinker)
	}
}

// XAUBarTimes draws n open times aligned to tf (an invalid tf counts as
// xau.M5), strictly increasing, as XAUBarSeries uses them: a start in
// 2000–2099, then one period apart with a gap of 2 to 200 periods one time
// in fifty.
func XAUBarTimes(r *rand.Rand, tf xau.Timeframe, n int) []time.Time {
	if !tf.Valid() {
		tf = xau.M5
	}
	d := tf.Duration()
	lo := time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
	periods := int64(time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC).Sub(lo) / d)
	span := max(1, periods-int64(n)*200) // room for the gaps before 2100
	t := lo.Add(time.Duration(r.Int63n(span)) * d)
	out := make([]time.Time, n)
	for i := range out {
		out[i] = t
		step := int64(1)
		if r.Intn(50) == 0 {
			step = 2 + r.Int63n(199)
		}
		t = t.Add(time.Duration(step) * d)
	}
	return out
}

// XAUScaleBars returns bars with every price multiplied by k (k > 0), for
// scaling properties: returns, trend and realized volatility stay, ranges
// and the ATR scale by k.
func XAUScaleBars(bars []xau.Bar, k decimal.Decimal) []xau.Bar {
	out := make([]xau.Bar, len(bars))
	for i, b := range bars {
		b.Open, b.High, b.Low, b.Close = b.Open.Mul(k), b.High.Mul(k), b.Low.Mul(k), b.Close.Mul(k)
		out[i] = b
	}
	return out
}

// XAUMirrorBars reflects the prices of bars around level, keeping OHLC
// consistency: open and close become level − open and level − close, high
// becomes level − low and low becomes level − high. A rising series becomes
// a falling one with the same true ranges. With level = max high + min low
// every mirrored price stays within [min low, max high] and so positive;
// a zero level means that choice.
func XAUMirrorBars(bars []xau.Bar, level decimal.Decimal) []xau.Bar {
	if level.IsZero() && len(bars) > 0 {
		hi, lo := bars[0].High, bars[0].Low
		for _, b := range bars[1:] {
			hi, lo = decimal.Max(hi, b.High), decimal.Min(lo, b.Low)
		}
		level = hi.Add(lo)
	}
	out := make([]xau.Bar, len(bars))
	for i, b := range bars {
		out[i] = xau.Bar{
			Time:       b.Time,
			Open:       level.Sub(b.Open),
			High:       level.Sub(b.Low),
			Low:        level.Sub(b.High),
			Close:      level.Sub(b.Close),
			TickVolume: b.TickVolume,
		}
	}
	return out
}

// xauTimeframeOrDefault draws "" one time in five, else a timeframe name.
func xauTimeframeOrDefault(r *rand.Rand) string {
	tfs := xau.Timeframes()
	i := r.Intn(len(tfs) + 1)
	if i == len(tfs) {
		return ""
	}
	return string(tfs[i])
}

// xauCountOrDefault draws nil one time in five, else a count in [lo, hi],
// each bound one time in ten.
func xauCountOrDefault(r *rand.Rand, lo, hi int) *int {
	var n int
	switch r.Intn(10) {
	case 0, 1:
		return nil
	case 2:
		n = lo
	case 3:
		n = hi
	default:
		n = lo + r.Intn(hi-lo+1)
	}
	return &n
}

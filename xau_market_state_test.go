package svc_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"reflect"
	"testing"
	"time"

	"github.com/leanovate/gopter"
	"github.com/leanovate/gopter/gen"
	"github.com/leanovate/gopter/prop"
	"github.com/shopspring/decimal"

	"github.com/seed1284c1d2/svc"
	"github.com/seed1284c1d2/svc/svctest"
	"github.com/seed1284c1d2/svc/xau"
)

// xauStart is the open time of the first bar of the hand-checked series:
// Monday 2025-03-31 07:00 UTC, 09:00 in Vienna (summer time began the day
// before) and 08:00 in London.
var xauStart = time.Date(2025, 3, 31, 7, 0, 0, 0, time.UTC)

// xauDec parses a decimal literal.
func xauDec(s string) decimal.Decimal { return decimal.RequireFromString(s) }

// xauSeries builds n M5 bars from xauStart; f gives open, high, low, close
// of bar i as decimal literals.
func xauSeries(n int, f func(i int) (o, h, l, c string)) []xau.Bar {
	bars := make([]xau.Bar, n)
	for i := range bars {
		o, h, l, c := f(i)
		bars[i] = xau.Bar{Time: xauStart.Add(time.Duration(i) * 5 * time.Minute),
			Open: xauDec(o), High: xauDec(h), Low: xauDec(l), Close: xauDec(c), TickVolume: int64(100 + i)}
	}
	return bars
}

// xauRising is series A: closes 3000, 3001, …, 3029, each bar opening at
// the previous close. Bars 0–13 span close − 1.5 … close + 0.5 (true range
// 2); bars 14–29 span close − 2.5 … close + 1.5 (true range 4).
func xauRising() []xau.Bar {
	return xauSeries(30, func(i int) (string, string, string, string) {
		c := decimal.NewFromInt(int64(3000 + i))
		lo, hi := "1.5", "0.5"
		if i >= 14 {
			lo, hi = "2.5", "1.5"
		}
		return c.Sub(decimal.NewFromInt(1)).String(), c.Add(xauDec(hi)).String(), c.Sub(xauDec(lo)).String(), c.String()
	})
}

// xauAlternating is series B: closes 100, 101, 100, 101, … (30 bars), each
// bar opening at the previous close (bar 0 at 100), wicks of 0.25 beyond
// the body.
func xauAlternating() []xau.Bar {
	return xauSeries(30, func(i int) (string, string, string, string) {
		c, o := 100+i%2, 100+(i+1)%2
		if i == 0 {
			o = 100
		}
		lo, hi := min(o, c), max(o, c)
		return decimal.NewFromInt(int64(o)).String(), decimal.NewFromInt(int64(hi)).Add(xauDec("0.25")).String(),
			decimal.NewFromInt(int64(lo)).Sub(xauDec("0.25")).String(), decimal.NewFromInt(int64(c)).String()
	})
}

// xauRound8 rounds an exact rational half-even to 8 places as a string.
func xauRound8(r *big.Rat) string {
	// 30 places are far more than needed to decide the 8th.
	return decimal.NewFromBigRat(r, 30).RoundBank(8).String()
}

// xauPow returns (a/b)^n exactly.
func xauPow(a, b int64, n int) *big.Rat {
	r := big.NewRat(1, 1)
	for range n {
		r.Mul(r, big.NewRat(a, b))
	}
	return r
}

// xauScripted returns a scripted terminal serving bars for XAUUSD on M5.
func xauScripted(bars []xau.Bar) *xau.Scripted {
	term := xau.NewScripted(func() time.Time { return xauStart.Add(3 * time.Hour) })
	term.SetBars(svc.DefaultGoldSymbol, xau.M5, bars)
	return term
}

func xauIntPtr(n int) *int { return &n }

func TestMarketStateRisingSeriesHandChecked(t *testing.T) {
	bars := xauRising()
	ms, err := svc.MarketStateOf(bars, xau.M5)
	if err != nil {
		t.Fatal(err)
	}
	// Wilder ATR(14): the first ATR is the mean of the 14 true ranges of
	// bars 0–13, all 2, so 2. Each later bar has true range 4 and moves the
	// ATR a fourteenth of the way towards it: ATRₖ = 4 − 2·(13/14)^(k−13),
	// and the last bar is k = 29: 4 − 2·(13/14)^16 = 3.38895237319…
	atr := new(big.Rat).Sub(big.NewRat(4, 1), new(big.Rat).Mul(big.NewRat(2, 1), xauPow(13, 14, 16)))
	if got, want := ms.ATR.String(), xauRound8(atr); got != want || want != "3.38895237" {
		t.Errorf("atr %s, want %s (3.38895237)", got, want)
	}
	// The closes rise by exactly 1 a bar: slope 1; mean close 3014.5, so
	// slopePctPerBar = 100/3014.5 = 0.033172997…, above the M5 threshold
	// 0.005: up.
	if ms.Slope.String() != "1" || ms.SlopePctPerBar.String() != "0.033173" || ms.Trend != svc.TrendUp {
		t.Errorf("slope %s, slopePct %s, trend %s; want 1, 0.033173, up", ms.Slope, ms.SlopePctPerBar, ms.Trend)
	}
	// rangePosition = (3029 − 2998.5)/(3030.5 − 2998.5) = 30.5/32; returnPct = 29/3000·100.
	if ms.RangePosition.String() != "0.953125" || ms.ReturnPct.String() != "0.96666667" {
		t.Errorf("rangePosition %s, returnPct %s", ms.RangePosition, ms.ReturnPct)
	}
	// Log returns ln((3000+i)/(2999+i)), i = 1…29: nearly equal, a tiny
	// standard deviation. Checked against a plain float64 computation.
	if got, want := ms.RealizedVolPct.String(), xauNaiveVol(bars); got != want {
		t.Errorf("realizedVolPct %s, want %s", got, want)
	}
	// The last bar opens 07:00 + 29·5 min = 09:25 UTC = 11:25 in Vienna
	// (minute 685), 10:25 in London (open), 05:25 in New York and 18:25 in
	// Tokyo (closed).
	if !ms.London || ms.NewYork || ms.Asia || ms.MinuteOfDay != 685 || ms.LastTime != "2025-03-31T09:25:00Z" || ms.Timezone != "Europe/Vienna" {
		t.Errorf("sessions: %+v", ms)
	}
}

func TestMarketStateAlternatingSeriesHandChecked(t *testing.T) {
	bars := xauAlternating()
	ms, err := svc.MarketStateOf(bars, xau.M5)
	if err != nil {
		t.Fatal(err)
	}
	// The returns alternate +a, −a with a = ln(1.01): 15 up, 14 down, mean
	// a/29. Sample variance (Σr² − 29·mean²)/28 = a²(29 − 1/29)/28 =
	// a²·30/29, so realizedVolPct = 100·ln(1.01)·√(30/29) = 1.01204343007…
	want := decimal.NewFromFloat(100 * math.Log(1.01) * math.Sqrt(30.0/29.0)).RoundBank(8).String()
	if got := ms.RealizedVolPct.String(); got != want || want != "1.01204343" {
		t.Errorf("realizedVolPct %s, want %s (1.01204343)", got, want)
	}
	// True ranges: bar 0 100.25 − 99.75 = 0.5, every later bar 101.25 −
	// 99.75 = 1.5. First ATR (0.5 + 13·1.5)/14 = 10/7; then ATRₖ = 1.5 −
	// (1.5 − 10/7)·(13/14)^(k−13) = 1.5 − (1/14)(13/14)^16 at k = 29.
	atr := new(big.Rat).Sub(big.NewRat(3, 2), new(big.Rat).Mul(big.NewRat(1, 14), xauPow(13, 14, 16)))
	if got, want := ms.ATR.String(), xauRound8(atr); got != want || want != "1.47817687" {
		t.Errorf("atr %s, want %s (1.47817687)", got, want)
	}
	// slope = Σ(i − 14.5)(cᵢ − c̄)/Σ(i − 14.5)² = 7.5/2247.5 = 3/899;
	// slopePctPerBar = (3/899)/100.5·100 = 0.0033204…: flat on M5
	// (threshold 0.005) but up on M1 (threshold 0.0025).
	if ms.Slope.String() != "0.00333704" || ms.SlopePctPerBar.String() != "0.00332044" || ms.Trend != svc.TrendFlat {
		t.Errorf("slope %s, slopePct %s, trend %s", ms.Slope, ms.SlopePctPerBar, ms.Trend)
	}
	m1 := make([]xau.Bar, len(bars))
	for i, b := range bars {
		b.Time = xauStart.Add(time.Duration(i) * time.Minute)
		m1[i] = b
	}
	if ms1, err := svc.MarketStateOf(m1, xau.M1); err != nil || ms1.Trend != svc.TrendUp || ms1.TrendThresholdPct.String() != "0.0025" {
		t.Errorf("on M1: %v %+v", err, ms1)
	}
	// rangePosition (101 − 99.75)/(101.25 − 99.75) = 5/6; returnPct 1.
	if ms.RangePosition.String() != "0.83333333" || ms.ReturnPct.String() != "1" {
		t.Errorf("rangePosition %s, returnPct %s", ms.RangePosition, ms.ReturnPct)
	}
}

func TestMarketStateMirroredSeriesHandChecked(t *testing.T) {
	// Series A reflected around 3030.5 + 2998.5 = 6029: closes 3029 down to
	// 3000, same true ranges, slope −1: down, same ATR, rangePosition
	// 1 − 0.953125.
	bars := svctest.XAUMirrorBars(xauRising(), decimal.Zero)
	if !bars[0].Close.Equal(xauDec("3029")) || !bars[29].Close.Equal(xauDec("3000")) {
		t.Fatalf("mirror: first close %s, last close %s", bars[0].Close, bars[29].Close)
	}
	ms, err := svc.MarketStateOf(bars, xau.M5)
	if err != nil {
		t.Fatal(err)
	}
	if ms.Trend != svc.TrendDown || ms.Slope.String() != "-1" || ms.ATR.String() != "3.38895237" || ms.RangePosition.String() != "0.046875" {
		t.Errorf("got trend %s, slope %s, atr %s, rangePosition %s", ms.Trend, ms.Slope, ms.ATR, ms.RangePosition)
	}
}

func TestXAUMarketStateScriptedJSON(t *testing.T) {
	term := xauScripted(xauRising())
	resp, err := svc.XAUMarketState(context.Background(), term, svc.XAUMarketStateRequest{Count: xauIntPtr(30)})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"symbol":"XAUUSD","timeframe":"M5","count":30,"trend":"up","slope":1,"slopePctPerBar":0.033173,` +
		`"trendThresholdPct":0.005,"atr":3.38895237,"atrPeriod":14,"realizedVolPct":` + xauNaiveVol(xauRising()) + `,` +
		`"rangePosition":0.953125,"returnPct":0.96666667,"high":3030.5,"low":2998.5,"firstClose":3000,"lastClose":3029,` +
		`"lastTime":"2025-03-31T09:25:00Z","timezone":"Europe/Vienna","london":true,"newYork":false,"asia":false,` +
		`"minuteOfDay":685,"source":"scripted"}`
	if got := xauJSON(t, resp); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	// Asking for 100 bars of a terminal that has 30 analyses the 30.
	resp, err = svc.XAUMarketState(context.Background(), term, svc.XAUMarketStateRequest{})
	if err != nil || resp.Count != 30 {
		t.Errorf("default count with 30 bars of history: %v, count %d", err, resp.Count)
	}
}

// xauNaiveVol is an independent float64 computation of realizedVolPct:
// the sample standard deviation of ln(cᵢ/cᵢ₋₁)·100, rounded to 8 places.
func xauNaiveVol(bars []xau.Bar) string {
	var rets []float64
	for i := 1; i < len(bars); i++ {
		c, _ := bars[i].Close.Float64()
		p, _ := bars[i-1].Close.Float64()
		rets = append(rets, math.Log(c/p))
	}
	var mean float64
	for _, r := range rets {
		mean += r
	}
	mean /= float64(len(rets))
	var ss float64
	for _, r := range rets {
		ss += (r - mean) * (r - mean)
	}
	return decimal.NewFromFloat(math.Sqrt(ss/float64(len(rets)-1)) * 100).RoundBank(8).String()
}

// xauNaiveATR is an independent float64 Wilder ATR(14).
func xauNaiveATR(bars []xau.Bar) float64 {
	f := func(d decimal.Decimal) float64 { v, _ := d.Float64(); return v }
	tr := func(i int) float64 {
		if i == 0 {
			return f(bars[0].High) - f(bars[0].Low)
		}
		pc := f(bars[i-1].Close)
		return math.Max(f(bars[i].High), pc) - math.Min(f(bars[i].Low), pc)
	}
	var atr float64
	for i := range 14 {
		atr += tr(i)
	}
	atr /= 14
	for i := 14; i < len(bars); i++ {
		atr = (atr*13 + tr(i)) / 14
	}
	return atr
}

// xauCase is a timeframe with a bar series on it.
type xauCase struct {
	TF   xau.Timeframe
	Bars []xau.Bar
}

// xauCases generates series of 14 to maxBars bars on every timeframe.
func xauCases(minBars, maxBars int) gopter.Gen {
	return svctest.XAUTimeframe().FlatMap(func(v any) gopter.Gen {
		tf := v.(xau.Timeframe)
		return svctest.XAUBarSeries(tf, minBars, maxBars).Map(func(b []xau.Bar) xauCase { return xauCase{tf, b} })
	}, reflect.TypeOf(xauCase{}))
}

// xauRisingCases generates strictly rising series of 30 to 500 bars on
// every timeframe. Prices have 2–5 places; the first close c₀ lies between
// 1 and 10 000; every close exceeds the previous one by δ to 2δ, δ =
// max(1 unit, c₀/500), and each bar opens at the previous close with wicks
// of up to δ. The least-squares slope is a weighted mean of the increments,
// so slope ≥ δ ≥ c₀/1000 while every price stays below about 3·c₀: the
// slope is at least 0.033 % of the mean close a bar, above every
// threshold, also after mirroring (whose prices lie in the same range).
func xauRisingCases() gopter.Gen {
	return func(p *gopter.GenParameters) *gopter.GenResult {
		r := p.Rng
		tfs := xau.Timeframes()
		tf := tfs[r.Intn(len(tfs))]
		n := 30 + r.Intn(471)
		places := int32(2 + r.Intn(4))
		unit := int64(math.Pow10(int(places)))
		c0 := unit + r.Int63n(10_000*unit)
		delta := max(1, c0/500)
		times := svctest.XAUBarTimes(r, tf, n)
		bars := make([]xau.Bar, n)
		prev := c0 - delta
		for i := range bars {
			c := prev + delta + r.Int63n(delta+1)
			if i == 0 {
				c = c0
			}
			hi := c + r.Int63n(delta+1)
			lo := max(1, prev-r.Int63n(delta+1))
			bars[i] = xau.Bar{Time: times[i], Open: decimal.New(prev, -places), High: decimal.New(hi, -places),
				Low: decimal.New(lo, -places), Close: decimal.New(c, -places), TickVolume: r.Int63n(1000)}
			prev = c
		}
		return gopter.NewGenResult(xauCase{tf, bars}, gopter.NoShrinker)
	}
}

// xauParams returns gopter parameters running n successful tests.
func xauParams(n int) *gopter.TestParameters {
	p := gopter.DefaultTestParameters()
	p.MinSuccessfulTests = n
	return p
}

func TestMarketStateProperties(t *testing.T) {
	props := gopter.NewProperties(xauParams(200))
	one := decimal.NewFromInt(1)
	half8 := decimal.New(5, -9) // half a unit of the 8th place

	props.Property("atr ≥ 0 and between the smallest and largest true range; rangePosition in [0, 1]; vol ≥ 0", prop.ForAll(
		func(c xauCase) string {
			ms, err := svc.MarketStateOf(c.Bars, c.TF)
			if err != nil {
				return err.Error()
			}
			lo, hi := c.Bars[0].High.Sub(c.Bars[0].Low), c.Bars[0].High.Sub(c.Bars[0].Low)
			for i := 1; i < len(c.Bars); i++ {
				b, pc := c.Bars[i], c.Bars[i-1].Close
				tr := decimal.Max(b.High, pc).Sub(decimal.Min(b.Low, pc))
				lo, hi = decimal.Min(lo, tr), decimal.Max(hi, tr)
			}
			atr, pos := ms.ATR.Decimal(), ms.RangePosition.Decimal()
			switch {
			case atr.IsNegative() || atr.LessThan(lo.Sub(half8)) || atr.GreaterThan(hi.Add(half8)):
				return "atr " + atr.String() + " outside [" + lo.String() + ", " + hi.String() + "]"
			case pos.IsNegative() || pos.GreaterThan(one):
				return "rangePosition " + pos.String()
			case ms.RealizedVolPct.Decimal().IsNegative():
				return "negative vol"
			}
			return ""
		}, xauCases(14, 500)))

	props.Property("trend agrees with slopePctPerBar and the threshold; slope and slopePct share a sign", prop.ForAll(
		func(c xauCase) string {
			ms, err := svc.MarketStateOf(c.Bars, c.TF)
			if err != nil {
				return err.Error()
			}
			pct, thr := ms.SlopePctPerBar.Decimal(), ms.TrendThresholdPct.Decimal()
			if !thr.Equal(svc.XAUTrendThresholdPct(c.TF).Decimal()) {
				return "threshold " + thr.String()
			}
			// slopePct is rounded: only compare away from the boundary.
			var want svc.Trend
			switch {
			case pct.GreaterThan(thr.Add(half8)):
				want = svc.TrendUp
			case pct.LessThan(thr.Neg().Sub(half8)):
				want = svc.TrendDown
			case pct.Abs().LessThan(thr.Sub(half8)):
				want = svc.TrendFlat
			default:
				return ""
			}
			if ms.Trend != want {
				return "trend " + string(ms.Trend) + " with slopePct " + pct.String()
			}
			if ms.Slope.Decimal().Sign() != pct.Sign() && !ms.Slope.Decimal().IsZero() && !pct.IsZero() {
				return "slope and slopePct differ in sign"
			}
			return ""
		}, xauCases(14, 500)))

	props.Property("a strictly rising series is up, its mirror down with the same atr", prop.ForAll(
		func(c xauCase) string {
			up, err := svc.MarketStateOf(c.Bars, c.TF)
			if err != nil {
				return err.Error()
			}
			down, err := svc.MarketStateOf(svctest.XAUMirrorBars(c.Bars, decimal.Zero), c.TF)
			if err != nil {
				return err.Error()
			}
			switch {
			case up.Trend != svc.TrendUp:
				return "rising: " + string(up.Trend) + " at slopePct " + up.SlopePctPerBar.String()
			case down.Trend != svc.TrendDown:
				return "mirror: " + string(down.Trend) + " at slopePct " + down.SlopePctPerBar.String()
			case !up.ATR.Decimal().Equal(down.ATR.Decimal()):
				return "atr " + up.ATR.String() + " vs " + down.ATR.String()
			case !up.Slope.Decimal().Neg().Equal(down.Slope.Decimal()):
				return "slope " + up.Slope.String() + " vs " + down.Slope.String()
			case up.RangePosition.Decimal().Add(down.RangePosition.Decimal()).Sub(one).Abs().GreaterThan(decimal.New(1, -8)):
				return "rangePositions do not add up to 1"
			}
			return ""
		}, xauRisingCases()))

	props.Property("scaling prices by k scales atr and slope, keeps returnPct, realizedVolPct, slopePct, rangePosition and trend", prop.ForAll(
		func(c xauCase, ku int64, kp int32) string {
			k := decimal.New(ku, -kp)
			a, err := svc.MarketStateOf(c.Bars, c.TF)
			if err != nil {
				return err.Error()
			}
			b, err := svc.MarketStateOf(svctest.XAUScaleBars(c.Bars, k), c.TF)
			if err != nil {
				return err.Error()
			}
			// Each rounded value is within half a unit of the 8th place of
			// its exact value, which scales by k.
			tol := half8.Mul(k.Add(one))
			near := func(x, y decimal.Decimal) bool { return x.Sub(y).Abs().LessThanOrEqual(tol) }
			switch {
			case !near(b.ATR.Decimal(), a.ATR.Decimal().Mul(k)):
				return "atr " + a.ATR.String() + "·" + k.String() + " vs " + b.ATR.String()
			case !near(b.Slope.Decimal(), a.Slope.Decimal().Mul(k)):
				return "slope " + a.Slope.String() + "·" + k.String() + " vs " + b.Slope.String()
			case a.Trend != b.Trend:
				return "trend " + string(a.Trend) + " vs " + string(b.Trend)
			case !a.ReturnPct.Decimal().Equal(b.ReturnPct.Decimal()), !a.RealizedVolPct.Decimal().Equal(b.RealizedVolPct.Decimal()),
				!a.SlopePctPerBar.Decimal().Equal(b.SlopePctPerBar.Decimal()), !a.RangePosition.Decimal().Equal(b.RangePosition.Decimal()):
				return "a scale-free value changed"
			}
			return ""
		}, xauCases(14, 300), gen.Int64Range(1, 100_000), gen.Int32Range(0, 3)))

	props.Property("atr and realizedVolPct agree with plain float64 computations", prop.ForAll(
		func(c xauCase) string {
			ms, err := svc.MarketStateOf(c.Bars, c.TF)
			if err != nil {
				return err.Error()
			}
			naive := xauNaiveATR(c.Bars)
			if got := ms.ATR.Float64(); math.Abs(got-naive) > 1e-8+1e-9*math.Abs(naive) {
				return "atr " + ms.ATR.String() + " vs float " + decimal.NewFromFloat(naive).String()
			}
			nv, _ := decimal.NewFromString(xauNaiveVol(c.Bars))
			if ms.RealizedVolPct.Decimal().Sub(nv).Abs().GreaterThan(decimal.New(1, -7)) {
				return "vol " + ms.RealizedVolPct.String() + " vs float " + nv.String()
			}
			return ""
		}, xauCases(14, 500)))

	props.Property("returnPct, rangePosition, high, low are OHLCVState's; sessions are SessionState's at the last open", prop.ForAll(
		func(c xauCase) string {
			ms, err := svc.MarketStateOf(c.Bars, c.TF)
			if err != nil {
				return err.Error()
			}
			var req svc.OHLCVStateRequest
			for _, b := range c.Bars {
				req.Bars = append(req.Bars, svc.OHLCVBar{Open: svc.NewNumber(b.Open), High: svc.NewNumber(b.High),
					Low: svc.NewNumber(b.Low), Close: svc.NewNumber(b.Close)})
			}
			oh, err := svc.OHLCVState(context.Background(), req)
			if err != nil {
				return err.Error()
			}
			last := c.Bars[len(c.Bars)-1].Time
			ss, err := svc.SessionState(context.Background(), svc.SessionStateRequest{DateTime: last.Format(time.RFC3339)})
			if err != nil {
				return err.Error()
			}
			got := []svc.Number{ms.ReturnPct, ms.RangePosition, ms.High, ms.Low, ms.FirstClose, ms.LastClose}
			want := []svc.Number{oh.ReturnPct, oh.RangePosition, oh.High, oh.Low, oh.FirstClose, oh.LastClose}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				return "differs from OHLCVState"
			}
			if ms.London != ss.London || ms.NewYork != ss.NewYork || ms.Asia != ss.Asia || ms.MinuteOfDay != ss.MinuteOfDay ||
				ms.LastTime != last.Format(time.RFC3339) {
				return "differs from SessionState"
			}
			return ""
		}, xauCases(14, 200)))

	props.TestingRun(t)
}

func TestMarketStateOfErrors(t *testing.T) {
	good := xauRising()
	unaligned := xauRising()
	unaligned[3].Time = unaligned[3].Time.Add(time.Minute)
	inconsistent := xauRising()
	inconsistent[5].High = inconsistent[5].Close.Sub(decimal.NewFromInt(1))
	unordered := xauRising()
	unordered[7].Time, unordered[8].Time = unordered[8].Time, unordered[7].Time
	cases := []struct {
		name  string
		bars  []xau.Bar
		tf    xau.Timeframe
		field string
		rule  string
	}{
		{"too few bars", good[:13], xau.M5, "bars", "min"},
		{"no bars", nil, xau.M5, "bars", "min"},
		{"bad timeframe", good, "M30", "timeframe", "oneof"},
		{"empty timeframe", good, "", "timeframe", "oneof"},
		{"unaligned time", unaligned, xau.M5, "bars", "bars"},
		{"time not aligned to H1", good, xau.H1, "bars", "bars"},
		{"high below close", inconsistent, xau.M5, "bars", "bars"},
		{"times out of order", unordered, xau.M5, "bars", "bars"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := svc.MarketStateOf(c.bars, c.tf)
			xauWantField(t, err, c.field, c.rule)
		})
	}
	if _, err := svc.MarketStateOf(good[:14], xau.M5); err != nil {
		t.Errorf("14 bars: %v", err)
	}
}

func TestXAUTrendThresholds(t *testing.T) {
	want := map[xau.Timeframe]string{xau.M1: "0.0025", xau.M5: "0.005", xau.M15: "0.01", xau.H1: "0.02"}
	for tf, w := range want {
		if got := svc.XAUTrendThresholdPct(tf).String(); got != w {
			t.Errorf("%s: %s, want %s", tf, got, w)
		}
		// Roughly proportional to the square root of the bar length.
		ratio := svc.XAUTrendThresholdPct(tf).Float64() / 0.005 / math.Sqrt(float64(tf.Duration())/float64(5*time.Minute))
		if ratio < 0.8 || ratio > 1.2 {
			t.Errorf("%s: threshold off the √time scale by %v", tf, ratio)
		}
	}
	if svc.XAUTrendThresholdPct("D1").IsSet() {
		t.Errorf("threshold for an invalid timeframe")
	}
}

// xauJSON encodes v.
func xauJSON(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("marshal %T: %v", v, err)
	}
	return string(b)
}

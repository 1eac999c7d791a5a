package svctest

import (
	"math"
	"math/rand"
	"sync"
	"time"

	"github.com/leanovate/gopter"
	"github.com/leanovate/gopter/gen"
	"github.com/shopspring/decimal"

	"github.com/seed1284c1d2/svc"
)

// This file holds the generators of the calculator tools: risk_levels,
// tick_pnl, strategy_grade, session_state and ohlcv_state. Numbers are
// drawn as decimals with few places (as prices and percentages are), never
// through float64, so the tools' exact arithmetic is exercised as used.

// RiskLevelsRequest generates valid svc.RiskLevelsRequest values: an entry
// from 0.00001 to about 1e9 with 0–5 decimals, either direction, and slPct,
// tpPct in (0, 100) with 0–4 decimals, so that no level reaches zero.
func RiskLevelsRequest() gopter.Gen {
	return func(p *gopter.GenParameters) *gopter.GenResult {
		r := p.Rng
		req := svc.RiskLevelsRequest{
			Entry:     calcPrice(r),
			Direction: calcDirection(r),
			SlPct:     calcPctBelow100(r),
			TpPct:     calcPctBelow100(r),
		}
		return gopter.NewGenResult(req, gopter.NoShrinker)
	}
}

// TickPnLRequest generates valid svc.TickPnLRequest values. The tick size
// is a common one (0.25, 0.01, 1/32, 0.0001, ...) or one whose quotients
// need not terminate (0.03, 0.3, 0.07); the entry lies on the tick grid
// (negative now and then, as spreads can be); the exit is on the grid
// within ±5000 ticks of it four times out of five and anywhere near it
// otherwise (a fractional tick count). Contracts are whole (1–100) or
// fractional (0.01–50); the tick value is a common one or a random amount
// with 2 decimals.
func TickPnLRequest() gopter.Gen {
	tickSizes := []string{"0.25", "0.01", "0.1", "0.5", "1", "0.03125", "0.0001", "0.00001", "0.005", "10", "0.03", "0.3", "0.07"}
	tickValues := []string{"12.5", "5", "10", "1", "0.5", "6.25", "31.25", "25", "0.01"}
	return func(p *gopter.GenParameters) *gopter.GenResult {
		r := p.Rng
		ts := decimal.RequireFromString(tickSizes[r.Intn(len(tickSizes))])
		entry := ts.Mul(decimal.NewFromInt(1 + r.Int63n(1_000_000)))
		if r.Intn(10) == 0 {
			entry = entry.Neg()
		}
		var exit decimal.Decimal
		if r.Intn(5) > 0 {
			exit = entry.Add(ts.Mul(decimal.NewFromInt(r.Int63n(10001) - 5000)))
		} else {
			exit = entry.Add(decimal.New(r.Int63n(2_000_001)-1_000_000, -int32(r.Intn(7))))
		}
		var contracts decimal.Decimal
		if r.Intn(10) < 7 {
			contracts = decimal.NewFromInt(1 + r.Int63n(100))
		} else {
			contracts = decimal.New(1+r.Int63n(5000), -2)
		}
		var tv decimal.Decimal
		if r.Intn(2) == 0 {
			tv = decimal.RequireFromString(tickValues[r.Intn(len(tickValues))])
		} else {
			tv = decimal.New(1+r.Int63n(100_000), -2)
		}
		req := svc.TickPnLRequest{
			Entry:     svc.NewNumber(entry),
			Exit:      svc.NewNumber(exit),
			Contracts: svc.NewNumber(contracts),
			TickSize:  svc.NewNumber(ts),
			TickValue: svc.NewNumber(tv),
			Direction: calcDirection(r),
		}
		return gopter.NewGenResult(req, gopter.NoShrinker)
	}
}

// StrategyGradeRequest generates valid svc.StrategyGradeRequest values:
// trades a whole number from 0 to 3000 (now and then up to a million), a
// profit factor from 0 to 5 with 2 decimals, and percentages in [0, 100]
// with 0–3 decimals, hitting 0 and 100 exactly now and then.
func StrategyGradeRequest() gopter.Gen {
	return func(p *gopter.GenParameters) *gopter.GenResult {
		r := p.Rng
		trades := r.Int63n(3001)
		if r.Intn(20) == 0 {
			trades = r.Int63n(1_000_001)
		}
		req := svc.StrategyGradeRequest{
			Trades:             svc.N(trades),
			ProfitFactor:       svc.NewNumber(decimal.New(r.Int63n(501), -2)),
			WinRatePct:         calcPct0to100(r),
			MaxDrawdownPct:     calcPct0to100(r),
			WalkForwardPassPct: calcPct0to100(r),
		}
		return gopter.NewGenResult(req, gopter.NoShrinker)
	}
}

// SessionStateRequest generates valid svc.SessionStateRequest values with
// instants from 2000 to 2100. Half of the instants lie within four days of
// a daylight-saving transition of Vienna, London or New York (where the
// sessions shift against each other); the rest are uniform. Seven times out
// of ten the instant is written into DateTime in one of the accepted forms
// (RFC 3339 in UTC or with an offset from −12:00 to +14:00, with or without
// fractional seconds or seconds, without offset, or as a date); otherwise
// DateTime is empty and the instant is in Now.
func SessionStateRequest() gopter.Gen {
	return func(p *gopter.GenParameters) *gopter.GenResult {
		r := p.Rng
		t := calcInstant(r)
		var req svc.SessionStateRequest
		if r.Intn(10) < 3 {
			req.Now = t
			return gopter.NewGenResult(req, gopter.NoShrinker)
		}
		switch r.Intn(7) {
		case 0:
			req.DateTime = t.UTC().Format(time.RFC3339)
		case 1:
			off := (r.Intn(26*4+1) - 12*4) * 15 * 60 // −12:00 … +14:00 in quarter hours
			req.DateTime = t.In(time.FixedZone("", off)).Format(time.RFC3339)
		case 2:
			t = t.Add(time.Duration(r.Int63n(int64(time.Second))))
			req.DateTime = t.UTC().Format(time.RFC3339Nano)
		case 3:
			t = t.Add(time.Duration(r.Int63n(1000)) * time.Millisecond)
			off := (r.Intn(26*4+1) - 12*4) * 15 * 60
			req.DateTime = t.In(time.FixedZone("", off)).Format("2006-01-02T15:04:05.000Z07:00")
		case 4:
			req.DateTime = t.UTC().Format("2006-01-02T15:04:05")
		case 5:
			req.DateTime = t.UTC().Format("2006-01-02T15:04")
		default:
			if r.Intn(2) == 0 {
				req.DateTime = t.UTC().Format("2006-01-02")
			} else {
				req.DateTime = t.UTC().Format("2006-01-02T15:04Z")
			}
		}
		return gopter.NewGenResult(req, gopter.NoShrinker)
	}
}

// OHLCVStateRequest generates valid svc.OHLCVStateRequest values holding
// 1 to 300 bars from OHLCVBars.
func OHLCVStateRequest() gopter.Gen {
	return OHLCVBars(1, 300).Map(func(bars []svc.OHLCVBar) svc.OHLCVStateRequest {
		return svc.OHLCVStateRequest{Bars: bars}
	})
}

// OHLCVBars generates consistent OHLC bar series ([]svc.OHLCVBar, oldest
// first) of minBars to maxBars bars; minBars below 1 counts as 1 and
// maxBars below minBars as minBars.
//
// A series is a random walk: every price of a series is a positive decimal
// with the same number of places, 2 to 5, starting between 1 and 10 000;
// each bar opens at the previous close (with an occasional gap), moves by a
// normally distributed step of 0.05–2 % of the price, and gets wicks below
// and above its body, so that low ≤ min(open, close) ≤ max(open, close) ≤
// high always holds and every price is at least one unit of the last place.
// One series in twenty is flat (every price equal, a zero range). Time and
// volumes are left unset; callers that need them can Map over the result.
// The shrinker drops bars while keeping at least minBars.
func OHLCVBars(minBars, maxBars int) gopter.Gen {
	if minBars < 1 {
		minBars = 1
	}
	if maxBars < minBars {
		maxBars = minBars
	}
	shrinker := func(v interface{}) gopter.Shrink {
		return gen.SliceShrinker(gopter.NoShrinker)(v).Filter(func(s interface{}) bool {
			return len(s.([]svc.OHLCVBar)) >= minBars
		})
	}
	return func(p *gopter.GenParameters) *gopter.GenResult {
		r := p.Rng
		n := minBars + r.Intn(maxBars-minBars+1)
		places := int32(2 + r.Intn(4))
		unit := int64(math.Pow10(int(places)))
		price := unit + r.Int63n(10_000*unit) // units of 10^-places
		sigma := 0.0005 + r.Float64()*0.0195
		flat := r.Intn(20) == 0
		num := func(u int64) svc.Number { return svc.NewNumber(decimal.New(u, -places)) }
		bars := make([]svc.OHLCVBar, n)
		for i := range bars {
			if flat {
				bars[i] = svc.OHLCVBar{Open: num(price), High: num(price), Low: num(price), Close: num(price)}
				continue
			}
			step := max(1, int64(float64(price)*sigma))
			open := price
			if r.Intn(10) == 0 {
				open = max(1, open+int64(r.NormFloat64()*float64(step)))
			}
			cl := max(1, open+int64(r.NormFloat64()*float64(step)))
			hi := max(open, cl) + r.Int63n(step/2+1)
			lo := max(1, min(open, cl)-r.Int63n(step/2+1))
			bars[i] = svc.OHLCVBar{Open: num(open), High: num(hi), Low: num(lo), Close: num(cl)}
			price = cl
		}
		return gopter.NewGenResult(bars, shrinker)
	}
}

// calcDirection draws long or short.
func calcDirection(r *rand.Rand) svc.Direction {
	if r.Intn(2) == 0 {
		return svc.Long
	}
	return svc.Short
}

// calcPrice draws a positive price with 0–5 decimals and 1–9 digits.
func calcPrice(r *rand.Rand) svc.Number {
	places := int32(r.Intn(6))
	digits := 1 + r.Intn(9)
	u := 1 + r.Int63n(int64(math.Pow10(digits)))
	return svc.NewNumber(decimal.New(u, -places))
}

// calcPctBelow100 draws a percentage in (0, 100) with 0–4 decimals.
func calcPctBelow100(r *rand.Rand) svc.Number {
	places := int32(r.Intn(5))
	scale := int64(math.Pow10(int(places)))
	return svc.NewNumber(decimal.New(1+r.Int63n(100*scale-1), -places))
}

// calcPct0to100 draws a percentage in [0, 100] with 0–3 decimals, exactly 0
// or 100 one time in ten.
func calcPct0to100(r *rand.Rand) svc.Number {
	switch r.Intn(20) {
	case 0:
		return svc.N(0)
	case 1:
		return svc.N(100)
	}
	places := int32(r.Intn(4))
	scale := int64(math.Pow10(int(places)))
	return svc.NewNumber(decimal.New(r.Int63n(100*scale+1), -places))
}

// calcZones are the zones whose daylight-saving transitions SessionState
// generators aim at. Loaded once; locations are immutable.
var calcZones = sync.OnceValue(func() []*time.Location {
	var locs []*time.Location
	for _, name := range []string{"Europe/Vienna", "Europe/London", "America/New_York"} {
		if loc, err := time.LoadLocation(name); err == nil {
			locs = append(locs, loc)
		}
	}
	return locs
})

// calcInstant draws an instant in [2000-01-01, 2101-01-01) UTC, whole
// seconds: uniform half of the time, otherwise within four days of a
// daylight-saving transition of a calcZones zone.
func calcInstant(r *rand.Rand) time.Time {
	lo := time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
	hi := time.Date(2101, 1, 1, 0, 0, 0, 0, time.UTC)
	zones := calcZones()
	if r.Intn(2) == 0 || len(zones) == 0 {
		return lo.Add(time.Duration(r.Int63n(int64(hi.Sub(lo)/time.Second))) * time.Second)
	}
	year := 2000 + r.Intn(101)
	loc := zones[r.Intn(len(zones))]
	// The zone in effect in mid-July starts at the spring transition and
	// ends at the autumn one.
	start, end := time.Date(year, 7, 15, 12, 0, 0, 0, loc).ZoneBounds()
	anchor := start
	if r.Intn(2) == 0 {
		anchor = end
	}
	if anchor.IsZero() {
		anchor = time.Date(year, 7, 15, 12, 0, 0, 0, time.UTC)
	}
	const window = 4 * 24 * 3600
	t := anchor.Add(time.Duration(r.Int63n(2*window+1)-window) * time.Second).UTC()
	if t.Before(lo) {
		t = lo
	}
	if !t.Before(hi) {
		t = hi.Add(-time.Second)
	}
	return t
}

package xau

import (
	"context"
	"errors"
	"math"
	"testing"
	"time"

	"github.com/leanovate/gopter"
	"github.com/leanovate/gopter/gen"
	"github.com/leanovate/gopter/prop"
	"github.com/shopspring/decimal"
)

// Reference instants (UTC). 2024-01-10 is a Wednesday, 2024-01-12 a Friday.
var (
	simWed = time.Date(2024, 1, 10, 14, 33, 17, 250_000_000, time.UTC)
	simSat = time.Date(2024, 1, 13, 12, 0, 0, 0, time.UTC)
	simMon = time.Date(2024, 1, 15, 10, 0, 0, 0, time.UTC)
)

// newSim returns a simulated terminal with a fixed clock.
func newSim(t testing.TB, seed int64, now time.Time) *Simulated {
	t.Helper()
	s, err := NewSimulated(SimConfig{Seed: seed, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// mustBars calls Bars and fails the test on error.
func mustBars(t testing.TB, term Terminal, tf Timeframe, count int) []Bar {
	t.Helper()
	bars, err := term.Bars(context.Background(), "XAUUSD", tf, count)
	if err != nil {
		t.Fatalf("Bars(%s, %d): %v", tf, count, err)
	}
	return bars
}

func TestSimulatedDeterministic(t *testing.T) {
	a, b := newSim(t, 7, simWed), newSim(t, 7, simWed)
	other := newSim(t, 8, simWed)
	for _, tf := range Timeframes() {
		ba, bb, bo := mustBars(t, a, tf, 300), mustBars(t, b, tf, 300), mustBars(t, other, tf, 300)
		same := 0
		for i := range ba {
			if !barEqual(ba[i], bb[i]) {
				t.Fatalf("%s bar %d differs between identical terminals: %+v vs %+v", tf, i, ba[i], bb[i])
			}
			if barEqual(ba[i], bo[i]) {
				same++
			}
		}
		if same > 3 {
			t.Errorf("%s: seeds 7 and 8 share %d of 300 bars", tf, same)
		}
	}
	qa, _ := a.Quote(context.Background(), "XAUUSD")
	qb, _ := b.Quote(context.Background(), "XAUUSD")
	if !qa.Bid.Equal(qb.Bid) || !qa.Ask.Equal(qb.Ask) || !qa.Time.Equal(qb.Time) {
		t.Fatalf("quotes differ: %+v vs %+v", qa, qb)
	}
	// Another symbol is another path.
	g, err := NewSimulated(SimConfig{Seed: 7, Symbol: "GOLD", Now: func() time.Time { return simWed }})
	if err != nil {
		t.Fatal(err)
	}
	bg, err := g.Bars(context.Background(), "GOLD", M5, 10)
	if err != nil {
		t.Fatal(err)
	}
	if barEqual(bg[0], mustBars(t, a, M5, 10)[0]) {
		t.Error("symbols GOLD and XAUUSD share a path")
	}
}

// A completed bar is a pure function of (seed, symbol, timeframe, open
// time): a later clock sees exactly the same bar.
func TestSimulatedBarsArePureFunctionsOfOpenTime(t *testing.T) {
	early := newSim(t, 3, simWed)
	late := newSim(t, 3, simWed.Add(75*time.Hour+17*time.Minute))
	for _, tf := range Timeframes() {
		eb := mustBars(t, early, tf, 200)
		lb := mustBars(t, late, tf, MaxBars)
		byTime := map[time.Time]Bar{}
		for _, b := range lb {
			byTime[b.Time] = b
		}
		for i, b := range eb[:len(eb)-1] { // the last early bar is still forming
			lbar, ok := byTime[b.Time]
			if !ok {
				t.Fatalf("%s: bar at %s missing from the later window", tf, b.Time)
			}
			if !barEqual(b, lbar) {
				t.Fatalf("%s bar %d at %s changed with the clock: %+v vs %+v", tf, i, b.Time, b, lbar)
			}
		}
	}
}

func TestSimulatedBarsConsistentAndAligned(t *testing.T) {
	for _, now := range []time.Time{simWed, simSat, simMon, time.Date(2024, 1, 14, 22, 0, 0, 0, time.UTC)} {
		s := newSim(t, 11, now)
		for _, tf := range Timeframes() {
			bars := mustBars(t, s, tf, 500)
			if len(bars) != 500 {
				t.Fatalf("%s at %s: %d bars, want 500", tf, now, len(bars))
			}
			if err := ValidateBars(bars, tf); err != nil {
				t.Fatalf("%s at %s: %v", tf, now, err)
			}
			for _, b := range bars {
				if b.Time.After(now) || b.Time.Location() != time.UTC {
					t.Fatalf("%s at %s: bar time %s after the clock or not UTC", tf, now, b.Time)
				}
				for _, p := range []decimal.Decimal{b.Open, b.High, b.Low, b.Close} {
					if !p.Round(2).Equal(p) {
						t.Fatalf("price %s has more than 2 decimals", p)
					}
				}
				if b.TickVolume <= 0 {
					t.Fatalf("bar at %s has tick volume %d", b.Time, b.TickVolume)
				}
			}
		}
	}
}

// closedAt reports whether t lies in the weekend closure [Fri 22:00, Sun 22:00) UTC.
func closedAt(t time.Time) bool {
	t = t.UTC()
	switch t.Weekday() {
	case time.Saturday:
		return true
	case time.Friday:
		return t.Hour() >= 22
	case time.Sunday:
		return t.Hour() < 22
	}
	return false
}

func TestSimulatedWeekendGap(t *testing.T) {
	ctx := context.Background()
	fridayClose := time.Date(2024, 1, 12, 22, 0, 0, 0, time.UTC)
	sundayOpen := time.Date(2024, 1, 14, 22, 0, 0, 0, time.UTC)

	sat := newSim(t, 5, simSat)
	q, err := sat.Quote(ctx, "XAUUSD")
	if err != nil {
		t.Fatal(err)
	}
	if want := fridayClose.Add(-5 * time.Second); !q.Time.Equal(want) {
		t.Fatalf("Saturday quote time %s, want the last tick %s", q.Time, want)
	}
	h, err := sat.Health(ctx)
	if err != nil || !h.Connected || h.Lag != 14*time.Hour+5*time.Second || !h.LastTick.Equal(q.Time) {
		t.Fatalf("Saturday health %+v, %v: want connected with lag 14h0m5s", h, err)
	}
	last := mustBars(t, sat, M1, 1)[0]
	if !last.Time.Equal(fridayClose.Add(-time.Minute)) || !last.Close.Equal(q.Bid) {
		t.Fatalf("Saturday last M1 bar %+v, want Fri 21:59 closing at the quote %s", last, q.Bid)
	}
	// A later weekend clock sees the same frozen market, with more lag.
	sun := newSim(t, 5, sundayOpen.Add(-time.Second))
	q2, _ := sun.Quote(ctx, "XAUUSD")
	h2, _ := sun.Health(ctx)
	if !q2.Bid.Equal(q.Bid) || !q2.Time.Equal(q.Time) || h2.Lag <= h.Lag {
		t.Fatalf("Sunday 21:59:59 quote %+v lag %s, want the Friday quote and a longer lag", q2, h2.Lag)
	}
	// Sunday 22:00:00 is the first tick of the week.
	open := newSim(t, 5, sundayOpen)
	q3, _ := open.Quote(ctx, "XAUUSD")
	h3, _ := open.Health(ctx)
	if !q3.Time.Equal(sundayOpen) || h3.Lag != 0 || !q3.Spread.Equal(d("0.40")) {
		t.Fatalf("Sunday open quote %+v lag %s", q3, h3.Lag)
	}
	// Bars across the weekend: none inside the closure, Friday's last bar
	// immediately followed by Sunday's first.
	mon := newSim(t, 5, simMon)
	for _, tf := range Timeframes() {
		n := int((simMon.Sub(sundayOpen))/tf.Duration()) + 10
		bars := mustBars(t, mon, tf, n)
		gapAt := -1
		for i, b := range bars {
			if closedAt(b.Time) {
				t.Fatalf("%s bar at %s lies in the weekend closure", tf, b.Time)
			}
			if i > 0 && b.Time.Sub(bars[i-1].Time) != tf.Duration() {
				if gapAt >= 0 {
					t.Fatalf("%s: second gap at %s", tf, b.Time)
				}
				gapAt = i
			}
		}
		if gapAt < 0 || !bars[gapAt].Time.Equal(sundayOpen) || !bars[gapAt-1].Time.Equal(fridayClose.Add(-tf.Duration())) {
			t.Fatalf("%s: weekend gap not between Fri %s and Sun 22:00 (gap index %d)", tf, fridayClose.Add(-tf.Duration()), gapAt)
		}
	}
}

func TestSimulatedTimeframesAgreeWithM1(t *testing.T) {
	for _, now := range []time.Time{simWed, simMon, simSat} {
		s := newSim(t, 21, now)
		m1 := mustBars(t, s, M1, 24*60)
		for _, tf := range []Timeframe{M5, M15, H1} {
			agg, err := Aggregate(m1, tf)
			if err != nil {
				t.Fatal(err)
			}
			agg = agg[1:] // the first period may have started before the M1 window
			got := mustBars(t, s, tf, len(agg))
			for i := range agg {
				if !barEqual(agg[i], got[i]) {
					t.Fatalf("%s at %s: bar %d = %+v, aggregated M1 = %+v", tf, now, i, got[i], agg[i])
				}
			}
		}
	}
}

func TestSimulatedQuotes(t *testing.T) {
	ctx := context.Background()
	lo, hi := d("0.10"), d("0.40")
	start := time.Date(2024, 1, 8, 0, 0, 0, 0, time.UTC)
	for now := start; now.Before(start.Add(7 * 24 * time.Hour)); now = now.Add(7*time.Minute + 13*time.Second) {
		s := newSim(t, 9, now)
		q, err := s.Quote(ctx, "XAUUSD")
		if err != nil {
			t.Fatal(err)
		}
		if err := ValidateQuote(q, d("0.40")); err != nil {
			t.Fatalf("at %s: %v", now, err)
		}
		if q.Spread.LessThan(lo) || q.Spread.GreaterThan(hi) || !q.Ask.Equal(q.Bid.Add(q.Spread)) || !q.Last.Equal(q.Bid) {
			t.Fatalf("at %s: quote %+v", now, q)
		}
		if q.Source != SourceSimulated || q.Symbol != "XAUUSD" || q.Time.After(now) {
			t.Fatalf("at %s: quote %+v", now, q)
		}
		if !closedAt(now) && now.Sub(q.Time) >= 5*time.Second {
			t.Fatalf("at %s: open market but quote is %s old", now, now.Sub(q.Time))
		}
		last := mustBars(t, s, M1, 1)[0]
		if !last.Close.Equal(q.Bid) {
			t.Fatalf("at %s: last M1 close %s != bid %s", now, last.Close, q.Bid)
		}
	}
}

// logReturnsStd returns the sample standard deviation of log returns.
func logReturnsStd(closes []float64) float64 {
	var rets []float64
	for i := 1; i < len(closes); i++ {
		rets = append(rets, math.Log(closes[i]/closes[i-1]))
	}
	var m, v float64
	for _, r := range rets {
		m += r
	}
	m /= float64(len(rets))
	for _, r := range rets {
		v += (r - m) * (r - m)
	}
	return math.Sqrt(v / float64(len(rets)-1))
}

func TestSimulatedRealism(t *testing.T) {
	for _, seed := range []int64{1, 2, 3} {
		s := newSim(t, seed, simWed)
		// Annualized volatility from daily closes (the 21:00 UTC H1 bar).
		var daily []float64
		for _, b := range mustBars(t, s, H1, MaxBars) {
			if b.Time.Hour() == 21 {
				c, _ := b.Close.Float64()
				daily = append(daily, c)
			}
			if lo, _ := b.Low.Float64(); lo < 2650*0.7 || lo > 2650*1.3 {
				t.Fatalf("seed %d: price %v strays more than 30%% from the base", seed, lo)
			}
		}
		vol := logReturnsStd(daily) * math.Sqrt(260)
		if vol < 0.12 || vol > 0.24 {
			t.Errorf("seed %d: annualized volatility %.3f outside 12–24%%", seed, vol)
		}
		// Session volatility: the London/New York overlap moves more than Asia.
		var asia, overlap []float64
		m1 := mustBars(t, s, M1, MaxBars)
		for i := 1; i < len(m1); i++ {
			a, _ := m1[i].Close.Float64()
			b, _ := m1[i-1].Close.Float64()
			switch h := m1[i].Time.Hour(); {
			case h < 6:
				asia = append(asia, math.Abs(a-b))
			case h >= 12 && h < 16:
				overlap = append(overlap, math.Abs(a-b))
			}
		}
		if ma, mo := mean(asia), mean(overlap); mo < 2*ma {
			t.Errorf("seed %d: mean |ΔM1| overlap %.3f is not at least twice Asia's %.3f", seed, mo, ma)
		}
	}
}

func mean(xs []float64) float64 {
	var s float64
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

func TestSimulatedHealth(t *testing.T) {
	s := newSim(t, 1, simWed)
	h, err := s.Health(context.Background())
	if err != nil || !h.Connected || h.Source != SourceSimulated || h.Lag != 2250*time.Millisecond || !h.ServerTime.Equal(simWed) {
		t.Fatalf("health %+v, %v", h, err)
	}
}

func TestSimulatedErrors(t *testing.T) {
	s := newSim(t, 1, simWed)
	ctx := context.Background()
	if _, err := s.Quote(ctx, "EURUSD"); !errors.Is(err, ErrUnknownSymbol) {
		t.Errorf("unknown symbol: %v", err)
	}
	if _, err := s.Bars(ctx, "EURUSD", M5, 10); !errors.Is(err, ErrUnknownSymbol) {
		t.Errorf("unknown symbol: %v", err)
	}
	if _, err := s.Quote(ctx, "XAU USD"); !errors.Is(err, ErrBadRequest) || errors.Is(err, ErrUnknownSymbol) {
		t.Errorf("malformed symbol: %v", err)
	}
	for _, c := range []struct {
		tf    Timeframe
		count int
	}{{M5, 0}, {M5, -1}, {M5, MaxBars + 1}, {"M2", 10}, {"", 10}} {
		if _, err := s.Bars(ctx, "XAUUSD", c.tf, c.count); !errors.Is(err, ErrBadRequest) {
			t.Errorf("Bars(%q, %d): %v", c.tf, c.count, err)
		}
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := s.Bars(cctx, "XAUUSD", M5, 10); !errors.Is(err, ErrUnavailable) || !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
	if _, err := s.Quote(cctx, "XAUUSD"); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
	if _, err := s.Health(cctx); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
	for _, cfg := range []SimConfig{
		{BasePrice: d("0.5")},
		{BasePrice: d("-2650")},
		{BasePrice: d("1000001")},
		{AnnualVol: -0.1},
		{AnnualVol: 1.5},
		{AnnualVol: math.NaN()},
		{Symbol: "XAU/USD"},
	} {
		if _, err := NewSimulated(cfg); err == nil {
			t.Errorf("NewSimulated(%+v) accepted", cfg)
		}
	}
	// A custom base price moves the level.
	cheap, err := NewSimulated(SimConfig{Seed: 1, BasePrice: d("100"), Now: func() time.Time { return simWed }})
	if err != nil {
		t.Fatal(err)
	}
	q, _ := cheap.Quote(ctx, "XAUUSD")
	if q.Bid.LessThan(d("70")) || q.Bid.GreaterThan(d("130")) {
		t.Errorf("base 100 gives bid %s", q.Bid)
	}
}

func TestSimulatedHistory(t *testing.T) {
	s := newSim(t, 1, simMon)
	from := time.Date(2024, 1, 12, 21, 0, 0, 0, time.UTC)
	rows, err := s.History("XAUUSD", M5, from, simMon.Add(time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	bars := mustBars(t, s, M5, len(rows)+1) // +1: the forming bar at the clock
	if len(rows) != 12+12*12 {              // Fri 21:00–22:00, Sun 22:00–Mon 10:00
		t.Fatalf("%d rows", len(rows))
	}
	for i, r := range rows {
		if !barEqual(r.Bar, bars[i]) {
			t.Fatalf("row %d %+v != bar %+v", i, r.Bar, bars[i])
		}
		if r.Spread < 10 || r.Spread > 40 || r.Volume != 0 {
			t.Fatalf("row %d spread %d volume %d", i, r.Spread, r.Volume)
		}
	}
	if _, err := s.History("EURUSD", M5, from, simMon); !errors.Is(err, ErrUnknownSymbol) {
		t.Fatalf("unknown symbol: %v", err)
	}
}

// For any seed, instant, timeframe and count, simulated bars are consistent,
// aligned, never after the clock, and end at the quote.
func TestSimulatedProperties(t *testing.T) {
	params := gopter.DefaultTestParametersWithSeed(20240110)
	params.MinSuccessfulTests = 150
	props := gopter.NewProperties(params)
	lo := time.Date(1990, 1, 1, 0, 0, 0, 0, time.UTC).Unix()
	hi := time.Date(2060, 1, 1, 0, 0, 0, 0, time.UTC).Unix()
	props.Property("bars consistent, aligned, up to the clock, ending at the quote", prop.ForAll(
		func(seed, unix int64, tfi, count int) bool {
			now := time.Unix(unix, 0).UTC()
			tf := Timeframes()[tfi]
			s, err := NewSimulated(SimConfig{Seed: seed, Now: func() time.Time { return now }})
			if err != nil {
				return false
			}
			bars, err := s.Bars(context.Background(), "XAUUSD", tf, count)
			if err != nil || len(bars) != count || ValidateBars(bars, tf) != nil {
				return false
			}
			q, err := s.Quote(context.Background(), "XAUUSD")
			if err != nil || ValidateQuote(q, d("0.40")) != nil {
				return false
			}
			last := bars[len(bars)-1]
			for _, b := range bars {
				if closedAt(b.Time) {
					return false
				}
			}
			return !last.Time.After(now) && last.Close.Equal(q.Bid) && !q.Time.Before(last.Time) &&
				last.Time.Equal(tf.Align(q.Time))
		},
		gen.Int64(), gen.Int64Range(lo, hi), gen.IntRange(0, 3), gen.IntRange(1, 300),
	))
	props.TestingRun(t)
}

func BenchmarkSimulatedQuote(b *testing.B) {
	s := newSim(b, 1, simWed)
	ctx := context.Background()
	for b.Loop() {
		if _, err := s.Quote(ctx, "XAUUSD"); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkSimulatedBarsH1x500(b *testing.B) {
	s := newSim(b, 1, simWed)
	ctx := context.Background()
	for b.Loop() {
		if _, err := s.Bars(ctx, "XAUUSD", H1, 500); err != nil {
			b.Fatal(err)
		}
	}
}

// TestWeekendClosedMatchesTheSimulatedMarket: the simulated terminal is
// closed exactly when WeekendClosed says, around every weekend edge.
func TestWeekendClosedMatchesTheSimulatedMarket(t *testing.T) {
	start := time.Date(2026, 11, 26, 0, 0, 0, 0, time.UTC) // a Thursday
	for ts := start; ts.Before(start.Add(8 * 24 * time.Hour)); ts = ts.Add(17 * time.Minute) {
		_, open, _ := simTradingDay(ts.Unix())
		if WeekendClosed(ts) == open {
			t.Fatalf("%s (%s): WeekendClosed %v, simulated market open %v", ts, ts.Weekday(), WeekendClosed(ts), open)
		}
	}
	for ts, want := range map[time.Time]bool{
		time.Date(2026, 11, 27, 21, 59, 59, 0, time.UTC): false, // Friday before the close
		time.Date(2026, 11, 27, 22, 0, 0, 0, time.UTC):   true,
		time.Date(2026, 11, 29, 21, 59, 59, 0, time.UTC): true,
		time.Date(2026, 11, 29, 22, 0, 0, 0, time.UTC):   false, // Sunday's open
	} {
		if WeekendClosed(ts) != want {
			t.Errorf("WeekendClosed(%s) = %v, want %v", ts, !want, want)
		}
	}
}

package svctest_test

import (
	"context"
	"errors"
	"math/rand"
	"testing"
	"time"

	"github.com/leanovate/gopter"
	"github.com/shopspring/decimal"

	"github.com/seed1284c1d2/svc"
	"github.com/seed1284c1d2/svc/svctest"
	"github.com/seed1284c1d2/svc/xau"
)

// xauGenSamples draws n values from g with a fixed seed.
func xauGenSamples(t *testing.T, g gopter.Gen, n int, seed int64) []any {
	t.Helper()
	params := gopter.DefaultGenParameters().CloneWithSeed(seed)
	out := make([]any, 0, n)
	for range n {
		v, ok := g(params).Retrieve()
		if !ok {
			t.Fatalf("generator gave no value")
		}
		out = append(out, v)
	}
	return out
}

// xauGenTerminal returns a scripted terminal serving 500 valid bars of
// XAUUSD on every timeframe and a quote.
func xauGenTerminal(t *testing.T) *xau.Scripted {
	t.Helper()
	term := xau.NewScripted(nil)
	for i, tf := range xau.Timeframes() {
		bars := xauGenSamples(t, svctest.XAUBarSeries(tf, 500, 500), 1, int64(i))[0].([]xau.Bar)
		term.SetBars(svc.DefaultGoldSymbol, tf, bars)
	}
	term.SetQuote(xau.Quote{Symbol: svc.DefaultGoldSymbol, Bid: decimal.RequireFromString("3300.1"),
		Ask: decimal.RequireFromString("3300.3"), Last: decimal.RequireFromString("3300.1"),
		Spread: decimal.RequireFromString("0.2"), Time: time.Date(2025, 3, 31, 7, 0, 0, 0, time.UTC)})
	return term
}

func TestXAUGeneratorsYieldValidRequests(t *testing.T) {
	ctx := context.Background()
	term := xauGenTerminal(t)
	const n = 500
	counts := map[string]int{}
	for i, v := range xauGenSamples(t, svctest.XAUBarsRequest(), n, 1) {
		req := v.(svc.XAUBarsRequest)
		resp, err := svc.XAUBars(ctx, term, req)
		if err != nil {
			t.Fatalf("sample %d %+v: %v", i, req, err)
		}
		want := svc.XAUBarsDefaultCount
		switch {
		case req.Count == nil:
			counts["nil"]++
		case *req.Count == svc.XAUBarsMinCount:
			counts["min"]++
		}
		if req.Count != nil {
			want = *req.Count
		}
		if resp.Count != want || len(resp.Bars) != want {
			t.Fatalf("sample %d: %d bars, want %d", i, resp.Count, want)
		}
		if req.Timeframe == "" {
			counts["default tf"]++
		}
	}
	for i, v := range xauGenSamples(t, svctest.XAUMarketStateRequest(), n, 2) {
		req := v.(svc.XAUMarketStateRequest)
		if _, err := svc.XAUMarketState(ctx, term, req); err != nil {
			t.Fatalf("sample %d %+v: %v", i, req, err)
		}
		if req.Count != nil && (*req.Count < svc.XAUMarketStateMinCount || *req.Count > svc.XAUMarketStateMaxCount) {
			t.Fatalf("sample %d: count %d out of range", i, *req.Count)
		}
	}
	for i, v := range xauGenSamples(t, svctest.XAUQuoteRequest(), 50, 3) {
		if _, err := svc.XAUQuote(ctx, term, v.(svc.XAUQuoteRequest)); err != nil {
			t.Fatalf("sample %d %+v: %v", i, v, err)
		}
	}
	// The defaults and the bounds are all exercised.
	if counts["nil"] < n/10 || counts["min"] < n/20 || counts["default tf"] < n/10 {
		t.Errorf("poor coverage of defaults and bounds: %v", counts)
	}
}

func TestXAUSymbolGeneratorIsValidSyntax(t *testing.T) {
	ctx := context.Background()
	term := xau.NewScripted(nil) // serves nothing: every symbol is unknown
	long := 0
	for i, v := range xauGenSamples(t, svctest.XAUSymbol(), 2000, 4) {
		s := v.(string)
		if err := xau.CheckSymbol(s); err != nil {
			t.Fatalf("sample %d %q: %v", i, s, err)
		}
		if len(s) == xau.MaxSymbolLen {
			long++
		}
		// Validation passes; the terminal then does not know the symbol.
		_, err := svc.XAUQuote(ctx, term, svc.XAUQuoteRequest{Symbol: s})
		var e *svc.Error
		if !errors.As(err, &e) || e.Kind != svc.KindInvalid || len(e.Fields) != 1 || e.Fields[0].Rule != "unknown_symbol" {
			t.Fatalf("sample %d %q: want unknown_symbol, got %v", i, s, err)
		}
	}
	if long < 100 {
		t.Errorf("only %d symbols of the maximal length", long)
	}
}

func TestXAUBarSeriesIsValid(t *testing.T) {
	for _, tf := range append(xau.Timeframes(), "bogus") {
		want := tf
		if !tf.Valid() {
			want = xau.M5
		}
		gaps := 0
		for i, v := range xauGenSamples(t, svctest.XAUBarSeries(tf, 14, 400), 200, 5) {
			bars := v.([]xau.Bar)
			if len(bars) < 14 || len(bars) > 400 {
				t.Fatalf("%s sample %d: %d bars", tf, i, len(bars))
			}
			if err := xau.ValidateBars(bars, want); err != nil {
				t.Fatalf("%s sample %d: %v", tf, i, err)
			}
			for j := 1; j < len(bars); j++ {
				if bars[j].Time.Sub(bars[j-1].Time) > want.Duration() {
					gaps++
				}
			}
			if y := bars[0].Time.Year(); y < 2000 || y > 2099 {
				t.Fatalf("%s sample %d: starts in %d", tf, i, y)
			}
			if _, err := svc.MarketStateOf(bars, want); err != nil {
				t.Fatalf("%s sample %d: %v", tf, i, err)
			}
		}
		if gaps == 0 {
			t.Errorf("%s: no gap in 200 series", tf)
		}
	}
}

func TestXAUBarSeriesShrinksValid(t *testing.T) {
	g := svctest.XAUBarSeries(xau.H1, 20, 60)
	res := g(gopter.DefaultGenParameters().CloneWithSeed(6))
	v, _ := res.Retrieve()
	shrink := res.Shrinker(v)
	for k := 0; k < 20; k++ {
		s, ok := shrink()
		if !ok {
			break
		}
		bars := s.([]xau.Bar)
		if len(bars) < 20 {
			t.Fatalf("shrunk below the minimum: %d bars", len(bars))
		}
		if err := xau.ValidateBars(bars, xau.H1); err != nil {
			t.Fatalf("shrunk series invalid: %v", err)
		}
	}
}

func TestXAUMirrorAndScale(t *testing.T) {
	bars := xauGenSamples(t, svctest.XAUBarSeries(xau.M15, 50, 50), 1, 7)[0].([]xau.Bar)
	m := svctest.XAUMirrorBars(bars, decimal.Zero)
	if err := xau.ValidateBars(m, xau.M15); err != nil {
		t.Fatalf("mirror invalid: %v", err)
	}
	back := svctest.XAUMirrorBars(m, bars[0].Close.Add(m[0].Close))
	for i := range bars {
		if !back[i].High.Equal(bars[i].High) || !back[i].Low.Equal(bars[i].Low) || !back[i].Close.Equal(bars[i].Close) {
			t.Fatalf("mirroring twice around the same level is not the identity at bar %d", i)
		}
	}
	k := decimal.RequireFromString("2.5")
	s := svctest.XAUScaleBars(bars, k)
	if !s[3].High.Equal(bars[3].High.Mul(k)) || !bars[3].High.Equal(bars[3].High) {
		t.Fatalf("scaling wrong or in place")
	}
	times := svctest.XAUBarTimes(rand.New(rand.NewSource(1)), xau.H1, 10)
	for i, tm := range times {
		if !xau.H1.Aligned(tm) || (i > 0 && !tm.After(times[i-1])) {
			t.Fatalf("times not aligned and increasing: %v", times)
		}
	}
}

package svctest_test

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/leanovate/gopter"
	"github.com/shopspring/decimal"

	"github.com/seed1284c1d2/svc"
	"github.com/seed1284c1d2/svc/svctest"
)

// calcSamples draws n values from g with a fixed seed.
func calcSamples(t *testing.T, g gopter.Gen, n int, seed int64) []any {
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

func TestCalcGeneratorsYieldValidRequests(t *testing.T) {
	ctx := context.Background()
	const n = 1000
	check := func(name string, g gopter.Gen, call func(any) error) {
		t.Run(name, func(t *testing.T) {
			for i, v := range calcSamples(t, g, n, 1) {
				if err := call(v); err != nil {
					t.Fatalf("sample %d %+v: %v", i, v, err)
				}
			}
		})
	}
	check("RiskLevelsRequest", svctest.RiskLevelsRequest(), func(v any) error {
		_, err := svc.RiskLevels(ctx, v.(svc.RiskLevelsRequest))
		return err
	})
	check("TickPnLRequest", svctest.TickPnLRequest(), func(v any) error {
		_, err := svc.TickPnL(ctx, v.(svc.TickPnLRequest))
		return err
	})
	check("StrategyGradeRequest", svctest.StrategyGradeRequest(), func(v any) error {
		_, err := svc.StrategyGrade(ctx, v.(svc.StrategyGradeRequest))
		return err
	})
	check("SessionStateRequest", svctest.SessionStateRequest(), func(v any) error {
		_, err := svc.SessionState(ctx, v.(svc.SessionStateRequest))
		return err
	})
	check("OHLCVStateRequest", svctest.OHLCVStateRequest(), func(v any) error {
		_, err := svc.OHLCVState(ctx, v.(svc.OHLCVStateRequest))
		return err
	})
}

func TestCalcGeneratorsAreDeterministic(t *testing.T) {
	for name, g := range map[string]gopter.Gen{
		"risk": svctest.RiskLevelsRequest(), "tick": svctest.TickPnLRequest(), "grade": svctest.StrategyGradeRequest(),
		"session": svctest.SessionStateRequest(), "ohlcv": svctest.OHLCVStateRequest(),
	} {
		a, b := calcSamples(t, g, 20, 7), calcSamples(t, g, 20, 7)
		if !reflect.DeepEqual(a, b) {
			t.Errorf("%s: the same seed gave different values", name)
		}
	}
}

func TestCalcTickPnLRequestCoversBothGrids(t *testing.T) {
	whole, off := 0, 0
	for _, v := range calcSamples(t, svctest.TickPnLRequest(), 500, 3) {
		r, err := svc.TickPnL(context.Background(), v.(svc.TickPnLRequest))
		if err != nil {
			t.Fatal(err)
		}
		if r.WholeTicks {
			whole++
		} else {
			off++
		}
	}
	if whole < 300 || off < 50 {
		t.Errorf("whole-tick %d, off-grid %d of 500", whole, off)
	}
}

func TestCalcOHLCVBars(t *testing.T) {
	for _, c := range []struct{ min, max, wantMin, wantMax int }{
		{1, 1, 1, 1}, {10, 500, 10, 500}, {0, 0, 1, 1}, {30, 5, 30, 30}, {2, 3, 2, 3},
	} {
		for i, v := range calcSamples(t, svctest.OHLCVBars(c.min, c.max), 200, int64(c.min*1000+c.max)) {
			bars := v.([]svc.OHLCVBar)
			if len(bars) < c.wantMin || len(bars) > c.wantMax {
				t.Fatalf("OHLCVBars(%d, %d) sample %d has %d bars", c.min, c.max, i, len(bars))
			}
			places := int32(99)
			for j, b := range bars {
				o, h, l, cl := b.Open.Decimal(), b.High.Decimal(), b.Low.Decimal(), b.Close.Decimal()
				if !l.IsPositive() || l.GreaterThan(decimal.Min(o, cl)) || h.LessThan(decimal.Max(o, cl)) {
					t.Fatalf("bar %d inconsistent: %v %v %v %v", j, o, h, l, cl)
				}
				for _, n := range []decimal.Decimal{o, h, l, cl} {
					if p := -n.Exponent(); p < 2 || p > 5 || (places != 99 && p != places) {
						t.Fatalf("bar %d: %v has %d places (series has %d)", j, n, p, places)
					} else {
						places = p
					}
				}
				if b.Time != "" || b.Volume.IsSet() || b.TickVolume.IsSet() {
					t.Fatalf("bar %d has time or volume set", j)
				}
			}
		}
	}
}

func TestCalcOHLCVBarsShrinkKeepsMinimum(t *testing.T) {
	params := gopter.DefaultGenParameters().CloneWithSeed(11)
	res := svctest.OHLCVBars(5, 40)(params)
	v, _ := res.Retrieve()
	shrink := res.Shrinker(v)
	seen := 0
	for {
		s, ok := shrink()
		if !ok {
			break
		}
		seen++
		if n := len(s.([]svc.OHLCVBar)); n < 5 {
			t.Fatalf("shrunk to %d bars, below the minimum 5", n)
		}
	}
	if seen == 0 && len(v.([]svc.OHLCVBar)) > 5 {
		t.Error("no shrink candidates")
	}
}

func TestCalcSessionStateRequestSpread(t *testing.T) {
	vienna, err := time.LoadLocation("Europe/Vienna")
	if err != nil {
		t.Fatal(err)
	}
	forms := map[string]int{}
	nearDST := 0
	for _, v := range calcSamples(t, svctest.SessionStateRequest(), 1000, 5) {
		req := v.(svc.SessionStateRequest)
		r, err := svc.SessionState(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		at, err := time.Parse(time.RFC3339Nano, r.UTC)
		if err != nil {
			t.Fatal(err)
		}
		if at.Year() < 2000 || at.Year() > 2100 {
			t.Errorf("instant %s outside 2000–2100", r.UTC)
		}
		switch {
		case req.DateTime == "":
			forms["now"]++
		case r.AssumedUTC:
			forms["no offset"]++
		default:
			forms["offset"]++
		}
		// Within four days of a Vienna transition?
		start, end := at.In(vienna).ZoneBounds()
		if d := 96 * time.Hour; at.Sub(start) < d || end.Sub(at) < d {
			nearDST++
		}
	}
	if forms["now"] < 150 || forms["no offset"] < 150 || forms["offset"] < 300 {
		t.Errorf("forms %v", forms)
	}
	if nearDST < 100 {
		t.Errorf("only %d of 1000 instants near a Vienna DST transition", nearDST)
	}
}

package svc_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/leanovate/gopter"
	"github.com/leanovate/gopter/gen"
	"github.com/leanovate/gopter/prop"
	"github.com/shopspring/decimal"

	"github.com/seed1284c1d2/svc"
	"github.com/seed1284c1d2/svc/svctest"
)

func ohlcvDecode(t testing.TB, body string) svc.OHLCVStateRequest {
	t.Helper()
	var req svc.OHLCVStateRequest
	if err := json.Unmarshal([]byte(body), &req); err != nil {
		t.Fatalf("decode %s: %v", body, err)
	}
	return req
}

// ohlcvBar builds a bar from decimal literals.
func ohlcvBar(o, h, l, c string) svc.OHLCVBar {
	return svc.OHLCVBar{Open: svc.MustNumber(o), High: svc.MustNumber(h), Low: svc.MustNumber(l), Close: svc.MustNumber(c)}
}

func TestOHLCVStatePublishedExample(t *testing.T) {
	req := ohlcvDecode(t, `{"bars":[{"open":100,"high":102,"low":99,"close":101},{"open":101,"high":103,"low":100,"close":102}]}`)
	resp, err := svc.OHLCVState(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	// returnPct = 1/101·100 = 0.990099009900…; rangePosition = (102 − 99)/(103 − 99);
	// true ranges 102 − 99 = 3 and max(103, 101) − min(100, 101) = 3.
	want := `{"returnPct":0.99009901,"rangePosition":0.75,"atr":3,"bars":2,"firstClose":101,"lastClose":102,"high":103,"low":99}`
	if got := calcJSON(t, resp); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

func TestOHLCVStateCases(t *testing.T) {
	cases := []struct {
		name                string
		bars                []svc.OHLCVBar
		ret, pos, atr       string
		first, last, hi, lo string
	}{
		{"single bar", []svc.OHLCVBar{ohlcvBar("10", "12", "9", "11")}, "0", "0.66666667", "3", "11", "11", "12", "9"},
		{"flat series: zero range gives 0.5",
			[]svc.OHLCVBar{ohlcvBar("5", "5", "5", "5"), ohlcvBar("5", "5", "5", "5")}, "0", "0.5", "0", "5", "5", "5", "5"},
		{"gap up: true range reaches back to the previous close",
			[]svc.OHLCVBar{ohlcvBar("100", "101", "99", "100"), ohlcvBar("110", "112", "109", "111")}, "11", "0.92307692", "7", "100", "111", "112", "99"},
		{"gap down",
			[]svc.OHLCVBar{ohlcvBar("100", "101", "99", "100"), ohlcvBar("90", "91", "89", "90")}, "-10", "0.08333333", "6.5", "100", "90", "101", "89"},
		{"non-terminating mean",
			[]svc.OHLCVBar{ohlcvBar("1", "2", "1", "2"), ohlcvBar("2", "3", "2", "3"), ohlcvBar("3", "11", "3", "11")},
			"450", "1", "3.33333333", "2", "11", "11", "1"},
		{"last close at the low",
			[]svc.OHLCVBar{ohlcvBar("2.5", "2.75", "2.25", "2.5"), ohlcvBar("2.5", "2.5", "2", "2")}, "-20", "0", "0.5", "2.5", "2", "2.75", "2"},
		{"decimals stay exact",
			[]svc.OHLCVBar{ohlcvBar("1.10001", "1.10011", "1.09991", "1.10005"), ohlcvBar("1.10005", "1.10020", "1.10000", "1.10016")},
			"0.00999955", "0.86206897", "0.0002", "1.10005", "1.10016", "1.1002", "1.09991"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, err := svc.OHLCVState(context.Background(), svc.OHLCVStateRequest{Bars: c.bars})
			if err != nil {
				t.Fatal(err)
			}
			got := []string{r.ReturnPct.String(), r.RangePosition.String(), r.ATR.String(),
				r.FirstClose.String(), r.LastClose.String(), r.High.String(), r.Low.String()}
			want := []string{c.ret, c.pos, c.atr, c.first, c.last, c.hi, c.lo}
			if strings.Join(got, " ") != strings.Join(want, " ") || r.Bars != len(c.bars) {
				t.Errorf("got %v (%d bars), want %v", got, r.Bars, want)
			}
		})
	}
}

func TestOHLCVStateAcceptsXAUBars(t *testing.T) {
	req := ohlcvDecode(t, `{"bars":[
		{"time":"2025-03-31T07:00:00Z","open":3100.5,"high":3102,"low":3099.25,"close":3101,"tick_volume":812},
		{"time":"2025-03-31T07:05:00Z","open":"3101","high":"3103.5","low":"3100","close":"3103","tick_volume":0,"volume":12.5}]}`)
	r, err := svc.OHLCVState(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	// true ranges 2.75 and 3.5: atr 3.125.
	if r.ATR.String() != "3.125" || r.Bars != 2 {
		t.Errorf("got %+v", r)
	}
}

func TestOHLCVStateErrors(t *testing.T) {
	good := `{"open":100,"high":102,"low":99,"close":101}`
	cases := []struct {
		name, req string
		want      []string
	}{
		{"missing bars", `{}`, []string{"bars/required"}},
		{"null bars", `{"bars":null}`, []string{"bars/required"}},
		{"no bars", `{"bars":[]}`, []string{"bars/min"}},
		{"missing price", `{"bars":[` + good + `,{"open":1,"high":2,"low":1}]}`, []string{"bars[1].close/required"}},
		{"zero and negative prices", `{"bars":[{"open":0,"high":-2,"low":1,"close":1}]}`, []string{"bars[0].open/gt", "bars[0].high/gt"}},
		{"low above the body", `{"bars":[` + good + `,{"open":101,"high":103,"low":101.5,"close":102}]}`,
			[]string{"bars[1].low/ohlc_consistency"}},
		{"high below the close", `{"bars":[{"open":100,"high":100.5,"low":99,"close":101}]}`, []string{"bars[0].high/ohlc_consistency"}},
		{"high below low", `{"bars":[{"open":100,"high":99,"low":101,"close":100}]}`,
			[]string{"bars[0].low/ohlc_consistency", "bars[0].high/ohlc_consistency"}},
		{"negative volume, long time", `{"bars":[{"open":1,"high":1,"low":1,"close":1,"volume":-1,"tick_volume":-2,"time":"` +
			strings.Repeat("t", 65) + `"}]}`, []string{"bars[0].time/max", "bars[0].volume/gte", "bars[0].tick_volume/gte"}},
		{"huge price", `{"bars":[{"open":1,"high":"1e40","low":1,"close":1}]}`, []string{"bars[0].high/max_magnitude"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := svc.OHLCVState(context.Background(), ohlcvDecode(t, c.req))
			if got := calcFields(t, err); strings.Join(got, " ") != strings.Join(c.want, " ") {
				t.Errorf("got %v, want %v", got, c.want)
			}
			for _, w := range c.want {
				field, rule, _ := strings.Cut(w, "/")
				calcWantField(t, err, field, rule)
			}
		})
	}
	t.Run("NaN as a string is rejected when decoding", func(t *testing.T) {
		var req svc.OHLCVStateRequest
		if err := json.Unmarshal([]byte(`{"bars":[{"open":"NaN","high":1,"low":1,"close":1}]}`), &req); err == nil {
			t.Fatal("NaN decoded")
		}
	})
}

func TestOHLCVStateBarLimits(t *testing.T) {
	ctx := context.Background()
	ok := ohlcvBar("1", "1", "1", "1")
	bad := ohlcvBar("2", "1", "3", "2") // low and high both inconsistent
	fill := func(n int, b svc.OHLCVBar) []svc.OHLCVBar {
		bars := make([]svc.OHLCVBar, n)
		for i := range bars {
			bars[i] = b
		}
		return bars
	}

	if r, err := svc.OHLCVState(ctx, svc.OHLCVStateRequest{Bars: fill(svc.OHLCVMaxBars, ok)}); err != nil || r.Bars != 10000 {
		t.Fatalf("10 000 bars: %+v %v", r, err)
	}
	_, err := svc.OHLCVState(ctx, svc.OHLCVStateRequest{Bars: fill(svc.OHLCVMaxBars+1, ok)})
	if got := calcFields(t, err); strings.Join(got, " ") != "bars/max" {
		t.Errorf("10 001 bars: %v", got)
	}

	// 10 bad bars = 20 errors: all listed, no summary.
	_, err = svc.OHLCVState(ctx, svc.OHLCVStateRequest{Bars: fill(10, bad)})
	if got := calcFields(t, err); len(got) != 20 || got[19] != "bars[9].high/ohlc_consistency" {
		t.Errorf("10 bad bars: %v", got)
	}

	// 10 000 bad bars: the first 20 errors and one summary.
	_, err = svc.OHLCVState(ctx, svc.OHLCVStateRequest{Bars: fill(svc.OHLCVMaxBars, bad)})
	got := calcFields(t, err)
	if len(got) != 21 || got[0] != "bars[0].low/ohlc_consistency" || got[19] != "bars[9].high/ohlc_consistency" ||
		got[20] != "bars/too_many_errors" {
		t.Fatalf("10 000 bad bars: %d errors %v", len(got), got)
	}
	var e *svc.Error
	errors.As(err, &e)
	if msg := e.Fields[20].Message; !strings.Contains(msg, "20000 errors in 10000 invalid bars") {
		t.Errorf("summary %q", msg)
	}
	if n := len(e.Error()); n > 4000 {
		t.Errorf("error text of %d bytes", n)
	}

	// A single bad bar late in a long series is found and named.
	bars := fill(5000, ok)
	bars[4321].Close = svc.MustNumber("1.5")
	_, err = svc.OHLCVState(ctx, svc.OHLCVStateRequest{Bars: bars})
	calcWantField(t, err, "bars[4321].high", "ohlc_consistency")
}

func TestOHLCVBarOmitsUnsetVolumes(t *testing.T) {
	bar := svc.OHLCVBar{Open: svc.N(1), High: svc.N(2), Low: svc.N(1), Close: svc.N(2), TickVolume: svc.N(0)}
	if got, want := calcJSON(t, bar), `{"open":1,"high":2,"low":1,"close":2,"tick_volume":0}`; got != want {
		t.Errorf("got %s, want %s", got, want)
	}
}

// ohlcvScale multiplies every price of bars by k.
func ohlcvScale(bars []svc.OHLCVBar, k decimal.Decimal) []svc.OHLCVBar {
	out := make([]svc.OHLCVBar, len(bars))
	m := func(n svc.Number) svc.Number { return svc.NewNumber(n.Decimal().Mul(k)) }
	for i, b := range bars {
		out[i] = svc.OHLCVBar{Open: m(b.Open), High: m(b.High), Low: m(b.Low), Close: m(b.Close)}
	}
	return out
}

func TestOHLCVStateProperties(t *testing.T) {
	ctx := context.Background()
	props := gopter.NewProperties(calcParams(300))
	one := decimal.NewFromInt(1)

	props.Property("rangePosition in [0, 1], atr ≥ mean(high − low) ≥ 0, low ≤ lastClose ≤ high", prop.ForAll(
		func(req svc.OHLCVStateRequest) bool {
			r, err := svc.OHLCVState(ctx, req)
			if err != nil {
				return false
			}
			pos, atr := r.RangePosition.Decimal(), r.ATR.Decimal()
			sumHL := decimal.Zero
			for _, b := range req.Bars {
				sumHL = sumHL.Add(b.High.Decimal().Sub(b.Low.Decimal()))
			}
			n := decimal.NewFromInt(int64(len(req.Bars)))
			tol := decimal.New(5, -9).Mul(n)
			return !pos.IsNegative() && pos.LessThanOrEqual(one) && !atr.IsNegative() &&
				atr.Mul(n).Add(tol).GreaterThanOrEqual(sumHL) && r.Bars == len(req.Bars) &&
				r.Low.Decimal().LessThanOrEqual(r.LastClose.Decimal()) && r.LastClose.Decimal().LessThanOrEqual(r.High.Decimal())
		}, svctest.OHLCVStateRequest()))

	props.Property("returnPct·firstClose = (lastClose − firstClose)·100 (8 dp)", prop.ForAll(
		func(req svc.OHLCVStateRequest) bool {
			r, err := svc.OHLCVState(ctx, req)
			if err != nil {
				return false
			}
			f, l := r.FirstClose.Decimal(), r.LastClose.Decimal()
			want := l.Sub(f).Mul(decimal.NewFromInt(100)).DivRound(f, 30)
			return calcNear(r.ReturnPct.Decimal(), want, decimal.New(5, -9))
		}, svctest.OHLCVStateRequest()))

	props.Property("scaling prices by k keeps rangePosition and returnPct, multiplies atr", prop.ForAll(
		func(req svc.OHLCVStateRequest, ku int64, kp int32) bool {
			k := decimal.New(ku, -kp)
			a, err1 := svc.OHLCVState(ctx, req)
			b, err2 := svc.OHLCVState(ctx, svc.OHLCVStateRequest{Bars: ohlcvScale(req.Bars, k)})
			if err1 != nil || err2 != nil {
				return false
			}
			same := func(x, y svc.Number) bool { return x.Decimal().RoundBank(8).Equal(y.Decimal().RoundBank(8)) }
			// Each atr is within half a unit of the 8th place of its exact value.
			tol := decimal.New(5, -9).Mul(k.Add(one))
			return same(a.RangePosition, b.RangePosition) && same(a.ReturnPct, b.ReturnPct) &&
				calcNear(b.ATR.Decimal(), a.ATR.Decimal().Mul(k), tol)
		}, svctest.OHLCVStateRequest(), gen.Int64Range(1, 100_000), gen.Int32Range(0, 3)))

	props.TestingRun(t)
}

package svc_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/leanovate/gopter"
	"github.com/leanovate/gopter/gen"
	"github.com/leanovate/gopter/prop"
	"github.com/shopspring/decimal"

	"github.com/seed1284c1d2/svc"
	"github.com/seed1284c1d2/svc/svctest"
)

func strategyGradeDecode(t testing.TB, body string) svc.StrategyGradeRequest {
	t.Helper()
	var req svc.StrategyGradeRequest
	if err := json.Unmarshal([]byte(body), &req); err != nil {
		t.Fatalf("decode %s: %v", body, err)
	}
	return req
}

const strategyGradeWeightsJSON = `"weights":{"sample":0.15,"pf":0.3,"winRate":0.1,"drawdown":0.2,"walkForward":0.25}`

func TestStrategyGradeCases(t *testing.T) {
	cases := []struct {
		name, req, want string
	}{
		{
			// sample = 100·(1 − 10^−1) = 90; pf = 100·0.6/0.6 = 100; drawdown = 100 − 40 = 60;
			// score = 13.5 + 30 + 5.5 + 12 + 20 = 81.
			"round numbers",
			`{"trades":300,"profitFactor":1.6,"winRatePct":55,"maxDrawdownPct":12,"walkForwardPassPct":80}`,
			`{"score":81,"grade":"B","components":{"sample":90,"pf":100,"winRate":55,"drawdown":60,"walkForward":80},` +
				strategyGradeWeightsJSON + `,"warnings":[]}`,
		},
		{
			// pf = 16.666…, drawdown = 96.666…: score from unrounded components is
			// 5 + 5.01 + 19.3333… + 12.5 = 41.8433… → 41.8; from the rounded ones
			// (16.7, 96.7) it would be 41.86 → 41.9.
			"score uses unrounded components",
			`{"trades":0,"profitFactor":1.1,"winRatePct":50.1,"maxDrawdownPct":1,"walkForwardPassPct":50}`,
			`{"score":41.8,"grade":"D","components":{"sample":0,"pf":16.7,"winRate":50.1,"drawdown":96.7,"walkForward":50},` +
				strategyGradeWeightsJSON + `,"warnings":["` + strings.Join([]string{
				"fewer than 30 trades: the sample is too small to judge the strategy",
			}, `","`) + `"]}`,
		},
		{
			// sample = 100·(1 − 10^(−1/30)) = 7.38812720…; score = 1.10821908 + 30 + 9.5 + 20 + 5 = 65.608…
			"too good to be true",
			`{"trades":10,"profitFactor":3.5,"winRatePct":95,"maxDrawdownPct":0,"walkForwardPassPct":20}`,
			`{"score":65.6,"grade":"C","components":{"sample":7.4,"pf":100,"winRate":95,"drawdown":100,"walkForward":20},` +
				strategyGradeWeightsJSON + `,"warnings":["` + strings.Join([]string{
				"fewer than 30 trades: the sample is too small to judge the strategy",
				"profit factor above 3 is unusually high: check for overfitting, look-ahead bias or too few trades",
				"win rate above 90 %: check for hidden tail risk (averaging down, no stop loss)",
				"max drawdown of 0 % is implausible for a real track record: check the input",
				"walk-forward pass rate below 50 %: the edge does not hold out of sample",
			}, `","`) + `"]}`,
		},
		{
			// sample = 100·(1 − 10^(−10/3)) = 99.95358411…; score = 14.99303762 + 4 + 2.5 = 21.49…
			"losing with a deep drawdown",
			`{"trades":1000,"profitFactor":0.8,"winRatePct":40,"maxDrawdownPct":45,"walkForwardPassPct":10}`,
			`{"score":21.5,"grade":"F","components":{"sample":100,"pf":0,"winRate":40,"drawdown":0,"walkForward":10},` +
				strategyGradeWeightsJSON + `,"warnings":["` + strings.Join([]string{
				"profit factor below 1: the strategy lost money over the sample",
				"max drawdown of 30 % or more: the drawdown component is 0",
				"walk-forward pass rate below 50 %: the edge does not hold out of sample",
			}, `","`) + `"]}`,
		},
		{
			"all zero",
			`{"trades":0,"profitFactor":0,"winRatePct":0,"maxDrawdownPct":0,"walkForwardPassPct":0}`,
			`{"score":20,"grade":"F","components":{"sample":0,"pf":0,"winRate":0,"drawdown":100,"walkForward":0},` +
				strategyGradeWeightsJSON + `,"warnings":["` + strings.Join([]string{
				"fewer than 30 trades: the sample is too small to judge the strategy",
				"profit factor below 1: the strategy lost money over the sample",
				"walk-forward pass rate below 50 %: the edge does not hold out of sample",
			}, `","`) + `"]}`,
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			resp, err := svc.StrategyGrade(context.Background(), strategyGradeDecode(t, c.req))
			if err != nil {
				t.Fatal(err)
			}
			if got := calcJSON(t, resp); got != c.want {
				t.Errorf("got  %s\nwant %s", got, c.want)
			}
		})
	}
}

func TestStrategyGradeLetters(t *testing.T) {
	// With a huge sample (15), pf 1.6 (30) and no drawdown (20) the score is
	// 65 + 0.1·winRate + 0.25·walkForward.
	cases := []struct {
		wr, wf, score, grade string
	}{
		{"100", "40", "85", "A"}, {"100", "39.6", "84.9", "B"},
		{"0", "20", "70", "B"}, {"0", "19.6", "69.9", "C"},
		{"0", "0", "65", "C"},
	}
	for _, c := range cases {
		req := strategyGradeDecode(t, fmt.Sprintf(
			`{"trades":100000,"profitFactor":1.6,"winRatePct":%s,"maxDrawdownPct":0,"walkForwardPassPct":%s}`, c.wr, c.wf))
		resp, err := svc.StrategyGrade(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		if resp.Score.String() != c.score || resp.Grade != c.grade {
			t.Errorf("wr %s wf %s: got %s %s, want %s %s", c.wr, c.wf, resp.Score, resp.Grade, c.score, c.grade)
		}
	}
	// D and F around 40 and 55: drawdown 30 % (0), sample 0, pf 1.6.
	for _, c := range []struct{ wr, wf, score, grade string }{
		{"100", "60", "55", "C"}, {"100", "59.6", "54.9", "D"}, {"0", "40", "40", "D"}, {"0", "39.6", "39.9", "F"},
	} {
		req := strategyGradeDecode(t, fmt.Sprintf(
			`{"trades":0,"profitFactor":1.6,"winRatePct":%s,"maxDrawdownPct":30,"walkForwardPassPct":%s}`, c.wr, c.wf))
		resp, err := svc.StrategyGrade(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		if resp.Score.String() != c.score || resp.Grade != c.grade {
			t.Errorf("wr %s wf %s: got %s %s, want %s %s", c.wr, c.wf, resp.Score, resp.Grade, c.score, c.grade)
		}
	}
}

func TestStrategyGradeErrors(t *testing.T) {
	cases := []struct {
		name, req string
		want      []string
	}{
		{"all missing", `{}`, []string{"trades/required", "profitFactor/required", "winRatePct/required",
			"maxDrawdownPct/required", "walkForwardPassPct/required"}},
		{"fractional trades", `{"trades":12.5,"profitFactor":1,"winRatePct":1,"maxDrawdownPct":1,"walkForwardPassPct":1}`,
			[]string{"trades/integer"}},
		{"negatives", `{"trades":-1,"profitFactor":-0.01,"winRatePct":-1,"maxDrawdownPct":-0.5,"walkForwardPassPct":-100}`,
			[]string{"trades/gte", "profitFactor/gte", "winRatePct/gte", "maxDrawdownPct/gte", "walkForwardPassPct/gte"}},
		{"above 100 %", `{"trades":1,"profitFactor":1,"winRatePct":100.5,"maxDrawdownPct":101,"walkForwardPassPct":1000}`,
			[]string{"winRatePct/lte", "maxDrawdownPct/lte", "walkForwardPassPct/lte"}},
		// 100.000000000000000001 is 100 as a float64: the bound is checked exactly.
		{"just above 100 %", `{"trades":1,"profitFactor":1,"winRatePct":"100.000000000000000001","maxDrawdownPct":1,"walkForwardPassPct":1}`,
			[]string{"winRatePct/lte"}},
		{"too large", `{"trades":1e40,"profitFactor":1,"winRatePct":1,"maxDrawdownPct":1,"walkForwardPassPct":1}`,
			[]string{"trades/max_magnitude"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := svc.StrategyGrade(context.Background(), strategyGradeDecode(t, c.req))
			if got := calcFields(t, err); strings.Join(got, " ") != strings.Join(c.want, " ") {
				t.Errorf("got %v, want %v", got, c.want)
			}
			for _, w := range c.want {
				field, rule, _ := strings.Cut(w, "/")
				calcWantField(t, err, field, rule)
			}
		})
	}
	t.Run("whole trades written with decimals are accepted", func(t *testing.T) {
		req := strategyGradeDecode(t, `{"trades":"3.00e2","profitFactor":1,"winRatePct":100,"maxDrawdownPct":100,"walkForwardPassPct":100}`)
		if _, err := svc.StrategyGrade(context.Background(), req); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("NaN as a string is rejected when decoding", func(t *testing.T) {
		var req svc.StrategyGradeRequest
		if err := json.Unmarshal([]byte(`{"profitFactor":"NaN"}`), &req); err == nil {
			t.Fatal("NaN decoded")
		}
	})
}

func TestStrategyGradeScoreNonDecreasingInTrades(t *testing.T) {
	req := strategyGradeDecode(t, `{"trades":0,"profitFactor":1.3,"winRatePct":50,"maxDrawdownPct":10,"walkForwardPassPct":60}`)
	prev := decimal.NewFromInt(-1)
	for n := int64(0); n <= 3000; n++ {
		req.Trades = svc.N(n)
		resp, err := svc.StrategyGrade(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		if resp.Score.Decimal().LessThan(prev) {
			t.Fatalf("score fell from %s to %s at %d trades", prev, resp.Score, n)
		}
		prev = resp.Score.Decimal()
	}
}

// strategyGradeScore grades req and fails the property on error.
func strategyGradeScore(req svc.StrategyGradeRequest) (decimal.Decimal, bool) {
	r, err := svc.StrategyGrade(context.Background(), req)
	if err != nil {
		return decimal.Zero, false
	}
	return r.Score.Decimal(), true
}

// strategyGradeStep generates a non-negative step with 0–3 decimals, small
// (below 1) half of the time to probe rounding boundaries.
func strategyGradeStep() gopter.Gen {
	return gen.Int64Range(0, 10_000).FlatMap(func(v interface{}) gopter.Gen {
		u := v.(int64)
		return gen.Int32Range(0, 3).Map(func(places int32) decimal.Decimal { return decimal.New(u, -places) })
	}, nil)
}

func TestStrategyGradeProperties(t *testing.T) {
	ctx := context.Background()
	props := gopter.NewProperties(calcParams(500))
	hundred := decimal.NewFromInt(100)
	in := func(d decimal.Decimal) bool { return !d.IsNegative() && d.LessThanOrEqual(hundred) }

	props.Property("score and components in [0, 100]; grade, weights and warnings consistent", prop.ForAll(
		func(req svc.StrategyGradeRequest) bool {
			r, err := svc.StrategyGrade(ctx, req)
			if err != nil || r.Warnings == nil {
				return false
			}
			c, w := r.Components, r.Weights
			comps := []svc.Number{c.Sample, c.PF, c.WinRate, c.Drawdown, c.WalkForward}
			weights := []svc.Number{w.Sample, w.PF, w.WinRate, w.Drawdown, w.WalkForward}
			sum, wsum := decimal.Zero, decimal.Zero
			for i := range comps {
				if !in(comps[i].Decimal()) || comps[i].Decimal().Exponent() < -1 && !comps[i].Decimal().Equal(comps[i].Decimal().Round(1)) {
					return false
				}
				sum = sum.Add(comps[i].Decimal().Mul(weights[i].Decimal()))
				wsum = wsum.Add(weights[i].Decimal())
			}
			s := r.Score.Decimal()
			letter := "F"
			for _, g := range []struct {
				min    int64
				letter string
			}{{40, "D"}, {55, "C"}, {70, "B"}, {85, "A"}} {
				if s.GreaterThanOrEqual(decimal.NewFromInt(g.min)) {
					letter = g.letter
				}
			}
			// Rounded components move the weighted sum by at most 0.05, the
			// score's own rounding by another 0.05.
			return in(s) && s.Equal(s.Round(1)) && wsum.Equal(decimal.NewFromInt(1)) &&
				calcNear(s, sum, decimal.New(1, -1)) && r.Grade == letter &&
				c.WinRate.Decimal().Equal(req.WinRatePct.Decimal().RoundBank(1)) &&
				c.WalkForward.Decimal().Equal(req.WalkForwardPassPct.Decimal().RoundBank(1))
		}, svctest.StrategyGradeRequest()))

	props.Property("non-decreasing in trades", prop.ForAll(
		func(req svc.StrategyGradeRequest, step int64) bool {
			hi := req
			hi.Trades = svc.NewNumber(req.Trades.Decimal().Add(decimal.NewFromInt(step)))
			a, ok1 := strategyGradeScore(req)
			b, ok2 := strategyGradeScore(hi)
			return ok1 && ok2 && a.LessThanOrEqual(b)
		}, svctest.StrategyGradeRequest(), gen.Int64Range(0, 2000)))

	props.Property("non-decreasing in profitFactor", prop.ForAll(
		func(req svc.StrategyGradeRequest, step decimal.Decimal) bool {
			hi := req
			hi.ProfitFactor = svc.NewNumber(req.ProfitFactor.Decimal().Add(step))
			a, ok1 := strategyGradeScore(req)
			b, ok2 := strategyGradeScore(hi)
			return ok1 && ok2 && a.LessThanOrEqual(b)
		}, svctest.StrategyGradeRequest(), strategyGradeStep()))

	pctProp := func(name string, get func(*svc.StrategyGradeRequest) *svc.Number, rising bool) {
		props.Property(name, prop.ForAll(
			func(req svc.StrategyGradeRequest, step decimal.Decimal) bool {
				hi := req
				v := get(&hi)
				*v = svc.NewNumber(decimal.Min(hundred, v.Decimal().Add(step)))
				a, ok1 := strategyGradeScore(req)
				b, ok2 := strategyGradeScore(hi)
				if !ok1 || !ok2 {
					return false
				}
				if rising {
					return a.LessThanOrEqual(b)
				}
				return a.GreaterThanOrEqual(b)
			}, svctest.StrategyGradeRequest(), strategyGradeStep()))
	}
	pctProp("non-decreasing in winRatePct", func(r *svc.StrategyGradeRequest) *svc.Number { return &r.WinRatePct }, true)
	pctProp("non-decreasing in walkForwardPassPct", func(r *svc.StrategyGradeRequest) *svc.Number { return &r.WalkForwardPassPct }, true)
	pctProp("non-increasing in maxDrawdownPct", func(r *svc.StrategyGradeRequest) *svc.Number { return &r.MaxDrawdownPct }, false)

	props.TestingRun(t)
}

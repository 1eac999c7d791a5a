package svc_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/leanovate/gopter"
	"github.com/leanovate/gopter/prop"
	"github.com/shopspring/decimal"

	"github.com/seed1284c1d2/svc"
	"github.com/seed1284c1d2/svc/svctest"
)

// Helpers shared by the calculator tests (risk_levels, tick_pnl,
// strategy_grade, session_state, ohlcv_state); prefixed calc to stay clear
// of the other tools' test helpers in package svc_test.

// calcJSON encodes v with encoding/json.
func calcJSON(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("marshal %T: %v", v, err)
	}
	return string(b)
}

// calcWantField asserts that err is a KindInvalid *svc.Error listing field
// with rule, and that the message of that entry names the field.
func calcWantField(t testing.TB, err error, field, rule string) {
	t.Helper()
	var e *svc.Error
	if !errors.As(err, &e) {
		t.Fatalf("want *svc.Error with %s/%s, got %v", field, rule, err)
	}
	if e.Kind != svc.KindInvalid {
		t.Fatalf("want kind %s, got %s (%v)", svc.KindInvalid, e.Kind, err)
	}
	for _, f := range e.Fields {
		if f.Field == field && f.Rule == rule {
			if !strings.HasPrefix(f.Message, field) {
				t.Errorf("message %q does not name field %s", f.Message, field)
			}
			return
		}
	}
	t.Fatalf("want field error %s/%s, got %+v", field, rule, e.Fields)
}

// calcFields returns "field/rule" for every field error of err.
func calcFields(t testing.TB, err error) []string {
	t.Helper()
	var e *svc.Error
	if !errors.As(err, &e) {
		t.Fatalf("want *svc.Error, got %v", err)
	}
	var out []string
	for _, f := range e.Fields {
		out = append(out, f.Field+"/"+f.Rule)
	}
	return out
}

// calcParams returns gopter parameters running n successful tests.
func calcParams(n int) *gopter.TestParameters {
	p := gopter.DefaultTestParameters()
	p.MinSuccessfulTests = n
	return p
}

// calcNear reports whether a and b differ by at most tol.
func calcNear(a, b, tol decimal.Decimal) bool { return a.Sub(b).Abs().LessThanOrEqual(tol) }

func TestRiskLevelsPublishedExample(t *testing.T) {
	resp, err := svc.RiskLevels(context.Background(), svc.RiskLevelsRequest{
		Entry: svc.N(3500), Direction: svc.Long, SlPct: svc.MustNumber("0.05"), TpPct: svc.MustNumber("0.04"),
	})
	if err != nil {
		t.Fatal(err)
	}
	got := calcJSON(t, resp)
	want := `{"entry":3500,"direction":"long","stop":3498.25,"target":3501.4,"riskReward":0.8,` +
		`"stopDistance":1.75,"targetDistance":1.4,"slPct":0.05,"tpPct":0.04}`
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

func TestRiskLevelsCases(t *testing.T) {
	cases := []struct {
		name                     string
		req                      string
		stop, target, rr, sd, td string
	}{
		{"short mirrors long", `{"entry":3500,"direction":"short","slPct":0.05,"tpPct":0.04}`, "3501.75", "3498.6", "0.8", "1.75", "1.4"},
		{"string numbers", `{"entry":"100","direction":"long","slPct":"1","tpPct":"3"}`, "99", "103", "3", "1", "3"},
		{"non-terminating ratio", `{"entry":100,"direction":"long","slPct":3,"tpPct":1}`, "97", "101", "0.33333333", "3", "1"},
		{"two-thirds rounds up", `{"entry":1,"direction":"short","slPct":3,"tpPct":2}`, "1.03", "0.98", "0.66666667", "0.03", "0.02"},
		{"tiny entry stays exact", `{"entry":0.00001,"direction":"long","slPct":0.01,"tpPct":99.99}`, "0.000009999", "0.000019999", "9999", "0.000000001", "0.000009999"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var req svc.RiskLevelsRequest
			if err := json.Unmarshal([]byte(c.req), &req); err != nil {
				t.Fatal(err)
			}
			resp, err := svc.RiskLevels(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range []struct {
				name string
				got  svc.Number
				want string
			}{{"stop", resp.Stop, c.stop}, {"target", resp.Target, c.target}, {"riskReward", resp.RiskReward, c.rr},
				{"stopDistance", resp.StopDistance, c.sd}, {"targetDistance", resp.TargetDistance, c.td}} {
				if f.got.String() != f.want {
					t.Errorf("%s = %s, want %s", f.name, f.got, f.want)
				}
			}
		})
	}
}

func TestRiskLevelsErrors(t *testing.T) {
	cases := []struct {
		name string
		req  string
		want []string // field/rule, in order
	}{
		{"all missing", `{}`, []string{"entry/required", "direction/required", "slPct/required", "tpPct/required"}},
		{"nulls are missing", `{"entry":null,"direction":"long","slPct":null,"tpPct":1}`, []string{"entry/required", "slPct/required"}},
		{"wrong direction", `{"entry":1,"direction":"up","slPct":1,"tpPct":1}`, []string{"direction/oneof"}},
		{"direction is case-sensitive", `{"entry":1,"direction":"Long","slPct":1,"tpPct":1}`, []string{"direction/oneof"}},
		{"zero entry is out of range, not missing", `{"entry":0,"direction":"long","slPct":1,"tpPct":1}`, []string{"entry/gt"}},
		{"negative values", `{"entry":-5,"direction":"long","slPct":-1,"tpPct":0}`, []string{"entry/gt", "slPct/gt", "tpPct/gt"}},
		{"long stop at zero", `{"entry":10,"direction":"long","slPct":100,"tpPct":1}`, []string{"slPct/level_positive"}},
		{"short target below zero", `{"entry":10,"direction":"short","slPct":1,"tpPct":150}`, []string{"tpPct/level_positive"}},
		{"too large", `{"entry":1e30,"direction":"long","slPct":1,"tpPct":1}`, []string{"entry/max_magnitude"}},
		{"too precise", `{"entry":1,"direction":"long","slPct":"0.0000000000000000000000000000001","tpPct":1}`, []string{"slPct/max_precision"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var req svc.RiskLevelsRequest
			if err := json.Unmarshal([]byte(c.req), &req); err != nil {
				t.Fatal(err)
			}
			_, err := svc.RiskLevels(context.Background(), req)
			got := calcFields(t, err)
			if strings.Join(got, " ") != strings.Join(c.want, " ") {
				t.Errorf("got %v, want %v", got, c.want)
			}
			for _, w := range c.want {
				field, rule, _ := strings.Cut(w, "/")
				calcWantField(t, err, field, rule)
			}
		})
	}
}

func TestRiskLevelsRejectsNaNAtDecoding(t *testing.T) {
	for _, body := range []string{`{"entry":"NaN"}`, `{"entry":"-Infinity"}`, `{"entry":"inf"}`, `{"entry":true}`} {
		var req svc.RiskLevelsRequest
		if err := json.Unmarshal([]byte(body), &req); err == nil {
			t.Errorf("%s decoded without error: %+v", body, req)
		}
	}
}

func TestCalcCancelledContext(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for name, call := range map[string]func() error{
		"risk_levels": func() error {
			_, err := svc.RiskLevels(ctx, svc.RiskLevelsRequest{Entry: svc.N(1), Direction: svc.Long, SlPct: svc.N(1), TpPct: svc.N(1)})
			return err
		},
		"tick_pnl": func() error {
			_, err := svc.TickPnL(ctx, svc.TickPnLRequest{Entry: svc.N(1), Exit: svc.N(2), Contracts: svc.N(1),
				TickSize: svc.N(1), TickValue: svc.N(1), Direction: svc.Long})
			return err
		},
		"strategy_grade": func() error {
			_, err := svc.StrategyGrade(ctx, svc.StrategyGradeRequest{Trades: svc.N(1), ProfitFactor: svc.N(1),
				WinRatePct: svc.N(1), MaxDrawdownPct: svc.N(1), WalkForwardPassPct: svc.N(1)})
			return err
		},
		"session_state": func() error {
			_, err := svc.SessionState(ctx, svc.SessionStateRequest{DateTime: "2025-03-31"})
			return err
		},
		"ohlcv_state": func() error {
			_, err := svc.OHLCVState(ctx, svc.OHLCVStateRequest{Bars: []svc.OHLCVBar{{Open: svc.N(1), High: svc.N(1), Low: svc.N(1), Close: svc.N(1)}}})
			return err
		},
	} {
		if err := call(); svc.KindOf(err) != svc.KindTimeout || !errors.Is(err, context.Canceled) ||
			!strings.HasPrefix(err.Error(), name+":") {
			t.Errorf("%s: got %v (kind %s), want a timeout wrapping context.Canceled", name, err, svc.KindOf(err))
		}
	}
}

func TestRiskLevelsProperties(t *testing.T) {
	ctx := context.Background()
	props := gopter.NewProperties(calcParams(500))
	half8 := decimal.New(5, -9) // half a unit of the 8th place

	props.Property("long: stop < entry < target; short: target < entry < stop", prop.ForAll(
		func(req svc.RiskLevelsRequest) bool {
			r, err := svc.RiskLevels(ctx, req)
			if err != nil {
				return false
			}
			e, s, g := req.Entry.Decimal(), r.Stop.Decimal(), r.Target.Decimal()
			if req.Direction == svc.Long {
				return s.LessThan(e) && e.LessThan(g)
			}
			return g.LessThan(e) && e.LessThan(s) && g.IsPositive()
		}, svctest.RiskLevelsRequest()))

	props.Property("levels are entry ± its percentage, exactly", prop.ForAll(
		func(req svc.RiskLevelsRequest) bool {
			r, err := svc.RiskLevels(ctx, req)
			if err != nil {
				return false
			}
			e := req.Entry.Decimal()
			sd := e.Mul(req.SlPct.Decimal()).Shift(-2) // /100, exact
			td := e.Mul(req.TpPct.Decimal()).Shift(-2)
			return r.StopDistance.Decimal().Equal(sd) && r.TargetDistance.Decimal().Equal(td) &&
				r.Stop.Decimal().Sub(e).Abs().Equal(sd) && r.Target.Decimal().Sub(e).Abs().Equal(td)
		}, svctest.RiskLevelsRequest()))

	props.Property("riskReward = tpPct/slPct = targetDistance/stopDistance (exact, or 8 dp)", prop.ForAll(
		func(req svc.RiskLevelsRequest) bool {
			r, err := svc.RiskLevels(ctx, req)
			if err != nil {
				return false
			}
			rr := r.RiskReward.Decimal()
			q, rem := req.TpPct.Decimal().QuoRem(req.SlPct.Decimal(), 60)
			if rem.IsZero() {
				return rr.Equal(q) && rr.Mul(r.StopDistance.Decimal()).Equal(r.TargetDistance.Decimal())
			}
			return rr.Equal(rr.RoundBank(8)) && calcNear(rr, q, half8)
		}, svctest.RiskLevelsRequest()))

	props.Property("JSON round trip of the request gives the same response", prop.ForAll(
		func(req svc.RiskLevelsRequest) bool {
			var back svc.RiskLevelsRequest
			if err := json.Unmarshal([]byte(calcJSON(t, req)), &back); err != nil {
				return false
			}
			a, err1 := svc.RiskLevels(ctx, req)
			b, err2 := svc.RiskLevels(ctx, back)
			return err1 == nil && err2 == nil && calcJSON(t, a) == calcJSON(t, b)
		}, svctest.RiskLevelsRequest()))

	props.TestingRun(t)
}

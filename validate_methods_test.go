package svc_test

import (
	"context"
	"reflect"
	"testing"

	"github.com/leanovate/gopter"
	"github.com/leanovate/gopter/gen"
	"github.com/leanovate/gopter/prop"

	"github.com/seed1284c1d2/svc"
	"github.com/seed1284c1d2/svc/svctest"
)

// The calculators' Validate methods check a request without computing it
// (the server calls them before answering 402). These properties pin them
// to the tools: for any request, valid or not, Validate returns exactly the
// error the tool returns, and nil exactly when the tool succeeds.

// vmNumber generates a Number that is often out of every rule: unset, zero,
// negative, 100 and beyond, too large, too precise, or a plain valid value.
func vmNumber() gopter.Gen {
	return gen.OneConstOf(
		svc.Number{},
		svc.MustNumber("0"),
		svc.MustNumber("-1.5"),
		svc.MustNumber("0.05"),
		svc.MustNumber("3500.25"),
		svc.MustNumber("99.99999999"),
		svc.MustNumber("100"),
		svc.MustNumber("250"),
		svc.MustNumber("1e30"),
		svc.MustNumber("0.0000000000001"),
		svc.MustNumber("12"),
		svc.MustNumber("12.5"),
	)
}

// vmDirection generates a direction, sometimes missing or unknown.
func vmDirection() gopter.Gen {
	return gen.OneConstOf(svc.Long, svc.Short, svc.Direction(""), svc.Direction("up"))
}

// vmSame reports whether the tool's error and Validate's agree: both nil,
// or equal *svc.Error values of kind invalid.
func vmSame(toolErr, valErr error) bool {
	if toolErr == nil || valErr == nil {
		return toolErr == nil && valErr == nil
	}
	return svc.KindOf(toolErr) == svc.KindInvalid && reflect.DeepEqual(toolErr, valErr)
}

func TestValidateMatchesRiskLevels(t *testing.T) {
	ctx := context.Background()
	props := gopter.NewProperties(calcParams(2000))
	props.Property("RiskLevelsRequest.Validate agrees with RiskLevels", prop.ForAll(
		func(entry, sl, tp svc.Number, d svc.Direction) bool {
			req := svc.RiskLevelsRequest{Entry: entry, Direction: d, SlPct: sl, TpPct: tp}
			resp, err := svc.RiskLevels(ctx, req)
			if err == nil && (!resp.Stop.Decimal().IsPositive() || !resp.Target.Decimal().IsPositive()) {
				return false // the level rule, checked by comparison, let a level ≤ 0 through
			}
			return vmSame(err, req.Validate())
		},
		vmNumber(), vmNumber(), vmNumber(), vmDirection(),
	))
	props.Property("valid requests validate", prop.ForAll(
		func(req svc.RiskLevelsRequest) bool { return req.Validate() == nil },
		svctest.RiskLevelsRequest(),
	))
	props.TestingRun(t)
}

func TestValidateRiskLevelsLevelRule(t *testing.T) {
	// The level rule is checked by comparison; its message still shows the
	// computed level.
	req := svc.RiskLevelsRequest{Entry: svc.N(3500), Direction: svc.Long, SlPct: svc.N(100), TpPct: svc.N(1)}
	calcWantField(t, req.Validate(), "slPct", "level_positive")
	req = svc.RiskLevelsRequest{Entry: svc.N(3500), Direction: svc.Short, SlPct: svc.N(1), TpPct: svc.MustNumber("100.5")}
	calcWantField(t, req.Validate(), "tpPct", "level_positive")
	req = svc.RiskLevelsRequest{Entry: svc.N(3500), Direction: svc.Short, SlPct: svc.N(150), TpPct: svc.MustNumber("99.9")}
	if err := req.Validate(); err != nil {
		t.Fatalf("a short stop above 100 %% is fine: %v", err)
	}
}

func TestValidateMatchesTickPnL(t *testing.T) {
	ctx := context.Background()
	props := gopter.NewProperties(calcParams(2000))
	props.Property("TickPnLRequest.Validate agrees with TickPnL", prop.ForAll(
		func(entry, exit, contracts, size, value svc.Number, d svc.Direction) bool {
			req := svc.TickPnLRequest{Entry: entry, Exit: exit, Contracts: contracts, TickSize: size, TickValue: value, Direction: d}
			_, err := svc.TickPnL(ctx, req)
			return vmSame(err, req.Validate())
		},
		vmNumber(), vmNumber(), vmNumber(), vmNumber(), vmNumber(), vmDirection(),
	))
	props.Property("valid requests validate", prop.ForAll(
		func(req svc.TickPnLRequest) bool { return req.Validate() == nil },
		svctest.TickPnLRequest(),
	))
	props.TestingRun(t)
}

func TestValidateMatchesStrategyGrade(t *testing.T) {
	ctx := context.Background()
	props := gopter.NewProperties(calcParams(2000))
	props.Property("StrategyGradeRequest.Validate agrees with StrategyGrade", prop.ForAll(
		func(trades, pf, win, dd, wf svc.Number) bool {
			req := svc.StrategyGradeRequest{Trades: trades, ProfitFactor: pf, WinRatePct: win, MaxDrawdownPct: dd, WalkForwardPassPct: wf}
			_, err := svc.StrategyGrade(ctx, req)
			return vmSame(err, req.Validate())
		},
		vmNumber(), vmNumber(), vmNumber(), vmNumber(), vmNumber(),
	))
	props.Property("valid requests validate", prop.ForAll(
		func(req svc.StrategyGradeRequest) bool { return req.Validate() == nil },
		svctest.StrategyGradeRequest(),
	))
	props.TestingRun(t)
}

func TestValidateMatchesOHLCVState(t *testing.T) {
	ctx := context.Background()
	props := gopter.NewProperties(calcParams(1000))
	props.Property("OHLCVStateRequest.Validate agrees with OHLCVState", prop.ForAll(
		func(bars []svc.OHLCVBar, i int, o, h, l, c svc.Number) bool {
			if len(bars) > 0 { // break one bar in some way (or not)
				bars[i%len(bars)] = svc.OHLCVBar{Open: o, High: h, Low: l, Close: c}
			}
			req := svc.OHLCVStateRequest{Bars: bars}
			_, err := svc.OHLCVState(ctx, req)
			return vmSame(err, req.Validate())
		},
		svctest.OHLCVBars(0, 30), gen.IntRange(0, 1000), vmNumber(), vmNumber(), vmNumber(), vmNumber(),
	))
	props.Property("valid requests validate", prop.ForAll(
		func(req svc.OHLCVStateRequest) bool { return req.Validate() == nil },
		svctest.OHLCVStateRequest(),
	))
	props.TestingRun(t)
}

func TestValidateMatchesEVMAddressSyntax(t *testing.T) {
	ctx := context.Background()
	for _, a := range []string{"", "0x", "0xabc", "0x52908400098527886E0F7030069857D2E4169EE7", "hello"} {
		req := svc.EVMAddressSyntaxRequest{Address: a}
		_, err := svc.EVMAddressSyntax(ctx, req)
		if !vmSame(err, req.Validate()) {
			t.Errorf("%q: tool %v, Validate %v", a, err, req.Validate())
		}
	}
	if err := (&svc.EVMAddressSyntaxRequest{}).Validate(); err != nil {
		t.Errorf("the empty candidate is an answer, not an error: %v", err)
	}
}

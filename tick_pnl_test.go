package svc_test

import (
	"context"
	"encoding/json"
	"math/big"
	"strings"
	"testing"

	"github.com/leanovate/gopter"
	"github.com/leanovate/gopter/gen"
	"github.com/leanovate/gopter/prop"
	"github.com/shopspring/decimal"

	"github.com/seed1284c1d2/svc"
	"github.com/seed1284c1d2/svc/svctest"
)

func tickPnLDecode(t testing.TB, body string) svc.TickPnLRequest {
	t.Helper()
	var req svc.TickPnLRequest
	if err := json.Unmarshal([]byte(body), &req); err != nil {
		t.Fatalf("decode %s: %v", body, err)
	}
	return req
}

func TestTickPnLPublishedExample(t *testing.T) {
	req := tickPnLDecode(t, `{"entry":100,"exit":101,"contracts":2,"tickSize":0.25,"tickValue":12.5,"direction":"long"}`)
	resp, err := svc.TickPnL(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	got := calcJSON(t, resp)
	want := `{"ticks":4,"pnl":100,"priceMove":1,"wholeTicks":true,"pnlPerTick":25,` +
		`"entry":100,"exit":101,"contracts":2,"tickSize":0.25,"tickValue":12.5,"direction":"long"}`
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

func TestTickPnLCases(t *testing.T) {
	cases := []struct {
		name, req        string
		ticks, pnl, move string
		whole            bool
	}{
		{"short of the example loses",
			`{"entry":100,"exit":101,"contracts":2,"tickSize":0.25,"tickValue":12.5,"direction":"short"}`, "-4", "-100", "-1", true},
		{"short gains when price falls",
			`{"entry":"4500.25","exit":"4490","contracts":"3","tickSize":"0.25","tickValue":"12.5","direction":"short"}`, "41", "1537.5", "10.25", true},
		{"no move",
			`{"entry":1.1,"exit":1.1,"contracts":1,"tickSize":0.0001,"tickValue":10,"direction":"long"}`, "0", "0", "0", true},
		{"1/32 tick size stays exact",
			`{"entry":110.5,"exit":110.59375,"contracts":1,"tickSize":0.03125,"tickValue":31.25,"direction":"long"}`, "3", "93.75", "0.09375", true},
		{"negative prices (WTI April 2020)",
			`{"entry":-37.63,"exit":-10,"contracts":1,"tickSize":0.01,"tickValue":10,"direction":"long"}`, "2763", "27630", "27.63", true},
		{"fractional contracts",
			`{"entry":1.1,"exit":1.1025,"contracts":0.1,"tickSize":0.0001,"tickValue":10,"direction":"long"}`, "25", "25", "0.0025", true},
		// 0.1/0.03 = 3.333…: ticks rounds to 8 places; pnl = 0.1·1·3/0.03 = 10
		// comes from the exact quotient, not from 3.33333333·3 = 9.99999999.
		{"off-grid ticks round, pnl from exact quotient",
			`{"entry":100,"exit":100.1,"contracts":3,"tickSize":0.03,"tickValue":1,"direction":"long"}`, "3.33333333", "10", "0.1", false},
		{"two thirds of a tick, long",
			`{"entry":1,"exit":1.02,"contracts":1,"tickSize":0.03,"tickValue":1,"direction":"long"}`, "0.66666667", "0.66666667", "0.02", false},
		{"two thirds of a tick, short (symmetric rounding)",
			`{"entry":1,"exit":1.02,"contracts":1,"tickSize":0.03,"tickValue":1,"direction":"short"}`, "-0.66666667", "-0.66666667", "-0.02", false},
		{"off-grid but terminating",
			`{"entry":100,"exit":100.1,"contracts":1,"tickSize":0.25,"tickValue":12.5,"direction":"long"}`, "0.4", "5", "0.1", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			resp, err := svc.TickPnL(context.Background(), tickPnLDecode(t, c.req))
			if err != nil {
				t.Fatal(err)
			}
			if resp.Ticks.String() != c.ticks || resp.PnL.String() != c.pnl || resp.PriceMove.String() != c.move || resp.WholeTicks != c.whole {
				t.Errorf("got ticks %s pnl %s move %s whole %v; want %s %s %s %v",
					resp.Ticks, resp.PnL, resp.PriceMove, resp.WholeTicks, c.ticks, c.pnl, c.move, c.whole)
			}
		})
	}
}

func TestTickPnLErrors(t *testing.T) {
	cases := []struct {
		name, req string
		want      []string
	}{
		{"all missing", `{}`, []string{"entry/required", "exit/required", "contracts/required", "tickSize/required", "tickValue/required", "direction/required"}},
		{"wrong direction", `{"entry":1,"exit":2,"contracts":1,"tickSize":1,"tickValue":1,"direction":"flat"}`, []string{"direction/oneof"}},
		{"zero and negative sizes", `{"entry":1,"exit":2,"contracts":0,"tickSize":-0.25,"tickValue":0,"direction":"long"}`,
			[]string{"contracts/gt", "tickSize/gt", "tickValue/gt"}},
		{"string zero", `{"entry":1,"exit":2,"contracts":"0","tickSize":1,"tickValue":1,"direction":"long"}`, []string{"contracts/gt"}},
		{"huge exit", `{"entry":1,"exit":-1e31,"contracts":1,"tickSize":1,"tickValue":1,"direction":"long"}`, []string{"exit/max_magnitude"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := svc.TickPnL(context.Background(), tickPnLDecode(t, c.req))
			if got := calcFields(t, err); strings.Join(got, " ") != strings.Join(c.want, " ") {
				t.Errorf("got %v, want %v", got, c.want)
			}
			for _, w := range c.want {
				field, rule, _ := strings.Cut(w, "/")
				calcWantField(t, err, field, rule)
			}
		})
	}
	t.Run("zero prices are valid", func(t *testing.T) {
		resp, err := svc.TickPnL(context.Background(), tickPnLDecode(t,
			`{"entry":0,"exit":0.5,"contracts":1,"tickSize":0.25,"tickValue":1,"direction":"long"}`))
		if err != nil || resp.Ticks.String() != "2" {
			t.Fatalf("got %+v, %v", resp, err)
		}
	})
	t.Run("NaN as a string is rejected when decoding", func(t *testing.T) {
		var req svc.TickPnLRequest
		if err := json.Unmarshal([]byte(`{"entry":"NaN","exit":1}`), &req); err == nil {
			t.Fatal("NaN decoded")
		}
	})
}

// tickPnLExact returns the exact pnl move·tickValue·contracts/tickSize.
func tickPnLExact(r svc.TickPnLResponse) *big.Rat {
	x := new(big.Rat).Mul(r.PriceMove.Decimal().Rat(), r.TickValue.Decimal().Rat())
	x.Mul(x, r.Contracts.Decimal().Rat())
	return x.Quo(x, r.TickSize.Decimal().Rat())
}

// tickPnLTerminates reports whether the decimal expansion of x terminates.
func tickPnLTerminates(x *big.Rat) bool {
	d := new(big.Int).Set(x.Denom())
	for _, p := range []int64{2, 5} {
		bp := big.NewInt(p)
		m := new(big.Int)
		for {
			q, r := new(big.Int).QuoRem(d, bp, m)
			if r.Sign() != 0 {
				break
			}
			d = q
		}
	}
	return d.Cmp(big.NewInt(1)) == 0
}

func TestTickPnLProperties(t *testing.T) {
	ctx := context.Background()
	props := gopter.NewProperties(calcParams(500))
	half8 := new(big.Rat).SetFrac64(5, 1_000_000_000)

	props.Property("pnl is the exact result, or it rounded half-even to 8 places", prop.ForAll(
		func(req svc.TickPnLRequest) bool {
			r, err := svc.TickPnL(ctx, req)
			if err != nil {
				return false
			}
			exact := tickPnLExact(r)
			if tickPnLTerminates(exact) {
				return r.PnL.Decimal().Rat().Cmp(exact) == 0
			}
			diff := new(big.Rat).Sub(r.PnL.Decimal().Rat(), exact)
			return r.PnL.Decimal().Exponent() >= -8 && diff.Abs(diff).Cmp(half8) <= 0
		}, svctest.TickPnLRequest()))

	props.Property("antisymmetric in direction: long = −short", prop.ForAll(
		func(req svc.TickPnLRequest) bool {
			long, short := req, req
			long.Direction, short.Direction = svc.Long, svc.Short
			a, err1 := svc.TickPnL(ctx, long)
			b, err2 := svc.TickPnL(ctx, short)
			return err1 == nil && err2 == nil &&
				a.PnL.Decimal().Equal(b.PnL.Decimal().Neg()) && a.Ticks.Decimal().Equal(b.Ticks.Decimal().Neg()) &&
				a.PriceMove.Decimal().Equal(b.PriceMove.Decimal().Neg()) && a.WholeTicks == b.WholeTicks
		}, svctest.TickPnLRequest()))

	props.Property("linear in contracts: pnl(k·c) = k·pnl(c)", prop.ForAll(
		func(req svc.TickPnLRequest, k int64) bool {
			scaled := req
			scaled.Contracts = svc.NewNumber(req.Contracts.Decimal().Mul(decimal.NewFromInt(k)))
			a, err1 := svc.TickPnL(ctx, req)
			b, err2 := svc.TickPnL(ctx, scaled)
			if err1 != nil || err2 != nil {
				return false
			}
			kp := a.PnL.Decimal().Mul(decimal.NewFromInt(k))
			if tickPnLTerminates(tickPnLExact(a)) {
				return b.PnL.Decimal().Equal(kp)
			}
			// Both are within half a unit of the 8th place of the exact value.
			tol := decimal.New(5, -9).Mul(decimal.NewFromInt(k + 1))
			return calcNear(b.PnL.Decimal(), kp, tol) && b.Ticks.Decimal().Equal(a.Ticks.Decimal())
		}, svctest.TickPnLRequest(), gen.Int64Range(2, 50)))

	props.Property("on the tick grid: ticks·tickSize = move and pnl = ticks·tickValue·contracts", prop.ForAll(
		func(req svc.TickPnLRequest) bool {
			r, err := svc.TickPnL(ctx, req)
			if err != nil {
				return false
			}
			exactTicks := new(big.Rat).Quo(r.PriceMove.Decimal().Rat(), r.TickSize.Decimal().Rat())
			if r.WholeTicks != exactTicks.IsInt() {
				return false
			}
			if !r.WholeTicks {
				return true
			}
			ticks := r.Ticks.Decimal()
			return ticks.IsInteger() && ticks.Mul(r.TickSize.Decimal()).Equal(r.PriceMove.Decimal()) &&
				ticks.Mul(r.TickValue.Decimal()).Mul(r.Contracts.Decimal()).Equal(r.PnL.Decimal())
		}, svctest.TickPnLRequest()))

	props.Property("pnl has the sign of the move in the trade's favour", prop.ForAll(
		func(req svc.TickPnLRequest) bool {
			r, err := svc.TickPnL(ctx, req)
			if err != nil {
				return false
			}
			move := req.Exit.Decimal().Sub(req.Entry.Decimal())
			if req.Direction == svc.Short {
				move = move.Neg()
			}
			return r.PriceMove.Decimal().Equal(move) && r.PnL.Decimal().Sign() == move.Sign()
		}, svctest.TickPnLRequest()))

	props.TestingRun(t)
}

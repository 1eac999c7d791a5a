package svc_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/leanovate/gopter"
	"github.com/leanovate/gopter/prop"
	"github.com/shopspring/decimal"

	"github.com/seed1284c1d2/svc"
	"github.com/seed1284c1d2/svc/svctest"
	"github.com/seed1284c1d2/svc/xau"
)

// xauWantField asserts that err is a KindInvalid *svc.Error listing field
// with rule, whose message names the field.
func xauWantField(t testing.TB, err error, field, rule string) {
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
	t.Fatalf("want %s/%s, got %+v", field, rule, e.Fields)
}

// xauWantKind asserts that err is an *svc.Error of kind k.
func xauWantKind(t testing.TB, err error, k svc.ErrorKind) *svc.Error {
	t.Helper()
	var e *svc.Error
	if !errors.As(err, &e) || e.Kind != k {
		t.Fatalf("want an *svc.Error of kind %s, got %v (kind %s)", k, err, svc.KindOf(err))
	}
	return e
}

// xauQuote is a valid XAUUSD quote from the scripted terminal.
func xauQuote() xau.Quote {
	return xau.Quote{Symbol: "XAUUSD", Bid: xauDec("3300.12"), Ask: xauDec("3300.35"), Last: xauDec("3300.12"),
		Spread: xauDec("0.23"), Time: time.Date(2025, 3, 31, 9, 15, 2, 250_000_000, time.UTC)}
}

// xauFixedSim returns the simulated terminal with seed 1 and a clock on
// Monday 2025-03-31 09:15:02 UTC.
func xauFixedSim(t testing.TB) *xau.Simulated {
	t.Helper()
	clock := time.Date(2025, 3, 31, 9, 15, 2, 0, time.UTC)
	term, err := xau.NewSimulated(xau.SimConfig{Seed: 1, Now: func() time.Time { return clock }})
	if err != nil {
		t.Fatal(err)
	}
	return term
}

func TestXAUQuoteScripted(t *testing.T) {
	term := xau.NewScripted(nil)
	term.SetQuote(xauQuote())
	resp, err := svc.XAUQuote(context.Background(), term, svc.XAUQuoteRequest{})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"symbol":"XAUUSD","bid":3300.12,"ask":3300.35,"spread":0.23,"last":3300.12,"time":"2025-03-31T09:15:02.25Z","source":"scripted"}`
	if got := xauJSON(t, resp); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	// A quote's own source wins; a time in another zone is reported in UTC.
	q := xauQuote()
	q.Source = xau.SourceMT5
	q.Time = time.Date(2025, 3, 31, 12, 15, 2, 0, time.FixedZone("EEST", 3*3600))
	term.SetQuote(q)
	resp, err = svc.XAUQuote(context.Background(), term, svc.XAUQuoteRequest{Symbol: "XAUUSD"})
	if err != nil || resp.Source != "mt5" || resp.Time != "2025-03-31T09:15:02Z" {
		t.Errorf("got %+v, %v", resp, err)
	}
}

func TestXAUQuoteSymbols(t *testing.T) {
	ctx := context.Background()
	term := xau.NewScripted(nil)
	for _, s := range []string{"XAUUSD", "XAUUSD.a", "GOLD#"} {
		q := xauQuote()
		q.Symbol = s
		term.SetQuote(q)
	}
	cases := []struct{ symbol, def, want string }{
		{"", "", "XAUUSD"},
		{"", "XAUUSD.a", "XAUUSD.a"},
		{"GOLD#", "XAUUSD.a", "GOLD#"},
		{"XAUUSD", "", "XAUUSD"},
	}
	for _, c := range cases {
		resp, err := svc.XAUQuote(ctx, term, svc.XAUQuoteRequest{Symbol: c.symbol, DefaultSymbol: c.def})
		if err != nil || resp.Symbol != c.want {
			t.Errorf("symbol %q default %q: got %q, %v; want %q", c.symbol, c.def, resp.Symbol, err, c.want)
		}
	}
	// DefaultSymbol is never read from JSON.
	var req svc.XAUQuoteRequest
	if err := json.Unmarshal([]byte(`{"symbol":"GOLD#","DefaultSymbol":"X","defaultSymbol":"Y"}`), &req); err != nil ||
		req.Symbol != "GOLD#" || req.DefaultSymbol != "" {
		t.Errorf("decoded %+v, %v", req, err)
	}
	// A malformed configured default is the operator's fault, not the client's.
	_, err := svc.XAUQuote(ctx, term, svc.XAUQuoteRequest{DefaultSymbol: "XAU USD"})
	e := xauWantKind(t, err, svc.KindInternal)
	if strings.Contains(e.Message, "XAU USD") {
		t.Errorf("message leaks configuration: %q", e.Message)
	}
	for _, tool := range []func(def string) error{
		func(def string) error {
			_, err := svc.XAUBars(ctx, term, svc.XAUBarsRequest{DefaultSymbol: def})
			return err
		},
		func(def string) error {
			_, err := svc.XAUMarketState(ctx, term, svc.XAUMarketStateRequest{DefaultSymbol: def})
			return err
		},
	} {
		xauWantKind(t, tool("bad/symbol"), svc.KindInternal)
	}
	if c := term.Calls(); c.Quote != len(cases) || c.Bars != 0 {
		t.Errorf("terminal calls %+v", c)
	}
}

func TestXAUValidationBeforeTerminal(t *testing.T) {
	ctx := context.Background()
	term := xau.NewScripted(nil)
	term.SetQuote(xauQuote())
	term.SetBars("XAUUSD", xau.M5, xauRising())
	long := strings.Repeat("X", 33)
	cases := []struct {
		name        string
		call        func() error
		field, rule string
	}{
		{"quote: symbol too long", func() error {
			_, err := svc.XAUQuote(ctx, term, svc.XAUQuoteRequest{Symbol: long})
			return err
		}, "symbol", "max"},
		{"quote: space in symbol", func() error {
			_, err := svc.XAUQuote(ctx, term, svc.XAUQuoteRequest{Symbol: "XAU USD"})
			return err
		}, "symbol", "symbol"},
		{"quote: non-ASCII symbol", func() error {
			_, err := svc.XAUQuote(ctx, term, svc.XAUQuoteRequest{Symbol: "XAUÜSD"})
			return err
		}, "symbol", "symbol"},
		{"bars: bad timeframe", func() error {
			_, err := svc.XAUBars(ctx, term, svc.XAUBarsRequest{Timeframe: "m5"})
			return err
		}, "timeframe", "oneof"},
		{"bars: D1", func() error {
			_, err := svc.XAUBars(ctx, term, svc.XAUBarsRequest{Timeframe: "D1"})
			return err
		}, "timeframe", "oneof"},
		{"bars: count 9", func() error {
			_, err := svc.XAUBars(ctx, term, svc.XAUBarsRequest{Count: xauIntPtr(9)})
			return err
		}, "count", "min"},
		{"bars: count 0", func() error {
			_, err := svc.XAUBars(ctx, term, svc.XAUBarsRequest{Count: xauIntPtr(0)})
			return err
		}, "count", "min"},
		{"bars: count -5", func() error {
			_, err := svc.XAUBars(ctx, term, svc.XAUBarsRequest{Count: xauIntPtr(-5)})
			return err
		}, "count", "min"},
		{"bars: count 501", func() error {
			_, err := svc.XAUBars(ctx, term, svc.XAUBarsRequest{Count: xauIntPtr(501)})
			return err
		}, "count", "max"},
		{"market state: count 29", func() error {
			_, err := svc.XAUMarketState(ctx, term, svc.XAUMarketStateRequest{Count: xauIntPtr(29)})
			return err
		}, "count", "min"},
		{"market state: count 501", func() error {
			_, err := svc.XAUMarketState(ctx, term, svc.XAUMarketStateRequest{Count: xauIntPtr(501)})
			return err
		}, "count", "max"},
		{"market state: bad timeframe", func() error {
			_, err := svc.XAUMarketState(ctx, term, svc.XAUMarketStateRequest{Timeframe: "H4"})
			return err
		}, "timeframe", "oneof"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			xauWantField(t, c.call(), c.field, c.rule)
		})
	}
	if calls := term.Calls(); calls.Quote != 0 || calls.Bars != 0 || calls.Health != 0 {
		t.Errorf("invalid requests reached the terminal: %+v", calls)
	}
	// Both broken rules are reported at once.
	_, err := svc.XAUBars(ctx, term, svc.XAUBarsRequest{Timeframe: "W1", Count: xauIntPtr(1000)})
	xauWantField(t, err, "timeframe", "oneof")
	xauWantField(t, err, "count", "max")
	// The bounds themselves are valid.
	for _, n := range []int{10, 30, 500} {
		if _, err := svc.XAUBars(ctx, term, svc.XAUBarsRequest{Count: xauIntPtr(n)}); err != nil {
			t.Errorf("bars count %d: %v", n, err)
		}
	}
	if _, err := svc.XAUMarketState(ctx, term, svc.XAUMarketStateRequest{Count: xauIntPtr(30)}); err != nil {
		t.Errorf("market state count 30: %v", err)
	}
}

func TestXAUDecodeRequests(t *testing.T) {
	var br svc.XAUBarsRequest
	if err := json.Unmarshal([]byte(`{"timeframe":"H1","count":50}`), &br); err != nil || br.Timeframe != "H1" || br.Count == nil || *br.Count != 50 {
		t.Errorf("bars: %+v, %v", br, err)
	}
	var mr svc.XAUMarketStateRequest
	if err := json.Unmarshal([]byte(`{"count":null}`), &mr); err != nil || mr.Count != nil {
		t.Errorf("market state: %+v, %v", mr, err)
	}
	out, _ := json.Marshal(svc.XAUBarsRequest{DefaultSymbol: "X"})
	if string(out) != `{}` {
		t.Errorf("empty bars request encodes as %s", out)
	}
}

func TestXAUBarsDefaultsAndShape(t *testing.T) {
	resp, err := svc.XAUBars(context.Background(), xauFixedSim(t), svc.XAUBarsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Symbol != "XAUUSD" || resp.Timeframe != xau.M5 || resp.Count != 100 || len(resp.Bars) != 100 || resp.Source != "simulated" {
		t.Fatalf("got %s %s %d %d %s", resp.Symbol, resp.Timeframe, resp.Count, len(resp.Bars), resp.Source)
	}
	var prev time.Time
	for i, b := range resp.Bars {
		tm, err := time.Parse(time.RFC3339, b.Time)
		if err != nil || !strings.HasSuffix(b.Time, "Z") || !xau.M5.Aligned(tm) || (i > 0 && !tm.After(prev)) {
			t.Fatalf("bar %d time %q (%v)", i, b.Time, err)
		}
		prev = tm
	}
	if last := resp.Bars[99].Time; last != "2025-03-31T09:15:00Z" {
		t.Errorf("last bar opens %s", last)
	}
	// The bars feed OHLCVState as they are, through JSON.
	var req svc.OHLCVStateRequest
	if err := json.Unmarshal([]byte(xauJSON(t, resp)), &req); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.OHLCVState(context.Background(), req); err != nil {
		t.Errorf("xau_bars output rejected by ohlcv_state: %v", err)
	}
	// Each bar encodes time, open, high, low, close and tick_volume.
	if got := xauJSON(t, resp.Bars[0]); !strings.HasPrefix(got, `{"time":"`) || !strings.Contains(got, `"tick_volume":`) || strings.Contains(got, `"volume"`) {
		t.Errorf("bar encodes as %s", got)
	}
}

func TestXAUBarsScriptedJSON(t *testing.T) {
	bars := xauRising()
	term := xauScripted(bars)
	resp, err := svc.XAUBars(context.Background(), term, svc.XAUBarsRequest{Timeframe: "M5", Count: xauIntPtr(10)})
	if err != nil {
		t.Fatal(err)
	}
	got := xauJSON(t, resp)
	wantHead := `{"symbol":"XAUUSD","timeframe":"M5","count":10,"bars":[{"time":"2025-03-31T08:40:00Z","open":3019,"high":3021.5,"low":3017.5,"close":3020,"tick_volume":120},`
	wantTail := `{"time":"2025-03-31T09:25:00Z","open":3028,"high":3030.5,"low":3026.5,"close":3029,"tick_volume":129}],"source":"scripted"}`
	if !strings.HasPrefix(got, wantHead) || !strings.HasSuffix(got, wantTail) {
		t.Errorf("got %s", got)
	}
	// A terminal with less history than asked returns what it has.
	resp, err = svc.XAUBars(context.Background(), term, svc.XAUBarsRequest{Count: xauIntPtr(500)})
	if err != nil || resp.Count != 30 || len(resp.Bars) != 30 {
		t.Errorf("short history: %v, %d bars", err, resp.Count)
	}
}

func TestXAUBarsProperties(t *testing.T) {
	term := xauFixedSim(t)
	props := gopter.NewProperties(xauParams(60))
	props.Property("bars: count as asked, oldest first, aligned, consistent, simulated", prop.ForAll(
		func(req svc.XAUBarsRequest) string {
			resp, err := svc.XAUBars(context.Background(), term, req)
			if err != nil {
				return err.Error()
			}
			want := svc.XAUBarsDefaultCount
			if req.Count != nil {
				want = *req.Count
			}
			tf := xau.Timeframe(req.Timeframe)
			if tf == "" {
				tf = xau.M5
			}
			if resp.Count != want || len(resp.Bars) != want || resp.Timeframe != tf || resp.Source != xau.SourceSimulated {
				return fmt.Sprintf("got %d bars on %s from %s", resp.Count, resp.Timeframe, resp.Source)
			}
			var prev time.Time
			for i, b := range resp.Bars {
				tm, err := time.Parse(time.RFC3339, b.Time)
				if err != nil || !tf.Aligned(tm) || (i > 0 && !tm.After(prev)) {
					return "bad time " + b.Time
				}
				prev = tm
				if b.Low.Decimal().GreaterThan(decimal.Min(b.Open.Decimal(), b.Close.Decimal())) ||
					b.High.Decimal().LessThan(decimal.Max(b.Open.Decimal(), b.Close.Decimal())) {
					return "inconsistent bar at " + b.Time
				}
			}
			return ""
		}, svctest.XAUBarsRequest()))
	props.Property("market state: count as asked, valid numbers, simulated", prop.ForAll(
		func(req svc.XAUMarketStateRequest) string {
			resp, err := svc.XAUMarketState(context.Background(), term, req)
			if err != nil {
				return err.Error()
			}
			want := svc.XAUMarketStateDefaultCount
			if req.Count != nil {
				want = *req.Count
			}
			tf := xau.Timeframe(req.Timeframe)
			if tf == "" {
				tf = xau.M5
			}
			last := tf.Align(time.Date(2025, 3, 31, 9, 15, 2, 0, time.UTC)).Format(time.RFC3339)
			if resp.Count != want || resp.Source != xau.SourceSimulated || resp.LastTime != last {
				return fmt.Sprintf("count %d, source %s, last %s", resp.Count, resp.Source, resp.LastTime)
			}
			if resp.ATR.Decimal().IsNegative() || resp.RangePosition.Decimal().IsNegative() || resp.RangePosition.Decimal().GreaterThan(decimal.NewFromInt(1)) {
				return "out of range"
			}
			return ""
		}, svctest.XAUMarketStateRequest()))
	props.TestingRun(t)
}

// xauBadTerminal returns fixed bars and a fixed quote without validating
// them, like a broken upstream; src, when set, is reported by Source.
type xauBadTerminal struct {
	bars   []xau.Bar
	quote  xau.Quote
	health xau.Health
	src    xau.Source
}

func (b *xauBadTerminal) Health(context.Context) (xau.Health, error) { return b.health, nil }
func (b *xauBadTerminal) Quote(context.Context, string) (xau.Quote, error) {
	return b.quote, nil
}
func (b *xauBadTerminal) Bars(context.Context, string, xau.Timeframe, int) ([]xau.Bar, error) {
	return b.bars, nil
}

func (b *xauBadTerminal) Source() xau.Source { return b.src }

func TestXAUBadUpstreamData(t *testing.T) {
	ctx := context.Background()
	inconsistent := xauRising()
	inconsistent[20].Low = xauDec("5000")
	unaligned := xauRising()
	unaligned[4].Time = unaligned[4].Time.Add(30 * time.Second)
	duplicate := xauRising()
	duplicate[9].Time = duplicate[8].Time
	zero := xauRising()
	zero[0].Open = decimal.Zero
	for name, bars := range map[string][]xau.Bar{
		"inconsistent": inconsistent, "unaligned": unaligned, "duplicate time": duplicate, "zero price": zero, "none": nil,
	} {
		t.Run(name, func(t *testing.T) {
			term := &xauBadTerminal{bars: bars}
			_, err := svc.XAUBars(ctx, term, svc.XAUBarsRequest{Count: xauIntPtr(30)})
			e := xauWantKind(t, err, svc.KindUnavailable)
			if strings.Contains(e.Error(), "5000") || strings.Contains(e.Error(), "bars[") {
				t.Errorf("message leaks upstream data: %q", e.Error())
			}
			_, err = svc.XAUMarketState(ctx, term, svc.XAUMarketStateRequest{Count: xauIntPtr(30)})
			xauWantKind(t, err, svc.KindUnavailable)
		})
	}
	// Too little history for a market state.
	_, err := svc.XAUMarketState(ctx, &xauBadTerminal{bars: xauRising()[:29]}, svc.XAUMarketStateRequest{})
	xauWantKind(t, err, svc.KindUnavailable)

	// A terminal sending more bars than asked: the most recent are kept.
	resp, err := svc.XAUBars(ctx, &xauBadTerminal{bars: xauRising()}, svc.XAUBarsRequest{Count: xauIntPtr(10)})
	if err != nil || resp.Count != 10 || resp.Bars[9].Close.String() != "3029" || resp.Bars[0].Close.String() != "3020" {
		t.Errorf("too many bars: %v %+v", err, resp)
	}

	// Bad quotes.
	for name, mod := range map[string]func(*xau.Quote){
		"ask below bid":  func(q *xau.Quote) { q.Ask = xauDec("3299"); q.Spread = q.Ask.Sub(q.Bid) },
		"zero bid":       func(q *xau.Quote) { q.Bid = decimal.Zero },
		"wrong spread":   func(q *xau.Quote) { q.Spread = xauDec("1") },
		"absurd spread":  func(q *xau.Quote) { q.Ask = xauDec("3400"); q.Spread = q.Ask.Sub(q.Bid) },
		"no time":        func(q *xau.Quote) { q.Time = time.Time{} },
		"another symbol": func(q *xau.Quote) { q.Symbol = "XAGUSD" },
		"negative last":  func(q *xau.Quote) { q.Last = xauDec("-1") },
		"missing symbol": func(q *xau.Quote) { q.Symbol = "" },
	} {
		t.Run(name, func(t *testing.T) {
			q := xauQuote()
			mod(&q)
			_, err := svc.XAUQuote(ctx, &xauBadTerminal{quote: q}, svc.XAUQuoteRequest{})
			e := xauWantKind(t, err, svc.KindUnavailable)
			if strings.Contains(e.Error(), "3299") || strings.Contains(e.Error(), "XAGUSD") {
				t.Errorf("message leaks upstream data: %q", e.Error())
			}
		})
	}
	// Symbols compare without case.
	q := xauQuote()
	q.Symbol = "xauusd"
	if resp, err := svc.XAUQuote(ctx, &xauBadTerminal{quote: q, src: xau.SourceReplay}, svc.XAUQuoteRequest{}); err != nil ||
		resp.Symbol != "xauusd" || resp.Source != "replay" {
		t.Errorf("case-insensitive symbol: %+v, %v", resp, err)
	}
}

func TestXAUSource(t *testing.T) {
	ctx := context.Background()
	bars := xauRising()
	cases := []struct {
		name string
		term xau.Terminal
		want xau.Source
	}{
		{"simulated", xauFixedSim(t), "simulated"},
		{"scripted", xauScripted(bars), "scripted"},
		{"Source method", &xauBadTerminal{bars: bars, src: "mt5"}, "mt5"},
		{"unknown", &xauBadTerminal{bars: bars}, "unknown"},
		{"behind a switch", xau.NewSwitchable(xauFixedSim(t)), "simulated"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			br, err := svc.XAUBars(ctx, c.term, svc.XAUBarsRequest{Count: xauIntPtr(30)})
			if err != nil || br.Source != c.want {
				t.Errorf("bars: source %q, %v; want %q", br.Source, err, c.want)
			}
			mr, err := svc.XAUMarketState(ctx, c.term, svc.XAUMarketStateRequest{Count: xauIntPtr(30)})
			if err != nil || mr.Source != c.want {
				t.Errorf("market state: source %q, %v; want %q", mr.Source, err, c.want)
			}
			if !strings.Contains(xauJSON(t, mr), `"source":"`+string(c.want)+`"`) {
				t.Errorf("source missing from JSON")
			}
		})
	}
}

func TestXAUTerminalErrors(t *testing.T) {
	ctx := context.Background()
	quote := func(term xau.Terminal) error {
		_, err := svc.XAUQuote(ctx, term, svc.XAUQuoteRequest{})
		return err
	}
	bars := func(term xau.Terminal) error {
		_, err := svc.XAUBars(ctx, term, svc.XAUBarsRequest{})
		return err
	}
	state := func(term xau.Terminal) error {
		_, err := svc.XAUMarketState(ctx, term, svc.XAUMarketStateRequest{})
		return err
	}
	tools := map[string]func(xau.Terminal) error{"quote": quote, "bars": bars, "market state": state}

	for name, call := range tools {
		t.Run(name, func(t *testing.T) {
			// Down → unavailable, with a client-safe message.
			e := xauWantKind(t, call(xau.Down{}), svc.KindUnavailable)
			if !strings.Contains(e.Message, "unavailable") || !errors.Is(e, xau.ErrUnavailable) {
				t.Errorf("down: %q (cause %v)", e.Message, e.Cause)
			}
			sw := xau.NewSwitchable(xauFixedSim(t))
			if err := call(sw); err != nil {
				t.Fatalf("switch up: %v", err)
			}
			sw.SetDown(true)
			xauWantKind(t, call(sw), svc.KindUnavailable)
			sw.SetDown(false)
			if err := call(sw); err != nil {
				t.Errorf("switch back up: %v", err)
			}

			// No terminal at all.
			xauWantKind(t, call(nil), svc.KindUnavailable)

			// Unknown symbol → invalid, field symbol.
			xauWantField(t, call(xau.NewScripted(nil)), "symbol", "unknown_symbol")
			sim := xauFixedSim(t)
			var err error
			switch name {
			case "quote":
				_, err = svc.XAUQuote(ctx, sim, svc.XAUQuoteRequest{Symbol: "XAGUSD"})
			case "bars":
				_, err = svc.XAUBars(ctx, sim, svc.XAUBarsRequest{DefaultSymbol: "XAGUSD"})
			default:
				_, err = svc.XAUMarketState(ctx, sim, svc.XAUMarketStateRequest{DefaultSymbol: "XAGUSD"})
			}
			xauWantField(t, err, "symbol", "unknown_symbol")

			// An upstream timeout → timeout; a failure → unavailable; a
			// plain error from a foreign terminal → unavailable.
			sc := xau.NewScripted(nil)
			sc.SetQuote(xauQuote())
			sc.SetBars("XAUUSD", xau.M5, xauRising())
			sc.SetFailure(&xau.Error{Op: "bars", Kind: xau.ErrUnavailable, Reason: "deadline exceeded", Cause: context.DeadlineExceeded})
			xauWantKind(t, call(sc), svc.KindTimeout)
			sc.SetFailure(&xau.Error{Op: "bars", Kind: xau.ErrUnavailable, Reason: "bridge rejected token", Cause: errors.New("401 from http://10.0.0.5:8080/secret")})
			e = xauWantKind(t, call(sc), svc.KindUnavailable)
			if strings.Contains(e.Error(), "10.0.0.5") || !strings.Contains(e.Message, "bridge rejected token") {
				t.Errorf("message %q", e.Error())
			}
			sc.SetFailure(errors.New("socket: connection reset by 10.0.0.5"))
			e = xauWantKind(t, call(sc), svc.KindUnavailable)
			if strings.Contains(e.Error(), "10.0.0.5") {
				t.Errorf("message leaks: %q", e.Error())
			}
			sc.SetFailure(&xau.Error{Op: "bars", Kind: xau.ErrBadRequest, Reason: "symbol is disabled"})
			xauWantField(t, call(sc), "symbol", "terminal_rejected")
			sc.SetFailure(nil)
			if err := call(sc); err != nil {
				t.Errorf("after the failure: %v", err)
			}

			// The caller's deadline → timeout, before the terminal is called.
			dctx, cancel := context.WithDeadline(ctx, time.Now().Add(-time.Second))
			defer cancel()
			sc2 := xau.NewScripted(nil)
			var derr error
			switch name {
			case "quote":
				_, derr = svc.XAUQuote(dctx, sc2, svc.XAUQuoteRequest{})
			case "bars":
				_, derr = svc.XAUBars(dctx, sc2, svc.XAUBarsRequest{})
			default:
				_, derr = svc.XAUMarketState(dctx, sc2, svc.XAUMarketStateRequest{})
			}
			xauWantKind(t, derr, svc.KindTimeout)
			if c := sc2.Calls(); c.Quote+c.Bars+c.Health != 0 {
				t.Errorf("terminal called after the deadline: %+v", c)
			}
		})
	}
}

// xauSlowTerminal blocks until its context is done, as a hung upstream.
type xauSlowTerminal struct{ xau.Down }

func (*xauSlowTerminal) Bars(ctx context.Context, _ string, _ xau.Timeframe, _ int) ([]xau.Bar, error) {
	<-ctx.Done()
	return nil, &xau.Error{Op: "bars", Kind: xau.ErrUnavailable, Reason: "deadline exceeded", Cause: ctx.Err()}
}

func TestXAUDeadlineDuringCall(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	_, err := svc.XAUMarketState(ctx, &xauSlowTerminal{}, svc.XAUMarketStateRequest{})
	xauWantKind(t, err, svc.KindTimeout)
}

package xau

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/shopspring/decimal"
)

// d parses a decimal literal for tests.
func d(s string) decimal.Decimal { return decimal.RequireFromString(s) }

// mkBar builds a bar from literals.
func mkBar(t time.Time, o, h, l, c string, vol int64) Bar {
	return Bar{Time: t, Open: d(o), High: d(h), Low: d(l), Close: d(c), TickVolume: vol}
}

func TestTimeframes(t *testing.T) {
	want := map[Timeframe]time.Duration{M1: time.Minute, M5: 5 * time.Minute, M15: 15 * time.Minute, H1: time.Hour}
	for _, tf := range Timeframes() {
		got, err := ParseTimeframe(string(tf))
		if err != nil || got != tf {
			t.Fatalf("ParseTimeframe(%q) = %q, %v", tf, got, err)
		}
		if tf.Duration() != want[tf] || !tf.Valid() || tf.String() != string(tf) {
			t.Fatalf("%s: Duration %s, Valid %v", tf, tf.Duration(), tf.Valid())
		}
	}
	for _, s := range []string{"", "m5", "M2", "H4", "D1", "M5 ", "PERIOD_M5"} {
		_, err := ParseTimeframe(s)
		if !errors.Is(err, ErrBadRequest) || errors.Is(err, ErrUnavailable) {
			t.Fatalf("ParseTimeframe(%q) err = %v, want ErrBadRequest", s, err)
		}
		if Timeframe(s).Duration() != 0 || Timeframe(s).Valid() {
			t.Fatalf("Timeframe(%q) is valid", s)
		}
	}
}

func TestAlign(t *testing.T) {
	at := time.Date(2024, 1, 10, 14, 37, 42, 123, time.FixedZone("X", 3600))
	cases := map[Timeframe]string{
		M1:  "2024-01-10T13:37:00Z",
		M5:  "2024-01-10T13:35:00Z",
		M15: "2024-01-10T13:30:00Z",
		H1:  "2024-01-10T13:00:00Z",
	}
	for tf, want := range cases {
		got := tf.Align(at)
		if got.Format(time.RFC3339Nano) != want || got.Location() != time.UTC {
			t.Errorf("%s.Align = %s, want %s", tf, got.Format(time.RFC3339Nano), want)
		}
		if !tf.Aligned(got) || tf.Aligned(got.Add(time.Second)) || tf.Aligned(got.Add(time.Nanosecond)) {
			t.Errorf("%s.Aligned wrong around %s", tf, got)
		}
	}
	// Before the epoch, alignment still rounds down.
	pre := time.Date(1969, 12, 31, 23, 59, 30, 0, time.UTC)
	if got := M1.Align(pre); !got.Equal(time.Date(1969, 12, 31, 23, 59, 0, 0, time.UTC)) {
		t.Errorf("M1.Align(%s) = %s", pre, got)
	}
}

func TestCheckSymbol(t *testing.T) {
	for _, s := range []string{"XAUUSD", "XAUUSD.a", "XAUUSD#", "GOLD", "xau_usd-m", "XAUUSD+", "XAUUSD!"} {
		if err := CheckSymbol(s); err != nil {
			t.Errorf("CheckSymbol(%q) = %v", s, err)
		}
	}
	for _, s := range []string{"", "XAU USD", "XAU/USD", "XAUUSD\n", strings.Repeat("X", 33), "ÄÖÜ", "x?y=z"} {
		err := CheckSymbol(s)
		if !errors.Is(err, ErrBadRequest) || errors.Is(err, ErrUnknownSymbol) {
			t.Errorf("CheckSymbol(%q) = %v, want ErrBadRequest only", s, err)
		}
	}
}

func TestErrorModel(t *testing.T) {
	err := Unavailable("bars", "upstream sent inconsistent bars", context.DeadlineExceeded)
	if !errors.Is(err, ErrUnavailable) || !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, ErrBadRequest) {
		t.Fatalf("errors.Is wrong for %v", err)
	}
	if Reason(err) != "upstream sent inconsistent bars" {
		t.Fatalf("Reason = %q", Reason(err))
	}
	if got := err.Error(); got != "xau bars: upstream sent inconsistent bars: context deadline exceeded" {
		t.Fatalf("Error() = %q", got)
	}
	us := UnknownSymbol("quote", "EURUSD")
	if !errors.Is(us, ErrUnknownSymbol) || !errors.Is(us, ErrBadRequest) || errors.Is(us, ErrUnavailable) {
		t.Fatalf("unknown symbol error kinds wrong: %v", us)
	}
	if !errors.Is(ErrUnknownSymbol, ErrBadRequest) {
		t.Fatal("ErrUnknownSymbol must wrap ErrBadRequest")
	}
	if Reason(errors.New("plain")) != "" {
		t.Fatal("Reason of a foreign error must be empty")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := ContextError(ctx, "quote"); !errors.Is(err, ErrUnavailable) || !errors.Is(err, context.Canceled) {
		t.Fatalf("ctxErr = %v", err)
	}
}

func TestValidateQuote(t *testing.T) {
	now := time.Date(2024, 1, 10, 14, 0, 0, 0, time.UTC)
	good := Quote{Symbol: "XAUUSD", Bid: d("2650.10"), Ask: d("2650.35"), Last: d("2650.10"), Spread: d("0.25"), Time: now}
	if err := ValidateQuote(good, decimal.Decimal{}); err != nil {
		t.Fatalf("good quote: %v", err)
	}
	if err := ValidateQuote(good, d("0.25")); err != nil {
		t.Fatalf("spread equal to the cap: %v", err)
	}
	zeroLast := good
	zeroLast.Last = decimal.Zero
	if err := ValidateQuote(zeroLast, decimal.Decimal{}); err != nil {
		t.Fatalf("last 0: %v", err)
	}
	cases := []struct {
		name string
		mod  func(*Quote)
		cap  string
		want string
	}{
		{"no symbol", func(q *Quote) { q.Symbol = "" }, "0", "no symbol"},
		{"bid zero", func(q *Quote) { q.Bid = decimal.Zero; q.Spread = q.Ask }, "0", "bid"},
		{"bid negative", func(q *Quote) { q.Bid = d("-1"); q.Spread = q.Ask.Sub(q.Bid) }, "0", "bid"},
		{"ask below bid", func(q *Quote) { q.Ask = d("2650.00"); q.Spread = d("-0.10") }, "0", "below bid"},
		{"negative last", func(q *Quote) { q.Last = d("-0.01") }, "0", "last"},
		{"spread mismatch", func(q *Quote) { q.Spread = d("0.20") }, "0", "ask - bid"},
		{"spread over 1%", func(q *Quote) { q.Ask = d("2676.61"); q.Spread = d("26.51") }, "0", "1%"},
		{"spread over cap", func(q *Quote) {}, "0.24", "cap"},
		{"no time", func(q *Quote) { q.Time = time.Time{} }, "0", "time"},
	}
	for _, c := range cases {
		q := good
		c.mod(&q)
		err := ValidateQuote(q, d(c.cap))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want mention of %q", c.name, err, c.want)
		}
	}
	// Exactly 1% is allowed, a cent more is not.
	edge := Quote{Symbol: "XAUUSD", Bid: d("2000"), Ask: d("2020"), Spread: d("20"), Time: now}
	if err := ValidateQuote(edge, decimal.Decimal{}); err != nil {
		t.Fatalf("spread of exactly 1%%: %v", err)
	}
	edge.Ask, edge.Spread = d("2020.01"), d("20.01")
	if ValidateQuote(edge, decimal.Decimal{}) == nil {
		t.Fatal("spread just over 1% accepted")
	}
}

func TestValidateBars(t *testing.T) {
	t0 := time.Date(2024, 1, 10, 14, 0, 0, 0, time.UTC)
	good := []Bar{
		mkBar(t0, "2650", "2651", "2649", "2650.5", 10),
		mkBar(t0.Add(5*time.Minute), "2650.5", "2650.5", "2650.5", "2650.5", 0),
		mkBar(t0.Add(15*time.Minute), "2650.4", "2652", "2650", "2651", 7), // a gap is fine
	}
	if err := ValidateBars(good, M5); err != nil {
		t.Fatalf("good bars: %v", err)
	}
	if err := ValidateBars(nil, M5); err != nil {
		t.Fatalf("no bars: %v", err)
	}
	if err := ValidateBars(good, "M7"); err == nil {
		t.Fatal("invalid timeframe accepted")
	}
	cases := []struct {
		name string
		mod  func([]Bar)
		want string
	}{
		{"high below close", func(b []Bar) { b[0].High = d("2650.4") }, "bars[0]: high"},
		{"high below open", func(b []Bar) { b[2].High = d("2650.3"); b[2].Close = d("2650.2") }, "bars[2]: high"},
		{"low above open", func(b []Bar) { b[1].Low = d("2650.6") }, "bars[1]: low"},
		{"low above close", func(b []Bar) { b[2].Low = d("2651.5"); b[2].Open = d("2652") }, "bars[2]: low"},
		{"zero price", func(b []Bar) { b[1].Low = decimal.Zero }, "positive"},
		{"negative volume", func(b []Bar) { b[0].TickVolume = -1 }, "tick volume"},
		{"missing time", func(b []Bar) { b[0].Time = time.Time{} }, "time is missing"},
		{"misaligned", func(b []Bar) { b[1].Time = b[1].Time.Add(time.Minute) }, "not aligned"},
		{"sub-second", func(b []Bar) { b[1].Time = b[1].Time.Add(time.Millisecond) }, "not aligned"},
		{"duplicate", func(b []Bar) { b[1].Time = b[0].Time }, "not after"},
		{"out of order", func(b []Bar) { b[0], b[2] = b[2], b[0] }, "not after"},
	}
	for _, c := range cases {
		bars := append([]Bar(nil), good...)
		c.mod(bars)
		err := ValidateBars(bars, M5)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want mention of %q", c.name, err, c.want)
		}
	}
}

func TestAggregate(t *testing.T) {
	t0 := time.Date(2024, 1, 10, 14, 0, 0, 0, time.UTC)
	in := []Bar{
		mkBar(t0.Add(0*time.Minute), "10", "12", "9", "11", 1),
		mkBar(t0.Add(1*time.Minute), "11", "13", "10", "12", 2),
		mkBar(t0.Add(4*time.Minute), "12", "12", "8", "9", 3),
		mkBar(t0.Add(7*time.Minute), "9", "10", "9", "10", 4),
	}
	out, err := Aggregate(in, M5)
	if err != nil {
		t.Fatal(err)
	}
	want := []Bar{
		mkBar(t0, "10", "13", "8", "9", 6),
		mkBar(t0.Add(5*time.Minute), "9", "10", "9", "10", 4),
	}
	if len(out) != len(want) {
		t.Fatalf("got %d bars, want %d", len(out), len(want))
	}
	for i := range want {
		if !barEqual(out[i], want[i]) {
			t.Errorf("bar %d = %+v, want %+v", i, out[i], want[i])
		}
	}
	if _, err := Aggregate([]Bar{in[1], in[0]}, M5); err == nil {
		t.Fatal("unordered input accepted")
	}
	if _, err := Aggregate(in, ""); err == nil {
		t.Fatal("invalid timeframe accepted")
	}
}

// barEqual compares bars exactly (decimals by value).
func barEqual(a, b Bar) bool {
	return a.Time.Equal(b.Time) && a.Open.Equal(b.Open) && a.High.Equal(b.High) && a.Low.Equal(b.Low) && a.Close.Equal(b.Close) && a.TickVolume == b.TickVolume
}

package mt5

import (
	"context"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/seed1284c1d2/svc/xau"
)

// d parses a decimal literal for tests.
func d(s string) decimal.Decimal { return decimal.RequireFromString(s) }

// barEqual compares bars exactly (decimals by value).
func barEqual(a, b xau.Bar) bool {
	return a.Time.Equal(b.Time) && a.Open.Equal(b.Open) && a.High.Equal(b.High) && a.Low.Equal(b.Low) && a.Close.Equal(b.Close) && a.TickVolume == b.TickVolume
}

// newSim returns a simulated terminal with a fixed clock.
func newSim(t testing.TB, seed int64, now time.Time) *xau.Simulated {
	t.Helper()
	s, err := xau.NewSimulated(xau.SimConfig{Seed: seed, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// mustBars calls Bars and fails the test on error.
func mustBars(t testing.TB, term xau.Terminal, tf xau.Timeframe, count int) []xau.Bar {
	t.Helper()
	bars, err := term.Bars(context.Background(), "XAUUSD", tf, count)
	if err != nil {
		t.Fatalf("Bars(%s, %d): %v", tf, count, err)
	}
	return bars
}

// simWed is a reference instant (UTC), a Wednesday.
var simWed = time.Date(2024, 1, 10, 14, 33, 17, 250_000_000, time.UTC)

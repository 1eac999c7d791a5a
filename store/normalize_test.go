package store

import (
	"math"
	"strings"
	"testing"
	"time"
)

func TestNanosRoundTripAndClamp(t *testing.T) {
	at := time.Date(2026, 3, 14, 15, 9, 26, 535897932, time.FixedZone("X", 3600))
	if got := fromNanos(toNanos(at)); !got.Equal(at) || got.Location() != time.UTC {
		t.Fatalf("round trip of %v = %v", at, got)
	}
	if got := toNanos(time.Date(9999, 12, 31, 0, 0, 0, 0, time.UTC)); got != math.MaxInt64 {
		t.Fatalf("toNanos(9999) = %d, want MaxInt64", got)
	}
	if got := toNanos(time.Date(1000, 1, 1, 0, 0, 0, 0, time.UTC)); got != math.MinInt64 {
		t.Fatalf("toNanos(1000) = %d, want MinInt64", got)
	}
	if got := toNanos(time.Time{}); got != math.MinInt64 {
		t.Fatalf("toNanos(zero) = %d, want MinInt64", got)
	}
}

func TestIsAtomicAmount(t *testing.T) {
	for _, ok := range []string{"0", "1", "3400", strings.Repeat("9", 78)} {
		if !isAtomicAmount(ok) {
			t.Errorf("isAtomicAmount(%q) = false", ok)
		}
	}
	for _, bad := range []string{"", "-1", "+1", "01", "1.0", "1e3", " 1", strings.Repeat("9", 79), "１"} {
		if isAtomicAmount(bad) {
			t.Errorf("isAtomicAmount(%q) = true", bad)
		}
	}
}

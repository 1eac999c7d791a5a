package store

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"
)

func TestChecksumAddress(t *testing.T) {
	// EIP-55 test vectors.
	for _, want := range []string{
		"0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed",
		"0xfB6916095ca1df60bB79Ce92cE3Ea74c37c5d359",
		"0xdbF03B407c01E7cD3CBea99509d93f8DDDC8C6FB",
		"0xD1220A0cf47c7B9Be7A2E6BA89F429762e7b9aDb",
	} {
		for _, in := range []string{want, strings.ToLower(want), "0X" + strings.ToUpper(want[2:]), " " + want + " "} {
			if got, ok := ChecksumAddress(in); !ok || got != want {
				t.Errorf("ChecksumAddress(%q) = %q, %v; want %q", in, got, ok, want)
			}
		}
	}
	for _, bad := range []string{"", "0x", "5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed", "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAe",
		"0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAedd", "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAeg", "1x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed"} {
		if got, ok := ChecksumAddress(bad); ok {
			t.Errorf("ChecksumAddress(%q) = %q, ok; want refused", bad, got)
		}
	}
}

func TestReferralCode(t *testing.T) {
	w := "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed"
	code, ok := ReferralCode(w)
	if !ok || len(code) != ReferralCodeLen {
		t.Fatalf("ReferralCode = %q, %v", code, ok)
	}
	if n, ok := NormalizeReferralCode(code); !ok || n != code {
		t.Fatalf("a derived code is not well-formed: %q", code)
	}
	for _, spelling := range []string{strings.ToLower(w), "0X" + strings.ToUpper(w[2:])} {
		if c, _ := ReferralCode(spelling); c != code {
			t.Fatalf("ReferralCode(%q) = %q, want %q (same wallet)", spelling, c, code)
		}
	}
	seen := map[string]bool{code: true}
	for i := range 1000 {
		c, ok := ReferralCode(fmt.Sprintf("0x%040x", i))
		if !ok || seen[c] {
			t.Fatalf("wallet %d: code %q repeats or fails", i, c)
		}
		seen[c] = true
	}
	if _, ok := ReferralCode("not a wallet"); ok {
		t.Fatal("ReferralCode of a non-address succeeded")
	}
}

func TestNormalizeReferralCode(t *testing.T) {
	for in, want := range map[string]string{"ABCDEFGH23": "ABCDEFGH23", " abcdefgh27\n": "ABCDEFGH27", "zzzzzzzzzz": "ZZZZZZZZZZ"} {
		if got, ok := NormalizeReferralCode(in); !ok || got != want {
			t.Errorf("NormalizeReferralCode(%q) = %q, %v; want %q", in, got, ok, want)
		}
	}
	for _, bad := range []string{"", "ABCDEFGH2", "ABCDEFGH234", "ABCDEFGH01", "ABCDEFGH89", "ABCDEFGH-2", "ÀBCDEFGH23"} {
		if got, ok := NormalizeReferralCode(bad); ok {
			t.Errorf("NormalizeReferralCode(%q) = %q, ok; want refused", bad, got)
		}
	}
}

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

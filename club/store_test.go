package club_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/seed1284c1d2/svc/club"
)

func TestReferralCode(t *testing.T) {
	w := "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed"
	code, ok := club.ReferralCode(w)
	if !ok || len(code) != club.ReferralCodeLen {
		t.Fatalf("ReferralCode = %q, %v", code, ok)
	}
	if n, ok := club.NormalizeReferralCode(code); !ok || n != code {
		t.Fatalf("a derived code is not well-formed: %q", code)
	}
	for _, spelling := range []string{strings.ToLower(w), "0X" + strings.ToUpper(w[2:])} {
		if c, _ := club.ReferralCode(spelling); c != code {
			t.Fatalf("ReferralCode(%q) = %q, want %q (same wallet)", spelling, c, code)
		}
	}
	seen := map[string]bool{code: true}
	for i := range 1000 {
		c, ok := club.ReferralCode(fmt.Sprintf("0x%040x", i))
		if !ok || seen[c] {
			t.Fatalf("wallet %d: code %q repeats or fails", i, c)
		}
		seen[c] = true
	}
	if _, ok := club.ReferralCode("not a wallet"); ok {
		t.Fatal("ReferralCode of a non-address succeeded")
	}
}

func TestNormalizeReferralCode(t *testing.T) {
	for in, want := range map[string]string{"ABCDEFGH23": "ABCDEFGH23", " abcdefgh27\n": "ABCDEFGH27", "zzzzzzzzzz": "ZZZZZZZZZZ"} {
		if got, ok := club.NormalizeReferralCode(in); !ok || got != want {
			t.Errorf("NormalizeReferralCode(%q) = %q, %v; want %q", in, got, ok, want)
		}
	}
	for _, bad := range []string{"", "ABCDEFGH2", "ABCDEFGH234", "ABCDEFGH01", "ABCDEFGH89", "ABCDEFGH-2", "ÀBCDEFGH23"} {
		if got, ok := club.NormalizeReferralCode(bad); ok {
			t.Errorf("NormalizeReferralCode(%q) = %q, ok; want refused", bad, got)
		}
	}
}

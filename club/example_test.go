package club_test

import (
	"fmt"
	"net/http/httptest"

	"github.com/seed1284c1d2/svc/club"
)

// ExampleTierFor shows the tier rule: the highest tier any one of whose
// qualifiers is met, and what the next tier needs.
func ExampleTierFor() {
	for _, w := range []struct{ calls, payers int64 }{{0, 0}, {9, 0}, {2, 3}, {100, 0}} {
		tier, next := club.TierFor(w.calls, w.payers)
		if tier == "" {
			tier = "none"
		}
		fmt.Printf("%d calls, %d referred payers: %s", w.calls, w.payers, tier)
		if next != nil {
			fmt.Printf("; %s needs", next.Tier)
			for _, p := range next.AnyOf {
				fmt.Printf(" %d more %s", p.Remaining, p.Metric)
			}
		}
		fmt.Println()
	}
	// Output:
	// 0 calls, 0 referred payers: none; FOUNDING needs 1 more paidCalls
	// 9 calls, 0 referred payers: FOUNDING; INSIDER needs 1 more paidCalls 3 more referredPayers
	// 2 calls, 3 referred payers: INSIDER; PRIME needs 98 more paidCalls 17 more referredPayers
	// 100 calls, 0 referred payers: PRIME
}

// ExampleRefFromRequest: the referral code a paid call carries, for the
// ledger.
func ExampleRefFromRequest() {
	r := httptest.NewRequest("GET", "/api/session-state?ref=abcdefgh23", nil)
	fmt.Printf("%q\n", club.RefFromRequest(r))
	r = httptest.NewRequest("POST", "/api/risk-levels", nil)
	r.Header.Set("X-Ref", "ABCDEFGH23")
	fmt.Printf("%q\n", club.RefFromRequest(r))
	r.Header.Set("X-Ref", "not a code")
	fmt.Printf("%q\n", club.RefFromRequest(r))
	// Output:
	// "ABCDEFGH23"
	// "ABCDEFGH23"
	// ""
}

// The referral code of a wallet is a pure function of its address.
func ExampleReferralCode() {
	code, _ := club.ReferralCode("0x5aaeb6053f3e94c9b9a09f33669435e7ef1beaed")
	same, _ := club.ReferralCode("0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed")
	fmt.Println(code, code == same)
	// Output: GLRDO4D5FF true
}

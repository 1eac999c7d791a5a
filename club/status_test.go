package club_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/seed1284c1d2/svc/club"
)

// statusOf fetches the status of w over HTTP.
func (f *fixture) status(t *testing.T, w string) club.Status {
	t.Helper()
	var st club.Status
	decode(t, f.get(t, club.StatusPath+"?wallet="+url.QueryEscape(w)), http.StatusOK, &st)
	return st
}

func tierOf(st club.Status) string {
	if st.Tier == nil {
		return ""
	}
	return *st.Tier
}

// progress returns the next tier's progress on metric.
func progress(t *testing.T, st club.Status, metric string) club.Progress {
	t.Helper()
	if st.NextTier == nil {
		t.Fatalf("no next tier in %+v", st)
	}
	for _, p := range st.NextTier.AnyOf {
		if p.Metric == metric {
			return p
		}
	}
	t.Fatalf("next tier %s has no %s qualifier", st.NextTier.Tier, metric)
	return club.Progress{}
}

// TestStatusTiersByPaidCalls: the tier at the paid-call boundaries 0, 1, 9,
// 10, 99 and 100, with what the next tier needs, from ledger appends only.
func TestStatusTiersByPaidCalls(t *testing.T) {
	eachStore(t, func(t *testing.T, open opener) {
		f := newFixture(t, open(t), newClock(), nil)
		cases := []struct {
			calls     int
			tier      string
			rank      int
			next      string
			remaining int64 // paid calls the next tier needs
		}{
			{0, "", 0, club.TierFounding, 1},
			{1, club.TierFounding, 1, club.TierInsider, 9},
			{9, club.TierFounding, 1, club.TierInsider, 1},
			{10, club.TierInsider, 2, club.TierPrime, 90},
			{99, club.TierInsider, 2, club.TierPrime, 1},
			{100, club.TierPrime, 3, "", 0},
		}
		for i, tc := range cases {
			w := wallet(i)
			f.settle(t, w, "", tc.calls)
			if i%2 == 1 { // any single-case spelling is the same wallet
				w = "0x" + strings.ToUpper(w[2:])
			}
			st := f.status(t, w)
			if st.Wallet != checksum(t, w) || st.Source != "ledger" || !st.OK {
				t.Fatalf("%d calls: wallet %q source %q", tc.calls, st.Wallet, st.Source)
			}
			if got := tierOf(st); got != tc.tier || st.Rank != tc.rank || st.Member != (tc.tier != "") || st.PaidCalls != int64(tc.calls) {
				t.Fatalf("%d calls: tier %q rank %d member %v paidCalls %d; want %q rank %d", tc.calls, got, st.Rank, st.Member, st.PaidCalls, tc.tier, tc.rank)
			}
			if tc.next == "" {
				if st.NextTier != nil {
					t.Fatalf("%d calls: next tier %+v at the top", tc.calls, st.NextTier)
				}
			} else {
				if st.NextTier.Tier != tc.next {
					t.Fatalf("%d calls: next tier %s, want %s", tc.calls, st.NextTier.Tier, tc.next)
				}
				p := progress(t, st, club.MetricPaidCalls)
				if p.Remaining != tc.remaining || p.Current != int64(tc.calls) || p.Target != int64(tc.calls)+tc.remaining {
					t.Fatalf("%d calls: paid-call progress %+v, want %d remaining", tc.calls, p, tc.remaining)
				}
			}
			if tc.calls == 0 {
				if st.FirstPaidAt != nil || st.LastPaidAt != nil || len(st.Benefits) != 0 {
					t.Fatalf("no calls: first %v last %v benefits %v", st.FirstPaidAt, st.LastPaidAt, st.Benefits)
				}
			} else {
				if st.FirstPaidAt == nil || st.LastPaidAt == nil || st.LastPaidAt.Before(*st.FirstPaidAt) || len(st.Benefits) == 0 {
					t.Fatalf("%d calls: first %v last %v benefits %v", tc.calls, st.FirstPaidAt, st.LastPaidAt, st.Benefits)
				}
			}
			if st.Referral != nil || !strings.Contains(st.Hint, club.ReferralCreatePath) {
				t.Fatalf("%d calls: referral %+v hint %q for a wallet without a code", tc.calls, st.Referral, st.Hint)
			}
		}
	})
}

// TestStatusTiersByReferredPayers: 2/3 and 19/20 distinct referred payers
// (through the owner's registered code) cross the INSIDER and PRIME
// boundaries; the owner's own calls with its code are not referrals, and a
// payer who pays twice counts once.
func TestStatusTiersByReferredPayers(t *testing.T) {
	eachStore(t, func(t *testing.T, open opener) {
		f := newFixture(t, open(t), newClock(), nil)
		owner := wallet(1000)
		var rc club.ReferralCreated
		decode(t, f.post(t, club.ReferralCreatePath, `{"wallet":"`+owner+`"}`), http.StatusCreated, &rc)
		code := rc.Code

		// Self-referral: the owner's calls carrying its own code.
		f.settle(t, owner, code, 2)
		st := f.status(t, owner)
		if st.ReferredPayers != 0 || st.ReferredPaidCalls != 0 || st.PaidCalls != 2 || tierOf(st) != club.TierFounding {
			t.Fatalf("after self-referral: %+v", st)
		}
		if st.Referral == nil || st.Referral.Code != code || !strings.Contains(st.Referral.ShareLinks.Catalog, "ref="+code) || st.Hint != "" {
			t.Fatalf("status does not show the wallet's code: %+v", st.Referral)
		}

		payers := 0
		refer := func(n int) {
			for range n {
				payers++
				f.settle(t, wallet(2000+payers), strings.ToLower(code), 1)
			}
		}
		check := func(wantPayers int64, wantTier string) {
			t.Helper()
			st := f.status(t, owner)
			if st.ReferredPayers != wantPayers || tierOf(st) != wantTier {
				t.Fatalf("%d referred payers: status says %d payers, tier %q; want tier %q", wantPayers, st.ReferredPayers, tierOf(st), wantTier)
			}
		}
		refer(2)
		f.settle(t, wallet(2001), code, 3) // a repeat payer: more calls, same payer
		check(2, club.TierFounding)
		st = f.status(t, owner)
		if p := progress(t, st, club.MetricReferredPayers); p.Remaining != 1 || st.NextTier.Tier != club.TierInsider || st.ReferredPaidCalls != 5 {
			t.Fatalf("2 payers: progress %+v, referred calls %d", p, st.ReferredPaidCalls)
		}
		refer(1)
		check(3, club.TierInsider)
		refer(16)
		check(19, club.TierInsider)
		if p := progress(t, f.status(t, owner), club.MetricReferredPayers); p.Remaining != 1 || p.Target != 20 {
			t.Fatalf("19 payers: progress %+v", p)
		}
		refer(1)
		check(20, club.TierPrime)

		// A referrer who never paid still reaches INSIDER by referrals alone.
		other := wallet(3000)
		decode(t, f.post(t, club.ReferralCreatePath, `{"wallet":"`+other+`"}`), http.StatusCreated, &rc)
		for i := range 2 {
			f.settle(t, wallet(3100+i), rc.Code, 1)
		}
		st = f.status(t, other)
		if tierOf(st) != "" || st.Member || st.NextTier.Tier != club.TierFounding {
			t.Fatalf("referrer without calls, 2 payers: %+v", st)
		}
		f.settle(t, wallet(3102), rc.Code, 1)
		if st = f.status(t, other); tierOf(st) != club.TierInsider || st.PaidCalls != 0 {
			t.Fatalf("referrer without calls, 3 payers: tier %q", tierOf(st))
		}
	})
}

// TestStatusRejectsBadWallets: a missing or malformed wallet is a 400
// problem naming the field wallet and the rule.
func TestStatusRejectsBadWallets(t *testing.T) {
	f := newFixture(t, openSQLite(t), newClock(), nil)
	good := checksum(t, "0xfb6916095ca1df60bb79ce92ce3ea74c37c5d359") // EIP-55's example
	bad := []byte(good)
	for i := 2; i < len(bad); i++ { // flip the case of one letter: checksum fails
		if bad[i] >= 'a' && bad[i] <= 'f' {
			bad[i] -= 'a' - 'A'
			break
		} else if bad[i] >= 'A' && bad[i] <= 'F' {
			bad[i] += 'a' - 'A'
			break
		}
	}
	for _, tc := range []struct{ query, rule string }{
		{"", club.RuleRequired},
		{"?wallet=", club.RuleRequired},
		{"?wallet=%20%20", club.RuleRequired},
		{"?wallet=vitalik.eth", club.RuleEVMAddress},
		{"?wallet=0x123", club.RuleEVMAddress},
		{"?wallet=" + good + "00", club.RuleEVMAddress},
		{"?wallet=0X" + good[2:], club.RuleEVMAddress},
		{"?wallet=0xg" + good[3:], club.RuleEVMAddress},
		{"?wallet=" + string(bad), club.RuleChecksum},
		{"?wallet=0x0000000000000000000000000000000000000000", club.RuleNonZero},
	} {
		p := mustRule(t, f.get(t, club.StatusPath+tc.query), "wallet", tc.rule)
		if len(p.Errors) != 1 || p.Instance != club.StatusPath {
			t.Fatalf("%s: %+v", tc.query, p)
		}
	}
	// The checksummed, lower-case and upper-case spellings are one wallet.
	for _, w := range []string{good, strings.ToLower(good), "0x" + strings.ToUpper(good[2:])} {
		if st := f.status(t, w); st.Wallet != good {
			t.Fatalf("status(%s).wallet = %s, want %s", w, st.Wallet, good)
		}
	}
}

// TestStatusStoreFailure: a store that fails answers 503 with Retry-After,
// revealing nothing.
func TestStatusStoreFailure(t *testing.T) {
	st := openSQLite(t)
	f := newFixture(t, st, newClock(), nil)
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	r := f.get(t, club.StatusPath+"?wallet="+wallet(1))
	p := problem(t, r, http.StatusServiceUnavailable)
	if p.Code != club.CodeUnavailable || r.header.Get("Retry-After") == "" || strings.Contains(string(r.body), "sql") {
		t.Fatalf("store failure answer: %s", r)
	}
	problem(t, f.get(t, club.LoungePath), http.StatusServiceUnavailable)
	problem(t, f.post(t, club.ReferralCreatePath, `{"wallet":"`+wallet(1)+`"}`), http.StatusServiceUnavailable)
}

// TestTierFor pins the tier rule on every boundary, both metrics.
func TestTierFor(t *testing.T) {
	for _, tc := range []struct {
		calls, payers int64
		tier, next    string
	}{
		{0, 0, "", club.TierFounding},
		{0, 2, "", club.TierFounding},
		{1, 0, club.TierFounding, club.TierInsider},
		{9, 2, club.TierFounding, club.TierInsider},
		{10, 0, club.TierInsider, club.TierPrime},
		{0, 3, club.TierInsider, club.TierPrime},
		{99, 19, club.TierInsider, club.TierPrime},
		{100, 0, club.TierPrime, ""},
		{0, 20, club.TierPrime, ""},
		{5, 25, club.TierPrime, ""},
	} {
		tier, next := club.TierFor(tc.calls, tc.payers)
		nextName := ""
		if next != nil {
			nextName = next.Tier
			for _, p := range next.AnyOf {
				cur := tc.calls
				if p.Metric == club.MetricReferredPayers {
					cur = tc.payers
				}
				if p.Current != cur || p.Remaining != max(0, p.Target-cur) {
					t.Fatalf("TierFor(%d, %d) progress %+v", tc.calls, tc.payers, p)
				}
			}
		}
		if tier != tc.tier || nextName != tc.next {
			t.Fatalf("TierFor(%d, %d) = %q, next %q; want %q, next %q", tc.calls, tc.payers, tier, nextName, tc.tier, tc.next)
		}
	}
}

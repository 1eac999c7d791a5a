package club_test

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/seed1284c1d2/svc/club"
)

// TestReferralCreateIdempotentAcrossInstances: the code is derived from the
// checksummed wallet; the first creation answers 201, every later one
// (any spelling, either instance sharing the store) 200 with the same code
// and creation time; the share links carry ?ref=CODE.
func TestReferralCreateIdempotentAcrossInstances(t *testing.T) {
	eachStore(t, func(t *testing.T, open opener) {
		st := open(t)
		clk := newClock()
		a := newFixture(t, st, clk, nil)
		b := newFixture(t, st, clk, func(c *club.Config) { c.BaseURL = "https://other.example/svc" })
		w := wallet(42)
		want, _ := club.ReferralCode(w)

		var first club.ReferralCreated
		r := a.post(t, club.ReferralCreatePath, `{"wallet":"`+checksum(t, w)+`"}`)
		decode(t, r, http.StatusCreated, &first)
		if first.Code != want || first.OwnerWallet != checksum(t, w) || !first.Created || !first.CreatedAt.Equal(clk.Now()) {
			t.Fatalf("first creation: %+v; want code %s", first, want)
		}
		if loc := r.header.Get("Location"); loc != "https://svc.example"+club.ReferralPathPrefix+want || first.Status != loc {
			t.Fatalf("Location %q, status %q", loc, first.Status)
		}
		links := first.ShareLinks
		if links.Catalog != "https://svc.example/api/catalog?ref="+want ||
			links.Club != "https://svc.example/api/club?ref="+want ||
			links.PaidCall != "https://svc.example"+club.DefaultPaidExamplePath+"?ref="+want {
			t.Fatalf("share links %+v", links)
		}
		if first.Header.Name != "X-Ref" || first.Header.Value != want || !strings.Contains(first.Attribution, "self-referral is not counted") {
			t.Fatalf("header alternative %+v, attribution %q", first.Header, first.Attribution)
		}

		clk.Advance(time.Hour)
		for i, again := range []struct {
			f    *fixture
			body string
		}{
			{a, `{"wallet":"` + w + `"}`},
			{b, `{"wallet":"0x` + strings.ToUpper(w[2:]) + `"}`},
			{b, ` {"wallet" : "` + checksum(t, w) + `"} `},
		} {
			var rc club.ReferralCreated
			decode(t, again.f.post(t, club.ReferralCreatePath, again.body), http.StatusOK, &rc)
			if rc.Code != want || rc.Created || !rc.CreatedAt.Equal(first.CreatedAt) || rc.OwnerWallet != first.OwnerWallet {
				t.Fatalf("creation %d again: %+v; want the first registration", i, rc)
			}
		}
		var rc club.ReferralCreated
		decode(t, b.post(t, club.ReferralCreatePath, `{"wallet":"`+w+`"}`), http.StatusOK, &rc)
		if rc.ShareLinks.Club != "https://other.example/svc/api/club?ref="+want {
			t.Fatalf("second instance's links are not built from its BaseURL: %+v", rc.ShareLinks)
		}
		// Two different wallets, two different codes.
		decode(t, b.post(t, club.ReferralCreatePath, `{"wallet":"`+wallet(43)+`"}`), http.StatusCreated, &rc)
		if rc.Code == want {
			t.Fatal("two wallets got the same code")
		}
	})
}

// TestReferralCreateRejects: strict JSON (unknown, duplicate members,
// malformed JSON, wrong type), a malformed wallet, and an oversized body.
func TestReferralCreateRejects(t *testing.T) {
	f := newFixture(t, openSQLite(t), newClock(), func(c *club.Config) { c.BodyLimit = 256 })
	w := wallet(1)
	for _, tc := range []struct{ body, field, rule string }{
		{`{"wallet":"` + w + `","walet":"x"}`, "walet", club.RuleUnknownField},
		{`{"wallet":"` + w + `","wallet":"` + w + `"}`, "wallet", club.RuleDuplicate},
		{`{"wallet":"` + w + `"`, "", club.RuleJSON},
		{`{"wallet":"` + w + `"} {}`, "", club.RuleJSON},
		{`["` + w + `"]`, "", club.RuleJSON},
		{``, "", club.RuleJSON},
		{`{"wallet":42}`, "wallet", club.RuleString},
		{`{}`, "wallet", club.RuleRequired},
		{`{"wallet":null}`, "wallet", club.RuleRequired},
		{`{"wallet":"0xabc"}`, "wallet", club.RuleEVMAddress},
	} {
		mustRule(t, f.post(t, club.ReferralCreatePath, tc.body), tc.field, tc.rule)
	}
	r := f.post(t, club.ReferralCreatePath, `{"wallet":"`+w+`","pad":"`+strings.Repeat("x", 300)+`"}`)
	if p := problem(t, r, http.StatusRequestEntityTooLarge); p.Code != club.CodeTooLarge {
		t.Fatalf("oversized body: %s", r)
	}
	if r := f.get(t, club.ReferralCreatePath); r.status != http.StatusMethodNotAllowed || r.header.Get("Allow") != http.MethodPost { // not a code "create"
		t.Fatalf("GET create: %s (Allow %q)", r, r.header.Get("Allow"))
	}
	// Nothing was registered by the refused requests.
	code, _ := club.ReferralCode(w)
	problem(t, f.get(t, club.ReferralPathPrefix+code), http.StatusNotFound)
}

// TestReferralStatus: what a code converted; 404 for an unknown code, 400
// for a malformed one; codes are case-insensitive.
func TestReferralStatus(t *testing.T) {
	eachStore(t, func(t *testing.T, open opener) {
		f := newFixture(t, open(t), newClock(), nil)
		owner := wallet(10)
		var rc club.ReferralCreated
		decode(t, f.post(t, club.ReferralCreatePath, `{"wallet":"`+owner+`"}`), http.StatusCreated, &rc)
		f.settle(t, owner, rc.Code, 4)      // self-referral: ignored
		f.settle(t, wallet(11), rc.Code, 2) // two calls, one payer
		f.settle(t, wallet(12), rc.Code, 1)
		f.settle(t, wallet(13), "", 5) // no code
		var rs club.ReferralStatus
		decode(t, f.get(t, club.ReferralPathPrefix+strings.ToLower(rc.Code)), http.StatusOK, &rs)
		if rs.Code != rc.Code || rs.Owner != checksum(t, owner) || rs.ReferredPayers != 2 || rs.PaidCalls != 3 || !rs.CreatedAt.Equal(rc.CreatedAt) {
			t.Fatalf("referral status %+v; want 2 payers, 3 calls", rs)
		}
		if rs.ShareLinks != rc.ShareLinks {
			t.Fatalf("share links %+v, want %+v", rs.ShareLinks, rc.ShareLinks)
		}

		unknown, _ := club.ReferralCode(wallet(99))
		p := problem(t, f.get(t, club.ReferralPathPrefix+unknown), http.StatusNotFound)
		if p.Code != club.CodeNotFound || !strings.Contains(p.Detail, unknown) {
			t.Fatalf("unknown code: %+v", p)
		}
		for _, bad := range []string{"ABC", "ABCDEFGHI1", "ABCDEFGHIJK", "%3Cscript%3E"} {
			mustRule(t, f.get(t, club.ReferralPathPrefix+bad), "code", club.RuleReferralCode)
		}
	})
}

// TestReferralCreateConcurrent: parallel creations of one wallet's code on
// two instances sharing the store all succeed with the same code and the
// same creation time.
func TestReferralCreateConcurrent(t *testing.T) {
	eachStore(t, func(t *testing.T, open opener) {
		st := open(t)
		clk := newClock()
		a, b := newFixture(t, st, clk, nil), newFixture(t, st, clk, nil)
		w := wallet(77)
		want, _ := club.ReferralCode(w)
		const n = 16
		results := make(chan response, n)
		for i := range n {
			f := a
			if i%2 == 1 {
				f = b
			}
			go func() {
				// do may not call t.Fatal off the test goroutine.
				req, _ := http.NewRequest(http.MethodPost, f.srv.URL+club.ReferralCreatePath, strings.NewReader(`{"wallet":"`+w+`"}`))
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					results <- response{status: -1, body: []byte(err.Error())}
					return
				}
				defer resp.Body.Close()
				var buf strings.Builder
				_, _ = io.Copy(&buf, resp.Body)
				results <- response{status: resp.StatusCode, header: resp.Header, body: []byte(buf.String())}
			}()
		}
		var first time.Time
		created := 0
		for range n {
			r := <-results
			if r.status != http.StatusOK && r.status != http.StatusCreated {
				t.Fatalf("concurrent creation: %s", r)
			}
			if r.status == http.StatusCreated {
				created++
			}
			var rc club.ReferralCreated
			decode(t, r, r.status, &rc)
			if rc.Code != want || (!first.IsZero() && !rc.CreatedAt.Equal(first)) {
				t.Fatalf("concurrent creation: %+v", rc)
			}
			first = rc.CreatedAt
		}
		if created == 0 {
			t.Fatal("no creation answered 201")
		}
	})
}

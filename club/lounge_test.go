package club_test

import (
	"fmt"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/seed1284c1d2/svc/club"
)

// unlimited disables the check-in rate limits.
func unlimited(c *club.Config) {
	c.CheckInPerAddress = club.Limit{Events: -1}
	c.CheckInPerWallet = club.Limit{Events: -1}
}

func (f *fixture) lounge(t *testing.T) club.LoungeList {
	t.Helper()
	var l club.LoungeList
	decode(t, f.get(t, club.LoungePath), http.StatusOK, &l)
	return l
}

func (f *fixture) checkIn(t *testing.T, body string, header ...string) club.CheckInResult {
	t.Helper()
	var res club.CheckInResult
	decode(t, f.post(t, club.CheckInPath, body, header...), http.StatusOK, &res)
	return res
}

// manyTerms returns n distinct JSON string terms, comma-separated.
func manyTerms(n int) string {
	terms := make([]string, n)
	for i := range terms {
		terms[i] = fmt.Sprintf(`"topic-%d"`, i)
	}
	return strings.Join(terms, ",")
}

// TestCheckInValidation: every rule is reported with its field and rule,
// all broken rules at once, and nothing is stored.
func TestCheckInValidation(t *testing.T) {
	f := newFixture(t, openSQLite(t), newClock(), unlimited)
	w := wallet(1)
	body := func(members string) string { return `{"wallet":"` + w + `"` + members + `}` }
	for _, tc := range []struct {
		body, field, rule string
	}{
		{`{}`, "wallet", club.RuleRequired},
		{`{"agentName":"bot"}`, "wallet", club.RuleRequired},
		{`{"wallet":"0x12"}`, "wallet", club.RuleEVMAddress},
		{`{"wallet":7}`, "wallet", club.RuleString},
		{`{"wallet":"0x0000000000000000000000000000000000000000"}`, "wallet", club.RuleNonZero},
		{body(`,"agentName":"<b>bot</b>"`), "agentName", club.RuleNoHTML},
		{body(`,"agentName":"bot>"`), "agentName", club.RuleNoHTML},
		{body(`,"agentName":"\u003cscript\u003e"`), "agentName", club.RuleNoHTML},
		{body(`,"agentName":"bo\u0007t"`), "agentName", club.RuleControl},
		{body(`,"agentName":"line\nbreak"`), "agentName", club.RuleControl},
		{body(`,"agentName":"bo\u202et"`), "agentName", club.RuleBidi},
		{body(`,"agentName":"\u3164"`), "agentName", club.RulePrintable},
		{body(`,"agentName":"bo\u200bt"`), "agentName", club.RulePrintable},
		{body(`,"agentName":"bo\ud800t"`), "agentName", club.RulePrintable},
		{body(`,"agentName":"   "`), "agentName", club.RuleMin},
		{body(`,"agentName":"` + strings.Repeat("é", club.MaxAgentNameRunes+1) + `"`), "agentName", club.RuleMax},
		{body(`,"agentName":["bot"]`), "agentName", club.RuleString},
		{body(`,"role":"<b>dev</b>"`), "role", club.RuleNoHTML},
		{body(`,"role":"dev\u202e"`), "role", club.RuleBidi},
		{body(`,"role":"dev\u0000"`), "role", club.RuleControl},
		{body(`,"role":"[dev](http://x)"`), "role", club.RuleCharset},
		{body(`,"role":"*dev*"`), "role", club.RuleCharset},
		{body(`,"role":"dev.example"`), "role", club.RuleCharset},
		{body(`,"role":"dev\u200d"`), "role", club.RuleCharset},
		{body(`,"role":"\u0301dev"`), "role", club.RuleCharset},
		{body(`,"role":"___"`), "role", club.RuleMin},
		{body(`,"role":"` + strings.Repeat("d", club.MaxTermChars+1) + `"`), "role", club.RuleMax},
		{body(`,"role":3`), "role", club.RuleString},
		{body(`,"interests":"gold"`), "interests", club.RuleArray},
		{body(`,"interests":["gold","astro logy!"]`), "interests[1]", club.RuleCharset},
		{body(`,"interests":["gold",""]`), "interests[1]", club.RuleMin},
		{body(`,"interests":["gold",1]`), "interests[1]", club.RuleString},
		{body(`,"interests":[` + strings.Repeat(`"gold",`, club.MaxInterestItems) + `"risk"]`), "interests", club.RuleMax},
		{body(`,"interests":[` + manyTerms(club.MaxInterests+1) + `]`), "interests", club.RuleMax},
		{body(`,"ip":"127.0.0.1"`), "ip", club.RuleUnknownField},
		{body(`,"role":"agent","role":"trader"`), "role", club.RuleDuplicate},
		{`{"wallet":`, "", club.RuleJSON},
		{`"` + w + `"`, "", club.RuleJSON},
	} {
		t.Run(tc.field+"/"+tc.rule, func(t *testing.T) {
			mustRule(t, f.post(t, club.CheckInPath, tc.body), tc.field, tc.rule)
		})
	}
	// Every broken rule at once.
	p := mustRule(t, f.post(t, club.CheckInPath, `{"wallet":"0x1","agentName":"<x>","role":"wiz&ard","interests":["no`+"`"+`pe"],"extra":1}`), "wallet", club.RuleEVMAddress)
	for _, want := range [][2]string{{"agentName", club.RuleNoHTML}, {"role", club.RuleCharset}, {"interests[0]", club.RuleCharset}, {"extra", club.RuleUnknownField}} {
		if !hasRule(p, want[0], want[1]) {
			t.Fatalf("missing %v in %+v", want, p.Errors)
		}
	}
	if l := f.lounge(t); l.Count != 0 || len(l.Entries) != 0 {
		t.Fatalf("refused check-ins were stored: %+v", l)
	}

	// The limits' edges pass: 64 characters (multi-byte, decomposed: NFC
	// makes them 64), trimmed; role and interests free-form, in any case,
	// normalized, interests deduplicated in order.
	name := strings.Repeat("é", club.MaxAgentNameRunes)
	res := f.checkIn(t, body(`,"agentName":"  `+strings.Repeat("e\u0301", club.MaxAgentNameRunes)+`\t","role":"Market Maker","interests":["X402","gold","x402","Gold","mcp","On_Chain","on-chain","Σοφία","データ","`+strings.Repeat("z", club.MaxTermChars)+`"]`))
	e := res.Entry
	if e.AgentName != name || e.Role != "market-maker" || strings.Join(e.Interests, ",") != "x402,gold,mcp,on-chain,σοφία,データ,"+strings.Repeat("z", club.MaxTermChars) || !e.SelfDeclared {
		t.Fatalf("stored entry %+v", e)
	}
	// The words clients of the original service send are accepted as they are.
	res = f.checkIn(t, `{"wallet":"`+wallet(3)+`","role":"developer","interests":["data","explorer","onchain","utilities"]}`)
	if res.Entry.Role != "developer" || strings.Join(res.Entry.Interests, ",") != "data,explorer,onchain,utilities" {
		t.Fatalf("entry %+v", res.Entry)
	}
	// MaxInterests distinct interests, sent with duplicates, pass.
	res = f.checkIn(t, `{"wallet":"`+wallet(4)+`","interests":[`+manyTerms(club.MaxInterests)+`,`+manyTerms(club.MaxInterests)+`]}`)
	if len(res.Entry.Interests) != club.MaxInterests {
		t.Fatalf("%d interests kept, want %d", len(res.Entry.Interests), club.MaxInterests)
	}
	if !strings.Contains(res.Note, "not verified") {
		t.Fatalf("note %q does not say ownership is unverified", res.Note)
	}
	// Only the wallet is required.
	res = f.checkIn(t, `{"wallet":"`+wallet(2)+`","agentName":null,"interests":null}`)
	if res.Entry.AgentName != "" || res.Entry.Role != "" || res.Entry.Interests == nil || len(res.Entry.Interests) != 0 {
		t.Fatalf("minimal entry %+v", res.Entry)
	}
}

// TestLoungeLatestWinsCapExpiry: one entry per wallet (the latest
// check-in), newest first, at most LoungeCap, each for 24 h; wallets
// shown checksummed, marked self-declared, no address of the client.
func TestLoungeLatestWinsCapExpiry(t *testing.T) {
	eachStore(t, func(t *testing.T, open opener) {
		clk := newClock()
		f := newFixture(t, open(t), clk, unlimited)

		f.checkIn(t, `{"wallet":"`+wallet(1)+`","agentName":"first","role":"trader","interests":["gold"]}`)
		clk.Advance(time.Minute)
		f.checkIn(t, `{"wallet":"`+checksum(t, wallet(1))+`","agentName":"second","role":"builder"}`)
		l := f.lounge(t)
		if l.Count != 1 || len(l.Entries) != 1 {
			t.Fatalf("lounge after two check-ins of one wallet: %+v", l)
		}
		e := l.Entries[0]
		if e.AgentName != "second" || e.Role != "builder" || len(e.Interests) != 0 || e.Wallet != checksum(t, wallet(1)) ||
			!e.SelfDeclared || !e.CheckedInAt.Equal(clk.Now()) || !e.ExpiresAt.Equal(clk.Now().Add(club.LoungeTTL)) {
			t.Fatalf("latest entry %+v", e)
		}
		if l.Cap != club.LoungeCap || l.TTLSeconds != 86400 || !strings.Contains(l.Note, "not verified") {
			t.Fatalf("lounge list %+v", l)
		}

		// Cap: the newest LoungeCap, newest first.
		const n = club.LoungeCap + 5
		for i := range n {
			clk.Advance(time.Second)
			f.checkIn(t, `{"wallet":"`+wallet(100+i)+`","agentName":"agent `+strconv.Itoa(i)+`"}`)
		}
		r := f.get(t, club.LoungePath)
		if strings.Contains(string(r.body), "127.0.0.1") {
			t.Fatal("the lounge shows a client address")
		}
		l = f.lounge(t)
		if l.Count != club.LoungeCap || len(l.Entries) != club.LoungeCap {
			t.Fatalf("%d entries, want the cap %d", len(l.Entries), club.LoungeCap)
		}
		if l.Entries[0].AgentName != fmt.Sprint("agent ", n-1) || l.Entries[club.LoungeCap-1].AgentName != fmt.Sprint("agent ", n-club.LoungeCap) {
			t.Fatalf("listed %q..%q, want the newest first", l.Entries[0].AgentName, l.Entries[club.LoungeCap-1].AgentName)
		}
		for i := 1; i < len(l.Entries); i++ {
			if l.Entries[i].CheckedInAt.After(l.Entries[i-1].CheckedInAt) {
				t.Fatalf("entries %d and %d are out of order", i-1, i)
			}
			if !l.Entries[i].SelfDeclared || l.Entries[i].Wallet != checksum(t, l.Entries[i].Wallet) {
				t.Fatalf("entry %+v", l.Entries[i])
			}
		}

		// Expiry: 24 h after its check-in an entry is gone; the newest
		// stays until its own 24 h.
		newest := l.Entries[0]
		clk.Advance(club.LoungeTTL - time.Second)
		l = f.lounge(t)
		if l.Count != 1 || l.Entries[0].Wallet != newest.Wallet {
			t.Fatalf("after 24 h less a second: %d entries %+v, want only the newest", l.Count, l.Entries)
		}
		clk.Advance(time.Second)
		if l = f.lounge(t); l.Count != 0 {
			t.Fatalf("after 24 h: %+v, want empty", l)
		}
	})
}

// TestCheckInRateLimits: per wallet (1 per minute by default) and per
// client address (5 per minute) the check-ins past the limit get 429 with
// Retry-After; invalid check-ins do not count; the limits recover with
// time.
func TestCheckInRateLimits(t *testing.T) {
	clk := newClock()
	f := newFixture(t, openSQLite(t), clk, nil)
	w := `{"wallet":"` + wallet(1) + `","agentName":"a"}`
	f.checkIn(t, w)
	r := f.post(t, club.CheckInPath, w)
	if p := problem(t, r, http.StatusTooManyRequests); p.Code != club.CodeRateLimited || r.header.Get("Retry-After") != "60" || !strings.Contains(p.Detail, "wallet") {
		t.Fatalf("second check-in of a wallet within a minute: %s (Retry-After %q)", r, r.header.Get("Retry-After"))
	}
	clk.Advance(30 * time.Second)
	if r := f.post(t, club.CheckInPath, w); r.status != http.StatusTooManyRequests || r.header.Get("Retry-After") != "30" {
		t.Fatalf("after 30 s: %s (Retry-After %q)", r, r.header.Get("Retry-After"))
	}
	clk.Advance(30 * time.Second)
	f.checkIn(t, strings.Replace(w, `"a"`, `"b"`, 1))
	if l := f.lounge(t); l.Count != 1 || l.Entries[0].AgentName != "b" {
		t.Fatalf("lounge %+v", l)
	}

	// Per address: a check-in refused for its wallet gave its address token
	// back, and invalid check-ins spend none.
	for range 10 {
		mustRule(t, f.post(t, club.CheckInPath, `{"wallet":"nope"}`), "wallet", club.RuleEVMAddress)
	}
	clk.Advance(time.Minute) // the address bucket is full again
	for i := range club.DefaultCheckInsPerAddress {
		f.checkIn(t, `{"wallet":"`+wallet(10+i)+`"}`)
	}
	r = f.post(t, club.CheckInPath, `{"wallet":"`+wallet(20)+`"}`)
	if p := problem(t, r, http.StatusTooManyRequests); !strings.Contains(p.Detail, "address") || r.header.Get("Retry-After") != "12" {
		t.Fatalf("sixth check-in from one address: %s (Retry-After %q)", r, r.header.Get("Retry-After"))
	}
	// The refused wallet spent nothing: after 12 s it checks in at once.
	clk.Advance(12 * time.Second)
	f.checkIn(t, `{"wallet":"`+wallet(20)+`"}`)
}

// TestCheckInRateLimitPerClient: behind a trusted proxy, clients are told
// apart by X-Forwarded-For; a custom limit applies.
func TestCheckInRateLimitPerClient(t *testing.T) {
	clk := newClock()
	f := newFixture(t, openSQLite(t), clk, func(c *club.Config) {
		c.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}
		c.CheckInPerAddress = club.Limit{Events: 2, Per: time.Hour}
		c.CheckInPerWallet = club.Limit{Events: -1}
	})
	for i := range 2 {
		f.checkIn(t, `{"wallet":"`+wallet(i)+`"}`, "X-Forwarded-For", "203.0.113.7")
	}
	r := f.post(t, club.CheckInPath, `{"wallet":"`+wallet(5)+`"}`, "X-Forwarded-For", "198.51.100.1, 203.0.113.7")
	if r.status != http.StatusTooManyRequests || r.header.Get("Retry-After") != "1800" {
		t.Fatalf("third check-in of 203.0.113.7: %s (Retry-After %q)", r, r.header.Get("Retry-After"))
	}
	f.checkIn(t, `{"wallet":"`+wallet(5)+`"}`, "X-Forwarded-For", "203.0.113.8")
	f.checkIn(t, `{"wallet":"`+wallet(6)+`"}`, "X-Forwarded-For", "2001:db8::1")
	f.checkIn(t, `{"wallet":"`+wallet(7)+`"}`, "X-Forwarded-For", "2001:db8::2")
	// One IPv6 /64 is one client.
	if r := f.post(t, club.CheckInPath, `{"wallet":"`+wallet(8)+`"}`, "X-Forwarded-For", "2001:db8::3"); r.status != http.StatusTooManyRequests {
		t.Fatalf("third check-in from one /64: %s", r)
	}
}

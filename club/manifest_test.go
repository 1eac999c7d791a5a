package club_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/seed1284c1d2/svc/club"
)

// TestBeaconETag: the beacon is cacheable, with a strong ETag; a matching
// If-None-Match (strong, weak, in a list, or *) gets 304 without a body.
func TestBeaconETag(t *testing.T) {
	f := newFixture(t, openSQLite(t), newClock(), nil)
	r := f.get(t, club.BeaconPath)
	var b club.Beacon
	decode(t, r, http.StatusOK, &b)
	etag := r.header.Get("ETag")
	if !strings.HasPrefix(etag, `"`) || !strings.HasSuffix(etag, `"`) || len(etag) < 10 {
		t.Fatalf("ETag %q", etag)
	}
	if cc := r.header.Get("Cache-Control"); cc != "public, max-age=3600" {
		t.Fatalf("Cache-Control %q", cc)
	}
	if b.Schema != club.BeaconSchema || b.Version != club.BeaconVersion || b.Name != club.Name || !b.Free || len(b.Tiers) != 3 ||
		b.Links.Manifest.URL != "https://svc.example/api/club" || b.Links.CheckIn.Method != http.MethodPost ||
		b.Links.Status.URL != "https://svc.example/api/club/status?wallet={wallet}" || !b.Links.Status.Template ||
		!strings.Contains(b.Economics, "no payouts, no token, no custody") {
		t.Fatalf("beacon %+v", b)
	}
	var want club.Beacon
	raw, _ := json.Marshal(club.NewBeacon("https://svc.example"))
	_ = json.Unmarshal(raw, &want)
	if fmt.Sprint(want) != fmt.Sprint(b) {
		t.Fatalf("served beacon differs from NewBeacon:\n%+v\n%+v", b, want)
	}

	for _, inm := range []string{etag, "W/" + etag, `"other", ` + etag, "*"} {
		r := f.get(t, club.BeaconPath, "If-None-Match", inm)
		if r.status != http.StatusNotModified || len(r.body) != 0 || r.header.Get("ETag") != etag || r.header.Get("Cache-Control") == "" {
			t.Fatalf("If-None-Match %s: %s, ETag %q", inm, r, r.header.Get("ETag"))
		}
	}
	if r := f.get(t, club.BeaconPath, "If-None-Match", `"stale"`); r.status != http.StatusOK || len(r.body) == 0 {
		t.Fatalf("stale If-None-Match: %s", r)
	}
	// HEAD: headers only.
	req, _ := http.NewRequest(http.MethodHead, f.srv.URL+club.BeaconPath, nil)
	if r := do(t, req); r.status != http.StatusOK || len(r.body) != 0 || r.header.Get("ETag") != etag {
		t.Fatalf("HEAD: %s", r)
	}

	// Same base URL, same ETag on another instance; another base URL,
	// another document and ETag.
	same := newFixture(t, f.st, newClock(), nil)
	if got := same.get(t, club.BeaconPath).header.Get("ETag"); got != etag {
		t.Fatalf("ETag %s on a second instance, want %s", got, etag)
	}
	other := newFixture(t, f.st, newClock(), func(c *club.Config) { c.BaseURL = "https://elsewhere.example" })
	if got := other.get(t, club.BeaconPath).header.Get("ETag"); got == etag {
		t.Fatal("two base URLs share an ETag")
	}
}

// TestManifest: tiers with qualifiers and benefits, the vocabulary, links,
// economics; ?ref= echoed as a checked invite.
func TestManifest(t *testing.T) {
	f := newFixture(t, openSQLite(t), newClock(), nil)
	var m club.Manifest
	r := f.get(t, club.ManifestPath)
	decode(t, r, http.StatusOK, &m)
	if r.header.Get("Cache-Control") != "public, max-age=300" || m.Invite != nil || !m.OK || m.Name != club.Name {
		t.Fatalf("manifest %s", r)
	}
	wantTiers := []struct {
		name string
		q    []club.Qualifier
	}{
		{club.TierFounding, []club.Qualifier{{Metric: "paidCalls", Min: 1}}},
		{club.TierInsider, []club.Qualifier{{Metric: "paidCalls", Min: 10}, {Metric: "referredPayers", Min: 3}}},
		{club.TierPrime, []club.Qualifier{{Metric: "paidCalls", Min: 100}, {Metric: "referredPayers", Min: 20}}},
	}
	if len(m.Tiers) != len(wantTiers) {
		t.Fatalf("%d tiers", len(m.Tiers))
	}
	for i, w := range wantTiers {
		got := m.Tiers[i]
		if got.Name != w.name || got.Rank != i+1 || !slices.Equal(got.Qualifiers, w.q) || len(got.Benefits) == 0 {
			t.Fatalf("tier %d: %+v", i, got)
		}
		for _, b := range got.Benefits {
			if strings.Contains(strings.ToLower(b), "discount") {
				t.Fatalf("benefit %q promises a discount", b)
			}
		}
	}
	if !slices.Equal(m.Vocabulary.Roles, club.DefaultRoles()) || !slices.Equal(m.Vocabulary.Interests, club.DefaultInterests()) {
		t.Fatalf("vocabulary %+v", m.Vocabulary)
	}
	// Roles and interests are free-form; the manifest publishes the rules.
	terms := m.Vocabulary.Terms
	if !m.Vocabulary.FreeForm || terms.Pattern != club.TermPattern || terms.MaxChars != club.MaxTermChars || terms.MaxInterests != club.MaxInterests ||
		terms.MaxInterestItems != club.MaxInterestItems || terms.Normalization == "" || terms.Characters == "" || terms.Refused == "" {
		t.Fatalf("term rules %+v", terms)
	}
	pattern := regexp.MustCompile(terms.Pattern)
	for _, w := range append(club.DefaultRoles(), club.DefaultInterests()...) {
		if !pattern.MatchString(w) {
			t.Fatalf("suggested term %q does not match the published pattern", w)
		}
	}
	if e := m.Economics; e.Payouts || e.Token || e.Custody || e.Discounts || !strings.Contains(e.Statement, "no payouts, no token, no custody") {
		t.Fatalf("economics %+v", e)
	}
	if m.Referral.Create.URL != "https://svc.example/api/club/referral/create" || m.Referral.Header != "X-Ref" || m.Referral.QueryParam != "ref" ||
		m.Lounge.List.URL != "https://svc.example/api/club/lounge" || m.Lounge.Cap != club.LoungeCap || m.Lounge.WalletOwnershipVerified ||
		m.Lounge.TTLSeconds != 86400 || !strings.Contains(m.Lounge.RateLimits, "5 check-ins per minute per client address") {
		t.Fatalf("referral %+v lounge %+v", m.Referral, m.Lounge)
	}

	owner := wallet(5)
	var rc club.ReferralCreated
	decode(t, f.post(t, club.ReferralCreatePath, `{"wallet":"`+owner+`"}`), http.StatusCreated, &rc)
	unknown, _ := club.ReferralCode(wallet(6))
	cs := checksum(t, owner)
	for _, tc := range []struct {
		ref        string
		want       club.Invite
		ownerShown bool
	}{
		{" " + strings.ToLower(rc.Code), club.Invite{Code: rc.Code, WellFormed: true, Registered: true, Valid: true}, true},
		{unknown, club.Invite{Code: unknown, WellFormed: true}, false},
		{"<script>alert(1)</script>" + strings.Repeat("x", 100), club.Invite{Code: "<script>alert(1)</script>xxxxxxx…"}, false},
		{"", club.Invite{}, false},
	} {
		var m club.Manifest
		r := f.get(t, club.ManifestPath+"?ref="+url.QueryEscape(tc.ref))
		decode(t, r, http.StatusOK, &m)
		inv := m.Invite
		if inv == nil || r.header.Get("Cache-Control") != "no-store" {
			t.Fatalf("ref %q: no invite in %s", tc.ref, r)
		}
		if inv.Code != tc.want.Code || inv.WellFormed != tc.want.WellFormed || inv.Registered != tc.want.Registered || inv.Valid != tc.want.Valid {
			t.Fatalf("ref %q: invite %+v, want %+v", tc.ref, inv, tc.want)
		}
		if tc.ownerShown {
			if inv.OwnerWallet != cs[:6]+"…"+cs[38:] || inv.Referral != "https://svc.example/api/club/referral/"+rc.Code || inv.Reason != "" || inv.Join == "" {
				t.Fatalf("ref %q: invite %+v", tc.ref, inv)
			}
		} else if inv.OwnerWallet != "" || inv.Reason == "" {
			t.Fatalf("ref %q: invite %+v", tc.ref, inv)
		}
		if strings.Contains(string(r.body), "<script>") {
			t.Fatalf("ref %q: echoed unescaped HTML: %s", tc.ref, r.body)
		}
	}
}

// TestRefFromRequest: query ref, else the X-Ref header, normalized; ""
// when absent or malformed.
func TestRefFromRequest(t *testing.T) {
	code, _ := club.ReferralCode(wallet(1))
	other, _ := club.ReferralCode(wallet(2))
	for _, tc := range []struct {
		target, header, want string
	}{
		{"/api/x?ref=" + code, "", code},
		{"/api/x?ref=" + strings.ToLower(code) + "&src=bot", "", code},
		{"/api/x", strings.ToLower(code), code},
		{"/api/x?ref=" + code, other, code},
		{"/api/x?ref=bogus", other, other},
		{"/api/x?ref=bogus", "also bogus", ""},
		{"/api/x?ref=", "", ""},
		{"/api/x", "", ""},
		{"/api/x?ref=%20" + code + "%20", "", code},
	} {
		r := httptest.NewRequest(http.MethodGet, tc.target, nil)
		if tc.header != "" {
			r.Header.Set("X-Ref", tc.header)
		}
		if got := club.RefFromRequest(r); got != tc.want {
			t.Errorf("RefFromRequest(%s, X-Ref %q) = %q, want %q", tc.target, tc.header, got, tc.want)
		}
	}
	if club.RefFromRequest(nil) != "" {
		t.Error("RefFromRequest(nil) is not empty")
	}
}

// TestNewValidatesConfig: a missing store, a bad base URL, a bad
// vocabulary or limit are refused with a message naming the setting.
func TestNewValidatesConfig(t *testing.T) {
	st := openSQLite(t)
	for _, tc := range []struct {
		name string
		mod  func(*club.Config)
		want string
	}{
		{"no store", func(c *club.Config) { c.Store = nil }, "Store"},
		{"no base URL", func(c *club.Config) { c.BaseURL = "" }, "BaseURL"},
		{"relative base URL", func(c *club.Config) { c.BaseURL = "svc.example" }, "BaseURL"},
		{"base URL with query", func(c *club.Config) { c.BaseURL = "https://svc.example/?a=1" }, "BaseURL"},
		{"ftp base URL", func(c *club.Config) { c.BaseURL = "ftp://svc.example" }, "BaseURL"},
		{"upper-case role", func(c *club.Config) { c.Roles = []string{"Trader"} }, "Roles"},
		{"role with a space", func(c *club.Config) { c.Roles = []string{"market maker"} }, "Roles"},
		{"duplicate interest", func(c *club.Config) { c.Interests = []string{"gold", "gold"} }, "Interests"},
		{"zero-length window", func(c *club.Config) { c.CheckInPerWallet = club.Limit{Events: 1} }, "CheckInPerWallet"},
		{"paid path", func(c *club.Config) { c.PaidExamplePath = "api/x?y" }, "PaidExamplePath"},
		{"negative body limit", func(c *club.Config) { c.BodyLimit = -1 }, "BodyLimit"},
	} {
		cfg := club.Config{Store: st, BaseURL: "https://svc.example", Now: time.Now}
		tc.mod(&cfg)
		if _, err := club.New(cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want one naming %s", tc.name, err, tc.want)
		}
	}
	c, err := club.New(club.Config{Store: st, BaseURL: "https://svc.example/base/", Roles: []string{"quant"}, Interests: []string{"rates", "fx-options"}})
	if err != nil {
		t.Fatal(err)
	}
	m := c.Manifest()
	if m.Links.Manifest.URL != "https://svc.example/base/api/club" || !slices.Equal(m.Vocabulary.Roles, []string{"quant"}) || m.Lounge.MaxInterests != club.MaxInterests {
		t.Fatalf("configured manifest %+v", m)
	}
}

// TestRoutes: the seven routes of the specification's table, each a
// method and a mux path; the pattern is the path alone (the handler
// enforces the method).
func TestRoutes(t *testing.T) {
	c, err := club.New(club.Config{Store: openSQLite(t), BaseURL: "https://svc.example"})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, rt := range c.Routes() {
		if rt.Handler == nil {
			t.Fatalf("route %s has no handler", rt.Pattern())
		}
		if rt.Pattern() != rt.Path {
			t.Fatalf("pattern %q of %s %s carries more than the path", rt.Pattern(), rt.Method, rt.Path)
		}
		got = append(got, rt.Method+" "+rt.Path)
	}
	want := []string{
		"GET /api/club", "GET /.well-known/svc-club.json", "GET /api/club/status",
		"POST /api/club/referral/create", "GET /api/club/referral/{code}",
		"GET /api/club/lounge", "POST /api/club/lounge/check-in",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("routes %v, want %v", got, want)
	}
}

// TestMethods: every club route answers the methods it does not serve with
// 405, the Allow header and a method_not_allowed problem, before reading
// anything; GET /api/club/referral/create in particular is not read as the
// status of a code "create". The methods it serves are not refused.
func TestMethods(t *testing.T) {
	f := newFixture(t, openSQLite(t), newClock(), nil)
	paths := map[string]string{ // method served → concrete path
		club.ManifestPath: http.MethodGet, club.BeaconPath: http.MethodGet, club.StatusPath: http.MethodGet,
		club.ReferralCreatePath: http.MethodPost, club.ReferralPathPrefix + "ABCDEFGH23": http.MethodGet,
		club.LoungePath: http.MethodGet, club.CheckInPath: http.MethodPost,
	}
	methods := []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete, http.MethodOptions}
	for path, served := range paths {
		allow := served
		if served == http.MethodGet {
			allow = "GET, HEAD"
		}
		for _, m := range methods {
			req, err := http.NewRequest(m, f.srv.URL+path, strings.NewReader(`{"wallet":"`+wallet(1)+`"}`))
			if err != nil {
				t.Fatal(err)
			}
			r := do(t, req)
			allowed := m == served || (served == http.MethodGet && m == http.MethodHead)
			if allowed {
				if r.status == http.StatusMethodNotAllowed {
					t.Errorf("%s %s: 405, want it served", m, path)
				}
				continue
			}
			if r.status != http.StatusMethodNotAllowed || r.header.Get("Allow") != allow {
				t.Errorf("%s %s: %d Allow %q, want 405 Allow %q; %s", m, path, r.status, r.header.Get("Allow"), allow, r.body)
				continue
			}
			if m == http.MethodHead {
				continue // no body
			}
			if p := problem(t, r, http.StatusMethodNotAllowed); p.Code != club.CodeMethodNotAllowed || !strings.Contains(p.Detail, allow) {
				t.Errorf("%s %s: problem %s", m, path, r.body)
			}
		}
	}
	// The referral status route still reads any other code.
	if p := problem(t, f.get(t, club.ReferralPathPrefix+"creat"), http.StatusBadRequest); !hasRule(p, "code", club.RuleReferralCode) {
		t.Fatalf("GET a malformed code: %+v", p)
	}
}

// TestRouteDocsDescribeRoutes: RouteDocs describes exactly the routes the
// club serves, each with its own operation id.
func TestRouteDocsDescribeRoutes(t *testing.T) {
	f := newFixture(t, openSQLite(t), newClock(), nil)
	var served, described []string
	for _, rt := range f.club.Routes() {
		served = append(served, rt.Method+" "+rt.Path)
	}
	ids := map[string]bool{}
	for _, d := range club.RouteDocs() {
		described = append(described, d.Method+" "+d.Path)
		if d.OperationID == "" || ids[d.OperationID] || d.Summary == "" || d.Response == nil {
			t.Errorf("%s %s: incomplete or repeated operation %+v", d.Method, d.Path, d)
		}
		ids[d.OperationID] = true
	}
	slices.Sort(served)
	slices.Sort(described)
	if !slices.Equal(served, described) {
		t.Fatalf("served %v, described %v", served, described)
	}
}

package discovery

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/seed1284c1d2/svc"
	"github.com/seed1284c1d2/svc/discovery/documents"
	"github.com/seed1284c1d2/svc/discovery/routedoc"
	"github.com/seed1284c1d2/svc/tools"
)

// discSpecKeys are the catalog keys in catalog order, written out
// independently of the tools package.
var discSpecKeys = []string{
	"session-state", "risk-levels", "strategy-grade", "xau-quote", "xau-bars", "xau-market-state",
	"csv-profile", "json-shape", "jwt-decode", "tick-pnl", "evm-address-syntax", "ohlcv-state", "regex-test",
}

// discWantField checks that err is a KindInvalid *svc.Error naming field
// with rule.
func discWantField(t *testing.T, err error, field, rule string) {
	t.Helper()
	var se *svc.Error
	if !errors.As(err, &se) || se.Kind != svc.KindInvalid {
		t.Fatalf("want a KindInvalid *svc.Error, got %v", err)
	}
	for _, f := range se.Fields {
		if f.Field == field && f.Rule == rule {
			if !strings.Contains(f.Message, field) {
				t.Errorf("message %q does not name the field %q", f.Message, field)
			}
			return
		}
	}
	t.Fatalf("want field %q rule %q in %+v", field, rule, se.Fields)
}

func TestNewRejectsBadConfig(t *testing.T) {
	cat, err := tools.New(tools.Options{})
	if err != nil {
		t.Fatal(err)
	}
	other, err := tools.New(tools.Options{BaseURL: "https://other.example.com"})
	if err != nil {
		t.Fatal(err)
	}
	sepolia, err := tools.New(tools.Options{Network: "eip155:84532"})
	if err != nil {
		t.Fatal(err)
	}
	ok := Config{Catalog: cat, BaseURL: discTestBase, PayTo: discTestPayTo}
	if _, err := New(ok); err != nil {
		t.Fatalf("valid config refused: %v", err)
	}
	cases := map[string]func(*Config){
		"no catalog":       func(c *Config) { c.Catalog = nil },
		"no base URL":      func(c *Config) { c.BaseURL = "" },
		"relative base":    func(c *Config) { c.BaseURL = "/api" },
		"ftp base":         func(c *Config) { c.BaseURL = "ftp://x.example.com" },
		"base with query":  func(c *Config) { c.BaseURL = "https://x.example.com/?a=1" },
		"base mismatch":    func(c *Config) { c.Catalog = other },
		"unknown network":  func(c *Config) { c.Network = "eip155:1234567" },
		"network mismatch": func(c *Config) { c.Catalog = sepolia; c.Network = "eip155:8453" },
		"no payTo":         func(c *Config) { c.PayTo = "" },
		"bad payTo":        func(c *Config) { c.PayTo = "0x1234" },
		"zero payTo":       func(c *Config) { c.PayTo = "0x0000000000000000000000000000000000000000" },
		"bad checksum":     func(c *Config) { c.PayTo = "0x209693bc6afc0C5328bA36FaF03C514EF312287C" },
		"relative link":    func(c *Config) { c.ManifestLinks = map[string]string{"club": "/.well-known/svc-club.json"} },
		"route twice":      func(c *Config) { c.FreeRoutes = append(discExternalRoutes(), discExternalRoutes()[0]) },
		"route owned here": func(c *Config) { c.FreeRoutes = []routedoc.Route{{Method: "GET", Path: "/api/find", OperationID: "x"}} },
		"paid route": func(c *Config) {
			c.FreeRoutes = []routedoc.Route{{Method: "POST", Path: "/api/risk-levels", OperationID: "y"}}
		},
		"duplicate op id": func(c *Config) {
			c.FreeRoutes = []routedoc.Route{{Method: "GET", Path: "/x", OperationID: "findTools"}}
		},
		"lower-case method": func(c *Config) { c.FreeRoutes = []routedoc.Route{{Method: "get", Path: "/x", OperationID: "x"}} },
	}
	for name, mod := range cases {
		c := ok
		mod(&c)
		if _, err := New(c); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	// The network and base URL of a matching catalog are accepted, and a
	// trailing slash is trimmed.
	c := ok
	c.Catalog, c.BaseURL = other, "https://other.example.com/"
	s, err := New(c)
	if err != nil {
		t.Fatalf("matching base refused: %v", err)
	}
	if s.BaseURL() != "https://other.example.com" {
		t.Errorf("BaseURL = %q", s.BaseURL())
	}
	c = ok
	c.Catalog, c.Network = sepolia, ""
	s, err = New(c)
	if err != nil {
		t.Fatalf("sepolia refused: %v", err)
	}
	if s.asset != "0x036CbD53842c5426634e7929541eC2318f3dCF7e" {
		t.Errorf("sepolia asset = %s", s.asset)
	}
}

func TestFindValidation(t *testing.T) {
	s := discNewService(t, discTestBase, nil)
	ctx := context.Background()
	_, err := s.Find(ctx, "", 5)
	discWantField(t, err, "q", "required")
	_, err = s.Find(ctx, "   ", 5)
	discWantField(t, err, "q", "required")
	_, err = s.Find(ctx, strings.Repeat("é", MaxQueryLen+1), 5)
	discWantField(t, err, "q", "max")
	_, err = s.Find(ctx, "gold", 21)
	discWantField(t, err, "limit", "range")
	_, err = s.Find(ctx, "gold", -1)
	discWantField(t, err, "limit", "range")
	if _, err := s.Find(ctx, strings.Repeat("é", MaxQueryLen), 5); err != nil {
		t.Errorf("500 characters refused: %v", err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := s.Find(cctx, "gold", 5); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled context: %v", err)
	}
}

func TestFindMatchesCarryCatalogFields(t *testing.T) {
	s := discNewService(t, discTestBase, nil)
	ctx := context.Background()
	res, err := s.Find(ctx, "stop loss and take profit for a long trade", 0)
	if err != nil {
		t.Fatal(err)
	}
	if !res.OK || res.Query != "stop loss and take profit for a long trade" {
		t.Errorf("ok/query: %+v", res)
	}
	if len(res.Matches) == 0 || len(res.Matches) > DefaultFindLimit {
		t.Fatalf("want 1 to %d matches, got %d", DefaultFindLimit, len(res.Matches))
	}
	if res.Matches[0].Key != "risk-levels" {
		t.Errorf("top match %s, want risk-levels", res.Matches[0].Key)
	}
	for i := 1; i < len(res.Matches); i++ {
		if res.Matches[i].MatchScore > res.Matches[i-1].MatchScore {
			t.Errorf("matches not in rank order: %v", res.Matches)
		}
	}
	b, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	var raw struct {
		Matches []map[string]json.RawMessage `json:"matches"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"key", "name", "method", "path", "url", "priceUsd", "network", "description", "tags",
		"inputSchema", "exampleInput", "outputExample", "matchScore", "matchedTokens"} {
		if _, ok := raw.Matches[0][k]; !ok {
			t.Errorf("match lacks %q", k)
		}
	}
	m := res.Matches[0]
	if m.URL != discTestBase+"/api/risk-levels" || string(m.PriceUSD) != "0.005" || m.Network != "eip155:8453" {
		t.Errorf("url/price/network: %s %s %s", m.URL, m.PriceUSD, m.Network)
	}
	if m.MatchScore <= 0 || m.MatchScore >= 1 || len(m.MatchedTokens) == 0 {
		t.Errorf("score %v tokens %v", m.MatchScore, m.MatchedTokens)
	}
	res, err = s.Find(ctx, "gold", 20)
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, m := range res.Matches[:3] {
		keys = append(keys, m.Key)
	}
	slices.Sort(keys)
	if !slices.Equal(keys, []string{"xau-bars", "xau-market-state", "xau-quote"}) {
		t.Errorf("gold: top 3 = %v", keys)
	}
	res, err = s.Find(ctx, "the of and", 5)
	if err != nil || res.Matches == nil || len(res.Matches) != 0 {
		t.Errorf("stop words only: %v %+v (want an empty, non-nil list)", err, res)
	}
}

// TestRoutePlanOfALargeInput: a body longer than documents.PlanInlineBody is in the
// plan once: its curl lines read it from a file and the A2A data part
// keeps the tool's example input.
func TestRoutePlanOfALargeInput(t *testing.T) {
	s := discNewService(t, discTestBase, nil)
	csv := "a,b\n" + strings.Repeat("1,2\n", documents.PlanInlineBody/4)
	in, _ := json.Marshal(map[string]string{"csv": csv})
	plan, err := s.Route(context.Background(), "profile a csv", in)
	if err != nil {
		t.Fatal(err)
	}
	if plan.Tool != "csv-profile" || !plan.InputValid || len(plan.Body) <= documents.PlanInlineBody {
		t.Fatalf("plan: %s valid %v errors %v body %d bytes", plan.Tool, plan.InputValid, plan.InputErrors, len(plan.Body))
	}
	wantCurl := `curl -sS -i -X POST 'https://svc.example.com/api/csv-profile' -H 'Content-Type: application/json' --data-binary @body.json`
	if plan.Curl != wantCurl || plan.CurlPaid != wantCurl+` -H 'PAYMENT-SIGNATURE: <base64 PaymentPayload>'` {
		t.Errorf("curl lines:\n%s\n%s", plan.Curl, plan.CurlPaid)
	}
	if !strings.Contains(plan.Message, "body.json") {
		t.Errorf("message: %s", plan.Message)
	}
	part := plan.Transports.A2A.DataPart
	if len(part) > documents.PlanInlineBody || !strings.Contains(string(part), `"tool":"csv-profile"`) {
		t.Errorf("a2a data part of %d bytes: %.200s", len(part), part)
	}
	out, _ := json.Marshal(plan)
	if len(out) > len(plan.Body)+documents.PlanInlineBody*2 {
		t.Errorf("a plan of %d bytes for a body of %d", len(out), len(plan.Body))
	}
}

func TestRoutePlanPOST(t *testing.T) {
	s := discNewService(t, discTestBase, nil)
	in := json.RawMessage(`{"entry": 3500, "direction": "long", "slPct": "0.05", "tpPct": 0.04}`)
	plan, err := s.Route(context.Background(), "stop loss and take profit levels", in)
	if err != nil {
		t.Fatal(err)
	}
	if !plan.OK || !plan.Matched || plan.Tool != "risk-levels" || plan.OperationID != "risk_levels" {
		t.Fatalf("plan: %+v", plan)
	}
	if plan.Method != "POST" || plan.URL != discTestBase+"/api/risk-levels" || plan.Path != "/api/risk-levels" {
		t.Errorf("method/url: %s %s", plan.Method, plan.URL)
	}
	if string(plan.Body) != `{"entry":3500,"direction":"long","slPct":0.05,"tpPct":0.04}` {
		t.Errorf("body %s, want the canonical input", plan.Body)
	}
	if plan.Headers["Content-Type"] != "application/json" {
		t.Errorf("headers %v", plan.Headers)
	}
	if !plan.InputValid || len(plan.InputErrors) != 0 || plan.InputSource != "caller" {
		t.Errorf("input: valid %v errors %v source %s", plan.InputValid, plan.InputErrors, plan.InputSource)
	}
	p := plan.Price
	if p == nil || string(p.USD) != "0.005" || p.Fixed6 != "0.005000" || p.Atomic != "5000" || p.Currency != "USDC" {
		t.Errorf("price %+v", p)
	}
	if plan.Network != "eip155:8453" || plan.Asset != "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913" || plan.PayTo != discTestPayTo ||
		plan.Scheme != "exact" || plan.X402Version != 2 {
		t.Errorf("terms %s %s %s %s %d", plan.Network, plan.Asset, plan.PayTo, plan.Scheme, plan.X402Version)
	}
	if len(plan.Steps) != 5 {
		t.Fatalf("steps: %d", len(plan.Steps))
	}
	wantHeaders := []string{"", "PAYMENT-REQUIRED", "", "PAYMENT-SIGNATURE", "PAYMENT-RESPONSE"}
	for i, st := range plan.Steps {
		if st.Step != i+1 || st.Header != wantHeaders[i] || st.Description == "" {
			t.Errorf("step %d: %+v", i+1, st)
		}
	}
	if !strings.Contains(plan.Steps[2].Description, "EIP-3009") || !strings.Contains(plan.Steps[2].Description, `"USD Coin"`) {
		t.Errorf("sign step: %s", plan.Steps[2].Description)
	}
	wantCurl := `curl -sS -i -X POST 'https://svc.example.com/api/risk-levels' -H 'Content-Type: application/json' --data-binary '{"entry":3500,"direction":"long","slPct":0.05,"tpPct":0.04}'`
	if plan.Curl != wantCurl {
		t.Errorf("curl:\n got %s\nwant %s", plan.Curl, wantCurl)
	}
	if plan.CurlPaid != wantCurl+` -H 'PAYMENT-SIGNATURE: <base64 PaymentPayload>'` {
		t.Errorf("curlPaid: %s", plan.CurlPaid)
	}
	if len(plan.Alternatives) == 0 || len(plan.Alternatives) > MaxAlternatives {
		t.Errorf("alternatives: %v", plan.Alternatives)
	}
	for _, a := range plan.Alternatives {
		if a.Key == plan.Tool || !strings.HasPrefix(a.URL, discTestBase+"/api/") || a.MatchScore > plan.MatchScore {
			t.Errorf("alternative %+v", a)
		}
	}
	if len(plan.InputSchema) == 0 || len(plan.NextRoutes) == 0 {
		t.Error("input schema or next routes missing")
	}
}

func TestRoutePlanGETHasQueryString(t *testing.T) {
	s := discNewService(t, discTestBase, nil)
	plan, err := s.Route(context.Background(), "gold candles", json.RawMessage(`{"timeframe":"M15","count":50}`))
	if err != nil {
		t.Fatal(err)
	}
	if plan.Tool != "xau-bars" || plan.Method != "GET" {
		t.Fatalf("plan %s %s", plan.Tool, plan.Method)
	}
	if plan.URL != discTestBase+"/api/xau/bars?count=50&timeframe=M15" {
		t.Errorf("url %s", plan.URL)
	}
	if plan.Body != nil || plan.Headers != nil {
		t.Errorf("a GET plan has body %s headers %v", plan.Body, plan.Headers)
	}
	if !plan.InputValid || plan.Price.Fixed6 != "0.020000" || plan.Price.Atomic != "20000" {
		t.Errorf("valid %v price %+v", plan.InputValid, plan.Price)
	}
	if !strings.Contains(plan.Steps[0].Description, "503") {
		t.Errorf("a terminal tool's first step mentions the 503 preflight: %s", plan.Steps[0].Description)
	}
	if plan.Curl != `curl -sS -i 'https://svc.example.com/api/xau/bars?count=50&timeframe=M15'` {
		t.Errorf("curl %s", plan.Curl)
	}
	// An invalid GET input still yields the URL of what was given.
	plan, err = s.Route(context.Background(), "xau-bars", json.RawMessage(`{"count":5}`))
	if err != nil {
		t.Fatal(err)
	}
	if plan.InputValid || plan.URL != discTestBase+"/api/xau/bars?count=5" {
		t.Errorf("invalid GET: valid %v url %s", plan.InputValid, plan.URL)
	}
	discWantPlanError(t, plan, "count")
}

// discWantPlanError checks that a plan reports a broken rule on field.
func discWantPlanError(t *testing.T, plan RoutePlan, field string) {
	t.Helper()
	for _, e := range plan.InputErrors {
		if e.Field == field && e.Rule != "" && e.Message != "" {
			return
		}
	}
	t.Errorf("no input error on %q in %+v", field, plan.InputErrors)
}

func TestRoutePlanInvalidInput(t *testing.T) {
	s := discNewService(t, discTestBase, nil)
	ctx := context.Background()
	plan, err := s.Route(ctx, "risk levels", json.RawMessage(`{"entry": -1, "direction": "up"}`))
	if err != nil {
		t.Fatal(err)
	}
	if plan.InputValid || !plan.Matched || plan.Tool != "risk-levels" {
		t.Fatalf("plan: valid %v tool %s", plan.InputValid, plan.Tool)
	}
	for _, f := range []string{"entry", "direction", "slPct", "tpPct"} {
		discWantPlanError(t, plan, f)
	}
	if !strings.Contains(plan.Message, "before any 402") {
		t.Errorf("message %q", plan.Message)
	}
	if string(plan.Body) != `{"entry":-1,"direction":"up"}` {
		t.Errorf("body of an invalid input: %s", plan.Body)
	}
	plan, err = s.Route(ctx, "risk levels", json.RawMessage(`{"entyr": 3500, "direction": "long", "slPct": 1, "tpPct": 1}`))
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, e := range plan.InputErrors {
		found = found || (e.Field == "entyr" && e.Rule == tools.RuleUnknownField)
	}
	if plan.InputValid || !found {
		t.Errorf("unknown member: %+v", plan.InputErrors)
	}
	plan, err = s.Route(ctx, "regex-test", json.RawMessage(`{"pattern":"(a","text":"a","flags":"gg"}`))
	if err != nil {
		t.Fatal(err)
	}
	if plan.InputValid || len(plan.InputErrors) == 0 {
		t.Errorf("broken regex: %+v", plan)
	}
}

func TestRoutePlanFromExample(t *testing.T) {
	s := discNewService(t, discTestBase, nil)
	for _, in := range []json.RawMessage{nil, json.RawMessage(`null`), json.RawMessage(`  `)} {
		plan, err := s.Route(context.Background(), "profile a csv file", in)
		if err != nil {
			t.Fatal(err)
		}
		ct, _ := s.cfg.Catalog.ByKey("csv-profile")
		if plan.Tool != "csv-profile" || plan.InputSource != "example" || !plan.InputValid {
			t.Fatalf("plan %s source %s valid %v", plan.Tool, plan.InputSource, plan.InputValid)
		}
		if string(plan.Body) != string(ct.ExampleInput) {
			t.Errorf("body %s, want the example %s", plan.Body, ct.ExampleInput)
		}
	}
	plan, err := s.Route(context.Background(), "what time is the london session", nil)
	if err != nil {
		t.Fatal(err)
	}
	if plan.Tool != "session-state" || !strings.HasPrefix(plan.URL, discTestBase+"/api/session-state?dateTime=") {
		t.Errorf("session plan %s %s", plan.Tool, plan.URL)
	}
}

func TestRouteExactNameAndNoMatch(t *testing.T) {
	s := discNewService(t, discTestBase, nil)
	ctx := context.Background()
	for _, q := range []string{"xau-quote", "xau_quote", "/api/xau/quote", "GET /api/xau/quote", discTestBase + "/api/xau/quote", "XAU-QUOTE"} {
		plan, err := s.Route(ctx, q, nil)
		if err != nil {
			t.Fatal(err)
		}
		if plan.Tool != "xau-quote" || plan.MatchScore != 1 {
			t.Errorf("%q: tool %s score %v", q, plan.Tool, plan.MatchScore)
		}
		for _, a := range plan.Alternatives {
			if a.Key == "xau-quote" {
				t.Errorf("%q: the chosen tool is among the alternatives", q)
			}
		}
	}
	plan, err := s.Route(ctx, "qqqq zzzz xxxx", nil)
	if err != nil {
		t.Fatal(err)
	}
	if !plan.OK || plan.Matched || plan.Tool != "" || plan.URL != "" || plan.Price != nil || plan.InputValid {
		t.Errorf("no match: %+v", plan)
	}
	if plan.Alternatives == nil || plan.InputErrors == nil || len(plan.NextRoutes) == 0 {
		t.Errorf("no match lists: %+v", plan)
	}
}

func TestRouteRequestErrors(t *testing.T) {
	s := discNewService(t, discTestBase, nil)
	ctx := context.Background()
	_, err := s.Route(ctx, "", nil)
	discWantField(t, err, "query", "required")
	_, err = s.Route(ctx, strings.Repeat("a", 501), nil)
	discWantField(t, err, "query", "max")
	for _, in := range []string{`[1]`, `"x"`, `3`, `true`} {
		_, err = s.Route(ctx, "risk levels", json.RawMessage(in))
		discWantField(t, err, "input", "object")
	}
}

func TestCatalogPages(t *testing.T) {
	s := discNewService(t, discTestBase, nil)
	ctx := context.Background()
	page, err := s.Catalog(ctx, "", "", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if !page.OK || page.Total != 13 || page.Offset != 0 || page.Limit != 50 || len(page.Items) != 13 {
		t.Fatalf("default page: ok %v total %d offset %d limit %d items %d", page.OK, page.Total, page.Offset, page.Limit, len(page.Items))
	}
	var keys []string
	for _, it := range page.Items {
		keys = append(keys, it.Key)
		if it.URL != discTestBase+it.Path {
			t.Errorf("%s: url %s", it.Key, it.URL)
		}
	}
	if !slices.Equal(keys, discSpecKeys) {
		t.Errorf("keys %v, want %v", keys, discSpecKeys)
	}
	page, err = s.Catalog(ctx, "", "", 10, 2)
	if err != nil {
		t.Fatal(err)
	}
	if page.Total != 13 || len(page.Items) != 2 || page.Items[0].Key != discSpecKeys[10] || page.Items[1].Key != discSpecKeys[11] {
		t.Errorf("offset 10 limit 2: total %d items %v", page.Total, page.Items)
	}
	page, err = s.Catalog(ctx, "", "", 13, 100)
	if err != nil || page.Total != 13 || page.Items == nil || len(page.Items) != 0 {
		t.Errorf("past the end: %v %+v", err, page)
	}
	_, err = s.Catalog(ctx, "", "", -1, 10)
	discWantField(t, err, "offset", "min")
	_, err = s.Catalog(ctx, "", "", 0, 101)
	discWantField(t, err, "limit", "range")
	_, err = s.Catalog(ctx, strings.Repeat("q", 501), "", 0, 10)
	discWantField(t, err, "q", "max")
	_, err = s.Catalog(ctx, "", strings.Repeat("c", 65), 0, 10)
	discWantField(t, err, "category", "max")
}

func TestCatalogFilters(t *testing.T) {
	s := discNewService(t, discTestBase, nil)
	ctx := context.Background()
	keysOf := func(p CatalogPage) []string {
		var k []string
		for _, it := range p.Items {
			k = append(k, it.Key)
		}
		return k
	}
	for _, cat := range []string{"gold", "GOLD", " gold "} {
		page, err := s.Catalog(ctx, "", cat, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		if page.Total != 3 || !slices.Equal(keysOf(page), []string{"xau-quote", "xau-bars", "xau-market-state"}) {
			t.Errorf("category %q: total %d keys %v", cat, page.Total, keysOf(page))
		}
	}
	page, err := s.Catalog(ctx, "", "gold", 1, 1)
	if err != nil || page.Total != 3 || !slices.Equal(keysOf(page), []string{"xau-bars"}) {
		t.Errorf("gold page 2: %v total %d %v", err, page.Total, keysOf(page))
	}
	page, err = s.Catalog(ctx, "", "no-such-tag", 0, 0)
	if err != nil || page.Total != 0 || len(page.Items) != 0 {
		t.Errorf("unknown category: %v %+v", err, page)
	}
	// q ranks with the finder: the order is the finder's and total counts
	// the tools sharing something with q.
	page, err = s.Catalog(ctx, "decode a jwt token", "", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	ranked := s.finder.Find("decode a jwt token", 0)
	if page.Total != len(ranked) || page.Total == 0 || page.Total == 13 || page.Items[0].Key != "jwt-decode" {
		t.Errorf("q: total %d (finder %d) first %v", page.Total, len(ranked), keysOf(page))
	}
	for i, m := range ranked {
		if page.Items[i].Key != m.Key {
			t.Errorf("q: item %d is %s, finder says %s", i, page.Items[i].Key, m.Key)
		}
	}
	page, err = s.Catalog(ctx, "price", "gold", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range page.Items {
		if !slices.Contains(it.Tags, "gold") {
			t.Errorf("q+category kept %s", it.Key)
		}
	}
	if page.Total != len(page.Items) {
		t.Errorf("q+category: total %d items %d", page.Total, len(page.Items))
	}
}

func TestToolInfo(t *testing.T) {
	s := discNewService(t, discTestBase, nil)
	ctx := context.Background()
	for _, name := range []string{"risk-levels", "risk_levels", "/api/risk-levels", "POST /api/risk-levels", discTestBase + "/api/risk-levels", " Risk-Levels "} {
		it, err := s.ToolInfo(ctx, name)
		if err != nil {
			t.Errorf("%q: %v", name, err)
			continue
		}
		if it.Key != "risk-levels" || it.URL != discTestBase+"/api/risk-levels" || it.Price != "0.005000" {
			t.Errorf("%q: %s %s %s", name, it.Key, it.URL, it.Price)
		}
		// How to buy it on every transport, as the catalog says.
		if it.Transports.MCP.Tool != it.OperationID || len(it.Transports.A2A.DataPart) == 0 || it.Transports.HTTP.URL != it.URL {
			t.Errorf("%q: transports %+v", name, it.Transports)
		}
	}
	_, err := s.ToolInfo(ctx, "no-such-tool")
	discWantField(t, err, "pathOrKey", "unknown")
	_, err = s.ToolInfo(ctx, "")
	discWantField(t, err, "pathOrKey", "unknown")
	// The item is a copy.
	it, _ := s.ToolInfo(ctx, "risk-levels")
	it.Tags[0] = "changed"
	again, _ := s.ToolInfo(ctx, "risk-levels")
	if again.Tags[0] == "changed" {
		t.Error("ToolInfo shares its tags")
	}
}

func TestTryTour(t *testing.T) {
	s := discNewService(t, discTestBase, nil)
	res, err := s.Try(context.Background(), " ")
	if err != nil {
		t.Fatal(err)
	}
	if !res.OK || res.Mode != "tour" || res.Match != nil || res.Service.Tools != 13 || !res.Service.DevMode {
		t.Fatalf("tour: %+v", res)
	}
	var keys []string
	var groups []string
	for _, g := range res.Groups {
		groups = append(groups, g.Group)
		for _, tr := range g.Tools {
			keys = append(keys, tr.Key)
			if !strings.HasPrefix(tr.URL, discTestBase+"/api/") || tr.PriceUSD == "" {
				t.Errorf("tour tool %+v", tr)
			}
		}
	}
	slices.Sort(keys)
	want := slices.Clone(discSpecKeys)
	slices.Sort(want)
	if !slices.Equal(keys, want) {
		t.Errorf("tour covers %v", keys)
	}
	if !slices.Equal(groups, []string{"trading", "gold", "data", "utility", "crypto"}) {
		t.Errorf("groups %v", groups)
	}
	var urls []string
	for _, l := range res.FreeRoutes {
		urls = append(urls, l.Method+" "+l.URL)
	}
	for _, want := range []string{"GET " + discTestBase + "/api/find", "POST " + discTestBase + "/api/route", "POST " + discTestBase + "/mcp",
		"POST " + discTestBase + "/a2a", "GET " + discTestBase + "/.well-known/x402", "GET " + discTestBase + "/health"} {
		if !slices.Contains(urls, want) {
			t.Errorf("free routes lack %s", want)
		}
	}
}

func TestTryMatch(t *testing.T) {
	s := discNewService(t, discTestBase, nil)
	res, err := s.Try(context.Background(), "profile my csv data")
	if err != nil {
		t.Fatal(err)
	}
	if res.Mode != "match" || res.Match == nil || res.Match.Key != "csv-profile" {
		t.Fatalf("try: %+v", res)
	}
	ct, _ := s.cfg.Catalog.ByKey("csv-profile")
	m := res.Match
	if string(m.ExampleInput) != string(ct.ExampleInput) || string(m.OutputExample) != string(ct.OutputExample) {
		t.Errorf("examples differ from the catalog's")
	}
	if m.Price != "0.002500" || string(m.PriceUSD) != "0.0025" || m.Summary == "" || strings.Contains(m.Summary, "\n") {
		t.Errorf("price %s %s summary %q", m.Price, m.PriceUSD, m.Summary)
	}
	if len(res.NextRoutes) != 3 || res.NextRoutes[0].URL != discTestBase+"/api/route" ||
		res.NextRoutes[1].URL != discTestBase+"/api/csv-profile" || res.NextRoutes[2].URL != discTestBase+"/openapi.json" {
		t.Errorf("next routes %+v", res.NextRoutes)
	}
	res, err = s.Try(context.Background(), "gold quote")
	if err != nil {
		t.Fatal(err)
	}
	if res.Match.Key != "xau-quote" || res.NextRoutes[1].URL != discTestBase+"/api/xau/quote?symbol=XAUUSD" || res.NextRoutes[1].Method != "GET" {
		t.Errorf("gold: %s %+v", res.Match.Key, res.NextRoutes[1])
	}
	res, err = s.Try(context.Background(), "qqqq zzzz")
	if err != nil || res.Mode != "no_match" || res.Match != nil || len(res.NextRoutes) == 0 {
		t.Errorf("no match: %v %+v", err, res)
	}
	_, err = s.Try(context.Background(), strings.Repeat("x", 501))
	discWantField(t, err, "q", "max")
}

func TestEmptyFacilitatorMeansDevMode(t *testing.T) {
	s := discNewService(t, discTestBase, func(c *Config) { c.DevMode = false; c.Facilitator = "" })
	if !s.Config().DevMode || s.facil != documents.LocalFacilitator {
		t.Errorf("dev mode %v facilitator %q", s.Config().DevMode, s.facil)
	}
	s = discNewService(t, discTestBase, func(c *Config) { c.DevMode = false; c.Facilitator = " https://f.example.com " })
	if s.Config().DevMode || s.facil != "https://f.example.com" {
		t.Errorf("dev mode %v facilitator %q", s.Config().DevMode, s.facil)
	}
}

// TestRouteMinMatchScore: /api/route and /api/try pick a tool for one-word
// needs naming a tool's subject, and none for off-topic requests, whose
// near misses are offered as alternatives instead (the rates over the
// evaluation sets are TestRouteEval's).
func TestRouteMinMatchScore(t *testing.T) {
	s := discNewService(t, discTestBase, nil)
	ctx := context.Background()

	// One-word needs that name a tool's subject are routed, weak scores
	// and all.
	for q, want := range map[string]string{"risk": "risk-levels", "atr": "ohlcv-state", "mt5": "xau-quote", "market open": "session-state"} {
		plan, err := s.Route(ctx, q, nil)
		if err != nil {
			t.Fatal(err)
		}
		if plan.Tool != want {
			t.Errorf("route %q: tool %q, want %s", q, plan.Tool, want)
		}
	}

	// Needs from other domains that share a word with a tool plan no
	// paid call.
	for _, q := range []string{"order a pizza", "set an alarm for 7am", "book a flight to London", "transfer 100 USDC to my friend", "translate this paragraph into french"} {
		plan, err := s.Route(ctx, q, nil)
		if err != nil {
			t.Fatal(err)
		}
		if plan.Matched || plan.Tool != "" || plan.Price != nil || plan.URL != "" {
			t.Errorf("route %q: matched %v tool %q, want no plan", q, plan.Matched, plan.Tool)
		}
	}
	for _, q := range []string{"bake a sourdough", "weather in paris", "send an email", "summarize this article", "data", "price", "order a pizza"} {
		if m := s.finder.Find(q, 1); len(m) == 0 || (m[0].Score >= MinMatchScore && (!m[0].Corrected || m[0].Score >= MinCorrectedScore)) {
			t.Fatalf("%q: the finder gives %+v; the test wants a weak or corrected-only match", q, m)
		}
		plan, err := s.Route(ctx, q, nil)
		if err != nil {
			t.Fatal(err)
		}
		if plan.Matched || plan.Tool != "" || len(plan.Alternatives) == 0 {
			t.Errorf("route %q: matched %v tool %q alternatives %v", q, plan.Matched, plan.Tool, plan.Alternatives)
		}
		res, err := s.Try(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		if res.Mode != "no_match" || res.Match != nil || len(res.Alternatives) == 0 {
			t.Errorf("try %q: mode %s match %v alternatives %v", q, res.Mode, res.Match, res.Alternatives)
		}
	}
}

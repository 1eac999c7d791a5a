package discovery

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/seed1284c1d2/svc"
	"github.com/seed1284c1d2/svc/discovery/documents"
	"github.com/seed1284c1d2/svc/wire"
)

// discDo sends a request and returns the answer with its body read.
func discDo(t *testing.T, method, u, body string, hdr map[string]string) (*http.Response, []byte) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, u, rd)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, b
}

// discProblemOf checks a 400 problem+json answer and returns its errors.
func discProblemOf(t *testing.T, resp *http.Response, body []byte, status int) discProblem {
	t.Helper()
	if resp.StatusCode != status {
		t.Fatalf("status %d, want %d: %s", resp.StatusCode, status, body)
	}
	if ct := resp.Header.Get("Content-Type"); ct != wire.ProblemContentType {
		t.Errorf("content type %q", ct)
	}
	var p discProblem
	if err := json.Unmarshal(body, &p); err != nil {
		t.Fatalf("problem: %v: %s", err, body)
	}
	if p.Status != status || p.Type != wire.ProblemTypePrefix+p.Code || p.Title == "" || p.Instance == "" {
		t.Errorf("problem fields: %+v", p)
	}
	return p
}

// discWantProblemField checks that a problem names field with rule.
func discWantProblemField(t *testing.T, p discProblem, field, rule string) {
	t.Helper()
	for _, e := range p.Errors {
		if e.Field == field && e.Rule == rule && e.Message != "" {
			return
		}
	}
	t.Errorf("problem lacks {field %q, rule %q}: %+v", field, rule, p.Errors)
}

func TestHTTPFind(t *testing.T) {
	_, base := discServe(t, nil, nil)
	resp, body := discDo(t, "GET", base+"/api/find?q="+url.QueryEscape("is the london session open")+"&limit=3&src=test", "", nil)
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/json" || resp.Header.Get("Cache-Control") != QueryCacheControl {
		t.Fatalf("find: %d %v %s", resp.StatusCode, resp.Header, body)
	}
	var res FindResult
	if err := json.Unmarshal(body, &res); err != nil {
		t.Fatal(err)
	}
	if !res.OK || len(res.Matches) == 0 || len(res.Matches) > 3 || res.Matches[0].Key != "session-state" {
		t.Errorf("find: %+v", res)
	}
	if res.Matches[0].URL != base+"/api/session-state" {
		t.Errorf("url %s is not built from the base URL", res.Matches[0].URL)
	}
	cases := []struct{ query, field, rule string }{
		{"", "q", "required"},
		{"q=", "q", "required"},
		{"q=gold&limit=abc", "limit", "integer"},
		{"q=gold&limit=0", "limit", "range"},
		{"q=gold&limit=21", "limit", "range"},
		{"q=" + strings.Repeat("x", 501), "q", "max"},
	}
	for _, c := range cases {
		resp, body := discDo(t, "GET", base+"/api/find?"+c.query, "", map[string]string{"X-Request-Id": "req-42"})
		p := discProblemOf(t, resp, body, 400)
		discWantProblemField(t, p, c.field, c.rule)
		if p.Code != "invalid_input" || p.RequestID != "req-42" || resp.Header.Get("Cache-Control") != "no-store" {
			t.Errorf("%s: code %s request id %q", c.query, p.Code, p.RequestID)
		}
	}
	// Every broken rule is reported at once.
	resp, body = discDo(t, "GET", base+"/api/find?limit=abc", "", nil)
	p := discProblemOf(t, resp, body, 400)
	discWantProblemField(t, p, "q", "required")
	discWantProblemField(t, p, "limit", "integer")
}

func TestHTTPRoute(t *testing.T) {
	_, base := discServe(t, nil, nil)
	resp, body := discDo(t, "POST", base+"/api/route", `{"query":"decode this jwt","input":{"token":"abc"}}`, map[string]string{"Content-Type": "application/json"})
	if resp.StatusCode != 200 {
		t.Fatalf("route: %d %s", resp.StatusCode, body)
	}
	var plan RoutePlan
	if err := json.Unmarshal(body, &plan); err != nil {
		t.Fatal(err)
	}
	if plan.Tool != "jwt-decode" || plan.InputValid || len(plan.InputErrors) == 0 || plan.URL != base+"/api/jwt-decode" {
		t.Errorf("plan: %s valid %v errors %v url %s", plan.Tool, plan.InputValid, plan.InputErrors, plan.URL)
	}
	if resp.Header.Get("Cache-Control") != "no-store" {
		t.Errorf("cache control %q", resp.Header.Get("Cache-Control"))
	}
	// curl -d sends a form content type: the body is read as JSON anyway.
	resp, body = discDo(t, "POST", base+"/api/route", `{"query":"tick pnl"}`, map[string]string{"Content-Type": "application/x-www-form-urlencoded"})
	if resp.StatusCode != 200 || !bytes.Contains(body, []byte(`"tool":"tick-pnl"`)) {
		t.Errorf("form content type: %d %s", resp.StatusCode, body)
	}
	cases := []struct{ name, body, field, rule string }{
		{"empty", "", "query", "required"},
		{"unknown member", `{"query":"gold","inptu":{}}`, "inptu", "unknown_field"},
		{"array body", `[{"query":"gold"}]`, "", "object"},
		{"string body", `"gold"`, "", "object"},
		{"malformed", `{"query":"gold",}`, "", "json"},
		{"cut short", `{"query":"gold"`, "", "json"},
		{"trailing data", `{"query":"gold"} {"query":"x"}`, "", "json"},
		{"query not a string", `{"query":5}`, "query", "string"},
		{"blank query", `{"query":"  "}`, "query", "required"},
		{"no query", `{"input":{"entry":1}}`, "query", "required"},
		{"input not an object", `{"query":"risk levels","input":[1,2]}`, "input", "object"},
	}
	for _, c := range cases {
		resp, body := discDo(t, "POST", base+"/api/route", c.body, nil)
		if resp.StatusCode != 400 {
			t.Errorf("%s: status %d %s", c.name, resp.StatusCode, body)
			continue
		}
		discWantProblemField(t, discProblemOf(t, resp, body, 400), c.field, c.rule)
	}
	resp, _ = discDo(t, "GET", base+"/api/route", "", nil)
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("GET /api/route: %d", resp.StatusCode)
	}
}

func TestHTTPRouteBodyLimit(t *testing.T) {
	_, base := discServe(t, nil, nil)
	big := `{"query":"csv","input":{"csv":"` + strings.Repeat("a", 2<<20) + `"}}`
	resp, body := discDo(t, "POST", base+"/api/route", big, nil)
	p := discProblemOf(t, resp, body, http.StatusRequestEntityTooLarge)
	if p.Code != string(svc.KindTooLarge) {
		t.Errorf("code %s", p.Code)
	}
}

func TestHTTPCatalog(t *testing.T) {
	_, base := discServe(t, nil, nil)
	resp, body := discDo(t, "GET", base+"/api/catalog", "", nil)
	if resp.StatusCode != 200 {
		t.Fatalf("catalog: %d %s", resp.StatusCode, body)
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(body, &raw); err != nil {
		t.Fatal(err)
	}
	var top []string
	for k := range raw {
		top = append(top, k)
	}
	slices.Sort(top)
	if !slices.Equal(top, []string{"items", "limit", "offset", "ok", "total"}) {
		t.Errorf("catalog members %v", top)
	}
	if string(raw["ok"]) != "true" || string(raw["total"]) != "13" || string(raw["offset"]) != "0" || string(raw["limit"]) != "50" {
		t.Errorf("catalog: ok %s total %s offset %s limit %s", raw["ok"], raw["total"], raw["offset"], raw["limit"])
	}
	var items []map[string]json.RawMessage
	if err := json.Unmarshal(raw["items"], &items); err != nil {
		t.Fatal(err)
	}
	if len(items) != 13 {
		t.Fatalf("%d items", len(items))
	}
	for i, it := range items {
		for _, k := range []string{"key", "name", "method", "path", "url", "priceUsd", "network", "description", "tags", "inputSchema", "exampleInput", "outputExample"} {
			if _, ok := it[k]; !ok {
				t.Errorf("item %d lacks %s", i, k)
			}
		}
		var key string
		_ = json.Unmarshal(it["key"], &key)
		if key != discSpecKeys[i] {
			t.Errorf("item %d key %s, want %s", i, key, discSpecKeys[i])
		}
		if _, err := json.Number(strings.TrimSpace(string(it["priceUsd"]))).Float64(); err != nil || strings.HasPrefix(string(it["priceUsd"]), `"`) {
			t.Errorf("priceUsd %s is not a JSON number", it["priceUsd"])
		}
	}
	resp, body = discDo(t, "GET", base+"/api/catalog?offset=2&limit=2&category=gold", "", nil)
	var page CatalogPage
	if err := json.Unmarshal(body, &page); err != nil || resp.StatusCode != 200 {
		t.Fatal(resp.StatusCode, err)
	}
	if page.Total != 3 || page.Offset != 2 || page.Limit != 2 || len(page.Items) != 1 || page.Items[0].Key != "xau-market-state" {
		t.Errorf("gold page: %+v", page)
	}
	for _, c := range []struct{ query, field, rule string }{
		{"offset=abc", "offset", "integer"},
		{"offset=-1", "offset", "min"},
		{"limit=0", "limit", "range"},
		{"limit=101", "limit", "range"},
		{"limit=1.5", "limit", "integer"},
	} {
		resp, body := discDo(t, "GET", base+"/api/catalog?"+c.query, "", nil)
		discWantProblemField(t, discProblemOf(t, resp, body, 400), c.field, c.rule)
	}
}

func TestHTTPTry(t *testing.T) {
	_, base := discServe(t, nil, nil)
	resp, body := discDo(t, "GET", base+"/api/try", "", nil)
	var res TryResult
	if err := json.Unmarshal(body, &res); err != nil || resp.StatusCode != 200 || res.Mode != "tour" {
		t.Fatalf("tour: %d %v %s", resp.StatusCode, err, body)
	}
	resp, body = discDo(t, "GET", base+"/api/try?q=regex", "", nil)
	if err := json.Unmarshal(body, &res); err != nil || resp.StatusCode != 200 || res.Mode != "match" || res.Match.Key != "regex-test" {
		t.Fatalf("match: %d %v %s", resp.StatusCode, err, body)
	}
	resp, body = discDo(t, "GET", base+"/api/try?q="+strings.Repeat("y", 501), "", nil)
	discWantProblemField(t, discProblemOf(t, resp, body, 400), "q", "max")
}

func TestHTTPDocumentsCacheAndETag(t *testing.T) {
	s, base := discServe(t, nil, nil)
	types := map[string]string{
		documents.PathOpenAPI: "application/json", documents.PathSkill: "text/markdown; charset=utf-8", documents.PathX402Manifest: "application/json",
		documents.PathRouterFeed: "application/json", documents.PathDistribution: "application/json", documents.PathMagnet: "application/json",
		documents.PathMagnetAPI: "application/json", wire.PathAgentCard: "application/json", wire.PathAgentCardLegacy: "application/json",
	}
	for path, ctype := range types {
		resp, body := discDo(t, "GET", base+path, "", nil)
		if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != ctype {
			t.Errorf("%s: %d %q", path, resp.StatusCode, resp.Header.Get("Content-Type"))
			continue
		}
		want, _ := s.Document(path)
		if !bytes.Equal(body, want) {
			t.Errorf("%s: served bytes differ from Document", path)
		}
		etag := resp.Header.Get("ETag")
		if !strings.HasPrefix(etag, `"`) || !strings.HasSuffix(etag, `"`) || len(etag) != 34 {
			t.Errorf("%s: ETag %q is not a strong hash tag", path, etag)
		}
		if resp.Header.Get("Cache-Control") != documents.DocumentCacheControl || resp.Header.Get("Access-Control-Allow-Origin") != "*" {
			t.Errorf("%s: cache %q cors %q", path, resp.Header.Get("Cache-Control"), resp.Header.Get("Access-Control-Allow-Origin"))
		}
		if ctype == "application/json" && !json.Valid(body) {
			t.Errorf("%s: not JSON", path)
		}
		for _, inm := range []string{etag, "W/" + etag, `"other", ` + etag, "*"} {
			resp, body := discDo(t, "GET", base+path, "", map[string]string{"If-None-Match": inm})
			if resp.StatusCode != http.StatusNotModified || len(body) != 0 || resp.Header.Get("ETag") != etag {
				t.Errorf("%s If-None-Match %s: %d, %d bytes", path, inm, resp.StatusCode, len(body))
			}
		}
		resp, body = discDo(t, "GET", base+path, "", map[string]string{"If-None-Match": `"stale"`})
		if resp.StatusCode != 200 || len(body) == 0 {
			t.Errorf("%s stale tag: %d", path, resp.StatusCode)
		}
		resp, body = discDo(t, "HEAD", base+path, "", nil)
		if resp.StatusCode != 200 || len(body) != 0 || resp.Header.Get("ETag") != etag {
			t.Errorf("%s HEAD: %d %d bytes", path, resp.StatusCode, len(body))
		}
	}
	r1, b1 := discDo(t, "GET", base+wire.PathAgentCard, "", nil)
	r2, b2 := discDo(t, "GET", base+wire.PathAgentCardLegacy, "", nil)
	if !bytes.Equal(b1, b2) || r1.Header.Get("ETag") != r2.Header.Get("ETag") {
		t.Error("agent-card.json and agent.json differ")
	}
	if !bytes.Equal(s.AgentCard(), b1) || s.AgentCardETag() != r1.Header.Get("ETag") {
		t.Error("documents.AgentCard() differs from the served card")
	}
	m1, _ := s.Document(documents.PathMagnet)
	m2, _ := s.Document(documents.PathMagnetAPI)
	if !bytes.Equal(m1, m2) {
		t.Error("/api/magnet differs from /.well-known/svc-magnet.json")
	}
}

func TestDocumentsArePrecomputed(t *testing.T) {
	s := discNewService(t, discTestBase, nil)
	a, _ := s.Document(documents.PathX402Manifest)
	a[0] = 'X' // the caller's copy
	b, _ := s.Document(documents.PathX402Manifest)
	if b[0] != '{' {
		t.Error("Document shares its bytes")
	}
	card := s.AgentCard()
	card[0] = 'X'
	if s.AgentCard()[0] != '{' {
		t.Error("documents.AgentCard shares its bytes")
	}
	if _, ok := s.Document("/nope"); ok {
		t.Error("unknown document found")
	}
	// Two services with the same config publish the same bytes (same ETag
	// across restarts and instances).
	s2 := discNewService(t, discTestBase, nil)
	for _, p := range []string{documents.PathOpenAPI, documents.PathSkill, documents.PathX402Manifest, documents.PathRouterFeed, documents.PathDistribution, documents.PathMagnet, wire.PathAgentCard} {
		x, _ := s.Document(p)
		y, _ := s2.Document(p)
		if !bytes.Equal(x, y) {
			t.Errorf("%s is not deterministic", p)
		}
	}
}

func TestRoutesList(t *testing.T) {
	s := discNewService(t, discTestBase, nil)
	var got []string
	for _, r := range s.Routes() {
		if !r.Free || r.Handler == nil {
			t.Errorf("%s: free %v handler %v", r.Pattern, r.Free, r.Handler)
		}
		got = append(got, r.Pattern)
	}
	want := []string{
		"GET /api/find", "POST /api/route", "GET /api/catalog", "GET /api/try", "GET /openapi.json", "GET /skill.md",
		"GET /.well-known/x402", "GET /.well-known/svc-router.json", "GET /.well-known/svc-distribution.json",
		"GET /.well-known/svc-magnet.json", "GET /api/magnet", "GET /.well-known/agent-card.json", "GET /.well-known/agent.json",
		"GET /api/amplifier/stats", "GET /api/distribution/stats", "GET /api/magnet/stats",
		"GET /{$}", "GET /llms.txt", "GET /robots.txt", "GET /server.json",
	}
	if !slices.Equal(got, want) {
		t.Errorf("routes:\n got %v\nwant %v", got, want)
	}
}

package discovery

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/seed1284c1d2/svc/discovery/documents"
	"github.com/seed1284c1d2/svc/x402"
)

// discDoc decodes a static document of s.
func discDoc(t *testing.T, s *Service, path string) map[string]any {
	t.Helper()
	b, ok := s.Document(path)
	if !ok {
		t.Fatalf("no document %s", path)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return m
}

// discSpecPrices are the list prices with six decimals, written out
// independently of the tools package.
var discSpecPrices = map[string]string{
	"session_state": "0.005000", "risk_levels": "0.005000", "strategy_grade": "0.020000", "xau_quote": "0.010000",
	"xau_bars": "0.020000", "xau_market_state": "0.030000", "csv_profile": "0.002500", "json_shape": "0.002500",
	"jwt_decode": "0.002500", "tick_pnl": "0.050000", "evm_address_syntax": "0.010000", "ohlcv_state": "0.002500",
	"regex_test": "0.003400",
}

// discCommonManifest checks the members every manifest has.
func discCommonManifest(t *testing.T, path string, m map[string]any) {
	t.Helper()
	if m["manifestVersion"] != documents.ManifestVersion || m["version"] != "2.0.0" || m["name"] != "svc" {
		t.Errorf("%s: manifestVersion %v version %v name %v", path, m["manifestVersion"], m["version"], m["name"])
	}
	if p, _ := m["purpose"].(string); len(p) < 20 {
		t.Errorf("%s: purpose %q", path, m["purpose"])
	}
	links, _ := m["links"].(map[string]any)
	for _, k := range []string{"self", "find", "route", "catalog", "try", "openapi", "skill", "x402", "agentCard", "mcp", "a2a"} {
		u, _ := links[k].(string)
		if !strings.HasPrefix(u, discTestBase) {
			t.Errorf("%s: link %s = %q", path, k, u)
		}
	}
}

func TestX402Manifest(t *testing.T) {
	for _, dev := range []bool{true, false} {
		s := discNewService(t, discTestBase, func(c *Config) {
			c.DevMode = dev
			if !dev {
				c.Facilitator = "https://facilitator.example.com"
			}
		})
		m := discDoc(t, s, documents.PathX402Manifest)
		discCommonManifest(t, documents.PathX402Manifest, m)
		if m["x402Version"] != float64(2) {
			t.Errorf("x402Version %v", m["x402Version"])
		}
		rails, _ := m["rails"].([]any)
		if len(rails) != 1 {
			t.Fatalf("rails %v", m["rails"])
		}
		rail := rails[0].(map[string]any)
		wantFac := "local-dev"
		if !dev {
			wantFac = "https://facilitator.example.com"
		}
		if rail["network"] != "eip155:8453" || rail["asset"] != "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913" || rail["payTo"] != discTestPayTo || rail["facilitator"] != wantFac {
			t.Errorf("dev=%v rail %v", dev, rail)
		}
		if e, _ := rail["eip712"].(map[string]any); e["name"] != "USD Coin" || e["version"] != "2" {
			t.Errorf("eip712 %v", rail["eip712"])
		}
		res, _ := m["resources"].([]any)
		if len(res) != 13 {
			t.Fatalf("%d resources", len(res))
		}
		for _, r := range res {
			r := r.(map[string]any)
			op, _ := r["operationId"].(string)
			if r["price"] != discSpecPrices[op] || r["url"] != discTestBase+r["path"].(string) || r["method"] == "" || r["inputSchema"] == nil {
				t.Errorf("resource %s: %v %v %v", op, r["price"], r["url"], r["method"])
			}
			acc := r["accepts"].([]any)[0].(map[string]any)
			if acc["scheme"] != "exact" || acc["network"] != "eip155:8453" || acc["amount"] != r["amount"] || acc["payTo"] != discTestPayTo ||
				acc["asset"] != rail["asset"] || acc["maxTimeoutSeconds"] != float64(x402.DefaultMaxTimeoutSeconds) {
				t.Errorf("resource %s accepts %v", op, acc)
			}
			bz := r["extensions"].(map[string]any)["bazaar"].(map[string]any)
			in := bz["info"].(map[string]any)["input"].(map[string]any)
			if in["type"] != "http" || in["method"] != r["method"] {
				t.Errorf("resource %s bazaar input %v", op, in)
			}
		}
		free, _ := m["freeResources"].([]any)
		var urls []string
		for _, f := range free {
			f := f.(map[string]any)
			urls = append(urls, f["method"].(string)+" "+f["url"].(string))
		}
		for _, want := range []string{"GET " + discTestBase + "/api/find", "POST " + discTestBase + "/mcp", "GET " + discTestBase + "/.well-known/agent-card.json"} {
			if !slices.Contains(urls, want) {
				t.Errorf("free resources lack %s", want)
			}
		}
		if m["devMode"] != dev {
			t.Errorf("devMode %v", m["devMode"])
		}
	}
}

func TestRouterFeedAndBeacons(t *testing.T) {
	s := discNewService(t, discTestBase, nil)
	feed := discDoc(t, s, documents.PathRouterFeed)
	discCommonManifest(t, documents.PathRouterFeed, feed)
	router := feed["router"].(map[string]any)
	for k, path := range map[string]string{"find": "/api/find", "route": "/api/route", "catalog": "/api/catalog", "try": "/api/try"} {
		if router[k].(map[string]any)["url"] != discTestBase+path {
			t.Errorf("router %s: %v", k, router[k])
		}
	}
	toolsList := feed["tools"].([]any)
	if len(toolsList) != 13 {
		t.Fatalf("%d tools", len(toolsList))
	}
	for i, x := range toolsList {
		tl := x.(map[string]any)
		if tl["key"] != discSpecKeys[i] || tl["price"] != discSpecPrices[tl["operationId"].(string)] || !strings.HasPrefix(tl["url"].(string), discTestBase+"/api/") {
			t.Errorf("tool %d: %v", i, tl)
		}
		if _, ok := tl["priceUsd"].(float64); !ok {
			t.Errorf("tool %d priceUsd %v", i, tl["priceUsd"])
		}
	}
	dist := discDoc(t, s, documents.PathDistribution)
	discCommonManifest(t, documents.PathDistribution, dist)
	var kinds []string
	for _, c := range dist["channels"].([]any) {
		kinds = append(kinds, c.(map[string]any)["kind"].(string))
	}
	for _, k := range []string{"http", "openapi", "mcp", "a2a", "x402", "skill"} {
		if !slices.Contains(kinds, k) {
			t.Errorf("distribution lacks channel %s", k)
		}
	}
	mag := discDoc(t, s, documents.PathMagnet)
	discCommonManifest(t, documents.PathMagnet, mag)
	pr := mag["pricing"].(map[string]any)
	if mag["beacon"] != true || pr["min"] != "0.002500" || pr["max"] != "0.050000" || len(mag["tools"].([]any)) != 13 {
		t.Errorf("magnet: beacon %v pricing %v", mag["beacon"], pr)
	}
}

func TestManifestLinksHook(t *testing.T) {
	club := discTestBase + "/.well-known/svc-club.json"
	s := discNewService(t, discTestBase, func(c *Config) {
		c.ManifestLinks = map[string]string{"club": club, "find": "https://evil.example.com/"}
	})
	for _, p := range []string{documents.PathX402Manifest, documents.PathRouterFeed, documents.PathDistribution, documents.PathMagnet} {
		links := discDoc(t, s, p)["links"].(map[string]any)
		if links["club"] != club {
			t.Errorf("%s: club link %v", p, links["club"])
		}
		if links["find"] != discTestBase+"/api/find" {
			t.Errorf("%s: a built-in link was overridden: %v", p, links["find"])
		}
	}
}

func TestAgentCard(t *testing.T) {
	s := discNewService(t, discTestBase, nil)
	var card map[string]any
	if err := json.Unmarshal(s.AgentCard(), &card); err != nil {
		t.Fatal(err)
	}
	// A2A 1.0 required members (arrays non-empty).
	for _, k := range []string{"name", "description", "version"} {
		if v, _ := card[k].(string); v == "" {
			t.Errorf("1.0: %s empty", k)
		}
	}
	ifaces, _ := card["supportedInterfaces"].([]any)
	if len(ifaces) != 2 {
		t.Fatalf("supportedInterfaces %v", card["supportedInterfaces"])
	}
	for i, want := range []string{"1.0", "0.3"} {
		in := ifaces[i].(map[string]any)
		if in["url"] != discTestBase+"/a2a" || in["protocolBinding"] != "JSONRPC" || in["protocolVersion"] != want {
			t.Errorf("interface %d: %v", i, in)
		}
	}
	if _, ok := card["capabilities"].(map[string]any); !ok {
		t.Error("capabilities missing")
	}
	for _, k := range []string{"defaultInputModes", "defaultOutputModes", "skills"} {
		if a, _ := card[k].([]any); len(a) == 0 {
			t.Errorf("%s empty", k)
		}
	}
	// A2A 0.3 required members.
	if card["url"] != discTestBase+"/a2a" || card["preferredTransport"] != "JSONRPC" || card["protocolVersion"] != "0.3" {
		t.Errorf("0.3 members: url %v transport %v version %v", card["url"], card["preferredTransport"], card["protocolVersion"])
	}
	for _, k := range []string{"securitySchemes", "security", "securityRequirements", "signatures"} {
		if _, ok := card[k]; ok {
			t.Errorf("the free card carries %s", k)
		}
	}
	var ids []string
	for _, x := range card["skills"].([]any) {
		sk := x.(map[string]any)
		ids = append(ids, sk["id"].(string))
		for _, k := range []string{"id", "name", "description"} {
			if v, _ := sk[k].(string); v == "" {
				t.Errorf("skill %v: %s empty", sk["id"], k)
			}
		}
		if tags, _ := sk["tags"].([]any); len(tags) == 0 {
			t.Errorf("skill %v: no tags", sk["id"])
		}
	}
	want := []string{"find-tool", "route-call", "catalog"}
	for _, tl := range s.tools {
		want = append(want, tl.Key)
	}
	if !slices.Equal(ids, want) {
		t.Errorf("skills %v, want %v", ids, want)
	}
	if p := card["provider"].(map[string]any); p["organization"] == "" || p["url"] != discTestBase {
		t.Errorf("provider %v", p)
	}
}

func TestSkillMarkdown(t *testing.T) {
	for _, dev := range []bool{true, false} {
		s := discNewService(t, discTestBase, func(c *Config) {
			c.DevMode = dev
			if !dev {
				c.Facilitator = "https://facilitator.example.com"
			}
		})
		b, _ := s.Document(documents.PathSkill)
		md := string(b)
		for _, want := range []string{
			"# svc", "PAYMENT-REQUIRED", "PAYMENT-SIGNATURE", "PAYMENT-RESPONSE", "402", "EIP-3009",
			discTestBase + "/api/find", discTestBase + "/api/route", discTestBase + "/api/catalog", discTestBase + "/mcp", discTestBase + "/a2a",
			"eip155:8453", discTestPayTo, "curl ", "| Tool | Key |",
		} {
			if !strings.Contains(md, want) {
				t.Errorf("dev=%v: skill.md lacks %q", dev, want)
			}
		}
		for _, tl := range s.tools {
			row := "| `" + tl.Key + "` | `" + tl.Method + " " + tl.Path + "` | " + discSpecPrices[tl.OperationID] + " |"
			if !strings.Contains(md, row) {
				t.Errorf("skill.md lacks the row of %s (%s)", tl.Key, row)
			}
		}
		if strings.Contains(md, "Dev mode") != dev {
			t.Errorf("dev=%v: dev-mode note present = %v", dev, !dev)
		}
	}
}

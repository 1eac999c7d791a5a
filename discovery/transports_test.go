package discovery_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/seed1284c1d2/svc/discovery"
	"github.com/seed1284c1d2/svc/discovery/documents"
	"github.com/seed1284c1d2/svc/discovery/mcp"
	"github.com/seed1284c1d2/svc/tools"
	"github.com/seed1284c1d2/svc/wire"
	x402a2a "github.com/seed1284c1d2/svc/x402/a2a"
	x402mcp "github.com/seed1284c1d2/svc/x402/mcp"
)

const transportsBase = "https://svc.example.com"

// newTransportsService builds a Service on the real catalog.
func newTransportsService(t *testing.T) (*discovery.Service, *tools.Catalog) {
	t.Helper()
	cat, err := tools.New(tools.Options{BaseURL: transportsBase})
	if err != nil {
		t.Fatal(err)
	}
	s, err := discovery.New(discovery.Config{Catalog: cat, BaseURL: transportsBase, PayTo: "0x209693Bc6afc0C5328bA36FaF03C514EF312287C", DevMode: true})
	if err != nil {
		t.Fatal(err)
	}
	return s, cat
}

// byKey returns the tool of a key.
func byKey(t *testing.T, cat *tools.Catalog, key string) *tools.Tool {
	t.Helper()
	tool, ok := cat.ByKey(key)
	if !ok {
		t.Fatalf("no tool %s", key)
	}
	return tool
}

// checkTransports asserts that tr says how to buy tool over HTTP, MCP and
// A2A, with the names discovery/mcp and discovery/a2a use.
func checkTransports(t *testing.T, where string, tool *tools.Tool, tr documents.Transports) {
	t.Helper()
	if tr.Terms.Price != tool.PriceFixed6() || tr.Terms.Network != tool.Network || tr.Terms.PayTo == "" || tr.Terms.Scheme != "exact" || tr.Terms.X402Version != 2 {
		t.Errorf("%s %s: terms %+v", where, tool.Key, tr.Terms)
	}
	if tr.HTTP.Method != tool.Method || tr.HTTP.Path != tool.Path || tr.HTTP.URL != transportsBase+tool.Path || tr.HTTP.PaymentHeader != "PAYMENT-SIGNATURE" {
		t.Errorf("%s %s: http %+v", where, tool.Key, tr.HTTP)
	}
	if tr.MCP.URL != transportsBase+"/mcp" || tr.MCP.Method != "tools/call" || tr.MCP.Tool != mcp.PaidToolName(tool) ||
		tr.MCP.PaymentMeta != x402mcp.MetaPayment || tr.MCP.SettlementMeta != x402mcp.MetaPaymentResponse || tr.MCP.Extension != x402mcp.ExtensionPayment {
		t.Errorf("%s %s: mcp %+v", where, tool.Key, tr.MCP)
	}
	var part struct {
		Tool  string          `json:"tool"`
		Input json.RawMessage `json:"input"`
	}
	if err := json.Unmarshal(tr.A2A.DataPart, &part); err != nil || part.Tool != tool.Key || len(part.Input) == 0 || part.Input[0] != '{' {
		t.Errorf("%s %s: a2a data part %s (%v)", where, tool.Key, tr.A2A.DataPart, err)
	}
	if tr.A2A.URL != transportsBase+"/a2a" || tr.A2A.Skill != tool.Key || tr.A2A.Extension != x402a2a.ExtensionURI ||
		tr.A2A.Card != transportsBase+wire.PathAgentCard || tr.A2A.PaymentMeta != "x402.payment.payload" {
		t.Errorf("%s %s: a2a %+v", where, tool.Key, tr.A2A)
	}
	for _, how := range []string{tr.HTTP.How, tr.MCP.How, tr.A2A.How} {
		if how == "" {
			t.Errorf("%s %s: a transport without how", where, tool.Key)
		}
	}
}

// Every paid tool of the catalog, the finder and the router says how to buy
// it over HTTP, MCP and A2A.
func TestCatalogTransports(t *testing.T) {
	s, cat := newTransportsService(t)
	page, err := s.Catalog(t.Context(), "", "", 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	all := cat.All()
	if len(page.Items) != len(all) {
		t.Fatalf("%d items, want %d", len(page.Items), len(all))
	}
	for i, it := range page.Items {
		checkTransports(t, "catalog", all[i], it.Transports)
	}
	raw, err := json.Marshal(page.Items[0])
	if err != nil || !bytes.Contains(raw, []byte(`"transports":{"terms":`)) || !bytes.Contains(raw, []byte(`"key":"`)) {
		t.Fatalf("item JSON %s (%v)", raw, err)
	}
	found, err := s.Find(t.Context(), "risk levels", 1)
	if err != nil || len(found.Matches) != 1 {
		t.Fatalf("find: %v %+v", err, found)
	}
	checkTransports(t, "find", byKey(t, cat, found.Matches[0].Key), found.Matches[0].Transports)
	plan, err := s.Route(t.Context(), "risk-levels", json.RawMessage(`{"entry": 3500, "direction": "long", "slPct": 0.05, "tpPct": 0.04}`))
	if err != nil || plan.Transports == nil {
		t.Fatalf("route: %v %+v", err, plan)
	}
	checkTransports(t, "route", byKey(t, cat, "risk-levels"), *plan.Transports)
	if !strings.Contains(string(plan.Transports.A2A.DataPart), `"entry":3500`) || !strings.Contains(plan.Message, "MCP") || !strings.Contains(plan.Message, "A2A") {
		t.Fatalf("route: data part %s, message %q", plan.Transports.A2A.DataPart, plan.Message)
	}
}

// /openapi.json, /.well-known/x402, the router feed, skill.md and the agent
// card list the three ways to buy every tool.
func TestDocumentsTransports(t *testing.T) {
	s, cat := newTransportsService(t)
	doc := func(path string) []byte {
		b, ok := s.Document(path)
		if !ok {
			t.Fatalf("no document %s", path)
		}
		return b
	}
	var oas struct {
		Info  struct{ Description string }
		Paths map[string]map[string]struct {
			OperationID string                `json:"operationId"`
			Transports  *documents.Transports `json:"x-transports"`
		}
	}
	if err := json.Unmarshal(doc(documents.PathOpenAPI), &oas); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"MCP", "A2A", x402a2a.ExtensionURI, x402mcp.MetaPayment, "x-transports"} {
		if !strings.Contains(oas.Info.Description, want) {
			t.Errorf("openapi info.description lacks %q", want)
		}
	}
	var x402 struct {
		Transports map[string]json.RawMessage `json:"transports"`
		Resources  []struct {
			Key        string               `json:"key"`
			Transports documents.Transports `json:"transports"`
		} `json:"resources"`
	}
	if err := json.Unmarshal(doc(documents.PathX402Manifest), &x402); err != nil {
		t.Fatal(err)
	}
	if len(x402.Transports) != 3 || x402.Transports["mcp"] == nil || x402.Transports["a2a"] == nil || x402.Transports["http"] == nil {
		t.Errorf("x402 manifest transports %v", x402.Transports)
	}
	var feed struct {
		Tools []struct {
			Key        string               `json:"key"`
			Transports documents.Transports `json:"transports"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(doc(documents.PathRouterFeed), &feed); err != nil {
		t.Fatal(err)
	}
	var card documents.AgentCard
	if err := json.Unmarshal(doc(wire.PathAgentCard), &card); err != nil {
		t.Fatal(err)
	}
	if len(card.Capabilities.Extensions) != 1 || card.Capabilities.Extensions[0].URI != x402a2a.ExtensionURI {
		t.Errorf("card extensions %+v", card.Capabilities.Extensions)
	}
	skill := string(doc(documents.PathSkill))
	all := cat.All()
	if len(x402.Resources) != len(all) || len(feed.Tools) != len(all) {
		t.Fatalf("%d resources, %d feed tools, want %d", len(x402.Resources), len(feed.Tools), len(all))
	}
	for i, tool := range all {
		op := oas.Paths[tool.Path][strings.ToLower(tool.Method)]
		if op.OperationID != tool.OperationID || op.Transports == nil {
			t.Errorf("openapi %s %s: %+v", tool.Method, tool.Path, op)
		} else {
			checkTransports(t, "openapi", tool, *op.Transports)
		}
		checkTransports(t, "x402 manifest", tool, x402.Resources[i].Transports)
		checkTransports(t, "router feed", tool, feed.Tools[i].Transports)
		row := "| `" + tool.Key + "` | `" + tool.Method + " " + tool.Path + "` | `" + tool.OperationID + "` | `{\"tool\": \"" + tool.Key + "\""
		if !strings.Contains(skill, row) {
			t.Errorf("skill.md lacks %q", row)
		}
		var sk *documents.AgentSkill
		for j := range card.Skills {
			if card.Skills[j].ID == tool.Key {
				sk = &card.Skills[j]
			}
		}
		if sk == nil || !strings.Contains(sk.Description, tool.OperationID) || !strings.Contains(sk.Description, tool.Path) || len(sk.Examples) != 1 {
			t.Errorf("agent card skill of %s: %+v", tool.Key, sk)
		} else {
			var part bytes.Buffer
			if err := json.Compact(&part, x402.Resources[i].Transports.A2A.DataPart); err != nil || sk.Examples[0] != part.String() {
				t.Errorf("agent card skill %s example %q, want %s (%v)", tool.Key, sk.Examples[0], part.String(), err)
			}
		}
	}
}

// Text that said MCP and A2A never run a paid tool is gone.
func TestNoDiscoveryOnlyClaims(t *testing.T) {
	s, _ := newTransportsService(t)
	for _, path := range []string{documents.PathOpenAPI, documents.PathSkill, documents.PathX402Manifest, documents.PathRouterFeed,
		documents.PathDistribution, documents.PathMagnet, wire.PathAgentCard} {
		b, _ := s.Document(path)
		for _, bad := range []string{"never runs a paid tool", "never run a paid tool", "paid per call over HTTP.", "discovery-only"} {
			if bytes.Contains(b, []byte(bad)) {
				t.Errorf("%s says %q", path, bad)
			}
		}
	}
}

// Two services on the same catalog publish the same bytes and ETags.
func TestTransportsDeterministic(t *testing.T) {
	a, _ := newTransportsService(t)
	b, _ := newTransportsService(t)
	for _, path := range []string{documents.PathOpenAPI, documents.PathSkill, documents.PathX402Manifest, documents.PathRouterFeed,
		documents.PathDistribution, documents.PathMagnet, wire.PathAgentCard} {
		da, _ := a.Document(path)
		db, _ := b.Document(path)
		if !bytes.Equal(da, db) {
			t.Errorf("%s differs between two builds", path)
		}
	}
	if a.AgentCardETag() != b.AgentCardETag() {
		t.Error("agent card ETags differ")
	}
	pa, _ := a.Catalog(t.Context(), "", "", 0, 100)
	pb, _ := b.Catalog(t.Context(), "", "", 0, 100)
	ja, _ := json.Marshal(pa)
	jb, _ := json.Marshal(pb)
	if !bytes.Equal(ja, jb) {
		t.Error("catalog pages differ")
	}
}

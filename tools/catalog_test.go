package tools_test

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/seed1284c1d2/svc/tools"
)

// newCatalog builds a catalog or fails the test.
func newCatalog(t *testing.T, opts tools.Options) *tools.Catalog {
	t.Helper()
	c, err := tools.New(opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return c
}

// paidRoutes is the table of paid endpoints in catalog order with their
// catalog keys, written out independently of the descriptors.
var paidRoutes = []struct {
	opID, key, method, path, price, location string
	terminal                                 bool
	atomic                                   int64
}{
	{"session_state", "session-state", "GET", "/api/session-state", "0.005", "query", false, 5000},
	{"risk_levels", "risk-levels", "POST", "/api/risk-levels", "0.005", "body", false, 5000},
	{"strategy_grade", "strategy-grade", "POST", "/api/strategy-grade", "0.02", "body", false, 20000},
	{"xau_quote", "xau-quote", "GET", "/api/xau/quote", "0.01", "query", true, 10000},
	{"xau_bars", "xau-bars", "GET", "/api/xau/bars", "0.02", "query", true, 20000},
	{"xau_market_state", "xau-market-state", "GET", "/api/xau/market-state", "0.03", "query", true, 30000},
	{"csv_profile", "csv-profile", "POST", "/api/csv-profile", "0.0025", "body", false, 2500},
	{"json_shape", "json-shape", "POST", "/api/json-shape", "0.0025", "body", false, 2500},
	{"jwt_decode", "jwt-decode", "POST", "/api/jwt-decode", "0.0025", "body", false, 2500},
	{"tick_pnl", "tick-pnl", "POST", "/api/tick-pnl", "0.05", "body", false, 50000},
	{"evm_address_syntax", "evm-address-syntax", "POST", "/api/evm-address-syntax", "0.01", "body", false, 10000},
	{"ohlcv_state", "ohlcv-state", "POST", "/api/ohlcv-state", "0.0025", "body", false, 2500},
	{"regex_test", "regex-test", "POST", "/api/regex-test", "0.0034", "body", false, 3400},
}

func TestDescriptorsMatchSection4(t *testing.T) {
	c := newCatalog(t, tools.Options{})
	all := c.All()
	if len(all) != len(paidRoutes) || c.Len() != 13 {
		t.Fatalf("catalog has %d tools (Len %d), want 13", len(all), c.Len())
	}
	for i, want := range paidRoutes {
		got := all[i]
		if got.OperationID != want.opID || got.Key != want.key || got.Method != want.method || got.Path != want.path ||
			got.Price != want.price || string(got.InputLocation) != want.location || got.Terminal != want.terminal ||
			got.PriceAtomic != want.atomic {
			t.Errorf("tool %d = {%s %s %s %s %s %s %v %d}, want %+v", i, got.OperationID, got.Key, got.Method, got.Path,
				got.Price, got.InputLocation, got.Terminal, got.PriceAtomic, want)
		}
		if got.Network != "eip155:8453" || got.URL != want.path {
			t.Errorf("%s: network %q url %q", want.key, got.Network, got.URL)
		}
		if got.Name == "" || len(got.Description) < 200 || len(got.Tags) == 0 {
			t.Errorf("%s: name %q, description of %d bytes, tags %v: want all set (descriptions of a paragraph or two)", want.key, got.Name, len(got.Description), got.Tags)
		}
		if len(got.Fields) == 0 && want.opID != "session_state" {
			t.Errorf("%s: no input fields", want.key)
		}
		for _, lookup := range []func() (*tools.Tool, bool){
			func() (*tools.Tool, bool) { return c.ByKey(want.key) },
			func() (*tools.Tool, bool) { return c.ByOperationID(want.opID) },
			func() (*tools.Tool, bool) { return c.ByPath(want.method, want.path) },
			func() (*tools.Tool, bool) { return c.ByPath(strings.ToLower(want.method), want.path) },
		} {
			if tool, ok := lookup(); !ok || tool != got {
				t.Errorf("%s: lookup gave %v, %v", want.key, tool, ok)
			}
		}
	}
	if _, ok := c.ByPath("GET", "/api/risk-levels"); ok {
		t.Error("ByPath matched the wrong method")
	}
	if _, ok := c.ByKey("risk_levels"); ok {
		t.Error("ByKey matched an operation id")
	}
}

func TestTerminalToolsDescribeTheirSource(t *testing.T) {
	c := newCatalog(t, tools.Options{})
	for _, tool := range c.All() {
		mentionsSimulated := strings.Contains(tool.Description, "simulated")
		if tool.Terminal != mentionsSimulated {
			t.Errorf("%s: terminal %v but description mentions simulated data: %v", tool.Key, tool.Terminal, mentionsSimulated)
		}
		if tool.Terminal && !strings.Contains(string(tool.OutputExample), `"source":"simulated"`) {
			t.Errorf("%s: output example does not say its data is simulated: %s", tool.Key, tool.OutputExample)
		}
	}
	for _, key := range []string{"csv-profile", "json-shape", "jwt-decode", "regex-test"} {
		tool, _ := c.ByKey(key)
		if !strings.Contains(tool.Description, "never stored") {
			t.Errorf("%s: description does not say the data is never stored", key)
		}
	}
}

func TestCategories(t *testing.T) {
	c := newCatalog(t, tools.Options{})
	got := c.Categories()
	for _, want := range []string{"trading", "risk", "gold", "data", "crypto", "utility", "regex"} {
		if !slices.Contains(got, want) {
			t.Errorf("categories %v lack %q", got, want)
		}
	}
	if !slices.IsSorted(got) {
		t.Errorf("categories not sorted: %v", got)
	}
}

func TestCatalogItemJSON(t *testing.T) {
	c := newCatalog(t, tools.Options{BaseURL: "https://api.example.com/"})
	for i, item := range c.Items() {
		raw, err := json.Marshal(item)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(raw, &m); err != nil {
			t.Fatal(err)
		}
		// The item fields of /api/catalog, then the extras.
		for _, f := range []string{"key", "name", "method", "path", "url", "priceUsd", "network", "description", "tags",
			"inputSchema", "exampleInput", "outputExample", "operationId", "price", "inputLocation", "outputSchema", "terminal"} {
			if _, ok := m[f]; !ok {
				t.Errorf("item %d lacks %q", i, f)
			}
		}
		want := paidRoutes[i]
		if string(m["priceUsd"]) != want.price {
			t.Errorf("%s: priceUsd %s, want the JSON number %s", want.key, m["priceUsd"], want.price)
		}
		if string(m["key"]) != `"`+want.key+`"` || string(m["url"]) != `"https://api.example.com`+want.path+`"` {
			t.Errorf("%s: key %s url %s", want.key, m["key"], m["url"])
		}
		var fixed string
		_ = json.Unmarshal(m["price"], &fixed)
		if _, frac, _ := strings.Cut(fixed, "."); len(frac) != 6 || strings.TrimRight(fixed, "0") != strings.TrimRight(want.price, "0") {
			t.Errorf("%s: price %q is not six decimals", want.key, fixed)
		}
		for _, f := range []string{"inputSchema", "outputSchema", "exampleInput", "outputExample"} {
			if m[f][0] != '{' {
				t.Errorf("%s: %s is not an object: %.40s", want.key, f, m[f])
			}
		}
		var tags []string
		if err := json.Unmarshal(m["tags"], &tags); err != nil || len(tags) == 0 {
			t.Errorf("%s: tags %s", want.key, m["tags"])
		}
	}
	tool, _ := c.ByKey("regex-test")
	if got := tool.Item().Price; got != "0.003400" {
		t.Errorf("regex-test price %q, want 0.003400", got)
	}
	if got := tool.PriceFixed6(); got != "0.003400" {
		t.Errorf("PriceFixed6 %q", got)
	}
}

func TestItemIsACopy(t *testing.T) {
	c := newCatalog(t, tools.Options{})
	tool, _ := c.ByKey("risk-levels")
	item := tool.Item()
	item.Tags[0] = "changed"
	item.InputSchema[0] = 'X'
	if tool.Tags[0] == "changed" || tool.InputSchema[0] == 'X' {
		t.Fatal("Item shares memory with the tool")
	}
	m := tool.InputSchemaMap()
	m["type"] = "changed"
	if tool.InputSchemaMap()["type"] != "object" {
		t.Fatal("InputSchemaMap shares memory")
	}
	if tool.OutputSchemaMap()["type"] != "object" {
		t.Fatal("OutputSchemaMap is not the output schema")
	}
}

func TestOptions(t *testing.T) {
	c := newCatalog(t, tools.Options{
		Prices:    map[string]string{"regex-test": "0.004", "xau-quote": "1.250000"},
		BaseURL:   "http://localhost:8080",
		Network:   "eip155:84532",
		BodyLimit: 4096,
	})
	rt, _ := c.ByKey("regex-test")
	if rt.Price != "0.004" || rt.PriceAtomic != 4000 || rt.PriceFixed6() != "0.004000" {
		t.Errorf("override: %s %d %s", rt.Price, rt.PriceAtomic, rt.PriceFixed6())
	}
	q, _ := c.ByKey("xau-quote")
	if q.Price != "1.25" || q.PriceAtomic != 1250000 || q.Item().PriceUSD != "1.25" {
		t.Errorf("override: %s %d", q.Price, q.PriceAtomic)
	}
	rl, _ := c.ByKey("risk-levels")
	if rl.Price != "0.005" || rl.URL != "http://localhost:8080/api/risk-levels" || rl.Network != "eip155:84532" {
		t.Errorf("defaults: %s %s %s", rl.Price, rl.URL, rl.Network)
	}
	if c.BodyLimit() != 4096 || c.Network() != "eip155:84532" || c.BaseURL() != "http://localhost:8080" {
		t.Errorf("accessors: %d %s %s", c.BodyLimit(), c.Network(), c.BaseURL())
	}
	if d := newCatalog(t, tools.Options{}); d.BodyLimit() != 2<<20 || d.Network() != "eip155:8453" || d.BaseURL() != "" {
		t.Errorf("zero options: %d %s %q", d.BodyLimit(), d.Network(), d.BaseURL())
	}

	bad := []struct {
		name string
		opts tools.Options
		want string
	}{
		{"unknown key", tools.Options{Prices: map[string]string{"risk_levels": "0.01"}}, "unknown tool"},
		{"zero price", tools.Options{Prices: map[string]string{"risk-levels": "0"}}, "greater than zero"},
		{"negative price", tools.Options{Prices: map[string]string{"risk-levels": "-0.01"}}, "plain decimal"},
		{"too fine", tools.Options{Prices: map[string]string{"risk-levels": "0.0000001"}}, "smallest unit"},
		{"exponent", tools.Options{Prices: map[string]string{"risk-levels": "1e-3"}}, "plain decimal"},
		{"dollar", tools.Options{Prices: map[string]string{"risk-levels": "$0.01"}}, "plain decimal"},
		{"empty price", tools.Options{Prices: map[string]string{"risk-levels": ""}}, "plain decimal"},
		{"relative base", tools.Options{BaseURL: "api.example.com"}, "absolute"},
		{"base with query", tools.Options{BaseURL: "https://a.example/?x=1"}, "absolute"},
		{"network", tools.Options{Network: "base"}, "CAIP-2"},
		{"body limit", tools.Options{BodyLimit: 100}, "minimum"},
	}
	for _, b := range bad {
		if _, err := tools.New(b.opts); err == nil || !strings.Contains(err.Error(), b.want) {
			t.Errorf("%s: err %v, want one containing %q", b.name, err, b.want)
		}
	}
}

func TestParsePrice(t *testing.T) {
	for _, tc := range []struct {
		in     string
		atomic int64
	}{
		{"0.0034", 3400}, {"0.005", 5000}, {"0.0025", 2500}, {"0.000001", 1}, {"1.50", 1500000}, {"0.0050000", 5000}, {"12", 12000000},
	} {
		d, atomic, err := tools.ParsePrice(tc.in)
		if err != nil || atomic != tc.atomic || d.Shift(6).IntPart() != tc.atomic {
			t.Errorf("ParsePrice(%q) = %v, %d, %v; want atomic %d", tc.in, d, atomic, err, tc.atomic)
		}
	}
	for _, in := range []string{"0", "0.0000001", "0.0000015", ".5", "5.", "1,5", " 1", "NaN", "99999999999999999"} {
		if _, _, err := tools.ParsePrice(in); err == nil {
			t.Errorf("ParsePrice(%q) accepted", in)
		}
	}
}

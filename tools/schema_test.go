package tools_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/leanovate/gopter"

	"github.com/seed1284c1d2/svc"
	"github.com/seed1284c1d2/svc/svctest"
	"github.com/seed1284c1d2/svc/tools"
)

// resolve parses and resolves a published schema with jsonschema-go.
func resolve(t *testing.T, raw json.RawMessage) *jsonschema.Resolved {
	t.Helper()
	var s jsonschema.Schema
	if err := json.Unmarshal(raw, &s); err != nil {
		t.Fatalf("schema does not parse: %v", err)
	}
	if s.Schema != tools.SchemaDialect {
		t.Fatalf("schema dialect %q", s.Schema)
	}
	r, err := s.Resolve(nil)
	if err != nil {
		t.Fatalf("schema does not resolve: %v", err)
	}
	return r
}

// instance decodes JSON into the generic value jsonschema-go validates.
func instance(t *testing.T, raw []byte) any {
	t.Helper()
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatalf("not JSON: %v: %s", err, raw)
	}
	return v
}

func TestSchemasValidateExamples(t *testing.T) {
	c := newCatalog(t, tools.Options{})
	for _, tool := range c.All() {
		t.Run(tool.Key, func(t *testing.T) {
			in, out := resolve(t, tool.InputSchema), resolve(t, tool.OutputSchema)
			if err := in.Validate(instance(t, tool.ExampleInput)); err != nil {
				t.Errorf("input schema rejects the example input %s: %v", tool.ExampleInput, err)
			}
			if err := out.Validate(instance(t, tool.OutputExample)); err != nil {
				t.Errorf("output schema rejects the output example %s: %v", tool.OutputExample, err)
			}
			// The schemas are strict where the decoder is: an input with an
			// extra member is invalid, an output with one is not.
			var ex map[string]any
			_ = json.Unmarshal(tool.ExampleInput, &ex)
			ex["surplus"] = 1
			if err := in.Validate(ex); err == nil {
				t.Error("input schema accepts an unknown member")
			}
			var outEx map[string]any
			_ = json.Unmarshal(tool.OutputExample, &outEx)
			outEx["surplus"] = 1
			if err := out.Validate(outEx); err != nil {
				t.Errorf("output schema rejects an additional member: %v", err)
			}
		})
	}
}

// invalidCase is an input that both the schema and the adapter reject.
type invalidCase struct {
	input string
	field string // "" for the input as a whole
	rule  string
}

// invalidInputs lists, per tool, inputs that break a rule the schema
// shows: missing required members, values out of range, bad enums, wrong
// types, unknown members.
var invalidInputs = map[string][]invalidCase{
	"session-state": {
		{`{"dateTime":5}`, "dateTime", "string"},
		{`{"datetime":"2025-03-31"}`, "datetime", "unknown_field"},
	},
	"risk-levels": {
		{`{}`, "entry", "required"},
		{`{"direction":"long","slPct":0.05,"tpPct":0.04}`, "entry", "required"},
		{`{"entry":0,"direction":"long","slPct":0.05,"tpPct":0.04}`, "entry", "gt"},
		{`{"entry":3500,"direction":"up","slPct":0.05,"tpPct":0.04}`, "direction", "oneof"},
		{`{"entry":3500,"direction":"long","slPct":-1,"tpPct":0.04}`, "slPct", "gt"},
		{`{"entry":3500,"direction":"long","slPct":0.05,"tpPct":0}`, "tpPct", "gt"},
		{`{"entry":3500,"direction":"long","slPct":0.05,"tpPct":0.04,"sl":1}`, "sl", "unknown_field"},
		{`{"entry":true,"direction":"long","slPct":0.05,"tpPct":0.04}`, "entry", "number"},
		{`{"entry":3500,"direction":"long","slPct":0.05,"tpPct":null}`, "tpPct", "number"},
	},
	"strategy-grade": {
		{`{"trades":1.5,"profitFactor":1.2,"winRatePct":50,"maxDrawdownPct":10,"walkForwardPassPct":60}`, "trades", "integer"},
		{`{"trades":-1,"profitFactor":1.2,"winRatePct":50,"maxDrawdownPct":10,"walkForwardPassPct":60}`, "trades", "gte"},
		{`{"trades":100,"profitFactor":-0.1,"winRatePct":50,"maxDrawdownPct":10,"walkForwardPassPct":60}`, "profitFactor", "gte"},
		{`{"trades":100,"profitFactor":1.2,"winRatePct":101,"maxDrawdownPct":10,"walkForwardPassPct":60}`, "winRatePct", "lte"},
		{`{"trades":100,"profitFactor":1.2,"winRatePct":50,"maxDrawdownPct":10}`, "walkForwardPassPct", "required"},
	},
	"xau-quote": {
		{`{"symbol":"` + strings.Repeat("X", 33) + `"}`, "symbol", "max"},
		{`{"symbol":7}`, "symbol", "string"},
		{`{"sym":"XAUUSD"}`, "sym", "unknown_field"},
	},
	"xau-bars": {
		{`{"timeframe":"M2"}`, "timeframe", "oneof"},
		{`{"timeframe":"m5"}`, "timeframe", "oneof"},
		{`{"count":9}`, "count", "min"},
		{`{"count":501}`, "count", "max"},
		{`{"count":10.5}`, "count", "integer"},
		{`{"count":"50"}`, "count", "integer"},
		{`{"symbol":"XAUUSD"}`, "symbol", "unknown_field"},
	},
	"xau-market-state": {
		{`{"count":29}`, "count", "min"},
		{`{"count":1000}`, "count", "max"},
		{`{"timeframe":"D1","count":50}`, "timeframe", "oneof"},
	},
	"csv-profile": {
		{`{}`, "csv", "required"},
		{`{"csv":""}`, "csv", "required"},
		{`{"csv":"a,b\n1,2","hasHeader":"yes"}`, "hasHeader", "boolean"},
		{`{"csv":"a,b\n1,2","header":true}`, "header", "unknown_field"},
	},
	"json-shape": {
		{`{}`, "value", "required"},
		{`{"value":{},"maxDepth":0}`, "maxDepth", "min"},
		{`{"value":{},"maxDepth":13}`, "maxDepth", "max"},
		{`{"value":{},"maxPaths":9}`, "maxPaths", "min"},
		{`{"value":{},"maxPaths":1001}`, "maxPaths", "max"},
		{`{"value":{},"maxPaths":"20"}`, "maxPaths", "integer"},
	},
	"jwt-decode": {
		{`{}`, "token", "required"},
		{`{"token":""}`, "token", "required"},
		{`{"token":"` + strings.Repeat("a", 65537) + `"}`, "token", "max_bytes"},
		{`{"jwt":"a.b.c"}`, "jwt", "unknown_field"},
	},
	"tick-pnl": {
		{`{"entry":100,"exit":101,"contracts":0,"tickSize":0.25,"tickValue":12.5,"direction":"long"}`, "contracts", "gt"},
		{`{"entry":100,"exit":101,"contracts":2,"tickSize":-0.25,"tickValue":12.5,"direction":"long"}`, "tickSize", "gt"},
		{`{"entry":100,"exit":101,"contracts":2,"tickSize":0.25,"tickValue":0,"direction":"long"}`, "tickValue", "gt"},
		{`{"entry":100,"exit":101,"contracts":2,"tickSize":0.25,"tickValue":12.5,"direction":"flat"}`, "direction", "oneof"},
		{`{"entry":100,"contracts":2,"tickSize":0.25,"tickValue":12.5,"direction":"long"}`, "exit", "required"},
	},
	"evm-address-syntax": {
		{`{}`, "address", "required"},
		{`{"address":["0x00"]}`, "address", "string"},
	},
	"ohlcv-state": {
		{`{}`, "bars", "required"},
		{`{"bars":[]}`, "bars", "min"},
		{`{"bars":null}`, "bars", "array"},
		{`{"bars":[{"open":0,"high":102,"low":99,"close":101}]}`, "bars[0].open", "gt"},
		{`{"bars":[{"open":100,"high":102,"low":99}]}`, "bars[0].close", "required"},
		{`{"bars":[{"open":100,"high":102,"low":99,"close":101,"volume":-1}]}`, "bars[0].volume", "gte"},
		{`{"bars":[{"open":100,"high":102,"low":99,"close":101,"time":"` + strings.Repeat("t", 65) + `"}]}`, "bars[0].time", "max"},
		{`{"bars":[{"open":100,"high":102,"low":99,"close":101},{"open":100,"high":102,"low":99,"close":101,"vol":3}]}`, "bars[1].vol", "unknown_field"},
		{`{"bars":[{"open":100,"high":102,"low":99,"close":101},{"open":"x","high":102,"low":99,"close":101}]}`, "bars[1].open", "number"},
	},
	"regex-test": {
		{`{}`, "pattern", "required"},
		{`{"pattern":"a"}`, "text", "required"},
		{`{"pattern":"` + strings.Repeat("a", 4097) + `","text":""}`, "pattern", "max_bytes"},
		{`{"pattern":"a","text":"x","flags":1}`, "flags", "string"},
	},
}

// fieldError finds the error of a field with a rule.
func fieldError(err error, field, rule string) bool {
	var e *svc.Error
	if !errors.As(err, &e) {
		return false
	}
	for _, f := range e.Fields {
		if f.Field == field && f.Rule == rule {
			return true
		}
	}
	return false
}

func TestSchemaAndAdapterRejectTheSameInputs(t *testing.T) {
	c := newCatalog(t, tools.Options{})
	ctx := context.Background()
	for _, tool := range c.All() {
		cases := invalidInputs[tool.Key]
		if len(cases) < 2 {
			t.Errorf("%s: fewer than 2 invalid inputs listed", tool.Key)
		}
		schema := resolve(t, tool.InputSchema)
		for _, tc := range cases {
			if err := schema.Validate(instance(t, []byte(tc.input))); err == nil {
				t.Errorf("%s: schema accepts %.80s", tool.Key, tc.input)
			}
			_, err := tool.DecodeJSON(ctx, json.RawMessage(tc.input))
			if !fieldError(err, tc.field, tc.rule) {
				t.Errorf("%s: adapter on %.80s: %v; want field %q rule %q", tool.Key, tc.input, err, tc.field, tc.rule)
			}
			if k := svc.KindOf(err); k != svc.KindInvalid && k != svc.KindTooLarge {
				t.Errorf("%s: %.80s: kind %s", tool.Key, tc.input, k)
			}
		}
	}
}

// beyondSchema lists inputs that the schema cannot judge (cross-field and
// syntax rules, stated in the descriptions) and the adapter rejects.
var beyondSchema = map[string][]invalidCase{
	"session-state":      {{`{"dateTime":"yesterday"}`, "dateTime", "datetime"}},
	"risk-levels":        {{`{"entry":3500,"direction":"long","slPct":100,"tpPct":1}`, "slPct", "level_positive"}},
	"csv-profile":        {{`{"csv":"a,\"b\n1,2"}`, "csv", "csv_quote"}, {`{"csv":"a,b","delimiter":"xx"}`, "delimiter", "oneof"}},
	"json-shape":         {},
	"jwt-decode":         {{`{"token":"a.b"}`, "token", "jwt_parts"}, {`{"token":"a.b.c.d.e"}`, "token", "jwe_unsupported"}},
	"ohlcv-state":        {{`{"bars":[{"open":100,"high":99,"low":98,"close":101}]}`, "bars[0].high", "ohlc_consistency"}},
	"regex-test":         {{`{"pattern":"(","text":"x"}`, "pattern", "regex_syntax"}, {`{"pattern":"a","flags":"gg","text":"x"}`, "flags", "regex_flags"}},
	"xau-quote":          {{`{"symbol":"XAU/USD"}`, "symbol", "symbol"}},
	"evm-address-syntax": {},
}

func TestAdapterAppliesRulesBeyondTheSchema(t *testing.T) {
	c := newCatalog(t, tools.Options{})
	ctx := context.Background()
	for key, cases := range beyondSchema {
		tool, ok := c.ByKey(key)
		if !ok {
			t.Fatalf("no tool %s", key)
		}
		schema := resolve(t, tool.InputSchema)
		for _, tc := range cases {
			if err := schema.Validate(instance(t, []byte(tc.input))); err != nil {
				t.Errorf("%s: the schema rejects %s (move the case to invalidInputs): %v", key, tc.input, err)
			}
			if _, err := tool.DecodeJSON(ctx, json.RawMessage(tc.input)); !fieldError(err, tc.field, tc.rule) {
				t.Errorf("%s: %s: %v; want field %q rule %q", key, tc.input, err, tc.field, tc.rule)
			}
		}
	}
}

// samples draws n values from a generator with a fixed seed.
func samples(t *testing.T, g gopter.Gen, n int, seed int64) []any {
	t.Helper()
	params := gopter.DefaultGenParameters().CloneWithSeed(seed)
	out := make([]any, 0, n)
	for range n {
		v, ok := g(params).Retrieve()
		if !ok {
			t.Fatal("generator gave no value")
		}
		out = append(out, v)
	}
	return out
}

// validInputs returns valid inputs of a tool as JSON: from the svctest
// generators where they exist, else hand-written.
func validInputs(t *testing.T, key string) [][]byte {
	t.Helper()
	gens := map[string]gopter.Gen{
		"session-state":    svctest.SessionStateRequest(),
		"risk-levels":      svctest.RiskLevelsRequest(),
		"strategy-grade":   svctest.StrategyGradeRequest(),
		"xau-quote":        svctest.XAUSymbol().Map(func(s string) svc.XAUQuoteRequest { return svc.XAUQuoteRequest{Symbol: s} }),
		"xau-bars":         svctest.XAUBarsRequest(),
		"xau-market-state": svctest.XAUMarketStateRequest(),
		"csv-profile":      svctest.CSVProfileRequest(),
		"json-shape":       svctest.JSONShapeRequest(),
		"tick-pnl":         svctest.TickPnLRequest(),
		"ohlcv-state":      svctest.OHLCVStateRequest(),
	}
	var out [][]byte
	if g, ok := gens[key]; ok {
		for _, v := range samples(t, g, 60, 7) {
			b, err := json.Marshal(v)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, b)
		}
	}
	hand := map[string][]string{
		"xau-quote": {`{}`, `{"symbol":"XAUUSD.a"}`},
		"jwt-decode": {
			`{"token":"eyJhbGciOiJub25lIn0.eyJzdWIiOiJ4In0."}`,
			`{"token":"Bearer eyJhbGciOiJIUzI1NiJ9.eyJleHAiOjE3MDAwMDAwMDB9.c2ln"}`,
		},
		"evm-address-syntax": {
			`{"address":"0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed"}`,
			`{"address":"0x0000000000000000000000000000000000000000"}`,
			`{"address":"not an address"}`,
			`{"address":" 0x5aaeb6053f3e94c9b9a09f33669435e7ef1beaed"}`,
		},
		"regex-test": {
			`{"pattern":"","text":""}`,
			`{"pattern":"(?<y>\\d{4})","flags":"dgimsuy","text":"2025"}`,
			`{"pattern":"a+","flags":"g","text":"baaab"}`,
		},
		"ohlcv-state": {`{"bars":[{"time":"2025-06-04T13:00:00Z","open":1,"high":1,"low":1,"close":1,"volume":0,"tick_volume":12}]}`},
		"json-shape":  {`{"value":null}`, `{"value":[],"maxDepth":null}`},
	}
	for _, h := range hand[key] {
		out = append(out, []byte(h))
	}
	return out
}

func TestSchemaAndAdapterAcceptValidInputs(t *testing.T) {
	c := newCatalog(t, tools.Options{})
	ctx := context.Background()
	for _, tool := range c.All() {
		inputs := validInputs(t, tool.Key)
		if len(inputs) < 2 {
			t.Errorf("%s: fewer than 2 valid inputs", tool.Key)
		}
		schema := resolve(t, tool.InputSchema)
		for _, in := range inputs {
			if err := schema.Validate(instance(t, in)); err != nil {
				t.Errorf("%s: schema rejects valid input %.200s: %v", tool.Key, in, err)
			}
			call, err := tool.DecodeJSON(ctx, in)
			if err != nil {
				t.Errorf("%s: adapter rejects valid input %.200s: %v", tool.Key, in, err)
				continue
			}
			if tool.InputLocation != tools.InputQuery {
				continue
			}
			// GET tools: the same input as a query string over HTTP.
			q, err := tools.QueryOf(in)
			if err != nil {
				t.Fatal(err)
			}
			r := httptest.NewRequest(tool.Method, tool.Path+"?"+q.Encode(), nil)
			qc, err := tool.Decode(ctx, r)
			if err != nil {
				t.Errorf("%s: query %s rejected: %v", tool.Key, q.Encode(), err)
				continue
			}
			if got, want := string(qc.Input()), string(call.Input()); got != want {
				t.Errorf("%s: query decodes to %s, JSON to %s", tool.Key, got, want)
			}
			if got := qc.Query().Encode(); got != call.Query().Encode() {
				t.Errorf("%s: Query() %s vs %s", tool.Key, got, call.Query().Encode())
			}
		}
	}
}

// TestSchemaBoundsMatchTheRootLimits pins the published limits to the root
// package's constants.
func TestSchemaBoundsMatchTheRootLimits(t *testing.T) {
	c := newCatalog(t, tools.Options{})
	bound := func(key, prop, keyword string) any {
		tool, _ := c.ByKey(key)
		props := tool.InputSchemaMap()["properties"].(map[string]any)
		p, _ := props[prop].(map[string]any)
		return p[keyword]
	}
	for _, tc := range []struct {
		key, prop, keyword string
		want               float64
	}{
		{"xau-bars", "count", "minimum", svc.XAUBarsMinCount},
		{"xau-bars", "count", "maximum", svc.XAUBarsMaxCount},
		{"xau-bars", "count", "default", svc.XAUBarsDefaultCount},
		{"xau-market-state", "count", "minimum", svc.XAUMarketStateMinCount},
		{"xau-market-state", "count", "maximum", svc.XAUMarketStateMaxCount},
		{"xau-market-state", "count", "default", svc.XAUMarketStateDefaultCount},
		{"json-shape", "maxDepth", "default", svc.JSONShapeDefaultMaxDepth},
		{"json-shape", "maxPaths", "default", svc.JSONShapeDefaultMaxPaths},
		{"ohlcv-state", "bars", "maxItems", svc.OHLCVMaxBars},
	} {
		if got := bound(tc.key, tc.prop, tc.keyword); got != tc.want {
			t.Errorf("%s.%s %s = %v, want %v", tc.key, tc.prop, tc.keyword, got, tc.want)
		}
	}
	if got := bound("xau-bars", "timeframe", "default"); got != string(svc.XAUDefaultTimeframe) {
		t.Errorf("timeframe default %v", got)
	}
}

// Example of the adapter as an MCP or A2A surface uses it.
func ExampleTool_DecodeJSON() {
	c, err := tools.New(tools.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	tool, _ := c.ByKey("risk-levels")
	ctx := context.Background()
	call, err := tool.DecodeJSON(ctx, json.RawMessage(`{"entry":3500,"direction":"long","slPct":0.05,"tpPct":0.04}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	out, err := call.RunJSON(ctx, tools.Env{})
	fmt.Println(string(out), err)

	_, err = tool.DecodeJSON(ctx, json.RawMessage(`{"entry":3500,"direction":"long","slPct":0.05,"tp":0.04}`))
	var e *svc.Error
	if errors.As(err, &e) {
		for _, f := range e.Fields {
			fmt.Println(f.Field, f.Rule, "|", f.Message)
		}
	}
	// Output:
	// {"entry":3500,"direction":"long","stop":3498.25,"target":3501.4,"riskReward":0.8,"stopDistance":1.75,"targetDistance":1.4,"slPct":0.05,"tpPct":0.04} <nil>
	// tp unknown_field | tp: unknown field "tp"; allowed fields: entry, direction, slPct, tpPct
	// tpPct required | tpPct: is required
}

// Example of a GET tool's query string.
func ExampleTool_Decode() {
	c, _ := tools.New(tools.Options{})
	tool, _ := c.ByPath("GET", "/api/xau/bars")
	r := httptest.NewRequest("GET", "/api/xau/bars?timeframe=M15&count=abc&ref=club42", nil)
	_, err := tool.Decode(context.Background(), r)
	fmt.Println(err)
	r = httptest.NewRequest("GET", "/api/xau/bars?"+url.Values{"count": {"50"}, "src": {"mcp"}}.Encode(), nil)
	call, err := tool.Decode(context.Background(), r)
	fmt.Println(string(call.Input()), err)
	// Output:
	// invalid input: count: must be an integer, got "abc"
	// {"count":50} <nil>
}

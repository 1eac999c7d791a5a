package x402

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestRouteRequirements(t *testing.T) {
	r := Route{Price: "0.0034", PayTo: strings.ToLower(testPayTo), Resource: ResourceInfo{URL: "https://svc.test/api/x", Description: "d"}}
	if err := r.Validate(); err != nil {
		t.Fatal(err)
	}
	req, err := r.Requirements()
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(req)
	want := `{"scheme":"exact","network":"eip155:8453","amount":"3400","asset":"0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913","payTo":"0x70997970C51812dc3A010C7d01b50e0d17dc79C8","maxTimeoutSeconds":300,"extra":{"name":"USD Coin","version":"2"}}`
	if string(b) != want {
		t.Fatalf("requirements\n got %s\nwant %s", b, want)
	}
	sep := Route{Price: "$0.005", Network: "base-sepolia", PayTo: testPayTo, MaxTimeoutSeconds: 60}
	req, err = sep.Requirements()
	if err != nil {
		t.Fatal(err)
	}
	if req.Network != NetworkBaseSepolia || req.Amount != "5000" || req.Asset != "0x036CbD53842c5426634e7929541eC2318f3dCF7e" ||
		req.MaxTimeoutSeconds != 60 || req.Extra["name"] != "USDC" || req.Extra["version"] != "2" {
		t.Fatalf("base-sepolia requirements: %+v", req)
	}
	pr, err := r.PaymentRequired()
	if err != nil {
		t.Fatal(err)
	}
	b, _ = json.Marshal(pr)
	wantPR := `{"x402Version":2,"resource":{"url":"https://svc.test/api/x","description":"d"},"accepts":[` + want + `]}`
	if string(b) != wantPR {
		t.Fatalf("payment required\n got %s\nwant %s", b, wantPR)
	}
}

func TestRouteValidateErrors(t *testing.T) {
	ok := Route{Price: "0.01", PayTo: testPayTo}
	for _, c := range []struct {
		field string
		mut   func(*Route)
	}{
		{"Network", func(r *Route) { r.Network = "eip155:1" }},
		{"Network", func(r *Route) { r.Network = "solana" }},
		{"PayTo", func(r *Route) { r.PayTo = "" }},
		{"PayTo", func(r *Route) { r.PayTo = "0x123" }},
		{"PayTo", func(r *Route) { r.PayTo = "70997970C51812dc3A010C7d01b50e0d17dc79C8" }},
		{"PayTo", func(r *Route) { r.PayTo = "0x70997970c51812dc3A010C7d01b50e0d17dc79C8" }}, // bad checksum
		{"PayTo", func(r *Route) { r.PayTo = "0x0000000000000000000000000000000000000000" }},
		{"PayTo", func(r *Route) { r.PayTo = "0x70997970C51812dc3A010C7d01b50e0d17dc79Cg" }},
		{"Price", func(r *Route) { r.Price = "" }},
		{"Price", func(r *Route) { r.Price = "0" }},
		{"Price", func(r *Route) { r.Price = "-0.01" }},
		{"Price", func(r *Route) { r.Price = "0.0000001" }},
		{"Price", func(r *Route) { r.Price = "1e-3" }},
		{"MaxTimeoutSeconds", func(r *Route) { r.MaxTimeoutSeconds = -1 }},
		{"MaxTimeoutSeconds", func(r *Route) { r.MaxTimeoutSeconds = MaxMaxTimeoutSeconds + 1 }},
		{"Bazaar.Method", func(r *Route) { r.Bazaar = &BazaarInfo{Method: "TRACE"} }},
		{"Bazaar.Method", func(r *Route) { r.Bazaar = &BazaarInfo{Method: "get"} }},
		{"Bazaar.InputExample", func(r *Route) { r.Bazaar = &BazaarInfo{Method: "GET", InputExample: []int{1}} }},
	} {
		r := ok
		c.mut(&r)
		err := r.Validate()
		var ce *ConfigError
		if !errors.As(err, &ce) || ce.Field != c.field || ce.Message == "" {
			t.Errorf("%+v: err = %v, want a ConfigError on %s", r, err, c.field)
		}
	}
	if !strings.Contains(Route{Price: "0.0000001", PayTo: testPayTo}.Validate().Error(), "price finer than the asset's smallest unit") {
		t.Error("too-fine price message")
	}
	if err := ok.Validate(); err != nil {
		t.Fatal(err)
	}
	if IsValidAddress("0x70997970c51812dc3A010C7d01b50e0d17dc79C8") || !IsValidAddress(testPayTo) || !IsValidAddress(strings.ToLower(testPayTo)) {
		t.Fatal("IsValidAddress")
	}
}

func TestBazaarExtension(t *testing.T) {
	get := Route{Price: "0.005", PayTo: testPayTo, Bazaar: &BazaarInfo{
		Method:        "GET",
		InputExample:  map[string]any{"symbol": "XAUUSD"},
		InputSchema:   map[string]any{"type": "object", "properties": map[string]any{"symbol": map[string]any{"type": "string"}}, "required": []any{"symbol"}},
		OutputExample: map[string]any{"ok": true},
		OutputSchema:  map[string]any{"type": "object"},
	}}
	pr, err := get.PaymentRequired()
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(pr.Extensions)
	want := `{"bazaar":{"info":{"input":{"method":"GET","queryParams":{"symbol":"XAUUSD"},"type":"http"},"output":{"example":{"ok":true},"type":"json"}},` +
		`"schema":{"$schema":"https://json-schema.org/draft/2020-12/schema","properties":{"input":{"properties":{"method":{"enum":["GET"],"type":"string"},` +
		`"queryParams":{"properties":{"symbol":{"type":"string"}},"required":["symbol"],"type":"object"},"type":{"const":"http","type":"string"}},` +
		`"required":["type","method"],"type":"object"},"output":{"properties":{"example":{"type":"object"},"type":{"type":"string"}},"required":["type"],"type":"object"}},` +
		`"required":["input"],"type":"object"}}}`
	if string(b) != want {
		t.Fatalf("GET bazaar\n got %s\nwant %s", b, want)
	}
	post := Route{Price: "0.005", PayTo: testPayTo, Bazaar: &BazaarInfo{
		Method:       "POST",
		InputExample: map[string]any{"entry": 3500, "side": "long"},
		InputSchema:  map[string]any{"type": "object", "required": []any{"entry"}},
	}}
	pr, err = post.PaymentRequired()
	if err != nil {
		t.Fatal(err)
	}
	ext := pr.Extensions[BazaarExtensionKey].(map[string]any)
	input := ext["info"].(map[string]any)["input"].(map[string]any)
	if input["bodyType"] != "json" || input["method"] != "POST" || input["type"] != "http" || input["body"] == nil {
		t.Fatalf("POST input %v", input)
	}
	if _, has := ext["info"].(map[string]any)["output"]; has {
		t.Fatal("output without example")
	}
	// Both infos validate against their own schema (after a JSON round trip,
	// as a facilitator sees them), and a wrong method does not.
	for _, r := range []Route{get, post} {
		pr, _ := r.PaymentRequired()
		var ext map[string]any
		raw, _ := json.Marshal(pr.Extensions[BazaarExtensionKey])
		if err := json.Unmarshal(raw, &ext); err != nil {
			t.Fatal(err)
		}
		schema := ext["schema"].(map[string]any)
		info := ext["info"].(map[string]any)
		if err := miniValidate(schema, info, "info"); err != nil {
			t.Fatalf("%s: info does not validate: %v", r.Bazaar.Method, err)
		}
		info["input"].(map[string]any)["method"] = "DELETE"
		if miniValidate(schema, info, "info") == nil {
			t.Fatalf("%s: wrong method validates", r.Bazaar.Method)
		}
		delete(info, "input")
		if miniValidate(schema, info, "info") == nil {
			t.Fatalf("%s: missing input validates", r.Bazaar.Method)
		}
	}
	// No bazaar, no extensions.
	pr, _ = Route{Price: "1", PayTo: testPayTo}.PaymentRequired()
	if pr.Extensions != nil {
		t.Fatal("extensions without bazaar")
	}
}

// miniValidate checks v against the JSON Schema keywords the bazaar schemas
// use: type (object, string, number, boolean), const, enum, properties,
// required.
func miniValidate(schema map[string]any, v any, path string) error {
	if typ, ok := schema["type"].(string); ok {
		good := false
		switch typ {
		case "object":
			_, good = v.(map[string]any)
		case "string":
			_, good = v.(string)
		case "number":
			_, good = v.(float64)
		case "boolean":
			_, good = v.(bool)
		default:
			return fmt.Errorf("%s: unsupported type %s", path, typ)
		}
		if !good {
			return fmt.Errorf("%s: not a %s", path, typ)
		}
	}
	if c, ok := schema["const"]; ok && c != v {
		return fmt.Errorf("%s: %v is not the const %v", path, v, c)
	}
	if enum, ok := schema["enum"].([]any); ok {
		found := false
		for _, e := range enum {
			found = found || e == v
		}
		if !found {
			return fmt.Errorf("%s: %v not in %v", path, v, enum)
		}
	}
	obj, _ := v.(map[string]any)
	if req, ok := schema["required"].([]any); ok {
		for _, k := range req {
			if _, has := obj[k.(string)]; !has {
				return fmt.Errorf("%s: %s is required", path, k)
			}
		}
	}
	if props, ok := schema["properties"].(map[string]any); ok {
		for k, sub := range props {
			if val, has := obj[k]; has {
				if err := miniValidate(sub.(map[string]any), val, path+"."+k); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

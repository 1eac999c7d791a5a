package discovery

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"
	"github.com/seed1284c1d2/svc/discovery/documents"
)

// discOpenAPIValidator parses doc with libopenapi and returns a validator.
func discOpenAPIValidator(t *testing.T, doc []byte) validator.Validator {
	t.Helper()
	d, err := libopenapi.NewDocument(doc)
	if err != nil {
		t.Fatalf("libopenapi.NewDocument: %v", err)
	}
	v, errs := validator.NewValidator(d)
	if len(errs) > 0 {
		t.Fatalf("validator.NewValidator: %v", errs)
	}
	return v
}

func TestOpenAPIDocumentIsValid(t *testing.T) {
	for _, dev := range []bool{true, false} {
		s := discNewService(t, discTestBase, func(c *Config) {
			c.DevMode = dev
			if !dev {
				c.Facilitator = "https://facilitator.example.com"
			}
		})
		doc, ok := s.Document(documents.PathOpenAPI)
		if !ok {
			t.Fatal("no openapi document")
		}
		v := discOpenAPIValidator(t, doc)
		valid, verrs := v.ValidateDocument()
		for _, e := range verrs {
			t.Errorf("dev=%v: %s: %s (line %d)", dev, e.Message, e.Reason, e.SpecLine)
			for _, se := range e.SchemaValidationErrors {
				t.Errorf("  %s at %s (%s)", se.Reason, se.FieldPath, se.KeywordLocation)
			}
		}
		if !valid {
			t.Fatalf("dev=%v: the document is not valid OpenAPI 3.1", dev)
		}
	}
}

func TestOpenAPIValidatorCatchesErrors(t *testing.T) {
	// Negative control: the validator really validates (an operation
	// without responses, a parameter without "in").
	s := discNewService(t, discTestBase, nil)
	doc, _ := s.Document(documents.PathOpenAPI)
	var m map[string]any
	if err := json.Unmarshal(doc, &m); err != nil {
		t.Fatal(err)
	}
	paths := m["paths"].(map[string]any)
	delete(paths["/api/find"].(map[string]any)["get"].(map[string]any), "responses")
	params := paths["/api/xau/bars"].(map[string]any)["get"].(map[string]any)["parameters"].([]any)
	delete(params[1].(map[string]any), "in")
	broken, _ := json.Marshal(m)
	valid, verrs := discOpenAPIValidator(t, broken).ValidateDocument()
	if valid || len(verrs) == 0 {
		t.Fatal("a broken document passed validation")
	}
}

// discOpenAPI decodes the document of s.
func discOpenAPI(t *testing.T, s *Service) map[string]any {
	t.Helper()
	doc, _ := s.Document(documents.PathOpenAPI)
	var m map[string]any
	if err := json.Unmarshal(doc, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

func TestOpenAPIShape(t *testing.T) {
	s := discNewService(t, discTestBase, func(c *Config) { c.DevMode = false; c.Facilitator = "https://f.example.com" })
	m := discOpenAPI(t, s)
	if m["openapi"] != "3.1.0" {
		t.Errorf("openapi %v", m["openapi"])
	}
	info := m["info"].(map[string]any)
	if info["version"] != "2.0.0" || info["title"] != "svc" || info["x-body-limit-bytes"] != float64(2<<20) {
		t.Errorf("info %v", info)
	}
	servers := m["servers"].([]any)
	if len(servers) != 1 || servers[0].(map[string]any)["url"] != discTestBase {
		t.Errorf("servers %v", servers)
	}
	paths := m["paths"].(map[string]any)
	for _, tl := range s.tools {
		op, ok := paths[tl.Path].(map[string]any)[strings.ToLower(tl.Method)].(map[string]any)
		if !ok {
			t.Errorf("%s %s missing", tl.Method, tl.Path)
			continue
		}
		if op["operationId"] != tl.OperationID {
			t.Errorf("%s: operationId %v", tl.Key, op["operationId"])
		}
		pi := op["x-payment-info"].(map[string]any)
		want := map[string]any{"price": discSpecPrices[tl.OperationID], "currency": "USDC", "network": "eip155:8453", "protocol": "x402",
			"asset": "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913", "payTo": discTestPayTo, "x402Version": float64(2), "scheme": "exact",
			"facilitator": "https://f.example.com"}
		for k, v := range want {
			if pi[k] != v {
				t.Errorf("%s x-payment-info.%s = %v, want %v", tl.Key, k, pi[k], v)
			}
		}
		resp := op["responses"].(map[string]any)
		for _, code := range []string{"200", "400", "402", "413", "503"} {
			if _, ok := resp[code]; !ok {
				t.Errorf("%s: no %s response", tl.Key, code)
			}
		}
		ok200 := resp["200"].(map[string]any)["content"].(map[string]any)["application/json"].(map[string]any)
		if ok200["schema"].(map[string]any)["$ref"] != "#/components/schemas/"+tl.OperationID+"_output" || ok200["example"] == nil {
			t.Errorf("%s: 200 %v", tl.Key, ok200)
		}
		var names []string
		for _, p := range op["parameters"].([]any) {
			p := p.(map[string]any)
			if p["in"] == "query" {
				names = append(names, p["name"].(string))
			}
		}
		if tl.Method == "GET" {
			if !slices.Equal(names, tl.Fields) || op["requestBody"] != nil {
				t.Errorf("%s: query params %v, want %v", tl.Key, names, tl.Fields)
			}
		} else {
			rb := op["requestBody"].(map[string]any)["content"].(map[string]any)["application/json"].(map[string]any)
			if rb["schema"].(map[string]any)["$ref"] != "#/components/schemas/"+tl.OperationID+"_input" || rb["example"] == nil || len(names) != 0 {
				t.Errorf("%s: request body %v", tl.Key, rb)
			}
		}
	}
	schemas := m["components"].(map[string]any)["schemas"].(map[string]any)
	problem := schemas["Problem"].(map[string]any)["properties"].(map[string]any)
	if problem["errors"].(map[string]any)["items"].(map[string]any)["$ref"] != "#/components/schemas/FieldError" {
		t.Errorf("problem errors: %v", problem["errors"])
	}
	for _, r := range []string{"InvalidInput", "PaymentRequired", "TooLarge", "RateLimited", "Unavailable"} {
		if _, ok := m["components"].(map[string]any)["responses"].(map[string]any)[r]; !ok {
			t.Errorf("component response %s missing", r)
		}
	}
	find := paths["/api/find"].(map[string]any)["get"].(map[string]any)
	if _, ok := find["responses"].(map[string]any)["429"]; !ok || find["x-payment-info"] != nil {
		t.Errorf("free /api/find: %v", find["responses"])
	}
}

func TestOpenAPIListsEveryRoute(t *testing.T) {
	// The document lists exactly the paid routes, this package's Routes and
	// the declared external routes.
	ext := discExternalRoutes()[:3]
	s := discNewService(t, discTestBase, func(c *Config) { c.FreeRoutes = ext })
	var want []string
	for _, tl := range s.tools {
		want = append(want, tl.Method+" "+tl.Path)
	}
	for _, r := range s.Routes() {
		want = append(want, strings.Replace(r.Pattern, "/{$}", "/", 1)) // the root alone is path "/"
	}
	for _, d := range ext {
		want = append(want, d.Method+" "+d.Path)
	}
	var got []string
	for path, item := range discOpenAPI(t, s)["paths"].(map[string]any) {
		for method := range item.(map[string]any) {
			got = append(got, strings.ToUpper(method)+" "+path)
		}
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("operations:\n got %v\nwant %v", got, want)
	}
}

func TestResponsesMatchOpenAPI(t *testing.T) {
	// Live answers of the handlers validate against the document's schemas.
	s, base := discServe(t, nil, nil)
	doc, _ := s.Document(documents.PathOpenAPI)
	v := discOpenAPIValidator(t, doc)
	reqs := []struct{ method, path, body string }{
		{"GET", "/api/find?q=gold+price&limit=3", ""},
		{"GET", "/api/find?q=zzzz+qqqq", ""},
		{"GET", "/api/find", ""},
		{"POST", "/api/route", `{"query":"risk levels","input":{"entry":3500,"direction":"long","slPct":0.05,"tpPct":0.04}}`},
		{"POST", "/api/route", `{"query":"gold bars","input":{"count":5}}`},
		{"POST", "/api/route", `{"query":"zzzz qqqq"}`},
		{"GET", "/api/catalog", ""},
		{"GET", "/api/catalog?category=data&limit=1&offset=1", ""},
		{"GET", "/api/try", ""},
		{"GET", "/api/try?q=jwt", ""},
		{"GET", "/api/try?q=qqqq", ""},
		{"GET", "/api/amplifier/stats", ""},
		{"GET", "/api/magnet/stats", ""},
		{"GET", "/.well-known/x402", ""},
		{"GET", "/.well-known/agent-card.json", ""},
		{"GET", "/.well-known/svc-router.json", ""},
		{"GET", "/api/magnet", ""},
	}
	for _, rq := range reqs {
		resp, body := discDo(t, rq.method, base+rq.path, rq.body, map[string]string{"Content-Type": "application/json"})
		req, _ := http.NewRequest(rq.method, base+rq.path, strings.NewReader(rq.body))
		if rq.body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		resp.Body = io.NopCloser(bytes.NewReader(body))
		ok, errs := v.ValidateHttpResponse(req, resp)
		if resp.StatusCode == http.StatusOK {
			// A request answered 200 is also valid against the document.
			req2, _ := http.NewRequest(rq.method, base+rq.path, strings.NewReader(rq.body))
			req2.Header = req.Header
			okReq, reqErrs := v.ValidateHttpRequest(req2)
			ok, errs = ok && okReq, append(errs, reqErrs...)
		}
		if !ok {
			for _, e := range errs {
				t.Errorf("%s %s (%d): %s: %s", rq.method, rq.path, resp.StatusCode, e.Message, e.Reason)
				for _, se := range e.SchemaValidationErrors {
					t.Errorf("   %s at %s", se.Reason, se.FieldPath)
				}
			}
		}
	}
}

func TestResponseValidationNegativeControl(t *testing.T) {
	s := discNewService(t, discTestBase, nil)
	doc, _ := s.Document(documents.PathOpenAPI)
	v := discOpenAPIValidator(t, doc)
	req, _ := http.NewRequest("GET", discTestBase+"/api/find?q=gold", nil)
	resp := &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"application/json"}},
		Body: io.NopCloser(strings.NewReader(`{"ok":"yes","query":"gold","matches":[{"key":1}]}`)), Request: req}
	if ok, _ := v.ValidateHttpResponse(req, resp); ok {
		t.Fatal("a body breaking the FindResult schema passed")
	}
}

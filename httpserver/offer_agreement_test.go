package httpserver_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"github.com/seed1284c1d2/svc/discovery"
	"github.com/seed1284c1d2/svc/httpserver"
	"github.com/seed1284c1d2/svc/tools"
	"github.com/seed1284c1d2/svc/x402"
)

// TestDiscoveryStatesTheOfferOfThe402 runs the server with the discovery
// surfaces mounted, as svc serve does, and checks for every tool that the
// 402 a call without payment receives and what the discovery surfaces
// publish agree: the x402 manifest carries the 402's resource, accepts and
// extensions as they are; the OpenAPI x-payment-info, the route plan and
// the catalog's transports state its network, asset, payTo, amount and
// scheme.
func TestDiscoveryStatesTheOfferOfThe402(t *testing.T) {
	f := newFixture(t, fixtureOptions{routesFor: func(t *testing.T, base string, cat *tools.Catalog) []httpserver.Route {
		disc, err := discovery.New(discovery.Config{Catalog: cat, BaseURL: base, PayTo: testPayTo, DevMode: true})
		if err != nil {
			t.Fatal(err)
		}
		var routes []httpserver.Route
		for _, r := range disc.Routes() {
			routes = append(routes, httpserver.Route(r))
		}
		return routes
	}})

	var manifest struct {
		Resources []struct {
			Key        string          `json:"key"`
			Resource   json.RawMessage `json:"resource"`
			Accepts    json.RawMessage `json:"accepts"`
			Extensions json.RawMessage `json:"extensions"`
		} `json:"resources"`
	}
	getJSON(t, f.url+"/.well-known/x402", &manifest)
	var oas struct {
		Paths map[string]map[string]struct {
			PaymentInfo map[string]any `json:"x-payment-info"`
		} `json:"paths"`
	}
	getJSON(t, f.url+"/openapi.json", &oas)
	var catalog struct {
		Items []struct {
			Key        string `json:"key"`
			Transports struct {
				Terms map[string]any `json:"terms"`
			} `json:"transports"`
		} `json:"items"`
	}
	getJSON(t, f.url+"/api/catalog?limit=100", &catalog)

	if len(manifest.Resources) != f.cat.Len() || len(catalog.Items) != f.cat.Len() {
		t.Fatalf("manifest has %d resources, catalog %d items, for %d tools", len(manifest.Resources), len(catalog.Items), f.cat.Len())
	}
	for i, tool := range f.cat.All() {
		resp, body := do(t, f.request(t, tool, string(tool.ExampleInput)))
		if resp.StatusCode != http.StatusPaymentRequired {
			t.Fatalf("%s: status %d %s", tool.Key, resp.StatusCode, body)
		}
		offer, err := x402.DecodePaymentRequired(resp.Header.Get(x402.HeaderPaymentRequired))
		if err != nil {
			t.Fatalf("%s: PAYMENT-REQUIRED: %v", tool.Key, err)
		}
		req := offer.Accepts[0]

		m := manifest.Resources[i]
		if m.Key != tool.Key {
			t.Fatalf("manifest resource %d is %s, want %s", i, m.Key, tool.Key)
		}
		offerJSON := func(v any) any { return jsonValue(t, mustMarshal(t, v)) }
		for name, pair := range map[string][2]any{
			"resource":   {offerJSON(offer.Resource), jsonValue(t, m.Resource)},
			"accepts":    {offerJSON(offer.Accepts), jsonValue(t, m.Accepts)},
			"extensions": {offerJSON(offer.Extensions), jsonValue(t, m.Extensions)},
		} {
			if !reflect.DeepEqual(pair[0], pair[1]) {
				t.Errorf("%s: the x402 manifest's %s differs from the 402's:\n402:      %s\nmanifest: %s", tool.Key, name, mustMarshal(t, pair[0]), mustMarshal(t, pair[1]))
			}
		}

		info := oas.Paths[tool.Path][strings.ToLower(tool.Method)].PaymentInfo
		if info["network"] != req.Network || info["asset"] != req.Asset || info["payTo"] != req.PayTo || info["amount"] != req.Amount || info["scheme"] != req.Scheme {
			t.Errorf("%s: x-payment-info %v, the 402 offers %+v", tool.Key, info, req)
		}

		var plan discovery.RoutePlan
		postJSON(t, f.url+"/api/route", `{"query":"`+tool.Key+`"}`, &plan)
		if plan.Tool != tool.Key || plan.Price == nil || plan.Price.Atomic != req.Amount || plan.Asset != req.Asset ||
			plan.PayTo != req.PayTo || plan.Network != req.Network || plan.Scheme != req.Scheme || plan.X402Version != offer.X402Version {
			t.Errorf("%s: route plan %s %v %s %s %s %s, the 402 offers %+v", tool.Key, plan.Tool, plan.Price, plan.Asset, plan.PayTo, plan.Network, plan.Scheme, req)
		}

		terms := catalog.Items[i].Transports.Terms
		if catalog.Items[i].Key != tool.Key || terms["network"] != req.Network || terms["asset"] != req.Asset || terms["payTo"] != req.PayTo ||
			terms["amount"] != req.Amount || terms["scheme"] != req.Scheme || terms["maxTimeoutSeconds"] != float64(req.MaxTimeoutSeconds) {
			t.Errorf("%s: catalog transport terms %v, the 402 offers %+v", tool.Key, terms, req)
		}
	}
}

func getJSON(t *testing.T, url string, v any) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, body := do(t, req)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %s", url, resp.StatusCode, body)
	}
	if err := json.Unmarshal(body, v); err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
}

func postJSON(t *testing.T, url, in string, v any) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, body := do(t, req)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("POST %s: %d %s", url, resp.StatusCode, body)
	}
	if err := json.Unmarshal(body, v); err != nil {
		t.Fatalf("POST %s: %v", url, err)
	}
}

func mustMarshal(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// jsonValue decodes JSON into plain values (numbers as json.Number), for
// comparing documents regardless of member order; nothing is nil.
func jsonValue(t *testing.T, b []byte) any {
	t.Helper()
	if len(b) == 0 {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("decode %s: %v", b, err)
	}
	return v
}

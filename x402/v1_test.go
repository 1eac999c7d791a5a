package x402_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"

	"github.com/seed1284c1d2/svc/x402"
)

// v1PayTo receives the payments of the test routes.
const v1PayTo = "0x70997970C51812dc3A010C7d01b50e0d17dc79C8"

// TestRequirementsV1RoundTrip checks the v2 ↔ v1 requirement conversion.
func TestRequirementsV1RoundTrip(t *testing.T) {
	req, err := x402.Route{Price: "0.0025", PayTo: v1PayTo}.Requirements()
	if err != nil {
		t.Fatal(err)
	}
	res := x402.ResourceInfo{URL: "http://127.0.0.1:1/tool?x=1", Description: "d", MimeType: "application/json"}
	v1, err := x402.RequirementsToV1(req, res, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := x402.PaymentRequirementsV1{
		Scheme: "exact", Network: "base", MaxAmountRequired: "2500", Resource: res.URL, Description: "d",
		MimeType: "application/json", PayTo: v1PayTo, MaxTimeoutSeconds: req.MaxTimeoutSeconds,
		Asset: "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913", Extra: map[string]any{"name": "USD Coin", "version": "2"},
	}
	if !reflect.DeepEqual(v1, want) {
		t.Fatalf("v1\n got %+v\nwant %+v", v1, want)
	}
	back, backRes, err := x402.RequirementsFromV1(v1)
	if err != nil || !reflect.DeepEqual(back, req) || backRes != res {
		t.Fatalf("round trip: %+v %+v %v", back, backRes, err)
	}
	// v1 clients require description and mimeType even when empty.
	v1, _ = x402.RequirementsToV1(req, x402.ResourceInfo{URL: "http://h/x"}, nil)
	b, _ := json.Marshal(v1)
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	for _, k := range []string{"scheme", "network", "maxAmountRequired", "resource", "description", "mimeType", "payTo", "maxTimeoutSeconds", "asset", "extra"} {
		if _, ok := m[k]; !ok {
			t.Errorf("v1 JSON lacks %q: %s", k, b)
		}
	}
	if _, ok := m["outputSchema"]; ok {
		t.Errorf("empty outputSchema encoded: %s", b)
	}
	bad := req
	bad.Network = "eip155:1"
	if _, err := x402.RequirementsToV1(bad, res, nil); !errors.Is(err, x402.ErrNoV1Network) {
		t.Fatalf("unknown network: %v", err)
	}
	if _, _, err := x402.RequirementsFromV1(x402.PaymentRequirementsV1{Network: "solana"}); !errors.Is(err, x402.ErrUnknownNetwork) {
		t.Fatalf("unknown v1 network: %v", err)
	}
}

// TestPaymentRequiredToV1 checks the v1 402 body: version 1, the error,
// the v1 entries (unknown networks left out) and the bazaar description as
// outputSchema.
func TestPaymentRequiredToV1(t *testing.T) {
	pr, err := x402.Route{
		Price:    "0.0025",
		PayTo:    v1PayTo,
		Resource: x402.ResourceInfo{Description: "test tool", MimeType: "application/json"},
		Bazaar:   &x402.BazaarInfo{Method: "GET", InputExample: map[string]any{"x": "1"}, OutputExample: map[string]any{"ok": true}},
	}.PaymentRequired()
	if err != nil {
		t.Fatal(err)
	}
	pr.Resource.URL = "http://127.0.0.1:1/tool"
	pr.Error = "Payment required"
	odd := pr.Accepts[0]
	odd.Network = "eip155:1"
	pr.Accepts = append(pr.Accepts, odd)
	v1 := x402.PaymentRequiredToV1(pr)
	if v1.X402Version != 1 || v1.Error != "Payment required" || len(v1.Accepts) != 1 {
		t.Fatalf("%+v", v1)
	}
	in, ok := v1.Accepts[0].OutputSchema["input"].(map[string]any)
	if !ok || in["type"] != "http" || in["method"] != "GET" || v1.Accepts[0].OutputSchema["output"] == nil {
		t.Fatalf("outputSchema %+v", v1.Accepts[0].OutputSchema)
	}
	empty := x402.PaymentRequiredToV1(x402.PaymentRequired{})
	if b, _ := json.Marshal(empty); string(b) != `{"x402Version":1,"accepts":[]}` {
		t.Fatalf("empty: %s", b)
	}
}

// TestPayloadFromV1 checks that a v1 payment becomes the equivalent v2
// payment only for the requirement it names.
func TestPayloadFromV1(t *testing.T) {
	req, _ := x402.Route{Price: "0.0025", PayTo: v1PayTo}.Requirements()
	raw := json.RawMessage(`{"signature":"0x","authorization":{}}`)
	v1 := x402.PaymentPayload{X402Version: 1, Accepted: x402.PaymentRequirements{Scheme: "exact", Network: "base"}, Payload: raw}
	got, ok := x402.PayloadFromV1(v1, req)
	if !ok || got.X402Version != 2 || !reflect.DeepEqual(got.Accepted, req) || string(got.Payload) != string(raw) {
		t.Fatalf("%+v %v", got, ok)
	}
	for name, p := range map[string]x402.PaymentPayload{
		"v2":           {X402Version: 2, Accepted: v1.Accepted, Payload: raw},
		"scheme":       {X402Version: 1, Accepted: x402.PaymentRequirements{Scheme: "upto", Network: "base"}, Payload: raw},
		"network":      {X402Version: 1, Accepted: x402.PaymentRequirements{Scheme: "exact", Network: "base-sepolia"}, Payload: raw},
		"unknown":      {X402Version: 1, Accepted: x402.PaymentRequirements{Scheme: "exact", Network: "polygon"}, Payload: raw},
		"caip2 passes": {X402Version: 1, Accepted: x402.PaymentRequirements{Scheme: "exact", Network: "eip155:8453"}, Payload: raw},
	} {
		_, ok := x402.PayloadFromV1(p, req)
		if ok != (name == "caip2 passes") {
			t.Errorf("%s: ok = %v", name, ok)
		}
	}
}

// TestSettleResponseToV1 checks the v1 network naming of X-PAYMENT-RESPONSE.
func TestSettleResponseToV1(t *testing.T) {
	s := x402.SettleResponse{Success: true, Transaction: "0x1", Network: "eip155:84532"}
	if got := x402.SettleResponseToV1(s); got.Network != "base-sepolia" || got.Transaction != "0x1" {
		t.Fatalf("%+v", got)
	}
	if got := x402.SettleResponseToV1(x402.SettleResponse{Network: "eip155:1"}); got.Network != "eip155:1" {
		t.Fatalf("%+v", got)
	}
}

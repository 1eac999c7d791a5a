package x402

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// checkFastEquivalence fails when a fast decoder accepts raw but disagrees
// with encoding/json.
func checkFastEquivalence(t *testing.T, raw []byte) {
	t.Helper()
	if w, ok := fastWirePaymentPayload(raw); ok {
		var want wirePaymentPayload
		if err := json.Unmarshal(raw, &want); err != nil {
			t.Fatalf("fast path accepted %q, encoding/json refused it: %v", raw, err)
		}
		if !reflect.DeepEqual(normWire(w), normWire(want)) {
			t.Fatalf("fast path differs on %q:\n fast %+v\n json %+v", raw, w, want)
		}
	}
}

// normWire replaces the raw payload by its compacted form (the fast path
// keeps the bytes of the value as encoding/json does, so they are equal;
// compacting only guards against aliasing surprises) and dereferences
// pointers for comparison.
func normWire(w wirePaymentPayload) any {
	type flat struct {
		V        int
		HasV     bool
		Resource *ResourceInfo
		Accepted *PaymentRequirements
		Payload  string
		Ext      map[string]any
		Scheme   string
		Network  string
	}
	f := flat{Resource: w.Resource, Accepted: w.Accepted, Payload: string(w.Payload), Ext: w.Extensions, Scheme: w.Scheme, Network: w.Network}
	if w.X402Version != nil {
		f.V, f.HasV = *w.X402Version, true
	}
	return f
}

func TestFastJSONMatchesEncodingJSON(t *testing.T) {
	req := testRequirements(t, NetworkBase)
	payload, p := testPayment(t, req)
	full, _ := json.Marshal(payload)
	inner, _ := json.Marshal(p)
	if _, ok := fastWirePaymentPayload(full); !ok {
		t.Fatal("fast path refused a canonical payload")
	}
	for _, s := range []string{
		string(full), string(inner),
		` { "x402Version" : 2 , "accepted" : { "scheme" : "exact" , "extra" : { "name" : "USD Coin" , "n": 1.5e3 } } , "payload" : { } } `,
		`{"x402Version":2,"x402version":3}`, // case-insensitive match: fallback
		`{"X402Version":2}`,
		`{"x402Version":2,"x402Version":1}`, // duplicate
		`{"x402Version":2.0}`,
		`{"x402Version":1e0}`,
		`{"x402Version":-0}`,
		`{"x402Version":0123}`,
		`{"x402Version":99999999999}`,
		`{"payload":null}`,
		`{"payload":[1,2,{"a":[true,false,null]}]}`,
		`{"accepted":{"extra":null}}`,
		`{"accepted":{"extra":{"a":{"b":[1]}}}}`,
		`{"accepted":{"maxTimeoutSeconds":"60"}}`,
		`{"resource":{"url":"a\u0041b"}}`,
		`{"resource":{"url":"é"}}`,
		`{"resource":{"url":"x","tags":["a"]}}`,
		`{"unknown":"\ud800","scheme":"exact"}`,
		`{"unknown":"\x"}`,
		`{"unknown":-01}`,
		`{"unknown":1.}`,
		`{"unknown":tru}`,
		`{"extensions":"x"}`,
		`{"extensions":{"bazaar":{"info":{}}}}`,
		`{"signature":"0x1","authorization":{"from":"a","to":"b","value":"1","validAfter":"0","validBefore":"9","nonce":"n","extra":1}}`,
		`{"signature":"0x1","authorization":null}`,
		`{"signature":"0x1","authorization":{"From":"a"}}`,
		`{"signature":"0x1"} x`,
		`{"a":` + strings.Repeat("[", 100) + strings.Repeat("]", 100) + `}`,
	} {
		checkFastEquivalence(t, []byte(s))
	}
}

// FuzzFastJSON checks that whatever the fast decoders accept, encoding/json
// decodes to the same values.
func FuzzFastJSON(f *testing.F) {
	req := testRequirements(f, NetworkBase)
	payload, p := testPayment(f, req)
	full, _ := json.Marshal(payload)
	inner, _ := json.Marshal(p)
	f.Add(full)
	f.Add(inner)
	f.Add([]byte(`{"x402Version":1,"scheme":"exact","network":"base","payload":{"a":[1,-2.5e3,"\u00e9"]}}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		checkFastEquivalence(t, raw)
	})
}

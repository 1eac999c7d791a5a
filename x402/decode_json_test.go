package x402

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// checkAgainstEncodingJSON fails when the payload decoder and
// encoding/json, the reference, disagree on raw: both accept it with the
// same values, or both refuse it.
func checkAgainstEncodingJSON(t *testing.T, raw []byte) {
	t.Helper()
	var want wirePaymentPayload
	werr := json.Unmarshal(raw, &want)
	got, gerr := unmarshalWirePayload(raw)
	switch {
	case (gerr == nil) != (werr == nil):
		t.Fatalf("%q: the decoder says %v, encoding/json %v", raw, gerr, werr)
	case gerr == nil && !reflect.DeepEqual(normWire(got), normWire(want)):
		t.Fatalf("%q: decoded\n %+v\nencoding/json\n %+v", raw, normWire(got), normWire(want))
	}
}

// normWire flattens a decoded payload for comparison: the raw payload as
// a string, the version dereferenced.
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

func TestPayloadJSONMatchesEncodingJSON(t *testing.T) {
	req := testRequirements(t, NetworkBase)
	payload, p := testPayment(t, req)
	full, _ := json.Marshal(payload)
	inner, _ := json.Marshal(p)
	if _, err := unmarshalWirePayload(full); err != nil {
		t.Fatalf("a canonical payload is refused: %v", err)
	}
	for _, s := range []string{
		string(full), string(inner),
		` { "x402Version" : 2 , "accepted" : { "scheme" : "exact" , "extra" : { "name" : "USD Coin" , "n": 1.5e3 } } , "payload" : { } } `,
		`{"x402Version":2,"x402version":3}`, // case-insensitive match
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
		`{"accepted":{"scheme":"a"},"accepted":{"network":"b"}}`, // merged
		`{"extensions":{"a":1},"extensions":{"b":2}}`,
		`{"scheme":"exact","scheme":null}`,
		"{\"scheme\":\"\xff\xfe\",\"network\":\"\xed\xa0\x80\"}",
		`{"x402Version":"2"}`,
		`{"resource":{"url":1}}`,
	} {
		checkAgainstEncodingJSON(t, []byte(s))
	}
}

// FuzzPayloadJSON checks the payload decoder against encoding/json on
// arbitrary input.
func FuzzPayloadJSON(f *testing.F) {
	req := testRequirements(f, NetworkBase)
	payload, p := testPayment(f, req)
	full, _ := json.Marshal(payload)
	inner, _ := json.Marshal(p)
	f.Add(full)
	f.Add(inner)
	f.Add([]byte(`{"x402Version":1,"scheme":"exact","network":"base","payload":{"a":[1,-2.5e3,"\u00e9"]}}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		checkAgainstEncodingJSON(t, raw)
	})
}

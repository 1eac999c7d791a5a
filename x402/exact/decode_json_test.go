package exact

import (
	"encoding/json"
	"testing"

	"github.com/seed1284c1d2/svc/x402"
	"github.com/seed1284c1d2/svc/x402/internal/wire"
)

// checkAgainstEncodingJSON fails when the payload decoder and
// encoding/json, the reference, disagree on raw: both accept it with the
// same values, or both refuse it with the same summary.
func checkAgainstEncodingJSON(t *testing.T, raw []byte) {
	t.Helper()
	var want struct {
		Signature     string         `json:"signature"`
		Authorization *Authorization `json:"authorization"`
	}
	werr := json.Unmarshal(raw, &want)
	got, gerr := parseExactEVMPayload(raw)
	switch {
	case !wire.IsJSONObject(raw):
		if gerr == nil {
			t.Fatalf("%q: not an object, accepted", raw)
		}
	case werr != nil:
		if gerr == nil {
			t.Fatalf("%q: accepted, encoding/json refused it: %v", raw, werr)
		}
		if w := "payload is not an exact EVM payload: " + wire.JSONErrorSummary(werr); gerr.Message != w {
			t.Fatalf("%q: refused as %q, want %q", raw, gerr.Message, w)
		}
	case want.Authorization == nil:
		if gerr == nil || gerr.Reason != ReasonInvalidPayload {
			t.Fatalf("%q: no authorization, got %+v %v", raw, got, gerr)
		}
	case gerr != nil:
		t.Fatalf("%q: refused (%v), encoding/json accepted it", raw, gerr)
	case got.Signature != want.Signature || got.Authorization != *want.Authorization:
		t.Fatalf("%q: decoded %+v, encoding/json %+v", raw, got, want)
	}
}

func TestPayloadJSONMatchesEncodingJSON(t *testing.T) {
	_, p := testPayment(t, vecKey(t), testRequirements(t, x402.NetworkBase))
	inner, _ := json.Marshal(p)
	if _, err := parseExactEVMPayload(inner); err != nil {
		t.Fatalf("a canonical exact payload is refused: %v", err)
	}
	for _, s := range []string{
		string(inner),
		`{"signature":"0x1","authorization":{"from":"a","to":"b","value":"1","validAfter":"0","validBefore":"9","nonce":"n","extra":1}}`,
		`{"signature":"0x1","authorization":null}`,
		`{"signature":"0x1","authorization":{"From":"a"}}`,
		`{"signature":"0x1","authorization":{"from":1}}`,
		`{"signature":["0x1"],"authorization":{}}`,
		`{"signature":"0x1"} x`,
		`{"signature":"0x1","signature":"0x2"}`,
		`{"SIGNATURE":"0x1","authorization":{"nonce":"\u00e9\ud800"},"authorization":{"to":"b"}}`,
		"{\"signature\":\"\xff\",\"authorization\":{}}",
	} {
		checkAgainstEncodingJSON(t, []byte(s))
	}
}

// FuzzPayloadJSON checks the payload decoder against encoding/json on
// arbitrary input.
func FuzzPayloadJSON(f *testing.F) {
	_, p := testPayment(f, vecKey(f), testRequirements(f, x402.NetworkBase))
	inner, _ := json.Marshal(p)
	f.Add(inner)
	f.Add([]byte(`{"signature":"0x1","authorization":{"from":1}}`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		checkAgainstEncodingJSON(t, raw)
	})
}

package exact

import (
	"encoding/json"
	"testing"

	"github.com/seed1284c1d2/svc/x402"
)

// checkFastEquivalence fails when the fast decoder accepts raw but
// disagrees with encoding/json.
func checkFastEquivalence(t *testing.T, raw []byte) {
	t.Helper()
	if e, hasAuth, ok := fastExactEVMPayload(raw); ok {
		var want struct {
			Signature     string         `json:"signature"`
			Authorization *Authorization `json:"authorization"`
		}
		if err := json.Unmarshal(raw, &want); err != nil {
			t.Fatalf("fast exact path accepted %q, encoding/json refused it: %v", raw, err)
		}
		if hasAuth != (want.Authorization != nil) || e.Signature != want.Signature ||
			(hasAuth && e.Authorization != *want.Authorization) {
			t.Fatalf("fast exact path differs on %q: %+v vs %+v", raw, e, want)
		}
	}
}

func TestFastJSONMatchesEncodingJSON(t *testing.T) {
	_, p := testPayment(t, vecKey(t), testRequirements(t, x402.NetworkBase))
	inner, _ := json.Marshal(p)
	if _, _, ok := fastExactEVMPayload(inner); !ok {
		t.Fatal("fast path refused a canonical exact payload")
	}
	for _, s := range []string{
		string(inner),
		`{"signature":"0x1","authorization":{"from":"a","to":"b","value":"1","validAfter":"0","validBefore":"9","nonce":"n","extra":1}}`,
		`{"signature":"0x1","authorization":null}`,
		`{"signature":"0x1","authorization":{"From":"a"}}`,
		`{"signature":"0x1"} x`,
		`{"signature":"0x1","signature":"0x2"}`,
	} {
		checkFastEquivalence(t, []byte(s))
	}
}

// FuzzFastJSON checks that whatever the fast decoder accepts, encoding/json
// decodes to the same values.
func FuzzFastJSON(f *testing.F) {
	_, p := testPayment(f, vecKey(f), testRequirements(f, x402.NetworkBase))
	inner, _ := json.Marshal(p)
	f.Add(inner)
	f.Fuzz(func(t *testing.T, raw []byte) {
		checkFastEquivalence(t, raw)
	})
}

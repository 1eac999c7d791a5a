package x402

import (
	"encoding/json"
	"testing"
)

// testPayTo is the receiving wallet of the test routes (vector C's "to").
const testPayTo = "0x70997970C51812dc3A010C7d01b50e0d17dc79C8"

// testRequirements returns the requirements of a 0.0034 USD route on network.
func testRequirements(t testing.TB, network string) PaymentRequirements {
	t.Helper()
	req, err := Route{Price: "0.0034", Network: network, PayTo: testPayTo}.Requirements()
	if err != nil {
		t.Fatal(err)
	}
	return req
}

// testExactPayload is an exact EVM payload in canonical JSON (vector C1 of
// package exact: signed, though the tests here only decode it).
const testExactPayload = `{"signature":"0x96970b86cd78787cd45dcd7be869ca393975f4ea420e3890d81123417db87de86b19b466566a126b607ab74e5e88377e603993caf7b416d12cbc499ffdb92e631c",` +
	`"authorization":{"from":"0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266","to":"0x70997970C51812dc3A010C7d01b50e0d17dc79C8","value":"2500",` +
	`"validAfter":"0","validBefore":"1900000000","nonce":"0x0101010101010101010101010101010101010101010101010101010101010101"}}`

// testPayment returns a v2 payload for req carrying testExactPayload, and
// that exact EVM part.
func testPayment(t testing.TB, req PaymentRequirements) (PaymentPayload, json.RawMessage) {
	t.Helper()
	raw := json.RawMessage(testExactPayload)
	return PaymentPayload{X402Version: 2, Resource: &ResourceInfo{URL: "http://127.0.0.1/api/tool"}, Accepted: req, Payload: raw}, raw
}

func mustNetwork(t testing.TB, id string) Network {
	t.Helper()
	n, ok := LookupNetwork(id)
	if !ok {
		t.Fatalf("network %s unknown", id)
	}
	return n
}

package exact

import (
	"crypto/ecdsa"
	"encoding/json"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/crypto"

	"github.com/seed1284c1d2/svc/x402"
)

// testPayTo is the receiving wallet of the test routes (vector C's "to").
const testPayTo = "0x70997970C51812dc3A010C7d01b50e0d17dc79C8"

// testNow is the fixed clock of the tests.
var testNow = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)

func testClock() time.Time { return testNow }

// testRequirements returns the requirements of a 0.0034 USD route on network.
func testRequirements(t testing.TB, network string) x402.PaymentRequirements {
	t.Helper()
	req, err := x402.Route{Price: "0.0034", Network: network, PayTo: testPayTo}.Requirements()
	if err != nil {
		t.Fatal(err)
	}
	return req
}

// testPayment signs a payment of req with key at testNow and returns the
// v2 payload and its exact EVM part.
func testPayment(t testing.TB, key *ecdsa.PrivateKey, req x402.PaymentRequirements) (x402.PaymentPayload, ExactEVMPayload) {
	t.Helper()
	p, err := NewPayload(key, req, testNow, 0)
	if err != nil {
		t.Fatal(err)
	}
	return wrapPayment(t, req, p), p
}

// wrapPayment puts an exact EVM payload in a v2 PaymentPayload for req.
func wrapPayment(t testing.TB, req x402.PaymentRequirements, p any) x402.PaymentPayload {
	t.Helper()
	raw, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	return x402.PaymentPayload{X402Version: 2, Resource: &x402.ResourceInfo{URL: "http://127.0.0.1/api/tool"}, Accepted: req, Payload: raw}
}

func newTestKey(t testing.TB) *ecdsa.PrivateKey {
	t.Helper()
	k, err := crypto.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	return k
}

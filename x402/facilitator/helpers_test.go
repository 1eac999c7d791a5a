package facilitator

import (
	"crypto/ecdsa"
	"encoding/json"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/crypto"

	"github.com/seed1284c1d2/svc/x402"
	"github.com/seed1284c1d2/svc/x402/exact"
)

// Test vectors (as in package exact's tests): key B is the first
// development key of Hardhat and Anvil; vecATo is the payee of the x402 v2
// specification's signed example.
const (
	vecKeyB  = "ac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80"
	vecAddrB = "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266"
	vecATo   = "0x209693Bc6afc0C5328bA36FaF03C514EF312287C"
)

func vecKey(t testing.TB) *ecdsa.PrivateKey { return mustKey(t)(crypto.HexToECDSA(vecKeyB)) }

// mustKey returns a function that fails t on a key error.
func mustKey(t testing.TB) func(*ecdsa.PrivateKey, error) *ecdsa.PrivateKey {
	t.Helper()
	return func(k *ecdsa.PrivateKey, err error) *ecdsa.PrivateKey {
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
}

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
func testPayment(t testing.TB, key *ecdsa.PrivateKey, req x402.PaymentRequirements) (x402.PaymentPayload, exact.ExactEVMPayload) {
	t.Helper()
	p, err := exact.NewPayload(key, req, testNow, 0)
	if err != nil {
		t.Fatal(err)
	}
	return wrapPayment(t, req, p), p
}

// wrapPayment puts an exact EVM payload in a v2 x402.PaymentPayload for req.
func wrapPayment(t testing.TB, req x402.PaymentRequirements, p any) x402.PaymentPayload {
	t.Helper()
	raw, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	return x402.PaymentPayload{X402Version: 2, Resource: &x402.ResourceInfo{URL: "http://127.0.0.1/api/tool"}, Accepted: req, Payload: raw}
}

func newTestKey(t testing.TB) *ecdsa.PrivateKey { return mustKey(t)(crypto.GenerateKey()) }

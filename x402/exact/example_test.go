package exact_test

import (
	"fmt"
	"time"

	"github.com/ethereum/go-ethereum/crypto"

	"github.com/seed1284c1d2/svc/x402"
	"github.com/seed1284c1d2/svc/x402/exact"
)

// A client signs a payment for the requirements of a 402; the server
// verifies it locally before asking its facilitator.
func ExampleVerifier_Verify() {
	key, _ := crypto.HexToECDSA("ac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80")
	req, _ := x402.Route{Price: "0.0034", PayTo: "0x70997970C51812dc3A010C7d01b50e0d17dc79C8"}.Requirements()
	now := time.Now()

	// Client side.
	p, _ := exact.NewPayload(key, req, now, 0)
	header, _ := x402.EncodeHeader(map[string]any{"x402Version": 2, "accepted": req, "payload": p})

	// Server side.
	payload, err := x402.DecodePaymentPayload(header)
	if err != nil {
		fmt.Println("400:", err)
		return
	}
	payer, err := exact.Verifier{}.Verify(payload, req)
	fmt.Println(payer, err)

	// The same payment for a higher price is refused.
	dearer, _ := x402.Route{Price: "0.01", PayTo: "0x70997970C51812dc3A010C7d01b50e0d17dc79C8"}.Requirements()
	payload.Accepted = dearer
	_, err = exact.Verifier{}.Verify(payload, dearer)
	fmt.Println(err)
	// Output:
	// 0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266 <nil>
	// x402: invalid_exact_evm_payload_authorization_value_mismatch: authorization.value must equal the amount 10000
}

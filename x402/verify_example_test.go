package x402_test

import (
	"fmt"
	"time"

	"github.com/ethereum/go-ethereum/crypto"
	"github.com/seed1284c1d2/svc/x402"
)

func ExamplePriceToAtomic() {
	for _, price := range []string{"0.0034", "0.005", "1.50", "0.0000001"} {
		atomic, err := x402.PriceToAtomic(price, 6)
		fmt.Println(price, "→", atomic, err)
	}
	// Output:
	// 0.0034 → 3400 <nil>
	// 0.005 → 5000 <nil>
	// 1.50 → 1500000 <nil>
	// 0.0000001 →  x402: price "0.0000001": price finer than the asset's smallest unit (6 decimals)
}

func ExampleRoute_Requirements() {
	route := x402.Route{Price: "0.005", PayTo: "0x70997970c51812dc3a010c7d01b50e0d17dc79c8"}
	req, err := route.Requirements()
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(req.Scheme, req.Network, req.Amount, req.Asset)
	fmt.Println(req.PayTo, req.MaxTimeoutSeconds, req.Extra["name"], req.Extra["version"])
	// Output:
	// exact eip155:8453 5000 0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913
	// 0x70997970C51812dc3A010C7d01b50e0d17dc79C8 300 USD Coin 2
}

// A client signs a payment for the requirements of a 402; the server
// verifies it locally before asking its facilitator.
func ExampleVerifier_Verify() {
	key, _ := crypto.HexToECDSA("ac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80")
	req, _ := x402.Route{Price: "0.0034", PayTo: "0x70997970C51812dc3A010C7d01b50e0d17dc79C8"}.Requirements()
	now := time.Now()

	// Client side.
	exact, _ := x402.NewExactPayload(key, req, now, 0)
	header, _ := x402.EncodeHeader(map[string]any{"x402Version": 2, "accepted": req, "payload": exact})

	// Server side.
	payload, err := x402.DecodePaymentPayload(header)
	if err != nil {
		fmt.Println("400:", err)
		return
	}
	payer, err := x402.Verifier{}.Verify(payload, req)
	fmt.Println(payer, err)

	// The same payment for a higher price is refused.
	dearer, _ := x402.Route{Price: "0.01", PayTo: "0x70997970C51812dc3A010C7d01b50e0d17dc79C8"}.Requirements()
	payload.Accepted = dearer
	_, err = x402.Verifier{}.Verify(payload, dearer)
	fmt.Println(err)
	// Output:
	// 0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266 <nil>
	// x402: invalid_exact_evm_payload_authorization_value_mismatch: authorization.value must equal the amount 10000
}

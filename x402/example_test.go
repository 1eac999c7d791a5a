package x402_test

import (
	"fmt"

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

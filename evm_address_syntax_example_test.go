package svc_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/seed1284c1d2/svc"
)

func ExampleEVMAddressSyntax() {
	ctx := context.Background()
	for _, a := range []string{
		"0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed", // EIP-55 checksummed
		"0x5aaeb6053f3e94c9b9a09f33669435e7ef1beaed", // all lower case: no checksum
		"0x5AAeb6053F3E94C9b9A09f33669435E7Ef1BeAed", // one letter in the wrong case
		"0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAe",  // one digit short
	} {
		resp, err := svc.EVMAddressSyntax(ctx, svc.EVMAddressSyntaxRequest{Address: a})
		if err != nil {
			fmt.Println(err)
			continue
		}
		out, _ := json.Marshal(resp)
		fmt.Println(string(out))
	}
	// Output:
	// {"valid":true,"checksum":"valid","checksummed":"0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed","isZeroAddress":false}
	// {"valid":true,"checksum":"none","checksummed":"0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed","isZeroAddress":false}
	// {"valid":true,"checksum":"invalid","checksummed":"0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed","isZeroAddress":false}
	// {"valid":false,"reason":"must be 42 characters (\"0x\" and 40 hex digits), not 41","reasonCode":"length","isZeroAddress":false}
}

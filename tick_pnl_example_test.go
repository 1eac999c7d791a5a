package svc_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/seed1284c1d2/svc"
)

// The published example: two contracts bought at 100 and sold at 101, with a
// tick of 0.25 worth 12.5.
func ExampleTickPnL() {
	resp, err := svc.TickPnL(context.Background(), svc.TickPnLRequest{
		Entry:     svc.N(100),
		Exit:      svc.N(101),
		Contracts: svc.N(2),
		TickSize:  svc.MustNumber("0.25"),
		TickValue: svc.MustNumber("12.5"),
		Direction: svc.Long,
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	out, _ := json.Marshal(resp)
	fmt.Println(string(out))
	// Output:
	// {"ticks":4,"pnl":100,"priceMove":1,"wholeTicks":true,"pnlPerTick":25,"entry":100,"exit":101,"contracts":2,"tickSize":0.25,"tickValue":12.5,"direction":"long"}
}

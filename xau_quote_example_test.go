package svc_test

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/seed1284c1d2/svc"
	"github.com/seed1284c1d2/svc/xau"
)

// A quote from the simulated terminal, with a fixed seed and clock so that
// the output is reproducible. The response says "source":"simulated": the
// simulation is never passed off as market data.
func ExampleXAUQuote() {
	clock := time.Date(2025, 3, 31, 9, 15, 2, 0, time.UTC) // a Monday morning in London
	term, err := xau.NewSimulated(xau.SimConfig{Seed: 1, Now: func() time.Time { return clock }})
	if err != nil {
		fmt.Println(err)
		return
	}
	resp, err := svc.XAUQuote(context.Background(), term, svc.XAUQuoteRequest{})
	if err != nil {
		fmt.Println(err)
		return
	}
	out, _ := json.Marshal(resp)
	fmt.Println(string(out))
	// Output:
	// {"symbol":"XAUUSD","bid":2705.36,"ask":2705.56,"spread":0.2,"last":2705.36,"time":"2025-03-31T09:15:00Z","source":"simulated"}
}

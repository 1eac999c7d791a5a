package svc_test

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/seed1284c1d2/svc"
	"github.com/seed1284c1d2/svc/xau"
)

// The ten most recent M15 bars of the simulated terminal (fixed seed and
// clock), oldest first; the last one is still forming at 09:15:02.
func ExampleXAUBars() {
	clock := time.Date(2025, 3, 31, 9, 15, 2, 0, time.UTC)
	term, err := xau.NewSimulated(xau.SimConfig{Seed: 1, Now: func() time.Time { return clock }})
	if err != nil {
		fmt.Println(err)
		return
	}
	count := 10
	resp, err := svc.XAUBars(context.Background(), term, svc.XAUBarsRequest{Timeframe: "M15", Count: &count})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(resp.Symbol, resp.Timeframe, resp.Count, resp.Source)
	for _, b := range resp.Bars {
		out, _ := json.Marshal(b)
		fmt.Println(string(out))
	}
	// Output:
	// XAUUSD M15 10 simulated
	// {"time":"2025-03-31T07:00:00Z","open":2688.56,"high":2693.9,"low":2688.15,"close":2693.27,"tick_volume":2035}
	// {"time":"2025-03-31T07:15:00Z","open":2693.51,"high":2697.17,"low":2692.73,"close":2693.4,"tick_volume":2175}
	// {"time":"2025-03-31T07:30:00Z","open":2693.22,"high":2693.26,"low":2689.31,"close":2689.71,"tick_volume":2062}
	// {"time":"2025-03-31T07:45:00Z","open":2689.69,"high":2690.01,"low":2683.63,"close":2686.26,"tick_volume":1943}
	// {"time":"2025-03-31T08:00:00Z","open":2686.59,"high":2691,"low":2686.52,"close":2690.48,"tick_volume":2030}
	// {"time":"2025-03-31T08:15:00Z","open":2690.17,"high":2694.29,"low":2689.76,"close":2694,"tick_volume":1834}
	// {"time":"2025-03-31T08:30:00Z","open":2694.35,"high":2700.93,"low":2693.79,"close":2699.97,"tick_volume":1850}
	// {"time":"2025-03-31T08:45:00Z","open":2699.8,"high":2706.97,"low":2699.8,"close":2706.97,"tick_volume":2088}
	// {"time":"2025-03-31T09:00:00Z","open":2706.58,"high":2708.53,"low":2702,"close":2705.46,"tick_volume":1823}
	// {"time":"2025-03-31T09:15:00Z","open":2705.36,"high":2705.36,"low":2705.36,"close":2705.36,"tick_volume":6}
}

package svc_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/seed1284c1d2/svc"
)

// The published example: two bars, the last close three quarters up the
// range, both true ranges 3.
func ExampleOHLCVState() {
	var req svc.OHLCVStateRequest
	_ = json.Unmarshal([]byte(`{"bars":[
		{"open":100,"high":102,"low":99,"close":101},
		{"open":101,"high":103,"low":100,"close":102}]}`), &req)
	resp, err := svc.OHLCVState(context.Background(), req)
	if err != nil {
		fmt.Println(err)
		return
	}
	out, _ := json.Marshal(resp)
	fmt.Println(string(out))
	// Output:
	// {"returnPct":0.99009901,"rangePosition":0.75,"atr":3,"bars":2,"firstClose":101,"lastClose":102,"high":103,"low":99}
}

// A bar may carry the time and tick_volume of xau_bars: they are checked
// for sanity and otherwise ignored.
func ExampleOHLCVBar() {
	var bar svc.OHLCVBar
	_ = json.Unmarshal([]byte(`{"time":"2025-03-31T07:00:00Z","open":3100.5,"high":3102,"low":3099.25,"close":3101,"tick_volume":812}`), &bar)
	fmt.Println(bar.Open, bar.High, bar.Low, bar.Close, bar.TickVolume)
	// Output: 3100.5 3102 3099.25 3101 812
}

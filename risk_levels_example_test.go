package svc_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/seed1284c1d2/svc"
)

// The published example: a long entry at 3500 with a 0.05 % stop and a
// 0.04 % target.
func ExampleRiskLevels() {
	var req svc.RiskLevelsRequest
	_ = json.Unmarshal([]byte(`{"entry":3500,"direction":"long","slPct":0.05,"tpPct":0.04}`), &req)
	resp, err := svc.RiskLevels(context.Background(), req)
	if err != nil {
		fmt.Println(err)
		return
	}
	out, _ := json.Marshal(resp)
	fmt.Println(string(out))
	// Output:
	// {"entry":3500,"direction":"long","stop":3498.25,"target":3501.4,"riskReward":0.8,"stopDistance":1.75,"targetDistance":1.4,"slPct":0.05,"tpPct":0.04}
}

// Invalid input is reported field by field, with the rule each field breaks.
func ExampleRiskLevels_invalid() {
	_, err := svc.RiskLevels(context.Background(), svc.RiskLevelsRequest{Entry: svc.N(0), Direction: "up", SlPct: svc.N(1)})
	var e *svc.Error
	if errors.As(err, &e) {
		for _, f := range e.Fields {
			fmt.Println(f.Field, f.Rule)
		}
	}
	// Output:
	// entry gt
	// direction oneof
	// tpPct required
}

package svc_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/seed1284c1d2/svc"
)

// 300 trades, profit factor 1.6, 55 % winners, a 12 % drawdown and 80 % of
// walk-forward windows passed: sample 90, pf 100, drawdown 60, score 81.
func ExampleStrategyGrade() {
	var req svc.StrategyGradeRequest
	_ = json.Unmarshal([]byte(`{"trades":300,"profitFactor":1.6,"winRatePct":55,"maxDrawdownPct":12,"walkForwardPassPct":80}`), &req)
	resp, err := svc.StrategyGrade(context.Background(), req)
	if err != nil {
		fmt.Println(err)
		return
	}
	out, _ := json.MarshalIndent(resp, "", "  ")
	fmt.Println(string(out))
	// Output:
	// {
	//   "score": 81,
	//   "grade": "B",
	//   "components": {
	//     "sample": 90,
	//     "pf": 100,
	//     "winRate": 55,
	//     "drawdown": 60,
	//     "walkForward": 80
	//   },
	//   "weights": {
	//     "sample": 0.15,
	//     "pf": 0.3,
	//     "winRate": 0.1,
	//     "drawdown": 0.2,
	//     "walkForward": 0.25
	//   },
	//   "warnings": []
	// }
}

package svc_test

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/shopspring/decimal"

	"github.com/seed1284c1d2/svc"
	"github.com/seed1284c1d2/svc/xau"
)

// A market state over 30 scripted M5 bars whose closes rise by exactly 1 a
// bar from 3000: slope 1, up. The first 14 bars have a true range of 2 and
// the other 16 of 4, so Wilder's ATR(14) is 4 − 2·(13/14)^16 = 3.38895237.
// The last bar opens at 09:25 UTC, 11:25 in Vienna: London is open.
func ExampleXAUMarketState() {
	start := time.Date(2025, 3, 31, 7, 0, 0, 0, time.UTC) // a Monday
	bars := make([]xau.Bar, 30)
	for i := range bars {
		c := decimal.NewFromInt(int64(3000 + i))
		below, above := decimal.RequireFromString("1.5"), decimal.RequireFromString("0.5")
		if i >= 14 {
			below, above = decimal.RequireFromString("2.5"), decimal.RequireFromString("1.5")
		}
		bars[i] = xau.Bar{
			Time: start.Add(time.Duration(i) * 5 * time.Minute),
			Open: c.Sub(decimal.NewFromInt(1)), High: c.Add(above), Low: c.Sub(below), Close: c,
			TickVolume: 100,
		}
	}
	term := xau.NewScripted(nil)
	term.SetBars("XAUUSD", xau.M5, bars)

	count := 30
	resp, err := svc.XAUMarketState(context.Background(), term, svc.XAUMarketStateRequest{Timeframe: "M5", Count: &count})
	if err != nil {
		fmt.Println(err)
		return
	}
	out, _ := json.MarshalIndent(resp, "", "  ")
	fmt.Println(string(out))
	// Output:
	// {
	//   "symbol": "XAUUSD",
	//   "timeframe": "M5",
	//   "count": 30,
	//   "trend": "up",
	//   "slope": 1,
	//   "slopePctPerBar": 0.033173,
	//   "trendThresholdPct": 0.005,
	//   "atr": 3.38895237,
	//   "atrPeriod": 14,
	//   "realizedVolPct": 0.0000937,
	//   "rangePosition": 0.953125,
	//   "returnPct": 0.96666667,
	//   "high": 3030.5,
	//   "low": 2998.5,
	//   "firstClose": 3000,
	//   "lastClose": 3029,
	//   "lastTime": "2025-03-31T09:25:00Z",
	//   "timezone": "Europe/Vienna",
	//   "london": true,
	//   "newYork": false,
	//   "asia": false,
	//   "minuteOfDay": 685,
	//   "source": "scripted"
	// }
}

// MarketStateOf is the same arithmetic without a terminal. Closes
// alternating 100, 101, 100, … have log returns ±ln(1.01): a realized
// volatility of 100·ln(1.01)·√(30/29) = 1.01204343 % a bar, and a slope of
// 0.0033 % a bar, flat on M5.
func ExampleMarketStateOf() {
	start := time.Date(2025, 3, 31, 7, 0, 0, 0, time.UTC)
	bars := make([]xau.Bar, 30)
	for i := range bars {
		o, c := decimal.NewFromInt(int64(100+(i+1)%2)), decimal.NewFromInt(int64(100+i%2))
		if i == 0 {
			o = c
		}
		wick := decimal.RequireFromString("0.25")
		bars[i] = xau.Bar{
			Time: start.Add(time.Duration(i) * 5 * time.Minute),
			Open: o, High: decimal.Max(o, c).Add(wick), Low: decimal.Min(o, c).Sub(wick), Close: c,
		}
	}
	ms, err := svc.MarketStateOf(bars, xau.M5)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("trend", ms.Trend, "slopePctPerBar", ms.SlopePctPerBar, "threshold", ms.TrendThresholdPct)
	fmt.Println("atr", ms.ATR, "realizedVolPct", ms.RealizedVolPct)
	fmt.Println("rangePosition", ms.RangePosition, "returnPct", ms.ReturnPct)
	// Output:
	// trend flat slopePctPerBar 0.00332044 threshold 0.005
	// atr 1.47817687 realizedVolPct 1.01204343
	// rangePosition 0.83333333 returnPct 1
}

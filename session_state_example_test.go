package svc_test

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/seed1284c1d2/svc"
)

// The published example: 09:15 in Vienna on a weekday, when only London is
// open.
func ExampleSessionState() {
	resp, err := svc.SessionState(context.Background(), svc.SessionStateRequest{DateTime: "2025-03-31T09:15:00+02:00"})
	if err != nil {
		fmt.Println(err)
		return
	}
	out, _ := json.MarshalIndent(resp, "", "  ")
	fmt.Println(string(out))
	// Output:
	// {
	//   "timezone": "Europe/Vienna",
	//   "london": true,
	//   "newYork": false,
	//   "asia": false,
	//   "minuteOfDay": 555,
	//   "utc": "2025-03-31T07:15:00Z",
	//   "local": "2025-03-31T09:15:00+02:00",
	//   "weekday": "Monday",
	//   "assumedUTC": false,
	//   "sessions": [
	//     {
	//       "name": "london",
	//       "zone": "Europe/London",
	//       "open": "08:00",
	//       "close": "16:30",
	//       "days": "Monday–Friday",
	//       "isOpen": true,
	//       "tradingDay": true,
	//       "openVienna": "2025-03-31T09:00:00+02:00",
	//       "closeVienna": "2025-03-31T17:30:00+02:00"
	//     },
	//     {
	//       "name": "newYork",
	//       "zone": "America/New_York",
	//       "open": "08:00",
	//       "close": "17:00",
	//       "days": "Monday–Friday",
	//       "isOpen": false,
	//       "tradingDay": true,
	//       "openVienna": "2025-03-31T14:00:00+02:00",
	//       "closeVienna": "2025-03-31T23:00:00+02:00"
	//     },
	//     {
	//       "name": "asia",
	//       "zone": "Asia/Tokyo",
	//       "open": "09:00",
	//       "close": "15:00",
	//       "days": "Monday–Friday",
	//       "isOpen": false,
	//       "tradingDay": true,
	//       "openVienna": "2025-03-31T02:00:00+02:00",
	//       "closeVienna": "2025-03-31T08:00:00+02:00"
	//     }
	//   ]
	// }
}

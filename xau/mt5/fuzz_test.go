package mt5

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/seed1284c1d2/svc/xau"
)

// FuzzMT5BridgeAnswer serves arbitrary answers (status and body) from a
// bridge on 127.0.0.1 to the MT5 bridge client. Whatever comes back: no
// panic; a failure is ErrUnavailable or ErrBadRequest; a success is data
// the rest of svc may trust (a positive bid no higher than the ask, at
// most the bars asked for, each valid, in increasing time).
func FuzzMT5BridgeAnswer(f *testing.F) {
	f.Add(200, []byte(`{"symbol":"XAUUSD","bid":2650.1,"ask":2650.4,"last":0,"time":"2024-06-05T10:00:00.000Z"}`))
	f.Add(200, []byte(`{"symbol":"XAUUSD","timeframe":"M5","bars":[{"time":"2024-06-05T09:55:00Z","open":1,"high":2,"low":0.5,"close":1.5,"tick_volume":3}]}`))
	f.Add(200, []byte(`{"connected":true,"terminal":"t","server":"s","serverTime":"2024-06-05T10:00:00Z","lastTickTime":"2024-06-05T09:59:59Z"}`))
	f.Add(503, []byte(`{"error":"terminal is not connected","code":"terminal_disconnected"}`))
	f.Add(400, []byte(`{"error":"x","code":"unknown_symbol"}`))
	f.Add(200, []byte(`{"bid":1e999999999}`))
	f.Add(302, []byte(``))
	var answer atomic.Pointer[fuzzAnswer]
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		a := answer.Load()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(a.status)
		_, _ = w.Write(a.body)
	}))
	f.Cleanup(srv.Close)
	now := time.Date(2024, 6, 5, 10, 0, 0, 0, time.UTC)
	client, err := New(Config{BaseURL: srv.URL, Token: "0123456789abcdef-fuzz-token", Now: func() time.Time { return now }})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, status int, body []byte) {
		if status < 200 || status > 599 {
			status = 200 + (status%400+400)%400
		}
		answer.Store(&fuzzAnswer{status: status, body: body})
		ctx := context.Background()
		known := func(what string, err error) {
			if !errors.Is(err, xau.ErrUnavailable) && !errors.Is(err, xau.ErrBadRequest) {
				t.Fatalf("%s: status %d %q: error %v is neither ErrUnavailable nor ErrBadRequest", what, status, body, err)
			}
		}
		if _, err := client.Health(ctx); err != nil {
			known("health", err)
		}
		if q, err := client.Quote(ctx, "XAUUSD"); err != nil {
			known("quote", err)
		} else if !q.Bid.IsPositive() || q.Ask.LessThan(q.Bid) || q.Symbol != "XAUUSD" {
			t.Fatalf("quote accepted: %+v from %q", q, body)
		}
		bars, err := client.Bars(ctx, "XAUUSD", xau.M5, 10)
		if err != nil {
			known("bars", err)
			return
		}
		if len(bars) > 10 {
			t.Fatalf("%d bars for 10 asked", len(bars))
		}
		for i, b := range bars {
			if err := xau.CheckBar(b); err != nil || (i > 0 && !b.Time.After(bars[i-1].Time)) {
				t.Fatalf("bar %d accepted: %+v (%v) from %q", i, b, err, body)
			}
		}
	})
}

// fuzzAnswer is one answer of the fuzzed bridge.
type fuzzAnswer struct {
	status int
	body   []byte
}

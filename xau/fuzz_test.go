package xau

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"
)

// FuzzReplayCSV feeds arbitrary bytes to the MT5 CSV parser and the replay
// terminal. Whatever the input: no panic; a failure is a *CSVError with a
// line number ≥ 1; a success yields rows that satisfy the ValidateBars rules,
// survive a WriteMT5CSV/ParseMT5CSV round trip unchanged, and a Replay over
// them that never serves a bar after its clock. The committed seed corpus
// is in testdata/fuzz/FuzzReplayCSV.
func FuzzReplayCSV(f *testing.F) {
	f.Add([]byte(sampleHead))
	f.Add([]byte("<DATE>,<OPEN>,<HIGH>,<LOW>,<CLOSE>\n2024.01.02,1,2,0.5,1.5\n"))
	f.Add([]byte("\xff\xfe<\x00D\x00A\x00T\x00E\x00>\x00"))
	f.Fuzz(func(t *testing.T, data []byte) {
		rows, err := ParseMT5CSV(bytes.NewReader(data))
		if err != nil {
			var ce *CSVError
			if !errors.As(err, &ce) || ce.Line < 1 {
				t.Fatalf("error without a line: %v", err)
			}
			return
		}
		for i, r := range rows {
			if err := checkBar(r.Bar); err != nil {
				t.Fatalf("row %d accepted but invalid: %v", i, err)
			}
			if r.Volume < 0 || r.Spread < 0 || (i > 0 && !r.Time.After(rows[i-1].Time)) {
				t.Fatalf("row %d accepted but invalid: %+v", i, r)
			}
		}
		var buf bytes.Buffer
		if err := WriteMT5CSV(&buf, rows); err != nil {
			t.Fatalf("parsed rows do not write: %v", err)
		}
		again, err := ParseMT5CSV(bytes.NewReader(buf.Bytes()))
		if err != nil || len(again) != len(rows) {
			t.Fatalf("round trip: %d rows, %v", len(again), err)
		}
		for i := range rows {
			if !barEqual(again[i].Bar, rows[i].Bar) || again[i].Volume != rows[i].Volume || again[i].Spread != rows[i].Spread {
				t.Fatalf("round trip changed row %d: %+v -> %+v", i, rows[i], again[i])
			}
		}
		if len(rows) == 0 {
			return
		}
		now := rows[len(rows)/2].Time.Add(90 * time.Second)
		rp, err := NewReplay(ReplayConfig{Timeframe: M1, Now: func() time.Time { return now }}, bytes.NewReader(data))
		if err != nil {
			return // alignment, spread or a missing <TIME> column: replay-only rules
		}
		for _, tf := range Timeframes() {
			bars, err := rp.Bars(context.Background(), "XAUUSD", tf, 50)
			if err != nil {
				t.Fatalf("%s: %v", tf, err)
			}
			if err := ValidateBars(bars, tf); err != nil {
				t.Fatalf("%s: %v", tf, err)
			}
			for _, b := range bars {
				if b.Time.Add(time.Minute).After(now) {
					t.Fatalf("%s bar at %s revealed at %s", tf, b.Time, now)
				}
			}
		}
	})
}

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
	client, err := NewMT5Bridge(MT5Config{BaseURL: srv.URL, Token: "0123456789abcdef-fuzz-token", Now: func() time.Time { return now }})
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
			if !errors.Is(err, ErrUnavailable) && !errors.Is(err, ErrBadRequest) {
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
		bars, err := client.Bars(ctx, "XAUUSD", M5, 10)
		if err != nil {
			known("bars", err)
			return
		}
		if len(bars) > 10 {
			t.Fatalf("%d bars for 10 asked", len(bars))
		}
		for i, b := range bars {
			if err := checkBar(b); err != nil || (i > 0 && !b.Time.After(bars[i-1].Time)) {
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

package replay

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/seed1284c1d2/svc/xau"
)

// FuzzReplayCSV feeds arbitrary bytes to the MT5 CSV parser and the replay
// terminal. Whatever the input: no panic; a failure is a *CSVError with a
// line number ≥ 1; a success yields rows that satisfy the ValidateBars rules,
// survive a WriteMT5CSV/ParseMT5CSV round trip unchanged, and a Terminal over
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
			if err := xau.CheckBar(r.Bar); err != nil {
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
		rp, err := New(Config{Timeframe: xau.M1, Now: func() time.Time { return now }}, bytes.NewReader(data))
		if err != nil {
			return // alignment, spread or a missing <TIME> column: replay-only rules
		}
		for _, tf := range xau.Timeframes() {
			bars, err := rp.Bars(context.Background(), "XAUUSD", tf, 50)
			if err != nil {
				t.Fatalf("%s: %v", tf, err)
			}
			if err := xau.ValidateBars(bars, tf); err != nil {
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

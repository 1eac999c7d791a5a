package replay

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"os"
	"strings"
	"testing"
	"time"
	"unicode/utf16"

	"github.com/leanovate/gopter"
	"github.com/leanovate/gopter/gen"
	"github.com/leanovate/gopter/prop"
	"github.com/shopspring/decimal"

	"github.com/seed1284c1d2/svc/xau"
)

var updateSample = flag.Bool("update", false, "rewrite "+samplePath+" from the simulated terminal")

// The committed sample: simulated seed 1, M1, from Friday 2024-01-05 00:00
// UTC to Monday 2024-01-08 12:00 UTC (across a weekend), 2160 rows.
const samplePath = "testdata/XAUUSD_M1_sample.csv"

var (
	sampleFrom = time.Date(2024, 1, 5, 0, 0, 0, 0, time.UTC)
	sampleTo   = time.Date(2024, 1, 8, 12, 0, 0, 0, time.UTC)
)

// sampleCSV regenerates the sample file's bytes.
func sampleCSV(t testing.TB) []byte {
	t.Helper()
	s := newSim(t, 1, sampleTo)
	rows, err := s.History("XAUUSD", xau.M1, sampleFrom, sampleTo)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := WriteMT5CSV(&buf, rows); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestReplaySampleUpToDate checks that the committed sample is exactly what
// the generator produces; run with -update to rewrite it (go generate does).
func TestReplaySampleUpToDate(t *testing.T) {
	want := sampleCSV(t)
	if *updateSample {
		if err := os.WriteFile(samplePath, want, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(samplePath)
	if err != nil {
		t.Fatalf("%v (run go test -run TestReplaySampleUpToDate -update ./xau/)", err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s is stale: run go test -run TestReplaySampleUpToDate -update ./xau/", samplePath)
	}
	if len(got) >= 300<<10 {
		t.Fatalf("sample is %d bytes, keep it under 300 KB", len(got))
	}
}

// openSample opens the committed sample with a fixed clock.
func openSample(t testing.TB, base xau.Timeframe, now time.Time) *Terminal {
	t.Helper()
	rp, err := Open(Config{Timeframe: base, Now: func() time.Time { return now }}, samplePath)
	if err != nil {
		t.Fatal(err)
	}
	return rp
}

func TestReplaySampleLoads(t *testing.T) {
	rp := openSample(t, xau.M1, sampleTo)
	first, last := rp.Span()
	if !first.Equal(sampleFrom) || !last.Equal(sampleTo) {
		t.Fatalf("span %s – %s", first, last)
	}
	if len(rp.rows) != 1320+840 {
		t.Fatalf("%d rows", len(rp.rows))
	}
	rows, err := ParseMT5CSV(bytes.NewReader(sampleCSV(t)))
	if err != nil || len(rows) != len(rp.rows) {
		t.Fatalf("ParseMT5CSV: %d rows, %v", len(rows), err)
	}
	bars := make([]xau.Bar, len(rows))
	for i, r := range rows {
		bars[i] = r.Bar
	}
	if err := xau.ValidateBars(bars, xau.M1); err != nil {
		t.Fatal(err)
	}
	if rp.Symbol() != "XAUUSD" {
		t.Fatal(rp.Symbol())
	}
}

// The replay serves what the simulated terminal served at the same clock,
// for every completed bar.
func TestReplayMatchesSimulated(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2024, 1, 8, 9, 42, 30, 0, time.UTC)
	rp := openSample(t, xau.M1, now)
	sim := newSim(t, 1, now)
	for _, tf := range xau.Timeframes() {
		got, err := rp.Bars(ctx, "XAUUSD", tf, 300)
		if err != nil {
			t.Fatal(err)
		}
		sb := map[time.Time]xau.Bar{}
		for _, b := range mustBars(t, sim, tf, 400) {
			sb[b.Time] = b
		}
		// The replay's newest bar is built from completed minutes only; the
		// simulated one includes the forming minute. Compare the rest.
		for i, b := range got[:len(got)-1] {
			if want, ok := sb[b.Time]; !ok || !barEqual(b, want) {
				t.Fatalf("%s bar %d: replay %+v, simulated %+v", tf, i, b, want)
			}
		}
	}
	q, err := rp.Quote(ctx, "XAUUSD")
	if err != nil {
		t.Fatal(err)
	}
	last := mustBars(t, rp, xau.M1, 1)[0]
	if !last.Time.Equal(time.Date(2024, 1, 8, 9, 41, 0, 0, time.UTC)) || !q.Bid.Equal(last.Close) || !q.Last.Equal(q.Bid) ||
		!q.Time.Equal(last.Time.Add(time.Minute)) || q.Source != xau.SourceReplay || xau.ValidateQuote(q, d("0.40")) != nil {
		t.Fatalf("quote %+v, last bar %+v", q, last)
	}
	if spread := q.Spread.Shift(2).IntPart(); !q.Ask.Equal(q.Bid.Add(q.Spread)) || spread < 10 || spread > 40 {
		t.Fatalf("quote spread %s", q.Spread)
	}
}

// referenceBars is the oracle for replay bars: parse the file, keep the
// base bars completed by now, aggregate, keep the last count.
func referenceBars(t testing.TB, rows []xau.MT5Row, base, tf xau.Timeframe, now time.Time, count int) []xau.Bar {
	var in []xau.Bar
	for _, r := range rows {
		if !r.Time.Add(base.Duration()).After(now) {
			in = append(in, r.Bar)
		}
	}
	out, err := xau.Aggregate(in, tf)
	if err != nil {
		t.Fatal(err)
	}
	return out[max(0, len(out)-count):]
}

// For any clock and request, the replay never reveals a bar that had not
// completed by the clock, and serves exactly the oracle's bars.
func TestReplayNeverLeaksTheFuture(t *testing.T) {
	rows, err := ParseMT5CSV(bytes.NewReader(sampleCSV(t)))
	if err != nil {
		t.Fatal(err)
	}
	params := gopter.DefaultTestParametersWithSeed(20240105)
	params.MinSuccessfulTests = 300
	props := gopter.NewProperties(params)
	lo, hi := sampleFrom.Add(-time.Hour).Unix(), sampleTo.Add(time.Hour).Unix()
	props.Property("replay = oracle, nothing after the clock", prop.ForAll(
		func(unix int64, tfi, count int) bool {
			now := time.Unix(unix, 0).UTC()
			tf := xau.Timeframes()[tfi]
			rp := openSample(t, xau.M1, now)
			got, err := rp.Bars(context.Background(), "XAUUSD", tf, count)
			if err != nil {
				return false
			}
			want := referenceBars(t, rows, xau.M1, tf, now, count)
			if len(got) != len(want) || xau.ValidateBars(got, tf) != nil {
				return false
			}
			for i := range want {
				if !barEqual(got[i], want[i]) || got[i].Time.Add(xau.M1.Duration()).After(now) {
					return false
				}
			}
			q, qerr := rp.Quote(context.Background(), "XAUUSD")
			if len(got) == 0 {
				return errors.Is(qerr, xau.ErrUnavailable)
			}
			return qerr == nil && !q.Time.After(now) && q.Bid.Equal(got[len(got)-1].Close)
		},
		gen.Int64Range(lo, hi), gen.IntRange(0, 3), gen.IntRange(1, 600),
	))
	props.TestingRun(t)
}

func TestReplayHealthAndErrors(t *testing.T) {
	ctx := context.Background()
	before := openSample(t, xau.M1, sampleFrom.Add(59*time.Second))
	h, err := before.Health(ctx)
	if h.Connected || !errors.Is(err, xau.ErrUnavailable) || h.Source != xau.SourceReplay {
		t.Fatalf("before the first bar: %+v, %v", h, err)
	}
	if _, err := before.Quote(ctx, "XAUUSD"); !errors.Is(err, xau.ErrUnavailable) {
		t.Fatalf("quote before the first bar: %v", err)
	}
	if bars, err := before.Bars(ctx, "XAUUSD", xau.M1, 10); err != nil || len(bars) != 0 {
		t.Fatalf("bars before the first bar: %d, %v", len(bars), err)
	}
	first := openSample(t, xau.M1, sampleFrom.Add(time.Minute))
	if h, err := first.Health(ctx); err != nil || !h.Connected || h.Lag != 0 {
		t.Fatalf("at the first bar's close: %+v, %v", h, err)
	}
	after := openSample(t, xau.M1, sampleTo.Add(90*time.Minute))
	h, err = after.Health(ctx)
	if err != nil || !h.Connected || h.Lag != 90*time.Minute || !h.LastTick.Equal(sampleTo) {
		t.Fatalf("after the end: %+v, %v", h, err)
	}
	if _, err := after.Quote(ctx, "EURUSD"); !errors.Is(err, xau.ErrUnknownSymbol) {
		t.Fatalf("unknown symbol: %v", err)
	}
	if _, err := after.Bars(ctx, "XAUUSD", xau.M1, 0); !errors.Is(err, xau.ErrBadRequest) {
		t.Fatalf("count 0: %v", err)
	}
	sim := newSim(t, 1, sampleTo)
	rows5, err := sim.History("XAUUSD", xau.M5, sampleFrom, sampleTo)
	if err != nil {
		t.Fatal(err)
	}
	var file5 bytes.Buffer
	if err := WriteMT5CSV(&file5, rows5); err != nil {
		t.Fatal(err)
	}
	m5, err := New(Config{Timeframe: xau.M5, Now: func() time.Time { return sampleTo }}, &file5)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m5.Bars(ctx, "XAUUSD", xau.M1, 10); !errors.Is(err, xau.ErrBadRequest) {
		t.Fatalf("finer than the base: %v", err)
	}
	h1, err := m5.Bars(ctx, "XAUUSD", xau.H1, 5)
	if err != nil || len(h1) != 5 {
		t.Fatalf("H1 from an M5 base: %d, %v", len(h1), err)
	}
	simH1 := mustBars(t, sim, xau.H1, 6)[:5] // the simulated 12:00 bar is forming
	for i := range h1 {
		if !barEqual(h1[i], simH1[i]) {
			t.Fatalf("H1 from M5 bar %d: %+v, simulated %+v", i, h1[i], simH1[i])
		}
	}
	// Config errors.
	for _, cfg := range []Config{
		{},
		{Timeframe: "D1"},
		{Timeframe: xau.M1, Symbol: "XAU USD"},
		{Timeframe: xau.M1, Point: d("-0.01")},
		{Timeframe: xau.M1, ServerUTCOffset: 15 * time.Hour},
		{Timeframe: xau.M1, ServerUTCOffset: 1500 * time.Millisecond},
	} {
		if _, err := New(cfg, strings.NewReader(sampleHead)); err == nil {
			t.Errorf("New(%+v) accepted", cfg)
		}
	}
	if _, err := Open(Config{Timeframe: xau.M1}, "testdata/no-such-file.csv"); err == nil {
		t.Error("missing file accepted")
	}
}

const sampleHead = "<DATE>\t<TIME>\t<OPEN>\t<HIGH>\t<LOW>\t<CLOSE>\t<TICKVOL>\t<VOL>\t<SPREAD>\n" +
	"2024.01.02\t01:00:00\t2063.55\t2064.10\t2063.20\t2063.90\t120\t0\t25\n" +
	"2024.01.02\t01:01:00\t2063.90\t2064.00\t2063.40\t2063.45\t98\t0\t30\n"

func TestParseMT5CSVVariants(t *testing.T) {
	want := []xau.MT5Row{
		{Bar: mkBar(time.Date(2024, 1, 2, 1, 0, 0, 0, time.UTC), "2063.55", "2064.10", "2063.20", "2063.90", 120), Spread: 25},
		{Bar: mkBar(time.Date(2024, 1, 2, 1, 1, 0, 0, time.UTC), "2063.90", "2064.00", "2063.40", "2063.45", 98), Spread: 30},
	}
	utf16le := func(s string, bom bool) string {
		var b []byte
		if bom {
			b = append(b, 0xFF, 0xFE)
		}
		for _, u := range utf16.Encode([]rune(s)) {
			b = append(b, byte(u), byte(u>>8))
		}
		return string(b)
	}
	variants := map[string]string{
		"tab":            sampleHead,
		"comma":          strings.ReplaceAll(sampleHead, "\t", ","),
		"semicolon":      strings.ReplaceAll(sampleHead, "\t", ";"),
		"CRLF":           strings.ReplaceAll(sampleHead, "\n", "\r\n"),
		"UTF-8 BOM":      "\uFEFF" + sampleHead,
		"UTF-16LE BOM":   utf16le(sampleHead, true),
		"UTF-16LE":       utf16le(sampleHead, false),
		"no brackets":    strings.NewReplacer("<", "", ">", "").Replace(sampleHead),
		"lower case":     strings.ToLower(sampleHead[:60]) + sampleHead[60:],
		"blank lines":    "\n" + strings.Replace(sampleHead, "25\n", "25\n\n   \n", 1) + "\n",
		"dashes, HH:MM":  strings.NewReplacer("2024.01.02", "2024-01-02", "01:00:00", "01:00", "01:01:00", "01:01").Replace(sampleHead),
		"no final EOL":   strings.TrimSuffix(sampleHead, "\n"),
		"column order":   "<TIME>,<DATE>,<CLOSE>,<OPEN>,<HIGH>,<LOW>,<SPREAD>,<TICKVOL>\n01:00:00,2024.01.02,2063.90,2063.55,2064.10,2063.20,25,120\n01:01:00,2024.01.02,2063.45,2063.90,2064.00,2063.40,30,98\n",
		"spaces trimmed": strings.ReplaceAll(sampleHead, "\t", " \t "),
	}
	for name, text := range variants {
		got, err := ParseMT5CSV(strings.NewReader(text))
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if len(got) != len(want) {
			t.Errorf("%s: %d rows", name, len(got))
			continue
		}
		for i := range want {
			if !barEqual(got[i].Bar, want[i].Bar) || got[i].Spread != want[i].Spread || got[i].Volume != 0 {
				t.Errorf("%s: row %d = %+v, want %+v", name, i, got[i], want[i])
			}
		}
	}
	// Daily export without <TIME>: bars open at 00:00 UTC.
	daily := "<DATE>\t<OPEN>\t<HIGH>\t<LOW>\t<CLOSE>\t<TICKVOL>\t<VOL>\t<SPREAD>\n" +
		"2024.01.02\t2062.50\t2078.70\t2056.20\t2059.80\t51234\t0\t20\n" +
		"2024.01.03\t2059.80\t2065.10\t2030.50\t2041.60\t60012\t0\t22\n"
	rows, err := ParseMT5CSV(strings.NewReader(daily))
	if err != nil || len(rows) != 2 || !rows[1].Time.Equal(time.Date(2024, 1, 3, 0, 0, 0, 0, time.UTC)) || !rows[1].Low.Equal(d("2030.5")) {
		t.Fatalf("daily: %+v, %v", rows, err)
	}
	if _, err := New(Config{Timeframe: xau.H1}, strings.NewReader(daily)); err == nil || !strings.Contains(err.Error(), "line 1") {
		t.Fatalf("daily export as a replay: %v", err)
	}
}

func TestParseMT5CSVErrorsNameTheLine(t *testing.T) {
	h := "<DATE>\t<TIME>\t<OPEN>\t<HIGH>\t<LOW>\t<CLOSE>\t<TICKVOL>\t<VOL>\t<SPREAD>\n"
	r1 := "2024.01.02\t01:00:00\t2063.55\t2064.10\t2063.20\t2063.90\t120\t0\t25\n"
	cases := []struct {
		name, text string
		line       int
		want       string
	}{
		{"empty", "", 1, "no header"},
		{"blank only", "\n\n", 2, "no header"},
		{"no separator", "DATE TIME OPEN\n", 1, "separator"},
		{"unknown column", "<DATE>\t<TIME>\t<OPEN>\t<HIGH>\t<LOW>\t<CLOSE>\t<FOO>\n", 1, "<FOO>"},
		{"duplicate column", "<DATE>\t<DATE>\t<OPEN>\t<HIGH>\t<LOW>\t<CLOSE>\n", 1, "twice"},
		{"missing close", "<DATE>\t<TIME>\t<OPEN>\t<HIGH>\t<LOW>\n", 1, "<CLOSE>"},
		{"field count", h + r1 + "2024.01.02\t01:01:00\t2063.90\t2064.00\t2063.40\n", 3, "5 fields"},
		{"bad date", h + "2024/01/02\t01:00:00\t1\t1\t1\t1\t1\t0\t1\n", 2, "date"},
		{"no such day", h + "2023.02.29\t01:00:00\t1\t1\t1\t1\t1\t0\t1\n", 2, "does not exist"},
		{"month 13", h + "2024.13.02\t01:00:00\t1\t1\t1\t1\t1\t0\t1\n", 2, "date"},
		{"bad time", h + "2024.01.02\t25:00:00\t1\t1\t1\t1\t1\t0\t1\n", 2, "time"},
		{"bad time shape", h + "2024.01.02\t1:00:00\t1\t1\t1\t1\t1\t0\t1\n", 2, "time"},
		{"price word", h + r1 + "2024.01.02\t01:01:00\tabc\t1\t1\t1\t1\t0\t1\n", 3, "<OPEN>"},
		{"price exponent", h + "2024.01.02\t01:00:00\t1e3\t1\t1\t1\t1\t0\t1\n", 2, "<OPEN>"},
		{"negative price", h + "2024.01.02\t01:00:00\t-1\t1\t1\t1\t1\t0\t1\n", 2, "<OPEN>"},
		{"empty price", h + "2024.01.02\t01:00:00\t\t1\t1\t1\t1\t0\t1\n", 2, "<OPEN>"},
		{"too many decimals", h + "2024.01.02\t01:00:00\t1.123456789\t2\t1\t1\t1\t0\t1\n", 2, "<OPEN>"},
		{"zero price", h + "2024.01.02\t01:00:00\t0\t1\t0\t1\t1\t0\t1\n", 2, "positive"},
		{"high below open", h + "2024.01.02\t01:00:00\t2063.55\t2063.50\t2063.20\t2063.40\t120\t0\t25\n", 2, "high"},
		{"low above close", h + "2024.01.02\t01:00:00\t2063.55\t2064.10\t2063.50\t2063.40\t120\t0\t25\n", 2, "low"},
		{"negative volume", h + "2024.01.02\t01:00:00\t1\t1\t1\t1\t-1\t0\t1\n", 2, "<TICKVOL>"},
		{"spread word", h + "2024.01.02\t01:00:00\t1\t1\t1\t1\t1\t0\tx\n", 2, "<SPREAD>"},
		{"duplicate time", h + r1 + r1, 3, "not after"},
		{"out of order", h + r1 + "2024.01.02\t00:59:00\t2063.55\t2064.10\t2063.20\t2063.90\t120\t0\t25\n", 3, "not after"},
		{"line too long", h + r1 + strings.Repeat("9", MaxCSVLine+10) + "\n", 3, "longer than"},
	}
	for _, c := range cases {
		_, err := ParseMT5CSV(strings.NewReader(c.text))
		var ce *CSVError
		if !errors.As(err, &ce) || ce.Line != c.line || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want line %d mentioning %q", c.name, err, c.line, c.want)
		}
	}
	// Terminal-only rules.
	replayCases := []struct {
		name string
		cfg  Config
		text string
		line int
		want string
	}{
		{"misaligned for M5", Config{Timeframe: xau.M5}, h + r1 + "2024.01.02\t01:01:00\t2063.90\t2064.00\t2063.40\t2063.45\t98\t0\t30\n", 3, "not aligned to M5"},
		{"absurd spread", Config{Timeframe: xau.M1}, h + r1 + "2024.01.02\t01:01:00\t2063.90\t2064.00\t2063.40\t2063.45\t98\t0\t2100\n", 3, "spread"},
		{"absurd spread, 3-digit point", Config{Timeframe: xau.M1, Point: d("0.1")}, h + "2024.01.02\t01:00:00\t2063.55\t2064.10\t2063.20\t2063.90\t120\t0\t207\n", 2, "spread"},
		{"no rows", Config{Timeframe: xau.M1}, h, 0, "no bars"},
	}
	for _, c := range replayCases {
		_, err := New(c.cfg, strings.NewReader(c.text))
		var ce *CSVError
		if err == nil || !strings.Contains(err.Error(), c.want) || (c.line > 0 && (!errors.As(err, &ce) || ce.Line != c.line)) {
			t.Errorf("%s: err = %v, want line %d mentioning %q", c.name, err, c.line, c.want)
		}
	}
}

func TestReplayServerOffset(t *testing.T) {
	// A file written by a UTC+2 server: 01:00 server time is 23:00 UTC.
	now := time.Date(2024, 1, 2, 0, 0, 0, 0, time.UTC)
	rp, err := New(Config{Timeframe: xau.M1, ServerUTCOffset: 2 * time.Hour, Now: func() time.Time { return now }}, strings.NewReader(sampleHead))
	if err != nil {
		t.Fatal(err)
	}
	first, last := rp.Span()
	if !first.Equal(time.Date(2024, 1, 1, 23, 0, 0, 0, time.UTC)) || !last.Equal(time.Date(2024, 1, 1, 23, 2, 0, 0, time.UTC)) {
		t.Fatalf("span %s – %s", first, last)
	}
	q, err := rp.Quote(context.Background(), "XAUUSD")
	if err != nil || !q.Bid.Equal(d("2063.45")) || !q.Ask.Equal(d("2063.75")) {
		t.Fatalf("quote %+v, %v", q, err)
	}
}

// genRows generates valid MT5 rows: increasing aligned M1 times, consistent
// OHLC with 2 decimals.
func genRows() gopter.Gen {
	return gen.SliceOfN(40, gen.Int64Range(0, 1<<40)).Map(func(seeds []int64) []xau.MT5Row {
		rows := make([]xau.MT5Row, len(seeds))
		t := time.Date(2024, 3, 1, 0, 0, 0, 0, time.UTC)
		for i, s := range seeds {
			t = t.Add(time.Duration(1+s%3) * time.Minute)
			base := 100_000 + s%500_000 // cents
			o, c := base+(s>>8)%300, base+(s>>16)%300
			hi, lo := max(o, c)+(s>>24)%50, min(o, c)-(s>>30)%50
			rows[i] = xau.MT5Row{
				Bar:    xau.Bar{Time: t, Open: decimal.New(o, -2), High: decimal.New(hi, -2), Low: decimal.New(lo, -2), Close: decimal.New(c, -2), TickVolume: s % 1000},
				Volume: s % 7,
				Spread: s % 60,
			}
		}
		return rows
	})
}

func TestMT5CSVRoundTrip(t *testing.T) {
	params := gopter.DefaultTestParametersWithSeed(7)
	props := gopter.NewProperties(params)
	props.Property("ParseMT5CSV(WriteMT5CSV(rows)) = rows", prop.ForAll(
		func(rows []xau.MT5Row) bool {
			var buf bytes.Buffer
			if err := WriteMT5CSV(&buf, rows); err != nil {
				return false
			}
			got, err := ParseMT5CSV(&buf)
			if err != nil || len(got) != len(rows) {
				return false
			}
			for i := range rows {
				if !barEqual(got[i].Bar, rows[i].Bar) || got[i].Volume != rows[i].Volume || got[i].Spread != rows[i].Spread {
					return false
				}
			}
			return true
		},
		genRows(),
	))
	props.TestingRun(t)

	// Mixed precision: every price gets the most decimals of the file.
	rows := []xau.MT5Row{{Bar: mkBar(time.Date(2024, 1, 2, 1, 0, 0, 0, time.UTC), "2063.5", "2064", "2063.125", "2063.9", 1)}}
	var buf bytes.Buffer
	if err := WriteMT5CSV(&buf, rows); err != nil {
		t.Fatal(err)
	}
	if want := "2024.01.02\t01:00:00\t2063.500\t2064.000\t2063.125\t2063.900\t1\t0\t0\n"; !strings.HasSuffix(buf.String(), want) {
		t.Fatalf("got %q", buf.String())
	}
	// Invalid rows are refused before writing.
	for _, bad := range [][]xau.MT5Row{
		{{Bar: mkBar(time.Date(2024, 1, 2, 1, 0, 0, 0, time.UTC), "2", "1", "1", "1", 1)}},
		{{Bar: mkBar(time.Date(2024, 1, 2, 1, 0, 0, 5, time.UTC), "1", "1", "1", "1", 1)}},
		{{Bar: mkBar(time.Date(2024, 1, 2, 1, 0, 0, 0, time.UTC), "1", "1", "1", "1", 1), Spread: -1}},
		{{Bar: mkBar(time.Date(2024, 1, 2, 1, 0, 0, 0, time.UTC), "1.123456789", "2", "1", "1", 1)}},
		{rows[0], rows[0]},
	} {
		var out bytes.Buffer
		if err := WriteMT5CSV(&out, bad); err == nil || out.Len() != 0 {
			t.Errorf("WriteMT5CSV(%+v) = %v, wrote %d bytes", bad, err, out.Len())
		}
	}
}

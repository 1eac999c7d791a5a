package ledger_test

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/leanovate/gopter"
	"github.com/leanovate/gopter/gen"
	"github.com/leanovate/gopter/prop"

	"github.com/seed1284c1d2/svc/ledger"
)

var day0 = time.Date(2026, 3, 14, 23, 30, 0, 0, time.UTC)

func row(tool, amount, tx, ref string, at time.Time) ledger.Settlement {
	return ledger.Settlement{Payer: "0x209693Bc6afc0C5328bA36FaF03C514EF312287C", ToolKey: tool, Amount: amount,
		Asset: "0x833589fcd6edb6e08f4c7c32d4f71b54bda02913", Network: "eip155:8453", Transaction: tx,
		Nonce: "0x" + strings.Repeat("1", 64), RefCode: ref, Route: "POST /api/" + tool, Transport: "http", SettledAt: at}
}

func TestBuild(t *testing.T) {
	rows := []ledger.Settlement{
		row("risk-levels", "3400", "0xaa", "REFCODE234", day0),
		row("risk-levels", "3400", "local-dev:1", "REFCODE234", day0.Add(time.Hour)), // the next day (UTC)
		row("tick-pnl", "1500000", "0xbb", "", day0.Add(time.Hour)),
	}
	r, err := ledger.Build(day0.Add(-time.Hour), day0.Add(48*time.Hour), rows)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Entries) != 3 || r.Entries[0].AmountUSDC != "0.003400" || r.Entries[0].Dev || !r.Entries[1].Dev || r.Entries[2].AmountUSDC != "1.500000" {
		t.Fatalf("entries %+v", r.Entries)
	}
	want := ledger.Total{Key: "total", Calls: 2, AmountUSDC: "1.503400", DevCalls: 1, DevAmountUSDC: "0.003400"}
	if !sameTotal(r.Total, want) {
		t.Fatalf("total %+v, want %+v", r.Total, want)
	}
	if len(r.ByTool) != 2 || !sameTotal(r.ByTool[0], ledger.Total{Key: "risk-levels", Calls: 1, AmountUSDC: "0.003400", DevCalls: 1, DevAmountUSDC: "0.003400"}) {
		t.Fatalf("by tool %+v", r.ByTool)
	}
	if len(r.ByDay) != 2 || r.ByDay[0].Key != "2026-03-14" || r.ByDay[1].Key != "2026-03-15" || r.ByDay[1].Calls != 1 || r.ByDay[1].DevCalls != 1 {
		t.Fatalf("by day %+v", r.ByDay)
	}
	if len(r.ByRef) != 1 || r.ByRef[0].Key != "REFCODE234" || r.ByRef[0].Calls != 1 || r.ByRef[0].DevCalls != 1 {
		t.Fatalf("by ref %+v", r.ByRef)
	}
	if _, err := ledger.Build(day0, day0.Add(time.Hour), []ledger.Settlement{row("x", "-1", "", "", day0)}); err == nil {
		t.Fatal("a negative amount was accepted")
	}
}

func sameTotal(a, b ledger.Total) bool {
	return a.Key == b.Key && a.Calls == b.Calls && a.AmountUSDC == b.AmountUSDC && a.DevCalls == b.DevCalls && a.DevAmountUSDC == b.DevAmountUSDC
}

func TestFormatUSDC(t *testing.T) {
	for atomic, want := range map[string]string{"0": "0.000000", "1": "0.000001", "3400": "0.003400", "1000000": "1.000000",
		"123456789012345678901234567890": "123456789012345678901234.567890", "-5": "-0.000005"} {
		n, _ := new(big.Int).SetString(atomic, 10)
		if got := ledger.FormatUSDC(n); got != want {
			t.Errorf("FormatUSDC(%s) = %q, want %q", atomic, got, want)
		}
	}
}

// TestTotalsProperty: whatever the payments, the totals per tool and per
// day each add up to the grand total, real and dev apart, and every
// amount reads back as its atomic units.
func TestTotalsProperty(t *testing.T) {
	params := gopter.DefaultTestParameters()
	params.MinSuccessfulTests = 200
	props := gopter.NewProperties(params)
	type spec struct {
		Tool   int
		Amount uint64
		Dev    bool
		Hours  int
		Ref    int
	}
	genSpec := gopter.CombineGens(gen.IntRange(0, 4), gen.UInt64Range(0, 1<<50), gen.Bool(), gen.IntRange(0, 24*10), gen.IntRange(0, 3)).
		Map(func(v []any) spec {
			return spec{Tool: v[0].(int), Amount: v[1].(uint64), Dev: v[2].(bool), Hours: v[3].(int), Ref: v[4].(int)}
		})
	props.Property("totals add up", prop.ForAll(func(specs []spec) bool {
		var rows []ledger.Settlement
		sum, dev := new(big.Int), new(big.Int)
		for i, s := range specs {
			tx := fmt.Sprintf("0x%064x", i)
			if s.Dev {
				tx = "local-dev:" + tx
				dev.Add(dev, new(big.Int).SetUint64(s.Amount))
			} else {
				sum.Add(sum, new(big.Int).SetUint64(s.Amount))
			}
			ref := ""
			if s.Ref > 0 {
				ref = fmt.Sprintf("CODE%d", s.Ref)
			}
			rows = append(rows, row(fmt.Sprintf("tool-%d", s.Tool), fmt.Sprint(s.Amount), tx, ref, day0.Add(time.Duration(s.Hours)*time.Hour)))
		}
		r, err := ledger.Build(day0, day0.Add(11*24*time.Hour), rows)
		if err != nil || r.Total.AmountUSDC != ledger.FormatUSDC(sum) || r.Total.DevAmountUSDC != ledger.FormatUSDC(dev) {
			return false
		}
		for _, group := range [][]ledger.Total{r.ByTool, r.ByDay} {
			var calls, devCalls int64
			a, d := new(big.Int), new(big.Int)
			for _, g := range group {
				calls += g.Calls
				devCalls += g.DevCalls
				a.Add(a, usdc(g.AmountUSDC))
				d.Add(d, usdc(g.DevAmountUSDC))
			}
			if calls != r.Total.Calls || devCalls != r.Total.DevCalls || a.Cmp(sum) != 0 || d.Cmp(dev) != 0 || calls+devCalls != int64(len(specs)) {
				return false
			}
		}
		for i, e := range r.Entries {
			if usdc(e.AmountUSDC).Uint64() != specs[i].Amount || e.Dev != specs[i].Dev {
				return false
			}
		}
		return true
	}, gen.SliceOf(genSpec)))
	props.TestingRun(t)
}

// usdc reads a 6-decimal USDC string back to atomic units.
func usdc(s string) *big.Int {
	n, _ := new(big.Int).SetString(strings.Replace(s, ".", "", 1), 10)
	return n
}

func TestWriteCSVAndJSON(t *testing.T) {
	rows := []ledger.Settlement{
		row("risk-levels", "3400", "0xaa", "REFCODE234", day0),
		row("tick-pnl", "5000", "local-dev:1", "", day0.Add(2*time.Hour)),
	}
	rows[0].Route = `POST /api/risk-levels, "quoted"`
	r, err := ledger.Build(day0.Add(-time.Hour), day0.Add(48*time.Hour), rows)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := r.WriteCSV(&buf); err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(&buf).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	// header, 2 payments, 2 tools, 2 days, 1 ref, 1 total
	if len(recs) != 9 || strings.Join(recs[0], ",") != strings.Join(ledger.CSVHeader(), ",") {
		t.Fatalf("csv %d records: %v", len(recs), recs)
	}
	col := map[string]int{}
	for i, h := range recs[0] {
		col[h] = i
	}
	p0, p1, total := recs[1], recs[2], recs[8]
	if p0[col["record"]] != "payment" || p0[col["amount_usdc"]] != "0.003400" || p0[col["route"]] != rows[0].Route || p0[col["dev"]] != "false" ||
		p0[col["ref_code"]] != "REFCODE234" || p0[col["time"]] != "2026-03-14T23:30:00Z" {
		t.Fatalf("first payment %v", p0)
	}
	if p1[col["dev"]] != "true" || p1[col["amount_usdc"]] != "0.000000" || p1[col["dev_amount_usdc"]] != "0.005000" || p1[col["day"]] != "2026-03-15" {
		t.Fatalf("dev payment %v", p1)
	}
	if total[col["record"]] != "total" || total[col["amount_usdc"]] != "0.003400" || total[col["calls"]] != "1" || total[col["dev_calls"]] != "1" {
		t.Fatalf("total %v", total)
	}
	buf.Reset()
	if err := r.WriteJSON(&buf); err != nil {
		t.Fatal(err)
	}
	var back ledger.Report
	if err := json.Unmarshal(buf.Bytes(), &back); err != nil || len(back.Entries) != 2 || !sameTotal(back.Total, r.Total) || !back.Entries[1].Dev {
		t.Fatalf("json round trip: %v %+v", err, back)
	}
}

func TestParsePeriod(t *testing.T) {
	now := time.Date(2026, 3, 14, 15, 0, 0, 0, time.UTC)
	f, to, err := ledger.ParsePeriod("", "", now)
	if err != nil || !to.Equal(time.Date(2026, 3, 15, 0, 0, 0, 0, time.UTC)) || !f.Equal(time.Date(2026, 2, 13, 0, 0, 0, 0, time.UTC)) {
		t.Fatalf("default period %v %v %v", f, to, err)
	}
	f, to, err = ledger.ParsePeriod("2026-03-01", "2026-03-02T12:00:00+02:00", now)
	if err != nil || !f.Equal(time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)) || !to.Equal(time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC)) {
		t.Fatalf("explicit period %v %v %v", f, to, err)
	}
	for _, c := range [][2]string{{"2026-03-02", "2026-03-01"}, {"yesterday", ""}, {"", "2026-13-01"}, {"2026-03-01", "2026-03-01"}} {
		if _, _, err := ledger.ParsePeriod(c[0], c[1], now); err == nil {
			t.Errorf("ParsePeriod(%q, %q) accepted", c[0], c[1])
		}
	}
}

// FuzzParsePeriod: any input is a period with from before to, or an error;
// never a panic.
func FuzzParsePeriod(f *testing.F) {
	for _, s := range []string{"", "2026-03-01", "2026-03-01T10:00:00Z", "2026-03-01T10:00:00.123456789+14:00", "x", "9999-12-31"} {
		f.Add(s, "")
		f.Add("", s)
	}
	now := time.Date(2026, 3, 14, 15, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, from, to string) {
		a, b, err := ledger.ParsePeriod(from, to, now)
		if err == nil && !a.Before(b) {
			t.Fatalf("ParsePeriod(%q, %q) = %v, %v", from, to, a, b)
		}
		if err != nil && strings.Count(err.Error(), "\n") > 0 {
			t.Fatalf("multi-line error %q", err)
		}
	})
}

// sliceSource is a Source over rows in memory.
type sliceSource []ledger.Settlement

func (s sliceSource) EachSettlement(ctx context.Context, from, to time.Time, yield func(ledger.Settlement) error) error {
	for _, r := range s {
		if r.SettledAt.Before(from) || !r.SettledAt.Before(to) {
			continue
		}
		if err := yield(r); err != nil {
			return err
		}
	}
	return nil
}

// TestWriteStreamsWhatBuildReports: the streamed CSV is byte for byte the
// report's WriteCSV; the streamed JSON decodes to the report; Summarize
// has the report's totals and no entries.
func TestWriteStreamsWhatBuildReports(t *testing.T) {
	var rows sliceSource
	for i := range 500 {
		tx := fmt.Sprintf("0x%064x", i)
		if i%7 == 0 {
			tx = "local-dev:" + tx
		}
		ref := ""
		if i%3 == 0 {
			ref = fmt.Sprintf("REF%07d", i%11)
		}
		rows = append(rows, row([]string{"risk-levels", "tick-pnl", "jwt-decode"}[i%3], fmt.Sprint(1000+i), tx, ref, day0.Add(time.Duration(i)*7*time.Minute)))
	}
	from, to := day0.Add(-time.Hour), day0.Add(72*time.Hour)
	want, err := ledger.Build(from, to, rows)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()

	var wantCSV, gotCSV bytes.Buffer
	if err := want.WriteCSV(&wantCSV); err != nil {
		t.Fatal(err)
	}
	if err := ledger.Write(ctx, rows, from, to, ledger.CSV, &gotCSV); err != nil {
		t.Fatal(err)
	}
	if gotCSV.String() != wantCSV.String() {
		t.Fatalf("streamed CSV differs from the report's:\n%.500s\n…\n%.500s", gotCSV.String(), wantCSV.String())
	}

	var gotJSON bytes.Buffer
	if err := ledger.Write(ctx, rows, from, to, ledger.JSON, &gotJSON); err != nil {
		t.Fatal(err)
	}
	var back, wantBack ledger.Report
	var wantJSON bytes.Buffer
	if err := want.WriteJSON(&wantJSON); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(gotJSON.Bytes(), &back); err != nil {
		t.Fatalf("streamed JSON: %v\n%.500s", err, gotJSON.String())
	}
	if err := json.Unmarshal(wantJSON.Bytes(), &wantBack); err != nil {
		t.Fatal(err)
	}
	a, _ := json.Marshal(back)
	b, _ := json.Marshal(wantBack)
	if string(a) != string(b) {
		t.Fatalf("streamed JSON decodes to another report:\n%.600s\n%.600s", a, b)
	}

	sum, err := ledger.Summarize(ctx, rows, from, to)
	if err != nil {
		t.Fatal(err)
	}
	if len(sum.Entries) != 0 || !sameTotal(sum.Total, want.Total) || len(sum.ByTool) != len(want.ByTool) || len(sum.ByDay) != len(want.ByDay) || len(sum.ByRef) != len(want.ByRef) {
		t.Fatalf("summary %+v, report totals %+v", sum.Total, want.Total)
	}
	for i := range want.ByRef {
		if !sameTotal(sum.ByRef[i], want.ByRef[i]) {
			t.Fatalf("summary by ref %d: %+v, want %+v", i, sum.ByRef[i], want.ByRef[i])
		}
	}

	if err := ledger.Write(ctx, rows, from, to, ledger.Format("xml"), io.Discard); err == nil {
		t.Fatal("an unknown format was accepted")
	}
	bad := sliceSource{row("x", "-3", "0xaa", "", day0)}
	if err := ledger.Write(ctx, bad, from, to, ledger.CSV, io.Discard); err == nil {
		t.Fatal("a negative amount was streamed")
	}
}

// TestChannelCharges: a batch-settlement channel's charges (a voucher with
// no transaction, the deposit with its transaction) are counted in the
// totals and apart, as charges; an exact payment is not a charge.
func TestChannelCharges(t *testing.T) {
	channel := "0x" + strings.Repeat("ab", 32)
	voucher := row("risk-levels", "5000", "", "", day0)
	voucher.Nonce = channel + ":7500:voucher"
	deposit := row("tick-pnl", "2500", "0xdd", "", day0)
	deposit.Nonce = channel + ":2500:deposit"
	exact := row("risk-levels", "3400", "0xaa", "", day0)
	if !ledger.IsChannelCharge(voucher) || !ledger.IsChannelCharge(deposit) || ledger.IsChannelCharge(exact) {
		t.Fatal("IsChannelCharge tells the schemes' payments apart wrongly")
	}
	r, err := ledger.Build(day0.Add(-time.Hour), day0.Add(time.Hour), []ledger.Settlement{voucher, deposit, exact})
	if err != nil {
		t.Fatal(err)
	}
	if !r.Entries[0].ChannelCharge || !r.Entries[1].ChannelCharge || r.Entries[2].ChannelCharge {
		t.Fatalf("entries %+v", r.Entries)
	}
	if tt := r.Total; tt.Calls != 3 || tt.AmountUSDC != "0.010900" || tt.ChargeCalls != 2 || tt.ChargeAmountUSDC != "0.007500" {
		t.Fatalf("total %+v", tt)
	}
	if tl := r.ByTool[0]; tl.Key != "risk-levels" || tl.ChargeCalls != 1 || tl.ChargeAmountUSDC != "0.005000" {
		t.Fatalf("by tool %+v", r.ByTool)
	}
	var b strings.Builder
	if err := r.WriteCSV(&b); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), ",true,1,0.005000\n") || !strings.Contains(b.String(), "total,,,,,0.010900,,,,,,,,3,0,0.000000,,2,0.007500") {
		t.Fatalf("csv:\n%s", b.String())
	}
}

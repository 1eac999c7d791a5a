package svc_test

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/leanovate/gopter"
	"github.com/leanovate/gopter/prop"
	"github.com/shopspring/decimal"

	"github.com/seed1284c1d2/svc"
	"github.com/seed1284c1d2/svc/svctest"
)

func csvTestProfile(t *testing.T, req svc.CSVProfileRequest) svc.CSVProfileResponse {
	t.Helper()
	resp, err := svc.CSVProfile(context.Background(), req)
	if err != nil {
		t.Fatalf("CSVProfile(%q): %v", svc.CSVProfileRequest{CSV: req.CSV}.CSV, err)
	}
	return resp
}

func csvTestJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// csvTestFieldError asserts that err is a KindInvalid *svc.Error whose
// first field error has the field and rule, and returns its message.
func csvTestFieldError(t *testing.T, err error, field, rule string) string {
	t.Helper()
	var e *svc.Error
	if !errors.As(err, &e) || e.Kind != svc.KindInvalid || len(e.Fields) == 0 {
		t.Fatalf("want an invalid-input error on %s/%s, got %v", field, rule, err)
	}
	if e.Fields[0].Field != field || e.Fields[0].Rule != rule {
		t.Fatalf("want field %s rule %s, got %+v", field, rule, e.Fields)
	}
	return e.Fields[0].Message
}

func TestCSVProfilePublishedExample(t *testing.T) {
	resp := csvTestProfile(t, svc.CSVProfileRequest{CSV: "name,age\nAda,36\nBob,\nCara,29"})
	want := `{"delimiter":",","rows":3,"columnCount":2,"columns":[` +
		`{"name":"name","inferredType":"string","nonEmpty":3,"missing":0,"uniqueCount":3,"samples":["Ada","Bob","Cara"]},` +
		`{"name":"age","inferredType":"integer","nonEmpty":2,"missing":1,"uniqueCount":2,` +
		`"numeric":{"count":2,"min":29,"max":36,"mean":32.5},"samples":["36","29"]}],` +
		`"hasHeader":true,"delimiterDetected":true,"raggedRows":0,"raggedLines":[],"blankLines":0}`
	if got := csvTestJSON(t, resp); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	// The numeric column's fields, in their published order.
	age := csvTestJSON(t, resp.Columns[1])
	if !strings.Contains(age, `"inferredType":"integer","nonEmpty":2,"missing":1,"uniqueCount":2,"numeric":{"count":2,"min":29,"max":36,"mean":32.5}`) {
		t.Errorf("age column %s", age)
	}
}

func TestCSVProfileQuoting(t *testing.T) {
	tests := []struct {
		name, csv   string
		rows        int
		wantSamples [][]string
		wantLines   []int // raggedLines
	}{
		{"delimiter and doubled quotes inside quotes", "a,b\n\"x,1\",\"he said \"\"hi\"\"\"\n",
			1, [][]string{{"x,1"}, {`he said "hi"`}}, nil},
		{"CRLF records", "a,b\r\n1,2\r\n3,4\r\n", 2, [][]string{{"1", "3"}, {"2", "4"}}, nil},
		{"LF inside quotes", "a,b\n\"multi\nline\",1\n2,3\n", 2, [][]string{{"multi\nline", "2"}, {"1", "3"}}, nil},
		{"CRLF inside quotes reads as LF", "a\r\n\"x\r\ny\"\r\n", 1, [][]string{{"x\ny"}}, nil},
		{"lone CR is data", "a,b\nx\ry,1\n", 1, [][]string{{"x\ry"}, {"1"}}, nil},
		{"BOM dropped", "\uFEFFa,b\n1,2", 1, [][]string{{"1"}, {"2"}}, nil},
		{"trailing CR at end of input", "a,b\n1,2\r", 1, [][]string{{"1"}, {"2"}}, nil},
		{"quoted field then CR at end", "a,b\n1,\"2\"\r", 1, [][]string{{"1"}, {"2"}}, nil},
		{"empty quoted field is missing", "a,b\n\"\",1\n\" \",2\n", 2, [][]string{{}, {"1", "2"}}, nil},
		{"ragged after a multi-line record", "a,b\n\"x\ny\",1\nonly\n1,2,3\n", 3,
			[][]string{{"x\ny", "only", "1"}, {"1", "2"}}, []int{4, 5}},
		{"unicode delimiter in data is plain text", "a,b\nx§y,1\n", 1, [][]string{{"x§y"}, {"1"}}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := csvTestProfile(t, svc.CSVProfileRequest{CSV: tt.csv, Delimiter: "comma"})
			if resp.Rows != tt.rows {
				t.Errorf("rows = %d, want %d", resp.Rows, tt.rows)
			}
			if resp.Columns[0].Name != "a" {
				t.Errorf("first column named %q", resp.Columns[0].Name)
			}
			for i, want := range tt.wantSamples {
				if got := resp.Columns[i].Samples; fmt.Sprint(got) != fmt.Sprint(want) || len(got) != len(want) {
					t.Errorf("column %d samples %q, want %q", i, got, want)
				}
			}
			if fmt.Sprint(resp.RaggedLines) != fmt.Sprint(append([]int{}, tt.wantLines...)) {
				t.Errorf("raggedLines %v, want %v", resp.RaggedLines, tt.wantLines)
			}
		})
	}
}

func TestCSVProfileBlankLines(t *testing.T) {
	resp := csvTestProfile(t, svc.CSVProfileRequest{CSV: "a\n\n1\r\n\r\n2\n\n"})
	if resp.Rows != 2 || resp.BlankLines != 3 || resp.Columns[0].InferredType != svc.CSVTypeInteger {
		t.Errorf("got %s", csvTestJSON(t, resp))
	}
}

func TestCSVProfileDelimiters(t *testing.T) {
	tests := []struct {
		name, csv, delimiter, want string
		detected                   bool
		columns                    int
	}{
		{"auto comma", "a,b\n1,2", "", ",", true, 2},
		{"auto semicolon with decimal commas", "a;b\n1;2,5\n3;4,5", "auto", ";", true, 2},
		{"auto tab", "a\tb\tc\n1\t2\t3", "AUTO", "\t", true, 3},
		{"auto pipe", "a|b\n1|2", "", "|", true, 2},
		{"auto tie goes to comma", "a,b;c\n1,2;3", "", ",", true, 2},
		{"auto tie goes to the larger field count", "a;b;c,d\n1;2;3,4", "", ";", true, 3},
		{"auto most consistent wins", "a;b\nx,y;1\nz;2,3,4\nw;3", "", ";", true, 2},
		{"auto skips a candidate with quote errors", "a;\"b,c\"\n1;\"2,3\"", "", ";", true, 2},
		{"auto without any split falls back to comma", "abc\ndef", "", ",", true, 1},
		{"comma by name", "a;b,c\n1;2,3", "comma", ",", false, 2},
		{"semicolon by name", "a;b,c\n1;2,3", "semicolon", ";", false, 2},
		{"tab by name, any case", "a\tb\n1\t2", "TAB", "\t", false, 2},
		{"pipe by name", "a|b|c\n1|2|3", "pipe", "|", false, 3},
		{"literal semicolon", "a;b\n1;2", ";", ";", false, 2},
		{"literal colon", "a:b:c\n1:2:3", ":", ":", false, 3},
		{"literal multi-byte", "a§b\n1§\"2§3\"", "§", "§", false, 2},
		{"literal space", "a b\n1 2", " ", " ", false, 2},
		{"given delimiter is not second-guessed", "a,b\n1,2", ";", ";", false, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := csvTestProfile(t, svc.CSVProfileRequest{CSV: tt.csv, Delimiter: tt.delimiter})
			if resp.Delimiter != tt.want || resp.DelimiterDetected != tt.detected || resp.ColumnCount != tt.columns {
				t.Errorf("delimiter %q detected %v columns %d, want %q %v %d",
					resp.Delimiter, resp.DelimiterDetected, resp.ColumnCount, tt.want, tt.detected, tt.columns)
			}
		})
	}
	t.Run("literal multi-byte splits quoted fields", func(t *testing.T) {
		resp := csvTestProfile(t, svc.CSVProfileRequest{CSV: "a§b\n1§\"2§3\"", Delimiter: "§"})
		if got := resp.Columns[1].Samples; len(got) != 1 || got[0] != "2§3" {
			t.Errorf("samples %q", got)
		}
	})
}

func TestCSVProfileDelimiterErrors(t *testing.T) {
	for _, d := range []string{"ab", "commas", ",;", "\t\t"} {
		_, err := svc.CSVProfile(context.Background(), svc.CSVProfileRequest{CSV: "a", Delimiter: d})
		msg := csvTestFieldError(t, err, "delimiter", "oneof")
		if !strings.Contains(msg, "single character") {
			t.Errorf("%q: message %q", d, msg)
		}
	}
	for _, d := range []string{`"`, "\r", "\n", "\x00", "\xff"} {
		_, err := svc.CSVProfile(context.Background(), svc.CSVProfileRequest{CSV: "a", Delimiter: d})
		csvTestFieldError(t, err, "delimiter", "delimiter_char")
	}
}

func TestCSVProfileRagged(t *testing.T) {
	resp := csvTestProfile(t, svc.CSVProfileRequest{CSV: "a,b,c\n1,2,3\n4,5\n6,7,8,9\n\n10\n11,12,13\n"})
	if resp.Rows != 5 || resp.ColumnCount != 3 || resp.RaggedRows != 3 {
		t.Fatalf("got %s", csvTestJSON(t, resp))
	}
	if fmt.Sprint(resp.RaggedLines) != "[3 4 6]" {
		t.Errorf("raggedLines %v", resp.RaggedLines)
	}
	// Short rows: absent cells are missing. Long rows: extra cells ignored.
	b, c := resp.Columns[1], resp.Columns[2]
	if b.NonEmpty != 4 || b.Missing != 1 || c.NonEmpty != 3 || c.Missing != 2 {
		t.Errorf("b %+v c %+v", b, c)
	}
	if c.Numeric == nil || c.Numeric.Max.String() != "13" || c.UniqueCount != 3 {
		t.Errorf("c %s (the ignored 9 must not count)", csvTestJSON(t, c))
	}
	// Only the first 10 ragged lines are listed; all are counted.
	var sb strings.Builder
	sb.WriteString("a,b\n")
	for range 25 {
		sb.WriteString("1\n")
	}
	resp = csvTestProfile(t, svc.CSVProfileRequest{CSV: sb.String()})
	if resp.RaggedRows != 25 || len(resp.RaggedLines) != 10 || resp.RaggedLines[9] != 11 {
		t.Errorf("raggedRows %d lines %v", resp.RaggedRows, resp.RaggedLines)
	}
}

func TestCSVProfileBrokenQuotes(t *testing.T) {
	tests := []struct{ name, csv, line string }{
		{"bare quote in an unquoted field", "a,b\n1,2\nx\"y,3\n", "line 3:"},
		{"bare quote after leading space", "a,b\n \"x\",3\n", "line 2:"},
		{"text after the closing quote", "a,b\n\"abc\"d,1\n", "line 2:"},
		{"quoted field never closed", "a,b\n1,2\n\"open,3\n4,5\n", "line 3:"},
		{"error after a multi-line field", "a,b\n\"x\ny\",1\n2,\"z\"q\n", "line 4:"},
		{"CR not followed by LF after a quote", "a\n\"x\"\ry\n", "line 2:"},
		{"in the header", "a\"b\n1\n", "line 1:"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := svc.CSVProfile(context.Background(), svc.CSVProfileRequest{CSV: tt.csv, Delimiter: "comma"})
			msg := csvTestFieldError(t, err, "csv", "csv_quote")
			if !strings.Contains(msg, tt.line) {
				t.Errorf("message %q does not name %q", msg, tt.line)
			}
			if svc.KindOf(err) != svc.KindInvalid {
				t.Errorf("kind %v", svc.KindOf(err))
			}
		})
	}
}

func TestCSVProfileHeaderNames(t *testing.T) {
	resp := csvTestProfile(t, svc.CSVProfileRequest{CSV: "age,age,,age_2, name ,column_3,age\n1,2,3,4,5,6,7"})
	want := "[age age_3 column_3 age_2 name column_3_2 age_4]"
	var got []string
	for _, c := range resp.Columns {
		got = append(got, c.Name)
	}
	if fmt.Sprint(got) != want {
		t.Errorf("names %v, want %s", got, want)
	}

	resp = csvTestProfile(t, svc.CSVProfileRequest{CSV: "1,2\n3,4\n", HasHeader: new(false)})
	if resp.Rows != 2 || resp.HasHeader || resp.Columns[0].Name != "column_1" || resp.Columns[1].Name != "column_2" ||
		resp.Columns[0].Numeric.Min.String() != "1" {
		t.Errorf("no header: %s", csvTestJSON(t, resp))
	}

	long := strings.Repeat("n", 300)
	resp = csvTestProfile(t, svc.CSVProfileRequest{CSV: long + "\n1"})
	if n := utf8.RuneCountInString(resp.Columns[0].Name); n != 101 || !strings.HasSuffix(resp.Columns[0].Name, "…") {
		t.Errorf("long header name kept %d runes", n)
	}
}

func TestCSVProfileInferredTypes(t *testing.T) {
	tests := []struct {
		cells []string
		want  string
	}{
		{[]string{"1", "-2", "+3", "007", "-0"}, svc.CSVTypeInteger},
		{[]string{"123456789012345678901234567890", "1"}, svc.CSVTypeInteger},
		{[]string{"1", "2.5"}, svc.CSVTypeNumber},
		{[]string{"1e2", ".5", "-1.25E-3", "+0.0"}, svc.CSVTypeNumber},
		{[]string{"1e100"}, svc.CSVTypeNumber},
		{[]string{"1e101"}, svc.CSVTypeString},
		{[]string{"1" + strings.Repeat("0", 100)}, svc.CSVTypeString},
		{[]string{"1."}, svc.CSVTypeString},
		{[]string{"NaN"}, svc.CSVTypeString},
		{[]string{"Infinity"}, svc.CSVTypeString},
		{[]string{"1,000"}, svc.CSVTypeString},
		{[]string{"0x1F"}, svc.CSVTypeString},
		{[]string{"true", "FALSE", "True", " false "}, svc.CSVTypeBoolean},
		{[]string{"true", "yes"}, svc.CSVTypeString},
		{[]string{"1", "true"}, svc.CSVTypeString},
		{[]string{"2024-02-29", "2023-12-31", "0001-01-01"}, svc.CSVTypeDate},
		{[]string{"2023-02-29"}, svc.CSVTypeString},
		{[]string{"2024-1-02"}, svc.CSVTypeString},
		{[]string{"2024-01-02T03:04:05Z", "2024-01-02T03:04:05.123+01:00", "1999-12-31T23:59:59-23:59"}, svc.CSVTypeDateTime},
		{[]string{"2024-01-02 03:04:05Z"}, svc.CSVTypeString},
		{[]string{"2024-01-02T24:00:00Z"}, svc.CSVTypeString},
		{[]string{"2024-01-02T03:04:60Z"}, svc.CSVTypeString},
		{[]string{"2024-01-02t03:04:05z"}, svc.CSVTypeString},
		{[]string{"2024-01-02T03:04:05+0100"}, svc.CSVTypeString},
		{[]string{"2024-01-02T03:04:05+24:00"}, svc.CSVTypeString},
		{[]string{"2024-01-02", "2024-01-02T03:04:05Z"}, svc.CSVTypeString},
		{[]string{"", "  ", "\t"}, svc.CSVTypeEmpty},
		{[]string{"hello"}, svc.CSVTypeString},
	}
	for _, tt := range tests {
		var sb strings.Builder
		sb.WriteString("v,k\n")
		for _, c := range tt.cells {
			sb.WriteString(`"` + c + `",x` + "\n")
		}
		resp := csvTestProfile(t, svc.CSVProfileRequest{CSV: sb.String()})
		col := resp.Columns[0]
		if col.InferredType != tt.want {
			t.Errorf("%q: inferred %s, want %s", tt.cells, col.InferredType, tt.want)
		}
		numeric := tt.want == svc.CSVTypeInteger || tt.want == svc.CSVTypeNumber
		if (col.Numeric != nil) != numeric {
			t.Errorf("%q: numeric %v", tt.cells, col.Numeric)
		}
		if numeric && col.Numeric.Count != col.NonEmpty {
			t.Errorf("%q: numeric count %d, nonEmpty %d", tt.cells, col.Numeric.Count, col.NonEmpty)
		}
	}
}

func TestCSVProfileNumericStats(t *testing.T) {
	tests := []struct {
		cells          []string
		min, max, mean string
	}{
		{[]string{"1", "2", "2"}, "1", "2", "1.66666667"},
		{[]string{"0.1", "0.25", "3"}, "0.1", "3", "1.11666667"},
		{[]string{"1.5e3", "-2E-2"}, "-0.02", "1500", "749.99"},
		{[]string{"9223372036854775807", "9223372036854775808"}, "9223372036854775807", "9223372036854775808", "9223372036854775807.5"},
		{[]string{"5000000000000000000", "5000000000000000000", "-1"}, "-1", "5000000000000000000", "3333333333333333333"},
		{[]string{"0.12345678901234567890", "1"}, "0.1234567890123456789", "1", "0.56172839450617283945"},
		{[]string{"-123456789012345678901234567890", "0"}, "-123456789012345678901234567890", "0", "-61728394506172839450617283945"},
		{[]string{"1e-100", "1e100"}, "1e-100", "1e100", ""},
		{[]string{"2", "1", "0.000000001"}, "0.000000001", "2", "1.00000000"},
		{[]string{"-0", "0.0"}, "0", "0", "0"},
	}
	for _, tt := range tests {
		var sb strings.Builder
		sb.WriteString("v\n")
		for _, c := range tt.cells {
			sb.WriteString(c + "\n")
		}
		resp := csvTestProfile(t, svc.CSVProfileRequest{CSV: sb.String()})
		n := resp.Columns[0].Numeric
		if n == nil || n.Count != len(tt.cells) {
			t.Fatalf("%q: numeric %+v", tt.cells, n)
		}
		wantMin, wantMax := decimal.RequireFromString(tt.min), decimal.RequireFromString(tt.max)
		if !n.Min.Decimal().Equal(wantMin) || !n.Max.Decimal().Equal(wantMax) {
			t.Errorf("%q: min %s max %s, want %s %s", tt.cells, n.Min, n.Max, tt.min, tt.max)
		}
		if tt.mean != "" && !n.Mean.Decimal().Equal(decimal.RequireFromString(tt.mean)) {
			t.Errorf("%q: mean %s, want %s", tt.cells, n.Mean, tt.mean)
		}
		if tt.mean == "" && !n.Mean.Decimal().Equal(decimal.New(5, 99)) {
			t.Errorf("%q: mean %s, want 5e99 (exact)", tt.cells, n.Mean)
		}
	}
	// Numbers encode as plain JSON numbers.
	resp := csvTestProfile(t, svc.CSVProfileRequest{CSV: "v\n0.1\n0.2\n"})
	if got := csvTestJSON(t, resp.Columns[0].Numeric); got != `{"count":2,"min":0.1,"max":0.2,"mean":0.15}` {
		t.Errorf("numeric JSON %s", got)
	}
}

func TestCSVProfileUniqueAndMissing(t *testing.T) {
	resp := csvTestProfile(t, svc.CSVProfileRequest{CSV: "a,b\nx,1\n x ,1\nX,\ny,  \n,\t\n"})
	a, b := resp.Columns[0], resp.Columns[1]
	// Values are compared trimmed: "x" and " x " are one value, "X" another.
	if a.NonEmpty != 4 || a.Missing != 1 || a.UniqueCount != 3 || fmt.Sprint(a.Samples) != "[x X y]" {
		t.Errorf("a %s", csvTestJSON(t, a))
	}
	if b.NonEmpty != 2 || b.Missing != 3 || b.UniqueCount != 1 {
		t.Errorf("b %s", csvTestJSON(t, b))
	}
	// Samples are cut to 40 characters.
	resp = csvTestProfile(t, svc.CSVProfileRequest{CSV: "a\n" + strings.Repeat("é", 60)})
	if s := resp.Columns[0].Samples[0]; utf8.RuneCountInString(s) != 41 || !strings.HasSuffix(s, "…") {
		t.Errorf("sample %q", s)
	}
}

func TestCSVProfileEmptyInput(t *testing.T) {
	_, err := svc.CSVProfile(context.Background(), svc.CSVProfileRequest{})
	csvTestFieldError(t, err, "csv", "required")
	for _, s := range []string{"\n", "\r\n\n", "\uFEFF", "\uFEFF\n\r"} {
		_, err := svc.CSVProfile(context.Background(), svc.CSVProfileRequest{CSV: s})
		csvTestFieldError(t, err, "csv", "csv_empty")
	}
	resp := csvTestProfile(t, svc.CSVProfileRequest{CSV: "a,b\n"})
	if resp.Rows != 0 || resp.ColumnCount != 2 || resp.Columns[1].InferredType != svc.CSVTypeEmpty ||
		resp.Columns[1].Numeric != nil || resp.Columns[1].Samples == nil {
		t.Errorf("header only: %s", csvTestJSON(t, resp))
	}
}

func TestCSVProfileCanceled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := svc.CSVProfile(ctx, svc.CSVProfileRequest{CSV: "a\n1"})
	if svc.KindOf(err) != svc.KindTimeout || !errors.Is(err, context.Canceled) {
		t.Errorf("err %v", err)
	}
	// A large document notices cancellation while it is scanned.
	doc := string(svctest.GenerateCSV(2<<20, 1))
	ctx = &csvTestCancelLater{Context: context.Background(), after: 1}
	_, err = svc.CSVProfile(ctx, svc.CSVProfileRequest{CSV: doc})
	if svc.KindOf(err) != svc.KindTimeout || !strings.Contains(err.Error(), "stopped at line") {
		t.Errorf("err %v", err)
	}
}

// csvTestCancelLater is a context whose Err turns to Canceled after a
// number of calls, to cancel a tool in the middle of its work.
type csvTestCancelLater struct {
	context.Context
	after int
}

func (c *csvTestCancelLater) Err() error {
	if c.after > 0 {
		c.after--
		return nil
	}
	return context.Canceled
}

func TestCSVProfileUniqueBudget(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: builds a 5 MB document (the full go test runs it)")
	}
	// 800 000 distinct values need a 1M-slot (8 MiB) hash table, beyond
	// the budget of max(8 MiB, input size): uniqueCount becomes a flagged
	// lower bound.
	var sb strings.Builder
	sb.WriteString("v\n")
	for i := range 800_000 {
		sb.WriteString(strconv.Itoa(i))
		sb.WriteByte('\n')
	}
	resp := csvTestProfile(t, svc.CSVProfileRequest{CSV: sb.String()})
	c := resp.Columns[0]
	if !c.UniqueCountCapped || c.UniqueCount >= c.NonEmpty || c.UniqueCount < 100_000 || c.NonEmpty != 800_000 {
		t.Errorf("capped %v uniqueCount %d nonEmpty %d", c.UniqueCountCapped, c.UniqueCount, c.NonEmpty)
	}
	if !strings.Contains(csvTestJSON(t, c), `"uniqueCountCapped":true`) {
		t.Error("flag not encoded")
	}
	// Within the budget the count is exact.
	sb.Reset()
	sb.WriteString("v\n")
	for i := range 150_000 {
		sb.WriteString(strconv.Itoa(i % 100_000))
		sb.WriteByte('\n')
	}
	resp = csvTestProfile(t, svc.CSVProfileRequest{CSV: sb.String()})
	if c := resp.Columns[0]; c.UniqueCountCapped || c.UniqueCount != 100_000 {
		t.Errorf("capped %v uniqueCount %d", c.UniqueCountCapped, c.UniqueCount)
	}
}

func TestCSVProfileGeneratedDocument(t *testing.T) {
	doc := svctest.GenerateCSV(1<<20, 7)
	if string(doc) != string(svctest.GenerateCSV(1<<20, 7)) {
		t.Fatal("GenerateCSV is not deterministic")
	}
	resp := csvTestProfile(t, svc.CSVProfileRequest{CSV: string(doc)})
	types := map[string]string{}
	for _, c := range resp.Columns {
		types[c.Name] = c.InferredType
	}
	want := map[string]string{"id": "integer", "price": "number", "name": "string", "date": "date",
		"active": "boolean", "qty": "integer", "comment": "string", "updated": "datetime"}
	if fmt.Sprint(types) != fmt.Sprint(want) || resp.RaggedRows != 0 || resp.Delimiter != "," {
		t.Errorf("types %v ragged %d", types, resp.RaggedRows)
	}
	if id := resp.Columns[0]; id.UniqueCount != resp.Rows || id.Numeric.Min.String() != "1" {
		t.Errorf("id %s", csvTestJSON(t, id))
	}
	if msg := csvOracleCompare(svc.CSVProfileRequest{CSV: string(doc)}, resp, nil); msg != "" {
		t.Error(msg)
	}
}

// csvCheckInvariants returns "" when resp is self-consistent, or what is not.
func csvCheckInvariants(resp svc.CSVProfileResponse) string {
	if len(resp.Columns) != resp.ColumnCount || resp.ColumnCount < 1 {
		return fmt.Sprintf("columnCount %d, %d columns", resp.ColumnCount, len(resp.Columns))
	}
	if resp.RaggedRows > resp.Rows || len(resp.RaggedLines) != min(resp.RaggedRows, 10) {
		return fmt.Sprintf("raggedRows %d raggedLines %v rows %d", resp.RaggedRows, resp.RaggedLines, resp.Rows)
	}
	names := map[string]bool{}
	for _, c := range resp.Columns {
		if names[c.Name] || c.Name == "" {
			return fmt.Sprintf("column name %q empty or repeated", c.Name)
		}
		names[c.Name] = true
		if c.NonEmpty+c.Missing != resp.Rows {
			return fmt.Sprintf("%s: nonEmpty %d + missing %d != rows %d", c.Name, c.NonEmpty, c.Missing, resp.Rows)
		}
		if c.UniqueCount > c.NonEmpty || (c.NonEmpty > 0 && c.UniqueCount < 1) || len(c.Samples) > min(3, c.NonEmpty) {
			return fmt.Sprintf("%s: uniqueCount %d nonEmpty %d samples %d", c.Name, c.UniqueCount, c.NonEmpty, len(c.Samples))
		}
		if (c.NonEmpty == 0) != (c.InferredType == svc.CSVTypeEmpty) {
			return fmt.Sprintf("%s: type %s with %d values", c.Name, c.InferredType, c.NonEmpty)
		}
		numeric := c.InferredType == svc.CSVTypeInteger || c.InferredType == svc.CSVTypeNumber
		if numeric != (c.Numeric != nil) {
			return fmt.Sprintf("%s: type %s numeric %v", c.Name, c.InferredType, c.Numeric)
		}
		if n := c.Numeric; n != nil {
			lo, mean, hi := n.Min.Decimal(), n.Mean.Decimal(), n.Max.Decimal()
			if n.Count != c.NonEmpty || lo.GreaterThan(mean) || mean.GreaterThan(hi) {
				return fmt.Sprintf("%s: numeric %+v nonEmpty %d", c.Name, n, c.NonEmpty)
			}
		}
	}
	return ""
}

// Oracle: encoding/csv for parsing, regular expressions and time.Parse for
// types, big.Rat for the mean. Independent of the scanner under test.
var (
	csvOracleInt = regexp.MustCompile(`^[+-]?[0-9]+$`)
	csvOracleNum = regexp.MustCompile(`^[+-]?([0-9]+(\.[0-9]+)?|\.[0-9]+)([eE]([+-]?)([0-9]+))?$`)
	csvOracleDT  = regexp.MustCompile(`^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-](\d{2}):(\d{2}))$`)
)

func csvOracleType(v string) string {
	if len(v) <= 100 {
		if m := csvOracleNum.FindStringSubmatch(v); m != nil {
			exp, _ := new(big.Int).SetString("0"+m[5], 10)
			if exp == nil || exp.Cmp(big.NewInt(100)) <= 0 {
				if csvOracleInt.MatchString(v) {
					return svc.CSVTypeInteger
				}
				return svc.CSVTypeNumber
			}
		}
	}
	if strings.EqualFold(v, "true") || strings.EqualFold(v, "false") {
		return svc.CSVTypeBoolean
	}
	if _, err := time.Parse(time.DateOnly, v); err == nil && len(v) == 10 {
		return svc.CSVTypeDate
	}
	if m := csvOracleDT.FindStringSubmatch(v); m != nil {
		if _, err := time.Parse(time.RFC3339, v); err == nil && (m[2] == "Z" || (m[3] <= "23" && m[4] <= "59")) {
			return svc.CSVTypeDateTime
		}
	}
	return svc.CSVTypeString
}

// csvOracleColumnType folds cell types into the column type.
func csvOracleColumnType(types map[string]bool) string {
	switch {
	case len(types) == 0:
		return svc.CSVTypeEmpty
	case len(types) == 1:
		for t := range types {
			return t
		}
	case len(types) == 2 && types[svc.CSVTypeInteger] && types[svc.CSVTypeNumber]:
		return svc.CSVTypeNumber
	}
	return svc.CSVTypeString
}

// csvOracleMean is sum/count, exact when it terminates within 48 decimal
// places (as svc's quo detects it), else rounded to 8 places (such a
// quotient is never on a tie).
func csvOracleMean(sum *big.Rat, count int) decimal.Decimal {
	q := new(big.Rat).Quo(sum, big.NewRat(int64(count), 1))
	scaled := new(big.Rat).Mul(q, new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(48), nil)))
	if scaled.IsInt() {
		return decimal.RequireFromString(q.FloatString(48))
	}
	return decimal.RequireFromString(q.FloatString(8))
}

// csvOracleCompare profiles req with encoding/csv and the oracle rules and
// returns "" when resp (or err) agrees with it.
func csvOracleCompare(req svc.CSVProfileRequest, resp svc.CSVProfileResponse, err error) string {
	delim := resp.Delimiter
	if err != nil {
		switch strings.ToLower(req.Delimiter) {
		case "", "auto":
			return "" // the detected delimiter is unknown after an error
		case "comma":
			delim = ","
		case "semicolon":
			delim = ";"
		case "tab":
			delim = "\t"
		case "pipe":
			delim = "|"
		default:
			delim = req.Delimiter
		}
	}
	comma, _ := utf8.DecodeRuneInString(delim)
	r := csv.NewReader(strings.NewReader(strings.TrimPrefix(req.CSV, "\uFEFF")))
	r.Comma = comma
	r.FieldsPerRecord = -1
	var records [][]string
	var perr *csv.ParseError
	for {
		rec, e := r.Read()
		if e == io.EOF {
			break
		}
		if e != nil {
			if !errors.As(e, &perr) {
				return fmt.Sprintf("encoding/csv: %v", e)
			}
			break
		}
		records = append(records, rec)
	}
	if perr != nil {
		var se *svc.Error
		if !errors.As(err, &se) || len(se.Fields) == 0 || se.Fields[0].Rule != "csv_quote" {
			return fmt.Sprintf("encoding/csv fails with %v, CSVProfile gave %v", perr, err)
		}
		// The line named lies within the failing record.
		var line int
		fmt.Sscanf(se.Fields[0].Message[strings.Index(se.Fields[0].Message, "line "):], "line %d", &line)
		if line < perr.StartLine || line > perr.Line {
			return fmt.Sprintf("error names line %d, encoding/csv says %d–%d (%v)", line, perr.StartLine, perr.Line, perr)
		}
		return ""
	}
	if len(records) == 0 {
		if svc.KindOf(err) != svc.KindInvalid || !strings.Contains(err.Error(), "no record") {
			return fmt.Sprintf("no records, got %v", err)
		}
		return ""
	}
	if err != nil {
		return fmt.Sprintf("encoding/csv parses %d records, CSVProfile fails: %v", len(records), err)
	}
	hasHeader := req.HasHeader == nil || *req.HasHeader
	ncols := len(records[0])
	data := records
	if hasHeader {
		data = records[1:]
	}
	if resp.Rows != len(data) || resp.ColumnCount != ncols {
		return fmt.Sprintf("rows %d columns %d, oracle %d %d", resp.Rows, resp.ColumnCount, len(data), ncols)
	}
	ragged := 0
	for _, rec := range data {
		if len(rec) != ncols {
			ragged++
		}
	}
	if resp.RaggedRows != ragged {
		return fmt.Sprintf("raggedRows %d, oracle %d", resp.RaggedRows, ragged)
	}
	for i, col := range resp.Columns {
		if hasHeader {
			if h := strings.TrimSpace(records[0][i]); h != "" && utf8.RuneCountInString(h) <= 100 && col.Name != h && !strings.HasPrefix(col.Name, h+"_") {
				return fmt.Sprintf("column %d named %q, header %q", i, col.Name, h)
			}
		}
		nonEmpty := 0
		distinct := map[string]bool{}
		types := map[string]bool{}
		sum, lo, hi := new(big.Rat), (*big.Rat)(nil), (*big.Rat)(nil)
		for _, rec := range data {
			if i >= len(rec) {
				continue
			}
			v := strings.TrimSpace(rec[i])
			if v == "" {
				continue
			}
			nonEmpty++
			distinct[v] = true
			ty := csvOracleType(v)
			types[ty] = true
			if ty == svc.CSVTypeInteger || ty == svc.CSVTypeNumber {
				x, ok := new(big.Rat).SetString(v)
				if !ok {
					return fmt.Sprintf("big.Rat cannot parse %q", v)
				}
				sum.Add(sum, x)
				if lo == nil || x.Cmp(lo) < 0 {
					lo = x
				}
				if hi == nil || x.Cmp(hi) > 0 {
					hi = x
				}
			}
		}
		if col.NonEmpty != nonEmpty || col.UniqueCount != len(distinct) {
			return fmt.Sprintf("column %d: nonEmpty %d unique %d, oracle %d %d", i, col.NonEmpty, col.UniqueCount, nonEmpty, len(distinct))
		}
		ty := csvOracleColumnType(types)
		if col.InferredType != ty {
			return fmt.Sprintf("column %d: type %s, oracle %s (%v)", i, col.InferredType, ty, types)
		}
		if ty == svc.CSVTypeInteger || ty == svc.CSVTypeNumber {
			n := col.Numeric
			ratEq := func(d decimal.Decimal, r *big.Rat) bool { return d.Rat().Cmp(r) == 0 }
			if n == nil || n.Count != nonEmpty || !ratEq(n.Min.Decimal(), lo) || !ratEq(n.Max.Decimal(), hi) ||
				!n.Mean.Decimal().Equal(csvOracleMean(sum, nonEmpty)) {
				return fmt.Sprintf("column %d: numeric %s, oracle min %s max %s mean %s", i, csvJSONString(n),
					lo.RatString(), hi.RatString(), csvOracleMean(sum, nonEmpty))
			}
		}
	}
	return ""
}

func csvJSONString(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func TestCSVProfileProperties(t *testing.T) {
	params := gopter.DefaultTestParameters()
	params.MinSuccessfulTests = 500
	properties := gopter.NewProperties(params)
	properties.Property("generated requests profile consistently and agree with the oracle", prop.ForAll(
		func(req svc.CSVProfileRequest) string {
			resp, err := svc.CSVProfile(context.Background(), req)
			if err != nil {
				return fmt.Sprintf("valid request rejected: %v", err)
			}
			if msg := csvCheckInvariants(resp); msg != "" {
				return msg
			}
			return csvOracleCompare(req, resp, nil)
		},
		svctest.CSVProfileRequest(),
	))
	properties.Property("CRLF and LF line ends give the same profile", prop.ForAll(
		func(doc string) string {
			lf := strings.ReplaceAll(doc, "\r\n", "\n")
			crlf := strings.ReplaceAll(lf, "\n", "\r\n")
			a, err1 := svc.CSVProfile(context.Background(), svc.CSVProfileRequest{CSV: lf})
			b, err2 := svc.CSVProfile(context.Background(), svc.CSVProfileRequest{CSV: crlf})
			if err1 != nil || err2 != nil {
				return fmt.Sprint(err1, err2)
			}
			if x, y := csvJSONString(a), csvJSONString(b); x != y {
				return "LF " + x + "\nCRLF " + y
			}
			return ""
		},
		svctest.CSVDocument(),
	))
	properties.Property("without a header the first record is one more data row", prop.ForAll(
		func(req svc.CSVProfileRequest) string {
			req.HasHeader = new(true)
			with, err1 := svc.CSVProfile(context.Background(), req)
			req.HasHeader = new(false)
			without, err2 := svc.CSVProfile(context.Background(), req)
			if err1 != nil || err2 != nil {
				return fmt.Sprint(err1, err2)
			}
			if without.Rows != with.Rows+1 || without.ColumnCount != with.ColumnCount || without.RaggedRows != with.RaggedRows {
				return fmt.Sprintf("rows %d/%d columns %d/%d", with.Rows, without.Rows, with.ColumnCount, without.ColumnCount)
			}
			for i, c := range without.Columns {
				if c.Name != fmt.Sprintf("column_%d", i+1) || c.NonEmpty+c.Missing != with.Columns[i].NonEmpty+with.Columns[i].Missing+1 {
					return fmt.Sprintf("column %d: %+v", i, c)
				}
			}
			return ""
		},
		svctest.CSVProfileRequest(),
	))
	properties.TestingRun(t)
}

func FuzzCSVProfile(f *testing.F) {
	f.Add("name,age\nAda,36\nBob,\nCara,29", "", true)
	f.Add("a;b\r\n\"x;\"\"y\"\"\";1,5\r\n", "semicolon", true)
	f.Add("\uFEFFa\tb\n1\t\n", "tab", false)
	f.Add("a|b\n\"unterminated|1\n", "pipe", true)
	f.Add("a,b\n1\n1,2,3\n", ",", true)
	f.Add("v\n1e2\n-0\n9223372036854775808\n", "auto", true)
	f.Add("a§b\n1§2", "§", true)
	f.Fuzz(func(t *testing.T, doc, delimiter string, header bool) {
		req := svc.CSVProfileRequest{CSV: doc, Delimiter: delimiter, HasHeader: &header}
		resp, err := svc.CSVProfile(context.Background(), req)
		if err != nil {
			var e *svc.Error
			if !errors.As(err, &e) || e.Kind != svc.KindInvalid || len(e.Fields) == 0 {
				t.Fatalf("unexpected error %v", err)
			}
			if e.Fields[0].Field == "delimiter" || doc == "" {
				return
			}
		} else if msg := csvCheckInvariants(resp); msg != "" {
			t.Fatal(msg)
		}
		if msg := csvOracleCompare(req, resp, err); msg != "" {
			t.Fatal(msg)
		}
	})
}

func TestCSVProfileWideInput(t *testing.T) {
	// Many repeated header names stay linear and unique.
	header := strings.Repeat("a,", svc.CSVMaxColumns-1) + "a"
	resp := csvTestProfile(t, svc.CSVProfileRequest{CSV: header + "\n"})
	if resp.ColumnCount != svc.CSVMaxColumns || resp.Columns[1].Name != "a_2" ||
		resp.Columns[svc.CSVMaxColumns-1].Name != fmt.Sprintf("a_%d", svc.CSVMaxColumns) {
		t.Errorf("columnCount %d, names %s … %s", resp.ColumnCount, resp.Columns[1].Name, resp.Columns[svc.CSVMaxColumns-1].Name)
	}
	_, err := svc.CSVProfile(context.Background(), svc.CSVProfileRequest{CSV: header + ",b\n1"})
	if msg := csvTestFieldError(t, err, "csv", "max_columns"); !strings.Contains(msg, "10001 fields") {
		t.Errorf("message %q", msg)
	}
}

package svctest

import (
	"encoding/json"
	"fmt"
	"math/rand"
	randv2 "math/rand/v2"
	"strconv"
	"strings"

	"github.com/leanovate/gopter"

	"github.com/seed1284c1d2/svc"
)

// This file holds the generators of the data tools, csv_profile and
// json_shape, and deterministic large documents for their benchmarks.

// dataDelimiter returns delimiter i (0–3) of those auto detection chooses
// among, with the name the delimiter option accepts.
func dataDelimiter(i int) (char, name string) {
	all := [...]struct{ char, name string }{
		{",", "comma"}, {";", "semicolon"}, {"\t", "tab"}, {"|", "pipe"},
	}
	return all[i].char, all[i].name
}

// dataWord draws a string cell value; some need quoting in CSV.
func dataWord(r *rand.Rand) string {
	words := [...]string{
		"Ada", "Bob", "Cara", "Dmitri", "Émile", "Zoë", "alpha", "beta", "x",
		"hello world", "a,b", "semi;colon", "pi|pe", "tab\there", `say "hi"`,
		"line\nbreak", "crlf\r\nbreak", "  padded  ", "true-ish", "NaN", "1.2.3",
		"2024-13-01", "null", "-", "€uro", "日本",
	}
	return words[r.Intn(len(words))]
}

// dataKinds are the kinds of generated CSV columns.
const (
	dataKindInt = iota
	dataKindFloat
	dataKindString
	dataKindDate
	dataKindDateTime
	dataKindBool
	dataKindMixed
	dataKindBlank
	dataKindCount
)

// CSVDocument generates RFC 4180 CSV text: a header line and 0–25 records
// of 1–6 columns, separated by a delimiter drawn from comma, semicolon, tab
// and pipe. Each column has a kind (integers, some beyond int64, decimals,
// some with exponents, strings with quotes, delimiters and line breaks,
// dates, RFC 3339 datetimes, booleans in any case, a mix, or nothing), and
// any cell may be blank or white space; one document in eight has some
// short or long (ragged) records. Cells are quoted when they must be
// and sometimes when they need not; lines end in LF or CRLF, with or without
// a final line break and a byte-order mark. Every document parses: a
// CSVProfile of it with its own delimiter, or auto detection, succeeds.
func CSVDocument() gopter.Gen {
	return func(p *gopter.GenParameters) *gopter.GenResult {
		doc, _ := dataCSV(p.Rng)
		return gopter.NewGenResult(doc, gopter.NoShrinker)
	}
}

// CSVProfileRequest generates valid svc.CSVProfileRequest values: a
// CSVDocument with its delimiter given as auto (or left empty), by name or
// as the literal character, and hasHeader unset, true or false.
func CSVProfileRequest() gopter.Gen {
	return func(p *gopter.GenParameters) *gopter.GenResult {
		r := p.Rng
		doc, d := dataCSV(r)
		req := svc.CSVProfileRequest{CSV: doc}
		switch r.Intn(4) {
		case 0:
			req.Delimiter = ""
		case 1:
			req.Delimiter = "auto"
		case 2:
			_, req.Delimiter = dataDelimiter(d)
		default:
			req.Delimiter, _ = dataDelimiter(d)
		}
		switch r.Intn(3) {
		case 1:
			req.HasHeader = new(true)
		case 2:
			req.HasHeader = new(false)
		}
		return gopter.NewGenResult(req, gopter.NoShrinker)
	}
}

// dataCSV builds one CSV document and returns it with the index of its
// delimiter (see dataDelimiter).
func dataCSV(r *rand.Rand) (string, int) {
	d := r.Intn(4)
	delim, _ := dataDelimiter(d)
	ncols := 1 + r.Intn(6)
	nrows := r.Intn(26)
	eol := "\n"
	if r.Intn(3) == 0 {
		eol = "\r\n"
	}
	kinds := make([]int, ncols)
	for i := range kinds {
		kinds[i] = r.Intn(dataKindCount)
	}
	var b strings.Builder
	if r.Intn(8) == 0 {
		b.WriteString("\uFEFF")
	}
	headers := [...]string{"id", "name", "age", "price", "when", "ok", "", "age", " spaced ", "column_2", "note"}
	row := make([]string, ncols)
	for i := range row {
		row[i] = headers[r.Intn(len(headers))]
	}
	dataWriteRow(&b, r, row, delim, eol)
	ragged := r.Intn(8) == 0
	for range nrows {
		for i, k := range kinds {
			row[i] = dataCell(r, k)
		}
		cells := row
		if ragged && r.Intn(4) == 0 {
			// A short or a long record.
			if n := r.Intn(ncols); n > 0 && r.Intn(2) == 0 {
				cells = row[:n]
			} else {
				cells = append(row[:ncols:ncols], dataCell(r, dataKindInt))
			}
		}
		dataWriteRow(&b, r, cells, delim, eol)
	}
	s := b.String()
	if r.Intn(3) == 0 {
		s = strings.TrimSuffix(s, eol)
	}
	return s, d
}

// dataWriteRow writes one record, quoting where RFC 4180 requires it (and
// now and then where it does not). A lone empty field is written "" so
// that the record is not a blank line.
func dataWriteRow(b *strings.Builder, r *rand.Rand, row []string, delim, eol string) {
	for i, cell := range row {
		if i > 0 {
			b.WriteString(delim)
		}
		needs := strings.ContainsAny(cell, "\"\r\n") || strings.Contains(cell, delim) ||
			(len(row) == 1 && cell == "")
		if needs || r.Intn(10) == 0 {
			b.WriteByte('"')
			b.WriteString(strings.ReplaceAll(cell, `"`, `""`))
			b.WriteByte('"')
		} else {
			b.WriteString(cell)
		}
	}
	b.WriteString(eol)
}

// dataCell draws one cell of a column kind; about one in eight is blank.
func dataCell(r *rand.Rand, kind int) string {
	switch r.Intn(8) {
	case 0:
		return ""
	case 1:
		if r.Intn(3) == 0 {
			return "  "
		}
	}
	if kind == dataKindMixed {
		kind = r.Intn(dataKindBlank)
	}
	switch kind {
	case dataKindInt:
		if r.Intn(10) == 0 {
			return "-" + strconv.FormatUint(r.Uint64(), 10) + strconv.FormatUint(r.Uint64(), 10)
		}
		return strconv.Itoa(r.Intn(2_000_001) - 1000)
	case dataKindFloat:
		switch r.Intn(6) {
		case 0:
			return fmt.Sprintf("%d.%de%d", r.Intn(10), r.Intn(100), r.Intn(11)-5)
		case 1:
			return strconv.Itoa(r.Intn(1000))
		default:
			return strconv.FormatFloat(float64(r.Intn(2_000_000)-1_000_000)/100, 'f', -1, 64)
		}
	case dataKindString:
		return dataWord(r)
	case dataKindDate:
		return fmt.Sprintf("%04d-%02d-%02d", 1900+r.Intn(200), 1+r.Intn(12), 1+r.Intn(28))
	case dataKindDateTime:
		zone := "Z"
		if r.Intn(2) == 0 {
			zone = fmt.Sprintf("%+03d:%02d", r.Intn(27)-13, 15*r.Intn(4))
		}
		return fmt.Sprintf("%04d-%02d-%02dT%02d:%02d:%02d%s", 1970+r.Intn(80), 1+r.Intn(12),
			1+r.Intn(28), r.Intn(24), r.Intn(60), r.Intn(60), zone)
	case dataKindBool:
		return [...]string{"true", "false", "TRUE", "False"}[r.Intn(4)]
	default:
		return ""
	}
}

// dataName draws a member name: an identifier or a name that needs ["..."].
func dataName(r *rand.Rand) string {
	names := [...]string{
		"id", "name", "items", "value", "_private", "$ref", "a1", "tags", "meta",
		"first name", "1st", "é", "日本", `quote"d`, `back\slash`, "", "line\nbreak",
		"a.b", "[x]", "\u2028",
	}
	return names[r.Intn(len(names))]
}

// JSONShapeRequest generates valid svc.JSONShapeRequest values: a random
// JSON value up to 6 levels deep (objects with identifier and
// non-identifier member names, repeated names now and then, arrays of mixed
// or uniform items, integers, decimals, exponents, -0, strings, booleans and
// null) in compact or spaced layout, with maxDepth and maxPaths unset or
// drawn from their ranges (small values are favoured, so that the depth
// limit and path truncation happen).
func JSONShapeRequest() gopter.Gen {
	return func(p *gopter.GenParameters) *gopter.GenResult {
		r := p.Rng
		req := svc.JSONShapeRequest{Value: json.RawMessage(dataJSON(r))}
		switch r.Intn(3) {
		case 1:
			req.MaxDepth = new(1 + r.Intn(3))
		case 2:
			req.MaxDepth = new(1 + r.Intn(12))
		}
		switch r.Intn(3) {
		case 1:
			req.MaxPaths = new(10 + r.Intn(20))
		case 2:
			req.MaxPaths = new(10 + r.Intn(991))
		}
		return gopter.NewGenResult(req, gopter.NoShrinker)
	}
}

// dataJSON returns the text of one random JSON value.
func dataJSON(r *rand.Rand) []byte {
	space := ""
	if r.Intn(3) == 0 {
		space = " "
	}
	return dataJSONValue(nil, r, 0, space)
}

func dataJSONValue(b []byte, r *rand.Rand, depth int, space string) []byte {
	kind := r.Intn(9)
	switch {
	case depth < 2 && r.Intn(3) > 0:
		kind = r.Intn(3) // mostly containers near the root
	case depth >= 6 && kind < 3:
		kind += 3
	}
	switch kind {
	case 0, 1:
		b = append(b, '{')
		n := r.Intn(7)
		for i := range n {
			if i > 0 {
				b = append(b, ',')
				b = append(b, space...)
			}
			name, _ := json.Marshal(dataName(r))
			b = append(b, name...)
			b = append(b, ':')
			b = append(b, space...)
			b = dataJSONValue(b, r, depth+1, space)
		}
		return append(b, '}')
	case 2:
		b = append(b, '[')
		n := r.Intn(6)
		for i := range n {
			if i > 0 {
				b = append(b, ',')
				b = append(b, space...)
			}
			b = dataJSONValue(b, r, depth+1, space)
		}
		return append(b, ']')
	case 3:
		return strconv.AppendInt(b, int64(r.Intn(2001)-1000), 10)
	case 4:
		return append(b, [...]string{"1.0", "-0", "1e2", "-2.5E-3", "0.125", "12345678901234567890", "0"}[r.Intn(7)]...)
	case 5:
		s, _ := json.Marshal(dataWord(r))
		return append(b, s...)
	case 6:
		if r.Intn(2) == 0 {
			return append(b, "true"...)
		}
		return append(b, "false"...)
	default:
		return append(b, "null"...)
	}
}

// GenerateCSV returns a deterministic CSV document of at least sizeBytes
// bytes and one record (it stops at the first line break past the size),
// for benchmarks:
// a header and records of 8 columns — id (unique integer), price (decimal
// with 2 places), name (strings, some quoted with delimiters or doubled
// quotes), date (YYYY-MM-DD), active (boolean), qty (integer, 10 % blank),
// comment (free text, half blank) and updated (RFC 3339 datetime). The same
// size and seed always give the same bytes.
func GenerateCSV(sizeBytes int, seed int64) []byte {
	r := randv2.New(randv2.NewPCG(uint64(seed), 0x5eed_c5f))
	b := make([]byte, 0, sizeBytes+256)
	b = append(b, "id,price,name,date,active,qty,comment,updated\n"...)
	names := [...]string{"Ada", "Bob", "Cara", "Dmitri", "Émile", "Zoë", "Lovelace, Ada", `Bob "the builder"`}
	comments := [...]string{"ok", "late delivery", "needs review, urgent", "customer said \"thanks\"", "n/a", "refund"}
	for id := 1; id == 1 || len(b) < sizeBytes; id++ {
		b = strconv.AppendInt(b, int64(id), 10)
		b = append(b, ',')
		b = strconv.AppendFloat(b, float64(r.IntN(10_000_000))/100, 'f', 2, 64)
		b = append(b, ',')
		b = dataAppendCSVField(b, names[r.IntN(len(names))], fmt.Sprint(r.IntN(1000)))
		b = append(b, ',')
		b = fmt.Appendf(b, "%04d-%02d-%02d,", 2000+r.IntN(25), 1+r.IntN(12), 1+r.IntN(28))
		b = strconv.AppendBool(b, r.IntN(2) == 0)
		b = append(b, ',')
		if r.IntN(10) != 0 {
			b = strconv.AppendInt(b, int64(r.IntN(500)), 10)
		}
		b = append(b, ',')
		if r.IntN(2) == 0 {
			b = dataAppendCSVField(b, comments[r.IntN(len(comments))], "")
		}
		b = append(b, ',')
		b = fmt.Appendf(b, "%04d-%02d-%02dT%02d:%02d:%02dZ\n", 2000+r.IntN(25), 1+r.IntN(12),
			1+r.IntN(28), r.IntN(24), r.IntN(60), r.IntN(60))
	}
	return b
}

// dataAppendCSVField appends s followed by suffix as one CSV field, quoted
// when it holds a comma or a quote.
func dataAppendCSVField(b []byte, s, suffix string) []byte {
	v := s
	if suffix != "" {
		v = s + " " + suffix
	}
	if !strings.ContainsAny(v, ",\"\r\n") {
		return append(b, v...)
	}
	b = append(b, '"')
	b = append(b, strings.ReplaceAll(v, `"`, `""`)...)
	return append(b, '"')
}

// GenerateJSON returns a deterministic JSON document of at least sizeBytes
// bytes, for benchmarks: an array of at least one record (it stops at the
// first record past the size) with integers, decimals, exponents, strings with escapes,
// booleans, null, a nested object, arrays of strings and of arrays, optional
// members and a non-identifier member name. The same size and seed always
// give the same bytes.
func GenerateJSON(sizeBytes int, seed int64) []byte {
	r := randv2.New(randv2.NewPCG(uint64(seed), 0x15_0a5e))
	b := make([]byte, 0, sizeBytes+1024)
	tags := [...]string{`"red"`, `"green"`, `"blue"`, `"caf\u00e9"`, `"line\nbreak"`, `"say \"hi\""`}
	b = append(b, '[')
	for id := 1; id == 1 || len(b) < sizeBytes; id++ {
		if id > 1 {
			b = append(b, ",\n"...)
		}
		b = fmt.Appendf(b, `{"id":%d,"name":"user-%d","price":%d.%02d,"ratio":%de-%d,"active":%t,`,
			id, r.IntN(100_000), r.IntN(10_000), r.IntN(100), 1+r.IntN(9), 1+r.IntN(5), r.IntN(2) == 0)
		b = append(b, `"tags":[`...)
		for k := range r.IntN(4) {
			if k > 0 {
				b = append(b, ',')
			}
			b = append(b, tags[r.IntN(len(tags))]...)
		}
		b = fmt.Appendf(b, `],"owner":{"id":%d,"email":"u%d@example.com","roles":["admin","dev"],"score":`,
			r.IntN(1000), r.IntN(1000))
		if r.IntN(3) == 0 {
			b = append(b, "null"...)
		} else {
			b = strconv.AppendFloat(b, float64(r.IntN(10_000))/7, 'g', -1, 64)
		}
		b = append(b, '}')
		if r.IntN(2) == 0 {
			b = fmt.Appendf(b, `,"matrix":[[%d,%d],[%d,%d,%d]]`, r.IntN(9), r.IntN(9), r.IntN(9), r.IntN(9), r.IntN(9))
		}
		if r.IntN(4) == 0 {
			b = append(b, `,"created at":"2024-05-06T07:08:09Z","note":null`...)
		}
		b = append(b, '}')
	}
	return append(b, ']')
}

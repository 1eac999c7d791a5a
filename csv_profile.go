package svc

import (
	"context"
	"errors"
	"hash/maphash"
	"math"
	"math/bits"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/shopspring/decimal"

	"github.com/seed1284c1d2/svc/internal/clip"
	"github.com/seed1284c1d2/svc/internal/csvscan"
)

// CSVMaxColumns is the most columns CSVProfile profiles: a first record
// with more fields is invalid input.
const CSVMaxColumns = 10_000

// Limits and sizes of CSVProfile.
const (
	// csvRaggedExamples is how many ragged line numbers are reported.
	csvRaggedExamples = 10
	// csvSampleValues and csvSampleRunes shape the per-column samples.
	csvSampleValues = 3
	csvSampleRunes  = 40
	// csvNameRunes bounds a header name.
	csvNameRunes = 100
	// csvMinUniqueBudget is the smallest memory budget, in bytes, for the
	// hash tables that count distinct values (see CSVProfile).
	csvMinUniqueBudget = 8 << 20
	// csvMaxExponent bounds the exponent of a numeric cell.
	csvMaxExponent = 100
	// csvCtxEvery is how many cells are profiled between context checks.
	csvCtxEvery = 1 << 16
	// csvBatch is how many hashes a column collects before adding them.
	csvBatch = 128
)

// The inferred types of a CSV column.
const (
	CSVTypeInteger  = "integer"
	CSVTypeNumber   = "number"
	CSVTypeBoolean  = "boolean"
	CSVTypeDate     = "date"
	CSVTypeDateTime = "datetime"
	CSVTypeString   = "string"
	CSVTypeEmpty    = "empty"
)

// Bits of the set of types a column can still have.
const (
	csvTInt uint8 = 1 << iota
	csvTNum
	csvTBool
	csvTDate
	csvTDateTime
	csvTAll = csvTInt | csvTNum | csvTBool | csvTDate | csvTDateTime
)

// CSVProfileRequest is the input of CSVProfile.
type CSVProfileRequest struct {
	// CSV is the CSV text (RFC 4180). Required.
	CSV string `json:"csv" validate:"required"`
	// Delimiter is "auto" (the default when empty), "comma", "semicolon",
	// "tab", "pipe" (names are case-insensitive) or one literal character
	// other than a double quote, CR, LF or NUL.
	Delimiter string `json:"delimiter,omitempty"`
	// HasHeader says whether the first record names the columns; nil means
	// true.
	HasHeader *bool `json:"hasHeader,omitempty"`
}

// CSVProfileResponse is the output of CSVProfile.
type CSVProfileResponse struct {
	// Delimiter is the delimiter character used, for example ",".
	Delimiter string `json:"delimiter"`
	// Rows is the number of data records (the header and blank lines
	// excluded).
	Rows int `json:"rows"`
	// ColumnCount is the number of fields of the first record.
	ColumnCount int `json:"columnCount"`
	// Columns profiles each column, in order.
	Columns []CSVColumnProfile `json:"columns"`
	// HasHeader echoes whether the first record was read as a header.
	HasHeader bool `json:"hasHeader"`
	// DelimiterDetected is true when the delimiter was chosen by auto
	// detection.
	DelimiterDetected bool `json:"delimiterDetected"`
	// RaggedRows counts data records whose field count differs from
	// ColumnCount.
	RaggedRows int `json:"raggedRows"`
	// RaggedLines holds the starting line numbers (1-based, counting the
	// header) of the first 10 ragged records.
	RaggedLines []int `json:"raggedLines"`
	// BlankLines counts the empty lines that were skipped.
	BlankLines int `json:"blankLines"`
}

// CSVColumnProfile describes one column.
type CSVColumnProfile struct {
	// Name is the header name, made unique, or column_<n>.
	Name string `json:"name"`
	// InferredType is one of integer, number, boolean, date, datetime,
	// string, or empty when the column has no value.
	InferredType string `json:"inferredType"`
	// NonEmpty counts the cells holding a value.
	NonEmpty int `json:"nonEmpty"`
	// Missing counts the empty, whitespace-only and absent cells.
	Missing int `json:"missing"`
	// UniqueCount is the number of distinct values among the non-empty
	// cells, compared after trimming surrounding whitespace.
	UniqueCount int `json:"uniqueCount"`
	// Numeric holds statistics of integer and number columns, nil otherwise.
	Numeric *CSVNumericStats `json:"numeric,omitempty"`
	// UniqueCountCapped is true when the distinct-value memory budget ran
	// out: UniqueCount is then a lower bound.
	UniqueCountCapped bool `json:"uniqueCountCapped,omitempty"`
	// Samples holds up to 3 distinct values in order of appearance, each
	// cut to 40 characters.
	Samples []string `json:"samples"`
}

// CSVNumericStats summarises a numeric column exactly: Min and Max are the
// cell values, Mean = sum/count, exact when the quotient terminates and
// rounded half-even to 8 decimal places otherwise.
type CSVNumericStats struct {
	Count int    `json:"count"`
	Min   Number `json:"min"`
	Max   Number `json:"max"`
	Mean  Number `json:"mean"`
}

// csvProfileTags are the compiled validate tags of CSVProfileRequest.
var csvProfileTags = compileTags[CSVProfileRequest]()

// CSVProfile profiles CSV text: the delimiter, the row and column counts,
// and per column its inferred type, non-empty, missing and distinct value
// counts and, for numeric columns, count, min, max and mean.
//
// Parsing follows RFC 4180 as encoding/csv does: fields may be quoted with
// double quotes, a quote inside a quoted field is doubled, quoted fields may
// hold delimiters and line breaks, records end with LF or CRLF (a CRLF
// inside a quoted field reads as LF; a lone CR is data, except at the very
// end of the input), a leading UTF-8 byte-order mark is dropped and empty
// lines are skipped (counted in blankLines). Line numbers count LFs from 1. A quote in an
// unquoted field, a character other than a delimiter or line end after a
// closing quote, and a quoted field that is never closed are invalid input
// (field "csv", rule "csv_quote", the message names the line). Text without
// any record (only blank lines) is invalid input (rule "csv_empty").
//
// Delimiter "auto" parses the first 100 records (none starting past 64 KiB)
// with each of comma, semicolon, tab and pipe, and ranks the candidates:
// first those that parse the sample without a quoting error, then those
// whose most common field count (the mode; the larger count on a tie) is at
// least 2, then by the share of sampled records having the mode, then by
// the larger mode; remaining ties go to the first of comma, semicolon, tab,
// pipe. So text that no candidate splits is read with comma (or with the
// first candidate under which it parses).
//
// ColumnCount is the field count of the first record, at most 10 000
// (CSVMaxColumns; more is invalid input, rule "max_columns"). With
// hasHeader (the default) the first record names the columns: names are
// trimmed and cut to 100 characters, an empty name becomes column_<n> (n
// the 1-based position),
// and a name already used by an earlier column gets the first free suffix
// _2, _3, … that is not another column's name ("age,age,age_2" gives age,
// age_3, age_2). Without a header the columns are column_1…column_n and the
// first record is data. A record with fewer fields than ColumnCount counts
// its absent cells as missing; extra fields are ignored. Either way the
// record counts in raggedRows, and raggedLines lists the starting lines of
// the first 10.
//
// Cells are trimmed of surrounding white space; an empty result is missing.
// inferredType is the narrowest type every non-missing cell fits, tried in
// the order integer ([+-]?digits), number (a decimal literal: [+-]?, digits
// with an optional fraction or a fraction alone, optional exponent),
// boolean (true or false, any case), date (YYYY-MM-DD, a real calendar
// date), datetime (RFC 3339: YYYY-MM-DDTHH:MM:SS, an optional fraction
// after a dot, then Z or ±HH:MM; upper-case T and Z, hour ≤ 23, minute,
// second and offset within range, all of which time.Parse with
// time.RFC3339 accepts) and string; a date/datetime mix is string. A numeric literal longer than
// 100 characters or with an exponent beyond ±100 counts as a string. A
// column without values is empty. numeric {count, min, max, mean} is exact
// decimal arithmetic for integer and number columns, integers beyond int64
// included.
//
// uniqueCount compares trimmed values through 64-bit hashes seeded at
// random on every call (a collision, which would undercount by one, has
// odds below 1 in 10^7 for a million distinct values). The hash tables
// (8 bytes a slot, at most 3/4 full) share a memory budget of
// max(8 MiB, input size) bytes, a growing table's old and new arrays
// counted together; a column whose table cannot grow within it stops
// recording new values, and its uniqueCount becomes a lower bound flagged
// by uniqueCountCapped. This keeps the peak heap of a profile within about
// three times the input (a 10 MB input of 8 mixed columns peaks near 2×,
// the input included).
//
// ctx is checked on entry and every 65 536 cells; a cancelled or expired
// context ends the profile with a KindTimeout error.
func CSVProfile(ctx context.Context, req CSVProfileRequest) (CSVProfileResponse, error) {
	if err := ctx.Err(); err != nil {
		return CSVProfileResponse{}, errorf(KindTimeout, err, "csv_profile: %v", err)
	}
	var fe fieldErrors
	csvProfileTags.check(&fe, "", &req)
	delim, auto := csvParseDelimiter(&fe, req.Delimiter)
	if err := fe.err(); err != nil {
		return CSVProfileResponse{}, err
	}
	s := strings.TrimPrefix(req.CSV, "\uFEFF")
	if auto {
		delim = csvscan.DetectDelimiter(s)
	}
	hasHeader := req.HasHeader == nil || *req.HasHeader

	p := csvProfiler{hasHeader: hasHeader}
	p.hash.init()
	p.budget = max(csvMinUniqueBudget, len(req.CSV))
	p.sc.Init(s, delim)
	if err := p.run(ctx); err != nil {
		return CSVProfileResponse{}, err
	}
	resp := p.response()
	resp.Delimiter = delim
	resp.DelimiterDetected = auto
	return resp, nil
}

// csvParseDelimiter resolves the delimiter option; auto is true for
// detection.
func csvParseDelimiter(fe *fieldErrors, d string) (delim string, auto bool) {
	switch strings.ToLower(d) {
	case "", "auto":
		return "", true
	case "comma":
		return ",", false
	case "semicolon":
		return ";", false
	case "tab":
		return "\t", false
	case "pipe":
		return "|", false
	}
	r, size := utf8.DecodeRuneInString(d)
	if size != len(d) {
		fe.add("delimiter", "oneof", "must be auto, comma, semicolon, tab, pipe or a single character, not %q", clip.Runes(d, 16))
		return "", false
	}
	switch r {
	case '"', '\r', '\n', 0, utf8.RuneError:
		fe.add("delimiter", "delimiter_char", "cannot be %q: a delimiter must not be a double quote, CR, LF, NUL or invalid UTF-8", d)
		return "", false
	}
	return d, false
}

// csvQuoteError turns a scanner's quoting error into invalid input on
// field "csv" (rule "csv_quote").
func csvQuoteError(err error) error {
	var qe *csvscan.QuoteError
	if errors.As(err, &qe) {
		return InvalidField("csv", "csv_quote", "line %d: %s", qe.Line, qe.Msg)
	}
	return errorf(KindInternal, err, "csv_profile: internal error")
}

// csvProfiler accumulates the profile of one document.
type csvProfiler struct {
	sc          csvscan.Scanner
	hasHeader   bool
	hash        csvHasher
	budget      int // bytes left for distinct-value hash tables
	names       []string
	cols        []csvColumn
	rows        int
	ragged      int
	raggedLines []int
	blank       int
}

// csvColumn accumulates the profile of one column.
type csvColumn struct {
	mask     uint8
	nonEmpty int
	missing  int
	set      csvHashSet
	pending  []uint64 // hashes not yet added to set
	num      csvNumAcc
	samples  []string
}

// run scans the whole document.
func (p *csvProfiler) run(ctx context.Context) error {
	sc := &p.sc
	more, blanks := sc.StartRecord()
	p.blank += blanks
	if !more {
		return InvalidField("csv", "csv_empty", "contains no record (only blank lines)")
	}
	var first []string
	for {
		v, esc, last, err := sc.Field()
		if err != nil {
			return csvQuoteError(err)
		}
		if esc {
			v = csvscan.Unescape(v)
		}
		first = append(first, v)
		if last {
			break
		}
	}
	ncols := len(first)
	if ncols > CSVMaxColumns {
		return InvalidField("csv", "max_columns", "line %d: the first record has %d fields; at most %d columns can be profiled",
			sc.RecordLine(), ncols, CSVMaxColumns)
	}
	p.cols = make([]csvColumn, ncols)
	for i := range p.cols {
		p.cols[i].mask = csvTAll
	}
	if p.hasHeader {
		p.names = csvColumnNames(first)
	} else {
		p.names = csvColumnNames(make([]string, ncols))
		for i, v := range first {
			p.cell(&p.cols[i], v)
		}
		p.rows = 1
	}

	cols := p.cols
	cells, nextCheck := 0, csvCtxEvery
	for {
		more, blanks := sc.StartRecord()
		p.blank += blanks
		if !more {
			break
		}
		line := sc.RecordLine()
		nf := 0
		for {
			v, esc, last, err := sc.Field()
			if err != nil {
				return csvQuoteError(err)
			}
			if nf < ncols {
				if esc {
					v = csvscan.Unescape(v)
				}
				p.cell(&cols[nf], v)
			}
			nf++
			if last {
				break
			}
		}
		p.rows++
		if nf != ncols {
			p.ragged++
			if len(p.raggedLines) < csvRaggedExamples {
				p.raggedLines = append(p.raggedLines, line)
			}
			for k := nf; k < ncols; k++ {
				cols[k].missing++
			}
		}
		if cells += nf; cells >= nextCheck {
			nextCheck = cells + csvCtxEvery
			if err := ctx.Err(); err != nil {
				return errorf(KindTimeout, err, "csv_profile: stopped at line %d: %v", line, err)
			}
		}
	}
	for i := range cols {
		cols[i].set.addBatch(cols[i].pending, &p.budget)
	}
	return nil
}

// cell profiles one cell of a column.
func (p *csvProfiler) cell(c *csvColumn, v string) {
	if n := len(v); n == 0 || v[0]-0x21 > 0x5e || v[n-1]-0x21 > 0x5e {
		// Not the common case of printable ASCII at both ends.
		if v = csvTrim(v); v == "" {
			c.missing++
			return
		}
	}
	c.nonEmpty++
	if m := c.mask; m != 0 {
		c.mask = m & csvClassify(v, m, &c.num)
	}
	h := p.hash.sum(v)
	if len(c.samples) == csvSampleValues {
		// Distinct counting in batches: see csvHashSet.addBatch.
		c.pending = append(c.pending, h)
		if len(c.pending) == csvBatch {
			c.set.addBatch(c.pending, &p.budget)
			c.pending = c.pending[:0]
		}
		return
	}
	if !c.set.add(h, &p.budget) {
		// A new value (or one past the budget): keep it as a sample when
		// it differs from the samples kept so far.
		v = clip.Runes(v, csvSampleRunes)
		for _, s := range c.samples {
			if s == v {
				return
			}
		}
		c.samples = append(c.samples, strings.Clone(v))
		if len(c.samples) == csvSampleValues {
			c.pending = make([]uint64, 0, csvBatch)
		}
	}
}

// csvTrim removes surrounding white space (ASCII fast path, Unicode
// white space otherwise).
func csvTrim(s string) string {
	i, j := 0, len(s)
	for i < j && csvSpace(s[i]) {
		i++
	}
	for j > i && csvSpace(s[j-1]) {
		j--
	}
	s = s[i:j]
	if s != "" && (s[0] >= utf8.RuneSelf || s[len(s)-1] >= utf8.RuneSelf) {
		s = strings.TrimSpace(s)
	}
	return s
}

func csvSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'
}

// csvColumnNames makes unique column names from header cells, as
// documented on CSVProfile.
func csvColumnNames(header []string) []string {
	names := make([]string, len(header))
	reserved := make(map[string]bool, len(header))
	for i, h := range header {
		h = clip.Runes(csvTrim(h), csvNameRunes)
		if h == "" {
			h = "column_" + strconv.Itoa(i+1)
		}
		names[i] = strings.Clone(h)
		reserved[names[i]] = true
	}
	used := make(map[string]bool, len(header))
	nextSuffix := make(map[string]int) // per name, the suffix to try next
	for i, name := range names {
		if used[name] {
			k := max(nextSuffix[name], 2)
			cand := name + "_" + strconv.Itoa(k)
			for reserved[cand] || used[cand] {
				k++
				cand = name + "_" + strconv.Itoa(k)
			}
			nextSuffix[name] = k + 1
			names[i] = cand
			name = cand
		}
		used[name] = true
	}
	return names
}

// response builds the result.
func (p *csvProfiler) response() CSVProfileResponse {
	resp := CSVProfileResponse{
		Rows:        p.rows,
		ColumnCount: len(p.cols),
		Columns:     make([]CSVColumnProfile, len(p.cols)),
		HasHeader:   p.hasHeader,
		RaggedRows:  p.ragged,
		RaggedLines: p.raggedLines,
		BlankLines:  p.blank,
	}
	if resp.RaggedLines == nil {
		resp.RaggedLines = []int{}
	}
	for i := range p.cols {
		c := &p.cols[i]
		out := CSVColumnProfile{
			Name:              p.names[i],
			InferredType:      c.inferredType(),
			NonEmpty:          c.nonEmpty,
			Missing:           c.missing,
			UniqueCount:       c.set.n,
			UniqueCountCapped: c.set.capped,
			Samples:           c.samples,
		}
		if out.Samples == nil {
			out.Samples = []string{}
		}
		if out.InferredType == CSVTypeInteger || out.InferredType == CSVTypeNumber {
			out.Numeric = c.num.stats()
		}
		resp.Columns[i] = out
	}
	return resp
}

// inferredType names the narrowest type left for the column.
func (c *csvColumn) inferredType() string {
	switch m := c.mask; {
	case c.nonEmpty == 0:
		return CSVTypeEmpty
	case m&csvTInt != 0:
		return CSVTypeInteger
	case m&csvTNum != 0:
		return CSVTypeNumber
	case m&csvTBool != 0:
		return CSVTypeBoolean
	case m&csvTDate != 0:
		return CSVTypeDate
	case m&csvTDateTime != 0:
		return CSVTypeDateTime
	default:
		return CSVTypeString
	}
}

// csvClassify returns the types (among those still in m) that the trimmed,
// non-empty cell v fits, feeding numeric values to num.
func csvClassify(v string, m uint8, num *csvNumAcc) uint8 {
	if m&(csvTInt|csvTNum) != 0 {
		if kind, fx, fast := csvParseNumber(v); kind != 0 {
			num.add(v, fx, fast)
			return kind
		}
	}
	var cm uint8
	switch len(v) {
	case 4, 5:
		if m&csvTBool != 0 && (strings.EqualFold(v, "true") || strings.EqualFold(v, "false")) {
			cm |= csvTBool
		}
	case 10:
		if m&csvTDate != 0 && csvIsDate(v) {
			cm |= csvTDate
		}
	default:
		if m&csvTDateTime != 0 && len(v) >= 20 && csvIsDateTime(v) {
			cm |= csvTDateTime
		}
	}
	return cm
}

// csvIsDate reports whether v is YYYY-MM-DD naming a real calendar date
// (proleptic Gregorian, years 0000–9999).
func csvIsDate(v string) bool {
	if len(v) != 10 || v[4] != '-' || v[7] != '-' {
		return false
	}
	y0, y1, y2, y3 := v[0]-'0', v[1]-'0', v[2]-'0', v[3]-'0'
	m0, m1, d0, d1 := v[5]-'0', v[6]-'0', v[8]-'0', v[9]-'0'
	if y0 > 9 || y1 > 9 || y2 > 9 || y3 > 9 || m0 > 9 || m1 > 9 || d0 > 9 || d1 > 9 {
		return false // a byte below '0' wraps around to a large value
	}
	y := int(y0)*1000 + int(y1)*100 + int(y2)*10 + int(y3)
	m := int(m0)*10 + int(m1)
	d := int(d0)*10 + int(d1)
	if m < 1 || m > 12 || d < 1 {
		return false
	}
	days := 31
	switch m {
	case 4, 6, 9, 11:
		days = 30
	case 2:
		days = 28
		if y%4 == 0 && (y%100 != 0 || y%400 == 0) {
			days = 29
		}
	}
	return d <= days
}

// csvIsDateTime reports whether v is an RFC 3339 timestamp:
// YYYY-MM-DDTHH:MM:SS, an optional fraction (a dot and digits), then Z or
// ±HH:MM, with hour ≤ 23, minute and second ≤ 59 (what time.RFC3339
// parsing accepts, without its leniencies).
func csvIsDateTime(v string) bool {
	if len(v) < 20 || !csvIsDate(v[:10]) || v[10] != 'T' || v[13] != ':' || v[16] != ':' {
		return false
	}
	h, ok1 := csvDigits(v[11:13])
	mi, ok2 := csvDigits(v[14:16])
	s, ok3 := csvDigits(v[17:19])
	if !ok1 || !ok2 || !ok3 || h > 23 || mi > 59 || s > 59 {
		return false
	}
	rest := v[19:]
	if rest[0] == '.' {
		i := 1
		for i < len(rest) && rest[i] >= '0' && rest[i] <= '9' {
			i++
		}
		if i == 1 {
			return false
		}
		rest = rest[i:]
	}
	if rest == "Z" {
		return true
	}
	if len(rest) != 6 || (rest[0] != '+' && rest[0] != '-') || rest[3] != ':' {
		return false
	}
	oh, ok1 := csvDigits(rest[1:3])
	om, ok2 := csvDigits(rest[4:6])
	return ok1 && ok2 && oh <= 23 && om <= 59
}

// csvDigits parses a short run of ASCII digits.
func csvDigits(s string) (int, bool) {
	n := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, true
}

// csvFix is the exact value m·10^(−s) with 0 ≤ s ≤ 18: the fast path of
// numeric statistics.
type csvFix struct {
	m int64
	s int32
}

// csvPow10 returns 10^k for 0 ≤ k ≤ 18.
func csvPow10(k int32) int64 {
	p := int64(1)
	for ; k > 0; k-- {
		p *= 10
	}
	return p
}

// csvParseNumber classifies a trimmed cell: kind is 0 (not numeric),
// csvTInt|csvTNum (integer) or csvTNum (number). When fast is true, fx holds
// the exact value; otherwise the value is parsed with decimal.
func csvParseNumber(v string) (kind uint8, fx csvFix, fast bool) {
	n := len(v)
	if n == 0 || n > maxNumberLiteral {
		return 0, fx, false
	}
	i := 0
	neg := false
	if v[0] == '+' || v[0] == '-' {
		neg = v[0] == '-'
		i = 1
	}
	var mant uint64
	sig := 0
	intStart := i
	i, mant, sig = csvDigitRun(v, i, mant, sig)
	intDigits := i - intStart
	kind = csvTInt | csvTNum
	frac := 0
	if i < n && v[i] == '.' {
		i++
		fracStart := i
		i, mant, sig = csvDigitRun(v, i, mant, sig)
		if frac = i - fracStart; frac == 0 {
			return 0, fx, false
		}
		kind = csvTNum
	}
	fast = sig <= 18
	if intDigits == 0 && frac == 0 {
		return 0, fx, false
	}
	exp := 0
	if i < n && (v[i] == 'e' || v[i] == 'E') {
		i++
		eneg := false
		if i < n && (v[i] == '+' || v[i] == '-') {
			eneg = v[i] == '-'
			i++
		}
		es := i
		for i < n && v[i] >= '0' && v[i] <= '9' {
			if exp <= csvMaxExponent {
				exp = exp*10 + int(v[i]-'0')
			}
			i++
		}
		if i == es || exp > csvMaxExponent {
			return 0, fx, false
		}
		if eneg {
			exp = -exp
		}
		kind = csvTNum
	}
	if i != n {
		return 0, fx, false
	}
	if !fast {
		return kind, fx, false
	}
	scale := frac - exp
	switch {
	case scale < 0:
		if -scale > 18 {
			return kind, fx, false
		}
		p := uint64(csvPow10(int32(-scale)))
		if mant > math.MaxInt64/p {
			return kind, fx, false
		}
		mant *= p
		scale = 0
	case scale > 18:
		return kind, fx, false
	}
	m := int64(mant)
	if neg {
		m = -m
	}
	return kind, csvFix{m: m, s: int32(scale)}, true
}

// csvDigitRun reads the digits of v from i, appending them to mant while
// the significant digits (counted in sig, leading zeros excluded) are at
// most 18; it returns the index after the digits.
func csvDigitRun(v string, i int, mant uint64, sig int) (int, uint64, int) {
	for ; i < len(v); i++ {
		d := v[i] - '0'
		if d > 9 {
			break
		}
		if mant != 0 || d != 0 {
			sig++
		}
		if sig <= 18 {
			mant = mant*10 + uint64(d)
		}
	}
	return i, mant, sig
}

// csvAlign brings a and b to a common scale; ok is false on overflow.
func csvAlign(a, b csvFix) (am, bm int64, s int32, ok bool) {
	am, bm, s = a.m, b.m, a.s
	if a.s < b.s {
		am, ok = csvMulPow10(a.m, b.s-a.s)
		s = b.s
	} else if b.s < a.s {
		bm, ok = csvMulPow10(b.m, a.s-b.s)
	} else {
		ok = true
	}
	return am, bm, s, ok
}

// csvMulPow10 returns m·10^k (0 < k ≤ 18); ok is false on overflow.
func csvMulPow10(m int64, k int32) (int64, bool) {
	p := csvPow10(k)
	if m > math.MaxInt64/p || m < math.MinInt64/p {
		return 0, false
	}
	return m * p, true
}

// csvNumAcc accumulates count, sum, min and max of a column exactly: in
// int64 fixed point while values fit, in decimal after that.
type csvNumAcc struct {
	count            int
	slow             bool
	sum, min, max    csvFix
	dsum, dmin, dmax decimal.Decimal
}

// add accumulates one numeric cell (v its text, fx its value when fast).
func (a *csvNumAcc) add(v string, fx csvFix, fast bool) {
	if a.count == 0 && fast {
		a.count, a.sum, a.min, a.max = 1, fx, fx, fx
		return
	}
	if !a.slow && fast && fx.s == a.sum.s && fx.s == a.min.s && fx.s == a.max.s {
		// The common case: every value so far has the same scale.
		if sum := a.sum.m + fx.m; (sum > a.sum.m) == (fx.m > 0) || fx.m == 0 {
			a.count++
			a.sum.m = sum
			if fx.m < a.min.m {
				a.min = fx
			} else if fx.m > a.max.m {
				a.max = fx
			}
			return
		}
	}
	if !a.slow && fast {
		sm, xm, s, ok := csvAlign(a.sum, fx)
		sum := sm + xm
		if ok && !((sm > 0 && xm > 0 && sum < 0) || (sm < 0 && xm < 0 && sum >= 0)) {
			lo, x1, _, ok1 := csvAlign(a.min, fx)
			hi, x2, _, ok2 := csvAlign(a.max, fx)
			if ok1 && ok2 {
				a.count++
				a.sum = csvFix{m: sum, s: s}
				if x1 < lo {
					a.min = fx
				}
				if x2 > hi {
					a.max = fx
				}
				return
			}
		}
	}
	if !a.slow {
		a.slow = true
		if a.count > 0 {
			a.dsum, a.dmin, a.dmax = a.sum.decimal(), a.min.decimal(), a.max.decimal()
		}
	}
	var d decimal.Decimal
	if fast {
		d = fx.decimal()
	} else {
		var err error
		if d, err = decimal.NewFromString(v); err != nil {
			return // unreachable: csvParseNumber accepted v
		}
	}
	if a.count == 0 {
		a.dsum, a.dmin, a.dmax = d, d, d
	} else {
		a.dsum = a.dsum.Add(d)
		if d.Cmp(a.dmin) < 0 {
			a.dmin = d
		}
		if d.Cmp(a.dmax) > 0 {
			a.dmax = d
		}
	}
	a.count++
}

func (f csvFix) decimal() decimal.Decimal { return decimal.New(f.m, -f.s) }

// stats returns the statistics, or nil when no value was seen.
func (a *csvNumAcc) stats() *CSVNumericStats {
	if a.count == 0 {
		return nil
	}
	sum, lo, hi := a.dsum, a.dmin, a.dmax
	if !a.slow {
		sum, lo, hi = a.sum.decimal(), a.min.decimal(), a.max.decimal()
	}
	return &CSVNumericStats{
		Count: a.count,
		Min:   NewNumber(lo),
		Max:   NewNumber(hi),
		Mean:  NewNumber(quo(sum, decimal.NewFromInt(int64(a.count)))),
	}
}

// csvHasher hashes cell values with per-call random seeds: short values
// with a wyhash-style multiply-mix (the construction of the Go runtime's
// fallback hash), longer ones with hash/maphash.
type csvHasher struct {
	seed           maphash.Seed
	s1, s2, s3, s4 uint64
}

func (hs *csvHasher) init() {
	hs.seed = maphash.MakeSeed()
	hs.s1 = maphash.String(hs.seed, "s1")
	hs.s2 = maphash.String(hs.seed, "s2")
	hs.s3 = maphash.String(hs.seed, "s3")
	hs.s4 = maphash.String(hs.seed, "s4")
}

// sum returns the 64-bit hash of v.
func (hs *csvHasher) sum(v string) uint64 {
	n := len(v)
	var a, b uint64
	switch {
	case n > 16:
		return maphash.String(hs.seed, v)
	case n >= 8:
		a = csvLoad64(v)
		b = csvLoad64(v[n-8:])
	case n >= 4:
		a = uint64(v[0]) | uint64(v[1])<<8 | uint64(v[2])<<16 | uint64(v[3])<<24
		t := v[n-4:]
		b = uint64(t[0]) | uint64(t[1])<<8 | uint64(t[2])<<16 | uint64(t[3])<<24
	case n > 0:
		a = uint64(v[0])<<16 | uint64(v[n>>1])<<8 | uint64(v[n-1])
	}
	// wyhash's final step: a full 128-bit product, then a mix of its halves.
	hi, lo := bits.Mul64(a^hs.s1, b^hs.s2)
	hi, lo = bits.Mul64(lo^hs.s3^uint64(n), hi^hs.s4)
	return hi ^ lo
}

// csvLoad64 reads the first 8 bytes of s, little-endian.
func csvLoad64(s string) uint64 {
	_ = s[7]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}

// csvHashSet is an open-addressing set of 64-bit hashes (0 marks an empty
// slot) that grows only within a shared memory budget.
type csvHashSet struct {
	slots   []uint64
	n       int
	capped  bool
	touched uint64 // keeps the loads of addBatch's first pass alive
}

// add records h and reports whether it was already present. A value that
// cannot be recorded because the budget is spent sets capped and counts as
// new.
func (hs *csvHashSet) add(h uint64, budget *int) bool {
	if h == 0 {
		h = 1
	}
	if hs.slots == nil && !hs.grow(budget) {
		hs.capped = true
		return false
	}
	mask := uint64(len(hs.slots) - 1)
	i := h & mask
	for {
		x := hs.slots[i]
		if x == h {
			return true
		}
		if x == 0 {
			break
		}
		i = (i + 1) & mask
	}
	if (hs.n+1)*4 > len(hs.slots)*3 {
		if !hs.grow(budget) {
			hs.capped = true
			return false
		}
		hs.insert(h)
	} else {
		hs.slots[i] = h
	}
	hs.n++
	return false
}

// addBatch adds a batch of hashes. When the batch fits without growing the
// table, it first loads the slot of every hash without branching, so that
// the cache misses of a large table overlap instead of stalling one by
// one, then inserts them in a tight loop.
func (hs *csvHashSet) addBatch(batch []uint64, budget *int) {
	for len(batch) > 0 && (hs.slots == nil || (hs.n+len(batch))*4 > len(hs.slots)*3) {
		hs.add(batch[0], budget)
		batch = batch[1:]
	}
	if len(batch) == 0 {
		return
	}
	slots := hs.slots
	mask := uint64(len(slots) - 1)
	var x uint64
	for _, h := range batch {
		x += slots[h&mask]
	}
	hs.touched += x
	n := hs.n
	for _, h := range batch {
		if h == 0 {
			h = 1
		}
		for i := h & mask; ; i = (i + 1) & mask {
			if s := slots[i]; s == h {
				break
			} else if s == 0 {
				slots[i] = h
				n++
				break
			}
		}
	}
	hs.n = n
}

// grow enlarges the table (16 slots at first) four-fold, or two-fold when
// the budget cannot hold the larger table next to the old one; it reports
// false when neither fits. Growing four-fold halves the rehashing work.
func (hs *csvHashSet) grow(budget *int) bool {
	size := 16
	if len(hs.slots) > 0 {
		size = 4 * len(hs.slots)
		if *budget < size*8 {
			size = 2 * len(hs.slots)
		}
	}
	need := size * 8
	if *budget < need {
		return false
	}
	*budget -= need - len(hs.slots)*8
	old := hs.slots
	hs.slots = make([]uint64, size)
	for _, h := range old {
		if h != 0 {
			hs.insert(h)
		}
	}
	return true
}

// insert puts h, known to be absent, into a table with a free slot.
func (hs *csvHashSet) insert(h uint64) {
	mask := uint64(len(hs.slots) - 1)
	i := h & mask
	for hs.slots[i] != 0 {
		i = (i + 1) & mask
	}
	hs.slots[i] = h
}

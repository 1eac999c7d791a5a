package replay

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/shopspring/decimal"

	"github.com/seed1284c1d2/svc/internal/clip"
	"github.com/seed1284c1d2/svc/xau"
)

// Limits of the MT5 CSV parser.
const (
	// MaxCSVLine is the longest accepted line, in bytes.
	MaxCSVLine = 4096
	// maxPriceFraction is the most decimal places of a price.
	maxPriceFraction = 8
	// maxPriceInteger is the most integer digits of a price.
	maxPriceInteger = 10
)

// mt5ColumnNames returns the column names of an MT5 export, in MT5's
// order, indexed by the col* constants.
func mt5ColumnNames() [numCols]string {
	return [numCols]string{"DATE", "TIME", "OPEN", "HIGH", "LOW", "CLOSE", "TICKVOL", "VOL", "SPREAD"}
}

// Column indices into csvLayout.col.
const (
	colDate = iota
	colTime
	colOpen
	colHigh
	colLow
	colClose
	colTickVol
	colVol
	colSpread
	numCols
)

// csvRow is a parsed row in compact form: Unix seconds, prices in units of
// 1e-8, integers as written.
type csvRow struct {
	t                      int64
	open, high, low, close int64
	tickVol, vol, spread   int64
}

// bar converts a compact row to a Bar.
func (r csvRow) bar() xau.Bar {
	return xau.Bar{
		Time:       time.Unix(r.t, 0).UTC(),
		Open:       decimal.New(r.open, -maxPriceFraction),
		High:       decimal.New(r.high, -maxPriceFraction),
		Low:        decimal.New(r.low, -maxPriceFraction),
		Close:      decimal.New(r.close, -maxPriceFraction),
		TickVolume: r.tickVol,
	}
}

// CSVError is a parse or validation error of an MT5 CSV file, with its
// 1-based line number.
type CSVError struct {
	Line int
	Err  error
}

// Error implements error: "line 17: high 2650.1 is below open 2651".
func (e *CSVError) Error() string { return fmt.Sprintf("line %d: %v", e.Line, e.Err) }

// Unwrap returns the underlying error.
func (e *CSVError) Unwrap() error { return e.Err }

// ParseMT5CSV reads a MetaTrader 5 history export (the "Export bars" file of
// the Symbols window) and returns its rows, oldest first.
//
// Format: a header line naming the columns, then one bar per line. The
// header is <DATE> <TIME> <OPEN> <HIGH> <LOW> <CLOSE> <TICKVOL> <VOL>
// <SPREAD> in any order (angle brackets optional, case-insensitive); DATE,
// OPEN, HIGH, LOW and CLOSE are required and TIME may be absent (daily
// exports: every bar opens at 00:00). The separator is taken from the header:
// tab (MT5's own), comma or semicolon. Dates are 2024.01.02 (or
// 2024-01-02), times 01:00:00 or 01:00, read as UTC exactly as written (MT5
// writes the trading server's time; New can shift it). Prices are
// plain decimals (at most 10 integer digits and 8 decimals); volumes and the
// spread are non-negative integers. UTF-8 with or without a byte-order mark,
// UTF-16LE (with a BOM or detected from the header) and CRLF line ends are
// accepted; blank lines are skipped.
//
// Every row must satisfy the rules of ValidateBars (prices > 0, low ≤
// min(open, close), high ≥ max(open, close)) and times must strictly
// increase. The first broken rule is returned as a *CSVError naming the
// line. Lines longer than MaxCSVLine and more than MaxHistoryRows rows are
// refused.
func ParseMT5CSV(r io.Reader) ([]xau.MT5Row, error) {
	var rows []xau.MT5Row
	err := parseMT5(r, 0, "", func(_ int, row csvRow) error {
		rows = append(rows, xau.MT5Row{Bar: row.bar(), Volume: row.vol, Spread: row.spread})
		return nil
	})
	if err != nil {
		return nil, err
	}
	return rows, nil
}

// parseMT5 parses an MT5 export, shifting every time back by offset and,
// when align is a valid timeframe, requiring a <TIME> column and times
// aligned to it; each row goes to fn with its line number.
func parseMT5(r io.Reader, offset time.Duration, align xau.Timeframe, fn func(line int, row csvRow) error) error {
	br := bufio.NewReaderSize(r, 64<<10)
	src, err := mt5Decode(br)
	if err != nil {
		return &CSVError{Line: 1, Err: err}
	}
	sc := bufio.NewScanner(src)
	sc.Buffer(make([]byte, 0, MaxCSVLine+2), MaxCSVLine+2)
	var (
		layout csvLayout
		header bool
		line   int
		prev   int64
		n      int
		fields []string
	)
	for sc.Scan() {
		line++
		text := strings.TrimSuffix(sc.Text(), "\r")
		if len(text) > MaxCSVLine {
			return &CSVError{Line: line, Err: fmt.Errorf("line is longer than %d bytes", MaxCSVLine)}
		}
		if strings.TrimSpace(text) == "" {
			continue
		}
		if !header {
			if line == 1 {
				text = strings.TrimPrefix(text, "\uFEFF")
			}
			if layout, err = parseMT5Header(text); err != nil {
				return &CSVError{Line: line, Err: err}
			}
			if align.Valid() && layout.col[colTime] < 0 {
				return &CSVError{Line: line, Err: errors.New("header has no <TIME> column: a daily export cannot serve intraday bars")}
			}
			header = true
			continue
		}
		fields = splitInto(fields[:0], text, layout.sep)
		row, err := layout.row(fields)
		if err != nil {
			return &CSVError{Line: line, Err: err}
		}
		row.t -= int64(offset / time.Second)
		if align.Valid() && !align.Aligned(time.Unix(row.t, 0)) {
			return &CSVError{Line: line, Err: fmt.Errorf("time %s is not aligned to %s", time.Unix(row.t, 0).UTC().Format(time.RFC3339), align)}
		}
		if n > 0 && row.t <= prev {
			return &CSVError{Line: line, Err: fmt.Errorf("time %s is not after the previous row's %s", time.Unix(row.t, 0).UTC().Format(time.RFC3339), time.Unix(prev, 0).UTC().Format(time.RFC3339))}
		}
		if n == xau.MaxHistoryRows {
			return &CSVError{Line: line, Err: fmt.Errorf("more than %d rows", xau.MaxHistoryRows)}
		}
		if err := fn(line, row); err != nil {
			return &CSVError{Line: line, Err: err}
		}
		prev = row.t
		n++
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return &CSVError{Line: line + 1, Err: fmt.Errorf("line is longer than %d bytes", MaxCSVLine)}
		}
		return &CSVError{Line: line + 1, Err: err}
	}
	if !header {
		return &CSVError{Line: max(line, 1), Err: errors.New("no header line (<DATE> <TIME> <OPEN> <HIGH> <LOW> <CLOSE> ...)")}
	}
	return nil
}

// csvLayout is the column layout learned from the header.
type csvLayout struct {
	sep    byte
	col    [numCols]int // field index of each column, -1 when absent
	fields int
}

// parseMT5Header reads the header line.
func parseMT5Header(text string) (csvLayout, error) {
	var l csvLayout
	switch {
	case strings.IndexByte(text, '\t') >= 0:
		l.sep = '\t'
	case strings.IndexByte(text, ',') >= 0:
		l.sep = ','
	case strings.IndexByte(text, ';') >= 0:
		l.sep = ';'
	default:
		return l, fmt.Errorf("header %q has no tab, comma or semicolon separator", clip.Runes(text, 40))
	}
	for i := range l.col {
		l.col[i] = -1
	}
	names := strings.Split(text, string(l.sep))
	l.fields = len(names)
	for i, name := range names {
		n := strings.ToUpper(strings.TrimSpace(name))
		n = strings.TrimSuffix(strings.TrimPrefix(n, "<"), ">")
		c := -1
		for j, known := range mt5ColumnNames() {
			if n == known {
				c = j
			}
		}
		if c < 0 {
			return l, fmt.Errorf("header column %d %q is not one of <DATE> <TIME> <OPEN> <HIGH> <LOW> <CLOSE> <TICKVOL> <VOL> <SPREAD>", i+1, clip.Runes(name, 20))
		}
		if l.col[c] >= 0 {
			return l, fmt.Errorf("header column <%s> appears twice", n)
		}
		l.col[c] = i
	}
	for _, c := range []int{colDate, colOpen, colHigh, colLow, colClose} {
		if l.col[c] < 0 {
			return l, fmt.Errorf("header has no <%s> column", mt5ColumnNames()[c])
		}
	}
	return l, nil
}

// row parses and checks one data line's fields.
func (l *csvLayout) row(f []string) (csvRow, error) {
	var r csvRow
	if len(f) != l.fields {
		return r, fmt.Errorf("%d fields, the header has %d", len(f), l.fields)
	}
	get := func(c int) string {
		if l.col[c] < 0 {
			return ""
		}
		return strings.TrimSpace(f[l.col[c]])
	}
	t, err := parseMT5Time(get(colDate), get(colTime), l.col[colTime] >= 0)
	if err != nil {
		return r, err
	}
	r.t = t
	prices := [4]struct {
		c   int
		dst *int64
	}{{colOpen, &r.open}, {colHigh, &r.high}, {colLow, &r.low}, {colClose, &r.close}}
	for _, p := range prices {
		v, err := parsePrice(get(p.c))
		if err != nil {
			return r, fmt.Errorf("<%s>: %w", mt5ColumnNames()[p.c], err)
		}
		*p.dst = v
	}
	ints := [3]struct {
		c   int
		dst *int64
	}{{colTickVol, &r.tickVol}, {colVol, &r.vol}, {colSpread, &r.spread}}
	for _, p := range ints {
		if l.col[p.c] < 0 {
			continue
		}
		v, err := parseCount(get(p.c))
		if err != nil {
			return r, fmt.Errorf("<%s>: %w", mt5ColumnNames()[p.c], err)
		}
		*p.dst = v
	}
	if err := xau.CheckBar(r.bar()); err != nil {
		return r, err
	}
	return r, nil
}

// parseMT5Time parses "2024.01.02" (or "2024-01-02") and "01:00:00" (or
// "01:00") as UTC Unix seconds; without a time column the bar opens at 00:00.
func parseMT5Time(date, clock string, hasTime bool) (int64, error) {
	if len(date) != 10 || (date[4] != '.' && date[4] != '-') || date[7] != date[4] {
		return 0, fmt.Errorf("date %q is not YYYY.MM.DD", clip.Runes(date, 20))
	}
	y, ok1 := digits(date[0:4])
	mo, ok2 := digits(date[5:7])
	d, ok3 := digits(date[8:10])
	if !ok1 || !ok2 || !ok3 || y < 1970 || mo < 1 || mo > 12 || d < 1 || d > 31 {
		return 0, fmt.Errorf("date %q is not a valid YYYY.MM.DD date", clip.Runes(date, 20))
	}
	var h, mi, s int
	if hasTime {
		ok := false
		switch len(clock) {
		case 8:
			var ok4, ok5, ok6 bool
			h, ok4 = digits(clock[0:2])
			mi, ok5 = digits(clock[3:5])
			s, ok6 = digits(clock[6:8])
			ok = ok4 && ok5 && ok6 && clock[2] == ':' && clock[5] == ':'
		case 5:
			var ok4, ok5 bool
			h, ok4 = digits(clock[0:2])
			mi, ok5 = digits(clock[3:5])
			ok = ok4 && ok5 && clock[2] == ':'
		}
		if !ok || h > 23 || mi > 59 || s > 59 {
			return 0, fmt.Errorf("time %q is not HH:MM:SS", clip.Runes(clock, 20))
		}
	}
	t := time.Date(y, time.Month(mo), d, h, mi, s, 0, time.UTC)
	if t.Day() != d {
		return 0, fmt.Errorf("date %q does not exist", date)
	}
	return t.Unix(), nil
}

// digits parses a string of ASCII digits.
func digits(s string) (int, bool) {
	if s == "" {
		return 0, false
	}
	n := 0
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
		n = n*10 + int(s[i]-'0')
	}
	return n, true
}

// parsePrice parses a plain non-negative decimal ("2650.12") into units of
// 1e-8.
func parsePrice(s string) (int64, error) {
	intPart, frac, dot := strings.Cut(s, ".")
	if intPart == "" || len(intPart) > maxPriceInteger || (dot && (frac == "" || len(frac) > maxPriceFraction)) {
		return 0, fmt.Errorf("price %q is not a plain decimal with at most %d integer digits and %d decimals", clip.Runes(s, 24), maxPriceInteger, maxPriceFraction)
	}
	var v int64
	for _, part := range []string{intPart, frac} {
		for i := 0; i < len(part); i++ {
			if part[i] < '0' || part[i] > '9' {
				return 0, fmt.Errorf("price %q is not a plain decimal", clip.Runes(s, 24))
			}
			v = v*10 + int64(part[i]-'0')
		}
	}
	for range maxPriceFraction - len(frac) {
		v *= 10
	}
	return v, nil
}

// parseCount parses a non-negative integer of at most 18 digits.
func parseCount(s string) (int64, error) {
	if s == "" || len(s) > 18 {
		return 0, fmt.Errorf("%q is not a non-negative integer", clip.Runes(s, 24))
	}
	var v int64
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, fmt.Errorf("%q is not a non-negative integer", clip.Runes(s, 24))
		}
		v = v*10 + int64(s[i]-'0')
	}
	return v, nil
}

// splitInto splits s at sep, appending to dst.
func splitInto(dst []string, s string, sep byte) []string {
	for {
		i := strings.IndexByte(s, sep)
		if i < 0 {
			return append(dst, s)
		}
		dst = append(dst, s[:i])
		s = s[i+1:]
	}
}

// mt5Decode returns a reader of UTF-8 text: br itself, or a UTF-16LE
// decoder when the input starts with the UTF-16LE byte-order mark or with
// an ASCII character followed by a zero byte (MT5 writes UTF-16LE files).
func mt5Decode(br *bufio.Reader) (io.Reader, error) {
	head, err := br.Peek(2)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	if len(head) == 2 && ((head[0] == 0xFF && head[1] == 0xFE) || (head[0] != 0 && head[0] < 0x80 && head[1] == 0)) {
		if head[0] == 0xFF {
			if _, err := br.Discard(2); err != nil {
				return nil, err
			}
		}
		return &utf16Reader{src: br}, nil
	}
	return br, nil
}

// utf16Reader decodes UTF-16LE into UTF-8; invalid sequences become U+FFFD.
type utf16Reader struct {
	src *bufio.Reader
	out []byte
	err error
}

// Read implements io.Reader.
func (u *utf16Reader) Read(p []byte) (int, error) {
	for len(u.out) == 0 && u.err == nil {
		var unit [2]byte
		if _, err := io.ReadFull(u.src, unit[:]); err != nil {
			if errors.Is(err, io.ErrUnexpectedEOF) {
				u.out = utf8.AppendRune(u.out, utf8.RuneError)
				err = io.EOF
			}
			u.err = err
			break
		}
		r := rune(uint16(unit[0]) | uint16(unit[1])<<8)
		if utf16.IsSurrogate(r) {
			next, err := u.src.Peek(2)
			if err == nil {
				r2 := rune(uint16(next[0]) | uint16(next[1])<<8)
				if dec := utf16.DecodeRune(r, r2); dec != utf8.RuneError {
					_, _ = u.src.Discard(2)
					r = dec
				} else {
					r = utf8.RuneError
				}
			} else {
				r = utf8.RuneError
			}
		}
		u.out = utf8.AppendRune(u.out, r)
	}
	n := copy(p, u.out)
	u.out = u.out[n:]
	if n > 0 {
		return n, nil
	}
	return 0, u.err
}

// WriteMT5CSV writes rows as an MT5 history export: MT5's tab-separated
// header <DATE> <TIME> <OPEN> <HIGH> <LOW> <CLOSE> <TICKVOL> <VOL> <SPREAD>,
// then one line per row ("2024.01.05\t00:00:00\t2650.12\t..."), times in
// UTC, every price with as many decimals as the most precise price of the
// file, "\n" line ends. ParseMT5CSV reads it back to equal rows. Rows that
// break the ValidateBars rules, negative volumes or spreads, times with
// fractions of a second and unordered times are refused before anything is
// written.
func WriteMT5CSV(w io.Writer, rows []xau.MT5Row) error {
	places := 0
	for i, r := range rows {
		if err := xau.CheckBar(r.Bar); err != nil {
			return fmt.Errorf("xau: rows[%d]: %w", i, err)
		}
		if r.Volume < 0 || r.Spread < 0 {
			return fmt.Errorf("xau: rows[%d]: negative volume or spread", i)
		}
		if y := r.Time.UTC().Year(); r.Time.Nanosecond() != 0 || y < 1970 || y > 9999 {
			return fmt.Errorf("xau: rows[%d]: time %s is not a whole second in years 1970-9999", i, r.Time.Format(time.RFC3339Nano))
		}
		if i > 0 && !r.Time.After(rows[i-1].Time) {
			return fmt.Errorf("xau: rows[%d]: time is not after the previous row's", i)
		}
		for _, p := range []decimal.Decimal{r.Open, r.High, r.Low, r.Close} {
			ip, frac, _ := strings.Cut(p.String(), ".") // String drops trailing zeros
			if len(ip) > maxPriceInteger || len(frac) > maxPriceFraction {
				return fmt.Errorf("xau: rows[%d]: price %s has more than %d integer digits or %d decimals", i, p, maxPriceInteger, maxPriceFraction)
			}
			places = max(places, len(frac))
		}
	}
	bw := bufio.NewWriter(w)
	bw.WriteString("<DATE>\t<TIME>\t<OPEN>\t<HIGH>\t<LOW>\t<CLOSE>\t<TICKVOL>\t<VOL>\t<SPREAD>\n")
	var line bytes.Buffer
	for _, r := range rows {
		line.Reset()
		t := r.Time.UTC()
		line.WriteString(t.Format("2006.01.02\t15:04:05"))
		for _, p := range []decimal.Decimal{r.Open, r.High, r.Low, r.Close} {
			line.WriteByte('\t')
			line.WriteString(p.StringFixed(int32(places)))
		}
		fmt.Fprintf(&line, "\t%d\t%d\t%d\n", r.TickVolume, r.Volume, r.Spread)
		bw.Write(line.Bytes())
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("xau: writing MT5 CSV: %w", err)
	}
	return nil
}

// floorDiv returns ⌊a/b⌋ for b > 0.
func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && a < 0 {
		q--
	}
	return q
}

// Package csvscan scans RFC 4180 CSV text held in a string: records,
// fields (substrings of the input where possible), line numbers for
// messages, and delimiter detection. It allocates only to unescape quoted
// fields that hold doubled quotes or CRLF line breaks.
package csvscan

import (
	"fmt"
	"math/bits"
	"strings"
)

// Limits of the delimiter detection sample: at most 100 records, none
// starting past 64 KiB.
const (
	detectRecords = 100
	detectBytes   = 64 << 10
)

// QuoteError is a quoting error of the input: an unclosed quoted field,
// text after a closing quote, or a quote in an unquoted field.
type QuoteError struct {
	// Line is the 1-based line of the problem.
	Line int
	// Msg says what is wrong.
	Msg string
}

// Error implements error: "line N: msg".
func (e *QuoteError) Error() string { return fmt.Sprintf("line %d: %s", e.Line, e.Msg) }

func quoteErrorf(line int, format string, args ...any) *QuoteError {
	return &QuoteError{Line: line, Msg: fmt.Sprintf(format, args...)}
}

// DetectDelimiter picks the delimiter of s among comma, semicolon, tab and
// pipe: it scans at most the first 100 records (none starting past 64 KiB)
// with each candidate, ranks first the candidates without a quoting error,
// then those that split records into at least two fields, then the larger
// share of records with the modal field count, then the larger modal count;
// a tie goes to the earlier candidate, and comma when nothing splits.
func DetectDelimiter(s string) string {
	candidates := [...]string{",", ";", "\t", "|"}
	type score struct {
		ok, splits         bool
		mode, agree, total int
	}
	// better reports whether a ranks above b (b ranks first on a tie).
	better := func(a, b score) bool {
		if a.ok != b.ok {
			return a.ok
		}
		if a.splits != b.splits || !a.splits {
			return a.splits
		}
		// Compare agree/total shares without division.
		if l, r := a.agree*b.total, b.agree*a.total; l != r {
			return l > r
		}
		return a.mode > b.mode
	}
	best, bestScore := 0, score{}
	for i, d := range candidates {
		var sc score
		sc.mode, sc.agree, sc.total, sc.ok = detectScore(s, d)
		sc.splits = sc.ok && sc.mode >= 2
		if i == 0 || better(sc, bestScore) {
			best, bestScore = i, sc
		}
	}
	return candidates[best]
}

// detectScore parses the sample of s with delimiter d and returns the
// modal field count, how many records have it, how many were sampled, and
// false when the sample holds a quoting error.
func detectScore(s, d string) (mode, agree, total int, ok bool) {
	var sc Scanner
	sc.Init(s, d)
	counts := make(map[int]int, 8)
	for total < detectRecords && sc.pos < detectBytes {
		if more, _ := sc.StartRecord(); !more {
			break
		}
		n := 0
		for {
			_, _, last, err := sc.field()
			if err != nil {
				return 0, 0, 0, false
			}
			n++
			if last {
				break
			}
		}
		counts[n]++
		total++
	}
	for n, c := range counts {
		if c > agree || (c == agree && n > mode) {
			mode, agree = n, c
		}
	}
	return mode, agree, total, true
}

// Scanner is an RFC 4180 scanner over a string. Unquoted fields and
// quoted fields without escapes are returned as substrings of the input.
// Call Init before use; then, for each record, StartRecord and Field until
// a field is the record's last.
type Scanner struct {
	s       string
	pos     int
	line    int // 1-based line number of s[pos]
	recLine int // line on which the current record starts
	delim   string
	d0      byte
	stop    [256]bool // bytes ending an unquoted run: d0, LF and '"'
	dRep    uint64    // d0 in every byte, for next
}

// Init starts scanning s with delim (a non-empty string: one character,
// possibly several bytes).
func (sc *Scanner) Init(s, delim string) {
	sc.s, sc.pos, sc.line, sc.delim, sc.d0 = s, 0, 1, delim, delim[0]
	sc.stop[sc.d0] = true
	sc.stop['\n'] = true
	sc.stop['"'] = true
	sc.dRep = uint64(sc.d0) * ones
}

// Byte-parallel (SWAR) search constants.
const (
	ones  = 0x0101010101010101
	highs = 0x8080808080808080
)

// next returns the index of the first byte at or after i that is the
// delimiter's first byte, LF or a quote, or len(s): eight bytes at a time
// while eight remain.
func (sc *Scanner) next(i int) int {
	s := sc.s
	for i+8 <= len(s) {
		w := load64(s[i:])
		// A zero byte in w^x marks a byte equal to x; the lowest set bit
		// of (v-ones)&^v&highs is exact (higher ones may be false).
		a, b, c := w^sc.dRep, w^('\n'*ones), w^('"'*ones)
		t := ((a - ones) &^ a) | ((b - ones) &^ b) | ((c - ones) &^ c)
		if t &= highs; t != 0 {
			return i + bits.TrailingZeros64(t)>>3
		}
		i += 8
	}
	for i < len(s) && !sc.stop[s[i]] {
		i++
	}
	return i
}

// StartRecord skips blank lines (LF, CRLF, or a lone CR ending the input)
// and reports whether a record starts at the current position, and how
// many blank lines it skipped.
func (sc *Scanner) StartRecord() (more bool, blanks int) {
	s := sc.s
	for sc.pos < len(s) {
		switch s[sc.pos] {
		case '\n':
			sc.pos++
			sc.line++
			blanks++
			continue
		case '\r':
			if sc.pos+1 == len(s) {
				sc.pos++
				return false, blanks + 1
			}
			if s[sc.pos+1] == '\n' {
				sc.pos += 2
				sc.line++
				blanks++
				continue
			}
		}
		sc.recLine = sc.line
		return true, blanks
	}
	return false, blanks
}

// field scans the next field of the current record. v is the field's text;
// when esc is true v is the raw content of a quoted field that still holds
// doubled quotes or CRLF line breaks (see Unescape). last reports that
// the field ends its record.
func (sc *Scanner) field() (v string, esc, last bool, err error) {
	s := sc.s
	n := len(s)
	i := sc.pos
	if i < n && s[i] == '"' {
		startLine := sc.line
		start := i + 1
		i = start
		for {
			j := strings.IndexByte(s[i:], '"')
			if j < 0 {
				sc.line += strings.Count(s[i:], "\n")
				sc.pos = n
				return "", false, true, quoteErrorf(startLine, "quoted field is never closed (a quote inside a quoted field must be doubled)")
			}
			if seg := s[i : i+j]; strings.IndexByte(seg, '\n') >= 0 {
				sc.line += strings.Count(seg, "\n")
				if strings.Contains(seg, "\r\n") {
					esc = true
				}
			}
			i += j + 1
			if i < n && s[i] == '"' {
				esc = true
				i++
				continue
			}
			v = s[start : i-1]
			break
		}
		switch {
		case i == n:
			sc.pos = n
			return v, esc, true, nil
		case s[i] == sc.d0 && strings.HasPrefix(s[i:], sc.delim):
			sc.pos = i + len(sc.delim)
			return v, esc, false, nil
		case s[i] == '\n':
			sc.pos = i + 1
			sc.line++
			return v, esc, true, nil
		case s[i] == '\r' && i+1 == n:
			sc.pos = n
			return v, esc, true, nil
		case s[i] == '\r' && s[i+1] == '\n':
			sc.pos = i + 2
			sc.line++
			return v, esc, true, nil
		}
		sc.pos = n
		return "", false, true, quoteErrorf(sc.line, "unexpected %s after the closing quote of a field (a quote inside a quoted field must be doubled)",
			describeByte(s[i]))
	}
	start := i
	i = sc.next(i)
	for i < n {
		switch s[i] {
		case '"':
			sc.pos = n
			return "", false, true, quoteErrorf(sc.line, "quote in an unquoted field (quote the whole field and double the quote)")
		case '\n':
			end := i
			if end > start && s[end-1] == '\r' {
				end--
			}
			sc.pos = i + 1
			sc.line++
			return s[start:end], false, true, nil
		}
		if strings.HasPrefix(s[i:], sc.delim) {
			sc.pos = i + len(sc.delim)
			return s[start:i], false, false, nil
		}
		i = sc.next(i + 1)
	}
	end := n
	if end > start && s[end-1] == '\r' {
		end--
	}
	sc.pos = n
	return s[start:end], false, true, nil
}

// describeByte names a byte for an error message.
func describeByte(c byte) string {
	switch {
	case c == '\r':
		return "carriage return"
	case c >= 0x20 && c < 0x7f:
		return "character " + string(rune(c))
	default:
		return "byte 0x" + string("0123456789abcdef"[c>>4]) + string("0123456789abcdef"[c&15])
	}
}

// Unescape turns the raw content of a quoted field into its value: a
// doubled quote becomes one quote and CRLF becomes LF.
func Unescape(v string) string {
	var b strings.Builder
	b.Grow(len(v))
	for i := 0; i < len(v); i++ {
		c := v[i]
		if c == '"' {
			i++ // the scanner guarantees the second quote of the pair
		} else if c == '\r' && i+1 < len(v) && v[i+1] == '\n' {
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

// Field scans the next field of the current record. v is the field's text;
// when esc is true v is the raw content of a quoted field that still holds
// doubled quotes or CRLF line breaks (see Unescape). last reports that the
// field ends its record. A quoting error is a *QuoteError; the scanner is
// then at the end of the input.
func (sc *Scanner) Field() (v string, esc, last bool, err error) {
	// Fast path: an unquoted field ended by a one-byte delimiter or a line
	// feed; anything else goes through field.
	s, i := sc.s, sc.pos
	j := len(s)
	if i < len(s) && s[i] != '"' {
		j = sc.next(i)
	}
	if j < len(s) && s[j] == sc.d0 && len(sc.delim) == 1 {
		sc.pos = j + 1
		return s[i:j], false, false, nil
	}
	if j < len(s) && s[j] == '\n' {
		end := j
		if end > i && s[end-1] == '\r' {
			end--
		}
		sc.pos = j + 1
		sc.line++
		return s[i:end], false, true, nil
	}
	return sc.field()
}

// RecordLine returns the 1-based line on which the current record starts.
func (sc *Scanner) RecordLine() int { return sc.recLine }

// load64 reads the first 8 bytes of s, little-endian.
func load64(s string) uint64 {
	_ = s[7]
	return uint64(s[0]) | uint64(s[1])<<8 | uint64(s[2])<<16 | uint64(s[3])<<24 |
		uint64(s[4])<<32 | uint64(s[5])<<40 | uint64(s[6])<<48 | uint64(s[7])<<56
}

package wire

import (
	"encoding/json"
	"strings"

	"github.com/seed1284c1d2/svc/internal/jsonlex"
)

// This file holds a fast decoder for the JSON of payment payloads, the hot
// path of local verification. It handles the canonical subset that clients
// produce: known keys spelled exactly, each at most once, strings without
// escapes or non-ASCII bytes, integers without fraction or exponent. On
// anything else it reports !ok and the caller falls back to encoding/json,
// so results are always those encoding/json would give (a fuzz test checks
// this equivalence).

// Cursor is a position in a JSON document. s is the document as one
// string: decoded strings are substrings of it, one allocation in all.
type Cursor struct {
	jsonlex.Lexer
	s string
}

// NewCursor returns a cursor at the start of b.
func NewCursor(b []byte) *Cursor { return &Cursor{Lexer: jsonlex.Lexer{Src: b}, s: string(b)} }

// maxFastDepth bounds the nesting the fast path skips over.
const maxFastDepth = 64

// Str reads a string made of printable ASCII without escapes.
func (p *Cursor) Str() (string, bool) {
	if p.Peek() != '"' {
		return "", false
	}
	start := p.I + 1
	for j := start; j < len(p.Src); j++ {
		c := p.Src[j]
		switch {
		case c == '"':
			p.I = j + 1
			return p.s[start:j], true
		case c == '\\' || c < 0x20 || c >= 0x80:
			return "", false
		}
	}
	return "", false
}

// Integer reads an integer (optional '-', no leading zeros, no fraction or
// exponent) that fits an int32, which covers the protocol's ints.
func (p *Cursor) Integer() (int, bool) {
	j := p.I
	neg := false
	if j < len(p.Src) && p.Src[j] == '-' {
		neg = true
		j++
	}
	start := j
	v := 0
	for j < len(p.Src) && p.Src[j] >= '0' && p.Src[j] <= '9' {
		v = v*10 + int(p.Src[j]-'0')
		j++
		if j-start > 9 {
			return 0, false
		}
	}
	if j == start || (p.Src[start] == '0' && j-start > 1) {
		return 0, false
	}
	if j < len(p.Src) {
		switch p.Src[j] {
		case '.', 'e', 'E':
			return 0, false
		}
	}
	p.I = j
	if neg {
		v = -v
	}
	return v, true
}

// Object walks the members of an object; field is called with the cursor
// on each value and must consume it.
func (p *Cursor) Object(field func(key string) bool) bool {
	p.WS()
	if p.Peek() != '{' {
		return false
	}
	p.I++
	p.WS()
	if p.Peek() == '}' {
		p.I++
		return true
	}
	for {
		p.WS()
		key, ok := p.Str()
		if !ok {
			return false
		}
		p.WS()
		if p.Peek() != ':' {
			return false
		}
		p.I++
		p.WS()
		if !field(key) {
			return false
		}
		p.WS()
		switch p.Peek() {
		case ',':
			p.I++
		case '}':
			p.I++
			return true
		default:
			return false
		}
	}
}

// End reports whether only whitespace is left.
func (p *Cursor) End() bool {
	p.WS()
	return p.I == len(p.Src)
}

// keyIndex returns the index of key in known (exact match), -1 when it
// matches none even case-insensitively (an ignored field), and -2 when it
// matches one only case-insensitively (encoding/json would use it: the fast
// path gives up).
func keyIndex(key string, known []string) int {
	for i, k := range known {
		if key == k {
			return i
		}
	}
	for _, k := range known {
		if strings.EqualFold(key, k) {
			return -2
		}
	}
	return -1
}

// seenOnce records key i as seen and reports false on a duplicate.
func seenOnce(seen *uint32, i int) bool {
	if *seen&(1<<i) != 0 {
		return false
	}
	*seen |= 1 << i
	return true
}

// KnownMembers walks an object whose members of interest are known: field
// is called with the index in known of each such key (cursor on its
// value, which it must consume); other keys are skipped, and a known key
// given twice, or matching one only case-insensitively (encoding/json
// would take it), gives up.
func (p *Cursor) KnownMembers(known []string, field func(i int) bool) bool {
	var seen uint32
	return p.Object(func(key string) bool {
		i := keyIndex(key, known)
		switch {
		case i == -1:
			return p.Skip(1, maxFastDepth)
		case i < 0 || !seenOnce(&seen, i):
			return false
		}
		return field(i)
	})
}

// StringMembers decodes an object whose known keys hold strings into dst
// (by index); unknown keys are skipped.
func (p *Cursor) StringMembers(known []string, dst []*string) bool {
	return p.KnownMembers(known, func(i int) bool {
		s, ok := p.Str()
		*dst[i] = s
		return ok
	})
}

// RawValue steps over a value and returns its bytes (aliasing the input).
func (p *Cursor) RawValue() ([]byte, bool) {
	start := p.I
	if !p.Skip(1, maxFastDepth) {
		return nil, false
	}
	return p.Src[start:p.I], true
}

// Map decodes an object value into a map: strings directly, anything
// else through encoding/json on the value's bytes. null gives up.
func (p *Cursor) Map() (map[string]any, bool) {
	if p.Peek() == 'n' {
		return nil, false
	}
	start := p.I
	m := map[string]any{}
	ok := p.Object(func(key string) bool {
		s, ok := p.Str()
		m[key] = s
		return ok
	})
	if ok {
		return m, true
	}
	p.I = start
	raw, ok := p.RawValue()
	if !ok || raw[0] != '{' {
		return nil, false
	}
	m = nil
	if json.Unmarshal(raw, &m) != nil {
		return nil, false
	}
	return m, true
}

// Package jsonlex is the byte-level JSON lexer shared by svc's fast paths
// for canonical JSON: the payment headers (x402) and the tools' request
// bodies (tools). It recognises exactly the JSON grammar of RFC 8259 —
// white space, literals, strings with their escapes, numbers, nested values
// — and decodes nothing: each fast path builds its values itself and falls
// back to encoding/json on anything it does not handle, so a lexer that
// refused valid JSON would only cost speed, and one that accepted invalid
// JSON is what the fuzz tests of both callers (against encoding/json)
// would catch.
package jsonlex

// Lexer is a cursor over a JSON document: Src[I:] is what is left.
type Lexer struct {
	Src []byte
	I   int
}

// WS skips JSON white space.
func (l *Lexer) WS() {
	for l.I < len(l.Src) {
		switch l.Src[l.I] {
		case ' ', '\t', '\n', '\r':
			l.I++
		default:
			return
		}
	}
}

// Peek returns the current byte, or 0 at the end.
func (l *Lexer) Peek() byte {
	if l.I < len(l.Src) {
		return l.Src[l.I]
	}
	return 0
}

// Literal consumes lit (true, false, null) when it comes next.
func (l *Lexer) Literal(lit string) bool {
	if len(l.Src)-l.I < len(lit) || string(l.Src[l.I:l.I+len(lit)]) != lit {
		return false
	}
	l.I += len(lit)
	return true
}

// Str consumes a string at '"', reporting whether it holds escapes. Any
// byte from 0x20 up is accepted raw (encoding/json replaces invalid UTF-8
// rather than refusing it); control characters and malformed escapes are
// not.
func (l *Lexer) Str() (escaped, ok bool) {
	if l.Peek() != '"' {
		return false, false
	}
	i := l.I + 1
	for i < len(l.Src) {
		c := l.Src[i]
		switch {
		case c == '"':
			l.I = i + 1
			return escaped, true
		case c < 0x20:
			return false, false
		case c == '\\':
			escaped = true
			if i+1 >= len(l.Src) {
				return false, false
			}
			switch l.Src[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > len(l.Src) {
					return false, false
				}
				for _, h := range l.Src[i+2 : i+6] {
					if !IsHex(h) {
						return false, false
					}
				}
				i += 6
			default:
				return false, false
			}
		default:
			i++
		}
	}
	return false, false
}

// Number consumes a number literal,
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?, and returns it.
func (l *Lexer) Number() ([]byte, bool) {
	start, i, n := l.I, l.I, len(l.Src)
	if i < n && l.Src[i] == '-' {
		i++
	}
	switch {
	case i < n && l.Src[i] == '0':
		i++
	case i < n && l.Src[i] >= '1' && l.Src[i] <= '9':
		for i < n && IsDigit(l.Src[i]) {
			i++
		}
	default:
		return nil, false
	}
	if i < n && l.Src[i] == '.' {
		i++
		if i >= n || !IsDigit(l.Src[i]) {
			return nil, false
		}
		for i < n && IsDigit(l.Src[i]) {
			i++
		}
	}
	if i < n && (l.Src[i] == 'e' || l.Src[i] == 'E') {
		i++
		if i < n && (l.Src[i] == '+' || l.Src[i] == '-') {
			i++
		}
		if i >= n || !IsDigit(l.Src[i]) {
			return nil, false
		}
		for i < n && IsDigit(l.Src[i]) {
			i++
		}
	}
	l.I = i
	return l.Src[start:i], true
}

// Skip consumes one well-formed JSON value of any type, white space before
// it included, nested at most maxDepth levels below depth.
func (l *Lexer) Skip(depth, maxDepth int) bool {
	if depth > maxDepth {
		return false
	}
	l.WS()
	switch l.Peek() {
	case '{':
		l.I++
		l.WS()
		if l.Peek() == '}' {
			l.I++
			return true
		}
		for {
			l.WS()
			if _, ok := l.Str(); !ok {
				return false
			}
			l.WS()
			if l.Peek() != ':' {
				return false
			}
			l.I++
			if !l.Skip(depth+1, maxDepth) {
				return false
			}
			l.WS()
			switch l.Peek() {
			case ',':
				l.I++
			case '}':
				l.I++
				return true
			default:
				return false
			}
		}
	case '[':
		l.I++
		l.WS()
		if l.Peek() == ']' {
			l.I++
			return true
		}
		for {
			if !l.Skip(depth+1, maxDepth) {
				return false
			}
			l.WS()
			switch l.Peek() {
			case ',':
				l.I++
			case ']':
				l.I++
				return true
			default:
				return false
			}
		}
	case '"':
		_, ok := l.Str()
		return ok
	case 't':
		return l.Literal("true")
	case 'f':
		return l.Literal("false")
	case 'n':
		return l.Literal("null")
	}
	_, ok := l.Number()
	return ok
}

// IsDigit reports whether c is an ASCII digit.
func IsDigit(c byte) bool { return c >= '0' && c <= '9' }

// IsHex reports whether c is an ASCII hexadecimal digit.
func IsHex(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

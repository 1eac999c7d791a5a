package tools

import (
	"encoding"
	"encoding/json"
	"reflect"
	"strconv"
	"unicode/utf8"

	"github.com/shopspring/decimal"

	"github.com/seed1284c1d2/svc"
	"github.com/seed1284c1d2/svc/internal/jsonlex"
)

// The fast path of the strict decoder.
//
// Nearly every body a server sees is well formed and right: one object of
// known members, each given once, of the right JSON type. For those, a
// single pass over the bytes replaces the token-by-token walk of
// checkDocument (fastCheck) and the reflection-driven encoding/json decode
// of prepare (fastDecode). Both are conservative: at the first thing they
// do not handle, or that is wrong in any way, they give up and the slow
// path runs, which produces exactly the result it always did (errors
// included, byte for byte). They never report an error themselves.
//
// fastCheck accepts a document only where the walker reports nothing;
// fastDecode fills a request only where encoding/json would fill it the
// same way (tests compare both against the slow path).

// fastMaxDepth bounds the nesting the fast path follows; deeper documents
// take the slow path.
const fastMaxDepth = 64

// fastMaxFields bounds the members of an object the fast path tracks (one
// bit each).
const fastMaxFields = 64

var (
	jsonUnmarshalerType = reflect.TypeFor[json.Unmarshaler]()
	textUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()
)

// fastScanner is one pass over a JSON document.
type fastScanner struct {
	jsonlex.Lexer
	// check: the pass is fastCheck's (every required member must be
	// present); otherwise fastDecode's (members may be missing: prepare
	// also decodes documents whose only errors are missing members).
	check bool
}

// fastCheck reports whether src is exactly one JSON object matching s with
// nothing the walker would report: no syntax error, no unknown, duplicate
// or missing member, every value of its member's type (numbers decimal and
// within their Go type). False means "not known to be clean": the caller
// runs the walker.
func fastCheck(src []byte, s *shape) bool {
	if s.kind != kindObject {
		return false
	}
	p := fastScanner{Lexer: jsonlex.Lexer{Src: src}, check: true}
	p.WS()
	if p.Peek() != '{' || !p.object(s, 0, reflect.Value{}) {
		return false
	}
	p.WS()
	return p.I == len(src)
}

// fastDecode decodes src, a document fastCheck accepts or whose only
// errors are missing members, into v (an addressable struct of s's type,
// holding its zero value). It reports false when the document or the type
// holds anything it does not handle exactly like encoding/json; v is then
// partly written and the caller must decode a fresh value with
// json.Unmarshal.
func fastDecode(src []byte, s *shape, v reflect.Value) bool {
	if s.kind != kindObject || !s.fastDecodable || !v.CanSet() {
		return false
	}
	p := fastScanner{Lexer: jsonlex.Lexer{Src: src}}
	p.WS()
	if p.Peek() != '{' || !p.object(s, 0, v) {
		return false
	}
	p.WS()
	return p.I == len(src)
}

// fastCheckDecode is fastCheck and fastDecode in one pass: it reports
// true when src is a document fastCheck accepts and v (as for fastDecode)
// now holds it as fastDecode would have decoded it. False says nothing
// about src: v may be partly written and the caller takes the two-step
// path (the walker for the errors, then a decode into a fresh value).
func fastCheckDecode(src []byte, s *shape, v reflect.Value) bool {
	if s.kind != kindObject || !s.fastDecodable || !v.CanSet() {
		return false
	}
	p := fastScanner{Lexer: jsonlex.Lexer{Src: src}, check: true}
	p.WS()
	if p.Peek() != '{' || !p.object(s, 0, v) {
		return false
	}
	p.WS()
	return p.I == len(src)
}

// object reads an object of shape s at '{' into v (when valid).
func (p *fastScanner) object(s *shape, depth int, v reflect.Value) bool {
	if depth > fastMaxDepth || len(s.fields) > fastMaxFields {
		return false
	}
	p.I++ // '{'
	var seen uint64
	p.WS()
	if p.Peek() == '}' {
		p.I++
		return p.required(s, seen)
	}
	for {
		p.WS()
		if p.Peek() != '"' {
			return false
		}
		start := p.I + 1
		if escaped, ok := p.Str(); !ok || escaped {
			return false // a key with escapes: the slow path unescapes it
		}
		f := s.field(p.Src[start : p.I-1])
		if f == nil || seen&(1<<f.pos) != 0 {
			return false
		}
		seen |= 1 << f.pos
		p.WS()
		if p.Peek() != ':' {
			return false
		}
		p.I++
		p.WS()
		var fv reflect.Value
		if v.IsValid() {
			fv = v.Field(f.index[0])
		}
		if !f.required && !f.shape.nullable && p.Peek() == 'n' {
			// null for an optional member: not given (v holds the zero
			// value, which encoding/json would leave as it is).
			if !p.Literal("null") {
				return false
			}
		} else if !p.value(f.shape, depth+1, fv) {
			return false
		}
		p.WS()
		switch p.Peek() {
		case ',':
			p.I++
		case '}':
			p.I++
			return p.required(s, seen)
		default:
			return false
		}
	}
}

// required reports whether every required member of s was seen (always
// true when decoding).
func (p *fastScanner) required(s *shape, seen uint64) bool {
	if !p.check {
		return true
	}
	for _, f := range s.fields {
		if f.required && seen&(1<<f.pos) == 0 {
			return false
		}
	}
	return true
}

// array reads an array of shape s at '[' into v (when valid).
func (p *fastScanner) array(s *shape, depth int, v reflect.Value) bool {
	if depth > fastMaxDepth {
		return false
	}
	p.I++ // '['
	if v.IsValid() {
		// encoding/json: [] is an empty, non-nil slice.
		v.Set(reflect.MakeSlice(v.Type(), 0, 0))
	}
	p.WS()
	if p.Peek() == ']' {
		p.I++
		return true
	}
	for n := 0; ; n++ {
		p.WS()
		var ev reflect.Value
		if v.IsValid() {
			v.Grow(1)
			v.SetLen(n + 1)
			ev = v.Index(n)
		}
		if !p.value(s.elem, depth+1, ev) {
			return false
		}
		p.WS()
		switch p.Peek() {
		case ',':
			p.I++
		case ']':
			p.I++
			return true
		default:
			return false
		}
	}
}

// value reads one value of shape s into v (when valid).
func (p *fastScanner) value(s *shape, depth int, v reflect.Value) bool {
	c := p.Peek()
	if c == 'n' {
		if !p.Literal("null") || !s.nullable {
			return false
		}
		if v.IsValid() {
			if v.Kind() == reflect.Pointer {
				v.SetZero()
			} else if s.kind == kindAny {
				v.SetBytes([]byte("null")) // json.RawMessage keeps the literal
			} else {
				return false
			}
		}
		return true
	}
	if v.IsValid() {
		for v.Kind() == reflect.Pointer {
			if v.IsNil() {
				v.Set(reflect.New(v.Type().Elem()))
			}
			v = v.Elem()
		}
	}
	switch s.kind {
	case kindAny:
		start := p.I
		if !p.Skip(depth, fastMaxDepth) {
			return false
		}
		if v.IsValid() {
			v.SetBytes(append([]byte(nil), p.Src[start:p.I]...))
		}
		return true
	case kindObject:
		return c == '{' && p.object(s, depth, v)
	case kindArray:
		return c == '[' && p.array(s, depth, v)
	case kindString:
		if c != '"' {
			return false
		}
		start := p.I
		escaped, ok := p.Str()
		if !ok {
			return false
		}
		if v.IsValid() {
			raw := p.Src[start+1 : p.I-1]
			if escaped || !utf8.Valid(raw) {
				// encoding/json's own unquoting (escapes, invalid UTF-8).
				var str string
				if json.Unmarshal(p.Src[start:p.I], &str) != nil {
					return false
				}
				v.SetString(str)
			} else {
				v.SetString(s.word(raw))
			}
		}
		return true
	case kindBoolean:
		var b bool
		switch c {
		case 't':
			b = true
			if !p.Literal("true") {
				return false
			}
		case 'f':
			if !p.Literal("false") {
				return false
			}
		default:
			return false
		}
		if v.IsValid() {
			v.SetBool(b)
		}
		return true
	case kindInteger:
		lit, ok := p.Number()
		if !ok {
			return false
		}
		return p.integer(lit, s, v)
	case kindNumber:
		var lit []byte
		if c == '"' {
			start := p.I
			escaped, ok := p.Str()
			if !ok || escaped {
				return false
			}
			lit = p.Src[start+1 : p.I-1]
			for _, b := range lit {
				if b >= utf8.RuneSelf {
					return false
				}
			}
		} else {
			var ok bool
			if lit, ok = p.Number(); !ok {
				return false
			}
		}
		if !v.IsValid() {
			if _, _, ok := plainDecimal(lit); ok {
				return true // svc.ParseNumber accepts every plain decimal
			}
			_, err := svc.ParseNumber(string(lit))
			return err == nil
		}
		np, ok := v.Addr().Interface().(*svc.Number)
		if !ok {
			return false
		}
		if mant, exp, ok := plainDecimal(lit); ok {
			// What svc.ParseNumber builds, without the detour through a
			// string: decimal.NewFromString parses a literal of at most 18
			// digits into exactly this mantissa and exponent.
			*np = svc.NewNumber(decimal.New(mant, exp))
			return true
		}
		n, err := svc.ParseNumber(string(lit))
		if err != nil {
			return false
		}
		*np = n
		return true
	}
	return false
}

// plainDecimal parses a decimal literal without exponent and with at most
// 18 characters besides the point ("3500", "-0.05"): -?digits(.digits)?. It returns the
// mantissa and exponent decimal.NewFromString gives such a literal (all
// digits as an int64, minus the number of fraction digits), which always
// succeeds. Anything else reports false.
func plainDecimal(lit []byte) (mant int64, exp int32, ok bool) {
	i, neg := 0, false
	if len(lit) > 0 && lit[0] == '-' {
		i, neg = 1, true
	}
	digits, frac, point := 0, 0, false
	for ; i < len(lit); i++ {
		c := lit[i]
		switch {
		case jsonlex.IsDigit(c):
			mant = mant*10 + int64(c-'0')
			digits++
			if point {
				frac++
			}
		case c == '.' && !point && digits > 0:
			point = true
		default:
			return 0, 0, false
		}
	}
	length := digits // decimal.NewFromString counts the sign too
	if neg {
		length++
	}
	if digits == 0 || length > 18 || (point && frac == 0) || frac > decimal.MaxDecodeExponent {
		return 0, 0, false
	}
	if neg {
		mant = -mant
	}
	return mant, int32(-frac), true
}

// integer checks an integer literal against the Go type of s (as the
// walker's integerFits does) and stores it in v (when valid).
func (p *fastScanner) integer(lit []byte, s *shape, v reflect.Value) bool {
	str := string(lit)
	if !integerFits(str, s) {
		return false
	}
	if !v.IsValid() {
		return true
	}
	switch v.Kind() {
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		n, err := strconv.ParseUint(str, 10, 64)
		if err != nil || v.OverflowUint(n) {
			return false
		}
		v.SetUint(n)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n, err := strconv.ParseInt(str, 10, 64)
		if err != nil || v.OverflowInt(n) {
			return false
		}
		v.SetInt(n)
	default:
		return false
	}
	return true
}

// fastDecodableType reports whether fastDecode may fill values of Go type
// t (pointers stripped) with shape s: encoding/json must decode them by
// their kind alone, with no method of their own (svc.Number's and
// json.RawMessage's decoding is reproduced exactly), and struct members
// must be direct fields without the ",string" option.
func fastDecodableType(t reflect.Type, s *shape) bool {
	switch s.kind {
	case kindNumber, kindAny:
		return true
	}
	pt := reflect.PointerTo(t)
	if pt.Implements(jsonUnmarshalerType) || pt.Implements(textUnmarshalerType) {
		return false
	}
	switch s.kind {
	case kindArray:
		return t.Kind() == reflect.Slice && t.Elem().Kind() != reflect.Uint8 && s.elem.fastDecodable
	case kindObject:
		for _, f := range s.fields {
			if len(f.index) != 1 || f.jsonString || !f.shape.fastDecodable {
				return false
			}
		}
		return true
	}
	return true
}

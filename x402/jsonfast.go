package x402

import (
	"encoding/json"
	"strings"
)

// This file holds a fast decoder for the JSON of payment payloads, the hot
// path of local verification. It handles the canonical subset that clients
// produce: known keys spelled exactly, each at most once, strings without
// escapes or non-ASCII bytes, integers without fraction or exponent. On
// anything else it reports !ok and the caller falls back to encoding/json,
// so results are always those encoding/json would give (a fuzz test checks
// this equivalence).

// fastJSON is a cursor over a JSON document. s is the document as one
// string: decoded strings are substrings of it, one allocation in all.
type fastJSON struct {
	b []byte
	s string
	i int
}

func newFastJSON(b []byte) *fastJSON { return &fastJSON{b: b, s: string(b)} }

// maxFastDepth bounds the nesting the fast path skips over.
const maxFastDepth = 64

func (p *fastJSON) ws() {
	for p.i < len(p.b) {
		switch p.b[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

func (p *fastJSON) peek() byte {
	if p.i < len(p.b) {
		return p.b[p.i]
	}
	return 0
}

// str reads a string made of printable ASCII without escapes.
func (p *fastJSON) str() (string, bool) {
	if p.peek() != '"' {
		return "", false
	}
	start := p.i + 1
	for j := start; j < len(p.b); j++ {
		c := p.b[j]
		switch {
		case c == '"':
			p.i = j + 1
			return p.s[start:j], true
		case c == '\\' || c < 0x20 || c >= 0x80:
			return "", false
		}
	}
	return "", false
}

// integer reads an integer (optional '-', no leading zeros, no fraction or
// exponent) that fits an int32, which covers the protocol's ints.
func (p *fastJSON) integer() (int, bool) {
	j := p.i
	neg := false
	if j < len(p.b) && p.b[j] == '-' {
		neg = true
		j++
	}
	start := j
	v := 0
	for j < len(p.b) && p.b[j] >= '0' && p.b[j] <= '9' {
		v = v*10 + int(p.b[j]-'0')
		j++
		if j-start > 9 {
			return 0, false
		}
	}
	if j == start || (p.b[start] == '0' && j-start > 1) {
		return 0, false
	}
	if j < len(p.b) {
		switch p.b[j] {
		case '.', 'e', 'E':
			return 0, false
		}
	}
	p.i = j
	if neg {
		v = -v
	}
	return v, true
}

// skip validates and steps over one JSON value.
func (p *fastJSON) skip(depth int) bool {
	if depth > maxFastDepth {
		return false
	}
	p.ws()
	switch c := p.peek(); {
	case c == '{':
		p.i++
		p.ws()
		if p.peek() == '}' {
			p.i++
			return true
		}
		for {
			p.ws()
			if !p.skipString() {
				return false
			}
			p.ws()
			if p.peek() != ':' {
				return false
			}
			p.i++
			if !p.skip(depth + 1) {
				return false
			}
			p.ws()
			switch p.peek() {
			case ',':
				p.i++
			case '}':
				p.i++
				return true
			default:
				return false
			}
		}
	case c == '[':
		p.i++
		p.ws()
		if p.peek() == ']' {
			p.i++
			return true
		}
		for {
			if !p.skip(depth + 1) {
				return false
			}
			p.ws()
			switch p.peek() {
			case ',':
				p.i++
			case ']':
				p.i++
				return true
			default:
				return false
			}
		}
	case c == '"':
		return p.skipString()
	case c == '-' || (c >= '0' && c <= '9'):
		return p.skipNumber()
	case c == 't':
		return p.literal("true")
	case c == 'f':
		return p.literal("false")
	case c == 'n':
		return p.literal("null")
	}
	return false
}

func (p *fastJSON) literal(s string) bool {
	if len(p.b)-p.i >= len(s) && string(p.b[p.i:p.i+len(s)]) == s {
		p.i += len(s)
		return true
	}
	return false
}

// skipString steps over a string, validating its escapes.
func (p *fastJSON) skipString() bool {
	if p.peek() != '"' {
		return false
	}
	for j := p.i + 1; j < len(p.b); j++ {
		c := p.b[j]
		switch {
		case c == '"':
			p.i = j + 1
			return true
		case c < 0x20:
			return false
		case c == '\\':
			j++
			if j >= len(p.b) {
				return false
			}
			switch p.b[j] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if j+4 >= len(p.b) {
					return false
				}
				for k := 1; k <= 4; k++ {
					if _, ok := hexNibble(p.b[j+k]); !ok {
						return false
					}
				}
				j += 4
			default:
				return false
			}
		}
	}
	return false
}

// skipNumber steps over a number: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func (p *fastJSON) skipNumber() bool {
	j := p.i
	digits := func() int {
		n := 0
		for j < len(p.b) && p.b[j] >= '0' && p.b[j] <= '9' {
			j++
			n++
		}
		return n
	}
	if j < len(p.b) && p.b[j] == '-' {
		j++
	}
	if j < len(p.b) && p.b[j] == '0' {
		j++
	} else if digits() == 0 {
		return false
	}
	if j < len(p.b) && p.b[j] == '.' {
		j++
		if digits() == 0 {
			return false
		}
	}
	if j < len(p.b) && (p.b[j] == 'e' || p.b[j] == 'E') {
		j++
		if j < len(p.b) && (p.b[j] == '+' || p.b[j] == '-') {
			j++
		}
		if digits() == 0 {
			return false
		}
	}
	p.i = j
	return true
}

// object walks the members of an object; field is called with the cursor
// on each value and must consume it.
func (p *fastJSON) object(field func(key string) bool) bool {
	p.ws()
	if p.peek() != '{' {
		return false
	}
	p.i++
	p.ws()
	if p.peek() == '}' {
		p.i++
		return true
	}
	for {
		p.ws()
		key, ok := p.str()
		if !ok {
			return false
		}
		p.ws()
		if p.peek() != ':' {
			return false
		}
		p.i++
		p.ws()
		if !field(key) {
			return false
		}
		p.ws()
		switch p.peek() {
		case ',':
			p.i++
		case '}':
			p.i++
			return true
		default:
			return false
		}
	}
}

// end reports whether only whitespace is left.
func (p *fastJSON) end() bool {
	p.ws()
	return p.i == len(p.b)
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

// members decodes an object whose known keys hold strings into dst (by
// index); unknown keys are skipped.
func (p *fastJSON) stringMembers(known []string, dst []*string) bool {
	var seen uint32
	return p.object(func(key string) bool {
		i := keyIndex(key, known)
		switch {
		case i == -1:
			return p.skip(1)
		case i < 0 || !seenOnce(&seen, i):
			return false
		}
		s, ok := p.str()
		*dst[i] = s
		return ok
	})
}

// rawValue steps over a value and returns its bytes (aliasing the input).
func (p *fastJSON) rawValue() ([]byte, bool) {
	start := p.i
	if !p.skip(1) {
		return nil, false
	}
	return p.b[start:p.i], true
}

// jsonMap decodes an object value into a map: strings directly, anything
// else through encoding/json on the value's bytes. null gives up.
func (p *fastJSON) jsonMap() (map[string]any, bool) {
	if p.peek() == 'n' {
		return nil, false
	}
	start := p.i
	m := map[string]any{}
	ok := p.object(func(key string) bool {
		s, ok := p.str()
		m[key] = s
		return ok
	})
	if ok {
		return m, true
	}
	p.i = start
	raw, ok := p.rawValue()
	if !ok || raw[0] != '{' {
		return nil, false
	}
	m = nil
	if json.Unmarshal(raw, &m) != nil {
		return nil, false
	}
	return m, true
}

var (
	fastPayloadKeys      = []string{"x402Version", "resource", "accepted", "payload", "extensions", "scheme", "network"}
	fastRequirementsKeys = []string{"scheme", "network", "amount", "asset", "payTo", "maxTimeoutSeconds", "extra"}
	fastResourceKeys     = []string{"url", "description", "mimeType"}
	fastExactKeys        = []string{"signature", "authorization"}
	fastAuthKeys         = []string{"from", "to", "value", "validAfter", "validBefore", "nonce"}
)

// fastWirePaymentPayload decodes raw as encoding/json would decode it into
// a wirePaymentPayload, or reports !ok. Payload aliases raw.
func fastWirePaymentPayload(raw []byte) (w wirePaymentPayload, ok bool) {
	p := newFastJSON(raw)
	var seen uint32
	ok = p.object(func(key string) bool {
		i := keyIndex(key, fastPayloadKeys)
		switch {
		case i == -1:
			return p.skip(1)
		case i < 0 || !seenOnce(&seen, i):
			return false
		}
		switch i {
		case 0:
			v, ok := p.integer()
			w.X402Version = &v
			return ok
		case 1:
			var r ResourceInfo
			if !p.stringMembers(fastResourceKeys, []*string{&r.URL, &r.Description, &r.MimeType}) {
				return false
			}
			w.Resource = &r
			return true
		case 2:
			var a PaymentRequirements
			if !p.requirements(&a) {
				return false
			}
			w.Accepted = &a
			return true
		case 3:
			if c := p.peek(); c == 'n' {
				return false
			}
			v, ok := p.rawValue()
			w.Payload = v
			return ok
		case 4:
			m, ok := p.jsonMap()
			w.Extensions = m
			return ok
		case 5:
			s, ok := p.str()
			w.Scheme = s
			return ok
		default:
			s, ok := p.str()
			w.Network = s
			return ok
		}
	})
	if !ok || !p.end() {
		return wirePaymentPayload{}, false
	}
	return w, true
}

// requirements decodes a PaymentRequirements object.
func (p *fastJSON) requirements(a *PaymentRequirements) bool {
	var seen uint32
	strs := []*string{&a.Scheme, &a.Network, &a.Amount, &a.Asset, &a.PayTo}
	return p.object(func(key string) bool {
		i := keyIndex(key, fastRequirementsKeys)
		switch {
		case i == -1:
			return p.skip(1)
		case i < 0 || !seenOnce(&seen, i):
			return false
		}
		switch i {
		case 5:
			v, ok := p.integer()
			a.MaxTimeoutSeconds = v
			return ok
		case 6:
			m, ok := p.jsonMap()
			a.Extra = m
			return ok
		default:
			s, ok := p.str()
			*strs[i] = s
			return ok
		}
	})
}

// fastExactEVMPayload decodes raw as parseExactEVMPayload's encoding/json
// call would, or reports !ok; hasAuth says whether authorization was present.
func fastExactEVMPayload(raw []byte) (e ExactEVMPayload, hasAuth, ok bool) {
	p := newFastJSON(raw)
	var seen uint32
	a := &e.Authorization
	ok = p.object(func(key string) bool {
		i := keyIndex(key, fastExactKeys)
		switch {
		case i == -1:
			return p.skip(1)
		case i < 0 || !seenOnce(&seen, i):
			return false
		}
		if i == 0 {
			s, ok := p.str()
			e.Signature = s
			return ok
		}
		hasAuth = true
		return p.stringMembers(fastAuthKeys, []*string{&a.From, &a.To, &a.Value, &a.ValidAfter, &a.ValidBefore, &a.Nonce})
	})
	if !ok || !p.end() {
		return ExactEVMPayload{}, false, false
	}
	return e, hasAuth, true
}

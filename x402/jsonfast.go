package x402

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

// fastJSON is a cursor over a JSON document. s is the document as one
// string: decoded strings are substrings of it, one allocation in all.
type fastJSON struct {
	jsonlex.Lexer
	s string
}

func newFastJSON(b []byte) *fastJSON { return &fastJSON{Lexer: jsonlex.Lexer{Src: b}, s: string(b)} }

// maxFastDepth bounds the nesting the fast path skips over.
const maxFastDepth = 64

// str reads a string made of printable ASCII without escapes.
func (p *fastJSON) str() (string, bool) {
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

// integer reads an integer (optional '-', no leading zeros, no fraction or
// exponent) that fits an int32, which covers the protocol's ints.
func (p *fastJSON) integer() (int, bool) {
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

// object walks the members of an object; field is called with the cursor
// on each value and must consume it.
func (p *fastJSON) object(field func(key string) bool) bool {
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
		key, ok := p.str()
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

// end reports whether only whitespace is left.
func (p *fastJSON) end() bool {
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

// knownMembers walks an object whose members of interest are known: field
// is called with the index in known of each such key (cursor on its
// value, which it must consume); other keys are skipped, and a known key
// given twice, or matching one only case-insensitively (encoding/json
// would take it), gives up.
func (p *fastJSON) knownMembers(known []string, field func(i int) bool) bool {
	var seen uint32
	return p.object(func(key string) bool {
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

// stringMembers decodes an object whose known keys hold strings into dst
// (by index); unknown keys are skipped.
func (p *fastJSON) stringMembers(known []string, dst []*string) bool {
	return p.knownMembers(known, func(i int) bool {
		s, ok := p.str()
		*dst[i] = s
		return ok
	})
}

// rawValue steps over a value and returns its bytes (aliasing the input).
func (p *fastJSON) rawValue() ([]byte, bool) {
	start := p.I
	if !p.Skip(1, maxFastDepth) {
		return nil, false
	}
	return p.Src[start:p.I], true
}

// jsonMap decodes an object value into a map: strings directly, anything
// else through encoding/json on the value's bytes. null gives up.
func (p *fastJSON) jsonMap() (map[string]any, bool) {
	if p.Peek() == 'n' {
		return nil, false
	}
	start := p.I
	m := map[string]any{}
	ok := p.object(func(key string) bool {
		s, ok := p.str()
		m[key] = s
		return ok
	})
	if ok {
		return m, true
	}
	p.I = start
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
	ok = p.knownMembers(fastPayloadKeys, func(i int) bool {
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
			if c := p.Peek(); c == 'n' {
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
	strs := []*string{&a.Scheme, &a.Network, &a.Amount, &a.Asset, &a.PayTo}
	return p.knownMembers(fastRequirementsKeys, func(i int) bool {
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
	a := &e.Authorization
	ok = p.knownMembers(fastExactKeys, func(i int) bool {
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

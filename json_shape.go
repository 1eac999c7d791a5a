package svc

import (
	"bytes"
	"context"
	"encoding/json"
	"unicode/utf16"
	"unicode/utf8"
)

// Limits of JSONShape.
const (
	// JSONShapeDefaultMaxDepth and JSONShapeDefaultMaxPaths apply when the
	// request leaves maxDepth or maxPaths out.
	JSONShapeDefaultMaxDepth = 8
	JSONShapeDefaultMaxPaths = 500
	// jsonShapeMaxNesting is the deepest nesting accepted, as encoding/json
	// accepts it: containers at depth 10000 (root = 0) are invalid.
	jsonShapeMaxNesting = 10000
	// jsonShapeMaxPathText bounds the total length of listed path strings.
	jsonShapeMaxPathText = 1 << 20
	// jsonShapeCtxEvery is how many values are walked between context checks.
	jsonShapeCtxEvery = 1 << 16
)

// The JSON value types reported by JSONShape, in their sorted order.
const (
	JSONTypeArray   = "array"
	JSONTypeBoolean = "boolean"
	JSONTypeInteger = "integer"
	JSONTypeNull    = "null"
	JSONTypeNumber  = "number"
	JSONTypeObject  = "object"
	JSONTypeString  = "string"
)

// Type bits, in the sorted order of the type names.
const (
	jsonShapeTArray uint8 = 1 << iota
	jsonShapeTBoolean
	jsonShapeTInteger
	jsonShapeTNull
	jsonShapeTNumber
	jsonShapeTObject
	jsonShapeTString
)

// jsonShapeTypeNames maps a type bit's position to its name.
func jsonShapeTypeNames(bits uint8) []string {
	names := [...]string{JSONTypeArray, JSONTypeBoolean, JSONTypeInteger, JSONTypeNull,
		JSONTypeNumber, JSONTypeObject, JSONTypeString}
	out := make([]string, 0, 2)
	for i, name := range names {
		if bits&(1<<i) != 0 {
			out = append(out, name)
		}
	}
	return out
}

// JSONShapeRequest is the input of JSONShape.
type JSONShapeRequest struct {
	// Value is the JSON value to inspect; any JSON value, null included.
	// Required: an empty (absent) Value is invalid.
	Value json.RawMessage `json:"value"`
	// MaxDepth is the deepest depth listed (root = 0), 1 to 12; nil means 8.
	MaxDepth *int `json:"maxDepth,omitempty" validate:"omitempty,min=1,max=12"`
	// MaxPaths is the most distinct paths listed, 10 to 1000; nil means 500.
	MaxPaths *int `json:"maxPaths,omitempty" validate:"omitempty,min=10,max=1000"`
}

// JSONShapeResponse is the output of JSONShape.
type JSONShapeResponse struct {
	// RootType is the type of the value itself.
	RootType string `json:"rootType"`
	// PathCount is the number of paths listed (len(Paths)).
	PathCount int `json:"pathCount"`
	// Paths lists every distinct path once, in first-seen depth-first order.
	Paths []JSONShapePath `json:"paths"`
	// MaxDepth and MaxPaths echo the limits applied.
	MaxDepth int `json:"maxDepth"`
	MaxPaths int `json:"maxPaths"`
	// MaxDepthSeen is the depth of the deepest value in the whole document
	// (root = 0), beyond MaxDepth included.
	MaxDepthSeen int `json:"maxDepthSeen"`
	// DepthLimited is true when a non-empty object or array at MaxDepth was
	// not descended.
	DepthLimited bool `json:"depthLimited"`
	// PathsTruncated is true when a distinct path was left out because
	// MaxPaths paths (or 1 MiB of path text) were already listed.
	PathsTruncated bool `json:"pathsTruncated"`
}

// JSONShapePath is one distinct path of a JSON value.
type JSONShapePath struct {
	// Path is the path in the notation documented on JSONShape.
	Path string `json:"path"`
	// Types are the distinct types seen at the path, sorted.
	Types []string `json:"types"`
	// Occurrences counts the values seen at the path.
	Occurrences int `json:"occurrences"`
}

// jsonShapeTags are the compiled validate tags of JSONShapeRequest.
var jsonShapeTags = compileTags[JSONShapeRequest]()

// JSONShape describes the structure of a JSON value: every distinct path,
// the types seen there and how often.
//
// Paths: the root is $; an object member whose name is an identifier
// ([A-Za-z_$][A-Za-z0-9_$]*) appends .name, any other member appends
// ["name"] with the name in JSON string quoting (as encoding/json writes
// strings, without HTML escaping); array elements append [], so all
// elements of an array share one path ($.items[].id, $[][]). Types are
// object, array, string, integer (a number literal without fraction or
// exponent: 1 and -0 are integers, 1.0 and 1e2 are numbers), number,
// boolean and null; each path lists its distinct types sorted by name.
// Every distinct path appears once, in first-seen depth-first order, with
// the number of values seen at it. A member name repeated in one object
// (which encoding/json accepts) counts once per occurrence. Member names are
// compared after decoding escapes, with invalid UTF-8 and lone surrogates
// replaced by U+FFFD as encoding/json does.
//
// Limits: values at depth ≤ maxDepth (root = 0; default 8, 1 to 12) are
// listed; the members and elements of a non-empty container at maxDepth are
// not, and depthLimited is set. At most maxPaths distinct paths (default
// 500, 10 to 1000) are listed, and at most 1 MiB of path text; a path left
// out sets pathsTruncated (with its whole subtree), while the listed paths
// still count all their occurrences.
//
// The value is validated while it is walked, by a streaming scanner that
// accepts exactly what json.Valid accepts (RFC 8259; invalid UTF-8 inside
// strings is tolerated, nesting deeper than 10000 levels is not). Invalid
// JSON is invalid input with field "value", rule "json" and the byte
// offset; an empty value is rule "required"; maxDepth and maxPaths out of
// range are rules "min" and "max". ctx is checked on entry and every
// 65 536 values; a cancelled or expired context ends the walk with a
// KindTimeout error.
func JSONShape(ctx context.Context, req JSONShapeRequest) (JSONShapeResponse, error) {
	if err := ctx.Err(); err != nil {
		return JSONShapeResponse{}, errorf(KindTimeout, err, "json_shape: %v", err)
	}
	var fe fieldErrors
	if len(bytes.TrimLeft(req.Value, " \t\r\n")) == 0 {
		fe.add("value", "required", "is required")
	}
	jsonShapeTags.check(&fe, "", &req)
	if err := fe.err(); err != nil {
		return JSONShapeResponse{}, err
	}
	w := jsonShapeWalker{
		ctx:      ctx,
		b:        req.Value,
		maxDepth: JSONShapeDefaultMaxDepth,
		maxPaths: JSONShapeDefaultMaxPaths,
	}
	if req.MaxDepth != nil {
		w.maxDepth = *req.MaxDepth
	}
	if req.MaxPaths != nil {
		w.maxPaths = *req.MaxPaths
	}
	root := w.newNode("$")
	if err := w.value(0, root); err != nil {
		return JSONShapeResponse{}, err
	}
	w.skipSpace()
	if w.pos < len(w.b) {
		return JSONShapeResponse{}, w.fail("unexpected %s after the top-level value", w.describe())
	}
	resp := JSONShapeResponse{
		RootType:       jsonShapeTypeNames(root.types)[0],
		PathCount:      len(w.nodes),
		Paths:          make([]JSONShapePath, len(w.nodes)),
		MaxDepth:       w.maxDepth,
		MaxPaths:       w.maxPaths,
		MaxDepthSeen:   w.maxSeen,
		DepthLimited:   w.depthLimited,
		PathsTruncated: w.truncated,
	}
	for i, n := range w.nodes {
		resp.Paths[i] = JSONShapePath{Path: n.path, Types: jsonShapeTypeNames(n.types), Occurrences: n.occ}
	}
	return resp, nil
}

// jsonShapeNode is one listed path.
type jsonShapeNode struct {
	path     string
	types    uint8
	occ      int
	children map[string]*jsonShapeNode // by decoded member name
	elem     *jsonShapeNode
}

// see records one value of type t at the node; a nil node is not listed.
func (n *jsonShapeNode) see(t uint8) {
	if n != nil {
		n.types |= t
		n.occ++
	}
}

// jsonShapeWalker is a validating recursive-descent scanner over the bytes
// of one JSON value that records the listed paths on the way.
type jsonShapeWalker struct {
	ctx          context.Context
	b            []byte
	pos          int
	maxDepth     int
	maxPaths     int
	nodes        []*jsonShapeNode
	pathText     int
	depthLimited bool
	truncated    bool
	maxSeen      int
	values       int
	name         []byte // scratch for decoded member names
}

// fail returns the invalid-JSON error at the current offset.
func (w *jsonShapeWalker) fail(format string, args ...any) error {
	return InvalidField("value", "json", "invalid JSON at offset %d: "+format, append([]any{w.pos}, args...)...)
}

// describe names the byte at the current offset for an error message.
func (w *jsonShapeWalker) describe() string {
	if w.pos >= len(w.b) {
		return "end of input"
	}
	c := w.b[w.pos]
	if c >= 0x20 && c < 0x7f {
		return "character '" + string(rune(c)) + "'"
	}
	const hex = "0123456789abcdef"
	return "byte 0x" + string(hex[c>>4]) + string(hex[c&15])
}

func (w *jsonShapeWalker) skipSpace() {
	b, i := w.b, w.pos
	for i < len(b) && (b[i] == ' ' || b[i] == '\n' || b[i] == '\r' || b[i] == '\t') {
		i++
	}
	w.pos = i
}

// newNode lists a new path, or returns nil (and sets truncated) when a
// limit is reached.
func (w *jsonShapeWalker) newNode(path string) *jsonShapeNode {
	if len(w.nodes) >= w.maxPaths || w.pathText+len(path) > jsonShapeMaxPathText {
		w.truncated = true
		return nil
	}
	n := &jsonShapeNode{path: path}
	w.nodes = append(w.nodes, n)
	w.pathText += len(path)
	return n
}

// value walks the value at the current offset, found at depth under node n
// (nil when the value is not listed).
func (w *jsonShapeWalker) value(depth int, n *jsonShapeNode) error {
	w.skipSpace()
	if w.pos >= len(w.b) {
		return w.fail("unexpected end of input, expected a value")
	}
	if depth > w.maxSeen {
		w.maxSeen = depth
	}
	if w.values++; w.values%jsonShapeCtxEvery == 0 {
		if err := w.ctx.Err(); err != nil {
			return errorf(KindTimeout, err, "json_shape: stopped at offset %d: %v", w.pos, err)
		}
	}
	switch c := w.b[w.pos]; c {
	case '{':
		if depth >= jsonShapeMaxNesting {
			return w.fail("nesting deeper than %d levels", jsonShapeMaxNesting)
		}
		n.see(jsonShapeTObject)
		return w.object(depth, n)
	case '[':
		if depth >= jsonShapeMaxNesting {
			return w.fail("nesting deeper than %d levels", jsonShapeMaxNesting)
		}
		n.see(jsonShapeTArray)
		return w.array(depth, n)
	case '"':
		n.see(jsonShapeTString)
		_, err := w.str()
		return err
	case 't':
		n.see(jsonShapeTBoolean)
		return w.literal("true")
	case 'f':
		n.see(jsonShapeTBoolean)
		return w.literal("false")
	case 'n':
		n.see(jsonShapeTNull)
		return w.literal("null")
	default:
		if c == '-' || (c >= '0' && c <= '9') {
			integer, err := w.number()
			if integer {
				n.see(jsonShapeTInteger)
			} else {
				n.see(jsonShapeTNumber)
			}
			return err
		}
		return w.fail("unexpected %s, expected a value", w.describe())
	}
}

// object walks an object; the offset is at '{'.
func (w *jsonShapeWalker) object(depth int, n *jsonShapeNode) error {
	w.pos++
	w.skipSpace()
	if w.pos < len(w.b) && w.b[w.pos] == '}' {
		w.pos++
		return nil
	}
	if n != nil && depth >= w.maxDepth {
		w.depthLimited = true
	}
	for {
		if w.pos >= len(w.b) || w.b[w.pos] != '"' {
			return w.fail("unexpected %s, expected a member name (a string)", w.describe())
		}
		start := w.pos
		esc, err := w.str()
		if err != nil {
			return err
		}
		var child *jsonShapeNode
		if n != nil && depth < w.maxDepth {
			child = w.member(n, w.b[start+1:w.pos-1], esc)
		}
		w.skipSpace()
		if w.pos >= len(w.b) || w.b[w.pos] != ':' {
			return w.fail("unexpected %s, expected ':' after a member name", w.describe())
		}
		w.pos++
		if err := w.value(depth+1, child); err != nil {
			return err
		}
		w.skipSpace()
		if w.pos < len(w.b) {
			switch w.b[w.pos] {
			case ',':
				w.pos++
				w.skipSpace()
				continue
			case '}':
				w.pos++
				return nil
			}
		}
		return w.fail("unexpected %s, expected ',' or '}' after an object member", w.describe())
	}
}

// array walks an array; the offset is at '['.
func (w *jsonShapeWalker) array(depth int, n *jsonShapeNode) error {
	w.pos++
	w.skipSpace()
	if w.pos < len(w.b) && w.b[w.pos] == ']' {
		w.pos++
		return nil
	}
	var child *jsonShapeNode
	if n != nil {
		if depth >= w.maxDepth {
			w.depthLimited = true
		} else {
			if n.elem == nil {
				n.elem = w.newNode(n.path + "[]")
			}
			child = n.elem
		}
	}
	for {
		if err := w.value(depth+1, child); err != nil {
			return err
		}
		w.skipSpace()
		if w.pos < len(w.b) {
			switch w.b[w.pos] {
			case ',':
				w.pos++
				continue
			case ']':
				w.pos++
				return nil
			}
		}
		return w.fail("unexpected %s, expected ',' or ']' after an array element", w.describe())
	}
}

// member returns the child of n for the member whose raw (still quoted
// content) name is raw, listing it when new and allowed.
func (w *jsonShapeWalker) member(n *jsonShapeNode, raw []byte, esc bool) *jsonShapeNode {
	name := raw
	if !esc {
		// The common case: the raw name is the name.
		if c, ok := n.children[string(raw)]; ok {
			return c
		}
	}
	if esc || !utf8.Valid(raw) {
		w.name = jsonShapeUnquote(w.name[:0], raw)
		name = w.name
		if c, ok := n.children[string(name)]; ok {
			return c
		}
	}
	var path []byte
	if jsonShapeIdentifier(name) {
		path = append(append(append(make([]byte, 0, len(n.path)+1+len(name)), n.path...), '.'), name...)
	} else {
		path = append(append(make([]byte, 0, len(n.path)+len(name)+4), n.path...), '[')
		path = append(appendJSONString(path, name), ']')
	}
	c := w.newNode(string(path))
	if c != nil {
		if n.children == nil {
			n.children = make(map[string]*jsonShapeNode)
		}
		n.children[string(name)] = c
	}
	return c
}

// jsonShapeIdentifier reports whether name matches [A-Za-z_$][A-Za-z0-9_$]*.
func jsonShapeIdentifier(name []byte) bool {
	if len(name) == 0 {
		return false
	}
	for i, c := range name {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c == '_', c == '$':
		case c >= '0' && c <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}

// jsonShapeUnquote appends the decoded content of a validated JSON string
// (without its quotes) to dst, as encoding/json decodes it: escapes
// resolved, surrogate pairs joined, lone surrogates and invalid UTF-8
// replaced by U+FFFD.
func jsonShapeUnquote(dst, s []byte) []byte {
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '\\':
			e := s[i+1]
			i += 2
			switch e {
			case 'b':
				dst = append(dst, '\b')
			case 'f':
				dst = append(dst, '\f')
			case 'n':
				dst = append(dst, '\n')
			case 'r':
				dst = append(dst, '\r')
			case 't':
				dst = append(dst, '\t')
			case 'u':
				r := jsonShapeHex4(s[i:])
				i += 4
				if utf16.IsSurrogate(r) {
					if i+6 <= len(s) && s[i] == '\\' && s[i+1] == 'u' {
						if d := utf16.DecodeRune(r, jsonShapeHex4(s[i+2:])); d != utf8.RuneError {
							dst = utf8.AppendRune(dst, d)
							i += 6
							break
						}
					}
					r = utf8.RuneError
				}
				dst = utf8.AppendRune(dst, r)
			default: // '"', '\\', '/'
				dst = append(dst, e)
			}
		case c < utf8.RuneSelf:
			dst = append(dst, c)
			i++
		default:
			r, size := utf8.DecodeRune(s[i:])
			dst = utf8.AppendRune(dst, r)
			i += size
		}
	}
	return dst
}

// jsonShapeHex4 decodes 4 validated hex digits.
func jsonShapeHex4(s []byte) rune {
	var r rune
	for _, c := range s[:4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c = c - 'a' + 10
		default:
			c = c - 'A' + 10
		}
		r = r<<4 | rune(c)
	}
	return r
}

// str scans a string; the offset is at its opening quote and ends after
// the closing one. esc reports a backslash escape inside.
func (w *jsonShapeWalker) str() (esc bool, err error) {
	b := w.b
	i := w.pos + 1
	for {
		for i < len(b) {
			c := b[i]
			if c == '"' || c == '\\' || c < 0x20 {
				break
			}
			i++
		}
		if i >= len(b) {
			w.pos = i
			return esc, w.fail("unexpected end of input inside a string")
		}
		switch b[i] {
		case '"':
			w.pos = i + 1
			return esc, nil
		case '\\':
			esc = true
			if i+1 >= len(b) {
				w.pos = i + 1
				return esc, w.fail("unexpected end of input inside a string")
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				for k := i + 2; k < i+6; k++ {
					if k >= len(b) {
						w.pos = k
						return esc, w.fail("unexpected end of input inside a string")
					}
					if c := b[k]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
						w.pos = k
						return esc, w.fail("invalid %s in a \\u escape", w.describe())
					}
				}
				i += 6
			default:
				w.pos = i + 1
				return esc, w.fail("invalid escape %s in a string", w.describe())
			}
		default:
			w.pos = i
			return esc, w.fail("control %s in a string (escape it)", w.describe())
		}
	}
}

// number scans a number literal and reports whether it is an integer (no
// fraction, no exponent).
func (w *jsonShapeWalker) number() (integer bool, err error) {
	b := w.b
	i := w.pos
	digits := func() int {
		s := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		return i - s
	}
	if b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && b[i] >= '1' && b[i] <= '9':
		digits()
	default:
		w.pos = i
		return false, w.fail("unexpected %s in a number, expected a digit", w.describe())
	}
	integer = true
	if i < len(b) && b[i] == '.' {
		i++
		if digits() == 0 {
			w.pos = i
			return false, w.fail("unexpected %s after a decimal point, expected a digit", w.describe())
		}
		integer = false
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if digits() == 0 {
			w.pos = i
			return false, w.fail("unexpected %s in an exponent, expected a digit", w.describe())
		}
		integer = false
	}
	w.pos = i
	return integer, nil
}

// literal scans true, false or null.
func (w *jsonShapeWalker) literal(lit string) error {
	b := w.b[w.pos:]
	for k := 0; k < len(lit); k++ {
		if k >= len(b) || b[k] != lit[k] {
			w.pos += k
			return w.fail("unexpected %s in literal %s", w.describe(), lit)
		}
	}
	w.pos += len(lit)
	return nil
}

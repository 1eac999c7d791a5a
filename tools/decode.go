package tools

import (
	"bytes"
	"encoding"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/go-json-experiment/json/jsontext"

	"github.com/seed1284c1d2/svc"
	"github.com/seed1284c1d2/svc/internal/clip"
)

// Rule names of the errors the adapter itself reports (the tools report
// their own: "required", "gt", "oneof", ...). A value of the wrong JSON type
// is reported with the expected type as the rule: "integer", "number",
// "string", "boolean", "object", "array".
const (
	// RuleJSON: the body is not well-formed JSON, or has data after the
	// object. The message gives the line, column and byte offset.
	RuleJSON = "json"
	// RuleUnknownField: a member the tool does not define (a typo must not
	// be paid for). The message lists the allowed members.
	RuleUnknownField = "unknown_field"
	// RuleDuplicateField: a member given twice in one object.
	RuleDuplicateField = "duplicate_field"
	// RuleRequired: a required member is missing.
	RuleRequired = "required"
	// RuleRepeated: a query parameter of the tool given more than once.
	RuleRepeated = "repeated"
	// RuleQuery: the query string cannot be parsed.
	RuleQuery = "query"
	// RuleMaxBytes: the body is larger than the limit (KindTooLarge).
	RuleMaxBytes = "max_bytes"
	// RuleContentEncoding: a compressed body, which is not accepted.
	RuleContentEncoding = "content_encoding"
	// RuleTooManyErrors summarises the errors past the first 20.
	RuleTooManyErrors = "too_many_errors"
)

// maxFieldErrors is the number of structural errors listed before the rest
// are summarised by one RuleTooManyErrors error.
const maxFieldErrors = 20

// fieldErr builds a FieldError whose message starts with the field name,
// as the root package's errors do.
func fieldErr(field, rule, format string, args ...any) svc.FieldError {
	msg := fmt.Sprintf(format, args...)
	if field != "" && !strings.HasPrefix(msg, field) {
		msg = field + ": " + msg
	}
	return svc.FieldError{Field: field, Rule: rule, Message: msg}
}

// invalid returns a KindInvalid *svc.Error holding fields.
func invalid(fields ...svc.FieldError) *svc.Error {
	return &svc.Error{Kind: svc.KindInvalid, Message: "invalid input", Fields: fields}
}

// tooLarge returns the KindTooLarge error of a body over limit bytes.
func tooLarge(limit int64, cause error) *svc.Error {
	return &svc.Error{
		Kind:    svc.KindTooLarge,
		Message: "request body too large",
		Fields:  []svc.FieldError{fieldErr("", RuleMaxBytes, "the request body is larger than the limit of %d bytes", limit)},
		Cause:   cause,
	}
}

// readBody reads the body of r, at most limit bytes. A body over the limit
// (by its Content-Length, by what arrives, or as reported by an
// http.MaxBytesReader the server installed) is KindTooLarge. A compressed
// body (Content-Encoding other than identity) is KindInvalid. A leading
// UTF-8 byte-order mark is dropped.
func readBody(r *http.Request, limit int64) ([]byte, error) {
	if err := checkEncoding(r); err != nil {
		return nil, err
	}
	if r.Body == nil || r.Body == http.NoBody {
		return nil, nil
	}
	if r.ContentLength > limit {
		return nil, tooLarge(limit, nil)
	}
	b, err := readAtMost(r.Body, limit+1, r.ContentLength)
	if err != nil {
		if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
			return nil, tooLarge(limit, err)
		}
		return nil, &svc.Error{Kind: svc.KindInvalid, Message: "the request body could not be read", Cause: fmt.Errorf("tools: reading the request body: %w", err),
			Fields: []svc.FieldError{fieldErr("", RuleJSON, "the request body could not be read completely")}}
	}
	if int64(len(b)) > limit {
		return nil, tooLarge(limit, nil)
	}
	return bytes.TrimPrefix(b, []byte("\uFEFF")), nil
}

// checkEncoding refuses a compressed body (Content-Encoding other than
// identity) with KindInvalid.
func checkEncoding(r *http.Request) error {
	if ce := strings.TrimSpace(headerFirst(r.Header, "Content-Encoding")); ce != "" && !strings.EqualFold(ce, "identity") {
		return invalid(fieldErr("", RuleContentEncoding, "compressed request bodies (Content-Encoding %q) are not accepted; send plain JSON", clip.Runes(ce, 24)))
	}
	return nil
}

// headerFirst is h.Get(key) for a canonical key, without canonicalising it
// again.
func headerFirst(h http.Header, key string) string {
	if v := h[key]; len(v) > 0 {
		return v[0]
	}
	return ""
}

// readAtMost reads r to its end or to n bytes, whichever comes first, as
// io.ReadAll(io.LimitReader(r, n)) does. size is the expected length (the
// request's Content-Length, -1 when unknown): a body of that size fills
// one buffer allocated once.
func readAtMost(r io.Reader, n, size int64) ([]byte, error) {
	if size < 0 || size >= n {
		return io.ReadAll(io.LimitReader(r, n))
	}
	// One byte more than announced, so that the end is seen in one pass.
	b := make([]byte, 0, size+1)
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		m, err := r.Read(b[len(b):min(int64(cap(b)), n)])
		b = b[:len(b)+m]
		switch {
		case err == io.EOF:
			return b, nil
		case err != nil:
			return b, err
		case int64(len(b)) == n: // io.LimitReader's next read: EOF
			return b, nil
		}
	}
}

// jsonContentType reports whether the Content-Type header announces JSON
// (application/json, any +json type) or is absent. It only shapes error
// messages: the body is parsed as JSON whatever it says.
func jsonContentType(r *http.Request) bool {
	ct := r.Header.Get("Content-Type")
	if ct == "" || ct == "application/json" {
		return true
	}
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil {
		return false
	}
	return mt == "application/json" || strings.HasSuffix(mt, "+json")
}

// position describes byte offset off of src as "line L, column C (byte
// offset N)"; columns count runes from 1.
func position(src []byte, off int64) string {
	if off < 0 {
		off = 0
	}
	if off > int64(len(src)) {
		off = int64(len(src))
	}
	before := src[:off]
	line := bytes.Count(before, []byte("\n")) + 1
	col := utf8.RuneCount(before[bytes.LastIndexByte(before, '\n')+1:]) + 1
	return fmt.Sprintf("line %d, column %d (byte offset %d)", line, col, off)
}

// walker checks a JSON document against a shape and decodes it into a
// request value in one pass over its tokens (jsontext does the lexing):
// well-formedness (with the position of the first syntax error), the JSON
// type of every value, unknown, duplicate and missing members. It records
// every problem it can reach and stops only at a syntax error. The value
// it fills is the request's only when no error but missing members was
// found.
type walker struct {
	src []byte
	buf bytes.Buffer // src, which dec reads in place
	dec jsontext.Decoder
	// opts: strings may hold invalid UTF-8 (replaced by U+FFFD, as
	// encoding/json does) and names may repeat inside free-form values
	// (json.RawMessage): the walker itself refuses the request's repeated
	// members, naming them. Nesting stops at jsontext's limit of 10000
	// levels, encoding/json's too.
	opts    []jsontext.Options
	errs    []svc.FieldError
	dropped int
	// undecodable is the first error of a value's own decoding method
	// (encoding.TextUnmarshaler).
	undecodable error
	// steps is the path to the value being read (in stepsBuf while short).
	steps    []step
	stepsBuf [8]step
}

// walkerPool keeps walkers, with their decoders' buffers, for the next
// documents; the zero value is ready to use.
type walkerPool struct{ p sync.Pool }

// get returns a walker reading src.
func (wp *walkerPool) get(src []byte) *walker {
	w, _ := wp.p.Get().(*walker)
	if w == nil {
		w = &walker{opts: []jsontext.Options{jsontext.AllowDuplicateNames(true), jsontext.AllowInvalidUTF8(true)}}
	}
	w.src, w.buf = src, *bytes.NewBuffer(src)
	w.dec.Reset(&w.buf, w.opts...)
	w.steps = w.stepsBuf[:0]
	return w
}

// put gives w back, keeping nothing of its document.
func (wp *walkerPool) put(w *walker) {
	w.src, w.buf, w.errs, w.dropped, w.undecodable = nil, bytes.Buffer{}, nil, 0, nil
	w.dec.Reset(&w.buf, w.opts...)
	wp.p.Put(w)
}

// syntaxError is a fatal error of the document itself.
type syntaxError struct{ fe svc.FieldError }

func (e *syntaxError) Error() string { return e.fe.Message }

// step is one step of the path to the value being read: a member of an
// object (index < 0) or an element of an array.
type step struct {
	name  string
	index int
}

// path returns the path of the value being read as errors name it
// ("bars[2].open"; "" for the document itself). It is built only when an
// error names it.
func (w *walker) path() string {
	var b strings.Builder
	for _, st := range w.steps {
		if st.index >= 0 {
			fmt.Fprintf(&b, "[%d]", st.index)
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('.')
		}
		b.WriteString(st.name)
	}
	return b.String()
}

// add records a structural error, keeping the first maxFieldErrors.
func (w *walker) add(fe svc.FieldError) {
	if len(w.errs) >= maxFieldErrors {
		w.dropped++
		return
	}
	w.errs = append(w.errs, fe)
}

// errors returns the recorded errors with the RuleTooManyErrors summary.
func (w *walker) errors() []svc.FieldError {
	if w.dropped == 0 {
		return w.errs
	}
	return append(w.errs, fieldErr("", RuleTooManyErrors, "%d more errors are not listed", w.dropped))
}

// fail turns an error of the JSON decoder into a syntaxError with its
// position. The message is worded as encoding/json words it (the wording
// clients have seen all along): the document is read by it once more, on
// this error path only.
func (w *walker) fail(err error) error {
	off, msg := w.dec.InputOffset(), strings.TrimPrefix(err.Error(), "jsontext: ")
	if se, ok := errors.AsType[*jsontext.SyntacticError](err); ok {
		off = se.ByteOffset
	}
	whole := json.NewDecoder(bytes.NewReader(w.src)).Decode(new(json.RawMessage))
	if se, ok := errors.AsType[*json.SyntaxError](whole); ok {
		off = max(se.Offset-1, 0) // Offset counts the offending byte
		msg = strings.TrimPrefix(se.Error(), "json: ")
	}
	if errors.Is(whole, io.ErrUnexpectedEOF) || strings.HasPrefix(msg, "unexpected end of JSON input") ||
		(whole == nil && errors.Is(err, io.ErrUnexpectedEOF)) {
		off, msg = int64(len(w.src)), "unexpected end of input"
	}
	return &syntaxError{fieldErr("", RuleJSON, "malformed JSON at %s: %s", position(w.src, off), msg)}
}

// describe names a JSON type for messages.
func describe(k jsontext.Kind) string {
	switch k {
	case '{':
		return "an object"
	case '[':
		return "an array"
	case '"':
		return "a string"
	case '0':
		return "a number"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "an unknown value"
}

// wrongType records that the value at path is not of the shape's kind.
func (w *walker) wrongType(s *shape, k jsontext.Kind) {
	path := w.path()
	w.add(fieldErr(path, s.kind.String(), "must be %s %s, got %s", s.kind.article(), s.kind, describe(k)))
}

// deref returns the value v points to through its pointers, allocating
// the nil ones; the invalid Value (nothing to fill) stays invalid.
func deref(v reflect.Value) reflect.Value {
	if !v.IsValid() {
		return v
	}
	for v.Kind() == reflect.Pointer {
		if v.IsNil() {
			v.Set(reflect.New(v.Type().Elem()))
		}
		v = v.Elem()
	}
	return v
}

// value checks the next value against s and stores it in v (when valid).
// Objects and arrays are streamed token by token; a scalar is read whole
// and judged by its kind, which spares unquoting a large string (a CSV
// document) only to check its type. optional says the value is an
// optional member's, for which null means "not given" whatever its type
// (v keeps its zero value).
func (w *walker) value(s *shape, v reflect.Value, optional bool) error {
	if optional && !s.nullable && w.dec.PeekKind() == 'n' {
		if _, err := w.dec.ReadToken(); err != nil {
			return w.fail(err)
		}
		return nil
	}
	if s.kind == kindObject || s.kind == kindArray {
		k := w.dec.PeekKind()
		switch {
		case k == 'n' && s.nullable:
			if _, err := w.dec.ReadToken(); err != nil {
				return w.fail(err)
			}
			if v.IsValid() {
				v.SetZero()
			}
			return nil
		case k == '{' && s.kind == kindObject, k == '[' && s.kind == kindArray:
			if _, err := w.dec.ReadToken(); err != nil {
				return w.fail(err)
			}
			if k == '{' {
				return w.object(s, deref(v))
			}
			return w.array(s, deref(v))
		case k == 0: // not a value: the read reports why
			_, err := w.dec.ReadToken()
			return w.fail(err)
		}
		w.wrongType(s, k)
		if err := w.dec.SkipValue(); err != nil {
			return w.fail(err)
		}
		return nil
	}
	raw, err := w.dec.ReadValue()
	if err != nil {
		return w.fail(err)
	}
	k := raw.Kind()
	switch {
	case s.kind == kindAny:
		if k == 'n' && v.Kind() == reflect.Pointer {
			v.SetZero()
		} else if v = deref(v); v.IsValid() {
			v.SetBytes(raw.Clone()) // json.RawMessage keeps the literal, null included
		}
	case k == 'n':
		if !s.nullable {
			w.wrongType(s, k)
		} else if v.IsValid() {
			v.SetZero()
		}
	case k == '"':
		switch s.kind {
		case kindString:
			w.setString(s, deref(v), raw)
		case kindNumber:
			str := unquote(raw)
			n, err := svc.ParseNumber(str)
			if err != nil {
				w.add(fieldErr(w.path(), "number", "must be a number or a string holding a decimal, got %q", clip.Runes(str, 24)))
			} else if v = deref(v); v.IsValid() {
				*v.Addr().Interface().(*svc.Number) = n
			}
		default:
			w.wrongType(s, k)
		}
	case k == 't' || k == 'f':
		if s.kind != kindBoolean {
			w.wrongType(s, k)
		} else if v = deref(v); v.IsValid() {
			v.SetBool(k == 't')
		}
	case k == '0':
		lit := string(raw)
		switch s.kind {
		case kindNumber:
			n, err := svc.ParseNumber(lit)
			if err != nil {
				w.add(fieldErr(w.path(), "number", "%v", err))
			} else if v = deref(v); v.IsValid() {
				*v.Addr().Interface().(*svc.Number) = n
			}
		case kindInteger:
			if !setInteger(lit, s, deref(v)) {
				w.add(fieldErr(w.path(), "integer", "must be an integer, got %s", clip.Runes(lit, 24)))
			}
		default:
			w.wrongType(s, k)
		}
	default: // an object or an array where a scalar belongs
		w.wrongType(s, k)
	}
	return nil
}

// unquote returns the text of a JSON string (invalid UTF-8 replaced by
// U+FFFD, as encoding/json does).
func unquote(raw jsontext.Value) string {
	if b, ok := plainString(raw); ok {
		return string(b)
	}
	b, _ := jsontext.AppendUnquote(nil, raw) // the error only reports invalid UTF-8
	return string(b)
}

// plainString returns the bytes between the quotes of a JSON string that
// holds no escape and only valid UTF-8: its text as it stands.
func plainString(raw jsontext.Value) ([]byte, bool) {
	b := raw[1 : len(raw)-1]
	if bytes.IndexByte(b, '\\') >= 0 || !utf8.Valid(b) {
		return nil, false
	}
	return b, true
}

// setString stores a JSON string in v (when valid): the shape's word when
// it is one (no allocation for "long", "M5", ...), through the type's
// UnmarshalText when it has one.
func (w *walker) setString(s *shape, v reflect.Value, raw jsontext.Value) {
	if !v.IsValid() {
		return
	}
	if s.text {
		b, ok := plainString(raw)
		if !ok {
			b, _ = jsontext.AppendUnquote(nil, raw)
		}
		if err := v.Addr().Interface().(encoding.TextUnmarshaler).UnmarshalText(b); err != nil && w.undecodable == nil {
			w.undecodable = err
		}
		return
	}
	if b, ok := plainString(raw); ok {
		v.SetString(s.word(b))
		return
	}
	v.SetString(unquote(raw))
}

// integerFits reports whether the literal is an integer without fraction
// or exponent that fits the Go type of s.
func integerFits(lit string, s *shape) bool {
	return setInteger(lit, s, reflect.Value{})
}

// setInteger checks an integer literal against the Go type of s, as
// integerFits does, and stores it in v (when valid).
func setInteger(lit string, s *shape, v reflect.Value) bool {
	bits := s.typ.Bits()
	switch s.typ.Kind() {
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		n, err := strconv.ParseUint(lit, 10, bits)
		if err == nil && v.IsValid() {
			v.SetUint(n)
		}
		return err == nil
	}
	n, err := strconv.ParseInt(lit, 10, bits)
	if err == nil && v.IsValid() {
		v.SetInt(n)
	}
	return err == nil
}

// object checks the members of an object whose '{' was read and stores
// them in v (when valid).
func (w *walker) object(s *shape, v reflect.Value) error {
	var small [1]uint64 // the members seen, one bit each
	seen := small[:]
	if n := len(s.fields); n > 64 {
		seen = make([]uint64, (n+63)/64)
	}
	var others map[string]bool // names of unknown members, for their repetitions
	for w.dec.PeekKind() != '}' {
		raw, err := w.dec.ReadValue() // the member's name
		if err != nil {
			return w.fail(err)
		}
		name, plain := plainString(raw)
		if !plain {
			name, _ = jsontext.AppendUnquote(nil, raw)
		}
		f := s.field(name)
		switch {
		case f != nil && seen[f.pos/64]&(1<<(f.pos%64)) != 0, f == nil && others[string(name)]:
			w.add(fieldErr(joinPath(w.path(), clip.Runes(string(name), 64)), RuleDuplicateField, "is given more than once"))
			f = nil
		case f == nil:
			key := clip.Runes(string(name), 64)
			w.add(fieldErr(joinPath(w.path(), key), RuleUnknownField, "unknown field %q; allowed fields: %s", key, strings.Join(s.names(), ", ")))
			if others == nil {
				others = map[string]bool{}
			}
			others[string(name)] = true
		default:
			seen[f.pos/64] |= 1 << (f.pos % 64)
		}
		if f == nil {
			if err := w.dec.SkipValue(); err != nil {
				return w.fail(err)
			}
			continue
		}
		var fv reflect.Value
		if v.IsValid() {
			fv = field(v, f.index)
		}
		w.steps = append(w.steps, step{name: f.name, index: -1})
		if err := w.value(f.shape, fv, !f.required); err != nil {
			return err
		}
		w.steps = w.steps[:len(w.steps)-1]
	}
	if _, err := w.dec.ReadToken(); err != nil { // '}'
		return w.fail(err)
	}
	for _, f := range s.fields {
		if f.required && seen[f.pos/64]&(1<<(f.pos%64)) == 0 {
			w.add(fieldErr(joinPath(w.path(), f.name), RuleRequired, "is required"))
		}
	}
	return nil
}

// field returns the struct field of v at index, through embedded structs
// (allocating nil embedded pointers).
func field(v reflect.Value, index []int) reflect.Value {
	for i, x := range index {
		if i > 0 {
			v = deref(v)
		}
		v = v.Field(x)
	}
	return v
}

// array checks the elements of an array whose '[' was read and stores
// them in v (when valid): [] is an empty slice, not nil.
func (w *walker) array(s *shape, v reflect.Value) error {
	if v.IsValid() {
		v.Set(reflect.MakeSlice(v.Type(), 0, 0))
	}
	for i := 0; w.dec.PeekKind() != ']'; i++ {
		var ev reflect.Value
		if v.IsValid() {
			v.Grow(1)
			v.SetLen(i + 1)
			ev = v.Index(i)
		}
		w.steps = append(w.steps, step{index: i})
		if err := w.value(s.elem, ev, false); err != nil {
			return err
		}
		w.steps = w.steps[:len(w.steps)-1]
	}
	if _, err := w.dec.ReadToken(); err != nil { // ']'
		return w.fail(err)
	}
	return nil
}

// joinPath appends a member name to a field path.
func joinPath(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

// decodeDocument checks, with a walker of walkers, that src is exactly
// one JSON object matching s and decodes it into v, the addressable zero
// value of s's Go type. It returns the structural errors (unknown, duplicate, missing members,
// wrong types), the first error of a value's own decoding method, or a
// fatal *svc.Error for a document that is not a well-formed JSON object.
// v holds the request when the only errors are missing members. Empty
// input (only white space) counts as {}.
func decodeDocument(walkers *walkerPool, src []byte, s *shape, v reflect.Value, hint string) (errs []svc.FieldError, undecodable, fatal error) {
	if len(bytes.TrimSpace(src)) == 0 {
		src = []byte("{}")
	}
	w := walkers.get(src)
	defer walkers.put(w)
	failed := func(err error) ([]svc.FieldError, error, error) {
		if se, ok := errors.AsType[*syntaxError](err); ok {
			fe := se.fe
			fe.Message += hint
			return nil, nil, invalid(fe)
		}
		return nil, nil, invalid(fieldErr("", RuleJSON, "malformed JSON: %v", err))
	}
	tok, err := w.dec.ReadToken()
	if err != nil {
		return failed(w.fail(err))
	}
	if tok.Kind() != '{' {
		return nil, nil, invalid(fieldErr("", "object", "the input must be a JSON object, got %s%s", describe(tok.Kind()), hint))
	}
	if err := w.object(s, v); err != nil {
		return failed(err)
	}
	off := w.dec.InputOffset()
	for off < int64(len(src)) && strings.IndexByte(" \t\r\n", src[off]) >= 0 {
		off++
	}
	if _, err := w.dec.ReadToken(); !errors.Is(err, io.EOF) {
		return nil, nil, invalid(fieldErr("", RuleJSON, "unexpected data after the JSON object at %s", position(src, off)))
	}
	return w.errors(), w.undecodable, nil
}

// isAttribution reports whether name is a query parameter every paid
// route accepts besides a tool's own: ref (a referral code) or src (the
// source counted by the stats). They never change what a call computes.
func isAttribution(name string) bool {
	return name == "ref" || name == "src"
}

// unknownParams returns the errors of the query parameters in q that are
// neither one of allowed nor an attribution parameter (ref, src), in
// name order. Each names the parameter (rule RuleUnknownField), lists
// the allowed ones and, for a parameter that differs from one of them in
// case only ("datetime"), says which was meant. post says that the tool
// reads its input from a JSON body, where the parameter should have gone.
func unknownParams(q url.Values, allowed []string, post bool) []svc.FieldError {
	var errs []svc.FieldError
	for _, name := range sortedKeys(q) {
		if isAttribution(name) || slices.Contains(allowed, name) {
			continue
		}
		if len(errs) == maxFieldErrors {
			errs = append(errs, fieldErr("", RuleTooManyErrors, "more unknown query parameters are not listed"))
			break
		}
		list := strings.Join(append(slices.Clone(allowed), "ref", "src"), ", ")
		msg := fmt.Sprintf("unknown query parameter %q; allowed parameters: %s", clip.Runes(name, 64), list)
		if post {
			msg = fmt.Sprintf("unknown query parameter %q; this tool reads its input from the JSON body, and its query string takes only %s", clip.Runes(name, 64), list)
		}
		for _, a := range allowed {
			if strings.EqualFold(a, name) && !post {
				msg += fmt.Sprintf(" (did you mean %q? names are case-sensitive)", a)
				break
			}
		}
		errs = append(errs, fieldErr(clip.Runes(name, 64), RuleUnknownField, "%s", msg))
	}
	return errs
}

// queryDocument converts the query parameters of a GET tool into the
// JSON object its request decodes from. Parameters are strict like JSON
// members: one the tool does not define is invalid (rule
// RuleUnknownField, naming it and listing the allowed ones), except the
// attribution parameters ref and src; a defined parameter given more than
// once is invalid (rule RuleRepeated: which value was meant cannot be
// told, so none is picked), and one given with an empty value counts as
// absent. Values are typed by the field they fill: integer ("count=abc" →
// rule "integer"), number, boolean or string.
func queryDocument(q url.Values, s *shape) ([]byte, []svc.FieldError) {
	var errs []svc.FieldError
	obj := make(map[string]json.RawMessage)
	for _, f := range s.fields {
		vals := q[f.name]
		if len(vals) > 1 {
			errs = append(errs, fieldErr(f.name, RuleRepeated, "must be given once, got %d values", len(vals)))
			continue
		}
		if len(vals) == 0 || vals[0] == "" {
			continue
		}
		v := vals[0]
		var lit string
		switch f.shape.kind {
		case kindString:
			b, _ := json.Marshal(v)
			lit = string(b)
		case kindInteger:
			if !integerFits(v, f.shape) {
				errs = append(errs, fieldErr(f.name, "integer", "must be an integer, got %q", clip.Runes(v, 24)))
				continue
			}
			lit = v
		case kindNumber:
			n, err := svc.ParseNumber(v)
			if err != nil {
				errs = append(errs, fieldErr(f.name, "number", "must be a decimal number, got %q", clip.Runes(v, 24)))
				continue
			}
			lit = n.String()
		case kindBoolean:
			bv, err := strconv.ParseBool(v)
			if err != nil {
				errs = append(errs, fieldErr(f.name, "boolean", "must be true or false, got %q", clip.Runes(v, 24)))
				continue
			}
			lit = strconv.FormatBool(bv)
		default:
			errs = append(errs, fieldErr(f.name, f.shape.kind.String(), "cannot be given in the query string"))
			continue
		}
		obj[f.name] = json.RawMessage(lit)
	}
	errs = append(errs, unknownParams(q, s.names(), false)...)
	b, _ := json.Marshal(obj)
	return b, errs
}

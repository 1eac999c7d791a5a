package tools

import (
	"bytes"
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
	"unicode/utf8"

	"github.com/seed1284c1d2/svc"
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

// cut returns at most n runes of s, with an ellipsis when cut, for messages
// and field paths that must not echo large user input.
func cut(s string, n int) string {
	i := 0
	for j := range s {
		if i == n {
			return s[:j] + "…"
		}
		i++
	}
	return s
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
		return invalid(fieldErr("", RuleContentEncoding, "compressed request bodies (Content-Encoding %q) are not accepted; send plain JSON", cut(ce, 24)))
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

// walker checks a JSON document against a shape while streaming through
// its tokens: well-formedness (with the position of the first syntax
// error), the JSON type of every value, unknown, duplicate and missing
// members. It records every problem it can reach and stops only at a
// syntax error.
type walker struct {
	src     []byte
	dec     *json.Decoder
	errs    []svc.FieldError
	dropped int
}

// syntaxError is a fatal error of the document itself.
type syntaxError struct{ fe svc.FieldError }

func (e *syntaxError) Error() string { return e.fe.Message }

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
// position. The streaming decoder counts offsets from the start of the
// value it was reading, so the position is taken from a decode of the
// whole document instead, which counts from its start.
func (w *walker) fail(err error) error {
	if !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		if whole := json.NewDecoder(bytes.NewReader(w.src)).Decode(new(json.RawMessage)); whole != nil {
			err = whole
		}
	}
	off := int64(len(w.src))
	msg := "unexpected end of input"
	if se, ok := errors.AsType[*json.SyntaxError](err); ok {
		off = max(se.Offset-1, 0) // Offset counts the offending byte
		msg = strings.TrimPrefix(se.Error(), "json: ")
		if strings.HasPrefix(msg, "unexpected end of JSON input") {
			off, msg = int64(len(w.src)), "unexpected end of input"
		}
	} else if !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		off, msg = w.dec.InputOffset(), err.Error()
	}
	return &syntaxError{fieldErr("", RuleJSON, "malformed JSON at %s: %s", position(w.src, off), msg)}
}

// token reads the next token.
func (w *walker) token() (json.Token, error) {
	tok, err := w.dec.Token()
	if err != nil {
		return nil, w.fail(err)
	}
	return tok, nil
}

// skipValue skips the rest of a value whose first token was tok.
func (w *walker) skipValue(tok json.Token) error {
	d, ok := tok.(json.Delim)
	if !ok || (d != '{' && d != '[') {
		return nil
	}
	for depth := 1; depth > 0; {
		t, err := w.token()
		if err != nil {
			return err
		}
		switch t {
		case json.Delim('{'), json.Delim('['):
			depth++
		case json.Delim('}'), json.Delim(']'):
			depth--
		}
	}
	return nil
}

// describe names the JSON type of a token for messages.
func describe(tok json.Token) string {
	switch t := tok.(type) {
	case json.Delim:
		if t == '{' {
			return "an object"
		}
		return "an array"
	case string:
		return "a string"
	case json.Number:
		return "a number"
	case bool:
		return "a boolean"
	case nil:
		return "null"
	}
	return "an unknown value"
}

// wrongType records that the value at path is not of the shape's kind.
func (w *walker) wrongType(path string, s *shape, tok json.Token) {
	w.add(fieldErr(path, s.kind.String(), "must be %s %s, got %s", s.kind.article(), s.kind, describe(tok)))
}

// value checks one value against s. Objects and arrays are streamed token
// by token; a scalar is read whole and judged by its first byte, which
// spares unquoting a large string (a CSV document) only to check its type.
// optional says the value is an optional member's, for which null means
// "not given" whatever its type.
func (w *walker) value(path string, s *shape, optional bool) error {
	nullable := s.nullable || optional
	if s.kind == kindObject || s.kind == kindArray {
		tok, err := w.token()
		if err != nil {
			return err
		}
		switch {
		case tok == nil && nullable:
			return nil
		case tok == json.Delim('{') && s.kind == kindObject:
			return w.object(path, s)
		case tok == json.Delim('[') && s.kind == kindArray:
			return w.array(path, s)
		}
		w.wrongType(path, s, tok)
		return w.skipValue(tok)
	}
	var raw json.RawMessage
	if err := w.dec.Decode(&raw); err != nil {
		return w.fail(err)
	}
	if s.kind == kindAny {
		return nil
	}
	switch c := raw[0]; {
	case c == 'n':
		if !nullable {
			w.wrongType(path, s, nil)
		}
	case c == '"':
		switch s.kind {
		case kindString:
		case kindNumber:
			var str string
			if err := json.Unmarshal(raw, &str); err != nil {
				return w.fail(err)
			}
			if _, err := svc.ParseNumber(str); err != nil {
				w.add(fieldErr(path, "number", "must be a number or a string holding a decimal, got %q", cut(str, 24)))
			}
		default:
			w.wrongType(path, s, "")
		}
	case c == 't' || c == 'f':
		if s.kind != kindBoolean {
			w.wrongType(path, s, true)
		}
	case c == '{' || c == '[':
		w.wrongType(path, s, json.Delim(c))
	default:
		lit := string(raw)
		switch s.kind {
		case kindNumber:
			if _, err := svc.ParseNumber(lit); err != nil {
				w.add(fieldErr(path, "number", "%v", err))
			}
		case kindInteger:
			if !integerFits(lit, s) {
				w.add(fieldErr(path, "integer", "must be an integer, got %s", cut(lit, 24)))
			}
		default:
			w.wrongType(path, s, json.Number(lit))
		}
	}
	return nil
}

// integerFits reports whether the literal is an integer without fraction
// or exponent that fits the Go type of s.
func integerFits(lit string, s *shape) bool {
	bits := s.typ.Bits()
	switch s.typ.Kind() {
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		_, err := strconv.ParseUint(lit, 10, bits)
		return err == nil
	}
	_, err := strconv.ParseInt(lit, 10, bits)
	return err == nil
}

// object checks the members of an object whose '{' was read.
func (w *walker) object(path string, s *shape) error {
	seen := make(map[string]bool, len(s.fields))
	for w.dec.More() {
		tok, err := w.token()
		if err != nil {
			return err
		}
		key, _ := tok.(string)
		p := joinPath(path, cut(key, 64))
		f := s.byName[key]
		switch {
		case seen[key]:
			w.add(fieldErr(p, RuleDuplicateField, "is given more than once"))
			f = nil
		case f == nil:
			w.add(fieldErr(p, RuleUnknownField, "unknown field %q; allowed fields: %s", cut(key, 64), strings.Join(s.names(), ", ")))
		}
		seen[key] = true
		if f == nil {
			var raw json.RawMessage
			if err := w.dec.Decode(&raw); err != nil {
				return w.fail(err)
			}
			continue
		}
		if err := w.value(p, f.shape, !f.required); err != nil {
			return err
		}
	}
	if _, err := w.token(); err != nil { // '}'
		return err
	}
	for _, f := range s.fields {
		if f.required && !seen[f.name] {
			w.add(fieldErr(joinPath(path, f.name), RuleRequired, "is required"))
		}
	}
	return nil
}

// array checks the elements of an array whose '[' was read.
func (w *walker) array(path string, s *shape) error {
	for i := 0; w.dec.More(); i++ {
		if err := w.value(fmt.Sprintf("%s[%d]", path, i), s.elem, false); err != nil {
			return err
		}
	}
	_, err := w.token() // ']'
	return err
}

// joinPath appends a member name to a field path.
func joinPath(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

// checkDocument checks that src is exactly one JSON object matching s. It
// returns the structural errors (unknown, duplicate, missing members,
// wrong types) or a fatal *svc.Error for a document that is not a
// well-formed JSON object. Empty input (only white space) counts as {}.
// A clean document (the common case) is recognised by fastCheck in one
// pass; anything else is walked token by token.
func checkDocument(src []byte, s *shape, hint string) ([]svc.FieldError, []byte, error) {
	if fastCheck(src, s) {
		return nil, src, nil
	}
	return walkDocument(src, s, hint)
}

// walkDocument is checkDocument without the fast path: the token walk that
// finds and describes every problem.
func walkDocument(src []byte, s *shape, hint string) ([]svc.FieldError, []byte, error) {
	if len(bytes.TrimSpace(src)) == 0 {
		src = []byte("{}")
	}
	w := &walker{src: src, dec: json.NewDecoder(bytes.NewReader(src))}
	w.dec.UseNumber()
	fatal := func(err error) ([]svc.FieldError, []byte, error) {
		if se, ok := errors.AsType[*syntaxError](err); ok {
			fe := se.fe
			fe.Message += hint
			return nil, nil, invalid(fe)
		}
		return nil, nil, invalid(fieldErr("", RuleJSON, "malformed JSON: %v", err))
	}
	tok, err := w.token()
	if err != nil {
		return fatal(err)
	}
	if tok != json.Delim('{') {
		return nil, nil, invalid(fieldErr("", "object", "the input must be a JSON object, got %s%s", describe(tok), hint))
	}
	if err := w.object("", s); err != nil {
		return fatal(err)
	}
	off := w.dec.InputOffset()
	for off < int64(len(src)) && strings.IndexByte(" \t\r\n", src[off]) >= 0 {
		off++
	}
	if _, err := w.dec.Token(); !errors.Is(err, io.EOF) {
		return nil, nil, invalid(fieldErr("", RuleJSON, "unexpected data after the JSON object at %s", position(src, off)))
	}
	return w.errors(), src, nil
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
		msg := fmt.Sprintf("unknown query parameter %q; allowed parameters: %s", cut(name, 64), list)
		if post {
			msg = fmt.Sprintf("unknown query parameter %q; this tool reads its input from the JSON body, and its query string takes only %s", cut(name, 64), list)
		}
		for _, a := range allowed {
			if strings.EqualFold(a, name) && !post {
				msg += fmt.Sprintf(" (did you mean %q? names are case-sensitive)", a)
				break
			}
		}
		errs = append(errs, fieldErr(cut(name, 64), RuleUnknownField, "%s", msg))
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
				errs = append(errs, fieldErr(f.name, "integer", "must be an integer, got %q", cut(v, 24)))
				continue
			}
			lit = v
		case kindNumber:
			n, err := svc.ParseNumber(v)
			if err != nil {
				errs = append(errs, fieldErr(f.name, "number", "must be a decimal number, got %q", cut(v, 24)))
				continue
			}
			lit = n.String()
		case kindBoolean:
			bv, err := strconv.ParseBool(v)
			if err != nil {
				errs = append(errs, fieldErr(f.name, "boolean", "must be true or false, got %q", cut(v, 24)))
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

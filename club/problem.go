package club

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/seed1284c1d2/svc/internal/clip"
	"github.com/seed1284c1d2/svc/wire"
)

// Problem codes (the code member and the end of the type URI).
const (
	CodeInvalidInput     = "invalid_input"      // 400
	CodeNotFound         = "not_found"          // 404
	CodeMethodNotAllowed = "method_not_allowed" // 405, with an Allow header
	CodeConflict         = "conflict"           // 409
	CodeTooLarge         = "too_large"          // 413
	CodeRateLimited      = "rate_limited"       // 429
	CodeUnavailable      = "unavailable"        // 503
)

// Rules of the field errors the club reports.
const (
	RuleRequired     = "required"      // a required member or parameter is missing
	RuleJSON         = "json"          // the body is not one well-formed JSON object
	RuleUnknownField = "unknown_field" // a member the route does not define
	RuleDuplicate    = "duplicate_field"
	RuleString       = "string"      // a member that must be a JSON string
	RuleArray        = "array"       // a member that must be a JSON array
	RuleEVMAddress   = "evm_address" // not 0x followed by 40 hex digits
	RuleChecksum     = "checksum"    // mixed case with a wrong EIP-55 checksum
	RuleNonZero      = "nonzero"     // the zero address
	RuleReferralCode = "referral_code"
	RuleMin          = "min"
	RuleMax          = "max"
	RuleNoHTML       = "no_html"    // '<' or '>'
	RuleControl      = "no_control" // a control character
	RuleBidi         = "no_bidi"    // a bidirectional control (U+202E, U+2066, ...)
	RulePrintable    = "printable"  // another non-printable or invisible character
	RuleCharset      = "charset"    // a role or interest character outside the term rules
)

// FieldError is one broken input rule: the field (a JSON member, a query
// parameter or a path segment), the rule and a message naming both. It
// encodes like svc.FieldError.
type FieldError struct {
	Field   string `json:"field"`
	Rule    string `json:"rule"`
	Message string `json:"message"`
}

// Problem is an RFC 9457 problem details object, with the members package
// httpserver writes.
type Problem struct {
	Type      string       `json:"type"`
	Title     string       `json:"title"`
	Status    int          `json:"status"`
	Detail    string       `json:"detail,omitempty"`
	Instance  string       `json:"instance,omitempty"`
	Code      string       `json:"code"`
	Errors    []FieldError `json:"errors,omitempty"`
	RequestID string       `json:"requestId,omitempty"`
}

// newProblem returns a problem of status and code with the status's title.
func newProblem(status int, code, detail string) Problem {
	return Problem{Type: wire.ProblemTypePrefix + code, Title: http.StatusText(status), Status: status, Detail: detail, Code: code}
}

// invalidProblem is the 400 problem listing fields.
func invalidProblem(fields []FieldError) Problem {
	p := newProblem(http.StatusBadRequest, CodeInvalidInput, "invalid input")
	if len(fields) == 1 {
		p.Detail = fields[0].Message
	}
	p.Errors = fields
	return p
}

// writeProblem writes p as application/problem+json, not cacheable, with
// the request's path and id.
func writeProblem(w http.ResponseWriter, r *http.Request, p Problem) {
	if p.Instance == "" {
		p.Instance = clip.Runes(r.URL.Path, 200)
	}
	if p.RequestID == "" {
		p.RequestID = clip.Runes(r.Header.Get(wire.HeaderRequestID), 128)
	}
	b, err := json.Marshal(p)
	if err != nil { // a Problem always encodes
		b = []byte(`{"type":"` + wire.ProblemTypePrefix + `internal","title":"Internal Server Error","status":500,"code":"internal"}`)
		p.Status = http.StatusInternalServerError
	}
	h := w.Header()
	h.Set("Content-Type", wire.ProblemContentType)
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(p.Status)
	_, _ = w.Write(append(b, '\n'))
}

// writeStoreError answers a store failure: 409 for a referral code
// collision, 503 otherwise (logged; the detail reveals nothing).
func (c *Club) writeStoreError(w http.ResponseWriter, r *http.Request, op string, err error) {
	if errors.Is(err, ErrReferralCollision) {
		c.log.Error("club: referral code collision", "op", op, "error", err)
		writeProblem(w, r, newProblem(http.StatusConflict, CodeConflict, "this wallet's referral code belongs to another wallet (a hash collision); no code can be issued"))
		return
	}
	c.log.Error("club: store failure", "op", op, "path", clip.Runes(r.URL.Path, 200), "error", err)
	w.Header().Set("Retry-After", "5")
	writeProblem(w, r, newProblem(http.StatusServiceUnavailable, CodeUnavailable, "the club's store is unavailable; try again later"))
}

// writeRateLimited answers 429 with Retry-After in whole seconds.
func writeRateLimited(w http.ResponseWriter, r *http.Request, wait time.Duration, what string) {
	secs := retryAfterSeconds(wait)
	w.Header().Set("Retry-After", strconv.FormatInt(secs, 10))
	writeProblem(w, r, newProblem(http.StatusTooManyRequests, CodeRateLimited,
		fmt.Sprintf("too many check-ins %s; retry after %d s", what, secs)))
}

// retryAfterSeconds rounds a wait up to whole seconds, at least 1.
func retryAfterSeconds(d time.Duration) int64 {
	s := int64(math.Ceil(d.Seconds()))
	if s < 1 {
		return 1
	}
	return s
}

// writeJSON writes v as a JSON answer with status and Cache-Control.
func (c *Club) writeJSON(w http.ResponseWriter, r *http.Request, status int, cache string, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		c.log.Error("club: encoding an answer failed", "path", clip.Runes(r.URL.Path, 200), "error", err)
		writeProblem(w, r, newProblem(http.StatusInternalServerError, "internal", "internal error"))
		return
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", cache)
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}

// fieldErrors accumulates broken rules.
type fieldErrors []FieldError

// add records a broken rule; the message starts with the field's name.
func (fe *fieldErrors) add(field, rule, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if field != "" {
		msg = field + ": " + msg
	}
	*fe = append(*fe, FieldError{Field: field, Rule: rule, Message: msg})
}

// errTooLarge marks a body over the limit.
var errTooLarge = errors.New("club: request body too large")

// readBody reads at most limit bytes of r's body; past it, errTooLarge.
func readBody(r *http.Request, limit int64) ([]byte, error) {
	if r.Body == nil || r.Body == http.NoBody {
		return nil, nil
	}
	if r.ContentLength > limit {
		return nil, errTooLarge
	}
	b, err := io.ReadAll(io.LimitReader(r.Body, limit+1))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, errTooLarge
		}
		return nil, fmt.Errorf("club: reading the request body: %w", err)
	}
	if int64(len(b)) > limit {
		return nil, errTooLarge
	}
	return bytes.TrimPrefix(b, []byte("\uFEFF")), nil
}

// decodeObject reads r's body as one JSON object whose members are among
// allowed, and returns them raw. Malformed JSON, a non-object, data after
// the object, unknown and duplicate members are field errors; a body over
// the limit is answered with 413 by the caller (ok false, problem set).
func (c *Club) decodeObject(r *http.Request, allowed ...string) (members map[string]json.RawMessage, fe fieldErrors, p *Problem) {
	body, err := readBody(r, c.bodyLimit)
	if errors.Is(err, errTooLarge) {
		tp := newProblem(http.StatusRequestEntityTooLarge, CodeTooLarge, fmt.Sprintf("the request body is over the limit of %d bytes", c.bodyLimit))
		return nil, nil, &tp
	}
	if err != nil {
		fe.add("", RuleJSON, "the request body could not be read completely")
		return nil, fe, nil
	}
	if len(bytes.TrimSpace(body)) == 0 {
		fe.add("", RuleJSON, "the request body is empty; send a JSON object")
		return nil, fe, nil
	}
	if !utf8.Valid(body) {
		fe.add("", RuleJSON, "the request body is not valid UTF-8")
		return nil, fe, nil
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil || tok != json.Delim('{') {
		fe.add("", RuleJSON, "the request body must be a JSON object")
		return nil, fe, nil
	}
	members = map[string]json.RawMessage{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			fe.add("", RuleJSON, "malformed JSON at byte %d", dec.InputOffset())
			return nil, fe, nil
		}
		key, _ := tok.(string)
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			fe.add("", RuleJSON, "malformed JSON at byte %d", dec.InputOffset())
			return nil, fe, nil
		}
		switch {
		case !slices.Contains(allowed, key):
			fe.add(clip.Runes(key, 64), RuleUnknownField, "unknown field; allowed fields: %s", strings.Join(allowed, ", "))
		case members[key] != nil:
			fe.add(key, RuleDuplicate, "given more than once")
		default:
			members[key] = raw
		}
	}
	if tok, err := dec.Token(); err != nil || tok != json.Delim('}') {
		fe.add("", RuleJSON, "malformed JSON at byte %d", dec.InputOffset())
		return nil, fe, nil
	}
	if _, err := dec.Token(); err != io.EOF {
		fe.add("", RuleJSON, "data after the JSON object at byte %d", dec.InputOffset())
		return nil, fe, nil
	}
	return members, fe, nil
}

// isNull reports whether a raw member is absent or JSON null.
func isNull(raw json.RawMessage) bool {
	return raw == nil || string(bytes.TrimSpace(raw)) == "null"
}

// stringMember decodes a string member; ok is false (with an error added)
// when it is of another type. An absent or null member is "", true.
func stringMember(fe *fieldErrors, members map[string]json.RawMessage, field string) (string, bool) {
	raw := members[field]
	if isNull(raw) {
		return "", true
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		fe.add(field, RuleString, "must be a string")
		return "", false
	}
	return s, true
}

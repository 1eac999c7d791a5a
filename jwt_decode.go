package svc

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/shopspring/decimal"

	"github.com/seed1284c1d2/svc/internal/clip"
)

// JWTDecodeRequest is the input of JWTDecode.
type JWTDecodeRequest struct {
	// Token is the compact JWS serialization header.payload.signature;
	// required, at most 64 KiB before any trimming (far above any
	// real-world JWT). Surrounding white space and a leading "Bearer " (any
	// case) are removed first.
	Token string `json:"token" validate:"required,max_bytes=65536"`
	// Now is the instant the time claims are checked against; the zero
	// value means time.Now(). It is for Go callers and tests and is never
	// read from JSON.
	Now time.Time `json:"-"`
}

// JWTDecodeResponse is the output of JWTDecode.
type JWTDecodeResponse struct {
	// Header is the decoded JOSE header, a JSON object exactly as in the
	// token (member order and number literals kept, white space removed).
	Header json.RawMessage `json:"header"`
	// Payload is the decoded claims set, a JSON object kept like Header.
	Payload json.RawMessage `json:"payload"`
	// Verified is always false: the signature is never checked.
	Verified bool `json:"verified"`
	// Alg, Typ and Kid are the header members of those names when they are
	// strings.
	Alg string `json:"alg,omitempty"`
	Typ string `json:"typ,omitempty"`
	Kid string `json:"kid,omitempty"`
	// SignaturePresent is true when the third part is not empty.
	SignaturePresent bool `json:"signaturePresent"`
	// SignatureBytes is the length of the decoded signature.
	SignatureBytes int `json:"signatureBytes"`
	// TimeClaims holds the payload's exp, nbf and iat claims that are JSON
	// numbers, as RFC 3339 UTC timestamps (fractional seconds kept), keyed by
	// claim name; omitted when there are none.
	TimeClaims map[string]string `json:"timeClaims,omitempty"`
	// Expired is set when exp is present: true when the check instant is at
	// or after exp (RFC 7519 §4.1.4).
	Expired *bool `json:"expired,omitempty"`
	// NotYetValid is set when nbf is present: true when the check instant is
	// before nbf (RFC 7519 §4.1.5).
	NotYetValid *bool `json:"notYetValid,omitempty"`
	// CheckedAt is the check instant (RFC 3339 UTC), set along with Expired
	// or NotYetValid.
	CheckedAt string `json:"checkedAt,omitempty"`
	// Warnings lists oddities that do not prevent decoding: a header without
	// alg, alg "none", a time claim that is not a number or out of range.
	Warnings []string `json:"warnings,omitempty"`
}

// jwtDecodeTags are the compiled validate tags of JWTDecodeRequest.
var jwtDecodeTags = compileTags[JWTDecodeRequest]()

// JWTDecode decodes a JSON Web Token (RFC 7519, compact JWS serialization
// of RFC 7515) without verifying its signature: verified is always false.
//
// The token is trimmed of surrounding white space and of a leading
// "Bearer " (any case, as copied from an Authorization header). It must then
// have exactly three dot-separated parts (rule "jwt_parts"); five parts are
// an encrypted token (JWE), which is not supported (rule "jwe_unsupported").
// Each part is base64url (RFC 4648 §5) with or without "=" padding; the
// standard alphabet's '+' and '/', white space and any other character are
// errors (rule "jwt_base64"). The header and the payload must each decode to
// a JSON object in UTF-8 with no duplicate member name at the top level
// (rule "jwt_json"). The signature part may be empty (alg "none"). Every
// error names field "token" and the part concerned, and never echoes the
// token. A token longer than 64 KiB is KindTooLarge (rule "max_bytes"); an
// empty one fails rule "required".
//
// Header and payload are returned as the exact JSON of the token, so large
// numbers keep every digit. Extras: alg, typ and kid; whether a signature is
// present and its length; exp, nbf and iat as RFC 3339 UTC when they are JSON
// numbers (NumericDate, seconds since 1970, fractions allowed); expired
// (now ≥ exp) and notYetValid (now < nbf) against req.Now, or the current
// time when it is zero.
func JWTDecode(ctx context.Context, req JWTDecodeRequest) (JWTDecodeResponse, error) {
	if err := ctx.Err(); err != nil {
		return JWTDecodeResponse{}, errorf(KindTimeout, err, "jwt_decode: %v", err)
	}
	var sizeErrs fieldErrors
	jwtDecodeTags.check(&sizeErrs, "", &req)
	if err := sizeErrs.tooLarge("token too large"); err != nil {
		return JWTDecodeResponse{}, err
	}
	tok := jwtTrim(req.Token)
	if tok == "" {
		return JWTDecodeResponse{}, InvalidField("token", "required", "is required")
	}
	switch n := strings.Count(tok, ".") + 1; n {
	case 3:
	case 5:
		return JWTDecodeResponse{}, InvalidField("token", "jwe_unsupported",
			"encrypted tokens (JWE) are not supported: the token has 5 parts; only signed tokens (JWS, 3 parts) can be decoded")
	default:
		return JWTDecodeResponse{}, InvalidField("token", "jwt_parts",
			"must have 3 dot-separated parts (header.payload.signature), found %d", n)
	}
	parts := strings.SplitN(tok, ".", 3)

	var fe fieldErrors
	var resp JWTDecodeResponse
	var header, payload map[string]json.RawMessage
	resp.Header, header = jwtDecodeObject(&fe, "header", parts[0])
	resp.Payload, payload = jwtDecodeObject(&fe, "payload", parts[1])
	sig, sigErr := jwtDecodeSegment(parts[2])
	if sigErr != "" {
		fe.add("token", "jwt_base64", "signature: %s", sigErr)
	}
	if err := fe.err(); err != nil {
		return JWTDecodeResponse{}, err
	}
	resp.SignaturePresent = len(sig) > 0
	resp.SignatureBytes = len(sig)

	resp.Alg = jwtStringMember(header, "alg")
	resp.Typ = jwtStringMember(header, "typ")
	resp.Kid = jwtStringMember(header, "kid")
	if _, ok := header["alg"]; !ok {
		resp.Warnings = append(resp.Warnings, "header has no alg member")
	} else if strings.EqualFold(resp.Alg, "none") {
		resp.Warnings = append(resp.Warnings, `alg is "none": the token is unsecured`)
	}

	now := req.Now
	if now.IsZero() {
		now = time.Now()
	}
	now = now.UTC()
	for _, name := range [...]string{"exp", "nbf", "iat"} {
		raw, ok := payload[name]
		if !ok {
			continue
		}
		t, warn := jwtNumericDate(raw)
		if warn != "" {
			resp.Warnings = append(resp.Warnings, fmt.Sprintf("payload.%s %s", name, warn))
			continue
		}
		if resp.TimeClaims == nil {
			resp.TimeClaims = make(map[string]string, 3)
		}
		resp.TimeClaims[name] = t.Format(time.RFC3339Nano)
		switch name {
		case "exp":
			expired := !now.Before(t)
			resp.Expired = &expired
		case "nbf":
			early := now.Before(t)
			resp.NotYetValid = &early
		}
	}
	if resp.Expired != nil || resp.NotYetValid != nil {
		resp.CheckedAt = now.Format(time.RFC3339Nano)
	}
	return resp, nil
}

// jwtTrim removes surrounding white space and a leading "Bearer " scheme.
func jwtTrim(s string) string {
	s = strings.TrimSpace(s)
	if len(s) > 7 && strings.EqualFold(s[:6], "bearer") && (s[6] == ' ' || s[6] == '\t') {
		s = strings.TrimLeft(s[7:], " \t")
	}
	return s
}

// jwtDecodeSegment decodes one base64url part; padding is optional. It
// returns a description of the problem instead of an error so that the
// caller can name the part; the description never quotes the input.
func jwtDecodeSegment(seg string) ([]byte, string) {
	body := strings.TrimRight(seg, "=")
	pads := len(seg) - len(body)
	for i := 0; i < len(body); i++ {
		c := body[i]
		switch {
		case 'A' <= c && c <= 'Z', 'a' <= c && c <= 'z', '0' <= c && c <= '9', c == '-', c == '_':
		case c == '+' || c == '/':
			return nil, fmt.Sprintf("character at offset %d belongs to the standard base64 alphabet; JWTs use base64url ('-' and '_' instead of '+' and '/')", i)
		case c == '=':
			return nil, fmt.Sprintf("padding '=' at offset %d is not at the end", i)
		default:
			return nil, fmt.Sprintf("character at offset %d is not base64url", i)
		}
	}
	if len(body)%4 == 1 {
		return nil, fmt.Sprintf("length %d is not a possible base64url length", len(body))
	}
	if pads > 0 && (pads > 2 || (len(body)+pads)%4 != 0) {
		return nil, fmt.Sprintf("has %d padding characters where %d are expected", pads, (4-len(body)%4)%4)
	}
	out, err := base64.RawURLEncoding.DecodeString(body)
	if err != nil {
		return nil, "not valid base64url"
	}
	return out, ""
}

// jwtDecodeObject decodes the header or the payload part into its compact
// JSON text and its top-level members; problems are recorded in fe.
func jwtDecodeObject(fe *fieldErrors, part, seg string) (json.RawMessage, map[string]json.RawMessage) {
	raw, problem := jwtDecodeSegment(seg)
	if problem != "" {
		fe.add("token", "jwt_base64", "%s: %s", part, problem)
		return nil, nil
	}
	if !utf8.Valid(raw) {
		fe.add("token", "jwt_json", "%s: decodes to bytes that are not UTF-8 text", part)
		return nil, nil
	}
	trimmed := bytes.TrimSpace(raw)
	if !json.Valid(trimmed) {
		fe.add("token", "jwt_json", "%s: is not valid JSON", part)
		return nil, nil
	}
	if len(trimmed) == 0 || trimmed[0] != '{' {
		fe.add("token", "jwt_json", "%s: must be a JSON object, not %s", part, jwtJSONKind(trimmed))
		return nil, nil
	}
	members, dup := jwtMembers(trimmed)
	if dup != "" {
		fe.add("token", "jwt_json", "%s: member %q appears more than once", part, clip.Runes(dup, 32))
		return nil, nil
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, trimmed); err != nil { // cannot happen after json.Valid
		fe.add("token", "jwt_json", "%s: is not valid JSON", part)
		return nil, nil
	}
	return json.RawMessage(compact.Bytes()), members
}

// jwtMembers splits a valid JSON object into its top-level members and
// reports the first duplicated member name.
func jwtMembers(obj []byte) (map[string]json.RawMessage, string) {
	dec := json.NewDecoder(bytes.NewReader(obj))
	dec.UseNumber()
	members := make(map[string]json.RawMessage)
	if _, err := dec.Token(); err != nil { // '{'
		return members, ""
	}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			break
		}
		key, _ := t.(string)
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			break
		}
		if _, seen := members[key]; seen {
			return members, key
		}
		members[key] = v
	}
	return members, ""
}

// jwtJSONKind names the JSON type of a valid JSON text.
func jwtJSONKind(v []byte) string {
	switch {
	case len(v) == 0:
		return "empty"
	case v[0] == '[':
		return "an array"
	case v[0] == '"':
		return "a string"
	case v[0] == 't' || v[0] == 'f':
		return "a boolean"
	case v[0] == 'n':
		return "null"
	default:
		return "a number"
	}
}

// jwtStringMember returns member name of obj when it is a JSON string.
func jwtStringMember(obj map[string]json.RawMessage, name string) string {
	raw, ok := obj[name]
	if !ok {
		return ""
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return ""
	}
	return s
}

// jwtNumericDate converts a NumericDate (seconds since 1970-01-01T00:00:00Z,
// possibly fractional) to a time, exactly to the nanosecond (further digits
// are truncated). It returns a warning instead when raw is not a JSON number
// or lies outside years 0001–9999.
func jwtNumericDate(raw json.RawMessage) (time.Time, string) {
	const notNumber = "is not a NumericDate (a JSON number of seconds since 1970)"
	const outOfRange = "is outside the years 0001–9999 and cannot be shown as a date"
	s := string(bytes.TrimSpace(raw))
	if s == "" || !(s[0] == '-' || ('0' <= s[0] && s[0] <= '9')) {
		return time.Time{}, notNumber
	}
	// Years 0001 to 9999 of RFC 3339, in seconds relative to 1970.
	const lo, hi = -62135596800, 253402300799
	f, err := strconv.ParseFloat(s, 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return time.Time{}, notNumber
	}
	if err != nil || f < lo-1 || f > hi+1 {
		return time.Time{}, outOfRange
	}
	// Exact arithmetic for ordinary literals; a literal with a huge
	// exponent (1e-999999999) would make decimal build a huge power of ten,
	// and its float value is then as exact as a nanosecond clock can be.
	if _, exp, hasExp := strings.Cut(strings.ToLower(s), "e"); len(s) > 64 || (hasExp && len(strings.TrimLeft(exp, "+-0")) > 2) {
		secs := math.Floor(f)
		return time.Unix(int64(secs), int64(math.Round((f-secs)*1e9))).UTC(), ""
	}
	d, err := decimal.NewFromString(s)
	if err != nil {
		return time.Time{}, notNumber
	}
	if d.LessThan(decimal.NewFromInt(lo)) || d.GreaterThan(decimal.NewFromInt(hi)) {
		return time.Time{}, outOfRange
	}
	secs := d.Floor()
	nanos := d.Sub(secs).Shift(9).Truncate(0)
	return time.Unix(secs.IntPart(), nanos.IntPart()).UTC(), ""
}

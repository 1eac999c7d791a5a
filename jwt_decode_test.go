package svc_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/leanovate/gopter"
	"github.com/leanovate/gopter/prop"

	"github.com/seed1284c1d2/svc"
	"github.com/seed1284c1d2/svc/svctest"
)

// jwtIO is the example token of jwt.io: {"alg":"HS256","typ":"JWT"} and
// {"sub":"1234567890","name":"John Doe","iat":1516239022}.
const jwtIO = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIiwibmFtZSI6IkpvaG4gRG9lIiwiaWF0IjoxNTE2MjM5MDIyfQ.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"

// jwtToken builds a token from JSON texts and a raw signature.
func jwtToken(header, payload, sig string) string {
	e := base64.RawURLEncoding
	return e.EncodeToString([]byte(header)) + "." + e.EncodeToString([]byte(payload)) + "." + sig
}

func jwtDecode(t *testing.T, token string, now time.Time) svc.JWTDecodeResponse {
	t.Helper()
	resp, err := svc.JWTDecode(context.Background(), svc.JWTDecodeRequest{Token: token, Now: now})
	if err != nil {
		t.Fatalf("JWTDecode: %v", err)
	}
	return resp
}

func TestJWTDecodeJWTIOExample(t *testing.T) {
	resp := jwtDecode(t, jwtIO, time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC))
	want := `{"header":{"alg":"HS256","typ":"JWT"},"payload":{"sub":"1234567890","name":"John Doe","iat":1516239022},` +
		`"verified":false,"alg":"HS256","typ":"JWT","signaturePresent":true,"signatureBytes":32,` +
		`"timeClaims":{"iat":"2018-01-18T01:30:22Z"}}`
	if got := utilJSON(t, resp); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

func TestJWTDecodeTrimsWhiteSpaceAndBearer(t *testing.T) {
	for _, tok := range []string{" " + jwtIO + "\r\n", "Bearer " + jwtIO, "bearer\t " + jwtIO, "\tBEARER " + jwtIO + " "} {
		if r := jwtDecode(t, tok, time.Time{}); r.Alg != "HS256" {
			t.Errorf("%q: %+v", tok, r)
		}
	}
}

func TestJWTDecodeTimeClaims(t *testing.T) {
	tok := jwtToken(`{"alg":"ES256","kid":"k1"}`, `{"exp":1700000000,"nbf":1699990000.25,"iat":1699990000}`, "c2ln")
	exp := time.Unix(1700000000, 0)
	for _, c := range []struct {
		now            time.Time
		expired, early bool
	}{
		{exp.Add(-time.Second), false, false},
		{exp, true, false}, // RFC 7519: valid only before exp
		{exp.Add(time.Hour), true, false},
		{time.Unix(1699990000, 0), false, true}, // before nbf (fraction .25)
		{time.Unix(1699990000, 250000000), false, false},
	} {
		r := jwtDecode(t, tok, c.now)
		if r.Expired == nil || *r.Expired != c.expired || r.NotYetValid == nil || *r.NotYetValid != c.early {
			t.Errorf("now %v: expired %v notYetValid %v", c.now, r.Expired, r.NotYetValid)
		}
		if r.CheckedAt != c.now.UTC().Format(time.RFC3339Nano) {
			t.Errorf("checkedAt %q", r.CheckedAt)
		}
	}
	r := jwtDecode(t, tok, exp)
	want := `{"header":{"alg":"ES256","kid":"k1"},"payload":{"exp":1700000000,"nbf":1699990000.25,"iat":1699990000},` +
		`"verified":false,"alg":"ES256","kid":"k1","signaturePresent":true,"signatureBytes":3,` +
		`"timeClaims":{"exp":"2023-11-14T22:13:20Z","iat":"2023-11-14T19:26:40Z","nbf":"2023-11-14T19:26:40.25Z"},` +
		`"expired":true,"notYetValid":false,"checkedAt":"2023-11-14T22:13:20Z"}`
	if got := utilJSON(t, r); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

func TestJWTDecodeKeepsNumbersAndOrder(t *testing.T) {
	payload := `{"z":1,"big":123456789012345678901234567890,"f":1.000000000000000000001,"e":1E+400,"a":[{"b":null}],"s":"\u00e9"}`
	r := jwtDecode(t, jwtToken(`{"typ":"JWT","alg":"HS256"}`, " "+payload+"\n", "AA"), time.Time{})
	if string(r.Payload) != payload {
		t.Errorf("payload %s, want %s", r.Payload, payload)
	}
	if string(r.Header) != `{"typ":"JWT","alg":"HS256"}` {
		t.Errorf("header %s", r.Header)
	}
}

func TestJWTDecodeUnsecuredAndWarnings(t *testing.T) {
	r := jwtDecode(t, jwtToken(`{"alg":"none"}`, `{"exp":"tomorrow","iat":1e30}`, ""), time.Time{})
	if r.SignaturePresent || r.SignatureBytes != 0 || r.Verified || r.Expired != nil || r.TimeClaims != nil {
		t.Errorf("%+v", r)
	}
	want := []string{`alg is "none": the token is unsecured`,
		"payload.exp is not a NumericDate (a JSON number of seconds since 1970)",
		"payload.iat is outside the years 0001–9999 and cannot be shown as a date"}
	if strings.Join(r.Warnings, "|") != strings.Join(want, "|") {
		t.Errorf("warnings %q", r.Warnings)
	}
	r = jwtDecode(t, jwtToken(`{}`, `{}`, ""), time.Time{})
	if len(r.Warnings) != 1 || r.Warnings[0] != "header has no alg member" {
		t.Errorf("warnings %q", r.Warnings)
	}
}

func TestJWTDecodePadding(t *testing.T) {
	h := base64.URLEncoding.EncodeToString([]byte(`{"alg":"none"}`)) // one padding character
	p := base64.URLEncoding.EncodeToString([]byte(`{"a":1}`))        // two
	if !strings.HasSuffix(h, "=") || !strings.HasSuffix(p, "==") {
		t.Fatalf("test data not padded: %s %s", h, p)
	}
	r := jwtDecode(t, h+"."+p+".", time.Time{})
	if r.Alg != "none" || string(r.Payload) != `{"a":1}` {
		t.Errorf("%+v", r)
	}
}

func TestJWTDecodeErrors(t *testing.T) {
	secret := "c2VjcmV0LXZhbHVl" // must never appear in messages
	good := base64.RawURLEncoding.EncodeToString([]byte(`{"alg":"HS256"}`))
	for _, c := range []struct {
		name, token, rule, msg string
	}{
		{"empty", "", "required", "token: is required"},
		{"blank", "  \n", "required", "token: is required"},
		{"one part", secret, "jwt_parts", "token: must have 3 dot-separated parts (header.payload.signature), found 1"},
		{"two parts", good + "." + secret, "jwt_parts", "found 2"},
		{"four parts", good + "." + secret + "..", "jwt_parts", "found 4"},
		{"jwe", good + "." + secret + ".iv.ct.tag", "jwe_unsupported", "token: encrypted tokens (JWE) are not supported"},
		{"standard alphabet", good + "." + secret + "+/.", "jwt_base64", "token: payload: character at offset 16 belongs to the standard base64 alphabet"},
		{"bad char header", "ab*c." + secret + ".", "jwt_base64", "token: header: character at offset 2 is not base64url"},
		{"impossible length", "abcde." + secret + ".", "jwt_base64", "token: header: length 5 is not a possible base64url length"},
		{"padding inside", "ab=c." + secret + ".", "jwt_base64", "token: header: padding '=' at offset 2 is not at the end"},
		{"too much padding", good + "===." + good + ".", "jwt_base64", "token: header: has 3 padding characters where 0 are expected"},
		{"not json", good + "." + secret + ".", "jwt_json", "token: payload: is not valid JSON"},
		{"array payload", good + "." + base64.RawURLEncoding.EncodeToString([]byte(`[1]`)) + ".", "jwt_json", "token: payload: must be a JSON object, not an array"},
		{"string header", base64.RawURLEncoding.EncodeToString([]byte(`"x"`)) + "." + good + ".", "jwt_json", "token: header: must be a JSON object, not a string"},
		{"duplicate", good + "." + base64.RawURLEncoding.EncodeToString([]byte(`{"exp":1,"exp":2}`)) + ".", "jwt_json", `token: payload: member "exp" appears more than once`},
		{"not utf8", good + "." + base64.RawURLEncoding.EncodeToString([]byte("{\"a\":\"\xff\"}")) + ".", "jwt_json", "token: payload: decodes to bytes that are not UTF-8 text"},
		{"bad signature", good + "." + good + ".ab$", "jwt_base64", "token: signature: character at offset 2 is not base64url"},
	} {
		_, err := svc.JWTDecode(context.Background(), svc.JWTDecodeRequest{Token: c.token})
		f := utilWantField(t, err, svc.KindInvalid, "token", c.rule)
		if !strings.Contains(f.Message, c.msg) {
			t.Errorf("%s: message %q does not contain %q", c.name, f.Message, c.msg)
		}
		if strings.Contains(err.Error(), secret) {
			t.Errorf("%s: the error echoes the token: %v", c.name, err)
		}
	}
	// both parts are reported at once
	_, err := svc.JWTDecode(context.Background(), svc.JWTDecodeRequest{Token: "a*.b*."})
	var e *svc.Error
	if !errors.As(err, &e) || len(e.Fields) != 2 {
		t.Errorf("want header and payload errors, got %v", err)
	}
}

func TestJWTDecodeTooLarge(t *testing.T) {
	_, err := svc.JWTDecode(context.Background(), svc.JWTDecodeRequest{Token: strings.Repeat("a", 64<<10+1)})
	utilWantField(t, err, svc.KindTooLarge, "token", "max_bytes")
	// exactly 64 KiB is decoded (and fails on its structure, not its size)
	_, err = svc.JWTDecode(context.Background(), svc.JWTDecodeRequest{Token: strings.Repeat("a", 64<<10)})
	utilWantField(t, err, svc.KindInvalid, "token", "jwt_parts")
}

func TestJWTDecodeCanceled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := svc.JWTDecode(ctx, svc.JWTDecodeRequest{Token: jwtIO}); svc.KindOf(err) != svc.KindTimeout {
		t.Fatalf("want timeout, got %v", err)
	}
}

func TestJWTDecodeRequestJSON(t *testing.T) {
	var req svc.JWTDecodeRequest
	if err := json.Unmarshal([]byte(`{"token":"`+jwtIO+`","Now":"2020-01-01T00:00:00Z"}`), &req); err != nil {
		t.Fatal(err)
	}
	if req.Token != jwtIO || !req.Now.IsZero() {
		t.Errorf("Now must not be read from JSON: %+v", req)
	}
}

// jwtParts returns the three parts of a generated token, trimmed like
// JWTDecode trims it.
func jwtParts(tok string) []string {
	tok = strings.TrimSpace(tok)
	tok = strings.TrimPrefix(tok, "Bearer ")
	return strings.Split(tok, ".")
}

func TestJWTDecodeProperties(t *testing.T) {
	params := gopter.DefaultTestParameters()
	params.MinSuccessfulTests = 300
	properties := gopter.NewProperties(params)
	properties.Property("re-encoding header and payload gives the token's parts back", prop.ForAll(
		func(req svc.JWTDecodeRequest) bool {
			r, err := svc.JWTDecode(context.Background(), req)
			if err != nil || r.Verified {
				return false
			}
			parts := jwtParts(req.Token)
			e := base64.RawURLEncoding
			return e.EncodeToString(r.Header) == strings.TrimRight(parts[0], "=") &&
				e.EncodeToString(r.Payload) == strings.TrimRight(parts[1], "=") &&
				r.SignaturePresent == (parts[2] != "")
		},
		svctest.JWTDecodeRequest(),
	))
	properties.Property("expired and notYetValid follow exp and nbf", prop.ForAll(
		func(req svc.JWTDecodeRequest) bool {
			r, err := svc.JWTDecode(context.Background(), req)
			if err != nil {
				return false
			}
			var claims struct {
				Exp *int64 `json:"exp"`
				Nbf *int64 `json:"nbf"`
			}
			if json.Unmarshal(r.Payload, &claims) != nil {
				return false
			}
			now := req.Now.Unix()
			okExp := (claims.Exp == nil) == (r.Expired == nil) && (claims.Exp == nil || *r.Expired == (now >= *claims.Exp))
			okNbf := (claims.Nbf == nil) == (r.NotYetValid == nil) && (claims.Nbf == nil || *r.NotYetValid == (now < *claims.Nbf))
			return okExp && okNbf
		},
		svctest.JWTDecodeRequest(),
	))
	properties.Property("time claims are the payload's NumericDates in RFC 3339", prop.ForAll(
		func(req svc.JWTDecodeRequest) bool {
			r, _ := svc.JWTDecode(context.Background(), req)
			var claims map[string]any
			if json.Unmarshal(r.Payload, &claims) != nil {
				return false
			}
			for _, name := range []string{"exp", "nbf", "iat"} {
				v, ok := claims[name].(float64)
				s, has := r.TimeClaims[name]
				if ok != has {
					return false
				}
				if ok && s != time.Unix(int64(v), 0).UTC().Format(time.RFC3339) {
					return false
				}
			}
			return true
		},
		svctest.JWTDecodeRequest(),
	))
	properties.TestingRun(t)
}

package svc_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/leanovate/gopter"
	"github.com/leanovate/gopter/prop"

	"github.com/seed1284c1d2/svc"
	"github.com/seed1284c1d2/svc/svctest"
)

// utilWantField asserts that err is an *svc.Error of kind with a field
// error field/rule whose message names the field, and returns it.
func utilWantField(t testing.TB, err error, kind svc.ErrorKind, field, rule string) svc.FieldError {
	t.Helper()
	var e *svc.Error
	if !errors.As(err, &e) {
		t.Fatalf("want *svc.Error %s/%s, got %v", field, rule, err)
	}
	if e.Kind != kind {
		t.Fatalf("want kind %s, got %s (%v)", kind, e.Kind, err)
	}
	for _, f := range e.Fields {
		if f.Field == field && f.Rule == rule {
			if !strings.HasPrefix(f.Message, field) {
				t.Errorf("message %q does not name field %s", f.Message, field)
			}
			return f
		}
	}
	t.Fatalf("want field error %s/%s, got %+v", field, rule, e.Fields)
	return svc.FieldError{}
}

func utilJSON(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("marshal %T: %v", v, err)
	}
	return string(b)
}

func evmCheck(t *testing.T, addr string) svc.EVMAddressSyntaxResponse {
	t.Helper()
	resp, err := svc.EVMAddressSyntax(context.Background(), svc.EVMAddressSyntaxRequest{Address: addr})
	if err != nil {
		t.Fatalf("%q: %v", addr, err)
	}
	return resp
}

// TestEVMAddressSyntaxEIP55Vectors checks the examples published with
// EIP-55: the mixed-case ones are valid checksums, and the all-caps and
// all-lower ones are their own checksummed forms (they carry no checksum
// information, hence "none").
func TestEVMAddressSyntaxEIP55Vectors(t *testing.T) {
	mixed := []string{
		"0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed",
		"0xfB6916095ca1df60bB79Ce92cE3Ea74c37c5d359",
		"0xdbF03B407c01E7cD3CBea99509d93f8DDDC8C6FB",
		"0xD1220A0cf47c7B9Be7A2E6BA89F429762e7b9aDb",
	}
	for _, a := range mixed {
		r := evmCheck(t, a)
		if !r.Valid || r.Checksum != svc.EVMChecksumValid || r.Checksummed != a || r.IsZeroAddress {
			t.Errorf("%s: %+v", a, r)
		}
		// any other case of the same address is either none or invalid
		lower := "0x" + strings.ToLower(a[2:])
		if r := evmCheck(t, lower); r.Checksum != svc.EVMChecksumNone || r.Checksummed != a {
			t.Errorf("%s: %+v", lower, r)
		}
	}
	for _, a := range []string{
		"0x52908400098527886E0F7030069857D2E4169EE7",
		"0x8617E340B3D01FA5F11F306F4090FD50E238070D",
		"0xde709f2102306220921060314715629080e2fb77",
		"0x27b1fdb04752bbc536007a920d24acb045561c26",
	} {
		r := evmCheck(t, a)
		if !r.Valid || r.Checksum != svc.EVMChecksumNone || r.Checksummed != a {
			t.Errorf("%s: %+v", a, r)
		}
	}
}

func TestEVMAddressSyntaxInvalidChecksum(t *testing.T) {
	// one letter of a checksummed address in the wrong case
	a := "0x5AAeb6053F3E94C9b9A09f33669435E7Ef1BeAed"
	r := evmCheck(t, a)
	want := `{"valid":true,"checksum":"invalid","checksummed":"0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed","isZeroAddress":false}`
	if got := utilJSON(t, r); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

func TestEVMAddressSyntaxZeroAddress(t *testing.T) {
	r := evmCheck(t, "0x0000000000000000000000000000000000000000")
	if !r.Valid || !r.IsZeroAddress || r.Checksum != svc.EVMChecksumNone {
		t.Errorf("%+v", r)
	}
}

func TestEVMAddressSyntaxInvalidSyntax(t *testing.T) {
	valid := "0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed"
	for _, c := range []struct{ in, code, reason string }{
		{"5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed", "prefix", `must start with "0x"`},
		{"0X5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed", "prefix", `must start with a lower-case "0x", not "0X"`},
		{" " + valid, "prefix", `must start with "0x"`},
		{valid + " ", "length", `must be 42 characters ("0x" and 40 hex digits), not 43`},
		{"0x123", "length", `must be 42 characters ("0x" and 40 hex digits), not 5`},
		{"0x", "length", `must be 42 characters ("0x" and 40 hex digits), not 2`},
		{"0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAeg", "hex", `character 'g' at index 41 is not a hex digit`},
		{"0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAeé", "hex", `character 'é' at index 41 is not a hex digit`},
		{"0xx5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAe", "hex", `character 'x' at index 2 is not a hex digit`},
	} {
		r, err := svc.EVMAddressSyntax(context.Background(), svc.EVMAddressSyntaxRequest{Address: c.in})
		if err != nil {
			t.Errorf("%q: invalid syntax must not be an error: %v", c.in, err)
			continue
		}
		if r.Valid || r.ReasonCode != c.code || r.Reason != c.reason || r.Checksum != "" || r.Checksummed != "" {
			t.Errorf("%q: got %+v, want code %s reason %q", c.in, r, c.code, c.reason)
		}
	}
	r := evmCheck(t, "0x123")
	if got, want := utilJSON(t, r), `{"valid":false,"reason":"must be 42 characters (\"0x\" and 40 hex digits), not 5","reasonCode":"length","isZeroAddress":false}`; got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

// The empty string is a candidate that is not an address: an answer, not
// an error.
func TestEVMAddressSyntaxEmpty(t *testing.T) {
	r, err := svc.EVMAddressSyntax(context.Background(), svc.EVMAddressSyntaxRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := utilJSON(t, r), `{"valid":false,"reason":"is empty: an address is \"0x\" and 40 hex digits","reasonCode":"empty","isZeroAddress":false}`; got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

func TestEVMAddressSyntaxCanceled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := svc.EVMAddressSyntax(ctx, svc.EVMAddressSyntaxRequest{Address: "0x0000000000000000000000000000000000000000"})
	if svc.KindOf(err) != svc.KindTimeout {
		t.Fatalf("want timeout, got %v", err)
	}
}

// TestEVMAddressSyntaxDecodesSpecJSON decodes the request as the
// specification names its field.
func TestEVMAddressSyntaxDecodesSpecJSON(t *testing.T) {
	var req svc.EVMAddressSyntaxRequest
	if err := json.Unmarshal([]byte(`{"address":"0xdbF03B407c01E7cD3CBea99509d93f8DDDC8C6FB"}`), &req); err != nil {
		t.Fatal(err)
	}
	if r := evmCheck(t, req.Address); r.Checksum != svc.EVMChecksumValid {
		t.Errorf("%+v", r)
	}
}

func TestEVMAddressSyntaxProperties(t *testing.T) {
	params := gopter.DefaultTestParameters()
	params.MinSuccessfulTests = 300
	properties := gopter.NewProperties(params)
	properties.Property("the checksummed form re-validates as its own checksum", prop.ForAll(
		func(req svc.EVMAddressSyntaxRequest) bool {
			r, err := svc.EVMAddressSyntax(context.Background(), req)
			if err != nil || !r.Valid {
				return false
			}
			again, err := svc.EVMAddressSyntax(context.Background(), svc.EVMAddressSyntaxRequest{Address: r.Checksummed})
			if err != nil || !again.Valid || again.Checksummed != r.Checksummed {
				return false
			}
			h := r.Checksummed[2:]
			singleCase := h == strings.ToLower(h) || h == strings.ToUpper(h)
			return (singleCase && again.Checksum == svc.EVMChecksumNone) || (!singleCase && again.Checksum == svc.EVMChecksumValid)
		},
		svctest.EVMAddressSyntaxRequest(),
	))
	properties.Property("lower-casing keeps the address valid, without checksum", prop.ForAll(
		func(req svc.EVMAddressSyntaxRequest) bool {
			r, _ := svc.EVMAddressSyntax(context.Background(), req)
			low, err := svc.EVMAddressSyntax(context.Background(), svc.EVMAddressSyntaxRequest{Address: strings.ToLower(req.Address)})
			return err == nil && low.Valid && low.Checksum == svc.EVMChecksumNone && low.Checksummed == r.Checksummed &&
				low.IsZeroAddress == r.IsZeroAddress
		},
		svctest.EVMAddressSyntaxRequest(),
	))
	properties.Property("checksum is valid exactly when the input equals its checksummed form and has mixed case", prop.ForAll(
		func(req svc.EVMAddressSyntaxRequest) bool {
			r, _ := svc.EVMAddressSyntax(context.Background(), req)
			h := req.Address[2:]
			singleCase := h == strings.ToLower(h) || h == strings.ToUpper(h)
			switch r.Checksum {
			case svc.EVMChecksumNone:
				return singleCase
			case svc.EVMChecksumValid:
				return !singleCase && req.Address == r.Checksummed
			default:
				return !singleCase && req.Address != r.Checksummed
			}
		},
		svctest.EVMAddressSyntaxRequest(),
	))
	properties.TestingRun(t)
}

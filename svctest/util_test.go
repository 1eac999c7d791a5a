package svctest_test

import (
	"context"
	"strings"
	"testing"

	"github.com/leanovate/gopter"

	"github.com/seed1284c1d2/svc"
	"github.com/seed1284c1d2/svc/svctest"
)

// utilSample draws n values from gen with a fixed seed.
func utilSample(t *testing.T, gen gopter.Gen, n int) []any {
	t.Helper()
	params := gopter.DefaultGenParameters()
	params.Rng.Seed(7)
	out := make([]any, 0, n)
	for len(out) < n {
		v, ok := gen(params).Retrieve()
		if !ok {
			t.Fatal("generator gave no value")
		}
		out = append(out, v)
	}
	return out
}

func TestJWTDecodeRequestGeneratesValidTokens(t *testing.T) {
	var none, padded, bearer, withExp int
	for _, v := range utilSample(t, svctest.JWTDecodeRequest(), 300) {
		req := v.(svc.JWTDecodeRequest)
		resp, err := svc.JWTDecode(context.Background(), req)
		if err != nil {
			t.Fatalf("generated token rejected: %v", err)
		}
		if req.Now.IsZero() {
			t.Fatal("Now is not set")
		}
		if resp.Alg == "none" {
			none++
			if resp.SignaturePresent {
				t.Errorf("alg none with a signature")
			}
		}
		if strings.Contains(req.Token, "=") {
			padded++
		}
		if strings.HasPrefix(req.Token, "Bearer ") {
			bearer++
		}
		if resp.Expired != nil {
			withExp++
		}
	}
	if none == 0 || padded == 0 || bearer == 0 || withExp == 0 {
		t.Errorf("poor coverage: none %d, padded %d, bearer %d, exp %d", none, padded, bearer, withExp)
	}
}

func TestEVMAddressSyntaxRequestGeneratesValidAddresses(t *testing.T) {
	seen := map[string]int{}
	for _, v := range utilSample(t, svctest.EVMAddressSyntaxRequest(), 400) {
		resp, err := svc.EVMAddressSyntax(context.Background(), v.(svc.EVMAddressSyntaxRequest))
		if err != nil || !resp.Valid {
			t.Fatalf("generated address %q: %+v, %v", v.(svc.EVMAddressSyntaxRequest).Address, resp, err)
		}
		seen[resp.Checksum]++
		if resp.IsZeroAddress {
			seen["zero"]++
		}
	}
	for _, k := range []string{svc.EVMChecksumValid, svc.EVMChecksumInvalid, svc.EVMChecksumNone, "zero"} {
		if seen[k] == 0 {
			t.Errorf("no generated address with %s; got %v", k, seen)
		}
	}
}

func TestRegexTestRequestGeneratesValidRequests(t *testing.T) {
	matched := 0
	for _, v := range utilSample(t, svctest.RegexTestRequest(), 400) {
		req := v.(svc.RegexTestRequest)
		resp, err := svc.RegexTest(context.Background(), req)
		if err != nil {
			t.Fatalf("generated request /%s/%s on %q: %v", req.Pattern, req.Flags, req.Text, err)
		}
		if resp.Matched {
			matched++
		}
	}
	if matched < 40 || matched > 390 {
		t.Errorf("%d of 400 generated requests match; the generator should give both outcomes", matched)
	}
}

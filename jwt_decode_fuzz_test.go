package svc_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/seed1284c1d2/svc"
)

// FuzzJWTDecode checks that JWTDecode never panics, fails only with
// invalid-input or too-large errors on field "token" that do not echo the
// token, and returns JSON objects and verified false when it succeeds.
// Seeds are in testdata/fuzz/FuzzJWTDecode.
func FuzzJWTDecode(f *testing.F) {
	f.Add(jwtIO)
	f.Add("eyJhbGciOiJub25lIn0.eyJleHAiOjE3MDAwMDAwMDAuNX0.")
	f.Add("Bearer a.b.c")
	f.Add("a.b.c.d.e")
	now := time.Date(2025, 6, 1, 0, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, token string) {
		resp, err := svc.JWTDecode(context.Background(), svc.JWTDecodeRequest{Token: token, Now: now})
		if err != nil {
			var e *svc.Error
			if !errors.As(err, &e) || (e.Kind != svc.KindInvalid && e.Kind != svc.KindTooLarge) {
				t.Fatalf("unexpected error %v", err)
			}
			for _, fe := range e.Fields {
				if fe.Field != "token" {
					t.Fatalf("error on field %q: %v", fe.Field, err)
				}
			}
			if tt := strings.TrimSpace(token); len(tt) >= 24 && strings.Contains(err.Error(), tt) {
				t.Fatalf("the error echoes the token: %v", err)
			}
			return
		}
		if resp.Verified {
			t.Fatal("verified must be false")
		}
		for _, raw := range []json.RawMessage{resp.Header, resp.Payload} {
			var obj map[string]any
			dec := json.NewDecoder(strings.NewReader(string(raw)))
			dec.UseNumber() // numbers such as 1e400 are valid JSON but no float64
			if err := dec.Decode(&obj); err != nil || obj == nil {
				t.Fatalf("not a JSON object: %s (%v)", raw, err)
			}
		}
		if _, err := json.Marshal(resp); err != nil {
			t.Fatalf("response does not encode: %v", err)
		}
	})
}

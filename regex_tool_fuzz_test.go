package svc_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/seed1284c1d2/svc"
)

// regexFuzzFlags turns a byte into flags: bit 0 g, 1 i, 2 m, 3 s, 4 u,
// 5 y; d is always on so that group positions are checked too.
func regexFuzzFlags(b byte) string {
	flags := "d"
	for i, f := range "gimsuy" {
		if b&(1<<i) != 0 {
			flags += string(f)
		}
	}
	return flags
}

// FuzzRegexTest checks that RegexTest never panics nor fails internally
// (a translation regexp2 rejects would be a bug), that errors are invalid
// input on pattern or a timeout (20 ms per call), and that results hold
// the invariants of regexCheckInvariants. Seeds are in
// testdata/fuzz/FuzzRegexTest.
func FuzzRegexTest(f *testing.F) {
	f.Add(`(\d+)-(?<b>\d+)`, byte(1), "10-20 3-4")
	f.Add(`(?:|a)*(b?)\1`, byte(2), "aAbB")
	f.Add(`(?<=(a+))\B.`, byte(17), "aa😀b")
	f.Add(`^\p{Lu}|$`, byte(21), "Éa\nB")
	f.Add(`[\w-]{2,}?|(?!x)`, byte(33), "xy-z")
	f.Fuzz(func(t *testing.T, pattern string, flagBits byte, text string) {
		if len(pattern) > 512 || len(text) > 1024 {
			t.Skip("larger than the fuzz budget")
		}
		req := svc.RegexTestRequest{Pattern: pattern, Flags: regexFuzzFlags(flagBits), Text: text, Timeout: 20 * time.Millisecond}
		resp, err := svc.RegexTest(context.Background(), req)
		if err != nil {
			var e *svc.Error
			if !errors.As(err, &e) {
				t.Fatalf("not an *svc.Error: %v", err)
			}
			switch e.Kind {
			case svc.KindTimeout:
			case svc.KindInvalid:
				if len(e.Fields) != 1 || e.Fields[0].Field != "pattern" ||
					(e.Fields[0].Rule != "regex_syntax" && e.Fields[0].Rule != "regex_unsupported") {
					t.Fatalf("unexpected invalid-input error: %+v", e.Fields)
				}
			default:
				t.Fatalf("/%s/%s: unexpected %s error: %v (cause %v)", pattern, req.Flags, e.Kind, err, e.Cause)
			}
			return
		}
		if msg := regexCheckInvariants(text, resp); msg != "" {
			t.Fatalf("/%s/%s on %q: %s: %+v", pattern, req.Flags, text, msg, resp)
		}
	})
}

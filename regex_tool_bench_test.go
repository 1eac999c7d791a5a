package svc_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/seed1284c1d2/svc"
)

// BenchmarkRegexTimeoutOvershoot measures how late a catastrophic pattern
// ((a+)+$ on 5000 a's and a b) returns its timeout error, as the ratio of
// the elapsed time to the limit (target ≤ 1.5): x-limit is the mean and
// x-limit-max the worst of b.N calls. Between calls the benchmark waits
// (untimed) for the abandoned matcher of the previous call to stop, which
// regexp2 does at its next 100 ms clock tick, so that each call is
// measured on an otherwise idle machine; run with -benchtime 20x or so.
func BenchmarkRegexTimeoutOvershoot(b *testing.B) {
	for _, limit := range []time.Duration{100 * time.Millisecond, 20 * time.Millisecond} {
		b.Run(limit.String(), func(b *testing.B) {
			req := regexCatastrophic
			req.Timeout = limit
			var sum, worst float64
			for i := 0; i < b.N; i++ {
				b.StopTimer()
				time.Sleep(250 * time.Millisecond)
				b.StartTimer()
				start := time.Now()
				_, err := svc.RegexTest(context.Background(), req)
				ratio := float64(time.Since(start)) / float64(limit)
				if svc.KindOf(err) != svc.KindTimeout {
					b.Fatalf("want a timeout, got %v", err)
				}
				sum += ratio
				worst = max(worst, ratio)
			}
			b.ReportMetric(sum/float64(b.N), "x-limit")
			b.ReportMetric(worst, "x-limit-max")
		})
	}
}

// BenchmarkRegexTest measures ordinary searches: words of a 64 KiB text
// (capped at 10 000 matches), a case-insensitive unicode search, and a
// pattern compiled with many groups on a short text.
func BenchmarkRegexTest(b *testing.B) {
	text := strings.Repeat("The quick brown fox jumps over the lazy dog. Ça va? 😀 ", 1200)[:64<<10]
	for _, c := range []struct{ name, pattern, flags, text string }{
		{"words", `\w+`, "g", text},
		{"ci-unicode", `fox|ça|\p{Lu}\w*`, "giu", text},
		{"groups", `(?<y>\d{4})-(?<m>\d\d)-(?<d>\d\d)(?:T(\d\d):(\d\d))?`, "g", "on 2024-05-06T10:20 and 1999-12-31"},
	} {
		b.Run(c.name, func(b *testing.B) {
			req := svc.RegexTestRequest{Pattern: c.pattern, Flags: c.flags, Text: c.text, Timeout: 10 * time.Second}
			b.SetBytes(int64(len(c.text)))
			for i := 0; i < b.N; i++ {
				if _, err := svc.RegexTest(context.Background(), req); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

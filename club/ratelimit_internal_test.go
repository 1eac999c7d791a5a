package club

import (
	"fmt"
	"testing"
	"time"

	"github.com/seed1284c1d2/svc/internal/clientlimit"
)

// TestLimiterBoundedAndRefills: the limiter tracks at most max keys
// (forgetting the least recently seen), refills at Events per Per, never
// above Events, and reports the wait until the next token.
func TestLimiterBoundedAndRefills(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	l, err := newLimiter("test", Limit{Events: 3, Per: time.Minute}, Limit{}, 4, func() time.Time { return now })
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if ok, _ := l.allow("a"); !ok {
			t.Fatalf("token %d refused", i)
		}
	}
	ok, wait := l.allow("a")
	if ok || wait != 20*time.Second {
		t.Fatalf("fourth token: ok %v wait %v, want refused, 20s", ok, wait)
	}
	now = now.Add(20 * time.Second)
	if ok, _ := l.allow("a"); !ok {
		t.Fatal("no token after the refill interval")
	}
	now = now.Add(time.Hour) // refills to 3, not more
	var last clientlimit.Token
	for i := range 3 {
		tok, ok, _ := l.take("a")
		if !ok {
			t.Fatalf("token %d after an hour refused", i)
		}
		last = tok
	}
	if ok, _ := l.allow("a"); ok {
		t.Fatal("the bucket held more than Events tokens")
	}
	l.refund(last)
	if ok, _ := l.allow("a"); !ok {
		t.Fatal("a refunded token was not given back")
	}

	for i := range 100 {
		l.allow(fmt.Sprint("k", i))
		if n := l.len(); n > 4 {
			t.Fatalf("%d keys tracked, max 4", n)
		}
	}
	// "a" was forgotten: it starts again with a full bucket.
	if ok, _ := l.allow("a"); !ok {
		t.Fatal("a forgotten key is not fresh")
	}

	var nilLimiter *limiter
	if ok, _ := nilLimiter.allow("x"); !ok {
		t.Fatal("a disabled limiter refused")
	}
	if l, err := newLimiter("off", Limit{Events: -1}, Limit{1, time.Minute}, 4, time.Now); l != nil || err != nil {
		t.Fatalf("negative Events: %v, %v; want disabled", l, err)
	}
}

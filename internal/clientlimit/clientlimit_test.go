package clientlimit

import (
	"net/http/httptest"
	"net/netip"
	"testing"
	"time"
)

func TestLimiterBurstRefillRefund(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	l := New(2, 3, 10) // 2/s, burst 3
	for i := range 3 {
		if ok, _ := l.Allow("a", now); !ok {
			t.Fatalf("request %d refused within the burst", i)
		}
	}
	ok, wait := l.Allow("a", now)
	if ok || wait != 500*time.Millisecond {
		t.Fatalf("4th: ok %v wait %v, want refused for 500ms", ok, wait)
	}
	if ok, _ := l.Allow("b", now); !ok {
		t.Fatal("another key shares a bucket")
	}
	if ok, _ := l.Allow("a", now.Add(500*time.Millisecond)); !ok {
		t.Fatal("no token after the refill interval")
	}
	// A refunded token can be taken again.
	now2 := now.Add(time.Hour)
	for range 3 {
		l.Allow("c", now2)
	}
	tok, _, ok := l.Take("d", now2)
	if !ok {
		t.Fatal("take refused")
	}
	l.Allow("d", now2)
	l.Allow("d", now2)
	if ok, _ := l.Allow("d", now2); ok {
		t.Fatal("burst exceeded")
	}
	tok.Refund(now2)
	if ok, _ := l.Allow("d", now2); !ok {
		t.Fatal("refunded token not available")
	}
}

func TestLimiterBoundedKeys(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	l := New(1, 1, 3)
	for _, k := range []string{"a", "b", "c", "d", "e"} {
		l.Allow(k, now)
	}
	if l.Len() != 3 {
		t.Fatalf("tracked %d keys, want 3", l.Len())
	}
	// "a" was forgotten: it has a full bucket again.
	if ok, _ := l.Allow("a", now); !ok {
		t.Fatal("forgotten key should start full")
	}
}

func TestKey(t *testing.T) {
	trusted := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}
	cases := []struct {
		remote, xff string
		trusted     []netip.Prefix
		want        string
	}{
		{"192.0.2.7:1234", "", nil, "192.0.2.7"},
		{"[2001:db8:1:2:3:4:5:6]:443", "", nil, "2001:db8:1:2::/64"},
		{"10.1.2.3:80", "198.51.100.9", nil, "10.1.2.3"},                   // proxy not trusted: XFF ignored
		{"10.1.2.3:80", "198.51.100.9, 10.9.9.9", trusted, "198.51.100.9"}, // right-most untrusted hop
		{"192.0.2.7:1", "198.51.100.9", trusted, "192.0.2.7"},              // peer is no proxy: XFF ignored
		{"[::ffff:192.0.2.8]:9", "", nil, "192.0.2.8"},
	}
	for _, c := range cases {
		r := httptest.NewRequest("GET", "/", nil)
		r.RemoteAddr = c.remote
		if c.xff != "" {
			r.Header.Set("X-Forwarded-For", c.xff)
		}
		if got := Key(r, c.trusted); got != c.want {
			t.Errorf("Key(%s, xff %q) = %q, want %q", c.remote, c.xff, got, c.want)
		}
	}
}

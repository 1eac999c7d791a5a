package httpserver

import (
	"container/list"
	"math"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"time"
)

// Defaults of the free-route rate limit.
const (
	// DefaultRate is the sustained rate of free requests per client address,
	// per second.
	DefaultRate = 30
	// DefaultBurst is the number of free requests a client address may make
	// at once.
	DefaultBurst = 300
	// DefaultRateClients bounds the client addresses tracked at once; the
	// least recently seen address is forgotten first (it would have a full
	// bucket again by then unless it was busy very recently).
	DefaultRateClients = 16384
)

// rateLimiter is a token bucket per client address, kept in a bounded LRU
// map. Safe for concurrent use.
type rateLimiter struct {
	rate  float64 // tokens per second
	burst float64
	max   int
	now   func() time.Time

	mu sync.Mutex
	ll *list.List // front: most recently used; values *bucket
	m  map[string]*list.Element
}

type bucket struct {
	key    string
	tokens float64
	last   time.Time
}

func newRateLimiter(rate float64, burst, max int, now func() time.Time) *rateLimiter {
	return &rateLimiter{rate: rate, burst: float64(burst), max: max, now: now, ll: list.New(), m: map[string]*list.Element{}}
}

// allow takes a token for key. When none is left it returns false and how
// long until one is.
func (l *rateLimiter) allow(key string) (bool, time.Duration) {
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	var b *bucket
	if e, ok := l.m[key]; ok {
		l.ll.MoveToFront(e)
		b = e.Value.(*bucket)
		if el := now.Sub(b.last).Seconds(); el > 0 {
			b.tokens = math.Min(l.burst, b.tokens+el*l.rate)
		}
		b.last = now
	} else {
		if l.ll.Len() >= l.max {
			old := l.ll.Back()
			l.ll.Remove(old)
			delete(l.m, old.Value.(*bucket).key)
		}
		b = &bucket{key: key, tokens: l.burst, last: now}
		l.m[key] = l.ll.PushFront(b)
	}
	if b.tokens >= 1 {
		b.tokens--
		return true, 0
	}
	wait := time.Duration((1 - b.tokens) / l.rate * float64(time.Second))
	return false, wait
}

// len returns the number of tracked addresses.
func (l *rateLimiter) len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.ll.Len()
}

// clientKey returns the rate-limit key of a request: the client's IP
// address (an IPv6 address by its /64, which one subscriber usually holds
// whole). When the peer is one of the trusted proxies, the client is the
// right-most X-Forwarded-For address that is not itself a trusted proxy.
func clientKey(r *http.Request, trusted []netip.Prefix) string {
	addr := peerAddr(r.RemoteAddr)
	if addr.IsValid() && len(trusted) > 0 && inPrefixes(addr, trusted) {
		hops := r.Header.Values("X-Forwarded-For")
		for i := len(hops) - 1; i >= 0 && inPrefixes(addr, trusted); i-- {
			parts := strings.Split(hops[i], ",")
			for j := len(parts) - 1; j >= 0; j-- {
				a, err := netip.ParseAddr(strings.TrimSpace(parts[j]))
				if err != nil {
					break
				}
				addr = a.Unmap()
				if !inPrefixes(addr, trusted) {
					break
				}
			}
		}
	}
	if !addr.IsValid() {
		return r.RemoteAddr
	}
	if addr.Is6() {
		p, _ := addr.Prefix(64)
		return p.String()
	}
	return addr.String()
}

func peerAddr(remote string) netip.Addr {
	host, _, err := net.SplitHostPort(remote)
	if err != nil {
		host = remote
	}
	a, err := netip.ParseAddr(host)
	if err != nil {
		return netip.Addr{}
	}
	return a.Unmap()
}

func inPrefixes(a netip.Addr, ps []netip.Prefix) bool {
	for _, p := range ps {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

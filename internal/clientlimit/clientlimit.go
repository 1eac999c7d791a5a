// Package clientlimit holds what the server's free routes and the club's
// check-in share to throttle clients: the key of a client (its address,
// seen through trusted proxies) and a token bucket per key, built on
// golang.org/x/time/rate and kept in a bounded LRU map.
package clientlimit

import (
	"container/list"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// Limiter is a token bucket per key: burst tokens at most, refilled at
// perSecond. At most maxKeys keys are tracked; the least recently seen is
// forgotten first (it would have a full bucket again by then unless it was
// busy very recently). Safe for concurrent use.
type Limiter struct {
	limit rate.Limit
	burst int
	max   int

	mu sync.Mutex
	ll *list.List // front: most recently used; values *entry
	m  map[string]*list.Element
}

type entry struct {
	key string
	lim *rate.Limiter
}

// New returns a Limiter; maxKeys < 1 means 1.
func New(perSecond float64, burst, maxKeys int) *Limiter {
	return &Limiter{limit: rate.Limit(perSecond), burst: burst, max: max(maxKeys, 1), ll: list.New(), m: map[string]*list.Element{}}
}

// Allow takes a token for key at now. When none is left it returns false
// and how long until one is.
func (l *Limiter) Allow(key string, now time.Time) (bool, time.Duration) {
	_, wait, ok := l.Take(key, now)
	return ok, wait
}

// Token is a token taken by Take; Refund gives it back.
type Token struct{ r *rate.Reservation }

// Refund gives the token back at now (the request it was taken for did not
// happen). The zero Token does nothing.
func (t Token) Refund(now time.Time) {
	if t.r != nil {
		t.r.CancelAt(now)
	}
}

// Take is Allow returning the token, so that it can be refunded.
func (l *Limiter) Take(key string, now time.Time) (Token, time.Duration, bool) {
	return l.TakeN(key, now, 1)
}

// AllowN takes n tokens for key at now (a cost in bytes, say). When they
// are not all there it takes none and returns false and how long until
// they are; n over the burst is never allowed.
func (l *Limiter) AllowN(key string, now time.Time, n int) (bool, time.Duration) {
	_, wait, ok := l.TakeN(key, now, n)
	return ok, wait
}

// TakeN is AllowN returning the tokens, so that they can be refunded.
func (l *Limiter) TakeN(key string, now time.Time, n int) (Token, time.Duration, bool) {
	lim := l.get(key)
	r := lim.ReserveN(now, n)
	if !r.OK() { // over the burst: never
		return Token{}, time.Hour, false
	}
	if d := r.DelayFrom(now); d > 0 {
		r.CancelAt(now)
		return Token{}, d, false
	}
	return Token{r: r}, 0, true
}

// Len returns the number of tracked keys.
func (l *Limiter) Len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.ll.Len()
}

func (l *Limiter) get(key string) *rate.Limiter {
	l.mu.Lock()
	defer l.mu.Unlock()
	if e, ok := l.m[key]; ok {
		l.ll.MoveToFront(e)
		return e.Value.(*entry).lim
	}
	if l.ll.Len() >= l.max {
		old := l.ll.Back()
		l.ll.Remove(old)
		delete(l.m, old.Value.(*entry).key)
	}
	lim := rate.NewLimiter(l.limit, l.burst)
	l.m[key] = l.ll.PushFront(&entry{key: key, lim: lim})
	return lim
}

// Key returns the throttling key of a request: the client's IP address (an
// IPv6 address by its /64, which one subscriber usually holds whole). When
// the peer is one of the trusted proxies, the client is the right-most
// X-Forwarded-For address that is not itself a trusted proxy.
func Key(r *http.Request, trusted []netip.Prefix) string {
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

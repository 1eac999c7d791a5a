package club

import (
	"fmt"
	"time"

	"github.com/seed1284c1d2/svc/internal/clientlimit"
)

// limiter throttles check-ins per key: Events tokens at most, refilled at
// Events per Per, over a bounded LRU map of keys (internal/clientlimit, on
// golang.org/x/time/rate). A nil limiter allows everything.
type limiter struct {
	l        *clientlimit.Limiter
	capacity int           // Events
	per      time.Duration // Per
	now      func() time.Time
}

// newLimiter builds the limiter of l (def when l is zero); nil when l
// disables limiting.
func newLimiter(name string, l, def Limit, max int, now func() time.Time) (*limiter, error) {
	if l == (Limit{}) {
		l = def
	}
	if l.Events < 0 {
		return nil, nil
	}
	if l.Events == 0 || l.Per <= 0 {
		return nil, fmt.Errorf("club: Config.%s must have Events > 0 and Per > 0 (or Events < 0 to disable it), got %d per %v", name, l.Events, l.Per)
	}
	perSecond := float64(l.Events) / l.Per.Seconds()
	return &limiter{l: clientlimit.New(perSecond, l.Events, max), capacity: l.Events, per: l.Per, now: now}, nil
}

// take takes a token for key. When none is left it returns false and how
// long until one is.
func (l *limiter) take(key string) (clientlimit.Token, bool, time.Duration) {
	if l == nil {
		return clientlimit.Token{}, true, 0
	}
	tok, wait, ok := l.l.Take(key, l.now())
	return tok, ok, wait
}

// allow is take without the token.
func (l *limiter) allow(key string) (bool, time.Duration) {
	_, ok, wait := l.take(key)
	return ok, wait
}

// refund gives back a token taken by take (its request did not happen).
func (l *limiter) refund(tok clientlimit.Token) {
	if l != nil {
		tok.Refund(l.now())
	}
}

// len returns the number of tracked keys.
func (l *limiter) len() int { return l.l.Len() }

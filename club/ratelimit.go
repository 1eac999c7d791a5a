package club

import (
	"container/list"
	"fmt"
	"sync"
	"time"
)

// limiter is a token bucket per key (Events tokens at most, refilled at
// Events per Per), kept in a bounded LRU map: past max keys, the least
// recently seen key is forgotten. Safe for concurrent use.
type limiter struct {
	capacity float64
	per      time.Duration // time to refill capacity tokens
	max      int
	now      func() time.Time

	mu sync.Mutex
	ll *list.List // front: most recently used; values *bucket
	m  map[string]*list.Element
}

type bucket struct {
	key    string
	tokens float64
	last   time.Time
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
	return &limiter{capacity: float64(l.Events), per: l.Per, max: max, now: now, ll: list.New(), m: map[string]*list.Element{}}, nil
}

// allow takes a token for key. When none is left it returns false and how
// long until one is. A nil limiter allows everything.
func (l *limiter) allow(key string) (bool, time.Duration) {
	if l == nil {
		return true, 0
	}
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	var b *bucket
	if e, ok := l.m[key]; ok {
		l.ll.MoveToFront(e)
		b = e.Value.(*bucket)
		if el := now.Sub(b.last); el > 0 {
			b.tokens = min(l.capacity, b.tokens+l.capacity*float64(el)/float64(l.per))
			b.last = now
		}
	} else {
		if l.ll.Len() >= l.max {
			old := l.ll.Back()
			l.ll.Remove(old)
			delete(l.m, old.Value.(*bucket).key)
		}
		b = &bucket{key: key, tokens: l.capacity, last: now}
		l.m[key] = l.ll.PushFront(b)
	}
	if b.tokens >= 1 {
		b.tokens--
		return true, 0
	}
	wait := time.Duration((1 - b.tokens) / l.capacity * float64(l.per))
	return false, wait
}

// refund gives back a token taken by allow (the request it was taken for
// did not happen).
func (l *limiter) refund(key string) {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if e, ok := l.m[key]; ok {
		b := e.Value.(*bucket)
		b.tokens = min(l.capacity, b.tokens+1)
	}
}

// len returns the number of tracked keys.
func (l *limiter) len() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.ll.Len()
}

package engine

import (
	"container/list"
	"strings"
	"sync"
	"time"
)

// Defaults of the payer budget (Config.PayerBurst, Config.PayerRefill,
// Config.PayerConcurrency).
const (
	// DefaultPayerBurst is how many paid calls of one payer may run and
	// deliver nothing in a row before the payer must wait.
	DefaultPayerBurst = 5
	// DefaultPayerRefill is how long a payer waits for each further call
	// once its budget is spent.
	DefaultPayerRefill = 10 * time.Second
	// DefaultPayerConcurrency is how many paid calls of one payer may run
	// at once.
	DefaultPayerConcurrency = 32
	// payerBudgetKeys bounds the payers tracked at once; the least recently
	// seen is forgotten first.
	payerBudgetKeys = 65536
)

// payerBudget keeps, per payer, the calls running now (at most
// concurrency) and a token bucket of failures: a call that ran and
// delivered nothing takes a token, one comes back per refill, and the
// bucket may go into debt (the calls of a payer running at once all fail:
// the payer waits for each of them). A payer is admitted while it has a
// token and fewer than concurrency calls running. Safe for concurrent use.
type payerBudget struct {
	burst       float64
	refill      time.Duration
	concurrency int
	max         int

	mu sync.Mutex
	ll *list.List // front: most recently seen; values *payerBucket
	m  map[string]*list.Element
}

type payerBucket struct {
	payer   string
	tokens  float64   // failures left; negative: failures owed
	at      time.Time // when tokens was last brought up to date
	running int       // calls started and not finished
}

func newPayerBudget(burst int, refill time.Duration, concurrency, maxPayers int) *payerBudget {
	return &payerBudget{burst: float64(burst), refill: refill, concurrency: max(concurrency, 1), max: max(maxPayers, 1),
		ll: list.New(), m: map[string]*list.Element{}}
}

// admits reports whether payer may start a call at now; when not, how
// long until it may.
func (b *payerBudget) admits(payer string, now time.Time) (bool, time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.check(b.bucket(payer, now))
}

// start starts a call of payer at now when it is admitted; the caller must
// then call finish once the call ends.
func (b *payerBudget) start(payer string, now time.Time) (bool, time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	pb := b.bucket(payer, now)
	ok, wait := b.check(pb)
	if ok {
		pb.running++
	}
	return ok, wait
}

// finish ends a call started by start; charged takes one of the payer's
// tokens (the call ran and delivered nothing).
func (b *payerBudget) finish(payer string, now time.Time, charged bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	pb := b.bucket(payer, now)
	pb.running = max(pb.running-1, 0)
	if charged {
		pb.tokens--
	}
}

// check is admits for pb; b.mu is held.
func (b *payerBudget) check(pb *payerBucket) (bool, time.Duration) {
	switch {
	case pb.tokens < 1:
		return false, max(time.Duration((1-pb.tokens)*float64(b.refill)), time.Second).Round(time.Second)
	case pb.running >= b.concurrency:
		return false, time.Second
	}
	return true, 0
}

// bucket returns payer's bucket brought up to date at now; b.mu is held.
func (b *payerBudget) bucket(payer string, now time.Time) *payerBucket {
	payer = strings.ToLower(payer)
	var pb *payerBucket
	if e, ok := b.m[payer]; ok {
		b.ll.MoveToFront(e)
		pb = e.Value.(*payerBucket)
	} else {
		if b.ll.Len() >= b.max {
			// The least recently seen payer is forgotten, unless it has
			// calls running (their finish must find it): then the map
			// grows past max until they end.
			if old := b.ll.Back(); old.Value.(*payerBucket).running == 0 {
				b.ll.Remove(old)
				delete(b.m, old.Value.(*payerBucket).payer)
			}
		}
		pb = &payerBucket{payer: payer, tokens: b.burst, at: now}
		b.m[payer] = b.ll.PushFront(pb)
	}
	if d := now.Sub(pb.at); d > 0 {
		pb.tokens = min(b.burst, pb.tokens+float64(d)/float64(b.refill))
		pb.at = now
	}
	return pb
}

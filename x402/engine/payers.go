package engine

import (
	"container/list"
	"strings"
	"sync"
	"time"
)

// Defaults of the payer budget (Config.PayerBurst, Config.PayerRefill).
const (
	// DefaultPayerBurst is how many paid calls of one payer may run at
	// once, and how many may end unpaid in a row before the payer must
	// wait.
	DefaultPayerBurst = 10
	// DefaultPayerRefill is how long a payer waits for each call past the
	// burst once its budget is spent.
	DefaultPayerRefill = 10 * time.Second
	// payerBudgetKeys bounds the payers tracked at once; the least recently
	// seen is forgotten first.
	payerBudgetKeys = 65536
)

// payerBudget is a token bucket per payer whose tokens can be given back:
// a call takes one before it runs and gives it back when it ends paid or
// fails through no fault of the payer; a call that runs and ends unpaid
// keeps it, and the bucket refills one token per refill. Safe for
// concurrent use.
type payerBudget struct {
	burst  float64
	refill time.Duration
	max    int

	mu sync.Mutex
	ll *list.List // front: most recently seen; values *payerBucket
	m  map[string]*list.Element
}

type payerBucket struct {
	payer  string
	tokens float64
	at     time.Time // when tokens was last brought up to date
}

func newPayerBudget(burst int, refill time.Duration, maxPayers int) *payerBudget {
	return &payerBudget{burst: float64(burst), refill: refill, max: max(maxPayers, 1), ll: list.New(), m: map[string]*list.Element{}}
}

// take takes one of payer's tokens at now; when none is left it returns
// false and how long until one is.
func (b *payerBudget) take(payer string, now time.Time) (bool, time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	pb := b.bucket(payer, now)
	if pb.tokens >= 1 {
		pb.tokens--
		return true, 0
	}
	return false, b.wait(pb)
}

// peek reports whether payer has a token at now, without taking it; when
// not, how long until it has.
func (b *payerBudget) peek(payer string, now time.Time) (bool, time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	pb := b.bucket(payer, now)
	if pb.tokens >= 1 {
		return true, 0
	}
	return false, b.wait(pb)
}

// wait is how long until pb has a token; b.mu is held.
func (b *payerBudget) wait(pb *payerBucket) time.Duration {
	return max(time.Duration((1-pb.tokens)*float64(b.refill)), time.Second).Round(time.Second)
}

// give gives back a token taken by take.
func (b *payerBudget) give(payer string, now time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	pb := b.bucket(payer, now)
	pb.tokens = min(pb.tokens+1, b.burst)
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
			old := b.ll.Back()
			b.ll.Remove(old)
			delete(b.m, old.Value.(*payerBucket).payer)
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

package xau

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// gatedTerminal's Health counts calls, signals entry and blocks until gate
// is closed (or its context ends, unless ignoreCtx).
type gatedTerminal struct {
	Down
	calls     atomic.Int64
	entered   chan struct{}
	gate      chan struct{}
	ignoreCtx bool
	health    Health
	err       error
	panicWith any
}

func (g *gatedTerminal) Health(ctx context.Context) (Health, error) {
	g.calls.Add(1)
	if g.entered != nil {
		select {
		case g.entered <- struct{}{}:
		default:
		}
	}
	if g.panicWith != nil {
		panic(g.panicWith)
	}
	if g.gate != nil {
		if g.ignoreCtx {
			<-g.gate
		} else {
			select {
			case <-g.gate:
			case <-ctx.Done():
				return Health{}, ctx.Err()
			}
		}
	}
	return g.health, g.err
}

// waitSpy is a context that reports the first call to Done: HealthCache
// calls Done only when it starts waiting for a shared call in flight.
type waitSpy struct {
	context.Context
	once    sync.Once
	waiting chan<- struct{}
}

func (w *waitSpy) Done() <-chan struct{} {
	w.once.Do(func() { w.waiting <- struct{}{} })
	return w.Context.Done()
}

// fakeClock is a settable clock.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = t
}

func TestHealthCacheSingleFlight(t *testing.T) {
	term := &gatedTerminal{
		gate:    make(chan struct{}),
		entered: make(chan struct{}, 1),
		health:  Health{Connected: true, Source: SourceScripted},
	}
	clock := &fakeClock{t: simWed}
	c := NewHealthCache(term, 0, clock.Now)
	const n = 100
	waiting := make(chan struct{}, n)
	errs := make(chan error, n)
	for range n {
		go func() {
			errs <- c.Check(&waitSpy{Context: context.Background(), waiting: waiting})
		}()
	}
	// All 100 callers are waiting on the one call in flight before it ends.
	for range n {
		<-waiting
	}
	<-term.entered
	close(term.gate)
	for range n {
		if err := <-errs; err != nil {
			t.Fatalf("Check: %v", err)
		}
	}
	if got := term.calls.Load(); got != 1 {
		t.Fatalf("%d underlying Health calls, want 1", got)
	}
	// Within the TTL: still one call.
	for range 10 {
		if err := c.Check(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if got := term.calls.Load(); got != 1 {
		t.Fatalf("%d underlying Health calls after cached checks, want 1", got)
	}
}

func TestHealthCacheSeesOutageWithinTTL(t *testing.T) {
	ctx := context.Background()
	clock := &fakeClock{t: simWed}
	sw := NewSwitchable(NewScripted(clock.Now))
	ttl := 2 * time.Second
	c := NewHealthCache(sw, ttl, clock.Now)
	t0 := clock.Now()
	if err := c.Check(ctx); err != nil {
		t.Fatalf("up: %v", err)
	}
	sw.SetDown(true)
	clock.Set(t0.Add(ttl - time.Nanosecond))
	if err := c.Check(ctx); err != nil {
		t.Fatalf("cached up result expected just before the TTL, got %v", err)
	}
	clock.Set(t0.Add(ttl))
	err := c.Check(ctx)
	if !errors.Is(err, ErrUnavailable) {
		t.Fatalf("down not seen at the TTL: %v", err)
	}
	h, err := c.Status(ctx)
	if h.Connected || !errors.Is(err, ErrUnavailable) {
		t.Fatalf("Status = %+v, %v", h, err)
	}
	// A down result is cached too, and recovery is seen after the TTL.
	sw.SetDown(false)
	clock.Set(t0.Add(2*ttl - time.Nanosecond))
	if err := c.Check(ctx); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("cached down result expected, got %v", err)
	}
	clock.Set(t0.Add(2 * ttl))
	if err := c.Check(ctx); err != nil {
		t.Fatalf("recovery not seen: %v", err)
	}
	// A clock that jumps backwards does not extend the cache.
	sw.SetDown(true)
	clock.Set(t0)
	if err := c.Check(ctx); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("clock moved back: %v", err)
	}
}

func TestHealthCacheTimeoutAndFailures(t *testing.T) {
	ctx := context.Background()
	clock := &fakeClock{t: simWed}

	// A terminal that ignores its context still cannot hang the check.
	hung := &gatedTerminal{gate: make(chan struct{}), ignoreCtx: true}
	defer close(hung.gate)
	c := NewHealthCache(hung, time.Second, clock.Now)
	c.SetTimeout(20 * time.Millisecond)
	err := c.Check(ctx)
	if !errors.Is(err, ErrUnavailable) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("hung terminal: %v", err)
	}

	// Connected false without an error counts as down.
	c = NewHealthCache(&gatedTerminal{health: Health{Connected: false}}, time.Second, clock.Now)
	if err := c.Check(ctx); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("not connected: %v", err)
	}

	// A panic in Health is contained.
	c = NewHealthCache(&gatedTerminal{panicWith: "boom"}, time.Second, clock.Now)
	if err := c.Check(ctx); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("panicking terminal: %v", err)
	}

	// A caller that gives up stops waiting; the shared call goes on and
	// its result serves the next caller.
	slow := &gatedTerminal{gate: make(chan struct{}), entered: make(chan struct{}, 1), health: Health{Connected: true}}
	c = NewHealthCache(slow, time.Second, clock.Now)
	cctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- c.Check(cctx) }()
	<-slow.entered
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled caller: %v", err)
	}
	close(slow.gate)
	if err := c.Check(ctx); err != nil {
		t.Fatalf("after the shared call: %v", err)
	}
	if got := slow.calls.Load(); got != 1 {
		t.Fatalf("%d calls, want 1", got)
	}

	// An already cancelled context is refused at once.
	if err := c.Check(cctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled before the call: %v", err)
	}
}

// A custom Terminal's foreign error still reads as ErrUnavailable.
func TestHealthCacheWrapsForeignErrors(t *testing.T) {
	boom := errors.New("socket exploded")
	c := NewHealthCache(&gatedTerminal{err: boom}, time.Second, nil)
	err := c.Check(context.Background())
	if !errors.Is(err, ErrUnavailable) || !errors.Is(err, boom) {
		t.Fatalf("err = %v", err)
	}
}

func TestHealthCacheCheckSymbol(t *testing.T) {
	ctx := context.Background()
	clock := &fakeClock{t: simWed}
	sc := NewScripted(clock.Now)
	sc.SetQuote(Quote{Symbol: "XAUUSD", Bid: d("2400"), Ask: d("2400.2"), Time: simWed})
	ttl := 2 * time.Second
	c := NewHealthCache(sc, ttl, clock.Now)
	t0 := clock.Now()

	if err := c.CheckSymbol(ctx, "XAUUSD"); err != nil {
		t.Fatalf("served symbol: %v", err)
	}
	if err := c.CheckSymbol(ctx, "EURUSD"); !errors.Is(err, ErrUnknownSymbol) {
		t.Fatalf("unknown symbol: %v", err)
	}
	if err := c.CheckSymbol(ctx, "EUR/USD"); !errors.Is(err, ErrBadRequest) || errors.Is(err, ErrUnknownSymbol) {
		t.Fatalf("malformed symbol: %v", err)
	}
	// Both results are cached: no more quotes within the TTL, even once
	// the terminal serves the symbol.
	quotes := sc.Calls().Quote
	sc.SetQuote(Quote{Symbol: "EURUSD", Bid: d("1.1"), Ask: d("1.1001"), Time: simWed})
	clock.Set(t0.Add(ttl - time.Nanosecond))
	if err := c.CheckSymbol(ctx, "XAUUSD"); err != nil {
		t.Fatalf("cached known: %v", err)
	}
	if err := c.CheckSymbol(ctx, "EURUSD"); !errors.Is(err, ErrUnknownSymbol) {
		t.Fatalf("cached unknown: %v", err)
	}
	if got := sc.Calls().Quote; got != quotes {
		t.Fatalf("%d quotes within the TTL, want none", got-quotes)
	}
	clock.Set(t0.Add(ttl))
	if err := c.CheckSymbol(ctx, "EURUSD"); err != nil {
		t.Fatalf("newly served symbol after the TTL: %v", err)
	}
	// A terminal that cannot answer is unavailable, not an unknown symbol.
	sc.SetDown(true)
	clock.Set(t0.Add(3 * ttl))
	if err := c.CheckSymbol(ctx, "XAUUSD"); !errors.Is(err, ErrUnavailable) || errors.Is(err, ErrBadRequest) {
		t.Fatalf("down terminal: %v", err)
	}
	// A panic in Quote is contained.
	c = NewHealthCache(panicQuote{}, ttl, clock.Now)
	if err := c.CheckSymbol(ctx, "XAUUSD"); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("panicking terminal: %v", err)
	}
}

func TestHealthCacheCheckSymbolIsBounded(t *testing.T) {
	ctx := context.Background()
	clock := &fakeClock{t: simWed}
	sc := NewScripted(clock.Now)
	c := NewHealthCache(sc, time.Hour, clock.Now)
	for i := range 3 * maxCachedSymbols {
		clock.Set(simWed.Add(time.Duration(i) * time.Millisecond))
		if err := c.CheckSymbol(ctx, fmt.Sprintf("SYM%d", i)); !errors.Is(err, ErrUnknownSymbol) {
			t.Fatalf("SYM%d: %v", i, err)
		}
	}
	c.mu.Lock()
	n := len(c.symbols)
	_, newest := c.symbols[fmt.Sprintf("SYM%d", 3*maxCachedSymbols-1)]
	_, oldest := c.symbols["SYM0"]
	c.mu.Unlock()
	if n != maxCachedSymbols || !newest || oldest {
		t.Fatalf("%d symbols cached (newest kept %v, oldest kept %v); want %d, the newest", n, newest, oldest, maxCachedSymbols)
	}
}

// panicQuote is a terminal whose Quote panics.
type panicQuote struct{ Down }

func (panicQuote) Quote(context.Context, string) (Quote, error) { panic("boom") }

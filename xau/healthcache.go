package xau

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"
)

// Defaults of HealthCache.
const (
	// DefaultHealthTTL is how long a health result (up or down) is reused.
	DefaultHealthTTL = 2 * time.Second
	// DefaultHealthTimeout bounds one underlying Health call.
	DefaultHealthTimeout = 2 * time.Second
)

// HealthCache answers the pre-payment availability check ("can this
// terminal-backed request succeed?") without calling the terminal on every
// request. It is safe for concurrent use.
//
// The last result, up or down, is reused for the TTL. When it has expired,
// concurrent callers share a single underlying Health call (x/sync singleflight),
// which runs detached from any one caller's cancellation but bounded by the
// call timeout; a caller whose context ends stops waiting. A Health call
// that fails, times out, panics or reports Connected false counts as down,
// and Check then returns an error wrapping ErrUnavailable.
type HealthCache struct {
	t   Terminal
	ttl time.Duration
	now func() time.Time

	flight singleflight.Group // key healthKey: the underlying Health call

	mu      sync.Mutex
	timeout time.Duration
	have    bool
	at      time.Time
	health  Health
	err     error
	symbols map[string]symbolResult // CheckSymbol's results, at most maxCachedSymbols
}

// maxCachedSymbols bounds the symbols whose check CheckSymbol remembers:
// a terminal serves a handful, and a client sending ever new symbols must
// not grow the cache.
const maxCachedSymbols = 256

// symbolResult is one remembered symbol check.
type symbolResult struct {
	at  time.Time
	err error
}

// healthKey is the one key of HealthCache.flight.
const healthKey = "health"

// healthResult is what the shared Health call hands its waiters.
type healthResult struct {
	health Health
	err    error
}

// NewHealthCache returns a cache in front of t. ttl ≤ 0 means
// DefaultHealthTTL; now nil means time.Now (inject a clock in tests).
func NewHealthCache(t Terminal, ttl time.Duration, now func() time.Time) *HealthCache {
	if ttl <= 0 {
		ttl = DefaultHealthTTL
	}
	if now == nil {
		now = time.Now
	}
	return &HealthCache{t: t, ttl: ttl, now: now, timeout: DefaultHealthTimeout}
}

// SetTimeout changes the bound of one underlying Health call (d ≤ 0 means
// DefaultHealthTimeout). It applies to the next call.
func (c *HealthCache) SetTimeout(d time.Duration) {
	if d <= 0 {
		d = DefaultHealthTimeout
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.timeout = d
}

// Check returns nil when the terminal is up and an error wrapping
// ErrUnavailable when it is down, from a result at most TTL old.
func (c *HealthCache) Check(ctx context.Context) error {
	_, err := c.Status(ctx)
	return err
}

// Status returns the cached Health and its error (nil when up), refreshing
// it when older than the TTL. A /health endpoint can show the Health even
// when the error is set.
func (c *HealthCache) Status(ctx context.Context) (Health, error) {
	if err := ContextError(ctx, "health"); err != nil {
		return Health{}, err
	}
	c.mu.Lock()
	if c.have {
		age := c.now().Sub(c.at)
		if age >= 0 && age < c.ttl {
			h, err := c.health, c.err
			c.mu.Unlock()
			return h, err
		}
	}
	timeout := c.timeout
	c.mu.Unlock()
	// DoChan runs the call on its own goroutine: it outlives a waiter that
	// gives up, and its result is cached for the next ones.
	detached := context.WithoutCancel(ctx)
	ch := c.flight.DoChan(healthKey, func() (any, error) {
		return c.run(detached, timeout), nil
	})
	select {
	case r := <-ch:
		res := r.Val.(healthResult)
		return res.health, res.err
	case <-ctx.Done():
		return Health{}, ContextError(ctx, "health")
	}
}

// run performs the underlying Health call and caches its result.
func (c *HealthCache) run(ctx context.Context, timeout time.Duration) healthResult {
	h, err := c.call(ctx, timeout)
	switch {
	case err == nil && !h.Connected:
		err = Unavailable("health", "terminal disconnected", nil)
	case err != nil && !errors.Is(err, ErrUnavailable):
		// A foreign error from a custom Terminal still means "down".
		err = Unavailable("health", "terminal health check failed", err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.have, c.at, c.health, c.err = true, c.now(), h, err
	return healthResult{health: h, err: err}
}

// call runs Health with a timeout. The timeout holds even for a terminal
// that ignores its context (the call is then abandoned), and a panic in
// Health becomes ErrUnavailable.
func (c *HealthCache) call(ctx context.Context, timeout time.Duration) (Health, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	type result struct {
		h   Health
		err error
	}
	ch := make(chan result, 1)
	go func() {
		defer func() {
			if p := recover(); p != nil {
				ch <- result{err: Unavailable("health", "terminal health check failed", fmt.Errorf("panic: %v", p))}
			}
		}()
		h, err := c.t.Health(ctx)
		ch <- result{h, err}
	}()
	select {
	case r := <-ch:
		return r.h, r.err
	case <-ctx.Done():
		return Health{}, Unavailable("health", "terminal health check timed out", fmt.Errorf("after %s: %w", timeout, context.DeadlineExceeded))
	}
}

// CheckSymbol reports whether the terminal serves symbol, from a result at
// most TTL old: nil when it does; an error wrapping ErrUnknownSymbol when
// it does not, or ErrBadRequest for a malformed symbol or one the terminal
// rejects otherwise; an error wrapping ErrUnavailable when the terminal
// cannot tell now. It is the pre-payment symbol check: the terminal is
// asked for a quote of the symbol (the port lists no symbols), bounded by
// the call timeout, with concurrent checks of one symbol sharing the call
// as Status does. At most 256 symbols are remembered; the oldest results
// make way for new ones.
func (c *HealthCache) CheckSymbol(ctx context.Context, symbol string) error {
	if err := CheckSymbol(symbol); err != nil {
		return err
	}
	if err := ContextError(ctx, "symbol"); err != nil {
		return err
	}
	c.mu.Lock()
	if r, ok := c.symbols[symbol]; ok {
		if age := c.now().Sub(r.at); age >= 0 && age < c.ttl {
			c.mu.Unlock()
			return r.err
		}
	}
	timeout := c.timeout
	c.mu.Unlock()
	detached := context.WithoutCancel(ctx)
	// A symbol holds no ':', so the key cannot be healthKey.
	ch := c.flight.DoChan("symbol:"+symbol, func() (any, error) {
		return c.probeSymbol(detached, symbol, timeout), nil
	})
	select {
	case r := <-ch:
		if r.Val == nil {
			return nil
		}
		return r.Val.(error)
	case <-ctx.Done():
		return ContextError(ctx, "symbol")
	}
}

// probeSymbol asks the terminal for a quote of symbol and caches what it
// says about the symbol.
func (c *HealthCache) probeSymbol(ctx context.Context, symbol string, timeout time.Duration) error {
	err := c.quote(ctx, symbol, timeout)
	switch {
	case err == nil, errors.Is(err, ErrBadRequest), errors.Is(err, ErrUnavailable):
	default:
		// A foreign error from a custom Terminal means it cannot tell.
		err = Unavailable("symbol", "terminal quote failed", err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	if c.symbols == nil {
		c.symbols = map[string]symbolResult{}
	}
	if _, ok := c.symbols[symbol]; !ok && len(c.symbols) >= maxCachedSymbols {
		oldest, at := "", time.Time{}
		for k, r := range c.symbols {
			if oldest == "" || r.at.Before(at) {
				oldest, at = k, r.at
			}
		}
		delete(c.symbols, oldest)
	}
	c.symbols[symbol] = symbolResult{at: now, err: err}
	return err
}

// quote runs Quote with a timeout, as call runs Health: the timeout holds
// even for a terminal that ignores its context, and a panic becomes
// ErrUnavailable. Only the error matters.
func (c *HealthCache) quote(ctx context.Context, symbol string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	ch := make(chan error, 1)
	go func() {
		defer func() {
			if p := recover(); p != nil {
				ch <- Unavailable("symbol", "terminal quote failed", fmt.Errorf("panic: %v", p))
			}
		}()
		_, err := c.t.Quote(ctx, symbol)
		ch <- err
	}()
	select {
	case err := <-ch:
		return err
	case <-ctx.Done():
		return Unavailable("symbol", "terminal quote timed out", fmt.Errorf("after %s: %w", timeout, context.DeadlineExceeded))
	}
}

// Package bodybudget reads request bodies within one memory budget shared
// by every route of a server: the bytes of all the bodies held at once are
// bounded, one client address may hold at most a share of them, and a body
// must keep arriving at a minimum rate.
//
// Memory is taken as the bytes arrive, not as a Content-Length announces
// them: a client that declares a large body and sends it slowly holds only
// what it sent, and is cut once it falls below the minimum rate.
package bodybudget

import (
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"sync"
	"time"
)

// Defaults of Config.
const (
	// DefaultMemory bounds the request bodies held at once (16 MiB).
	DefaultMemory = 16 << 20
	// DefaultMinRate is the slowest a body may arrive after the grace
	// period, in bytes per second (16 KiB/s, a slow mobile link).
	DefaultMinRate = 16 << 10
	// DefaultGrace is how long a body may take before the minimum rate
	// applies.
	DefaultGrace = 5 * time.Second
	// DefaultWait is how long a body waits for memory before it is refused.
	DefaultWait = 2 * time.Second
	// firstChunk is the first buffer of a body of unknown length.
	firstChunk = 16 << 10
)

// Errors of Read (a body over its limit is an *http.MaxBytesError).
var (
	// ErrBusy: the shared budget stayed full for Config.Wait.
	ErrBusy = errors.New("bodybudget: the memory for request bodies is in use")
	// ErrClientBusy: the client's share of the budget stayed full for
	// Config.Wait.
	ErrClientBusy = errors.New("bodybudget: this client holds its share of the memory for request bodies")
	// ErrTooSlow: the body arrived below the minimum rate.
	ErrTooSlow = errors.New("bodybudget: the request body arrives too slowly")
	// ErrUnreadable: the body could not be read (the client went away).
	ErrUnreadable = errors.New("bodybudget: the request body could not be read")
)

// Config configures a Budget.
type Config struct {
	// Memory bounds the bytes of the bodies held at once; zero means
	// DefaultMemory.
	Memory int64
	// PerClient bounds the bytes one client holds at once; zero means a
	// quarter of Memory. It is raised to the largest body limit a read asks
	// for, so that one body always fits.
	PerClient int64
	// MinRate is the slowest a body may arrive, in bytes per second, once
	// Grace has passed (408 past it); zero means DefaultMinRate, negative
	// means no minimum.
	MinRate int64
	// Grace: zero means DefaultGrace.
	Grace time.Duration
	// Wait is how long a read waits for memory; zero means DefaultWait.
	Wait time.Duration
	// ReadTimeout, when positive, bounds a whole body read (the server's
	// read timeout, which the minimum-rate deadlines replace).
	ReadTimeout time.Duration
}

// Budget is the shared memory budget for request bodies. Safe for
// concurrent use.
type Budget struct {
	cfg Config

	mu    sync.Mutex
	used  int64
	held  map[string]int64 // per client key; only keys holding memory
	freed chan struct{}    // closed (and replaced) when memory is released
}

// New returns a Budget; negative sizes are errors.
func New(cfg Config) (*Budget, error) {
	if cfg.Memory < 0 || cfg.PerClient < 0 || cfg.Grace < 0 || cfg.Wait < 0 {
		return nil, errors.New("bodybudget: sizes and durations must not be negative")
	}
	if cfg.Memory == 0 {
		cfg.Memory = DefaultMemory
	}
	if cfg.PerClient == 0 {
		cfg.PerClient = cfg.Memory / 4
	}
	cfg.PerClient = min(cfg.PerClient, cfg.Memory)
	if cfg.MinRate == 0 {
		cfg.MinRate = DefaultMinRate
	}
	if cfg.Grace == 0 {
		cfg.Grace = DefaultGrace
	}
	if cfg.Wait == 0 {
		cfg.Wait = DefaultWait
	}
	return &Budget{cfg: cfg, held: map[string]int64{}, freed: make(chan struct{})}, nil
}

// Memory returns the bytes the budget holds at most.
func (b *Budget) Memory() int64 { return b.cfg.Memory }

// Used returns the bytes held now.
func (b *Budget) Used() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.used
}

// acquire takes n bytes for key, waiting until ctx ends for memory.
func (b *Budget) acquire(ctx context.Context, key string, n, share int64) error {
	for {
		b.mu.Lock()
		clientOK := b.held[key]+n <= share
		if clientOK && b.used+n <= b.cfg.Memory {
			b.used += n
			b.held[key] += n
			b.mu.Unlock()
			return nil
		}
		ch := b.freed
		b.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			if !clientOK {
				return ErrClientBusy
			}
			return ErrBusy
		}
	}
}

// release gives n bytes of key back.
func (b *Budget) release(key string, n int64) {
	if n <= 0 {
		return
	}
	b.mu.Lock()
	b.used -= n
	if b.held[key] -= n; b.held[key] <= 0 {
		delete(b.held, key)
	}
	close(b.freed)
	b.freed = make(chan struct{})
	b.mu.Unlock()
}

// Read reads r's whole body, at most limit bytes, for the client key: the
// buffer grows as bytes arrive and each growth, times weight (at least 1:
// the copies the handler's decoding will make of the body), is taken from
// the budget (the shared memory and the client's share, which is raised to
// weight times limit when it is less, waiting up to Config.Wait).
// A body under the minimum rate after the grace period is cut (ErrTooSlow:
// the connection is closed after the answer). The body over limit is an
// *http.MaxBytesError. release gives the memory back; call it once the
// body is no longer used (it is a no-op after an error).
func (b *Budget) Read(w http.ResponseWriter, r *http.Request, key string, limit, weight int64) (body []byte, release func(), err error) {
	noop := func() {}
	if r.Body == nil || r.Body == http.NoBody {
		return nil, noop, nil
	}
	defer r.Body.Close()
	if r.ContentLength > limit {
		return nil, noop, &http.MaxBytesError{Limit: limit}
	}
	weight = max(weight, 1)
	share := min(max(b.cfg.PerClient, weight*limit), b.cfg.Memory)
	// want is the most the buffer needs: the declared length, or the limit
	// (a byte read past it tells a body over it).
	want := limit
	if r.ContentLength >= 0 {
		want = r.ContentLength
	}
	start := time.Now()
	rc := http.NewResponseController(w)
	deadlines := b.cfg.MinRate > 0 || b.cfg.ReadTimeout > 0
	src := http.MaxBytesReader(w, r.Body, limit)
	var held int64
	var buf []byte
	fail := func(err error) ([]byte, func(), error) {
		b.release(key, held)
		// The rest of the body is not read: the connection closes after
		// the answer (an expired deadline keeps net/http from draining it).
		w.Header().Set("Connection", "close")
		_ = rc.SetReadDeadline(time.Now())
		return nil, noop, err
	}
	for {
		if len(buf) == cap(buf) && int64(cap(buf)) < want {
			grow := min(max(int64(cap(buf))*2, firstChunk), want) - int64(cap(buf))
			ctx, cancel := context.WithTimeout(r.Context(), b.cfg.Wait)
			err := b.acquire(ctx, key, weight*grow, share)
			cancel()
			if err != nil {
				return fail(err)
			}
			held += weight * grow
			nb := make([]byte, len(buf), int64(cap(buf))+grow)
			copy(nb, buf)
			buf = nb
		}
		if deadlines {
			if err := rc.SetReadDeadline(b.deadline(start, int64(len(buf)))); errors.Is(err, http.ErrNotSupported) {
				deadlines = false
			}
		}
		var n int
		var err error
		if len(buf) < cap(buf) {
			n, err = src.Read(buf[len(buf):cap(buf)])
		} else { // the declared length or the limit is in: expect the end
			var one [1]byte
			n, err = src.Read(one[:])
			if n > 0 {
				return fail(&http.MaxBytesError{Limit: limit})
			}
		}
		buf = buf[:len(buf)+n]
		if err == nil && !deadlines && b.cfg.MinRate > 0 && time.Now().After(b.deadline(start, int64(len(buf)))) {
			err = os.ErrDeadlineExceeded
		}
		switch {
		case err == nil:
		case errors.Is(err, io.EOF):
			if deadlines {
				_ = rc.SetReadDeadline(time.Time{})
			}
			return buf, sync.OnceFunc(func() { b.release(key, held) }), nil
		case errors.Is(err, os.ErrDeadlineExceeded):
			return fail(ErrTooSlow)
		default:
			if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
				return fail(err)
			}
			return fail(ErrUnreadable)
		}
	}
}

// deadline is when a body started at start, of which got bytes arrived,
// falls below the minimum rate (or past the read timeout).
func (b *Budget) deadline(start time.Time, got int64) time.Time {
	var d time.Time
	if b.cfg.MinRate > 0 {
		d = start.Add(b.cfg.Grace + time.Duration(float64(got)/float64(b.cfg.MinRate)*float64(time.Second)))
	}
	if b.cfg.ReadTimeout > 0 {
		if end := start.Add(b.cfg.ReadTimeout); d.IsZero() || end.Before(d) {
			d = end
		}
	}
	return d
}

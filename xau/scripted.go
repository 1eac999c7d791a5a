package xau

import (
	"context"
	"slices"
	"sync"
	"time"
)

// Scripted is a test fake that serves the quotes and bars a test gives it.
// It validates nothing beyond the request's shape (symbol syntax, timeframe,
// count range), counts calls, and can be switched down and up at any time.
// Returned quotes carry SourceScripted unless the test set another Source.
// It is safe for concurrent use.
type Scripted struct {
	now func() time.Time

	mu     sync.Mutex
	quotes map[string]Quote
	bars   map[scriptedKey][]Bar
	down   bool
	fail   error
	calls  ScriptedCalls
}

// scriptedKey indexes bars by symbol and timeframe.
type scriptedKey struct {
	symbol string
	tf     Timeframe
}

// ScriptedCalls counts the calls a Scripted terminal received, including
// those that failed.
type ScriptedCalls struct {
	Health, Quote, Bars int
}

// NewScripted returns an empty, connected scripted terminal. now is the
// clock reported by Health (nil means time.Now).
func NewScripted(now func() time.Time) *Scripted {
	if now == nil {
		now = time.Now
	}
	return &Scripted{now: now, quotes: map[string]Quote{}, bars: map[scriptedKey][]Bar{}}
}

// SetQuote makes Quote(q.Symbol) return q.
func (s *Scripted) SetQuote(q Quote) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.quotes[q.Symbol] = q
}

// SetBars makes Bars(symbol, tf, n) return the last n of bars (a copy),
// oldest first as given.
func (s *Scripted) SetBars(symbol string, tf Timeframe, bars []Bar) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.bars[scriptedKey{symbol, tf}] = slices.Clone(bars)
}

// SetDown switches the terminal down (true) or up (false). While down,
// Health reports not connected and every call fails with ErrUnavailable
// "terminal disconnected".
func (s *Scripted) SetDown(down bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.down = down
}

// SetFailure makes Quote and Bars fail with err (nil clears it) while Health
// stays connected: a terminal that is up but answers badly. err is returned
// as given, so a test can inject any kind.
func (s *Scripted) SetFailure(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fail = err
}

// Calls returns the call counters.
func (s *Scripted) Calls() ScriptedCalls {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls
}

// Health reports connected unless the terminal is switched down. LastTick
// is the newest quote time set, if any.
func (s *Scripted) Health(ctx context.Context) (Health, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls.Health++
	if err := ContextError(ctx, "health"); err != nil {
		return Health{}, err
	}
	now := s.now().UTC()
	h := Health{Terminal: "scripted", Server: "scripted", ServerTime: now, Source: SourceScripted}
	for _, q := range s.quotes {
		if q.Time.After(h.LastTick) {
			h.LastTick = q.Time.UTC()
		}
	}
	if !h.LastTick.IsZero() {
		h.Lag = now.Sub(h.LastTick)
	}
	if s.down {
		return h, Unavailable("health", "terminal disconnected", nil)
	}
	h.Connected = true
	return h, nil
}

// Quote returns the quote set for symbol, or ErrUnknownSymbol.
func (s *Scripted) Quote(ctx context.Context, symbol string) (Quote, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls.Quote++
	if err := s.precheck(ctx, "quote"); err != nil {
		return Quote{}, err
	}
	if err := CheckSymbol(symbol); err != nil {
		return Quote{}, err
	}
	q, ok := s.quotes[symbol]
	if !ok {
		return Quote{}, UnknownSymbol("quote", symbol)
	}
	if q.Source == "" {
		q.Source = SourceScripted
	}
	return q, nil
}

// Bars returns the last count bars set for (symbol, tf), or all of them when
// fewer were set; ErrUnknownSymbol when none were set for the symbol on any
// timeframe, ErrUnavailable "no bars" when the symbol has bars on other
// timeframes only.
func (s *Scripted) Bars(ctx context.Context, symbol string, tf Timeframe, count int) ([]Bar, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls.Bars++
	if err := s.precheck(ctx, "bars"); err != nil {
		return nil, err
	}
	if err := CheckBarsRequest(symbol, tf, count); err != nil {
		return nil, err
	}
	bars, ok := s.bars[scriptedKey{symbol, tf}]
	if !ok {
		for k := range s.bars {
			if k.symbol == symbol {
				return nil, Unavailable("bars", "no bars", nil)
			}
		}
		if _, ok := s.quotes[symbol]; ok {
			return nil, Unavailable("bars", "no bars", nil)
		}
		return nil, UnknownSymbol("bars", symbol)
	}
	return slices.Clone(bars[max(0, len(bars)-count):]), nil
}

// precheck applies the context, the down switch and the failure; s.mu is held.
func (s *Scripted) precheck(ctx context.Context, op string) error {
	if err := ContextError(ctx, op); err != nil {
		return err
	}
	if s.down {
		return Unavailable(op, "terminal disconnected", nil)
	}
	return s.fail
}

// Source implements Terminal: scripted data.
func (s *Scripted) Source() Source { return SourceScripted }

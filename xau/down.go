package xau

import (
	"context"
	"sync/atomic"
)

// Down is a terminal that is always down: Health reports not connected and
// every call fails with ErrUnavailable "terminal disconnected". The zero
// value is ready to use. It models a configured but unreachable terminal
// (the pipeline must answer 503 without asking for payment).
type Down struct{}

// Health reports not connected, with ErrUnavailable.
func (Down) Health(ctx context.Context) (Health, error) {
	if err := ContextError(ctx, "health"); err != nil {
		return Health{}, err
	}
	return Health{Terminal: "down", Source: SourceScripted}, Unavailable("health", "terminal disconnected", nil)
}

// Quote fails with ErrUnavailable.
func (Down) Quote(ctx context.Context, _ string) (Quote, error) {
	if err := ContextError(ctx, "quote"); err != nil {
		return Quote{}, err
	}
	return Quote{}, Unavailable("quote", "terminal disconnected", nil)
}

// Bars fails with ErrUnavailable.
func (Down) Bars(ctx context.Context, _ string, _ Timeframe, _ int) ([]Bar, error) {
	if err := ContextError(ctx, "bars"); err != nil {
		return nil, err
	}
	return nil, Unavailable("bars", "terminal disconnected", nil)
}

// Switchable wraps a Terminal with a switch that takes it down and brings it
// back at run time, for tests of outages (preflight 503, failure after
// payment verification). While down it behaves exactly like Down. It is
// safe for concurrent use.
type Switchable struct {
	t    Terminal
	down atomic.Bool
}

// NewSwitchable returns t behind a switch, initially up.
func NewSwitchable(t Terminal) *Switchable { return &Switchable{t: t} }

// SetDown takes the terminal down (true) or brings it up (false).
func (s *Switchable) SetDown(down bool) { s.down.Store(down) }

// IsDown reports the switch position.
func (s *Switchable) IsDown() bool { return s.down.Load() }

// Health is Down's while down, the wrapped terminal's otherwise.
func (s *Switchable) Health(ctx context.Context) (Health, error) {
	if s.down.Load() {
		return Down{}.Health(ctx)
	}
	return s.t.Health(ctx)
}

// Quote is Down's while down, the wrapped terminal's otherwise.
func (s *Switchable) Quote(ctx context.Context, symbol string) (Quote, error) {
	if s.down.Load() {
		return Down{}.Quote(ctx, symbol)
	}
	return s.t.Quote(ctx, symbol)
}

// Bars is Down's while down, the wrapped terminal's otherwise.
func (s *Switchable) Bars(ctx context.Context, symbol string, tf Timeframe, count int) ([]Bar, error) {
	if s.down.Load() {
		return Down{}.Bars(ctx, symbol, tf, count)
	}
	return s.t.Bars(ctx, symbol, tf, count)
}

// Source implements Terminal: scripted data.
func (d Down) Source() Source { return SourceScripted }

// Source implements Terminal: the wrapped terminal's source, up or down.
func (s *Switchable) Source() Source { return s.t.Source() }

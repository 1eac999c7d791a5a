package svc

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/seed1284c1d2/svc/internal/clip"
	"github.com/seed1284c1d2/svc/xau"
)

// This file holds what the three terminal-backed gold tools share: the
// default symbol, the symbol rules, the mapping of terminal errors to svc
// error kinds, the source of a terminal's data and the fetching and
// re-validation of bars. The tools themselves are in xau_quote.go,
// xau_bars.go and xau_market_state.go.

// DefaultGoldSymbol is the terminal symbol the gold tools use when a request
// names no symbol and its DefaultSymbol (the operator's setting) is empty.
const DefaultGoldSymbol = "XAUUSD"

// Limits and defaults of the gold tools.
const (
	// XAUDefaultTimeframe is the timeframe of xau_bars and xau_market_state
	// when the request names none.
	XAUDefaultTimeframe = xau.M5
	// XAUBarsMinCount, XAUBarsMaxCount and XAUBarsDefaultCount bound the
	// count of xau_bars.
	XAUBarsMinCount     = 10
	XAUBarsMaxCount     = 500
	XAUBarsDefaultCount = 100
	// XAUMarketStateMinCount, XAUMarketStateMaxCount and
	// XAUMarketStateDefaultCount bound the count of xau_market_state. The
	// terminal must deliver at least XAUMarketStateMinCount bars.
	XAUMarketStateMinCount     = 30
	XAUMarketStateMaxCount     = 500
	XAUMarketStateDefaultCount = 100
)

// SourceUnknown is reported as a response's source when the terminal does
// not say where its data comes from. It is never the source of real market
// data from a known adapter.
const SourceUnknown xau.Source = "unknown"

// xauSymbolRule is the rule name of a malformed symbol.
const xauSymbolRule = "symbol"

// xauSymbolHelp describes the symbol syntax in messages.
const xauSymbolHelp = "must be 1 to 32 characters from A-Z a-z 0-9 . _ - # + !"

// xauCheckRequestSymbol records a malformed client-given symbol under field
// "symbol". An empty symbol is not an error: the default applies.
func xauCheckRequestSymbol(fe *fieldErrors, symbol string) {
	if symbol == "" {
		return
	}
	if len(symbol) > xau.MaxSymbolLen {
		fe.add("symbol", "max", "must have at most %d characters, got %d", xau.MaxSymbolLen, len(symbol))
		return
	}
	if err := xau.CheckSymbol(symbol); err != nil {
		fe.add("symbol", xauSymbolRule, "%s, got %q", xauSymbolHelp, clip.Runes(symbol, 32))
	}
}

// xauResolveSymbol returns the symbol to ask the terminal for: the client's
// symbol when given (already validated), else the configured default, else
// DefaultGoldSymbol. A malformed configured default is an operator's
// mistake, not the client's, and yields KindInternal.
func xauResolveSymbol(tool, requested, configured string) (string, error) {
	if requested != "" {
		return requested, nil
	}
	if configured == "" {
		return DefaultGoldSymbol, nil
	}
	if err := xau.CheckSymbol(configured); err != nil {
		return "", errorf(KindInternal, err, "%s: the configured gold symbol is malformed", tool)
	}
	return configured, nil
}

// xauNeedTerminal fails with KindUnavailable when no terminal is configured.
func xauNeedTerminal(tool string, t xau.Terminal) error {
	if t == nil {
		return errorf(KindUnavailable, nil, "%s: no trading terminal is configured", tool)
	}
	return nil
}

// xauTerminalError maps an error of a Terminal call to an *Error:
//
//   - a deadline or cancellation (the caller's context, or an upstream
//     timeout wrapping context.DeadlineExceeded) → KindTimeout;
//   - xau.ErrUnknownSymbol → KindInvalid, field "symbol", rule
//     "unknown_symbol";
//   - any other xau.ErrBadRequest → KindInvalid, field "symbol", rule
//     "terminal_rejected" (the tools validate timeframe and count first, so
//     only the symbol is left for the terminal to reject);
//   - xau.ErrUnavailable and anything else → KindUnavailable.
//
// Messages hold at most the client-safe xau reason; the error itself is
// kept as Cause for logs.
func xauTerminalError(tool, symbol string, err error) error {
	reason := xau.Reason(err)
	switch {
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return errorf(KindTimeout, err, "%s: the trading terminal did not answer in time", tool)
	case errors.Is(err, xau.ErrUnknownSymbol):
		e := InvalidField("symbol", "unknown_symbol", "%q is not served by the trading terminal", clip.Runes(symbol, 32))
		e.Cause = err
		return e
	case errors.Is(err, xau.ErrBadRequest):
		if reason == "" {
			reason = "the request was rejected"
		}
		e := InvalidField("symbol", "terminal_rejected", "the trading terminal rejected the request for %q: %s", clip.Runes(symbol, 32), reason)
		e.Cause = err
		return e
	}
	if reason == "" {
		return errorf(KindUnavailable, err, "%s: the trading terminal is unavailable", tool)
	}
	return errorf(KindUnavailable, err, "%s: the trading terminal is unavailable: %s", tool, reason)
}

// xauSource is t's source, SourceUnknown when it does not say.
func xauSource(t xau.Terminal) xau.Source {
	if s := t.Source(); s != "" {
		return s
	}
	return SourceUnknown
}

// xauFetchBars asks t for count bars of symbol on tf and checks what comes
// back as untrusted data: more than count bars are cut to the last count;
// bars failing xau.ValidateBars, or fewer than minBars, are KindUnavailable
// (bad or missing upstream data is never passed on). It also returns the
// source of the bars.
func xauFetchBars(ctx context.Context, t xau.Terminal, tool, symbol string, tf xau.Timeframe, count, minBars int) ([]xau.Bar, xau.Source, error) {
	if err := xauNeedTerminal(tool, t); err != nil {
		return nil, "", err
	}
	bars, err := t.Bars(ctx, symbol, tf, count)
	if err != nil {
		return nil, "", xauTerminalError(tool, symbol, err)
	}
	if len(bars) > count {
		bars = bars[len(bars)-count:]
	}
	if err := xau.ValidateBars(bars, tf); err != nil {
		return nil, "", errorf(KindUnavailable, fmt.Errorf("%s: %w", tool, err), "%s: the trading terminal sent invalid bars", tool)
	}
	if len(bars) < minBars {
		return nil, "", errorf(KindUnavailable, nil, "%s: the trading terminal has too little history: %d bars, at least %d needed", tool, len(bars), minBars)
	}
	return bars, xauSource(t), nil
}

// xauTime formats a terminal time as RFC 3339 in UTC, with fractional
// seconds only when present.
func xauTime(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// xauTimeframe returns the requested timeframe or the default. The value
// must already have passed validation.
func xauTimeframe(s string) xau.Timeframe {
	if s == "" {
		return XAUDefaultTimeframe
	}
	return xau.Timeframe(s)
}

// xauCount returns *count or def when count is nil.
func xauCount(count *int, def int) int {
	if count == nil {
		return def
	}
	return *count
}

// Package svc is a library of small, deterministic tools for autonomous
// agents: a trading-session clock, risk and tick-PnL calculators, a strategy
// grader, gold (XAUUSD) quotes, bars and market state, CSV and JSON
// profilers, a JWT decoder, an EVM address checker, OHLCV statistics and a
// JavaScript regular-expression tester.
//
// Every tool is a plain function of the same shape:
//
//	func Name(ctx context.Context, req NameRequest) (NameResponse, error)
//
// except the three gold tools (XAUQuote, XAUBars, XAUMarketState), which
// also take the read-only trading terminal they read from:
//
//	func XAUBars(ctx context.Context, t xau.Terminal, req XAUBarsRequest) (XAUBarsResponse, error)
//
// Package xau provides that port with a simulated terminal (deterministic,
// every value marked "source":"simulated"); xau/mt5 holds the MT5 bridge
// client and xau/replay a CSV replay terminal. Importing this package (or
// xau) links no HTTP stack.
//
// NameRequest decodes from the published JSON (the request schemas of
// openapi.json) with encoding/json (field names such as "entry", "slPct",
// "csv") and NameResponse encodes back to it. The functions do no network or disk I/O
// of their own (the gold tools read only through the Terminal given to them),
// keep no state between calls and are safe for concurrent use. Selling them
// over HTTP with x402 payments is the job of other packages (tools, x402,
// httpserver); a Go program can simply call them.
//
// # Numbers
//
// Prices, sizes and percentages are [Number]: an exact decimal that decodes
// from a JSON number or a decimal string and encodes as a JSON number
// without binary float noise (3500 × (1 − 0.05/100) is 3498.25). A result
// that is exact stays exact; a non-terminating result (a ratio, a mean) is
// rounded half-even to 8 decimal places unless a tool documents otherwise.
// NaN and infinities are rejected, and so are magnitudes of 1e30 or more and
// more than 30 decimal places.
//
// # Errors
//
// Every error is an [*Error] with a [ErrorKind] (invalid input, unavailable,
// timeout, too large, internal) and, for invalid input, one [FieldError] per
// broken rule: the field path in JSON notation ("bars[3].high"), the rule
// ("required", "gt", "oneof", "ohlc_consistency", ...) and a message naming
// both. All broken rules of a request are reported at once. Invalid input
// never panics.
//
// The rules of each field are written once, as the validate tag of the
// request type's field (`validate:"required,gt=0"`); the rule's name is the
// rule an error reports. The tools enforce these tags and package tools
// publishes them in the input schemas; rules across fields (a risk level
// above zero, OHLC consistency) are checked in code and described in the
// tools' documentation.
//
//	_, err := svc.RiskLevels(ctx, svc.RiskLevelsRequest{Direction: "up"})
//	var e *svc.Error
//	if errors.As(err, &e) && e.Kind == svc.KindInvalid {
//		for _, f := range e.Fields {
//			fmt.Println(f.Field, f.Rule) // entry required, direction oneof, ...
//		}
//	}
//
// # Property testing
//
// Package svctest exports gopter generators of valid requests for every
// tool, plus OHLCV bar series and CSV documents, so the calculators can be
// property-tested by anyone.
package svc

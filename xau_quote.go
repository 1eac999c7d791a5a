package svc

import (
	"context"
	"fmt"
	"strings"

	"github.com/shopspring/decimal"

	"github.com/seed1284c1d2/svc/xau"
)

// XAUQuoteRequest is the input of XAUQuote.
type XAUQuoteRequest struct {
	// Symbol is the terminal symbol; optional. At most 32 characters from
	// A–Z, a–z, 0–9 and ". _ - # + !" (broker suffixes such as "XAUUSD.a").
	// Empty means DefaultSymbol.
	Symbol string `json:"symbol,omitempty" validate:"omitempty,max=32"`
	// DefaultSymbol is the operator's gold symbol, used when Symbol is
	// empty; empty means DefaultGoldSymbol ("XAUUSD"). It is set by the
	// server from its configuration and never read from JSON.
	DefaultSymbol string `json:"-"`
}

// XAUQuoteResponse is the output of XAUQuote. Prices are the terminal's
// exact decimals.
type XAUQuoteResponse struct {
	// Symbol is the symbol as the terminal spells it.
	Symbol string `json:"symbol"`
	// Bid and Ask are the best bid and ask; Spread = Ask − Bid.
	Bid    Number `json:"bid"`
	Ask    Number `json:"ask"`
	Spread Number `json:"spread"`
	// Last is the last price as the terminal charts it (the bid for CFD
	// symbols such as XAUUSD, which have no last deal price).
	Last Number `json:"last"`
	// Time is the tick's time, RFC 3339 in UTC (fractional seconds when the
	// terminal reports them). While the market is closed it is the last tick
	// before the close.
	Time string `json:"time"`
	// Source says where the quote comes from: "simulated", "mt5", "replay",
	// "scripted", ...; simulated data is never passed off as market data.
	Source xau.Source `json:"source"`
}

// xauQuoteTags are the compiled validate tags of XAUQuoteRequest.
var xauQuoteTags = compileTags[XAUQuoteRequest]()

// XAUQuote returns the latest quote of a symbol (by default the configured
// gold symbol) from the trading terminal t.
//
// The request is validated before t is called: a symbol longer than 32
// characters is invalid with rule "max", one with other characters than
// A–Z a–z 0–9 . _ - # + ! with rule "symbol" (field "symbol" in both).
//
// The quote is checked as untrusted data (xau.ValidateQuote: bid > 0, ask ≥
// bid, spread = ask − bid and at most 1 % of the bid, a time; and the
// symbol must be the one asked for, ignoring case); a bad quote is
// KindUnavailable and never passed on. Terminal errors map to: unavailable
// → KindUnavailable (HTTP 503), unknown symbol → KindInvalid with field
// "symbol" and rule "unknown_symbol", a deadline → KindTimeout. The
// response carries the terminal's source so that simulated data is never
// mistaken for market data.
func XAUQuote(ctx context.Context, t xau.Terminal, req XAUQuoteRequest) (XAUQuoteResponse, error) {
	const tool = "xau_quote"
	if err := ctx.Err(); err != nil {
		return XAUQuoteResponse{}, errorf(KindTimeout, err, "%s: %v", tool, err)
	}
	var fe fieldErrors
	xauQuoteTags.check(&fe, "", &req)
	if len(fe) == 0 {
		xauCheckRequestSymbol(&fe, req.Symbol)
	}
	if err := fe.err(); err != nil {
		return XAUQuoteResponse{}, err
	}
	symbol, err := xauResolveSymbol(tool, req.Symbol, req.DefaultSymbol)
	if err != nil {
		return XAUQuoteResponse{}, err
	}
	if err := xauNeedTerminal(tool, t); err != nil {
		return XAUQuoteResponse{}, err
	}

	q, err := t.Quote(ctx, symbol)
	if err != nil {
		return XAUQuoteResponse{}, xauTerminalError(tool, symbol, err)
	}
	if err := xau.ValidateQuote(q, decimal.Zero); err != nil {
		return XAUQuoteResponse{}, errorf(KindUnavailable, fmt.Errorf("%s: %w", tool, err), "%s: the trading terminal sent an invalid quote", tool)
	}
	if !strings.EqualFold(q.Symbol, symbol) {
		return XAUQuoteResponse{}, errorf(KindUnavailable, fmt.Errorf("%s: asked for %q, got %q", tool, symbol, q.Symbol),
			"%s: the trading terminal answered for another symbol", tool)
	}
	source := q.Source
	if source == "" {
		source = xauSource(t)
	}
	return XAUQuoteResponse{
		Symbol: q.Symbol,
		Bid:    NewNumber(q.Bid),
		Ask:    NewNumber(q.Ask),
		Spread: NewNumber(q.Spread),
		Last:   NewNumber(q.Last),
		Time:   xauTime(q.Time),
		Source: source,
	}, nil
}

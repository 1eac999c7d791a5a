package svc

import (
	"context"

	"github.com/seed1284c1d2/svc/xau"
)

// XAUBarsRequest is the input of XAUBars.
type XAUBarsRequest struct {
	// Timeframe is one of "M1", "M5", "M15", "H1" (exact spelling);
	// optional, default "M5".
	Timeframe string `json:"timeframe,omitempty" validate:"omitempty,oneof=M1 M5 M15 H1"`
	// Count is the number of bars, 10 to 500; optional (nil), default 100.
	Count *int `json:"count,omitempty" validate:"omitempty,min=10,max=500"`
	// DefaultSymbol is the operator's gold symbol; empty means
	// DefaultGoldSymbol ("XAUUSD"). It is set by the server from its
	// configuration and never read from JSON.
	DefaultSymbol string `json:"-"`
}

// XAUBarsResponse is the output of XAUBars.
type XAUBarsResponse struct {
	// Symbol is the terminal symbol the bars are of.
	Symbol string `json:"symbol"`
	// Timeframe is the bars' timeframe.
	Timeframe xau.Timeframe `json:"timeframe"`
	// Count is the number of bars returned: the count asked for, or fewer
	// when the terminal has less history.
	Count int `json:"count"`
	// Bars are oldest first. Each has time (its open time, RFC 3339 in
	// UTC, aligned to the timeframe), open, high, low, close and
	// tick_volume; the last bar may still be forming. The bars can be
	// passed as they are to OHLCVState.
	Bars []OHLCVBar `json:"bars"`
	// Source says where the bars come from: "simulated", "mt5", "replay",
	// "scripted", ...; simulated data is never passed off as market data.
	Source xau.Source `json:"source"`
}

// xauBarsTags are the compiled validate tags of XAUBarsRequest.
var xauBarsTags = compileTags[XAUBarsRequest]()

// XAUBars returns the most recent bars of the configured gold symbol from
// the trading terminal t, oldest first.
//
// Rules, checked before t is called: timeframe one of M1, M5, M15, H1
// (rule "oneof"; default M5), count 10 to 500 (rules "min", "max"; default
// 100). The bars are checked again as untrusted data (xau.ValidateBars:
// prices > 0, low ≤ min(open, close), high ≥ max(open, close), tick volume
// ≥ 0, times aligned and strictly increasing); bad bars, or none at all,
// are KindUnavailable and never passed on. Terminal errors map to:
// unavailable → KindUnavailable (HTTP 503), unknown symbol → KindInvalid
// with field "symbol" and rule "unknown_symbol", a deadline → KindTimeout.
// The response carries the terminal's source.
func XAUBars(ctx context.Context, t xau.Terminal, req XAUBarsRequest) (XAUBarsResponse, error) {
	const tool = "xau_bars"
	if err := ctx.Err(); err != nil {
		return XAUBarsResponse{}, errorf(KindTimeout, err, "%s: %v", tool, err)
	}
	var fe fieldErrors
	xauBarsTags.check(&fe, "", &req)
	if err := fe.err(); err != nil {
		return XAUBarsResponse{}, err
	}
	symbol, err := xauResolveSymbol(tool, "", req.DefaultSymbol)
	if err != nil {
		return XAUBarsResponse{}, err
	}
	tf := xauTimeframe(req.Timeframe)
	bars, source, err := xauFetchBars(ctx, t, tool, symbol, tf, xauCount(req.Count, XAUBarsDefaultCount), 1)
	if err != nil {
		return XAUBarsResponse{}, err
	}
	return XAUBarsResponse{
		Symbol:    symbol,
		Timeframe: tf,
		Count:     len(bars),
		Bars:      xauOHLCVBars(bars),
		Source:    source,
	}, nil
}

// xauOHLCVBars converts terminal bars to OHLCVBar, with RFC 3339 UTC times
// and the tick volume set.
func xauOHLCVBars(bars []xau.Bar) []OHLCVBar {
	out := make([]OHLCVBar, len(bars))
	for i, b := range bars {
		out[i] = OHLCVBar{
			Time:       xauTime(b.Time),
			Open:       NewNumber(b.Open),
			High:       NewNumber(b.High),
			Low:        NewNumber(b.Low),
			Close:      NewNumber(b.Close),
			TickVolume: N(b.TickVolume),
		}
	}
	return out
}

package replay

import (
	"context"
	"fmt"
	"io"
	"os"
	"sort"
	"time"

	"github.com/shopspring/decimal"

	"github.com/seed1284c1d2/svc/internal/clip"
	"github.com/seed1284c1d2/svc/xau"
)

// Config configures New.
type Config struct {
	// Symbol is the symbol of the file (an export holds one symbol and
	// does not name it); "" means "XAUUSD".
	Symbol string
	// Timeframe is the file's base timeframe; required. Bars are served on
	// this timeframe and on every coarser one it divides (an M1 file
	// serves M1, M5, M15 and H1; an M5 file serves M5, M15 and H1).
	Timeframe xau.Timeframe
	// Point is the price of one spread point; zero means 0.01, the point
	// of a 2-digit XAUUSD feed (use 0.001 for a 3-digit feed).
	Point decimal.Decimal
	// ServerUTCOffset is the trading server's offset from UTC: MT5 writes
	// server time into exports, so a file from a UTC+2 server needs 2h.
	// It is subtracted from every time in the file.
	ServerUTCOffset time.Duration
	// Now is the replay clock; nil means time.Now. Set it to a time inside
	// the file to replay history.
	Now func() time.Time
}

// Terminal is a terminal that replays an MT5 history export up to its clock.
// Every value carries SourceReplay.
//
// A base bar is revealed once it has completed: when open time + base
// timeframe ≤ clock, because its high, low and close are only known then.
// Bars on coarser timeframes aggregate the revealed base bars, so the last
// one may be partial; nothing after the clock is ever served. The quote is
// the close of the last revealed base bar: bid = close, ask = bid +
// spread·Point (the bar's <SPREAD> column), Last = bid, time = the bar's
// close time (open + base timeframe). Health is connected once at least one
// bar is revealed; Lag then grows as the clock runs past the file's end.
type Terminal struct {
	symbol string
	base   xau.Timeframe
	point  decimal.Decimal
	now    func() time.Time
	rows   []csvRow
}

// New reads an MT5 history export (see ParseMT5CSV for the format)
// and returns a terminal replaying it. The whole file is validated: prices,
// OHLC consistency, strictly increasing times aligned to the base
// timeframe, and spread·Point ≤ 1 % of the close (MaxSpreadPercent). The
// first problem is returned as an error wrapping a *CSVError with its line
// number. Exports without a <TIME> column (daily bars) parse with
// ParseMT5CSV but cannot back a Terminal, whose timeframes are intraday.
func New(cfg Config, r io.Reader) (*Terminal, error) {
	rp := &Terminal{symbol: cfg.Symbol, base: cfg.Timeframe, point: cfg.Point, now: cfg.Now}
	if rp.symbol == "" {
		rp.symbol = xau.DefaultSymbol
	}
	if err := xau.CheckSymbol(rp.symbol); err != nil {
		return nil, fmt.Errorf("xau: replay: %w", err)
	}
	if !rp.base.Valid() {
		return nil, fmt.Errorf("xau: replay: base timeframe %q is not one of M1, M5, M15, H1", clip.Runes(string(cfg.Timeframe), 16))
	}
	if rp.point.IsZero() {
		rp.point = decimal.New(1, -2)
	}
	if rp.point.Sign() < 0 {
		return nil, fmt.Errorf("xau: replay: point %s is negative", rp.point)
	}
	if rp.now == nil {
		rp.now = time.Now
	}
	if cfg.ServerUTCOffset%time.Second != 0 || cfg.ServerUTCOffset < -14*time.Hour || cfg.ServerUTCOffset > 14*time.Hour {
		return nil, fmt.Errorf("xau: replay: server UTC offset %s is not whole seconds within ±14h", cfg.ServerUTCOffset)
	}
	// The spread cap in units of 1e-8: spread·point·100 ≤ close·MaxSpreadPercent.
	pointUnits := rp.point.Shift(maxPriceFraction)
	err := parseMT5(r, cfg.ServerUTCOffset, rp.base, func(_ int, row csvRow) error {
		sp := pointUnits.Mul(decimal.NewFromInt(row.spread))
		if sp.Mul(decimal.NewFromInt(100)).GreaterThan(decimal.NewFromInt(row.close).Mul(decimal.NewFromInt(xau.MaxSpreadPercent))) {
			return fmt.Errorf("spread %d points of %s is wider than %d%% of the close", row.spread, rp.point, xau.MaxSpreadPercent)
		}
		rp.rows = append(rp.rows, row)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("xau: replay: %w", err)
	}
	if len(rp.rows) == 0 {
		return nil, fmt.Errorf("xau: replay: the file holds no bars")
	}
	rp.rows = rp.rows[:len(rp.rows):len(rp.rows)]
	return rp, nil
}

// Open is New on the file at path.
func Open(cfg Config, path string) (*Terminal, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("xau: replay: %w", err)
	}
	defer f.Close()
	return New(cfg, f)
}

// Symbol returns the symbol served.
func (rp *Terminal) Symbol() string { return rp.symbol }

// Span returns the open time of the file's first bar and the close time
// (open + base timeframe) of its last.
func (rp *Terminal) Span() (first, last time.Time) {
	bs := int64(rp.base.Duration() / time.Second)
	return time.Unix(rp.rows[0].t, 0).UTC(), time.Unix(rp.rows[len(rp.rows)-1].t+bs, 0).UTC()
}

// revealed returns how many rows have completed by now.
func (rp *Terminal) revealed(now time.Time) int {
	bs := int64(rp.base.Duration() / time.Second)
	s := now.Unix()
	return sort.Search(len(rp.rows), func(i int) bool { return rp.rows[i].t+bs > s })
}

// Health is connected once a bar has been revealed.
func (rp *Terminal) Health(ctx context.Context) (xau.Health, error) {
	if err := xau.ContextError(ctx, "health"); err != nil {
		return xau.Health{}, err
	}
	now := rp.now().UTC()
	h := xau.Health{Terminal: "replay", ServerTime: now, Source: xau.SourceReplay}
	n := rp.revealed(now)
	if n == 0 {
		return h, xau.Unavailable("health", "replay clock is before the first completed bar", nil)
	}
	h.Connected = true
	h.LastTick = time.Unix(rp.rows[n-1].t, 0).Add(rp.base.Duration()).UTC()
	h.Lag = now.Sub(h.LastTick)
	return h, nil
}

// Quote returns the close of the last revealed base bar as bid.
func (rp *Terminal) Quote(ctx context.Context, symbol string) (xau.Quote, error) {
	if err := xau.ContextError(ctx, "quote"); err != nil {
		return xau.Quote{}, err
	}
	if err := rp.checkSymbol("quote", symbol); err != nil {
		return xau.Quote{}, err
	}
	n := rp.revealed(rp.now())
	if n == 0 {
		return xau.Quote{}, xau.Unavailable("quote", "replay clock is before the first completed bar", nil)
	}
	row := rp.rows[n-1]
	bid := decimal.New(row.close, -maxPriceFraction)
	spread := rp.point.Mul(decimal.NewFromInt(row.spread))
	return xau.Quote{
		Symbol: rp.symbol,
		Bid:    bid,
		Ask:    bid.Add(spread),
		Last:   bid,
		Spread: spread,
		Time:   time.Unix(row.t, 0).Add(rp.base.Duration()).UTC(),
		Source: xau.SourceReplay,
	}, nil
}

// Bars returns up to count of the most recent tf bars revealed by the
// clock, oldest first. tf must be the base timeframe or a coarser one that
// it divides; a finer one is ErrBadRequest.
func (rp *Terminal) Bars(ctx context.Context, symbol string, tf xau.Timeframe, count int) ([]xau.Bar, error) {
	if err := xau.ContextError(ctx, "bars"); err != nil {
		return nil, err
	}
	if err := xau.CheckBarsRequest(symbol, tf, count); err != nil {
		return nil, err
	}
	if err := rp.checkSymbol("bars", symbol); err != nil {
		return nil, err
	}
	if tf.Duration() < rp.base.Duration() || tf.Duration()%rp.base.Duration() != 0 {
		return nil, xau.BadRequest("bars", fmt.Sprintf("timeframe %s is finer than the replay file's %s", tf, rp.base))
	}
	n := rp.revealed(rp.now())
	// Walk back from the newest revealed row until count periods are seen.
	i := n
	var periods int
	var cur time.Time
	for i > 0 {
		t := tf.Align(time.Unix(rp.rows[i-1].t, 0))
		if periods == 0 || !t.Equal(cur) {
			if periods == count {
				break
			}
			periods++
			cur = t
		}
		i--
	}
	tfs := int64(tf.Duration() / time.Second)
	out := make([]xau.Bar, 0, periods)
	var agg csvRow
	for j, row := range rp.rows[i:n] {
		t := floorDiv(row.t, tfs) * tfs
		if j > 0 && t == agg.t {
			agg.high = max(agg.high, row.high)
			agg.low = min(agg.low, row.low)
			agg.close = row.close
			agg.tickVol += row.tickVol
			continue
		}
		if j > 0 {
			out = append(out, agg.bar())
		}
		agg = row
		agg.t = t
	}
	if n > i {
		out = append(out, agg.bar())
	}
	return out, nil
}

// checkSymbol accepts exactly the configured symbol.
func (rp *Terminal) checkSymbol(op, symbol string) error {
	if err := xau.CheckSymbol(symbol); err != nil {
		return err
	}
	if symbol != rp.symbol {
		return xau.UnknownSymbol(op, symbol)
	}
	return nil
}

// Source implements Terminal: replay data.
func (r *Terminal) Source() xau.Source { return xau.SourceReplay }

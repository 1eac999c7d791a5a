package xau

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/shopspring/decimal"

	"github.com/seed1284c1d2/svc/internal/clip"
)

// Terminal is the read-only port to a trading terminal. It has no method
// that places, changes or cancels an order, touches a position or changes an
// account: an implementation can only report its health, a quote and bars.
//
// Every method checks ctx first and honours its deadline. Errors are
// [*Error] values that wrap one of the sentinels [ErrUnavailable] (the
// terminal cannot answer now: disconnected, timed out, sent inconsistent
// data), [ErrBadRequest] or [ErrUnknownSymbol] (the request itself is wrong
// and retrying it will not help); test them with errors.Is. An upstream
// timeout also wraps [context.DeadlineExceeded].
//
// Implementations are safe for concurrent use.
type Terminal interface {
	// Health reports whether the terminal is connected and how fresh its
	// data is. When the terminal cannot serve data it returns a non-nil
	// error wrapping ErrUnavailable together with whatever it learned
	// (Connected is then false).
	Health(ctx context.Context) (Health, error)
	// Quote returns the latest quote of symbol.
	Quote(ctx context.Context, symbol string) (Quote, error)
	// Bars returns the most recent count bars of symbol on timeframe tf,
	// oldest first. The last bar may still be forming (its open time is the
	// start of the current period). count must be in [1, MaxBars]. Fewer
	// bars are returned only when the terminal has less history.
	Bars(ctx context.Context, symbol string, tf Timeframe, count int) ([]Bar, error)
	// Source says where this terminal's data comes from (simulated, mt5,
	// replay, ...), so that every response can carry it without a call.
	Source() Source
}

// MaxBars is the largest count a Terminal accepts in one Bars call. The
// paid tools ask for at most 500; the margin covers indicator warm-up.
const MaxBars = 5000

// Source says where a value came from. It is carried by every Health and
// Quote so that a response can never pass simulated data off as real.
type Source string

// The sources of the adapters in this package.
const (
	// SourceSimulated marks the deterministic simulated terminal (NewSimulated).
	SourceSimulated Source = "simulated"
	// SourceScripted marks test fakes (NewScripted, Down).
	SourceScripted Source = "scripted"
	// SourceMT5 marks a real MetaTrader 5 terminal behind the bridge (package xau/mt5).
	SourceMT5 Source = "mt5"
	// SourceReplay marks bars replayed from an MT5 history export (package xau/replay).
	SourceReplay Source = "replay"
)

// Health is a terminal's state as seen by its adapter.
type Health struct {
	// Connected is true when the terminal can serve quotes and bars now.
	Connected bool
	// Terminal names the terminal software or fake ("MetaTrader 5", "simulated").
	Terminal string
	// Server names the trading server the terminal is connected to, when known.
	Server string
	// ServerTime is the terminal host's current time in UTC, when known.
	ServerTime time.Time
	// LastTick is the time (UTC) of the most recent tick of the default
	// symbol; zero when unknown.
	LastTick time.Time
	// Lag is the age of LastTick at the time of the check (0 when LastTick is
	// unknown). It grows while the market is closed (weekends).
	Lag time.Duration
	// Source is where this report comes from.
	Source Source
}

// Quote is the latest bid/ask of a symbol. Prices are exact decimals.
type Quote struct {
	// Symbol is the terminal symbol, e.g. "XAUUSD".
	Symbol string
	// Bid is the best bid; > 0.
	Bid decimal.Decimal
	// Ask is the best ask; ≥ Bid.
	Ask decimal.Decimal
	// Last is the price of the last tick as the terminal charts it. MT5
	// reports no last deal price for CFD symbols such as XAUUSD; adapters
	// then use the bid, which is also what MT5 builds bars from.
	Last decimal.Decimal
	// Spread is Ask − Bid.
	Spread decimal.Decimal
	// Time is the time of the tick (UTC). While the market is closed it is
	// the last tick before the close.
	Time time.Time
	// Source is where the quote comes from.
	Source Source
}

// Bar is one OHLC bar. Prices are exact decimals.
type Bar struct {
	// Time is the bar's open time in UTC, aligned to its timeframe.
	Time time.Time
	// Open, High, Low and Close are the bid prices of the period.
	Open, High, Low, Close decimal.Decimal
	// TickVolume is the number of ticks in the period (≥ 0).
	TickVolume int64
}

// Timeframe is a bar period. The zero value is not a valid timeframe.
type Timeframe string

// The timeframes served by the port.
const (
	M1  Timeframe = "M1"  // one minute
	M5  Timeframe = "M5"  // five minutes
	M15 Timeframe = "M15" // fifteen minutes
	H1  Timeframe = "H1"  // one hour
)

// Timeframes returns every supported timeframe, finest first.
func Timeframes() []Timeframe { return []Timeframe{M1, M5, M15, H1} }

// ParseTimeframe parses one of "M1", "M5", "M15", "H1" (exact spelling).
// Anything else is an error wrapping ErrBadRequest.
func ParseTimeframe(s string) (Timeframe, error) {
	tf := Timeframe(s)
	if tf.Duration() == 0 {
		return "", &Error{Op: "timeframe", Kind: ErrBadRequest, Reason: fmt.Sprintf("timeframe %q is not one of M1, M5, M15, H1", clip.Runes(s, 16))}
	}
	return tf, nil
}

// Duration returns the length of one bar, or 0 for an invalid timeframe.
func (tf Timeframe) Duration() time.Duration {
	switch tf {
	case M1:
		return time.Minute
	case M5:
		return 5 * time.Minute
	case M15:
		return 15 * time.Minute
	case H1:
		return time.Hour
	}
	return 0
}

// Valid reports whether tf is one of the supported timeframes.
func (tf Timeframe) Valid() bool { return tf.Duration() != 0 }

// String returns the timeframe's name.
func (tf Timeframe) String() string { return string(tf) }

// Align returns the open time (UTC) of the tf bar containing t: t rounded
// down to a multiple of the bar length since the Unix epoch. All supported
// timeframes divide an hour, so bars align to the UTC clock (H1 bars open
// on the hour, M15 bars at :00, :15, :30, :45). It returns t in UTC
// unchanged for an invalid timeframe.
func (tf Timeframe) Align(t time.Time) time.Time {
	d := int64(tf.Duration() / time.Second)
	if d == 0 {
		return t.UTC()
	}
	s := t.Unix()
	return time.Unix(floorDiv(s, d)*d, 0).UTC()
}

// Aligned reports whether t is exactly the open time of a tf bar.
func (tf Timeframe) Aligned(t time.Time) bool {
	return tf.Valid() && t.Nanosecond() == 0 && tf.Align(t).Equal(t)
}

// Errors of the port. Test with errors.Is: every error returned by a
// Terminal method (and by ParseTimeframe, CheckSymbol and
// HealthCache.Check) wraps exactly one of them; ErrUnknownSymbol itself
// wraps ErrBadRequest. Constructors (NewSimulated, mt5.New, replay.New)
// return plain configuration or file errors.
var (
	// ErrUnavailable: the terminal cannot answer now (disconnected, timed
	// out, rejected our token, or sent data that failed validation). The
	// request may succeed later; a server answers 503 and charges nothing.
	ErrUnavailable = errors.New("terminal unavailable")
	// ErrBadRequest: the request is wrong (bad timeframe, count out of
	// range, malformed symbol). A server answers 400.
	ErrBadRequest = errors.New("bad request")
	// ErrUnknownSymbol: the terminal does not serve this symbol. It wraps
	// ErrBadRequest.
	ErrUnknownSymbol = fmt.Errorf("%w: unknown symbol", ErrBadRequest)
)

// Error is the error type of this package.
//
// Reason is a short sentence that is safe to show a client: it never holds
// a URL, a token, a stack or upstream bytes. Cause holds the detail for
// logs. errors.Is sees both Kind and Cause.
type Error struct {
	// Op is the operation: "health", "quote", "bars", "load", "timeframe".
	Op string
	// Kind is ErrUnavailable, ErrBadRequest or ErrUnknownSymbol.
	Kind error
	// Reason is the client-safe explanation, e.g. "upstream sent inconsistent bars".
	Reason string
	// Cause is the underlying error, for logs; may be nil.
	Cause error
}

// Error implements error: "xau quote: <reason>: <cause>".
func (e *Error) Error() string {
	s := "xau " + e.Op + ": " + e.Reason
	if e.Cause != nil {
		s += ": " + e.Cause.Error()
	}
	return s
}

// Unwrap returns Kind and Cause, so errors.Is(err, ErrUnavailable) and
// errors.Is(err, context.DeadlineExceeded) both work.
func (e *Error) Unwrap() []error {
	errs := make([]error, 0, 2)
	if e.Kind != nil {
		errs = append(errs, e.Kind)
	}
	if e.Cause != nil {
		errs = append(errs, e.Cause)
	}
	return errs
}

// Reason returns the client-safe reason of an error of this package, or ""
// when err is not (and does not wrap) an *Error.
func Reason(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Reason
	}
	return ""
}

// Unavailable returns an ErrUnavailable *Error: the terminal cannot answer
// operation op now, for a client-safe reason; cause is for logs. Adapters
// outside this package build their errors with it and its siblings.
func Unavailable(op, reason string, cause error) error {
	return &Error{Op: op, Kind: ErrUnavailable, Reason: reason, Cause: cause}
}

// BadRequest returns an ErrBadRequest *Error: the request of operation op
// is wrong, for a client-safe reason.
func BadRequest(op, reason string) error {
	return &Error{Op: op, Kind: ErrBadRequest, Reason: reason}
}

// UnknownSymbol returns an ErrUnknownSymbol *Error naming (a prefix of) symbol.
func UnknownSymbol(op, symbol string) error {
	return &Error{Op: op, Kind: ErrUnknownSymbol, Reason: fmt.Sprintf("unknown symbol %q", clip.Runes(symbol, 32))}
}

// ContextError converts a done context into an ErrUnavailable error of
// operation op ("deadline exceeded" or "request cancelled"), nil otherwise.
func ContextError(ctx context.Context, op string) error {
	if err := ctx.Err(); err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return Unavailable(op, "deadline exceeded", err)
		}
		return Unavailable(op, "request cancelled", err)
	}
	return nil
}

// MaxSymbolLen is the longest symbol accepted.
const MaxSymbolLen = 32

// CheckSymbol rejects a malformed symbol with an error wrapping
// ErrBadRequest: it must be 1 to 32 characters from A–Z, a–z, 0–9 and
// ". _ - # + !" (the characters brokers use in suffixes such as
// "XAUUSD.a" or "XAUUSD#"). It says nothing about whether a terminal
// serves the symbol.
func CheckSymbol(symbol string) error {
	if symbol == "" {
		return BadRequest("symbol", "symbol is empty")
	}
	if len(symbol) > MaxSymbolLen {
		return BadRequest("symbol", fmt.Sprintf("symbol is longer than %d characters", MaxSymbolLen))
	}
	for i := 0; i < len(symbol); i++ {
		c := symbol[i]
		switch {
		case c >= 'A' && c <= 'Z', c >= 'a' && c <= 'z', c >= '0' && c <= '9':
		case c == '.' || c == '_' || c == '-' || c == '#' || c == '+' || c == '!':
		default:
			return BadRequest("symbol", fmt.Sprintf("symbol %q holds a character outside A-Z a-z 0-9 . _ - # + !", clip.Runes(symbol, 32)))
		}
	}
	return nil
}

// CheckBarsRequest validates the arguments of a Bars call: a well-formed
// symbol (CheckSymbol), one of the four timeframes and a count in
// 1..MaxBars; the error wraps ErrBadRequest.
func CheckBarsRequest(symbol string, tf Timeframe, count int) error {
	if err := CheckSymbol(symbol); err != nil {
		return err
	}
	if !tf.Valid() {
		return BadRequest("bars", fmt.Sprintf("timeframe %q is not one of M1, M5, M15, H1", clip.Runes(string(tf), 16)))
	}
	if count < 1 || count > MaxBars {
		return BadRequest("bars", fmt.Sprintf("count %d is outside 1..%d", count, MaxBars))
	}
	return nil
}

// MaxSpreadPercent is the relative spread cap applied by ValidateQuote, in
// percent of the bid: a spread wider than 1 % is absurd for any liquid
// symbol (XAUUSD trades at about 0.01 %) and marks broken upstream data.
const MaxSpreadPercent = 1

// ValidateQuote checks a quote read from an untrusted source: symbol set,
// bid > 0, ask ≥ bid, last ≥ 0, spread = ask − bid, spread ≤ 1 % of the bid
// (MaxSpreadPercent) and, when maxSpread is positive, spread ≤
// maxSpread (an absolute cap in price units, e.g. 2.00 for XAUUSD), and a
// non-zero time. It returns nil or an error describing the first broken
// rule; the adapters wrap that in ErrUnavailable.
func ValidateQuote(q Quote, maxSpread decimal.Decimal) error {
	switch {
	case q.Symbol == "":
		return errors.New("quote has no symbol")
	case q.Bid.Sign() <= 0:
		return fmt.Errorf("bid %s is not positive", q.Bid)
	case q.Ask.LessThan(q.Bid):
		return fmt.Errorf("ask %s is below bid %s", q.Ask, q.Bid)
	case q.Last.Sign() < 0:
		return fmt.Errorf("last %s is negative", q.Last)
	case !q.Spread.Equal(q.Ask.Sub(q.Bid)):
		return fmt.Errorf("spread %s is not ask - bid = %s", q.Spread, q.Ask.Sub(q.Bid))
	case q.Spread.Mul(decimal.NewFromInt(100)).GreaterThan(q.Bid.Mul(decimal.NewFromInt(MaxSpreadPercent))):
		return fmt.Errorf("spread %s is wider than 1%% of bid %s", q.Spread, q.Bid)
	case maxSpread.Sign() > 0 && q.Spread.GreaterThan(maxSpread):
		return fmt.Errorf("spread %s is wider than the cap %s", q.Spread, maxSpread)
	case q.Time.IsZero():
		return errors.New("quote has no time")
	}
	return nil
}

// ValidateBars checks bars read from an untrusted source: every price > 0,
// low ≤ min(open, close), high ≥ max(open, close), tick volume ≥ 0, every
// time aligned to tf (whole seconds, a multiple of the bar length) and times
// strictly increasing (no duplicates, oldest first). An empty slice is
// valid. It returns nil or an error naming the first bad bar by index; the
// adapters wrap that in ErrUnavailable.
func ValidateBars(bars []Bar, tf Timeframe) error {
	if !tf.Valid() {
		return fmt.Errorf("timeframe %q is not valid", clip.Runes(string(tf), 16))
	}
	for i, b := range bars {
		if err := CheckBar(b); err != nil {
			return fmt.Errorf("bars[%d]: %w", i, err)
		}
		if !tf.Aligned(b.Time) {
			return fmt.Errorf("bars[%d]: time %s is not aligned to %s", i, b.Time.UTC().Format(time.RFC3339Nano), tf)
		}
		if i > 0 && !b.Time.After(bars[i-1].Time) {
			return fmt.Errorf("bars[%d]: time %s is not after the previous bar's %s", i, b.Time.UTC().Format(time.RFC3339), bars[i-1].Time.UTC().Format(time.RFC3339))
		}
	}
	return nil
}

// CheckBar checks one bar read from an untrusted source: a time, prices
// > 0, low ≤ min(open, close), high ≥ max(open, close), tick volume ≥ 0
// (not the alignment of its time: see ValidateBars).
func CheckBar(b Bar) error {
	switch {
	case b.Time.IsZero():
		return errors.New("time is missing")
	case b.Open.Sign() <= 0, b.High.Sign() <= 0, b.Low.Sign() <= 0, b.Close.Sign() <= 0:
		return fmt.Errorf("prices must be positive (open %s, high %s, low %s, close %s)", b.Open, b.High, b.Low, b.Close)
	case b.High.LessThan(b.Open) || b.High.LessThan(b.Close):
		return fmt.Errorf("high %s is below open %s or close %s", b.High, b.Open, b.Close)
	case b.Low.GreaterThan(b.Open) || b.Low.GreaterThan(b.Close):
		return fmt.Errorf("low %s is above open %s or close %s", b.Low, b.Open, b.Close)
	case b.TickVolume < 0:
		return fmt.Errorf("tick volume %d is negative", b.TickVolume)
	}
	return nil
}

// Aggregate groups bars (sorted oldest first, on a timeframe that divides
// tf) into tf bars: each output bar opens at tf.Align of its first input,
// takes that input's open, the last input's close, the highest high, the
// lowest low and the sum of tick volumes. Periods without input bars are
// skipped, so a weekend leaves a gap rather than flat bars.
func Aggregate(bars []Bar, tf Timeframe) ([]Bar, error) {
	if !tf.Valid() {
		return nil, fmt.Errorf("timeframe %q is not valid", clip.Runes(string(tf), 16))
	}
	out := make([]Bar, 0, len(bars))
	for i, b := range bars {
		t := tf.Align(b.Time)
		if i > 0 && !b.Time.After(bars[i-1].Time) {
			return nil, fmt.Errorf("bars[%d]: time is not after the previous bar's", i)
		}
		if n := len(out); n > 0 && out[n-1].Time.Equal(t) {
			o := &out[n-1]
			if b.High.GreaterThan(o.High) {
				o.High = b.High
			}
			if b.Low.LessThan(o.Low) {
				o.Low = b.Low
			}
			o.Close = b.Close
			o.TickVolume += b.TickVolume
			continue
		}
		b.Time = t
		out = append(out, b)
	}
	return out, nil
}

// floorDiv returns ⌊a/b⌋ for b > 0.
func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && a < 0 {
		q--
	}
	return q
}

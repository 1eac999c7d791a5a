package xau

import (
	"context"
	"fmt"
	"hash/fnv"
	"math"
	"sync"
	"time"

	"github.com/shopspring/decimal"
)

// SimConfig configures NewSimulated. The zero value is usable.
type SimConfig struct {
	// Seed selects the price path. Same seed and clock, same data.
	Seed int64
	// Now is the terminal's clock; nil means time.Now. Nothing after Now
	// is ever revealed.
	Now func() time.Time
	// Symbol is the one symbol served; "" means "XAUUSD".
	Symbol string
	// BasePrice is the level the path wanders around (its long-run
	// anchors stay within about ±21 % of it); zero means 2650. It must lie
	// in [1, 1000000].
	BasePrice decimal.Decimal
	// AnnualVol is the annualized volatility of log prices as a fraction;
	// 0 means 0.17 (17 %, typical of gold). It must lie in (0, 1].
	AnnualVol float64
}

// Defaults of SimConfig.
const (
	// DefaultSymbol is the gold symbol of the simulated terminal.
	DefaultSymbol = "XAUUSD"
	// DefaultAnnualVol is the simulated annualized volatility (17 %).
	DefaultAnnualVol = 0.17
)

// Simulated is a deterministic simulated XAUUSD terminal for development
// and tests. Every value it returns carries SourceSimulated.
//
// # Model
//
// Prices move on a 5-second tick grid. Time is cut into trading days of
// exactly 24 hours, from 22:00 UTC to 22:00 UTC, Monday to Friday (Monday's
// starts Sunday 22:00 UTC); from Friday 22:00 UTC to Sunday 22:00 UTC the
// market is closed and there are no ticks and no bars. The path is built
// from three levels of anchors, each a pure function of (seed, symbol,
// index) computed with a splitmix64 hash, so any instant can be evaluated
// without history:
//
//   - every 64 trading days a long-run anchor, BasePrice·(1 + 0.06·Z);
//   - every trading day a daily anchor: a Brownian bridge with daily
//     volatility AnnualVol/√260 between the two long-run anchors around it;
//   - every tick: a random walk bridged between the two daily anchors of its
//     day, whose variance per tick follows the session: Asia (22:00–07:00
//     UTC) ×0.6 the average, London (07:00–12:00) ×1.1, the London/New York
//     overlap (12:00–16:00) ×1.6, New York (16:00–20:00) ×1.0 and the late
//     session (20:00–22:00) ×0.7 (vol multipliers before normalization).
//     Monday's first tick carries two hours of Asian variance as the
//     weekend gap.
//
// The normal draws are Irwin–Hall sums of four 16-bit uniforms and all path
// arithmetic is in integer micro-dollars, so the data are identical on every
// platform. Prices are rounded to 2 decimals (cents).
//
// A tick's bid is the path value; its spread is drawn per tick between 0.10
// and 0.40 (wider in Asia and the late session, 0.40 in the first minute of
// the week); ask = bid + spread; Last = bid. An M1 bar aggregates the 12
// ticks of its minute (open = first tick, close = last); M5, M15 and H1 bars
// aggregate the same ticks, so they agree exactly with aggregated M1 bars.
// Tick volume per minute is drawn around a session mean (40 in Asia to 220
// in the overlap). A completed bar is a pure function of (seed, symbol,
// timeframe, open time); the bar containing the clock is the partial bar of
// the ticks up to the clock, as in MT5.
//
// Health is always connected; Lag is the age of the last tick (up to 48 h
// on a weekend).
type Simulated struct {
	key    uint64
	symbol string
	now    func() time.Time
	base   int64   // micro-dollars
	sigmaD float64 // daily volatility (fraction)

	mu    sync.Mutex // guards days
	days  [simCachedDays]simCachedDay
	clock int // round-robin slot of the next insertion
}

// simCachedDays is how many recent trading days' ticks a Simulated keeps
// (138 KB each): quotes and recent bars reuse them.
const simCachedDays = 4

// simCachedDay is one cached trading day; ticks is never modified.
type simCachedDay struct {
	k     int64
	ticks []int64
}

// Grid and calendar constants of the simulated terminal.
const (
	simTickSeconds     = 5
	simTicksPerMinute  = 60 / simTickSeconds
	simMinutesPerDay   = 1440
	simTicksPerDay     = simMinutesPerDay * simTicksPerMinute
	simDaySeconds      = 86400
	simDayOpenShift    = 7200 // trading days start at 22:00 UTC: shift by +2 h
	simBlockDays       = 64   // trading days between long-run anchors
	simTradingDaysYear = 260
	simMicro           = 1_000_000 // micro-dollars per dollar
	simCent            = 10_000    // micro-dollars per cent
	simAnchorSpread    = 0.06      // long-run anchor dispersion (fraction)
	simScaleShift      = 20        // fixed-point shift of step scales
)

// Hash streams: each kind of draw has its own.
const (
	simStreamAnchor uint64 = iota + 1
	simStreamDay
	simStreamTick
	simStreamSpread
	simStreamVolume
)

// simSession describes one session of the trading day.
type simSession struct {
	weight    int64 // variance weight per tick (vol multiplier² ×100)
	spreadMin int64 // cents
	spreadMax int64 // cents
	volume    int64 // mean tick volume per minute
}

// simSessionOf returns the session of a UTC hour.
func simSessionOf(hour int) simSession {
	switch {
	case hour >= 7 && hour < 12: // London
		return simSession{weight: 121, spreadMin: 12, spreadMax: 22, volume: 130}
	case hour >= 12 && hour < 16: // London/New York overlap
		return simSession{weight: 256, spreadMin: 10, spreadMax: 18, volume: 220}
	case hour >= 16 && hour < 20: // New York
		return simSession{weight: 100, spreadMin: 12, spreadMax: 25, volume: 120}
	case hour >= 20 && hour < 22: // late
		return simSession{weight: 49, spreadMin: 20, spreadMax: 35, volume: 60}
	default: // Asia, 22:00–07:00
		return simSession{weight: 36, spreadMin: 25, spreadMax: 40, volume: 40}
	}
}

// simWeekendWeight is the extra variance of Monday's first tick: two hours
// of Asian ticks.
const simWeekendWeight = 2 * 3600 / simTickSeconds * 36

// NewSimulated returns a simulated terminal. It fails only on an invalid
// configuration (BasePrice or AnnualVol out of range, malformed Symbol).
func NewSimulated(cfg SimConfig) (*Simulated, error) {
	s := &Simulated{symbol: cfg.Symbol, now: cfg.Now}
	if s.symbol == "" {
		s.symbol = DefaultSymbol
	}
	if err := CheckSymbol(s.symbol); err != nil {
		return nil, fmt.Errorf("xau: simulated terminal: %w", err)
	}
	if s.now == nil {
		s.now = time.Now
	}
	base := cfg.BasePrice
	if base.IsZero() {
		base = decimal.NewFromInt(2650)
	}
	if base.LessThan(decimal.NewFromInt(1)) || base.GreaterThan(decimal.NewFromInt(1_000_000)) {
		return nil, fmt.Errorf("xau: simulated terminal: base price %s is outside [1, 1000000]", base)
	}
	s.base = base.Shift(6).IntPart()
	vol := cfg.AnnualVol
	if vol == 0 {
		vol = DefaultAnnualVol
	}
	if !(vol > 0 && vol <= 1) {
		return nil, fmt.Errorf("xau: simulated terminal: annual volatility %v is outside (0, 1]", vol)
	}
	s.sigmaD = vol / math.Sqrt(simTradingDaysYear)
	h := fnv.New64a()
	h.Write([]byte(s.symbol))
	s.key = simMix(uint64(cfg.Seed)) ^ h.Sum64()
	return s, nil
}

// Symbol returns the one symbol this terminal serves.
func (s *Simulated) Symbol() string { return s.symbol }

// Health reports the simulated terminal: always connected; LastTick is the
// last tick at or before the clock.
func (s *Simulated) Health(ctx context.Context) (Health, error) {
	if err := ContextError(ctx, "health"); err != nil {
		return Health{}, err
	}
	now := s.now().UTC()
	last := time.Unix(simLastTick(now), 0).UTC()
	return Health{
		Connected:  true,
		Terminal:   "simulated",
		Server:     "simulated",
		ServerTime: now,
		LastTick:   last,
		Lag:        now.Sub(last),
		Source:     SourceSimulated,
	}, nil
}

// Quote returns the last tick at or before the clock. While the market is
// closed that is Friday's 21:59:55 UTC tick.
func (s *Simulated) Quote(ctx context.Context, symbol string) (Quote, error) {
	if err := ContextError(ctx, "quote"); err != nil {
		return Quote{}, err
	}
	if err := s.checkSymbol("quote", symbol); err != nil {
		return Quote{}, err
	}
	last := simLastTick(s.now().UTC())
	k, _, ds := simTradingDay(last)
	i := int((last - ds) / simTickSeconds) // 0-based tick index within the day
	ticks := s.cachedDayTicks(k)
	bid := ticks[i]
	spread := s.spread(k, i)
	b, sp := decimal.New(bid, -2), decimal.New(spread, -2)
	return Quote{
		Symbol: s.symbol,
		Bid:    b,
		Ask:    decimal.New(bid+spread, -2),
		Last:   b,
		Spread: sp,
		Time:   time.Unix(last, 0).UTC(),
		Source: SourceSimulated,
	}, nil
}

// Bars returns the most recent count bars up to the clock, oldest first;
// the last one is partial when the clock is inside its period.
func (s *Simulated) Bars(ctx context.Context, symbol string, tf Timeframe, count int) ([]Bar, error) {
	if err := ContextError(ctx, "bars"); err != nil {
		return nil, err
	}
	if err := CheckBarsRequest(symbol, tf, count); err != nil {
		return nil, err
	}
	if err := s.checkSymbol("bars", symbol); err != nil {
		return nil, err
	}
	tfs := int64(tf.Duration() / time.Second)
	last := simLastTick(s.now().UTC())
	opens := make([]int64, count)
	t := floorDiv(last, tfs) * tfs
	for j := count - 1; j >= 0; j-- {
		opens[j] = t
		t = simPrevOpen(t, tfs)
	}
	kLast, _, _ := simTradingDay(last)
	dc := simDayCache{recent: kLast - 1}
	bars := make([]Bar, 0, count)
	for j, t := range opens {
		if j%256 == 0 {
			if err := ContextError(ctx, "bars"); err != nil {
				return nil, err
			}
		}
		end := t + tfs - simTickSeconds // last tick of the period
		if end > last {
			end = last
		}
		bars = append(bars, s.bar(&dc, t, end))
	}
	return bars, nil
}

// History returns the completed bars of symbol on tf whose open time lies
// in [from, to), oldest first, with the spread (in points of 0.01) of each
// bar's closing tick: the rows of an MT5 history export. It serves
// replay.WriteMT5CSV to produce replay fixtures. At most MaxHistoryRows rows.
func (s *Simulated) History(symbol string, tf Timeframe, from, to time.Time) ([]MT5Row, error) {
	if err := CheckBarsRequest(symbol, tf, 1); err != nil {
		return nil, err
	}
	if err := s.checkSymbol("history", symbol); err != nil {
		return nil, err
	}
	tfs := int64(tf.Duration() / time.Second)
	now := s.now().UTC().Unix()
	dc := simDayCache{recent: math.MaxInt64}
	var rows []MT5Row
	for t := tf.Align(from).Unix(); t < to.Unix() && t+tfs <= now; t += tfs {
		if t < from.Unix() {
			continue
		}
		if _, open, _ := simTradingDay(t); !open {
			continue
		}
		if len(rows) == MaxHistoryRows {
			return nil, BadRequest("history", fmt.Sprintf("more than %d rows requested", MaxHistoryRows))
		}
		end := t + tfs - simTickSeconds
		b := s.bar(&dc, t, end)
		k, _, ds := simTradingDay(end)
		rows = append(rows, MT5Row{Bar: b, Spread: s.spread(k, int((end-ds)/simTickSeconds))})
	}
	return rows, nil
}

// MT5Row is one row of a MetaTrader 5 history export: a bar plus the real
// volume (<VOL>, 0 for CFDs such as XAUUSD) and the spread of the bar in
// points (<SPREAD>).
type MT5Row struct {
	Bar
	// Volume is the exchange volume (<VOL>); 0 for CFD symbols.
	Volume int64
	// Spread is the bar's spread in points (<SPREAD>), ≥ 0.
	Spread int64
}

// MaxHistoryRows bounds Simulated.History and the rows of a replay file.
const MaxHistoryRows = 1_000_000

// checkSymbol accepts exactly the configured symbol.
func (s *Simulated) checkSymbol(op, symbol string) error {
	if err := CheckSymbol(symbol); err != nil {
		return err
	}
	if symbol != s.symbol {
		return UnknownSymbol(op, symbol)
	}
	return nil
}

// simDayCache holds the ticks of the trading day last used by one call.
// Days from recent on come from the terminal's shared cache; older ones are
// computed into buf.
type simDayCache struct {
	recent int64
	k      int64
	ticks  []int64
	buf    []int64
}

// day returns the ticks of trading day k.
func (dc *simDayCache) day(s *Simulated, k int64) []int64 {
	if dc.ticks == nil || dc.k != k {
		if k >= dc.recent {
			dc.ticks = s.cachedDayTicks(k)
		} else {
			dc.buf = s.dayTicks(k, dc.buf)
			dc.ticks = dc.buf
		}
		dc.k = k
	}
	return dc.ticks
}

// cachedDayTicks returns the ticks of trading day k from the terminal's
// small cache of recent days, computing them on a miss. The slice must not
// be modified.
func (s *Simulated) cachedDayTicks(k int64) []int64 {
	s.mu.Lock()
	for _, d := range s.days {
		if d.ticks != nil && d.k == k {
			s.mu.Unlock()
			return d.ticks
		}
	}
	s.mu.Unlock()
	ticks := s.dayTicks(k, nil)
	s.mu.Lock()
	s.days[s.clock] = simCachedDay{k: k, ticks: ticks}
	s.clock = (s.clock + 1) % simCachedDays
	s.mu.Unlock()
	return ticks
}

// bar aggregates the ticks from open time t to the tick at end (inclusive,
// same trading day) into one bar.
func (s *Simulated) bar(dc *simDayCache, t, end int64) Bar {
	k, _, ds := simTradingDay(t)
	ticks := dc.day(s, k)
	i0 := int((t - ds) / simTickSeconds)
	i1 := int((end - ds) / simTickSeconds)
	hi, lo := ticks[i0], ticks[i0]
	for _, p := range ticks[i0 : i1+1] {
		hi = max(hi, p)
		lo = min(lo, p)
	}
	var vol int64
	for m := i0 / simTicksPerMinute; m <= i1/simTicksPerMinute; m++ {
		n := min(i1, m*simTicksPerMinute+simTicksPerMinute-1) - max(i0, m*simTicksPerMinute) + 1
		vol += s.minuteVolume(k, m) * int64(n) / simTicksPerMinute
	}
	return Bar{
		Time:       time.Unix(t, 0).UTC(),
		Open:       decimal.New(ticks[i0], -2),
		High:       decimal.New(hi, -2),
		Low:        decimal.New(lo, -2),
		Close:      decimal.New(ticks[i1], -2),
		TickVolume: vol,
	}
}

// dayTicks returns the bids in cents of the simTicksPerDay ticks of trading
// day k (tick i at dayStart + 5·i seconds), reusing buf when large enough.
func (s *Simulated) dayTicks(k int64, buf []int64) []int64 {
	if cap(buf) < simTicksPerDay {
		buf = make([]int64, simTicksPerDay)
	}
	buf = buf[:simTicksPerDay]
	a0, a1 := s.dayAnchor(k), s.dayAnchor(k+1)
	var extra int64
	if floorMod(k, 5) == 0 { // Monday: the weekend gap
		extra = simWeekendWeight
	}
	// Total variance weight of the day and the per-hour step scales.
	var total int64
	for h := range 24 {
		total += simSessionOf(h).weight * 3600 / simTickSeconds
	}
	total += extra
	var scales [24]int64
	for h := range 24 {
		scales[h] = simScale(float64(a0) * s.sigmaD * math.Sqrt(float64(simSessionOf(h).weight)/float64(total)))
	}
	gap := simScale(float64(a0) * s.sigmaD * math.Sqrt(float64(extra)/float64(total)))
	// Pass 1: the unbridged walk S_i.
	var sum int64
	for i := range buf {
		h := (22 + i/(3600/simTickSeconds)) % 24
		step := simNormal(s.hash(simStreamTick, k, int64(i))) * scales[h] >> simScaleShift
		if i == 0 && extra != 0 {
			step += simNormal(s.hash(simStreamTick, k, -1)) * gap >> simScaleShift
		}
		sum += step
		buf[i] = sum
	}
	// Pass 2: bridge to the next anchor in variance time and round to cents.
	miss := sum - (a1 - a0)
	var v int64
	for i := range buf {
		h := (22 + i/(3600/simTickSeconds)) % 24
		v += simSessionOf(h).weight
		if i == 0 {
			v += extra
		}
		p := a0 + buf[i] - v*miss/total
		c := (p + simCent/2) / simCent
		buf[i] = max(c, 1)
	}
	return buf
}

// dayAnchor returns the price (micro-dollars) at the start of trading day k:
// a Brownian bridge with daily volatility between long-run anchors.
func (s *Simulated) dayAnchor(k int64) int64 {
	blk := floorDiv(k, simBlockDays)
	j := k - blk*simBlockDays
	a0 := s.longAnchor(blk)
	if j == 0 {
		return a0
	}
	a1 := s.longAnchor(blk + 1)
	scale := simScale(float64(a0) * s.sigmaD)
	var sj, sum int64
	for i := int64(1); i <= simBlockDays; i++ {
		sum += simNormal(s.hash(simStreamDay, blk, i)) * scale >> simScaleShift
		if i == j {
			sj = sum
		}
	}
	return a0 + sj - j*(sum-(a1-a0))/simBlockDays
}

// longAnchor returns the long-run anchor (micro-dollars) of block blk.
func (s *Simulated) longAnchor(blk int64) int64 {
	a := s.base + simNormal(s.hash(simStreamAnchor, blk, 0))*simScale(float64(s.base)*simAnchorSpread)>>simScaleShift
	return max(a, s.base/4)
}

// spread returns the spread in cents of tick i of trading day k.
func (s *Simulated) spread(k int64, i int) int64 {
	if floorMod(k, 5) == 0 && i < simTicksPerMinute {
		return 40 // the first minute of the week
	}
	ss := simSessionOf((22 + i/(3600/simTickSeconds)) % 24)
	return ss.spreadMin + int64(s.hash(simStreamSpread, k, int64(i))%uint64(ss.spreadMax-ss.spreadMin+1))
}

// minuteVolume returns the tick volume of minute m of trading day k: the
// session mean times a factor in [0.6, 1.4].
func (s *Simulated) minuteVolume(k int64, m int) int64 {
	ss := simSessionOf((22 + m/60) % 24)
	return ss.volume * (60 + int64(s.hash(simStreamVolume, k, int64(m))%81)) / 100
}

// hash derives 64 random bits from the terminal's key, a stream and two indices.
func (s *Simulated) hash(stream uint64, a, b int64) uint64 {
	return simMix(simMix(simMix(s.key^stream*0x9e3779b97f4a7c15)^uint64(a)) ^ uint64(b))
}

// simMix is the splitmix64 finalizer.
func simMix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

// simNormalStd is the standard deviation of simNormal: 4·65536/√12.
const simNormalStd = 4 * 65536 / 3.464101615137754587054892683011744733885610507620761256111613958903866

// simNormal turns 64 random bits into an approximately normal integer with
// mean 0 and standard deviation simNormalStd (an Irwin–Hall sum of four
// 16-bit uniforms, bounded at ±3.46 standard deviations).
func simNormal(h uint64) int64 {
	sum := int64(h&0xffff) + int64(h>>16&0xffff) + int64(h>>32&0xffff) + int64(h>>48)
	return 2*sum - 4*0xffff
}

// simScale returns the fixed-point multiplier that turns simNormal into a
// normal with standard deviation std: simNormal·scale >> simScaleShift.
func simScale(std float64) int64 {
	return int64(math.Round(float64(std/simNormalStd) * (1 << simScaleShift)))
}

// simTradingDay maps a Unix time to its trading day k (Monday to Friday,
// 5 per week, counted from the epoch), whether the market is open, and the
// day's start (22:00 UTC of the previous calendar day). While the market is
// closed it returns the Friday before.
func simTradingDay(t int64) (k int64, open bool, start int64) {
	c := floorDiv(t+simDayOpenShift, simDaySeconds) // shifted calendar day
	w := floorDiv(c+3, 7)                           // week, starting Monday
	dow := c + 3 - 7*w                              // 0 = Monday … 6 = Sunday
	if dow >= 5 {
		k = 5*w + 4
		return k, false, simDayStart(k)
	}
	return 5*w + dow, true, c*simDaySeconds - simDayOpenShift
}

// simDayStart returns the start (Unix seconds) of trading day k.
func simDayStart(k int64) int64 {
	w := floorDiv(k, 5)
	c := 7*w + (k - 5*w) - 3
	return c*simDaySeconds - simDayOpenShift
}

// simLastTick returns the time (Unix seconds) of the last tick at or before
// now: now rounded down to the 5-second grid while the market is open, the
// Friday's last tick (21:59:55 UTC) while it is closed.
func simLastTick(now time.Time) int64 {
	t := now.Unix()
	k, open, ds := simTradingDay(t)
	if !open {
		return simDayStart(k) + simDaySeconds - simTickSeconds
	}
	return ds + (t-ds)/simTickSeconds*simTickSeconds
}

// simPrevOpen returns the open time of the bar before the one opening at t
// (period tfs seconds), skipping the weekend.
func simPrevOpen(t, tfs int64) int64 {
	p := t - tfs
	if k, open, _ := simTradingDay(p); !open {
		return simDayStart(k) + simDaySeconds - tfs
	}
	return p
}

// floorMod returns a mod b in [0, b) for b > 0.
func floorMod(a, b int64) int64 { return a - floorDiv(a, b)*b }

// Source implements Terminal: simulated data.
func (s *Simulated) Source() Source { return SourceSimulated }

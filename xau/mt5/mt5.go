package mt5

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/shopspring/decimal"

	"github.com/seed1284c1d2/svc/internal/clip"
	"github.com/seed1284c1d2/svc/xau"
)

// Config configures New.
type Config struct {
	// BaseURL is the bridge's address, e.g. "http://127.0.0.1:8765" (an SSH
	// tunnel or WireGuard peer) or "https://mt5-bridge.internal:8443" (TLS
	// in front of the bridge). A path prefix is kept. Required; http or
	// https, no credentials, query or fragment.
	BaseURL string
	// Token is the bridge's shared secret, sent in the X-Bridge-Token
	// header. Required: at least 16 printable ASCII characters, no spaces.
	Token string
	// HTTPClient is used for the calls (custom TLS roots, proxies); nil
	// means a dedicated client. Redirects are never followed either way,
	// so the token cannot leak to another host.
	HTTPClient *http.Client
	// Timeout bounds each call; 0 means DefaultTimeout (3 s).
	Timeout time.Duration
	// MaxSpread is an absolute cap on a quote's spread in price units
	// (e.g. 2.00 for XAUUSD); zero applies only the relative cap of
	// ValidateQuote (1 % of the bid).
	MaxSpread decimal.Decimal
	// MaxBodyBytes bounds a response body; 0 means 4 MiB.
	MaxBodyBytes int64
	// MaxClockSkew is how far in the future a tick or bar time may lie
	// before the data are refused; 0 means 2 minutes. A bridge whose
	// server-time-zone setting is wrong by hours trips it.
	MaxClockSkew time.Duration
	// Now is the clock used to judge data times; nil means time.Now.
	Now func() time.Time
}

// Defaults of Config.
const (
	// DefaultTimeout bounds one bridge call.
	DefaultTimeout = 3 * time.Second
	// DefaultMaxBody bounds a bridge response body (5000 bars ≈ 700 KB).
	DefaultMaxBody = 4 << 20
	// DefaultMaxClockSkew is the tolerance for data times ahead of our clock.
	DefaultMaxClockSkew = 2 * time.Minute
	// TokenHeader carries the shared token on every bridge request.
	TokenHeader = "X-Bridge-Token"
)

// Bridge is a Terminal backed by a MetaTrader 5 terminal through the
// HTTP bridge of xau/mt5/bridge (the contract is in bridge/README.md).
// Every value carries SourceMT5.
//
// It never passes bad upstream data on: each response is decoded strictly
// (JSON content type, bounded size, no unknown or missing fields, numbers
// as JSON numbers, times as RFC 3339 UTC) and validated (ValidateQuote,
// ValidateBars, the echoed symbol and timeframe, no time beyond the clock
// plus MaxClockSkew). Anything wrong is ErrUnavailable with a reason such
// as "upstream sent inconsistent bars". A 400 from the bridge is
// ErrUnknownSymbol (code "unknown_symbol") or ErrBadRequest; 401/403 is
// ErrUnavailable "bridge rejected token", which an operator should alert on.
type Bridge struct {
	base      *url.URL
	token     string
	client    *http.Client
	timeout   time.Duration
	maxSpread decimal.Decimal
	maxBody   int64
	skew      time.Duration
	now       func() time.Time
}

// New returns a Terminal talking to the bridge at cfg.BaseURL. It
// checks the configuration only; it makes no call.
func New(cfg Config) (*Bridge, error) {
	u, err := url.Parse(cfg.BaseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("xau: MT5 bridge: base URL %q is not an http(s) URL with a host", clip.Runes(cfg.BaseURL, 60))
	}
	if u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return nil, errors.New("xau: MT5 bridge: base URL must not carry credentials, a query or a fragment")
	}
	if len(cfg.Token) < 16 {
		return nil, errors.New("xau: MT5 bridge: token must be at least 16 characters")
	}
	for i := 0; i < len(cfg.Token); i++ {
		if c := cfg.Token[i]; c <= ' ' || c > '~' {
			return nil, errors.New("xau: MT5 bridge: token must be printable ASCII without spaces")
		}
	}
	b := &Bridge{
		base:      u,
		token:     cfg.Token,
		timeout:   cfg.Timeout,
		maxSpread: cfg.MaxSpread,
		maxBody:   cfg.MaxBodyBytes,
		skew:      cfg.MaxClockSkew,
		now:       cfg.Now,
	}
	if b.timeout == 0 {
		b.timeout = DefaultTimeout
	}
	if b.timeout < 0 || b.timeout > time.Minute {
		return nil, fmt.Errorf("xau: MT5 bridge: timeout %s is outside (0, 1m]", b.timeout)
	}
	if b.maxSpread.Sign() < 0 {
		return nil, fmt.Errorf("xau: MT5 bridge: max spread %s is negative", b.maxSpread)
	}
	if b.maxBody == 0 {
		b.maxBody = DefaultMaxBody
	}
	if b.maxBody < 0 {
		return nil, errors.New("xau: MT5 bridge: max body size is negative")
	}
	if b.skew == 0 {
		b.skew = DefaultMaxClockSkew
	}
	if b.skew < 0 {
		return nil, errors.New("xau: MT5 bridge: max clock skew is negative")
	}
	if b.now == nil {
		b.now = time.Now
	}
	var c http.Client
	if cfg.HTTPClient != nil {
		c = *cfg.HTTPClient
	} else {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.MaxIdleConnsPerHost = 8
		tr.ResponseHeaderTimeout = b.timeout
		c.Transport = tr
	}
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	b.client = &c
	return b, nil
}

// Wire types of the bridge contract. Pointers and raw messages detect
// missing fields; DisallowUnknownFields rejects unknown ones.
type (
	mt5WireHealth struct {
		Connected    *bool   `json:"connected"`
		Terminal     *string `json:"terminal"`
		Server       *string `json:"server"`
		ServerTime   *string `json:"serverTime"`
		LastTickTime *string `json:"lastTickTime"`
	}
	mt5WireQuote struct {
		Symbol *string         `json:"symbol"`
		Bid    json.RawMessage `json:"bid"`
		Ask    json.RawMessage `json:"ask"`
		Last   json.RawMessage `json:"last"`
		Time   *string         `json:"time"`
	}
	mt5WireBar struct {
		Time       *string         `json:"time"`
		Open       json.RawMessage `json:"open"`
		High       json.RawMessage `json:"high"`
		Low        json.RawMessage `json:"low"`
		Close      json.RawMessage `json:"close"`
		TickVolume *int64          `json:"tick_volume"`
	}
	mt5WireBars struct {
		Symbol    *string       `json:"symbol"`
		Timeframe *string       `json:"timeframe"`
		Bars      *[]mt5WireBar `json:"bars"`
	}
	mt5WireError struct {
		Error string `json:"error"`
		Code  string `json:"code"`
	}
)

// Health calls GET /health. A reachable bridge whose terminal is not
// connected yields Connected false and ErrUnavailable "terminal
// disconnected".
func (b *Bridge) Health(ctx context.Context) (xau.Health, error) {
	h := xau.Health{Terminal: "MetaTrader 5", Source: xau.SourceMT5}
	var w mt5WireHealth
	if err := b.get(ctx, "health", "/health", nil, "", &w); err != nil {
		return h, err
	}
	if w.Connected == nil || w.Terminal == nil || w.Server == nil || w.ServerTime == nil {
		return h, xau.Unavailable("health", "bridge sent an incomplete health report", errors.New("missing connected, terminal, server or serverTime"))
	}
	h.Terminal = clip.Runes(*w.Terminal, 64)
	h.Server = clip.Runes(*w.Server, 64)
	st, err := parseBridgeTime(*w.ServerTime)
	if err != nil {
		return h, xau.Unavailable("health", "bridge sent a malformed health report", fmt.Errorf("serverTime: %w", err))
	}
	h.ServerTime = st
	now := b.now().UTC()
	if w.LastTickTime != nil {
		lt, err := parseBridgeTime(*w.LastTickTime)
		if err != nil {
			return h, xau.Unavailable("health", "bridge sent a malformed health report", fmt.Errorf("lastTickTime: %w", err))
		}
		if lt.After(now.Add(b.skew)) {
			return h, xau.Unavailable("health", "bridge reports ticks from the future (check its server time zone)", fmt.Errorf("lastTickTime %s is after %s", lt.Format(time.RFC3339), now.Format(time.RFC3339)))
		}
		h.LastTick = lt
		h.Lag = max(now.Sub(lt), 0)
	}
	if !*w.Connected {
		return h, xau.Unavailable("health", "terminal disconnected", nil)
	}
	h.Connected = true
	return h, nil
}

// Quote calls GET /quote?symbol=.
func (b *Bridge) Quote(ctx context.Context, symbol string) (xau.Quote, error) {
	if err := xau.ContextError(ctx, "quote"); err != nil {
		return xau.Quote{}, err
	}
	if err := xau.CheckSymbol(symbol); err != nil {
		return xau.Quote{}, err
	}
	var w mt5WireQuote
	if err := b.get(ctx, "quote", "/quote", url.Values{"symbol": {symbol}}, symbol, &w); err != nil {
		return xau.Quote{}, err
	}
	bad := func(cause error) (xau.Quote, error) {
		return xau.Quote{}, xau.Unavailable("quote", "upstream sent an invalid quote", cause)
	}
	if w.Symbol == nil || w.Bid == nil || w.Ask == nil || w.Last == nil || w.Time == nil {
		return bad(errors.New("missing symbol, bid, ask, last or time"))
	}
	if *w.Symbol != symbol {
		return bad(fmt.Errorf("asked for %q, got %q", symbol, clip.Runes(*w.Symbol, 32)))
	}
	var q xau.Quote
	var err error
	for _, f := range []struct {
		name string
		raw  json.RawMessage
		dst  *decimal.Decimal
	}{{"bid", w.Bid, &q.Bid}, {"ask", w.Ask, &q.Ask}, {"last", w.Last, &q.Last}} {
		if *f.dst, err = parseBridgeNumber(f.raw); err != nil {
			return bad(fmt.Errorf("%s: %w", f.name, err))
		}
	}
	if q.Time, err = parseBridgeTime(*w.Time); err != nil {
		return bad(fmt.Errorf("time: %w", err))
	}
	q.Symbol = symbol
	q.Source = xau.SourceMT5
	q.Spread = q.Ask.Sub(q.Bid)
	if q.Last.IsZero() {
		q.Last = q.Bid
	}
	if err := xau.ValidateQuote(q, b.maxSpread); err != nil {
		return bad(err)
	}
	if now := b.now(); q.Time.After(now.Add(b.skew)) {
		return xau.Quote{}, xau.Unavailable("quote", "upstream sent a quote from the future (check the bridge's server time zone)", fmt.Errorf("time %s is after %s", q.Time.Format(time.RFC3339), now.UTC().Format(time.RFC3339)))
	}
	return q, nil
}

// Bars calls GET /bars?symbol=&timeframe=&count=.
func (b *Bridge) Bars(ctx context.Context, symbol string, tf xau.Timeframe, count int) ([]xau.Bar, error) {
	if err := xau.ContextError(ctx, "bars"); err != nil {
		return nil, err
	}
	if err := xau.CheckBarsRequest(symbol, tf, count); err != nil {
		return nil, err
	}
	var w mt5WireBars
	q := url.Values{"symbol": {symbol}, "timeframe": {string(tf)}, "count": {strconv.Itoa(count)}}
	if err := b.get(ctx, "bars", "/bars", q, symbol, &w); err != nil {
		return nil, err
	}
	inconsistent := func(cause error) ([]xau.Bar, error) {
		return nil, xau.Unavailable("bars", "upstream sent inconsistent bars", cause)
	}
	if w.Symbol == nil || w.Timeframe == nil || w.Bars == nil {
		return inconsistent(errors.New("missing symbol, timeframe or bars"))
	}
	if *w.Symbol != symbol || *w.Timeframe != string(tf) {
		return inconsistent(fmt.Errorf("asked for %s %s, got %q %q", symbol, tf, clip.Runes(*w.Symbol, 32), clip.Runes(*w.Timeframe, 8)))
	}
	wb := *w.Bars
	if len(wb) == 0 {
		return nil, xau.Unavailable("bars", "upstream sent no bars", nil)
	}
	if len(wb) > count {
		return inconsistent(fmt.Errorf("asked for %d bars, got %d", count, len(wb)))
	}
	bars := make([]xau.Bar, len(wb))
	for i, x := range wb {
		if x.Time == nil || x.Open == nil || x.High == nil || x.Low == nil || x.Close == nil || x.TickVolume == nil {
			return inconsistent(fmt.Errorf("bars[%d]: missing time, open, high, low, close or tick_volume", i))
		}
		t, err := parseBridgeTime(*x.Time)
		if err != nil {
			return inconsistent(fmt.Errorf("bars[%d].time: %w", i, err))
		}
		bars[i] = xau.Bar{Time: t, TickVolume: *x.TickVolume}
		for _, f := range []struct {
			name string
			raw  json.RawMessage
			dst  *decimal.Decimal
		}{{"open", x.Open, &bars[i].Open}, {"high", x.High, &bars[i].High}, {"low", x.Low, &bars[i].Low}, {"close", x.Close, &bars[i].Close}} {
			if *f.dst, err = parseBridgeNumber(f.raw); err != nil {
				return inconsistent(fmt.Errorf("bars[%d].%s: %w", i, f.name, err))
			}
		}
	}
	if err := xau.ValidateBars(bars, tf); err != nil {
		return inconsistent(err)
	}
	if now, last := b.now(), bars[len(bars)-1].Time; last.After(now.Add(b.skew)) {
		return nil, xau.Unavailable("bars", "upstream sent bars from the future (check the bridge's server time zone)", fmt.Errorf("last bar opens at %s, after %s", last.Format(time.RFC3339), now.UTC().Format(time.RFC3339)))
	}
	return bars, nil
}

// get performs one bridge call and decodes a 200 response strictly into
// dst; every other outcome becomes an *Error.
func (b *Bridge) get(ctx context.Context, op, path string, query url.Values, symbol string, dst any) error {
	if err := xau.ContextError(ctx, op); err != nil {
		return err
	}
	u := *b.base
	u.Path = strings.TrimRight(u.Path, "/") + path
	u.RawPath = ""
	u.RawQuery = query.Encode()
	cctx, cancel := context.WithTimeout(ctx, b.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(cctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return xau.Unavailable(op, "bridge request could not be built", err)
	}
	req.Header.Set(TokenHeader, b.token)
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", "svc-xau")
	resp, err := b.client.Do(req)
	if err != nil {
		return b.transportError(ctx, cctx, op, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, b.maxBody+1))
	if err != nil {
		return b.transportError(ctx, cctx, op, err)
	}
	if int64(len(body)) > b.maxBody {
		return xau.Unavailable(op, "bridge response too large", fmt.Errorf("status %d, body over %d bytes", resp.StatusCode, b.maxBody))
	}
	switch sc := resp.StatusCode; {
	case sc == http.StatusOK:
	case sc == http.StatusBadRequest:
		code := bridgeErrorCode(body)
		if code == "unknown_symbol" {
			return xau.UnknownSymbol(op, symbol)
		}
		if code == "" {
			code = "bad_request"
		}
		return &xau.Error{Op: op, Kind: xau.ErrBadRequest, Reason: "bridge rejected the request (" + code + ")"}
	case sc == http.StatusUnauthorized || sc == http.StatusForbidden:
		return xau.Unavailable(op, "bridge rejected token", fmt.Errorf("status %d", sc))
	case sc == http.StatusServiceUnavailable:
		return xau.Unavailable(op, "terminal disconnected", fmt.Errorf("status 503, code %q", bridgeErrorCode(body)))
	case sc == http.StatusNotFound:
		return xau.Unavailable(op, "bridge endpoint not found (check the bridge URL)", fmt.Errorf("status 404 for %s", u.Path))
	default:
		return xau.Unavailable(op, fmt.Sprintf("bridge error (status %d)", sc), fmt.Errorf("body %q", clip.Runes(string(body), 120)))
	}
	mt, _, err := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if err != nil || mt != "application/json" {
		return xau.Unavailable(op, "bridge sent a non-JSON response", fmt.Errorf("content type %q, body %q", clip.Runes(resp.Header.Get("Content-Type"), 40), clip.Runes(string(body), 80)))
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		return xau.Unavailable(op, "bridge sent malformed JSON", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return xau.Unavailable(op, "bridge sent malformed JSON", errors.New("data after the JSON value"))
	}
	return nil
}

// transportError classifies a failed round trip or body read.
func (b *Bridge) transportError(parent, call context.Context, op string, err error) error {
	switch {
	case parent.Err() != nil:
		return xau.ContextError(parent, op)
	case errors.Is(call.Err(), context.DeadlineExceeded), errors.Is(err, context.DeadlineExceeded):
		return xau.Unavailable(op, "bridge timed out", fmt.Errorf("after %s: %w", b.timeout, context.DeadlineExceeded))
	}
	var ne interface{ Timeout() bool }
	if errors.As(err, &ne) && ne.Timeout() {
		return xau.Unavailable(op, "bridge timed out", fmt.Errorf("%w (%v)", context.DeadlineExceeded, err))
	}
	return xau.Unavailable(op, "bridge unreachable", err)
}

// bridgeErrorCode extracts a short code from an error body, "" if none.
func bridgeErrorCode(body []byte) string {
	var e mt5WireError
	if json.Unmarshal(body, &e) != nil || len(e.Code) > 40 {
		return ""
	}
	for i := 0; i < len(e.Code); i++ {
		if c := e.Code[i]; !(c >= 'a' && c <= 'z' || c == '_') {
			return ""
		}
	}
	return e.Code
}

// parseBridgeTime parses an RFC 3339 time in UTC ("Z"), with optional
// fractional seconds.
func parseBridgeTime(s string) (time.Time, error) {
	if !strings.HasSuffix(s, "Z") {
		return time.Time{}, fmt.Errorf("time %q is not RFC 3339 UTC (…Z)", clip.Runes(s, 40))
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("time %q is not RFC 3339", clip.Runes(s, 40))
	}
	return t.UTC(), nil
}

// parseBridgeNumber parses a JSON number (not a string, not null) exactly.
func parseBridgeNumber(raw json.RawMessage) (decimal.Decimal, error) {
	s := string(raw)
	if len(s) == 0 || len(s) > 40 || !(s[0] == '-' || s[0] >= '0' && s[0] <= '9') {
		return decimal.Decimal{}, fmt.Errorf("%q is not a JSON number", clip.Runes(s, 40))
	}
	d, err := decimal.NewFromString(s)
	if err != nil {
		return decimal.Decimal{}, fmt.Errorf("%q is not a JSON number", clip.Runes(s, 40))
	}
	// Judge the exponent before comparing: comparing 1e999999999 would
	// materialize a billion-digit integer.
	if d.Exponent() < -12 || d.Exponent() > 12 || d.Abs().GreaterThan(decimal.New(1, 12)) {
		return decimal.Decimal{}, fmt.Errorf("%q is out of range", clip.Runes(s, 40))
	}
	return d, nil
}

// Source implements Terminal: mt5 data.
func (m *Bridge) Source() xau.Source { return xau.SourceMT5 }

package mt5

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/seed1284c1d2/svc/xau"
)

const testBridgeToken = "0123456789abcdef-test-token"

// fakeBridge implements the bridge contract of bridge/README.md on top of
// a Terminal, with knobs to misbehave.
type fakeBridge struct {
	token     string
	term      xau.Terminal
	down      atomic.Bool
	hits      atomic.Int64
	lastToken atomic.Value

	mu       sync.Mutex
	mutate   func(path string, body map[string]any)            // edits a 200 body before encoding
	override func(w http.ResponseWriter, r *http.Request) bool // handles the request itself when true
}

func (f *fakeBridge) setMutate(m func(string, map[string]any)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.mutate = m
}

func (f *fakeBridge) setOverride(o func(http.ResponseWriter, *http.Request) bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.override = o
}

func (f *fakeBridge) fail(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]string{"error": msg, "code": code})
}

func (f *fakeBridge) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.hits.Add(1)
	f.lastToken.Store(r.Header.Get(TokenHeader))
	f.mu.Lock()
	override, mutate := f.override, f.mutate
	f.mu.Unlock()
	if r.Method != http.MethodGet {
		w.WriteHeader(http.StatusMethodNotAllowed)
		return
	}
	if subtle.ConstantTimeCompare([]byte(r.Header.Get(TokenHeader)), []byte(f.token)) != 1 {
		f.fail(w, http.StatusUnauthorized, "unauthorized", "missing or invalid token")
		return
	}
	if override != nil && override(w, r) {
		return
	}
	ctx := r.Context()
	q := r.URL.Query()
	var body map[string]any
	switch strings.TrimPrefix(r.URL.Path, "/mt5") {
	case "/health":
		h, _ := f.term.Health(ctx)
		body = map[string]any{
			"connected":    !f.down.Load(),
			"terminal":     "MetaTrader 5 build 4755",
			"server":       "Fake-Live",
			"serverTime":   h.ServerTime.Format(time.RFC3339Nano),
			"lastTickTime": h.LastTick.Format(time.RFC3339Nano),
		}
	case "/quote":
		if f.down.Load() {
			f.fail(w, http.StatusServiceUnavailable, "terminal_disconnected", "terminal is not connected")
			return
		}
		qt, err := f.term.Quote(ctx, q.Get("symbol"))
		if errors.Is(err, xau.ErrBadRequest) {
			f.fail(w, http.StatusBadRequest, "unknown_symbol", "symbol is not served by this bridge")
			return
		}
		body = map[string]any{
			"symbol": qt.Symbol,
			"bid":    json.Number(qt.Bid.String()),
			"ask":    json.Number(qt.Ask.String()),
			"last":   json.Number(qt.Last.String()),
			"time":   qt.Time.Format("2006-01-02T15:04:05.000Z"),
		}
	case "/bars":
		if f.down.Load() {
			f.fail(w, http.StatusServiceUnavailable, "terminal_disconnected", "terminal is not connected")
			return
		}
		tf, err := xau.ParseTimeframe(q.Get("timeframe"))
		if err != nil {
			f.fail(w, http.StatusBadRequest, "bad_timeframe", "timeframe must be M1, M5, M15 or H1")
			return
		}
		count, err := strconv.Atoi(q.Get("count"))
		if err != nil || count < 1 || count > xau.MaxBars {
			f.fail(w, http.StatusBadRequest, "bad_count", "count must be 1..5000")
			return
		}
		bars, err := f.term.Bars(ctx, q.Get("symbol"), tf, count)
		if errors.Is(err, xau.ErrBadRequest) {
			f.fail(w, http.StatusBadRequest, "unknown_symbol", "symbol is not served by this bridge")
			return
		}
		list := make([]any, len(bars))
		for i, b := range bars {
			list[i] = map[string]any{
				"time":        b.Time.Format(time.RFC3339),
				"open":        json.Number(b.Open.String()),
				"high":        json.Number(b.High.String()),
				"low":         json.Number(b.Low.String()),
				"close":       json.Number(b.Close.String()),
				"tick_volume": b.TickVolume,
			}
		}
		body = map[string]any{"symbol": q.Get("symbol"), "timeframe": string(tf), "bars": list}
	default:
		f.fail(w, http.StatusNotFound, "not_found", "no such endpoint")
		return
	}
	if mutate != nil {
		mutate(r.URL.Path, body)
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(body)
}

// bridgeFixture is a fake bridge on 127.0.0.1 over a simulated terminal
// and a client of it, sharing one clock.
type bridgeFixture struct {
	sim    *xau.Simulated
	fake   *fakeBridge
	srv    *httptest.Server
	client *Bridge
	now    time.Time
}

func newBridgeFixture(t *testing.T, mod func(*Config)) *bridgeFixture {
	t.Helper()
	fx := &bridgeFixture{now: simWed}
	fx.sim = newSim(t, 42, fx.now)
	fx.fake = &fakeBridge{token: testBridgeToken, term: fx.sim}
	fx.srv = httptest.NewServer(fx.fake) // listens on 127.0.0.1
	t.Cleanup(fx.srv.Close)
	cfg := Config{BaseURL: fx.srv.URL, Token: testBridgeToken, Now: func() time.Time { return fx.now }}
	if mod != nil {
		mod(&cfg)
	}
	c, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	fx.client = c
	return fx
}

// wantUnavailable asserts err is ErrUnavailable with a reason containing want.
func wantUnavailable(t *testing.T, what string, err error, want string) {
	t.Helper()
	if !errors.Is(err, xau.ErrUnavailable) || errors.Is(err, xau.ErrBadRequest) {
		t.Fatalf("%s: err = %v, want ErrUnavailable", what, err)
	}
	if !strings.Contains(xau.Reason(err), want) {
		t.Fatalf("%s: reason %q, want it to contain %q (err %v)", what, xau.Reason(err), want, err)
	}
}

func TestMT5BridgeHappyPath(t *testing.T) {
	fx := newBridgeFixture(t, nil)
	ctx := context.Background()
	h, err := fx.client.Health(ctx)
	if err != nil || !h.Connected || h.Source != xau.SourceMT5 || h.Server != "Fake-Live" || h.Lag != 2250*time.Millisecond || !h.ServerTime.Equal(simWed) {
		t.Fatalf("Health = %+v, %v", h, err)
	}
	if got := fx.fake.lastToken.Load(); got != testBridgeToken {
		t.Fatalf("token header %q", got)
	}
	q, err := fx.client.Quote(ctx, "XAUUSD")
	if err != nil {
		t.Fatal(err)
	}
	sq, _ := fx.sim.Quote(ctx, "XAUUSD")
	if q.Source != xau.SourceMT5 || !q.Bid.Equal(sq.Bid) || !q.Ask.Equal(sq.Ask) || !q.Spread.Equal(sq.Spread) || !q.Time.Equal(sq.Time) || q.Symbol != "XAUUSD" {
		t.Fatalf("Quote = %+v, simulated %+v", q, sq)
	}
	for _, tf := range xau.Timeframes() {
		got, err := fx.client.Bars(ctx, "XAUUSD", tf, 500)
		if err != nil {
			t.Fatalf("%s: %v", tf, err)
		}
		want := mustBars(t, fx.sim, tf, 500)
		if len(got) != len(want) {
			t.Fatalf("%s: %d bars, want %d", tf, len(got), len(want))
		}
		for i := range want {
			if !barEqual(got[i], want[i]) {
				t.Fatalf("%s bar %d: %+v, want %+v", tf, i, got[i], want[i])
			}
		}
	}
	// A bridge that has less history may send fewer bars than asked.
	fx.fake.setMutate(func(path string, m map[string]any) {
		if path == "/bars" {
			m["bars"] = m["bars"].([]any)[5:]
		}
	})
	if got, err := fx.client.Bars(ctx, "XAUUSD", xau.M5, 20); err != nil || len(got) != 15 {
		t.Fatalf("short history: %d bars, %v", len(got), err)
	}
	// last = 0 (CFD) becomes the bid.
	fx.fake.setMutate(func(path string, m map[string]any) {
		if path == "/quote" {
			m["last"] = 0
		}
	})
	if q, err := fx.client.Quote(ctx, "XAUUSD"); err != nil || !q.Last.Equal(q.Bid) {
		t.Fatalf("last 0: %+v, %v", q, err)
	}
}

func TestMT5BridgePathPrefixAndDefaults(t *testing.T) {
	fx := newBridgeFixture(t, func(c *Config) { c.BaseURL += "/mt5/" })
	if _, err := fx.client.Quote(context.Background(), "XAUUSD"); err != nil {
		t.Fatalf("prefixed base URL: %v", err)
	}
	if fx.client.timeout != DefaultTimeout || fx.client.maxBody != DefaultMaxBody || fx.client.skew != DefaultMaxClockSkew {
		t.Fatalf("defaults: %s %d %s", fx.client.timeout, fx.client.maxBody, fx.client.skew)
	}
}

func TestMT5BridgeRequestErrors(t *testing.T) {
	fx := newBridgeFixture(t, nil)
	ctx := context.Background()
	// Bad requests are refused before any call.
	if _, err := fx.client.Quote(ctx, "XAU USD"); !errors.Is(err, xau.ErrBadRequest) {
		t.Fatalf("malformed symbol: %v", err)
	}
	if _, err := fx.client.Bars(ctx, "XAUUSD", "M2", 10); !errors.Is(err, xau.ErrBadRequest) {
		t.Fatalf("bad timeframe: %v", err)
	}
	if _, err := fx.client.Bars(ctx, "XAUUSD", xau.M5, xau.MaxBars+1); !errors.Is(err, xau.ErrBadRequest) {
		t.Fatalf("bad count: %v", err)
	}
	if fx.fake.hits.Load() != 0 {
		t.Fatalf("%d requests reached the bridge", fx.fake.hits.Load())
	}
	// 400 unknown_symbol from the bridge.
	_, err := fx.client.Quote(ctx, "EURUSD")
	if !errors.Is(err, xau.ErrUnknownSymbol) || errors.Is(err, xau.ErrUnavailable) {
		t.Fatalf("unknown symbol: %v", err)
	}
	if _, err := fx.client.Bars(ctx, "EURUSD", xau.M5, 10); !errors.Is(err, xau.ErrUnknownSymbol) {
		t.Fatalf("unknown symbol bars: %v", err)
	}
	// Any other 400 is a bad request.
	fx.fake.setOverride(func(w http.ResponseWriter, r *http.Request) bool {
		fx.fake.fail(w, http.StatusBadRequest, "bad_count", "count must be 1..5000")
		return true
	})
	_, err = fx.client.Bars(ctx, "XAUUSD", xau.M5, 10)
	if !errors.Is(err, xau.ErrBadRequest) || errors.Is(err, xau.ErrUnknownSymbol) || !strings.Contains(xau.Reason(err), "bad_count") {
		t.Fatalf("400 bad_count: %v", err)
	}
}

func TestMT5BridgeToken(t *testing.T) {
	fx := newBridgeFixture(t, func(c *Config) { c.Token = "wrong-token-wrong-token" })
	ctx := context.Background()
	_, err := fx.client.Quote(ctx, "XAUUSD")
	wantUnavailable(t, "wrong token", err, "bridge rejected token")
	h, err := fx.client.Health(ctx)
	wantUnavailable(t, "wrong token health", err, "bridge rejected token")
	if h.Connected {
		t.Fatal("connected with a rejected token")
	}
	fx.fake.token = "wrong-token-wrong-token"
	fx.fake.setOverride(func(w http.ResponseWriter, r *http.Request) bool {
		fx.fake.fail(w, http.StatusForbidden, "forbidden", "no")
		return true
	})
	_, err = fx.client.Bars(ctx, "XAUUSD", xau.M5, 10)
	wantUnavailable(t, "403", err, "bridge rejected token")
}

func TestMT5BridgeDisconnected(t *testing.T) {
	fx := newBridgeFixture(t, nil)
	fx.fake.down.Store(true)
	ctx := context.Background()
	h, err := fx.client.Health(ctx)
	wantUnavailable(t, "health", err, "terminal disconnected")
	if h.Connected || h.Source != xau.SourceMT5 || h.Server != "Fake-Live" {
		t.Fatalf("Health = %+v", h)
	}
	_, err = fx.client.Quote(ctx, "XAUUSD")
	wantUnavailable(t, "quote", err, "terminal disconnected")
	_, err = fx.client.Bars(ctx, "XAUUSD", xau.M5, 10)
	wantUnavailable(t, "bars", err, "terminal disconnected")
}

func TestMT5BridgeSlow(t *testing.T) {
	fx := newBridgeFixture(t, func(c *Config) { c.Timeout = 50 * time.Millisecond })
	release := make(chan struct{})
	defer close(release)
	fx.fake.setOverride(func(w http.ResponseWriter, r *http.Request) bool {
		select { // hang until the client gives up
		case <-r.Context().Done():
		case <-release:
		}
		return true
	})
	start := time.Now()
	_, err := fx.client.Quote(context.Background(), "XAUUSD")
	wantUnavailable(t, "slow quote", err, "bridge timed out")
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("timeout does not wrap DeadlineExceeded: %v", err)
	}
	if el := time.Since(start); el > 2*time.Second {
		t.Fatalf("timed out after %s", el)
	}
	// A slow body (headers sent, then nothing) times out the same way.
	fx.fake.setOverride(func(w http.ResponseWriter, r *http.Request) bool {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		w.Write([]byte(`{"symbol":"XAUUSD",`))
		w.(http.Flusher).Flush()
		select {
		case <-r.Context().Done():
		case <-release:
		}
		return true
	})
	_, err = fx.client.Bars(context.Background(), "XAUUSD", xau.M5, 10)
	wantUnavailable(t, "slow body", err, "bridge timed out")
	// The caller's own deadline, shorter than the client's, is honoured.
	fx2 := newBridgeFixture(t, nil)
	fx2.fake.setOverride(func(w http.ResponseWriter, r *http.Request) bool {
		select {
		case <-r.Context().Done():
		case <-release:
		}
		return true
	})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Millisecond)
	defer cancel()
	_, err = fx2.client.Health(ctx)
	if !errors.Is(err, xau.ErrUnavailable) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("caller deadline: %v", err)
	}
}

func TestMT5BridgeBroken(t *testing.T) {
	fx := newBridgeFixture(t, nil)
	ctx := context.Background()
	cases := []struct {
		name     string
		override func(w http.ResponseWriter, r *http.Request) bool
		reason   string
	}{
		{"connection reset", func(w http.ResponseWriter, r *http.Request) bool {
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				conn.(*net.TCPConn).SetLinger(0)
				conn.Close()
			}
			return true
		}, "bridge unreachable"},
		{"500", func(w http.ResponseWriter, r *http.Request) bool {
			fx.fake.fail(w, http.StatusInternalServerError, "internal", "internal bridge error")
			return true
		}, "bridge error (status 500)"},
		{"502 HTML", func(w http.ResponseWriter, r *http.Request) bool {
			w.Header().Set("Content-Type", "text/html")
			w.WriteHeader(http.StatusBadGateway)
			w.Write([]byte("<html><body>Bad Gateway</body></html>"))
			return true
		}, "bridge error (status 502)"},
		{"200 HTML", func(w http.ResponseWriter, r *http.Request) bool {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			w.Write([]byte("<html><body>Welcome to nginx!</body></html>"))
			return true
		}, "non-JSON"},
		{"404", func(w http.ResponseWriter, r *http.Request) bool {
			http.NotFound(w, r)
			return true
		}, "not found"},
		{"too large", func(w http.ResponseWriter, r *http.Request) bool {
			w.Header().Set("Content-Type", "application/json")
			w.Write([]byte(`{"symbol":"` + strings.Repeat("X", DefaultMaxBody) + `"}`))
			return true
		}, "too large"},
	}
	for _, c := range cases {
		fx.fake.setOverride(c.override)
		_, err := fx.client.Quote(ctx, "XAUUSD")
		wantUnavailable(t, c.name+" quote", err, c.reason)
		_, err = fx.client.Bars(ctx, "XAUUSD", xau.M5, 10)
		wantUnavailable(t, c.name+" bars", err, c.reason)
		_, err = fx.client.Health(ctx)
		wantUnavailable(t, c.name+" health", err, c.reason)
	}
	// Nobody listening.
	fx.srv.Close()
	fx.fake.setOverride(nil)
	_, err := fx.client.Quote(ctx, "XAUUSD")
	wantUnavailable(t, "closed server", err, "bridge unreachable")
}

func TestMT5BridgeNoRedirects(t *testing.T) {
	var leaked atomic.Value
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		leaked.Store(r.Header.Get(TokenHeader))
	}))
	defer other.Close()
	for _, custom := range []bool{false, true} {
		fx := newBridgeFixture(t, func(c *Config) {
			if custom {
				c.HTTPClient = &http.Client{}
			}
		})
		fx.fake.setOverride(func(w http.ResponseWriter, r *http.Request) bool {
			http.Redirect(w, r, other.URL+"/quote", http.StatusFound)
			return true
		})
		_, err := fx.client.Quote(context.Background(), "XAUUSD")
		wantUnavailable(t, "redirect", err, "status 302")
		if v := leaked.Load(); v != nil {
			t.Fatalf("token sent to the redirect target: %v", v)
		}
	}
}

func TestMT5BridgeMalformed(t *testing.T) {
	ctx := context.Background()
	raw := func(body string) func(w http.ResponseWriter, r *http.Request) bool {
		return func(w http.ResponseWriter, r *http.Request) bool {
			w.Header().Set("Content-Type", "application/json")
			w.Write([]byte(body))
			return true
		}
	}
	rawCases := []struct {
		name, body, reason string
	}{
		{"truncated", `{"symbol":"XAUUSD","bid":26`, "malformed JSON"},
		{"not an object", `[1,2,3]`, "malformed JSON"},
		{"trailing data", `{"symbol":"XAUUSD","bid":2650.1,"ask":2650.3,"last":2650.1,"time":"2024-01-10T14:33:15Z"} {}`, "malformed JSON"},
		{"unknown field", `{"symbol":"XAUUSD","bid":2650.1,"ask":2650.3,"last":2650.1,"time":"2024-01-10T14:33:15Z","extra":1}`, "malformed JSON"},
		{"NaN", `{"symbol":"XAUUSD","bid":NaN,"ask":2650.3,"last":2650.1,"time":"2024-01-10T14:33:15Z"}`, "malformed JSON"},
		{"empty", ``, "malformed JSON"},
	}
	fx := newBridgeFixture(t, nil)
	for _, c := range rawCases {
		fx.fake.setOverride(raw(c.body))
		_, err := fx.client.Quote(ctx, "XAUUSD")
		wantUnavailable(t, c.name, err, c.reason)
	}
	fx.fake.setOverride(nil)

	quoteCases := []struct {
		name   string
		mutate func(m map[string]any)
		reason string
	}{
		{"missing bid", func(m map[string]any) { delete(m, "bid") }, "invalid quote"},
		{"missing time", func(m map[string]any) { delete(m, "time") }, "invalid quote"},
		{"bid as string", func(m map[string]any) { m["bid"] = "2650.10" }, "invalid quote"},
		{"bid null", func(m map[string]any) { m["bid"] = nil }, "invalid quote"},
		{"bid zero", func(m map[string]any) { m["bid"] = 0 }, "invalid quote"},
		{"bid negative", func(m map[string]any) { m["bid"] = -2650 }, "invalid quote"},
		{"ask below bid", func(m map[string]any) { m["ask"] = json.Number("2600") }, "invalid quote"},
		{"absurd spread", func(m map[string]any) { m["ask"] = json.Number("2750") }, "invalid quote"},
		{"huge exponent", func(m map[string]any) { m["ask"] = json.Number("1e999999999") }, "invalid quote"},
		{"tiny exponent", func(m map[string]any) { m["last"] = json.Number("1e-999999999") }, "invalid quote"},
		{"wrong symbol", func(m map[string]any) { m["symbol"] = "EURUSD" }, "invalid quote"},
		{"time without Z", func(m map[string]any) { m["time"] = "2024-01-10T16:33:15+02:00" }, "invalid quote"},
		{"time as unix", func(m map[string]any) { m["time"] = 1704897195000 }, "malformed JSON"},
		{"time garbage", func(m map[string]any) { m["time"] = "yesterday" }, "invalid quote"},
		{"future time", func(m map[string]any) { m["time"] = simWed.Add(3 * time.Hour).Format(time.RFC3339) }, "from the future"},
	}
	for _, c := range quoteCases {
		fx.fake.setMutate(func(path string, m map[string]any) {
			if path == "/quote" {
				c.mutate(m)
			}
		})
		_, err := fx.client.Quote(ctx, "XAUUSD")
		wantUnavailable(t, c.name, err, c.reason)
	}
	// An absolute spread cap tighter than the simulated spread.
	fx.fake.setMutate(nil)
	capped := newBridgeFixture(t, func(c *Config) { c.MaxSpread = d("0.05") })
	_, err := capped.client.Quote(ctx, "XAUUSD")
	wantUnavailable(t, "spread over MaxSpread", err, "invalid quote")

	barAt := func(m map[string]any, i int) map[string]any { return m["bars"].([]any)[i].(map[string]any) }
	barCases := []struct {
		name   string
		mutate func(m map[string]any)
		reason string
	}{
		{"high below low", func(m map[string]any) { barAt(m, 3)["high"] = json.Number("1") }, "inconsistent bars"},
		{"low above close", func(m map[string]any) { barAt(m, 4)["low"] = json.Number("99999") }, "inconsistent bars"},
		{"zero open", func(m map[string]any) { barAt(m, 0)["open"] = 0 }, "inconsistent bars"},
		{"negative volume", func(m map[string]any) { barAt(m, 0)["tick_volume"] = -3 }, "inconsistent bars"},
		{"fractional volume", func(m map[string]any) { barAt(m, 0)["tick_volume"] = 1.5 }, "malformed JSON"},
		{"missing close", func(m map[string]any) { delete(barAt(m, 2), "close") }, "inconsistent bars"},
		{"price as string", func(m map[string]any) { barAt(m, 2)["close"] = "2650" }, "inconsistent bars"},
		{"unknown bar field", func(m map[string]any) { barAt(m, 2)["spread"] = 12 }, "malformed JSON"},
		{"out of order", func(m map[string]any) {
			b := m["bars"].([]any)
			b[1], b[2] = b[2], b[1]
		}, "inconsistent bars"},
		{"newest first", func(m map[string]any) {
			b := m["bars"].([]any)
			for i, j := 0, len(b)-1; i < j; i, j = i+1, j-1 {
				b[i], b[j] = b[j], b[i]
			}
		}, "inconsistent bars"},
		{"duplicate time", func(m map[string]any) { barAt(m, 5)["time"] = barAt(m, 4)["time"] }, "inconsistent bars"},
		{"misaligned time", func(m map[string]any) {
			barAt(m, 5)["time"] = simWed.Truncate(time.Hour).Add(-2*time.Hour + 3*time.Minute).Format(time.RFC3339)
		}, "inconsistent bars"},
		{"server-time bars (hours ahead)", func(m map[string]any) {
			for _, x := range m["bars"].([]any) {
				b := x.(map[string]any)
				tm, _ := time.Parse(time.RFC3339, b["time"].(string))
				b["time"] = tm.Add(2 * time.Hour).Format(time.RFC3339)
			}
		}, "from the future"},
		{"too many bars", func(m map[string]any) { m["bars"] = append(m["bars"].([]any), m["bars"].([]any)[0]) }, "inconsistent bars"},
		{"no bars", func(m map[string]any) { m["bars"] = []any{} }, "no bars"},
		{"bars null", func(m map[string]any) { m["bars"] = nil }, "inconsistent bars"},
		{"wrong timeframe", func(m map[string]any) { m["timeframe"] = "M1" }, "inconsistent bars"},
		{"wrong symbol", func(m map[string]any) { m["symbol"] = "XAUEUR" }, "inconsistent bars"},
		{"missing timeframe", func(m map[string]any) { delete(m, "timeframe") }, "inconsistent bars"},
	}
	for _, c := range barCases {
		fx.fake.setMutate(func(path string, m map[string]any) {
			if path == "/bars" {
				c.mutate(m)
			}
		})
		_, err := fx.client.Bars(ctx, "XAUUSD", xau.M5, 10)
		wantUnavailable(t, c.name, err, c.reason)
	}

	healthCases := []struct {
		name   string
		mutate func(m map[string]any)
		reason string
	}{
		{"missing connected", func(m map[string]any) { delete(m, "connected") }, "incomplete"},
		{"connected as string", func(m map[string]any) { m["connected"] = "true" }, "malformed JSON"},
		{"bad serverTime", func(m map[string]any) { m["serverTime"] = "now" }, "malformed health"},
		{"future lastTickTime", func(m map[string]any) { m["lastTickTime"] = simWed.Add(3 * time.Hour).Format(time.RFC3339) }, "from the future"},
	}
	for _, c := range healthCases {
		fx.fake.setMutate(func(path string, m map[string]any) {
			if path == "/health" {
				c.mutate(m)
			}
		})
		_, err := fx.client.Health(ctx)
		wantUnavailable(t, c.name, err, c.reason)
	}
	// lastTickTime null is allowed: lag unknown.
	fx.fake.setMutate(func(path string, m map[string]any) { m["lastTickTime"] = nil })
	if h, err := fx.client.Health(ctx); err != nil || !h.Connected || !h.LastTick.IsZero() || h.Lag != 0 {
		t.Fatalf("null lastTickTime: %+v, %v", h, err)
	}
}

func TestNewConfig(t *testing.T) {
	ok := Config{BaseURL: "http://127.0.0.1:8765", Token: testBridgeToken}
	if _, err := New(ok); err != nil {
		t.Fatal(err)
	}
	bad := []func(*Config){
		func(c *Config) { c.BaseURL = "" },
		func(c *Config) { c.BaseURL = "127.0.0.1:8765" },
		func(c *Config) { c.BaseURL = "ftp://host/" },
		func(c *Config) { c.BaseURL = "http://user:pass@host/" },
		func(c *Config) { c.BaseURL = "http://host/?x=1" },
		func(c *Config) { c.BaseURL = "http:///path" },
		func(c *Config) { c.Token = "" },
		func(c *Config) { c.Token = "short" },
		func(c *Config) { c.Token = "has a space in the token" },
		func(c *Config) { c.Token = "line\nbreak-0123456789" },
		func(c *Config) { c.Timeout = -time.Second },
		func(c *Config) { c.Timeout = time.Hour },
		func(c *Config) { c.MaxSpread = decimal.NewFromInt(-1) },
		func(c *Config) { c.MaxBodyBytes = -1 },
		func(c *Config) { c.MaxClockSkew = -time.Second },
	}
	for i, mod := range bad {
		cfg := ok
		mod(&cfg)
		if _, err := New(cfg); err == nil {
			t.Errorf("case %d: %+v accepted", i, cfg)
		} else if strings.Contains(err.Error(), testBridgeToken) {
			t.Errorf("case %d: error leaks the token: %v", i, err)
		}
	}
}

// The error of a failed call never carries the token.
func TestMT5BridgeErrorsDoNotLeakToken(t *testing.T) {
	fx := newBridgeFixture(t, nil)
	fx.fake.setOverride(func(w http.ResponseWriter, r *http.Request) bool {
		w.WriteHeader(http.StatusTeapot)
		fmt.Fprintf(w, "nope")
		return true
	})
	_, err := fx.client.Quote(context.Background(), "XAUUSD")
	if err == nil || strings.Contains(err.Error(), testBridgeToken) {
		t.Fatalf("err = %v", err)
	}
}

package httpserver_test

import (
	"encoding/json"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/seed1284c1d2/svc/xau"
)

// TestTerminalLagMeansSomething: /health and the dashboard say why a
// terminal's last tick is old: the weekend closure (no ticks expected), or
// stale data while the market is open; a fresh tick on an open market is
// neither.
func TestTerminalLagMeansSomething(t *testing.T) {
	wed := time.Date(2026, 11, 25, 14, 0, 0, 0, time.UTC)
	sat := time.Date(2026, 11, 28, 21, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name      string
		now, tick time.Time
		market    string
		stale     bool
		dashboard string
	}{
		{"open and fresh", wed, wed.Add(-2 * time.Second), "open", false, ""},
		{"open and stale", wed, wed.Add(-time.Hour), "open", true, "STALE, the market is open"},
		{"weekend", sat, time.Date(2026, 11, 27, 21, 59, 55, 0, time.UTC), "closed", false, "market closed for the weekend, no ticks expected"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			now := func() time.Time { return tc.now }
			term := xau.NewScripted(now)
			term.SetQuote(xau.Quote{Symbol: "XAUUSD", Bid: decimal.RequireFromString("2400.1"), Ask: decimal.RequireFromString("2400.3"),
				Last: decimal.RequireFromString("2400.1"), Spread: decimal.RequireFromString("0.2"), Time: tc.tick, Source: xau.SourceScripted})
			f := newFixture(t, fixtureOptions{terminal: term, now: now, separateAdmin: true})
			resp, body := do(t, mustGet(t, f.url+"/health"))
			var h struct {
				Terminal struct {
					Status     string `json:"status"`
					LagSeconds int64  `json:"lagSeconds"`
					Market     string `json:"market"`
					Stale      bool   `json:"stale"`
				} `json:"terminal"`
			}
			if err := json.Unmarshal(body, &h); err != nil || resp.StatusCode != http.StatusOK {
				t.Fatalf("/health %d: %v %s", resp.StatusCode, err, body)
			}
			if h.Terminal.Status != "up" || h.Terminal.Market != tc.market || h.Terminal.Stale != tc.stale ||
				h.Terminal.LagSeconds != int64(tc.now.Sub(tc.tick).Seconds()) {
				t.Fatalf("/health terminal %+v, want market %s, stale %v", h.Terminal, tc.market, tc.stale)
			}
			admin := serveAdmin(t, f.srv)
			_, page := do(t, mustGet(t, admin+"/"))
			got := regexp.MustCompile(`<span id="terminal-market"[^>]*>([^<]*)</span>`).FindStringSubmatch(string(page))
			switch {
			case tc.dashboard == "" && got != nil:
				t.Fatalf("the dashboard explains a fresh tick: %q", got[1])
			case tc.dashboard != "" && (got == nil || got[1] != tc.dashboard):
				t.Fatalf("the dashboard's terminal note %v, want %q", got, tc.dashboard)
			}
		})
	}
}

// TestDashboardBadPeriodInABrowser: a browser asking for a period that
// cannot be read gets the page (400) saying what is wrong, with the default
// period; a program gets the problem.
func TestDashboardBadPeriodInABrowser(t *testing.T) {
	f := newFixture(t, fixtureOptions{separateAdmin: true})
	admin := serveAdmin(t, f.srv)
	req := mustGet(t, admin+"/?from=2026-13-45")
	req.Header.Set("Accept", "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8")
	resp, body := do(t, req)
	if resp.StatusCode != http.StatusBadRequest || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") ||
		!strings.Contains(string(body), `id="period-error"`) || !strings.Contains(string(body), "operator dashboard") {
		t.Fatalf("browser, bad period: %d %s %.400s", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
	resp, body = do(t, mustGet(t, admin+"/?from=2026-13-45"))
	if resp.StatusCode != http.StatusBadRequest || !strings.HasPrefix(resp.Header.Get("Content-Type"), "application/problem+json") {
		t.Fatalf("program, bad period: %d %s %.300s", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
}

package httpserver

import (
	"context"
	"embed"
	"html/template"
	"math/big"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/seed1284c1d2/svc/discovery/stats"
	"github.com/seed1284c1d2/svc/ledger"
	"github.com/seed1284c1d2/svc/x402/engine"
)

//go:embed dashboard.html
var dashboardFS embed.FS

// dashboardTemplate parses the dashboard's template (embedded, checked by
// the tests).
func dashboardTemplate() (*template.Template, error) {
	return template.ParseFS(dashboardFS, "dashboard.html")
}

// Geometry of the dashboard's charts, in SVG user units.
// The width is about what a chart's half of a screen shows, so that its
// text is drawn near its own size, not shrunk.
const (
	chartWidth   = 560.0
	toolLabelW   = 150.0
	toolValueW   = 150.0
	toolRowH     = 24.0
	dayChartH    = 200.0
	topReferrals = 10
)

// dashboardLedgerTimeout bounds the dashboard's read of the ledger's
// period (about 12 µs a settled payment on SQLite).
const dashboardLedgerTimeout = 60 * time.Second

// dashboardData is what the dashboard template renders.
type dashboardData struct {
	Version     string
	Now         string
	DevMode     bool
	From, To    string // RFC 3339: the period [From, To) of the ledger figures
	PeriodError string // the period asked for could not be read (the default is shown)
	Report      ledger.Report
	LedgerError string
	ToolChart   chart
	DayChart    chart
	Conversion  []conversionRow
	Journal     []journalRow
	JournalErr  string
	Store       ComponentHealth
	Terminal    TerminalHealth
	Facilitator FacilitatorHealth
	Referrals   []ledger.Total
}

// chart is a bar chart: real revenue and dev-mode amounts stacked.
type chart struct {
	Width, Height float64
	Bars          []chartBar
	Max           string // the scale's top, USDC
}

// chartBar is one bar, positioned.
type chartBar struct {
	Label          string
	Short          string // the label printed under a bar ("" for none)
	Anchor         string // text-anchor of Short
	Amount, Dev    string // USDC
	Value          string // the amounts as printed next to a bar
	X, Y, W, H     float64
	DevX, DevY     float64
	DevW, DevH     float64
	LabelX, LabelY float64
}

// conversionRow is one paid route's 402s and paid calls since the start.
type conversionRow struct {
	Route, Tool     string
	PaymentRequired int64
	Paid            int64
	Rate            string // paid per 402 offered, percent; "–" without 402s
}

// journalRow is one payment-journal state and its rows.
type journalRow struct {
	State     string
	Rows      int64
	Attention bool // settling or unknown rows need a look
}

// journalRows reads the journal's rows by state, every state in life-cycle
// order.
func journalRows(ctx context.Context, j journalCounter) ([]journalRow, error) {
	counts, err := j.Counts(ctx)
	if err != nil {
		return nil, err
	}
	rows := make([]journalRow, 0, len(engine.States()))
	for _, st := range engine.States() {
		rows = append(rows, journalRow{State: st.String(), Rows: counts[st],
			Attention: counts[st] > 0 && (st == engine.StateSettling || st == engine.StateUnknown)})
	}
	return rows, nil
}

// dashboard answers the admin GET /: the figures of a period (?from=,
// ?to=: dates or RFC 3339, default the last 30 days) and the live state.
func (s *Server) dashboard(w http.ResponseWriter, r *http.Request) {
	now := s.now()
	status := http.StatusOK
	periodErr := ""
	from, to, err := ledger.ParsePeriod(r.URL.Query().Get("from"), r.URL.Query().Get("to"), now)
	if err != nil {
		// A person in a browser gets the page, saying what is wrong, with
		// the default period; a program gets the problem.
		if !acceptsHTML(r) {
			WriteProblem(w, r, NewProblem(http.StatusBadRequest, CodeInvalidInput, "period: "+err.Error()))
			return
		}
		status, periodErr = http.StatusBadRequest, "period: "+err.Error()+"; showing the default period"
		from, to, _ = ledger.ParsePeriod("", "", now)
	}
	ctx, cancel := context.WithTimeout(r.Context(), healthCheckTimeout+time.Second)
	defer cancel()
	d := dashboardData{Version: s.cfg.Version, Now: now.UTC().Format(time.RFC3339), DevMode: s.cfg.DevMode,
		From: from.Format(time.RFC3339), To: to.Format(time.RFC3339), PeriodError: periodErr}

	var wg sync.WaitGroup
	wg.Add(4)
	go func() {
		defer wg.Done()
		// The ledger is read in full for the period (streamed, in bounded
		// memory): on a large ledger that takes longer than the health
		// checks may, so it has a deadline of its own.
		lctx, cancel := context.WithTimeout(r.Context(), dashboardLedgerTimeout)
		defer cancel()
		rep, err := ledger.Summarize(lctx, s.cfg.Store, from, to)
		if err != nil {
			s.log.Warn("dashboard: ledger unavailable", "error", err)
			d.LedgerError = "the ledger could not be read"
			rep, _ = ledger.Build(from, to, nil)
		}
		d.Report = rep
	}()
	go func() {
		defer wg.Done()
		rows, err := journalRows(ctx, s.cfg.Store)
		if err != nil {
			s.log.Warn("dashboard: payment journal counts unavailable", "error", err)
			d.JournalErr = "the payment journal could not be read"
			return
		}
		d.Journal = rows
	}()
	go func() {
		defer wg.Done()
		d.Terminal = s.terminalHealth(ctx)
		d.Facilitator = s.facilitatorHealth(ctx)
	}()
	go func() {
		defer wg.Done()
		d.Store = ComponentHealth{Status: "up", Kind: s.storeKind()}
		if err := s.cfg.Store.Ping(ctx); err != nil {
			d.Store.Status, d.Store.Error = "down", "the store does not answer"
		} else if err := s.cfg.Store.CheckSchema(ctx); err != nil {
			d.Store.Status, d.Store.Error = "down", "the store's schema is missing or outdated"
		}
	}()
	wg.Wait()

	d.Conversion = s.conversion()
	d.ToolChart = toolChart(d.Report.ByTool)
	d.DayChart = dayChart(d.Report.ByDay, from, to)
	d.Referrals = d.Report.ByRef
	if len(d.Referrals) > topReferrals {
		d.Referrals = d.Referrals[:topReferrals]
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'; img-src data:")
	w.WriteHeader(status)
	if err := s.dashboardTmpl.Execute(w, d); err != nil {
		s.log.Warn("dashboard: render", "error", err)
	}
}

// storeKind is the store's dialect, when it says.
func (s *Server) storeKind() string {
	if d, ok := s.cfg.Store.(interface{ Dialect() string }); ok {
		return d.Dialect()
	}
	return ""
}

// conversion lists the paid routes' 402s offered and paid calls.
func (s *Server) conversion() []conversionRow {
	tools := map[string]string{}
	for _, pr := range s.paid {
		tools[pr.rm.label] = pr.tool.Key
	}
	var out []conversionRow
	for _, rc := range s.Counts() {
		if rc.Kind != stats.KindPaid {
			continue
		}
		row := conversionRow{Route: rc.Route, Tool: tools[rc.Route], PaymentRequired: rc.PaymentRequired, Paid: rc.Settled, Rate: "–"}
		if rc.PaymentRequired > 0 {
			row.Rate = strconv.FormatFloat(100*float64(rc.Settled)/float64(rc.PaymentRequired), 'f', 1, 64) + "%"
		}
		out = append(out, row)
	}
	return out
}

// acceptsHTML reports whether the request comes from a browser (its Accept
// names text/html).
func acceptsHTML(r *http.Request) bool {
	return strings.Contains(strings.ToLower(r.Header.Get("Accept")), "text/html")
}

// shortUSDC prints a USDC decimal without its trailing zeros ("0.010000"
// → "0.01", "0.000000" → "0").
func shortUSDC(s string) string {
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	if s == "" {
		return "0"
	}
	return s
}

// valueLabel prints a bar's amounts: the revenue, the dev-mode amount
// marked "dev", or both; zeros left out.
func valueLabel(amount, dev string) string {
	a, d := shortUSDC(amount), shortUSDC(dev)
	switch {
	case d == "0":
		return a
	case a == "0":
		return d + " dev"
	}
	return a + " + " + d + " dev"
}

// usdcFloat reads a USDC decimal for a chart's scale.
func usdcFloat(s string) float64 {
	f, _, err := big.ParseFloat(s, 10, 64, big.ToNearestEven)
	if err != nil {
		return 0
	}
	v, _ := f.Float64()
	return v
}

// scaleTop is the chart's top: the largest total, or 1 µUSDC.
func scaleTop(ts []ledger.Total) float64 {
	top := 0.000001
	for _, t := range ts {
		top = max(top, usdcFloat(t.AmountUSDC)+usdcFloat(t.DevAmountUSDC))
	}
	return top
}

// toolChart draws one horizontal bar per tool.
func toolChart(ts []ledger.Total) chart {
	top := scaleTop(ts)
	span := chartWidth - toolLabelW - toolValueW
	c := chart{Width: chartWidth, Height: toolRowH*float64(len(ts)) + 4, Max: strconv.FormatFloat(top, 'f', 6, 64)}
	for i, t := range ts {
		y := toolRowH*float64(i) + 2
		w := span * usdcFloat(t.AmountUSDC) / top
		dw := span * usdcFloat(t.DevAmountUSDC) / top
		c.Bars = append(c.Bars, chartBar{Label: t.Key, Amount: t.AmountUSDC, Dev: t.DevAmountUSDC, Value: valueLabel(t.AmountUSDC, t.DevAmountUSDC),
			X: toolLabelW, Y: y, W: w, H: toolRowH - 6, DevX: toolLabelW + w, DevY: y, DevW: dw, DevH: toolRowH - 6,
			LabelX: toolLabelW + w + dw + 6, LabelY: y + toolRowH/2})
	}
	return c
}

// dayChart draws one vertical bar per day of [from, to), days without
// payments included.
func dayChart(ts []ledger.Total, from, to time.Time) chart {
	byDay := map[string]ledger.Total{}
	for _, t := range ts {
		byDay[t.Key] = t
	}
	var days []ledger.Total
	for d := from.UTC().Truncate(24 * time.Hour); d.Before(to) && len(days) < 400; d = d.Add(24 * time.Hour) {
		k := d.Format(ledger.DayLayout)
		t, ok := byDay[k]
		if !ok {
			t = ledger.Total{Key: k, AmountUSDC: "0.000000", DevAmountUSDC: "0.000000"}
		}
		days = append(days, t)
	}
	top := scaleTop(days)
	c := chart{Width: chartWidth, Height: dayChartH + 40, Max: strconv.FormatFloat(top, 'f', 6, 64)}
	if len(days) == 0 {
		return c
	}
	step := chartWidth / float64(len(days))
	for i, t := range days {
		h := dayChartH * usdcFloat(t.AmountUSDC) / top
		dh := dayChartH * usdcFloat(t.DevAmountUSDC) / top
		x := step*float64(i) + 1
		short := ""
		if len(days) <= 10 || i%5 == 0 || i == len(days)-1 {
			short = t.Key[5:] // MM-DD
		}
		// A day's label is centred under its bar, but the first starts at
		// the chart's left edge and the last ends at its right edge, so that
		// neither is cut off.
		bw := max(step-2, 1)
		anchor, lx := "middle", x+bw/2
		switch {
		case i == len(days)-1:
			anchor, lx = "end", chartWidth
		case i == 0:
			anchor, lx = "start", 0
		}
		c.Bars = append(c.Bars, chartBar{Label: t.Key, Short: short, Anchor: anchor, Amount: t.AmountUSDC, Dev: t.DevAmountUSDC,
			Value: valueLabel(t.AmountUSDC, t.DevAmountUSDC),
			X:     x, Y: dayChartH - h, W: bw, H: h, DevX: x, DevY: dayChartH - h - dh, DevW: bw, DevH: dh,
			LabelX: lx, LabelY: dayChartH + 14})
	}
	return c
}

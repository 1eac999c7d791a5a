package httpserver

import (
	"context"
	"log/slog"
	"math"
	"net/http"
	"runtime/debug"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"

	"github.com/seed1284c1d2/svc/x402/engine"
)

// latencyBuckets are the upper bounds, in seconds, of the request latency
// histogram.
func latencyBuckets() []float64 {
	return []float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30}
}

// maxReasonLabels bounds the distinct reason labels of svc_failures_total;
// further reasons are counted as "other". Reasons can come from a remote
// facilitator, so their set is not ours to trust.
const maxReasonLabels = 64

// unmatchedRoute labels requests that matched no route (404, 405).
const unmatchedRoute = "unmatched"

// scrapeTimeout bounds the store and health queries of one scrape.
const scrapeTimeout = 2 * time.Second

// metrics holds the server's Prometheus metrics, in a registry of its own
// (never the client library's global one). Per-route series are resolved
// when the route is registered, so the hot path adds to a counter it
// already holds and takes no lock but a read of an immutable map.
type metrics struct {
	start time.Time
	reg   *prometheus.Registry

	requests        *prometheus.CounterVec   // route, kind, method, status
	duration        *prometheus.HistogramVec // route
	paymentRequired *prometheus.CounterVec   // route
	settled         *prometheus.CounterVec   // route
	revenue         *prometheus.CounterVec   // route, network, asset (atomic units)
	failures        *prometheus.CounterVec   // reason
	rateLimited     prometheus.Counter
	recovered       *prometheus.CounterVec // result

	mu     sync.RWMutex
	routes map[string]*routeMetrics // by route label

	reasonsMu sync.RWMutex
	reasons   map[string]prometheus.Counter
}

// routeMetrics are the series of one route.
type routeMetrics struct {
	m     *metrics
	label string
	kind  string // "paid", "free", "unlimited" or "unmatched"

	// byStatus holds the request counters by method and status. The map
	// is never modified once published: a request loads it with one
	// atomic read; a new method and status pair, rare, publishes a copy
	// under mu.
	byStatus atomic.Pointer[map[uint32]prometheus.Counter]
	mu       sync.Mutex

	duration        prometheus.Observer
	paymentRequired prometheus.Counter // 402s offering payment (no payment sent); paid routes
	settled         prometheus.Counter // settled payments; paid routes
}

// statusKey packs a method label (metricMethodIndex) and a status code.
func statusKey(methodIndex, code int) uint32 { return uint32(methodIndex)<<16 | uint32(code)&0xffff }

// newMetrics builds the registry: the server's own metrics, build_info,
// the Go runtime and process collectors, and the collectors that ask the
// store and the dependencies at scrape time (added by the server).
func newMetrics(now time.Time, version string) *metrics {
	m := &metrics{
		start: now,
		reg:   prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "svc_http_requests_total", Help: "HTTP requests answered, by route, kind, method and status.",
		}, []string{"route", "kind", "method", "status"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "svc_http_request_duration_seconds", Help: "Time from the request's arrival to the end of its answer, by route.",
			Buckets: latencyBuckets(),
		}, []string{"route"}),
		paymentRequired: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "svc_x402_payment_required_total", Help: "402 answers offering payment (requests that came without one), by route.",
		}, []string{"route"}),
		settled: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "svc_x402_settlements_total", Help: "Settled payments (paid calls, every transport), by the tool's HTTP route.",
		}, []string{"route"}),
		revenue: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "svc_x402_revenue_atomic_total", Help: "Settled amounts in the asset's atomic units (USDC: millionths of a dollar), by route, network and asset.",
		}, []string{"route", "network", "asset"}),
		failures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "svc_failures_total", Help: "Error answers and refused payments, by reason (problem code or x402 reason).",
		}, []string{"reason"}),
		rateLimited: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "svc_rate_limited_total", Help: "Requests refused with 429 (free routes, and unpaid requests on the paid routes).",
		}),
		recovered: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "svc_x402_recovered_total", Help: "Payments resolved by the engine's recovery, by result.",
		}, []string{"result"}),
		routes:  map[string]*routeMetrics{},
		reasons: map[string]prometheus.Counter{},
	}
	for _, r := range []string{"settled", "released", "unknown"} {
		m.recovered.WithLabelValues(r)
	}
	revision, goVersion := buildRevision()
	m.reg.MustRegister(
		m.requests, m.duration, m.paymentRequired, m.settled, m.revenue, m.failures, m.rateLimited, m.recovered,
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "svc_uptime_seconds", Help: "Seconds since the server was built.",
		}, func() float64 { return math.Max(0, time.Since(m.start).Seconds()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "svc_build_info", Help: "Always 1; the labels name the running build.",
			ConstLabels: prometheus.Labels{"version": version, "revision": revision, "goversion": goVersion},
		}, func() float64 { return 1 }),
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	m.route(unmatchedRoute, "unmatched")
	return m
}

// buildRevision returns the VCS revision the binary was built from
// ("unknown" when not recorded) and the Go version that built it.
func buildRevision() (revision, goVersion string) {
	revision, goVersion = "unknown", "unknown"
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return revision, goVersion
	}
	goVersion = bi.GoVersion
	for _, s := range bi.Settings {
		if s.Key == "vcs.revision" && s.Value != "" {
			revision = s.Value
		}
	}
	return revision, goVersion
}

// route returns the series of a route label, creating them.
func (m *metrics) route(label, kind string) *routeMetrics {
	m.mu.RLock()
	rm := m.routes[label]
	m.mu.RUnlock()
	if rm != nil {
		return rm
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if rm = m.routes[label]; rm == nil {
		rm = &routeMetrics{m: m, label: label, kind: kind, duration: m.duration.WithLabelValues(label)}
		if kind == "paid" {
			rm.paymentRequired = m.paymentRequired.WithLabelValues(label)
			rm.settled = m.settled.WithLabelValues(label)
		}
		rm.byStatus.Store(&map[uint32]prometheus.Counter{})
		m.routes[label] = rm
	}
	return rm
}

// observe records one answered request.
func (rm *routeMetrics) observe(method string, status int, d time.Duration) {
	k := statusKey(metricMethodIndex(method), status)
	c := (*rm.byStatus.Load())[k]
	if c == nil {
		c = rm.addStatus(k, metricMethod(method), status)
	}
	c.Inc()
	rm.duration.Observe(max(0, d.Seconds()))
}

// addStatus returns the counter of a method and status, publishing a new
// map holding it when it is new.
func (rm *routeMetrics) addStatus(k uint32, method string, status int) prometheus.Counter {
	rm.mu.Lock()
	defer rm.mu.Unlock()
	old := *rm.byStatus.Load()
	if c := old[k]; c != nil {
		return c
	}
	next := make(map[uint32]prometheus.Counter, len(old)+1)
	for kk, c := range old {
		next[kk] = c
	}
	c := rm.m.requests.WithLabelValues(rm.label, rm.kind, method, strconv.Itoa(status))
	next[k] = c
	rm.byStatus.Store(&next)
	return c
}

// failure counts an error answer by its reason.
func (m *metrics) failure(reason string) {
	reason = sanitizeReason(reason)
	m.reasonsMu.RLock()
	c := m.reasons[reason]
	m.reasonsMu.RUnlock()
	if c != nil {
		c.Inc()
		return
	}
	m.reasonsMu.Lock()
	if c = m.reasons[reason]; c == nil {
		if len(m.reasons) >= maxReasonLabels {
			reason = "other"
			c = m.reasons[reason]
		}
		if c == nil {
			c = m.failures.WithLabelValues(reason)
			m.reasons[reason] = c
		}
	}
	m.reasonsMu.Unlock()
	c.Inc()
}

// sanitizeReason keeps reasons that look like identifiers (letters, digits,
// "_", "-", ".", at most 64 bytes) and lower-cases them; anything else is
// "other".
func sanitizeReason(s string) string {
	if s == "" || len(s) > 64 {
		return "other"
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.') {
			return "other"
		}
	}
	return strings.ToLower(s)
}

// metricMethod bounds the method label to the standard methods.
func metricMethod(m string) string {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodOptions, http.MethodConnect, http.MethodTrace:
		return m
	}
	return "OTHER"
}

// metricMethodIndex numbers the method labels of metricMethod (for the
// counters' keys).
func metricMethodIndex(m string) int {
	switch m {
	case http.MethodGet:
		return 1
	case http.MethodHead:
		return 2
	case http.MethodPost:
		return 3
	case http.MethodPut:
		return 4
	case http.MethodPatch:
		return 5
	case http.MethodDelete:
		return 6
	case http.MethodOptions:
		return 7
	case http.MethodConnect:
		return 8
	case http.MethodTrace:
		return 9
	}
	return 0 // OTHER
}

// counterValue reads a counter's value.
func counterValue(c prometheus.Counter) int64 {
	var d dto.Metric
	if c == nil || c.Write(&d) != nil {
		return 0
	}
	return int64(d.GetCounter().GetValue())
}

// RouteCounts are the counts of one route since the server was built.
type RouteCounts struct {
	Route string // the route's label: its path pattern, or "unmatched"
	Kind  string // "paid", "free", "unlimited" or "unmatched"
	// Requests counts the answers; ByClass by status class (index
	// status/100, 0 for anything outside 1xx–5xx).
	Requests int64
	ByClass  [6]int64
	// PaymentRequired counts the 402s offering payment; Settled the paid
	// calls settled for the route's tool, over every transport. Both are
	// zero on routes that are not paid.
	PaymentRequired int64
	Settled         int64
}

// Counts returns the request, 402 and settlement counts of every route,
// sorted by route label: the figures GET /metrics exposes, for other
// reports of the same events (discovery's aggregate stats, the dashboard)
// to read rather than count again.
func (s *Server) Counts() []RouteCounts {
	m := s.metrics
	m.mu.RLock()
	routes := make([]*routeMetrics, 0, len(m.routes))
	for _, rm := range m.routes {
		routes = append(routes, rm)
	}
	m.mu.RUnlock()
	sort.Slice(routes, func(i, j int) bool { return routes[i].label < routes[j].label })
	out := make([]RouteCounts, 0, len(routes))
	for _, rm := range routes {
		rc := RouteCounts{Route: rm.label, Kind: rm.kind,
			PaymentRequired: counterValue(rm.paymentRequired), Settled: counterValue(rm.settled)}
		for k, c := range *rm.byStatus.Load() {
			n := counterValue(c)
			rc.Requests += n
			class := int(k&0xffff) / 100
			if class < 1 || class > 5 {
				class = 0
			}
			rc.ByClass[class] += n
		}
		out = append(out, rc)
	}
	return out
}

// journalCounter is what the operator's views (metrics, dashboard) read of
// the payment journal.
type journalCounter interface {
	Counts(ctx context.Context) (map[engine.State]int64, error)
}

// journalCollector exposes the payment journal's rows by state, asked of
// the journal at scrape time.
type journalCollector struct {
	journal journalCounter
	log     *slog.Logger
	desc    *prometheus.Desc
}

func (c journalCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c journalCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), scrapeTimeout)
	defer cancel()
	counts, err := c.journal.Counts(ctx)
	if err != nil {
		c.log.Warn("metrics: payment journal counts unavailable", "error", err)
		ch <- prometheus.NewInvalidMetric(c.desc, err)
		return
	}
	for _, st := range engine.States() {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(counts[st]), st.String())
	}
}

// healthCollector exposes the state of the dependencies: the terminal (up
// and the age of its last tick) and the facilitator (up), from the same
// cached checks /health and /readyz use.
type healthCollector struct {
	s                              *Server
	terminalUp, terminalLag, facUp *prometheus.Desc
}

func newHealthCollector(s *Server) healthCollector {
	return healthCollector{s: s,
		terminalUp:  prometheus.NewDesc("svc_terminal_up", "1 when the gold terminal is connected and answering (the gold tools are sold), else 0.", nil, nil),
		terminalLag: prometheus.NewDesc("svc_terminal_lag_seconds", "Age of the terminal's last tick, in seconds (absent when it reported none).", nil, nil),
		facUp:       prometheus.NewDesc("svc_facilitator_up", "1 when the facilitator answers /supported with the exact scheme on the server's network, else 0.", nil, nil),
	}
}

func (c healthCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.terminalUp
	ch <- c.terminalLag
	ch <- c.facUp
}

func (c healthCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), scrapeTimeout)
	defer cancel()
	th, lag, haveLag := c.s.terminalState(ctx)
	ch <- prometheus.MustNewConstMetric(c.terminalUp, prometheus.GaugeValue, boolFloat(th.Status == "up"))
	if haveLag {
		ch <- prometheus.MustNewConstMetric(c.terminalLag, prometheus.GaugeValue, lag.Seconds())
	}
	f := c.s.facilitatorHealth(ctx)
	ch <- prometheus.MustNewConstMetric(c.facUp, prometheus.GaugeValue, boolFloat(f.Status == "up"))
}

func boolFloat(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// registerScrapeCollectors adds the collectors that need the server.
func (s *Server) registerScrapeCollectors() {
	s.metrics.reg.MustRegister(
		journalCollector{journal: s.cfg.Store, log: s.log, desc: prometheus.NewDesc("svc_x402_payments",
			"Payment journal rows, by state (settling: in flight or awaiting recovery; unknown: for the operator to reconcile).",
			[]string{"state"}, nil)},
		newHealthCollector(s),
	)
	if rl, ok := s.cfg.Facilitator.(relayer); ok {
		s.metrics.reg.MustRegister(newRelayerCollector(rl))
	}
}

// metricsHandler serves the registry in the Prometheus exposition format
// the scraper asks for (text by default).
func (s *Server) metricsHandler() http.Handler {
	return promhttp.HandlerFor(s.metrics.reg, promhttp.HandlerOpts{
		ErrorLog:      slogPromLogger{s},
		ErrorHandling: promhttp.ContinueOnError,
	})
}

// slogPromLogger sends promhttp's errors to the server's logger.
type slogPromLogger struct{ s *Server }

func (l slogPromLogger) Println(v ...any) {
	parts := make([]string, len(v))
	for i, x := range v {
		if e, ok := x.(error); ok {
			parts[i] = e.Error()
		} else if str, ok := x.(string); ok {
			parts[i] = str
		}
	}
	l.s.log.Warn("metrics: " + strings.Join(parts, " "))
}

// Registry returns the server's Prometheus registry, to add collectors of
// one's own (they are exposed on GET /metrics with the server's).
func (s *Server) Registry() *prometheus.Registry { return s.metrics.reg }

package httpserver

import (
	"context"
	"log/slog"
	"math"
	"net/http"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/seed1284c1d2/svc/discovery/stats"
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

// scrapeTimeout bounds the store and health queries of one scrape.
const scrapeTimeout = 2 * time.Second

// metrics holds the server's Prometheus metrics, in a registry of its own
// (never the client library's global one). The answered requests, 402s
// and settlements are counted in a stats.Traffic, the counters discovery's
// stats routes read too. Per-route series are resolved when the route is
// registered, so the hot path adds to a counter it already holds and
// takes no lock but a read of an immutable map.
type metrics struct {
	start time.Time
	reg   *prometheus.Registry

	traffic     *stats.Traffic
	duration    *prometheus.HistogramVec // route
	revenue     *prometheus.CounterVec   // route, network, asset (atomic units)
	charged     *prometheus.CounterVec   // route, network, asset, scheme (atomic units)
	failures    *prometheus.CounterVec   // reason
	rateLimited prometheus.Counter
	recovered   *prometheus.CounterVec // result

	mu     sync.RWMutex
	routes map[string]*routeMetrics // by route label

	reasonsMu sync.RWMutex
	reasons   map[string]prometheus.Counter
}

// routeMetrics are the series of one route.
type routeMetrics struct {
	label string
	kind  string // stats.KindPaid, KindFree, KindUnlimited or KindUnmatched
	paid  bool   // kind is stats.KindPaid: 402s and settlements are counted

	traffic  *stats.RouteCounters
	duration prometheus.Observer
}

// newMetrics builds the registry: the server's own metrics, build_info,
// the Go runtime and process collectors, and the collectors that ask the
// store and the dependencies at scrape time (added by the server). traffic
// counts the answers (nil: a Traffic of its own).
func newMetrics(now time.Time, version string, traffic *stats.Traffic) *metrics {
	if traffic == nil {
		traffic = stats.NewTraffic()
	}
	m := &metrics{
		start:   now,
		reg:     prometheus.NewRegistry(),
		traffic: traffic,
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "svc_http_request_duration_seconds", Help: "Time from the request's arrival to the end of its answer, by route.",
			Buckets: latencyBuckets(),
		}, []string{"route"}),
		revenue: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "svc_x402_revenue_atomic_total", Help: "Settled amounts in the asset's atomic units (USDC: millionths of a dollar), by route, network and asset.",
		}, []string{"route", "network", "asset"}),
		charged: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "svc_x402_charged_atomic_total", Help: "Amounts charged for answered paid calls in the asset's atomic units, by route, network, asset and payment scheme " +
				"(exact: settled with the call; batch-settlement: claimed from the channels later, in batches).",
		}, []string{"route", "network", "asset", "scheme"}),
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
		m.traffic, m.duration, m.revenue, m.charged, m.failures, m.rateLimited, m.recovered,
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
	m.route(stats.Unmatched, stats.KindUnmatched)
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
		rm = &routeMetrics{label: label, kind: kind, paid: kind == stats.KindPaid,
			traffic: m.traffic.Route(label, kind), duration: m.duration.WithLabelValues(label)}
		m.routes[label] = rm
	}
	return rm
}

// observe records one answered request.
func (rm *routeMetrics) observe(method string, status int, d time.Duration) {
	rm.traffic.Observe(method, status)
	rm.duration.Observe(max(0, d.Seconds()))
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

// Counts returns the request, 402 and settlement counts of every route,
// sorted by route label: the figures GET /metrics exposes, for other
// reports of the same events (the dashboard) to read rather than count
// again. Discovery's stats routes read the same Traffic.
func (s *Server) Counts() []stats.RouteCounts { return s.metrics.traffic.Counts() }

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

package stats

import (
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// Kinds of route (the kind label of svc_http_requests_total).
const (
	KindPaid      = "paid"      // a paid tool's route
	KindFree      = "free"      // a free route, rate-limited per client
	KindUnlimited = "unlimited" // a route outside the free-route limits
	KindUnmatched = "unmatched" // requests no route matched
)

// Unmatched labels the requests that matched no route (404, 405).
const Unmatched = "unmatched"

// Traffic is the one count of answered requests: by route, kind, method
// and status, with the 402s offering payment and the settled payments of
// the paid routes. It is a prometheus.Collector (svc_http_requests_total,
// svc_x402_payment_required_total and svc_x402_settlements_total: the
// server registers it with its metrics) and the source of the request
// figures of the stats routes (Aggregates reads it), so each event is
// counted once and reported the same on both.
//
// The series of a route are resolved once (Route): the hot path adds to a
// counter it already holds and takes no lock but an atomic read of an
// immutable map. A Traffic is safe for concurrent use.
type Traffic struct {
	requests        *prometheus.CounterVec // route, kind, method, status
	paymentRequired *prometheus.CounterVec // route
	settled         *prometheus.CounterVec // route

	// routes holds the counters by route label: an immutable map read
	// with one atomic load, copied under mu to add a route.
	routes atomic.Pointer[map[string]*RouteCounters]
	mu     sync.Mutex
}

// NewTraffic returns a Traffic counting nothing yet.
func NewTraffic() *Traffic {
	t := &Traffic{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "svc_http_requests_total", Help: "HTTP requests answered, by route, kind, method and status.",
		}, []string{"route", "kind", "method", "status"}),
		paymentRequired: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "svc_x402_payment_required_total", Help: "402 answers offering payment (requests that came without one), by route.",
		}, []string{"route"}),
		settled: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "svc_x402_settlements_total", Help: "Settled payments (paid calls, every transport), by the tool's HTTP route.",
		}, []string{"route"}),
	}
	t.routes.Store(&map[string]*RouteCounters{})
	return t
}

// Describe implements prometheus.Collector.
func (t *Traffic) Describe(ch chan<- *prometheus.Desc) {
	t.requests.Describe(ch)
	t.paymentRequired.Describe(ch)
	t.settled.Describe(ch)
}

// Collect implements prometheus.Collector.
func (t *Traffic) Collect(ch chan<- prometheus.Metric) {
	t.requests.Collect(ch)
	t.paymentRequired.Collect(ch)
	t.settled.Collect(ch)
}

// Route returns the counters of a route label (its path pattern,
// "/api/find"; Unmatched), creating them with kind (KindPaid, KindFree,
// ...) on first use; a later call returns them whatever its kind. The
// 402 and settlement series of a paid route exist (at zero) from then on.
func (t *Traffic) Route(label, kind string) *RouteCounters {
	if rc := (*t.routes.Load())[label]; rc != nil {
		return rc
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	old := *t.routes.Load()
	if rc := old[label]; rc != nil {
		return rc
	}
	rc := &RouteCounters{t: t, label: strings.Clone(label), kind: kind}
	if kind == KindPaid {
		pr, st := t.paymentRequired.WithLabelValues(label), t.settled.WithLabelValues(label)
		rc.paymentRequired.Store(&pr)
		rc.settled.Store(&st)
	}
	rc.byStatus.Store(&map[uint32]prometheus.Counter{})
	next := make(map[string]*RouteCounters, len(old)+1)
	for k, v := range old {
		next[k] = v
	}
	next[rc.label] = rc
	t.routes.Store(&next)
	return rc
}

// RouteCounters are the counters of one route.
type RouteCounters struct {
	t     *Traffic
	label string
	kind  string

	// byStatus holds the request counters by method and status. The map
	// is never modified once published: a request loads it with one
	// atomic read; a new method and status pair, rare, publishes a copy
	// under mu.
	byStatus atomic.Pointer[map[uint32]prometheus.Counter]
	mu       sync.Mutex

	paymentRequired atomic.Pointer[prometheus.Counter]
	settled         atomic.Pointer[prometheus.Counter]
}

// Label is the route's label.
func (rc *RouteCounters) Label() string { return rc.label }

// Kind is the route's kind.
func (rc *RouteCounters) Kind() string { return rc.kind }

// Observe counts one answer of the route: its method and status.
func (rc *RouteCounters) Observe(method string, status int) {
	k := statusKey(methodIndex(method), status)
	c := (*rc.byStatus.Load())[k]
	if c == nil {
		c = rc.addStatus(k, MethodLabel(method), status)
	}
	c.Inc()
}

// addStatus returns the counter of a method and status, publishing a new
// map holding it when it is new.
func (rc *RouteCounters) addStatus(k uint32, method string, status int) prometheus.Counter {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	old := *rc.byStatus.Load()
	if c := old[k]; c != nil {
		return c
	}
	next := make(map[uint32]prometheus.Counter, len(old)+1)
	for kk, c := range old {
		next[kk] = c
	}
	c := rc.t.requests.WithLabelValues(rc.label, rc.kind, method, strconv.Itoa(status))
	next[k] = c
	rc.byStatus.Store(&next)
	return c
}

// PaymentRequired counts a 402 offering payment.
func (rc *RouteCounters) PaymentRequired() {
	rc.counter(&rc.paymentRequired, rc.t.paymentRequired).Inc()
}

// Settled counts a settled payment of the route's tool.
func (rc *RouteCounters) Settled() { rc.counter(&rc.settled, rc.t.settled).Inc() }

// counter returns the series held in p, resolving it in vec on first use
// (a route that is not paid counts 402s only when a server without
// payments, such as Aggregates.Middleware's, sees one).
func (rc *RouteCounters) counter(p *atomic.Pointer[prometheus.Counter], vec *prometheus.CounterVec) prometheus.Counter {
	if c := p.Load(); c != nil {
		return *c
	}
	c := vec.WithLabelValues(rc.label)
	p.CompareAndSwap(nil, &c)
	return *p.Load()
}

// RouteCounts are the counts of one route since the Traffic was built.
type RouteCounts struct {
	Route string // the route's label: its path pattern, or Unmatched
	Kind  string // KindPaid, KindFree, KindUnlimited or KindUnmatched
	// Requests counts the answers; ByClass by status class (index
	// status/100, 0 for anything outside 1xx–5xx).
	Requests int64
	ByClass  [6]int64
	// PaymentRequired counts the 402s offering payment; Settled the paid
	// calls settled for the route's tool, over every transport.
	PaymentRequired int64
	Settled         int64
}

// Counts returns the counts of every route, sorted by route label: the
// figures the Prometheus exposition shows.
func (t *Traffic) Counts() []RouteCounts {
	all := *t.routes.Load()
	routes := make([]*RouteCounters, 0, len(all))
	for _, rc := range all {
		routes = append(routes, rc)
	}
	sort.Slice(routes, func(i, j int) bool { return routes[i].label < routes[j].label })
	out := make([]RouteCounts, 0, len(routes))
	for _, rc := range routes {
		c := RouteCounts{Route: rc.label, Kind: rc.kind, PaymentRequired: valueOf(rc.paymentRequired.Load()), Settled: valueOf(rc.settled.Load())}
		for k, ctr := range *rc.byStatus.Load() {
			n := counterValue(ctr)
			c.Requests += n
			class := int(k&0xffff) / 100
			if class < 1 || class > 5 {
				class = 0
			}
			c.ByClass[class] += n
		}
		out = append(out, c)
	}
	return out
}

func valueOf(p *prometheus.Counter) int64 {
	if p == nil {
		return 0
	}
	return counterValue(*p)
}

// counterValue reads a counter's value.
func counterValue(c prometheus.Counter) int64 {
	var d dto.Metric
	if c == nil || c.Write(&d) != nil {
		return 0
	}
	return int64(d.GetCounter().GetValue())
}

// statusKey packs a method index (methodIndex) and a status code.
func statusKey(methodIndex, code int) uint32 { return uint32(methodIndex)<<16 | uint32(code)&0xffff }

// MethodLabel bounds a method to the standard methods ("OTHER" for the
// rest), as the method label of the counters and of access logs.
func MethodLabel(m string) string {
	switch m {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodOptions, http.MethodConnect, http.MethodTrace:
		return m
	}
	return "OTHER"
}

// methodIndex numbers the labels of MethodLabel (for the counters' keys).
func methodIndex(m string) int {
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

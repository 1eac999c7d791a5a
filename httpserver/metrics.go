package httpserver

import (
	"bufio"
	"github.com/seed1284c1d2/svc/x402/engine"
	"io"
	"math"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// MetricsContentType is the media type of GET /metrics: the Prometheus text
// exposition format 0.0.4.
const MetricsContentType = "text/plain; version=0.0.4; charset=utf-8"

// latencyBuckets are the upper bounds, in seconds, of the request latency
// histogram.
var latencyBuckets = [...]float64{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30}

// maxReasonLabels bounds the distinct reason labels of svc_failures_total;
// further reasons are counted as "other". Reasons can come from a remote
// facilitator, so their set is not ours to trust.
const maxReasonLabels = 64

// unmatchedRoute labels requests that matched no route (404, 405).
const unmatchedRoute = "unmatched"

// metrics holds the server's counters: a hand-written Prometheus text
// exposition (a handful of counters and one histogram do not justify a
// client library). Per-route series are created when the route is
// registered, so the hot path takes no lock but a read lock on the
// per-route status map.
type metrics struct {
	start time.Time

	mu     sync.RWMutex
	routes map[string]*routeMetrics // by route label

	reasonsMu sync.RWMutex
	reasons   map[string]*atomic.Uint64

	rateLimited atomic.Uint64
	// recovered counts the payments resolved by the engine's recovery, by
	// result: settled, released, unknown.
	recoveredSettled  atomic.Uint64
	recoveredReleased atomic.Uint64
	recoveredUnknown  atomic.Uint64
}

// routeMetrics are the series of one route.
type routeMetrics struct {
	label string
	kind  string // "paid", "free" or "unmatched"

	// byStatus counts answers by method and status. The map is never
	// modified once published: a request loads it with one atomic read
	// (no lock, no shared write besides its counter); a new method and
	// status pair, rare, publishes a copy under mu.
	byStatus atomic.Pointer[map[uint32]*statusCounter]
	mu       sync.Mutex

	buckets [len(latencyBuckets) + 1]atomic.Uint64 // last: +Inf
	sumNS   atomic.Uint64
	count   atomic.Uint64

	paymentRequired atomic.Uint64 // 402s offering payment (no payment sent)
	settled         atomic.Uint64 // settled payments
}

// statusCounter counts the answers of one method and status.
type statusCounter struct {
	method string
	code   int
	n      atomic.Uint64
}

// statusKey packs a method label (metricMethodIndex) and a status code.
func statusKey(methodIndex, code int) uint32 { return uint32(methodIndex)<<16 | uint32(code)&0xffff }

func newMetrics(now time.Time) *metrics {
	m := &metrics{start: now, routes: map[string]*routeMetrics{}, reasons: map[string]*atomic.Uint64{}}
	m.route(unmatchedRoute, "unmatched")
	return m
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
		rm = &routeMetrics{label: label, kind: kind}
		rm.byStatus.Store(&map[uint32]*statusCounter{})
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
	c.n.Add(1)
	rm.buckets[latencyBucket(d)].Add(1)
	if d > 0 {
		rm.sumNS.Add(uint64(d))
	}
	rm.count.Add(1)
}

// addStatus returns the counter of a method and status, publishing a new
// map holding it when it is new.
func (rm *routeMetrics) addStatus(k uint32, method string, status int) *statusCounter {
	rm.mu.Lock()
	defer rm.mu.Unlock()
	old := *rm.byStatus.Load()
	if c := old[k]; c != nil {
		return c
	}
	next := make(map[uint32]*statusCounter, len(old)+1)
	for kk, c := range old {
		next[kk] = c
	}
	c := &statusCounter{method: method, code: status}
	next[k] = c
	rm.byStatus.Store(&next)
	return c
}

// latencyBucket returns the index of the histogram bucket of d: the first
// upper bound at or above d in seconds (as sort.SearchFloat64s finds it),
// or the +Inf bucket.
func latencyBucket(d time.Duration) int {
	s := d.Seconds()
	for i, ub := range latencyBuckets {
		if s <= ub {
			return i
		}
	}
	return len(latencyBuckets)
}

// failure counts an error answer by its reason.
func (m *metrics) failure(reason string) {
	reason = sanitizeReason(reason)
	m.reasonsMu.RLock()
	c := m.reasons[reason]
	m.reasonsMu.RUnlock()
	if c != nil {
		c.Add(1)
		return
	}
	m.reasonsMu.Lock()
	if c = m.reasons[reason]; c == nil {
		if len(m.reasons) >= maxReasonLabels {
			reason = "other"
			c = m.reasons[reason]
		}
		if c == nil {
			c = &atomic.Uint64{}
			m.reasons[reason] = c
		}
	}
	m.reasonsMu.Unlock()
	c.Add(1)
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

// write renders the exposition.
func (m *metrics) write(w io.Writer, now time.Time, journal map[engine.State]int64) error {
	bw := bufio.NewWriter(w)
	m.mu.RLock()
	routes := make([]*routeMetrics, 0, len(m.routes))
	for _, rm := range m.routes {
		routes = append(routes, rm)
	}
	m.mu.RUnlock()
	sort.Slice(routes, func(i, j int) bool { return routes[i].label < routes[j].label })

	bw.WriteString("# HELP svc_http_requests_total HTTP requests answered, by route, method and status.\n")
	bw.WriteString("# TYPE svc_http_requests_total counter\n")
	for _, rm := range routes {
		counters := make([]*statusCounter, 0, len(*rm.byStatus.Load()))
		for _, c := range *rm.byStatus.Load() {
			counters = append(counters, c)
		}
		sort.Slice(counters, func(i, j int) bool {
			if counters[i].method != counters[j].method {
				return counters[i].method < counters[j].method
			}
			return counters[i].code < counters[j].code
		})
		for _, c := range counters {
			bw.WriteString(`svc_http_requests_total{route="` + escapeLabel(rm.label) + `",kind="` + rm.kind + `",method="` + c.method + `",status="` + strconv.Itoa(c.code) + `"} `)
			bw.WriteString(strconv.FormatUint(c.n.Load(), 10))
			bw.WriteByte('\n')
		}
	}

	bw.WriteString("# HELP svc_http_request_duration_seconds Time from the request's arrival to the end of its answer, by route.\n")
	bw.WriteString("# TYPE svc_http_request_duration_seconds histogram\n")
	for _, rm := range routes {
		if rm.count.Load() == 0 {
			continue
		}
		lbl := `route="` + escapeLabel(rm.label) + `"`
		var cum uint64
		for i, ub := range latencyBuckets {
			cum += rm.buckets[i].Load()
			bw.WriteString("svc_http_request_duration_seconds_bucket{" + lbl + `,le="` + formatFloat(ub) + `"} ` + strconv.FormatUint(cum, 10) + "\n")
		}
		cum += rm.buckets[len(latencyBuckets)].Load()
		bw.WriteString("svc_http_request_duration_seconds_bucket{" + lbl + `,le="+Inf"} ` + strconv.FormatUint(cum, 10) + "\n")
		bw.WriteString("svc_http_request_duration_seconds_sum{" + lbl + "} " + formatFloat(float64(rm.sumNS.Load())/1e9) + "\n")
		bw.WriteString("svc_http_request_duration_seconds_count{" + lbl + "} " + strconv.FormatUint(cum, 10) + "\n")
	}

	bw.WriteString("# HELP svc_x402_payment_required_total 402 answers offering payment (requests that came without one), by route.\n")
	bw.WriteString("# TYPE svc_x402_payment_required_total counter\n")
	for _, rm := range routes {
		if rm.kind == "paid" {
			bw.WriteString(`svc_x402_payment_required_total{route="` + escapeLabel(rm.label) + `"} ` + strconv.FormatUint(rm.paymentRequired.Load(), 10) + "\n")
		}
	}
	bw.WriteString("# HELP svc_x402_settlements_total Settled payments, by route.\n")
	bw.WriteString("# TYPE svc_x402_settlements_total counter\n")
	for _, rm := range routes {
		if rm.kind == "paid" {
			bw.WriteString(`svc_x402_settlements_total{route="` + escapeLabel(rm.label) + `"} ` + strconv.FormatUint(rm.settled.Load(), 10) + "\n")
		}
	}

	m.reasonsMu.RLock()
	reasons := make([]string, 0, len(m.reasons))
	for r := range m.reasons {
		reasons = append(reasons, r)
	}
	sort.Strings(reasons)
	bw.WriteString("# HELP svc_failures_total Error answers and refused payments, by reason (problem code or x402 reason).\n")
	bw.WriteString("# TYPE svc_failures_total counter\n")
	for _, r := range reasons {
		bw.WriteString(`svc_failures_total{reason="` + escapeLabel(r) + `"} ` + strconv.FormatUint(m.reasons[r].Load(), 10) + "\n")
	}
	m.reasonsMu.RUnlock()

	bw.WriteString("# HELP svc_rate_limited_total Free-route requests refused with 429.\n")
	bw.WriteString("# TYPE svc_rate_limited_total counter\n")
	bw.WriteString("svc_rate_limited_total " + strconv.FormatUint(m.rateLimited.Load(), 10) + "\n")
	if journal != nil {
		bw.WriteString("# HELP svc_x402_payments Payment journal rows, by state (settling: in flight or awaiting recovery; unknown: for the operator to reconcile).\n")
		bw.WriteString("# TYPE svc_x402_payments gauge\n")
		for _, st := range engine.States() {
			bw.WriteString(`svc_x402_payments{state="` + st.String() + `"} ` + strconv.FormatInt(journal[st], 10) + "\n")
		}
	}
	bw.WriteString("# HELP svc_x402_recovered_total Payments resolved by the engine's recovery, by result.\n")
	bw.WriteString("# TYPE svc_x402_recovered_total counter\n")
	bw.WriteString(`svc_x402_recovered_total{result="settled"} ` + strconv.FormatUint(m.recoveredSettled.Load(), 10) + "\n")
	bw.WriteString(`svc_x402_recovered_total{result="released"} ` + strconv.FormatUint(m.recoveredReleased.Load(), 10) + "\n")
	bw.WriteString(`svc_x402_recovered_total{result="unknown"} ` + strconv.FormatUint(m.recoveredUnknown.Load(), 10) + "\n")
	bw.WriteString("# HELP svc_uptime_seconds Seconds since the server was built.\n")
	bw.WriteString("# TYPE svc_uptime_seconds gauge\n")
	bw.WriteString("svc_uptime_seconds " + formatFloat(math.Max(0, now.Sub(m.start).Seconds())) + "\n")
	return bw.Flush()
}

func formatFloat(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

// escapeLabel escapes a label value for the text format.
func escapeLabel(s string) string {
	if !strings.ContainsAny(s, "\\\"\n") {
		return s
	}
	return strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(s)
}

// Package stats counts the traffic of the server once and reports it
// twice: Traffic is the count of answered requests by route, kind,
// method and status, with the 402s offering payment and the settled
// payments (a prometheus.Collector the server's /metrics exposes), and
// Aggregates adds what a public report needs beyond it (requests per
// attribution source, per client kind and per minute) and frames both as
// the privacy-safe Snapshot of discovery's stats routes.
package stats

import (
	"cmp"
	"math/rand/v2"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/seed1284c1d2/svc/wire"
	"github.com/seed1284c1d2/svc/x402"
)

// Client kinds, guessed from a request (User-Agent, payment headers, the
// route): the keys of Snapshot.Clients.
const (
	ClientMCP     = "mcp"
	ClientA2A     = "a2a"
	ClientX402    = "x402"
	ClientBrowser = "browser"
	ClientCrawler = "crawler"
	ClientOther   = "other"
)

// statsKinds lists the client kinds in their index order.
func statsKinds() [6]string {
	return [6]string{ClientMCP, ClientA2A, ClientX402, ClientBrowser, ClientCrawler, ClientOther}
}

// Bounds of the stats' label sets.
const (
	// MaxSources is the number of distinct src values counted; later
	// values are counted under "other".
	MaxSources = 100
	// MaxRoutes is the number of routes a snapshot lists, the busiest
	// first; the others are counted together under "other".
	MaxRoutes = 256
	// MaxSourceLen is the length a src value is cut to.
	MaxSourceLen = 48
	// Window is the span of RequestsPerMinute (60 one-second buckets).
	Window = 60 * time.Second
)

// Aggregates are the aggregate counters since start behind the stats
// routes: the requests per route and per status class, the 402s issued
// and the paid calls settled, read from a Traffic (the counters the
// server's Prometheus metrics expose: each event is counted once), plus
// what those lack: requests per src query value and per client kind, and
// over a sliding minute.
//
// Privacy: nothing identifying is kept. No address, wallet, token, header
// value, path parameter or body is stored; a User-Agent only selects a
// client kind; a src value is lower-cased, reduced to [a-z0-9._-], cut to
// MaxSourceLen characters, and replaced by "redacted" when it looks
// like an identifier (an e-mail address, or a run of 16 or more hex digits
// such as a wallet or a token). At most MaxSources distinct values are
// kept; the rest count as "other".
//
// Counting is lock-free and allocation-free on the hot path: counters are
// atomic and sharded over cache lines (each observation updates a random
// shard; a snapshot sums them), label sets are an immutable map read
// through an atomic pointer and copied under a lock only to admit a new
// label. Aggregates are safe for concurrent use.
type Aggregates struct {
	now   func() time.Time
	start time.Time

	// traffic counts the requests, their status, routes, 402s and
	// settlements.
	traffic *Traffic

	// shards spread the hot counters over cache lines: each observation
	// updates one shard picked at random, a snapshot sums them all.
	shards  [statsShards]statsShard
	sources statsLabels
}

// statsShards is the number of counter shards (a power of two).
const statsShards = 8

// statsShard is one shard of the counters, padded to its own cache lines.
type statsShard struct {
	kinds [6]atomic.Int64 // index as statsKinds
	// window holds 60 one-second buckets, each packing the unix second
	// (its low 32 bits, in the high half of the word) and the count of
	// that second (the low half).
	window [60]atomic.Uint64
	_      [64]byte
}

// statsCell is a sharded counter of one label.
type statsCell [statsShards]struct {
	n atomic.Int64
	_ [56]byte
}

func (c *statsCell) add(shard uint32) { c[shard].n.Add(1) }

func (c *statsCell) load() int64 {
	var n int64
	for i := range c {
		n += c[i].n.Load()
	}
	return n
}

// shard picks the shard of one observation.
func (s *Aggregates) shard() (*statsShard, uint32) {
	i := rand.Uint32() & (statsShards - 1)
	return &s.shards[i], i
}

// New returns empty aggregates over traffic (nil means a new Traffic,
// counted by Observe and Middleware); now is the clock (nil means
// time.Now).
func New(now func() time.Time, traffic *Traffic) *Aggregates {
	if now == nil {
		now = time.Now
	}
	if traffic == nil {
		traffic = NewTraffic()
	}
	s := &Aggregates{now: now, start: now(), traffic: traffic}
	s.sources.max = MaxSources
	return s
}

// Traffic returns the counters of the requests the snapshots report: give
// them to the server that counts its answers (httpserver.Config.Traffic),
// which then calls ObserveServed.
func (s *Aggregates) Traffic() *Traffic { return s.traffic }

// statsLabels counts occurrences of a bounded set of labels. Lookups read
// an immutable map through an atomic pointer (no lock, no allocation);
// admitting a new label copies the map under a mutex, which happens at
// most max times.
type statsLabels struct {
	max   int
	m     atomic.Pointer[map[string]*statsCell]
	mu    sync.Mutex
	other statsCell
}

func (l *statsLabels) add(label string, shard uint32) {
	if mp := l.m.Load(); mp != nil {
		if c, ok := (*mp)[label]; ok {
			c.add(shard)
			return
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	old := map[string]*statsCell{}
	if mp := l.m.Load(); mp != nil {
		old = *mp
	}
	if c, ok := old[label]; ok {
		c.add(shard)
		return
	}
	if len(old) >= l.max {
		l.other.add(shard)
		return
	}
	next := make(map[string]*statsCell, len(old)+1)
	for k, v := range old {
		next[k] = v
	}
	c := new(statsCell)
	c.add(shard)
	next[strings.Clone(label)] = c
	l.m.Store(&next)
}

// snapshot returns the counts, largest first (ties by label), with
// "other" last when it counted anything.
func (l *statsLabels) snapshot() []Count {
	out := []Count{}
	if mp := l.m.Load(); mp != nil {
		for k, c := range *mp {
			out = append(out, Count{Name: k, Count: c.load()})
		}
	}
	slices.SortFunc(out, byCountDesc)
	if o := l.other.load(); o > 0 {
		out = append(out, Count{Name: "other", Count: o})
	}
	return out
}

// Observe counts one answered request, in the Traffic and in the
// aggregates of its own: route is the route's label (its path pattern,
// "/api/find"; "" means a request no route matched), status the HTTP
// status sent; a 402 counts as a 402 issued. Only the route label, the
// sanitized src query value, the client kind and the status are kept.
// A server that counts its answers in the Traffic itself calls
// ObserveServed instead.
func (s *Aggregates) Observe(route string, r *http.Request, status int) {
	route = routeLabel(route)
	rc := s.traffic.Route(route, KindFree)
	method := ""
	if r != nil {
		method = r.Method
	}
	rc.Observe(method, status)
	if status == http.StatusPaymentRequired {
		rc.PaymentRequired()
	}
	s.observeClient(route, r)
}

// routeLabel bounds a route label: "" is Unmatched, a label is cut to 100
// bytes.
func routeLabel(route string) string {
	if route == "" {
		return Unmatched
	} else if len(route) > 100 {
		return route[:100]
	}
	return route
}

// observeClient counts what the Traffic lacks of one request: its src
// value, its client kind and its second in the sliding minute.
func (s *Aggregates) observeClient(route string, r *http.Request) {
	sh, i := s.shard()
	if r != nil {
		if src := statsSource(r); src != "" {
			s.sources.add(src, i)
		}
		sh.kinds[statsKindIndex(r, route)].Add(1)
	} else {
		sh.kinds[5].Add(1)
	}
	sh.tick(s.now().Unix())
}

// tick counts a request in the second now of the sliding window.
func (s *statsShard) tick(now int64) {
	b := &s.window[uint64(now)%60]
	sec := uint64(uint32(now))
	for {
		v := b.Load()
		nv := sec<<32 | 1
		if v>>32 == sec {
			nv = v + 1
		}
		if b.CompareAndSwap(v, nv) {
			return
		}
	}
}

// perMinute sums the buckets of the last 60 seconds up to now.
func (s *statsShard) perMinute(now int64) int64 {
	var n int64
	cur := uint32(now)
	for i := range s.window {
		v := s.window[i].Load()
		if v == 0 {
			continue
		}
		if cur-uint32(v>>32) < 60 {
			n += int64(v & 0xffffffff)
		}
	}
	return n
}

// Middleware counts every request served by next with Observe: the route
// label is the path part of the pattern the http.ServeMux inside next
// matched (Request.Pattern), the status what next wrote; a 2xx answer
// carrying PAYMENT-RESPONSE counts as a settled paid call. It is for a
// server that does not count its answers in the Traffic itself.
func (s *Aggregates) Middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sw := &statsWriter{ResponseWriter: w}
		defer func() {
			status := sw.status
			if status == 0 {
				status = http.StatusOK
			}
			route := routeLabel(patternPath(r.Pattern))
			s.Observe(route, r, status)
			if status < 300 && status >= 200 && len(w.Header()[x402.CanonicalPaymentResponse]) > 0 {
				s.traffic.Route(route, KindFree).Settled()
			}
		}()
		next.ServeHTTP(sw, r)
	})
}

// ObserveServed counts what the Traffic lacks of one answered request (its
// src value, client kind and second in the sliding minute): r after
// routing (its Pattern set by the http.ServeMux that matched it). The
// server that counts its answers in the Traffic (and wraps every answer
// already) calls it for each; status and the answer's header are what it
// sent (httpserver.RequestObserver).
func (s *Aggregates) ObserveServed(r *http.Request, status int, h http.Header) {
	s.observeClient(routeLabel(patternPath(r.Pattern)), r)
}

// patternPath is the path part of a ServeMux pattern ("GET /api/find" →
// "/api/find").
func patternPath(pattern string) string {
	if _, p, ok := strings.Cut(pattern, " "); ok {
		return strings.TrimSpace(p)
	}
	return pattern
}

// statsWriter records the status of an answer.
type statsWriter struct {
	http.ResponseWriter
	status int
}

// WriteHeader records the first final status.
func (w *statsWriter) WriteHeader(code int) {
	if w.status == 0 && code >= 200 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

// Write records an implicit 200.
func (w *statsWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (w *statsWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// statsSource returns the sanitized src query value of r ("" when
// absent): the first src parameter, found without parsing the whole query.
func statsSource(r *http.Request) string {
	raw := r.URL.RawQuery
	for raw != "" {
		var pair string
		pair, raw, _ = strings.Cut(raw, "&")
		v, ok := strings.CutPrefix(pair, "src=")
		if !ok || v == "" {
			continue
		}
		if strings.ContainsAny(v, "%+") {
			u, err := url.QueryUnescape(v)
			if err != nil {
				return "invalid"
			}
			v = u
		}
		return SanitizeSource(v)
	}
	return ""
}

// SanitizeSource reduces an attribution value (the src query parameter) to
// what Aggregates keep: lower case, only a-z 0-9 . _ -, at most
// MaxSourceLen characters; "redacted" when it looks like an
// identifier (contains "@", or a run of 16 or more hex digits: a wallet,
// a hash, a token); "invalid" when nothing is left.
func SanitizeSource(v string) string {
	if strings.Contains(v, "@") {
		return "redacted"
	}
	if statsCleanSource(v) {
		return v
	}
	var b strings.Builder
	run := 0
	for _, c := range strings.ToLower(v) {
		hex := c >= '0' && c <= '9' || c >= 'a' && c <= 'f'
		if hex {
			run++
			if run >= 16 {
				return "redacted"
			}
		} else {
			run = 0
		}
		if b.Len() < MaxSourceLen && (c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			b.WriteRune(c)
		}
	}
	if b.Len() == 0 {
		return "invalid"
	}
	return b.String()
}

// statsCleanSource reports whether v is already what SanitizeSource
// keeps: 1 to MaxSourceLen of a-z 0-9 . _ -, without a run of 16 hex
// digits.
func statsCleanSource(v string) bool {
	if v == "" || len(v) > MaxSourceLen {
		return false
	}
	run := 0
	for i := 0; i < len(v); i++ {
		c := v[i]
		switch {
		case c >= '0' && c <= '9' || c >= 'a' && c <= 'f':
			run++
			if run >= 16 {
				return false
			}
		case c >= 'g' && c <= 'z' || c == '.' || c == '_' || c == '-':
			run = 0
		default:
			return false
		}
	}
	return true
}

// ClientKind guesses the kind of client that sent r to the route labelled
// route: x402 (a payment header, or an x402 library's User-Agent), mcp or
// a2a (their endpoints or User-Agents), crawler (bots, spiders, scanners),
// browser (a Mozilla-style User-Agent), other.
func ClientKind(r *http.Request, route string) string {
	return statsKinds()[statsKindIndex(r, route)]
}

func statsKindIndex(r *http.Request, route string) int {
	if len(r.Header[x402.CanonicalPaymentSignature]) > 0 || len(r.Header[x402.CanonicalV1Payment]) > 0 {
		return 2
	}
	switch route {
	case wire.PathMCP:
		return 0
	case wire.PathA2A:
		return 1
	}
	// Lower-case the first 256 bytes of the User-Agent on the stack.
	var buf [256]byte
	var src string
	if v := r.Header["User-Agent"]; len(v) > 0 {
		src = v[0]
	}
	n := copy(buf[:], src)
	for i := range n {
		if c := buf[i]; c >= 'A' && c <= 'Z' {
			buf[i] = c + 'a' - 'A'
		}
	}
	if n == 0 {
		return 5
	}
	// A string view of the stack buffer (no copy; it does not outlive
	// this call).
	ua := unsafe.String(&buf[0], n)
	has := func(sub string) bool { return strings.Contains(ua, sub) }
	switch {
	case has("x402"):
		return 2
	case has("mcp") || has("modelcontextprotocol"):
		return 0
	case has("a2a"):
		return 1
	case has("bot") || has("crawl") || has("spider") || has("slurp") || has("scan") || has("preview") ||
		has("facebookexternalhit") || has("headless"):
		return 4
	case strings.HasPrefix(ua, "mozilla/") && (has("chrome") || has("safari") || has("firefox") || has("gecko") || has("edg")):
		return 3
	}
	return 5
}

// Count is a label and its count.
type Count struct {
	Name  string `json:"name"`
	Count int64  `json:"count"`
}

// Snapshot is the body of the stats routes: aggregate counters since
// Since, nothing per client.
type Snapshot struct {
	OK      bool   `json:"ok"`
	Surface string `json:"surface"`
	Purpose string `json:"purpose"`
	// Since is when counting started (RFC 3339, UTC).
	Since         string `json:"since"`
	UptimeSeconds int64  `json:"uptimeSeconds"`
	Requests      int64  `json:"requests"`
	// RequestsPerMinute counts the requests of the last 60 seconds
	// (sliding window of one-second buckets).
	RequestsPerMinute int64 `json:"requestsPerMinute"`
	// PaymentRequired counts the 402s issued; Settled the paid calls
	// whose payment settled.
	PaymentRequired int64 `json:"paymentRequired"`
	Settled         int64 `json:"settled"`
	// DiscoveryHits counts requests to the manifests, the agent card,
	// /openapi.json and /skill.md.
	DiscoveryHits int64            `json:"discoveryHits"`
	Status        map[string]int64 `json:"status"`
	Clients       map[string]int64 `json:"clients"`
	Routes        []Count          `json:"routes"`
	Sources       []Count          `json:"sources"`
	Limits        Limits           `json:"limits"`
	Privacy       string           `json:"privacy"`
}

// Limits states the bounds of the label sets.
type Limits struct {
	MaxSources    int    `json:"maxSources"`
	MaxRoutes     int    `json:"maxRoutes"`
	WindowSeconds int    `json:"windowSeconds"`
	SourceParam   string `json:"sourceParam"`
}

// Privacy is the privacy statement of every stats answer.
const Privacy = "aggregate counters only: no IP address, wallet, token, header value, path parameter or body is kept; " +
	"User-Agent only selects a client kind; src values are sanitized, identifier-like values redacted, at most 100 distinct kept"

// Snapshot returns the counters now, framed for the stats route of the
// named surface (amplifier, distribution, magnet) with its purpose.
func (s *Aggregates) Snapshot(surface, purpose string) Snapshot {
	now := s.now()
	var rpm int64
	for i := range s.shards {
		rpm += s.shards[i].perMinute(now.Unix())
	}
	snap := Snapshot{
		OK: true, Surface: surface, Purpose: purpose,
		Since:             s.start.UTC().Format(time.RFC3339),
		UptimeSeconds:     int64(now.Sub(s.start) / time.Second),
		RequestsPerMinute: rpm,
		Status:            map[string]int64{},
		Clients:           map[string]int64{},
		Sources:           s.sources.snapshot(),
		Limits:            Limits{MaxSources: MaxSources, MaxRoutes: MaxRoutes, WindowSeconds: int(Window / time.Second), SourceParam: "src"},
		Privacy:           Privacy,
	}
	snap.fromTraffic(s.traffic.Counts())
	for i, k := range statsKinds() {
		var n int64
		for j := range s.shards {
			n += s.shards[j].kinds[i].Load()
		}
		snap.Clients[k] = n
	}
	for _, rc := range snap.Routes {
		if statsDiscoveryRoute(rc.Name) {
			snap.DiscoveryHits += rc.Count
		}
	}
	return snap
}

// fromTraffic sets the request, status, route, 402 and settlement counts
// of the snapshot from the Traffic's routes: the routes that answered,
// largest first, at most MaxRoutes of them and "other" for the rest.
func (snap *Snapshot) fromTraffic(counts []RouteCounts) {
	var classes [6]int64
	routes := []Count{}
	for _, t := range counts {
		snap.Requests += t.Requests
		snap.PaymentRequired += t.PaymentRequired
		snap.Settled += t.Settled
		for i, n := range t.ByClass {
			classes[i] += n
		}
		if t.Requests > 0 {
			routes = append(routes, Count{Name: t.Route, Count: t.Requests})
		}
	}
	for c, name := range []string{"unknown", "1xx", "2xx", "3xx", "4xx", "5xx"} {
		snap.Status[name] = classes[c]
	}
	slices.SortFunc(routes, byCountDesc)
	if len(routes) > MaxRoutes {
		other := Count{Name: "other"}
		for _, r := range routes[MaxRoutes:] {
			other.Count += r.Count
		}
		routes = append(routes[:MaxRoutes], other)
	}
	snap.Routes = routes
}

// statsDiscoveryRoute reports whether a route label is a discovery
// document (manifest, agent card, OpenAPI, skill.md).
func statsDiscoveryRoute(route string) bool {
	return strings.HasPrefix(route, "/.well-known/") || route == "/openapi.json" || route == "/skill.md" || route == "/api/magnet"
}

// byCountDesc orders counts from the largest, ties by name.
func byCountDesc(a, b Count) int {
	return cmp.Or(cmp.Compare(b.Count, a.Count), strings.Compare(a.Name, b.Name))
}

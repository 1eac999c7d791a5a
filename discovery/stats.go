package discovery

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
// route): the keys of StatsSnapshot.Clients.
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
	// MaxStatsSources is the number of distinct src values counted; later
	// values are counted under "other".
	MaxStatsSources = 100
	// MaxStatsRoutes is the number of distinct route labels counted; later
	// labels are counted under "other".
	MaxStatsRoutes = 256
	// MaxStatsSourceLen is the length a src value is cut to.
	MaxStatsSourceLen = 48
	// StatsWindow is the span of RequestsPerMinute (60 one-second buckets).
	StatsWindow = 60 * time.Second
)

// Stats holds the aggregate counters since start behind the stats routes:
// requests per route, per src query value, per client kind and per status
// class, 402s issued, paid calls settled and requests over a sliding
// minute.
//
// Privacy: nothing identifying is kept. No address, wallet, token, header
// value, path parameter or body is stored; a User-Agent only selects a
// client kind; a src value is lower-cased, reduced to [a-z0-9._-], cut to
// MaxStatsSourceLen characters, and replaced by "redacted" when it looks
// like an identifier (an e-mail address, or a run of 16 or more hex digits
// such as a wallet or a token). At most MaxStatsSources distinct values are
// kept; the rest count as "other".
//
// Counting is lock-free and allocation-free on the hot path: counters are
// atomic and sharded over cache lines (each observation updates a random
// shard; a snapshot sums them), label sets are an immutable map read
// through an atomic pointer and copied under a lock only to admit a new
// label. A Stats is safe for concurrent use.
type Stats struct {
	now   func() time.Time
	start time.Time

	// shards spread the hot counters over cache lines: each Observe
	// updates one shard picked at random, a snapshot sums them all.
	shards  [statsShards]statsShard
	routes  statsLabels
	sources statsLabels

	// tallies, once set (CountFrom), supplies the request, status, route,
	// 402 and settlement counts.
	tallies atomic.Pointer[func() []RouteTally]
}

// RouteTally is one route's counts as another counter of the same
// requests keeps them (the HTTP server's metrics: httpserver.Server.Counts).
type RouteTally struct {
	Route           string   // the route's label ("/api/find"; "unmatched")
	Requests        int64    // answers
	ByClass         [6]int64 // answers by status/100 (0: outside 1xx–5xx)
	PaymentRequired int64    // 402s offering payment
	Settled         int64    // paid calls settled
}

// CountFrom makes the snapshot read the requests, status classes, routes,
// 402s and settlements from tallies (the counters a server already keeps
// for its metrics) instead of counting them a second time: Observe then
// keeps only what those lack, the src values, the client kinds and the
// per-minute window. Call it before the Stats observes anything.
func (s *Stats) CountFrom(tallies func() []RouteTally) {
	if tallies != nil {
		s.tallies.Store(&tallies)
	}
}

// statsShards is the number of counter shards (a power of two).
const statsShards = 8

// statsShard is one shard of the counters, padded to its own cache lines.
type statsShard struct {
	total    atomic.Int64
	required atomic.Int64    // 402s issued
	settled  atomic.Int64    // paid calls settled
	classes  [6]atomic.Int64 // index status/100 (1xx … 5xx; 0 unknown)
	kinds    [6]atomic.Int64 // index as statsKinds
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
func (s *Stats) shard() (*statsShard, uint32) {
	i := rand.Uint32() & (statsShards - 1)
	return &s.shards[i], i
}

// NewStats returns empty counters; now is the clock (nil means time.Now).
func NewStats(now func() time.Time) *Stats {
	if now == nil {
		now = time.Now
	}
	s := &Stats{now: now, start: now()}
	s.routes.max = MaxStatsRoutes
	s.sources.max = MaxStatsSources
	return s
}

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
func (l *statsLabels) snapshot() []StatsCount {
	out := []StatsCount{}
	if mp := l.m.Load(); mp != nil {
		for k, c := range *mp {
			out = append(out, StatsCount{Name: k, Count: c.load()})
		}
	}
	slices.SortFunc(out, byCountDesc)
	if o := l.other.load(); o > 0 {
		out = append(out, StatsCount{Name: "other", Count: o})
	}
	return out
}

// Observe counts one answered request: route is the route's label (its
// path pattern, "/api/find"; "" means a request no route matched), status
// the HTTP status sent. A 402 counts as a 402 issued. Only the route label,
// the sanitized src query value, the client kind and the status class are
// kept; after CountFrom, only the src value, the client kind and the
// per-minute window (the rest is read from the tallies).
func (s *Stats) Observe(route string, r *http.Request, status int) {
	sh, i := s.shard()
	if route == "" {
		route = "unmatched"
	} else if len(route) > 100 {
		route = route[:100]
	}
	counted := s.tallies.Load() != nil
	if !counted {
		sh.total.Add(1)
		s.routes.add(route, i)
		if c := status / 100; c >= 1 && c <= 5 {
			sh.classes[c].Add(1)
		} else {
			sh.classes[0].Add(1)
		}
		if status == http.StatusPaymentRequired {
			sh.required.Add(1)
		}
	}
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

// Observe402 counts a 402 issued that Observe did not see (a payment asked
// for outside the HTTP pipeline). Observe counts 402 answers itself. After
// CountFrom the tallies' count is reported instead.
func (s *Stats) Observe402() {
	sh, _ := s.shard()
	sh.required.Add(1)
}

// ObserveSettled counts a paid call whose payment settled. After CountFrom
// the tallies' count is reported instead.
func (s *Stats) ObserveSettled() {
	sh, _ := s.shard()
	sh.settled.Add(1)
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

// sum adds up a counter over the shards.
func (s *Stats) sum(f func(*statsShard) *atomic.Int64) int64 {
	var n int64
	for i := range s.shards {
		n += f(&s.shards[i]).Load()
	}
	return n
}

// Middleware counts every request served by next with Observe: the route
// label is the path part of the pattern the http.ServeMux inside next
// matched (Request.Pattern), the status what next wrote; a 2xx answer
// carrying PAYMENT-RESPONSE counts as a settled paid call. Use either the
// Middleware or Observe and ObserveSettled, not both.
func (s *Stats) Middleware(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sw := &statsWriter{ResponseWriter: w}
		defer func() { s.ObserveServed(r, sw.status, w.Header()) }()
		next.ServeHTTP(sw, r)
	})
}

// ObserveServed counts one answered request as Middleware does: r after
// routing (its Pattern set by the http.ServeMux that matched it), the
// final status (0 counts as 200) and the answer's header (a 2xx carrying
// PAYMENT-RESPONSE is a settled paid call). A server that already wraps
// every answer calls it instead of adding the Middleware's wrapper.
func (s *Stats) ObserveServed(r *http.Request, status int, h http.Header) {
	if status == 0 {
		status = http.StatusOK
	}
	route := r.Pattern
	if _, p, ok := strings.Cut(route, " "); ok {
		route = strings.TrimSpace(p)
	}
	s.Observe(route, r, status)
	if s.tallies.Load() == nil && status < 300 && status >= 200 && len(h[x402.CanonicalPaymentResponse]) > 0 {
		s.ObserveSettled()
	}
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
// what Stats keeps: lower case, only a-z 0-9 . _ -, at most
// MaxStatsSourceLen characters; "redacted" when it looks like an
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
		if b.Len() < MaxStatsSourceLen && (c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			b.WriteRune(c)
		}
	}
	if b.Len() == 0 {
		return "invalid"
	}
	return b.String()
}

// statsCleanSource reports whether v is already what SanitizeSource
// keeps: 1 to MaxStatsSourceLen of a-z 0-9 . _ -, without a run of 16 hex
// digits.
func statsCleanSource(v string) bool {
	if v == "" || len(v) > MaxStatsSourceLen {
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

// StatsCount is a label and its count.
type StatsCount struct {
	Name  string `json:"name"`
	Count int64  `json:"count"`
}

// StatsSnapshot is the body of the stats routes: aggregate counters since
// Since, nothing per client.
type StatsSnapshot struct {
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
	Routes        []StatsCount     `json:"routes"`
	Sources       []StatsCount     `json:"sources"`
	Limits        StatsLimits      `json:"limits"`
	Privacy       string           `json:"privacy"`
}

// StatsLimits states the bounds of the label sets.
type StatsLimits struct {
	MaxSources    int    `json:"maxSources"`
	MaxRoutes     int    `json:"maxRoutes"`
	WindowSeconds int    `json:"windowSeconds"`
	SourceParam   string `json:"sourceParam"`
}

// StatsPrivacy is the privacy statement of every stats answer.
const StatsPrivacy = "aggregate counters only: no IP address, wallet, token, header value, path parameter or body is kept; " +
	"User-Agent only selects a client kind; src values are sanitized, identifier-like values redacted, at most 100 distinct kept"

// Snapshot returns the counters now, framed for the stats route of the
// named surface (amplifier, distribution, magnet) with its purpose.
func (s *Stats) Snapshot(surface, purpose string) StatsSnapshot {
	now := s.now()
	var rpm int64
	for i := range s.shards {
		rpm += s.shards[i].perMinute(now.Unix())
	}
	snap := StatsSnapshot{
		OK: true, Surface: surface, Purpose: purpose,
		Since:             s.start.UTC().Format(time.RFC3339),
		UptimeSeconds:     int64(now.Sub(s.start) / time.Second),
		Requests:          s.sum(func(sh *statsShard) *atomic.Int64 { return &sh.total }),
		RequestsPerMinute: rpm,
		PaymentRequired:   s.sum(func(sh *statsShard) *atomic.Int64 { return &sh.required }),
		Settled:           s.sum(func(sh *statsShard) *atomic.Int64 { return &sh.settled }),
		Status:            map[string]int64{},
		Clients:           map[string]int64{},
		Routes:            s.routes.snapshot(),
		Sources:           s.sources.snapshot(),
		Limits:            StatsLimits{MaxSources: MaxStatsSources, MaxRoutes: MaxStatsRoutes, WindowSeconds: int(StatsWindow / time.Second), SourceParam: "src"},
		Privacy:           StatsPrivacy,
	}
	for c, name := range []string{"unknown", "1xx", "2xx", "3xx", "4xx", "5xx"} {
		snap.Status[name] = s.sum(func(sh *statsShard) *atomic.Int64 { return &sh.classes[c] })
	}
	if f := s.tallies.Load(); f != nil {
		snap.fromTallies((*f)())
	}
	for i, k := range statsKinds() {
		snap.Clients[k] = s.sum(func(sh *statsShard) *atomic.Int64 { return &sh.kinds[i] })
	}
	for _, rc := range snap.Routes {
		if statsDiscoveryRoute(rc.Name) {
			snap.DiscoveryHits += rc.Count
		}
	}
	return snap
}

// fromTallies replaces the counts of the snapshot by those of tallies.
func (snap *StatsSnapshot) fromTallies(tallies []RouteTally) {
	snap.Requests, snap.PaymentRequired, snap.Settled = 0, 0, 0
	var classes [6]int64
	routes := []StatsCount{}
	for _, t := range tallies {
		snap.Requests += t.Requests
		snap.PaymentRequired += t.PaymentRequired
		snap.Settled += t.Settled
		for i, n := range t.ByClass {
			classes[i] += n
		}
		if t.Requests > 0 {
			routes = append(routes, StatsCount{Name: t.Route, Count: t.Requests})
		}
	}
	for c, name := range []string{"unknown", "1xx", "2xx", "3xx", "4xx", "5xx"} {
		snap.Status[name] = classes[c]
	}
	slices.SortFunc(routes, byCountDesc)
	if len(routes) > MaxStatsRoutes {
		other := StatsCount{Name: "other"}
		for _, r := range routes[MaxStatsRoutes:] {
			other.Count += r.Count
		}
		routes = append(routes[:MaxStatsRoutes], other)
	}
	snap.Routes = routes
}

// statsDiscoveryRoute reports whether a route label is a discovery
// document (manifest, agent card, OpenAPI, skill.md).
func statsDiscoveryRoute(route string) bool {
	return strings.HasPrefix(route, "/.well-known/") || route == "/openapi.json" || route == "/skill.md" || route == "/api/magnet"
}

// byCountDesc orders counts from the largest, ties by name.
func byCountDesc(a, b StatsCount) int {
	return cmp.Or(cmp.Compare(b.Count, a.Count), strings.Compare(a.Name, b.Name))
}

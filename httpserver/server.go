package httpserver

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"html/template"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/seed1284c1d2/svc/discovery/stats"
	"github.com/seed1284c1d2/svc/internal/bodybudget"
	"github.com/seed1284c1d2/svc/internal/clientlimit"
	"github.com/seed1284c1d2/svc/internal/clip"
	"github.com/seed1284c1d2/svc/internal/evmaddr"
	"github.com/seed1284c1d2/svc/ledger"
	"github.com/seed1284c1d2/svc/tools"
	"github.com/seed1284c1d2/svc/tools/sell"
	"github.com/seed1284c1d2/svc/x402"
	"github.com/seed1284c1d2/svc/x402/engine"
	exactserver "github.com/seed1284c1d2/svc/x402/exact/server"
	"github.com/seed1284c1d2/svc/x402/facilitator"
	"github.com/seed1284c1d2/svc/x402/seller"
	"github.com/seed1284c1d2/svc/xau"
)

// Defaults of Config.
const (
	// DefaultBodyLimit bounds request bodies (2 MiB); past it, 413. It is
	// the catalog's default (tools.DefaultBodyLimit).
	DefaultBodyLimit = tools.DefaultBodyLimit
	// DefaultToolTimeout bounds one tool run after payment verification
	// (the run time limit of every transport); past it the answer is 504
	// and nothing is settled.
	DefaultToolTimeout = seller.DefaultRunTimeout
	// DefaultReadHeaderTimeout, DefaultReadTimeout, DefaultWriteTimeout and
	// DefaultIdleTimeout are the http.Server timeouts. The write timeout
	// covers the body, the tool, the facilitator's /verify and /settle
	// (x402.DefaultVerifyTimeout + facilitator.DefaultSettleTimeout) with margin.
	DefaultReadHeaderTimeout = 10 * time.Second
	DefaultReadTimeout       = 30 * time.Second
	DefaultWriteTimeout      = 120 * time.Second
	DefaultIdleTimeout       = 120 * time.Second
	// DefaultMaxHeaderBytes bounds the request headers (a payment header is
	// at most x402.MaxHeaderBytes).
	DefaultMaxHeaderBytes = 64 << 10
	// DefaultBodyMemory bounds the request bodies held at once by every
	// route (16 MiB).
	DefaultBodyMemory = bodybudget.DefaultMemory
	// DefaultMinBodyRate is the slowest a request body may arrive once
	// bodybudget.DefaultGrace has passed, in bytes per second; slower is
	// cut with 408.
	DefaultMinBodyRate = bodybudget.DefaultMinRate
	// DefaultBodyRate is the rate of request-body bytes a client address may
	// send to the free routes (MCP and A2A included), per second: the work
	// of decoding them is bounded per client, not only their count. Its
	// burst is twice the body limit.
	DefaultBodyRate = 1 << 20
)

// Store is what the server needs of the durable store: the payment
// journal (which holds the ledger), a ping for /health, the schema check
// of /readyz and the ledger's settlements for the dashboard. store.Store
// implements it.
type Store interface {
	engine.Journal
	ledger.Source
	Ping(ctx context.Context) error
	CheckSchema(ctx context.Context) error
}

// Route is an extra route registered next to the paid tools, typically a
// free discovery surface. Pattern is an http.ServeMux pattern with a
// method ("GET /api/find"). Free routes are rate-limited per client address
// and their bodies are read by the server before the handler runs, within
// the body memory budget, the body rate of the client and BodyLimit (zero
// or more means the server's body limit: a route may only lower it); a route that is
// not free is served as is (it handles its own payment and limits).
type Route struct {
	Pattern   string
	Handler   http.Handler
	Free      bool
	BodyLimit int64
}

// RequestObserver is told about every request the server answered: r after
// routing (r.Pattern is the route matched, "" for none), the final status
// and the answer's header. It runs on the request's goroutine, after the
// answer was written, and must not block.
type RequestObserver interface {
	ObserveServed(r *http.Request, status int, header http.Header)
}

// Config configures a Server. Catalog, Facilitator and Store are required,
// and so is PayTo.
type Config struct {
	// Catalog lists the paid tools; each descriptor becomes a route (its
	// method and path) with its price.
	Catalog *tools.Catalog
	// Terminal backs the three gold tools; nil means no terminal (they
	// answer 503 before any 402).
	Terminal xau.Terminal
	// Env configures the tools (default gold symbol, regex time limit,
	// clock); its Terminal is replaced by Terminal.
	Env tools.Env
	// Shop, when set, sells the paid routes (offers over Engine, preflight,
	// runs) as it does on the other transports; nil means one built from
	// Catalog, PayTo, Network, Env and Terminal. It sells Catalog.
	Shop *sell.Shop
	// HealthTTL is how long a terminal health result is reused by the
	// pre-payment check; zero means xau.DefaultHealthTTL.
	HealthTTL time.Duration
	// Facilitator verifies and settles payments.
	Facilitator x402.Facilitator
	// Store is the payment journal (with the ledger) and the /health store
	// check.
	Store Store
	// Engine runs the paid calls; nil means one built from Facilitator and
	// Store with the timeouts below, whose recovery loop the server runs
	// between Serve and Shutdown. An Engine given here is run by its
	// owner (it may serve other transports too).
	Engine *engine.Engine
	// PayerBurst, PayerRefill and PayerConcurrency are the engine's payer
	// budget (engine.Config.PayerBurst: the paid calls of one payer that may
	// run and deliver nothing, and run at once, before it is answered 429)
	// when the server builds the engine; zero means the engine's defaults.
	PayerBurst       int
	PayerRefill      time.Duration
	PayerConcurrency int
	// PaymentHook, when set, is the engine's hook (engine.Config.Hook): crash
	// tests stop a paid call at a known step with it.
	PaymentHook func(point, key string)
	// BodyMemory bounds the request bodies all routes hold at once (paid
	// and free, read as their bytes arrive; a free route's body counts four
	// times its size while its handler runs, for the copies decoding it
	// makes); zero means DefaultBodyMemory. Past it, 503 with Retry-After.
	// It must hold one body of BodyLimit.
	BodyMemory int64
	// BodyClientMemory bounds the part of BodyMemory one client address
	// holds at once (429 with Retry-After past it); zero means a quarter of
	// BodyMemory. It never keeps one body of the route's limit out.
	BodyClientMemory int64
	// MinBodyRate is the slowest a request body may arrive, in bytes per
	// second, after a grace period of bodybudget.DefaultGrace (408 and the
	// connection closed past it); zero means DefaultMinBodyRate, negative
	// means no minimum (ReadTimeout alone).
	MinBodyRate int64
	// BodyRate is the request-body bytes per second a client address may
	// send to the free routes (zero means DefaultBodyRate, negative
	// disables the limit); 429 with Retry-After past it.
	BodyRate float64
	// LargeBodyWork bounds the free-route requests with a body over
	// LargeBody that are handled at once (zero means GOMAXPROCS, negative
	// no bound); the others wait their turn (503 with Retry-After after
	// bodybudget.DefaultWait). Decoding and answering a large message
	// takes a core for tens of milliseconds: bounded so, a flood of them
	// leaves the probes and the small requests their share of the CPU.
	LargeBodyWork int
	// UnpaidRate and UnpaidBurst limit the requests without payment on the
	// paid routes, per client address, and, in a bucket of their own, the
	// requests whose payment is refused (zero means DefaultUnpaidRate and
	// DefaultUnpaidBurst, a negative rate disables both limits).
	UnpaidRate  float64
	UnpaidBurst int
	// PayTo is the wallet paid (0x + 40 hex).
	PayTo string
	// Network is the CAIP-2 id (or v1 name) of the payment network; empty
	// means the catalog's (eip155:8453, Base, by default). It must be the
	// catalog's.
	Network string
	// PublicBaseURL is the scheme and host clients reach the server at
	// ("https://api.example.com"); empty means the request's own.
	PublicBaseURL string
	// DevMode marks the local facilitator: nothing settles on chain. It is
	// reported in /health, and the server refuses to listen on anything but
	// a loopback address. A *facilitator.Local always means dev mode.
	DevMode bool
	// DevChain marks dev mode settling for real on a local EVM chain run
	// in the process (svc serve --chain embedded): /health says so, as it
	// says dev mode, although payments do settle on that chain.
	DevChain bool
	// Addr is the listen address of ListenAndServe ("127.0.0.1:8080").
	Addr string
	// SeparateAdmin takes GET /metrics off the public routes: it is then
	// served by AdminHandler only, with the dashboard and pprof, on a
	// listener of the operator's (svc serve --admin-addr). Without it
	// /metrics is a free public route and AdminHandler is not served.
	SeparateAdmin bool
	// BodyLimit bounds request bodies; zero means the catalog's (whose
	// default is DefaultBodyLimit). It must equal the catalog's, which
	// publishes it and enforces it when decoding.
	BodyLimit int64
	// RateLimit is the sustained rate of free requests per client address
	// per second (zero means DefaultRate, negative disables the limit);
	// RateBurst the burst (zero means DefaultBurst); RateClients the number
	// of addresses tracked (zero means DefaultRateClients).
	RateLimit   float64
	RateBurst   int
	RateClients int
	// TrustedProxies are the peers whose X-Forwarded-For is believed when
	// finding a client's address; empty means the TCP peer is the client.
	TrustedProxies []netip.Prefix
	// ToolTimeout bounds one tool run; zero means DefaultToolTimeout.
	ToolTimeout time.Duration
	// VerifyTimeout and SettleTimeout bound the facilitator calls; zero
	// means the x402 defaults.
	VerifyTimeout time.Duration
	SettleTimeout time.Duration
	// ReadHeaderTimeout, ReadTimeout, WriteTimeout, IdleTimeout and
	// MaxHeaderBytes configure the http.Server; zero means the defaults
	// above.
	ReadHeaderTimeout time.Duration
	ReadTimeout       time.Duration
	WriteTimeout      time.Duration
	IdleTimeout       time.Duration
	MaxHeaderBytes    int
	// Routes are extra routes (the discovery surfaces, the club).
	Routes []Route
	// Middleware, when set, wraps the whole handler (outside request ids,
	// access logs and rate limits).
	Middleware func(http.Handler) http.Handler
	// Observer, when set, is told about every answered request, after the
	// access log's own bookkeeping and without a wrapper of its own: for
	// instance discovery's aggregate stats (*stats.Aggregates), whose
	// Traffic is then given as Traffic.
	Observer RequestObserver
	// Traffic counts the answered requests, 402s and settlements exposed
	// on /metrics; nil means counters of the server's own. Give the
	// Traffic of discovery's stats (stats.Aggregates.Traffic) so that the
	// stats routes report the same counts.
	Traffic *stats.Traffic
	// Logger receives the access log (Info) and errors; nil means
	// slog.Default().
	Logger *slog.Logger
	// Version is reported by /health.
	Version string
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Server is the reference HTTP server: the paid tools behind x402, /health,
// /metrics, the catalog and any extra routes, with request ids, access
// logs, limits and problem+json errors. Build it with New.
type Server struct {
	cfg       Config
	log       *slog.Logger
	now       func() time.Time
	network   x402.Network
	payTo     string
	bodyLimit int64

	mux     *http.ServeMux
	handler http.Handler
	metrics *metrics
	limiter *clientlimit.Limiter // nil: free routes are not limited
	// largeWork holds a token per free-route request with a large body
	// being handled (nil: no bound).
	largeWork   chan struct{}
	ids         *requestIDs
	healthCache *xau.HealthCache
	supported   *supportedCache
	paid        []*paidRoute
	patterns    map[string]bool
	// catalogListed is set once a "GET /api/catalog" route is mounted
	// (404 answers point at it).
	catalogListed atomic.Bool
	engine        *engine.Engine
	ownEngine     bool // the server runs the engine's recovery loop
	stopEngine    context.CancelFunc
	engineDone    chan struct{}
	bodies        *bodybudget.Budget
	bodyLimiter   *clientlimit.Limiter // nil: free-route body bytes are not limited
	unpaidLimiter *clientlimit.Limiter // nil: unpaid requests are not limited
	// refusedLimiter limits the refused payments of a client on the paid
	// routes, at the unpaid requests' rate (nil likewise).
	refusedLimiter *clientlimit.Limiter
	dashboardTmpl  *template.Template

	inflight atomic.Int64

	mu       sync.Mutex
	srv      *http.Server
	ln       net.Listener
	started  bool
	shutdown bool
}

// New checks cfg and builds the server and its routes.
func New(cfg Config) (*Server, error) {
	if cfg.Catalog == nil {
		return nil, errors.New("httpserver: Config.Catalog is required")
	}
	if cfg.Facilitator == nil {
		return nil, errors.New("httpserver: Config.Facilitator is required")
	}
	if cfg.Store == nil {
		return nil, errors.New("httpserver: Config.Store is required")
	}
	if _, ok := cfg.Facilitator.(*facilitator.Local); ok {
		cfg.DevMode = true
	}
	if cfg.DevMode && cfg.Addr != "" {
		if err := checkLoopback(cfg.Addr); err != nil {
			return nil, err
		}
	}
	if cfg.Network == "" {
		cfg.Network = cfg.Catalog.Network()
	}
	network, ok := x402.LookupNetwork(cfg.Network)
	if !ok {
		return nil, fmt.Errorf("httpserver: unknown network %q", cfg.Network)
	}
	if network.CAIP2 != cfg.Catalog.Network() {
		return nil, fmt.Errorf("httpserver: the catalog is priced on %s, the server on %s; build the catalog with the server's network", cfg.Catalog.Network(), network.CAIP2)
	}
	payTo, ok := evmaddr.Checksum(cfg.PayTo)
	if !ok || !x402.IsValidAddress(cfg.PayTo) {
		return nil, fmt.Errorf("httpserver: PayTo %q is not a valid EVM address (0x + 40 hex digits, EIP-55 checksum when mixed case, not zero)", clip.Bytes(cfg.PayTo, 60))
	}
	if cfg.BodyLimit < 0 || cfg.ToolTimeout < 0 || cfg.RateBurst < 0 || cfg.RateClients < 0 || cfg.BodyMemory < 0 || cfg.BodyClientMemory < 0 {
		return nil, errors.New("httpserver: limits and timeouts must not be negative")
	}
	if cfg.BodyLimit == 0 {
		cfg.BodyLimit = cfg.Catalog.BodyLimit()
	}
	if cfg.BodyLimit != cfg.Catalog.BodyLimit() {
		return nil, fmt.Errorf("httpserver: body limit %d differs from the %d bytes the catalog publishes; build the catalog with the same limit", cfg.BodyLimit, cfg.Catalog.BodyLimit())
	}
	if cfg.BodyMemory == 0 {
		cfg.BodyMemory = DefaultBodyMemory
	}
	if cfg.BodyMemory < cfg.BodyLimit {
		return nil, fmt.Errorf("httpserver: body memory %d must hold one body of the %d-byte body limit", cfg.BodyMemory, cfg.BodyLimit)
	}
	if cfg.ToolTimeout == 0 {
		cfg.ToolTimeout = DefaultToolTimeout
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Version == "" {
		cfg.Version = "dev"
	}
	s := &Server{
		cfg:       cfg,
		log:       cfg.Logger,
		now:       cfg.Now,
		network:   network,
		payTo:     payTo,
		bodyLimit: cfg.BodyLimit,
		mux:       http.NewServeMux(),
		metrics:   newMetrics(cfg.Now(), cfg.Version, cfg.Traffic),
		ids:       newRequestIDs(),
		supported: &supportedCache{f: cfg.Facilitator, now: cfg.Now},
		patterns:  map[string]bool{},
	}
	if s.engine = cfg.Engine; s.engine == nil {
		scheme, err := exactserver.New(exactserver.Config{
			Facilitator:           cfg.Facilitator,
			SkipFacilitatorVerify: isLocal(cfg.Facilitator),
			Deduplicates:          isLocal(cfg.Facilitator),
			Now:                   cfg.Now,
		})
		if err != nil {
			return nil, fmt.Errorf("httpserver: exact scheme: %w", err)
		}
		e, err := engine.New(engine.Config{
			Schemes:          []x402.ServerScheme{scheme},
			Journal:          cfg.Store,
			Logger:           cfg.Logger,
			Now:              cfg.Now,
			VerifyTimeout:    cfg.VerifyTimeout,
			SettleTimeout:    cfg.SettleTimeout,
			RunTimeout:       cfg.ToolTimeout + time.Second,
			PayerBurst:       cfg.PayerBurst,
			PayerRefill:      cfg.PayerRefill,
			PayerConcurrency: cfg.PayerConcurrency,
			Observe:          s.ObservePayment,
			Hook:             cfg.PaymentHook,
		})
		if err != nil {
			return nil, fmt.Errorf("httpserver: payment engine: %w", err)
		}
		s.engine, s.ownEngine = e, true
	}
	clients := cmp.Or(cfg.RateClients, DefaultRateClients)
	if cfg.UnpaidRate >= 0 {
		s.unpaidLimiter = clientlimit.New(cmp.Or(cfg.UnpaidRate, DefaultUnpaidRate), cmp.Or(cfg.UnpaidBurst, DefaultUnpaidBurst), clients)
		s.refusedLimiter = clientlimit.New(cmp.Or(cfg.UnpaidRate, DefaultUnpaidRate), cmp.Or(cfg.UnpaidBurst, DefaultUnpaidBurst), clients)
	}
	if cfg.RateLimit >= 0 {
		s.limiter = clientlimit.New(cmp.Or(cfg.RateLimit, DefaultRate), cmp.Or(cfg.RateBurst, DefaultBurst), clients)
	}
	if cfg.LargeBodyWork >= 0 {
		s.largeWork = make(chan struct{}, cmp.Or(cfg.LargeBodyWork, runtime.GOMAXPROCS(0)))
	}
	if cfg.BodyRate >= 0 {
		s.bodyLimiter = clientlimit.New(cmp.Or(cfg.BodyRate, DefaultBodyRate), int(2*cfg.BodyLimit), clients)
	}
	bodies, err := bodybudget.New(bodybudget.Config{
		Memory:      cfg.BodyMemory,
		PerClient:   cfg.BodyClientMemory,
		MinRate:     cfg.MinBodyRate,
		ReadTimeout: orDefault(cfg.ReadTimeout, DefaultReadTimeout),
	})
	if err != nil {
		return nil, fmt.Errorf("httpserver: %w", err)
	}
	s.bodies = bodies
	terminal := cfg.Terminal
	if terminal == nil {
		terminal = xau.Down{}
	}
	s.healthCache = xau.NewHealthCache(terminal, cfg.HealthTTL, cfg.Now)

	if err := s.buildPaid(); err != nil {
		return nil, err
	}
	for _, rt := range cfg.Routes {
		if err := s.mount(rt); err != nil {
			return nil, err
		}
	}
	builtins := []Route{
		{Pattern: "GET /health", Handler: http.HandlerFunc(s.health), Free: true},
		{Pattern: "GET /livez", Handler: http.HandlerFunc(s.livez), Free: true},
		{Pattern: "GET /readyz", Handler: http.HandlerFunc(s.readyz), Free: true},
	}
	if !cfg.SeparateAdmin {
		builtins = append(builtins, Route{Pattern: "GET /metrics", Handler: s.metricsHandler(), Free: true})
	}
	for _, rt := range builtins {
		if err := s.mount(rt); err != nil {
			return nil, err
		}
	}
	tmpl, err := dashboardTemplate()
	if err != nil {
		return nil, fmt.Errorf("httpserver: dashboard template: %w", err)
	}
	s.dashboardTmpl = tmpl
	s.registerScrapeCollectors()
	s.handler = s.observe(s.mux)
	if s.cfg.Middleware != nil {
		s.handler = s.cfg.Middleware(s.handler)
	}
	return s, nil
}

// Handler returns the server's root handler (request ids, access log,
// metrics, routing), for use with any http.Server or httptest.
func (s *Server) Handler() http.Handler { return s.handler }

// Mount registers an extra route (see Route) with the server's body limit.
// It fails when the pattern is malformed or conflicts with a registered
// one, and once the server is serving.
func (s *Server) Mount(pattern string, h http.Handler, free bool) error {
	return s.mount(Route{Pattern: pattern, Handler: h, Free: free})
}

func (s *Server) mount(rt Route) error {
	if rt.Handler == nil {
		return fmt.Errorf("httpserver: route %q has no handler", rt.Pattern)
	}
	if rt.BodyLimit < 0 {
		return fmt.Errorf("httpserver: route %q: negative body limit %d", rt.Pattern, rt.BodyLimit)
	}
	limit := s.bodyLimit
	if rt.BodyLimit > 0 {
		limit = min(rt.BodyLimit, s.bodyLimit)
	}
	s.mu.Lock()
	started := s.started
	s.mu.Unlock()
	if started {
		return fmt.Errorf("httpserver: route %q mounted after the server started", rt.Pattern)
	}
	kind := stats.KindFree
	if !rt.Free {
		kind = stats.KindUnlimited
	}
	rm := s.metrics.route(routeLabel(rt.Pattern), kind)
	return s.handle(rt.Pattern, s.wrapRoute(rm, rt.Free, limit, rt.Handler))
}

// handle registers on the mux, turning its panics (bad or conflicting
// patterns) into errors.
func (s *Server) handle(pattern string, h http.Handler) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("httpserver: route %q: %v", pattern, v)
		}
	}()
	s.mux.Handle(pattern, h)
	s.patterns[pattern] = true
	if pattern == "GET /api/catalog" {
		s.catalogListed.Store(true)
	}
	return nil
}

// routeLabel is the metrics label of a pattern: its path part.
func routeLabel(pattern string) string {
	if _, path, ok := strings.Cut(pattern, " "); ok {
		return strings.TrimSpace(path)
	}
	return pattern
}

// wrapRoute marks the answer with its route and, for free routes, applies
// the rate limit and reads the body (see readFreeBody) before the handler.
func (s *Server) wrapRoute(rm *routeMetrics, free bool, bodyLimit int64, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if sw, ok := w.(*statusWriter); ok {
			sw.route = rm
		}
		if free {
			if ok, wait := s.allowFree(r); !ok {
				s.metrics.rateLimited.Inc()
				w.Header().Set("Retry-After", retryAfter(wait))
				WriteProblem(w, r, NewProblem(http.StatusTooManyRequests, CodeRateLimited, "too many requests from this address; retry after "+retryAfter(wait)+" s"))
				return
			}
			release, ok := s.readFreeBody(w, r, bodyLimit)
			if !ok {
				return
			}
			defer release()
			if r.ContentLength > LargeBody && s.largeWork != nil {
				done, ok := s.takeLargeWork(w, r)
				if !ok {
					return
				}
				defer done()
			}
		}
		h.ServeHTTP(w, r)
	})
}

// LargeBody is the body size past which a free-route request is handled
// within Config.LargeBodyWork (64 KiB: every message a client sends to
// find or buy a tool is smaller, bar the inputs of the data tools).
const LargeBody = 64 << 10

// takeLargeWork waits for a turn to handle r, a free-route request with a
// large body: false when it answered 503 (no turn within
// bodybudget.DefaultWait) or the client left.
func (s *Server) takeLargeWork(w http.ResponseWriter, r *http.Request) (done func(), ok bool) {
	t := time.NewTimer(bodybudget.DefaultWait)
	defer t.Stop()
	select {
	case s.largeWork <- struct{}{}:
		return func() { <-s.largeWork }, true
	case <-r.Context().Done():
		return nil, false
	case <-t.C:
		w.Header().Set("Retry-After", "1")
		WriteProblem(w, r, NewProblem(http.StatusServiceUnavailable, CodeBusy, "the server is handling as many large requests as it can; try again shortly"))
		return nil, false
	}
}

// freeBodyWeight is how many times a free route's body counts in the body
// memory budget while its handler runs: the copies of it that decoding a
// JSON-RPC message or a query makes (measured on /mcp and /a2a).
const freeBodyWeight = 4

// readFreeBody reads the body of a request to a free route within the body
// memory budget (freeBodyWeight times its size) and limit, and charges its
// bytes to the client's body rate; the handler gets it from memory. A body
// whose length is declared is charged before a byte of it is read, so that
// a client past its rate is refused (and its connection closed) without
// the server reading what it sends; the bytes of a body of unknown length
// are charged once read. It answers the request itself (413, 503, 429,
// 408) and returns false when the body cannot be had.
func (s *Server) readFreeBody(w http.ResponseWriter, r *http.Request, limit int64) (release func(), ok bool) {
	if r.Body == nil || r.Body == http.NoBody {
		return func() {}, true
	}
	key := clientlimit.Key(r, s.cfg.TrustedProxies)
	var token clientlimit.Token
	if s.bodyLimiter != nil && r.ContentLength > 0 && r.ContentLength <= limit {
		var wait time.Duration
		if token, wait, ok = s.bodyLimiter.TakeN(key, s.cfg.Now(), int(r.ContentLength)); !ok {
			closeUnread(w, r)
			s.bodyRateLimited(w, r, wait)
			return nil, false
		}
	}
	body, release, err := s.readBody(w, r, limit, freeBodyWeight)
	if err != nil {
		if errors.Is(err, bodybudget.ErrBusy) {
			// The server's memory was in use, not the client's rate.
			token.Refund(s.cfg.Now())
		}
		WriteError(w, r, err)
		return nil, false
	}
	if s.bodyLimiter != nil && len(body) > 0 && r.ContentLength < 0 {
		if ok, wait := s.bodyLimiter.AllowN(key, s.cfg.Now(), len(body)); !ok {
			release()
			s.bodyRateLimited(w, r, wait)
			return nil, false
		}
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	r.ContentLength = int64(len(body))
	return release, true
}

// unreadGrace is how long closeUnread waits for a byte of the body.
const unreadGrace = 100 * time.Millisecond

// closeUnread marks r's connection to be closed after the answer, its body
// left unread, the way net/http closes one after a body over its limit:
// the answer first, then its write side, and the rest only after a delay,
// so that a client still sending reads the answer instead of a reset. That
// takes one byte of the body to have arrived (within unreadGrace); with
// none, nothing is unread and the connection simply closes.
func closeUnread(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Connection", "close")
	inner := w
	for {
		u, ok := inner.(interface{ Unwrap() http.ResponseWriter })
		if !ok {
			break
		}
		inner = u.Unwrap()
	}
	rc := http.NewResponseController(w)
	_ = rc.SetReadDeadline(time.Now().Add(unreadGrace))
	var one [1]byte
	_, _ = http.MaxBytesReader(inner, r.Body, 0).Read(one[:])
}

// bodyRateLimited answers a request whose body is over its client's body
// rate: 429 with Retry-After.
func (s *Server) bodyRateLimited(w http.ResponseWriter, r *http.Request, wait time.Duration) {
	s.metrics.rateLimited.Inc()
	w.Header().Set("Retry-After", retryAfter(wait))
	WriteProblem(w, r, NewProblem(http.StatusTooManyRequests, CodeRateLimited, "too many request-body bytes from this address; retry after "+retryAfter(wait)+" s"))
}

// readBody reads r's body within the body memory budget, for r's client,
// each byte counted weight times: at most limit bytes (past it an
// *http.MaxBytesError). An error for which
// the client should come back later sets Retry-After on w.
func (s *Server) readBody(w http.ResponseWriter, r *http.Request, limit, weight int64) ([]byte, func(), error) {
	body, release, err := s.bodies.Read(w, r, clientlimit.Key(r, s.cfg.TrustedProxies), limit, weight)
	if err != nil {
		if errors.Is(err, bodybudget.ErrClientBusy) {
			s.metrics.rateLimited.Inc()
		}
		if errors.Is(err, bodybudget.ErrBusy) || errors.Is(err, bodybudget.ErrClientBusy) {
			w.Header().Set("Retry-After", "1")
		}
		return nil, nil, err
	}
	return body, release, nil
}

// serverBodies reads the paid routes' bodies with the server's budget.
type serverBodies struct{ s *Server }

// ReadBody implements nethttp.BodyReader.
func (b serverBodies) ReadBody(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, func(), error) {
	return b.s.readBody(w, r, limit, 1)
}

func (s *Server) tooLarge() Problem {
	return NewProblem(http.StatusRequestEntityTooLarge, CodeTooLarge, fmt.Sprintf("the request body is over the limit of %d bytes", s.bodyLimit))
}

// AdmitFree takes n more requests of r's client from the free-route rate
// limit, for a request that stands for several (a JSON-RPC batch): false,
// with how long until they are there, when they are not all left (more
// than the burst never are).
func (s *Server) AdmitFree(r *http.Request, n int) (bool, time.Duration) {
	if s.limiter == nil || n <= 0 {
		return true, 0
	}
	ok, wait := s.limiter.AllowN(clientlimit.Key(r, s.cfg.TrustedProxies), s.cfg.Now(), n)
	if !ok {
		s.metrics.rateLimited.Inc()
	}
	return ok, wait
}

// allowFree applies the free-route rate limit to r.
func (s *Server) allowFree(r *http.Request) (bool, time.Duration) {
	if s.limiter == nil {
		return true, 0
	}
	return s.limiter.Allow(clientlimit.Key(r, s.cfg.TrustedProxies), s.cfg.Now())
}

// checkLoopback refuses a listen address that is not loopback-only.
func checkLoopback(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("httpserver: listen address %q: %w", addr, err)
	}
	if strings.EqualFold(host, "localhost") {
		return nil
	}
	a, err := netip.ParseAddr(host)
	if err != nil || !a.Unmap().IsLoopback() {
		return fmt.Errorf("httpserver: dev mode (local facilitator: nothing is settled on chain) refuses to listen on %q, which is not a loopback address; "+
			"listen on 127.0.0.1 or [::1], or configure a facilitator URL and a payTo wallet for production", addr)
	}
	return nil
}

// ListenAndServe listens on Config.Addr and serves until Shutdown. It
// returns http.ErrServerClosed after Shutdown.
func (s *Server) ListenAndServe() error {
	addr := s.cfg.Addr
	if addr == "" {
		addr = "127.0.0.1:8080"
	}
	if s.cfg.DevMode {
		if err := checkLoopback(addr); err != nil {
			return err
		}
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("httpserver: listen: %w", err)
	}
	return s.Serve(ln)
}

// Serve serves on ln until Shutdown; it returns http.ErrServerClosed after
// Shutdown. In dev mode a listener on a non-loopback address is refused
// (and closed).
func (s *Server) Serve(ln net.Listener) error {
	if s.cfg.DevMode {
		if err := checkLoopback(ln.Addr().String()); err != nil {
			_ = ln.Close()
			return err
		}
	}
	srv := &http.Server{
		Handler:           s.handler,
		ReadHeaderTimeout: orDefault(s.cfg.ReadHeaderTimeout, DefaultReadHeaderTimeout),
		ReadTimeout:       orDefault(s.cfg.ReadTimeout, DefaultReadTimeout),
		WriteTimeout:      orDefault(s.cfg.WriteTimeout, s.defaultWriteTimeout()),
		IdleTimeout:       orDefault(s.cfg.IdleTimeout, DefaultIdleTimeout),
		MaxHeaderBytes:    s.cfg.MaxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
	if srv.MaxHeaderBytes <= 0 {
		srv.MaxHeaderBytes = DefaultMaxHeaderBytes
	}
	s.mu.Lock()
	if s.shutdown {
		s.mu.Unlock()
		_ = ln.Close()
		return http.ErrServerClosed
	}
	if s.srv != nil {
		s.mu.Unlock()
		_ = ln.Close()
		return errors.New("httpserver: already serving")
	}
	s.srv, s.ln, s.started = srv, ln, true
	if s.ownEngine {
		ctx, cancel := context.WithCancel(context.Background())
		s.stopEngine, s.engineDone = cancel, make(chan struct{})
		go func() {
			defer close(s.engineDone)
			_ = s.engine.Run(ctx)
		}()
	}
	s.mu.Unlock()
	return srv.Serve(ln)
}

// defaultWriteTimeout is DefaultWriteTimeout, or more when a paid call may
// take longer: verification, the tool and the settlement, with margin (a
// settlement honoured end to end must not be cut by the server).
func (s *Server) defaultWriteTimeout() time.Duration {
	verify := orDefault(s.cfg.VerifyTimeout, engine.DefaultVerifyTimeout)
	return max(DefaultWriteTimeout, verify+s.cfg.ToolTimeout+s.engine.SettleTimeout()+15*time.Second)
}

func orDefault(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

// Addr returns the address the server listens on, once Serve has started
// ("" before).
func (s *Server) Addr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ln == nil {
		return ""
	}
	return s.ln.Addr().String()
}

// Shutdown stops accepting connections and waits for the requests in
// flight, paid calls included (their tool runs and settlements complete),
// until ctx ends; then it closes the remaining connections and returns
// ctx's error. A Serve called after Shutdown returns http.ErrServerClosed.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	srv := s.srv
	s.shutdown = true
	stop, done := s.stopEngine, s.engineDone
	s.mu.Unlock()
	if srv == nil {
		return nil
	}
	err := srv.Shutdown(ctx)
	if err != nil {
		_ = srv.Close()
	}
	if stop != nil { // after the paid calls in flight: then leave the journal
		stop()
		<-done
		s.engine.Close()
	}
	if err != nil {
		return fmt.Errorf("httpserver: shutdown: %w", err)
	}
	return nil
}

// Engine returns the payment engine of the paid routes (other transports
// may sell through it too).
func (s *Server) Engine() *engine.Engine { return s.engine }

// ObservePayment counts an engine outcome in the server's metrics (per
// route for paid calls, throttled payers in svc_rate_limited_total, and
// recovery results). A server given its Engine
// in Config wires the engine's Observe to it; one that builds its own does
// so itself.
func (s *Server) ObservePayment(ev engine.Event) {
	if ev.Recovered {
		switch ev.Kind {
		case engine.Paid:
			s.metrics.recovered.WithLabelValues("settled").Inc()
		case engine.Refused:
			s.metrics.recovered.WithLabelValues("released").Inc()
		default:
			s.metrics.recovered.WithLabelValues("unknown").Inc()
		}
	}
	if ev.Kind == engine.Throttled { // a payer out of its budget, on any transport
		s.metrics.rateLimited.Inc()
	}
	if ev.Kind != engine.Paid {
		return
	}
	// Counted under the tool's HTTP route, whatever the transport it was
	// sold over (MCP and A2A sell through the same engine).
	for _, pr := range s.paid {
		if pr.offer.Product == ev.Product {
			pr.rm.traffic.Settled()
			if amount, err := strconv.ParseFloat(ev.Amount, 64); err == nil && amount > 0 {
				asset := strings.ToLower(ev.Asset)
				s.metrics.charged.WithLabelValues(pr.rm.label, ev.Network, asset, cmp.Or(ev.Scheme, x402.SchemeExact)).Add(amount)
				// An exact payment is settled with the call; a channel
				// charge is settled when its claim is (the claimer's
				// metrics count claims and sweeps).
				if ev.Scheme == "" || ev.Scheme == x402.SchemeExact {
					s.metrics.revenue.WithLabelValues(pr.rm.label, ev.Network, asset).Add(amount)
				}
			}
			return
		}
	}
}

// isLocal reports whether f is the local (dev) facilitator, whose verify
// adds nothing to the engine's local checks.
func isLocal(f x402.Facilitator) bool {
	_, ok := f.(*facilitator.Local)
	return ok
}

// InFlight returns the number of requests being served.
func (s *Server) InFlight() int64 { return s.inflight.Load() }

// DevMode reports whether the server runs in dev mode.
func (s *Server) DevMode() bool { return s.cfg.DevMode }

// PayTo returns the checksummed receiving wallet.
func (s *Server) PayTo() string { return s.payTo }

// Network returns the payment network.
func (s *Server) Network() x402.Network { return s.network }

// Package club serves svc's free membership club: a manifest and an invite
// beacon, membership status computed from the settlement ledger, referral
// codes with share links, and a self-declared lounge.
//
// Routes (all free; see [Club.Routes]):
//
//	GET  /api/club                    manifest: tiers, lounge term rules and suggestions, links, economics; ?ref= echoed as an invite
//	GET  /.well-known/svc-club.json   invite beacon (Cache-Control and ETag; 304 on If-None-Match)
//	GET  /api/club/status?wallet=     tier from the ledger, what the next tier needs, the wallet's referral code
//	POST /api/club/referral/create    {wallet}: the wallet's deterministic referral code and share links
//	GET  /api/club/referral/{code}    owner, referred payers and paid calls attributed to a code
//	GET  /api/club/lounge             the newest self-declared check-ins (at most LoungeCap, 24 h each)
//	POST /api/club/lounge/check-in    {wallet, agentName?, role?, interests?}: opt-in, self-declared
//
// Any other method on these paths is answered 405 Method Not Allowed with
// an Allow header (GET routes also answer HEAD).
//
// Tiers come from the settlement ledger only (settled x402 payments, which
// the payer signed): FOUNDING needs 1 paid call; INSIDER 10 paid calls or 3
// referred payers; PRIME 100 paid calls or 20 referred payers. A wallet
// holds the highest tier any of whose qualifiers it meets. Referred payers
// are the distinct payers other than the owner whose settled calls carried
// the owner's registered code (self-referral is ignored by the ledger).
// Benefits are recognition only: no discounts, no payouts, no token, no
// custody.
//
// Referral codes are derived from the EIP-55 checksummed wallet
// ([ReferralCode]): the same wallet gets the same code on every
// instance. A paid call carrying ?ref=CODE or the header X-Ref: CODE is
// attributed to the code's owner ([RefFromRequest] reads it).
//
// The lounge keeps one entry per wallet (latest wins), the newest
// LoungeCap, each for LoungeTTL. Wallet ownership is not verified: every
// entry is marked selfDeclared. Check-ins are validated and normalized
// (agentName 1–64 visible characters without '<', '>', control or
// bidirectional controls; role and interests free-form terms, see
// TermPattern: lower case, NFC, letters, digits and '-', at most
// MaxTermChars characters, at most MaxInterests interests) and
// rate-limited per client address and per wallet (429 with Retry-After).
// Roles and interests are shown as they are stored, safe to render in
// HTML, Markdown or a terminal without escaping.
//
// Wallets given to the club must be 0x followed by 40 hex digits, either in
// one case or with a valid EIP-55 checksum (a mixed-case address whose
// checksum fails is probably a typo and is refused), and not the zero
// address.
//
// Errors are RFC 9457 application/problem+json documents with the same
// members as package httpserver's (type, title, status, detail, instance,
// code, errors [{field, rule, message}], requestId).
package club

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/seed1284c1d2/svc/internal/clip"
)

// Paths of the club's routes.
const (
	ManifestPath       = "/api/club"
	BeaconPath         = "/.well-known/svc-club.json"
	StatusPath         = "/api/club/status"
	ReferralCreatePath = "/api/club/referral/create"
	ReferralPathPrefix = "/api/club/referral/" // followed by the code
	LoungePath         = "/api/club/lounge"
	CheckInPath        = "/api/club/lounge/check-in"
)

// HeaderRef is the request header that carries a referral code on a paid
// call, as an alternative to the "ref" query parameter.
const HeaderRef = "X-Ref"

// QueryRef is the query parameter that carries a referral code.
const QueryRef = "ref"

// Defaults of Config.
const (
	// DefaultCheckInsPerAddress is the number of check-ins one client
	// address may make per DefaultCheckInWindow.
	DefaultCheckInsPerAddress = 5
	// DefaultCheckInsPerWallet is the number of check-ins one wallet may
	// make per DefaultCheckInWindow.
	DefaultCheckInsPerWallet = 1
	// DefaultCheckInWindow is the window of the check-in rate limits.
	DefaultCheckInWindow = time.Minute
	// DefaultRateKeys bounds the client addresses and the wallets each
	// check-in limiter tracks; the least recently seen key is forgotten
	// first.
	DefaultRateKeys = 10000
	// DefaultBodyLimit bounds the request bodies of the club's POST routes.
	DefaultBodyLimit = 16 << 10
	// DefaultPaidExamplePath is the paid route of the example share link
	// (a GET route whose input is optional, so the link is a complete call).
	DefaultPaidExamplePath = "/api/session-state"
)

// Limits of the lounge fields.
const (
	// MaxAgentNameRunes bounds agentName (after trimming), in characters.
	MaxAgentNameRunes = 64
	// maxVocabularyWords bounds each list of suggested terms.
	maxVocabularyWords = 64
)

// DefaultRoles are the roles the manifest suggests when Config.Roles is
// empty. Any term is accepted (see TermPattern); these are examples.
func DefaultRoles() []string {
	return []string{"trader", "researcher", "builder", "developer", "agent", "explorer", "market-maker", "analyst"}
}

// DefaultInterests are the interests the manifest suggests when
// Config.Interests is empty. Any term is accepted (see TermPattern); these
// are examples.
func DefaultInterests() []string {
	return []string{"gold", "forex", "risk", "backtesting", "data", "onchain", "utilities", "regex", "jwt", "evm", "x402", "mcp", "a2a", "automation"}
}

// Limit is a rate: Events per Per, enforced as a token bucket holding at
// most Events tokens and refilled at Events per Per. The zero Limit means
// the default; a negative Events disables the limit.
type Limit struct {
	Events int
	Per    time.Duration
}

// Config configures a Club. Store and BaseURL are required.
type Config struct {
	// Store holds the ledger, the referral codes and the lounge.
	Store Store
	// BaseURL is the public base URL clients reach the service at
	// (scheme://host[:port][/prefix], http or https, no query or fragment;
	// a trailing slash is dropped). Every link the club returns is built
	// from it, never from a request's Host header.
	BaseURL string
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Logger receives store failures; nil means slog.Default().
	Logger *slog.Logger
	// CheckInPerAddress limits check-ins per client address (default
	// DefaultCheckInsPerAddress per DefaultCheckInWindow).
	CheckInPerAddress Limit
	// CheckInPerWallet limits check-ins per wallet (default
	// DefaultCheckInsPerWallet per DefaultCheckInWindow).
	CheckInPerWallet Limit
	// RateKeys bounds the keys each check-in limiter tracks (default
	// DefaultRateKeys).
	RateKeys int
	// TrustedProxies are the peers whose X-Forwarded-For is believed when
	// finding a client's address (the right-most address that is not
	// itself a trusted proxy); empty means the TCP peer is the client. An
	// IPv6 client is keyed by its /64.
	TrustedProxies []netip.Prefix
	// ClientKey, when set, replaces the client-address rule above (for a
	// server that already computes one).
	ClientKey func(r *http.Request) string
	// Roles and Interests are the terms the manifest suggests for the
	// lounge (at most 64 each, each already normalized by the term rules,
	// see TermPattern). Check-ins are not limited to them. Empty means
	// DefaultRoles and DefaultInterests.
	Roles     []string
	Interests []string
	// BodyLimit bounds the POST bodies (default DefaultBodyLimit); past it,
	// 413.
	BodyLimit int64
	// PaidExamplePath is the path of the paid route the share links
	// exemplify (default DefaultPaidExamplePath).
	PaidExamplePath string
}

// Club serves the club's routes. Build it with New; it is safe for
// concurrent use.
type Club struct {
	store     Store
	baseURL   string
	now       func() time.Time
	log       *slog.Logger
	roles     []string
	interests []string
	bodyLimit int64
	paidPath  string
	clientKey func(r *http.Request) string

	perAddress *limiter // nil: unlimited
	perWallet  *limiter // nil: unlimited

	beacon     []byte // encoded beacon document (immutable)
	beaconETag string
}

// New checks cfg and builds the club.
func New(cfg Config) (*Club, error) {
	if cfg.Store == nil {
		return nil, errors.New("club: Config.Store is required")
	}
	base, err := normalizeBaseURL(cfg.BaseURL)
	if err != nil {
		return nil, err
	}
	c := &Club{
		store:     cfg.Store,
		baseURL:   base,
		now:       cfg.Now,
		log:       cfg.Logger,
		bodyLimit: cfg.BodyLimit,
		paidPath:  cfg.PaidExamplePath,
	}
	if c.now == nil {
		c.now = time.Now
	}
	if c.log == nil {
		c.log = slog.Default()
	}
	if c.bodyLimit < 0 {
		return nil, errors.New("club: Config.BodyLimit must not be negative")
	}
	if c.bodyLimit == 0 {
		c.bodyLimit = DefaultBodyLimit
	}
	if c.paidPath == "" {
		c.paidPath = DefaultPaidExamplePath
	}
	if !strings.HasPrefix(c.paidPath, "/") || strings.ContainsAny(c.paidPath, "?# ") {
		return nil, fmt.Errorf("club: Config.PaidExamplePath %q must be a path starting with '/' without query or fragment", cfg.PaidExamplePath)
	}
	if c.roles, err = vocabulary("Roles", cfg.Roles, DefaultRoles()); err != nil {
		return nil, err
	}
	if c.interests, err = vocabulary("Interests", cfg.Interests, DefaultInterests()); err != nil {
		return nil, err
	}
	keys := cfg.RateKeys
	if keys < 0 {
		return nil, errors.New("club: Config.RateKeys must not be negative")
	}
	if keys == 0 {
		keys = DefaultRateKeys
	}
	if c.perAddress, err = newLimiter("CheckInPerAddress", cfg.CheckInPerAddress, Limit{DefaultCheckInsPerAddress, DefaultCheckInWindow}, keys, c.now); err != nil {
		return nil, err
	}
	if c.perWallet, err = newLimiter("CheckInPerWallet", cfg.CheckInPerWallet, Limit{DefaultCheckInsPerWallet, DefaultCheckInWindow}, keys, c.now); err != nil {
		return nil, err
	}
	c.clientKey = cfg.ClientKey
	if c.clientKey == nil {
		trusted := slices.Clone(cfg.TrustedProxies)
		c.clientKey = func(r *http.Request) string { return clientAddress(r, trusted) }
	}
	if c.beacon, c.beaconETag, err = encodeBeacon(NewBeacon(c.baseURL)); err != nil {
		return nil, err
	}
	return c, nil
}

// normalizeBaseURL checks the public base URL and drops a trailing slash.
func normalizeBaseURL(s string) (string, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return "", errors.New("club: Config.BaseURL is required (the public base URL share links are built from)")
	}
	u, err := url.Parse(s)
	if err != nil {
		return "", fmt.Errorf("club: Config.BaseURL: %w", err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" || u.User != nil || u.Opaque != "" {
		return "", fmt.Errorf("club: Config.BaseURL %q must be an http or https URL with a host and no credentials, query or fragment", s)
	}
	return strings.TrimRight(s, "/"), nil
}

// vocabulary checks a configured list of suggested terms, or returns def
// when it is empty.
func vocabulary(name string, words, def []string) ([]string, error) {
	if len(words) == 0 {
		return def, nil
	}
	if len(words) > maxVocabularyWords {
		return nil, fmt.Errorf("club: Config.%s has %d words, more than %d", name, len(words), maxVocabularyWords)
	}
	seen := map[string]bool{}
	out := make([]string, 0, len(words))
	for _, w := range words {
		if t, p := normalizeTerm(w); p != nil || t != w {
			return nil, fmt.Errorf("club: Config.%s: %q is not a normalized term (%s, lower case, at most %d characters)", name, w, termRules, MaxTermChars)
		}
		if seen[w] {
			return nil, fmt.Errorf("club: Config.%s: %q is listed twice", name, w)
		}
		seen[w] = true
		out = append(out, w)
	}
	return out, nil
}

// Route is one of the club's routes. Every club route is free (no payment);
// mount each on the server's free-route path (rate limit, body limit), for
// example as httpserver.Route{Pattern: rt.Pattern(), Handler: rt.Handler,
// Free: true}.
type Route struct {
	Method string // the method served: GET (which also answers HEAD) or POST
	Path   string // an http.ServeMux path, possibly with a {code} wildcard
	// Handler answers every method on Path: Method's answer, or 405 Method
	// Not Allowed with an Allow header (a problem, code method_not_allowed).
	Handler http.Handler
}

// Pattern returns the route as an http.ServeMux pattern: its path alone,
// so that every method reaches Handler, which enforces Method. (A method
// in the pattern would let GET /api/club/referral/create fall through to
// GET /api/club/referral/{code}.)
func (rt Route) Pattern() string { return rt.Path }

// Routes lists the club's routes, in the order of the interface
// specification's table.
func (c *Club) Routes() []Route {
	route := func(method, path string, h http.HandlerFunc) Route {
		return Route{Method: method, Path: path, Handler: onlyMethod(method, h)}
	}
	return []Route{
		route(http.MethodGet, ManifestPath, c.ServeManifest),
		route(http.MethodGet, BeaconPath, c.ServeBeacon),
		route(http.MethodGet, StatusPath, c.ServeStatus),
		route(http.MethodPost, ReferralCreatePath, c.ServeReferralCreate),
		route(http.MethodGet, ReferralPathPrefix+"{code}", c.ServeReferral),
		route(http.MethodGet, LoungePath, c.ServeLounge),
		route(http.MethodPost, CheckInPath, c.ServeCheckIn),
	}
}

// onlyMethod serves h for method (and HEAD when method is GET) and 405 with
// Allow for any other method.
func onlyMethod(method string, h http.HandlerFunc) http.Handler {
	allow := method
	if method == http.MethodGet {
		allow = http.MethodGet + ", " + http.MethodHead
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == method || (method == http.MethodGet && r.Method == http.MethodHead) {
			h(w, r)
			return
		}
		w.Header().Set("Allow", allow)
		writeProblem(w, r, newProblem(http.StatusMethodNotAllowed, CodeMethodNotAllowed,
			"method "+clip.Runes(r.Method, 16)+" is not allowed here; allowed: "+allow))
	})
}

// Handler returns a handler serving the club's routes alone (for tests and
// standalone use; the reference server mounts Routes instead).
func (c *Club) Handler() http.Handler {
	mux := http.NewServeMux()
	for _, rt := range c.Routes() {
		mux.Handle(rt.Pattern(), rt.Handler)
	}
	return mux
}

// url returns the absolute URL of path.
func (c *Club) url(path string) string { return c.baseURL + path }

// refURL returns the absolute URL of path carrying ?ref=code.
func (c *Club) refURL(path, code string) string {
	return c.baseURL + path + "?" + QueryRef + "=" + url.QueryEscape(code)
}

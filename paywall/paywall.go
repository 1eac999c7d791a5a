// Package paywall charges for your own net/http handlers with x402 in one
// call: a table of priced routes, the wallet that receives the payments
// and a facilitator. Everything else has a default:
//
//   - the payment journal is a SQLite file (DefaultJournal), so that a
//     crash or a restart never loses a payer's answer or a settlement;
//     a postgres:// URL shares it between instances;
//   - recovery of payments interrupted by a crash starts with New and
//     stops with Close (with RPCURL it asks the chain what became of them
//     when the facilitator does not deduplicate);
//   - the network is Base (USDC, eip155:8453);
//   - requests to unpriced routes pass through untouched.
//
// With Dev set and no facilitator, payments are verified for real by a
// local facilitator that settles nothing on chain: every answer says so in
// its PAYMENT-RESPONSE (a transaction id starting "local-dev:").
//
// The pieces it assembles stay available for finer control:
// x402/engine (the payment engine and its journal), x402/nethttp (its
// net/http binding), x402/facilitator (the facilitators) and store (the
// journal's SQLite and PostgreSQL implementations).
package paywall

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/seed1284c1d2/svc/store"
	"github.com/seed1284c1d2/svc/x402"
	"github.com/seed1284c1d2/svc/x402/engine"
	"github.com/seed1284c1d2/svc/x402/exact"
	exactserver "github.com/seed1284c1d2/svc/x402/exact/server"
	"github.com/seed1284c1d2/svc/x402/facilitator"
	"github.com/seed1284c1d2/svc/x402/facilitator/onchain"
	"github.com/seed1284c1d2/svc/x402/nethttp"
)

// DefaultJournal is the journal file used when Config.Journal is empty,
// relative to the working directory.
const DefaultJournal = "x402-data/journal.db"

// Route is the payment terms of one route.
type Route struct {
	// Price in US dollars of USDC: "$0.001" or "0.001". Required.
	Price string
	// Description and MimeType describe the answer to buyers and
	// discovery services (the 402's resource); MimeType defaults to
	// application/json.
	Description string
	MimeType    string
	// PayTo overrides Config.PayTo for this route.
	PayTo string
}

// Routes maps a pattern of net/http's ServeMux ("GET /weather",
// "POST /api/items/{id}") to its terms. A request is charged by the route
// whose pattern ServeMux would choose for it.
type Routes map[string]Route

// Config configures New. Routes and PayTo are required; so is a way to
// settle (FacilitatorURL or Facilitator) unless Dev is set.
type Config struct {
	Routes Routes
	// PayTo is the wallet that receives the payments (0x + 40 hex digits).
	PayTo string
	// Network is the CAIP-2 id of the network paid on; empty means Base
	// (eip155:8453).
	Network string
	// FacilitatorURL is an x402 facilitator's base URL (e.g.
	// https://x402.org/facilitator); FacilitatorAuth, when set, adds
	// headers to its requests (an API key, a bearer token).
	FacilitatorURL  string
	FacilitatorAuth func(ctx context.Context, op string) (http.Header, error)
	// Facilitator is any other facilitator instead, e.g. the on-chain one
	// of x402/facilitator/onchain, which settles with its own relayer key.
	// Deduplicates says that it returns the original result for a
	// settlement presented again (the on-chain one does), which lets
	// recovery release a payment it refuses.
	Facilitator  x402.Facilitator
	Deduplicates bool
	// RPCURL, with a facilitator that does not deduplicate (most over
	// HTTP), is a read-only JSON-RPC endpoint of the network: recovery
	// asks the chain what became of a settlement interrupted by a crash
	// (onchain.StatusReader) instead of leaving it unknown. No key.
	RPCURL string
	// Dev verifies payments with a local facilitator that settles nothing
	// on chain, when no facilitator is given.
	Dev bool
	// Journal is the payment journal: a SQLite file path (default
	// DefaultJournal; its directory is created) or a postgres:// URL.
	Journal string
	// Logger receives the engine's and the middleware's records; nil means
	// slog.Default().
	Logger *slog.Logger
}

// Paywall is the middleware New builds. Safe for concurrent use.
type Paywall struct {
	mw      *nethttp.Middleware
	eng     *engine.Engine
	journal store.Store
	mux     *http.ServeMux // routes' patterns, for matching only
	offers  map[string]*engine.Offer

	stop      context.CancelFunc
	recovered chan struct{}
	closeOnce sync.Once
	closeErr  error
}

// New checks cfg, opens the journal, starts recovery and returns the
// middleware. Close stops recovery and closes the journal.
func New(ctx context.Context, cfg Config) (*Paywall, error) {
	if len(cfg.Routes) == 0 {
		return nil, errors.New("paywall: Config.Routes is empty: nothing to charge for")
	}
	if !x402.IsValidAddress(cfg.PayTo) {
		return nil, fmt.Errorf("paywall: Config.PayTo %q is not an address (0x + 40 hex digits, EIP-55 checksum when mixed case, not zero)", cfg.PayTo)
	}
	network := cfg.Network
	if network == "" {
		network = x402.NetworkBase
	}
	n, ok := x402.LookupNetwork(network)
	if !ok {
		return nil, fmt.Errorf("paywall: Config.Network %q is not a known network", network)
	}
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	fac, skipVerify, dedup, err := cfg.facilitator(n, log)
	if err != nil {
		return nil, err
	}
	p := &Paywall{mux: http.NewServeMux(), offers: map[string]*engine.Offer{}}
	routes := make(map[string]x402.Route, len(cfg.Routes))
	for pattern, rt := range cfg.Routes {
		payTo := cfg.PayTo
		if rt.PayTo != "" {
			payTo = rt.PayTo
		}
		mime := rt.MimeType
		if mime == "" {
			mime = "application/json"
		}
		route := x402.Route{
			Price: strings.TrimPrefix(strings.TrimSpace(rt.Price), "$"), Network: n.CAIP2, PayTo: payTo,
			Resource: x402.ResourceInfo{Description: rt.Description, MimeType: mime},
		}
		if err := route.Validate(); err != nil {
			return nil, fmt.Errorf("paywall: route %q: %w", pattern, err)
		}
		if err := registerPattern(p.mux, pattern); err != nil {
			return nil, fmt.Errorf("paywall: route %q: %w", pattern, err)
		}
		routes[pattern] = route
	}

	dsn := cfg.Journal
	if dsn == "" {
		dsn = DefaultJournal
	}
	if !strings.HasPrefix(strings.ToLower(dsn), "postgres") {
		if err := os.MkdirAll(filepath.Dir(dsn), 0o700); err != nil {
			return nil, fmt.Errorf("paywall: journal directory: %w", err)
		}
	}
	if p.journal, err = store.Open(ctx, dsn); err != nil {
		return nil, fmt.Errorf("paywall: journal: %w", err)
	}
	var status x402.StatusChecker
	if cfg.RPCURL != "" {
		sr, err := onchain.NewStatusReader(ctx, onchain.StatusConfig{RPCURL: cfg.RPCURL, Network: n.CAIP2})
		if err != nil {
			_ = p.journal.Close()
			return nil, fmt.Errorf("paywall: Config.RPCURL: %w", err)
		}
		status = sr
	}
	scheme, err := exactserver.New(exactserver.Config{Facilitator: fac, Status: status, SkipFacilitatorVerify: skipVerify, Deduplicates: dedup})
	if err == nil {
		p.eng, err = engine.New(engine.Config{Schemes: []x402.ServerScheme{scheme}, Journal: p.journal, Logger: log})
	}
	if err != nil {
		_ = p.journal.Close()
		return nil, fmt.Errorf("paywall: %w", err)
	}
	for pattern, route := range routes {
		if p.offers[pattern], err = p.eng.NewOffer(pattern, pattern, route); err != nil {
			_ = p.journal.Close()
			return nil, fmt.Errorf("paywall: route %q: %w", pattern, err)
		}
	}
	p.mw, err = nethttp.New(nethttp.Config{Engine: p.eng, Offer: p.offer, Logger: log})
	if err != nil {
		p.eng.Close()
		_ = p.journal.Close()
		return nil, fmt.Errorf("paywall: %w", err)
	}
	rctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	p.stop, p.recovered = stop, make(chan struct{})
	go func() {
		defer close(p.recovered)
		_ = p.eng.Run(rctx)
	}()
	return p, nil
}

// facilitator picks the facilitator cfg names: whether its verify can be
// skipped after the local checks and whether it deduplicates settlements.
func (cfg Config) facilitator(n x402.Network, log *slog.Logger) (f x402.Facilitator, skipVerify, dedup bool, err error) {
	switch {
	case cfg.Facilitator != nil && cfg.FacilitatorURL != "":
		return nil, false, false, errors.New("paywall: give Config.Facilitator or Config.FacilitatorURL, not both")
	case cfg.Facilitator != nil:
		return cfg.Facilitator, false, cfg.Deduplicates, nil
	case cfg.FacilitatorURL != "":
		h, err := facilitator.NewHTTP(facilitator.HTTPConfig{URL: cfg.FacilitatorURL, AuthHeaders: cfg.FacilitatorAuth, Logger: log})
		if err != nil {
			return nil, false, false, fmt.Errorf("paywall: Config.FacilitatorURL: %w", err)
		}
		return h, false, cfg.Deduplicates, nil
	case cfg.Dev:
		local, err := facilitator.NewLocal(facilitator.LocalConfig{Networks: []string{n.CAIP2}, Verifier: exact.Verifier{}})
		if err != nil {
			return nil, false, false, fmt.Errorf("paywall: %w", err)
		}
		return local, true, true, nil
	}
	return nil, false, false, errors.New("paywall: no way to settle: set Config.FacilitatorURL (or Config.Facilitator), or Dev for a local facilitator that settles nothing on chain")
}

// registerPattern adds pattern to mux (with a handler that is never run),
// turning ServeMux's panic on a bad or conflicting pattern into an error.
func registerPattern(mux *http.ServeMux, pattern string) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%v", r)
		}
	}()
	mux.Handle(pattern, http.NotFoundHandler())
	return nil
}

// offer is the Offer of the route r matches, if any.
func (p *Paywall) offer(r *http.Request) (*engine.Offer, bool) {
	_, pattern := p.mux.Handler(r)
	o, ok := p.offers[pattern]
	return o, ok
}

// Wrap returns next behind the paywall: a request to a priced route is
// answered 402 until it carries a payment, which is verified, journaled
// and settled around next (an answer that is not 2xx settles nothing);
// other requests go to next untouched.
func (p *Paywall) Wrap(next http.Handler) http.Handler { return p.mw.Wrap(next) }

// Close stops recovery and the engine's background work, then closes the
// journal. Call it after the HTTP server has shut down. It is idempotent.
func (p *Paywall) Close() error {
	p.closeOnce.Do(func() {
		p.stop()
		<-p.recovered
		p.eng.Close()
		p.closeErr = p.journal.Close()
	})
	return p.closeErr
}

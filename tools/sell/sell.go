// Package sell is svc's seller of the catalog's tools, the same for every
// transport: the offer of a tool, the preflight of a call (decode and
// validate → the trading terminal's availability → the symbol the call
// names, all before any payment is asked), the fingerprint and the run of
// a prepared call. The HTTP routes, the MCP tools and the A2A skills only
// read their protocol into a call and write the answer back; the payment
// itself goes through the transport-neutral seller (x402/seller) or, on
// HTTP, the net/http binding of the same engine.
package sell

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/seed1284c1d2/svc"
	"github.com/seed1284c1d2/svc/internal/clip"
	"github.com/seed1284c1d2/svc/tools"
	"github.com/seed1284c1d2/svc/x402"
	"github.com/seed1284c1d2/svc/x402/engine"
	"github.com/seed1284c1d2/svc/x402/seller"
	"github.com/seed1284c1d2/svc/xau"
)

// TerminalUnavailable is the message of the error a terminal-backed call
// gets when the trading terminal is down: nothing is asked for.
const TerminalUnavailable = "the trading terminal is unavailable; no payment was requested, try again later"

// Config configures a Shop. Catalog and PayTo are required.
type Config struct {
	// Offers builds the payment offers (the engine, which knows the
	// schemes it takes); required.
	Offers Offers
	// Catalog lists the tools sold, with their prices.
	Catalog *tools.Catalog
	// PayTo is the wallet paid.
	PayTo string
	// Network is the CAIP-2 id (or v1 name) of the payment network; empty
	// means the catalog's. Every tool must be priced on it.
	Network string
	// Env is what the tools run with (terminal, default symbol, regex time
	// limit, clock).
	Env tools.Env
	// TerminalCheck is the availability check of the terminal-backed
	// tools (an error: down); nil means a health cache over Env.Terminal
	// (always down without a terminal).
	TerminalCheck func(ctx context.Context) error
	// SymbolCheck says whether the terminal serves a symbol (see
	// tools.Call.CheckSymbol); nil means a health cache over Env.Terminal.
	SymbolCheck func(ctx context.Context, symbol string) error
}

// Offers builds the offer of a priced route: every scheme the engine takes
// (engine.Engine implements it).
type Offers interface {
	NewOffer(resource, product string, routes ...x402.Route) (*engine.Offer, error)
}

// Shop sells the catalog's tools. Safe for concurrent use.
type Shop struct {
	offers  Offers
	cat     *tools.Catalog
	network string // CAIP-2
	payTo   string
	env     tools.Env
	check   func(ctx context.Context) error
	symbols func(ctx context.Context, symbol string) error
}

// New checks cfg: a known network on which every tool is priced, a
// catalog; the terminal checks default to a health cache over Env.Terminal.
func New(cfg Config) (*Shop, error) {
	if cfg.Catalog == nil {
		return nil, errors.New("sell: Config.Catalog is required")
	}
	if cfg.Offers == nil {
		return nil, errors.New("sell: Config.Offers is required")
	}
	network := cfg.Network
	if network == "" {
		network = cfg.Catalog.Network()
	}
	n, ok := x402.LookupNetwork(network)
	if !ok {
		return nil, fmt.Errorf("sell: unknown payment network %q", clip.Runes(network, 40))
	}
	s := &Shop{offers: cfg.Offers, cat: cfg.Catalog, network: n.CAIP2, payTo: cfg.PayTo, env: cfg.Env, check: cfg.TerminalCheck, symbols: cfg.SymbolCheck}
	for _, t := range cfg.Catalog.All() {
		if t.Network != "" && t.Network != s.network {
			return nil, fmt.Errorf("sell: tool %s is priced on network %s, the seller on %s", t.Key, t.Network, s.network)
		}
	}
	if s.check == nil || s.symbols == nil {
		check := func(context.Context) error {
			return fmt.Errorf("sell: no trading terminal is configured: %w", xau.ErrUnavailable)
		}
		var symbols func(context.Context, string) error
		if cfg.Env.Terminal != nil {
			hc := xau.NewHealthCache(cfg.Env.Terminal, 0, nil)
			check, symbols = hc.Check, hc.CheckSymbol
		}
		if s.check == nil {
			s.check = check
		}
		if s.symbols == nil {
			s.symbols = symbols
		}
	}
	return s, nil
}

// Catalog is the catalog sold.
func (s *Shop) Catalog() *tools.Catalog { return s.cat }

// Network is the CAIP-2 id of the payment network.
func (s *Shop) Network() string { return s.network }

// Offer is the offer of t at resourceURL (empty: filled in per request by
// the HTTP binding), labelled for logs and the journal. With extensions
// set, they replace the HTTP bazaar description the offer carries
// otherwise (a transport describing the tool in its own terms).
func (s *Shop) Offer(t *tools.Tool, label, resourceURL string, extensions map[string]any) (*engine.Offer, error) {
	route, err := t.PaymentRoute(s.network, s.payTo, resourceURL)
	if err != nil {
		return nil, fmt.Errorf("sell: %w", err)
	}
	if extensions != nil {
		route.Bazaar = nil
	}
	offer, err := s.offers.NewOffer(label, t.Key, route)
	if err != nil {
		return nil, fmt.Errorf("sell: tool %s: payment terms: %w", t.Key, err)
	}
	if extensions != nil {
		offer.PaymentRequired.Extensions = extensions
	}
	return offer, nil
}

// Check is the preflight of a decoded call beyond its input: for a
// terminal-backed tool, the terminal's availability (down: an *svc.Error
// of KindUnavailable with the TerminalUnavailable message) and the symbol
// the call names (unknown: KindInvalid naming the field). Nil for the
// other tools.
func (s *Shop) Check(ctx context.Context, call *tools.Call) error {
	if !call.Tool().Terminal {
		return nil
	}
	if err := s.check(ctx); err != nil {
		return &svc.Error{Kind: svc.KindUnavailable, Message: TerminalUnavailable, Cause: err}
	}
	return call.CheckSymbol(ctx, s.symbols)
}

// Prepare is the whole preflight of a call whose input is a JSON object
// (MCP arguments, A2A data): decoded and validated with the tool's rules,
// then Check.
func (s *Shop) Prepare(ctx context.Context, t *tools.Tool, input json.RawMessage) (*tools.Call, error) {
	call, err := t.DecodeJSON(ctx, input)
	if err != nil {
		return nil, err
	}
	if err := s.Check(ctx, call); err != nil {
		return nil, err
	}
	return call, nil
}

// Sale is the sale of a prepared call on transport, the tool named name
// there: its fingerprint (tools.Call.Fingerprint) and its run with the
// shop's Env.
func (s *Shop) Sale(offer *engine.Offer, call *tools.Call, transport, name string) seller.Sale {
	return seller.Sale{
		Offer:       offer,
		Fingerprint: call.Fingerprint(transport, name),
		Run:         func(ctx context.Context) ([]byte, error) { return s.Run(ctx, call) },
	}
}

// Run runs a prepared call with the shop's Env: its JSON output.
func (s *Shop) Run(ctx context.Context, call *tools.Call) ([]byte, error) {
	return call.RunJSON(ctx, s.env)
}

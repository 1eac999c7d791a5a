package httpserver

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/seed1284c1d2/svc"
	"github.com/seed1284c1d2/svc/club"
	"github.com/seed1284c1d2/svc/discovery/stats"
	"github.com/seed1284c1d2/svc/internal/clientlimit"
	"github.com/seed1284c1d2/svc/tools"
	"github.com/seed1284c1d2/svc/tools/sell"
	"github.com/seed1284c1d2/svc/x402"
	"github.com/seed1284c1d2/svc/x402/engine"
	"github.com/seed1284c1d2/svc/x402/nethttp"
)

// HeaderRef carries a referral code on a paid call (as does the "ref" query
// parameter); the settled payment is attributed to the code in the ledger.
const HeaderRef = "X-Ref"

// paidRoute is one tool behind the payment pipeline. The pipeline, in
// order (no one pays for a request that cannot succeed):
//
//  1. decode and validate the input (tools.Tool.Decode): invalid → 400;
//  2. for the terminal-backed tools, the cached availability check (503
//     when down) and the cached check of the symbol the call names (400
//     unknown_symbol when the terminal does not serve it);
//  3. the payment engine through its net/http binding: no payment → 402;
//     the payment checked, reserved, verified; the tool runs on the call
//     decoded in step 1 (its failure settles nothing); the answer is
//     journaled, settled, and the settlement and ledger entry journaled
//     before the answer (with PAYMENT-RESPONSE) goes out.
//
// Steps 1 and 2 are the binding's Preflight, so they happen before any
// 402; the decoded call travels to the run in the request's context.
type paidRoute struct {
	s     *Server
	tool  *tools.Tool
	shop  *sell.Shop
	rm    *routeMetrics
	offer *engine.Offer
}

// paidCall is the per-request state shared by the pipeline's steps.
type paidCall struct {
	call *tools.Call
}

type paidCallKey struct{}

func paidCallOf(ctx context.Context) *paidCall {
	pc, _ := ctx.Value(paidCallKey{}).(*paidCall)
	return pc
}

// buildPaid registers one paid route per catalog tool, all behind one
// binding of the engine (one body memory budget for every paid route).
func (s *Server) buildPaid() error {
	list := s.cfg.Catalog.All()
	if len(list) == 0 {
		return fmt.Errorf("httpserver: the catalog has no tools")
	}
	shop := s.cfg.Shop
	if shop == nil {
		env := s.cfg.Env
		env.Terminal = s.cfg.Terminal
		var err error
		shop, err = sell.New(sell.Config{Offers: s.engine, Catalog: s.cfg.Catalog, PayTo: s.payTo, Network: s.network.CAIP2, Env: env,
			TerminalCheck: s.healthCache.Check, SymbolCheck: s.healthCache.CheckSymbol})
		if err != nil {
			return fmt.Errorf("httpserver: %w", err)
		}
	} else if shop.Catalog() != s.cfg.Catalog || shop.Network() != s.network.CAIP2 {
		return errors.New("httpserver: Config.Shop sells another catalog or on another network than Config.Catalog and Config.Network")
	}
	// The Access-Control-Allow-Origin value, shared by every answer
	// (clipped: an Add on an answer's header copies it).
	anyOrigin := []string{"*"}[:1:1]
	type routeKey struct{}
	mw, err := nethttp.New(nethttp.Config{
		Engine: s.engine,
		Offer: func(r *http.Request) (*engine.Offer, bool) {
			pr, ok := r.Context().Value(routeKey{}).(*paidRoute)
			if !ok {
				return nil, false
			}
			return pr.offer, true
		},
		Preflight: func(r *http.Request) error {
			return r.Context().Value(routeKey{}).(*paidRoute).preflight(r)
		},
		Fingerprint: func(r *http.Request, body []byte) string {
			return r.Context().Value(routeKey{}).(*paidRoute).fingerprint(r, body)
		},
		WriteError:      WriteError,
		WriteProblem:    s.writePaymentProblem,
		AdmitUnpaid:     s.AdmitUnpaid,
		AdmitPayment:    s.AdmitPayment,
		PaymentRefused:  s.PaymentRefused,
		PublicBaseURL:   s.cfg.PublicBaseURL,
		MaxRequestBytes: s.bodyLimit,
		Bodies:          serverBodies{s},
		RequestID:       RequestIDOf,
		RefCode:         club.RefFromRequest,
		Logger:          s.log,
	})
	if err != nil {
		return fmt.Errorf("httpserver: payment binding: %w", err)
	}
	inner := mw.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Context().Value(routeKey{}).(*paidRoute).run(w, r)
	}))
	for _, t := range list {
		// The resource is the endpoint (as the reference servers name it),
		// not the request with its query string: one URL per tool for
		// discovery services, and an offer that is the same for every
		// request. Without a public base URL it is the request's own.
		resource := ""
		if s.cfg.PublicBaseURL != "" {
			resource = strings.TrimRight(s.cfg.PublicBaseURL, "/") + t.Path
		}
		pattern := t.Method + " " + t.Path
		offer, err := shop.Offer(t, pattern, resource, nil)
		if err != nil {
			return fmt.Errorf("httpserver: %w", err)
		}
		pr := &paidRoute{s: s, tool: t, shop: shop, offer: offer}
		pr.rm = s.metrics.route(routeLabel(pattern), stats.KindPaid)
		h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header()[headerAllowOrigin] = anyOrigin
			ctx := context.WithValue(r.Context(), routeKey{}, pr)
			ctx = context.WithValue(ctx, paidCallKey{}, &paidCall{})
			inner.ServeHTTP(w, r.WithContext(ctx))
		})
		if err := s.handle(pattern, s.wrapRoute(pr.rm, false, s.bodyLimit, h)); err != nil {
			return err
		}
		// CORS preflights are free (and rate-limited as free routes are).
		preflight := corsPreflight(t.Method, anyOrigin)
		if err := s.handle(http.MethodOptions+" "+t.Path, s.wrapRoute(pr.rm, true, s.bodyLimit, preflight)); err != nil {
			return err
		}
		s.paid = append(s.paid, pr)
	}
	return nil
}

// AdmitPayment lets a request with a payment through while its client has
// refused-payment tokens left; it takes none (PaymentRefused does). The
// paid routes ask it, and so do the MCP and A2A sellers mounted on the
// server, so that the limit is per client address on every transport.
func (s *Server) AdmitPayment(r *http.Request) (bool, time.Duration) {
	if s.refusedLimiter == nil {
		return true, 0
	}
	now := s.cfg.Now()
	tok, wait, ok := s.refusedLimiter.Take(clientlimit.Key(r, s.cfg.TrustedProxies), now)
	if !ok {
		s.metrics.rateLimited.Inc()
		return false, wait
	}
	tok.Refund(now)
	return true, 0
}

// PaymentRefused takes a refused-payment token of r's client.
func (s *Server) PaymentRefused(r *http.Request) {
	if s.refusedLimiter != nil {
		s.refusedLimiter.Allow(clientlimit.Key(r, s.cfg.TrustedProxies), s.cfg.Now())
	}
}

// AdmitUnpaid applies the unpaid-request rate limit of the paid calls (on
// every transport) to r's client.
func (s *Server) AdmitUnpaid(r *http.Request) (bool, time.Duration) {
	if s.unpaidLimiter == nil {
		return true, 0
	}
	ok, wait := s.unpaidLimiter.Allow(clientlimit.Key(r, s.cfg.TrustedProxies), s.cfg.Now())
	if !ok {
		s.metrics.rateLimited.Inc()
	}
	return ok, wait
}

// writePaymentProblem writes the payment binding's own error answers with
// the server's problem writer: the reason is the problem's code, and an
// error the server knows under its own code (a body over the limit) gets
// the same problem as on every other route.
func (s *Server) writePaymentProblem(w http.ResponseWriter, r *http.Request, p nethttp.Problem) {
	if p.RetryAfter > 0 {
		w.Header().Set("Retry-After", retryAfter(p.RetryAfter))
	}
	switch p.Reason {
	case nethttp.ReasonRequestTooLarge:
		WriteProblem(w, r, s.tooLarge())
		return
	case nethttp.ReasonRateLimited:
		WriteProblem(w, r, NewProblem(http.StatusTooManyRequests, CodeRateLimited, p.Detail))
		return
	}
	code := p.Reason
	if code == "" {
		code = CodeInvalidInput
		if p.Status >= 500 {
			code = CodeInternal
		}
	}
	WriteProblem(w, r, NewProblem(p.Status, code, p.Detail))
}

// CORS on the paid routes. A payment is a signature in a header, not a
// cookie or other ambient credential, so every origin may call a tool: each
// answer carries Access-Control-Allow-Origin "*" (and the x402 middleware
// exposes PAYMENT-REQUIRED and PAYMENT-RESPONSE to scripts), and OPTIONS
// answers preflights.
const (
	headerAllowOrigin = "Access-Control-Allow-Origin"
	// corsAllowHeaders are the request headers a paying browser client
	// sends: the v2 and v1 payment headers, the JSON body's type, the
	// attribution and request-id headers, and Access-Control-Expose-Headers,
	// which the official x402 fetch and axios clients add to the paid retry.
	corsAllowHeaders = "Content-Type, " + x402.RequestHeaders + ", X-Ref, X-Request-Id, Access-Control-Expose-Headers"
	// corsMaxAge lets a browser reuse a preflight for 10 minutes.
	corsMaxAge = "600"
)

// corsPreflight answers OPTIONS on a paid route whose method is method:
// 204 with the allowed method and headers (a preflight), or with Allow (a
// plain OPTIONS). Requested headers are allowed as asked when they are a
// plain list of header names, so that a client adding its own header
// still gets through; otherwise the fixed list is sent.
func corsPreflight(method string, anyOrigin []string) http.Handler {
	allow := method + ", " + http.MethodOptions
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Allow", allow)
		if r.Header.Get("Access-Control-Request-Method") != "" {
			h[headerAllowOrigin] = anyOrigin
			h.Set("Access-Control-Allow-Methods", allow)
			headers := corsAllowHeaders
			if req := r.Header.Get("Access-Control-Request-Headers"); req != "" && len(req) <= 1024 && headerNameList(req) {
				headers = req
			}
			h.Set("Access-Control-Allow-Headers", headers)
			h.Set("Access-Control-Max-Age", corsMaxAge)
		}
		w.WriteHeader(http.StatusNoContent)
	})
}

// headerNameList reports whether s is a comma-separated list of header
// names (RFC 9110 tokens), spaces allowed around the commas.
func headerNameList(s string) bool {
	for name := range strings.SplitSeq(s, ",") {
		name = strings.TrimSpace(name)
		if name == "" {
			return false
		}
		for i := 0; i < len(name); i++ {
			c := name[i]
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0) {
				return false
			}
		}
	}
	return true
}

// preflight decodes and validates the input and checks what the call
// depends on (the shop's Check: for a terminal-backed tool, the cached
// availability of the terminal and the symbol the call names): all before
// any 402.
func (pr *paidRoute) preflight(r *http.Request) error {
	call, err := pr.tool.Decode(r.Context(), r)
	if err != nil {
		return err
	}
	if err := pr.shop.Check(r.Context(), call); err != nil {
		return err
	}
	if pc := paidCallOf(r.Context()); pc != nil {
		pc.call = call
	}
	return nil
}

// fingerprint identifies a paid request for the payment journal: the
// fingerprint of every transport (tools.Call.Fingerprint) over the input
// the preflight decoded, so that a retry of the same payment with the same
// values gets the recorded answer however its JSON is formatted or its
// query parameters ordered.
func (pr *paidRoute) fingerprint(r *http.Request, body []byte) string {
	if pc := paidCallOf(r.Context()); pc != nil && pc.call != nil {
		return pc.call.Fingerprint(transportHTTP, pr.tool.Key)
	}
	return nethttp.RequestHash(r, body) // the preflight always stores the call
}

// transportHTTP names HTTP in the payment journal and in fingerprints.
const transportHTTP = "http"

// run runs the tool after the payment was verified. An error answer makes
// the middleware settle nothing.
func (pr *paidRoute) run(w http.ResponseWriter, r *http.Request) {
	var call *tools.Call
	if pc := paidCallOf(r.Context()); pc != nil {
		call = pc.call
	}
	if call == nil { // the preflight always stores it; decode again rather than fail
		c, err := pr.tool.Decode(r.Context(), r)
		if err != nil {
			WriteError(w, r, err)
			return
		}
		call = c
	}
	ctx, cancel := context.WithTimeout(r.Context(), pr.s.cfg.ToolTimeout)
	defer cancel()
	out, err := pr.shop.Run(ctx, call)
	if err != nil {
		if svc.KindOf(err) == svc.KindInternal {
			pr.s.log.Error("tool failed", "tool", pr.tool.Key, "request_id", RequestIDOf(r), "error", err)
		}
		WriteError(w, r, err)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(append(out, '\n'))
}

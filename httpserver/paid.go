package httpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/seed1284c1d2/svc/club"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/seed1284c1d2/svc"
	"github.com/seed1284c1d2/svc/store"
	"github.com/seed1284c1d2/svc/tools"
	"github.com/seed1284c1d2/svc/x402"
	"golang.org/x/net/http/httpguts"
)

// HeaderRef carries a referral code on a paid call (as does the "ref" query
// parameter); the settled payment is attributed to the code in the ledger.
const HeaderRef = "X-Ref"

// paidRoute is one tool behind the payment pipeline. The pipeline, in
// order (no one pays for a request that cannot succeed):
//
//  1. decode and validate the input (tools.Tool.Decode): invalid → 400;
//  2. for the terminal-backed tools, the cached availability check: down →
//     503;
//  3. the x402 middleware: no payment → 402; payment checked locally, the
//     authorization reserved, the facilitator's /verify;
//  4. the tool runs on the call decoded in step 1; its failure (503, 504,
//     ...) settles nothing;
//  5. settlement, then 200 with PAYMENT-RESPONSE, and the ledger records it
//     (OnSettled).
//
// Steps 1 and 2 are the middleware's Preflight, so they happen before any
// 402; the decoded call travels to step 4 in the request's context.
type paidRoute struct {
	s    *Server
	tool *tools.Tool
	env  tools.Env
	rm   *routeMetrics
	// offer is the middleware's 402 answer to an unpaid request, recorded
	// once (nil when the resource URL depends on the request).
	offer *recordedOffer
}

// recordedOffer is a 402 answer as the x402 middleware writes it.
type recordedOffer struct {
	header http.Header
	body   []byte
	// fields are header's entries, in a fixed order, each value slice
	// clipped (len == cap) so that an Add on the answer's header copies
	// rather than writes into the shared array. Handlers never modify a
	// header value in place.
	fields []offerField
	// lines are the header lines of the fields other than Content-Length
	// ("Name: value\r\n", in fields' order), spliced into the head net/http
	// writes (writeOffer); contentLength is the Content-Length field's value.
	lines         []byte
	contentLength []string
}

// offerField is one header of a recorded offer.
type offerField struct {
	key    string
	values []string
}

// paidCall is the per-request state shared by the pipeline's steps.
type paidCall struct {
	r    *http.Request
	call *tools.Call
}

type paidCallKey struct{}

func paidCallOf(ctx context.Context) *paidCall {
	pc, _ := ctx.Value(paidCallKey{}).(*paidCall)
	return pc
}

// buildPaid registers one paid route per catalog tool.
func (s *Server) buildPaid() error {
	list := s.cfg.Catalog.All()
	if len(list) == 0 {
		return fmt.Errorf("httpserver: the catalog has no tools")
	}
	// The Access-Control-Allow-Origin value, shared by every answer
	// (clipped: an Add on an answer's header copies it).
	anyOrigin := []string{"*"}[:1:1]
	for _, t := range list {
		if t.Network != "" && t.Network != s.network.CAIP2 {
			return fmt.Errorf("httpserver: tool %s is priced on network %s, the server on %s", t.Key, t.Network, s.network.CAIP2)
		}
		route, err := s.x402Route(t)
		if err != nil {
			return err
		}
		if s.cfg.PublicBaseURL != "" {
			// The resource is the endpoint (as the reference servers
			// name it), not the request with its query string: one URL
			// per tool for discovery services, and an offer that is the
			// same for every request.
			route.Resource.URL = strings.TrimRight(s.cfg.PublicBaseURL, "/") + t.Path
		}
		pattern := t.Method + " " + t.Path
		terms, err := x402.NewTerms(pattern, route)
		if err != nil {
			return fmt.Errorf("httpserver: tool %s: payment terms: %w", t.Key, err)
		}
		pr := &paidRoute{s: s, tool: t, env: s.cfg.Env}
		pr.env.Terminal = s.cfg.Terminal
		mw, err := x402.NewMiddleware(x402.Config{
			Facilitator:     s.cfg.Facilitator,
			NonceStore:      s.cfg.Store,
			Terms:           func(*http.Request) (x402.Terms, bool) { return terms, true },
			Preflight:       pr.preflight,
			WriteError:      WriteError,
			OnSettled:       pr.onSettled,
			Logger:          s.log,
			Now:             s.now,
			PublicBaseURL:   s.cfg.PublicBaseURL,
			VerifyTimeout:   s.cfg.VerifyTimeout,
			SettleTimeout:   s.cfg.SettleTimeout,
			MaxRequestBytes: s.bodyLimit,
			RequestID:       RequestIDOf,
		})
		if err != nil {
			return fmt.Errorf("httpserver: tool %s: payment middleware: %w", t.Key, err)
		}
		pr.rm = s.metrics.route(routeLabel(pattern), "paid")
		if route.Resource.URL != "" {
			if pr.offer, err = recordOffer(t, terms, s.cfg.Facilitator); err != nil {
				return err
			}
		}
		inner := mw.Wrap(http.HandlerFunc(pr.run))
		h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header()[headerAllowOrigin] = anyOrigin
			if r.ContentLength > s.bodyLimit {
				WriteProblem(w, r, s.tooLarge())
				return
			}
			if pr.offer != nil && unpaid(r) {
				pr.serveUnpaid(w, r)
				return
			}
			pc := &paidCall{}
			r = r.WithContext(context.WithValue(r.Context(), paidCallKey{}, pc))
			pc.r = r
			inner.ServeHTTP(w, r)
		})
		if err := s.handle(pattern, s.wrapRoute(pr.rm, false, h)); err != nil {
			return err
		}
		// CORS preflights are free (and rate-limited as free routes are).
		preflight := corsPreflight(t.Method, anyOrigin)
		if err := s.handle(http.MethodOptions+" "+t.Path, s.wrapRoute(pr.rm, true, preflight)); err != nil {
			return err
		}
		s.paid = append(s.paid, pr)
	}
	return nil
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
	corsAllowHeaders = "Content-Type, PAYMENT-SIGNATURE, X-PAYMENT, X-Ref, X-Request-Id, Access-Control-Expose-Headers"
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

// recordOffer records the 402 the x402 middleware answers to an unpaid
// request of the tool, when the offer does not depend on the request (its
// resource URL is fixed). Encoding the offer (the bazaar extension holds
// the tool's schemas) is most of the cost of a 402; replaying the recorded
// bytes keeps 402s as cheap as the input validation before them.
func recordOffer(t *tools.Tool, terms x402.Terms, f x402.Facilitator) (*recordedOffer, error) {
	mw, err := x402.NewMiddleware(x402.Config{Facilitator: f, Terms: func(*http.Request) (x402.Terms, bool) { return terms, true },
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return nil, fmt.Errorf("httpserver: tool %s: recording the offer: %w", t.Key, err)
	}
	req, err := http.NewRequest(t.Method, "http://offer.invalid"+t.Path, nil)
	if err != nil {
		return nil, fmt.Errorf("httpserver: tool %s: recording the offer: %w", t.Key, err)
	}
	rec := &offerRecorder{header: http.Header{}}
	mw.Wrap(http.NotFoundHandler()).ServeHTTP(rec, req)
	if rec.status != http.StatusPaymentRequired || rec.header.Get(x402.HeaderPaymentRequired) == "" {
		return nil, fmt.Errorf("httpserver: tool %s: recording the offer: the middleware answered %d", t.Key, rec.status)
	}
	if len(rec.header["Content-Type"]) != 1 {
		// writeOffer keeps net/http from sniffing a type of its own.
		return nil, fmt.Errorf("httpserver: tool %s: recording the offer: no single Content-Type", t.Key)
	}
	rec.header.Set("Content-Length", strconv.Itoa(rec.body.Len()))
	o := &recordedOffer{header: rec.header, body: rec.body.Bytes()}
	for _, k := range slices.Sorted(maps.Keys(rec.header)) {
		v := slices.Clone(rec.header[k])
		o.fields = append(o.fields, offerField{key: k, values: v[:len(v):len(v)]})
		if k == "Content-Length" {
			o.contentLength = v[:len(v):len(v)]
			continue
		}
		if !httpguts.ValidHeaderFieldName(k) {
			return nil, fmt.Errorf("httpserver: tool %s: recording the offer: invalid header name %q", t.Key, k)
		}
		for _, x := range v {
			if !httpguts.ValidHeaderFieldValue(x) {
				return nil, fmt.Errorf("httpserver: tool %s: recording the offer: invalid value of header %s", t.Key, k)
			}
			o.lines = append(o.lines, k+": "+x+"\r\n"...)
		}
	}
	return o, nil
}

// offerRecorder records one answer.
type offerRecorder struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (o *offerRecorder) Header() http.Header { return o.header }

func (o *offerRecorder) WriteHeader(status int) {
	if o.status == 0 {
		o.status = status
	}
}

func (o *offerRecorder) Write(b []byte) (int, error) {
	if o.status == 0 {
		o.status = http.StatusOK
	}
	return o.body.Write(b)
}

// serveUnpaid answers a request without payment as the middleware would
// (steps 1 and 2 of Wrap): the bounded body, the preflight (400, 503, ...),
// then the recorded 402.
func (pr *paidRoute) serveUnpaid(w http.ResponseWriter, r *http.Request) {
	var body []byte
	if r.Body != nil && r.Body != http.NoBody {
		var err error
		body, err = readUnpaidBody(w, r, pr.s.bodyLimit)
		_ = r.Body.Close()
		if err != nil {
			if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
				WriteProblem(w, r, pr.s.tooLarge())
				return
			}
			WriteProblem(w, r, NewProblem(http.StatusBadRequest, CodeInvalidInput, "the request body could not be read"))
			return
		}
	}
	if _, err := pr.tool.DecodeBody(r.Context(), r, body); err != nil {
		WriteError(w, r, err)
		return
	}
	if err := pr.terminalCheck(r.Context()); err != nil {
		WriteError(w, r, err)
		return
	}
	pr.writeOffer(w, r)
}

// writeOffer writes the recorded 402. Over a connection of the server's own
// listener (HTTP/1.x, so a coalescingConn) the offer's header lines are not
// handed to net/http, which would sort them and scan the 3 KiB
// PAYMENT-REQUIRED value for line breaks on every answer: net/http writes
// the head with the request's own fields (Date, X-Request-Id, CORS, ...)
// and Content-Length, the lines recorded once are inserted at its end, and
// the answer leaves in one write call. The bytes are those of the plain
// path but for the order of the header fields, which HTTP leaves free.
// Elsewhere (Handler mounted in another server, HTTP/2) and behind a
// Config.Middleware, whose writer may buffer or transform what net/http
// would write, the header is set field by field.
func (pr *paidRoute) writeOffer(w http.ResponseWriter, r *http.Request) {
	o := pr.offer
	cc, _ := r.Context().Value(coalescingConnKey{}).(*coalescingConn)
	if cc == nil || r.ProtoMajor != 1 || pr.s.cfg.Middleware != nil {
		writeCoalesced(w, r, func() {
			h := w.Header()
			for _, f := range o.fields {
				h[f.key] = f.values
			}
			w.WriteHeader(http.StatusPaymentRequired)
			_, _ = w.Write(o.body)
		})
		return
	}
	h := w.Header()
	for _, f := range o.fields { // the offer's fields replace any set before
		delete(h, f.key)
	}
	h["Content-Length"] = o.contentLength
	// Content-Type is in o.lines; present but empty, it keeps net/http from
	// sniffing one of its own.
	h["Content-Type"] = nil
	cc.holdIncomplete()
	w.WriteHeader(http.StatusPaymentRequired)
	_, _ = w.Write(o.body)
	_ = http.NewResponseController(w).Flush()
	if !cc.spliceHead(o.lines) {
		// Not reached with net/http as it is (TestOfferSplice): the held
		// bytes do not start with a head, and an answer without its offer
		// must not leave. The client sees the connection close.
		pr.s.log.Error("httpserver: the 402 head could not be completed; closing the connection",
			"path", r.URL.Path, "request_id", RequestIDOf(r))
		cc.abandon()
		return
	}
	_ = cc.release()
}

// readUnpaidBody reads the body of r, bounded by limit as
// io.ReadAll(http.MaxBytesReader(w, r.Body, limit)) is. A body of known
// length (at most limit: larger ones were refused before) is read into one
// buffer of that size, without the MaxBytesReader it could never trip.
func readUnpaidBody(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, error) {
	n := r.ContentLength
	if n < 0 || n > limit {
		return io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	}
	// One byte more than announced, so that the end is seen in one pass.
	buf := make([]byte, 0, n+1)
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		m, err := r.Body.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+m]
		if int64(len(buf)) > limit { // a body longer than announced
			return nil, &http.MaxBytesError{Limit: limit}
		}
		if err == io.EOF {
			return buf, nil
		}
		if err != nil {
			return buf, err
		}
	}
}

// x402Route builds the payment configuration of a tool: its price on the
// server's network to PayTo, with the bazaar discovery extension (the
// tool's input schema, an input example and an output example).
//
// The output schema is left out of the 402: the offer travels in a header
// that clients echo in PAYMENT-SIGNATURE (bounded at x402.MaxHeaderBytes)
// and that proxies buffer (often 4 KiB); with it the largest offer is
// 5.2 KiB encoded, without it 3.5 KiB. The catalog publishes the full
// output schema.
func (s *Server) x402Route(t *tools.Tool) (x402.Route, error) {
	// The input schema is nested in the bazaar schema: its own "$schema"
	// (meaningless in a subschema) and "title" stay in the catalog.
	in := t.InputSchemaMap()
	delete(in, "$schema")
	delete(in, "title")
	bz := &x402.BazaarInfo{Method: t.Method, InputSchema: in}
	if len(t.ExampleInput) > 0 {
		if t.InputLocation == tools.InputQuery {
			q, err := tools.QueryOf(t.ExampleInput)
			if err != nil {
				return x402.Route{}, fmt.Errorf("httpserver: tool %s: example input: %w", t.Key, err)
			}
			params := map[string]any{}
			for k := range q {
				params[k] = q.Get(k)
			}
			bz.InputExample = params
		} else {
			var v any
			if err := json.Unmarshal(t.ExampleInput, &v); err != nil {
				return x402.Route{}, fmt.Errorf("httpserver: tool %s: example input: %w", t.Key, err)
			}
			bz.InputExample = v
		}
	}
	if len(t.OutputExample) > 0 {
		var v any
		if err := json.Unmarshal(t.OutputExample, &v); err != nil {
			return x402.Route{}, fmt.Errorf("httpserver: tool %s: output example: %w", t.Key, err)
		}
		bz.OutputExample = v
	}
	route := x402.Route{
		Price:    t.Price,
		Network:  s.network.CAIP2,
		PayTo:    s.payTo,
		Resource: x402.ResourceInfo{Description: resourceDescription(t), MimeType: "application/json"},
		Bazaar:   bz,
	}
	if err := route.Validate(); err != nil {
		return x402.Route{}, fmt.Errorf("httpserver: tool %s: %w", t.Key, err)
	}
	return route, nil
}

// resourceDescription is the first sentence of the tool's description
// (the 402 travels in a header; the whole text is in the catalog).
func resourceDescription(t *tools.Tool) string {
	d := t.Description
	if i := strings.Index(d, ". "); i > 0 {
		d = d[:i+1]
	}
	if len(d) > 200 {
		d = d[:200]
	}
	if d == "" {
		d = t.Name
	}
	return d
}

// preflight decodes and validates the input and, for a terminal-backed
// tool, checks the terminal's availability: both before any 402.
func (pr *paidRoute) preflight(r *http.Request) error {
	call, err := pr.tool.Decode(r.Context(), r)
	if err != nil {
		return err
	}
	if err := pr.terminalCheck(r.Context()); err != nil {
		return err
	}
	if pc := paidCallOf(r.Context()); pc != nil {
		pc.call = call
	}
	return nil
}

// terminalCheck is, for a terminal-backed tool, the cached availability
// check of the terminal (KindUnavailable: 503, no 402); nil for the others.
func (pr *paidRoute) terminalCheck(ctx context.Context) error {
	if !pr.tool.Terminal {
		return nil
	}
	if err := pr.s.healthCache.Check(ctx); err != nil {
		return &svc.Error{Kind: svc.KindUnavailable, Message: "the trading terminal is unavailable; no payment was requested, try again later", Cause: err}
	}
	return nil
}

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
	out, err := call.RunJSON(ctx, pr.env)
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

// onSettled records a settled payment in the ledger.
func (pr *paidRoute) onSettled(ctx context.Context, ev x402.SettledEvent) {
	if !ev.Replay { // a replay re-records (idempotently) what may have been lost
		pr.rm.settled.Add(1)
	}
	st := store.Settlement{
		Payer:       ev.Payer,
		ToolKey:     pr.tool.Key,
		Amount:      ev.Amount,
		Asset:       ev.Asset,
		Network:     ev.Network,
		Transaction: ev.Transaction,
		Nonce:       ev.Nonce,
		SettledAt:   ev.SettledAt,
	}
	if pc := paidCallOf(ctx); pc != nil && pc.r != nil {
		st.RefCode = club.RefFromRequest(pc.r)
	}
	if _, err := pr.s.cfg.Store.Append(ctx, st); err != nil {
		pr.s.metrics.ledgerFails.Add(1)
		pr.s.metrics.failure("ledger_append_failed")
		// Enough to reconcile by hand: the payment was settled. It is
		// appended again in the background (ledgerRetry).
		pr.s.log.Error("ledger: recording a settled payment failed; retrying", append(ledgerAttrs(st, ev.RequestID), "error", err)...)
		pr.s.ledger.add(st, ev.RequestID)
	}
}

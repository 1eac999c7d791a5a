package x402

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Defaults of a Middleware's Config.
const (
	// DefaultVerifyTimeout bounds one facilitator /verify call.
	DefaultVerifyTimeout = 15 * time.Second
	// DefaultSettleTimeout bounds one facilitator /settle call (it waits for
	// the transaction receipt).
	DefaultSettleTimeout = 60 * time.Second
	// DefaultMaxRequestBytes bounds the request body a paid route reads
	// (2 MiB); past it the answer is 413.
	DefaultMaxRequestBytes = 2 << 20
	// DefaultMaxResponseBytes bounds the buffered response of a paid handler
	// (8 MiB); past it the answer is 500 and nothing is settled.
	DefaultMaxResponseBytes = 8 << 20
)

// Error texts and reasons of the middleware's own answers. A 402's error
// (PAYMENT-REQUIRED "error", body "error") is ErrorPaymentRequired, then
// ErrorNoMatchingRequirements or a refusal reason (the Verifier's, the
// facilitator's or ReasonPaymentInProgress); 4xx/5xx problem bodies carry
// one of the other reasons.
const (
	ErrorPaymentRequired        = "Payment required"
	ErrorNoMatchingRequirements = "No matching payment requirements"
	// ReasonPaymentInProgress: the same authorization is being processed by
	// another request right now (or its settlement outcome is unknown).
	ReasonPaymentInProgress = "payment_in_progress"
	// ReasonInvalidPaymentHeader: PAYMENT-SIGNATURE / X-PAYMENT is not
	// decodable (400).
	ReasonInvalidPaymentHeader = "invalid_payment_header"
	// ReasonPaymentHeaderTooLarge: the header is longer than MaxHeaderBytes
	// (400).
	ReasonPaymentHeaderTooLarge = "payment_header_too_large"
	// ReasonFacilitatorUnavailable: the facilitator could not answer /verify
	// (502) or did not in time (504).
	ReasonFacilitatorUnavailable = "facilitator_unavailable"
	// ReasonNonceStoreUnavailable: the replay guard could not be consulted
	// (503).
	ReasonNonceStoreUnavailable = "payment_store_unavailable"
	// ReasonRequestTooLarge: the request body is over MaxRequestBytes (413).
	ReasonRequestTooLarge = "request_too_large"
	// ReasonResponseTooLarge: the paid handler wrote more than
	// MaxResponseBytes (500, nothing settled).
	ReasonResponseTooLarge = "response_too_large"
)

// ExposedHeaders is the Access-Control-Expose-Headers value put on every
// answer of a paid route, so that browser clients can read the payment
// headers.
const ExposedHeaders = "PAYMENT-REQUIRED, PAYMENT-RESPONSE, X-PAYMENT-RESPONSE"

// Terms are the payment terms of one paid request.
type Terms struct {
	// Route labels the route in logs and in SettledEvent, e.g.
	// "GET /api/risk-levels"; empty means "METHOD path".
	Route string
	// PaymentRequired is what the 402 offers: Accepts (at least one
	// requirement), Resource and Extensions. The middleware sets
	// X402Version and Error, and Resource.URL when it is empty (the full
	// request URL).
	PaymentRequired PaymentRequired
}

// NewTerms builds the terms of a route from one or more price
// configurations (one "accepts" entry each, in order; the first one's
// Resource and Bazaar description are used). The error is the first
// Route.Validate failure (*ConfigError).
func NewTerms(label string, routes ...Route) (Terms, error) {
	if len(routes) == 0 {
		return Terms{}, &ConfigError{Field: "Routes", Message: "at least one price configuration is required"}
	}
	pr, err := routes[0].PaymentRequired()
	if err != nil {
		return Terms{}, err
	}
	for _, rt := range routes[1:] {
		req, err := rt.Requirements()
		if err != nil {
			return Terms{}, err
		}
		pr.Accepts = append(pr.Accepts, req)
	}
	return Terms{Route: label, PaymentRequired: pr}, nil
}

// SettledEvent describes one settled payment, for the ledger.
type SettledEvent struct {
	RequestID   string    // Config.RequestID of the request ("" if none)
	Route       string    // Terms.Route
	Method      string    // HTTP method
	Path        string    // URL path
	Payer       string    // authorization.from (the facilitator's payer if it names one)
	Amount      string    // atomic units settled
	Asset       string    // token address
	Network     string    // CAIP-2 id
	PayTo       string    // receiving address
	Transaction string    // facilitator transaction id (a hash on chain)
	Nonce       string    // EIP-3009 authorization nonce (0x + 64 hex)
	X402Version int       // protocol version the client spoke (1 or 2)
	Status      int       // status of the paid answer
	SettledAt   time.Time // Config.Now at settlement (at the replay for a replay)
	// Replay is true when the event re-announces a settlement whose recorded
	// answer is being replayed to the same request: nothing new was
	// settled, but a consumer that missed the first event (a crash between
	// recording and OnSettled) can record it now. Keep handlers idempotent
	// per (network, asset, payer, nonce).
	Replay bool
}

// StatusCoder is implemented by errors that choose their HTTP status; the
// default Config.WriteError uses it for Preflight errors.
type StatusCoder interface {
	HTTPStatus() int
}

// Config configures a Middleware. Facilitator and Terms are required.
type Config struct {
	// Facilitator verifies (after the local checks) and settles payments.
	Facilitator Facilitator
	// NonceStore guards against replay; nil means a MemoryNonceStore (one
	// process only: several instances need a shared store).
	NonceStore NonceStore
	// Verifier runs the local checks before the facilitator's /verify; nil
	// means a Verifier with Now.
	Verifier *Verifier
	// Terms returns the payment terms of a request, or false when the
	// request is not paid (it then goes straight to the handler).
	Terms func(r *http.Request) (Terms, bool)
	// Preflight, when set, runs on every paid request before anything
	// payment-related (so before any 402): input validation, availability
	// of an upstream. A non-nil error stops the request and WriteError
	// answers it. It may read r.Body; the handler gets the body again.
	Preflight func(r *http.Request) error
	// WriteError answers a Preflight error. Nil means an RFC 9457
	// problem+json whose status is the error's HTTPStatus() (StatusCoder)
	// or 400, and whose detail is the error text.
	WriteError func(w http.ResponseWriter, r *http.Request, err error)
	// OnSettled, when set, is called once per settled payment, after the
	// settlement is recorded and before the answer is written, with a
	// context that the client's disconnection does not cancel; and again,
	// with Replay set, each time the recorded answer is replayed (so a
	// crash between recording and OnSettled loses nothing).
	OnSettled func(ctx context.Context, ev SettledEvent)
	// Logger receives one record per payment decision (never a signature or
	// a key); nil means slog.Default().
	Logger *slog.Logger
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// PublicBaseURL ("https://api.example.com") is the scheme and host of
	// resource URLs; empty means the request's own (http or https, Host).
	PublicBaseURL string
	// VerifyTimeout and SettleTimeout bound the facilitator calls; zero
	// means DefaultVerifyTimeout / DefaultSettleTimeout.
	VerifyTimeout time.Duration
	SettleTimeout time.Duration
	// MaxRequestBytes bounds the request body (413 past it); zero means
	// DefaultMaxRequestBytes.
	MaxRequestBytes int64
	// MaxResponseBytes bounds the buffered handler response (500 and no
	// settlement past it); zero means DefaultMaxResponseBytes.
	MaxResponseBytes int64
	// RequestID returns the request's id for logs and SettledEvent; nil
	// means the X-Request-Id header.
	RequestID func(r *http.Request) string
}

// Middleware charges for HTTP handlers with x402 (v2, and v1 clients):
// see Wrap for the pipeline. Safe for concurrent use.
type Middleware struct {
	cfg     Config
	baseURL string
}

// NewMiddleware checks cfg and fills in the defaults. The error is a
// *ConfigError.
func NewMiddleware(cfg Config) (*Middleware, error) {
	if cfg.Facilitator == nil {
		return nil, &ConfigError{Field: "Facilitator", Message: "is required"}
	}
	if cfg.Terms == nil {
		return nil, &ConfigError{Field: "Terms", Message: "is required"}
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.NonceStore == nil {
		cfg.NonceStore = NewMemoryNonceStore(cfg.Now)
	}
	if cfg.Verifier == nil {
		cfg.Verifier = &Verifier{Now: cfg.Now}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.WriteError == nil {
		cfg.WriteError = mwDefaultWriteError
	}
	if cfg.RequestID == nil {
		cfg.RequestID = func(r *http.Request) string { return r.Header.Get("X-Request-Id") }
	}
	if cfg.VerifyTimeout < 0 || cfg.SettleTimeout < 0 || cfg.MaxRequestBytes < 0 || cfg.MaxResponseBytes < 0 {
		return nil, &ConfigError{Field: "Timeouts/Limits", Message: "must not be negative"}
	}
	if cfg.VerifyTimeout == 0 {
		cfg.VerifyTimeout = DefaultVerifyTimeout
	}
	if cfg.SettleTimeout == 0 {
		cfg.SettleTimeout = DefaultSettleTimeout
	}
	if cfg.MaxRequestBytes == 0 {
		cfg.MaxRequestBytes = DefaultMaxRequestBytes
	}
	if cfg.MaxResponseBytes == 0 {
		cfg.MaxResponseBytes = DefaultMaxResponseBytes
	}
	m := &Middleware{cfg: cfg}
	if cfg.PublicBaseURL != "" {
		u, err := url.Parse(cfg.PublicBaseURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
			return nil, &ConfigError{Field: "PublicBaseURL", Message: "must be an absolute http(s) URL without query, fragment or credentials"}
		}
		m.baseURL = strings.TrimRight(u.Scheme+"://"+u.Host+u.EscapedPath(), "/")
	}
	return m, nil
}

// Wrap returns next behind the payment pipeline. OPTIONS requests (CORS
// preflights) and requests whose Terms say they are free go straight to
// next. For a paid request:
//
//  1. The body is read (at most MaxRequestBytes, else 413) and Preflight
//     runs; its error is answered by WriteError (e.g. 400 invalid input, 503
//     upstream down) and no 402 is issued.
//  2. Without PAYMENT-SIGNATURE (v2) or X-PAYMENT (v1): 402 with
//     PAYMENT-REQUIRED (base64 PaymentRequired, error "Payment required")
//     and a JSON body for v1 clients and body-reading agents (see
//     PaymentRequiredBody).
//  3. An undecodable or oversized payment header, or an x402Version other
//     than 1 or 2: 400 problem+json, no PAYMENT-REQUIRED.
//  4. The accepted requirements must match one of the offered ones
//     (scheme, network, amount, maxTimeoutSeconds exactly; asset and payTo
//     case-insensitively; the offered extra a subset of the accepted one),
//     else 402 "No matching payment requirements". A v1 payment matches by
//     scheme and network and is then treated as the v2 payment it is
//     equivalent to (PayloadFromV1): every v2 check applies.
//  5. The Verifier's local checks; a refusal is a 402 whose error is the
//     reason.
//  6. The authorization is reserved in the NonceStore (key NonceKey,
//     request hash RequestHash, expiry validBefore) before anything runs.
//     Already taken: if it is settled for this same request, the recorded
//     answer is replayed with its payment response (no handler, no second
//     settlement); if it is still being processed, 402
//     ReasonPaymentInProgress; otherwise 402 ReasonNonceAlreadyUsed.
//  7. The facilitator's /verify: IsValid false releases the reservation and
//     answers 402 with its reason; an error (no decision) releases it and
//     answers 502 (504 on timeout) ReasonFacilitatorUnavailable.
//  8. The handler runs with a fully buffered response (nothing reaches the
//     client before settlement). Status ≥ 400 (or a panic, or an answer
//     over MaxResponseBytes): the reservation is released, nothing is
//     settled and the handler's answer is passed on unchanged.
//  9. Settlement, with a context the client's disconnection does not
//     cancel. A refusal (success false) answers 402 with a failing payment
//     response and drops the handler's output; the reservation is released
//     only when the refusal is definite (no transaction, not
//     "settlement_pending"), since an ambiguous failure may have reached
//     the chain. A settle error is ambiguous too: 402, reservation kept.
//  10. Success: the answer is recorded (NonceStore.Complete), OnSettled is
//     called, and the handler's status, headers and body go out with
//     PAYMENT-RESPONSE (v2) or X-PAYMENT-RESPONSE (v1).
//
// Every answer of a paid route carries Access-Control-Expose-Headers
// (ExposedHeaders); 402s and payment errors carry Cache-Control: no-store
// and paid answers Cache-Control: private.
func (m *Middleware) Wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodOptions { // CORS preflights never pay
			next.ServeHTTP(w, r)
			return
		}
		terms, ok := m.cfg.Terms(r)
		if !ok {
			next.ServeHTTP(w, r)
			return
		}
		m.serve(w, r, next, terms)
	})
}

// PaymentRequiredBody is the JSON body of the middleware's 402s: the x402 v1
// answer ({x402Version: 1, error, accepts} with v1 requirements), which the
// v1 clients (x402-fetch 1.x) read from the body. v2 clients read the
// PAYMENT-REQUIRED header and ignore the body when the header is present
// (checked in @x402/fetch 2.27). An agent that reads only the body learns
// the same terms in their v1 names and can pay them with X-PAYMENT.
//
// The v2 object is not repeated in the body: it is already in the header,
// and carrying it twice made a 402 half as large again (a cost paid by
// every unpaid request, see BENCHMARKS.md).
type PaymentRequiredBody = PaymentRequiredV1

// mwPaid carries the state of one paid request through the pipeline.
type mwPaid struct {
	r         *http.Request
	terms     Terms
	pr        PaymentRequired // resource URL filled in
	body      []byte
	version   int // 1 or 2: the client's protocol version
	payload   PaymentPayload
	req       PaymentRequirements
	payer     string
	nonce     string
	key       string
	hash      string
	requestID string
	log       *slog.Logger
}

func (m *Middleware) serve(w http.ResponseWriter, r *http.Request, next http.Handler, terms Terms) {
	mwAddExposeHeaders(w.Header())
	p := &mwPaid{r: r, terms: terms, requestID: m.cfg.RequestID(r)}
	if p.terms.Route == "" {
		p.terms.Route = r.Method + " " + r.URL.Path
	}
	p.log = m.cfg.Logger.With("route", p.terms.Route)
	if p.requestID != "" {
		p.log = p.log.With("request_id", p.requestID)
	}

	body, err := mwReadBody(w, r, m.cfg.MaxRequestBytes)
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			mwWriteProblem(w, http.StatusRequestEntityTooLarge, ReasonRequestTooLarge, fmt.Sprintf("the request body is over %d bytes", m.cfg.MaxRequestBytes))
			return
		}
		mwWriteProblem(w, http.StatusBadRequest, "unreadable_body", "the request body could not be read")
		return
	}
	p.body = body
	mwResetBody(r, body)

	if m.cfg.Preflight != nil {
		if err := m.cfg.Preflight(r); err != nil {
			m.cfg.WriteError(w, r, err)
			return
		}
		mwResetBody(r, body)
	}

	p.pr = terms.PaymentRequired
	p.pr.X402Version = Version
	if p.pr.Resource.URL == "" {
		p.pr.Resource.URL = m.resourceURL(r)
	}

	header, version := r.Header.Get(HeaderPaymentSignature), 2
	if header == "" {
		header, version = r.Header.Get(HeaderV1Payment), 1
	}
	if header == "" {
		p.log.Debug("x402: payment required")
		m.write402(w, p.pr, ErrorPaymentRequired)
		return
	}
	if !m.decode(w, p, header, version) {
		return
	}
	if !m.matchAndVerify(w, p) {
		return
	}
	if !m.reserve(w, p) {
		return
	}
	if !m.facilitatorVerify(w, p) {
		return
	}
	rec, ok := m.runHandler(w, p, next)
	if !ok {
		return
	}
	m.settle(w, p, rec)
}

// decode parses the payment header into p.payload; false when it answered.
func (m *Middleware) decode(w http.ResponseWriter, p *mwPaid, header string, headerVersion int) bool {
	var probe struct {
		X402Version *int `json:"x402Version"`
	}
	if err := DecodeHeader(header, &probe); err == nil && probe.X402Version != nil && *probe.X402Version != 1 && *probe.X402Version != 2 {
		p.log.Info("x402: unsupported x402Version", "x402_version", *probe.X402Version)
		mwWriteProblem(w, http.StatusBadRequest, ReasonInvalidX402Version, "x402Version must be 1 or 2")
		return false
	}
	payload, err := DecodePaymentPayload(header)
	if err != nil {
		reason := ReasonInvalidPaymentHeader
		if errors.Is(err, ErrHeaderTooLarge) {
			reason = ReasonPaymentHeaderTooLarge
		}
		p.log.Info("x402: undecodable payment header", "reason", reason, "header_version", headerVersion)
		detail := "the payment header is not base64 of a JSON x402 payment payload"
		var he *HeaderError
		if errors.As(err, &he) {
			detail = "payment header: " + he.Message
		}
		mwWriteProblem(w, http.StatusBadRequest, reason, detail)
		return false
	}
	p.payload = payload
	p.version = payload.X402Version
	return true
}

// matchAndVerify finds the offered requirement the payment accepts and runs
// the local checks; false when it answered.
func (m *Middleware) matchAndVerify(w http.ResponseWriter, p *mwPaid) bool {
	found := false
	if p.version == VersionV1 {
		for _, req := range p.pr.Accepts {
			if v2, ok := PayloadFromV1(p.payload, req); ok {
				p.payload, p.req, found = v2, req, true
				break
			}
		}
	} else {
		p.req, found = FindMatchingRequirements(p.pr.Accepts, p.payload.Accepted)
	}
	if !found {
		p.log.Info("x402: no matching payment requirements", "x402_version", p.version, "network", mwTrunc(p.payload.Accepted.Network, 40))
		m.write402(w, p.pr, ErrorNoMatchingRequirements)
		return false
	}
	p.log = p.log.With("network", p.req.Network, "x402_version", p.version)
	payer, err := m.cfg.Verifier.Verify(p.payload, p.req)
	if payer != "" {
		p.payer = payer
		p.log = p.log.With("payer", mwTrunc(payer, 42))
	}
	if err != nil {
		reason := ReasonUnexpectedVerifyError
		var ve *VerifyError
		if errors.As(err, &ve) {
			reason = ve.Reason
		}
		p.log.Info("x402: payment refused by local checks", "reason", reason)
		m.write402(w, p.pr, reason)
		return false
	}
	return true
}

// reserve claims the authorization's nonce; false when it answered (which
// includes the idempotent replay of a settled answer).
func (m *Middleware) reserve(w http.ResponseWriter, p *mwPaid) bool {
	ep, err := ParseExactEVMPayload(p.payload.Payload)
	if err != nil { // cannot happen after Verify; refuse rather than guess
		m.write402(w, p.pr, ReasonInvalidPayload)
		return false
	}
	p.nonce = ep.Authorization.Nonce
	p.key = NonceKey(p.req.Network, p.req.Asset, ep.Authorization.From, ep.Authorization.Nonce)
	p.hash = RequestHash(p.r, p.body)
	rec := NonceRecord{
		Key:         p.key,
		RequestHash: p.hash,
		State:       NonceReserved,
		ExpiresAt:   mwUnixTime(ep.Authorization.ValidBefore),
	}
	existing, err := m.cfg.NonceStore.Reserve(p.r.Context(), rec)
	switch {
	case err == nil:
		return true
	case errors.Is(err, ErrNonceTaken):
		if existing.State == NonceSettled && existing.Response != nil && existing.RequestHash == p.hash {
			p.log.Info("x402: replaying the answer of a settled payment")
			m.announce(p, existing.Response.Settlement, existing.Response.Status, true)
			m.writeRecorded(w, p.version, *existing.Response)
			return false
		}
		reason := ReasonNonceAlreadyUsed
		if existing.State == NonceReserved {
			reason = ReasonPaymentInProgress
		}
		p.log.Info("x402: payment authorization already used", "reason", reason)
		m.write402(w, p.pr, reason)
		return false
	default:
		p.log.Error("x402: nonce store failed", "error", err)
		mwWriteProblem(w, http.StatusServiceUnavailable, ReasonNonceStoreUnavailable, "the payment replay guard is unavailable; try again later")
		return false
	}
}

// release frees the reservation, logging a failure.
func (m *Middleware) release(p *mwPaid) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(p.r.Context()), m.cfg.VerifyTimeout)
	defer cancel()
	if err := m.cfg.NonceStore.Release(ctx, p.key); err != nil {
		p.log.Error("x402: releasing the payment reservation failed", "error", err)
	}
}

// facilitatorVerify asks the facilitator; false when it answered.
func (m *Middleware) facilitatorVerify(w http.ResponseWriter, p *mwPaid) bool {
	ctx, cancel := context.WithTimeout(p.r.Context(), m.cfg.VerifyTimeout)
	defer cancel()
	vr, err := m.cfg.Facilitator.Verify(ctx, p.payload, p.req)
	if err != nil {
		m.release(p)
		status := http.StatusBadGateway
		if errors.Is(err, context.DeadlineExceeded) {
			status = http.StatusGatewayTimeout
		}
		p.log.Warn("x402: facilitator verify failed", "error", err)
		mwWriteProblem(w, status, ReasonFacilitatorUnavailable, "the payment facilitator could not verify the payment; nothing was charged, try again later")
		return false
	}
	if !vr.IsValid {
		m.release(p)
		reason := vr.InvalidReason
		if reason == "" {
			reason = ReasonUnexpectedVerifyError
		}
		p.log.Info("x402: payment refused by the facilitator", "reason", mwTrunc(reason, 80))
		m.write402(w, p.pr, reason)
		return false
	}
	return true
}

// runHandler runs next into a buffer; false when it answered (handler
// failure: the reservation is released and nothing is settled).
func (m *Middleware) runHandler(w http.ResponseWriter, p *mwPaid, next http.Handler) (*mwRecorder, bool) {
	rec := newMWRecorder(m.cfg.MaxResponseBytes)
	func() {
		defer func() {
			if v := recover(); v != nil {
				m.release(p)
				panic(v)
			}
		}()
		next.ServeHTTP(rec, p.r)
	}()
	if rec.overflow {
		m.release(p)
		p.log.Error("x402: paid handler answer too large; not settled", "limit", m.cfg.MaxResponseBytes)
		mwWriteProblem(w, http.StatusInternalServerError, ReasonResponseTooLarge, "the answer is too large; nothing was charged")
		return nil, false
	}
	if rec.status >= 400 {
		m.release(p)
		p.log.Info("x402: paid handler failed; not settled", "status", rec.status)
		mwCopyHeader(w.Header(), rec.header)
		mwAddExposeHeaders(w.Header())
		w.WriteHeader(rec.status)
		_, _ = w.Write(rec.body.Bytes())
		return nil, false
	}
	return rec, true
}

// settle settles the payment and writes the answer.
func (m *Middleware) settle(w http.ResponseWriter, p *mwPaid, rec *mwRecorder) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(p.r.Context()), m.cfg.SettleTimeout)
	defer cancel()
	sr, err := m.cfg.Facilitator.Settle(ctx, p.payload, p.req)
	if err != nil {
		// No decision: the transaction may have been broadcast. Keep the
		// reservation (it expires with the authorization).
		p.log.Error("x402: settlement failed; reservation kept", "error", err)
		m.writeSettleFailure(w, p, SettleResponse{ErrorReason: ReasonUnexpectedSettleError})
		return
	}
	if !sr.Success {
		definite := sr.Transaction == "" && sr.ErrorReason != "settlement_pending"
		if definite {
			m.release(p)
		}
		p.log.Warn("x402: settlement refused", "reason", mwTrunc(sr.ErrorReason, 80), "released", definite)
		m.writeSettleFailure(w, p, sr)
		return
	}
	if sr.Network == "" {
		sr.Network = p.req.Network
	}
	if sr.Payer == "" {
		sr.Payer = p.payer
	}
	if sr.Payer != "" {
		p.payer = sr.Payer
	}
	header := rec.header.Clone()
	if header == nil {
		header = http.Header{}
	}
	recorded := RecordedResponse{Status: rec.status, Header: header, Body: rec.body.Bytes(), Settlement: sr}
	if err := m.cfg.NonceStore.Complete(ctx, p.key, recorded); err != nil {
		p.log.Error("x402: recording the settled answer failed (a retry will not be replayed)", "error", err)
	}
	p.log.Info("x402: payment settled", "transaction", mwTrunc(sr.Transaction, 100), "amount", p.req.Amount)
	m.announce(p, sr, rec.status, false)
	m.writeRecorded(w, p.version, recorded)
}

// announce calls OnSettled for p's settlement sr. A replay announces the
// recorded settlement again: the process may have died between recording
// the answer and OnSettled's ledger append, and the client's retry is then
// the only chance to record it; consumers keep appends idempotent per nonce.
func (m *Middleware) announce(p *mwPaid, sr SettleResponse, status int, replay bool) {
	if m.cfg.OnSettled == nil {
		return
	}
	amount := sr.Amount
	if amount == "" {
		amount = p.req.Amount
	}
	payer := p.payer
	if payer == "" {
		payer = sr.Payer
	}
	m.cfg.OnSettled(context.WithoutCancel(p.r.Context()), SettledEvent{
		RequestID:   p.requestID,
		Route:       p.terms.Route,
		Method:      p.r.Method,
		Path:        p.r.URL.Path,
		Payer:       payer,
		Amount:      amount,
		Asset:       p.req.Asset,
		Network:     p.req.Network,
		PayTo:       p.req.PayTo,
		Transaction: sr.Transaction,
		Nonce:       p.nonce,
		X402Version: p.version,
		Status:      status,
		SettledAt:   m.cfg.Now(),
		Replay:      replay,
	})
}

// writeSettleFailure writes the 402 of a failed settlement: a failing
// payment response, no PAYMENT-REQUIRED, the handler's output dropped.
func (m *Middleware) writeSettleFailure(w http.ResponseWriter, p *mwPaid, sr SettleResponse) {
	if sr.ErrorReason == "" {
		sr.ErrorReason = ReasonUnexpectedSettleError
	}
	out := SettleResponse{
		Success:      false,
		ErrorReason:  sr.ErrorReason,
		ErrorMessage: sr.ErrorMessage,
		Transaction:  "",
		Network:      p.req.Network,
		Payer:        p.payer,
	}
	m.setPaymentResponse(w.Header(), p.version, out)
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusPaymentRequired)
	_ = json.NewEncoder(w).Encode(map[string]string{
		"error":   out.ErrorReason,
		"message": "the payment could not be settled; the answer was withheld",
	})
}

// writeRecorded writes a paid answer with its payment response header.
func (m *Middleware) writeRecorded(w http.ResponseWriter, version int, rr RecordedResponse) {
	h := w.Header()
	mwCopyHeader(h, rr.Header)
	mwAddExposeHeaders(h)
	mwPrivateCache(h)
	m.setPaymentResponse(h, version, rr.Settlement)
	status := rr.Status
	if status == 0 {
		status = http.StatusOK
	}
	w.WriteHeader(status)
	_, _ = w.Write(rr.Body)
}

// setPaymentResponse sets PAYMENT-RESPONSE (v2) or X-PAYMENT-RESPONSE (v1,
// network by its v1 name).
func (m *Middleware) setPaymentResponse(h http.Header, version int, sr SettleResponse) {
	name := HeaderPaymentResponse
	if version == VersionV1 {
		name, sr = HeaderV1PaymentResponse, SettleResponseToV1(sr)
	}
	v, err := EncodeHeader(sr)
	if err != nil { // a SettleResponse always encodes; keep the answer going
		m.cfg.Logger.Error("x402: encoding the payment response failed", "error", err)
		return
	}
	h.Set(name, v)
}

// write402 answers 402 with PAYMENT-REQUIRED and the PaymentRequiredBody.
func (m *Middleware) write402(w http.ResponseWriter, pr PaymentRequired, reason string) {
	pr.Error = reason
	h := w.Header()
	if v, err := EncodeHeader(pr); err == nil {
		h.Set(HeaderPaymentRequired, v)
	} else {
		m.cfg.Logger.Error("x402: encoding PAYMENT-REQUIRED failed", "error", err)
	}
	b, err := json.Marshal(PaymentRequiredToV1(pr))
	if err != nil {
		m.cfg.Logger.Error("x402: encoding the 402 body failed", "error", err)
		b = []byte("{}")
	}
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusPaymentRequired)
	_, _ = w.Write(append(b, '\n'))
}

// resourceURL is the full URL of the request, on PublicBaseURL when set.
func (m *Middleware) resourceURL(r *http.Request) string {
	if m.baseURL != "" {
		return m.baseURL + r.URL.RequestURI()
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return scheme + "://" + r.Host + r.URL.RequestURI()
}

// FindMatchingRequirements returns the first offered requirement that the
// accepted one (a payment's "accepted") matches: scheme, network, amount
// and maxTimeoutSeconds equal, asset and payTo equal case-insensitively,
// and every key of the offered extra present in the accepted extra with an
// equal JSON value (the client may add keys, not change or drop them).
func FindMatchingRequirements(offered []PaymentRequirements, accepted PaymentRequirements) (PaymentRequirements, bool) {
	for _, o := range offered {
		if o.Scheme == accepted.Scheme && o.Network == accepted.Network && o.Amount == accepted.Amount &&
			o.MaxTimeoutSeconds == accepted.MaxTimeoutSeconds &&
			strings.EqualFold(o.Asset, accepted.Asset) && strings.EqualFold(o.PayTo, accepted.PayTo) &&
			mwExtraSubset(o.Extra, accepted.Extra) {
			return o, true
		}
	}
	return PaymentRequirements{}, false
}

func mwExtraSubset(sub, super map[string]any) bool {
	for k, v := range sub {
		w, ok := super[k]
		if !ok {
			return false
		}
		a, err1 := json.Marshal(v)
		b, err2 := json.Marshal(w)
		if err1 != nil || err2 != nil || !bytes.Equal(a, b) {
			return false
		}
	}
	return true
}

// RequestHash identifies the request a payment pays for: hex SHA-256 over
// the method, the path, the query with its keys sorted (values keep their
// order) and the SHA-256 of the body. Headers are not part of it.
func RequestHash(r *http.Request, body []byte) string {
	query := r.URL.RawQuery
	if q, err := url.ParseQuery(query); err == nil {
		query = q.Encode() // sorted by key
	}
	bh := sha256.Sum256(body)
	h := sha256.New()
	for _, part := range []string{r.Method, r.URL.Path, query, hex.EncodeToString(bh[:])} {
		h.Write([]byte(strconv.Itoa(len(part))))
		h.Write([]byte{':'})
		h.Write([]byte(part))
	}
	return hex.EncodeToString(h.Sum(nil))
}

// mwUnixTime turns validBefore (decimal unix seconds) into the record's
// expiry: the record lives as long as the authorization could be presented
// again (values past the year 9999 are capped there). The verifier has
// already refused an authorization expiring within seconds.
func mwUnixTime(s string) time.Time {
	const maxUnix = 253402300799 // 9999-12-31T23:59:59Z
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil || v > maxUnix {
		v = maxUnix
	}
	return time.Unix(v, 0)
}

// mwReadBody reads the whole request body, bounded.
func mwReadBody(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, error) {
	if r.Body == nil || r.Body == http.NoBody {
		return nil, nil
	}
	defer r.Body.Close()
	return io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
}

// mwResetBody gives r a fresh reader over body.
func mwResetBody(r *http.Request, body []byte) {
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	r.ContentLength = int64(len(body))
}

// mwAddExposeHeaders adds the payment headers to
// Access-Control-Expose-Headers, keeping names already listed.
func mwAddExposeHeaders(h http.Header) {
	const key = "Access-Control-Expose-Headers"
	have := map[string]bool{}
	var names []string
	for _, v := range h.Values(key) {
		for _, n := range strings.Split(v, ",") {
			n = strings.TrimSpace(n)
			if n != "" && !have[strings.ToLower(n)] {
				have[strings.ToLower(n)] = true
				names = append(names, n)
			}
		}
	}
	for _, n := range strings.Split(ExposedHeaders, ", ") {
		if !have[strings.ToLower(n)] {
			names = append(names, n)
		}
	}
	h.Set(key, strings.Join(names, ", "))
}

// mwPrivateCache makes sure a paid answer is not stored by shared caches.
func mwPrivateCache(h http.Header) {
	cc := h.Get("Cache-Control")
	lc := strings.ToLower(cc)
	switch {
	case cc == "":
		h.Set("Cache-Control", "private")
	case !strings.Contains(lc, "private") && !strings.Contains(lc, "no-store"):
		h.Set("Cache-Control", "private, "+cc)
	}
}

// mwCopyHeader copies src into dst, replacing dst's values of the same keys.
func mwCopyHeader(dst, src http.Header) {
	for k, v := range src {
		dst[k] = append([]string(nil), v...)
	}
}

// mwProblem is an RFC 9457 problem with the payment reason.
type mwProblem struct {
	Type   string `json:"type"`
	Title  string `json:"title"`
	Status int    `json:"status"`
	Detail string `json:"detail,omitempty"`
	Reason string `json:"reason,omitempty"`
}

// mwWriteProblem writes an application/problem+json answer.
func mwWriteProblem(w http.ResponseWriter, status int, reason, detail string) {
	b, _ := json.Marshal(mwProblem{Type: "about:blank", Title: http.StatusText(status), Status: status, Detail: detail, Reason: reason})
	h := w.Header()
	h.Set("Content-Type", "application/problem+json")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}

// mwDefaultWriteError answers a Preflight error as problem+json.
func mwDefaultWriteError(w http.ResponseWriter, _ *http.Request, err error) {
	status := http.StatusBadRequest
	var sc StatusCoder
	if errors.As(err, &sc) && sc.HTTPStatus() >= 400 && sc.HTTPStatus() <= 599 {
		status = sc.HTTPStatus()
	}
	mwWriteProblem(w, status, "", mwTrunc(err.Error(), 500))
}

// mwRecorder buffers a handler's answer: status, headers and body (bounded).
type mwRecorder struct {
	header   http.Header
	body     bytes.Buffer
	status   int
	limit    int64
	overflow bool
	wrote    bool
}

func newMWRecorder(limit int64) *mwRecorder {
	return &mwRecorder{header: http.Header{}, limit: limit, status: http.StatusOK}
}

// errMWResponseTooLarge is returned by mwRecorder.Write past the limit.
var errMWResponseTooLarge = errors.New("x402: paid answer over the response size limit")

func (rw *mwRecorder) Header() http.Header { return rw.header }

func (rw *mwRecorder) WriteHeader(status int) {
	if rw.wrote || status < 200 { // informational answers are not buffered
		return
	}
	rw.wrote = true
	rw.status = status
}

func (rw *mwRecorder) Write(b []byte) (int, error) {
	if !rw.wrote {
		rw.WriteHeader(http.StatusOK)
	}
	if rw.overflow || int64(rw.body.Len())+int64(len(b)) > rw.limit {
		rw.overflow = true
		return 0, errMWResponseTooLarge
	}
	return rw.body.Write(b)
}

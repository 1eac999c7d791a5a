// Package nethttp binds the x402 payment engine (x402/engine) to net/http:
// a middleware that charges for handlers with x402 v2 (and v1 clients). It
// holds no payment logic of its own: it reads the request, asks the engine,
// and maps the engine's Outcome to status codes, headers and bodies.
//
// The pipeline of a paid request (nobody pays for a request that cannot
// succeed):
//
//  1. HEAD never pays: it is answered as the unpaid GET would be, without a
//     body (a HEAD never runs the handler nor settles).
//  2. A payment header (PAYMENT-SIGNATURE, or X-PAYMENT from v1 clients) is
//     decoded first: undecodable or oversized → 400. A request without one
//     passes Config.AdmitUnpaid, a request with one Config.AdmitPayment
//     (429 with Retry-After when refused).
//  3. The body is read within the body memory budget (the binding's own,
//     or Config.Bodies shared with the server's other routes; 503 with
//     Retry-After when it stays exhausted) and the request limit (413), and
//     Config.Preflight validates the input (its error is answered by
//     Config.WriteError: 400, 503, ...) — before any 402.
//  4. Without payment: 402 with the offer, encoded once per offer.
//  5. With payment: the engine verifies, reserves, runs the handler into a
//     buffer (nothing reaches the client before settlement), journals the
//     answer, settles and journals the settlement; the answer goes out with
//     PAYMENT-RESPONSE (v2) or X-PAYMENT-RESPONSE (v1). A handler answer
//     with status ≥ 400 settles nothing and is passed on unchanged. A payer
//     whose paid calls keep running for nothing, or who has too many
//     running (the engine's payer budget, engine.Config.PayerBurst), gets
//     429 with Retry-After before the handler runs again.
//
// What the engine needs from its owner: a durable journal
// (engine.Config.Journal, e.g. package store) for a payer's answer and the
// ledger to survive a crash, and engine.Engine.Run running while the server
// serves (recovery of payments interrupted by a crash or a lost settlement
// answer), with its payment schemes (engine.Config.Schemes; for exact,
// x402/exact/server: its SkipFacilitatorVerify only for a facilitator
// whose verify adds nothing to the local checks (the local one), and its
// Deduplicates only for one that returns the original result of a
// settlement presented again: svc's local and on-chain facilitators).
// Package paywall does all of it in one call from a route table.
package nethttp

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
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/semaphore"

	"github.com/seed1284c1d2/svc/x402"
	"github.com/seed1284c1d2/svc/x402/engine"
	"github.com/seed1284c1d2/svc/x402/internal/clip"
)

// Defaults of Config.
const (
	// DefaultMaxRequestBytes bounds the body of a paid route (2 MiB).
	DefaultMaxRequestBytes = 2 << 20
	// DefaultMaxResponseBytes bounds a paid handler's buffered answer
	// (8 MiB); past it the call fails and nothing is settled.
	DefaultMaxResponseBytes = 8 << 20
	// DefaultBodyMemory bounds the request bodies held at once by all paid
	// routes of a Middleware (16 MiB).
	DefaultBodyMemory = 16 << 20
	// DefaultBodyWait is how long a request waits for body memory before
	// it is answered 503.
	DefaultBodyWait = 2 * time.Second
)

// Reasons of the binding's own problem answers (Problem.Reason).
const (
	ReasonInvalidPaymentHeader  = "invalid_payment_header"
	ReasonPaymentHeaderTooLarge = "payment_header_too_large"
	ReasonRequestTooLarge       = "request_too_large"
	ReasonResponseTooLarge      = "response_too_large"
	ReasonUnreadableBody        = "unreadable_body"
	ReasonBusy                  = "server_busy"
	ReasonRateLimited           = "rate_limited"
)

// ExposedHeaders is added to Access-Control-Expose-Headers on every answer
// of a paid route, so that browser clients can read the payment headers.
const ExposedHeaders = x402.ResponseHeaders + ", Retry-After"

// Problem is an error answer of the binding, written by Config.WriteProblem.
type Problem struct {
	Status     int
	Reason     string // machine-readable (x402 reason strings where one exists)
	Detail     string // for people; never echoes a secret
	RetryAfter time.Duration
}

// Config configures a Middleware. Engine and Offer are required.
type Config struct {
	Engine *engine.Engine
	// Offer returns the offer of a request, or false when it is free (it
	// then goes straight to the handler).
	Offer func(r *http.Request) (*engine.Offer, bool)
	// Preflight validates a paid request before anything payment-related:
	// its error is answered by WriteError and no 402 is issued. It may read
	// r.Body; the handler gets the body again.
	Preflight func(r *http.Request) error
	// WriteError answers a Preflight error; nil means a problem whose status
	// is the error's HTTPStatus() (when it has one) or 400.
	WriteError func(w http.ResponseWriter, r *http.Request, err error)
	// WriteProblem writes the binding's own error answers; nil means an RFC
	// 9457 problem+json with the reason.
	WriteProblem func(w http.ResponseWriter, r *http.Request, p Problem)
	// AdmitUnpaid, when set, is asked before a request without payment is
	// read: false answers 429 with Retry-After.
	AdmitUnpaid func(r *http.Request) (ok bool, retryAfter time.Duration)
	// AdmitPayment, when set, is asked before a request with a payment is
	// read: false answers 429 with Retry-After. PaymentRefused, when set, is
	// told of each request whose payment was refused. Together they slow
	// down a client whose payments keep being refused (each costs a
	// verification, and perhaps the facilitator's) without ever slowing one
	// whose payments are good.
	AdmitPayment   func(r *http.Request) (ok bool, retryAfter time.Duration)
	PaymentRefused func(r *http.Request)
	// PublicBaseURL ("https://api.example.com") fills an offer's empty
	// resource URL; empty means the request's own scheme and host.
	PublicBaseURL string
	// Transport names the transport in the journal; empty means "http".
	Transport string
	// MaxRequestBytes, MaxResponseBytes and BodyMemory: see the Default*
	// constants; zero means the default. BodyWait likewise.
	MaxRequestBytes  int64
	MaxResponseBytes int64
	BodyMemory       int64
	BodyWait         time.Duration
	// Bodies, when set, reads the request bodies in place of the binding's
	// own budget (BodyMemory and BodyWait are then unused): a server whose
	// routes share one memory budget for bodies passes it here. A body over
	// MaxRequestBytes is answered 413; any other error of Bodies by
	// WriteError.
	Bodies BodyReader
	// RequestID and RefCode read a request's id and referral code for the
	// journal; nil means X-Request-Id and none.
	RequestID func(r *http.Request) string
	RefCode   func(r *http.Request) string
	// Fingerprint identifies what a request asks for; nil means
	// RequestHash.
	Fingerprint func(r *http.Request, body []byte) string
	// Logger; nil means slog.Default().
	Logger *slog.Logger
}

// BodyReader reads a request's whole body, at most limit bytes (past it an
// *http.MaxBytesError), within a memory budget; release gives the memory
// back once the request is done with the body.
type BodyReader interface {
	ReadBody(w http.ResponseWriter, r *http.Request, limit int64) (body []byte, release func(), err error)
}

// Middleware charges for HTTP handlers through the engine. Safe for
// concurrent use.
type Middleware struct {
	cfg     Config
	baseURL string
	mem     *semaphore.Weighted
	offers  sync.Map // *engine.Offer → *encodedOffer
}

// encodedOffer is an offer's 402, encoded once.
type encodedOffer struct {
	header []string // PAYMENT-REQUIRED value
	body   []byte   // the v1 JSON body
	length []string // Content-Length value
}

// New checks cfg and fills in the defaults.
func New(cfg Config) (*Middleware, error) {
	if cfg.Engine == nil || cfg.Offer == nil {
		return nil, errors.New("nethttp: Config.Engine and Config.Offer are required")
	}
	if cfg.MaxRequestBytes < 0 || cfg.MaxResponseBytes < 0 || cfg.BodyMemory < 0 || cfg.BodyWait < 0 {
		return nil, errors.New("nethttp: limits must not be negative")
	}
	if cfg.MaxRequestBytes == 0 {
		cfg.MaxRequestBytes = DefaultMaxRequestBytes
	}
	if cfg.MaxResponseBytes == 0 {
		cfg.MaxResponseBytes = DefaultMaxResponseBytes
	}
	if cfg.BodyMemory == 0 {
		cfg.BodyMemory = DefaultBodyMemory
	}
	if cfg.BodyMemory < cfg.MaxRequestBytes {
		return nil, errors.New("nethttp: BodyMemory must hold at least one request of MaxRequestBytes")
	}
	if cfg.BodyWait == 0 {
		cfg.BodyWait = DefaultBodyWait
	}
	if cfg.Transport == "" {
		cfg.Transport = "http"
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.WriteProblem == nil {
		cfg.WriteProblem = defaultWriteProblem
	}
	if cfg.WriteError == nil {
		cfg.WriteError = func(w http.ResponseWriter, r *http.Request, err error) {
			status := http.StatusBadRequest
			var sc interface{ HTTPStatus() int }
			if errors.As(err, &sc) && sc.HTTPStatus() >= 400 && sc.HTTPStatus() <= 599 {
				status = sc.HTTPStatus()
			}
			cfg.WriteProblem(w, r, Problem{Status: status, Detail: clip.Bytes(err.Error(), 500)})
		}
	}
	if cfg.RequestID == nil {
		cfg.RequestID = func(r *http.Request) string { return r.Header.Get("X-Request-Id") }
	}
	if cfg.RefCode == nil {
		cfg.RefCode = func(*http.Request) string { return "" }
	}
	if cfg.Fingerprint == nil {
		cfg.Fingerprint = RequestHash
	}
	m := &Middleware{cfg: cfg, mem: semaphore.NewWeighted(cfg.BodyMemory)}
	if cfg.PublicBaseURL != "" {
		u, err := url.Parse(cfg.PublicBaseURL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
			return nil, errors.New("nethttp: PublicBaseURL must be an absolute http(s) URL without query, fragment or credentials")
		}
		m.baseURL = strings.TrimRight(u.Scheme+"://"+u.Host+u.EscapedPath(), "/")
	}
	return m, nil
}

// Wrap returns next behind the payment pipeline (see the package doc).
// OPTIONS requests and requests without an offer go straight to next.
func (m *Middleware) Wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodOptions {
			next.ServeHTTP(w, r)
			return
		}
		offer, ok := m.cfg.Offer(r)
		if !ok {
			next.ServeHTTP(w, r)
			return
		}
		m.serve(w, r, next, offer)
	})
}

func (m *Middleware) serve(w http.ResponseWriter, r *http.Request, next http.Handler, offer *engine.Offer) {
	addExposeHeaders(w.Header())
	var payment *x402.PaymentPayload
	if r.Method != http.MethodHead {
		header := r.Header.Get(x402.HeaderPaymentSignature)
		if header == "" {
			header = r.Header.Get(x402.HeaderV1Payment)
		}
		if header != "" {
			p, prob := decodePayment(header)
			if prob != nil {
				m.cfg.Logger.Info("x402: undecodable payment header", "reason", prob.Reason, "path", r.URL.Path)
				m.cfg.WriteProblem(w, r, *prob)
				return
			}
			payment = &p
		}
	}
	if payment == nil && m.cfg.AdmitUnpaid != nil {
		if ok, after := m.cfg.AdmitUnpaid(r); !ok {
			m.cfg.WriteProblem(w, r, Problem{Status: http.StatusTooManyRequests, Reason: ReasonRateLimited,
				Detail: "too many requests without payment; slow down", RetryAfter: after})
			return
		}
	}
	if payment != nil && m.cfg.AdmitPayment != nil {
		if ok, after := m.cfg.AdmitPayment(r); !ok {
			m.cfg.WriteProblem(w, r, Problem{Status: http.StatusTooManyRequests, Reason: ReasonRateLimited,
				Detail: "too many refused payments; slow down", RetryAfter: after})
			return
		}
	}

	// The body, within the memory budget shared by every paid request.
	if r.ContentLength > m.cfg.MaxRequestBytes {
		m.writeTooLarge(w, r)
		return
	}
	body, release, err := m.readBody(w, r)
	if err != nil {
		if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
			m.writeTooLarge(w, r)
			return
		}
		if errors.Is(err, errBusy) {
			m.cfg.WriteProblem(w, r, Problem{Status: http.StatusServiceUnavailable, Reason: ReasonBusy,
				Detail: "the server is busy; try again shortly", RetryAfter: time.Second})
			return
		}
		if errors.Is(err, errUnreadable) {
			m.cfg.WriteProblem(w, r, Problem{Status: http.StatusBadRequest, Reason: ReasonUnreadableBody, Detail: "the request body could not be read"})
			return
		}
		m.cfg.WriteError(w, r, err)
		return
	}
	defer release()
	resetBody(r, body)
	if m.cfg.Preflight != nil {
		if err := m.cfg.Preflight(r); err != nil {
			m.cfg.WriteError(w, r, err)
			return
		}
		resetBody(r, body)
	}

	call := engine.Call{Offer: offer, Payment: payment, Transport: m.cfg.Transport}
	if offer.PaymentRequired.Resource.URL == "" {
		pr := offer.PaymentRequired
		pr.Resource.URL = m.resourceURL(r)
		call.PaymentRequired = &pr
	}
	if payment == nil {
		m.writeOffer(w, r, offer, call.PaymentRequired)
		return
	}
	call.Fingerprint = m.cfg.Fingerprint(r, body)
	call.RequestID = m.cfg.RequestID(r)
	call.RefCode = m.cfg.RefCode(r)
	out := m.cfg.Engine.Serve(r.Context(), call, func(ctx context.Context) (engine.Answer, error) {
		return m.runHandler(ctx, r, next)
	})
	if out.Kind == engine.Refused && m.cfg.PaymentRefused != nil {
		m.cfg.PaymentRefused(r)
	}
	m.write(w, r, out)
}

func (m *Middleware) writeTooLarge(w http.ResponseWriter, r *http.Request) {
	m.cfg.WriteProblem(w, r, Problem{Status: http.StatusRequestEntityTooLarge, Reason: ReasonRequestTooLarge,
		Detail: fmt.Sprintf("the request body is over %d bytes", m.cfg.MaxRequestBytes)})
}

// Errors of the binding's own body reading.
var (
	errBusy       = errors.New("nethttp: no memory for the request body")
	errUnreadable = errors.New("nethttp: the request body could not be read")
)

// readBody reads r's body with Config.Bodies, or within the binding's own
// budget: the declared length (or MaxRequestBytes) taken up front.
func (m *Middleware) readBody(w http.ResponseWriter, r *http.Request) ([]byte, func(), error) {
	if m.cfg.Bodies != nil {
		return m.cfg.Bodies.ReadBody(w, r, m.cfg.MaxRequestBytes)
	}
	weight := m.cfg.MaxRequestBytes
	if r.ContentLength >= 0 && r.ContentLength < weight {
		weight = r.ContentLength
	}
	release := func() {}
	if weight > 0 {
		wctx, cancel := context.WithTimeout(r.Context(), m.cfg.BodyWait)
		err := m.mem.Acquire(wctx, weight)
		cancel()
		if err != nil {
			return nil, nil, errBusy
		}
		release = func() { m.mem.Release(weight) }
	}
	body, err := readBody(w, r, m.cfg.MaxRequestBytes)
	if err != nil {
		release()
		if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
			return nil, nil, err
		}
		return nil, nil, errUnreadable
	}
	return body, release, nil
}

// decodePayment decodes a payment header; the problem answers a failure.
func decodePayment(header string) (x402.PaymentPayload, *Problem) {
	var probe struct {
		X402Version *int `json:"x402Version"`
	}
	if err := x402.DecodeHeader(header, &probe); err == nil && probe.X402Version != nil && *probe.X402Version != 1 && *probe.X402Version != 2 {
		return x402.PaymentPayload{}, &Problem{Status: http.StatusBadRequest, Reason: x402.ReasonInvalidX402Version, Detail: "x402Version must be 1 or 2"}
	}
	p, err := x402.DecodePaymentPayload(header)
	if err != nil {
		reason := ReasonInvalidPaymentHeader
		if errors.Is(err, x402.ErrHeaderTooLarge) {
			reason = ReasonPaymentHeaderTooLarge
		}
		detail := "the payment header is not base64 of a JSON x402 payment payload"
		var he *x402.HeaderError
		if errors.As(err, &he) {
			detail = "payment header: " + he.Message
		}
		return x402.PaymentPayload{}, &Problem{Status: http.StatusBadRequest, Reason: reason, Detail: detail}
	}
	return p, nil
}

// handlerFailed carries a paid handler's error answer (status ≥ 400).
type handlerFailed struct{ status int }

func (e *handlerFailed) Error() string {
	return "nethttp: the paid handler answered " + strconv.Itoa(e.status)
}

// Transient reports a 503 (an upstream unavailable after the preflight):
// not the payer's failure, so it does not use up an attempt.
func (e *handlerFailed) Transient() bool { return e.status == http.StatusServiceUnavailable }

// errTooLarge: the handler's answer is over MaxResponseBytes.
var errTooLarge = errors.New("nethttp: the paid answer is over the response size limit")

// runHandler runs next into a buffer.
func (m *Middleware) runHandler(ctx context.Context, r *http.Request, next http.Handler) (engine.Answer, error) {
	rec := &recorder{header: http.Header{}, limit: m.cfg.MaxResponseBytes, status: http.StatusOK}
	next.ServeHTTP(rec, r.WithContext(ctx))
	if rec.overflow {
		m.cfg.Logger.Error("x402: paid answer too large; not settled", "limit", m.cfg.MaxResponseBytes, "path", r.URL.Path)
		return engine.Answer{}, errTooLarge
	}
	ans := engine.Answer{Status: rec.status, Header: rec.header, Body: rec.body.Bytes()}
	if rec.status >= 400 {
		return ans, &handlerFailed{status: rec.status}
	}
	return ans, nil
}

// write maps an outcome to the answer.
func (m *Middleware) write(w http.ResponseWriter, r *http.Request, out engine.Outcome) {
	switch out.Kind {
	case engine.PaymentRequired, engine.Refused:
		m.write402(w, *out.PaymentRequired, 0)
	case engine.InProgress:
		// The same payment is being processed: come back with it later. Not
		// a 402, which x402 clients answer by paying again.
		m.cfg.WriteProblem(w, r, Problem{Status: http.StatusServiceUnavailable, Reason: out.Reason, RetryAfter: out.RetryAfter,
			Detail: "this payment is being processed; send the same request with the same payment again later (do not pay again)"})
	case engine.Unavailable:
		p := Problem{Status: http.StatusServiceUnavailable, Reason: out.Reason, RetryAfter: time.Second,
			Detail: "the payment could not be processed now; nothing was charged, try again later"}
		if out.Reason == engine.ReasonFacilitatorUnavailable {
			p.Status, p.RetryAfter = http.StatusBadGateway, 5*time.Second
			if out.Timeout {
				p.Status = http.StatusGatewayTimeout
			}
			p.Detail = "the payment facilitator could not verify the payment; nothing was charged, try again later"
			// A facilitator that says it is temporarily unable to settle
			// (e.g. its relayer is out of gas) is unavailable, not a bad
			// gateway.
			var u interface{ Unavailable() bool }
			if errors.As(out.Err, &u) && u.Unavailable() {
				p.Status, p.Detail = http.StatusServiceUnavailable, "payments cannot be settled right now; nothing was charged, try again later"
			}
		}
		m.cfg.WriteProblem(w, r, p)
	case engine.RunFailed:
		if errors.Is(out.Err, errTooLarge) {
			m.cfg.WriteProblem(w, r, Problem{Status: http.StatusInternalServerError, Reason: ReasonResponseTooLarge,
				Detail: "the answer is too large; nothing was charged"})
			return
		}
		if out.Answer != nil && out.Answer.Status >= 400 {
			h := w.Header()
			copyHeader(h, out.Answer.Header)
			addExposeHeaders(h)
			w.WriteHeader(out.Answer.Status)
			_, _ = w.Write(out.Answer.Body)
			return
		}
		// A failure of the run itself (a panic): the server's fault, and
		// nothing of it goes to the client.
		m.cfg.Logger.Error("x402: the paid handler failed; not settled", "path", r.URL.Path, "error", out.Err)
		m.cfg.WriteProblem(w, r, Problem{Status: http.StatusInternalServerError, Reason: "internal",
			Detail: "the call failed; nothing was charged"})
	case engine.SettleFailed:
		h := w.Header()
		m.setPaymentResponse(h, out.Version, *out.Settlement)
		h.Set("Content-Type", "application/json")
		h.Set("Cache-Control", "no-store")
		w.WriteHeader(http.StatusPaymentRequired)
		_ = json.NewEncoder(w).Encode(map[string]string{
			"error":   out.Reason,
			"message": "the payment could not be settled; the answer was withheld",
		})
	case engine.Throttled:
		// Not a 402 either: the payment is good and may be sent again.
		m.cfg.WriteProblem(w, r, Problem{Status: http.StatusTooManyRequests, Reason: ReasonRateLimited, RetryAfter: out.RetryAfter,
			Detail: "too many paid calls of this payer ran lately without an answer (timed out or failed), or run now; nothing was run or charged, send the same payment again later"})
	case engine.Pending:
		detail := "the payment is being settled; send the same request with the same payment again to get the answer"
		if out.Reason == engine.ReasonPaymentUnresolved {
			detail = "this payment may have been settled but its outcome is not known yet; it is being reconciled: do not pay again"
		}
		m.cfg.WriteProblem(w, r, Problem{Status: http.StatusServiceUnavailable, Reason: out.Reason, RetryAfter: out.RetryAfter, Detail: detail})
	case engine.Paid, engine.Replayed:
		h := w.Header()
		copyHeader(h, out.Answer.Header)
		addExposeHeaders(h)
		privateCache(h)
		m.setPaymentResponse(h, out.Version, *out.Settlement)
		status := out.Answer.Status
		if status == 0 {
			status = http.StatusOK
		}
		w.WriteHeader(status)
		_, _ = w.Write(out.Answer.Body)
	default:
		m.cfg.WriteProblem(w, r, Problem{Status: http.StatusInternalServerError, Reason: "internal", Detail: "unexpected payment outcome"})
	}
}

// writeOffer writes the 402 of a request without payment: the offer encoded
// once, or per request when its resource URL depends on the request.
func (m *Middleware) writeOffer(w http.ResponseWriter, r *http.Request, offer *engine.Offer, perRequest *x402.PaymentRequired) {
	var eo *encodedOffer
	var err error
	if perRequest != nil {
		pr := *perRequest
		pr.Error = engine.ReasonPaymentRequired
		eo, err = encodeOffer(pr)
	} else if v, ok := m.offers.Load(offer); ok {
		eo = v.(*encodedOffer)
	} else if eo, err = encodeOffer(offer.Required(engine.ReasonPaymentRequired)); err == nil {
		m.offers.Store(offer, eo)
	}
	if err != nil {
		m.cfg.Logger.Error("x402: encoding an offer failed", "resource", offer.Resource, "error", err)
		m.cfg.WriteProblem(w, r, Problem{Status: http.StatusInternalServerError, Reason: "internal", Detail: "the offer could not be encoded"})
		return
	}
	h := w.Header()
	h[x402.CanonicalPaymentRequired] = eo.header
	h["Content-Type"] = jsonType
	h["Cache-Control"] = noStore
	h["Content-Length"] = eo.length
	w.WriteHeader(http.StatusPaymentRequired)
	if r.Method != http.MethodHead {
		_, _ = w.Write(eo.body)
	}
}

// Shared header values (never modified in place).
var (
	jsonType = []string{"application/json"}
	noStore  = []string{"no-store"}
)

// V2Note is the member the 402's JSON body adds to the version 1 offer,
// for a person reading it (with curl, say): where the version 2 offer is.
// The body stays a version 1 document because version 1 clients read the
// offer only there (and some send Accept: application/json, so the Accept
// header cannot tell them apart); version 2 clients read only the
// PAYMENT-REQUIRED header and ignore the body.
const V2Note = "x402 version 2: the offer is in the PAYMENT-REQUIRED header (base64 JSON); this body is the same offer for version 1 clients"

// encodeOffer encodes pr as a 402: header and v1 body (with V2Note).
func encodeOffer(pr x402.PaymentRequired) (*encodedOffer, error) {
	v, err := x402.EncodeHeader(pr)
	if err != nil {
		return nil, err
	}
	b, err := json.Marshal(struct {
		x402.PaymentRequiredV1
		Note string `json:"x402v2"`
	}{x402.PaymentRequiredToV1(pr), V2Note})
	if err != nil {
		return nil, err
	}
	b = append(b, '\n')
	return &encodedOffer{header: []string{v}, body: b, length: []string{strconv.Itoa(len(b))}}, nil
}

// write402 answers 402 with PAYMENT-REQUIRED and the v1 JSON body.
func (m *Middleware) write402(w http.ResponseWriter, pr x402.PaymentRequired, _ time.Duration) {
	eo, err := encodeOffer(pr)
	if err != nil {
		m.cfg.Logger.Error("x402: encoding PAYMENT-REQUIRED failed", "error", err)
		eo = &encodedOffer{body: []byte("{}\n")}
	}
	h := w.Header()
	if eo.header != nil {
		h[x402.CanonicalPaymentRequired] = eo.header
	}
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusPaymentRequired)
	_, _ = w.Write(eo.body)
}

// setPaymentResponse sets PAYMENT-RESPONSE (v2) or X-PAYMENT-RESPONSE (v1).
func (m *Middleware) setPaymentResponse(h http.Header, version int, sr x402.SettleResponse) {
	name := x402.HeaderPaymentResponse
	if version == x402.VersionV1 {
		name, sr = x402.HeaderV1PaymentResponse, x402.SettleResponseToV1(sr)
	}
	v, err := x402.EncodeHeader(sr)
	if err != nil {
		m.cfg.Logger.Error("x402: encoding the payment response failed", "error", err)
		return
	}
	h.Set(name, v)
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

// RequestHash identifies the request a payment pays for: hex SHA-256 over
// the method (HEAD counted as GET), the path, the query with its keys
// sorted (values keep their order) and the SHA-256 of the body — of a JSON
// body (Content-Type application/json or +json) without its insignificant
// white space, so that a client that encodes its request again (a space, a
// trailing newline) is the same request. Headers are not part of it, and
// nor are a JSON body's member order or number spelling: a server that
// decodes its input can fingerprint the decoded value instead
// (Config.Fingerprint).
func RequestHash(r *http.Request, body []byte) string {
	query := r.URL.RawQuery
	if q, err := url.ParseQuery(query); err == nil {
		query = q.Encode()
	}
	method := r.Method
	if method == http.MethodHead {
		method = http.MethodGet
	}
	if len(body) > 0 && isJSON(r.Header.Get("Content-Type")) {
		var compact bytes.Buffer
		compact.Grow(len(body))
		if json.Compact(&compact, body) == nil {
			body = compact.Bytes()
		}
	}
	bh := sha256.Sum256(body)
	h := sha256.New()
	for _, part := range []string{method, r.URL.Path, query, hex.EncodeToString(bh[:])} {
		h.Write([]byte(strconv.Itoa(len(part))))
		h.Write([]byte{':'})
		h.Write([]byte(part))
	}
	return hex.EncodeToString(h.Sum(nil))
}

// isJSON reports whether a Content-Type value is a JSON media type.
func isJSON(contentType string) bool {
	mt, _, err := mime.ParseMediaType(contentType)
	return err == nil && (mt == "application/json" || strings.HasSuffix(mt, "+json"))
}

// readBody reads the whole body, bounded by limit.
func readBody(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, error) {
	if r.Body == nil || r.Body == http.NoBody {
		return nil, nil
	}
	defer r.Body.Close()
	if n := r.ContentLength; n >= 0 && n <= limit {
		buf := bytes.NewBuffer(make([]byte, 0, n+1))
		_, err := buf.ReadFrom(http.MaxBytesReader(w, r.Body, limit))
		return buf.Bytes(), err
	}
	return io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
}

// resetBody gives r a fresh reader over body.
func resetBody(r *http.Request, body []byte) {
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	r.ContentLength = int64(len(body))
}

// addExposeHeaders adds the payment headers to
// Access-Control-Expose-Headers, keeping names already listed.
func addExposeHeaders(h http.Header) {
	const key = "Access-Control-Expose-Headers"
	cur := h.Values(key)
	if len(cur) == 0 {
		h[key] = exposed
		return
	}
	have := map[string]bool{}
	var names []string
	for _, v := range cur {
		for n := range strings.SplitSeq(v, ",") {
			n = strings.TrimSpace(n)
			if n != "" && !have[strings.ToLower(n)] {
				have[strings.ToLower(n)] = true
				names = append(names, n)
			}
		}
	}
	for n := range strings.SplitSeq(ExposedHeaders, ", ") {
		if !have[strings.ToLower(n)] {
			names = append(names, n)
		}
	}
	h.Set(key, strings.Join(names, ", "))
}

var exposed = []string{ExposedHeaders}

// privateCache keeps a paid answer out of shared caches.
func privateCache(h http.Header) {
	cc := h.Get("Cache-Control")
	lc := strings.ToLower(cc)
	switch {
	case cc == "":
		h.Set("Cache-Control", "private")
	case !strings.Contains(lc, "private") && !strings.Contains(lc, "no-store"):
		h.Set("Cache-Control", "private, "+cc)
	}
}

// copyHeader copies src into dst, replacing dst's values of the same keys.
func copyHeader(dst http.Header, src map[string][]string) {
	for k, v := range src {
		dst[k] = append([]string(nil), v...)
	}
}

// seconds formats d as a Retry-After value (at least 1).
func seconds(d time.Duration) string {
	s := int64((d + time.Second - 1) / time.Second)
	if s < 1 {
		s = 1
	}
	return strconv.FormatInt(s, 10)
}

// defaultWriteProblem writes an application/problem+json answer.
func defaultWriteProblem(w http.ResponseWriter, _ *http.Request, p Problem) {
	body := struct {
		Type   string `json:"type"`
		Title  string `json:"title"`
		Status int    `json:"status"`
		Detail string `json:"detail,omitempty"`
		Reason string `json:"reason,omitempty"`
	}{"about:blank", http.StatusText(p.Status), p.Status, p.Detail, p.Reason}
	b, _ := json.Marshal(body)
	h := w.Header()
	h.Set("Content-Type", "application/problem+json")
	h.Set("Cache-Control", "no-store")
	if p.RetryAfter > 0 {
		h.Set("Retry-After", seconds(p.RetryAfter))
	}
	w.WriteHeader(p.Status)
	_, _ = w.Write(append(b, '\n'))
}

// recorder buffers a handler's answer: status, headers and body (bounded).
type recorder struct {
	header   http.Header
	body     bytes.Buffer
	status   int
	limit    int64
	overflow bool
	wrote    bool
}

func (rw *recorder) Header() http.Header { return rw.header }

func (rw *recorder) WriteHeader(status int) {
	if rw.wrote || status < 200 { // informational answers are not buffered
		return
	}
	rw.wrote = true
	rw.status = status
}

func (rw *recorder) Write(b []byte) (int, error) {
	if !rw.wrote {
		rw.WriteHeader(http.StatusOK)
	}
	if rw.overflow || int64(rw.body.Len())+int64(len(b)) > rw.limit {
		rw.overflow = true
		return 0, errTooLarge
	}
	return rw.body.Write(b)
}

package httpserver

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"log/slog"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/seed1284c1d2/svc/discovery/stats"
	"github.com/seed1284c1d2/svc/internal/clip"
	"github.com/seed1284c1d2/svc/wire"
	"github.com/seed1284c1d2/svc/x402"
)

// maxRequestIDLen bounds an accepted incoming request id.
const maxRequestIDLen = 128

// errBodyCap bounds the bytes of an error answer kept to read its reason.
const errBodyCap = 2048

// requestIDs generates process-unique request ids: a random prefix and a
// counter ("3f9a1c2e7b-42").
type requestIDs struct {
	prefix string
	n      atomic.Uint64
}

func newRequestIDs() *requestIDs {
	var b [5]byte
	_, _ = rand.Read(b[:])
	return &requestIDs{prefix: hex.EncodeToString(b[:]) + "-"}
}

func (g *requestIDs) next() string {
	var buf [40]byte
	return string(strconv.AppendUint(append(buf[:0], g.prefix...), g.n.Add(1), 10))
}

// validRequestID accepts ids of 1 to 128 characters from A-Z a-z 0-9 and
// "-_.:", so that a client's id can be echoed and logged safely.
func validRequestID(s string) bool {
	if s == "" || len(s) > maxRequestIDLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.' || c == ':') {
			return false
		}
	}
	return true
}

// RequestIDOf returns the id of a request served by this package's handler
// (the X-Request-Id the server accepted or generated).
func RequestIDOf(r *http.Request) string { return r.Header.Get(wire.HeaderRequestID) }

// canonicalNosniff is X-Content-Type-Options in canonical form
// (textproto.CanonicalMIMEHeaderKey): http.Header.Get would canonicalise it
// on each call.
const canonicalNosniff = "X-Content-Type-Options"

// headerValue is h.Get(key) for a canonical key.
func headerValue(h http.Header, key string) string {
	if v := h[key]; len(v) > 0 {
		return v[0]
	}
	return ""
}

// unpaid reports whether r carries no x402 payment header (v2 or v1).
func unpaid(r *http.Request) bool {
	return headerValue(r.Header, x402.CanonicalPaymentSignature) == "" && headerValue(r.Header, x402.CanonicalV1Payment) == ""
}

// statusWriter records what a request's answer was, for the access log and
// the metrics, and turns the router's plain-text 404 and 405 into problems.
type statusWriter struct {
	http.ResponseWriter
	s *Server
	r *http.Request

	status  int
	bytes   int64
	wrote   bool
	route   *routeMetrics // set by the route's wrapper; nil: no route matched
	reason  string        // error code, when this package wrote the problem
	errBody []byte        // start of an error answer whose reason is unknown
	swallow bool          // the router's own error body is being discarded

	// Backing arrays of the header values observe sets, allocated with
	// the writer rather than one by one.
	idValue      [1]string
	nosniffValue [1]string
}

// Unwrap lets http.ResponseController reach the connection's writer.
func (sw *statusWriter) Unwrap() http.ResponseWriter { return sw.ResponseWriter }

func (sw *statusWriter) WriteHeader(code int) {
	if sw.wrote {
		return
	}
	if code < 200 { // informational answers pass through
		sw.ResponseWriter.WriteHeader(code)
		return
	}
	if sw.route == nil && (code == http.StatusNotFound || code == http.StatusMethodNotAllowed) {
		sw.routerError(code)
		return
	}
	sw.wrote = true
	sw.status = code
	sw.ResponseWriter.WriteHeader(code)
}

func (sw *statusWriter) Write(b []byte) (int, error) {
	if sw.swallow {
		return len(b), nil
	}
	if !sw.wrote {
		sw.WriteHeader(http.StatusOK)
		if sw.swallow {
			return len(b), nil
		}
	}
	if sw.status >= 400 && sw.status != http.StatusPaymentRequired && sw.reason == "" && len(sw.errBody) < errBodyCap {
		n := min(len(b), errBodyCap-len(sw.errBody))
		sw.errBody = append(sw.errBody, b[:n]...)
	}
	n, err := sw.ResponseWriter.Write(b)
	sw.bytes += int64(n)
	return n, err
}

// routerError answers a request no route matched (the router's 404, or its
// 405 with the Allow header it set) with a problem, or with 429 when the
// client is over the free-route rate.
func (sw *statusWriter) routerError(code int) {
	h := sw.ResponseWriter.Header()
	allow := h.Get("Allow")
	for _, k := range []string{"Content-Type", "X-Content-Type-Options", "Content-Length"} {
		h.Del(k)
	}
	sw.swallow = true
	var p Problem
	if ok, wait := sw.s.allowFree(sw.r); !ok {
		sw.s.metrics.rateLimited.Inc()
		h.Del("Allow")
		h.Set("Retry-After", retryAfter(wait))
		p = NewProblem(http.StatusTooManyRequests, CodeRateLimited, "too many requests from this address; retry after "+retryAfter(wait)+" s")
	} else if code == http.StatusMethodNotAllowed {
		p = NewProblem(code, CodeMethodNotAllowed, "method "+clip.Bytes(sw.r.Method, 16)+" is not allowed here; allowed: "+allow)
	} else {
		p = NewProblem(code, CodeNotFound, sw.s.notFoundDetail())
	}
	p.Instance = clip.Bytes(sw.r.URL.Path, 200)
	p.RequestID = RequestIDOf(sw.r)
	b, _ := json.Marshal(p)
	h.Set("Content-Type", wire.ProblemContentType)
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	sw.wrote = true
	sw.status = p.Status
	sw.reason = p.Code
	sw.ResponseWriter.WriteHeader(p.Status)
	n, _ := sw.ResponseWriter.Write(append(b, '\n'))
	sw.bytes += int64(n)
}

// retryAfter renders a wait as whole seconds, at least 1.
func retryAfter(d time.Duration) string {
	s := int64((d + time.Second - 1) / time.Second)
	if s < 1 {
		s = 1
	}
	return strconv.FormatInt(s, 10)
}

// failureReason returns the reason of an error answer ("" for a success or
// for a 402 that simply offers payment).
func (sw *statusWriter) failureReason() string {
	if sw.status < 400 {
		return ""
	}
	if sw.reason != "" {
		return sw.reason
	}
	h := sw.ResponseWriter.Header()
	if sw.status == http.StatusPaymentRequired {
		if v := h.Get(x402.HeaderPaymentRequired); v != "" {
			var pr struct {
				Error string `json:"error"`
			}
			if err := x402.DecodeHeader(v, &pr); err == nil && pr.Error != "" {
				return pr.Error
			}
		}
		if v := h.Get(x402.HeaderPaymentResponse); v != "" {
			if sr, err := x402.DecodeSettleResponse(v); err == nil && sr.ErrorReason != "" {
				return sr.ErrorReason
			}
		}
		return "payment_refused"
	}
	var body struct {
		Code   string `json:"code"`
		Reason string `json:"reason"`
		Error  string `json:"error"`
	}
	if json.Unmarshal(sw.errBody, &body) == nil {
		for _, s := range []string{body.Code, body.Reason, body.Error} {
			if s != "" {
				return s
			}
		}
	}
	return "http_" + strconv.Itoa(sw.status)
}

// offeredPayment reports whether the answer is a 402 offering payment to a
// request that carried none.
func (sw *statusWriter) offeredPayment() bool {
	return sw.status == http.StatusPaymentRequired && unpaid(sw.r)
}

// observe wraps the router: request id, answer recording, metrics and the
// access log.
func (s *Server) observe(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := s.now()
		sw := &statusWriter{ResponseWriter: w, s: s, r: r}
		id := headerValue(r.Header, wire.HeaderRequestID)
		if !validRequestID(id) {
			id = s.ids.next()
			sw.idValue[0] = id
			r.Header[wire.HeaderRequestID] = sw.idValue[:] // r.Header.Set
		} else {
			sw.idValue[0] = id
		}
		// w.Header().Set, without allocating a value slice each.
		sw.nosniffValue[0] = "nosniff"
		h := w.Header()
		h[wire.HeaderRequestID] = sw.idValue[:]
		h[canonicalNosniff] = sw.nosniffValue[:]
		s.inflight.Add(1)
		defer s.inflight.Add(-1)
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				s.log.Error("http: handler panic", "request_id", id, "panic", clip.Bytes(slogValue(v), 300))
				if !sw.wrote {
					WriteProblem(sw, r, NewProblem(http.StatusInternalServerError, CodeInternal, "internal error"))
				}
			}
			s.finish(sw, r, id, start)
		}()
		next.ServeHTTP(sw, r)
		if !sw.wrote && !sw.swallow {
			sw.WriteHeader(http.StatusOK)
		}
	})
}

// finish records a served request in the metrics and the access log.
func (s *Server) finish(sw *statusWriter, r *http.Request, id string, start time.Time) {
	d := s.now().Sub(start)
	if s.cfg.Observer != nil {
		s.cfg.Observer.ObserveServed(r, sw.status, sw.Header())
	}
	rm := sw.route
	if rm == nil {
		rm = s.metrics.route(stats.Unmatched, stats.KindUnmatched)
	}
	rm.observe(r.Method, sw.status, d)
	reason := ""
	if sw.status == http.StatusPaymentRequired && sw.offeredPayment() {
		if rm.paid {
			rm.traffic.PaymentRequired()
		}
	} else if sw.status >= 400 {
		reason = sw.failureReason()
		s.metrics.failure(reason)
	}
	if !s.log.Enabled(r.Context(), slog.LevelInfo) {
		return
	}
	attrs := make([]slog.Attr, 0, 8)
	attrs = append(attrs,
		slog.String("method", stats.MethodLabel(r.Method)),
		slog.String("path", clip.Bytes(r.URL.Path, 200)),
		slog.String("route", rm.label),
		slog.Int("status", sw.status),
		slog.Duration("duration", d),
		slog.Int64("bytes", sw.bytes),
		slog.String("request_id", id),
	)
	if reason != "" {
		attrs = append(attrs, slog.String("reason", sanitizeReason(reason)))
	}
	s.log.LogAttrs(r.Context(), slog.LevelInfo, "http request", attrs...)
}

func slogValue(v any) string {
	switch t := v.(type) {
	case error:
		return t.Error()
	case string:
		return t
	}
	return "panic"
}

// notFoundDetail is the detail of a 404: it points at the catalog listing
// when one is mounted.
func (s *Server) notFoundDetail() string {
	if s.catalogListed.Load() {
		return "no such resource; GET /api/catalog lists the tools"
	}
	return "no such resource"
}

package facilitator

import (
	"bytes"
	"context"
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
	"unicode"

	"github.com/seed1284c1d2/svc/x402"
	"github.com/seed1284c1d2/svc/x402/exact"
	"github.com/seed1284c1d2/svc/x402/internal/clip"
	"github.com/seed1284c1d2/svc/x402/internal/wire"
)

// Facilitator operations, passed to HTTPConfig.AuthHeaders and
// reported in Error.Op.
const (
	OpVerify    = "verify"
	OpSettle    = "settle"
	OpSupported = "supported"
)

// Defaults of HTTPConfig.
const (
	DefaultTimeout           = 30 * time.Second
	DefaultSettleTimeout     = 2 * time.Minute
	DefaultSupportedAttempts = 3
	DefaultSupportedBackoff  = time.Second
	DefaultMaxRetryAfter     = 30 * time.Second
	MaxResponseBytes         = 1 << 20
)

// HTTPConfig configures an HTTP facilitator client (NewHTTP).
type HTTPConfig struct {
	// URL is the facilitator's base URL (http or https); a trailing "/" of
	// its path is trimmed. The endpoints are its path + "/verify",
	// "/settle" and "/supported", each with the URL's query, if any (e.g.
	// an API key). Credentials in the URL (user:pass@) are sent as HTTP
	// basic authentication. Neither credentials nor query ever appear in
	// errors or logs.
	URL string
	// HTTPClient sends the requests; nil means a client on
	// http.DefaultTransport. The facilitator uses a copy of it without
	// Client.Timeout and, when its Transport is an *http.Transport with a
	// ResponseHeaderTimeout, with a clone of that transport without it:
	// only the bounds below (and the caller's context) cut a call short,
	// since a facilitator answers /settle only once the transfer is done.
	HTTPClient *http.Client
	// Timeout bounds each exchange with /verify and /supported (each
	// attempt), within the caller's deadline if that comes first; zero
	// means DefaultTimeout. It does not apply to /settle.
	Timeout time.Duration
	// SettleTimeout bounds /settle when the caller's context has no
	// deadline; zero means DefaultSettleTimeout. When the context has a
	// deadline, /settle is bounded by that deadline only: cutting a settle
	// short of what its caller allows would leave a settled payment
	// answered as a failure.
	SettleTimeout time.Duration
	// AuthHeaders, when set, is called before every request with the
	// operation (OpVerify, OpSettle or OpSupported); the headers it returns
	// are added to the request (e.g. a fresh CDP bearer JWT). An error aborts
	// the call.
	AuthHeaders func(ctx context.Context, op string) (http.Header, error)
	// Logger receives one debug record per exchange and warnings for
	// failures and retries; nil discards them. Payloads are never logged.
	Logger *slog.Logger
	// SupportedAttempts is the number of attempts of GET /supported when the
	// facilitator answers 429; zero means DefaultSupportedAttempts. Verify
	// and settle are never retried.
	SupportedAttempts int
	// SupportedBackoff is the wait before the first retry of /supported
	// without a Retry-After header (doubling after); zero means
	// DefaultSupportedBackoff.
	SupportedBackoff time.Duration
	// MaxRetryAfter caps the wait a Retry-After header may impose; zero
	// means DefaultMaxRetryAfter.
	MaxRetryAfter time.Duration
}

// HTTP is an x402.Facilitator reached over the x402 facilitator HTTP
// API. Safe for concurrent use.
//
// Verify and Settle follow Facilitator's contract: a refused payment is a
// nil error with IsValid/Success false, whether the facilitator said so in
// a 200 (the usual way) or in a non-2xx answer whose JSON body carries
// isValid:false with an invalidReason (success:false with an errorReason
// for settle). Anything else (transport failure, timeout, non-2xx without
// such a body, malformed or incomplete 2xx body: verify without isValid,
// settle without success or network, or success without transaction) is a
// *Error. Callers must always check IsValid and Success.
type HTTP struct {
	base     string // scheme://[userinfo@]host/path, no trailing "/", no query
	query    string // raw query added to every endpoint
	redacted string // base without userinfo, safe to log
	client   *http.Client
	cfg      HTTPConfig
	log      *slog.Logger
}

var _ x402.Facilitator = (*HTTP)(nil)

// NewHTTP checks cfg and returns the client. A URL that is not an
// absolute http(s) URL without fragment is an *x402.ConfigError (whose message
// does not repeat the URL, which may hold credentials).
func NewHTTP(cfg HTTPConfig) (*HTTP, error) {
	u, err := url.Parse(cfg.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Opaque != "" || u.Fragment != "" || u.ForceQuery {
		return nil, &x402.ConfigError{Field: "URL", Message: "want an absolute http(s) URL without fragment (the value is not repeated here: it may hold credentials)"}
	}
	if cfg.Timeout < 0 || cfg.SettleTimeout < 0 || cfg.SupportedAttempts < 0 || cfg.SupportedBackoff < 0 || cfg.MaxRetryAfter < 0 {
		return nil, &x402.ConfigError{Field: "Timeout", Message: "durations and attempts must not be negative"}
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.SettleTimeout == 0 {
		cfg.SettleTimeout = DefaultSettleTimeout
	}
	if cfg.SupportedAttempts == 0 {
		cfg.SupportedAttempts = DefaultSupportedAttempts
	}
	if cfg.SupportedBackoff == 0 {
		cfg.SupportedBackoff = DefaultSupportedBackoff
	}
	if cfg.MaxRetryAfter == 0 {
		cfg.MaxRetryAfter = DefaultMaxRetryAfter
	}
	query := u.RawQuery
	u.RawQuery = ""
	u.Path = strings.TrimRight(u.Path, "/")
	u.RawPath = strings.TrimRight(u.RawPath, "/")
	f := &HTTP{base: u.String(), query: query, redacted: redactURL(u), client: unboundedClient(cfg.HTTPClient), cfg: cfg, log: cfg.Logger}
	if f.log == nil {
		f.log = slog.New(slog.DiscardHandler)
	}
	return f, nil
}

// unboundedClient returns a copy of c (nil: a client on
// http.DefaultTransport) whose own limits cannot end a call before its
// context does: no Client.Timeout, and no ResponseHeaderTimeout on an
// *http.Transport (cloned, so that c's transport is left as it is).
// Connection set-up limits (dial, TLS handshake) are kept.
func unboundedClient(c *http.Client) *http.Client {
	var cp http.Client
	if c != nil {
		cp = *c
	}
	cp.Timeout = 0
	rt := cp.Transport
	if rt == nil {
		rt = http.DefaultTransport
	}
	if t, ok := rt.(*http.Transport); ok && t.ResponseHeaderTimeout != 0 {
		t = t.Clone()
		t.ResponseHeaderTimeout = 0
		cp.Transport = t
	}
	return &cp
}

// redactURL returns u without credentials, query and fragment.
func redactURL(u *url.URL) string {
	r := *u
	r.User = nil
	r.RawQuery = ""
	r.ForceQuery = false
	r.Fragment = ""
	r.RawFragment = ""
	return r.String()
}

// URL returns the facilitator's base URL without trailing "/" and without
// the credentials and query it may have been configured with: safe to log.
func (f *HTTP) URL() string { return f.redacted }

// Error is a facilitator call that did not produce an answer:
// transport failure, timeout, unexpected status, malformed body. Op is
// OpVerify, OpSettle or OpSupported; StatusCode is 0 when no HTTP answer
// arrived; Reason is the facilitator's reason when its body named one;
// Message is a short description (never the whole body); Err the cause.
//
// For reconciliation from logs, it also names where and what: Endpoint is
// the URL called, without credentials or query; Network, Payer and Nonce
// identify the authorization of a verify or settle (empty when the payload
// is not an EIP-3009 authorization); Elapsed is the time the call took.
// None of these is a secret: the signature is never included.
type Error struct {
	Op         string
	StatusCode int
	Reason     string
	Message    string
	Err        error

	Endpoint string
	Network  string
	Payer    string
	Nonce    string
	Elapsed  time.Duration
}

// Error implements error: "x402: facilitator <op> <endpoint> (network …,
// payer …, nonce …) after <elapsed>: HTTP <status>: <reason>: <message>:
// <cause>", each part present only when known.
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("x402: facilitator ")
	b.WriteString(e.Op)
	if e.Endpoint != "" {
		b.WriteString(" ")
		b.WriteString(e.Endpoint)
	}
	if e.Network != "" || e.Payer != "" || e.Nonce != "" {
		b.WriteString(" (")
		sep := ""
		for _, kv := range [][2]string{{"network", e.Network}, {"payer", e.Payer}, {"nonce", e.Nonce}} {
			if kv[1] != "" {
				b.WriteString(sep + kv[0] + " " + kv[1])
				sep = ", "
			}
		}
		b.WriteString(")")
	}
	if e.Elapsed > 0 {
		fmt.Fprintf(&b, " after %v", e.Elapsed.Round(time.Millisecond))
	}
	if e.StatusCode != 0 {
		fmt.Fprintf(&b, ": HTTP %d", e.StatusCode)
	}
	if e.Reason != "" {
		b.WriteString(": ")
		b.WriteString(e.Reason)
	}
	if e.Message != "" {
		b.WriteString(": ")
		b.WriteString(e.Message)
	}
	if e.Err != nil {
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	return b.String()
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

// Timeout reports whether the call ran out of time (its own bound or the
// caller's deadline). For settle, the outcome is then unknown.
func (e *Error) Timeout() bool { return errors.Is(e.Err, context.DeadlineExceeded) }

// facilitatorBody builds the verify/settle request body. A v1 payload is
// sent in the v1 shapes (network names, maxAmountRequired).
func facilitatorBody(payload x402.PaymentPayload, req x402.PaymentRequirements) any {
	if payload.X402Version != 1 {
		return x402.VerifyRequest{X402Version: payload.X402Version, PaymentPayload: payload, PaymentRequirements: req}
	}
	v1name := func(id string) string {
		if n, ok := x402.LookupNetwork(id); ok {
			return n.V1Name
		}
		return id
	}
	var res x402.ResourceInfo
	if payload.Resource != nil {
		res = *payload.Resource
	}
	return struct {
		X402Version         int                       `json:"x402Version"`
		PaymentPayload      facilitatorV1Payload      `json:"paymentPayload"`
		PaymentRequirements facilitatorV1Requirements `json:"paymentRequirements"`
	}{
		X402Version: 1,
		PaymentPayload: facilitatorV1Payload{
			X402Version: 1, Scheme: payload.Accepted.Scheme, Network: v1name(payload.Accepted.Network), Payload: payload.Payload,
		},
		PaymentRequirements: facilitatorV1Requirements{
			Scheme: req.Scheme, Network: v1name(req.Network), MaxAmountRequired: req.Amount, Resource: res.URL,
			Description: res.Description, MimeType: res.MimeType, PayTo: req.PayTo,
			MaxTimeoutSeconds: req.MaxTimeoutSeconds, Asset: req.Asset, Extra: req.Extra,
		},
	}
}

// facilitatorCall is one Verify, Settle or Supported call in progress: what
// its errors say of it.
type facilitatorCall struct {
	op, method, path      string
	network, payer, nonce string
	start                 time.Time
}

// newCall starts a call; payload and req (nil for supported) name the
// authorization in its errors.
func (f *HTTP) newCall(op, method, path string, payload *x402.PaymentPayload, req *x402.PaymentRequirements) *facilitatorCall {
	c := &facilitatorCall{op: op, method: method, path: path, start: time.Now()}
	if payload != nil && req != nil {
		c.network = printableSnippet(req.Network, 64)
		if p, err := exact.ParseExactEVMPayload(payload.Payload); err == nil {
			c.payer = printableSnippet(p.Authorization.From, 64)
			c.nonce = printableSnippet(p.Authorization.Nonce, 80)
		}
	}
	return c
}

// Verify implements Facilitator with POST {URL}/verify, bounded by Timeout
// (or the caller's deadline if sooner).
func (f *HTTP) Verify(ctx context.Context, payload x402.PaymentPayload, req x402.PaymentRequirements) (x402.VerifyResponse, error) {
	c := f.newCall(OpVerify, http.MethodPost, "/verify", &payload, &req)
	status, raw, _, err := f.exchange(ctx, c, facilitatorBody(payload, req))
	if err != nil {
		return x402.VerifyResponse{}, err
	}
	resp, derr := decodeVerifyJSON(raw)
	if status/100 == 2 {
		if derr != nil {
			return x402.VerifyResponse{}, f.fail(c, &Error{StatusCode: status, Message: "malformed response: " + derr.Error()})
		}
		return resp, nil
	}
	if derr == nil && !resp.IsValid && resp.InvalidReason != "" {
		return resp, nil
	}
	return x402.VerifyResponse{}, f.fail(c, statusError(status, raw))
}

// Settle implements Facilitator with POST {URL}/settle. It is bounded by
// the caller's deadline only (SettleTimeout when the context has none) and
// never retried: a timeout leaves the outcome unknown
// (Error.Timeout).
func (f *HTTP) Settle(ctx context.Context, payload x402.PaymentPayload, req x402.PaymentRequirements) (x402.SettleResponse, error) {
	c := f.newCall(OpSettle, http.MethodPost, "/settle", &payload, &req)
	status, raw, _, err := f.exchange(ctx, c, facilitatorBody(payload, req))
	if err != nil {
		return x402.SettleResponse{}, err
	}
	var resp x402.SettleResponse
	var derr error
	if !wire.IsJSONObject(raw) {
		derr = errors.New("not a JSON object")
	} else {
		resp, derr = decodeSettleJSON(raw)
	}
	if status/100 == 2 {
		if derr == nil && resp.Success && resp.Transaction == "" {
			derr = errors.New("transaction is required on success")
		}
		if derr != nil {
			return x402.SettleResponse{}, f.fail(c, &Error{StatusCode: status, Message: "malformed response: " + derr.Error()})
		}
		return resp, nil
	}
	if derr == nil && !resp.Success && resp.ErrorReason != "" {
		return resp, nil
	}
	return x402.SettleResponse{}, f.fail(c, statusError(status, raw))
}

// Supported implements Facilitator with GET {URL}/supported, retried on 429
// (up to SupportedAttempts attempts in all), waiting as Retry-After says
// (capped at MaxRetryAfter) or SupportedBackoff, doubling. Each attempt is
// bounded by Timeout, the whole by the caller's context.
func (f *HTTP) Supported(ctx context.Context) (x402.SupportedResponse, error) {
	c := f.newCall(OpSupported, http.MethodGet, "/supported", nil, nil)
	backoff := f.cfg.SupportedBackoff
	for attempt := 1; ; attempt++ {
		status, raw, hdr, err := f.exchange(ctx, c, nil)
		if err != nil {
			return x402.SupportedResponse{}, err
		}
		if status == http.StatusTooManyRequests && attempt < f.cfg.SupportedAttempts {
			wait := retryAfter(hdr.Get("Retry-After"), time.Now(), backoff, f.cfg.MaxRetryAfter)
			f.log.WarnContext(ctx, "x402 facilitator rate limited, retrying", "op", OpSupported, "endpoint", f.redacted+c.path, "attempt", attempt, "wait", wait)
			t := time.NewTimer(wait)
			select {
			case <-ctx.Done():
				t.Stop()
				return x402.SupportedResponse{}, f.fail(c, &Error{StatusCode: status, Message: "gave up waiting to retry", Err: ctx.Err()})
			case <-t.C:
			}
			backoff *= 2
			continue
		}
		if status/100 != 2 {
			return x402.SupportedResponse{}, f.fail(c, statusError(status, raw))
		}
		var resp x402.SupportedResponse
		var presence struct {
			Kinds *json.RawMessage `json:"kinds"`
		}
		if !wire.IsJSONObject(raw) || json.Unmarshal(raw, &resp) != nil || json.Unmarshal(raw, &presence) != nil || presence.Kinds == nil {
			return x402.SupportedResponse{}, f.fail(c, &Error{StatusCode: status, Message: "malformed response: want a JSON object with kinds"})
		}
		return resp, nil
	}
}

// callContext bounds one exchange: /settle by the caller's deadline only
// (SettleTimeout without one), the others by Timeout within it.
func (f *HTTP) callContext(ctx context.Context, op string) (context.Context, context.CancelFunc) {
	if op == OpSettle {
		if _, ok := ctx.Deadline(); ok {
			return context.WithCancel(ctx)
		}
		return context.WithTimeout(ctx, f.cfg.SettleTimeout)
	}
	return context.WithTimeout(ctx, f.cfg.Timeout)
}

// exchange performs one HTTP exchange of c within its bound and returns
// the status, the body (at most MaxResponseBytes) and headers.
func (f *HTTP) exchange(ctx context.Context, c *facilitatorCall, body any) (int, []byte, http.Header, error) {
	ctx, cancel := f.callContext(ctx, c.op)
	defer cancel()
	start := time.Now()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return 0, nil, nil, f.fail(c, &Error{Message: "cannot encode the request", Err: err})
		}
		rd = bytes.NewReader(b)
	}
	endpoint := f.base + c.path
	if f.query != "" {
		endpoint += "?" + f.query
	}
	hreq, err := http.NewRequestWithContext(ctx, c.method, endpoint, rd)
	if err != nil {
		return 0, nil, nil, f.fail(c, &Error{Message: "cannot build the request", Err: f.redactErr(c, err)})
	}
	hreq.Header.Set("Accept", "application/json")
	if body != nil {
		hreq.Header.Set("Content-Type", "application/json")
	}
	if f.cfg.AuthHeaders != nil {
		h, err := f.cfg.AuthHeaders(ctx, c.op)
		if err != nil {
			return 0, nil, nil, f.fail(c, &Error{Message: "auth headers", Err: err})
		}
		for k, vs := range h {
			hreq.Header.Del(k)
			for _, v := range vs {
				hreq.Header.Add(k, v)
			}
		}
	}
	resp, err := f.client.Do(hreq)
	if err != nil {
		msg := "request failed"
		if c.op == OpSettle {
			msg = "request failed; the settlement outcome is unknown"
		}
		return 0, nil, nil, f.fail(c, &Error{Message: msg, Err: f.redactErr(c, err)})
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, MaxResponseBytes+1))
	if err != nil {
		msg := "reading the response failed"
		if c.op == OpSettle {
			msg = "reading the response failed; the settlement outcome is unknown"
		}
		return 0, nil, nil, f.fail(c, &Error{StatusCode: resp.StatusCode, Message: msg, Err: f.redactErr(c, err)})
	}
	if len(raw) > MaxResponseBytes {
		return 0, nil, nil, f.fail(c, &Error{StatusCode: resp.StatusCode, Message: fmt.Sprintf("response larger than %d bytes", MaxResponseBytes)})
	}
	f.log.DebugContext(ctx, "x402 facilitator call", "op", c.op, "endpoint", f.redacted+c.path, "status", resp.StatusCode, "duration", time.Since(start))
	return resp.StatusCode, raw, resp.Header, nil
}

// redactErr replaces the URL of a *url.Error (which net/http fills with
// the request URL, query and user name included) by the redacted endpoint,
// keeping the cause for errors.Is and errors.As.
func (f *HTTP) redactErr(c *facilitatorCall, err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return &url.Error{Op: ue.Op, URL: f.redacted + c.path, Err: ue.Err}
	}
	return err
}

// fail completes e with what c knows, logs it and returns it.
func (f *HTTP) fail(c *facilitatorCall, e *Error) *Error {
	e.Op = c.op
	e.Endpoint = f.redacted + c.path
	e.Network, e.Payer, e.Nonce = c.network, c.payer, c.nonce
	e.Elapsed = time.Since(c.start)
	f.log.Warn("x402 facilitator call failed", "op", e.Op, "endpoint", e.Endpoint, "status", e.StatusCode, "reason", e.Reason,
		"network", e.Network, "payer", e.Payer, "nonce", e.Nonce, "elapsed", e.Elapsed, "error", e.Error())
	return e
}

// decodeVerifyJSON decodes a VerifyResponse; isValid is required.
func decodeVerifyJSON(raw []byte) (x402.VerifyResponse, error) {
	var r x402.VerifyResponse
	var presence struct {
		IsValid *bool `json:"isValid"`
	}
	if !wire.IsJSONObject(raw) {
		return r, errors.New("not a JSON object")
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		return r, errors.New(wire.JSONErrorSummary(err))
	}
	if err := json.Unmarshal(raw, &presence); err != nil || presence.IsValid == nil {
		return x402.VerifyResponse{}, errors.New("isValid is required")
	}
	return r, nil
}

// statusError describes a non-2xx answer without a usable x402 body.
func statusError(status int, raw []byte) *Error {
	e := &Error{StatusCode: status}
	var body struct {
		Error          any    `json:"error"`
		Message        string `json:"message"`
		InvalidReason  string `json:"invalidReason"`
		InvalidMessage string `json:"invalidMessage"`
		ErrorReason    string `json:"errorReason"`
		ErrorMessage   string `json:"errorMessage"`
	}
	if wire.IsJSONObject(raw) && json.Unmarshal(raw, &body) == nil {
		e.Reason = firstNonEmpty(body.InvalidReason, body.ErrorReason)
		msg := firstNonEmpty(body.InvalidMessage, body.ErrorMessage, body.Message)
		if s, ok := body.Error.(string); ok && msg == "" {
			msg = s
		}
		e.Message = printableSnippet(msg, 200)
		return e
	}
	if len(bytes.TrimSpace(raw)) == 0 {
		e.Message = "empty body"
	} else {
		e.Message = "non-JSON body"
	}
	return e
}

func firstNonEmpty(ss ...string) string {
	for _, s := range ss {
		if s != "" {
			return s
		}
	}
	return ""
}

// printableSnippet keeps at most n bytes of s with control characters
// replaced, so that a facilitator's text can go in logs and errors.
func printableSnippet(s string, n int) string {
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, s)
	return clip.Bytes(s, n)
}

// retryAfter returns the wait a Retry-After value asks for (delta seconds
// or an HTTP date), capped at limit; fallback when absent or unparsable.
func retryAfter(v string, now time.Time, fallback, limit time.Duration) time.Duration {
	wait := fallback
	if v != "" {
		if secs, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64); err == nil && secs >= 0 {
			wait = limit
			if secs < int64(limit/time.Second)+1 {
				wait = time.Duration(secs) * time.Second
			}
		} else if t, err := http.ParseTime(v); err == nil {
			wait = t.Sub(now)
		}
	}
	if wait < 0 {
		wait = 0
	}
	if wait > limit {
		wait = limit
	}
	return wait
}

// decodeSettleJSON decodes a SettleResponse and checks that success and
// network are present; the error says what is wrong.
func decodeSettleJSON(raw []byte) (x402.SettleResponse, error) {
	var r x402.SettleResponse
	if err := json.Unmarshal(raw, &r); err != nil {
		return x402.SettleResponse{}, errors.New("invalid JSON")
	}
	if msg, _ := wire.SettleFieldsMissing(raw); msg != "" {
		return x402.SettleResponse{}, errors.New(msg)
	}
	return r, nil
}

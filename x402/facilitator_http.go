package x402

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
)

// Facilitator operations, passed to HTTPFacilitatorConfig.AuthHeaders and
// reported in FacilitatorError.Op.
const (
	OpVerify    = "verify"
	OpSettle    = "settle"
	OpSupported = "supported"
)

// Defaults of HTTPFacilitatorConfig.
const (
	DefaultFacilitatorTimeout   = 30 * time.Second
	DefaultSupportedAttempts    = 3
	DefaultSupportedBackoff     = time.Second
	DefaultMaxRetryAfter        = 30 * time.Second
	MaxFacilitatorResponseBytes = 1 << 20
)

// HTTPFacilitatorConfig configures an HTTPFacilitator.
type HTTPFacilitatorConfig struct {
	// URL is the facilitator's base URL (http or https); a trailing "/" is
	// trimmed. The endpoints are URL+"/verify", "/settle" and "/supported".
	URL string
	// HTTPClient sends the requests; nil means a new http.Client (its own
	// Timeout is left to this config's Timeout).
	HTTPClient *http.Client
	// Timeout bounds each HTTP exchange (each attempt); zero means
	// DefaultFacilitatorTimeout.
	Timeout time.Duration
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

// HTTPFacilitator is a Facilitator reached over the x402 facilitator HTTP
// API. Safe for concurrent use.
//
// Verify and Settle follow Facilitator's contract: a refused payment is a
// nil error with IsValid/Success false, whether the facilitator said so in
// a 200 (the usual way) or in a non-2xx answer whose JSON body carries
// isValid:false with an invalidReason (success:false with an errorReason
// for settle). Anything else (transport failure, timeout, non-2xx without
// such a body, malformed or incomplete 2xx body: verify without isValid,
// settle without success or network, or success without transaction) is a
// *FacilitatorError. Callers must always check IsValid and Success.
type HTTPFacilitator struct {
	base   string
	client *http.Client
	cfg    HTTPFacilitatorConfig
	log    *slog.Logger
}

var _ Facilitator = (*HTTPFacilitator)(nil)

// NewHTTPFacilitator checks cfg and returns the client. A URL that is not an
// absolute http(s) URL is a *ConfigError.
func NewHTTPFacilitator(cfg HTTPFacilitatorConfig) (*HTTPFacilitator, error) {
	base := strings.TrimRight(cfg.URL, "/")
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return nil, &ConfigError{"URL", fmt.Sprintf("%q is not an absolute http(s) URL without query", truncForMsg(cfg.URL, 80))}
	}
	if cfg.Timeout < 0 || cfg.SupportedAttempts < 0 || cfg.SupportedBackoff < 0 || cfg.MaxRetryAfter < 0 {
		return nil, &ConfigError{"Timeout", "durations and attempts must not be negative"}
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultFacilitatorTimeout
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
	f := &HTTPFacilitator{base: base, client: cfg.HTTPClient, cfg: cfg, log: cfg.Logger}
	if f.client == nil {
		f.client = &http.Client{}
	}
	if f.log == nil {
		f.log = slog.New(slog.DiscardHandler)
	}
	return f, nil
}

// URL returns the facilitator's base URL (without trailing "/").
func (f *HTTPFacilitator) URL() string { return f.base }

// FacilitatorError is a facilitator call that did not produce an answer:
// transport failure, timeout, unexpected status, malformed body. Op is
// OpVerify, OpSettle or OpSupported; StatusCode is 0 when no HTTP answer
// arrived; Reason is the facilitator's reason when its body named one;
// Message is a short description (never the whole body); Err the cause.
type FacilitatorError struct {
	Op         string
	StatusCode int
	Reason     string
	Message    string
	Err        error
}

// Error implements error.
func (e *FacilitatorError) Error() string {
	var b strings.Builder
	b.WriteString("x402: facilitator ")
	b.WriteString(e.Op)
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
func (e *FacilitatorError) Unwrap() error { return e.Err }

// Timeout reports whether the call ran out of time (its own Timeout or the
// caller's deadline). For settle, the outcome is then unknown.
func (e *FacilitatorError) Timeout() bool { return errors.Is(e.Err, context.DeadlineExceeded) }

// facilitatorBody builds the verify/settle request body. A v1 payload is
// sent in the v1 shapes (network names, maxAmountRequired).
func facilitatorBody(payload PaymentPayload, req PaymentRequirements) any {
	if payload.X402Version != 1 {
		return VerifyRequest{X402Version: payload.X402Version, PaymentPayload: payload, PaymentRequirements: req}
	}
	v1name := func(id string) string {
		if n, ok := LookupNetwork(id); ok {
			return n.V1Name
		}
		return id
	}
	var res ResourceInfo
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

// Verify implements Facilitator with POST {URL}/verify.
func (f *HTTPFacilitator) Verify(ctx context.Context, payload PaymentPayload, req PaymentRequirements) (VerifyResponse, error) {
	status, raw, _, err := f.exchange(ctx, OpVerify, http.MethodPost, "/verify", facilitatorBody(payload, req))
	if err != nil {
		return VerifyResponse{}, err
	}
	resp, derr := decodeVerifyJSON(raw)
	if status/100 == 2 {
		if derr != nil {
			return VerifyResponse{}, f.fail(&FacilitatorError{Op: OpVerify, StatusCode: status, Message: "malformed response: " + derr.Error()})
		}
		return resp, nil
	}
	if derr == nil && !resp.IsValid && resp.InvalidReason != "" {
		return resp, nil
	}
	return VerifyResponse{}, f.fail(statusError(OpVerify, status, raw))
}

// Settle implements Facilitator with POST {URL}/settle. It is never
// retried: a timeout leaves the outcome unknown (FacilitatorError.Timeout).
func (f *HTTPFacilitator) Settle(ctx context.Context, payload PaymentPayload, req PaymentRequirements) (SettleResponse, error) {
	status, raw, _, err := f.exchange(ctx, OpSettle, http.MethodPost, "/settle", facilitatorBody(payload, req))
	if err != nil {
		return SettleResponse{}, err
	}
	var resp SettleResponse
	var derr error
	if !isJSONObject(raw) {
		derr = errors.New("not a JSON object")
	} else if resp, derr = decodeSettleJSON(raw); derr != nil {
		derr = errors.New(derr.(*HeaderError).Message)
	}
	if status/100 == 2 {
		if derr == nil && resp.Success && resp.Transaction == "" {
			derr = errors.New("transaction is required on success")
		}
		if derr != nil {
			return SettleResponse{}, f.fail(&FacilitatorError{Op: OpSettle, StatusCode: status, Message: "malformed response: " + derr.Error()})
		}
		return resp, nil
	}
	if derr == nil && !resp.Success && resp.ErrorReason != "" {
		return resp, nil
	}
	return SettleResponse{}, f.fail(statusError(OpSettle, status, raw))
}

// Supported implements Facilitator with GET {URL}/supported, retried on 429
// (up to SupportedAttempts attempts in all), waiting as Retry-After says
// (capped at MaxRetryAfter) or SupportedBackoff, doubling.
func (f *HTTPFacilitator) Supported(ctx context.Context) (SupportedResponse, error) {
	backoff := f.cfg.SupportedBackoff
	for attempt := 1; ; attempt++ {
		status, raw, hdr, err := f.exchange(ctx, OpSupported, http.MethodGet, "/supported", nil)
		if err != nil {
			return SupportedResponse{}, err
		}
		if status == http.StatusTooManyRequests && attempt < f.cfg.SupportedAttempts {
			wait := retryAfter(hdr.Get("Retry-After"), time.Now(), backoff, f.cfg.MaxRetryAfter)
			f.log.WarnContext(ctx, "x402 facilitator rate limited, retrying", "op", OpSupported, "attempt", attempt, "wait", wait)
			t := time.NewTimer(wait)
			select {
			case <-ctx.Done():
				t.Stop()
				return SupportedResponse{}, f.fail(&FacilitatorError{Op: OpSupported, StatusCode: status, Message: "gave up waiting to retry", Err: ctx.Err()})
			case <-t.C:
			}
			backoff *= 2
			continue
		}
		if status/100 != 2 {
			return SupportedResponse{}, f.fail(statusError(OpSupported, status, raw))
		}
		var resp SupportedResponse
		var presence struct {
			Kinds *json.RawMessage `json:"kinds"`
		}
		if !isJSONObject(raw) || json.Unmarshal(raw, &resp) != nil || json.Unmarshal(raw, &presence) != nil || presence.Kinds == nil {
			return SupportedResponse{}, f.fail(&FacilitatorError{Op: OpSupported, StatusCode: status, Message: "malformed response: want a JSON object with kinds"})
		}
		return resp, nil
	}
}

// exchange performs one HTTP exchange with the per-call timeout and returns
// the status, the body (at most MaxFacilitatorResponseBytes) and headers.
func (f *HTTPFacilitator) exchange(ctx context.Context, op, method, path string, body any) (int, []byte, http.Header, error) {
	ctx, cancel := context.WithTimeout(ctx, f.cfg.Timeout)
	defer cancel()
	start := time.Now()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return 0, nil, nil, &FacilitatorError{Op: op, Message: "cannot encode the request", Err: err}
		}
		rd = bytes.NewReader(b)
	}
	hreq, err := http.NewRequestWithContext(ctx, method, f.base+path, rd)
	if err != nil {
		return 0, nil, nil, &FacilitatorError{Op: op, Message: "cannot build the request", Err: err}
	}
	hreq.Header.Set("Accept", "application/json")
	if body != nil {
		hreq.Header.Set("Content-Type", "application/json")
	}
	if f.cfg.AuthHeaders != nil {
		h, err := f.cfg.AuthHeaders(ctx, op)
		if err != nil {
			return 0, nil, nil, f.fail(&FacilitatorError{Op: op, Message: "auth headers", Err: err})
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
		if op == OpSettle {
			msg = "request failed; the settlement outcome is unknown"
		}
		return 0, nil, nil, f.fail(&FacilitatorError{Op: op, Message: msg, Err: err})
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, MaxFacilitatorResponseBytes+1))
	if err != nil {
		return 0, nil, nil, f.fail(&FacilitatorError{Op: op, StatusCode: resp.StatusCode, Message: "reading the response failed", Err: err})
	}
	if len(raw) > MaxFacilitatorResponseBytes {
		return 0, nil, nil, f.fail(&FacilitatorError{Op: op, StatusCode: resp.StatusCode, Message: fmt.Sprintf("response larger than %d bytes", MaxFacilitatorResponseBytes)})
	}
	f.log.DebugContext(ctx, "x402 facilitator call", "op", op, "status", resp.StatusCode, "duration", time.Since(start))
	return resp.StatusCode, raw, resp.Header, nil
}

// fail logs a failure and returns it.
func (f *HTTPFacilitator) fail(e *FacilitatorError) *FacilitatorError {
	f.log.Warn("x402 facilitator call failed", "op", e.Op, "status", e.StatusCode, "reason", e.Reason, "error", e.Error())
	return e
}

// decodeVerifyJSON decodes a VerifyResponse; isValid is required.
func decodeVerifyJSON(raw []byte) (VerifyResponse, error) {
	var r VerifyResponse
	var presence struct {
		IsValid *bool `json:"isValid"`
	}
	if !isJSONObject(raw) {
		return r, errors.New("not a JSON object")
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		return r, errors.New(jsonErrorSummary(err))
	}
	if err := json.Unmarshal(raw, &presence); err != nil || presence.IsValid == nil {
		return VerifyResponse{}, errors.New("isValid is required")
	}
	return r, nil
}

// statusError describes a non-2xx answer without a usable x402 body.
func statusError(op string, status int, raw []byte) *FacilitatorError {
	e := &FacilitatorError{Op: op, StatusCode: status}
	var body struct {
		Error          any    `json:"error"`
		Message        string `json:"message"`
		InvalidReason  string `json:"invalidReason"`
		InvalidMessage string `json:"invalidMessage"`
		ErrorReason    string `json:"errorReason"`
		ErrorMessage   string `json:"errorMessage"`
	}
	if isJSONObject(raw) && json.Unmarshal(raw, &body) == nil {
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
	return truncForMsg(s, n)
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

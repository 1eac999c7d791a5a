package facilitator

import (
	"bytes"
	"container/list"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/seed1284c1d2/svc/x402"
	"github.com/seed1284c1d2/svc/x402/exact"
	"github.com/seed1284c1d2/svc/x402/internal/wire"
)

// MaxRequestBytes bounds the body of a request to
// Handler.
const MaxRequestBytes = 64 << 10

// Defaults of HandlerConfig.
const (
	DefaultIdentifierTTL  = 24 * time.Hour
	DefaultMaxIdentifiers = 100_000
)

// HandlerConfig configures NewHandler.
type HandlerConfig struct {
	// IdentifierTTL is how long a successful settlement is remembered under
	// its payment identifier; zero means DefaultIdentifierTTL. Negative
	// turns the handler's own deduplication off (the facilitator's own, if
	// any, still applies).
	IdentifierTTL time.Duration
	// MaxIdentifiers caps the settlements remembered (the oldest are
	// forgotten first); zero means DefaultMaxIdentifiers.
	MaxIdentifiers int
	// Now is the clock (nil means time.Now).
	Now func() time.Time
}

// Handler serves f over the facilitator HTTP API with the
// default HandlerConfig; see NewHandler.
func Handler(f x402.Facilitator) http.Handler {
	return NewHandler(f, HandlerConfig{})
}

// NewHandler serves f over the facilitator HTTP API: POST
// /verify and POST /settle (body {x402Version, paymentPayload,
// paymentRequirements}, answer a VerifyResponse / SettleResponse, HTTP 200
// even for a refused payment) and GET /supported. Bodies in the v1 shapes
// (x402Version 1: payload {scheme, network, payload}, requirements with
// maxAmountRequired) are converted to the v2 types, keeping the v1 network
// names. Malformed requests get 400 and bodies over
// MaxRequestBytes 413, both with {"error": message}; an error of
// f gets 500, or 503 with Retry-After when the error has an Unavailable()
// bool method that reports true. Mount it under a prefix with
// http.StripPrefix.
//
// It honours the payment-identifier extension (x402.ExtensionPaymentIdentifier)
// of v2 payloads. An identifier, scoped by the receiving address (payTo),
// is bound to the payment it first came with (scheme, network, asset,
// amount, payTo and the signed authorization) when its settlement starts,
// and stays bound if it succeeds. Then:
//   - /settle of the same identifier and payment answers the remembered
//     settlement without calling f (also after the authorization expired);
//     one still in flight is waited for;
//   - /settle or /verify of the same identifier with another payment is
//     refused with 409 Conflict and x402.ReasonPaymentIdentifierConflict;
//   - a malformed identifier is refused with 400 and
//     x402.ReasonInvalidPaymentIdentifier.
//
// Refusals from f with those two reasons get the same statuses. A failed
// settlement is not remembered: the client may retry, with the same or
// another payment. Settlements are remembered in memory, for
// cfg.IdentifierTTL, at most cfg.MaxIdentifiers of them. /supported lists
// the extension.
func NewHandler(f x402.Facilitator, cfg HandlerConfig) http.Handler {
	var ids *identifierCache
	if cfg.IdentifierTTL >= 0 {
		ids = newIdentifierCache(cfg)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /verify", func(w http.ResponseWriter, r *http.Request) {
		payload, req, ok := readFacilitatorRequest(w, r)
		if !ok {
			return
		}
		id, err := x402.PaymentIdentifierOf(payload)
		if err != nil {
			writeFacilitatorJSON(w, http.StatusBadRequest, x402.VerifyResponse{IsValid: false, InvalidReason: x402.ReasonInvalidPaymentIdentifier, InvalidMessage: err.Error()})
			return
		}
		if id != "" && ids != nil && ids.conflicts(identifierScope(id, req), paymentFingerprint(payload, req)) {
			writeFacilitatorJSON(w, http.StatusConflict, x402.VerifyResponse{IsValid: false, InvalidReason: x402.ReasonPaymentIdentifierConflict, InvalidMessage: msgIdentifierConflict})
			return
		}
		resp, err := f.Verify(r.Context(), payload, req)
		if err != nil {
			writeFacilitatorError(w, "verify failed: ", err)
			return
		}
		writeFacilitatorJSON(w, refusalStatus(resp.IsValid, resp.InvalidReason), resp)
	})
	mux.HandleFunc("POST /settle", func(w http.ResponseWriter, r *http.Request) {
		payload, req, ok := readFacilitatorRequest(w, r)
		if !ok {
			return
		}
		id, err := x402.PaymentIdentifierOf(payload)
		if err != nil {
			writeFacilitatorJSON(w, http.StatusBadRequest, x402.SettleResponse{Success: false, ErrorReason: x402.ReasonInvalidPaymentIdentifier, ErrorMessage: err.Error(), Network: req.Network})
			return
		}
		settle := func() (x402.SettleResponse, error) { return f.Settle(r.Context(), payload, req) }
		var resp x402.SettleResponse
		if id != "" && ids != nil {
			resp, err = ids.settle(r.Context(), identifierScope(id, req), paymentFingerprint(payload, req), settle)
		} else {
			resp, err = settle()
		}
		switch {
		case errors.Is(err, errIdentifierConflict):
			writeFacilitatorJSON(w, http.StatusConflict, x402.SettleResponse{Success: false, ErrorReason: x402.ReasonPaymentIdentifierConflict, ErrorMessage: msgIdentifierConflict, Network: req.Network})
		case errors.Is(err, errIdentifierWait):
			w.Header().Set("Retry-After", "1")
			writeFacilitatorJSON(w, http.StatusServiceUnavailable, map[string]string{"error": "settle failed: " + err.Error()})
		case err != nil:
			writeFacilitatorError(w, "settle failed: ", err)
		default:
			writeFacilitatorJSON(w, refusalStatus(resp.Success, resp.ErrorReason), resp)
		}
	})
	mux.HandleFunc("GET /supported", func(w http.ResponseWriter, r *http.Request) {
		resp, err := f.Supported(r.Context())
		if err != nil {
			writeFacilitatorJSON(w, http.StatusInternalServerError, map[string]string{"error": "supported failed: " + err.Error()})
			return
		}
		if ids != nil && !slices.Contains(resp.Extensions, x402.ExtensionPaymentIdentifier) {
			resp.Extensions = append(slices.Clip(resp.Extensions), x402.ExtensionPaymentIdentifier)
		}
		writeFacilitatorJSON(w, http.StatusOK, resp)
	})
	return mux
}

// writeFacilitatorError answers an error of the facilitator: 503 with
// Retry-After when it says it is temporarily unavailable (an error with an
// Unavailable() bool method reporting true, e.g. a relayer out of gas),
// else 500.
func writeFacilitatorError(w http.ResponseWriter, prefix string, err error) {
	var u interface{ Unavailable() bool }
	if errors.As(err, &u) && u.Unavailable() {
		w.Header().Set("Retry-After", "5")
		writeFacilitatorJSON(w, http.StatusServiceUnavailable, map[string]string{"error": prefix + err.Error()})
		return
	}
	writeFacilitatorJSON(w, http.StatusInternalServerError, map[string]string{"error": prefix + err.Error()})
}

// refusalStatus is the HTTP status of a verify/settle answer: 200, except
// for the payment-identifier refusals, which the extension answers with
// 409 and 400.
func refusalStatus(ok bool, reason string) int {
	switch {
	case ok:
		return http.StatusOK
	case reason == x402.ReasonPaymentIdentifierConflict:
		return http.StatusConflict
	case reason == x402.ReasonInvalidPaymentIdentifier:
		return http.StatusBadRequest
	}
	return http.StatusOK
}

const msgIdentifierConflict = "this payment identifier was already used with another payment"

// errIdentifierConflict and errIdentifierWait are identifierCache.settle's
// refusals: the identifier is bound to another payment, or the caller
// stopped waiting for the settlement in flight under it.
var (
	errIdentifierConflict = errors.New("payment identifier bound to another payment")
	errIdentifierWait     = errors.New("gave up waiting for the settlement in flight under this payment identifier")
)

// identifierCache remembers successful settlements by payment identifier,
// bound to the fingerprint of their payment, for a bounded time and count.
type identifierCache struct {
	ttl time.Duration
	max int
	now func() time.Time

	mu    sync.Mutex
	m     map[string]*identifierEntry
	order *list.List // of *identifierEntry, settled ones, oldest first
}

// identifierEntry is one identifier: a settlement in flight (done open) or
// remembered (settled).
type identifierEntry struct {
	id, fingerprint string
	done            chan struct{}
	settled         bool
	resp            x402.SettleResponse
	at              time.Time
}

func newIdentifierCache(cfg HandlerConfig) *identifierCache {
	c := &identifierCache{ttl: cfg.IdentifierTTL, max: cfg.MaxIdentifiers, now: cfg.Now, m: make(map[string]*identifierEntry), order: list.New()}
	if c.ttl == 0 {
		c.ttl = DefaultIdentifierTTL
	}
	if c.max <= 0 {
		c.max = DefaultMaxIdentifiers
	}
	if c.now == nil {
		c.now = time.Now
	}
	return c
}

// prune forgets expired settlements and the oldest beyond the cap; c.mu is
// held.
func (c *identifierCache) prune() {
	limit := c.now().Add(-c.ttl)
	for el := c.order.Front(); el != nil; el = c.order.Front() {
		e := el.Value.(*identifierEntry)
		if c.order.Len() <= c.max && e.at.After(limit) {
			return
		}
		c.order.Remove(el)
		if c.m[e.id] == e {
			delete(c.m, e.id)
		}
	}
}

// conflicts reports whether id is bound (settled or in flight) to another
// payment than fingerprint.
func (c *identifierCache) conflicts(id, fingerprint string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.prune()
	e := c.m[id]
	return e != nil && e.fingerprint != fingerprint
}

// settle returns the settlement remembered under id for the same payment,
// waits for one in flight, or runs do and remembers its result if it is a
// success. An id bound to another payment is errIdentifierConflict.
func (c *identifierCache) settle(ctx context.Context, id, fingerprint string, do func() (x402.SettleResponse, error)) (x402.SettleResponse, error) {
	for {
		c.mu.Lock()
		c.prune()
		e := c.m[id]
		switch {
		case e == nil:
			e = &identifierEntry{id: id, fingerprint: fingerprint, done: make(chan struct{})}
			c.m[id] = e
			c.mu.Unlock()
			return c.run(e, do)
		case e.fingerprint != fingerprint:
			c.mu.Unlock()
			return x402.SettleResponse{}, errIdentifierConflict
		case e.settled:
			resp := e.resp
			c.mu.Unlock()
			return resp, nil
		}
		done := e.done
		c.mu.Unlock()
		select {
		case <-done:
		case <-ctx.Done():
			return x402.SettleResponse{}, fmt.Errorf("%w: %w", errIdentifierWait, ctx.Err())
		}
	}
}

// run settles for the in-flight entry e and records the outcome: a success
// is remembered, anything else frees the identifier.
func (c *identifierCache) run(e *identifierEntry, do func() (x402.SettleResponse, error)) (resp x402.SettleResponse, err error) {
	ok := false
	defer func() {
		c.mu.Lock()
		if ok {
			e.settled, e.resp, e.at = true, resp, c.now()
			c.order.PushBack(e)
			c.prune()
		} else if c.m[e.id] == e {
			delete(c.m, e.id)
		}
		close(e.done)
		c.mu.Unlock()
	}()
	resp, err = do()
	ok = err == nil && resp.Success
	return resp, err
}

// WithPaymentIdentifier returns payload ready to be presented (or presented
// again) for settlement with a payment identifier, and that identifier. A
// valid identifier the client sent is kept as it is. Without one, the copy
// carries an identifier derived from the authorization (network, asset,
// payer and nonce of req and the payload; for a payload that is not an
// EIP-3009 authorization, from the payload itself), the same every time
// the same payment goes through this function: a facilitator honouring the
// extension then answers a re-presentation of a settlement with the
// original result, and refuses the same authorization for other
// requirements (409). A malformed identifier is an error. payload itself
// is not modified (its Extensions map is copied).
func WithPaymentIdentifier(payload x402.PaymentPayload, req x402.PaymentRequirements) (x402.PaymentPayload, string, error) {
	id, err := x402.PaymentIdentifierOf(payload)
	if err != nil {
		return payload, "", err
	}
	if id != "" {
		return payload, id, nil
	}
	var basis string
	if p, err := exact.ParseExactEVMPayload(payload.Payload); err == nil {
		basis = "authorization\x00" + exact.NonceKey(req.Network, req.Asset, p.Authorization.From, p.Authorization.Nonce)
	} else {
		var b bytes.Buffer
		if err := json.Compact(&b, payload.Payload); err != nil || b.Len() == 0 {
			return payload, "", fmt.Errorf("x402: %s: cannot derive an identifier: the payload is not JSON", x402.ExtensionPaymentIdentifier)
		}
		basis = "payload\x00" + b.String()
	}
	sum := sha256.Sum256([]byte("x402 payment-identifier\x00" + basis))
	id = "pay_" + hex.EncodeToString(sum[:])

	ext := x402.DeclarePaymentIdentifier(false)
	ext["info"].(map[string]any)["id"] = id
	if old, ok := payload.Extensions[x402.ExtensionPaymentIdentifier].(map[string]any); ok {
		// Keep the echoed declaration (required flag, schema), adding the id.
		info := map[string]any{}
		if oi, ok := old["info"].(map[string]any); ok {
			maps.Copy(info, oi)
		}
		info["id"] = id
		ext = maps.Clone(old)
		ext["info"] = info
	}
	exts := make(map[string]any, len(payload.Extensions)+1)
	maps.Copy(exts, payload.Extensions)
	exts[x402.ExtensionPaymentIdentifier] = ext
	payload.Extensions = exts
	return payload, id, nil
}

// identifierScope returns the key under which a payment identifier is
// remembered: scoped by the receiving address, so that two merchants'
// clients choosing the same identifier do not collide.
func identifierScope(id string, req x402.PaymentRequirements) string {
	if id == "" {
		return ""
	}
	return strings.ToLower(req.PayTo) + " " + id
}

// paymentFingerprint identifies what a payment pays, for binding a payment
// identifier to it: the requirements' scheme, network, asset, amount and
// payTo, and the signed authorization (or the payload itself when it is
// not an EIP-3009 authorization). Case-insensitive parts are lowered and
// v1 network names replaced by CAIP-2 ids, so that a re-encoded
// re-presentation of the same payment has the same fingerprint.
func paymentFingerprint(payload x402.PaymentPayload, req x402.PaymentRequirements) string {
	network := req.Network
	if n, ok := x402.LookupNetwork(network); ok {
		network = n.CAIP2
	}
	parts := []string{"x402 payment fingerprint", req.Scheme, strings.ToLower(network), strings.ToLower(req.Asset), req.Amount, strings.ToLower(req.PayTo)}
	if p, err := exact.ParseExactEVMPayload(payload.Payload); err == nil {
		a := p.Authorization
		parts = append(parts, "eip3009", strings.ToLower(p.Signature), strings.ToLower(a.From), strings.ToLower(a.To),
			a.Value, a.ValidAfter, a.ValidBefore, strings.ToLower(a.Nonce))
	} else {
		var b bytes.Buffer
		if json.Compact(&b, payload.Payload) != nil {
			b.Reset()
			b.Write(payload.Payload)
		}
		parts = append(parts, "raw", b.String())
	}
	sum := sha256.Sum256([]byte(strings.Join(parts, "\x00")))
	return hex.EncodeToString(sum[:])
}

// facilitatorV1Requirements is the v1 shape of paymentRequirements.
type facilitatorV1Requirements struct {
	Scheme            string         `json:"scheme"`
	Network           string         `json:"network"`
	MaxAmountRequired string         `json:"maxAmountRequired"`
	Resource          string         `json:"resource"`
	Description       string         `json:"description"`
	MimeType          string         `json:"mimeType"`
	PayTo             string         `json:"payTo"`
	MaxTimeoutSeconds int            `json:"maxTimeoutSeconds"`
	Asset             string         `json:"asset"`
	Extra             map[string]any `json:"extra"`
}

// facilitatorV1Payload is the v1 shape of paymentPayload.
type facilitatorV1Payload struct {
	X402Version int             `json:"x402Version"`
	Scheme      string          `json:"scheme"`
	Network     string          `json:"network"`
	Payload     json.RawMessage `json:"payload"`
}

// readFacilitatorRequest decodes a verify/settle body; on failure it has
// already written the error answer.
func readFacilitatorRequest(w http.ResponseWriter, r *http.Request) (x402.PaymentPayload, x402.PaymentRequirements, bool) {
	fail := func(status int, msg string) (x402.PaymentPayload, x402.PaymentRequirements, bool) {
		writeFacilitatorJSON(w, status, map[string]string{"error": msg})
		return x402.PaymentPayload{}, x402.PaymentRequirements{}, false
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxRequestBytes))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return fail(http.StatusRequestEntityTooLarge, "request body too large")
		}
		return fail(http.StatusBadRequest, "cannot read the request body")
	}
	var env struct {
		X402Version         *int            `json:"x402Version"`
		PaymentPayload      json.RawMessage `json:"paymentPayload"`
		PaymentRequirements json.RawMessage `json:"paymentRequirements"`
	}
	if err := json.Unmarshal(body, &env); err != nil || !wire.IsJSONObject(body) {
		return fail(http.StatusBadRequest, "body must be a JSON object {x402Version, paymentPayload, paymentRequirements}")
	}
	if env.X402Version == nil {
		return fail(http.StatusBadRequest, "x402Version is required")
	}
	if !wire.IsJSONObject(env.PaymentPayload) || !wire.IsJSONObject(env.PaymentRequirements) {
		return fail(http.StatusBadRequest, "paymentPayload and paymentRequirements must be JSON objects")
	}
	switch *env.X402Version {
	case 2:
		var p x402.PaymentPayload
		var req x402.PaymentRequirements
		if err := json.Unmarshal(env.PaymentPayload, &p); err != nil {
			return fail(http.StatusBadRequest, "paymentPayload: "+wire.JSONErrorSummary(err))
		}
		if err := json.Unmarshal(env.PaymentRequirements, &req); err != nil {
			return fail(http.StatusBadRequest, "paymentRequirements: "+wire.JSONErrorSummary(err))
		}
		if p.X402Version != 2 {
			return fail(http.StatusBadRequest, "paymentPayload.x402Version must equal x402Version")
		}
		return p, req, true
	case 1:
		var p facilitatorV1Payload
		var req facilitatorV1Requirements
		if err := json.Unmarshal(env.PaymentPayload, &p); err != nil {
			return fail(http.StatusBadRequest, "paymentPayload: "+wire.JSONErrorSummary(err))
		}
		if err := json.Unmarshal(env.PaymentRequirements, &req); err != nil {
			return fail(http.StatusBadRequest, "paymentRequirements: "+wire.JSONErrorSummary(err))
		}
		if p.X402Version != 1 {
			return fail(http.StatusBadRequest, "paymentPayload.x402Version must equal x402Version")
		}
		return x402.PaymentPayload{
				X402Version: 1,
				Accepted:    x402.PaymentRequirements{Scheme: p.Scheme, Network: p.Network},
				Payload:     p.Payload,
			}, x402.PaymentRequirements{
				Scheme:            req.Scheme,
				Network:           req.Network,
				Amount:            req.MaxAmountRequired,
				Asset:             req.Asset,
				PayTo:             req.PayTo,
				MaxTimeoutSeconds: req.MaxTimeoutSeconds,
				Extra:             req.Extra,
			}, true
	default:
		return fail(http.StatusBadRequest, "x402Version must be 1 or 2")
	}
}

// writeFacilitatorJSON writes v as a JSON answer with the given status.
func writeFacilitatorJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status = http.StatusInternalServerError
		b = []byte(`{"error":"cannot encode the response"}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}

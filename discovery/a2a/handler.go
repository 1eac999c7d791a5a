package a2a

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/seed1284c1d2/svc/discovery"
	"github.com/seed1284c1d2/svc/internal/clip"
	"github.com/seed1284c1d2/svc/tools/sell"
	"github.com/seed1284c1d2/svc/wire"
	x402a2a "github.com/seed1284c1d2/svc/x402/a2a"
	"github.com/seed1284c1d2/svc/x402/engine"
)

// Defaults of Options.
const (
	// DefaultMaxBodyBytes bounds a request body (1 MiB).
	DefaultMaxBodyBytes int64 = 1 << 20
	// DefaultMaxTasks is how many tasks the store keeps.
	DefaultMaxTasks = 1000
	// DefaultMaxStoreBytes bounds the approximate memory of the stored tasks (64 MiB).
	DefaultMaxStoreBytes int64 = 64 << 20
	// DefaultTaskTTL is how long a task can be read back with GetTask / tasks/get.
	DefaultTaskTTL = time.Hour
)

// Options configure the /a2a handler. The zero value gives the defaults.
type Options struct {
	// MaxBodyBytes bounds a request body; 0 means DefaultMaxBodyBytes.
	MaxBodyBytes int64
	// MaxTasks is the number of tasks kept for GetTask; 0 means
	// DefaultMaxTasks. The least recently used task goes first.
	MaxTasks int
	// MaxStoreBytes bounds the approximate size of the kept tasks (their
	// messages, plans and texts); 0 means DefaultMaxStoreBytes.
	MaxStoreBytes int64
	// TaskTTL is how long a task is kept after its creation; 0 means
	// DefaultTaskTTL.
	TaskTTL time.Duration
	// Now is the clock (task timestamps, expiry); nil means time.Now.
	Now func() time.Time
	// Logger receives internal errors; nil discards them.
	Logger *slog.Logger

	// Selling the paid tools (the a2a-x402 extension). With Engine nil the
	// agent only discovers: a message asking for a paid tool is -32004.

	// Engine runs the paid calls: the same engine as the HTTP and MCP
	// sellers, so that one authorization buys one call on one transport.
	// Shop is then required.
	Engine *engine.Engine
	// Shop is the seller of the catalog's tools (offers over Engine,
	// preflight, runs), shared with the other transports.
	Shop *sell.Shop
	// ToolTimeout bounds one paid tool run; 0 means
	// seller.DefaultRunTimeout.
	// The engine's RunTimeout bounds it too.
	ToolTimeout time.Duration
	// RequestID and RefCode, when set, read the request id and the referral
	// code recorded with a payment from the HTTP request (the message id
	// is the request id otherwise).
	RequestID func(r *http.Request) string
	RefCode   func(r *http.Request) string
	// AdmitUnpaid, AdmitPayment and PaymentRefused are the server's limits
	// of unpaid calls and refused payments per client address: a message
	// asking for a tool without payment passes AdmitUnpaid (else its task
	// fails, no payment asked), a payment AdmitPayment (else the task
	// waits for the same payment again, nothing run); each refused payment
	// is told to PaymentRefused. Nil means no limit.
	AdmitUnpaid    func(r *http.Request) (ok bool, retryAfter time.Duration)
	AdmitPayment   func(r *http.Request) (ok bool, retryAfter time.Duration)
	PaymentRefused func(r *http.Request)
}

// handler answers A2A JSON-RPC requests (1.0 and 0.3) at one endpoint.
// Create it with NewHandler; it is safe for concurrent use.
type handler struct {
	s       discovery.Surfaces
	maxBody int64
	store   *taskStore
	now     func() time.Time
	log     *slog.Logger
	newID   func() string
	// sell sells the paid tools; nil when the agent only discovers.
	sell *paidSeller
}

// NewHandler returns the handler of POST /a2a answering through s (the
// discovery Service): A2A 1.0 and 0.3 JSON-RPC on one endpoint, with its
// own bounded task store. With opts.Engine it also sells every tool of
// opts.Catalog through the a2a-x402 extension (see the package
// documentation). It fails when s is nil, an option is negative, or the
// selling options are incomplete (no Catalog, an invalid PayTo or network).
// Mount it at /a2a; serve the agent card with discovery's
// AgentCardHandler.
func NewHandler(s discovery.Surfaces, opts Options) (http.Handler, error) {
	h, err := newHandler(s, opts)
	if err != nil {
		return nil, err
	}
	return h, nil
}

func newHandler(s discovery.Surfaces, opts Options) (*handler, error) {
	if s == nil {
		return nil, errors.New("a2a: NewHandler needs a discovery.Surfaces")
	}
	if opts.MaxBodyBytes < 0 || opts.MaxTasks < 0 || opts.MaxStoreBytes < 0 || opts.TaskTTL < 0 {
		return nil, fmt.Errorf("a2a: negative option (MaxBodyBytes %d, MaxTasks %d, MaxStoreBytes %d, TaskTTL %s)",
			opts.MaxBodyBytes, opts.MaxTasks, opts.MaxStoreBytes, opts.TaskTTL)
	}
	h := &handler{s: s, maxBody: opts.MaxBodyBytes, now: opts.Now, log: opts.Logger, newID: newUUID}
	if h.maxBody == 0 {
		h.maxBody = DefaultMaxBodyBytes
	}
	if h.now == nil {
		h.now = time.Now
	}
	if h.log == nil {
		h.log = slog.New(slog.DiscardHandler)
	}
	maxTasks, maxBytes, ttl := opts.MaxTasks, opts.MaxStoreBytes, opts.TaskTTL
	if maxTasks == 0 {
		maxTasks = DefaultMaxTasks
	}
	if maxBytes == 0 {
		maxBytes = DefaultMaxStoreBytes
	}
	if ttl == 0 {
		ttl = DefaultTaskTTL
	}
	h.store = newTaskStore(maxTasks, maxBytes, ttl, h.now)
	sell, err := newSeller(opts)
	if err != nil {
		return nil, err
	}
	h.sell = sell
	return h, nil
}

// version is a protocol version this server speaks.
type version int

const (
	v03 version = iota
	v10
)

func (v version) String() string {
	if v == v10 {
		return wire.A2AVersion
	}
	return wire.A2ALegacyVersion
}

// versionPattern is Major.Minor with an optional patch.
var versionPattern = regexp.MustCompile(`^(\d{1,4})\.(\d{1,4})(?:\.\d{1,6})?$`)

// requestVersion reads A2A-Version (header first, then query parameter).
// Missing or empty means 0.3. ok is false for a version not spoken here;
// raw is what the caller sent.
func requestVersion(r *http.Request) (v version, raw string, ok bool) {
	raw = strings.TrimSpace(r.Header.Get("A2A-Version"))
	if raw == "" {
		raw = strings.TrimSpace(r.URL.Query().Get("A2A-Version"))
	}
	if raw == "" {
		return v03, "", true
	}
	m := versionPattern.FindStringSubmatch(raw)
	if m == nil {
		return v03, raw, false
	}
	major, _ := strconv.Atoi(m[1])
	minor, _ := strconv.Atoi(m[2])
	switch {
	case major == 1 && minor == 0:
		return v10, raw, true
	case major == 0 && minor == 3:
		return v03, raw, true
	}
	return v03, raw, false
}

// wireRequest is a JSON-RPC request as read, before validation.
type wireRequest struct {
	JSONRPC json.RawMessage `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Method  json.RawMessage `json:"method"`
	Params  json.RawMessage `json:"params"`
}

// ServeHTTP answers one JSON-RPC request.
func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	hv, _, _ := requestVersion(r)
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		h.writeError(w, http.StatusMethodNotAllowed, nil, hv,
			newError(CodeInvalidRequest, "method %s not allowed: send JSON-RPC requests with POST", r.Method))
		return
	}
	if ct := r.Header.Get("Content-Type"); ct != "" && !isJSONMediaType(ct) {
		h.writeError(w, http.StatusUnsupportedMediaType, nil, hv,
			newError(CodeInvalidRequest, "Content-Type %q not supported: send application/json", clip.Runes(ct, 60)))
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, h.maxBody))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			h.writeError(w, http.StatusRequestEntityTooLarge, nil, hv,
				newError(CodeInvalidRequest, "request body larger than %d bytes", h.maxBody))
			return
		}
		h.writeError(w, http.StatusBadRequest, nil, hv, newError(CodeParseError, "reading the request body: %v", err))
		return
	}
	ctx := r.Context()
	if h.sell != nil {
		ri := requestInfo{r: r, activated: x402a2a.Activated(r.Header)}
		if ri.activated {
			// The extension is active for this request: say so, in both
			// versions' spellings.
			w.Header().Set(x402a2a.HeaderExtensions, x402a2a.ExtensionURI)
			w.Header().Set(x402a2a.HeaderExtensionsV03, x402a2a.ExtensionURI)
		}
		ctx = context.WithValue(ctx, requestInfoKey{}, ri)
	}
	id, res, rpcErr, v := h.handle(ctx, r, body)
	if rpcErr != nil {
		if rpcErr.code == CodeInternalError {
			level := slog.LevelError
			if errors.Is(rpcErr.cause, context.Canceled) || errors.Is(rpcErr.cause, context.DeadlineExceeded) {
				level = slog.LevelDebug // the caller went away
			}
			h.log.LogAttrs(ctx, level, "a2a: internal error", slog.Any("error", rpcErr.cause))
		}
		h.writeError(w, http.StatusOK, id, v, rpcErr)
		return
	}
	h.write(w, http.StatusOK, wireResponse{JSONRPC: "2.0", ID: id, Result: res})
}

// handle validates the JSON-RPC envelope and dispatches. It returns the id
// to echo, and either a result or an error with the version to shape it in.
func (h *handler) handle(ctx context.Context, r *http.Request, body []byte) (json.RawMessage, any, *rpcError, version) {
	hv, rawVersion, versionOK := requestVersion(r)
	trimmed := bytes.TrimLeft(body, " \t\r\n")
	if !json.Valid(body) {
		return nil, nil, newError(CodeParseError, "parse error: the body is not valid JSON"), hv
	}
	if len(trimmed) > 0 && trimmed[0] == '[' {
		return nil, nil, newError(CodeInvalidRequest, "invalid request: batch requests are not supported; send one JSON-RPC request object per POST"), hv
	}
	if len(trimmed) == 0 || trimmed[0] != '{' {
		return nil, nil, newError(CodeInvalidRequest, "invalid request: the body must be a JSON-RPC 2.0 request object"), hv
	}
	var req wireRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return nil, nil, newError(CodeInvalidRequest, "invalid request: %v", err), hv
	}
	// The id first, so that later errors can echo it.
	var id json.RawMessage
	switch {
	case req.ID == nil:
		return nil, nil, newError(CodeInvalidRequest, `invalid request: "id" is required (A2A defines no notifications)`), hv
	case isJSONString(req.ID) || isJSONNumber(req.ID) || string(req.ID) == "null":
		id = req.ID
	default:
		return nil, nil, newError(CodeInvalidRequest, `invalid request: "id" must be a string, a number or null`), hv
	}
	if string(req.JSONRPC) != `"2.0"` {
		return id, nil, newError(CodeInvalidRequest, `invalid request: "jsonrpc" must be "2.0"`), hv
	}
	var method string
	if req.Method == nil || json.Unmarshal(req.Method, &method) != nil || method == "" {
		return id, nil, newError(CodeInvalidRequest, `invalid request: "method" must be a non-empty string`), hv
	}
	m, known := lookupMethod(method)
	v := hv
	if known {
		v = m.version
	}
	if !versionOK {
		return id, nil, newError(CodeVersionNotSupported, "A2A-Version %q is not supported; supported versions: 1.0, 0.3", clip.Runes(rawVersion, 40)).
			with("requestedVersion", clip.Runes(rawVersion, 40)).with("supportedVersions", "1.0,0.3"), v
	}
	if !known {
		return id, nil, newError(CodeMethodNotFound, "method not found: %q is neither an A2A 1.0 nor an A2A 0.3 method", clip.Runes(method, 60)), v
	}
	params := bytes.TrimSpace(req.Params)
	if len(params) == 0 || string(params) == "null" {
		params = nil
	} else if params[0] != '{' {
		return id, nil, invalidParam("params", "object", "params must be a JSON object"), v
	}
	res, err := m.call(h, ctx, m.version, params)
	if err != nil {
		var re *rpcError
		if !errors.As(err, &re) {
			re = newError(CodeInternalError, "internal error")
			re.cause = fmt.Errorf("%s: %w", method, err)
		}
		return id, nil, re, v
	}
	return id, res, nil, v
}

// write sends a JSON-RPC response.
func (h *handler) write(w http.ResponseWriter, status int, resp wireResponse) {
	if resp.ID == nil {
		resp.ID = json.RawMessage("null")
	}
	b, err := json.Marshal(resp)
	if err != nil {
		h.log.Error("a2a: encoding the response", slog.Any("error", err))
		status = http.StatusOK
		b = []byte(`{"jsonrpc":"2.0","id":null,"error":{"code":-32603,"message":"internal error"}}`)
		if resp.ID != nil {
			b = fmt.Appendf(nil, `{"jsonrpc":"2.0","id":%s,"error":{"code":-32603,"message":"internal error"}}`, resp.ID)
		}
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}

// writeError sends a JSON-RPC error shaped for v.
func (h *handler) writeError(w http.ResponseWriter, status int, id json.RawMessage, v version, e *rpcError) {
	we := e.shape(v)
	h.write(w, status, wireResponse{JSONRPC: "2.0", ID: id, Error: &we})
}

// isJSONMediaType accepts application/json and application/*+json.
func isJSONMediaType(ct string) bool {
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil {
		return false
	}
	return mt == "application/json" || (strings.HasPrefix(mt, "application/") && strings.HasSuffix(mt, "+json"))
}

func isJSONString(raw json.RawMessage) bool { return len(raw) > 0 && raw[0] == '"' }

func isJSONNumber(raw json.RawMessage) bool {
	return len(raw) > 0 && (raw[0] == '-' || (raw[0] >= '0' && raw[0] <= '9'))
}

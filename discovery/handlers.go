package discovery

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/seed1284c1d2/svc"
	"github.com/seed1284c1d2/svc/discovery/documents"
	"github.com/seed1284c1d2/svc/discovery/routedoc"
	"github.com/seed1284c1d2/svc/internal/clip"
	"github.com/seed1284c1d2/svc/wire"
)

// Route is one HTTP route of the discovery surfaces, in the shape of
// httpserver.Route (convert with httpserver.Route(r)): Pattern is an
// http.ServeMux pattern with a method ("GET /api/find"), Free marks a free
// route (rate-limited per client and body-bounded by the server), BodyLimit
// is the most body the route needs (zero: the server's limit).
type Route struct {
	Pattern   string
	Handler   http.Handler
	Free      bool
	BodyLimit int64
}

// ownRoute is a route this package serves: its description and handler.
type ownRoute struct {
	doc     routedoc.Route
	handler http.Handler
}

// Media types and cache policies of the answers.
const (
	// QueryCacheControl is the Cache-Control of the GET answers computed
	// from the query (find, catalog, try).
	QueryCacheControl = "public, max-age=60"
	// MaxRouteBodyBytes bounds the body of POST /api/route (a need and an
	// input to check: kilobytes; a large input is checked by its tool's own
	// route, which asks no payment for an invalid one).
	MaxRouteBodyBytes = 64 << 10
	// MaxQueryBodyBytes bounds the body of the other routes, which read
	// none (GET).
	MaxQueryBodyBytes = 1 << 10
	jsonContentType   = "application/json"
)

// Routes returns every route this package serves, to mount on the server
// (all free): /api/find, /api/route, /api/catalog, /api/try,
// /openapi.json, /skill.md, the manifests, the agent card (two paths), the
// three stats routes, the landing page (/, the root alone), /llms.txt,
// /robots.txt and /server.json.
func (s *Service) Routes() []Route {
	out := make([]Route, len(s.own))
	for i, o := range s.own {
		path := o.doc.Path
		if path == documents.PathLanding {
			path = "/{$}" // the root alone, not every path
		}
		limit := int64(MaxQueryBodyBytes)
		if o.doc.Path == "/api/route" {
			limit = MaxRouteBodyBytes
		}
		out[i] = Route{Pattern: o.doc.Method + " " + path, Handler: o.handler, Free: true, BodyLimit: limit}
	}
	return out
}

// Handler returns an http.Handler serving Routes alone (for tests and for
// embedding without httpserver; 404 and 405 are net/http's).
func (s *Service) Handler() http.Handler {
	mux := http.NewServeMux()
	for _, r := range s.Routes() {
		mux.Handle(r.Pattern, r.Handler)
	}
	return mux
}

// ownRoutes lists the routes of this package with their handlers (the
// documents once built).
func (s *Service) ownRoutes() []ownRoute {
	statsRoute := func(surface, purpose string) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			discWriteJSON(w, http.StatusOK, "no-store", s.stats.Snapshot(surface, purpose))
		})
	}
	docs := s.ownRouteDocs()
	handlers := map[string]http.Handler{
		"/api/find":               http.HandlerFunc(s.serveFind),
		"/api/route":              http.HandlerFunc(s.serveRoute),
		"/api/catalog":            http.HandlerFunc(s.serveCatalog),
		"/api/try":                http.HandlerFunc(s.serveTry),
		"/api/amplifier/stats":    statsRoute("amplifier", "aggregate inbound telemetry counters, including requests per minute"),
		"/api/distribution/stats": statsRoute("distribution", "aggregate inbound telemetry counters"),
		"/api/magnet/stats":       statsRoute("magnet", "privacy-safe scanner aggregates"),
	}
	out := make([]ownRoute, 0, len(docs))
	for _, d := range docs {
		h := handlers[d.Path]
		if h == nil {
			h = s.docs.Handler(d.Path) // a document
		}
		out = append(out, ownRoute{doc: d, handler: h})
	}
	return out
}

// serveFind answers GET /api/find?q=&limit=.
func (s *Service) serveFind(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	var errs []svc.FieldError
	limit, ok := discQueryInt(q.Get("limit"), "limit", &errs)
	if ok && q.Get("limit") != "" && limit == 0 {
		errs = append(errs, svc.FieldError{Field: "limit", Rule: "range", Message: fmt.Sprintf("limit: must be between 1 and %d, got 0", MaxFindLimit)})
	}
	if len(errs) > 0 {
		if err := discCheckQuery("q", q.Get("q")); err != nil {
			errs = append(discFieldsOf(err), errs...) // report q too
		}
		discWriteProblem(w, r, &svc.Error{Kind: svc.KindInvalid, Message: "invalid input", Fields: errs})
		return
	}
	res, err := s.Find(r.Context(), q.Get("q"), limit)
	if err != nil {
		discWriteProblem(w, r, err)
		return
	}
	discWriteJSON(w, http.StatusOK, QueryCacheControl, res)
}

// serveCatalog answers GET /api/catalog?offset=&limit=&q=&category=.
func (s *Service) serveCatalog(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	var errs []svc.FieldError
	offset, _ := discQueryInt(q.Get("offset"), "offset", &errs)
	limit, ok := discQueryInt(q.Get("limit"), "limit", &errs)
	if ok && q.Get("limit") != "" && limit == 0 {
		errs = append(errs, svc.FieldError{Field: "limit", Rule: "range", Message: fmt.Sprintf("limit: must be between 1 and %d, got 0", MaxCatalogLimit)})
	}
	if len(errs) > 0 {
		discWriteProblem(w, r, &svc.Error{Kind: svc.KindInvalid, Message: "invalid input", Fields: errs})
		return
	}
	page, err := s.Catalog(r.Context(), q.Get("q"), q.Get("category"), offset, limit)
	if err != nil {
		discWriteProblem(w, r, err)
		return
	}
	discWriteJSON(w, http.StatusOK, QueryCacheControl, page)
}

// serveTry answers GET /api/try?q=.
func (s *Service) serveTry(w http.ResponseWriter, r *http.Request) {
	res, err := s.Try(r.Context(), r.URL.Query().Get("q"))
	if err != nil {
		discWriteProblem(w, r, err)
		return
	}
	discWriteJSON(w, http.StatusOK, QueryCacheControl, res)
}

// RouteRequest is the body of POST /api/route: a need in words and,
// optionally, the input to validate and plan with.
type RouteRequest struct {
	Query string          `json:"query"`
	Input json.RawMessage `json:"input,omitempty"`
}

// serveRoute answers POST /api/route with a strict JSON body {query,
// input}: unknown members, a non-object body, wrong types, malformed JSON
// and data after the object are 400.
func (s *Service) serveRoute(w http.ResponseWriter, r *http.Request) {
	limit := min(s.cfg.Catalog.BodyLimit(), MaxRouteBodyBytes)
	body, err := io.ReadAll(io.LimitReader(r.Body, limit+1))
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) || int64(len(body)) > limit {
		discWriteProblem(w, r, &svc.Error{Kind: svc.KindTooLarge, Message: fmt.Sprintf("the request body is over the limit of %d bytes", limit),
			Fields: []svc.FieldError{{Field: "", Rule: "max_bytes", Message: fmt.Sprintf("body: at most %d bytes", limit)}}})
		return
	}
	if err != nil {
		discWriteProblem(w, r, &svc.Error{Kind: svc.KindInvalid, Message: "the request body could not be read",
			Fields: []svc.FieldError{{Field: "", Rule: "json", Message: "body: could not be read"}}})
		return
	}
	req, err := discDecodeRouteRequest(body)
	if err != nil {
		discWriteProblem(w, r, err)
		return
	}
	plan, err := s.Route(r.Context(), req.Query, req.Input)
	if err != nil {
		discWriteProblem(w, r, err)
		return
	}
	discWriteJSON(w, http.StatusOK, "no-store", plan)
}

// discDecodeRouteRequest decodes the body of POST /api/route strictly.
func discDecodeRouteRequest(body []byte) (RouteRequest, error) {
	var req RouteRequest
	body = bytes.TrimPrefix(body, []byte("\xef\xbb\xbf"))
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) == 0 {
		return req, svc.InvalidField("query", "required", "query is required: the body must be a JSON object {\"query\": \"...\", \"input\": {...}}")
	}
	if trimmed[0] != '{' {
		return req, svc.InvalidField("", "object", "body: must be a JSON object {\"query\": \"...\", \"input\": {...}}")
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		return req, discJSONError(body, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return req, svc.InvalidField("", "json", "body: data after the JSON object (at byte %d)", dec.InputOffset())
	}
	return req, nil
}

// discJSONError turns an encoding/json error into a field error.
func discJSONError(body []byte, err error) error {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		line, col := discLineCol(body, syn.Offset)
		return svc.InvalidField("", "json", "body: malformed JSON at line %d, column %d (byte %d): %s", line, col, syn.Offset, syn.Error())
	case errors.As(err, &typ):
		field := typ.Field
		want := typ.Type.Kind().String()
		if field == "" {
			return svc.InvalidField("", "object", "body: must be a JSON object, got %s", typ.Value)
		}
		if want == "slice" {
			want = "object"
		}
		return svc.InvalidField(field, want, "%s: must be a %s, got %s", field, want, typ.Value)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return svc.InvalidField("", "json", "body: the JSON object is cut short")
	}
	if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		name = strings.Trim(name, `"`)
		return svc.InvalidField(clip.Runes(name, 40), "unknown_field", "%s: unknown member; allowed: query, input", clip.Runes(name, 40))
	}
	return svc.InvalidField("", "json", "body: malformed JSON")
}

// discLineCol returns the 1-based line and column of a byte offset.
func discLineCol(b []byte, off int64) (int, int) {
	if off > int64(len(b)) {
		off = int64(len(b))
	}
	line, col := 1, 1
	for _, c := range b[:off] {
		if c == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
	}
	return line, col
}

// discQueryInt parses an optional integer query parameter; "" is 0. A
// malformed value adds a field error (rule "integer").
func discQueryInt(v, field string, errs *[]svc.FieldError) (int, bool) {
	if v == "" {
		return 0, true
	}
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil {
		*errs = append(*errs, svc.FieldError{Field: field, Rule: "integer", Message: fmt.Sprintf("%s: must be an integer, got %q", field, clip.Runes(v, 20))})
		return 0, false
	}
	return n, true
}

// discProblem is an RFC 9457 problem, in the shape httpserver writes.
type discProblem struct {
	Type      string           `json:"type"`
	Title     string           `json:"title"`
	Status    int              `json:"status"`
	Detail    string           `json:"detail,omitempty"`
	Instance  string           `json:"instance,omitempty"`
	Code      string           `json:"code"`
	Errors    []svc.FieldError `json:"errors,omitempty"`
	RequestID string           `json:"requestId,omitempty"`
}

// discWriteProblem writes err as application/problem+json: KindInvalid is
// 400 with the field errors, KindTooLarge 413, anything else 500 with a
// detail that reveals nothing.
func discWriteProblem(w http.ResponseWriter, r *http.Request, err error) {
	p := discProblem{Status: http.StatusInternalServerError, Code: string(svc.KindInternal), Detail: "internal error"}
	var se *svc.Error
	if errors.As(err, &se) && se != nil {
		switch se.Kind {
		case svc.KindInvalid:
			p.Status, p.Code, p.Detail, p.Errors = http.StatusBadRequest, string(se.Kind), se.Message, se.Fields
		case svc.KindTooLarge:
			p.Status, p.Code, p.Detail, p.Errors = http.StatusRequestEntityTooLarge, string(se.Kind), se.Message, se.Fields
		}
	}
	if p.Detail == "" {
		p.Detail = http.StatusText(p.Status)
	}
	if len(p.Errors) == 0 {
		p.Errors = nil
	}
	p.Type = wire.ProblemTypePrefix + p.Code
	p.Title = http.StatusText(p.Status)
	p.Instance = clip.Runes(r.URL.Path, 200)
	if id := r.Header.Get(wire.HeaderRequestID); id != "" && len(id) <= 128 {
		p.RequestID = id
	}
	b, _ := json.Marshal(p)
	h := w.Header()
	h.Set("Content-Type", wire.ProblemContentType)
	h.Set("Cache-Control", "no-store")
	w.WriteHeader(p.Status)
	_, _ = w.Write(append(b, '\n'))
}

// discWriteJSON writes v as JSON (no HTML escaping).
func discWriteJSON(w http.ResponseWriter, status int, cache string, v any) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		http.Error(w, `{"ok":false}`, http.StatusInternalServerError)
		return
	}
	h := w.Header()
	h.Set("Content-Type", jsonContentType)
	h.Set("Cache-Control", cache)
	h.Set("Content-Length", strconv.Itoa(buf.Len()))
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

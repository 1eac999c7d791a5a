package a2a

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	svc "github.com/seed1284c1d2/svc"
	"github.com/seed1284c1d2/svc/discovery"
)

func TestEnvelopeErrors(t *testing.T) {
	env := newTestEnv(t, Options{})
	for _, tc := range []struct {
		name, body string
		code       int
		id         string
	}{
		{"not JSON", `{"jsonrpc":"2.0","id":1,"method":`, CodeParseError, "null"},
		{"empty body", ``, CodeParseError, "null"},
		{"garbage", `hello`, CodeParseError, "null"},
		{"batch", `[{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"x"}}]`, CodeInvalidRequest, "null"},
		{"empty batch", `[]`, CodeInvalidRequest, "null"},
		{"scalar", `42`, CodeInvalidRequest, "null"},
		{"no id", `{"jsonrpc":"2.0","method":"GetTask","params":{"id":"x"}}`, CodeInvalidRequest, "null"},
		{"object id", `{"jsonrpc":"2.0","id":{"a":1},"method":"GetTask"}`, CodeInvalidRequest, "null"},
		{"bool id", `{"jsonrpc":"2.0","id":true,"method":"GetTask"}`, CodeInvalidRequest, "null"},
		{"no jsonrpc", `{"id":"a","method":"GetTask","params":{"id":"x"}}`, CodeInvalidRequest, `"a"`},
		{"jsonrpc 1.0", `{"jsonrpc":"1.0","id":"a","method":"GetTask"}`, CodeInvalidRequest, `"a"`},
		{"jsonrpc number", `{"jsonrpc":2.0,"id":3,"method":"GetTask"}`, CodeInvalidRequest, `3`},
		{"no method", `{"jsonrpc":"2.0","id":3}`, CodeInvalidRequest, `3`},
		{"method number", `{"jsonrpc":"2.0","id":3,"method":5}`, CodeInvalidRequest, `3`},
		{"empty method", `{"jsonrpc":"2.0","id":3,"method":""}`, CodeInvalidRequest, `3`},
		{"params string", `{"jsonrpc":"2.0","id":3,"method":"GetTask","params":"x"}`, CodeInvalidParams, `3`},
		{"params array", `{"jsonrpc":"2.0","id":3,"method":"tasks/get","params":["x"]}`, CodeInvalidParams, `3`},
	} {
		for _, hv := range []string{"1.0", "-"} {
			ex := env.post(t, hv, tc.body)
			if ex.status != http.StatusOK || ex.resp.Error == nil || ex.resp.Error.Code != tc.code {
				t.Fatalf("%s (A2A-Version %s): status %d, answer %s; want error %d", tc.name, hv, ex.status, ex.raw, tc.code)
			}
			if string(ex.resp.ID) != tc.id {
				t.Fatalf("%s: id %s, want %s", tc.name, ex.resp.ID, tc.id)
			}
			if !strings.Contains(string(ex.raw), `"id":`) {
				t.Fatalf("%s: the id member is missing: %s", tc.name, ex.raw)
			}
		}
	}
}

func TestIDEchoedVerbatim(t *testing.T) {
	env := newTestEnv(t, Options{})
	for _, id := range []string{`0`, `-17`, `12345678901234567890`, `1.5`, `"x"`, `""`, `"ünï\"cödé"`, `null`} {
		ex := env.post(t, "1.0", `{"jsonrpc":"2.0","method":"GetTask","params":{"id":"nope"},"id":`+id+`}`)
		if string(ex.resp.ID) != id {
			t.Fatalf("id %s echoed as %s", id, ex.resp.ID)
		}
		if ex.resp.Error == nil || ex.resp.Error.Code != CodeTaskNotFound {
			t.Fatalf("id %s: %s", id, ex.raw)
		}
	}
}

func TestVersionHeader(t *testing.T) {
	env := newTestEnv(t, Options{})
	body := func(method string, v version) string {
		return request(t, `1`, method, obj{"message": textMessage(v, "m", "decode a JWT")})
	}
	// Supported: 1.0 and 0.3, with or without a patch, or none (= 0.3).
	for _, hv := range []string{"1.0", "1.0.2", " 1.0 ", "0.3", "0.3.0", "-", ""} {
		for _, v := range bothVersions {
			ex := env.post(t, hv, body(sendMethod(v), v))
			if ex.resp.Error != nil {
				t.Fatalf("A2A-Version %q with %s: %s", hv, sendMethod(v), ex.raw)
			}
			// The method decides the shape, whatever the header says.
			decodeTask(t, v, ex.resp.Result, true)
		}
	}
	// Unsupported versions: -32009 in the method's shape.
	for _, hv := range []string{"2.0", "0.2", "0.2.5", "1.1", "1", "v1.0", "latest", "1.0-beta"} {
		for _, v := range bothVersions {
			ex := env.post(t, hv, body(sendMethod(v), v))
			if ex.status != http.StatusOK || ex.resp.Error == nil || ex.resp.Error.Code != CodeVersionNotSupported {
				t.Fatalf("A2A-Version %q: %s", hv, ex.raw)
			}
			if !strings.Contains(ex.resp.Error.Message, "1.0") || !strings.Contains(ex.resp.Error.Message, "0.3") {
				t.Fatalf("message %q does not list the supported versions", ex.resp.Error.Message)
			}
			if v == v10 {
				if reason(t, ex) != "VERSION_NOT_SUPPORTED" {
					t.Fatalf("reason %q", reason(t, ex))
				}
			} else {
				var d errorData03
				if err := json.Unmarshal(ex.resp.Error.Data, &d); err != nil || d.SupportedVersions != "1.0,0.3" {
					t.Fatalf("0.3 data %s", ex.resp.Error.Data)
				}
			}
		}
	}
	// The query parameter works when the header is absent; the header wins.
	ex := env.do(t, http.MethodPost, "/a2a?A2A-Version=2.0", "-", "application/json", body("SendMessage", v10))
	if ex.resp.Error == nil || ex.resp.Error.Code != CodeVersionNotSupported {
		t.Fatalf("query A2A-Version=2.0: %s", ex.raw)
	}
	ex = env.do(t, http.MethodPost, "/a2a?A2A-Version=2.0", "1.0", "application/json", body("SendMessage", v10))
	if ex.resp.Error != nil {
		t.Fatalf("header 1.0 with query 2.0: %s", ex.raw)
	}
	ex = env.do(t, http.MethodPost, "/a2a?A2A-Version=1.0", "-", "application/json", body("SendMessage", v10))
	if ex.resp.Error != nil {
		t.Fatalf("query 1.0: %s", ex.raw)
	}
	// An unknown method under an unsupported version is a version error.
	ex = env.post(t, "9.9", request(t, `1`, "NoSuchMethod", obj{}))
	if ex.resp.Error == nil || ex.resp.Error.Code != CodeVersionNotSupported {
		t.Fatalf("%s", ex.raw)
	}
}

func TestTransport(t *testing.T) {
	env := newTestEnv(t, Options{MaxBodyBytes: 4096})
	get := request(t, `1`, "GetTask", obj{"id": "x"})
	// Only POST.
	for _, m := range []string{http.MethodGet, http.MethodPut, http.MethodDelete} {
		ex := env.do(t, m, "/a2a", "1.0", "", "")
		if ex.status != http.StatusMethodNotAllowed || ex.header.Get("Allow") != http.MethodPost || ex.resp.Error == nil || ex.resp.Error.Code != CodeInvalidRequest {
			t.Fatalf("%s: status %d Allow %q %s", m, ex.status, ex.header.Get("Allow"), ex.raw)
		}
	}
	// JSON content types, or none.
	for _, ct := range []string{"application/json", "application/json; charset=utf-8", "Application/JSON", "application/a2a+json", "application/json-rpc+json", ""} {
		ex := env.do(t, http.MethodPost, "/a2a", "1.0", ct, get)
		if ex.status != http.StatusOK || ex.resp.Error == nil || ex.resp.Error.Code != CodeTaskNotFound {
			t.Fatalf("Content-Type %q: %d %s", ct, ex.status, ex.raw)
		}
	}
	for _, ct := range []string{"text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", "application/jsonx", ";;"} {
		ex := env.do(t, http.MethodPost, "/a2a", "1.0", ct, get)
		if ex.status != http.StatusUnsupportedMediaType || ex.resp.Error == nil || ex.resp.Error.Code != CodeInvalidRequest {
			t.Fatalf("Content-Type %q: %d %s", ct, ex.status, ex.raw)
		}
	}
	// The body limit.
	big := `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m","role":"ROLE_USER","parts":[{"text":"` + strings.Repeat("a", 5000) + `"}]}}}`
	ex := env.post(t, "1.0", big)
	if ex.status != http.StatusRequestEntityTooLarge || ex.resp.Error == nil || ex.resp.Error.Code != CodeInvalidRequest || !strings.Contains(ex.resp.Error.Message, "4096") {
		t.Fatalf("big body: %d %s", ex.status, ex.raw)
	}
	// Exactly at the limit is read.
	pad := 4096 - len(get) - 1
	ex = env.post(t, "1.0", get[:len(get)-1]+strings.Repeat(" ", pad)+"}")
	if ex.status != http.StatusOK || ex.resp.Error == nil || ex.resp.Error.Code != CodeTaskNotFound {
		t.Fatalf("body at the limit: %d %s", ex.status, ex.raw)
	}
	if cc := ex.header.Get("Cache-Control"); cc != "no-store" {
		t.Fatalf("Cache-Control %q", cc)
	}
}

func TestDefaultBodyLimitIsOneMiB(t *testing.T) {
	env := newTestEnv(t, Options{})
	if env.h.maxBody != 1<<20 {
		t.Fatalf("default body limit %d", env.h.maxBody)
	}
	big := `{"jsonrpc":"2.0","id":1,"method":"GetTask","params":{"id":"` + strings.Repeat("a", 1<<20) + `"}}`
	if ex := env.post(t, "1.0", big); ex.status != http.StatusRequestEntityTooLarge {
		t.Fatalf("1 MiB + body: %d", ex.status)
	}
}

func TestNewHandlerRejectsBadConfig(t *testing.T) {
	if h, err := NewHandler(nil, Options{}); err == nil || h != nil {
		t.Fatalf("nil Surfaces accepted: %v, %v", h, err)
	}
	var s discovery.Surfaces = failingSurfaces{}
	for _, o := range []Options{{MaxBodyBytes: -1}, {MaxTasks: -1}, {MaxStoreBytes: -1}, {TaskTTL: -1}} {
		if h, err := NewHandler(s, o); err == nil || h != nil {
			t.Fatalf("options %+v accepted", o)
		}
	}
}

// failingSurfaces is a minimal Surfaces whose calls fail with a kind of
// svc.Error, for the error paths the real Service cannot be made to take.
type failingSurfaces struct{ kind svc.ErrorKind }

func (f failingSurfaces) err() error {
	return &svc.Error{Kind: f.kind, Message: "secret upstream detail at 10.0.0.7"}
}
func (f failingSurfaces) Find(context.Context, string, int) (discovery.FindResult, error) {
	return discovery.FindResult{}, f.err()
}
func (f failingSurfaces) Route(context.Context, string, json.RawMessage) (discovery.RoutePlan, error) {
	return discovery.RoutePlan{}, f.err()
}
func (f failingSurfaces) Catalog(context.Context, string, string, int, int) (discovery.CatalogPage, error) {
	return discovery.CatalogPage{}, f.err()
}
func (f failingSurfaces) ToolInfo(context.Context, string) (discovery.CatalogItem, error) {
	return discovery.CatalogItem{}, f.err()
}
func (f failingSurfaces) Try(context.Context, string) (discovery.TryResult, error) {
	return discovery.TryResult{}, f.err()
}

func TestSurfaceFailuresAreInternalErrors(t *testing.T) {
	for _, kind := range []svc.ErrorKind{svc.KindInternal, svc.KindUnavailable, svc.KindTimeout} {
		var logged syncBuffer
		h, err := newHandler(failingSurfaces{kind}, Options{Logger: slog.New(slog.NewTextHandler(&logged, nil))})
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range bothVersions {
			for _, data := range []any{nil, obj{"action": "catalog"}, obj{"action": "find", "query": "x"}, obj{"action": "tool", "key": "x"}} {
				m := textMessage(v, "m", "decode a JWT")
				if data != nil {
					m = dataMessage(v, "m", data)
				}
				rec := serve(t, h, header(v), request(t, `1`, sendMethod(v), obj{"message": m}))
				if !strings.Contains(rec, `"code":-32603`) || strings.Contains(rec, "10.0.0.7") {
					t.Fatalf("%s: %s", kind, rec)
				}
			}
		}
		if !strings.Contains(logged.String(), "internal error") {
			t.Fatalf("internal error not logged: %q", logged.String())
		}
		if h.store.len() != 0 {
			t.Fatalf("a failed message stored a task")
		}
	}
	// An invalid-input error from a surface is -32602 with its fields.
	h, _ := newHandler(fieldFailure{}, Options{})
	rec := serve(t, h, "-", request(t, `1`, "message/send", obj{"message": dataMessage(v03, "m", obj{"action": "catalog", "category": "nope"})}))
	if !strings.Contains(rec, `"code":-32602`) || !strings.Contains(rec, `"field":"message.parts[0].data.category"`) || !strings.Contains(rec, `"rule":"oneof"`) {
		t.Fatalf("%s", rec)
	}
}

// fieldFailure fails Catalog with a field error.
type fieldFailure struct{ failingSurfaces }

func (fieldFailure) Catalog(context.Context, string, string, int, int) (discovery.CatalogPage, error) {
	return discovery.CatalogPage{}, svc.InvalidField("category", "oneof", "category must be a known tag")
}

func TestConcurrentUse(t *testing.T) {
	env := newTestEnv(t, Options{MaxTasks: 50})
	post := func(v version, body string) (rpcResponse, error) {
		req, err := http.NewRequest(http.MethodPost, env.srv.URL+"/a2a", strings.NewReader(body))
		if err != nil {
			return rpcResponse{}, err
		}
		req.Header.Set("Content-Type", "application/json")
		if v == v10 {
			req.Header.Set("A2A-Version", "1.0")
		}
		res, err := env.srv.Client().Do(req)
		if err != nil {
			return rpcResponse{}, err
		}
		defer res.Body.Close()
		var r rpcResponse
		if err := json.NewDecoder(res.Body).Decode(&r); err != nil {
			return r, err
		}
		if r.Error != nil {
			return r, fmt.Errorf("error %d %s", r.Error.Code, r.Error.Message)
		}
		return r, nil
	}
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for i := range 16 {
		v := bothVersions[i%2]
		wg.Go(func() {
			for range 5 {
				r, err := post(v, request(t, `1`, sendMethod(v), obj{"message": textMessage(v, "c", "decode a JWT")}))
				if err != nil {
					errs <- err
					return
				}
				var w struct {
					ID   string `json:"id"`
					Task struct {
						ID string `json:"id"`
					} `json:"task"`
				}
				if err := json.Unmarshal(r.Result, &w); err != nil {
					errs <- err
					return
				}
				if _, err := post(v, request(t, `2`, getMethod(v), obj{"id": w.ID + w.Task.ID})); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if n := env.h.store.len(); n != 50 {
		t.Fatalf("store holds %d tasks, want the 50 most recent", n)
	}
}

// syncBuffer is a log sink safe for concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// serve posts body to h behind a listener on 127.0.0.1 and returns the answer.
func serve(t *testing.T, h http.Handler, version, body string) string {
	t.Helper()
	srv := httptest.NewServer(h)
	defer srv.Close()
	req, err := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if version != "-" {
		req.Header.Set("A2A-Version", version)
	}
	res, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	if res.StatusCode != http.StatusOK {
		t.Fatalf("status %d: %s", res.StatusCode, raw)
	}
	return string(raw)
}

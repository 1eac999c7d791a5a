package a2a

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/seed1284c1d2/svc/discovery"
	"github.com/seed1284c1d2/svc/tools"
)

// testEnv is a server on 127.0.0.1 answering /a2a with the real discovery
// Service over the real tools catalog.
type testEnv struct {
	srv *httptest.Server
	h   *handler
	cat *tools.Catalog
	s   *discovery.Service
}

// testPayTo is a valid checksummed receiving wallet.
const testPayTo = "0x209693Bc6afc0C5328bA36FaF03C514EF312287C"

// newRealSurfaces builds the real catalog and discovery Service for a
// server at base.
func newRealSurfaces(t testing.TB, base string) (*tools.Catalog, *discovery.Service) {
	t.Helper()
	cat, err := tools.New(tools.Options{BaseURL: base})
	if err != nil {
		t.Fatalf("tools.New: %v", err)
	}
	s, err := discovery.New(discovery.Config{Catalog: cat, BaseURL: base, PayTo: testPayTo, DevMode: true})
	if err != nil {
		t.Fatalf("discovery.New: %v", err)
	}
	return cat, s
}

// newTestEnv starts the server; opts configure the handler.
func newTestEnv(t *testing.T, opts Options) *testEnv {
	t.Helper()
	env := &testEnv{}
	mux := http.NewServeMux()
	env.srv = httptest.NewUnstartedServer(mux)
	base := "http://" + env.srv.Listener.Addr().String()
	env.cat, env.s = newRealSurfaces(t, base)
	h, err := newHandler(env.s, opts)
	if err != nil {
		t.Fatal(err)
	}
	env.h = h
	mux.Handle("/a2a", h)
	env.srv.Start()
	t.Cleanup(env.srv.Close)
	return env
}

// rpcResponse is a JSON-RPC response as read by the tests.
type rpcResponse struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  json.RawMessage `json:"result"`
	Error   *struct {
		Code    int             `json:"code"`
		Message string          `json:"message"`
		Data    json.RawMessage `json:"data"`
	} `json:"error"`
}

// exchange is one HTTP exchange with /a2a.
type exchange struct {
	status int
	header http.Header
	raw    []byte
	resp   rpcResponse
}

// post sends body to /a2a with an A2A-Version header (none when version is
// "-") and decodes the answer.
func (env *testEnv) post(t *testing.T, version, body string) exchange {
	t.Helper()
	return env.do(t, http.MethodPost, "/a2a", version, "application/json", body)
}

func (env *testEnv) do(t *testing.T, method, path, version, contentType, body string) exchange {
	t.Helper()
	req, err := http.NewRequest(method, env.srv.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	if version != "-" {
		req.Header.Set("A2A-Version", version)
	}
	res, err := env.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	ex := exchange{status: res.StatusCode, header: res.Header, raw: raw}
	if err := json.Unmarshal(raw, &ex.resp); err != nil {
		t.Fatalf("%s %s: answer is not JSON: %v\n%s", method, path, err, raw)
	}
	if ct := res.Header.Get("Content-Type"); ct != "application/json" {
		t.Fatalf("Content-Type %q, want application/json", ct)
	}
	if ex.resp.JSONRPC != "2.0" {
		t.Fatalf(`"jsonrpc" is %q in %s`, ex.resp.JSONRPC, raw)
	}
	return ex
}

// call sends a request with id 1 and returns the result, failing on an error.
func (env *testEnv) call(t *testing.T, version, method string, params any) json.RawMessage {
	t.Helper()
	ex := env.post(t, version, request(t, `1`, method, params))
	if ex.status != http.StatusOK || ex.resp.Error != nil {
		t.Fatalf("%s: status %d, answer %s", method, ex.status, ex.raw)
	}
	if string(ex.resp.ID) != "1" {
		t.Fatalf("%s: id %s, want 1", method, ex.resp.ID)
	}
	return ex.resp.Result
}

// callErr sends a request that must fail with code and returns the error.
func (env *testEnv) callErr(t *testing.T, version, method string, params any, code int) exchange {
	t.Helper()
	ex := env.post(t, version, request(t, `"req-7"`, method, params))
	if ex.status != http.StatusOK {
		t.Fatalf("%s: HTTP status %d, want 200 for a JSON-RPC error; %s", method, ex.status, ex.raw)
	}
	if ex.resp.Error == nil || ex.resp.Error.Code != code {
		t.Fatalf("%s: want error %d, got %s", method, code, ex.raw)
	}
	if string(ex.resp.ID) != `"req-7"` {
		t.Fatalf("%s: id %s, want \"req-7\"", method, ex.resp.ID)
	}
	if ex.resp.Result != nil {
		t.Fatalf("%s: an error answer has a result: %s", method, ex.raw)
	}
	return ex
}

// request encodes a JSON-RPC request with a raw id.
func request(t *testing.T, id, method string, params any) string {
	t.Helper()
	if params == nil {
		return fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"method":%q}`, id, method)
	}
	p, err := json.Marshal(params)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"method":%q,"params":%s}`, id, method, p)
}

// obj is a JSON object literal in tests.
type obj = map[string]any

// textMessage is a user message with one text part in version v's shape.
func textMessage(v version, id, text string) obj {
	if v == v10 {
		return obj{"messageId": id, "role": "ROLE_USER", "parts": []any{obj{"text": text}}}
	}
	return obj{"kind": "message", "messageId": id, "role": "user", "parts": []any{obj{"kind": "text", "text": text}}}
}

// dataMessage is a user message with one data part in version v's shape.
func dataMessage(v version, id string, data any) obj {
	if v == v10 {
		return obj{"messageId": id, "role": "ROLE_USER", "parts": []any{obj{"data": data}}}
	}
	return obj{"kind": "message", "messageId": id, "role": "user", "parts": []any{obj{"kind": "data", "data": data}}}
}

// sendMethod, getMethod and cancelMethod name the methods of version v.
func sendMethod(v version) string {
	return map[version]string{v10: "SendMessage", v03: "message/send"}[v]
}
func getMethod(v version) string { return map[version]string{v10: "GetTask", v03: "tasks/get"}[v] }
func cancelMethod(v version) string {
	return map[version]string{v10: "CancelTask", v03: "tasks/cancel"}[v]
}

// header is the A2A-Version header of version v (0.3 clients send none).
func header(v version) string {
	if v == v10 {
		return "1.0"
	}
	return "-"
}

// wirePart is a part in either version's shape.
type wirePart struct {
	Kind      string          `json:"kind"`
	Text      *string         `json:"text"`
	Data      json.RawMessage `json:"data"`
	MediaType string          `json:"mediaType"`
}

// wireTask is a task in either version's shape.
type wireTask struct {
	Kind      string `json:"kind"`
	ID        string `json:"id"`
	ContextID string `json:"contextId"`
	Status    struct {
		State     string `json:"state"`
		Timestamp string `json:"timestamp"`
	} `json:"status"`
	Artifacts []struct {
		ArtifactID  string     `json:"artifactId"`
		Name        string     `json:"name"`
		Description string     `json:"description"`
		Parts       []wirePart `json:"parts"`
	} `json:"artifacts"`
	History []struct {
		Kind      string     `json:"kind"`
		MessageID string     `json:"messageId"`
		ContextID string     `json:"contextId"`
		TaskID    string     `json:"taskId"`
		Role      string     `json:"role"`
		Parts     []wirePart `json:"parts"`
	} `json:"history"`
}

// decodeTask reads a task result: SendMessage's {"task": ...} in 1.0 when
// wrapped is true, a bare task otherwise. It checks the version's shape.
func decodeTask(t *testing.T, v version, result json.RawMessage, wrapped bool) wireTask {
	t.Helper()
	if wrapped && v == v10 {
		var w map[string]json.RawMessage
		if err := json.Unmarshal(result, &w); err != nil || len(w) != 1 || w["task"] == nil {
			t.Fatalf(`1.0 SendMessage result must be {"task": ...}, got %s`, result)
		}
		result = w["task"]
	}
	var task wireTask
	if err := json.Unmarshal(result, &task); err != nil {
		t.Fatalf("task: %v in %s", err, result)
	}
	wantState, wantKind, wantRole := "TASK_STATE_COMPLETED", "", "ROLE_USER"
	if v == v03 {
		wantState, wantKind, wantRole = "completed", "task", "user"
	}
	if task.Kind != wantKind || task.Status.State != wantState || task.ID == "" || task.ContextID == "" {
		t.Fatalf("task shape for %s: kind %q, state %q, id %q, contextId %q in %s", v, task.Kind, task.Status.State, task.ID, task.ContextID, result)
	}
	if !strings.HasSuffix(task.Status.Timestamp, "Z") || len(task.Status.Timestamp) != len(timestampLayout) {
		t.Fatalf("timestamp %q is not ISO 8601 UTC with milliseconds", task.Status.Timestamp)
	}
	for _, a := range task.Artifacts {
		checkParts(t, v, a.Parts)
	}
	for _, m := range task.History {
		if m.Role != wantRole {
			t.Fatalf("history role %q, want %q", m.Role, wantRole)
		}
		if (v == v03) != (m.Kind == "message") {
			t.Fatalf("history message kind %q in %s", m.Kind, v)
		}
		checkParts(t, v, m.Parts)
	}
	return task
}

// checkParts checks the parts of version v: kind tags in 0.3, none in 1.0.
func checkParts(t *testing.T, v version, parts []wirePart) {
	t.Helper()
	for _, p := range parts {
		if v == v10 && p.Kind != "" {
			t.Fatalf("1.0 part with kind %q", p.Kind)
		}
		if v == v03 && p.Kind != "text" && p.Kind != "data" {
			t.Fatalf("0.3 part with kind %q", p.Kind)
		}
		if (p.Text == nil) == (p.Data == nil) {
			t.Fatalf("a part must hold exactly one of text and data: %+v", p)
		}
		if p.Data != nil && p.Data[0] != '{' {
			t.Fatalf("data part is not an object: %s", p.Data)
		}
	}
}

// errorData10 reads the 1.0 error details.
type errorDetail struct {
	Type            string            `json:"@type"`
	Reason          string            `json:"reason"`
	Domain          string            `json:"domain"`
	Metadata        map[string]string `json:"metadata"`
	FieldViolations []struct {
		Field       string `json:"field"`
		Description string `json:"description"`
		Reason      string `json:"reason"`
	} `json:"fieldViolations"`
}

// errorData03 is the 0.3 error data object.
type errorData03 struct {
	Errors            []fieldViolation `json:"errors"`
	TaskID            string           `json:"taskId"`
	SupportedVersions string           `json:"supportedVersions"`
}

// violations returns the invalid fields of a -32602, in either shape.
func violations(t *testing.T, v version, ex exchange) []fieldViolation {
	t.Helper()
	if v == v10 {
		var details []errorDetail
		if err := json.Unmarshal(ex.resp.Error.Data, &details); err != nil {
			t.Fatalf("1.0 error data must be an array of details: %v in %s", err, ex.raw)
		}
		var out []fieldViolation
		for _, d := range details {
			if d.Type == "type.googleapis.com/google.rpc.BadRequest" {
				for _, f := range d.FieldViolations {
					out = append(out, fieldViolation{Field: f.Field, Rule: f.Reason, Message: f.Description})
				}
			}
		}
		return out
	}
	var d errorData03
	if err := json.Unmarshal(ex.resp.Error.Data, &d); err != nil {
		t.Fatalf("0.3 error data must be an object: %v in %s", err, ex.raw)
	}
	return d.Errors
}

// reason returns the google.rpc.ErrorInfo reason of a 1.0 error ("" if none).
func reason(t *testing.T, ex exchange) string {
	t.Helper()
	if ex.resp.Error.Data == nil {
		return ""
	}
	var details []errorDetail
	if err := json.Unmarshal(ex.resp.Error.Data, &details); err != nil {
		t.Fatalf("1.0 error data must be an array: %v in %s", err, ex.raw)
	}
	for _, d := range details {
		if d.Type == "type.googleapis.com/google.rpc.ErrorInfo" {
			if d.Domain != "a2a-protocol.org" {
				t.Fatalf("ErrorInfo domain %q", d.Domain)
			}
			return d.Reason
		}
	}
	return ""
}

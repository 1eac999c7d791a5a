package mcp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/seed1284c1d2/svc/discovery"
	"github.com/seed1284c1d2/svc/discovery/mcp"
	"github.com/seed1284c1d2/svc/tools"
)

// testEnv is the MCP endpoint served on a real listener on 127.0.0.1,
// answering through the real discovery.Service over the real catalog.
type testEnv struct {
	url     string // http://127.0.0.1:port/mcp
	base    string // http://127.0.0.1:port
	catalog *tools.Catalog
	svc     discovery.Surfaces
}

// newEnv starts the endpoint with opts (BaseURL is set to the listener's).
func newEnv(t *testing.T, opts mcp.Options) *testEnv {
	t.Helper()
	ts := httptest.NewUnstartedServer(nil)
	base := "http://" + ts.Listener.Addr().String()
	cat, err := tools.New(tools.Options{BaseURL: base})
	if err != nil {
		t.Fatal(err)
	}
	s := newSurfaces(t, cat, base)
	opts.BaseURL = base
	h, err := mcp.NewHandler(s, opts)
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", h)
	ts.Config.Handler = mux
	ts.Start()
	t.Cleanup(ts.Close)
	return &testEnv{url: base + "/mcp", base: base, catalog: cat, svc: s}
}

// testPayTo is the wallet of the test deployment.
const testPayTo = "0x209693Bc6afc0C5328bA36FaF03C514EF312287C"

// newSurfaces is the real discovery core over cat, in dev mode.
func newSurfaces(t *testing.T, cat *tools.Catalog, base string) discovery.Surfaces {
	t.Helper()
	s, err := discovery.New(discovery.Config{Catalog: cat, BaseURL: base, PayTo: testPayTo})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// rpcResponse is a JSON-RPC response as received.
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

// httpReply is a raw HTTP answer.
type httpReply struct {
	status int
	header http.Header
	body   []byte
}

// rpc decodes the body as a JSON-RPC response.
func (r httpReply) rpc(t testing.TB) rpcResponse {
	t.Helper()
	var res rpcResponse
	if err := json.Unmarshal(r.body, &res); err != nil {
		t.Fatalf("status %d, body %q is not a JSON-RPC response: %v", r.status, r.body, err)
	}
	if res.JSONRPC != "2.0" {
		t.Fatalf("jsonrpc %q in %s", res.JSONRPC, r.body)
	}
	return res
}

// post sends one raw POST with the standard MCP headers plus extra ones
// ("" values delete a header).
func (e *testEnv) post(t testing.TB, body string, extra map[string]string) httpReply {
	t.Helper()
	return e.do(t, http.MethodPost, body, extra)
}

func (e *testEnv) do(t testing.TB, method, body string, extra map[string]string) httpReply {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, e.url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range extra {
		if strings.EqualFold(k, "Host") {
			req.Host = v
			continue
		}
		if v == "" {
			req.Header.Del(k)
		} else {
			req.Header.Set(k, v)
		}
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return httpReply{status: res.StatusCode, header: res.Header, body: b}
}

// modernRequest is a 2026-07-28 request body: params plus the _meta triple.
func modernRequest(t *testing.T, id int, method string, params map[string]any) string {
	t.Helper()
	if params == nil {
		params = map[string]any{}
	}
	params["_meta"] = map[string]any{
		"io.modelcontextprotocol/protocolVersion":    "2026-07-28",
		"io.modelcontextprotocol/clientCapabilities": map[string]any{},
		"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "raw-test", "version": "1.0.0"},
	}
	b, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": method, "params": params})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// modernHeaders are the headers of a 2026-07-28 request.
func modernHeaders(method, name string) map[string]string {
	h := map[string]string{"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": method}
	if name != "" {
		h["Mcp-Name"] = name
	}
	return h
}

// legacyRequest is a JSON-RPC request body without _meta.
func legacyRequest(t *testing.T, id int, method string, params any) string {
	t.Helper()
	m := map[string]any{"jsonrpc": "2.0", "id": id, "method": method}
	if params != nil {
		m["params"] = params
	}
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// toolCall is one tools/call of the suites, with what the discovery core
// answers directly for the same arguments.
type toolCall struct {
	Name      string         `json:"name"`
	Arguments map[string]any `json:"arguments"`
	// want is the structuredContent expected (the Service's own answer as
	// generic JSON); wantError is a substring of the tool error instead.
	want      any
	wantError string
}

// toolCalls are the calls every client makes: every tool, with their
// optional arguments, an input checked before paying, and tool errors from
// the argument schema and from the discovery core.
func (e *testEnv) toolCalls(t *testing.T) []toolCall {
	t.Helper()
	ctx := context.Background()
	rl, ok := e.catalog.ByKey("risk-levels")
	if !ok {
		t.Fatal("no risk-levels tool in the catalog")
	}
	var example map[string]any
	if err := json.Unmarshal(rl.ExampleInput, &example); err != nil {
		t.Fatal(err)
	}
	bad := map[string]any{}
	for k, v := range example {
		bad[k] = v
	}
	bad["entry"] = -5
	calls := []toolCall{
		{Name: mcp.ToolFind, Arguments: map[string]any{"query": "stop loss and take profit levels for a long trade", "limit": 3},
			want: e.direct(t)(e.svc.Find(ctx, "stop loss and take profit levels for a long trade", 3))},
		{Name: mcp.ToolFind, Arguments: map[string]any{"query": "gold price"},
			want: e.direct(t)(e.svc.Find(ctx, "gold price", 5))},
		{Name: mcp.ToolRoute, Arguments: map[string]any{"query": "risk levels stop loss take profit", "input": example},
			want: e.direct(t)(e.svc.Route(ctx, "risk levels stop loss take profit", mustJSON(t, example)))},
		{Name: mcp.ToolRoute, Arguments: map[string]any{"query": "risk levels stop loss take profit", "input": bad},
			want: e.direct(t)(e.svc.Route(ctx, "risk levels stop loss take profit", mustJSON(t, bad)))},
		{Name: mcp.ToolRoute, Arguments: map[string]any{"query": "decode a jwt token"},
			want: e.direct(t)(e.svc.Route(ctx, "decode a jwt token", nil))},
		{Name: mcp.ToolCatalog, Arguments: map[string]any{},
			want: e.direct(t)(e.svc.Catalog(ctx, "", "", 0, 50))},
		{Name: mcp.ToolCatalog, Arguments: map[string]any{"offset": 2, "limit": 4},
			want: e.direct(t)(e.svc.Catalog(ctx, "", "", 2, 4))},
		{Name: mcp.ToolCatalog, Arguments: map[string]any{"category": "gold"},
			want: e.direct(t)(e.svc.Catalog(ctx, "", "gold", 0, 50))},
		{Name: mcp.ToolToolInfo, Arguments: map[string]any{"pathOrKey": "risk-levels"},
			want: e.direct(t)(e.svc.ToolInfo(ctx, "risk-levels"))},
		{Name: mcp.ToolToolInfo, Arguments: map[string]any{"pathOrKey": "/api/xau/quote"},
			want: e.direct(t)(e.svc.ToolInfo(ctx, "/api/xau/quote"))},
		// Schema errors: caught before the handler runs.
		{Name: mcp.ToolFind, Arguments: map[string]any{"query": ""}, wantError: "query"},
		{Name: mcp.ToolFind, Arguments: map[string]any{"query": "gold", "limit": 21}, wantError: "limit"},
		{Name: mcp.ToolCatalog, Arguments: map[string]any{"colour": "red"}, wantError: "colour"},
		// Errors of the discovery core: a blank query (named as the
		// argument, not as the core's q), an unknown tool.
		{Name: mcp.ToolFind, Arguments: map[string]any{"query": "   "}, wantError: "invalid input: query is required"},
		{Name: mcp.ToolRoute, Arguments: map[string]any{"query": "\t"}, wantError: "invalid input: query is required"},
		{Name: mcp.ToolToolInfo, Arguments: map[string]any{"pathOrKey": "no-such-tool"}, wantError: coreErrorText(t, e.svc)},
	}
	// The calls must exercise something: matches, a valid and an invalid
	// input, a filtered page.
	get := func(i int, path ...string) any {
		var v any = calls[i].want
		for _, p := range path {
			v = v.(map[string]any)[p]
		}
		return v
	}
	if n := len(get(0, "matches").([]any)); n != 3 {
		t.Fatalf("find_tool fixture: %d matches, want 3", n)
	}
	if get(2, "matched") != true || get(2, "inputValid") != true || get(3, "inputValid") != false ||
		len(get(3, "inputErrors").([]any)) == 0 || get(4, "inputSource") != "example" {
		t.Fatalf("route_tool fixtures: %s / %s", mustJSON(t, calls[2].want), mustJSON(t, calls[3].want))
	}
	if total := get(7, "total").(float64); total != 3 {
		t.Fatalf("catalog fixture: %v gold tools, want 3", total)
	}
	return calls
}

// coreErrorText is the message the Service gives for an unknown tool.
func coreErrorText(t *testing.T, s discovery.Surfaces) string {
	t.Helper()
	_, err := s.ToolInfo(context.Background(), "no-such-tool")
	if err == nil {
		t.Fatal("ToolInfo(no-such-tool) did not fail")
	}
	return err.Error()
}

// direct turns a Service answer into generic JSON, failing on an error.
func (e *testEnv) direct(t *testing.T) func(v any, err error) any {
	return func(v any, err error) any {
		t.Helper()
		if err != nil {
			t.Fatalf("the discovery core failed: %v", err)
		}
		return generic(t, mustJSON(t, v))
	}
}

func mustJSON(t testing.TB, v any) json.RawMessage {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// generic decodes JSON into maps, slices, strings, float64s and bools.
func generic(t testing.TB, b []byte) any {
	t.Helper()
	var v any
	d := json.NewDecoder(bytes.NewReader(b))
	if err := d.Decode(&v); err != nil {
		t.Fatalf("decoding %s: %v", b, err)
	}
	return v
}

// checkToolResult checks one tools/call result (as generic JSON) against
// the call's expectation: structuredContent equal to the Service's answer
// and the same JSON as a text block, or isError with the message.
func checkToolResult(t *testing.T, c toolCall, result map[string]any) {
	t.Helper()
	isError, _ := result["isError"].(bool)
	content, _ := result["content"].([]any)
	if len(content) == 0 {
		t.Fatalf("%s %v: no content in %v", c.Name, c.Arguments, result)
	}
	first, _ := content[0].(map[string]any)
	text, _ := first["text"].(string)
	if first["type"] != "text" {
		t.Fatalf("%s %v: first content block %v is not text", c.Name, c.Arguments, first)
	}
	if c.wantError != "" {
		if !isError || !strings.Contains(text, c.wantError) {
			t.Fatalf("%s %v: want a tool error containing %q, got isError=%v %q", c.Name, c.Arguments, c.wantError, isError, text)
		}
		return
	}
	if isError {
		t.Fatalf("%s %v: unexpected tool error %q", c.Name, c.Arguments, text)
	}
	if !reflect.DeepEqual(result["structuredContent"], c.want) {
		t.Fatalf("%s %v: structuredContent\n%s\nwant (the discovery core's answer)\n%s", c.Name, c.Arguments,
			mustJSON(t, result["structuredContent"]), mustJSON(t, c.want))
	}
	if !reflect.DeepEqual(generic(t, []byte(text)), c.want) {
		t.Fatalf("%s %v: the text content is not the structured JSON: %s", c.Name, c.Arguments, text)
	}
}

// toolNames are the tools of the surface, in tools/list order (by name).
var toolNames = []string{mcp.ToolCatalog, mcp.ToolFind, mcp.ToolRoute, mcp.ToolToolInfo}

// checkToolList checks a tools/list result (as generic JSON): the four
// tools with title, description, annotations and both schemas.
func checkToolList(t *testing.T, list map[string]any) {
	t.Helper()
	ts, _ := list["tools"].([]any)
	if len(ts) != len(toolNames) {
		t.Fatalf("tools/list has %d tools, want %d: %s", len(ts), len(toolNames), mustJSON(t, list))
	}
	for i, raw := range ts {
		tool, _ := raw.(map[string]any)
		if tool["name"] != toolNames[i] {
			t.Fatalf("tool %d is %v, want %s", i, tool["name"], toolNames[i])
		}
		if s, _ := tool["title"].(string); s == "" {
			t.Errorf("%s has no title", toolNames[i])
		}
		if s, _ := tool["description"].(string); len(s) < 80 {
			t.Errorf("%s description %q is too short to guide a model", toolNames[i], s)
		}
		ann, _ := tool["annotations"].(map[string]any)
		if ann["readOnlyHint"] != true || ann["idempotentHint"] != true || ann["openWorldHint"] != false || ann["destructiveHint"] != false {
			t.Errorf("%s annotations %v", toolNames[i], ann)
		}
		in, _ := tool["inputSchema"].(map[string]any)
		out, _ := tool["outputSchema"].(map[string]any)
		if in["type"] != "object" || in["additionalProperties"] != false || out["type"] != "object" {
			t.Errorf("%s schemas: input %v, output %v", toolNames[i], in, out)
		}
	}
}

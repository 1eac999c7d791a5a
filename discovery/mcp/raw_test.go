package mcp_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/seed1284c1d2/svc/discovery/mcp"
)

// TestRawJSONRPC checks the wire answers with raw HTTP: JSON-RPC errors,
// statuses, the Origin and Host checks, 405 and 202.
func TestRawJSONRPC(t *testing.T) {
	env := newEnv(t, mcp.Options{AllowedOrigins: []string{"https://app.example.com"}})

	rpcError := func(t *testing.T, r httpReply, status, code int, id string) {
		t.Helper()
		if r.status != status {
			t.Fatalf("status %d, want %d; body %s", r.status, status, r.body)
		}
		if ct := r.header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
			t.Fatalf("Content-Type %q of an error; body %s", ct, r.body)
		}
		res := r.rpc(t)
		if res.Error == nil || res.Error.Code != code || res.Result != nil {
			t.Fatalf("want error %d, got %s", code, r.body)
		}
		if res.Error.Message == "" {
			t.Fatalf("error without message: %s", r.body)
		}
		if string(res.ID) != id {
			t.Fatalf("id %s, want %s", res.ID, id)
		}
	}

	t.Run("unknown method modern 404", func(t *testing.T) {
		r := env.post(t, modernRequest(t, 7, "foo/bar", nil), modernHeaders("foo/bar", ""))
		rpcError(t, r, http.StatusNotFound, -32601, "7")
	})
	t.Run("unknown method legacy", func(t *testing.T) {
		r := env.post(t, legacyRequest(t, 8, "foo/bar", map[string]any{}), map[string]string{"MCP-Protocol-Version": "2025-11-25"})
		rpcError(t, r, http.StatusOK, -32601, "8")
	})
	t.Run("undeclared features -32601", func(t *testing.T) {
		for i, m := range []string{"prompts/list", "prompts/get", "resources/list", "resources/templates/list",
			"resources/read", "resources/subscribe", "completion/complete", "logging/setLevel"} {
			r := env.post(t, modernRequest(t, 100+i, m, nil), modernHeaders(m, ""))
			rpcError(t, r, http.StatusNotFound, -32601, mustJSONString(t, 100+i))
			r = env.post(t, legacyRequest(t, 200+i, m, map[string]any{}), map[string]string{"MCP-Protocol-Version": "2025-06-18"})
			rpcError(t, r, http.StatusOK, -32601, mustJSONString(t, 200+i))
		}
	})
	t.Run("removed methods in 2026-07-28", func(t *testing.T) {
		for i, m := range []string{"initialize", "ping"} {
			r := env.post(t, modernRequest(t, 300+i, m, nil), modernHeaders(m, ""))
			rpcError(t, r, http.StatusNotFound, -32601, mustJSONString(t, 300+i))
		}
	})
	t.Run("malformed JSON -32700", func(t *testing.T) {
		rpcError(t, env.post(t, `{"jsonrpc":"2.0","id":1,"method":"tools/list"`, nil), http.StatusBadRequest, -32700, "null")
		rpcError(t, env.post(t, `not json`, nil), http.StatusBadRequest, -32700, "null")
	})
	t.Run("invalid request -32600", func(t *testing.T) {
		rpcError(t, env.post(t, `{"jsonrpc":"1.0","id":3,"method":"tools/list"}`, nil), http.StatusBadRequest, -32600, "3")
		rpcError(t, env.post(t, `{"jsonrpc":"2.0","id":4,"method":12}`, nil), http.StatusBadRequest, -32600, "null")
		rpcError(t, env.post(t, `"tools/list"`, nil), http.StatusBadRequest, -32600, "null")
		rpcError(t, env.post(t, `{"jsonrpc":"2.0","id":{"a":1},"method":"tools/list"}`, nil), http.StatusBadRequest, -32600, "null")
	})
	t.Run("bad Origin 403", func(t *testing.T) {
		for _, h := range []map[string]string{
			{"Origin": "http://evil.example"},
			{"Origin": "null"},
			{"Origin": "http://evil.example", "Sec-Fetch-Site": "cross-site"},
			{"Sec-Fetch-Site": "cross-site"},
		} {
			r := env.post(t, legacyRequest(t, 9, "tools/list", nil), h)
			rpcError(t, r, http.StatusForbidden, -32600, "null")
			if r.header.Get("Access-Control-Allow-Origin") != "" {
				t.Fatalf("CORS header on a refused origin: %v", r.header)
			}
		}
	})
	t.Run("allowed origins", func(t *testing.T) {
		for _, h := range []map[string]string{
			{},                   // no Origin: agents and CLIs
			{"Origin": env.base}, // the base URL's origin (same origin)
			{"Origin": env.base, "Sec-Fetch-Site": "same-origin"},
			{"Origin": "https://app.example.com", "Sec-Fetch-Site": "cross-site"},
		} {
			r := env.post(t, legacyRequest(t, 10, "tools/list", nil), h)
			if r.status != http.StatusOK || r.rpc(t).Error != nil {
				t.Fatalf("headers %v: status %d %s", h, r.status, r.body)
			}
			if h["Origin"] == "https://app.example.com" && r.header.Get("Access-Control-Allow-Origin") != "https://app.example.com" {
				t.Fatalf("no CORS header for an allowed origin: %v", r.header)
			}
		}
	})
	t.Run("CORS preflight", func(t *testing.T) {
		r := env.do(t, http.MethodOptions, "", map[string]string{"Origin": "https://app.example.com",
			"Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "content-type, mcp-protocol-version, mcp-method"})
		if r.status != http.StatusNoContent || r.header.Get("Access-Control-Allow-Origin") != "https://app.example.com" ||
			r.header.Get("Access-Control-Allow-Methods") != "POST" || !strings.Contains(r.header.Get("Access-Control-Allow-Headers"), "mcp-method") {
			t.Fatalf("preflight: %d %v", r.status, r.header)
		}
		r = env.do(t, http.MethodOptions, "", map[string]string{"Origin": "http://evil.example", "Access-Control-Request-Method": "POST"})
		if r.status == http.StatusNoContent || r.header.Get("Access-Control-Allow-Origin") != "" {
			t.Fatalf("preflight of a refused origin: %d %v", r.status, r.header)
		}
	})
	t.Run("DNS rebinding Host 403", func(t *testing.T) {
		r := env.post(t, legacyRequest(t, 11, "tools/list", nil), map[string]string{"Host": "evil.example.com"})
		rpcError(t, r, http.StatusForbidden, -32600, "null")
		for _, host := range []string{"localhost", "127.0.0.1", "[::1]:80"} {
			r := env.post(t, legacyRequest(t, 12, "tools/list", nil), map[string]string{"Host": host})
			if r.status != http.StatusOK {
				t.Fatalf("Host %s: %d %s", host, r.status, r.body)
			}
		}
	})
	t.Run("GET and DELETE 405", func(t *testing.T) {
		for _, m := range []string{http.MethodGet, http.MethodDelete, http.MethodPut} {
			r := env.do(t, m, "", map[string]string{"Accept": "text/event-stream"})
			if r.status != http.StatusMethodNotAllowed || r.header.Get("Allow") != "POST" {
				t.Fatalf("%s: %d Allow=%q", m, r.status, r.header.Get("Allow"))
			}
		}
	})
	t.Run("notifications 202", func(t *testing.T) {
		for _, body := range []string{
			`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
			`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}}`,
			`{"jsonrpc":"2.0","method":"notifications/some-extension"}`,
		} {
			r := env.post(t, body, map[string]string{"MCP-Protocol-Version": "2025-11-25"})
			if r.status != http.StatusAccepted || len(r.body) != 0 {
				t.Fatalf("%s: %d %q", body, r.status, r.body)
			}
		}
	})
	t.Run("no session id", func(t *testing.T) {
		r := env.post(t, legacyRequest(t, 13, "initialize", map[string]any{
			"protocolVersion": "2025-06-18", "capabilities": map[string]any{},
			"clientInfo": map[string]any{"name": "raw", "version": "1"}}), nil)
		if r.status != http.StatusOK || r.header.Get("Mcp-Session-Id") != "" {
			t.Fatalf("initialize: %d session %q", r.status, r.header.Get("Mcp-Session-Id"))
		}
		var init struct {
			ProtocolVersion string         `json:"protocolVersion"`
			ServerInfo      map[string]any `json:"serverInfo"`
			Capabilities    map[string]any `json:"capabilities"`
			ResultType      *string        `json:"resultType"`
		}
		if err := json.Unmarshal(r.rpc(t).Result, &init); err != nil {
			t.Fatal(err)
		}
		if init.ProtocolVersion != "2025-06-18" || init.ServerInfo["name"] != "svc" || init.ResultType != nil ||
			len(init.Capabilities) != 1 || init.Capabilities["tools"] == nil {
			t.Fatalf("initialize result %s", r.rpc(t).Result)
		}
		// A later request is served on its own, with no session.
		r = env.post(t, legacyRequest(t, 14, "tools/list", nil), map[string]string{"MCP-Protocol-Version": "2025-06-18", "Mcp-Session-Id": "bogus"})
		if r.status != http.StatusOK || r.rpc(t).Error != nil || r.header.Get("Mcp-Session-Id") != "" {
			t.Fatalf("tools/list after initialize: %d %s", r.status, r.body)
		}
	})
	t.Run("server/discover", func(t *testing.T) {
		r := env.post(t, modernRequest(t, 15, "server/discover", nil), modernHeaders("server/discover", ""))
		if r.status != http.StatusOK || !strings.HasPrefix(r.header.Get("Content-Type"), "application/json") {
			t.Fatalf("discover: %d %v %s", r.status, r.header, r.body)
		}
		var d struct {
			ResultType        string         `json:"resultType"`
			SupportedVersions []string       `json:"supportedVersions"`
			Capabilities      map[string]any `json:"capabilities"`
			TTLMs             int            `json:"ttlMs"`
			CacheScope        string         `json:"cacheScope"`
			Meta              map[string]any `json:"_meta"`
		}
		if err := json.Unmarshal(r.rpc(t).Result, &d); err != nil {
			t.Fatal(err)
		}
		si, _ := d.Meta["io.modelcontextprotocol/serverInfo"].(map[string]any)
		if d.ResultType != "complete" || len(d.SupportedVersions) == 0 || d.SupportedVersions[0] != "2026-07-28" ||
			d.TTLMs != 3_600_000 || d.CacheScope != "public" || si["name"] != "svc" || len(d.Capabilities) != 1 {
			t.Fatalf("discover result %s", r.rpc(t).Result)
		}
	})
	t.Run("modern tools/list and call", func(t *testing.T) {
		r := env.post(t, modernRequest(t, 16, "tools/list", nil), modernHeaders("tools/list", ""))
		var list map[string]any
		if err := json.Unmarshal(r.rpc(t).Result, &list); err != nil {
			t.Fatal(err)
		}
		if r.status != http.StatusOK || list["resultType"] != "complete" || list["ttlMs"] != 3_600_000.0 || list["cacheScope"] != "public" {
			t.Fatalf("tools/list: %d %s", r.status, r.body)
		}
		checkToolList(t, list)
		for i, c := range env.toolCalls(t) {
			r := env.post(t, modernRequest(t, 20+i, "tools/call", map[string]any{"name": c.Name, "arguments": c.Arguments}),
				modernHeaders("tools/call", c.Name))
			if r.status != http.StatusOK {
				t.Fatalf("%s: %d %s", c.Name, r.status, r.body)
			}
			var res map[string]any
			if err := json.Unmarshal(r.rpc(t).Result, &res); err != nil {
				t.Fatal(err)
			}
			if res["resultType"] != "complete" {
				t.Fatalf("%s: resultType %v", c.Name, res["resultType"])
			}
			checkToolResult(t, c, res)
		}
	})
	t.Run("modern header checks", func(t *testing.T) {
		// Mcp-Name must match params.name.
		r := env.post(t, modernRequest(t, 40, "tools/call", map[string]any{"name": mcp.ToolFind, "arguments": map[string]any{"query": "gold"}}),
			modernHeaders("tools/call", mcp.ToolCatalog))
		rpcError(t, r, http.StatusBadRequest, -32020, "40")
		// An unknown tool is -32602.
		r = env.post(t, modernRequest(t, 41, "tools/call", map[string]any{"name": "risk_levels", "arguments": map[string]any{}}),
			modernHeaders("tools/call", "risk_levels"))
		rpcError(t, r, http.StatusBadRequest, -32602, "41")
	})
	t.Run("body limit 413", func(t *testing.T) {
		small := newEnv(t, mcp.Options{MaxBodyBytes: 1024})
		big := legacyRequest(t, 50, "tools/call", map[string]any{"name": mcp.ToolFind, "arguments": map[string]any{"query": strings.Repeat("a", 2000)}})
		rpcError(t, small.post(t, big, nil), http.StatusRequestEntityTooLarge, -32600, "null")
	})
}

// TestBaseURLHost checks that a reverse proxy on the same machine, which
// forwards the public Host to a loopback listener, is served when that
// host is the base URL's or an allowed one.
func TestBaseURLHost(t *testing.T) {
	env := newEnv(t, mcp.Options{AllowedHosts: []string{"mcp.example.org"}})
	for host, want := range map[string]int{
		"mcp.example.org":     http.StatusOK,
		"MCP.example.org:443": http.StatusOK,
		"other.example.org":   http.StatusForbidden,
	} {
		r := env.post(t, legacyRequest(t, 1, "tools/list", nil), map[string]string{"Host": host})
		if r.status != want {
			t.Fatalf("Host %s: %d, want %d", host, r.status, want)
		}
	}
}

// TestNewHandlerOptions checks the option errors.
func TestNewHandlerOptions(t *testing.T) {
	env := newEnv(t, mcp.Options{})
	for name, opts := range map[string]mcp.Options{
		"relative base":  {BaseURL: "/api"},
		"ftp base":       {BaseURL: "ftp://example.com"},
		"origin path":    {AllowedOrigins: []string{"https://app.example.com/x"}},
		"negative limit": {MaxBodyBytes: -1},
		"empty host":     {AllowedHosts: []string{""}},
	} {
		if _, err := mcp.NewHandler(env.svc, opts); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	if _, err := mcp.NewHandler(nil, mcp.Options{}); err == nil {
		t.Error("nil Surfaces: no error")
	}
}

func mustJSONString(t *testing.T, v any) string { return string(mustJSON(t, v)) }

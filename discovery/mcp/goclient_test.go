package mcp_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/seed1284c1d2/svc/discovery/mcp"
)

// wireLog records every HTTP exchange of a client.
type wireLog struct {
	mu   sync.Mutex
	rows []wireRow
}

type wireRow struct {
	method, rpcMethod, versionHeader, sessionID string
	status                                      int
}

func (l *wireLog) RoundTrip(req *http.Request) (*http.Response, error) {
	row := wireRow{method: req.Method, versionHeader: req.Header.Get("MCP-Protocol-Version")}
	if req.Body != nil && req.GetBody != nil {
		if b, err := req.GetBody(); err == nil {
			var m struct {
				Method string `json:"method"`
			}
			raw, _ := io.ReadAll(b)
			_ = json.Unmarshal(raw, &m)
			row.rpcMethod = m.Method
		}
	}
	res, err := http.DefaultTransport.RoundTrip(req)
	if err == nil {
		row.status = res.StatusCode
		row.sessionID = res.Header.Get("Mcp-Session-Id")
	}
	l.mu.Lock()
	l.rows = append(l.rows, row)
	l.mu.Unlock()
	return res, err
}

func (l *wireLog) snapshot() []wireRow {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]wireRow(nil), l.rows...)
}

// TestGoClient drives the endpoint with the go-sdk client in both eras:
// 2026-07-28 (server/discover, then stateless requests) and the legacy
// initialize exchange at 2025-11-25 and 2025-06-18. Each lists the tools
// and calls every one, checking structuredContent against the discovery
// core's own answer.
func TestGoClient(t *testing.T) {
	env := newEnv(t, mcp.Options{})
	calls := env.toolCalls(t)
	for _, tc := range []struct {
		name, ask, want string
	}{
		{"modern", "", "2026-07-28"},
		{"legacy-2025-11-25", "2025-11-25", "2025-11-25"},
		{"legacy-2025-06-18", "2025-06-18", "2025-06-18"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			wire := &wireLog{}
			client := sdk.NewClient(&sdk.Implementation{Name: "svc-go-test", Version: "1.0.0"}, nil)
			cs, err := client.Connect(ctx, &sdk.StreamableClientTransport{
				Endpoint:   env.url,
				HTTPClient: &http.Client{Transport: wire},
			}, &sdk.ClientSessionOptions{ProtocolVersion: tc.ask})
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			init := cs.InitializeResult()
			if init.ProtocolVersion != tc.want {
				t.Fatalf("negotiated %q, want %q", init.ProtocolVersion, tc.want)
			}
			if init.ServerInfo == nil || init.ServerInfo.Name != "svc" || init.ServerInfo.Version != mcp.DefaultVersion {
				t.Fatalf("server info %+v", init.ServerInfo)
			}
			if init.Capabilities == nil || init.Capabilities.Tools == nil || init.Capabilities.Prompts != nil ||
				init.Capabilities.Resources != nil || init.Capabilities.Logging != nil || init.Capabilities.Completions != nil {
				t.Fatalf("capabilities %s, want tools only", mustJSON(t, init.Capabilities))
			}
			if !strings.Contains(init.Instructions, "find_tool") {
				t.Fatalf("instructions %q", init.Instructions)
			}
			if cs.ID() != "" {
				t.Fatalf("session id %q: a stateless server issues none", cs.ID())
			}

			list, err := cs.ListTools(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			if list.TTLMs != int(mcp.DefaultListTTL/time.Millisecond) || list.CacheScope != "public" {
				t.Fatalf("tools/list cache hints ttlMs=%d cacheScope=%q", list.TTLMs, list.CacheScope)
			}
			checkToolList(t, generic(t, mustJSON(t, list)).(map[string]any))

			for _, c := range calls {
				res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: c.Name, Arguments: c.Arguments})
				if err != nil {
					t.Fatalf("%s %v: protocol error %v", c.Name, c.Arguments, err)
				}
				checkToolResult(t, c, generic(t, mustJSON(t, res)).(map[string]any))
			}

			// An unknown tool is a protocol error (-32602), not a tool error.
			_, err = cs.CallTool(ctx, &sdk.CallToolParams{Name: "risk_levels", Arguments: map[string]any{}})
			var jerr *jsonrpc.Error
			if !errors.As(err, &jerr) || jerr.Code != jsonrpc.CodeInvalidParams {
				t.Fatalf("unknown tool: %v, want a -32602 protocol error", err)
			}

			// What went over the wire: no session id ever; initialize only in
			// the legacy era, server/discover only in the modern one.
			var sawInit, sawDiscover bool
			for _, row := range wire.snapshot() {
				if row.sessionID != "" {
					t.Fatalf("the server sent Mcp-Session-Id %q", row.sessionID)
				}
				sawInit = sawInit || row.rpcMethod == "initialize"
				sawDiscover = sawDiscover || row.rpcMethod == "server/discover"
				if row.rpcMethod == "tools/call" && row.versionHeader != tc.want {
					t.Fatalf("tools/call sent MCP-Protocol-Version %q, want %q", row.versionHeader, tc.want)
				}
			}
			if modern := tc.want == "2026-07-28"; sawInit == modern || sawDiscover != modern {
				t.Fatalf("era %s: initialize sent %v, server/discover sent %v", tc.want, sawInit, sawDiscover)
			}
		})
	}
}

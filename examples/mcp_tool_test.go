package examples_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/seed1284c1d2/svc/internal/nodetest"
)

// TestMCPToolPaidByCloudflare starts the mcp-tool example and has
// Cloudflare's agents client (withX402Client, pinned in e2e/mcp) buy its
// tool: the client reads the price from tools/list, gets the x402
// PaymentRequired of the unpaid call, pays with a base64
// _meta["x402/payment"], and gets the fortune with a successful settlement;
// the same payment sent again gets the same answer, settled once.
func TestMCPToolPaidByCloudflare(t *testing.T) {
	if os.Getenv("SVC_E2E") == "0" {
		t.Skip("end-to-end test skipped: SVC_E2E=0")
	}
	dir := build(t)
	e2e, err := filepath.Abs(filepath.Join("..", "e2e", "mcp"))
	if err != nil {
		t.Fatal(err)
	}
	node := nodetest.Setup(t, 20, e2e, "@modelcontextprotocol/client", "agents", "viem")
	base := startServer(t, filepath.Join(dir, "mcp-tool"))

	args := map[string]any{"topic": "gold"}
	plan := filepath.Join(t.TempDir(), "plan.json")
	body, _ := json.Marshal(map[string]any{"steps": []map[string]any{
		{"kind": "pay", "name": "fortune", "arguments": args},
		{"kind": "replay", "name": "fortune", "arguments": args},
	}})
	if err := os.WriteFile(plan, body, 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "pay.mjs", "cf-v2", base+"/mcp", plan)
	cmd.Dir = e2e
	cmd.Env = append(os.Environ(), "E2E_PRIVATE_KEY="+strings.TrimPrefix(payerEnv(t)[0], "PAYER_KEY="))
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	var rep struct {
		Tools struct {
			Tools []map[string]any `json:"tools"`
		} `json:"tools"`
		Steps []struct {
			Paid  map[string]any `json:"paid"`
			Error string         `json:"error"`
		} `json:"steps"`
		Error string `json:"error"`
	}
	if jerr := json.Unmarshal(out, &rep); jerr != nil || rep.Error != "" || err != nil {
		t.Fatalf("pay.mjs: %v %s (exit %v)\nstdout: %s\nstderr: %s", jerr, rep.Error, err, out, stderr.String())
	}
	if len(rep.Tools.Tools) != 1 || !strings.Contains(rep.Tools.Tools[0]["description"].(string), "0.001") {
		t.Fatalf("tools/list as the client shows it: %v", rep.Tools.Tools)
	}
	var tx []string
	for i, s := range rep.Steps {
		if s.Error != "" {
			t.Fatalf("step %d failed in the client: %s", i, s.Error)
		}
		sc, _ := s.Paid["structuredContent"].(map[string]any)
		meta, _ := s.Paid["_meta"].(map[string]any)
		sr, _ := meta["x402/payment-response"].(map[string]any)
		if s.Paid["isError"] == true || sc["topic"] != "gold" || sc["fortune"] == "" || sr["success"] != true {
			t.Fatalf("step %d: not a paid answer: %v", i, s.Paid)
		}
		tx = append(tx, sr["transaction"].(string))
	}
	if len(tx) != 2 || tx[0] != tx[1] {
		t.Fatalf("the replay settled anew: %v", tx)
	}
}

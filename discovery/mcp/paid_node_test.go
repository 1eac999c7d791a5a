package mcp_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/seed1284c1d2/svc/tools"
	"github.com/seed1284c1d2/svc/x402"
	"github.com/seed1284c1d2/svc/x402/engine"
	"github.com/seed1284c1d2/svc/x402/exact"
	x402mcp "github.com/seed1284c1d2/svc/x402/mcp"
)

// payReport is what e2e/mcp/pay.mjs prints.
type payReport struct {
	Client          string         `json:"client"`
	Era             string         `json:"era"`
	ProtocolVersion string         `json:"protocolVersion"`
	Capabilities    map[string]any `json:"capabilities"`
	Tools           struct {
		Tools []map[string]any `json:"tools"`
	} `json:"tools"`
	Steps []payStep `json:"steps"`
	HTTP  []struct {
		JSONRPC     string `json:"jsonrpc"`
		Name        string `json:"name"`
		Status      int    `json:"status"`
		HasPayment  bool   `json:"hasPayment"`
		PaymentType string `json:"paymentType"`
	} `json:"http"`
	Error string `json:"error"`
}

// payStep is one step of a pay.mjs plan as reported.
type payStep struct {
	Kind      string         `json:"kind"`
	Name      string         `json:"name"`
	Arguments map[string]any `json:"arguments"`
	Unpaid    map[string]any `json:"unpaid"`
	Paid      map[string]any `json:"paid"`
	Error     string         `json:"error"`
}

// step is one entry of a pay.mjs plan.
type step struct {
	Kind      string         `json:"kind"`
	Name      string         `json:"name"`
	Arguments map[string]any `json:"arguments"`
}

// TestPaidTypeScriptClients buys tools over /mcp with real peers, against
// the server as cmd/svc assembles it (HTTP and MCP on one engine, a real
// journal, the local facilitator):
//
//   - the official TypeScript clients of both eras (@modelcontextprotocol/
//     client 2.x pinned to 2026-07-28 and in legacy mode,
//     @modelcontextprotocol/sdk 1.x) with @x402/core + @x402/evm building
//     the payloads, following the tool-result binding, and the 2.x client
//     advertising org.x402/payment, following the extension binding: pay,
//     replay (the recorded answer), the same payment for another call
//     (refused), a tampered payment (refused), invalid arguments and a
//     terminal outage (no payment asked);
//   - Cloudflare's agents/x402 withX402Client around both clients, which
//     reads _meta["x402/error"], pays with a base64 _meta["x402/payment"]
//     and shows the agents-x402 price in the tool descriptions.
//
// Skipped under -short, when node or npm is missing or SVC_E2E=0, except
// under CI=true where a missing peer fails it.
func TestPaidTypeScriptClients(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: drives the Node.js MCP clients (the full go test runs it)")
	}
	if os.Getenv("SVC_E2E") == "0" {
		t.Skip("end-to-end test skipped: SVC_E2E=0")
	}
	dir := e2eDir(t)
	node := e2eNode(t, 20)
	e2eInstall(t, dir, []string{"@modelcontextprotocol/client", "@modelcontextprotocol/sdk", "agents", "@x402/core", "@x402/evm", "viem"})

	e := newPaidEnv(t, paidOptions{})
	tool := e.paidTool(t, "risk_levels")
	args := e.exampleArgs(t, "risk_levels")
	want, err := tool.Invoke(context.Background(), tools.Env{}, mustJSON(t, args))
	if err != nil {
		t.Fatal(err)
	}
	other := e.exampleArgs(t, "risk_levels")
	other["entry"] = 3600
	bad := e.exampleArgs(t, "risk_levels")
	bad["entry"] = -1
	official := writePlan(t, []step{
		{"pay", "risk_levels", args},
		{"replay", "risk_levels", args},
		{"replay", "risk_levels", other},
		{"tamper", "risk_levels", args},
		{"unpaid", "risk_levels", bad},
		{"pay", "xau_quote", map[string]any{}},
	})
	cloudflare := writePlan(t, []step{
		{"pay", "risk_levels", args},
		{"replay", "risk_levels", args},
		{"replay", "risk_levels", other},
		{"unpaid", "risk_levels", bad},
		{"pay", "xau_quote", map[string]any{}},
		{"pay", "session_state", map[string]any{}}, // its offer must survive btoa
	})
	down := writePlan(t, []step{{"unpaid", "xau_quote", map[string]any{}}})

	clients := []struct {
		client, era, version string
		ext, cf              bool
	}{
		{"v2-pin", "modern", "2026-07-28", false, false},
		{"v2-ext", "modern", "2026-07-28", true, false},
		{"v2-legacy", "legacy", "2025-11-25", false, false},
		{"v1", "legacy", "2025-11-25", false, false},
		{"cf-v2", "modern", "2026-07-28", false, true},
		{"cf-v1", "legacy", "2025-11-25", false, true},
	}
	paid := 0
	for _, c := range clients {
		t.Run(c.client, func(t *testing.T) {
			plan := official
			if c.cf {
				plan = cloudflare
			}
			rep := runPay(t, node, dir, c.client, e.url, plan)
			if rep.Era != c.era || rep.ProtocolVersion != c.version {
				t.Fatalf("era %q version %q, want %q %q", rep.Era, rep.ProtocolVersion, c.era, c.version)
			}
			if exts, _ := rep.Capabilities["extensions"].(map[string]any); exts[x402mcp.ExtensionPayment] == nil {
				t.Fatalf("capabilities %v lack %s", rep.Capabilities, x402mcp.ExtensionPayment)
			}
			for _, s := range rep.Steps {
				if s.Error != "" {
					t.Fatalf("step %s %s %v failed in the client: %s", s.Kind, s.Name, s.Arguments, s.Error)
				}
			}
			// The first payment, its replay and its reuse for another call.
			first := rep.Steps[0]
			if !c.cf {
				checkRequirement(t, c.ext, first.Unpaid, engine.ReasonPaymentRequired)
			}
			sr := checkPaid(t, first.Paid, generic(t, want), e.signer.Address())
			if again := checkPaid(t, rep.Steps[1].Paid, generic(t, want), e.signer.Address()); again.Transaction != sr.Transaction {
				t.Fatalf("replay settled anew: %s then %s", sr.Transaction, again.Transaction)
			}
			checkRequirement(t, c.ext, rep.Steps[2].Paid, exact.ReasonNonceAlreadyUsed)
			rest := rep.Steps[3:]
			if !c.cf {
				checkRequirement(t, c.ext, rest[0].Unpaid, engine.ReasonPaymentRequired)
				checkRequirement(t, c.ext, rest[0].Paid, exact.ReasonValueMismatch)
				rest = rest[1:]
			}
			noPaymentAsked(t, rest[0].Unpaid, "entry")
			quote := checkPaidAny(t, rest[1].Paid)
			if quote["symbol"] != "XAUUSD" {
				t.Fatalf("xau_quote answer %v", quote)
			}
			paid += 2
			if c.cf {
				if state := checkPaidAny(t, rest[2].Paid); state["timezone"] == nil {
					t.Fatalf("session_state answer %v", state)
				}
				paid++
			}

			// On the wire: payments as objects (the specification) or, from
			// Cloudflare's client, base64 strings; no payment attempted for
			// the invalid call.
			var withPayment, without int
			for _, h := range rep.HTTP {
				if h.JSONRPC != "tools/call" {
					continue
				}
				if !h.HasPayment {
					without++
					continue
				}
				withPayment++
				if wantType := map[bool]string{false: "object", true: "string"}[c.cf]; h.PaymentType != wantType {
					t.Fatalf("a payment sent as %s, want %s", h.PaymentType, wantType)
				}
			}
			// With payment: two payments, two replays and a tampered one
			// (Cloudflare's client tampers with nothing; it buys a third
			// tool instead); without: the unpaid legs of the three, and
			// the invalid call.
			if withPayment != 5 || without != 4 {
				t.Fatalf("tools/call with payment %d, without %d; want 5 and 4", withPayment, without)
			}
			if c.cf {
				for _, tl := range rep.Tools.Tools {
					if tl["name"] == "risk_levels" && !strings.HasSuffix(tl["description"].(string), "(This is a paid tool, you will be charged $0.005 for its execution)") {
						t.Fatalf("Cloudflare's client did not read the price: %q", tl["description"])
					}
				}
			}
		})
	}

	e.terminal.SetDown(true)
	time.Sleep(5 * time.Millisecond) // past the health cache's TTL
	for _, c := range clients {
		t.Run(c.client+"/terminal-down", func(t *testing.T) {
			rep := runPay(t, node, dir, c.client, e.url, down)
			if s := rep.Steps[0]; s.Error != "" {
				t.Fatalf("the client failed: %s", s.Error)
			}
			noPaymentAsked(t, rep.Steps[0].Unpaid, "terminal is unavailable")
			for _, h := range rep.HTTP {
				if h.HasPayment {
					t.Fatal("a payment was sent while the terminal is down")
				}
			}
		})
	}
	e.terminal.SetDown(false)

	// One settlement per paid call, each journaled as an MCP sale.
	settled := e.local.Settlements()
	if len(settled) != paid {
		t.Fatalf("%d settlements, %d paid calls", len(settled), paid)
	}
	for _, s := range settled {
		rec, err := e.journal.Get(context.Background(), exact.NonceKey(s.Network, s.Asset, s.Payer, s.Nonce))
		if err != nil || rec.State != engine.StateSettled || rec.Transport != x402mcp.Transport {
			t.Fatalf("journal row %+v (%v)", rec, err)
		}
	}
}

// writePlan writes a pay.mjs plan to a temporary file.
func writePlan(t *testing.T, steps []step) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "plan.json")
	if err := os.WriteFile(path, mustJSON(t, map[string]any{"steps": steps}), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// runPay runs pay.mjs and decodes its report.
func runPay(t *testing.T, node, dir, client, url, plan string) payReport {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), e2eScriptTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "pay.mjs", client, url, plan)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "E2E_PRIVATE_KEY="+testPayerKey)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	var rep payReport
	if jerr := json.Unmarshal(out, &rep); jerr != nil {
		t.Fatalf("node pay.mjs %s: %v (exit %v)\nstdout: %s\nstderr: %s", client, jerr, err, out, stderr.String())
	}
	if rep.Error != "" || err != nil {
		t.Fatalf("node pay.mjs %s failed: %s (exit %v)\nstderr: %s", client, rep.Error, err, stderr.String())
	}
	return rep
}

// checkRequirement checks an answer asking for payment with reason: the
// extension binding's payment_required result, or the tool-result
// binding's tool error with the PaymentRequired as structuredContent, as
// text and in _meta["x402/error"].
func checkRequirement(t *testing.T, ext bool, res map[string]any, reason string) {
	t.Helper()
	var pr map[string]any
	if ext {
		if res["resultType"] != x402mcp.ResultTypePaymentRequired {
			t.Fatalf("want a payment_required result, got %s", mustJSON(t, res))
		}
		pr = mustMap(res["paymentRequired"])
	} else {
		meta := mustMap(res["_meta"])
		pr = mustMap(res["structuredContent"])
		if res["isError"] != true || !reflect.DeepEqual(meta[x402mcp.MetaPaymentError], res["structuredContent"]) ||
			!reflect.DeepEqual(generic(t, []byte(text(t, res))), res["structuredContent"]) {
			t.Fatalf("want the tool-result binding, got %s", mustJSON(t, res))
		}
	}
	if pr["x402Version"] != float64(2) || pr["error"] != reason || len(pr["accepts"].([]any)) == 0 {
		t.Fatalf("payment requirement %s, want error %q", mustJSON(t, pr), reason)
	}
}

// checkPaid checks a paid answer: the tool's output as structuredContent
// and text, a successful settlement by the payer.
func checkPaid(t *testing.T, res map[string]any, want any, payer string) x402.SettleResponse {
	t.Helper()
	if got := checkPaidAny(t, res); !reflect.DeepEqual(got, want) {
		t.Fatalf("paid answer %s, want %s", mustJSON(t, got), mustJSON(t, want))
	}
	sr, _ := settlementOf(t, res)
	if sr.Payer != payer {
		t.Fatalf("settlement payer %s, want %s", sr.Payer, payer)
	}
	return sr
}

// checkPaidAny checks a paid answer of any output and returns it.
func checkPaidAny(t *testing.T, res map[string]any) map[string]any {
	t.Helper()
	sr, ok := settlementOf(t, res)
	if res["isError"] != nil || !ok || !sr.Success || sr.Transaction == "" || sr.Network != x402.NetworkBase {
		t.Fatalf("want a paid answer, got %s", mustJSON(t, res))
	}
	if !reflect.DeepEqual(generic(t, []byte(text(t, res))), res["structuredContent"]) {
		t.Fatalf("text and structuredContent differ: %s", mustJSON(t, res))
	}
	return mustMap(res["structuredContent"])
}

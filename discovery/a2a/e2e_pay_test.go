package a2a

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/seed1284c1d2/svc/tools"
	"github.com/seed1284c1d2/svc/x402"
	x402a2a "github.com/seed1284c1d2/svc/x402/a2a"
	"github.com/seed1284c1d2/svc/x402/engine"
	"github.com/seed1284c1d2/svc/x402/facilitator"
)

// Paid calls over A2A with real peers: the A2A JS SDK 1.3.0 client (A2A
// 1.0) and raw A2A 0.3 JSON-RPC, with payloads built by the official x402
// client (@x402/core + @x402/evm, a viem local account), against a server
// on 127.0.0.1 with the real engine and the local facilitator. The script
// is e2e/a2a/a2a-pay.mjs (see e2e/a2a/README.md).

// e2ePayTask is a task as a2a-pay.mjs summarises it.
type e2ePayTask struct {
	ID        string                `json:"id"`
	State     string                `json:"state"`
	Text      string                `json:"text"`
	Status    *string               `json:"status"`
	Error     *string               `json:"error"`
	Required  *x402.PaymentRequired `json:"required"`
	Receipts  []x402.SettleResponse `json:"receipts"`
	Artifact  *string               `json:"artifact"`
	Output    json.RawMessage       `json:"output"`
	Activated *string               `json:"activated"`
}

// e2eRPCError is a JSON-RPC error as the script reports it.
type e2eRPCError struct {
	Code          *int            `json:"code"`
	Message       string          `json:"message"`
	Data          json.RawMessage `json:"data"`
	UnexpectedTsk *e2ePayTask     `json:"unexpectedTask"`
}

// e2ePayReport is what a2a-pay.mjs prints.
type e2ePayReport struct {
	Mode            string `json:"mode"`
	ProtocolVersion string `json:"protocolVersion"`
	Card            struct {
		Extensions []struct {
			URI      string `json:"uri"`
			Required bool   `json:"required"`
		} `json:"extensions"`
		Skills []string `json:"skills"`
	} `json:"card"`
	PayloadVersion  int         `json:"payloadVersion"`
	First           e2ePayTask  `json:"first"`
	Paid            e2ePayTask  `json:"paid"`
	Got             e2ePayTask  `json:"got"`
	ReplaySameTask  e2ePayTask  `json:"replaySameTask"`
	ReplayNewTask   e2ePayTask  `json:"replayNewTask"`
	Reuse           e2ePayTask  `json:"reuse"`
	TamperValue     e2ePayTask  `json:"tamperValue"`
	TamperSignature e2ePayTask  `json:"tamperSignature"`
	TamperAccepted  e2ePayTask  `json:"tamperAccepted"`
	Invalid         e2eRPCError `json:"invalid"`
	UnknownMember   e2eRPCError `json:"unknownMember"`
	Down            e2ePayTask  `json:"down"`
	Error           string      `json:"error"`
}

// e2ePayRun runs a2a-pay.mjs and decodes its report.
func e2ePayRun(t *testing.T, node, dir string, args ...string) e2ePayReport {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), e2eScriptTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, append([]string{"a2a-pay.mjs"}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "E2E_PRIVATE_KEY=0x"+payKeyHex)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	var rep e2ePayReport
	if jerr := json.Unmarshal(out, &rep); jerr != nil {
		t.Fatalf("node a2a-pay.mjs %v: %v (exit %v)\nstdout: %s\nstderr: %s", args, jerr, err, out, stderr.String())
	}
	if rep.Error != "" || err != nil {
		t.Fatalf("node a2a-pay.mjs %v failed: %s (exit %v)\nstderr: %s", args, rep.Error, err, stderr.String())
	}
	return rep
}

func TestE2EPaidCalls(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: drives the Node.js A2A peers (the full go test runs it)")
	}
	node, dir := e2eSetup(t)
	env := newPayEnv(t)
	base := env.srv.URL
	want := invoke(t, env.cat, tools.Env{}, "risk-levels", riskInput)
	canonical := must(t, env.cat, "risk-levels", riskInput).Input()
	settledBefore := 0
	for _, mode := range []struct {
		name string
		v    version
	}{{"v1", v10}, {"v03", v03}} {
		t.Run(mode.name, func(t *testing.T) {
			env.seen.take()
			rep := e2ePayRun(t, node, dir, mode.name, base, "pay")
			v := mode.v
			// Every request activated the extension, in its version's
			// header, with its version's methods.
			seen := env.seen.take()
			if len(seen) < 15 {
				t.Fatalf("%d requests seen", len(seen))
			}
			for _, r := range seen {
				ok := r.version == "1.0" && r.extensions == x402a2a.ExtensionURI && (r.method == "SendMessage" || r.method == "GetTask")
				if v == v03 {
					ok = r.version == "" && r.legacyExtensions == x402a2a.ExtensionURI && (r.method == "message/send" || r.method == "tasks/get")
				}
				if !ok {
					t.Fatalf("request %+v", r)
				}
			}
			if mode.name == "v1" && rep.ProtocolVersion != "1.0" {
				t.Fatalf("the SDK client speaks %q, want 1.0", rep.ProtocolVersion)
			}
			// The card declares the extension and a skill per tool.
			if len(rep.Card.Extensions) != 1 || rep.Card.Extensions[0].URI != x402a2a.ExtensionURI || !slices.Contains(rep.Card.Skills, "risk-levels") {
				t.Fatalf("card %+v", rep.Card)
			}
			// Payment required, with the engine's offer.
			first := rep.First
			if first.State != state(v, stateInputRequired) || deref(first.Status) != x402a2a.StatusPaymentRequired || first.Required == nil ||
				len(first.Required.Accepts) != 1 || first.Required.Accepts[0].Amount != "5000" || first.Required.Accepts[0].PayTo != testPayTo {
				t.Fatalf("first: %+v", first)
			}
			if v == v03 && deref(first.Activated) != x402a2a.ExtensionURI {
				t.Fatalf("activation not acknowledged: %+v", first)
			}
			if rep.PayloadVersion != 2 {
				t.Fatalf("the x402 client built a v%d payload", rep.PayloadVersion)
			}
			// Paid: the tool's answer and the receipt.
			paid := rep.Paid
			if paid.ID != first.ID || paid.State != state(v, stateCompleted) || deref(paid.Status) != x402a2a.StatusPaymentCompleted ||
				deref(paid.Artifact) != "risk-levels" || !sameJSON(paid.Output, want) {
				t.Fatalf("paid: %+v", paid)
			}
			if len(paid.Receipts) != 1 || !paid.Receipts[0].Success || !strings.HasPrefix(paid.Receipts[0].Transaction, facilitator.LocalTransactionPrefix) ||
				!strings.EqualFold(paid.Receipts[0].Payer, env.signer.Address()) {
				t.Fatalf("paid receipts: %+v", paid.Receipts)
			}
			if rep.Got.State != paid.State || !sameJSON(rep.Got.Output, want) || deref(rep.Got.Status) != x402a2a.StatusPaymentCompleted {
				t.Fatalf("get: %+v", rep.Got)
			}
			// The same payment again: the recorded answer, no new settlement.
			for name, r := range map[string]e2ePayTask{"same task": rep.ReplaySameTask, "new task": rep.ReplayNewTask} {
				if r.State != state(v, stateCompleted) || !sameJSON(r.Output, want) || len(r.Receipts) == 0 ||
					r.Receipts[len(r.Receipts)-1].Transaction != paid.Receipts[0].Transaction {
					t.Fatalf("replay to the %s: %+v", name, r)
				}
			}
			if rep.ReplaySameTask.ID != paid.ID || rep.ReplayNewTask.ID == paid.ID {
				t.Fatalf("replay task ids %s %s, paid %s", rep.ReplaySameTask.ID, rep.ReplayNewTask.ID, paid.ID)
			}
			// The same payment for another call, and tampered payments: refused.
			for name, tc := range map[string]struct {
				task e2ePayTask
				code string
			}{
				"reuse":            {rep.Reuse, x402a2a.PaymentErrorDuplicateNonce},
				"tampered value":   {rep.TamperValue, x402a2a.PaymentErrorInvalidAmount},
				"tampered sig":     {rep.TamperSignature, x402a2a.PaymentErrorInvalidSignature},
				"tampered accepts": {rep.TamperAccepted, x402a2a.PaymentErrorInvalidAmount},
			} {
				r := tc.task
				if r.State != state(v, stateFailed) || deref(r.Status) != x402a2a.StatusPaymentFailed || deref(r.Error) != tc.code || !isNull(r.Output) ||
					len(r.Receipts) != 1 || r.Receipts[0].Success || r.Receipts[0].ErrorReason == "" {
					t.Fatalf("%s: %+v, want failed with %s", name, r, tc.code)
				}
			}
			// Invalid input: -32602 naming the field, no task, no payment asked.
			for name, tc := range map[string]struct {
				e     e2eRPCError
				field string
			}{
				"invalid value":  {rep.Invalid, "message.parts[0].data.input.direction"},
				"unknown member": {rep.UnknownMember, "message.parts[0].data.input.leverage"},
			} {
				if tc.e.UnexpectedTsk != nil || tc.e.Code == nil || *tc.e.Code != CodeInvalidParams || !strings.Contains(tc.e.Message, tc.field) {
					t.Fatalf("%s: %+v, want -32602 naming %s", name, tc.e, tc.field)
				}
			}
			// One settlement per mode, journaled as a2a with the fingerprint
			// of the first message's input.
			if n := env.settled(); n != settledBefore+1 {
				t.Fatalf("%d settlements after %s, want %d", n, mode.name, settledBefore+1)
			}
			settledBefore++
			for _, row := range env.rows(t, engine.StateSettled) {
				if row.Transport != x402a2a.Transport || row.RequestHash != Fingerprint("risk-levels", canonical) {
					t.Fatalf("journal row %+v", row)
				}
			}
		})
	}
	t.Run("terminal down", func(t *testing.T) {
		env.term.SetDown(true)
		defer env.term.SetDown(false)
		for _, mode := range []struct {
			name string
			v    version
		}{{"v1", v10}, {"v03", v03}} {
			rep := e2ePayRun(t, node, dir, mode.name, base, "down")
			d := rep.Down
			if d.State != state(mode.v, stateFailed) || d.Required != nil || d.Status != nil || !strings.Contains(d.Text, "no payment was asked") {
				t.Fatalf("%s, terminal down: %+v", mode.name, d)
			}
		}
		if env.term.quotes.Load() != 0 {
			t.Fatalf("%d quotes while down", env.term.quotes.Load())
		}
	})
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

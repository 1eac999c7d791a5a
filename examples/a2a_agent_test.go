package examples_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/seed1284c1d2/svc/x402"
	x402a2a "github.com/seed1284c1d2/svc/x402/a2a"
	"github.com/seed1284c1d2/svc/x402/client"
)

// a2aTask is the part of an A2A 1.0 task the test reads.
type a2aTask struct {
	ID     string `json:"id"`
	Status struct {
		State   string `json:"state"`
		Message struct {
			Metadata x402a2a.Metadata `json:"metadata"`
		} `json:"message"`
	} `json:"status"`
	Artifacts []struct {
		Parts []struct {
			Data map[string]string `json:"data"`
		} `json:"parts"`
	} `json:"artifacts"`
}

// a2aCall posts one JSON-RPC request to the agent and decodes its result
// into out; it returns the JSON-RPC error code (0 for none).
func a2aCall(t *testing.T, base, method string, params any, out any) int {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
	req, err := http.NewRequest(http.MethodPost, base+"/a2a", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("A2A-Version", "1.0")
	req.Header.Set("A2A-Extensions", x402a2a.ExtensionURI)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var rpc struct {
		Result json.RawMessage `json:"result"`
		Error  *struct {
			Code int `json:"code"`
		} `json:"error"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&rpc); err != nil {
		t.Fatal(err)
	}
	if rpc.Error != nil {
		return rpc.Error.Code
	}
	if err := json.Unmarshal(rpc.Result, out); err != nil {
		t.Fatalf("%s result %s: %v", method, rpc.Result, err)
	}
	return 0
}

// a2aSend sends a message (text, on taskID when set, with metadata) and
// returns the task.
func a2aSend(t *testing.T, base, text, taskID string, metadata map[string]any) a2aTask {
	t.Helper()
	msg := map[string]any{"messageId": "m-" + text + taskID, "role": "ROLE_USER", "parts": []map[string]any{{"text": text}}}
	if taskID != "" {
		msg["taskId"] = taskID
	}
	if metadata != nil {
		msg["metadata"] = metadata
	}
	var res struct {
		Task a2aTask `json:"task"`
	}
	if code := a2aCall(t, base, "SendMessage", map[string]any{"message": msg}, &res); code != 0 {
		t.Fatalf("SendMessage: JSON-RPC error %d", code)
	}
	return res.Task
}

// TestA2AAgentPaid starts the a2a-agent example and pays for its skill as
// the A2A x402 extension (v0.2, standalone flow) says, with x402/client's
// signer: the first message gets the task in input-required with the
// PaymentRequired; the signed payment on the task gets it completed with
// the fortune and a successful receipt; the same payment on a new task
// for the same topic gets the recorded answer and settlement; a tampered
// payment fails its task with the extension's error code and nothing
// settled; a message on the completed task is refused.
func TestA2AAgentPaid(t *testing.T) {
	dir := build(t)
	base := startServer(t, filepath.Join(dir, "a2a-agent"))
	if got := status(t, base+"/.well-known/agent-card.json"); got != http.StatusOK {
		t.Fatalf("agent card: %d", got)
	}
	signer, err := client.ParseSigner(strings.TrimPrefix(payerEnv(t)[0], "PAYER_KEY="))
	if err != nil {
		t.Fatal(err)
	}
	pay := func(t *testing.T, pr *x402.PaymentRequired, value string) x402.PaymentPayload {
		t.Helper()
		req := pr.Accepts[0]
		ep, err := signer.NewPayload(req, time.Now(), time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if value != "" {
			ep.Authorization.Value = value
		}
		raw, _ := json.Marshal(ep)
		res := pr.Resource
		return x402.PaymentPayload{X402Version: x402.Version, Resource: &res, Accepted: req, Payload: raw}
	}

	first := a2aSend(t, base, "gold", "", nil)
	meta := first.Status.Message.Metadata
	if first.Status.State != "TASK_STATE_INPUT_REQUIRED" || meta.Status != x402a2a.StatusPaymentRequired || meta.Required == nil ||
		len(meta.Required.Accepts) != 1 || meta.Required.Accepts[0].Amount != "1000" {
		t.Fatalf("unpaid: %+v", first)
	}
	payment := pay(t, meta.Required, "")
	paid := a2aSend(t, base, "gold", first.ID, map[string]any{x402a2a.MetaStatus: x402a2a.StatusPaymentSubmitted, x402a2a.MetaPayload: payment})
	pm := paid.Status.Message.Metadata
	if paid.Status.State != "TASK_STATE_COMPLETED" || pm.Status != x402a2a.StatusPaymentCompleted || len(pm.Receipts) != 1 || !pm.Receipts[0].Success ||
		pm.Receipts[0].Transaction == "" || !strings.EqualFold(pm.Receipts[0].Payer, signer.Address()) {
		t.Fatalf("paid: %+v", paid)
	}
	if len(paid.Artifacts) != 1 || paid.Artifacts[0].Parts[0].Data["topic"] != "gold" || paid.Artifacts[0].Parts[0].Data["fortune"] == "" {
		t.Fatalf("artifacts: %+v", paid.Artifacts)
	}
	var got a2aTask
	if code := a2aCall(t, base, "GetTask", map[string]any{"id": paid.ID}, &got); code != 0 || got.Status.State != "TASK_STATE_COMPLETED" {
		t.Fatalf("GetTask: %d %+v", code, got)
	}
	if code := a2aCall(t, base, "SendMessage", map[string]any{"message": map[string]any{"messageId": "late", "role": "ROLE_USER", "taskId": paid.ID,
		"parts": []map[string]any{{"text": "gold"}}}}, &got); code != -32004 {
		t.Fatalf("a message on the completed task: code %d", code)
	}

	again := a2aSend(t, base, "gold", "", map[string]any{x402a2a.MetaPayload: payment})
	am := again.Status.Message.Metadata
	if again.Status.State != "TASK_STATE_COMPLETED" || len(am.Receipts) != 1 || am.Receipts[0].Transaction != pm.Receipts[0].Transaction ||
		again.Artifacts[0].Parts[0].Data["fortune"] != paid.Artifacts[0].Parts[0].Data["fortune"] {
		t.Fatalf("the same payment again: %+v", again)
	}

	next := a2aSend(t, base, "silver", "", nil)
	tampered := pay(t, next.Status.Message.Metadata.Required, "1")
	bad := a2aSend(t, base, "silver", next.ID, map[string]any{x402a2a.MetaPayload: tampered})
	bm := bad.Status.Message.Metadata
	if bad.Status.State != "TASK_STATE_FAILED" || bm.Status != x402a2a.StatusPaymentFailed || bm.Error == "" || len(bm.Receipts) != 1 ||
		bm.Receipts[0].Success || len(bad.Artifacts) != 0 {
		t.Fatalf("tampered: %+v", bad)
	}
}

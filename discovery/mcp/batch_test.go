package mcp_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/seed1284c1d2/svc/discovery/mcp"
)

// batch is a JSON-RPC batch of n tools/call of find_tool.
func batch(t *testing.T, n int) string {
	t.Helper()
	msgs := make([]string, n)
	for i := range msgs {
		msgs[i] = legacyRequest(t, i+1, "tools/call", map[string]any{"name": "find_tool", "arguments": map[string]any{"query": "decode a jwt"}})
	}
	return "[" + strings.Join(msgs, ",") + "]"
}

// TestBatchesBounded: a batch is served up to MaxBatch messages, each
// counted by AdmitBatch; a longer one, one whose answers are over
// MaxBatchAnswerBytes, one carrying a payment, one refused by AdmitBatch
// and any batch of a protocol version without batches get one small
// JSON-RPC error.
func TestBatchesBounded(t *testing.T) {
	var admitted atomic.Int64
	var refuse atomic.Bool
	env := newEnv(t, mcp.Options{AdmitBatch: func(r *http.Request, extra int) (bool, time.Duration) {
		if refuse.Load() {
			return false, 3 * time.Second
		}
		admitted.Add(int64(extra))
		return true, 0
	}})
	errorOf := func(r httpReply, status int, want string) {
		t.Helper()
		if r.status != status || len(r.body) > 1024 {
			t.Fatalf("status %d (want %d), %d bytes: %.300s", r.status, status, len(r.body), r.body)
		}
		res := r.rpc(t)
		if res.Error == nil || res.Error.Code != -32600 || !strings.Contains(res.Error.Message, want) {
			t.Fatalf("error %s, want one saying %q", r.body, want)
		}
	}

	// Within the bounds: one answer per message, each message counted.
	r := env.post(t, batch(t, mcp.DefaultMaxBatch), nil)
	var answers []rpcResponse
	if r.status != http.StatusOK || json.Unmarshal(r.body, &answers) != nil || len(answers) != mcp.DefaultMaxBatch {
		t.Fatalf("a batch of %d: status %d %.300s", mcp.DefaultMaxBatch, r.status, r.body)
	}
	if n := admitted.Load(); n != mcp.DefaultMaxBatch-1 {
		t.Fatalf("AdmitBatch counted %d extra messages, want %d", n, mcp.DefaultMaxBatch-1)
	}

	// The flood of the finding, scaled down: refused at once, in a few bytes.
	errorOf(env.post(t, batch(t, 2000), nil), http.StatusBadRequest, "at most 16 messages")
	// Protocol versions without batches.
	for _, v := range []string{"2025-06-18", "2025-11-25", "2026-07-28"} {
		errorOf(env.post(t, batch(t, 2), map[string]string{"MCP-Protocol-Version": v}), http.StatusBadRequest, "batches do not exist")
	}
	// A payment in a batch.
	paid := `[` + legacyRequest(t, 1, "tools/list", nil) + `,{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"risk_levels","arguments":{},"_meta":{"x402/payment":"abc"}}}]`
	errorOf(env.post(t, paid, nil), http.StatusBadRequest, "sent alone")
	// The client's rate.
	refuse.Store(true)
	r = env.post(t, batch(t, 2), nil)
	errorOf(r, http.StatusTooManyRequests, "rate limited")
	if r.header.Get("Retry-After") != "3" {
		t.Fatalf("Retry-After %q", r.header.Get("Retry-After"))
	}
	// A single message is not a batch: the server's own rate counted it.
	refuse.Store(true)
	if r := env.post(t, legacyRequest(t, 1, "tools/list", nil), nil); r.status != http.StatusOK {
		t.Fatalf("a single message: %d %.200s", r.status, r.body)
	}
}

// TestBatchAnswerBounded: a batch whose answers are over
// MaxBatchAnswerBytes gets a JSON-RPC error instead of them.
func TestBatchAnswerBounded(t *testing.T) {
	env := newEnv(t, mcp.Options{MaxBatchAnswerBytes: 4096})
	msgs := []string{legacyRequest(t, 1, "tools/list", nil), legacyRequest(t, 2, "tools/list", nil)}
	r := env.post(t, "["+strings.Join(msgs, ",")+"]", nil)
	if r.status != http.StatusBadRequest || len(r.body) > 1024 {
		t.Fatalf("status %d, %d bytes", r.status, len(r.body))
	}
	if res := r.rpc(t); res.Error == nil || !strings.Contains(res.Error.Message, "over 4096 bytes") {
		t.Fatalf("error %s", r.body)
	}
}

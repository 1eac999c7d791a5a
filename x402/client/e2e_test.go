package client_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/seed1284c1d2/svc/x402"
	"github.com/seed1284c1d2/svc/x402/facilitator"
)

// TestE2E runs the paid server (the engine and its net/http binding, the
// facilitator.Local over HTTP: two listeners on 127.0.0.1) against the
// official x402 clients in Node:
// @x402/fetch 2.x (v2) through every scenario of e2eCases, and x402-fetch
// 1.x (v1) paying the same server. The Go Transport goes through the same
// scenarios in TestE2EGoClient. Needs node ≥ 20 and npm (the locked
// dependencies of e2e/ are installed when missing); skipped without them or
// with SVC_E2E=0, except that under CI=true their absence is a failure.
func TestE2E(t *testing.T) {
	node, dir := e2eSetup(t)
	s := newE2EServer(t)
	start := time.Now()
	t.Run("v2", func(t *testing.T) {
		for _, tc := range e2eCases() {
			t.Run(tc.mode, func(t *testing.T) {
				t.Parallel()
				id := "js-" + tc.mode
				args := []string{tc.mode, s.url(id)}
				if tc.mode == "replay" {
					args = append(args, s.url(id+"-2"))
				}
				res := e2eRunNode(t, node, dir, "pay-v2.mjs", args...)
				e2eCheck(t, s, id, tc, res)
				if tc.status == http.StatusOK {
					for _, h := range []string{"PAYMENT-REQUIRED", "PAYMENT-RESPONSE", "X-PAYMENT-RESPONSE"} {
						if !strings.Contains(res.ExposeHeaders, h) {
							t.Fatalf("Access-Control-Expose-Headers %q lacks %s", res.ExposeHeaders, h)
						}
					}
				}
			})
		}
	})
	t.Run("v1", func(t *testing.T) {
		const id = "js-v1-pay"
		res := e2eRunNode(t, node, dir, "pay-v1.mjs", "pay", s.url(id))
		if res.Status != http.StatusOK {
			t.Fatalf("status %d: %s", res.Status, res.Body)
		}
		pr := res.PaymentResponse
		if pr == nil || !pr.Success || pr.Network != "base" || !strings.HasPrefix(pr.Transaction, facilitator.LocalTransactionPrefix) ||
			!strings.EqualFold(pr.Payer, mwPayer) || res.HasV2PaymentResponse {
			t.Fatalf("X-PAYMENT-RESPONSE %+v (PAYMENT-RESPONSE present: %v)", pr, res.HasV2PaymentResponse)
		}
		var body struct {
			Case string `json:"case"`
			Run  int    `json:"run"`
		}
		if err := json.Unmarshal(res.Body, &body); err != nil || body.Case != id || body.Run != 1 {
			t.Fatalf("body %s", res.Body)
		}
		ev := s.events(t, id)
		if len(ev) != 1 || ev[0].X402Version != 1 || ev[0].Network != x402.NetworkBase || ev[0].Amount != mwAmount {
			t.Fatalf("settlements %+v", ev)
		}
	})
	t.Logf("official clients: %s", time.Since(start).Round(time.Millisecond))
	if n := len(s.local.Settlements()); n != 4 { // pay, replay, replay-same, v1
		t.Errorf("%d settlements at the facilitator, want 4", n)
	}
	if n := len(s.journal.Ledger()); n != 4 {
		t.Errorf("%d ledger entries, want 4", n)
	}
}

// TestE2EGoClient runs the scenarios of TestE2E with the Go Transport
// against the same kind of server (no Node needed).
func TestE2EGoClient(t *testing.T) {
	s := newE2EServer(t)
	for _, tc := range e2eCases() {
		t.Run(tc.mode, func(t *testing.T) {
			id := "go-" + tc.mode
			res := e2eGoRun(t, s, tc.mode, id)
			e2eCheck(t, s, id, tc, res)
		})
	}
	if n := len(s.local.Settlements()); n != 3 { // pay, replay, replay-same
		t.Errorf("%d settlements at the facilitator, want 3", n)
	}
	if n := len(s.journal.Ledger()); n != 3 {
		t.Errorf("%d ledger entries, want 3", n)
	}
}

package mcp_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/seed1284c1d2/svc/x402/client"
	"github.com/seed1284c1d2/svc/x402/engine"
	"github.com/seed1284c1d2/svc/x402/exact"
	x402mcp "github.com/seed1284c1d2/svc/x402/mcp"
)

// TestPayerThrottled: a payer whose paid calls keep timing out on its own
// pathological input, each with a fresh authorization, gets a tool error
// saying when to call again once its budget is spent, before the tool runs
// again; another payer's calls still run.
func TestPayerThrottled(t *testing.T) {
	const burst, calls = 2, 30
	var runs atomic.Int64
	o := paidOptions{payerBurst: burst, payerRefill: time.Hour, regexTimeout: 20 * time.Millisecond,
		observe: func(ev engine.Event) {
			if ev.Kind == engine.RunFailed {
				runs.Add(1)
			}
		}}
	eachPath(t, o, func(t *testing.T, e *paidEnv) {
		runs.Store(0)
		args := map[string]any{"pattern": "(a+)+$", "text": strings.Repeat("a", 40) + "!"}
		pr := offerOf(t, e.callTool(t, modern, "regex_test", args, nil))
		throttled := 0
		for i := range calls {
			res := e.callTool(t, modern, "regex_test", args, map[string]any{x402mcp.MetaPayment: asObject(t, e.sign(t, pr))})
			txt := text(t, res)
			if res["isError"] != true {
				t.Fatalf("call %d: %s", i, mustJSON(t, res))
			}
			if strings.Contains(txt, engine.ReasonPayerThrottled) {
				if !strings.Contains(txt, "nothing was run or charged") || !strings.Contains(txt, "after ") {
					t.Fatalf("throttled answer %q", txt)
				}
				throttled++
			}
		}
		if runs.Load() != burst || throttled != calls-burst {
			t.Fatalf("%d runs, %d throttled; want %d and %d", runs.Load(), throttled, burst, calls-burst)
		}
		other, err := client.ParseSigner("0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d")
		if err != nil {
			t.Fatal(err)
		}
		ep, err := other.NewPayload(pr.Accepts[0], time.Now(), 0)
		if err != nil {
			t.Fatal(err)
		}
		p := e.sign(t, pr)
		p.Payload = mustJSON(t, ep)
		res := e.callTool(t, modern, "regex_test", args, map[string]any{x402mcp.MetaPayment: asObject(t, p)})
		if strings.Contains(text(t, res), engine.ReasonPayerThrottled) || runs.Load() != burst+1 {
			t.Fatalf("another payer: %s (%d runs)", mustJSON(t, res), runs.Load())
		}
		if len(e.local.Settlements()) != 0 {
			t.Fatal("a failed call was settled")
		}
	})
}

// TestReplayEquivalentArguments: the same payment sent again with the same
// arguments written otherwise (members in another order, numbers spelled
// otherwise) gets the recorded answer and settlement, with one settlement
// in all.
func TestReplayEquivalentArguments(t *testing.T) {
	eachPath(t, paidOptions{}, func(t *testing.T, e *paidEnv) {
		args := json.RawMessage(`{"entry":3500,"direction":"long","slPct":0.05,"tpPct":0.04}`)
		p := e.sign(t, offerOf(t, e.callTool(t, modern, "risk_levels", args, nil)))
		first := e.callTool(t, modern, "risk_levels", args, map[string]any{x402mcp.MetaPayment: asObject(t, p)})
		firstSR, ok := settlementOf(t, first)
		if !ok || !firstSR.Success {
			t.Fatalf("first call %s", mustJSON(t, first))
		}
		for _, again := range []string{
			`{"tpPct":0.04,"slPct":0.05,"direction":"long","entry":3500}`,
			`{ "direction": "long", "entry": 3500.0, "tpPct": 0.040, "slPct": 5e-2 }`,
		} {
			res := e.callTool(t, modern, "risk_levels", json.RawMessage(again), map[string]any{x402mcp.MetaPayment: asObject(t, p)})
			sr, ok := settlementOf(t, res)
			if !reflect.DeepEqual(res["structuredContent"], first["structuredContent"]) || !ok || sr.Transaction != firstSR.Transaction {
				t.Fatalf("replay with %s: %s", again, mustJSON(t, res))
			}
		}
		res := e.callTool(t, modern, "risk_levels", json.RawMessage(`{"entry":3501,"direction":"long","slPct":0.05,"tpPct":0.04}`),
			map[string]any{x402mcp.MetaPayment: asObject(t, p)})
		if pr := offerOf(t, res); pr.Error != exact.ReasonNonceAlreadyUsed {
			t.Fatalf("another value: %s", mustJSON(t, res))
		}
		if n := settlementsOf(e, p); n != 1 {
			t.Fatalf("%d settlements", n)
		}
	})
}

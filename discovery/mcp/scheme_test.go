package mcp_test

import (
	"context"
	"testing"

	"github.com/seed1284c1d2/svc/internal/schemetest"
	"github.com/seed1284c1d2/svc/x402"
	"github.com/seed1284c1d2/svc/x402/engine"
	x402mcp "github.com/seed1284c1d2/svc/x402/mcp"
)

// TestSecondScheme sells a paid tool over MCP with the toy ticket scheme
// registered with the engine before exact: the payment requirement lists
// both, a stale ticket is answered with the scheme's corrective offer, a
// good one is settled by the scheme (its extras in the payment response)
// and journaled for the call, and its retry gets the recorded answer.
func TestSecondScheme(t *testing.T) {
	var tickets *schemetest.Tickets
	eachPath(t, paidOptions{memory: true, schemes: func(exact x402.ServerScheme) []x402.ServerScheme {
		tickets = schemetest.NewTickets()
		return []x402.ServerScheme{tickets, exact}
	}}, func(t *testing.T, e *paidEnv) { sellWithTickets(t, e, tickets) })
}

// sellWithTickets pays risk_levels on e with tickets.
func sellWithTickets(t *testing.T, e *paidEnv, tickets *schemetest.Tickets) {
	args := e.exampleArgs(t, "risk_levels")
	pr := offerOf(t, e.callTool(t, modern, "risk_levels", args, nil))
	if len(pr.Accepts) != 2 || pr.Accepts[0].Scheme != schemetest.Name || pr.Accepts[1].Scheme != x402.SchemeExact {
		t.Fatalf("accepts: %+v", pr.Accepts)
	}
	pay := func(p x402.PaymentPayload) map[string]any {
		res := pr.Resource
		p.Resource = &res
		return e.callTool(t, modern, "risk_levels", args, map[string]any{x402mcp.MetaPayment: asObject(t, p)})
	}
	stale := offerOf(t, pay(tickets.Sign("bob", 3, pr.Accepts[0])))
	if stale.Error != schemetest.ReasonStale || stale.Accepts[0].Extra[schemetest.ExtraNext] != float64(0) || tickets.Settles() != 0 {
		t.Fatalf("stale ticket: %+v", stale)
	}
	good := tickets.Sign("bob", 0, pr.Accepts[0])
	res := pay(good)
	sr, ok := settlementOf(t, res)
	if res["isError"] != nil || !ok || !sr.Success || sr.Payer != "bob" || sr.Extra[schemetest.ExtraNext] != float64(1) {
		t.Fatalf("paid with a ticket: %s", mustJSON(t, res))
	}
	rec, err := e.journal.Get(context.Background(), schemetest.Key("bob", 0))
	if err != nil || rec.State != engine.StateSettled || rec.Transport != x402mcp.Transport || rec.Resource != "tools/call risk_levels" {
		t.Fatalf("journal row %+v %v", rec, err)
	}
	again := pay(good)
	if string(mustJSON(t, again["structuredContent"])) != string(mustJSON(t, res["structuredContent"])) || tickets.Settles() != 1 {
		t.Fatalf("retry: %s", mustJSON(t, again))
	}
}

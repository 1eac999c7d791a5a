package a2a

import (
	"context"
	"log/slog"
	"testing"

	"github.com/seed1284c1d2/svc/internal/schemetest"
	"github.com/seed1284c1d2/svc/tools"
	"github.com/seed1284c1d2/svc/x402"
	x402a2a "github.com/seed1284c1d2/svc/x402/a2a"
	"github.com/seed1284c1d2/svc/x402/engine"
	exactserver "github.com/seed1284c1d2/svc/x402/exact/server"
	"github.com/seed1284c1d2/svc/x402/facilitator"
)

// TestSecondScheme sells a paid skill over A2A with the toy ticket scheme
// registered with the engine before exact: the payment requirement lists
// both, and a ticket pays the task: settled by the scheme (its extras in
// the receipt) and journaled for the call; sent again, it gets the recorded answer
// (its key comes from the scheme), and another ticket is refused.
func TestSecondScheme(t *testing.T) {
	for _, v := range []version{v10, v03} {
		t.Run(v.String(), func(t *testing.T) {
			local, err := facilitator.NewLocal(facilitator.LocalConfig{PayTo: testPayTo})
			if err != nil {
				t.Fatal(err)
			}
			tickets := schemetest.NewTickets()
			journal := engine.NewMemoryJournal()
			schemes := append([]x402.ServerScheme{tickets}, schemetest.Exact(t, exactserver.Config{Facilitator: local, SkipFacilitatorVerify: true})...)
			eng, err := engine.New(engine.Config{Schemes: schemes, Journal: journal, Logger: slog.New(slog.DiscardHandler)})
			if err != nil {
				t.Fatal(err)
			}
			env := newPayEnv(t, func(o *paySetup) { o.Engine = eng })

			first := env.send(t, v, saleMessage(v, "m1", "risk-levels", riskInput))
			pr := first.required(t)
			if len(pr.Accepts) != 2 || pr.Accepts[0].Scheme != schemetest.Name || pr.Accepts[1].Scheme != x402.SchemeExact {
				t.Fatalf("accepts: %+v", pr.Accepts)
			}
			payment := tickets.Sign("carol", 0, pr.Accepts[0])
			res := pr.Resource
			payment.Resource = &res
			paid := env.send(t, v, payingMessage(v, "m2", first.ID, payment))
			if paid.Status.State != state(v, stateCompleted) || paid.paymentStatus(t) != x402a2a.StatusPaymentCompleted {
				t.Fatalf("paid answer: %+v", paid)
			}
			if out, want := paid.output(t), invoke(t, env.cat, tools.Env{}, "risk-levels", riskInput); !sameJSON(out, want) {
				t.Fatalf("answer %s, want %s", out, want)
			}
			rs := paid.receipts(t)
			if len(rs) != 1 || !rs[0].Success || rs[0].Payer != "carol" || rs[0].Extra[schemetest.ExtraNext] != float64(1) {
				t.Fatalf("receipts %+v", rs)
			}
			rec, err := journal.Get(context.Background(), schemetest.Key("carol", 0))
			if err != nil || rec.State != engine.StateSettled || rec.Transport != "a2a" || rec.Resource != "A2A risk-levels" || tickets.Settles() != 1 {
				t.Fatalf("journal row %+v %v", rec, err)
			}
			if len(local.Settlements()) != 0 {
				t.Fatal("a ticket reached the exact facilitator")
			}
			// The same ticket sent again to the completed task is known by
			// the key its scheme gives it: the recorded answer, nothing
			// settled again.
			again := env.send(t, v, payingMessage(v, "m3", first.ID, payment))
			if again.Status.State != state(v, stateCompleted) || !sameJSON(again.output(t), paid.output(t)) || tickets.Settles() != 1 {
				t.Fatalf("the same ticket again: %+v (settles %d)", again, tickets.Settles())
			}
			// Another ticket is refused there.
			other := tickets.Sign("carol", 1, pr.Accepts[0])
			other.Resource = &res
			if ex := env.sendRaw(t, v, payingMessage(v, "m4", first.ID, other)); ex.resp.Error == nil || tickets.Settles() != 1 {
				t.Fatalf("another ticket on the completed task: %s (settles %d)", ex.raw, tickets.Settles())
			}
		})
	}
}

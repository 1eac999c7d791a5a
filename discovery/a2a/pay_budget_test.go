package a2a

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/seed1284c1d2/svc/internal/schemetest"
	x402a2a "github.com/seed1284c1d2/svc/x402/a2a"
	"github.com/seed1284c1d2/svc/x402/client"
	"github.com/seed1284c1d2/svc/x402/engine"
	exactserver "github.com/seed1284c1d2/svc/x402/exact/server"
	"github.com/seed1284c1d2/svc/x402/facilitator"
)

// TestPayerThrottled: a payer whose paid calls keep timing out on its own
// pathological input, each with a fresh authorization, gets the task back
// in input-required with PAYMENT_UNAVAILABLE and the reason
// payer_throttled once its budget is spent, before the tool runs again;
// another payer's call still runs.
func TestPayerThrottled(t *testing.T) {
	const burst, calls = 2, 20
	var runs atomic.Int64
	fac, err := facilitator.NewLocal(facilitator.LocalConfig{PayTo: testPayTo})
	if err != nil {
		t.Fatal(err)
	}
	eng, err := engine.New(engine.Config{Schemes: schemetest.Exact(t, exactserver.Config{Facilitator: fac, SkipFacilitatorVerify: true}), Logger: slog.New(slog.DiscardHandler),
		PayerBurst: burst, PayerRefill: time.Hour,
		Observe: func(ev engine.Event) {
			if ev.Kind == engine.RunFailed {
				runs.Add(1)
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	env := newPayEnv(t, func(o *paySetup) {
		o.Engine = eng
		o.Sell.Env.RegexTimeout = 20 * time.Millisecond
	})
	input := obj{"pattern": "(a+)+$", "text": strings.Repeat("a", 40) + "!"}
	task := env.send(t, v10, saleMessage(v10, "m0", "regex-test", input))
	pr := task.required(t)
	throttled := 0
	for i := range calls {
		task = env.send(t, v10, payingMessage(v10, fmt.Sprintf("m%d", i+1), task.ID, env.pay(t, pr, nil)))
		if task.Status.State != state(v10, stateInputRequired) {
			t.Fatalf("call %d: task %s", i, task.Status.State)
		}
		if task.paymentError(t) == x402a2a.PaymentErrorUnavailable && task.required(t).Error == engine.ReasonPayerThrottled {
			if txt := *task.Status.Message.Parts[0].Text; !strings.Contains(txt, "nothing was run or charged") {
				t.Fatalf("throttled text %q", txt)
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
	env.signer = other
	task = env.send(t, v10, payingMessage(v10, "other", task.ID, env.pay(t, pr, nil)))
	if task.required(t).Error == engine.ReasonPayerThrottled || runs.Load() != burst+1 || len(fac.Settlements()) != 0 {
		t.Fatalf("another payer: %+v, %d runs", task.Status, runs.Load())
	}
}

// TestReplayEquivalentInput: the same payment on a new task for the same
// input written otherwise (members in another order, numbers spelled
// otherwise) gets the recorded answer, with one settlement in all.
func TestReplayEquivalentInput(t *testing.T) {
	env := newPayEnv(t)
	first := env.send(t, v10, saleMessage(v10, "m1", "risk-levels", json.RawMessage(`{"entry":3500,"direction":"long","slPct":0.05,"tpPct":0.04}`)))
	payment := env.pay(t, first.required(t), nil)
	paid := env.send(t, v10, payingMessage(v10, "m2", first.ID, payment))
	if paid.Status.State != state(v10, stateCompleted) {
		t.Fatalf("first call: %+v", paid.Status)
	}
	for i, input := range []string{
		`{"tpPct":0.04,"slPct":0.05,"direction":"long","entry":3500}`,
		`{ "direction": "long", "entry": 3500.0, "tpPct": 0.040, "slPct": 5e-2 }`,
	} {
		task := env.send(t, v10, saleMessage(v10, fmt.Sprintf("s%d", i), "risk-levels", json.RawMessage(input)))
		again := env.send(t, v10, payingMessage(v10, fmt.Sprintf("p%d", i), task.ID, payment))
		if again.Status.State != state(v10, stateCompleted) || !sameJSON(again.output(t), paid.output(t)) ||
			again.receipts(t)[0].Transaction != paid.receipts(t)[0].Transaction {
			t.Fatalf("the same payment for %s: %+v", input, again.Status)
		}
	}
	if env.settled() != 1 {
		t.Fatalf("%d settlements, want 1", env.settled())
	}
}

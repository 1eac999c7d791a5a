package a2a

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/seed1284c1d2/svc/discovery/documents"
	"github.com/seed1284c1d2/svc/tools"
	"github.com/seed1284c1d2/svc/tools/sell"
	"github.com/seed1284c1d2/svc/x402"
	x402a2a "github.com/seed1284c1d2/svc/x402/a2a"
	"github.com/seed1284c1d2/svc/x402/engine"
	"github.com/seed1284c1d2/svc/x402/exact"
	"github.com/seed1284c1d2/svc/x402/facilitator"
)

// A paid call in both versions: the first message gets a task asking for
// payment with the engine's offer; the paying message on that task gets the
// tool's answer, the receipt, one settlement and one journal row saying
// a2a with the A2A fingerprint of the first message's input.
func TestPaidCall(t *testing.T) {
	for _, v := range []version{v10, v03} {
		t.Run(v.String(), func(t *testing.T) {
			env := newPayEnv(t)
			first := env.send(t, v, saleMessage(v, "m1", "risk-levels", riskInput))
			if first.Status.State != state(v, stateInputRequired) || first.paymentStatus(t) != x402a2a.StatusPaymentRequired || len(first.Artifacts) != 0 {
				t.Fatalf("first answer: %+v", first)
			}
			pr := first.required(t)
			want := env.h.sell.offers["risk-levels"].PaymentRequired
			if pr.X402Version != 2 || pr.Error != engine.ReasonPaymentRequired || len(pr.Accepts) != 1 || pr.Accepts[0].Amount != want.Accepts[0].Amount ||
				pr.Accepts[0].PayTo != testPayTo || pr.Accepts[0].Network != "eip155:8453" || pr.Resource.URL != env.srv.URL+"/a2a#risk-levels" {
				t.Fatalf("payment required %+v, want the offer %+v", pr, want)
			}
			if txt := *first.Status.Message.Parts[0].Text; !strings.Contains(txt, "0.005 USDC") || !strings.Contains(txt, first.ID) {
				t.Fatalf("status text %q", txt)
			}
			if n := len(env.rows(t, engine.StateReserved)) + len(env.rows(t, engine.StateSettled)); n != 0 {
				t.Fatalf("%d journal rows before any payment", n)
			}
			got := env.get(t, v, first.ID)
			if got.Status.State != first.Status.State || got.paymentStatus(t) != x402a2a.StatusPaymentRequired {
				t.Fatalf("GetTask of the pending task: %+v", got)
			}

			payment := env.pay(t, pr, nil)
			paid := env.send(t, v, payingMessage(v, "m2", first.ID, payment))
			if paid.ID != first.ID || paid.Status.State != state(v, stateCompleted) || paid.paymentStatus(t) != x402a2a.StatusPaymentCompleted {
				t.Fatalf("paid answer: %+v", paid)
			}
			if out, want := paid.output(t), invoke(t, env.cat, tools.Env{}, "risk-levels", riskInput); !sameJSON(out, want) {
				t.Fatalf("answer %s, want %s", out, want)
			}
			if a := paid.Artifacts[0]; a.Name != "risk-levels" || len(a.Parts) != 2 || a.Parts[1].Text == nil || !sameJSON([]byte(*a.Parts[1].Text), a.Parts[0].Data) {
				t.Fatalf("artifact %+v", a)
			}
			rs := paid.receipts(t)
			if len(rs) != 1 || !rs[0].Success || !strings.HasPrefix(rs[0].Transaction, facilitator.LocalTransactionPrefix) || rs[0].Network != "eip155:8453" ||
				!strings.EqualFold(rs[0].Payer, env.signer.Address()) {
				t.Fatalf("receipts %+v", rs)
			}
			if len(paid.History) != 3 || paid.History[1].Role != map[version]string{v10: "ROLE_AGENT", v03: "agent"}[v] {
				t.Fatalf("history %+v", paid.History)
			}
			if _, kept := paid.History[2].Metadata[x402a2a.MetaPayload]; kept {
				t.Fatal("the kept history holds the signed payment")
			}
			rows := env.rows(t, engine.StateSettled)
			canonical := must(t, env.cat, "risk-levels", riskInput).Input()
			if env.settled() != 1 || len(rows) != 1 || rows[0].Transport != "a2a" || rows[0].Product != "risk-levels" ||
				rows[0].RequestHash != Fingerprint("risk-levels", canonical) || rows[0].Resource != "A2A risk-levels" {
				t.Fatalf("%d settlements, rows %+v", env.settled(), rows)
			}
			if again := env.get(t, v, first.ID); again.Status.State != paid.Status.State || !sameJSON(again.output(t), paid.output(t)) {
				t.Fatalf("GetTask after payment: %+v", again)
			}
		})
	}
}

// must decodes a tool input.
func must(t *testing.T, cat *tools.Catalog, key string, input any) *tools.Call {
	t.Helper()
	tool, _ := cat.ByKey(key)
	in, _ := json.Marshal(input)
	c, err := tool.DecodeJSON(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// The same payment again: to the completed task it gets the task as it is;
// to a new task for the same call it gets the recorded answer; to a call
// with another input it is refused. One settlement in all.
func TestPaidCallReplay(t *testing.T) {
	for _, v := range []version{v10, v03} {
		t.Run(v.String(), func(t *testing.T) {
			env := newPayEnv(t)
			first := env.send(t, v, saleMessage(v, "m1", "risk-levels", riskInput))
			payment := env.pay(t, first.required(t), nil)
			paid := env.send(t, v, payingMessage(v, "m2", first.ID, payment))

			again := env.send(t, v, payingMessage(v, "m3", first.ID, payment))
			if again.ID != paid.ID || again.Status.State != state(v, stateCompleted) || !sameJSON(again.output(t), paid.output(t)) {
				t.Fatalf("the same payment to the completed task: %+v", again)
			}
			second := env.send(t, v, saleMessage(v, "m4", "risk-levels", riskInput))
			replayed := env.send(t, v, payingMessage(v, "m5", second.ID, payment))
			if replayed.Status.State != state(v, stateCompleted) || !sameJSON(replayed.output(t), paid.output(t)) ||
				replayed.receipts(t)[0].Transaction != paid.receipts(t)[0].Transaction {
				t.Fatalf("the same payment for the same call on a new task: %+v", replayed)
			}
			if txt := *replayed.Status.Message.Parts[0].Text; !strings.Contains(txt, "already settled") {
				t.Fatalf("replay text %q", txt)
			}
			other := obj{"entry": 3600, "direction": "short", "slPct": 0.05, "tpPct": 0.04}
			third := env.send(t, v, saleMessage(v, "m6", "risk-levels", other))
			refused := env.send(t, v, payingMessage(v, "m7", third.ID, payment))
			if refused.Status.State != state(v, stateFailed) || refused.paymentStatus(t) != x402a2a.StatusPaymentFailed ||
				refused.paymentError(t) != x402a2a.PaymentErrorDuplicateNonce || len(refused.Artifacts) != 0 {
				t.Fatalf("the same payment for another input: %+v", refused)
			}
			if rs := refused.receipts(t); len(rs) != 1 || rs[0].Success || rs[0].ErrorReason != exact.ReasonNonceAlreadyUsed {
				t.Fatalf("refusal receipts %+v", rs)
			}
			if env.settled() != 1 {
				t.Fatalf("%d settlements, want 1", env.settled())
			}
			// A failed task takes no more messages.
			ex := env.sendRaw(t, v, payingMessage(v, "m8", third.ID, payment))
			if ex.resp.Error == nil || ex.resp.Error.Code != CodeUnsupportedOperation {
				t.Fatalf("a message to a failed task: %s", ex.raw)
			}
			// A new payment to the completed task is not taken.
			fresh := env.pay(t, first.required(t), nil)
			ex = env.sendRaw(t, v, payingMessage(v, "m9", first.ID, fresh))
			if ex.resp.Error == nil || ex.resp.Error.Code != CodeUnsupportedOperation || env.settled() != 1 {
				t.Fatalf("another payment to the completed task: %s", ex.raw)
			}
		})
	}
}

// An authorization used over HTTP (the same engine) cannot buy an A2A call.
func TestPaymentUsedOverHTTPIsRefused(t *testing.T) {
	env := newPayEnv(t)
	first := env.send(t, v10, saleMessage(v10, "m1", "risk-levels", riskInput))
	payment := env.pay(t, first.required(t), nil)
	out := env.eng.Serve(context.Background(), engine.Call{Offer: env.httpOffer, Fingerprint: "http-request", Payment: &payment, Transport: "http"},
		func(context.Context) (engine.Answer, error) {
			return engine.Answer{Status: 200, Body: []byte(`{}`)}, nil
		})
	if out.Kind != engine.Paid {
		t.Fatalf("over HTTP: %s %s", out.Kind, out.Reason)
	}
	refused := env.send(t, v10, payingMessage(v10, "m2", first.ID, payment))
	if refused.Status.State != state(v10, stateFailed) || refused.paymentError(t) != x402a2a.PaymentErrorDuplicateNonce || env.settled() != 1 {
		t.Fatalf("an HTTP authorization over A2A: %+v, %d settlements", refused, env.settled())
	}
}

// Tampered, mis-addressed or mis-priced payments are refused with the
// extension's codes; nothing runs, nothing settles.
func TestTamperedPaymentRefused(t *testing.T) {
	quoteIn := obj{"symbol": "XAUUSD"}
	for _, tc := range []struct {
		name   string
		tamper func(p *x402.PaymentPayload)
		code   string
	}{
		{"value lowered after signing", func(p *x402.PaymentPayload) {
			editAuth(t, p, func(a *exact.Authorization) { a.Value = "9999" })
		}, x402a2a.PaymentErrorInvalidAmount},
		{"deadline pushed after signing", func(p *x402.PaymentPayload) {
			editAuth(t, p, func(a *exact.Authorization) { a.ValidBefore += "0" })
		}, x402a2a.PaymentErrorInvalidSignature},
		{"signature of another key", func(p *x402.PaymentPayload) {
			editAuth(t, p, func(a *exact.Authorization) { a.From = "0x70997970C51812dc3A010C7d01b50e0d17dc79C8" })
		}, x402a2a.PaymentErrorInvalidSignature},
		{"lower amount claimed", func(p *x402.PaymentPayload) { p.Accepted.Amount = "1" }, x402a2a.PaymentErrorInvalidAmount},
		{"another network claimed", func(p *x402.PaymentPayload) { p.Accepted.Network = "eip155:84532" }, x402a2a.PaymentErrorNetworkMismatch},
	} {
		for _, v := range []version{v10, v03} {
			t.Run(tc.name+"/"+v.String(), func(t *testing.T) {
				env := newPayEnv(t)
				first := env.send(t, v, saleMessage(v, "m1", "xau-quote", quoteIn))
				quotes := env.term.quotes.Load() // the symbol preflight's
				payment := env.pay(t, first.required(t), nil)
				tc.tamper(&payment)
				refused := env.send(t, v, payingMessage(v, "m2", first.ID, payment))
				if refused.Status.State != state(v, stateFailed) || refused.paymentStatus(t) != x402a2a.StatusPaymentFailed || refused.paymentError(t) != tc.code {
					t.Fatalf("got state %s, status %s, error %s; want failed, %s, %s", refused.Status.State, refused.paymentStatus(t), refused.paymentError(t),
						x402a2a.StatusPaymentFailed, tc.code)
				}
				if rs := refused.receipts(t); len(rs) != 1 || rs[0].Success || rs[0].ErrorReason == "" || rs[0].Transaction != "" {
					t.Fatalf("receipts %+v", rs)
				}
				if env.term.quotes.Load() != quotes || env.settled() != 0 {
					t.Fatalf("a refused payment ran the tool (%d quotes) or settled (%d)", env.term.quotes.Load()-quotes, env.settled())
				}
			})
		}
	}
}

// editAuth changes the signed authorization of p.
func editAuth(t *testing.T, p *x402.PaymentPayload, edit func(a *exact.Authorization)) {
	t.Helper()
	var ep exact.ExactEVMPayload
	if err := json.Unmarshal(p.Payload, &ep); err != nil {
		t.Fatal(err)
	}
	edit(&ep.Authorization)
	raw, err := json.Marshal(ep)
	if err != nil {
		t.Fatal(err)
	}
	p.Payload = raw
}

// Invalid input is answered -32602 naming the field, before any payment
// requirement: no task, no journal row.
func TestPaidCallInvalidInputAsksNoPayment(t *testing.T) {
	for _, v := range []version{v10, v03} {
		t.Run(v.String(), func(t *testing.T) {
			env := newPayEnv(t)
			for _, tc := range []struct {
				data  obj
				field string
				rule  string
			}{
				{obj{"tool": "risk-levels", "input": obj{"entry": 3500, "direction": "sideways", "slPct": 0.05, "tpPct": 0.04}}, "message.parts[0].data.input.direction", "oneof"},
				{obj{"tool": "risk-levels", "input": obj{"entry": 3500, "direction": "long", "slPct": 0.05, "tpPct": 0.04, "extra": 1}}, "message.parts[0].data.input.extra", "unknown_field"},
				{obj{"tool": "risk-levels"}, "message.parts[0].data.input.entry", "required"},
				{obj{"tool": "no-such-tool", "input": obj{}}, "message.parts[0].data.tool", "oneof"},
				{obj{"tool": "risk-levels", "input": riskInput, "query": "x"}, "message.parts[0].data", "oneof"},
				{obj{"tool": "session-state", "input": obj{"datetime": "2025-06-04T07:15:00Z"}}, "message.parts[0].data.input.datetime", "unknown_field"},
				{obj{"tool": "xau-bars", "input": obj{"cnt": 20}}, "message.parts[0].data.input.cnt", "unknown_field"},
				// Checked against the terminal's symbols before any offer.
				{obj{"tool": "xau-quote", "input": obj{"symbol": "EURUSD"}}, "message.parts[0].data.input.symbol", "unknown_symbol"},
			} {
				ex := env.sendRaw(t, v, dataMessage(v, "m", tc.data))
				if ex.resp.Error == nil || ex.resp.Error.Code != CodeInvalidParams {
					t.Fatalf("%v: want -32602, got %s", tc.data, ex.raw)
				}
				found := false
				for _, f := range violations(t, v, ex) {
					found = found || (f.Field == tc.field && f.Rule == tc.rule)
				}
				if !found || !strings.Contains(ex.resp.Error.Message, tc.field) {
					t.Fatalf("%v: want field %s rule %s in %s", tc.data, tc.field, tc.rule, ex.raw)
				}
			}
			if env.h.store.len() != 0 || len(env.rows(t, engine.StateReserved))+len(env.rows(t, engine.StateReleased)) != 0 {
				t.Fatal("invalid input left a task or a journal row")
			}
		})
	}
}

// With the terminal down, a gold tool gets a failed task and no payment
// requirement; a payment sent while it is down charges nothing and leaves
// the task waiting; the same payment once it is back buys the answer.
func TestPaidCallTerminalDown(t *testing.T) {
	for _, v := range []version{v10, v03} {
		t.Run(v.String(), func(t *testing.T) {
			env := newPayEnv(t)
			env.term.SetDown(true)
			down := env.send(t, v, saleMessage(v, "m1", "xau-quote", obj{}))
			if down.Status.State != state(v, stateFailed) || down.paymentStatus(t) != "" || !strings.Contains(*down.Status.Message.Parts[0].Text, "no payment was asked") {
				t.Fatalf("terminal down: %+v", down)
			}
			var pr x402.PaymentRequired
			if down.meta(t, x402a2a.MetaRequired, &pr) {
				t.Fatal("a payment requirement while the terminal is down")
			}
			env.term.SetDown(false)
			first := env.send(t, v, saleMessage(v, "m2", "xau-quote", obj{}))
			payment := env.pay(t, first.required(t), nil)
			env.term.SetDown(true)
			wait := env.send(t, v, payingMessage(v, "m3", first.ID, payment))
			if wait.Status.State != state(v, stateInputRequired) || wait.paymentStatus(t) != x402a2a.StatusPaymentFailed ||
				wait.paymentError(t) != x402a2a.PaymentErrorServiceUnavailable || env.settled() != 0 {
				t.Fatalf("paying while down: %+v", wait)
			}
			if wait.required(t).Accepts[0].Amount != first.required(t).Accepts[0].Amount {
				t.Fatal("the retry offer differs")
			}
			env.term.SetDown(false)
			paid := env.send(t, v, payingMessage(v, "m4", first.ID, payment))
			if paid.Status.State != state(v, stateCompleted) || env.settled() != 1 || env.term.quotes.Load() != 1 {
				t.Fatalf("paying once back: %+v, %d settlements, %d quotes", paid, env.settled(), env.term.quotes.Load())
			}
			if rs := paid.receipts(t); len(rs) != 2 || rs[0].Success || !rs[1].Success {
				t.Fatalf("receipts %+v: the failed attempt, then the settlement", rs)
			}
			var q struct{ Symbol string }
			if err := json.Unmarshal(paid.output(t), &q); err != nil || q.Symbol != "XAUUSD" {
				t.Fatalf("quote %s", paid.output(t))
			}
		})
	}
}

// Paying up front: a first message carrying the payment is answered at
// once.
func TestPaidCallUpFront(t *testing.T) {
	env := newPayEnv(t)
	first := env.send(t, v03, saleMessage(v03, "m1", "risk-levels", riskInput))
	payment := env.pay(t, first.required(t), nil)
	m := saleMessage(v03, "m2", "risk-levels", riskInput)
	m["metadata"] = obj{x402a2a.MetaStatus: x402a2a.StatusPaymentSubmitted, x402a2a.MetaPayload: payment}
	paid := env.send(t, v03, m)
	if paid.ID == first.ID || paid.Status.State != "completed" || env.settled() != 1 {
		t.Fatalf("up front: %+v", paid)
	}
	// The pending task can still be paid with the same payment: the recorded answer.
	replay := env.send(t, v03, payingMessage(v03, "m3", first.ID, payment))
	if replay.Status.State != "completed" || !sameJSON(replay.output(t), paid.output(t)) || env.settled() != 1 {
		t.Fatalf("replay on the pending task: %+v", replay)
	}
}

// Declining: the payment-rejected status or CancelTask cancels a pending
// task; a paid or being-paid task is not cancelable.
func TestPaidCallDeclined(t *testing.T) {
	for _, v := range []version{v10, v03} {
		t.Run(v.String(), func(t *testing.T) {
			env := newPayEnv(t)
			first := env.send(t, v, saleMessage(v, "m1", "risk-levels", riskInput))
			m := textMessage(v, "m2", "too expensive")
			m["taskId"] = first.ID
			m["metadata"] = obj{x402a2a.MetaStatus: x402a2a.StatusPaymentRejected}
			declined := env.send(t, v, m)
			if declined.Status.State != state(v, stateCanceled) || declined.paymentStatus(t) != x402a2a.StatusPaymentRejected {
				t.Fatalf("declined: %+v", declined)
			}
			second := env.send(t, v, saleMessage(v, "m3", "risk-levels", riskInput))
			ex := env.postWith(t, v, request(t, `3`, cancelMethod(v), obj{"id": second.ID}), true)
			if ex.resp.Error != nil {
				t.Fatalf("cancel: %s", ex.raw)
			}
			if c := decodePayTask(t, v, ex.resp.Result, false); c.Status.State != state(v, stateCanceled) || c.paymentStatus(t) != x402a2a.StatusPaymentRejected {
				t.Fatalf("canceled: %+v", c)
			}
			ex = env.postWith(t, v, request(t, `4`, cancelMethod(v), obj{"id": second.ID}), true)
			if ex.resp.Error == nil || ex.resp.Error.Code != CodeTaskNotCancelable {
				t.Fatalf("cancel twice: %s", ex.raw)
			}
			if env.settled() != 0 {
				t.Fatal("a declined call settled")
			}
		})
	}
}

// Malformed payment messages are -32602 and leave the task waiting.
func TestPaymentMessageErrors(t *testing.T) {
	env := newPayEnv(t)
	first := env.send(t, v10, saleMessage(v10, "m1", "risk-levels", riskInput))
	bad := func(meta obj, field string) {
		t.Helper()
		m := textMessage(v10, "m", "pay")
		m["taskId"] = first.ID
		if meta != nil {
			m["metadata"] = meta
		}
		ex := env.sendRaw(t, v10, m)
		if ex.resp.Error == nil || ex.resp.Error.Code != CodeInvalidParams || !strings.Contains(ex.resp.Error.Message, field) {
			t.Fatalf("%v: want -32602 naming %s, got %s", meta, field, ex.raw)
		}
	}
	bad(nil, payloadField)
	bad(obj{x402a2a.MetaStatus: x402a2a.StatusPaymentSubmitted}, payloadField)
	bad(obj{x402a2a.MetaStatus: "paid"}, x402a2a.MetaStatus)
	bad(obj{x402a2a.MetaPayload: "not base64!"}, payloadField)
	bad(obj{x402a2a.MetaPayload: obj{"x402Version": 2}}, payloadField)
	bad(obj{x402a2a.MetaPayload: 7}, payloadField)
	if got := env.get(t, v10, first.ID); got.Status.State != state(v10, stateInputRequired) {
		t.Fatalf("the task moved: %+v", got)
	}
	// The payload as base64 of its JSON (as some clients send it) pays too.
	payment := env.pay(t, first.required(t), nil)
	enc, err := x402.EncodeHeader(payment)
	if err != nil {
		t.Fatal(err)
	}
	if paid := env.send(t, v10, payingMessage(v10, "m2", first.ID, enc)); paid.Status.State != state(v10, stateCompleted) {
		t.Fatalf("base64 payload: %+v", paid)
	}
}

// Two different payments racing for one task: one call, one settlement.
func TestConcurrentPaymentsOneTask(t *testing.T) {
	env := newPayEnv(t)
	first := env.send(t, v10, saleMessage(v10, "m1", "xau-quote", obj{}))
	pr := first.required(t)
	const n = 6
	var wg sync.WaitGroup
	states := make([]string, n)
	for i := range n {
		payment := env.pay(t, pr, nil)
		wg.Add(1)
		go func() {
			defer wg.Done()
			ex := env.sendRaw(t, v10, payingMessage(v10, "p", first.ID, payment))
			if ex.resp.Error != nil {
				states[i] = "error"
				return
			}
			states[i] = decodePayTask(t, v10, ex.resp.Result, true).Status.State
		}()
	}
	wg.Wait()
	if env.settled() != 1 || env.term.quotes.Load() != 1 {
		t.Fatalf("%d settlements, %d quotes for one task (answers %v)", env.settled(), env.term.quotes.Load(), states)
	}
	if final := env.get(t, v10, first.ID); final.Status.State != state(v10, stateCompleted) {
		t.Fatalf("final %+v", final)
	}
}

// Without an engine the agent sells nothing: a paid call is -32004.
func TestNoEngineSellsNothing(t *testing.T) {
	env := newTestEnv(t, Options{})
	for _, v := range []version{v10, v03} {
		ex := env.callErr(t, header(v), sendMethod(v), obj{"message": saleMessage(v, "m", "risk-levels", riskInput)}, CodeUnsupportedOperation)
		if !strings.Contains(ex.resp.Error.Message, "pay over HTTP") {
			t.Fatalf("%s", ex.raw)
		}
	}
}

// The extension's activation is acknowledged in the answer's headers.
func TestExtensionActivationHeader(t *testing.T) {
	env := newPayEnv(t)
	body := request(t, `1`, "SendMessage", obj{"message": textMessage(v10, "m", "catalog")})
	if ex := env.postWith(t, v10, body, true); ex.header.Get("A2A-Extensions") != x402a2a.ExtensionURI || ex.header.Get("X-A2A-Extensions") != x402a2a.ExtensionURI {
		t.Fatalf("activated: headers %v", ex.header)
	}
	if ex := env.postWith(t, v10, body, false); ex.header.Get("A2A-Extensions") != "" {
		t.Fatalf("not activated: headers %v", ex.header)
	}
	h := http.Header{}
	h.Add("A2A-Extensions", "https://example.com/other, "+x402a2a.ExtensionURIv01)
	if !x402a2a.Activated(h) {
		t.Fatal("the v0.1 URI in a list does not activate")
	}
	// A paid call works without activation too.
	ex := env.postWith(t, v10, request(t, `1`, "SendMessage", obj{"message": saleMessage(v10, "m", "risk-levels", riskInput)}), false)
	if p := decodePayTask(t, v10, ex.resp.Result, true); p.paymentStatus(t) != x402a2a.StatusPaymentRequired {
		t.Fatalf("without activation: %s", ex.raw)
	}
}

// Discovery's card declares the extension and a skill per tool, and every
// paid skill's example is a data part that gets the payment asked for.
func TestPaymentCard(t *testing.T) {
	env := newPayEnv(t)
	card := env.s.AgentCard()
	var c documents.AgentCard
	if err := json.Unmarshal(card, &c); err != nil {
		t.Fatal(err)
	}
	if len(c.Capabilities.Extensions) != 1 || c.Capabilities.Extensions[0].URI != x402a2a.ExtensionURI || c.Capabilities.Extensions[0].Required {
		t.Fatalf("extensions %+v", c.Capabilities.Extensions)
	}
	ids := map[string]bool{}
	paid := 0
	for _, s := range c.Skills {
		if ids[s.ID] || s.Name == "" || s.Description == "" || len(s.Tags) == 0 {
			t.Fatalf("skill %+v", s)
		}
		ids[s.ID] = true
		if !slices.Contains(s.Tags, "paid") {
			continue
		}
		paid++
		// Each paid skill's example is a data part this agent sells.
		var d obj
		if err := json.Unmarshal([]byte(s.Examples[0]), &d); err != nil {
			t.Fatalf("skill %s example %q: %v", s.ID, s.Examples[0], err)
		}
		if d["tool"] != s.ID {
			t.Fatalf("skill %s example names %v", s.ID, d["tool"])
		}
		p := env.send(t, v10, dataMessage(v10, "e-"+s.ID, d))
		if p.paymentStatus(t) != x402a2a.StatusPaymentRequired {
			t.Fatalf("skill %s example: %+v", s.ID, p)
		}
	}
	if paid != len(env.cat.All()) {
		t.Fatalf("%d paid skills, want %d", paid, len(env.cat.All()))
	}
	for _, tool := range env.cat.All() {
		if !ids[tool.Key] {
			t.Fatalf("no skill %s", tool.Key)
		}
	}
}

// Options for selling are checked.
func TestSellingOptions(t *testing.T) {
	env := newPayEnv(t)
	shop := newTestShop(t, sell.Config{Offers: env.eng, Catalog: env.cat, PayTo: testPayTo})
	for name, opts := range map[string]Options{
		"no shop":         {Engine: env.eng},
		"bad payTo":       {Engine: env.eng, Shop: newTestShop(t, sell.Config{Offers: env.eng, Catalog: env.cat, PayTo: "0x123"})},
		"negative budget": {Engine: env.eng, Shop: shop, ToolTimeout: -1},
	} {
		if _, err := NewHandler(env.s, opts); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	for name, cfg := range map[string]sell.Config{
		"no catalog":    {Offers: env.eng, PayTo: testPayTo},
		"other network": {Offers: env.eng, Catalog: env.cat, PayTo: testPayTo, Network: "eip155:84532"},
	} {
		if _, err := sell.New(cfg); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

// An input over the catalog's body limit is -32602, as over HTTP.
func TestPaidCallInputOverBodyLimit(t *testing.T) {
	env := newPayEnv(t, func(o *paySetup) {
		cat, err := tools.New(tools.Options{BaseURL: o.Sell.Catalog.BaseURL(), BodyLimit: tools.MinBodyLimit})
		if err != nil {
			t.Fatal(err)
		}
		o.Sell.Catalog = cat
	})
	big := obj{"token": strings.Repeat("a", int(tools.MinBodyLimit))}
	ex := env.sendRaw(t, v10, saleMessage(v10, "m", "jwt-decode", big))
	if ex.resp.Error == nil || ex.resp.Error.Code != CodeInvalidParams || !strings.Contains(ex.resp.Error.Message, "message.parts[0].data.input") {
		t.Fatalf("want -32602 naming the input, got %s", ex.raw)
	}
	if f := violations(t, v10, ex); len(f) != 1 || f[0].Rule != "max_bytes" || f[0].Field != "message.parts[0].data.input" {
		t.Fatalf("violations %+v", f)
	}
	if env.h.store.len() != 0 {
		t.Fatal("a task was created")
	}
}

// The limits of the server per client address: a refused payment is told
// to PaymentRefused; while AdmitPayment refuses, a payment runs nothing
// and the task waits for it again (PAYMENT_UNAVAILABLE, the offer
// repeated); while AdmitUnpaid refuses, a call without payment fails with
// no payment asked.
func TestPaymentLimits(t *testing.T) {
	var refused atomic.Int64
	var unpaidOK atomic.Bool
	unpaidOK.Store(true)
	env := newPayEnv(t, func(o *paySetup) {
		o.AdmitUnpaid = func(*http.Request) (bool, time.Duration) { return unpaidOK.Load(), 4 * time.Second }
		o.AdmitPayment = func(*http.Request) (bool, time.Duration) { return refused.Load() == 0, 6 * time.Second }
		o.PaymentRefused = func(*http.Request) { refused.Add(1) }
	})
	v := v10
	first := env.send(t, v, saleMessage(v, "m1", "risk-levels", riskInput))
	tampered := env.pay(t, first.required(t), func(p *exact.ExactEVMPayload) { p.Authorization.Value = "1" })
	if bad := env.send(t, v, payingMessage(v, "m2", first.ID, tampered)); bad.Status.State != state(v, stateFailed) || refused.Load() != 1 {
		t.Fatalf("a tampered payment: %+v, %d refusals told", bad, refused.Load())
	}
	second := env.send(t, v, saleMessage(v, "m3", "risk-levels", riskInput))
	limited := env.send(t, v, payingMessage(v, "m4", second.ID, env.pay(t, second.required(t), nil)))
	if limited.Status.State != state(v, stateInputRequired) || limited.paymentError(t) != x402a2a.PaymentErrorUnavailable ||
		len(limited.required(t).Accepts) != 1 || env.settled() != 0 || len(env.rows(t, engine.StateReserved)) != 0 {
		t.Fatalf("a payment over the limit: %+v", limited)
	}
	unpaidOK.Store(false)
	if over := env.send(t, v, saleMessage(v, "m5", "risk-levels", riskInput)); over.Status.State != state(v, stateFailed) || over.paymentStatus(t) != "" {
		t.Fatalf("a call without payment over the limit: %+v", over)
	}
}

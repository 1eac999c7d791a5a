package engine_test

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"sync/atomic"
	"testing"

	"github.com/seed1284c1d2/svc/internal/schemetest"
	"github.com/seed1284c1d2/svc/x402"
	"github.com/seed1284c1d2/svc/x402/engine"
)

// holdingTickets is the toy ticket scheme holding something of its own
// per payment (x402.Releaser), and, with op set, selling a payment
// operation (x402.Payment.Operation) instead of a paid request.
type holdingTickets struct {
	*schemetest.Tickets
	op       json.RawMessage
	released atomic.Int64
}

func (h *holdingTickets) Check(ctx context.Context, p x402.PaymentPayload, req x402.PaymentRequirements) (x402.Payment, error) {
	pm, err := h.Tickets.Check(ctx, p, req)
	pm.Operation = h.op
	return pm, err
}

func (h *holdingTickets) Release(context.Context, x402.PaymentPayload, x402.PaymentRequirements, x402.Payment) {
	h.released.Add(1)
}

func ticketEngine(t *testing.T, s *holdingTickets) (*engine.Engine, *engine.Offer) {
	t.Helper()
	e, err := engine.New(engine.Config{Schemes: []x402.ServerScheme{s}, Logger: slog.New(slog.DiscardHandler), PayerBurst: -1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(e.Close)
	offer, err := e.NewOffer("POST /tool", "tool", x402.Route{Price: "0.001", PayTo: "0x00000000000000000000000000000000000000aa"})
	if err != nil {
		t.Fatal(err)
	}
	return e, offer
}

// TestEngineReleasesTheSchemesHold: a scheme that holds something per
// payment (x402.Releaser) is told at once when the engine frees the
// payment unsettled (the run failed, the caller left), and not when the
// payment is settled.
func TestEngineReleasesTheSchemesHold(t *testing.T) {
	s := &holdingTickets{Tickets: schemetest.NewTickets()}
	e, offer := ticketEngine(t, s)
	req := offer.PaymentRequired.Accepts[0]
	call := func(ctx context.Context, seq int, fp string, run engine.RunFunc) engine.Outcome {
		p := s.Sign("bob", seq, req)
		return e.Serve(ctx, engine.Call{Offer: offer, Fingerprint: fp, Payment: &p, Transport: "http"}, run)
	}
	ok := func(context.Context) (engine.Answer, error) {
		return engine.Answer{Status: 200, Body: []byte(`{}`)}, nil
	}
	if out := call(context.Background(), 0, "a", func(context.Context) (engine.Answer, error) { return engine.Answer{}, errors.New("tool failed") }); out.Kind != engine.RunFailed {
		t.Fatalf("a failing run: %v", out.Kind)
	}
	if n := s.released.Load(); n != 1 {
		t.Fatalf("a failed run released %d times, want 1", n)
	}
	ctx, cancel := context.WithCancel(context.Background())
	out := call(ctx, 0, "a", func(context.Context) (engine.Answer, error) {
		cancel()
		return engine.Answer{Status: 200, Body: []byte(`{}`)}, nil
	})
	if out.Kind == engine.Paid {
		t.Fatalf("a call whose caller left was paid")
	}
	if n := s.released.Load(); n != 2 {
		t.Fatalf("a caller gone released %d times in all, want 2", n)
	}
	if out := call(context.Background(), 0, "a", ok); out.Kind != engine.Paid {
		t.Fatalf("a good call: %v %s", out.Kind, out.Reason)
	}
	if n := s.released.Load(); n != 2 {
		t.Fatalf("a settled payment was released (%d)", n)
	}
}

// TestEnginePaymentOperation: a payment its scheme calls an operation
// (x402.Payment.Operation) runs nothing: once settled, the answer is the
// scheme's body, marked Operation, and a retry replays it.
func TestEnginePaymentOperation(t *testing.T) {
	s := &holdingTickets{Tickets: schemetest.NewTickets(), op: json.RawMessage(`{"message":"done"}`)}
	e, offer := ticketEngine(t, s)
	p := s.Sign("bob", 0, offer.PaymentRequired.Accepts[0])
	var runs atomic.Int64
	run := func(context.Context) (engine.Answer, error) {
		runs.Add(1)
		return engine.Answer{Status: 200, Body: []byte(`{"tool":"ran"}`)}, nil
	}
	c := engine.Call{Offer: offer, Fingerprint: "f", Payment: &p, Transport: "http"}
	out := e.Serve(context.Background(), c, run)
	if out.Kind != engine.Paid || !out.Operation || out.Answer == nil || string(out.Answer.Body) != `{"message":"done"}` || out.Answer.Status != 200 || out.Settlement == nil {
		t.Fatalf("an operation: %+v", out)
	}
	again := e.Serve(context.Background(), c, run)
	if again.Kind != engine.Replayed || !again.Operation || string(again.Answer.Body) != `{"message":"done"}` {
		t.Fatalf("its retry: %+v", again)
	}
	if runs.Load() != 0 || s.Settles() != 1 {
		t.Fatalf("the operation ran the tool %d times, settled %d times", runs.Load(), s.Settles())
	}
}

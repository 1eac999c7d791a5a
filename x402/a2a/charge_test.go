package a2a_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/seed1284c1d2/svc/internal/schemetest"
	"github.com/seed1284c1d2/svc/x402"
	"github.com/seed1284c1d2/svc/x402/a2a"
	"github.com/seed1284c1d2/svc/x402/engine"
	"github.com/seed1284c1d2/svc/x402/seller"
)

// TestCharge sells a skill with the toy ticket scheme through Charge: no
// payment leaves the task input-required with the offer; a declined one
// cancels it with nothing sold; a ticket completes it with the answer and
// the receipt after the task's earlier ones; a failing run fails it with
// SERVICE_FAILED and a failure receipt, nothing settled; malformed
// metadata is a *MetadataError, nothing sold.
func TestCharge(t *testing.T) {
	ctx := context.Background()
	tickets := schemetest.NewTickets()
	eng, err := engine.New(engine.Config{Schemes: []x402.ServerScheme{tickets}})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	s, err := seller.New(seller.Config{Engine: eng})
	if err != nil {
		t.Fatal(err)
	}
	offer, err := eng.NewOffer("A2A echo", "echo", x402.Route{Price: "$0.001", Network: x402.NetworkBase, PayTo: "0x209693Bc6afc0C5328bA36FaF03C514EF312287C"})
	if err != nil {
		t.Fatal(err)
	}
	runs := 0
	sale := func(fp string, fail bool) seller.Sale {
		return seller.Sale{Offer: offer, Fingerprint: fp, Run: func(context.Context) ([]byte, error) {
			runs++
			if fail {
				return nil, errors.New("boom")
			}
			return []byte(`{"echo":true}`), nil
		}}
	}
	meta := func(v map[string]any) json.RawMessage {
		b, _ := json.Marshal(v)
		return b
	}

	rep, err := a2a.Charge(ctx, s, sale("a", false), nil, seller.Request{}, nil)
	if err != nil || rep.State != a2a.StateInputRequired || rep.Metadata.Status != a2a.StatusPaymentRequired || rep.Metadata.Required == nil || runs != 0 {
		t.Fatalf("unpaid: %+v %v", rep, err)
	}
	req := rep.Metadata.Required.Accepts[0]
	rep, err = a2a.Charge(ctx, s, sale("a", false), meta(map[string]any{a2a.MetaStatus: a2a.StatusPaymentRejected}), seller.Request{}, nil)
	if err != nil || rep.State != a2a.StateCanceled || rep.Metadata.Status != a2a.StatusPaymentRejected || runs != 0 {
		t.Fatalf("declined: %+v %v", rep, err)
	}
	earlier := []x402.SettleResponse{{Success: false, ErrorReason: "earlier"}}
	rep, err = a2a.Charge(ctx, s, sale("a", false), meta(map[string]any{a2a.MetaPayload: tickets.Sign("dave", 0, req)}), seller.Request{}, earlier)
	if err != nil || rep.State != a2a.StateCompleted || rep.Metadata.Status != a2a.StatusPaymentCompleted || string(rep.Result.Answer) != `{"echo":true}` ||
		len(rep.Metadata.Receipts) != 2 || rep.Metadata.Receipts[0].ErrorReason != "earlier" || !rep.Metadata.Receipts[1].Success || tickets.Settles() != 1 {
		t.Fatalf("paid: %+v %v", rep, err)
	}
	if len(earlier) != 1 {
		t.Fatal("Charge changed the caller's receipts")
	}
	rep, err = a2a.Charge(ctx, s, sale("b", true), meta(map[string]any{a2a.MetaPayload: tickets.Sign("dave", 1, req)}), seller.Request{}, nil)
	if err != nil || rep.State != a2a.StateFailed || rep.Metadata.Error != a2a.PaymentErrorServiceFailed || len(rep.Metadata.Receipts) != 1 ||
		rep.Metadata.Receipts[0].Success || rep.Metadata.Receipts[0].Network != x402.NetworkBase || tickets.Settles() != 1 {
		t.Fatalf("failed run: %+v %v", rep, err)
	}
	var me *a2a.MetadataError
	if _, err := a2a.Charge(ctx, s, sale("c", false), json.RawMessage(`[1]`), seller.Request{}, nil); !errors.As(err, &me) {
		t.Fatalf("malformed metadata: %v", err)
	}
}

// TestConclude maps results an agent reached without selling: a tool that
// cannot run now leaves the task input-required with the offer and a
// failure receipt on the offer's network, the earlier receipts untouched;
// a refused admission leaves it input-required with PAYMENT_UNAVAILABLE;
// an unexpected outcome fails it with INVALID_PAYMENT.
func TestConclude(t *testing.T) {
	eng, err := engine.New(engine.Config{Schemes: []x402.ServerScheme{schemetest.NewTickets()}})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	offer, err := eng.NewOffer("A2A echo", "echo", x402.Route{Price: "$0.001", Network: x402.NetworkBase, PayTo: "0x209693Bc6afc0C5328bA36FaF03C514EF312287C"})
	if err != nil {
		t.Fatal(err)
	}
	earlier := []x402.SettleResponse{{Success: false, ErrorReason: "earlier"}}
	rep := a2a.Conclude(offer, nil, seller.Result{Code: seller.CodeRunUnavailable, Reason: "terminal_unavailable"}, earlier)
	if rep.State != a2a.StateInputRequired || rep.Metadata.Status != a2a.StatusPaymentFailed || rep.Metadata.Error != a2a.PaymentErrorServiceUnavailable ||
		rep.Metadata.Required == nil || rep.Metadata.Required.Error != "terminal_unavailable" || len(rep.Metadata.Receipts) != 2 ||
		rep.Metadata.Receipts[1].ErrorReason != "terminal_unavailable" || rep.Metadata.Receipts[1].Network != x402.NetworkBase || len(earlier) != 1 {
		t.Fatalf("unavailable: %+v", rep)
	}
	rep = a2a.Conclude(offer, nil, seller.Result{Code: seller.CodeThrottled, Reason: "rate_limited"}, nil)
	if rep.State != a2a.StateInputRequired || rep.Metadata.Error != a2a.PaymentErrorUnavailable || rep.Metadata.Required == nil {
		t.Fatalf("throttled: %+v", rep)
	}
	rep = a2a.Conclude(offer, nil, seller.Result{Code: seller.CodeUnexpected, Reason: "unexpected_verify_error"}, nil)
	if rep.State != a2a.StateFailed || rep.Metadata.Error != a2a.PaymentErrorInvalidPayment || len(rep.Metadata.Receipts) != 1 || rep.Metadata.Receipts[0].Success {
		t.Fatalf("unexpected: %+v", rep)
	}
}

package engine_test

import (
	"context"
	"testing"

	"github.com/seed1284c1d2/svc/internal/schemetest"
	"github.com/seed1284c1d2/svc/x402"
	"github.com/seed1284c1d2/svc/x402/engine"
)

// TestIdentify: a payment's identity is its scheme's key, with nothing
// journaled or settled; a payment of no offered requirement, or one its
// scheme refuses, is an error.
func TestIdentify(t *testing.T) {
	ctx := context.Background()
	tickets := schemetest.NewTickets()
	journal := engine.NewMemoryJournal()
	eng, err := engine.New(engine.Config{Schemes: []x402.ServerScheme{tickets}, Journal: journal})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	offer, err := eng.NewOffer("r", "p", x402.Route{Price: "$0.001", Network: x402.NetworkBase, PayTo: "0x209693Bc6afc0C5328bA36FaF03C514EF312287C"})
	if err != nil {
		t.Fatal(err)
	}
	req := offer.PaymentRequired.Accepts[0]
	pm, err := eng.Identify(ctx, offer, tickets.Sign("erin", 0, req))
	if err != nil || pm.Key != schemetest.Key("erin", 0) || pm.Payer != "erin" {
		t.Fatalf("identity %+v %v", pm, err)
	}
	if _, err := journal.Get(ctx, pm.Key); err == nil || tickets.Settles() != 0 {
		t.Fatal("Identify journaled or settled the payment")
	}
	other := req
	other.Amount = "1"
	if _, err := eng.Identify(ctx, offer, tickets.Sign("erin", 0, other)); err == nil {
		t.Fatal("a payment of another amount was identified")
	}
	forged := tickets.Sign("erin", 0, req)
	forged.Payload = []byte(`{"payer":"erin","seq":0,"mac":"00"}`)
	if _, err := eng.Identify(ctx, offer, forged); err == nil {
		t.Fatal("a forged ticket was identified")
	}
}

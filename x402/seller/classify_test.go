package seller_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/seed1284c1d2/svc/internal/schemetest"
	"github.com/seed1284c1d2/svc/x402"
	"github.com/seed1284c1d2/svc/x402/engine"
	"github.com/seed1284c1d2/svc/x402/exact"
	exactserver "github.com/seed1284c1d2/svc/x402/exact/server"
	"github.com/seed1284c1d2/svc/x402/seller"
)

// noFacilitator is the facilitator of a scheme that only classifies.
type noFacilitator struct{ x402.Facilitator }

// transient is a run error that may pass.
type transient struct{}

func (transient) Error() string   { return "upstream down" }
func (transient) Transient() bool { return true }

// TestClassify: every engine outcome maps to its code by the reason's
// identity, never its wording; the results that need another payment
// carry the offer, the others none.
func TestClassify(t *testing.T) {
	// exact sorts its own reasons (x402.ReasonClassifier).
	schemes := schemetest.Exact(t, exactserver.Config{Facilitator: noFacilitator{}})
	offer := schemetest.ExactOffer(t, "tools/call x", "x", x402.Route{Price: "0.001", PayTo: "0x209693Bc6afc0C5328bA36FaF03C514EF312287C"})
	pr := offer.Required("r")
	want := offer.PaymentRequired.Accepts[0]
	other := want
	other.Network = "eip155:84532"
	cheaper := want
	cheaper.Amount = "1"
	sr := &x402.SettleResponse{Success: true, Transaction: "0x01"}
	for _, c := range []struct {
		name    string
		payment *x402.PaymentPayload
		out     engine.Outcome
		code    seller.Code
		offer   bool
		refused bool
	}{
		{"unpaid", nil, engine.Outcome{Kind: engine.PaymentRequired, PaymentRequired: &pr}, seller.CodePaymentRequired, true, false},
		{"paid", nil, engine.Outcome{Kind: engine.Paid, Answer: &engine.Answer{Body: []byte("{}")}, Settlement: sr}, seller.CodePaid, false, false},
		{"replayed", nil, engine.Outcome{Kind: engine.Replayed, Answer: &engine.Answer{Body: []byte("{}")}, Settlement: sr}, seller.CodeReplayed, false, false},
		{"paid without answer", nil, engine.Outcome{Kind: engine.Paid}, seller.CodeUnexpected, false, false},
		{"signature", nil, engine.Outcome{Kind: engine.Refused, Reason: exact.ReasonInvalidSignature, PaymentRequired: &pr}, seller.CodeInvalidSignature, true, true},
		{"expired", nil, engine.Outcome{Kind: engine.Refused, Reason: exact.ReasonValidBefore, PaymentRequired: &pr}, seller.CodeExpired, true, true},
		{"nonce", nil, engine.Outcome{Kind: engine.Refused, Reason: exact.ReasonNonceAlreadyUsed, PaymentRequired: &pr}, seller.CodeDuplicateNonce, true, true},
		{"attempts", nil, engine.Outcome{Kind: engine.Refused, Reason: engine.ReasonAttemptsExhausted, PaymentRequired: &pr}, seller.CodeDuplicateNonce, true, true},
		{"value", nil, engine.Outcome{Kind: engine.Refused, Reason: exact.ReasonValueMismatch, PaymentRequired: &pr}, seller.CodeInvalidAmount, true, true},
		{"other network", &x402.PaymentPayload{Accepted: other}, engine.Outcome{Kind: engine.Refused, Reason: engine.ReasonNoMatchingRequirements, PaymentRequired: &pr}, seller.CodeNetworkMismatch, true, true},
		{"other amount", &x402.PaymentPayload{Accepted: cheaper}, engine.Outcome{Kind: engine.Refused, Reason: engine.ReasonNoMatchingRequirements, PaymentRequired: &pr}, seller.CodeInvalidAmount, true, true},
		{"funds at verify", nil, engine.Outcome{Kind: engine.Refused, Reason: x402.ReasonInsufficientFunds, PaymentRequired: &pr}, seller.CodeInsufficientFunds, true, true},
		{"a reason saying insufficient", nil, engine.Outcome{Kind: engine.Refused, Reason: "not_insufficient_at_all", PaymentRequired: &pr}, seller.CodeInvalidPayment, true, true},
		{"settle refused", nil, engine.Outcome{Kind: engine.SettleFailed, Reason: "transaction_failed", Settlement: &x402.SettleResponse{}}, seller.CodeSettlementFailed, true, false},
		{"funds at settle", nil, engine.Outcome{Kind: engine.SettleFailed, Reason: x402.ReasonInsufficientFunds, Settlement: &x402.SettleResponse{}}, seller.CodeInsufficientFunds, true, false},
		{"in progress", nil, engine.Outcome{Kind: engine.InProgress, PaymentRequired: &pr}, seller.CodeInProgress, true, false},
		{"throttled", nil, engine.Outcome{Kind: engine.Throttled, PaymentRequired: &pr, RetryAfter: 3 * time.Second}, seller.CodeThrottled, false, false},
		{"pending", nil, engine.Outcome{Kind: engine.Pending, Reason: engine.ReasonSettlementPending}, seller.CodeSettlementPending, false, false},
		{"unresolved", nil, engine.Outcome{Kind: engine.Pending, Reason: engine.ReasonPaymentUnresolved}, seller.CodeUnresolved, false, false},
		{"unavailable", nil, engine.Outcome{Kind: engine.Unavailable, Reason: engine.ReasonStoreUnavailable}, seller.CodeUnavailable, false, false},
		{"run failed", nil, engine.Outcome{Kind: engine.RunFailed, Err: errors.New("boom")}, seller.CodeRunFailed, false, false},
		{"run down", nil, engine.Outcome{Kind: engine.RunFailed, Err: transient{}}, seller.CodeRunUnavailable, false, false},
		{"run timed out", nil, engine.Outcome{Kind: engine.RunFailed, Err: context.DeadlineExceeded}, seller.CodeRunUnavailable, false, false},
	} {
		r := seller.Classify(offer, c.payment, c.out, schemes...)
		if r.Code != c.code || (r.PaymentRequired != nil) != c.offer || r.Refused() != c.refused {
			t.Errorf("%s: code %d offer %v refused %v; want %d %v %v", c.name, r.Code, r.PaymentRequired != nil, r.Refused(), c.code, c.offer, c.refused)
		}
		if c.out.Kind == engine.Throttled && r.RetryAfter != 3*time.Second {
			t.Errorf("%s: retry after %s", c.name, r.RetryAfter)
		}
	}
}

// TestPayment: a payment is an object or the base64 of one (padded or
// not); null or absent is none; anything else is refused.
func TestPayment(t *testing.T) {
	obj := `{"x402Version":2,"accepted":{"scheme":"exact","network":"eip155:8453"},"payload":{"a":1}}`
	for _, raw := range []string{obj, `"eyJ4NDAyVmVyc2lvbiI6MiwiYWNjZXB0ZWQiOnsic2NoZW1lIjoiZXhhY3QiLCJuZXR3b3JrIjoiZWlwMTU1Ojg0NTMifSwicGF5bG9hZCI6eyJhIjoxfX0="`,
		`"eyJ4NDAyVmVyc2lvbiI6MiwiYWNjZXB0ZWQiOnsic2NoZW1lIjoiZXhhY3QiLCJuZXR3b3JrIjoiZWlwMTU1Ojg0NTMifSwicGF5bG9hZCI6eyJhIjoxfX0"`} {
		p, err := seller.Payment([]byte(raw))
		if err != nil || p == nil || p.Accepted.Network != "eip155:8453" || string(p.Payload) != `{"a":1}` {
			t.Errorf("%s: %+v %v", raw, p, err)
		}
	}
	for _, raw := range []string{"", "null", " null "} {
		if p, err := seller.Payment([]byte(raw)); p != nil || err != nil {
			t.Errorf("%q: %+v %v", raw, p, err)
		}
	}
	for _, raw := range []string{"42", "true", `"not base64!"`, `"W1tdXQ=="`, `{"x402Version":2,"payload":{}}`, `{"x402Version":2,"accepted":{"scheme":"exact","network":"eip155:8453"},"payload":[]}`, `[1]`} {
		if p, err := seller.Payment([]byte(raw)); p != nil || err == nil {
			t.Errorf("%s accepted: %+v", raw, p)
		}
	}
}

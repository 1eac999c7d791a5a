package a2a

import (
	"context"
	"encoding/json"
	"slices"

	"github.com/seed1284c1d2/svc/x402"
	"github.com/seed1284c1d2/svc/x402/engine"
	"github.com/seed1284c1d2/svc/x402/seller"
)

// TaskState is the state of the task a paid message leaves, in A2A 1.0's
// spelling (V03 gives A2A 0.3's).
type TaskState string

// The task states of the extension's flow.
const (
	// StateInputRequired: the task waits for a payment (the offer in
	// Metadata.Required).
	StateInputRequired TaskState = "TASK_STATE_INPUT_REQUIRED"
	// StateCompleted: paid; the answer goes in the task's artifact.
	StateCompleted TaskState = "TASK_STATE_COMPLETED"
	// StateFailed: the payment or the call failed for good.
	StateFailed TaskState = "TASK_STATE_FAILED"
	// StateCanceled: the client declined to pay.
	StateCanceled TaskState = "TASK_STATE_CANCELED"
)

// V03 spells the state as A2A 0.3 does ("input-required").
func (s TaskState) V03() string {
	switch s {
	case StateInputRequired:
		return "input-required"
	case StateCompleted:
		return "completed"
	case StateFailed:
		return "failed"
	case StateCanceled:
		return "canceled"
	}
	return "unknown"
}

// Reply is what an agent answers a message of a paid skill with: the
// task's state, the extension's metadata of its status message, and the
// seller's result (its Answer once paid).
type Reply struct {
	State    TaskState
	Metadata Metadata
	Result   seller.Result
}

// Charge sells one call of an agent's own skill through s: it reads the
// payment of the message whose metadata is given (ReadPayment; a
// malformed one is a *MetadataError and nothing is sold), sells sale with
// it, and tells the task's next state and status metadata. receipts are
// the task's receipts so far; the reply's Metadata.Receipts adds this
// message's. req.Transport defaults to Transport; req.Payment is the
// message's. A declined payment cancels the task with nothing sold;
// otherwise the reply is Conclude's of the sale's result.
func Charge(ctx context.Context, s *seller.Seller, sale seller.Sale, metadata json.RawMessage, req seller.Request, receipts []x402.SettleResponse) (Reply, error) {
	cp, err := ReadPayment(metadata)
	if err != nil {
		return Reply{}, err
	}
	receipts = slices.Clone(receipts)
	if cp.Status == StatusPaymentRejected {
		return Reply{State: StateCanceled, Metadata: Metadata{Status: StatusPaymentRejected, Receipts: receipts}}, nil
	}
	if req.Transport == "" {
		req.Transport = Transport
	}
	req.Payment = cp.Payment
	return Conclude(sale.Offer, cp.Payment, s.Sell(ctx, sale, req), receipts), nil
}

// Conclude maps the seller's result r of a paid skill's call (for offer,
// with payment, nil for none) to the task's next state and status
// metadata: the step of Charge after the sale, for an agent that sells
// through the seller itself or answers for it (an admission refused, a
// resource found unavailable before the sale). receipts are the task's
// receipts so far; the reply's Metadata.Receipts adds this message's (a
// failure's receipt has r.Reason as its errorReason and the payment's
// network, else the offer's). receipts are not modified.
//
// Without payment the task is input-required with the offer; paid, it is
// completed with the settlement; a refused payment or settlement, or a
// failed run, fails it with the extension's error code; what the same
// payment may buy later (in progress, pending, unavailable) leaves it
// input-required with the error code and the offer.
func Conclude(offer *engine.Offer, payment *x402.PaymentPayload, r seller.Result, receipts []x402.SettleResponse) Reply {
	receipts = slices.Clone(receipts)
	rep := Reply{Result: r}
	failure := x402.SettleResponse{Success: false, ErrorReason: r.Reason, Network: network(offer, payment), Payer: r.Outcome.Payer}
	switch {
	case r.Code == seller.CodePaymentRequired:
		rep.State, rep.Metadata = StateInputRequired, Metadata{Status: StatusPaymentRequired, Required: r.PaymentRequired, Receipts: receipts}
	case r.Paid():
		rep.State, rep.Metadata = StateCompleted, Metadata{Status: StatusPaymentCompleted, Receipts: append(receipts, *r.Settlement)}
	case r.Refused() || r.AtSettlement || r.Code == seller.CodeRunFailed || r.Code == seller.CodeUnexpected:
		if r.AtSettlement && r.Settlement != nil {
			failure = *r.Settlement
		}
		rep.State, rep.Metadata = StateFailed, Metadata{Status: StatusPaymentFailed, Error: ErrorCode(r.Code), Receipts: append(receipts, failure)}
	default:
		pr := r.PaymentRequired
		if pr == nil {
			p := offer.Required(r.Reason)
			pr = &p
		}
		rep.State, rep.Metadata = StateInputRequired, Metadata{Status: StatusPaymentFailed, Error: ErrorCode(r.Code), Required: pr, Receipts: append(receipts, failure)}
	}
	return rep
}

// network is the network of a failure's receipt: the payment's, else the
// offer's first.
func network(offer *engine.Offer, p *x402.PaymentPayload) string {
	if p != nil && p.Accepted.Network != "" {
		return p.Accepted.Network
	}
	if acc := offer.PaymentRequired.Accepts; len(acc) > 0 {
		return acc[0].Network
	}
	return ""
}

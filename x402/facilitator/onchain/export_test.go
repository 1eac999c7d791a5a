package onchain

import (
	"github.com/ethereum/go-ethereum/core/types"

	"github.com/seed1284c1d2/svc/x402"
)

// SettlementOf is, for the tests, the answer a settlement of payload for
// req gives when its transaction's receipt is rcpt: the event check.
func (f *Facilitator) SettlementOf(payload x402.PaymentPayload, req x402.PaymentRequirements, rcpt *types.Receipt) (x402.SettleResponse, error) {
	pm, err := f.check(payload, req)
	if err != nil {
		return x402.SettleResponse{}, err
	}
	return f.fromReceipt(pm, req, rcpt)
}

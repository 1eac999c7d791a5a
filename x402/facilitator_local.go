package x402

import (
	"context"
	"encoding/hex"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/ethereum/go-ethereum/crypto"
)

// LocalSettlementNote is put in the Extra of every LocalFacilitator
// settlement (with "onChain": false).
const LocalSettlementNote = "local development facilitator: nothing was settled on chain"

// LocalTransactionPrefix starts every LocalFacilitator transaction id, so
// that it cannot be mistaken for a chain transaction hash.
const LocalTransactionPrefix = "local-dev:"

// LocalFacilitatorConfig configures a LocalFacilitator.
type LocalFacilitatorConfig struct {
	// Verifier checks payments; its Now defaults to Now.
	Verifier Verifier
	// Networks restricts the networks served (CAIP-2 ids or v1 names);
	// empty means every known network.
	Networks []string
	// PayTo, when set, is the only receiving address accepted.
	PayTo string
	// Now is the clock (nil means time.Now).
	Now func() time.Time
}

// Settlement is one payment a LocalFacilitator "settled".
type Settlement struct {
	Transaction string
	Network     string
	Asset       string
	Payer       string
	PayTo       string
	Amount      string
	Nonce       string
	SettledAt   time.Time
}

// LocalFacilitator is a Facilitator for development and tests: it verifies
// payments for real with the local Verifier (signatures, amounts, time
// window) but settles nothing on chain. Settle records the payment in
// memory, refuses an authorization it already settled, and answers with a
// transaction id "local-dev:<64 hex>" (never a 0x hash) and Extra
// {"onChain": false, "note": LocalSettlementNote}. Safe for concurrent use.
type LocalFacilitator struct {
	verifier Verifier
	networks []Network
	payTo    string
	now      func() time.Time

	mu          sync.Mutex
	settled     map[string]struct{}
	settlements []Settlement
}

var _ Facilitator = (*LocalFacilitator)(nil)

// NewLocalFacilitator builds a LocalFacilitator; an unknown network or an
// invalid PayTo is a *ConfigError.
func NewLocalFacilitator(cfg LocalFacilitatorConfig) (*LocalFacilitator, error) {
	f := &LocalFacilitator{verifier: cfg.Verifier, now: cfg.Now, settled: make(map[string]struct{})}
	if f.now == nil {
		f.now = time.Now
	}
	if f.verifier.Now == nil {
		f.verifier.Now = f.now
	}
	if len(cfg.Networks) == 0 {
		f.networks = Networks()
	}
	for _, id := range cfg.Networks {
		n, ok := LookupNetwork(id)
		if !ok {
			return nil, &ConfigError{"Networks", fmt.Sprintf("unknown network %q (known: %s)", truncForMsg(id, 40), knownNetworkList())}
		}
		f.networks = append(f.networks, n)
	}
	if cfg.PayTo != "" {
		p, err := checkPayTo(cfg.PayTo)
		if err != nil {
			return nil, err
		}
		f.payTo = p
	}
	return f, nil
}

// check runs the verifier plus this facilitator's own restrictions and
// returns the payer, the parsed payload and the nonce key.
func (f *LocalFacilitator) check(payload PaymentPayload, req PaymentRequirements) (payer string, p ExactEVMPayload, key string, verr error) {
	if !f.serves(req.Network) {
		return "", p, "", verifyRefuse(ReasonInvalidNetwork, "network %q is not served by this facilitator", truncForMsg(req.Network, 40))
	}
	if f.payTo != "" && !equalAddressFold(req.PayTo, f.payTo) {
		return "", p, "", verifyRefuse(ReasonRecipientMismatch, "this facilitator only accepts payments to %s", f.payTo)
	}
	payer, err := f.verifier.Verify(payload, req)
	if err != nil {
		return payer, p, "", err
	}
	p, _ = ParseExactEVMPayload(payload.Payload) // cannot fail after Verify
	key = NonceKey(req.Network, req.Asset, p.Authorization.From, p.Authorization.Nonce)
	return payer, p, key, nil
}

func (f *LocalFacilitator) serves(network string) bool {
	for _, n := range f.networks {
		if network == n.CAIP2 || network == n.V1Name {
			return true
		}
	}
	return false
}

// Verify implements Facilitator: IsValid with the payer, or IsValid false
// with the Verifier's reason; an authorization this facilitator already
// settled is invalid (ReasonNonceAlreadyUsed), as the chain would say.
func (f *LocalFacilitator) Verify(ctx context.Context, payload PaymentPayload, req PaymentRequirements) (VerifyResponse, error) {
	if err := ctx.Err(); err != nil {
		return VerifyResponse{}, err
	}
	payer, _, key, err := f.check(payload, req)
	if err != nil {
		return invalidVerifyResponse(payer, err), nil
	}
	f.mu.Lock()
	_, used := f.settled[key]
	f.mu.Unlock()
	if used {
		return VerifyResponse{IsValid: false, InvalidReason: ReasonNonceAlreadyUsed, InvalidMessage: "this authorization was already settled", Payer: payer}, nil
	}
	return VerifyResponse{IsValid: true, Payer: payer}, nil
}

// Settle implements Facilitator: it re-verifies, refuses an authorization
// already settled (ReasonNonceAlreadyUsed) and records the settlement.
func (f *LocalFacilitator) Settle(ctx context.Context, payload PaymentPayload, req PaymentRequirements) (SettleResponse, error) {
	if err := ctx.Err(); err != nil {
		return SettleResponse{}, err
	}
	payer, p, key, err := f.check(payload, req)
	if err != nil {
		vr := invalidVerifyResponse(payer, err)
		return SettleResponse{Success: false, ErrorReason: vr.InvalidReason, ErrorMessage: vr.InvalidMessage, Payer: payer, Network: req.Network}, nil
	}
	tx := localTransactionID(req.Network, p)
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, used := f.settled[key]; used {
		return SettleResponse{Success: false, ErrorReason: ReasonNonceAlreadyUsed, ErrorMessage: "this authorization was already settled", Payer: payer, Network: req.Network}, nil
	}
	f.settled[key] = struct{}{}
	f.settlements = append(f.settlements, Settlement{
		Transaction: tx,
		Network:     req.Network,
		Asset:       req.Asset,
		Payer:       payer,
		PayTo:       req.PayTo,
		Amount:      req.Amount,
		Nonce:       p.Authorization.Nonce,
		SettledAt:   f.now(),
	})
	return SettleResponse{
		Success:     true,
		Payer:       payer,
		Transaction: tx,
		Network:     req.Network,
		Amount:      req.Amount,
		Extra:       map[string]any{"onChain": false, "note": LocalSettlementNote},
	}, nil
}

// Supported implements Facilitator: the exact scheme on each served
// network, for x402 v2 (CAIP-2 ids) and v1 (network names).
func (f *LocalFacilitator) Supported(ctx context.Context) (SupportedResponse, error) {
	if err := ctx.Err(); err != nil {
		return SupportedResponse{}, err
	}
	var kinds []SupportedKind
	for _, n := range f.networks {
		kinds = append(kinds, SupportedKind{X402Version: 2, Scheme: SchemeExact, Network: n.CAIP2})
	}
	for _, n := range f.networks {
		kinds = append(kinds, SupportedKind{X402Version: 1, Scheme: SchemeExact, Network: n.V1Name})
	}
	return SupportedResponse{Kinds: kinds, Extensions: []string{}, Signers: map[string][]string{}}, nil
}

// Settlements returns a copy of the settlements recorded so far, oldest first.
func (f *LocalFacilitator) Settlements() []Settlement {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Settlement(nil), f.settlements...)
}

// invalidVerifyResponse turns a Verifier error into an IsValid false answer.
func invalidVerifyResponse(payer string, err error) VerifyResponse {
	if ve, ok := err.(*VerifyError); ok {
		return VerifyResponse{IsValid: false, InvalidReason: ve.Reason, InvalidMessage: ve.Message, Payer: payer}
	}
	return VerifyResponse{IsValid: false, InvalidReason: ReasonUnexpectedVerifyError, InvalidMessage: err.Error(), Payer: payer}
}

// localTransactionID derives a deterministic id from the network, the
// authorization and its signature: "local-dev:" + hex(keccak256(...)).
func localTransactionID(network string, p ExactEVMPayload) string {
	a := p.Authorization
	id := strings.Join([]string{"x402-local-settlement", NonceKey(network, "", a.From, a.Nonce), strings.ToLower(a.To),
		a.Value, a.ValidAfter, a.ValidBefore, strings.ToLower(p.Signature)}, "\x00")
	h := crypto.Keccak256Hash([]byte(id))
	return LocalTransactionPrefix + hex.EncodeToString(h[:])
}

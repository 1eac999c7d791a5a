package facilitator

import (
	"context"
	"encoding/hex"
	"fmt"
	"maps"
	"math/big"
	"strings"
	"sync"
	"time"

	"github.com/ethereum/go-ethereum/crypto"

	"github.com/seed1284c1d2/svc/x402"
	"github.com/seed1284c1d2/svc/x402/exact"
	"github.com/seed1284c1d2/svc/x402/internal/clip"
	"github.com/seed1284c1d2/svc/x402/internal/wire"
)

// LocalSettlementNote is put in the Extra of every Local
// settlement (with "onChain": false).
const LocalSettlementNote = "local development facilitator: nothing was settled on chain"

// LocalTransactionPrefix starts every Local transaction id, so
// that it cannot be mistaken for a chain transaction hash.
const LocalTransactionPrefix = "local-dev:"

// LocalConfig configures a Local facilitator (NewLocal).
type LocalConfig struct {
	// Verifier checks payments; its Now defaults to Now.
	Verifier exact.Verifier
	// Networks restricts the networks served (CAIP-2 ids or v1 names);
	// empty means every known network.
	Networks []string
	// PayTo, when set, is the only receiving address accepted.
	PayTo string
	// Now is the clock (nil means time.Now).
	Now func() time.Time
}

// Settlement is one payment a Local "settled".
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

// Local is an x402.Facilitator for development and tests: it verifies
// payments for real with the local exact.Verifier (signatures, amounts, time
// window) but settles nothing on chain. Settle records the payment in
// memory and answers with a transaction id "local-dev:<64 hex>" (never a
// 0x hash) and Extra {"onChain": false, "note": LocalSettlementNote}.
//
// It deduplicates settlements as the chain cannot: an authorization it
// already settled, presented again for the same requirements (payTo,
// amount, asset, network), gets the original SettleResponse back (same
// transaction), even once the authorization has expired; for other
// requirements it is refused with ReasonNonceAlreadyUsed, and Verify of a
// settled authorization is always invalid (ReasonNonceAlreadyUsed). It
// honours the payment-identifier extension (see NewHandler): an
// identifier (scoped by payTo) is bound to the payment it was first
// settled with, and refused (x402.ReasonPaymentIdentifierConflict) with another; a malformed one
// is refused (x402.ReasonInvalidPaymentIdentifier). It implements StatusChecker
// from what it recorded. What it records is kept for its lifetime. Safe
// for concurrent use.
type Local struct {
	verifier exact.Verifier
	networks []x402.Network
	payTo    string
	now      func() time.Time

	mu          sync.Mutex
	settled     map[string]*localSettlement // by NonceKey
	ids         map[string]string           // identifierScope → payment fingerprint
	settlements []Settlement
}

// localSettlement is what Local keeps of one settled
// authorization.
type localSettlement struct {
	settlement  Settlement
	resp        x402.SettleResponse
	fingerprint string // paymentFingerprint of the payment as settled
}

var (
	_ x402.FacilitatorScheme = (*Local)(nil)
	_ x402.StatusChecker     = (*Local)(nil)
)

// NewLocal builds a Local; an unknown network or an
// invalid PayTo is a *ConfigError.
func NewLocal(cfg LocalConfig) (*Local, error) {
	f := &Local{verifier: cfg.Verifier, now: cfg.Now, settled: make(map[string]*localSettlement), ids: make(map[string]string)}
	if f.now == nil {
		f.now = time.Now
	}
	if f.verifier.Now == nil {
		f.verifier.Now = f.now
	}
	if len(cfg.Networks) == 0 {
		f.networks = x402.Networks()
	}
	for _, id := range cfg.Networks {
		n, ok := x402.LookupNetwork(id)
		if !ok {
			return nil, &x402.ConfigError{Field: "Networks", Message: fmt.Sprintf("unknown network %q (known: %s)", clip.Bytes(id, 40), knownNetworkList())}
		}
		f.networks = append(f.networks, n)
	}
	if cfg.PayTo != "" {
		p, problem := wire.CheckPayTo(cfg.PayTo)
		if problem != "" {
			return nil, &x402.ConfigError{Field: "PayTo", Message: problem}
		}
		f.payTo = p
	}
	return f, nil
}

// check runs the verifier plus this facilitator's own restrictions and
// returns the payer, the parsed payload and the nonce key.
func (f *Local) check(payload x402.PaymentPayload, req x402.PaymentRequirements) (payer string, p exact.ExactEVMPayload, key string, verr error) {
	if !f.serves(req.Network) {
		return "", p, "", &exact.VerifyError{Reason: x402.ReasonInvalidNetwork, Message: fmt.Sprintf("network %q is not served by this facilitator", clip.Bytes(req.Network, 40))}
	}
	if f.payTo != "" && !wire.EqualAddressFold(req.PayTo, f.payTo) {
		return "", p, "", &exact.VerifyError{Reason: exact.ReasonRecipientMismatch, Message: fmt.Sprintf("this facilitator only accepts payments to %s", f.payTo)}
	}
	payer, err := f.verifier.Verify(payload, req)
	if err != nil {
		return payer, p, "", err
	}
	p, _ = exact.ParseExactEVMPayload(payload.Payload) // cannot fail after Verify
	key = exact.NonceKey(req.Network, req.Asset, p.Authorization.From, p.Authorization.Nonce)
	return payer, p, key, nil
}

func (f *Local) serves(network string) bool {
	for _, n := range f.networks {
		if network == n.CAIP2 || network == n.V1Name {
			return true
		}
	}
	return false
}

// identifierCheck reads the payment identifier of payload and checks it
// against the bindings; fingerprint is the payment's. It returns the
// identifier's key (identifierScope), or a refusal reason and message.
func (f *Local) identifierCheck(payload x402.PaymentPayload, req x402.PaymentRequirements, fingerprint string) (id, reason, msg string) {
	id, err := x402.PaymentIdentifierOf(payload)
	if err != nil {
		return "", x402.ReasonInvalidPaymentIdentifier, err.Error()
	}
	if id == "" {
		return "", "", ""
	}
	id = identifierScope(id, req)
	f.mu.Lock()
	bound, ok := f.ids[id]
	f.mu.Unlock()
	if ok && bound != fingerprint {
		return id, x402.ReasonPaymentIdentifierConflict, msgIdentifierConflict
	}
	return id, "", ""
}

// settledRecord returns the record of the authorization payload carries
// for req's network and asset, if it was settled.
func (f *Local) settledRecord(payload x402.PaymentPayload, req x402.PaymentRequirements) *localSettlement {
	p, err := exact.ParseExactEVMPayload(payload.Payload)
	if err != nil {
		return nil
	}
	key := exact.NonceKey(req.Network, req.Asset, p.Authorization.From, p.Authorization.Nonce)
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.settled[key]
}

// Verify implements Facilitator: IsValid with the payer, or IsValid false
// with the Verifier's reason. An authorization this facilitator already
// settled is invalid (ReasonNonceAlreadyUsed), as the chain would say,
// whatever else is wrong with it; so is a payment identifier bound to
// another payment (x402.ReasonPaymentIdentifierConflict).
func (f *Local) Verify(ctx context.Context, payload x402.PaymentPayload, req x402.PaymentRequirements) (x402.VerifyResponse, error) {
	if err := ctx.Err(); err != nil {
		return x402.VerifyResponse{}, fmt.Errorf("x402: local facilitator verify: %w", err)
	}
	if _, reason, msg := f.identifierCheck(payload, req, paymentFingerprint(payload, req)); reason != "" {
		return x402.VerifyResponse{IsValid: false, InvalidReason: reason, InvalidMessage: msg}, nil
	}
	if rec := f.settledRecord(payload, req); rec != nil {
		return x402.VerifyResponse{IsValid: false, InvalidReason: exact.ReasonNonceAlreadyUsed, InvalidMessage: "this authorization was already settled", Payer: rec.settlement.Payer}, nil
	}
	payer, _, key, err := f.check(payload, req)
	if err != nil {
		return invalidVerifyResponse(payer, err), nil
	}
	f.mu.Lock()
	_, used := f.settled[key]
	f.mu.Unlock()
	if used {
		return x402.VerifyResponse{IsValid: false, InvalidReason: exact.ReasonNonceAlreadyUsed, InvalidMessage: "this authorization was already settled", Payer: payer}, nil
	}
	return x402.VerifyResponse{IsValid: true, Payer: payer}, nil
}

// Settle implements Facilitator. An authorization settled before is
// answered from the record, without settling again: the original response
// for the same requirements (payTo, amount, asset, network), or
// ReasonNonceAlreadyUsed for others. The very payment settled before (same
// signed authorization, same requirements) gets the original response
// without verification, so that it still does once the authorization has
// expired; another signature of it must verify first. A new authorization
// is verified and recorded.
func (f *Local) Settle(ctx context.Context, payload x402.PaymentPayload, req x402.PaymentRequirements) (x402.SettleResponse, error) {
	if err := ctx.Err(); err != nil {
		return x402.SettleResponse{}, fmt.Errorf("x402: local facilitator settle: %w", err)
	}
	id, err := x402.PaymentIdentifierOf(payload)
	if err != nil {
		return x402.SettleResponse{Success: false, ErrorReason: x402.ReasonInvalidPaymentIdentifier, ErrorMessage: err.Error(), Network: req.Network}, nil
	}
	id = identifierScope(id, req)
	fp := paymentFingerprint(payload, req)
	key := ""
	if p, err := exact.ParseExactEVMPayload(payload.Payload); err == nil {
		key = exact.NonceKey(req.Network, req.Asset, p.Authorization.From, p.Authorization.Nonce)
	}
	f.mu.Lock()
	resp, answered := f.answerLocked(id, fp, key, req, false)
	f.mu.Unlock()
	if answered {
		return resp, nil
	}
	payer, p, key, err := f.check(payload, req)
	if err != nil {
		vr := invalidVerifyResponse(payer, err)
		return x402.SettleResponse{Success: false, ErrorReason: vr.InvalidReason, ErrorMessage: vr.InvalidMessage, Payer: payer, Network: req.Network}, nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if resp, answered := f.answerLocked(id, fp, key, req, true); answered {
		return resp, nil
	}
	s := Settlement{
		Transaction: localTransactionID(req.Network, p),
		Network:     req.Network,
		Asset:       req.Asset,
		Payer:       payer,
		PayTo:       req.PayTo,
		Amount:      req.Amount,
		Nonce:       p.Authorization.Nonce,
		SettledAt:   f.now(),
	}
	rec := &localSettlement{settlement: s, fingerprint: fp, resp: x402.SettleResponse{
		Success:     true,
		Payer:       payer,
		Transaction: s.Transaction,
		Network:     req.Network,
		Amount:      req.Amount,
		Extra:       map[string]any{"onChain": false, "note": LocalSettlementNote},
	}}
	f.settled[key] = rec
	f.settlements = append(f.settlements, s)
	f.bind(id, fp)
	return rec.response(), nil
}

// answerLocked answers a settlement from what was recorded, if it can: a
// payment identifier bound to another payment is refused; an authorization
// (key) already settled gets ReasonNonceAlreadyUsed for other
// requirements, and the original response for the same payment or, once
// verified, for another signature of it. f.mu is held.
func (f *Local) answerLocked(id, fp, key string, req x402.PaymentRequirements, verified bool) (x402.SettleResponse, bool) {
	if bound, ok := f.ids[id]; id != "" && ok && bound != fp {
		return x402.SettleResponse{Success: false, ErrorReason: x402.ReasonPaymentIdentifierConflict, ErrorMessage: msgIdentifierConflict, Network: req.Network}, true
	}
	rec := f.settled[key]
	switch {
	case key == "" || rec == nil:
		return x402.SettleResponse{}, false
	case !rec.sameRequirements(req):
		return x402.SettleResponse{Success: false, ErrorReason: exact.ReasonNonceAlreadyUsed, ErrorMessage: "this authorization was already settled for other requirements",
			Payer: rec.settlement.Payer, Network: req.Network}, true
	case rec.fingerprint == fp || verified:
		f.bind(id, fp)
		return rec.response(), true
	}
	return x402.SettleResponse{}, false
}

// bind binds a payment identifier (if any, and not bound yet) to the
// payment fingerprint; f.mu is held.
func (f *Local) bind(id, fingerprint string) {
	if _, ok := f.ids[id]; id != "" && !ok {
		f.ids[id] = fingerprint
	}
}

// response returns a copy of the recorded settlement response.
func (r *localSettlement) response() x402.SettleResponse {
	resp := r.resp
	resp.Extra = maps.Clone(r.resp.Extra)
	resp.Extensions = maps.Clone(r.resp.Extensions)
	return resp
}

// sameRequirements reports whether req asks for what r settled: the same
// payTo, amount, asset and network (v1 names and CAIP-2 ids alike).
func (r *localSettlement) sameRequirements(req x402.PaymentRequirements) bool {
	s := r.settlement
	return wire.EqualAddressFold(s.PayTo, req.PayTo) && s.Amount == req.Amount && strings.EqualFold(s.Asset, req.Asset) &&
		sameNetwork(s.Network, req.Network)
}

// sameNetwork reports whether a and b name the same network.
func sameNetwork(a, b string) bool {
	if n, ok := x402.LookupNetwork(a); ok {
		a = n.CAIP2
	}
	if n, ok := x402.LookupNetwork(b); ok {
		b = n.CAIP2
	}
	return strings.EqualFold(a, b)
}

// Status implements StatusChecker from what this facilitator recorded:
// Used with the transaction and what it transferred when it settled the
// authorization (for any requirements), and Expired when its validBefore
// has passed by its clock. A payload that is not an EIP-3009 authorization
// is an error.
func (f *Local) Status(ctx context.Context, payload x402.PaymentPayload, req x402.PaymentRequirements) (x402.AuthorizationStatus, error) {
	if err := ctx.Err(); err != nil {
		return x402.AuthorizationStatus{}, fmt.Errorf("x402: local facilitator status: %w", err)
	}
	p, err := exact.ParseExactEVMPayload(payload.Payload)
	if err != nil {
		return x402.AuthorizationStatus{}, fmt.Errorf("x402: local facilitator status: %w", err)
	}
	var st x402.AuthorizationStatus
	if vb, ok := new(big.Int).SetString(p.Authorization.ValidBefore, 10); ok {
		st.Expired = vb.Cmp(big.NewInt(f.now().Unix())) <= 0
	} else {
		return x402.AuthorizationStatus{}, fmt.Errorf("x402: local facilitator status: validBefore %q is not a decimal number", clip.Bytes(p.Authorization.ValidBefore, 40))
	}
	key := exact.NonceKey(req.Network, req.Asset, p.Authorization.From, p.Authorization.Nonce)
	f.mu.Lock()
	rec := f.settled[key]
	f.mu.Unlock()
	if rec != nil {
		s := rec.settlement
		st.Used = true
		st.Transaction, st.Payer, st.PayTo, st.Amount, st.Asset, st.Network = s.Transaction, s.Payer, s.PayTo, s.Amount, s.Asset, s.Network
	}
	return st, nil
}

// Scheme implements x402.Mechanism: Local is the exact scheme's.
func (f *Local) Scheme() string { return x402.SchemeExact }

// Networks implements x402.Mechanism: the served networks.
func (f *Local) Networks() []string {
	ids := make([]string, len(f.networks))
	for i, n := range f.networks {
		ids[i] = n.CAIP2
	}
	return ids
}

// Supported implements Facilitator: the exact scheme on each served
// network, for x402 v2 (CAIP-2 ids) and v1 (network names), and the
// payment-identifier extension.
func (f *Local) Supported(ctx context.Context) (x402.SupportedResponse, error) {
	if err := ctx.Err(); err != nil {
		return x402.SupportedResponse{}, err
	}
	var kinds []x402.SupportedKind
	for _, n := range f.networks {
		kinds = append(kinds, x402.SupportedKind{X402Version: 2, Scheme: x402.SchemeExact, Network: n.CAIP2})
	}
	for _, n := range f.networks {
		kinds = append(kinds, x402.SupportedKind{X402Version: 1, Scheme: x402.SchemeExact, Network: n.V1Name})
	}
	return x402.SupportedResponse{Kinds: kinds, Extensions: []string{x402.ExtensionPaymentIdentifier}, Signers: map[string][]string{}}, nil
}

// Settlements returns a copy of the settlements recorded so far, oldest first.
func (f *Local) Settlements() []Settlement {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Settlement(nil), f.settlements...)
}

// invalidVerifyResponse turns a Verifier error into an IsValid false answer.
func invalidVerifyResponse(payer string, err error) x402.VerifyResponse {
	if ve, ok := err.(*exact.VerifyError); ok {
		return x402.VerifyResponse{IsValid: false, InvalidReason: ve.Reason, InvalidMessage: ve.Message, Payer: payer}
	}
	return x402.VerifyResponse{IsValid: false, InvalidReason: x402.ReasonUnexpectedVerifyError, InvalidMessage: err.Error(), Payer: payer}
}

// localTransactionID derives a deterministic id from the network, the
// authorization and its signature: "local-dev:" + hex(keccak256(...)).
func localTransactionID(network string, p exact.ExactEVMPayload) string {
	a := p.Authorization
	id := strings.Join([]string{"x402-local-settlement", exact.NonceKey(network, "", a.From, a.Nonce), strings.ToLower(a.To),
		a.Value, a.ValidAfter, a.ValidBefore, strings.ToLower(p.Signature)}, "\x00")
	h := crypto.Keccak256Hash([]byte(id))
	return LocalTransactionPrefix + hex.EncodeToString(h[:])
}

// knownNetworkList names the known networks for error messages.
func knownNetworkList() string {
	var ids []string
	for _, n := range x402.Networks() {
		ids = append(ids, n.CAIP2)
	}
	return strings.Join(ids, ", ")
}

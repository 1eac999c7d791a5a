// Package server is the exact scheme's part in a resource server (an
// x402.ServerScheme): its "accepts" entry (USDC, the amount in atomic
// units, the token's EIP-712 domain in extra), the local checks of an
// EIP-3009 authorization (exact.Verifier), the payment's identity (the
// authorization's nonce key, kept until validBefore), settlement through a
// facilitator and the resolution of an interrupted settlement by a status
// query or by presenting it again to a deduplicating facilitator.
package server

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"strings"
	"time"

	"github.com/seed1284c1d2/svc/x402"
	"github.com/seed1284c1d2/svc/x402/exact"
	"github.com/seed1284c1d2/svc/x402/internal/clip"
)

// Config configures a Server. Facilitator is required.
type Config struct {
	// Facilitator verifies and settles payments. When it also implements
	// x402.StatusChecker, Resolve asks it before presenting a settlement
	// again.
	Facilitator x402.Facilitator
	// Status, when set, is the status query Resolve asks what became of
	// an interrupted settlement, instead of the facilitator's own: for a
	// facilitator that neither deduplicates nor tells a status (the x402
	// HTTP API has no status endpoint), a reader of the chain itself
	// (onchain.StatusReader). A re-presented settlement the facilitator
	// refuses ("already used") is then resolved from it too.
	Status x402.StatusChecker
	// Deduplicates says the facilitator returns the original result for a
	// settlement presented again (svc's local and on-chain facilitators
	// do): Resolve then takes a refusal of a re-presented settlement as
	// proof that nothing was settled. Without it such settlements are
	// resolved from the status query, if there is one, and are otherwise
	// Unknown, for the operator.
	Deduplicates bool
	// Verifier runs the local checks; nil means a Verifier with Now.
	Verifier *exact.Verifier
	// SkipFacilitatorVerify skips the facilitator's /verify after the local
	// checks, for a facilitator whose verify adds nothing to them (a local
	// one); settlement still verifies.
	SkipFacilitatorVerify bool
	// ContractWallets accepts payments from smart-contract wallets: a
	// signature the local checks cannot accept (not a 65-byte ECDSA
	// signature of authorization.from, see
	// exact.Verifier.VerifyExceptSignature) is left to the facilitator's
	// verify, which must check signatures on chain (ERC-1271): such a
	// payment is x402.Payment.Unchecked. Incompatible with
	// SkipFacilitatorVerify.
	ContractWallets bool
	// Networks restricts the networks the scheme is offered and accepted
	// on (CAIP-2 ids or v1 names); empty means every known network.
	Networks []string
	// Now is the clock of the default Verifier; nil means time.Now.
	Now func() time.Time
}

// Server is the exact scheme on EVM networks for a resource server. Safe
// for concurrent use.
type Server struct {
	cfg      Config
	networks []string
}

var _ x402.ServerScheme = (*Server)(nil)

// New checks cfg and fills in the defaults.
func New(cfg Config) (*Server, error) {
	if cfg.Facilitator == nil {
		return nil, errors.New("exact server: Config.Facilitator is required")
	}
	if cfg.ContractWallets && cfg.SkipFacilitatorVerify {
		return nil, errors.New("exact server: ContractWallets leaves signatures to the facilitator's verify, which SkipFacilitatorVerify skips")
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Verifier == nil {
		cfg.Verifier = &exact.Verifier{Now: cfg.Now}
	}
	s := &Server{cfg: cfg}
	if len(cfg.Networks) == 0 {
		for _, n := range x402.Networks() {
			s.networks = append(s.networks, n.CAIP2)
		}
	}
	for _, id := range cfg.Networks {
		n, ok := x402.LookupNetwork(id)
		if !ok {
			return nil, &x402.ConfigError{Field: "Networks", Message: fmt.Sprintf("unknown network %q", clip.Bytes(id, 40))}
		}
		s.networks = append(s.networks, n.CAIP2)
	}
	return s, nil
}

// Scheme implements x402.Mechanism.
func (s *Server) Scheme() string { return x402.SchemeExact }

// Networks implements x402.Mechanism.
func (s *Server) Networks() []string { return append([]string(nil), s.networks...) }

// Facilitator returns the facilitator payments are verified and settled by.
func (s *Server) Facilitator() x402.Facilitator { return s.cfg.Facilitator }

// Requirements implements x402.ServerScheme: route.Requirements.
func (s *Server) Requirements(route x402.Route) (x402.PaymentRequirements, error) {
	return route.Requirements()
}

// Check implements x402.ServerScheme: exact.Verifier's checks (the
// signature left to the facilitator with ContractWallets), and the
// authorization's identity: its nonce key, kept until validBefore.
func (s *Server) Check(ctx context.Context, payload x402.PaymentPayload, req x402.PaymentRequirements) (x402.Payment, error) {
	var payer string
	var sigErr, err error
	if s.cfg.ContractWallets {
		payer, sigErr, err = s.cfg.Verifier.VerifyExceptSignature(payload, req)
	} else {
		payer, err = s.cfg.Verifier.Verify(payload, req)
	}
	if err != nil {
		return x402.Payment{Payer: payer}, err
	}
	ep, err := exact.ParseExactEVMPayload(payload.Payload)
	if err != nil { // cannot happen after Verify
		return x402.Payment{Payer: payer}, &exact.VerifyError{Reason: exact.ReasonInvalidPayload, Message: "payload does not parse"}
	}
	a := ep.Authorization
	return x402.Payment{
		Key:        exact.NonceKey(req.Network, req.Asset, a.From, a.Nonce),
		Payer:      a.From,
		ID:         a.Nonce,
		Amount:     req.Amount,
		KeepUntil:  unixTime(a.ValidBefore),
		Unchecked:  sigErr != nil,
		UsedReason: exact.ReasonNonceAlreadyUsed,
	}, nil
}

// Verify implements x402.ServerScheme: the facilitator's verify, skipped
// (SkipFacilitatorVerify) for a payment whose signature was checked
// locally.
func (s *Server) Verify(ctx context.Context, payload x402.PaymentPayload, req x402.PaymentRequirements, pm x402.Payment) (x402.VerifyResponse, error) {
	if s.cfg.SkipFacilitatorVerify && !pm.Unchecked {
		return x402.VerifyResponse{IsValid: true, Payer: pm.Payer}, nil
	}
	return s.cfg.Facilitator.Verify(ctx, payload, req)
}

// Settle implements x402.ServerScheme: the facilitator's settle. A refusal
// with a transaction, or saying the settlement is pending, is Undecided
// (something may be on chain); "nonce already used" is Failed (used
// elsewhere before); any other refusal is Refused (nothing reached the
// chain).
func (s *Server) Settle(ctx context.Context, payload x402.PaymentPayload, req x402.PaymentRequirements, pm x402.Payment) (x402.Settlement, error) {
	sr, err := s.cfg.Facilitator.Settle(ctx, payload, req)
	switch {
	case err != nil:
		return x402.Settlement{}, err
	case sr.Success:
		return x402.Settlement{Status: x402.Settled, Response: sr}, nil
	case sr.Transaction != "" || sr.ErrorReason == x402.ReasonSettlementPending:
		return x402.Settlement{Status: x402.Undecided, Response: sr, Reason: sr.ErrorReason}, nil
	case sr.ErrorReason == exact.ReasonNonceAlreadyUsed:
		return x402.Settlement{Status: x402.Failed, Response: sr}, nil
	}
	return x402.Settlement{Status: x402.Refused, Response: sr}, nil
}

// Resolve implements x402.ServerScheme. With a status query (Config.Status
// or the facilitator's), the authorization's status decides first:
// Settled when it was used by a transfer of the amount to payTo, Unknown
// when it was used otherwise, Released when it is unused and expired.
// Otherwise (or when it is unused and valid) the settlement is presented
// again: a success is Settled; a refusal of a deduplicating facilitator
// (other than "already used") is Released; with a status query, a refusal
// is decided by asking it again; without one, it is Unknown.
func (s *Server) Resolve(ctx context.Context, payload x402.PaymentPayload, req x402.PaymentRequirements, payer string) x402.Settlement {
	sc := s.StatusChecker()
	if sc != nil {
		if st, decided := s.byStatus(ctx, sc, payload, req, payer); decided {
			return st
		}
		// Unused and still valid: present the settlement again.
	}
	sr, err := s.cfg.Facilitator.Settle(ctx, payload, req)
	switch {
	case err != nil:
		return x402.Settlement{Status: x402.Undecided, Reason: "settling again failed: " + clip.Bytes(err.Error(), 200)}
	case sr.Success:
		return x402.Settlement{Status: x402.Settled, Response: sr}
	case sr.Transaction != "" || sr.ErrorReason == x402.ReasonSettlementPending:
		return x402.Settlement{Status: x402.Undecided, Reason: "settlement still pending: " + clip.Bytes(sr.ErrorReason, 80)}
	case s.cfg.Deduplicates && sr.ErrorReason != exact.ReasonNonceAlreadyUsed:
		// A deduplicating facilitator would have returned the original
		// success: nothing was settled.
		return x402.Settlement{Status: x402.Released, Reason: "settling again refused: " + clip.Bytes(sr.ErrorReason, 100)}
	case sc != nil:
		// A facilitator that does not deduplicate refuses our own
		// settlement too ("already used", a reverted second transfer):
		// the status query tells whose it was, now that it was refused.
		if st, decided := s.byStatus(ctx, sc, payload, req, payer); decided {
			return st
		}
		return x402.Settlement{Status: x402.Undecided,
			Reason: "settling again was refused and the authorization is unused and valid: " + clip.Bytes(sr.ErrorReason, 80)}
	case sr.ErrorReason == exact.ReasonNonceAlreadyUsed:
		// A facilitator that does not deduplicate says this of our own
		// settlement too: not proof either way.
		return x402.Settlement{Status: x402.Unknown, Reason: "settling again: " + sr.ErrorReason}
	}
	// Another facilitator may refuse a settlement it made (the funds
	// moved already): not proof either way.
	return x402.Settlement{Status: x402.Unknown, Reason: "settling again refused: " + clip.Bytes(sr.ErrorReason, 100)}
}

// byStatus resolves a settlement from the status query sc; decided is
// false when the authorization is unused and still valid. A failed query
// is Undecided.
func (s *Server) byStatus(ctx context.Context, sc x402.StatusChecker, payload x402.PaymentPayload, req x402.PaymentRequirements, payer string) (x402.Settlement, bool) {
	as, err := sc.Status(ctx, payload, req)
	switch {
	case err != nil:
		return x402.Settlement{Status: x402.Undecided, Reason: "the status query failed: " + clip.Bytes(err.Error(), 200)}, true
	case as.Used && as.Transaction != "" && paysUs(as, req):
		sr := x402.SettleResponse{Success: true, Transaction: as.Transaction, Network: req.Network, Payer: payer, Amount: req.Amount}
		return x402.Settlement{Status: x402.Settled, Response: sr}, true
	case as.Used:
		return x402.Settlement{Status: x402.Unknown, Reason: "the authorization was used, but not by a transfer of the amount to payTo"}, true
	case as.Expired:
		return x402.Settlement{Status: x402.Released, Reason: "never settled, and expired"}, true
	}
	return x402.Settlement{}, false
}

// StatusChecker returns the status query Resolve asks what became of an
// interrupted settlement: Config.Status, else the facilitator when it
// implements x402.StatusChecker, else nil (Resolve then presents the
// settlement again and relies on the facilitator deduplicating).
func (s *Server) StatusChecker() x402.StatusChecker {
	if s.cfg.Status != nil {
		return s.cfg.Status
	}
	sc, _ := s.cfg.Facilitator.(x402.StatusChecker)
	return sc
}

// SameProof implements x402.ServerScheme: the same signature.
func (s *Server) SameProof(recorded, presented x402.PaymentPayload) bool {
	a, err1 := exact.ParseExactEVMPayload(recorded.Payload)
	b, err2 := exact.ParseExactEVMPayload(presented.Payload)
	return err1 == nil && err2 == nil && a.Signature == b.Signature
}

// paysUs reports whether a status's transfer is the payment req asks for.
func paysUs(st x402.AuthorizationStatus, req x402.PaymentRequirements) bool {
	if st.PayTo != "" && !strings.EqualFold(st.PayTo, req.PayTo) {
		return false
	}
	if st.Amount != "" && !sameAmount(st.Amount, req.Amount) {
		return false
	}
	return st.PayTo != "" && st.Amount != ""
}

// sameAmount compares two decimal amounts numerically (leading zeros aside).
func sameAmount(a, b string) bool {
	return strings.TrimLeft(a, "0") == strings.TrimLeft(b, "0")
}

// unixTime turns validBefore (decimal unix seconds) into a time, capped at
// the year 9999.
func unixTime(s string) time.Time {
	const maxUnix = 253402300799 // 9999-12-31T23:59:59Z
	v, ok := new(big.Int).SetString(s, 10)
	if !ok || v.Sign() < 0 || !v.IsInt64() || v.Int64() > maxUnix {
		return time.Unix(maxUnix, 0)
	}
	return time.Unix(v.Int64(), 0)
}

// reasonInsufficientBalance is the reason of a payer whose balance does not
// cover the transfer, as the on-chain facilitators give it.
const reasonInsufficientBalance = "invalid_exact_evm_insufficient_balance"

// RefusalClass implements x402.ReasonClassifier for exact's reasons.
func (s *Server) RefusalClass(reason string) x402.RefusalClass {
	switch reason {
	case exact.ReasonInvalidSignature, exact.ReasonSignatureFormat, exact.ReasonMissingSignature, exact.ReasonInvalidPayload,
		exact.ReasonNonceFormat, exact.ReasonMissingEIP712Domain, exact.ReasonTokenNameMismatch, exact.ReasonTokenVersionMismatch:
		return x402.RefusalSignature
	case exact.ReasonValidBefore, exact.ReasonValidAfter:
		return x402.RefusalExpired
	case exact.ReasonNonceAlreadyUsed:
		return x402.RefusalUsed
	case exact.ReasonNetworkMismatch:
		return x402.RefusalNetwork
	case exact.ReasonValueMismatch:
		return x402.RefusalAmount
	case reasonInsufficientBalance:
		return x402.RefusalFunds
	}
	return x402.RefusalOther
}

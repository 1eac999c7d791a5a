package facilitator

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/seed1284c1d2/svc/x402"
	"github.com/seed1284c1d2/svc/x402/internal/clip"
)

// Mux is a facilitator of several payment schemes: it dispatches each
// payment, by the scheme and network of its requirements, to the
// x402.FacilitatorScheme registered for them (Local and the on-chain
// facilitator are the exact scheme's), and Supported lists the kinds,
// extensions and signers of all. A payment of no registered scheme is
// refused (x402.ReasonUnsupportedScheme). Serve it with NewHandler like
// any Facilitator. Safe for concurrent use.
type Mux struct {
	schemes []x402.FacilitatorScheme
	kinds   map[muxKind]x402.FacilitatorScheme
}

// muxKind is a registered (scheme, CAIP-2 network).
type muxKind struct{ scheme, network string }

var (
	_ x402.Facilitator   = (*Mux)(nil)
	_ x402.StatusChecker = (*Mux)(nil)
)

// NewMux registers schemes, each on its networks; two for one (scheme,
// network) are refused.
func NewMux(schemes ...x402.FacilitatorScheme) (*Mux, error) {
	m := &Mux{schemes: slices.Clone(schemes), kinds: make(map[muxKind]x402.FacilitatorScheme)}
	for i, s := range schemes {
		if s == nil {
			return nil, fmt.Errorf("facilitator: mux: scheme %d is nil", i)
		}
		for _, n := range s.Networks() {
			k := muxKind{s.Scheme(), x402.CAIP2(n)}
			if m.kinds[k] != nil {
				return nil, fmt.Errorf("facilitator: mux: scheme %s is registered twice on %s", clip.Bytes(k.scheme, 40), clip.Bytes(k.network, 40))
			}
			m.kinds[k] = s
		}
	}
	if len(m.kinds) == 0 {
		return nil, errors.New("facilitator: mux: no scheme registered on any network")
	}
	return m, nil
}

// scheme returns the scheme registered for req, nil if none.
func (m *Mux) scheme(req x402.PaymentRequirements) x402.FacilitatorScheme {
	return m.kinds[muxKind{req.Scheme, x402.CAIP2(req.Network)}]
}

// unsupported is the refusal message of a payment of no registered scheme.
func unsupported(req x402.PaymentRequirements) string {
	return fmt.Sprintf("scheme %q on network %q is not supported by this facilitator", clip.Bytes(req.Scheme, 40), clip.Bytes(req.Network, 40))
}

// Verify implements x402.Facilitator.
func (m *Mux) Verify(ctx context.Context, payload x402.PaymentPayload, req x402.PaymentRequirements) (x402.VerifyResponse, error) {
	s := m.scheme(req)
	if s == nil {
		return x402.VerifyResponse{IsValid: false, InvalidReason: x402.ReasonUnsupportedScheme, InvalidMessage: unsupported(req)}, nil
	}
	return s.Verify(ctx, payload, req)
}

// Settle implements x402.Facilitator.
func (m *Mux) Settle(ctx context.Context, payload x402.PaymentPayload, req x402.PaymentRequirements) (x402.SettleResponse, error) {
	s := m.scheme(req)
	if s == nil {
		return x402.SettleResponse{Success: false, ErrorReason: x402.ReasonUnsupportedScheme, ErrorMessage: unsupported(req), Network: req.Network}, nil
	}
	return s.Settle(ctx, payload, req)
}

// Status implements x402.StatusChecker for the schemes whose facilitator
// tells a status; for the others it is an error.
func (m *Mux) Status(ctx context.Context, payload x402.PaymentPayload, req x402.PaymentRequirements) (x402.AuthorizationStatus, error) {
	sc, ok := m.scheme(req).(x402.StatusChecker)
	if !ok {
		return x402.AuthorizationStatus{}, fmt.Errorf("facilitator: mux: no status query for %s", unsupported(req))
	}
	return sc.Status(ctx, payload, req)
}

// Supported implements x402.Facilitator: every registered scheme's kinds,
// extensions and signers, in registration order.
func (m *Mux) Supported(ctx context.Context) (x402.SupportedResponse, error) {
	out := x402.SupportedResponse{Extensions: []string{}, Signers: map[string][]string{}}
	for _, s := range m.schemes {
		sr, err := s.Supported(ctx)
		if err != nil {
			return x402.SupportedResponse{}, fmt.Errorf("facilitator: mux: %s: %w", clip.Bytes(s.Scheme(), 40), err)
		}
		out.Kinds = append(out.Kinds, sr.Kinds...)
		for _, e := range sr.Extensions {
			if !slices.Contains(out.Extensions, e) {
				out.Extensions = append(out.Extensions, e)
			}
		}
		for _, k := range slices.Sorted(maps.Keys(sr.Signers)) {
			for _, a := range sr.Signers[k] {
				if !slices.Contains(out.Signers[k], a) {
					out.Signers[k] = append(out.Signers[k], a)
				}
			}
		}
	}
	return out, nil
}

package facilitator

import (
	"context"
	"testing"

	"github.com/seed1284c1d2/svc/x402"
)

// toyScheme is a facilitator scheme of this test: it accepts every payment
// of its scheme on Base and counts the calls.
type toyScheme struct{ verifies, settles int }

func (s *toyScheme) Scheme() string     { return "toy" }
func (s *toyScheme) Networks() []string { return []string{"base"} }

func (s *toyScheme) Verify(context.Context, x402.PaymentPayload, x402.PaymentRequirements) (x402.VerifyResponse, error) {
	s.verifies++
	return x402.VerifyResponse{IsValid: true, Payer: "toy payer"}, nil
}

func (s *toyScheme) Settle(_ context.Context, _ x402.PaymentPayload, req x402.PaymentRequirements) (x402.SettleResponse, error) {
	s.settles++
	return x402.SettleResponse{Success: true, Transaction: "toy", Network: req.Network}, nil
}

func (s *toyScheme) Supported(context.Context) (x402.SupportedResponse, error) {
	return x402.SupportedResponse{Kinds: []x402.SupportedKind{{X402Version: 2, Scheme: "toy", Network: x402.NetworkBase}},
		Extensions: []string{"toy-extension"}, Signers: map[string][]string{"eip155:*": {"0xtoy"}}}, nil
}

// TestMux dispatches payments by scheme and network: exact to Local, the
// toy scheme to its own facilitator; other schemes and networks are
// refused as unsupported; Supported lists the kinds of both; a scheme
// registered twice on one network is refused.
func TestMux(t *testing.T) {
	ctx := context.Background()
	local, err := NewLocal(LocalConfig{Networks: []string{x402.NetworkBase}, Now: testClock})
	if err != nil {
		t.Fatal(err)
	}
	toy := &toyScheme{}
	m, err := NewMux(local, toy)
	if err != nil {
		t.Fatal(err)
	}
	req := testRequirements(t, x402.NetworkBase)
	p, _ := testPayment(t, newTestKey(t), req)
	if vr, err := m.Verify(ctx, p, req); err != nil || !vr.IsValid || vr.Payer == "toy payer" {
		t.Fatalf("exact verify: %+v %v", vr, err)
	}
	if sr, err := m.Settle(ctx, p, req); err != nil || !sr.Success || len(local.Settlements()) != 1 {
		t.Fatalf("exact settle: %+v %v", sr, err)
	}
	if st, err := m.Status(ctx, p, req); err != nil || !st.Used {
		t.Fatalf("exact status: %+v %v", st, err)
	}

	toyReq := req
	toyReq.Scheme = "toy"
	if vr, err := m.Verify(ctx, p, toyReq); err != nil || !vr.IsValid || vr.Payer != "toy payer" {
		t.Fatalf("toy verify: %+v %v", vr, err)
	}
	if sr, err := m.Settle(ctx, p, toyReq); err != nil || sr.Transaction != "toy" || toy.settles != 1 || len(local.Settlements()) != 1 {
		t.Fatalf("toy settle: %+v %v", sr, err)
	}
	if _, err := m.Status(ctx, p, toyReq); err == nil {
		t.Fatal("a status of a scheme without one")
	}

	for _, other := range []x402.PaymentRequirements{
		{Scheme: "upto", Network: x402.NetworkBase},
		{Scheme: "toy", Network: x402.NetworkBaseSepolia},
	} {
		if vr, err := m.Verify(ctx, p, other); err != nil || vr.IsValid || vr.InvalidReason != x402.ReasonUnsupportedScheme {
			t.Fatalf("verify of %s on %s: %+v %v", other.Scheme, other.Network, vr, err)
		}
		if sr, err := m.Settle(ctx, p, other); err != nil || sr.Success || sr.ErrorReason != x402.ReasonUnsupportedScheme {
			t.Fatalf("settle of %s on %s: %+v %v", other.Scheme, other.Network, sr, err)
		}
	}
	if toy.verifies != 1 || toy.settles != 1 {
		t.Fatalf("toy calls: %+v", toy)
	}

	sup, err := m.Supported(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, k := range sup.Kinds {
		kinds = append(kinds, k.Scheme+"@"+k.Network)
	}
	if want := "[exact@eip155:8453 exact@base toy@eip155:8453]"; len(kinds) != 3 || "["+kinds[0]+" "+kinds[1]+" "+kinds[2]+"]" != want ||
		len(sup.Extensions) != 2 || len(sup.Signers["eip155:*"]) != 1 {
		t.Fatalf("supported: %+v", sup)
	}

	if _, err := NewMux(local, toy, &toyScheme{}); err == nil {
		t.Fatal("a scheme registered twice on one network accepted")
	}
}

package server_test

import (
	"context"
	"crypto/ecdsa"
	"encoding/json"
	"errors"
	"math/big"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"

	"github.com/seed1284c1d2/svc/x402"
	"github.com/seed1284c1d2/svc/x402/batch"
	"github.com/seed1284c1d2/svc/x402/batch/server"
)

// localOnly fails the test when the scheme asks the facilitator: every
// voucher here is one the channel's fresh record can check.
type localOnly struct{ t *testing.T }

func (f localOnly) Verify(context.Context, x402.PaymentPayload, x402.PaymentRequirements) (x402.VerifyResponse, error) {
	f.t.Error("the facilitator was asked to verify")
	return x402.VerifyResponse{}, errors.New("no facilitator")
}

func (f localOnly) Settle(context.Context, x402.PaymentPayload, x402.PaymentRequirements) (x402.SettleResponse, error) {
	f.t.Error("the facilitator was asked to settle")
	return x402.SettleResponse{}, errors.New("no facilitator")
}

func (f localOnly) Supported(context.Context) (x402.SupportedResponse, error) {
	return x402.SupportedResponse{}, nil
}

// fixture is a server whose store holds one channel charged once, with a
// fresh mirror of the escrow.
type fixture struct {
	srv   *server.Server
	store *server.MemoryStore
	req   x402.PaymentRequirements
	key   *ecdsa.PrivateKey
	ch    batch.Channel
	d     batch.Domain
	now   time.Time
}

func newFixture(t *testing.T, oc batch.OnChain) *fixture {
	t.Helper()
	f := &fixture{store: server.NewMemoryStore(), d: batch.NewDomain(8453), now: time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)}
	auth, _ := crypto.GenerateKey()
	var err error
	f.srv, err = server.New(server.Config{Facilitator: localOnly{t}, Store: f.store, Key: auth, Now: func() time.Time { return f.now }})
	if err != nil {
		t.Fatal(err)
	}
	f.req, err = f.srv.Requirements(x402.Route{Price: "0.001", PayTo: "0x00000000000000000000000000000000000000aa"})
	if err != nil {
		t.Fatal(err)
	}
	f.key, _ = crypto.GenerateKey()
	addr := crypto.PubkeyToAddress(f.key.PublicKey)
	f.ch = batch.Channel{Payer: addr, PayerAuthorizer: addr, Receiver: common.HexToAddress(f.req.PayTo), ReceiverAuthorizer: f.srv.ReceiverAuthorizer(),
		Token: common.HexToAddress(f.req.Asset), WithdrawDelay: server.DefaultWithdrawDelay}
	first := f.voucher(t, 1000)
	rec := batch.ChannelRecord{Network: x402.NetworkBase, ID: f.d.ChannelID(f.ch), Channel: f.ch, Charged: big.NewInt(1000), SignedMax: big.NewInt(1000),
		Signature: common.FromHex(first.Voucher.Signature), OnChain: oc, SyncedAt: f.now, LastRequestAt: f.now}
	if ok, err := f.store.Commit(context.Background(), rec, new(big.Int), ""); err != nil || !ok {
		t.Fatal(ok, err)
	}
	return f
}

func (f *fixture) voucher(t *testing.T, max int64) batch.Payload {
	t.Helper()
	p, err := batch.NewVoucherPayload(f.key, f.d, f.ch, big.NewInt(max))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func (f *fixture) payment(t *testing.T, max int64) x402.PaymentPayload {
	t.Helper()
	raw, _ := json.Marshal(f.voucher(t, max))
	return x402.PaymentPayload{X402Version: 2, Accepted: f.req, Payload: raw}
}

func onChain(balance int64) batch.OnChain {
	return batch.OnChain{Balance: big.NewInt(balance), TotalClaimed: new(big.Int), WithdrawAmount: new(big.Int), RefundNonce: new(big.Int)}
}

func reasonOf(err error) string {
	var rf x402.Refusal
	if errors.As(err, &rf) {
		return rf.RefusalReason()
	}
	return ""
}

// TestVoucherCheckedAndChargedLocally: a voucher of a channel with a fresh
// mirror is checked and charged without the facilitator; its identity is
// the channel's cumulative amount, and a retry of it passes the checks for
// the journal to replay.
func TestVoucherCheckedAndChargedLocally(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, onChain(100_000))
	p := f.payment(t, 2000)
	pm, err := f.srv.Check(ctx, p, f.req)
	if err != nil || pm.Amount != "1000" || pm.Unchecked || pm.Operation != nil || pm.Payer != f.ch.Payer.Hex() {
		t.Fatalf("check: %+v %v", pm, err)
	}
	if vr, err := f.srv.Verify(ctx, p, f.req, pm); err != nil || !vr.IsValid {
		t.Fatalf("verify: %+v %v", vr, err)
	}
	st, err := f.srv.Settle(ctx, p, f.req, pm)
	if err != nil || st.Status != x402.Settled || !st.Verbatim || st.Response.Amount != "" || st.Response.Transaction != "" {
		t.Fatalf("settle: %+v %v", st, err)
	}
	h, _, _ := f.store.Channel(ctx, x402.NetworkBase, f.d.ChannelID(f.ch))
	if h.Charged.Int64() != 2000 || h.Holder != "" {
		t.Fatalf("after the charge: %+v", h)
	}
	if again, err := f.srv.Check(ctx, p, f.req); err != nil || again.Key != pm.Key {
		t.Fatalf("the retry's check: %+v %v", again, err)
	}
	if st := f.srv.Resolve(ctx, p, f.req, pm.Payer); st.Status != x402.Settled {
		t.Fatalf("resolving a charged voucher: %+v", st)
	}
}

// TestVoucherRefusedNearWithdrawal: a voucher of a channel whose pending
// withdrawal can be finalized within the safety margin is refused, and
// one beyond the balance too.
func TestVoucherRefusedNearWithdrawal(t *testing.T) {
	ctx := context.Background()
	oc := onChain(100_000)
	f := newFixture(t, oc)
	oc.WithdrawRequestedAt = uint64(f.now.Add(-12 * time.Minute).Unix()) // 15 min delay: ends in 3 min
	if err := f.store.Mirror(ctx, x402.NetworkBase, f.d.ChannelID(f.ch), oc, f.now.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
	p := f.payment(t, 2000)
	pm, err := f.srv.Check(ctx, p, f.req)
	if err != nil {
		t.Fatal(err)
	}
	if vr, err := f.srv.Verify(ctx, p, f.req, pm); err != nil || vr.IsValid || vr.InvalidReason != batch.ReasonCumulativeExceedsBalance {
		t.Fatalf("a voucher as the withdrawal ends: %+v %v", vr, err)
	}
	// The refusal's release frees the hold.
	f.srv.Release(ctx, p, f.req, pm)
	if h, _, _ := f.store.Channel(ctx, x402.NetworkBase, f.d.ChannelID(f.ch)); h.Holder != "" {
		t.Fatalf("the hold survived the release: %q", h.Holder)
	}
}

// TestChannelBusy: while one request of a channel holds it, another is
// refused as busy, in the checks and in the verification; the release of
// the first frees the channel.
func TestChannelBusy(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, onChain(100_000))
	p := f.payment(t, 2000)
	pm, err := f.srv.Check(ctx, p, f.req)
	if err != nil {
		t.Fatal(err)
	}
	if vr, err := f.srv.Verify(ctx, p, f.req, pm); err != nil || !vr.IsValid {
		t.Fatalf("verify: %+v %v", vr, err)
	}
	// Another request of the same channel (another tool at another price).
	other := f.req
	other.Amount = "500"
	q := f.payment(t, 1500)
	q.Accepted = other
	if _, err := f.srv.Check(ctx, q, other); reasonOf(err) != batch.ReasonChannelBusy {
		t.Fatalf("a second request while the channel is held: %v", err)
	}
	f.now = f.now.Add(server.DefaultHoldFor + time.Second) // the hold's lease ended
	if _, err := f.srv.Check(ctx, q, other); err != nil {
		t.Fatalf("after the hold's lease: %v", err)
	}
	f.now = f.now.Add(-server.DefaultHoldFor - time.Second)
	f.srv.Release(ctx, p, f.req, pm)
	qm, err := f.srv.Check(ctx, q, other)
	if err != nil {
		t.Fatalf("after the release: %v", err)
	}
	if vr, err := f.srv.Verify(ctx, q, other, qm); err != nil || !vr.IsValid {
		t.Fatalf("the second request after the release: %+v %v", vr, err)
	}
}

// TestCorrectiveRefusal: a voucher whose cumulative amount is not the
// channel's charged amount plus the price is refused with the channel's
// state and latest voucher in the corrected requirement.
func TestCorrectiveRefusal(t *testing.T) {
	f := newFixture(t, onChain(100_000))
	_, err := f.srv.Check(context.Background(), f.payment(t, 5000), f.req)
	var cr *x402.CorrectiveRefusal
	if !errors.As(err, &cr) || cr.Reason != batch.ReasonCumulativeAmountMismatch {
		t.Fatalf("a voucher beyond the next: %v", err)
	}
	e, err := batch.ParseExtra(cr.Accepted.Extra)
	if err != nil || e.ChannelState == nil || e.ChannelState.ChargedCumulativeAmount != "1000" || e.VoucherState == nil ||
		e.VoucherState.SignedMaxClaimable != "1000" || e.VoucherState.Signature != f.voucher(t, 1000).Voucher.Signature {
		t.Fatalf("the corrected requirement: %+v %v", cr.Accepted.Extra, err)
	}
}

// TestConfig: the withdrawal delay's bounds and a receiver authorizer are
// required.
func TestConfig(t *testing.T) {
	st := server.NewMemoryStore()
	key, _ := crypto.GenerateKey()
	for _, c := range []server.Config{
		{Facilitator: localOnly{t}, Store: st},
		{Facilitator: localOnly{t}, Store: st, Key: key, WithdrawDelay: 60},
		{Facilitator: localOnly{t}, Store: st, Key: key, WithdrawDelay: batch.MaxWithdrawDelay + 1},
		{Facilitator: localOnly{t}, Store: st, Key: key, MinDeposit: "-1"},
		{Store: st, Key: key},
	} {
		if _, err := server.New(c); err == nil {
			t.Errorf("accepted %+v", c)
		}
	}
}

package onchain_test

import (
	"context"
	"crypto/ecdsa"
	"encoding/json"
	"math/big"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"

	"github.com/seed1284c1d2/svc/internal/anviltest"
	"github.com/seed1284c1d2/svc/x402"
	"github.com/seed1284c1d2/svc/x402/batch"
	"github.com/seed1284c1d2/svc/x402/exact"
	"github.com/seed1284c1d2/svc/x402/facilitator"
	"github.com/seed1284c1d2/svc/x402/facilitator/onchain"
)

// batchEnv is a chain with the on-chain facilitator, its batch-settlement
// facilitator holding a receiver authorizer key, and requirements of 1000
// atomic USDC a call naming that authorizer, paid to a fresh payTo.
type batchEnv struct {
	*env
	f       *onchain.Facilitator
	bf      *onchain.BatchFacilitator
	authKey *ecdsa.PrivateKey
	auth    common.Address
	payTo   common.Address
	req     x402.PaymentRequirements
	d       batch.Domain
}

func newBatchEnv(t testing.TB) *batchEnv {
	t.Helper()
	e := &batchEnv{env: newEnv(t, anviltest.Options{})}
	e.f = e.facilitator(t, nil)
	e.authKey, e.auth = anviltest.NewKey(t)
	e.bf = e.f.Batch(onchain.BatchConfig{ReceiverAuthorizerKey: e.authKey})
	_, e.payTo = anviltest.NewKey(t)
	e.req = e.requirements(t, e.auth)
	e.d = batch.NewDomain(anviltest.ChainID)
	return e
}

// requirements are batch-settlement requirements naming authorizer.
func (e *batchEnv) requirements(t testing.TB, authorizer common.Address) x402.PaymentRequirements {
	t.Helper()
	req, err := batch.NewRequirements(batch.Offer{Network: x402.NetworkBase, Amount: "1000", PayTo: e.payTo.Hex(), ReceiverAuthorizer: authorizer, WithdrawDelay: 900})
	if err != nil {
		t.Fatal(err)
	}
	return req
}

// channel opens a channel of the payer under e.req with a random salt.
func (e *batchEnv) channel(t testing.TB) batch.Channel {
	t.Helper()
	ch, _, err := batch.NewChannel(e.payerKey, e.req, anviltest.RandomSalt(t))
	if err != nil {
		t.Fatal(err)
	}
	return ch
}

// pp wraps a scheme payload (any JSON shape) accepted for e.req.
func (e *batchEnv) pp(t testing.TB, v any) x402.PaymentPayload {
	t.Helper()
	return x402.PaymentPayload{X402Version: 2, Accepted: e.req, Payload: mustJSON(t, v)}
}

// nonce is the relayer's transaction count (pending): it moves only when
// the facilitator sends a transaction.
func (e *batchEnv) nonce(t testing.TB) uint64 {
	t.Helper()
	n, err := e.chain.Client.PendingNonceAt(context.Background(), e.relayer)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func (e *batchEnv) deposit(t testing.TB, ch batch.Channel, maxClaimable, amount int64) batch.Payload {
	t.Helper()
	p, err := batch.NewDepositPayload(e.payerKey, e.req, ch, big.NewInt(maxClaimable), big.NewInt(amount), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func (e *batchEnv) voucher(t testing.TB, key *ecdsa.PrivateKey, ch batch.Channel, maxClaimable int64) batch.Payload {
	t.Helper()
	p, err := batch.NewVoucherPayload(key, e.d, ch, big.NewInt(maxClaimable))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func (e *batchEnv) verify(t testing.TB, pp x402.PaymentPayload, req x402.PaymentRequirements) x402.VerifyResponse {
	t.Helper()
	r, err := e.bf.Verify(context.Background(), pp, req)
	if err != nil {
		t.Fatalf("verify: %v", err)
	}
	return r
}

func (e *batchEnv) settle(t testing.TB, bf *onchain.BatchFacilitator, pp x402.PaymentPayload, req x402.PaymentRequirements) x402.SettleResponse {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	r, err := bf.Settle(ctx, pp, req)
	if err != nil {
		t.Fatalf("settle: %v", err)
	}
	return r
}

// gasOf is the gasUsed of a transaction's receipt.
func (e *batchEnv) gasOf(t testing.TB, tx string) uint64 {
	t.Helper()
	return e.chain.WaitReceipt(t, common.HexToHash(tx)).GasUsed
}

// claimRow is the claim row of a voucher payload with totalClaimed.
func claimRow(t testing.TB, p batch.Payload, total int64) batch.VoucherClaim {
	t.Helper()
	return batch.VoucherClaim{Voucher: batch.ClaimVoucher{Channel: p.ChannelConfig, MaxClaimableAmount: p.Voucher.MaxClaimableAmount},
		Signature: p.Voucher.Signature, TotalClaimed: big.NewInt(total).String()}
}

func stateOf(t testing.TB, extra map[string]any) batch.ChannelState {
	t.Helper()
	var cs struct {
		ChannelState batch.ChannelState `json:"channelState"`
	}
	if err := json.Unmarshal(mustJSON(t, extra), &cs); err != nil {
		t.Fatal(err)
	}
	return cs.ChannelState
}

func snapshotOf(t testing.TB, extra map[string]any) batch.ChannelState {
	t.Helper()
	var cs batch.ChannelState
	if err := json.Unmarshal(mustJSON(t, extra), &cs); err != nil {
		t.Fatal(err)
	}
	return cs
}

// TestBatchSettlementLifecycle: a channel's whole life through the
// facilitator on anvil: a deposit verified and settled (the escrow holds
// it), vouchers verified against the channel, a claim the facilitator
// signs as receiver authorizer, the sweep to payTo, and a refund that
// claims the latest voucher and returns the rest in one transaction. Each
// settlement presented again sends no second transaction and answers from
// the chain. The gas of each transaction is logged.
func TestBatchSettlementLifecycle(t *testing.T) {
	e := newBatchEnv(t)
	ch := e.channel(t)
	id := e.d.ChannelID(ch)
	payerBefore := e.chain.TokenBalance(t, e.payer)

	// Deposit 10000 with a first voucher of 1000.
	dep := e.pp(t, e.deposit(t, ch, 1000, 10_000))
	if v := e.verify(t, dep, e.req); !v.IsValid || v.Payer != e.payer.Hex() || snapshotOf(t, v.Extra).ChannelID != id.Hex() || snapshotOf(t, v.Extra).Balance != "0" {
		t.Fatalf("verify deposit: %+v", v)
	}
	sr := e.settle(t, e.bf, dep, e.req)
	if !sr.Success || sr.Amount != "10000" || sr.Payer != e.payer.Hex() || sr.Asset != anviltest.USDC.Hex() || len(sr.Transaction) != 66 {
		t.Fatalf("settle deposit: %+v", sr)
	}
	if cs := stateOf(t, sr.Extra); cs.Balance != "10000" || cs.TotalClaimed != "0" || cs.ChannelID != id.Hex() {
		t.Fatalf("deposit's channelState: %+v", cs)
	}
	gasDeposit := e.gasOf(t, sr.Transaction)
	n := e.nonce(t)
	if again := e.settle(t, e.bf, dep, e.req); !again.Success || again.Transaction != sr.Transaction || again.Amount != "10000" {
		t.Fatalf("the deposit presented again: %+v, want the original %s", again, sr.Transaction)
	}
	if e.nonce(t) != n {
		t.Fatal("the deposit presented again sent a transaction")
	}
	if got := anviltest.EscrowChannel(t, e.chain.Client, id); got.Balance.Int64() != 10_000 {
		t.Fatalf("escrow balance %s", got.Balance)
	}

	// Vouchers up to 3000, each verified against the channel.
	var last batch.Payload
	for _, cum := range []int64{2000, 3000} {
		last = e.voucher(t, e.payerKey, ch, cum)
		if v := e.verify(t, e.pp(t, last), e.req); !v.IsValid || snapshotOf(t, v.Extra).Balance != "10000" {
			t.Fatalf("verify voucher %d: %+v", cum, v)
		}
	}

	// A claim of 3000 without the authorizer's signature: the facilitator
	// signs it; presented again it sends nothing.
	claim := e.pp(t, batch.ClaimPayload{Type: batch.TypeClaim, Claims: []batch.VoucherClaim{claimRow(t, last, 3000)}})
	sr = e.settle(t, e.bf, claim, e.req)
	if !sr.Success || sr.Amount != "" || len(sr.Transaction) != 66 {
		t.Fatalf("claim: %+v", sr)
	}
	gasClaim := e.gasOf(t, sr.Transaction)
	n = e.nonce(t)
	if again := e.settle(t, e.bf, claim, e.req); !again.Success || again.Transaction != sr.Transaction {
		t.Fatalf("the claim presented again: %+v, want %s", again, sr.Transaction)
	}
	if e.nonce(t) != n {
		t.Fatal("the claim presented again sent a transaction")
	}
	if got := anviltest.EscrowChannel(t, e.chain.Client, id); got.TotalClaimed.Int64() != 3000 {
		t.Fatalf("escrow totalClaimed %s", got.TotalClaimed)
	}
	// A voucher at the claimed total is refused now; a refund voucher at it is not.
	if v := e.verify(t, e.pp(t, last), e.req); v.IsValid || v.InvalidReason != batch.ReasonCumulativeBelowClaimed {
		t.Fatalf("voucher at totalClaimed: %+v", v)
	}

	// The sweep pays payTo 3000; again, it moves nothing and sends nothing.
	sweep := e.pp(t, batch.SettlePayload{Type: batch.TypeSettle, Receiver: e.payTo.Hex(), Token: anviltest.USDC.Hex()})
	sr = e.settle(t, e.bf, sweep, e.req)
	if !sr.Success || sr.Amount != "3000" || len(sr.Transaction) != 66 {
		t.Fatalf("settle: %+v", sr)
	}
	gasSettle := e.gasOf(t, sr.Transaction)
	if got := e.chain.TokenBalance(t, e.payTo); got.Int64() != 3000 {
		t.Fatalf("payTo holds %s", got)
	}
	n = e.nonce(t)
	if again := e.settle(t, e.bf, sweep, e.req); !again.Success || again.Amount != "0" || again.Transaction != "" {
		t.Fatalf("the sweep presented again: %+v", again)
	}
	if e.nonce(t) != n {
		t.Fatal("an empty sweep sent a transaction")
	}

	// One more voucher (4000), then the payer's refund: verified as a
	// zero-charge voucher; the server's completion claims 4000 and refunds
	// the remaining 6000 in one transaction the facilitator signs.
	last = e.voucher(t, e.payerKey, ch, 4000)
	refund, err := batch.NewRefundPayload(e.payerKey, e.d, ch, big.NewInt(4000), nil)
	if err != nil {
		t.Fatal(err)
	}
	if v := e.verify(t, e.pp(t, refund), e.req); !v.IsValid || snapshotOf(t, v.Extra).RefundNonce != "0" {
		t.Fatalf("verify refund: %+v", v)
	}
	done := e.pp(t, batch.RefundSettlement{Type: batch.TypeRefund, ChannelConfig: refund.ChannelConfig, Voucher: refund.Voucher,
		Amount: "6000", RefundNonce: "0", Claims: []batch.VoucherClaim{claimRow(t, last, 4000)}})
	sr = e.settle(t, e.bf, done, e.req)
	if !sr.Success || sr.Amount != "6000" || sr.Payer != e.payer.Hex() {
		t.Fatalf("refund: %+v", sr)
	}
	if cs := stateOf(t, sr.Extra); cs.Balance != "4000" || cs.TotalClaimed != "4000" || cs.RefundNonce != "1" {
		t.Fatalf("refund's channelState: %+v", cs)
	}
	gasRefund := e.gasOf(t, sr.Transaction)
	n = e.nonce(t)
	if again := e.settle(t, e.bf, done, e.req); !again.Success || again.Transaction != sr.Transaction || again.Amount != "6000" {
		t.Fatalf("the refund presented again: %+v, want %s", again, sr.Transaction)
	}
	if e.nonce(t) != n {
		t.Fatal("the refund presented again sent a transaction")
	}
	if got := new(big.Int).Sub(payerBefore, e.chain.TokenBalance(t, e.payer)); got.Int64() != 4000 {
		t.Fatalf("the payer spent %s, want 4000", got)
	}
	// The last 1000 claimed reach payTo with the next sweep.
	if sr = e.settle(t, e.bf, sweep, e.req); !sr.Success || sr.Amount != "1000" {
		t.Fatalf("second sweep: %+v", sr)
	}
	if got := e.chain.TokenBalance(t, e.payTo); got.Int64() != 4000 {
		t.Fatalf("payTo holds %s, want 4000", got)
	}
	t.Logf("gasUsed: deposit %d, claim (1 row) %d, settle %d, claim (1 row) + refund %d", gasDeposit, gasClaim, gasSettle, gasRefund)
}

// refusalCase is a payload the facilitator must refuse with reason.
type refusalCase struct {
	name   string
	pp     x402.PaymentPayload
	req    x402.PaymentRequirements
	reason string
}

// TestBatchVerifyRefusals: every verification rule refuses with its
// reason code, the channel's snapshot attached when it could be read; the
// same payloads presented to Settle (deposits) are refused alike, and no
// refusal sends a transaction.
func TestBatchVerifyRefusals(t *testing.T) {
	e := newBatchEnv(t)
	ch := e.channel(t)
	id := e.d.ChannelID(ch)
	settled := e.pp(t, e.deposit(t, ch, 1000, 10_000))
	if sr := e.settle(t, e.bf, settled, e.req); !sr.Success {
		t.Fatalf("deposit: %+v", sr)
	}
	last := e.voucher(t, e.payerKey, ch, 2000)
	if sr := e.settle(t, e.bf, e.pp(t, batch.ClaimPayload{Type: batch.TypeClaim, Claims: []batch.VoucherClaim{claimRow(t, last, 2000)}}), e.req); !sr.Success {
		t.Fatalf("claim: %+v", sr)
	}
	otherKey, other := anviltest.NewKey(t)
	n0 := e.nonce(t)

	withReq := func(mod func(*x402.PaymentRequirements)) x402.PaymentRequirements {
		r := e.req
		r.Extra = map[string]any{}
		for k, v := range e.req.Extra {
			r.Extra[k] = v
		}
		mod(&r)
		return r
	}
	good := e.pp(t, e.voucher(t, e.payerKey, ch, 3000))
	// A deposit whose EIP-3009 authorization is changed and signed by key.
	signedDeposit := func(key *ecdsa.PrivateKey, mod func(*batch.ERC3009Deposit)) x402.PaymentPayload {
		p, err := batch.ParsePayload(mustJSON(t, e.deposit(t, ch, 3000, 5000)))
		if err != nil {
			t.Fatal(err)
		}
		mod(p.Deposit)
		n, _ := x402.LookupNetwork(x402.NetworkBase)
		if err := batch.SignDeposit(key, exact.Domain(n), id, p.Deposit); err != nil {
			t.Fatal(err)
		}
		return e.pp(t, p.Payload())
	}
	wrongID := e.voucher(t, e.payerKey, ch, 3000)
	wrongID.Voucher.ChannelID = e.d.ChannelID(e.channel(t)).Hex()
	accepted := good
	accepted.Accepted.Network = "eip155:1"

	// Channels without a payer authorizer: an EOA payer's vouchers, and a
	// contract wallet's (ERC-1271), on channels never funded.
	eoaCh := e.channel(t)
	eoaCh.PayerAuthorizer = common.Address{}
	ownerKey, owner := anviltest.NewKey(t)
	wallet := e.chain.InstallWallet(t, owner)
	walletCh := e.channel(t)
	walletCh.Payer, walletCh.PayerAuthorizer = wallet, common.Address{}

	refundAt := func(charged int64) x402.PaymentPayload {
		p, err := batch.NewRefundPayload(e.payerKey, e.d, ch, big.NewInt(charged), nil)
		if err != nil {
			t.Fatal(err)
		}
		return e.pp(t, p)
	}

	cases := []refusalCase{
		{"scheme", good, withReq(func(r *x402.PaymentRequirements) { r.Scheme = x402.SchemeExact }), batch.ReasonScheme},
		{"network of the requirements", good, withReq(func(r *x402.PaymentRequirements) { r.Network = "eip155:1" }), batch.ReasonNetworkMismatch},
		{"network accepted", accepted, e.req, batch.ReasonNetworkMismatch},
		{"rule 1: channel id", e.pp(t, wrongID), e.req, batch.ReasonChannelIDMismatch},
		{"rule 2: token", good, withReq(func(r *x402.PaymentRequirements) { r.Asset = other.Hex() }), batch.ReasonTokenMismatch},
		{"rule 3: receiver", good, withReq(func(r *x402.PaymentRequirements) { r.PayTo = other.Hex() }), batch.ReasonReceiverMismatch},
		{"rule 4: receiver authorizer", good, withReq(func(r *x402.PaymentRequirements) { r.Extra["receiverAuthorizer"] = other.Hex() }), batch.ReasonReceiverAuthorizerMismatch},
		{"rule 5: withdraw delay", good, withReq(func(r *x402.PaymentRequirements) { r.Extra["withdrawDelay"] = 1800 }), batch.ReasonWithdrawDelayMismatch},
		{"rule 6: voucher signed by another key", e.pp(t, e.voucher(t, otherKey, ch, 3000)), e.req, batch.ReasonVoucherSignature},
		{"rule 6: EOA payer without authorizer, another key", e.pp(t, e.voucher(t, otherKey, eoaCh, 3000)), e.req, batch.ReasonVoucherSignature},
		{"rule 6: wallet payer (ERC-1271), another key", e.pp(t, e.voucher(t, otherKey, walletCh, 3000)), e.req, batch.ReasonVoucherSignature},
		{"rule 7: EOA payer's own signature, channel never funded", e.pp(t, e.voucher(t, e.payerKey, eoaCh, 3000)), e.req, batch.ReasonChannelNotFound},
		{"rule 7: wallet's owner signature (ERC-1271), channel never funded", e.pp(t, e.voucher(t, ownerKey, walletCh, 3000)), e.req, batch.ReasonChannelNotFound},
		{"rule 7: voucher of a channel never funded", e.pp(t, e.voucher(t, e.payerKey, e.channel(t), 1000)), e.req, batch.ReasonChannelNotFound},
		{"rule 8: deposit above the payer's balance", e.pp(t, e.deposit(t, ch, 3000, 2_000_000_000)), e.req, batch.ReasonInsufficientBalance},
		{"deposit authorization signed by another key", signedDeposit(otherKey, func(*batch.ERC3009Deposit) {}), e.req, batch.ReasonReceiveAuthorizationSignature},
		{"deposit authorization expired", signedDeposit(e.payerKey, func(d *batch.ERC3009Deposit) { d.ValidBefore = big.NewInt(time.Now().Unix() - 10) }), e.req, batch.ReasonAuthorizationValidBefore},
		{"deposit authorization not yet valid", signedDeposit(e.payerKey, func(d *batch.ERC3009Deposit) { d.ValidAfter = big.NewInt(time.Now().Unix() + 3600) }), e.req, batch.ReasonAuthorizationValidAfter},
		{"rule 9: voucher above the balance", e.pp(t, e.voucher(t, e.payerKey, ch, 10_001)), e.req, batch.ReasonCumulativeExceedsBalance},
		{"rule 9: deposit voucher above balance + deposit", e.pp(t, e.deposit(t, ch, 15_001, 5000)), e.req, batch.ReasonCumulativeExceedsBalance},
		{"rule 10: voucher at totalClaimed", e.pp(t, e.voucher(t, e.payerKey, ch, 2000)), e.req, batch.ReasonCumulativeBelowClaimed},
		{"rule 10: deposit voucher at totalClaimed", e.pp(t, e.deposit(t, ch, 2000, 5000)), e.req, batch.ReasonCumulativeBelowClaimed},
		{"rule 10: refund below totalClaimed", refundAt(1999), e.req, batch.ReasonCumulativeBelowClaimed},
		{"payload type", e.pp(t, map[string]any{"type": "swap"}), e.req, batch.ReasonPayloadType},
	}
	for _, c := range cases {
		v := e.verify(t, c.pp, c.req)
		if v.IsValid || v.InvalidReason != c.reason {
			t.Errorf("%s: verify %+v, want %s", c.name, v, c.reason)
			continue
		}
		if batch.PayloadType(c.pp.Payload) == batch.TypeDeposit {
			if sr := e.settle(t, e.bf, c.pp, c.req); sr.Success || sr.ErrorReason != c.reason {
				t.Errorf("%s: settle %+v, want %s", c.name, sr, c.reason)
			}
		}
	}
	// The snapshot comes with refusals whose channel could be read.
	v := e.verify(t, e.pp(t, e.voucher(t, otherKey, ch, 3000)), e.req)
	if cs := snapshotOf(t, v.Extra); cs.ChannelID != id.Hex() || cs.Balance != "10000" || cs.TotalClaimed != "2000" || cs.RefundNonce != "0" {
		t.Errorf("the snapshot of a refused voucher: %+v", v.Extra)
	}
	// A refund voucher at totalClaimed is valid (rule 10 relaxed).
	if v := e.verify(t, refundAt(2000), e.req); !v.IsValid {
		t.Errorf("refund at totalClaimed: %+v", v)
	}
	// The deposit already settled is refused by verify: its authorization is used.
	if v := e.verify(t, settled, e.req); v.IsValid || v.InvalidReason != batch.ReasonDepositPayload {
		t.Errorf("the settled deposit verified again: %+v", v)
	}
	if v := e.verify(t, good, e.req); !v.IsValid {
		t.Errorf("a good voucher: %+v", v)
	}
	if n := e.nonce(t); n != n0 {
		t.Fatalf("refusals sent %d transactions", n-n0)
	}
}

// TestBatchSettleRefusals: the settlements the facilitator refuses before
// any gas: rule 11 (a refund nonce that is not the channel's, a refund
// signature over another amount), claims and refunds without signatures
// when the facilitator has no authorizer key or is not the channel's, a
// claim of a forged voucher (its simulation), a voucher or an unknown type
// at settle, an unreadable claim. None sends a transaction.
func TestBatchSettleRefusals(t *testing.T) {
	e := newBatchEnv(t)
	ch := e.channel(t)
	id := e.d.ChannelID(ch)
	if sr := e.settle(t, e.bf, e.pp(t, e.deposit(t, ch, 1000, 10_000)), e.req); !sr.Success {
		t.Fatalf("deposit: %+v", sr)
	}
	last := e.voucher(t, e.payerKey, ch, 3000)
	otherKey, _ := anviltest.NewKey(t)
	keyless := e.f.Batch(onchain.BatchConfig{})
	stranger := e.f.Batch(onchain.BatchConfig{ReceiverAuthorizerKey: otherKey})
	n0 := e.nonce(t)

	claim := e.pp(t, batch.ClaimPayload{Type: batch.TypeClaim, Claims: []batch.VoucherClaim{claimRow(t, last, 3000)}})
	forged := e.voucher(t, otherKey, ch, 3000)
	forgedClaim := e.pp(t, batch.ClaimPayload{Type: batch.TypeClaim, Claims: []batch.VoucherClaim{claimRow(t, forged, 3000)}})
	refund, err := batch.NewRefundPayload(e.payerKey, e.d, ch, big.NewInt(0), nil)
	if err != nil {
		t.Fatal(err)
	}
	refundWith := func(nonce, amount, sig string) x402.PaymentPayload {
		return e.pp(t, batch.RefundSettlement{Type: batch.TypeRefund, ChannelConfig: refund.ChannelConfig, Voucher: refund.Voucher,
			Amount: amount, RefundNonce: nonce, Claims: []batch.VoucherClaim{}, RefundAuthorizerSignature: sig})
	}
	otherAmountSig, err := e.d.SignRefund(e.authKey, id, big.NewInt(0), big.NewInt(1))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name   string
		bf     *onchain.BatchFacilitator
		pp     x402.PaymentPayload
		reason string
	}{
		{"rule 11: refund nonce not the channel's", e.bf, refundWith("5", "1000", ""), batch.ReasonRefundPayload},
		{"rule 11: refund signature over another amount", e.bf, refundWith("0", "1000", otherAmountSig), batch.ReasonRefundSimulationFailed},
		{"refund amount unresolved", e.bf, refundWith("0", "", ""), batch.ReasonRefundAmountInvalid},
		{"claim without signature, no authorizer key", keyless, claim, batch.ReasonAuthorizerNotConfigured},
		{"refund without signature, no authorizer key", keyless, refundWith("0", "1000", ""), batch.ReasonAuthorizerNotConfigured},
		{"claim without signature, another authorizer", stranger, claim, batch.ReasonAuthorizerAddressMismatch},
		{"refund without signature, another authorizer", stranger, refundWith("0", "1000", ""), batch.ReasonAuthorizerAddressMismatch},
		{"claim of a forged voucher", e.bf, forgedClaim, batch.ReasonClaimSimulationFailed},
		{"claim without rows", e.bf, e.pp(t, batch.ClaimPayload{Type: batch.TypeClaim, Claims: []batch.VoucherClaim{}}), batch.ReasonClaimPayload},
		{"settle of another token", e.bf, e.pp(t, batch.SettlePayload{Type: batch.TypeSettle, Receiver: e.payTo.Hex(), Token: e.payTo.Hex()}), batch.ReasonTokenMismatch},
		{"a voucher at settle", e.bf, e.pp(t, last), batch.ReasonPayloadType},
		{"an unknown action", e.bf, e.pp(t, map[string]any{"type": "withdraw"}), batch.ReasonUnknownSettleAction},
	} {
		if sr := e.settle(t, c.bf, c.pp, e.req); sr.Success || sr.ErrorReason != c.reason {
			t.Errorf("%s: %+v, want %s", c.name, sr, c.reason)
		}
	}
	if n := e.nonce(t); n != n0 {
		t.Fatalf("refusals sent %d transactions", n-n0)
	}
	// The keyless facilitator settles what comes signed.
	sig, err := e.d.SignClaimBatch(e.authKey, e.d.ClaimEntries([]batch.Claim{{Channel: ch, MaxClaimableAmount: big.NewInt(3000), Signature: hexutil.MustDecode(last.Voucher.Signature), TotalClaimed: big.NewInt(3000)}}))
	if err != nil {
		t.Fatal(err)
	}
	signed := e.pp(t, batch.ClaimPayload{Type: batch.TypeClaim, Claims: []batch.VoucherClaim{claimRow(t, last, 3000)}, ClaimAuthorizerSignature: sig})
	if sr := e.settle(t, keyless, signed, e.req); !sr.Success {
		t.Fatalf("a signed claim through the keyless facilitator: %+v", sr)
	}
	if got := anviltest.EscrowChannel(t, e.chain.Client, id); got.TotalClaimed.Int64() != 3000 {
		t.Fatalf("totalClaimed %s", got.TotalClaimed)
	}
}

// TestBatchBesideExactInMux: the batch-settlement facilitator and the
// exact one, registered in one facilitator.Mux, announce both kinds, the
// receiver authorizer and the one relayer; an exact payment still settles
// through the Mux, and a batch deposit does too, from the same relayer.
func TestBatchBesideExactInMux(t *testing.T) {
	e := newBatchEnv(t)
	m, err := facilitator.NewMux(e.f, e.bf)
	if err != nil {
		t.Fatal(err)
	}
	sup, err := m.Supported(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var batchKind *x402.SupportedKind
	for i, k := range sup.Kinds {
		if k.Scheme == batch.Scheme {
			batchKind = &sup.Kinds[i]
		}
	}
	if batchKind == nil || batchKind.Network != "eip155:8453" || batchKind.Extra["receiverAuthorizer"] != e.auth.Hex() || len(sup.Kinds) != 3 {
		t.Fatalf("supported: %+v", sup)
	}
	if s := sup.Signers["eip155:*"]; len(s) != 1 || s[0] != e.relayer.Hex() {
		t.Fatalf("signers: %+v", sup.Signers)
	}
	if sup, _ := e.f.Batch(onchain.BatchConfig{}).Supported(context.Background()); sup.Kinds[0].Extra != nil {
		t.Fatalf("a facilitator without authorizer key announces %+v", sup.Kinds[0].Extra)
	}

	ctx := context.Background()
	exReq := requirements(t, "0.0025")
	pp, _ := pay(t, e.payerKey, exReq, time.Now())
	if sr, err := m.Settle(ctx, pp, exReq); err != nil || !sr.Success {
		t.Fatalf("exact through the mux: %+v %v", sr, err)
	}
	ch := e.channel(t)
	dep := e.pp(t, e.deposit(t, ch, 1000, 5000))
	if v, err := m.Verify(ctx, dep, e.req); err != nil || !v.IsValid {
		t.Fatalf("batch verify through the mux: %+v %v", v, err)
	}
	sr, err := m.Settle(ctx, dep, e.req)
	if err != nil || !sr.Success {
		t.Fatalf("batch deposit through the mux: %+v %v", sr, err)
	}
	tx, _, err := e.chain.Client.TransactionByHash(ctx, common.HexToHash(sr.Transaction))
	if err != nil || tx.Nonce() != 1 {
		t.Fatalf("the deposit's nonce: %v %v (the relayer's second transaction)", tx, err)
	}
}

// TestBatchSettlementInFlightAndRestart: a deposit whose transaction is
// not mined before the caller stops waiting is answered settlement_pending
// with its hash; presented again it awaits that transaction (no second
// one) and answers it once mined; another instance meanwhile answers
// settlement_pending without a transaction. Another facilitator sharing the relayer
// key (a restart, another instance), presented the same deposit and the
// same claim, answers both from the chain without a transaction.
func TestBatchSettlementInFlightAndRestart(t *testing.T) {
	e := newBatchEnv(t)
	ch := e.channel(t)
	dep := e.pp(t, e.deposit(t, ch, 1000, 10_000))
	e.chain.SetAutomine(t, false)
	n0 := e.nonce(t)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	sr, err := e.bf.Settle(ctx, dep, e.req)
	cancel()
	if err != nil || sr.Success || sr.ErrorReason != onchain.ReasonSettlementPending || len(sr.Transaction) != 66 {
		t.Fatalf("unmined deposit: %+v %v", sr, err)
	}
	pending := sr.Transaction
	ctx, cancel = context.WithTimeout(context.Background(), 300*time.Millisecond)
	sr, err = e.bf.Settle(ctx, dep, e.req)
	cancel()
	if err != nil || sr.ErrorReason != onchain.ReasonSettlementPending || sr.Transaction != pending {
		t.Fatalf("the deposit presented again while in flight: %+v %v, want %s", sr, err, pending)
	}
	// Another instance sharing the relayer sees it in the node's pool.
	elsewhere := e.facilitator(t, nil).Batch(onchain.BatchConfig{ReceiverAuthorizerKey: e.authKey})
	if sr = e.settle(t, elsewhere, dep, e.req); sr.Success || sr.ErrorReason != onchain.ReasonSettlementPending {
		t.Fatalf("the deposit at another instance while in the pool: %+v", sr)
	}
	e.chain.SetAutomine(t, true)
	e.chain.Mine(t, 1)
	if sr = e.settle(t, e.bf, dep, e.req); !sr.Success || sr.Transaction != pending {
		t.Fatalf("the deposit once mined: %+v, want %s", sr, pending)
	}
	if n := e.nonce(t); n != n0+1 {
		t.Fatalf("%d transactions for one deposit", n-n0)
	}

	last := e.voucher(t, e.payerKey, ch, 3000)
	claim := e.pp(t, batch.ClaimPayload{Type: batch.TypeClaim, Claims: []batch.VoucherClaim{claimRow(t, last, 3000)}})
	claimed := e.settle(t, e.bf, claim, e.req)
	if !claimed.Success {
		t.Fatalf("claim: %+v", claimed)
	}
	other := e.facilitator(t, nil).Batch(onchain.BatchConfig{ReceiverAuthorizerKey: e.authKey})
	n1 := e.nonce(t)
	if sr := e.settle(t, other, dep, e.req); !sr.Success || sr.Transaction != pending || sr.Amount != "10000" {
		t.Fatalf("the deposit at another instance: %+v, want %s", sr, pending)
	}
	if sr := e.settle(t, other, claim, e.req); !sr.Success || sr.Transaction != claimed.Transaction {
		t.Fatalf("the claim at another instance: %+v, want %s", sr, claimed.Transaction)
	}
	if n := e.nonce(t); n != n1 {
		t.Fatalf("another instance sent %d transactions for settlements already on chain", n-n1)
	}
}

// BenchmarkBatchSettlementGas runs a channel's life through the
// facilitator on anvil (deposit, claim of one voucher signed by the
// facilitator, sweep, claim and refund in one transaction) and reports
// each transaction's gasUsed.
func BenchmarkBatchSettlementGas(b *testing.B) {
	e := newBatchEnv(b)
	var gas [4]uint64
	for i := 0; i < b.N; i++ {
		ch := e.channel(b)
		sr := e.settle(b, e.bf, e.pp(b, e.deposit(b, ch, 1000, 10_000)), e.req)
		gas[0] += e.gasOf(b, sr.Transaction)
		v := e.voucher(b, e.payerKey, ch, 2000)
		sr = e.settle(b, e.bf, e.pp(b, batch.ClaimPayload{Type: batch.TypeClaim, Claims: []batch.VoucherClaim{claimRow(b, v, 2000)}}), e.req)
		gas[1] += e.gasOf(b, sr.Transaction)
		sr = e.settle(b, e.bf, e.pp(b, batch.SettlePayload{Type: batch.TypeSettle, Receiver: e.payTo.Hex(), Token: anviltest.USDC.Hex()}), e.req)
		gas[2] += e.gasOf(b, sr.Transaction)
		v = e.voucher(b, e.payerKey, ch, 3000)
		r, err := batch.NewRefundPayload(e.payerKey, e.d, ch, big.NewInt(3000), nil)
		if err != nil {
			b.Fatal(err)
		}
		sr = e.settle(b, e.bf, e.pp(b, batch.RefundSettlement{Type: batch.TypeRefund, ChannelConfig: r.ChannelConfig, Voucher: r.Voucher,
			Amount: "7000", RefundNonce: "0", Claims: []batch.VoucherClaim{claimRow(b, v, 3000)}}), e.req)
		if !sr.Success {
			b.Fatalf("refund: %+v", sr)
		}
		gas[3] += e.gasOf(b, sr.Transaction)
	}
	for i, name := range []string{"deposit-gas", "claim-gas", "settle-gas", "claim+refund-gas"} {
		b.ReportMetric(float64(gas[i])/float64(b.N), name)
	}
}

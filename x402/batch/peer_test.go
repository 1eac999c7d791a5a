package batch_test

import (
	"bufio"
	"encoding/json"
	"io"
	"math/big"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"

	"github.com/seed1284c1d2/svc/internal/anviltest"
	"github.com/seed1284c1d2/svc/x402"
	"github.com/seed1284c1d2/svc/x402/batch"
)

// peer is e2e/chain/batch-peer.mjs: the official client and facilitator
// of the scheme, one JSON request and answer per line.
type peer struct {
	t   *testing.T
	in  io.WriteCloser
	out *bufio.Scanner
}

func startPeer(t *testing.T, rpcURL, payerKey, relayerKey string) *peer {
	t.Helper()
	node, dir := anviltest.Setup(t)
	cmd := exec.Command(node, "batch-peer.mjs")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "RPC_URL="+rpcURL, "E2E_PRIVATE_KEY="+payerKey, "RELAYER_KEY="+relayerKey)
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = in.Close()
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	})
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	return &peer{t: t, in: in, out: sc}
}

// do sends one request and decodes the answer's "ok" into v (when not
// nil); an "error" answer fails the test.
func (p *peer) do(req map[string]any, v any) {
	p.t.Helper()
	b, err := json.Marshal(req)
	if err != nil {
		p.t.Fatal(err)
	}
	if _, err := p.in.Write(append(b, '\n')); err != nil {
		p.t.Fatal(err)
	}
	if !p.out.Scan() {
		p.t.Fatalf("batch-peer.mjs ended: %v", p.out.Err())
	}
	var ans struct {
		OK    json.RawMessage `json:"ok"`
		Error string          `json:"error"`
	}
	if err := json.Unmarshal(p.out.Bytes(), &ans); err != nil {
		p.t.Fatalf("answer %q: %v", p.out.Text(), err)
	}
	if ans.Error != "" {
		p.t.Fatalf("batch-peer.mjs %s: %s", req["op"], ans.Error)
	}
	if v != nil {
		if err := json.Unmarshal(ans.OK, v); err != nil {
			p.t.Fatalf("decode the %s answer %s: %v", req["op"], ans.OK, err)
		}
	}
}

// pay asks the official client for a payment of req and parses it.
func (p *peer) pay(req x402.PaymentRequirements) (x402.PaymentPayload, batch.Payment) {
	p.t.Helper()
	var pp x402.PaymentPayload
	p.do(map[string]any{"op": "pay", "requirements": req}, &pp)
	pay, err := batch.ParsePayload(pp.Payload)
	if err != nil {
		p.t.Fatalf("the official client's payload %s: %v", pp.Payload, err)
	}
	return pp, pay
}

type clientChannel struct {
	ChannelID string `json:"channelId"`
	Record    *struct {
		ChargedCumulativeAmount string `json:"chargedCumulativeAmount"`
		Balance                 string `json:"balance"`
	} `json:"record"`
	Recovered bool `json:"recovered"`
}

func keyHex(t *testing.T) (string, common.Address) {
	k, a := anviltest.NewKey(t)
	return hexutil.Encode(crypto.FromECDSA(k)), a
}

// server is what a batch-settlement server keeps of one channel.
type server struct {
	charged     *big.Int // chargedCumulativeAmount
	last        batch.Payment
	onChain     batch.OnChain
	depositTx   common.Hash
	requests    int
	channelID   common.Hash
	correctives int
}

// TestOfficialClientAgainstOurContracts: the official batch-settlement
// client of @x402/evm pays requirements built by this package, on anvil
// with our escrow, collector and Multicall3. Its deposit is verified by
// the official facilitator (which reads the chain through Multicall3 and
// simulates the deposit on our escrow) and executed by this package's
// calldata; its vouchers are checked here (channel id, requirements,
// signer = payer authorizer, cumulative = charged + amount) while charges
// below the per-request maximum are answered with this package's payment
// response, which the client adopts; a lost answer is repaired by this
// package's corrective 402. The latest voucher is claimed with our
// receiver authorizer's signature and swept to payTo, which receives
// exactly what was charged; then the official facilitator verifies a
// voucher, claims, sweeps and completes a signed refund against our
// contracts.
func TestOfficialClientAgainstOurContracts(t *testing.T) {
	c := anviltest.Start(t, anviltest.Options{})
	payerHex, payerAddr := keyHex(t)
	relayerHex, relayerAddr := keyHex(t)
	authKey, authAddr := anviltest.NewKey(t)
	_, payTo := anviltest.NewKey(t)
	c.SetBalance(t, relayerAddr, anviltest.Ether(10))
	c.Mint(t, payerAddr, big.NewInt(5_000_000))

	req, err := batch.NewRequirements(batch.Offer{Network: x402.NetworkBase, Amount: "1000", PayTo: payTo.Hex(),
		ReceiverAuthorizer: authAddr, WithdrawDelay: 900, MinDeposit: "100000"})
	if err != nil {
		t.Fatal(err)
	}
	pr := startPeer(t, c.URL, payerHex, relayerHex)
	send := func(what string, data []byte, err error) *types.Receipt {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		r := c.Transact(t, anviltest.Escrow, data)
		if r.Status != types.ReceiptStatusSuccessful {
			t.Fatalf("%s: transaction %s reverted", what, r.TxHash)
		}
		return r
	}

	// The server's side of a paid request: check the payment locally,
	// then charge and answer.
	s := &server{charged: new(big.Int)}
	accept := func(pp x402.PaymentPayload, p batch.Payment, charge int64, answer bool) {
		t.Helper()
		d, err := p.Check(req)
		if err != nil {
			t.Fatalf("request %d: %v", s.requests, err)
		}
		if err := d.VerifyVoucher(p); err != nil {
			t.Fatalf("request %d: %v", s.requests, err)
		}
		if want := new(big.Int).Add(s.charged, big.NewInt(1000)); p.MaxClaimableAmount.Cmp(want) != 0 {
			t.Fatalf("request %d: voucher ceiling %s, want charged %s + 1000", s.requests, p.MaxClaimableAmount, s.charged)
		}
		s.channelID, s.last = p.ChannelID, p
		s.charged.Add(s.charged, big.NewInt(charge))
		s.requests++
		if !answer {
			return
		}
		cs := s.onChain.State(p.ChannelID)
		cs.ChargedCumulativeAmount = s.charged.String()
		var resp x402.SettleResponse
		if p.Type == batch.TypeDeposit {
			resp = batch.ChargeResponse(req.Network, payerAddr.Hex(), big.NewInt(charge), cs, s.depositTx.Hex(), p.Deposit.Amount.String())
		} else {
			resp = batch.ChargeResponse(req.Network, payerAddr.Hex(), big.NewInt(charge), cs, "", "")
		}
		var ch clientChannel
		pr.do(map[string]any{"op": "response", "requirements": req, "paymentPayload": pp, "settleResponse": resp}, &ch)
		if ch.Record == nil || ch.Record.ChargedCumulativeAmount != s.charged.String() {
			t.Fatalf("request %d: the client's record %+v, want charged %s", s.requests, ch.Record, s.charged)
		}
	}

	// 1. The deposit: the client asks for the announced minimum.
	pp, p := pr.pay(req)
	if p.Type != batch.TypeDeposit || p.Deposit == nil || p.Deposit.Amount.Int64() != 100_000 {
		t.Fatalf("first payment: type %s, deposit %+v; want a deposit of minDeposit 100000", p.Type, p.Deposit)
	}
	var channelID string
	pr.do(map[string]any{"op": "channelId", "config": p.Channel.Config(), "network": req.Network}, &channelID)
	if common.HexToHash(channelID) != batch.NewDomain(anviltest.ChainID).ChannelID(p.Channel) || p.Channel.PayerAuthorizer != payerAddr {
		t.Fatalf("channel id %s (SDK) vs %s (ours); payer authorizer %s", channelID, p.ChannelID, p.Channel.PayerAuthorizer)
	}
	var vr x402.VerifyResponse
	pr.do(map[string]any{"op": "verify", "paymentPayload": pp, "requirements": req}, &vr)
	if !vr.IsValid {
		t.Fatalf("the official facilitator refuses the deposit on our contracts: %s %s", vr.InvalidReason, vr.InvalidMessage)
	}
	data, err := batch.DepositCalldata(p.Channel, *p.Deposit)
	s.depositTx = send("deposit", data, err).TxHash
	s.onChain = anviltest.EscrowChannel(t, c.Client, p.ChannelID)
	if s.onChain.Balance.Int64() != 100_000 {
		t.Fatalf("channel after the deposit: %+v", s.onChain)
	}
	accept(pp, p, 1000, true)

	// 2. Twenty vouchers, charged below the maximum (dynamic price).
	for i := 0; i < 20; i++ {
		pp, p = pr.pay(req)
		if p.Type != batch.TypeVoucher {
			t.Fatalf("request %d: type %s, want voucher", s.requests, p.Type)
		}
		accept(pp, p, int64(500+10*i), true)
	}

	// 3. An answer lost: the client's next ceiling is stale; the server
	// refuses it with a corrective 402 carrying its state and the last
	// voucher, which the client checks and adopts.
	pp, p = pr.pay(req)
	accept(pp, p, 777, false)
	pp, p = pr.pay(req)
	if want := new(big.Int).Add(s.charged, big.NewInt(1000)); p.MaxClaimableAmount.Cmp(want) == 0 {
		t.Fatal("the client knew of a charge it was never told")
	}
	cs := s.onChain.State(s.channelID)
	cs.ChargedCumulativeAmount = s.charged.String()
	corrective := x402.PaymentRequired{X402Version: 2, Error: batch.ReasonCumulativeAmountMismatch,
		Accepts: []x402.PaymentRequirements{batch.Corrective(req, cs, &batch.VoucherState{SignedMaxClaimable: s.last.MaxClaimableAmount.String(), Signature: hexutil.Encode(s.last.Signature)})}}
	var ch clientChannel
	pr.do(map[string]any{"op": "corrective", "paymentRequired": corrective}, &ch)
	if !ch.Recovered || ch.Record == nil || ch.Record.ChargedCumulativeAmount != s.charged.String() {
		t.Fatalf("the client did not resynchronise from the corrective 402: %+v", ch)
	}
	pp, p = pr.pay(req)
	accept(pp, p, 1000, true)

	// 4. Claim the latest voucher with our receiver authorizer's
	// signature, then sweep: payTo gets exactly what was charged.
	d := batch.NewDomain(anviltest.ChainID)
	claims := []batch.Claim{{Channel: s.last.Channel, MaxClaimableAmount: s.last.MaxClaimableAmount, Signature: s.last.Signature, TotalClaimed: new(big.Int).Set(s.charged)}}
	sig, err := d.SignClaimBatch(authKey, d.ClaimEntries(claims))
	if err != nil {
		t.Fatal(err)
	}
	data, err = batch.ClaimWithSignatureCalldata(claims, hexutil.MustDecode(sig))
	send("claimWithSignature", data, err)
	data, err = batch.SettleCalldata(payTo, anviltest.USDC)
	send("settle", data, err)
	if got := c.TokenBalance(t, payTo); got.Cmp(s.charged) != 0 {
		t.Fatalf("payTo holds %s, charged %s", got, s.charged)
	}
	claimed := new(big.Int).Set(s.charged)
	s.onChain = anviltest.EscrowChannel(t, c.Client, s.channelID)

	// 5. The official facilitator against our contracts: it verifies a
	// new voucher (channel state read through Multicall3) ...
	pp, p = pr.pay(req)
	pr.do(map[string]any{"op": "verify", "paymentPayload": pp, "requirements": req}, &vr)
	if !vr.IsValid {
		t.Fatalf("the official facilitator refuses a voucher: %s %s", vr.InvalidReason, vr.InvalidMessage)
	}
	if vr.Extra["balance"] != "100000" || vr.Extra["totalClaimed"] != claimed.String() || vr.Extra["refundNonce"] != "0" {
		t.Fatalf("the official facilitator's snapshot of our escrow: %v, want balance 100000, totalClaimed %s", vr.Extra, claimed)
	}
	accept(pp, p, 900, true)
	// ... claims it with our authorizer's signature ...
	claims = []batch.Claim{{Channel: p.Channel, MaxClaimableAmount: p.MaxClaimableAmount, Signature: p.Signature, TotalClaimed: new(big.Int).Set(s.charged)}}
	sig, _ = d.SignClaimBatch(authKey, d.ClaimEntries(claims))
	claimPayload := batch.ClaimPayload{Type: batch.TypeClaim, Claims: []batch.VoucherClaim{claims[0].Row()}, ClaimAuthorizerSignature: sig}
	var sr x402.SettleResponse
	pr.do(map[string]any{"op": "settle", "paymentPayload": wrap(t, req, claimPayload), "requirements": req}, &sr)
	if !sr.Success || sr.Transaction == "" {
		t.Fatalf("the official facilitator's claim: %+v", sr)
	}
	// ... sweeps it ...
	pr.do(map[string]any{"op": "settle", "paymentPayload": wrap(t, req, batch.SettlePayload{Type: batch.TypeSettle, Receiver: payTo.Hex(), Token: anviltest.USDC.Hex()}), "requirements": req}, &sr)
	if want := new(big.Int).Sub(s.charged, claimed); !sr.Success || sr.Amount != want.String() {
		t.Fatalf("the official facilitator's sweep: %+v, want amount %s", sr, want)
	}
	if got := c.TokenBalance(t, payTo); got.Cmp(s.charged) != 0 {
		t.Fatalf("payTo holds %s, charged %s", got, s.charged)
	}
	// ... and completes a cooperative refund of everything left, signed by
	// our receiver authorizer.
	s.onChain = anviltest.EscrowChannel(t, c.Client, s.channelID)
	left := new(big.Int).Sub(s.onChain.Balance, s.onChain.TotalClaimed)
	payerBefore := c.TokenBalance(t, payerAddr)
	rsig, err := d.SignRefund(authKey, s.channelID, s.onChain.RefundNonce, left)
	if err != nil {
		t.Fatal(err)
	}
	refund := batch.RefundSettlement{Type: batch.TypeRefund, ChannelConfig: p.Channel.Config(),
		Voucher: batch.Voucher{ChannelID: s.channelID.Hex(), MaxClaimableAmount: p.MaxClaimableAmount.String(), Signature: hexutil.Encode(p.Signature)},
		Amount:  left.String(), RefundNonce: s.onChain.RefundNonce.String(), Claims: []batch.VoucherClaim{}, RefundAuthorizerSignature: rsig}
	pr.do(map[string]any{"op": "settle", "paymentPayload": wrap(t, req, refund), "requirements": req}, &sr)
	if !sr.Success || sr.Amount != left.String() {
		t.Fatalf("the official facilitator's refund: %+v, want amount %s", sr, left)
	}
	if got := new(big.Int).Sub(c.TokenBalance(t, payerAddr), payerBefore); got.Cmp(left) != 0 {
		t.Fatalf("the payer got %s back, want %s", got, left)
	}
	if st := anviltest.EscrowChannel(t, c.Client, s.channelID); st.Balance.Cmp(s.charged) != 0 || st.RefundNonce.Int64() != 1 {
		t.Fatalf("after the refund: %+v", st)
	}

	// 6. A second channel (another payTo): the official facilitator
	// executes the client's deposit on our escrow through our collector.
	_, payTo2 := anviltest.NewKey(t)
	req2, err := batch.NewRequirements(batch.Offer{Network: x402.NetworkBase, Amount: "2000", PayTo: payTo2.Hex(),
		ReceiverAuthorizer: authAddr, WithdrawDelay: 900})
	if err != nil {
		t.Fatal(err)
	}
	pp, p = pr.pay(req2)
	if p.Type != batch.TypeDeposit {
		t.Fatalf("a new channel's first payment is a %s", p.Type)
	}
	pr.do(map[string]any{"op": "settle", "paymentPayload": pp, "requirements": req2}, &sr)
	if !sr.Success || sr.Amount != p.Deposit.Amount.String() {
		t.Fatalf("the official facilitator's deposit: %+v", sr)
	}
	re, err := batch.ParseResponseExtra(sr.Extra)
	if err != nil || re.ChannelState == nil || re.ChannelState.Balance != p.Deposit.Amount.String() || !strings.EqualFold(re.ChannelState.ChannelID, p.ChannelID.Hex()) {
		t.Fatalf("the deposit's channel state %+v, %v", re.ChannelState, err)
	}
	if st := anviltest.EscrowChannel(t, c.Client, p.ChannelID); st.Balance.Cmp(p.Deposit.Amount) != 0 {
		t.Fatalf("the second channel holds %s", st.Balance)
	}
	second := p.Deposit.Amount

	// 7. This package's client side: its deposit and voucher payloads are
	// accepted by the official facilitator, which executes the deposit on
	// our escrow.
	goPayer, goPayerAddr := anviltest.NewKey(t)
	c.Mint(t, goPayerAddr, big.NewInt(1_000_000))
	goCh, _, err := batch.NewChannel(goPayer, req, common.Hash{})
	if err != nil {
		t.Fatal(err)
	}
	depPayload, err := batch.NewDepositPayload(goPayer, req, goCh, big.NewInt(1000), big.NewInt(50_000), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	pp = wrap(t, req, depPayload)
	if p, err = batch.ParsePayload(pp.Payload); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Check(req); err != nil {
		t.Fatal(err)
	}
	pr.do(map[string]any{"op": "verify", "paymentPayload": pp, "requirements": req}, &vr)
	if !vr.IsValid {
		t.Fatalf("the official facilitator refuses our deposit payload: %s %s", vr.InvalidReason, vr.InvalidMessage)
	}
	pr.do(map[string]any{"op": "settle", "paymentPayload": pp, "requirements": req}, &sr)
	if !sr.Success || sr.Amount != "50000" {
		t.Fatalf("the official facilitator's settlement of our deposit: %+v", sr)
	}
	vPayload, err := batch.NewVoucherPayload(goPayer, d, goCh, big.NewInt(2000))
	if err != nil {
		t.Fatal(err)
	}
	pr.do(map[string]any{"op": "verify", "paymentPayload": wrap(t, req, vPayload), "requirements": req}, &vr)
	if !vr.IsValid || vr.Extra["balance"] != "50000" {
		t.Fatalf("the official facilitator on our voucher payload: %+v", vr)
	}
	rPayload, err := batch.NewRefundPayload(goPayer, d, goCh, big.NewInt(1000), nil)
	if err != nil {
		t.Fatal(err)
	}
	pr.do(map[string]any{"op": "verify", "paymentPayload": wrap(t, req, rPayload), "requirements": req}, &vr)
	if !vr.IsValid {
		t.Fatalf("the official facilitator on our refund payload: %+v", vr)
	}
	t.Logf("%d paid requests, charged %s, swept to payTo, %s refunded; a second channel funded with %s by the official facilitator; our client's deposit, voucher and refund accepted by it", s.requests, s.charged, left, second)
}

// wrap puts a server-authored payload into a PaymentPayload for the
// facilitator.
func wrap(t *testing.T, req x402.PaymentRequirements, payload any) x402.PaymentPayload {
	t.Helper()
	raw, err := json.Marshal(payload)
	if err != nil {
		t.Fatal(err)
	}
	return x402.PaymentPayload{X402Version: 2, Accepted: req, Payload: raw}
}

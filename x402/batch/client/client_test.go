package client_test

import (
	"context"
	"crypto/ecdsa"
	"math/big"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/crypto"

	"github.com/seed1284c1d2/svc/x402"
	"github.com/seed1284c1d2/svc/x402/batch"
	batchclient "github.com/seed1284c1d2/svc/x402/batch/client"
	"github.com/seed1284c1d2/svc/x402/client"
)

// seller is a batch-settlement server in memory: deposits are taken as
// made, vouchers must be the charged amount plus the price, anything else
// is answered with a corrective 402. lose drops the next answer's payment
// response (the charge is kept), as a lost answer would.
type seller struct {
	t       *testing.T
	req     x402.PaymentRequirements
	mu      sync.Mutex
	charged *big.Int
	balance *big.Int
	last    batch.Payment
	paid    int
	refused int
	lose    bool
}

func (s *seller) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	offer := func(reason string, accepts x402.PaymentRequirements) {
		h, _ := x402.EncodeHeader(x402.PaymentRequired{X402Version: 2, Error: reason, Accepts: []x402.PaymentRequirements{accepts}})
		w.Header().Set(x402.HeaderPaymentRequired, h)
		w.WriteHeader(http.StatusPaymentRequired)
	}
	h := r.Header.Get(x402.HeaderPaymentSignature)
	if h == "" {
		offer("", s.req)
		return
	}
	var pp x402.PaymentPayload
	if err := x402.DecodeHeader(h, &pp); err != nil {
		s.t.Errorf("payment header: %v", err)
		return
	}
	p, err := batch.ParsePayload(pp.Payload)
	if err != nil {
		s.t.Errorf("payload: %v", err)
		return
	}
	d, err := p.Check(s.req)
	if err == nil {
		err = d.VerifyVoucher(p)
	}
	if err != nil {
		s.t.Errorf("payment: %v", err)
		return
	}
	if p.Deposit != nil {
		s.balance.Add(s.balance, p.Deposit.Amount)
	}
	price, _ := new(big.Int).SetString(s.req.Amount, 10)
	cs := batch.ChannelState{ChannelID: p.ChannelID.Hex(), Balance: s.balance.String(), TotalClaimed: "0", RefundNonce: "0"}
	if want := new(big.Int).Add(s.charged, price); p.MaxClaimableAmount.Cmp(want) != 0 {
		s.refused++
		cs.ChargedCumulativeAmount = s.charged.String()
		var vs *batch.VoucherState
		if s.last.Signature != nil {
			vs = &batch.VoucherState{SignedMaxClaimable: s.last.MaxClaimableAmount.String(), Signature: hexutil.Encode(s.last.Signature)}
		}
		offer(batch.ReasonCumulativeAmountMismatch, batch.Corrective(s.req, cs, vs))
		return
	}
	s.charged.Add(s.charged, price)
	s.last = p
	s.paid++
	cs.ChargedCumulativeAmount = s.charged.String()
	if !s.lose {
		sr, _ := x402.EncodeHeader(batch.ChargeResponse(s.req.Network, p.Channel.Payer.Hex(), price, cs, "", ""))
		w.Header().Set(x402.HeaderPaymentResponse, sr)
	}
	s.lose = false
	_, _ = w.Write([]byte(`{"ok":true}`))
}

func newSeller(t *testing.T, minDeposit string) (*seller, *httptest.Server) {
	_, payTo := newKey(t)
	_, auth := newKey(t)
	req, err := batch.NewRequirements(batch.Offer{Network: x402.NetworkBase, Amount: "1000", PayTo: payTo.Hex(), ReceiverAuthorizer: auth, WithdrawDelay: 900, MinDeposit: minDeposit})
	if err != nil {
		t.Fatal(err)
	}
	s := &seller{t: t, req: req, charged: new(big.Int), balance: new(big.Int)}
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	return s, srv
}

func newKey(t *testing.T) (*ecdsa.PrivateKey, common.Address) {
	k, err := crypto.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	return k, crypto.PubkeyToAddress(k.PublicKey)
}

func get(t *testing.T, hc *http.Client, url string) *http.Response {
	t.Helper()
	resp, err := hc.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp
}

// TestBatchStateFile: the first payment deposits (the configured amount
// raised to minDeposit), later ones are vouchers of the cumulative charge;
// the state survives a new Scheme on the same directory; a lost answer is
// repaired by one corrective 402 and a retry; a corrective 402 claiming a
// charge beyond the ceilings signed is an error and changes nothing.
func TestBatchStateFile(t *testing.T) {
	s, srv := newSeller(t, "50000")
	payer, _ := newKey(t)
	dir := t.TempDir()
	open := func() (*batchclient.Scheme, *http.Client) {
		bs, err := batchclient.New(batchclient.Config{Key: payer, Dir: dir, Deposit: big.NewInt(20_000)})
		if err != nil {
			t.Fatal(err)
		}
		return bs, client.New(nil, client.WithSchemes(bs))
	}
	bs, hc := open()
	for i := 0; i < 3; i++ {
		if r := get(t, hc, srv.URL); r.StatusCode != 200 {
			t.Fatalf("call %d: %d", i, r.StatusCode)
		}
	}
	if s.balance.Int64() != 50_000 || s.paid != 3 {
		t.Fatalf("deposited %s (want minDeposit 50000), paid %d", s.balance, s.paid)
	}
	st, err := bs.State(s.req)
	if err != nil || st.Charged != "3000" || st.Signed != "3000" || st.Balance != "50000" || st.Pending != "" {
		t.Fatalf("state %+v, %v", st, err)
	}

	// A new process on the same directory: vouchers go on from 3000.
	bs, hc = open()
	s.lose = true
	if r := get(t, hc, srv.URL); r.StatusCode != 200 {
		t.Fatalf("call with a lost payment response: %d", r.StatusCode)
	}
	if st, _ = bs.State(s.req); st.Charged != "3000" || st.Signed != "4000" || st.Pending != batch.TypeVoucher {
		t.Fatalf("state after a lost answer %+v: the ceiling sent must be on file", st)
	}
	if r := get(t, hc, srv.URL); r.StatusCode != 200 || s.refused != 1 || s.charged.Int64() != 5000 {
		t.Fatalf("after the corrective 402: %d, refused %d, charged %s", r.StatusCode, s.refused, s.charged)
	}
	if st, _ = bs.State(s.req); st.Charged != "5000" {
		t.Fatalf("state after the resync %+v", st)
	}

	// A server claiming a charge no voucher covers is not believed.
	s.charged.Add(s.charged, big.NewInt(7))
	if _, err := hc.Get(srv.URL); err == nil || !strings.Contains(err.Error(), "beyond the ceilings signed") {
		t.Fatalf("a server claiming an uncovered charge: %v", err)
	}
	if st, _ = bs.State(s.req); st.Charged != "5000" {
		t.Fatalf("state after a refused resync %+v", st)
	}
}

// TestBatchResyncRefusesForeignVoucher: a corrective 402 whose voucher is
// not the payer's, or whose charge exceeds every ceiling signed, is an
// error and the state is left alone.
func TestBatchResyncRefusesForeignVoucher(t *testing.T) {
	s, _ := newSeller(t, "")
	payer, _ := newKey(t)
	other, _ := newKey(t)
	bs, err := batchclient.New(batchclient.Config{Key: payer, Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bs.Payload(context.Background(), s.req, time.Now(), 0); err != nil {
		t.Fatal(err)
	}
	ch, _, _ := batch.NewChannel(payer, s.req, common.Hash{})
	d := batch.NewDomain(8453)
	id := d.ChannelID(ch)
	cs := batch.ChannelState{ChannelID: id.Hex(), Balance: "100000", TotalClaimed: "0", RefundNonce: "0", ChargedCumulativeAmount: "1000"}
	for name, signer := range map[string]*ecdsa.PrivateKey{"another key": other, "the payer, above its ceilings": payer} {
		ceiling := big.NewInt(1000)
		if signer == payer {
			ceiling = big.NewInt(9000)
			cs.ChargedCumulativeAmount = "9000"
		}
		sig, _ := d.SignVoucher(signer, id, ceiling)
		pr := x402.PaymentRequired{X402Version: 2, Accepts: []x402.PaymentRequirements{batch.Corrective(s.req, cs, &batch.VoucherState{SignedMaxClaimable: ceiling.String(), Signature: sig})}}
		if again, err := bs.Resync(context.Background(), s.req, pr); err == nil || again {
			t.Errorf("%s: resync %v, %v", name, again, err)
		}
	}
	if st, _ := bs.State(s.req); st.Charged != "0" || st.Signed != "1000" || !strings.EqualFold(st.ChannelID, id.Hex()) {
		t.Fatalf("state after refused resyncs: %+v", st)
	}
}

// TestBatchDepositCap: a minDeposit over Config.MaxDeposit is refused
// before anything is signed or written.
func TestBatchDepositCap(t *testing.T) {
	s, _ := newSeller(t, "50000")
	payer, _ := newKey(t)
	bs, err := batchclient.New(batchclient.Config{Key: payer, Dir: t.TempDir(), MaxDeposit: big.NewInt(40_000)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bs.Payload(context.Background(), s.req, time.Now(), 0); err == nil || !strings.Contains(err.Error(), "over the cap 40000") {
		t.Fatalf("a minDeposit over the cap: %v", err)
	}
	if st, _ := bs.State(s.req); st.Signed != "0" {
		t.Fatalf("state after a refused deposit: %+v", st)
	}
}

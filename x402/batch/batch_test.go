package batch_test

import (
	"encoding/json"
	"errors"
	"math/big"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/crypto"

	"github.com/seed1284c1d2/svc/x402"
	"github.com/seed1284c1d2/svc/x402/batch"
)

// vectors is testdata/vectors.json, written by e2e/chain/batch-vectors.mjs
// with @x402/evm and viem.
type vectors struct {
	PayerKey      string `json:"payerKey"`
	AuthorizerKey string `json:"authorizerKey"`
	Cases         []struct {
		ChainID             int64               `json:"chainId"`
		Config              batch.ChannelConfig `json:"config"`
		ChannelID           common.Hash         `json:"channelId"`
		MaxClaimableAmount  string              `json:"maxClaimableAmount"`
		VoucherDigest       common.Hash         `json:"voucherDigest"`
		VoucherSignature    string              `json:"voucherSignature"`
		RefundNonce         string              `json:"refundNonce"`
		RefundAmount        string              `json:"refundAmount"`
		RefundDigest        common.Hash         `json:"refundDigest"`
		RefundSignature     string              `json:"refundSignature"`
		ClaimBatchDigest    common.Hash         `json:"claimBatchDigest"`
		ClaimBatchSignature string              `json:"claimBatchSignature"`
		DepositSalt         string              `json:"depositSalt"`
		DepositNonce        common.Hash         `json:"depositNonce"`
		Claims              []struct {
			ChannelID          common.Hash `json:"channelId"`
			MaxClaimableAmount string      `json:"maxClaimableAmount"`
			TotalClaimed       string      `json:"totalClaimed"`
		} `json:"claims"`
	} `json:"cases"`
}

func bigOf(t *testing.T, s string) *big.Int {
	t.Helper()
	v, ok := new(big.Int).SetString(s, 0)
	if !ok {
		t.Fatalf("number %q", s)
	}
	return v
}

// The channel ids, digests and signatures are the reference SDK's, on two
// chains, for a channel with a payer authorizer and one without.
func TestVectorsOfTheReferenceSDK(t *testing.T) {
	raw, err := os.ReadFile("testdata/vectors.json")
	if err != nil {
		t.Fatal(err)
	}
	var v vectors
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	payerKey, _ := crypto.HexToECDSA(strings.TrimPrefix(v.PayerKey, "0x"))
	authKey, _ := crypto.HexToECDSA(strings.TrimPrefix(v.AuthorizerKey, "0x"))
	if len(v.Cases) != 4 {
		t.Fatalf("%d cases", len(v.Cases))
	}
	for _, c := range v.Cases {
		ch, err := batch.ParseChannelConfig(c.Config)
		if err != nil {
			t.Fatal(err)
		}
		d := batch.NewDomain(c.ChainID)
		id := d.ChannelID(ch)
		if id != c.ChannelID {
			t.Errorf("chain %d: channel id %s, want %s", c.ChainID, id, c.ChannelID)
		}
		amt := bigOf(t, c.MaxClaimableAmount)
		if got := d.VoucherDigest(id, amt); got != c.VoucherDigest {
			t.Errorf("chain %d: voucher digest %s, want %s", c.ChainID, got, c.VoucherDigest)
		}
		if sig, _ := d.SignVoucher(payerKey, id, amt); sig != c.VoucherSignature {
			t.Errorf("chain %d: voucher signature %s, want %s", c.ChainID, sig, c.VoucherSignature)
		}
		if signer, err := d.VoucherSigner(id, amt, hexutil.MustDecode(c.VoucherSignature)); err != nil || signer != crypto.PubkeyToAddress(payerKey.PublicKey) {
			t.Errorf("chain %d: voucher signer %s, %v", c.ChainID, signer, err)
		}
		nonce, amount := bigOf(t, c.RefundNonce), bigOf(t, c.RefundAmount)
		if got := d.RefundDigest(id, nonce, amount); got != c.RefundDigest {
			t.Errorf("chain %d: refund digest %s, want %s", c.ChainID, got, c.RefundDigest)
		}
		if sig, _ := d.SignRefund(authKey, id, nonce, amount); sig != c.RefundSignature {
			t.Errorf("chain %d: refund signature %s", c.ChainID, sig)
		}
		var entries []batch.ClaimEntry
		for _, e := range c.Claims {
			entries = append(entries, batch.ClaimEntry{ChannelID: e.ChannelID, MaxClaimableAmount: bigOf(t, e.MaxClaimableAmount), TotalClaimed: bigOf(t, e.TotalClaimed)})
		}
		if got := d.ClaimBatchDigest(entries); got != c.ClaimBatchDigest {
			t.Errorf("chain %d: claim batch digest %s, want %s", c.ChainID, got, c.ClaimBatchDigest)
		}
		if sig, _ := d.SignClaimBatch(authKey, entries); sig != c.ClaimBatchSignature {
			t.Errorf("chain %d: claim batch signature %s", c.ChainID, sig)
		}
		if got := batch.DepositNonce(id, bigOf(t, c.DepositSalt)); got != c.DepositNonce {
			t.Errorf("chain %d: deposit nonce %s, want %s", c.ChainID, got, c.DepositNonce)
		}
		if got := ch.Config(); !strings.EqualFold(got.Payer, c.Config.Payer) || got.WithdrawDelay != c.Config.WithdrawDelay || got.Salt != c.Config.Salt {
			t.Errorf("Config() %+v", got)
		}
	}
}

// fixture is a channel paying the requirements of an offer, with its keys.
type fixture struct {
	req    x402.PaymentRequirements
	ch     batch.Channel
	d      batch.Domain
	id     common.Hash
	payer  *keyPair
	author *keyPair
}

type keyPair struct {
	hex  string
	addr common.Address
}

func newFixture(t *testing.T) fixture {
	t.Helper()
	pk, _ := crypto.HexToECDSA(strings.Repeat("11", 32))
	ak, _ := crypto.HexToECDSA(strings.Repeat("22", 32))
	payer := crypto.PubkeyToAddress(pk.PublicKey)
	auth := crypto.PubkeyToAddress(ak.PublicKey)
	payTo := common.HexToAddress("0x00000000000000000000000000000000000000a1")
	req, err := batch.NewRequirements(batch.Offer{Network: x402.NetworkBase, Amount: "1000", PayTo: payTo.Hex(), ReceiverAuthorizer: auth, WithdrawDelay: 900})
	if err != nil {
		t.Fatal(err)
	}
	ch := batch.Channel{Payer: payer, PayerAuthorizer: payer, Receiver: payTo, ReceiverAuthorizer: auth, Token: common.HexToAddress(req.Asset), WithdrawDelay: 900}
	d := batch.NewDomain(8453)
	return fixture{req: req, ch: ch, d: d, id: d.ChannelID(ch), payer: &keyPair{strings.Repeat("11", 32), payer}, author: &keyPair{strings.Repeat("22", 32), auth}}
}

// voucher returns the JSON of a voucher payload of ch for id, signed by
// the key.
func voucher(t *testing.T, d batch.Domain, ch batch.Channel, id common.Hash, amount int64, keyHex string) []byte {
	t.Helper()
	k, _ := crypto.HexToECDSA(keyHex)
	sig, err := d.SignVoucher(k, id, big.NewInt(amount))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(batch.Payload{Type: batch.TypeVoucher, ChannelConfig: ch.Config(),
		Voucher: batch.Voucher{ChannelID: id.Hex(), MaxClaimableAmount: big.NewInt(amount).String(), Signature: sig}})
	return b
}

func reasonOf(err error) string {
	var e *batch.Error
	if errors.As(err, &e) {
		return e.Reason
	}
	return ""
}

// A voucher of the requirements' channel, signed by its payer authorizer,
// passes Check and VerifyVoucher; each mismatch the specification lists
// is refused with its reason.
func TestCheckAndVerifyVoucher(t *testing.T) {
	f := newFixture(t)
	p, err := batch.ParsePayload(voucher(t, f.d, f.ch, f.id, 5000, f.payer.hex))
	if err != nil {
		t.Fatal(err)
	}
	d, err := p.Check(f.req)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.VerifyVoucher(p); err != nil {
		t.Fatal(err)
	}
	other := func(mut func(*batch.Channel)) batch.Channel {
		c := f.ch
		mut(&c)
		return c
	}
	x := common.HexToAddress("0x00000000000000000000000000000000000000ff")
	for _, tc := range []struct {
		name   string
		ch     batch.Channel
		reason string
	}{
		{"another token", other(func(c *batch.Channel) { c.Token = x }), batch.ReasonTokenMismatch},
		{"another receiver", other(func(c *batch.Channel) { c.Receiver = x }), batch.ReasonReceiverMismatch},
		{"another receiver authorizer", other(func(c *batch.Channel) { c.ReceiverAuthorizer = x }), batch.ReasonReceiverAuthorizerMismatch},
		{"another withdrawal delay", other(func(c *batch.Channel) { c.WithdrawDelay = 901 }), batch.ReasonWithdrawDelayMismatch},
	} {
		p, err := batch.ParsePayload(voucher(t, f.d, tc.ch, f.d.ChannelID(tc.ch), 5000, f.payer.hex))
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if _, err := p.Check(f.req); reasonOf(err) != tc.reason {
			t.Errorf("%s: %v, want %s", tc.name, err, tc.reason)
		}
	}
	// The channel id of another configuration, or of another chain.
	p, _ = batch.ParsePayload(voucher(t, f.d, f.ch, batch.NewDomain(84532).ChannelID(f.ch), 5000, f.payer.hex))
	if _, err := p.Check(f.req); reasonOf(err) != batch.ReasonChannelIDMismatch {
		t.Errorf("another chain's id: %v", err)
	}
	// Requirements of another scheme or an unknown network.
	req := f.req
	req.Scheme = x402.SchemeExact
	if _, err := p.Check(req); reasonOf(err) != batch.ReasonScheme {
		t.Errorf("exact requirements: %v", err)
	}
	req = f.req
	req.Network = "eip155:1"
	if _, err := p.Check(req); reasonOf(err) != batch.ReasonNetworkMismatch {
		t.Errorf("unknown network: %v", err)
	}
	// Signed by another key; the amount altered after signing.
	forged, _ := batch.ParsePayload(voucher(t, f.d, f.ch, f.id, 5000, f.author.hex))
	if err := f.d.VerifyVoucher(forged); reasonOf(err) != batch.ReasonVoucherSignature {
		t.Errorf("forged voucher: %v", err)
	}
	altered, _ := batch.ParsePayload(voucher(t, f.d, f.ch, f.id, 5000, f.payer.hex))
	altered.MaxClaimableAmount = big.NewInt(50000)
	if err := f.d.VerifyVoucher(altered); reasonOf(err) != batch.ReasonVoucherSignature {
		t.Errorf("altered voucher: %v", err)
	}
	// A channel without a payer authorizer needs the chain.
	noAuth := other(func(c *batch.Channel) { c.PayerAuthorizer = common.Address{} })
	p, _ = batch.ParsePayload(voucher(t, f.d, noAuth, f.d.ChannelID(noAuth), 5000, f.payer.hex))
	if err := f.d.VerifyVoucher(p); !errors.Is(err, batch.ErrNeedsEIP1271) {
		t.Errorf("no payer authorizer: %v", err)
	}
}

// Malformed payloads are refused with their kind's reason.
func TestParsePayloadRefusals(t *testing.T) {
	f := newFixture(t)
	good := string(voucher(t, f.d, f.ch, f.id, 5000, f.payer.hex))
	sig := good[strings.Index(good, `"signature":"`)+13 : strings.LastIndex(good, `"`)]
	for _, tc := range []struct {
		name, raw, reason string
	}{
		{"not JSON", `{`, batch.ReasonPayloadType},
		{"unknown type", strings.Replace(good, `"voucher",`, `"claim",`, 1), batch.ReasonPayloadType},
		{"bad payer", strings.Replace(good, f.ch.Payer.Hex(), "0x12", 1), batch.ReasonVoucherPayload},
		{"zero receiver", strings.Replace(good, f.ch.Receiver.Hex(), "0x0000000000000000000000000000000000000000", 1), batch.ReasonVoucherPayload},
		{"short salt", strings.Replace(good, `"salt":"0x00`, `"salt":"0x`, 1), batch.ReasonVoucherPayload},
		{"delay too short", strings.Replace(good, `"withdrawDelay":900`, `"withdrawDelay":899`, 1), batch.ReasonWithdrawDelayOutOfRange},
		{"delay too long", strings.Replace(good, `"withdrawDelay":900`, `"withdrawDelay":2592001`, 1), batch.ReasonWithdrawDelayOutOfRange},
		{"bad channel id", strings.Replace(good, f.id.Hex(), "0x1234", 1), batch.ReasonChannelIDInvalid},
		{"negative amount", strings.Replace(good, `"5000"`, `"-5000"`, 1), batch.ReasonVoucherPayload},
		{"amount above 2^128", strings.Replace(good, `"5000"`, `"340282366920938463463374607431768211456"`, 1), batch.ReasonVoucherPayload},
		{"odd signature", strings.Replace(good, sig, sig+"0", 1), batch.ReasonVoucherPayload},
		{"non-hex signature", strings.Replace(good, sig, "0xzz", 1), batch.ReasonVoucherPayload},
		{"voucher with an amount", strings.Replace(good, `"type":"voucher"`, `"type":"voucher","amount":"5"`, 1), batch.ReasonVoucherPayload},
		{"deposit without deposit", strings.Replace(good, `"type":"voucher"`, `"type":"deposit"`, 1), batch.ReasonDepositPayload},
		{"permit2 deposit", strings.Replace(good, `"type":"voucher"`, `"type":"deposit","deposit":{"amount":"10","authorization":{"permit2Authorization":{"nonce":"1"}}}`, 1), batch.ReasonERC3009AuthorizationRequired},
		{"zero deposit", strings.Replace(good, `"type":"voucher"`, `"type":"deposit","deposit":{"amount":"0","authorization":{}}`, 1), batch.ReasonDepositPayload},
		{"refund of zero", strings.Replace(good, `"type":"voucher"`, `"type":"refund","amount":"0"`, 1), batch.ReasonRefundAmountInvalid},
		{"refund of a word", strings.Replace(good, `"type":"voucher"`, `"type":"refund","amount":"all"`, 1), batch.ReasonRefundAmountInvalid},
	} {
		if _, err := batch.ParsePayload([]byte(tc.raw)); reasonOf(err) != tc.reason {
			t.Errorf("%s: %v, want %s", tc.name, err, tc.reason)
		}
	}
	// A deposit with its EIP-3009 authorization; a refund with and without
	// an amount.
	dep := strings.Replace(good, `"type":"voucher"`, `"type":"deposit","deposit":{"amount":"100000","authorization":{"erc3009Authorization":{"validAfter":"0","validBefore":"1770000000","salt":"0x`+strings.Repeat("5a", 32)+`","signature":"`+sig+`"}}}`, 1)
	p, err := batch.ParsePayload([]byte(dep))
	if err != nil || p.Deposit == nil || p.Deposit.Amount.Int64() != 100000 || p.Deposit.ValidBefore.Int64() != 1770000000 || p.Deposit.Salt.Text(16) != strings.Repeat("5a", 32) {
		t.Fatalf("deposit: %+v, %v", p.Deposit, err)
	}
	p, err = batch.ParsePayload([]byte(strings.Replace(good, `"type":"voucher"`, `"type":"refund","amount":"1500"`, 1)))
	if err != nil || p.RefundAmount.Int64() != 1500 {
		t.Fatalf("partial refund: %v, %v", p.RefundAmount, err)
	}
	p, err = batch.ParsePayload([]byte(strings.Replace(good, `"type":"voucher"`, `"type":"refund"`, 1)))
	if err != nil || p.RefundAmount != nil {
		t.Fatalf("full refund: %v, %v", p.RefundAmount, err)
	}
}

// Requirements travel as JSON and come back; a corrective 402 adds the
// channel and voucher state; a payment response carries the charge and
// the snapshot; claim and settle payloads parse.
func TestRequirementsAndResponses(t *testing.T) {
	f := newFixture(t)
	b, _ := json.Marshal(f.req)
	if !strings.Contains(string(b), `"withdrawDelay":900`) || !strings.Contains(string(b), `"name":"USD Coin"`) || !strings.Contains(string(b), `"scheme":"batch-settlement"`) {
		t.Fatalf("requirements %s", b)
	}
	var back x402.PaymentRequirements
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	e, err := batch.ParseExtra(back.Extra)
	if err != nil || e.ReceiverAuthorizer != f.author.addr.Hex() || e.WithdrawDelay != 900 || e.Version != "2" {
		t.Fatalf("extra %+v, %v", e, err)
	}
	for _, bad := range []map[string]any{
		{"withdrawDelay": 900.0, "name": "USD Coin", "version": "2"},
		{"receiverAuthorizer": "0x0000000000000000000000000000000000000000", "withdrawDelay": 900.0, "name": "USD Coin", "version": "2"},
		{"receiverAuthorizer": f.author.addr.Hex(), "withdrawDelay": 60.0, "name": "USD Coin", "version": "2"},
		{"receiverAuthorizer": f.author.addr.Hex(), "withdrawDelay": 900.0},
		{"receiverAuthorizer": f.author.addr.Hex(), "withdrawDelay": 900.0, "name": "USD Coin", "version": "2", "minDeposit": "1e6"},
	} {
		if _, err := batch.ParseExtra(bad); err == nil {
			t.Errorf("ParseExtra(%v) accepted", bad)
		}
	}
	if _, err := batch.NewRequirements(batch.Offer{Network: x402.NetworkBase, Amount: "0", PayTo: f.ch.Receiver.Hex(), ReceiverAuthorizer: f.author.addr, WithdrawDelay: 900}); err == nil {
		t.Error("a zero amount was accepted")
	}
	if _, err := batch.NewRequirements(batch.Offer{Network: x402.NetworkBase, Amount: "10", PayTo: f.ch.Receiver.Hex(), WithdrawDelay: 900}); err == nil {
		t.Error("a zero receiver authorizer was accepted")
	}

	cs := batch.ChannelState{ChannelID: f.id.Hex(), Balance: "100000", TotalClaimed: "500", RefundNonce: "1", ChargedCumulativeAmount: "3200"}
	corr := batch.Corrective(f.req, cs, &batch.VoucherState{SignedMaxClaimable: "3200", Signature: "0xab"})
	if _, ok := f.req.Extra["channelState"]; ok {
		t.Fatal("Corrective changed its argument's extra")
	}
	e, err = batch.ParseExtra(corr.Extra)
	if err != nil || e.ChannelState == nil || *e.ChannelState != cs || e.VoucherState == nil || e.VoucherState.SignedMaxClaimable != "3200" {
		t.Fatalf("corrective extra %+v, %v", e, err)
	}

	resp := batch.ChargeResponse(x402.NetworkBase, f.ch.Payer.Hex(), big.NewInt(700), cs, "", "")
	b, _ = json.Marshal(resp)
	if !strings.Contains(string(b), `"transaction":""`) || !strings.Contains(string(b), `"chargedAmount":"700"`) || !strings.Contains(string(b), `"chargedCumulativeAmount":"3200"`) {
		t.Fatalf("voucher response %s", b)
	}
	var sr x402.SettleResponse
	_ = json.Unmarshal(b, &sr)
	re, err := batch.ParseResponseExtra(sr.Extra)
	if err != nil || re.ChargedAmount != "700" || re.ChannelState == nil || *re.ChannelState != cs {
		t.Fatalf("response extra %+v, %v", re, err)
	}

	k, _ := crypto.HexToECDSA(f.payer.hex)
	vsig, _ := f.d.SignVoucher(k, f.id, big.NewInt(5000))
	claim := batch.Claim{Channel: f.ch, MaxClaimableAmount: big.NewInt(5000), Signature: hexutil.MustDecode(vsig), TotalClaimed: big.NewInt(4200)}
	b, _ = json.Marshal(batch.ClaimPayload{Type: batch.TypeClaim, Claims: []batch.VoucherClaim{claim.Row()}})
	_, claims, err := batch.ParseClaimPayload(b)
	if err != nil || len(claims) != 1 || claims[0].TotalClaimed.Int64() != 4200 || claims[0].Channel != f.ch {
		t.Fatalf("claim payload %s: %+v, %v", b, claims, err)
	}
	over := claim
	over.TotalClaimed = big.NewInt(5001)
	b, _ = json.Marshal(batch.ClaimPayload{Type: batch.TypeClaim, Claims: []batch.VoucherClaim{over.Row()}})
	if _, _, err := batch.ParseClaimPayload(b); reasonOf(err) != batch.ReasonClaimPayload {
		t.Errorf("a claim above its voucher: %v", err)
	}
	b, _ = json.Marshal(batch.SettlePayload{Type: batch.TypeSettle, Receiver: f.ch.Receiver.Hex(), Token: f.ch.Token.Hex()})
	if r, tok, err := batch.ParseSettlePayload(b); err != nil || r != f.ch.Receiver || tok != f.ch.Token {
		t.Fatalf("settle payload: %s %s %v", r, tok, err)
	}
	if got := batch.PayloadType(b); got != batch.TypeSettle {
		t.Errorf("PayloadType %q", got)
	}
}

// The embedded ABI parses and packs the calls a facilitator makes.
func TestCalldata(t *testing.T) {
	f := newFixture(t)
	a := batch.SettlementABI()
	for name, sel := range map[string]string{
		"deposit":             "deposit((address,address,address,address,address,uint40,bytes32),uint128,address,bytes)",
		"claimWithSignature":  "claimWithSignature((((address,address,address,address,address,uint40,bytes32),uint128),bytes,uint128)[],bytes)",
		"settle":              "settle(address,address)",
		"refundWithSignature": "refundWithSignature((address,address,address,address,address,uint40,bytes32),uint128,uint256,bytes)",
		"channels":            "channels(bytes32)",
		"multicall":           "multicall(bytes[])",
	} {
		m, ok := a.Methods[name]
		if !ok || m.Sig != sel {
			t.Errorf("%s: %q, want %q", name, m.Sig, sel)
		}
	}
	dep := batch.ERC3009Deposit{Amount: big.NewInt(1), ValidAfter: new(big.Int), ValidBefore: big.NewInt(2), Salt: big.NewInt(3), Signature: []byte{1, 2}}
	data, err := batch.DepositCalldata(f.ch, dep)
	if err != nil || len(data) < 4 || common.Bytes2Hex(data[:4]) != common.Bytes2Hex(a.Methods["deposit"].ID) {
		t.Fatalf("deposit calldata: %v", err)
	}
	calls, err := batch.ChannelViewCalls(f.id)
	if err != nil {
		t.Fatal(err)
	}
	words := func(vals ...int64) []byte {
		var out []byte
		for _, v := range vals {
			out = append(out, common.LeftPadBytes(big.NewInt(v).Bytes(), 32)...)
		}
		return out
	}
	st, err := batch.DecodeChannelViews([3][]byte{words(100, 40), words(60, 1700000000), words(2)})
	if err != nil || st.Balance.Int64() != 100 || st.TotalClaimed.Int64() != 40 || st.WithdrawRequestedAt != 1700000000 || st.RefundNonce.Int64() != 2 || len(calls[0]) != 36 {
		t.Fatalf("views %+v, %v", st, err)
	}
	if cs := st.State(f.id); cs.Balance != "100" || cs.RefundNonce != "2" || cs.ChannelID != f.id.Hex() {
		t.Fatalf("state %+v", cs)
	}
}

// A payer's payloads built by this package parse, pass Check and carry a
// voucher of the payer; NewChannel refuses requirements of another
// scheme or without a receiver authorizer.
func TestClientPayloads(t *testing.T) {
	f := newFixture(t)
	k, _ := crypto.HexToECDSA(f.payer.hex)
	ch, extra, err := batch.NewChannel(k, f.req, common.Hash{})
	if err != nil || ch != f.ch || extra.WithdrawDelay != 900 {
		t.Fatalf("NewChannel %+v %+v, %v; want %+v", ch, extra, err, f.ch)
	}
	dep, err := batch.NewDepositPayload(k, f.req, ch, big.NewInt(1000), big.NewInt(10_000), time.Unix(1_700_000_000, 0))
	if err != nil {
		t.Fatal(err)
	}
	vou, _ := batch.NewVoucherPayload(k, f.d, ch, big.NewInt(2000))
	ref, _ := batch.NewRefundPayload(k, f.d, ch, big.NewInt(2000), big.NewInt(500))
	for _, pl := range []batch.Payload{dep, vou, ref} {
		raw, _ := json.Marshal(pl)
		p, err := batch.ParsePayload(raw)
		if err != nil {
			t.Fatalf("%s: %v", pl.Type, err)
		}
		d, err := p.Check(f.req)
		if err != nil {
			t.Fatalf("%s: %v", pl.Type, err)
		}
		if err := d.VerifyVoucher(p); err != nil {
			t.Fatalf("%s: %v", pl.Type, err)
		}
	}
	if dep.Deposit.Amount != "10000" || dep.Deposit.Authorization.ERC3009.ValidBefore != "1700000300" || ref.Amount != "500" {
		t.Fatalf("deposit %+v, refund amount %q", dep.Deposit, ref.Amount)
	}
	exactReq := f.req
	exactReq.Scheme = x402.SchemeExact
	if _, _, err := batch.NewChannel(k, exactReq, common.Hash{}); err == nil {
		t.Error("NewChannel accepted exact requirements")
	}
	noAuth := f.req
	noAuth.Extra = map[string]any{"withdrawDelay": 900, "name": "USD Coin", "version": "2"}
	if _, _, err := batch.NewChannel(k, noAuth, common.Hash{}); err == nil {
		t.Error("NewChannel accepted requirements without a receiver authorizer")
	}
}

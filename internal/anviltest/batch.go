package anviltest

import (
	"context"
	"crypto/ecdsa"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"strings"
	"testing"
	"time"

	ethereum "github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/accounts/abi"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/ethclient"

	"github.com/seed1284c1d2/svc/x402"
	"github.com/seed1284c1d2/svc/x402/batch"
	"github.com/seed1284c1d2/svc/x402/exact"
)

// Escrow is the batch-settlement escrow's canonical address.
var Escrow = common.HexToAddress(batch.SettlementAddress)

// SendTx signs a transaction of key calling to with data on chain (any
// JSON-RPC endpoint with chain id ChainID), sends it and waits up to 30 s
// for its receipt.
func SendTx(ctx context.Context, ec *ethclient.Client, key *ecdsa.PrivateKey, to common.Address, data []byte) (*types.Receipt, error) {
	from := crypto.PubkeyToAddress(key.PublicKey)
	nonce, err := ec.PendingNonceAt(ctx, from)
	if err != nil {
		return nil, fmt.Errorf("nonce: %w", err)
	}
	tip, err := ec.SuggestGasTipCap(ctx)
	if err != nil {
		return nil, fmt.Errorf("tip: %w", err)
	}
	head, err := ec.HeaderByNumber(ctx, nil)
	if err != nil {
		return nil, fmt.Errorf("head: %w", err)
	}
	gas, err := ec.EstimateGas(ctx, ethereum.CallMsg{From: from, To: &to, Data: data})
	if err != nil {
		return nil, fmt.Errorf("estimate gas: %w", err)
	}
	feeCap := new(big.Int).Add(new(big.Int).Mul(head.BaseFee, big.NewInt(2)), tip)
	tx, err := types.SignTx(types.NewTx(&types.DynamicFeeTx{ChainID: big.NewInt(ChainID), Nonce: nonce, GasTipCap: tip, GasFeeCap: feeCap,
		Gas: gas + gas/5, To: &to, Data: data}), types.LatestSignerForChainID(big.NewInt(ChainID)), key)
	if err != nil {
		return nil, fmt.Errorf("sign: %w", err)
	}
	if err := ec.SendTransaction(ctx, tx); err != nil {
		return nil, fmt.Errorf("send: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for {
		r, err := ec.TransactionReceipt(ctx, tx.Hash())
		if err == nil {
			return r, nil
		}
		if !errors.Is(err, ethereum.NotFound) && ctx.Err() == nil && err.Error() != "transaction indexing is in progress" {
			return nil, fmt.Errorf("receipt of %s: %w", tx.Hash(), err)
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("no receipt for %s: %w", tx.Hash(), ctx.Err())
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// EscrowChannel reads the escrow's state of a channel (balance,
// totalClaimed, pending withdrawal, refund nonce) through Multicall3's
// tryAggregate, as the reference facilitator reads it.
func EscrowChannel(t testing.TB, ec *ethclient.Client, channelID common.Hash) batch.OnChain {
	t.Helper()
	calls, err := batch.ChannelViewCalls(channelID)
	if err != nil {
		t.Fatal(err)
	}
	results := Aggregate(t, ec, Escrow, calls[:]...)
	st, err := batch.DecodeChannelViews([3][]byte{results[0], results[1], results[2]})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// Aggregate runs calls of target through Multicall3.tryAggregate(false,
// calls) and returns their answers; a failed call fails the test.
func Aggregate(t testing.TB, ec *ethclient.Client, target common.Address, calls ...[]byte) [][]byte {
	t.Helper()
	mc := ArtifactABI(t, Multicall3ArtifactJSON)
	type call struct {
		Target   common.Address
		CallData []byte
	}
	in := make([]call, len(calls))
	for i, c := range calls {
		in[i] = call{target, c}
	}
	data, err := mc.Pack("tryAggregate", false, in)
	if err != nil {
		t.Fatal(err)
	}
	out, err := ec.CallContract(context.Background(), ethereum.CallMsg{To: &Multicall3, Data: data}, nil)
	if err != nil {
		t.Fatalf("tryAggregate: %v", err)
	}
	res, err := mc.Unpack("tryAggregate", out)
	if err != nil {
		t.Fatalf("decode tryAggregate: %v", err)
	}
	rows := res[0].([]struct {
		Success    bool    `json:"success"`
		ReturnData []uint8 `json:"returnData"`
	})
	answers := make([][]byte, len(rows))
	for i, r := range rows {
		if !r.Success {
			t.Fatalf("multicall: call %d of %s failed", i, target)
		}
		answers[i] = r.ReturnData
	}
	return answers
}

// EscrowCall runs a view of the escrow with args and returns its outputs.
func EscrowCall(t testing.TB, ec *ethclient.Client, method string, args ...any) []any {
	t.Helper()
	data, err := batch.SettlementABI().Pack(method, args...)
	if err != nil {
		t.Fatal(err)
	}
	return EscrowView(t, ec, method, data)
}

// EscrowView runs a view of the escrow with its calldata and returns its
// outputs.
func EscrowView(t testing.TB, ec *ethclient.Client, method string, data []byte) []any {
	t.Helper()
	a := batch.SettlementABI()
	out, err := ec.CallContract(context.Background(), ethereum.CallMsg{To: &Escrow, Data: data}, nil)
	if err != nil {
		t.Fatalf("%s: %v", method, err)
	}
	res, err := a.Unpack(method, out)
	if err != nil {
		t.Fatalf("decode %s: %v", method, err)
	}
	return res
}

// TokenBalanceOf returns the TestUSDC balance of addr on any chain.
func TokenBalanceOf(t testing.TB, ec *ethclient.Client, addr common.Address) *big.Int {
	t.Helper()
	_, token, err := LoadArtifact()
	if err != nil {
		t.Fatal(err)
	}
	data, _ := token.Pack("balanceOf", addr)
	out, err := ec.CallContract(context.Background(), ethereum.CallMsg{To: &USDC, Data: data}, nil)
	if err != nil {
		t.Fatalf("balanceOf: %v", err)
	}
	return new(big.Int).SetBytes(out)
}

// Actor sends transactions to the escrow signed by Key and checks that
// calls are refused (eth_call from its address reverts).
type Actor struct {
	T   testing.TB
	EC  *ethclient.Client
	Key *ecdsa.PrivateKey
}

// OK sends a transaction of data (err is data's packing error) and fails
// the test unless it succeeds.
func (a Actor) OK(what string, data []byte, err error) *types.Receipt {
	a.T.Helper()
	if err != nil {
		a.T.Fatal(err)
	}
	r, err := SendTx(context.Background(), a.EC, a.Key, Escrow, data)
	if err != nil {
		a.T.Fatalf("%s: %v", what, err)
	}
	if r.Status != types.ReceiptStatusSuccessful {
		a.T.Fatalf("%s: transaction %s reverted", what, r.TxHash)
	}
	return r
}

// Refused fails the test unless the escrow refuses data from the actor.
func (a Actor) Refused(what string, data []byte, err error) {
	a.T.Helper()
	if err != nil {
		a.T.Fatal(err)
	}
	from := crypto.PubkeyToAddress(a.Key.PublicKey)
	if _, err := a.EC.CallContract(context.Background(), ethereum.CallMsg{From: from, To: &Escrow, Data: data}, nil); err == nil {
		a.T.Errorf("%s: the escrow accepted it", what)
	}
}

// RandomSalt returns 32 random bytes.
func RandomSalt(t testing.TB) common.Hash {
	t.Helper()
	var h common.Hash
	if _, err := rand.Read(h[:]); err != nil {
		t.Fatal(err)
	}
	return h
}

// NewDeposit returns an EIP-3009 deposit of amount into channelID signed
// by the payer's key, valid from 0 to an hour from now, with a random salt.
func NewDeposit(t testing.TB, payer *ecdsa.PrivateKey, channelID common.Hash, amount int64) batch.ERC3009Deposit {
	t.Helper()
	n, _ := x402.LookupNetwork(x402.NetworkBase)
	salt := RandomSalt(t)
	dep := batch.ERC3009Deposit{Amount: big.NewInt(amount), ValidAfter: new(big.Int), ValidBefore: big.NewInt(time.Now().Unix() + 3600), Salt: salt.Big()}
	if err := batch.SignDeposit(payer, exact.Domain(n), channelID, &dep); err != nil {
		t.Fatal(err)
	}
	return dep
}

// BatchRoundTrip runs the escrow's life cycle on a chain that has the
// contracts of Installed: relayer (holding ETH) relays everything; payer
// (holding at least 0.1 test USDC) deposits 0.1 USDC, signs three
// cumulative vouchers; the receiver authorizer claims the latest one,
// settle sweeps it to payTo, and a signed cooperative refund returns part
// of the rest. Along the way it checks that the contract's ids and digests
// are package batch's, that the escrow's views read through Multicall3
// report each step, and that a claim signed by another key, a voucher
// signed by another key and a replayed refund are refused.
func BatchRoundTrip(t testing.TB, ec *ethclient.Client, relayer, payer *ecdsa.PrivateKey) {
	t.Helper()
	relay := Actor{T: t, EC: ec, Key: relayer}
	authKey, authAddr := NewKey(t)
	_, payTo := NewKey(t)
	payerAddr := crypto.PubkeyToAddress(payer.PublicKey)
	ch := batch.Channel{Payer: payerAddr, PayerAuthorizer: payerAddr, Receiver: payTo, ReceiverAuthorizer: authAddr, Token: USDC, WithdrawDelay: 900, Salt: RandomSalt(t)}
	d := batch.NewDomain(ChainID)
	id := d.ChannelID(ch)

	// The contract's identities and digests are the package's.
	data, err := batch.ChannelIDCalldata(ch)
	if err != nil {
		t.Fatal(err)
	}
	if got := common.Hash(EscrowView(t, ec, "getChannelId", data)[0].([32]byte)); got != id {
		t.Fatalf("getChannelId %s, package batch %s", got, id)
	}
	if got := common.Hash(EscrowCall(t, ec, "getVoucherDigest", id, big.NewInt(4000))[0].([32]byte)); got != d.VoucherDigest(id, big.NewInt(4000)) {
		t.Fatalf("getVoucherDigest %s", got)
	}
	if got := common.Hash(EscrowCall(t, ec, "getRefundDigest", id, big.NewInt(3), big.NewInt(77))[0].([32]byte)); got != d.RefundDigest(id, big.NewInt(3), big.NewInt(77)) {
		t.Fatalf("getRefundDigest %s", got)
	}

	// Deposit 0.1 USDC through the EIP-3009 collector.
	escrowBefore := TokenBalanceOf(t, ec, Escrow)
	dep := NewDeposit(t, payer, id, 100_000)
	data, err = batch.DepositCalldata(ch, dep)
	relay.OK("deposit", data, err)
	st := EscrowChannel(t, ec, id)
	if st.Balance.Int64() != 100_000 || st.TotalClaimed.Sign() != 0 || st.RefundNonce.Sign() != 0 || st.WithdrawRequestedAt != 0 {
		t.Fatalf("after the deposit: %+v", st)
	}
	if got := new(big.Int).Sub(TokenBalanceOf(t, ec, Escrow), escrowBefore); got.Int64() != 100_000 {
		t.Fatalf("the escrow received %s", got)
	}
	// The same authorization cannot deposit twice.
	data, err = batch.DepositCalldata(ch, dep)
	relay.Refused("a replayed deposit", data, err)

	// Three cumulative vouchers; the server verifies each locally.
	var last batch.Payment
	for _, cum := range []int64{1000, 2500, 4000} {
		sig, err := d.SignVoucher(payer, id, big.NewInt(cum))
		if err != nil {
			t.Fatal(err)
		}
		raw := fmt.Sprintf(`{"type":"voucher","channelConfig":%s,"voucher":{"channelId":%q,"maxClaimableAmount":"%d","signature":%q}}`, mustJSON(t, ch.Config()), id.Hex(), cum, sig)
		p, err := batch.ParsePayload([]byte(raw))
		if err != nil {
			t.Fatal(err)
		}
		if err := d.VerifyVoucher(p); err != nil {
			t.Fatalf("voucher %d: %v", cum, err)
		}
		last = p
	}

	// A voucher signed by another key is refused by the escrow.
	otherKey, _ := NewKey(t)
	forged, _ := d.SignVoucher(otherKey, id, big.NewInt(4000))
	forgedClaims := []batch.Claim{{Channel: ch, MaxClaimableAmount: big.NewInt(4000), Signature: hexDecode(t, forged), TotalClaimed: big.NewInt(4000)}}
	sig, _ := d.SignClaimBatch(authKey, d.ClaimEntries(forgedClaims))
	data, err = batch.ClaimWithSignatureCalldata(forgedClaims, hexDecode(t, sig))
	relay.Refused("a claim of a forged voucher", data, err)

	// The claim of the latest voucher, signed by another key than the
	// receiver authorizer, is refused; signed by it, it is accepted.
	claims := []batch.Claim{{Channel: ch, MaxClaimableAmount: last.MaxClaimableAmount, Signature: last.Signature, TotalClaimed: big.NewInt(4000)}}
	data, err = batch.ClaimBatchDigestCalldata(claims)
	if err != nil {
		t.Fatal(err)
	}
	if got := common.Hash(EscrowView(t, ec, "getClaimBatchDigest", data)[0].([32]byte)); got != d.ClaimBatchDigest(d.ClaimEntries(claims)) {
		t.Fatalf("getClaimBatchDigest %s", got)
	}
	sig, _ = d.SignClaimBatch(otherKey, d.ClaimEntries(claims))
	data, err = batch.ClaimWithSignatureCalldata(claims, hexDecode(t, sig))
	relay.Refused("a claim not signed by the receiver authorizer", data, err)
	sig, _ = d.SignClaimBatch(authKey, d.ClaimEntries(claims))
	data, err = batch.ClaimWithSignatureCalldata(claims, hexDecode(t, sig))
	relay.OK("claimWithSignature", data, err)
	// Claiming it again changes nothing.
	relay.OK("the same claim again", data, err)
	if st := EscrowChannel(t, ec, id); st.Balance.Int64() != 100_000 || st.TotalClaimed.Int64() != 4000 {
		t.Fatalf("after the claim: %+v", st)
	}
	rec := EscrowCall(t, ec, "receivers", payTo, USDC)
	if rec[0].(*big.Int).Int64() != 4000 || rec[1].(*big.Int).Sign() != 0 {
		t.Fatalf("receivers after the claim: %v", rec)
	}

	// settle sweeps the claimed 4000 to payTo.
	data, err = batch.SettleCalldata(payTo, USDC)
	relay.OK("settle", data, err)
	if got := TokenBalanceOf(t, ec, payTo); got.Int64() != 4000 {
		t.Fatalf("payTo holds %s after the sweep, want 4000", got)
	}

	// A signed refund of 10000 returns it to the payer; its signature
	// cannot be replayed (the nonce advanced).
	payerBefore := TokenBalanceOf(t, ec, payerAddr)
	rsig, _ := d.SignRefund(authKey, id, big.NewInt(0), big.NewInt(10_000))
	data, err = batch.RefundWithSignatureCalldata(ch, big.NewInt(10_000), big.NewInt(0), hexDecode(t, rsig))
	relay.OK("refundWithSignature", data, err)
	relay.Refused("a replayed refund", data, err)
	if got := new(big.Int).Sub(TokenBalanceOf(t, ec, payerAddr), payerBefore); got.Int64() != 10_000 {
		t.Fatalf("the payer got %s back, want 10000", got)
	}
	if st := EscrowChannel(t, ec, id); st.Balance.Int64() != 90_000 || st.TotalClaimed.Int64() != 4000 || st.RefundNonce.Int64() != 1 {
		t.Fatalf("after the refund: %+v", st)
	}
}

// ArtifactABI returns the ABI of a committed artifact (one of the
// *ArtifactJSON files).
func ArtifactABI(t testing.TB, artifactJSON []byte) abi.ABI {
	t.Helper()
	var a Artifact
	if err := json.Unmarshal(artifactJSON, &a); err != nil {
		t.Fatal(err)
	}
	parsed, err := abi.JSON(strings.NewReader(string(a.ABI)))
	if err != nil {
		t.Fatal(err)
	}
	return parsed
}

func mustJSON(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func hexDecode(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hexutil.Decode(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

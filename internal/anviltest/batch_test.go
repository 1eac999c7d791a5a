package anviltest

import (
	"context"
	"crypto/ecdsa"
	"errors"
	"math/big"
	"testing"

	ethereum "github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"

	"github.com/seed1284c1d2/svc/x402"
	"github.com/seed1284c1d2/svc/x402/batch"
	"github.com/seed1284c1d2/svc/x402/exact"
)

func funded(t *testing.T, c *Chain) (*ecdsa.PrivateKey, common.Address) {
	k, a := NewKey(t)
	c.SetBalance(t, a, Ether(1))
	return k, a
}

// The payer's escape hatch: initiateWithdraw within the unclaimed escrow,
// by the payer side only, once; the receiver still claims during the
// delay; a cooperative refund reduces the pending withdrawal; finalize
// waits for the delay and pays what remains unclaimed; a refund with
// nothing left still advances the nonce.
func TestEscrowTimedWithdrawal(t *testing.T) {
	c := Start(t, Options{})
	relayerKey, _ := funded(t, c)
	payerKey, payerAddr := funded(t, c)
	authKey, authAddr := funded(t, c)
	_, payTo := NewKey(t)
	c.Mint(t, payerAddr, big.NewInt(100_000))
	relayer, payer, auth := Actor{t, c.Client, relayerKey}, Actor{t, c.Client, payerKey}, Actor{t, c.Client, authKey}

	ch := batch.Channel{Payer: payerAddr, PayerAuthorizer: payerAddr, Receiver: payTo, ReceiverAuthorizer: authAddr, Token: USDC, WithdrawDelay: 900, Salt: RandomSalt(t)}
	d := batch.NewDomain(ChainID)
	id := d.ChannelID(ch)
	dep := NewDeposit(t, payerKey, id, 100_000)
	// The collector takes orders from the escrow only: anyone else
	// presenting the payer's authorization is refused.
	collector := ArtifactABI(t, ERC3009CollectorArtifactJSON)
	cd, _ := batch.CollectorData(dep)
	steal, err := collector.Pack("collect", payerAddr, USDC, dep.Amount, id, cd)
	if err != nil {
		t.Fatal(err)
	}
	collectorAddr := common.HexToAddress(batch.ERC3009CollectorAddress)
	if _, err := c.Client.CallContract(context.Background(), ethereum.CallMsg{From: crypto.PubkeyToAddress(relayerKey.PublicKey), To: &collectorAddr, Data: steal}, nil); err == nil {
		t.Fatal("the collector took an order from a stranger")
	}
	data, err := batch.DepositCalldata(ch, dep)
	relayer.OK("deposit", data, err)
	vsig, _ := d.SignVoucher(payerKey, id, big.NewInt(30_000))

	data, err = batch.InitiateWithdrawCalldata(ch, big.NewInt(100_001))
	payer.Refused("a withdrawal above the escrow", data, err)
	data, err = batch.InitiateWithdrawCalldata(ch, big.NewInt(90_000))
	relayer.Refused("a withdrawal by a stranger", data, err)
	auth.Refused("a withdrawal by the receiver authorizer", data, err)
	payer.OK("initiateWithdraw", data, err)
	payer.Refused("a second withdrawal", data, err)
	st := EscrowChannel(t, c.Client, id)
	if st.WithdrawRequestedAt == 0 || st.WithdrawAmount.Int64() != 90_000 {
		t.Fatalf("pending withdrawal %+v", st)
	}
	data, err = batch.FinalizeWithdrawCalldata(ch)
	payer.Refused("finalize before the delay", data, err)

	// The receiver claims during the delay; a cooperative refund (direct,
	// by the receiver authorizer) reduces the pending withdrawal.
	claims := []batch.Claim{{Channel: ch, MaxClaimableAmount: big.NewInt(30_000), Signature: hexDecode(t, vsig), TotalClaimed: big.NewInt(30_000)}}
	csig, _ := d.SignClaimBatch(authKey, d.ClaimEntries(claims))
	data, err = batch.ClaimWithSignatureCalldata(claims, hexDecode(t, csig))
	relayer.OK("claim during the delay", data, err)
	refund, err := batch.RefundCalldata(ch, big.NewInt(5_000))
	relayer.Refused("a direct refund by a stranger", refund, err)
	auth.OK("refund", refund, err)
	st = EscrowChannel(t, c.Client, id)
	if st.Balance.Int64() != 95_000 || st.TotalClaimed.Int64() != 30_000 || st.WithdrawAmount.Int64() != 85_000 || st.RefundNonce.Int64() != 1 {
		t.Fatalf("after claim and refund: %+v", st)
	}

	c.IncreaseTime(t, 901)
	before := c.TokenBalance(t, payerAddr)
	data, err = batch.FinalizeWithdrawCalldata(ch)
	payer.OK("finalizeWithdraw", data, err)
	if got := new(big.Int).Sub(c.TokenBalance(t, payerAddr), before); got.Int64() != 65_000 {
		t.Fatalf("the withdrawal paid %s, want the unclaimed 65000", got)
	}
	st = EscrowChannel(t, c.Client, id)
	if st.Balance.Int64() != 30_000 || st.TotalClaimed.Int64() != 30_000 || st.WithdrawRequestedAt != 0 {
		t.Fatalf("after finalize: %+v", st)
	}
	// Nothing left: a signed refund moves nothing but advances the nonce.
	rsig, _ := d.SignRefund(authKey, id, big.NewInt(1), big.NewInt(1))
	data, err = batch.RefundWithSignatureCalldata(ch, big.NewInt(1), big.NewInt(1), hexDecode(t, rsig))
	relayer.OK("a refund with nothing left", data, err)
	if st := EscrowChannel(t, c.Client, id); st.RefundNonce.Int64() != 2 || st.Balance.Int64() != 30_000 {
		t.Fatalf("after the empty refund: %+v", st)
	}
	// The claimed funds are still the receiver's.
	data, err = batch.SettleCalldata(payTo, USDC)
	relayer.OK("settle", data, err)
	if got := c.TokenBalance(t, payTo); got.Int64() != 30_000 {
		t.Fatalf("payTo holds %s", got)
	}
}

// A channel without a payer authorizer whose payer is a smart wallet
// (ERC-1271): the deposit and the vouchers are the wallet owner's
// signatures, checked by the chain; package batch sends such vouchers to
// the chain (ErrNeedsEIP1271). claim by the receiver needs no authorizer
// signature; by anyone else it is refused.
func TestEscrowSmartWalletPayer(t *testing.T) {
	c := Start(t, Options{})
	relayerKey, _ := funded(t, c)
	receiverKey, payTo := funded(t, c)
	ownerKey, ownerAddr := NewKey(t)
	_, authAddr := NewKey(t)
	wallet := c.InstallWallet(t, ownerAddr)
	c.Mint(t, wallet, big.NewInt(50_000))
	relayer, receiver := Actor{t, c.Client, relayerKey}, Actor{t, c.Client, receiverKey}

	ch := batch.Channel{Payer: wallet, Receiver: payTo, ReceiverAuthorizer: authAddr, Token: USDC, WithdrawDelay: 3600, Salt: RandomSalt(t)}
	d := batch.NewDomain(ChainID)
	id := d.ChannelID(ch)
	n, _ := x402.LookupNetwork(x402.NetworkBase)
	dep := batch.ERC3009Deposit{Amount: big.NewInt(50_000), ValidAfter: new(big.Int), ValidBefore: big.NewInt(1 << 40), Salt: big.NewInt(42)}
	digest := batch.ReceiveAuthorizationDigest(exact.Domain(n), wallet, id, dep)
	sig, err := crypto.Sign(digest[:], ownerKey)
	if err != nil {
		t.Fatal(err)
	}
	sig[64] += 27
	dep.Signature = sig
	data, err := batch.DepositCalldata(ch, dep)
	relayer.OK("deposit from a smart wallet", data, err)

	vd := d.VoucherDigest(id, big.NewInt(20_000))
	vsig, _ := crypto.Sign(vd[:], ownerKey)
	vsig[64] += 27
	if err := d.VerifyVoucher(batch.Payment{Channel: ch, ChannelID: id, MaxClaimableAmount: big.NewInt(20_000), Signature: vsig}); !errors.Is(err, batch.ErrNeedsEIP1271) {
		t.Fatalf("VerifyVoucher of a wallet's voucher: %v", err)
	}
	claims := []batch.Claim{{Channel: ch, MaxClaimableAmount: big.NewInt(20_000), Signature: vsig, TotalClaimed: big.NewInt(20_000)}}
	claim, err := batch.ClaimCalldata(claims)
	relayer.Refused("claim by a stranger", claim, err)
	otherKey, _ := NewKey(t)
	forged, _ := d.SignVoucher(otherKey, id, big.NewInt(20_000))
	bad, err2 := batch.ClaimCalldata([]batch.Claim{{Channel: ch, MaxClaimableAmount: big.NewInt(20_000), Signature: hexDecode(t, forged), TotalClaimed: big.NewInt(20_000)}})
	receiver.Refused("a voucher the wallet does not accept", bad, err2)
	receiver.OK("claim by the receiver", claim, err)
	if st := EscrowChannel(t, c.Client, id); st.Balance.Int64() != 50_000 || st.TotalClaimed.Int64() != 20_000 {
		t.Fatalf("after the claim: %+v", st)
	}
}

// Gas of the escrow's calls on anvil, logged for the benchmarks: a
// deposit, claims of 1 and of 20 channels in one claimWithSignature, a
// sweep. A claim row must cost far less than an EIP-3009 transfer (about
// 60k gas): the scheme's point.
func TestEscrowGas(t *testing.T) {
	c := Start(t, Options{})
	relayerKey, _ := funded(t, c)
	payerKey, payerAddr := NewKey(t)
	authKey, authAddr := NewKey(t)
	_, payTo := NewKey(t)
	c.Mint(t, payerAddr, big.NewInt(10_000_000))
	relayer := Actor{t, c.Client, relayerKey}
	d := batch.NewDomain(ChainID)

	const n = 20
	claims := make([]batch.Claim, n)
	var depositGas uint64
	for i := range claims {
		ch := batch.Channel{Payer: payerAddr, PayerAuthorizer: payerAddr, Receiver: payTo, ReceiverAuthorizer: authAddr, Token: USDC, WithdrawDelay: 900, Salt: RandomSalt(t)}
		id := d.ChannelID(ch)
		data, err := batch.DepositCalldata(ch, NewDeposit(t, payerKey, id, 100_000))
		r := relayer.OK("deposit", data, err)
		if i == 0 {
			depositGas = r.GasUsed
		}
		sig, _ := d.SignVoucher(payerKey, id, big.NewInt(5000))
		claims[i] = batch.Claim{Channel: ch, MaxClaimableAmount: big.NewInt(5000), Signature: hexDecode(t, sig), TotalClaimed: big.NewInt(5000)}
	}
	claim := func(rows []batch.Claim) uint64 {
		sig, _ := d.SignClaimBatch(authKey, d.ClaimEntries(rows))
		data, err := batch.ClaimWithSignatureCalldata(rows, hexDecode(t, sig))
		return relayer.OK("claim", data, err).GasUsed
	}
	one := claim(claims[:1])
	many := claim(claims[1:])
	perRow := (many - one) / (n - 2)
	data, err := batch.SettleCalldata(payTo, USDC)
	sweep := relayer.OK("settle", data, err).GasUsed
	t.Logf("gas: deposit %d, claim of 1 channel %d, claim of %d channels %d (%d a row beyond the first), settle %d", depositGas, one, n-1, many, perRow, sweep)
	if got := c.TokenBalance(t, payTo); got.Int64() != n*5000 {
		t.Fatalf("payTo holds %s", got)
	}
	if perRow > 40_000 {
		t.Errorf("a claim row costs %d gas", perRow)
	}
}

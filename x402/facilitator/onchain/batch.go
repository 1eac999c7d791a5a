package onchain

import (
	"context"
	"crypto/ecdsa"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"strings"
	"time"

	ethereum "github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/accounts/abi"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"golang.org/x/sync/singleflight"

	"github.com/seed1284c1d2/svc/x402"
	"github.com/seed1284c1d2/svc/x402/batch"
	"github.com/seed1284c1d2/svc/x402/exact"
	"github.com/seed1284c1d2/svc/x402/internal/clip"
	"github.com/seed1284c1d2/svc/x402/internal/wire"
)

// Multicall3Address is Multicall3's address, the same on every chain: the
// batch-settlement facilitator reads a channel's state through its
// tryAggregate in one call.
const Multicall3Address = "0xcA11bde05977b3631167028862bE2a173976CA11"

// BatchConfig configures the batch-settlement facilitator of a
// Facilitator (Facilitator.Batch).
type BatchConfig struct {
	// ReceiverAuthorizerKey, when set, is the facilitator's receiver
	// authorizer: /supported announces its address as
	// extra.receiverAuthorizer, and claims and refunds of channels naming
	// it that come without the receiver authorizer's signatures are signed
	// with it. Nil: servers sign their claims and refunds themselves. It
	// is never printed, logged or put in an error.
	ReceiverAuthorizerKey *ecdsa.PrivateKey
}

// BatchFacilitator verifies and settles the "batch-settlement" scheme
// (x402/batch) on the chain of the Facilitator it was made from, sharing
// its relayer: one key, one nonce sequence, one fee policy and one
// follower of the transactions sent (Facilitator.Close stops both).
//
// Verify checks a deposit, voucher or refund payload by the scheme's
// verification rules: the configuration against the requirements (channel
// id, token, receiver, receiver authorizer, withdrawal delay), the
// voucher's signature (ECDSA against the payer authorizer, or ERC-1271
// isValidSignature of the payer when it has none), and, from one batched
// read through Multicall3, the channel's balance, totalClaimed, pending
// withdrawal and refund nonce (and for a deposit the payer's token
// balance and the EIP-3009 authorization's state). Every answer whose
// channel could be read carries its snapshot in Extra.
//
// Settle acts by the payload's type: "deposit" (the escrow's deposit
// through the EIP-3009 collector), "claim" (claimWithSignature), "settle"
// (the sweep of a receiver's claimed funds) and "refund" (the claim rows,
// if any, and refundWithSignature in one multicall). Each transaction is
// simulated against the pending block first (a refusal costs no gas), sent
// from the relayer and followed to its confirmations like the exact
// scheme's. A settlement presented again once its transaction is on chain
// (a deposit whose authorization is used, a claim the channel's
// totalClaimed already covers, a refund whose nonce is spent, a sweep with
// nothing left) sends nothing: it is answered from the chain.
//
// Safe for concurrent use.
type BatchFacilitator struct {
	f        *Facilitator
	domain   batch.Domain
	escrow   common.Address
	mc       common.Address
	authKey  *ecdsa.PrivateKey
	authAddr common.Address
	aux      abi.ABI // Multicall3.tryAggregate and ERC-1271 isValidSignature
	flight   singleflight.Group
}

var _ x402.FacilitatorScheme = (*BatchFacilitator)(nil)

// auxABI holds the few foreign functions the batch facilitator calls.
const auxABI = `[
 {"type":"function","name":"tryAggregate","stateMutability":"payable","inputs":[{"name":"requireSuccess","type":"bool"},{"name":"calls","type":"tuple[]","components":[{"name":"target","type":"address"},{"name":"callData","type":"bytes"}]}],"outputs":[{"name":"returnData","type":"tuple[]","components":[{"name":"success","type":"bool"},{"name":"returnData","type":"bytes"}]}]},
 {"type":"function","name":"isValidSignature","stateMutability":"view","inputs":[{"name":"hash","type":"bytes32"},{"name":"signature","type":"bytes"}],"outputs":[{"name":"magicValue","type":"bytes4"}]}
]`

// erc1271Magic is isValidSignature's answer for a valid signature.
var erc1271Magic = [4]byte{0x16, 0x26, 0xba, 0x7e}

// Topics of the escrow's events the facilitator reads.
var (
	topicDeposited = crypto.Keccak256Hash([]byte("Deposited(bytes32,address,uint128,uint128)"))
	topicClaimed   = crypto.Keccak256Hash([]byte("Claimed(bytes32,address,uint128,uint128)"))
	topicSettled   = crypto.Keccak256Hash([]byte("Settled(address,address,address,uint128)"))
	topicRefunded  = crypto.Keccak256Hash([]byte("Refunded(bytes32,address,uint128,uint256)"))
)

// Batch returns the batch-settlement facilitator of f's chain, sending
// through f's relayer. Register it beside f in a facilitator.Mux to serve
// both schemes.
func (f *Facilitator) Batch(cfg BatchConfig) *BatchFacilitator {
	aux, err := abi.JSON(strings.NewReader(auxABI))
	if err != nil {
		panic("x402 onchain: the batch ABI does not parse: " + err.Error()) // a build defect, caught by the tests
	}
	b := &BatchFacilitator{f: f, domain: batch.NewDomain(f.network.ChainID), escrow: common.HexToAddress(batch.SettlementAddress),
		mc: common.HexToAddress(Multicall3Address), aux: aux, authKey: cfg.ReceiverAuthorizerKey}
	if b.authKey != nil {
		b.authAddr = crypto.PubkeyToAddress(b.authKey.PublicKey)
	}
	return b
}

// ReceiverAuthorizer returns the address of the facilitator's receiver
// authorizer, the zero address when it has none.
func (b *BatchFacilitator) ReceiverAuthorizer() common.Address { return b.authAddr }

// Scheme implements x402.Mechanism: "batch-settlement".
func (b *BatchFacilitator) Scheme() string { return batch.Scheme }

// Networks implements x402.Mechanism: the Facilitator's network.
func (b *BatchFacilitator) Networks() []string { return []string{b.f.network.CAIP2} }

// Supported implements x402.Facilitator: batch-settlement on the network
// (x402 v2), with extra.receiverAuthorizer when the facilitator has a
// receiver authorizer key, and the relayer as signer.
func (b *BatchFacilitator) Supported(ctx context.Context) (x402.SupportedResponse, error) {
	if err := ctx.Err(); err != nil {
		return x402.SupportedResponse{}, err
	}
	kind := x402.SupportedKind{X402Version: 2, Scheme: batch.Scheme, Network: b.f.network.CAIP2}
	if b.authKey != nil {
		kind.Extra = map[string]any{"receiverAuthorizer": b.authAddr.Hex()}
	}
	return x402.SupportedResponse{Kinds: []x402.SupportedKind{kind}, Extensions: []string{},
		Signers: map[string][]string{"eip155:*": {b.f.relayer.addr.Hex()}}}, nil
}

// batchRefusal is a refusal with the scheme's reason.
type batchRefusal struct{ reason, msg string }

func refusal(reason, format string, args ...any) *batchRefusal {
	return &batchRefusal{reason: reason, msg: fmt.Sprintf(format, args...)}
}

// asRefusal turns a batch package refusal into a batchRefusal (other
// errors become the fallback reason).
func asRefusal(err error, fallback string) *batchRefusal {
	var be *batch.Error
	if errors.As(err, &be) && be.Reason != "" {
		return &batchRefusal{reason: be.Reason, msg: be.Msg}
	}
	return &batchRefusal{reason: fallback, msg: err.Error()}
}

// checkKind refuses requirements of another scheme or network than the
// facilitator's, and a payload accepted for another network.
func (b *BatchFacilitator) checkKind(payload x402.PaymentPayload, req x402.PaymentRequirements) *batchRefusal {
	if req.Scheme != batch.Scheme || (payload.Accepted.Scheme != "" && payload.Accepted.Scheme != batch.Scheme) {
		return refusal(batch.ReasonScheme, "scheme %q is not %s", clip.Bytes(req.Scheme, 40), batch.Scheme)
	}
	if x402.CAIP2(req.Network) != b.f.network.CAIP2 {
		return refusal(batch.ReasonNetworkMismatch, "network %q is not served by this facilitator (it settles on %s)", clip.Bytes(req.Network, 40), b.f.network.CAIP2)
	}
	if payload.Accepted.Network != "" && x402.CAIP2(payload.Accepted.Network) != b.f.network.CAIP2 {
		return refusal(batch.ReasonNetworkMismatch, "the payload was accepted for network %q, not %s", clip.Bytes(payload.Accepted.Network, 40), b.f.network.CAIP2)
	}
	return nil
}

// channelRead is what one batched read tells of a channel and, for a
// deposit, of its payer.
type channelRead struct {
	st batch.OnChain
	// payerBalance and authUsed: the deposit's payer token balance and
	// whether its EIP-3009 authorization is used (deposits only).
	payerBalance *big.Int
	authUsed     bool
	// sig1271: the payer's ERC-1271 verdict on the voucher (channels
	// without a payer authorizer only).
	sig1271 bool
}

// aggCall is one call of Multicall3.tryAggregate.
type aggCall struct {
	Target   common.Address
	CallData []byte
}

// aggregate runs calls through Multicall3.tryAggregate(false, calls) at
// block ("latest" or "pending") and returns each call's success and
// answer.
func (b *BatchFacilitator) aggregate(ctx context.Context, block string, calls []aggCall) ([]bool, [][]byte, error) {
	data, err := b.aux.Pack("tryAggregate", false, calls)
	if err != nil {
		return nil, nil, err
	}
	var out hexutil.Bytes
	if err := b.f.rpc.CallContext(ctx, &out, "eth_call", callArg{To: b.mc, Data: data}, block); err != nil {
		return nil, nil, fmt.Errorf("x402 onchain: read through Multicall3: %w", err)
	}
	res, err := b.aux.Unpack("tryAggregate", out)
	if err != nil || len(res) != 1 {
		return nil, nil, fmt.Errorf("x402 onchain: decode Multicall3's answer: %v", err)
	}
	rows, ok := res[0].([]struct {
		Success    bool    `json:"success"`
		ReturnData []uint8 `json:"returnData"`
	})
	if !ok || len(rows) != len(calls) {
		return nil, nil, errors.New("x402 onchain: Multicall3 answered an unexpected shape")
	}
	oks, answers := make([]bool, len(rows)), make([][]byte, len(rows))
	for i, r := range rows {
		oks[i], answers[i] = r.Success, r.ReturnData
	}
	return oks, answers, nil
}

// readChannel reads the channel's views (and, for p a deposit, the
// payer's balance and authorization; for a channel without payer
// authorizer, the payer's ERC-1271 verdict on the voucher) in one
// batched read.
func (b *BatchFacilitator) readChannel(ctx context.Context, id common.Hash, p *batch.Payment) (channelRead, error) {
	views, err := batch.ChannelViewCalls(id)
	if err != nil {
		return channelRead{}, err
	}
	calls := []aggCall{{b.escrow, views[0]}, {b.escrow, views[1]}, {b.escrow, views[2]}}
	dep, eip1271 := -1, -1
	if p != nil && p.Deposit != nil {
		bal, err := b.f.abi.Pack("balanceOf", p.Channel.Payer)
		if err != nil {
			return channelRead{}, err
		}
		state, err := b.f.abi.Pack("authorizationState", p.Channel.Payer, batch.DepositNonce(id, p.Deposit.Salt))
		if err != nil {
			return channelRead{}, err
		}
		dep = len(calls)
		calls = append(calls, aggCall{b.f.token, bal}, aggCall{b.f.token, state})
	}
	if p != nil && p.Channel.PayerAuthorizer == (common.Address{}) {
		data, err := b.aux.Pack("isValidSignature", b.domain.VoucherDigest(p.ChannelID, p.MaxClaimableAmount), p.Signature)
		if err != nil {
			return channelRead{}, err
		}
		eip1271 = len(calls)
		calls = append(calls, aggCall{p.Channel.Payer, data})
	}
	oks, answers, err := b.aggregate(ctx, "latest", calls)
	if err != nil {
		return channelRead{}, err
	}
	for i := range 3 {
		if !oks[i] {
			return channelRead{}, fmt.Errorf("x402 onchain: the escrow at %s does not answer its views", b.escrow.Hex())
		}
	}
	var out channelRead
	if out.st, err = batch.DecodeChannelViews([3][]byte{answers[0], answers[1], answers[2]}); err != nil {
		return channelRead{}, err
	}
	if dep >= 0 {
		if !oks[dep] || !oks[dep+1] || len(answers[dep]) != 32 || len(answers[dep+1]) != 32 {
			return channelRead{}, fmt.Errorf("x402 onchain: the token at %s does not answer balanceOf/authorizationState", b.f.token.Hex())
		}
		out.payerBalance = new(big.Int).SetBytes(answers[dep])
		out.authUsed = answers[dep+1][31] != 0
	}
	if eip1271 >= 0 {
		a := answers[eip1271]
		out.sig1271 = oks[eip1271] && len(a) >= 4 && [4]byte(a[:4]) == erc1271Magic
	}
	return out, nil
}

// snapshot is a channel's state as a verify answer's extra.
func snapshot(id common.Hash, st batch.OnChain) map[string]any {
	return map[string]any{"channelId": id.Hex(), "balance": st.Balance.String(), "totalClaimed": st.TotalClaimed.String(),
		"withdrawRequestedAt": st.WithdrawRequestedAt, "refundNonce": st.RefundNonce.String()}
}

// channelState is a channel's state as a settle answer's
// extra.channelState.
func channelState(id common.Hash, st batch.OnChain) map[string]any {
	return map[string]any{"channelState": snapshot(id, st)}
}

// localCheck runs the checks that need no chain: the payload's syntax,
// the requirements' rules 1 to 5, and the voucher's ECDSA signature when
// the channel has a payer authorizer. p is nil when the payload does not
// parse.
func (b *BatchFacilitator) localCheck(payload x402.PaymentPayload, req x402.PaymentRequirements) (*batch.Payment, *batchRefusal) {
	if r := b.checkKind(payload, req); r != nil {
		return nil, r
	}
	p, err := batch.ParsePayload(payload.Payload)
	if err != nil {
		return nil, asRefusal(err, batch.ReasonPayloadType)
	}
	if _, err := p.Check(req); err != nil {
		return &p, asRefusal(err, batch.ReasonPayloadType)
	}
	if p.Channel.Token != b.f.token {
		return &p, refusal(batch.ReasonTokenMismatch, "this facilitator settles the token %s only", b.f.token.Hex())
	}
	// Without a payer authorizer, the voucher is the payer's: an EOA's
	// ECDSA signature or a contract's ERC-1271 approval, which only the
	// chain can tell (chainRules).
	if p.Channel.PayerAuthorizer != (common.Address{}) {
		if err := b.domain.VerifyVoucher(p); err != nil {
			return &p, asRefusal(err, batch.ReasonVoucherSignature)
		}
	}
	return &p, nil
}

// ecdsaByPayer reports whether p's voucher is the payer's own ECDSA
// signature (a channel without payer authorizer, paid by an EOA).
func (b *BatchFacilitator) ecdsaByPayer(p *batch.Payment) bool {
	if len(p.Signature) != 65 {
		return false
	}
	signer, err := b.domain.VoucherSigner(p.ChannelID, p.MaxClaimableAmount, p.Signature)
	return err == nil && signer == p.Channel.Payer
}

// Verify implements x402.Facilitator: the scheme's verification rules 1
// to 10 for a deposit, voucher or refund payload (see BatchFacilitator).
// IsValid false names the rule's reason; Extra carries the channel's
// snapshot whenever the channel could be read. A chain that cannot be read
// is an *UnavailableError unless a local rule already refused.
func (b *BatchFacilitator) Verify(ctx context.Context, payload x402.PaymentPayload, req x402.PaymentRequirements) (x402.VerifyResponse, error) {
	p, local := b.localCheck(payload, req)
	if p == nil {
		return invalidBatch("", local, nil), nil
	}
	payer := p.Channel.Payer.Hex()
	read, err := b.readChannel(ctx, p.ChannelID, p)
	if err != nil {
		if local != nil {
			return invalidBatch(payer, local, nil), nil
		}
		return x402.VerifyResponse{}, &UnavailableError{Reason: UnavailableRPC, Err: err}
	}
	extra := snapshot(p.ChannelID, read.st)
	if local != nil {
		return invalidBatch(payer, local, extra), nil
	}
	if r := b.chainRules(ctx, p, read); r != nil {
		return invalidBatch(payer, r, extra), nil
	}
	return x402.VerifyResponse{IsValid: true, Payer: payer, Extra: extra}, nil
}

// chainRules applies rules 6 (ERC-1271), 7 to 10 and the deposit's
// authorization checks to what the chain says.
func (b *BatchFacilitator) chainRules(ctx context.Context, p *batch.Payment, read channelRead) *batchRefusal {
	if p.Channel.PayerAuthorizer == (common.Address{}) && !b.ecdsaByPayer(p) && !read.sig1271 {
		return refusal(batch.ReasonVoucherSignature, "the voucher is not the payer's signature (neither its ECDSA signature nor approved by its ERC-1271 isValidSignature)")
	}
	st := read.st
	effective := new(big.Int).Set(st.Balance)
	if p.Type == batch.TypeDeposit {
		d := p.Deposit
		if read.authUsed {
			return refusal(batch.ReasonDepositPayload, "the deposit's EIP-3009 authorization was already used on chain")
		}
		now := big.NewInt(time.Now().Unix())
		if d.ValidAfter.Cmp(now) > 0 {
			return refusal(batch.ReasonAuthorizationValidAfter, "the deposit authorization is valid after %s, in the future", d.ValidAfter)
		}
		if d.ValidBefore.Cmp(now) <= 0 {
			return refusal(batch.ReasonAuthorizationValidBefore, "the deposit authorization expired at %s", d.ValidBefore)
		}
		if read.payerBalance.Cmp(d.Amount) < 0 {
			return refusal(batch.ReasonInsufficientBalance, "the payer's token balance (%s) is below the deposit (%s)", read.payerBalance, d.Amount)
		}
		if r := b.checkReceiveAuthorization(ctx, p); r != nil {
			return r
		}
		effective.Add(effective, d.Amount)
	} else if st.Balance.Sign() == 0 {
		return refusal(batch.ReasonChannelNotFound, "the channel %s has no balance on chain", p.ChannelID.Hex())
	}
	if p.MaxClaimableAmount.Cmp(effective) > 0 {
		return refusal(batch.ReasonCumulativeExceedsBalance, "voucher.maxClaimableAmount %s exceeds the channel's balance %s", p.MaxClaimableAmount, effective)
	}
	if c := p.MaxClaimableAmount.Cmp(st.TotalClaimed); c < 0 || (c == 0 && p.Type != batch.TypeRefund) {
		return refusal(batch.ReasonCumulativeBelowClaimed, "voucher.maxClaimableAmount %s is not above the channel's totalClaimed %s", p.MaxClaimableAmount, st.TotalClaimed)
	}
	return nil
}

// checkReceiveAuthorization checks the deposit's EIP-3009
// ReceiveWithAuthorization: an EOA payer's ECDSA signature, or, for any
// other signature (a contract wallet's), the deposit's simulation.
func (b *BatchFacilitator) checkReceiveAuthorization(ctx context.Context, p *batch.Payment) *batchRefusal {
	td := exact.Domain(b.f.network)
	td.VerifyingContract = b.f.token
	digest := batch.ReceiveAuthorizationDigest(td, p.Channel.Payer, p.ChannelID, *p.Deposit)
	if signer, err := exact.RecoverSigner(digest[:], p.Deposit.Signature); err == nil && signer == p.Channel.Payer {
		return nil
	}
	data, err := batch.DepositCalldata(p.Channel, *p.Deposit)
	if err != nil {
		return refusal(batch.ReasonDepositPayload, "deposit: %v", err)
	}
	if _, text, err := b.estimate(ctx, data); err != nil || text != "" {
		return refusal(batch.ReasonReceiveAuthorizationSignature, "the deposit's receiveWithAuthorization signature is not the payer's")
	}
	return nil
}

func invalidBatch(payer string, r *batchRefusal, extra map[string]any) x402.VerifyResponse {
	return x402.VerifyResponse{IsValid: false, InvalidReason: r.reason, InvalidMessage: r.msg, Payer: payer, Extra: extra}
}

func failedBatch(req x402.PaymentRequirements, payer string, r *batchRefusal) x402.SettleResponse {
	return x402.SettleResponse{Success: false, ErrorReason: r.reason, ErrorMessage: r.msg, Payer: payer, Network: req.Network}
}

// Settle implements x402.Facilitator by payload.type: deposit, claim,
// settle or refund (see BatchFacilitator). Refusals and simulated reverts
// are answered Success false before any transaction; a transaction sent
// and not confirmed within ctx is answered ReasonSettlementPending with its
// hash (it is still followed; the same settlement presented again awaits
// it). The relayer's gas, the fee cap or the RPC endpoint failing is an
// *UnavailableError.
func (b *BatchFacilitator) Settle(ctx context.Context, payload x402.PaymentPayload, req x402.PaymentRequirements) (x402.SettleResponse, error) {
	if b.f.bg.Err() != nil {
		return x402.SettleResponse{}, &UnavailableError{Reason: UnavailableClosed, Err: errors.New("x402 onchain: the facilitator is closed")}
	}
	if r := b.checkKind(payload, req); r != nil {
		return failedBatch(req, "", r), nil
	}
	switch t := batch.PayloadType(payload.Payload); t {
	case batch.TypeDeposit:
		return b.settleDeposit(ctx, payload, req)
	case batch.TypeClaim:
		return b.settleClaim(ctx, payload, req)
	case batch.TypeSettle:
		return b.settleSweep(ctx, payload, req)
	case batch.TypeRefund:
		return b.settleRefund(ctx, payload, req)
	case batch.TypeVoucher:
		return failedBatch(req, "", refusal(batch.ReasonPayloadType, "a voucher is not settled on chain: claim it (payload.type claim)")), nil
	default:
		return failedBatch(req, "", refusal(batch.ReasonUnknownSettleAction, "payload.type %q is not deposit, claim, settle or refund", clip.Bytes(t, 20))), nil
	}
}

// once runs fn once at a time per key in this process; the callers that
// arrive meanwhile get its answer.
func (b *BatchFacilitator) once(ctx context.Context, key string, fn func() (x402.SettleResponse, error)) (x402.SettleResponse, error) {
	type result struct {
		resp x402.SettleResponse
		err  error
	}
	ch := b.flight.DoChan(key, func() (any, error) {
		resp, err := fn()
		return result{resp, err}, nil
	})
	select {
	case r := <-ch:
		res := r.Val.(result)
		return res.resp, res.err
	case <-ctx.Done():
		select {
		case r := <-ch:
			res := r.Val.(result)
			return res.resp, res.err
		case <-time.After(pendingGrace):
			return x402.SettleResponse{}, fmt.Errorf("x402 onchain: settle: %w", ctx.Err())
		}
	}
}

// txReasons are the refusal reasons of one kind of transaction.
type txReasons struct{ simulation, transaction string }

var (
	depositReasons = txReasons{batch.ReasonDepositSimulationFailed, batch.ReasonDepositTransactionFailed}
	claimReasons   = txReasons{batch.ReasonClaimSimulationFailed, batch.ReasonClaimTransactionFailed}
	settleReasons  = txReasons{batch.ReasonSettleSimulationFailed, batch.ReasonSettleTransactionFailed}
	refundReasons  = txReasons{batch.ReasonRefundSimulationFailed, batch.ReasonRefundTransactionFailed}
)

// estimate runs eth_estimateGas of a call of the escrow from the relayer
// against the pending block: the gas, or the revert's text (non-empty)
// when the call would revert.
func (b *BatchFacilitator) estimate(ctx context.Context, data []byte) (uint64, string, error) {
	var est hexutil.Uint64
	err := b.f.rpc.CallContext(ctx, &est, "eth_estimateGas", callArg{From: &b.f.relayer.addr, To: b.escrow, Data: data}, "pending")
	if err != nil {
		if text, ok := revertText(err); ok {
			if text == "" {
				text = "execution reverted"
			}
			return 0, text, nil
		}
		return 0, "", &UnavailableError{Reason: UnavailableRPC, Err: fmt.Errorf("simulate the escrow call: %w", err)}
	}
	return uint64(est), "", nil
}

// outcome is the fate of one escrow transaction: its receipt (nil when
// not confirmed in time: pending holds the answer), or the refusal of its
// simulation or of its revert.
type outcome struct {
	rcpt    *types.Receipt
	refused *batchRefusal
	pending *x402.SettleResponse
}

// transact simulates data, sends it from the relayer and awaits its
// receipt, as the exact settlements are followed (key names it among the
// transactions followed). A revert in the simulation is refused with
// rs.simulation before any gas; a mined revert with rs.transaction. A
// transaction already followed under key (sent by an earlier settlement
// whose caller stopped waiting) is awaited instead of sending another.
func (b *BatchFacilitator) transact(ctx context.Context, key string, data []byte, rs txReasons, req x402.PaymentRequirements, payer string) (outcome, error) {
	tr := b.f.following(key)
	if tr == nil {
		gas, text, err := b.estimate(ctx, data)
		if err != nil {
			return outcome{}, err
		}
		if text != "" {
			return outcome{refused: refusal(rs.simulation, "the transaction would revert: %s", clip.Bytes(text, 200))}, nil
		}
		gas += gas * DefaultGasMargin / 100
		fe, err := b.f.fees(ctx, false)
		if err != nil {
			return outcome{}, err
		}
		if err := b.f.affordable(ctx, gas, fe); err != nil {
			return outcome{}, err
		}
		s, err := b.f.relayer.send(ctx, b.escrow, data, gas, fe)
		if err != nil {
			return outcome{}, err
		}
		b.f.log.Info("x402 onchain: batch-settlement transaction sent", "transaction", s.tx.Hash().Hex(), "nonce", s.tx.Nonce(), "payer", payer)
		tr = b.follow(key, s)
	}
	rcpt, err := tr.wait(ctx)
	switch {
	case err != nil:
		r := failedBatch(req, payer, refusal(ReasonSettlementPending, "the transaction was sent and is not confirmed yet"))
		r.Transaction = tr.tx.Hash().Hex()
		return outcome{pending: &r}, nil
	case rcpt == nil:
		return outcome{refused: refusal(rs.transaction, "the transaction %s was replaced by another of the relayer", tr.tx.Hash().Hex())}, nil
	case rcpt.Status != types.ReceiptStatusSuccessful:
		return outcome{rcpt: rcpt, refused: refusal(rs.transaction, "the transaction %s reverted", rcpt.TxHash.Hex())}, nil
	}
	return outcome{rcpt: rcpt}, nil
}

// follow follows s until it is mined with its confirmations, in a
// goroutine of its own that outlives the caller (see Facilitator.follow),
// registered under key.
func (b *BatchFacilitator) follow(key string, s sent) *tracker {
	f := b.f
	t := &tracker{tx: s.tx, done: make(chan struct{})}
	f.trackMu.Lock()
	if f.closed {
		f.trackMu.Unlock()
		t.err = fmt.Errorf("x402 onchain: the facilitator is closed: %w", context.Canceled)
		close(t.done)
		return t
	}
	f.tracking[key] = t
	f.trackers.Add(1)
	f.trackMu.Unlock()
	go func() {
		defer f.trackers.Done()
		t.rcpt, t.err = f.await(f.bg, s)
		if t.err == nil && t.rcpt != nil && t.rcpt.Status != types.ReceiptStatusSuccessful {
			f.log.Warn("x402 onchain: batch-settlement transaction reverted", "transaction", t.rcpt.TxHash.Hex())
		}
		f.trackMu.Lock()
		if f.tracking[key] == t {
			delete(f.tracking, key)
		}
		f.trackMu.Unlock()
		close(t.done)
	}()
	return t
}

// settleDeposit deposits through the EIP-3009 collector after Verify's
// rules; a deposit whose authorization is already used is answered from
// the transaction that used it.
func (b *BatchFacilitator) settleDeposit(ctx context.Context, payload x402.PaymentPayload, req x402.PaymentRequirements) (x402.SettleResponse, error) {
	p, local := b.localCheck(payload, req)
	if local != nil {
		payer := ""
		if p != nil {
			payer = p.Channel.Payer.Hex()
		}
		return failedBatch(req, payer, local), nil
	}
	payer := p.Channel.Payer.Hex()
	nonce := batch.DepositNonce(p.ChannelID, p.Deposit.Salt)
	key := "batch-deposit:" + p.Channel.Payer.Hex() + ":" + common.Hash(nonce).Hex()
	return b.once(ctx, key, func() (x402.SettleResponse, error) {
		data, err := batch.DepositCalldata(p.Channel, *p.Deposit)
		if err != nil {
			return failedBatch(req, payer, refusal(batch.ReasonDepositPayload, "deposit: %v", err)), nil
		}
		if b.f.following(key) == nil {
			read, err := b.readChannel(ctx, p.ChannelID, p)
			if err != nil {
				return x402.SettleResponse{}, &UnavailableError{Reason: UnavailableRPC, Err: err}
			}
			if read.authUsed {
				return b.depositedBefore(ctx, p, req, nonce)
			}
			if r := b.chainRules(ctx, p, read); r != nil {
				return failedBatch(req, payer, r), nil
			}
		}
		o, err := b.transact(ctx, key, data, depositReasons, req, payer)
		if err != nil {
			return x402.SettleResponse{}, err
		}
		switch {
		case o.pending != nil:
			return *o.pending, nil
		case o.refused != nil:
			if used, err := b.f.reader.used(ctx, p.Channel.Payer, nonce); err == nil && used {
				// Used meanwhile by another transaction (another instance's).
				return b.depositedBefore(ctx, p, req, nonce)
			}
			if o.rcpt == nil && b.usedPending(ctx, p.Channel.Payer, nonce) {
				// Refused by the simulation because a transaction using the
				// authorization waits in the node's pool (another
				// instance's): its fate decides.
				return failedBatch(req, payer, refusal(ReasonSettlementPending, "a transaction using the deposit's authorization is waiting to be mined")), nil
			}
			r := failedBatch(req, payer, o.refused)
			if o.rcpt != nil {
				r.Transaction = o.rcpt.TxHash.Hex()
			}
			return r, nil
		}
		return b.depositAnswer(ctx, p, req, o.rcpt)
	})
}

// usedPending reports whether the pending state shows the EIP-3009
// authorization (from, nonce) used; a failed read is false.
func (b *BatchFacilitator) usedPending(ctx context.Context, from common.Address, nonce common.Hash) bool {
	data, err := b.f.abi.Pack("authorizationState", from, nonce)
	if err != nil {
		return false
	}
	var out hexutil.Bytes
	if err := b.f.rpc.CallContext(ctx, &out, "eth_call", callArg{To: b.f.token, Data: data}, "pending"); err != nil || len(out) != 32 {
		return false
	}
	return out[31] != 0
}

// depositAnswer is the answer of a deposit mined in rcpt: its Deposited
// event must be the channel's and the amount's.
func (b *BatchFacilitator) depositAnswer(ctx context.Context, p *batch.Payment, req x402.PaymentRequirements, rcpt *types.Receipt) (x402.SettleResponse, error) {
	payer := p.Channel.Payer.Hex()
	if !b.hasDeposited(rcpt, p.ChannelID, p.Deposit.Amount) {
		r := failedBatch(req, payer, refusal(batch.ReasonDepositTransactionFailed, "the transaction %s does not deposit %s into the channel", rcpt.TxHash.Hex(), p.Deposit.Amount))
		r.Transaction = rcpt.TxHash.Hex()
		return r, nil
	}
	resp := x402.SettleResponse{Success: true, Transaction: rcpt.TxHash.Hex(), Network: req.Network, Payer: payer, Amount: p.Deposit.Amount.String(), Asset: p.Channel.Token.Hex()}
	if read, err := b.readChannel(ctx, p.ChannelID, nil); err == nil {
		resp.Extra = channelState(p.ChannelID, read.st)
	} else {
		b.f.log.Warn("x402 onchain: reading the channel after its deposit failed", "transaction", resp.Transaction, "error", err)
	}
	return resp, nil
}

// hasDeposited reports whether rcpt holds the escrow's
// Deposited(channelID, _, amount, _).
func (b *BatchFacilitator) hasDeposited(rcpt *types.Receipt, id common.Hash, amount *big.Int) bool {
	for _, l := range rcpt.Logs {
		if l.Address == b.escrow && len(l.Topics) == 3 && l.Topics[0] == topicDeposited && l.Topics[1] == id && len(l.Data) == 64 &&
			new(big.Int).SetBytes(l.Data[:32]).Cmp(amount) == 0 {
			return true
		}
	}
	return false
}

// depositedBefore answers a deposit whose authorization the chain says is
// used: the transaction that used it, when it deposited this deposit.
func (b *BatchFacilitator) depositedBefore(ctx context.Context, p *batch.Payment, req x402.PaymentRequirements, nonce common.Hash) (x402.SettleResponse, error) {
	payer := p.Channel.Payer.Hex()
	st, confirmed, err := b.f.reader.status(ctx, p.Channel.Payer, nonce, p.Deposit.ValidBefore)
	if err != nil {
		return x402.SettleResponse{}, &UnavailableError{Reason: UnavailableRPC, Err: err}
	}
	if st.Transaction == "" {
		return failedBatch(req, payer, refusal(batch.ReasonDepositPayload, "the deposit's EIP-3009 authorization was already used or canceled on chain")), nil
	}
	if !confirmed {
		r := failedBatch(req, payer, refusal(ReasonSettlementPending, "the deposit is mined and does not have its %d confirmations yet", b.f.cfg.Confirmations))
		r.Transaction = st.Transaction
		return r, nil
	}
	rcpt, err := b.f.client.TransactionReceipt(ctx, common.HexToHash(st.Transaction))
	if err != nil {
		return x402.SettleResponse{}, &UnavailableError{Reason: UnavailableRPC, Err: fmt.Errorf("read the deposit's receipt: %w", err)}
	}
	if !b.hasDeposited(rcpt, p.ChannelID, p.Deposit.Amount) {
		return failedBatch(req, payer, refusal(batch.ReasonDepositPayload, "the deposit's EIP-3009 authorization was used by another transaction")), nil
	}
	return b.depositAnswer(ctx, p, req, rcpt)
}

// authorizerSignature returns sig, or, when it is empty, the signature of
// digest by the facilitator's receiver authorizer, which must be every
// channel's (authorizers).
func (b *BatchFacilitator) authorizerSignature(sig string, authorizers []common.Address, digest func() common.Hash) ([]byte, *batchRefusal) {
	if sig != "" {
		out, err := hexutil.Decode(sig)
		if err != nil || len(out) == 0 || len(out) > batch.MaxSignatureBytes {
			return nil, refusal(batch.ReasonClaimPayload, "authorizer signature: must be 0x-hex bytes")
		}
		return out, nil
	}
	if b.authKey == nil {
		return nil, refusal(batch.ReasonAuthorizerNotConfigured, "no receiver authorizer signature, and this facilitator has no receiver authorizer key")
	}
	for _, a := range authorizers {
		if a != b.authAddr {
			return nil, refusal(batch.ReasonAuthorizerAddressMismatch, "the channel's receiverAuthorizer %s is not this facilitator's %s", a.Hex(), b.authAddr.Hex())
		}
	}
	d := digest()
	out, err := crypto.Sign(d[:], b.authKey)
	if err != nil {
		return nil, refusal(batch.ReasonAuthorizerNotConfigured, "sign: %v", err)
	}
	out[64] += 27
	return out, nil
}

// settleClaim claims the rows with claimWithSignature; rows the channels'
// totalClaimed already covers send nothing.
func (b *BatchFacilitator) settleClaim(ctx context.Context, payload x402.PaymentPayload, req x402.PaymentRequirements) (x402.SettleResponse, error) {
	cp, claims, err := batch.ParseClaimPayload(payload.Payload)
	if err != nil {
		return failedBatch(req, "", asRefusal(err, batch.ReasonClaimPayload)), nil
	}
	for i, c := range claims {
		if c.Channel.Token != b.f.token {
			return failedBatch(req, "", refusal(batch.ReasonTokenMismatch, "claims[%d]: this facilitator settles the token %s only", i, b.f.token.Hex())), nil
		}
	}
	auths := make([]common.Address, len(claims))
	for i, c := range claims {
		auths[i] = c.Channel.ReceiverAuthorizer
	}
	sig, r := b.authorizerSignature(cp.ClaimAuthorizerSignature, auths, func() common.Hash {
		return b.domain.ClaimBatchDigest(b.domain.ClaimEntries(claims))
	})
	if r != nil {
		return failedBatch(req, "", r), nil
	}
	data, err := batch.ClaimWithSignatureCalldata(claims, sig)
	if err != nil {
		return failedBatch(req, "", refusal(batch.ReasonClaimPayload, "claims: %v", err)), nil
	}
	key := "batch-claim:" + crypto.Keccak256Hash(data[4+32:]).Hex()
	return b.once(ctx, key, func() (x402.SettleResponse, error) {
		if b.f.following(key) == nil {
			covered, tx, err := b.claimedBefore(ctx, claims)
			if err != nil {
				return x402.SettleResponse{}, &UnavailableError{Reason: UnavailableRPC, Err: err}
			}
			if covered {
				return x402.SettleResponse{Success: true, Transaction: tx, Network: req.Network}, nil
			}
		}
		o, err := b.transact(ctx, key, data, claimReasons, req, "")
		if err != nil {
			return x402.SettleResponse{}, err
		}
		switch {
		case o.pending != nil:
			return *o.pending, nil
		case o.refused != nil:
			resp := failedBatch(req, "", o.refused)
			if o.rcpt != nil {
				resp.Transaction = o.rcpt.TxHash.Hex()
			}
			return resp, nil
		}
		return x402.SettleResponse{Success: true, Transaction: o.rcpt.TxHash.Hex(), Network: req.Network}, nil
	})
}

// claimedBefore reports whether every row's channel has at least the
// row's totalClaimed on chain already, and then the transaction whose
// Claimed event brought the first row's channel to exactly that total
// (empty if not found within the lookback: it was claimed further since).
func (b *BatchFacilitator) claimedBefore(ctx context.Context, claims []batch.Claim) (bool, string, error) {
	calls := make([]aggCall, len(claims))
	ids := make([]common.Hash, len(claims))
	for i, c := range claims {
		ids[i] = b.domain.ChannelID(c.Channel)
		data, err := batch.SettlementABI().Pack("channels", ids[i])
		if err != nil {
			return false, "", err
		}
		calls[i] = aggCall{b.escrow, data}
	}
	oks, answers, err := b.aggregate(ctx, "latest", calls)
	if err != nil {
		return false, "", err
	}
	for i, c := range claims {
		if !oks[i] || len(answers[i]) != 64 {
			return false, "", fmt.Errorf("x402 onchain: the escrow at %s does not answer channels", b.escrow.Hex())
		}
		if new(big.Int).SetBytes(answers[i][32:64]).Cmp(c.TotalClaimed) < 0 {
			return false, "", nil
		}
	}
	logs, err := b.findEscrowLogs(ctx, [][]common.Hash{{topicClaimed}, {ids[0]}})
	if err != nil {
		return true, "", err
	}
	for _, l := range logs {
		if len(l.Data) == 64 && new(big.Int).SetBytes(l.Data[32:]).Cmp(claims[0].TotalClaimed) == 0 {
			return true, l.TxHash.Hex(), nil
		}
	}
	return true, "", nil
}

// findEscrowLogs searches the escrow's logs matching topics, newest
// window first, within the reader's lookback; it returns the first
// window's matches.
func (b *BatchFacilitator) findEscrowLogs(ctx context.Context, topics [][]common.Hash) ([]types.Log, error) {
	r := b.f.reader
	head, err := b.f.client.BlockNumber(ctx)
	if err != nil {
		return nil, fmt.Errorf("x402 onchain: read the latest block: %w", err)
	}
	var oldest uint64
	if head > r.lookback {
		oldest = head - r.lookback
	}
	to := head
	for {
		lo := oldest
		if to-oldest >= r.window {
			lo = to - r.window + 1
		}
		logs, err := b.f.client.FilterLogs(ctx, ethereum.FilterQuery{FromBlock: new(big.Int).SetUint64(lo), ToBlock: new(big.Int).SetUint64(to), Addresses: []common.Address{b.escrow}, Topics: topics})
		if err != nil {
			return nil, fmt.Errorf("x402 onchain: search the escrow's events: %w", err)
		}
		if len(logs) > 0 {
			return logs, nil
		}
		if lo == oldest {
			return nil, nil
		}
		to = lo - 1
	}
}

// settleSweep sweeps a receiver's claimed funds of a token; nothing to
// sweep is answered amount "0" without a transaction.
func (b *BatchFacilitator) settleSweep(ctx context.Context, payload x402.PaymentPayload, req x402.PaymentRequirements) (x402.SettleResponse, error) {
	receiver, token, err := batch.ParseSettlePayload(payload.Payload)
	if err != nil {
		return failedBatch(req, "", asRefusal(err, batch.ReasonSettlePayload)), nil
	}
	if token != b.f.token {
		return failedBatch(req, "", refusal(batch.ReasonTokenMismatch, "this facilitator settles the token %s only", b.f.token.Hex())), nil
	}
	data, err := batch.SettleCalldata(receiver, token)
	if err != nil {
		return failedBatch(req, "", refusal(batch.ReasonSettlePayload, "settle: %v", err)), nil
	}
	key := "batch-settle:" + receiver.Hex() + ":" + token.Hex()
	return b.once(ctx, key, func() (x402.SettleResponse, error) {
		if b.f.following(key) == nil {
			due, err := b.unsettled(ctx, receiver, token)
			if err != nil {
				return x402.SettleResponse{}, &UnavailableError{Reason: UnavailableRPC, Err: err}
			}
			if due.Sign() == 0 {
				return x402.SettleResponse{Success: true, Network: req.Network, Amount: "0"}, nil
			}
		}
		o, err := b.transact(ctx, key, data, settleReasons, req, "")
		if err != nil {
			return x402.SettleResponse{}, err
		}
		switch {
		case o.pending != nil:
			return *o.pending, nil
		case o.refused != nil:
			resp := failedBatch(req, "", o.refused)
			if o.rcpt != nil {
				resp.Transaction = o.rcpt.TxHash.Hex()
			}
			return resp, nil
		}
		amount := new(big.Int)
		for _, l := range o.rcpt.Logs {
			if l.Address == b.escrow && len(l.Topics) == 4 && l.Topics[0] == topicSettled && common.BytesToAddress(l.Topics[1][:]) == receiver &&
				common.BytesToAddress(l.Topics[2][:]) == token && len(l.Data) == 32 {
				amount.SetBytes(l.Data)
			}
		}
		return x402.SettleResponse{Success: true, Transaction: o.rcpt.TxHash.Hex(), Network: req.Network, Amount: amount.String()}, nil
	})
}

// unsettled reads receivers(receiver, token): claimed less settled.
func (b *BatchFacilitator) unsettled(ctx context.Context, receiver, token common.Address) (*big.Int, error) {
	a := batch.SettlementABI()
	data, err := a.Pack("receivers", receiver, token)
	if err != nil {
		return nil, err
	}
	var out hexutil.Bytes
	if err := b.f.rpc.CallContext(ctx, &out, "eth_call", callArg{To: b.escrow, Data: data}, "latest"); err != nil {
		return nil, fmt.Errorf("x402 onchain: read the receiver's totals: %w", err)
	}
	res, err := a.Unpack("receivers", out)
	if err != nil || len(res) != 2 {
		return nil, fmt.Errorf("x402 onchain: decode the receiver's totals: %v", err)
	}
	claimed, _ := res[0].(*big.Int)
	settled, _ := res[1].(*big.Int)
	if claimed == nil || settled == nil {
		return nil, errors.New("x402 onchain: decode the receiver's totals: unexpected types")
	}
	return new(big.Int).Sub(claimed, settled), nil
}

// refundSettlement is a parsed batch.RefundSettlement.
type refundSettlement struct {
	p      batch.Payment
	amount *big.Int
	nonce  *big.Int
	claims []batch.Claim
	raw    batch.RefundSettlement
}

// parseRefund decodes a refund completed by the server.
func parseRefund(raw json.RawMessage) (*refundSettlement, *batchRefusal) {
	p, err := batch.ParsePayload(raw)
	if err != nil {
		return nil, asRefusal(err, batch.ReasonRefundPayload)
	}
	out := &refundSettlement{p: p}
	if err := wire.Unmarshal(raw, &out.raw); err != nil {
		return nil, refusal(batch.ReasonRefundPayload, "refund: %s", wire.JSONErrorSummary(err))
	}
	if p.RefundAmount == nil {
		return nil, refusal(batch.ReasonRefundAmountInvalid, "amount: the server resolves the refund's amount before settling it")
	}
	out.amount = p.RefundAmount
	n, ok := new(big.Int).SetString(out.raw.RefundNonce, 10)
	if !ok || n.Sign() < 0 || n.BitLen() > 256 {
		return nil, refusal(batch.ReasonRefundPayload, "refundNonce: must be a decimal integer")
	}
	out.nonce = n
	if len(out.raw.Claims) > 0 {
		if out.claims, err = batch.ParseClaims(out.raw.Claims); err != nil {
			return nil, asRefusal(err, batch.ReasonRefundPayload)
		}
	}
	return out, nil
}

// settleRefund claims the rows (if any) and refunds with the receiver
// authorizer's signature, in one transaction; a refund whose nonce the
// chain already spent is answered from its Refunded event.
func (b *BatchFacilitator) settleRefund(ctx context.Context, payload x402.PaymentPayload, req x402.PaymentRequirements) (x402.SettleResponse, error) {
	rs, r := parseRefund(payload.Payload)
	if r != nil {
		return failedBatch(req, "", r), nil
	}
	ch := rs.p.Channel
	payer := ch.Payer.Hex()
	id := b.domain.ChannelID(ch)
	if id != rs.p.ChannelID {
		return failedBatch(req, payer, refusal(batch.ReasonChannelIDMismatch, "voucher.channelId is not the id of the channel's configuration on %s", b.f.network.CAIP2)), nil
	}
	if ch.Token != b.f.token {
		return failedBatch(req, payer, refusal(batch.ReasonTokenMismatch, "this facilitator settles the token %s only", b.f.token.Hex())), nil
	}
	if a, ok := wire.ParseAddress(req.PayTo); ok && a != (common.Address{}) && a != ch.Receiver {
		return failedBatch(req, payer, refusal(batch.ReasonReceiverMismatch, "channel receiver %s is not payTo", ch.Receiver.Hex())), nil
	}
	key := "batch-refund:" + id.Hex() + ":" + rs.nonce.String()
	return b.once(ctx, key, func() (x402.SettleResponse, error) {
		var pre batch.OnChain
		if b.f.following(key) == nil {
			read, err := b.readChannel(ctx, id, nil)
			if err != nil {
				return x402.SettleResponse{}, &UnavailableError{Reason: UnavailableRPC, Err: err}
			}
			pre = read.st
			switch c := pre.RefundNonce.Cmp(rs.nonce); {
			case c > 0:
				return b.refundedBefore(ctx, rs, req, id, pre)
			case c < 0:
				return failedBatch(req, payer, refusal(batch.ReasonRefundPayload, "refundNonce %s is not the channel's next refund nonce %s", rs.nonce, pre.RefundNonce)), nil
			}
			claimed := new(big.Int).Set(pre.TotalClaimed)
			for _, c := range rs.claims {
				if b.domain.ChannelID(c.Channel) == id && c.TotalClaimed.Cmp(claimed) > 0 {
					claimed.Set(c.TotalClaimed)
				}
			}
			if claimed.Cmp(pre.Balance) >= 0 {
				return failedBatch(req, payer, refusal(batch.ReasonRefundNoBalance, "the channel has nothing unclaimed to refund (balance %s, claimed %s)", pre.Balance, claimed)), nil
			}
		}
		refundSig, r := b.authorizerSignature(rs.raw.RefundAuthorizerSignature, []common.Address{ch.ReceiverAuthorizer}, func() common.Hash {
			return b.domain.RefundDigest(id, rs.nonce, rs.amount)
		})
		if r != nil {
			return failedBatch(req, payer, r), nil
		}
		data, err := batch.RefundWithSignatureCalldata(ch, rs.amount, rs.nonce, refundSig)
		if err != nil {
			return failedBatch(req, payer, refusal(batch.ReasonRefundPayload, "refund: %v", err)), nil
		}
		if len(rs.claims) > 0 {
			auths := make([]common.Address, len(rs.claims))
			for i, c := range rs.claims {
				auths[i] = c.Channel.ReceiverAuthorizer
			}
			claimSig, r := b.authorizerSignature(rs.raw.ClaimAuthorizerSignature, auths, func() common.Hash {
				return b.domain.ClaimBatchDigest(b.domain.ClaimEntries(rs.claims))
			})
			if r != nil {
				return failedBatch(req, payer, r), nil
			}
			claimData, err := batch.ClaimWithSignatureCalldata(rs.claims, claimSig)
			if err != nil {
				return failedBatch(req, payer, refusal(batch.ReasonRefundPayload, "claims: %v", err)), nil
			}
			if data, err = batch.MulticallCalldata(claimData, data); err != nil {
				return failedBatch(req, payer, refusal(batch.ReasonRefundPayload, "refund: %v", err)), nil
			}
		}
		o, err := b.transact(ctx, key, data, refundReasons, req, payer)
		if err != nil {
			return x402.SettleResponse{}, err
		}
		switch {
		case o.pending != nil:
			return *o.pending, nil
		case o.refused != nil:
			resp := failedBatch(req, payer, o.refused)
			if o.rcpt != nil {
				resp.Transaction = o.rcpt.TxHash.Hex()
			}
			return resp, nil
		}
		return b.refundAnswer(ctx, req, id, payer, o.rcpt, rs.nonce)
	})
}

// refundAnswer is the answer of a refund mined in rcpt: the amount of its
// Refunded event of the nonce ("0" when nothing was left to refund) and
// the channel's state after it.
func (b *BatchFacilitator) refundAnswer(ctx context.Context, req x402.PaymentRequirements, id common.Hash, payer string, rcpt *types.Receipt, nonce *big.Int) (x402.SettleResponse, error) {
	amount := new(big.Int)
	for _, l := range rcpt.Logs {
		if l.Address == b.escrow && len(l.Topics) == 3 && l.Topics[0] == topicRefunded && l.Topics[1] == id && len(l.Data) == 64 &&
			new(big.Int).SetBytes(l.Data[32:]).Cmp(nonce) == 0 {
			amount.SetBytes(l.Data[:32])
		}
	}
	resp := x402.SettleResponse{Success: true, Transaction: rcpt.TxHash.Hex(), Network: req.Network, Payer: payer, Amount: amount.String()}
	if read, err := b.readChannel(ctx, id, nil); err == nil {
		resp.Extra = channelState(id, read.st)
	} else {
		b.f.log.Warn("x402 onchain: reading the channel after its refund failed", "transaction", resp.Transaction, "error", err)
	}
	return resp, nil
}

// refundedBefore answers a refund whose nonce the chain already spent:
// from the Refunded event of that nonce, or refused when none is found
// (a refund that moved nothing, or one older than the lookback).
func (b *BatchFacilitator) refundedBefore(ctx context.Context, rs *refundSettlement, req x402.PaymentRequirements, id common.Hash, st batch.OnChain) (x402.SettleResponse, error) {
	payer := rs.p.Channel.Payer.Hex()
	logs, err := b.findEscrowLogs(ctx, [][]common.Hash{{topicRefunded}, {id}})
	if err != nil {
		return x402.SettleResponse{}, &UnavailableError{Reason: UnavailableRPC, Err: err}
	}
	for _, l := range logs {
		if len(l.Data) == 64 && new(big.Int).SetBytes(l.Data[32:]).Cmp(rs.nonce) == 0 {
			rcpt, err := b.f.client.TransactionReceipt(ctx, l.TxHash)
			if err != nil {
				return x402.SettleResponse{}, &UnavailableError{Reason: UnavailableRPC, Err: fmt.Errorf("read the refund's receipt: %w", err)}
			}
			if ok, err := b.f.confirmed(ctx, rcpt); err != nil || !ok {
				r := failedBatch(req, payer, refusal(ReasonSettlementPending, "the refund is mined and does not have its %d confirmations yet", b.f.cfg.Confirmations))
				r.Transaction = l.TxHash.Hex()
				return r, nil
			}
			return b.refundAnswer(ctx, req, id, payer, rcpt, rs.nonce)
		}
	}
	return failedBatch(req, payer, refusal(batch.ReasonRefundPayload, "refundNonce %s was already spent on chain (the channel's next is %s)", rs.nonce, st.RefundNonce)), nil
}

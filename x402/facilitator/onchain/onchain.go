// Package onchain is an x402 facilitator that settles the exact scheme on
// an EVM chain itself: it submits USDC's EIP-3009 transferWithAuthorization
// over JSON-RPC from a relayer key it holds, and answers what the chain
// says about an authorization (x402.StatusChecker).
//
// Verification is the local one of x402/exact plus the chain's view:
// the RPC endpoint's chain id and the token contract are checked when the
// facilitator is built; each payment's payer balance and
// authorizationState(from, nonce). A settlement is simulated
// (eth_estimateGas) before it is sent, so a settlement that would fail
// costs no gas; it is sent with EIP-1559 fees within an operator cap and
// awaited to a number of confirmations (a receipt whose block is
// reorganised away sends the wait back to the transaction, broadcast again
// if the node lost it), and its Transfer and AuthorizationUsed events are
// checked against payer, payTo and amount.
//
// Every transaction sent is followed until it is mined, also after its
// Settle call stopped waiting (answered ReasonSettlementPending): it is
// broadcast again if dropped and replaced if stuck, so the relayer's
// nonces never keep a gap; the same authorization presented meanwhile
// awaits that transaction instead of sending another. Close stops this.
//
// A payer's payments together never make the relayer pay for a revert
// the facilitator could foresee: each alone may pass the checks while
// together they overdraw the payer's balance. A settlement is admitted
// only if the payer's token balance, read at the pending block, less the
// amounts of its other settlements in flight here (admitted, and not yet
// known to be mined or failed) that the pending state does not show spent
// yet, covers its amount; otherwise it is refused
// (ReasonInsufficientBalance) before any gas. One payer's settlements
// take turns from that check until their transaction is in the node's
// pool (other payers do not wait), and the simulation also runs against
// the pending block. Across facilitators sharing one relayer (several svc
// instances), the node's pool is the shared view: the others'
// settlements, broadcast and not yet mined, count wherever the node's
// pending state includes its pool (anvil and geth do), and an
// authorization one of them is settling is answered
// ReasonSettlementPending without a second transaction. What no check can
// foresee (the payer moving its balance ahead of the settlement in the
// same block, two instances admitting at the same instant, a node whose
// pending state leaves its pool out) may still revert; such reverts are
// budgeted per payer (Config.MaxPayerReverts within Config.RevertWindow),
// after which the payer's payments are refused before any gas
// (ReasonRevertBudgetExhausted). This account is kept in memory: a
// restart forgets the reverts, and settlements in flight are then seen
// through the pool only.
//
// Payments from smart-contract wallets are accepted: a signature that is
// not an EOA's 65-byte signature of the payer is left to the token's
// ERC-1271 check when the payer has code (Verify and Settle simulate it)
// and sent with the `bytes signature` form.
//
// An authorization already settled on chain, presented again for the
// same payment, gets the original settlement back (read from the chain):
// settlements deduplicate across restarts and instances.
//
// Facilitator.Batch returns the facilitator of the "batch-settlement"
// scheme on the same chain (BatchFacilitator): payment channels in the
// scheme's escrow, deposited into, claimed, swept and refunded by
// transactions of the same relayer (one key, one nonce sequence, one fee
// policy, the same following of transactions to their confirmations).
// Register both in a facilitator.Mux to serve both schemes.
//
// StatusReader answers the same status query from a read-only RPC
// endpoint, without a relayer key: a payment engine settling through
// another facilitator (one reached over HTTP, which may not deduplicate)
// asks it what became of an interrupted settlement.
package onchain

import (
	"context"
	"crypto/ecdsa"
	"errors"
	"fmt"
	"log/slog"
	"math/big"
	"strings"
	"sync"
	"time"

	"github.com/ethereum/go-ethereum/accounts/abi"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/ethclient"
	"github.com/ethereum/go-ethereum/rpc"
	"golang.org/x/sync/singleflight"

	"github.com/seed1284c1d2/svc/x402"
	"github.com/seed1284c1d2/svc/x402/exact"
	"github.com/seed1284c1d2/svc/x402/internal/clip"
	"github.com/seed1284c1d2/svc/x402/internal/evmaddr"
	"github.com/seed1284c1d2/svc/x402/internal/wire"
)

// SignatureForm selects which transferWithAuthorization of USDC carries an
// EOA's 65-byte signature.
type SignatureForm int

const (
	// FormVRS calls transferWithAuthorization(..., uint8 v, bytes32 r,
	// bytes32 s) for EOAs' 65-byte signatures (the default). Signatures
	// of contract wallets (ERC-1271) always use FormBytes.
	FormVRS SignatureForm = iota
	// FormBytes calls transferWithAuthorization(..., bytes signature).
	FormBytes
)

// Defaults of Config.
const (
	DefaultConfirmations   = 1
	DefaultPollInterval    = 250 * time.Millisecond
	DefaultResendAfter     = 30 * time.Second
	DefaultFeeTTL          = 2 * time.Second
	DefaultLookbackBlocks  = 50_000
	DefaultLogWindow       = 10_000
	DefaultGasMargin       = 25 // percent over the estimate
	DefaultMaxPayerReverts = 3
	DefaultRevertWindow    = time.Hour
)

// Config configures New. RPCURL (or Client), Network and RelayerKey are
// required.
type Config struct {
	// RPCURL is the chain's JSON-RPC endpoint (http, https, ws or wss).
	RPCURL string
	// Client, when set, is used instead of dialing RPCURL.
	Client *rpc.Client
	// Network is the CAIP-2 id (or v1 name) of the chain served; the
	// endpoint's chain id must be its.
	Network string
	// Token is the EIP-3009 token contract; empty means the network's
	// USDC. Payments for any other asset are refused.
	Token string
	// RelayerKey signs the settlement transactions and pays their gas. It
	// is never printed, logged or put in an error.
	RelayerKey *ecdsa.PrivateKey
	// PayTo, when set, is the only receiving address accepted.
	PayTo string
	// Verifier runs the local checks.
	Verifier exact.Verifier
	// Form is the transferWithAuthorization used for EOA signatures.
	Form SignatureForm
	// MaxFeePerGas caps the fee per gas (wei) of every settlement; nil
	// means no cap. A base fee above it makes settlements unavailable
	// (503) rather than expensive.
	MaxFeePerGas *big.Int
	// MaxPriorityFeePerGas caps the tip (wei); nil means the node's
	// suggestion, within MaxFeePerGas.
	MaxPriorityFeePerGas *big.Int
	// MinRelayerBalance (wei) is the relayer balance under which Ready
	// fails and settlements are refused as unavailable (503) before any
	// transaction; nil means zero (only an actual "insufficient funds"
	// from the node stops them).
	MinRelayerBalance *big.Int
	// Confirmations is the number of blocks (the transaction's included)
	// a settlement waits for; zero means DefaultConfirmations.
	Confirmations uint64
	// PollInterval is how often receipts are polled; zero means
	// DefaultPollInterval.
	PollInterval time.Duration
	// ResendAfter is how long a sent transaction may stay unmined before
	// it is broadcast again (dropped) or replaced with higher fees (stuck);
	// zero means DefaultResendAfter.
	ResendAfter time.Duration
	// FeeTTL is how long fee data read from the node is reused; zero
	// means DefaultFeeTTL.
	FeeTTL time.Duration
	// LookbackBlocks bounds how far back Status searches for the
	// transaction that used an authorization; zero means
	// DefaultLookbackBlocks. LogWindow is the block range of one
	// eth_getLogs; zero means DefaultLogWindow.
	LookbackBlocks, LogWindow uint64
	// MaxPayerReverts bounds the settlement transactions of one payer's
	// payments that may revert within RevertWindow (reverts no check could
	// foresee: the payer's balance moved between the simulation and the
	// block, a contract wallet changed its mind). Once a payer has had that
	// many, its payments are refused (ReasonRevertBudgetExhausted) before
	// any gas until the oldest leaves the window. Zero means
	// DefaultMaxPayerReverts; negative, no bound. RevertWindow zero means
	// DefaultRevertWindow.
	MaxPayerReverts int
	RevertWindow    time.Duration
	// Logger receives warnings and one record per settlement; nil means
	// slog.Default().
	Logger *slog.Logger
}

// Facilitator settles exact/EIP-3009 payments on one EVM chain. It
// implements x402.Facilitator and x402.StatusChecker. Safe for concurrent
// use.
type Facilitator struct {
	cfg     Config
	network x402.Network
	token   common.Address
	rpc     *rpc.Client
	client  *ethclient.Client
	abi     abi.ABI
	relayer *relayer
	reader  *StatusReader // what the chain says of an authorization
	log     *slog.Logger

	flight singleflight.Group // settlements in flight, by authorization
	payers *payers            // each payer's settlements in flight and reverts

	// Settlement transactions are followed until mined by a goroutine of
	// their own, which outlives a caller that stops waiting (see follow).
	trackMu  sync.Mutex
	closed   bool                // Close has begun: follow starts nothing
	tracking map[string]*tracker // by authorization
	bg       context.Context     // ends with Close
	stop     context.CancelFunc
	trackers sync.WaitGroup

	feeMu   sync.Mutex
	feeAt   time.Time
	feeData fees
}

var (
	_ x402.FacilitatorScheme = (*Facilitator)(nil)
	_ x402.StatusChecker     = (*Facilitator)(nil)
)

// New connects to the chain and checks it: the endpoint's chain id must be
// the network's, and the token must be a contract there. Configuration
// mistakes are *x402.ConfigError.
func New(ctx context.Context, cfg Config) (*Facilitator, error) {
	if _, ok := x402.LookupNetwork(cfg.Network); !ok {
		return nil, &x402.ConfigError{Field: "Network", Message: fmt.Sprintf("unknown network %q", clip.Bytes(cfg.Network, 40))}
	}
	if cfg.RelayerKey == nil {
		return nil, &x402.ConfigError{Field: "RelayerKey", Message: "a relayer key is required"}
	}
	if cfg.PayTo != "" {
		p, problem := wire.CheckPayTo(cfg.PayTo)
		if problem != "" {
			return nil, &x402.ConfigError{Field: "PayTo", Message: problem}
		}
		cfg.PayTo = p
	}
	if cfg.Confirmations == 0 {
		cfg.Confirmations = DefaultConfirmations
	}
	if cfg.PollInterval <= 0 {
		cfg.PollInterval = DefaultPollInterval
	}
	if cfg.ResendAfter <= 0 {
		cfg.ResendAfter = DefaultResendAfter
	}
	if cfg.FeeTTL <= 0 {
		cfg.FeeTTL = DefaultFeeTTL
	}
	if cfg.MaxPayerReverts == 0 {
		cfg.MaxPayerReverts = DefaultMaxPayerReverts
	}
	if cfg.RevertWindow <= 0 {
		cfg.RevertWindow = DefaultRevertWindow
	}
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	c, err := connect(ctx, cfg.RPCURL, cfg.Client, cfg.Network, cfg.Token)
	if err != nil {
		return nil, err
	}
	f := &Facilitator{cfg: cfg, network: c.network, token: c.token, rpc: c.rpc, client: c.client, abi: c.abi, log: log,
		reader: c.reader(cfg.Confirmations, cfg.LookbackBlocks, cfg.LogWindow), relayer: newRelayer(cfg.RelayerKey, c.chainID, c.client), tracking: map[string]*tracker{}, payers: newPayers()}
	f.bg, f.stop = context.WithCancel(context.Background())
	return f, nil
}

// Close stops following the settlement transactions sent and not yet
// mined (they stay in the node's pool; the authorizations' status tells
// what became of them) and waits for that to end. The facilitator must not
// be used afterwards.
func (f *Facilitator) Close() {
	f.trackMu.Lock()
	f.closed = true
	f.trackMu.Unlock()
	f.stop()
	f.trackers.Wait()
}

// Relayer returns the relayer's address (where to send gas).
func (f *Facilitator) Relayer() common.Address { return f.relayer.addr }

// RelayerBalance returns the relayer's native balance (wei) at the latest
// block. It also forgets, for Pending, the transactions mined since their
// settlement stopped waiting for them.
func (f *Facilitator) RelayerBalance(ctx context.Context) (*big.Int, error) {
	b, err := f.client.BalanceAt(ctx, f.relayer.addr, nil)
	if err != nil {
		return nil, fmt.Errorf("x402 onchain: read the relayer's balance: %w", err)
	}
	if mined, err := f.client.NonceAt(ctx, f.relayer.addr, nil); err == nil {
		f.relayer.prune(mined)
	}
	return b, nil
}

// Pending returns the number of settlement transactions sent and not yet
// known to be mined.
func (f *Facilitator) Pending() int { return f.relayer.pendingCount() }

// Ready reports whether the facilitator can settle: the endpoint answers
// and the relayer's balance is at least MinRelayerBalance. A failure is an
// *UnavailableError.
func (f *Facilitator) Ready(ctx context.Context) error {
	b, err := f.RelayerBalance(ctx)
	if err != nil {
		return &UnavailableError{Reason: UnavailableRPC, Err: err}
	}
	return f.relayerCanPay(b)
}

// relayerCanPay fails (UnavailableOutOfGas) for a relayer balance of zero
// or below MinRelayerBalance.
func (f *Facilitator) relayerCanPay(b *big.Int) error {
	if b.Sign() == 0 || (f.cfg.MinRelayerBalance != nil && b.Cmp(f.cfg.MinRelayerBalance) < 0) {
		return &UnavailableError{Reason: UnavailableOutOfGas, Err: fmt.Errorf("%w: relayer %s holds %s wei (minimum %s)", ErrRelayerOutOfGas, f.relayer.addr.Hex(), b, f.minBalance())}
	}
	return nil
}

func (f *Facilitator) minBalance() *big.Int {
	if f.cfg.MinRelayerBalance == nil {
		return big.NewInt(0)
	}
	return f.cfg.MinRelayerBalance
}

// payment is a payment that passed the local checks.
type payment struct {
	p          exact.ExactEVMPayload
	payer      string
	from, to   common.Address
	value      *big.Int
	validAfter *big.Int
	validBef   *big.Int
	nonce      [32]byte
	sig        []byte
	key        string
	// sigErr is the local refusal of the signature, left to the chain:
	// when from is a contract, ERC-1271 (the simulation) decides.
	sigErr *exact.VerifyError
}

func refuse(reason, format string, args ...any) *exact.VerifyError {
	return &exact.VerifyError{Reason: reason, Message: fmt.Sprintf(format, args...)}
}

// check runs the local checks: network served, token, payTo, and the
// exact Verifier. A signature the Verifier cannot accept (not a 65-byte
// ECDSA signature of from) is kept in sigErr rather than refused: if from
// is a contract (a smart wallet), the token checks it with ERC-1271, and
// only the chain can tell.
func (f *Facilitator) check(payload x402.PaymentPayload, req x402.PaymentRequirements) (*payment, error) {
	n, ok := x402.LookupNetwork(req.Network)
	if !ok || n.CAIP2 != f.network.CAIP2 {
		return nil, refuse(x402.ReasonInvalidNetwork, "network %q is not served by this facilitator (it settles on %s)", clip.Bytes(req.Network, 40), f.network.CAIP2)
	}
	if a, ok := evmaddr.Parse(req.Asset); !ok || a != f.token {
		return nil, refuse(exact.ReasonAssetMismatch, "asset must be the token %s on %s", f.token.Hex(), f.network.CAIP2)
	}
	if f.cfg.PayTo != "" && !wire.EqualAddressFold(req.PayTo, f.cfg.PayTo) {
		return nil, refuse(exact.ReasonRecipientMismatch, "this facilitator only accepts payments to %s", f.cfg.PayTo)
	}
	p, err := exact.ParseExactEVMPayload(payload.Payload)
	if err != nil {
		return nil, err
	}
	payer, sigErr, verr := f.cfg.Verifier.VerifyExceptSignature(payload, req)
	if verr != nil {
		return &payment{payer: payer}, verr
	}
	sig, _ := hexutil.Decode(p.Signature) // hex bytes: checked by the Verifier
	if sigErr != nil && len(sig) != 65 {
		sigErr = refuse(exact.ReasonInvalidSignature, "a %d-byte signature is only valid from a contract wallet (ERC-1271)", len(sig))
	}
	a := p.Authorization
	pm := &payment{p: p, payer: payer, sig: sig, from: common.HexToAddress(a.From), to: common.HexToAddress(a.To),
		key: exact.NonceKey(req.Network, req.Asset, a.From, a.Nonce)}
	if sigErr != nil && !errors.As(sigErr, &pm.sigErr) {
		pm.sigErr = refuse(exact.ReasonInvalidSignature, "%v", sigErr)
	}
	pm.value, _ = new(big.Int).SetString(a.Value, 10)
	pm.validAfter, _ = new(big.Int).SetString(a.ValidAfter, 10)
	pm.validBef, _ = new(big.Int).SetString(a.ValidBefore, 10)
	copy(pm.nonce[:], common.FromHex(a.Nonce))
	return pm, nil
}

// chainView is what the chain says of a payment.
type chainView struct {
	used     bool
	balance  *big.Int
	relayer  *big.Int // the relayer's native balance
	contract bool     // from has code (its signatures are checked with ERC-1271)
}

// view reads authorizationState(from, nonce), balanceOf(from) and the
// relayer's balance in one batch.
func (f *Facilitator) view(ctx context.Context, pm *payment) (chainView, error) {
	stateData, err := f.abi.Pack("authorizationState", pm.from, pm.nonce)
	if err != nil {
		return chainView{}, err
	}
	balData, err := f.abi.Pack("balanceOf", pm.from)
	if err != nil {
		return chainView{}, err
	}
	var stateOut, balOut, code hexutil.Bytes
	var relayerBal hexutil.Big
	batch := []rpc.BatchElem{
		{Method: "eth_call", Args: []any{callArg{To: f.token, Data: stateData}, "latest"}, Result: &stateOut},
		{Method: "eth_call", Args: []any{callArg{To: f.token, Data: balData}, "latest"}, Result: &balOut},
		{Method: "eth_getBalance", Args: []any{f.relayer.addr, "latest"}, Result: &relayerBal},
	}
	if pm.sigErr != nil {
		batch = append(batch, rpc.BatchElem{Method: "eth_getCode", Args: []any{pm.from, "latest"}, Result: &code})
	}
	if err := f.rpc.BatchCallContext(ctx, batch); err != nil {
		return chainView{}, fmt.Errorf("x402 onchain: read the authorization state: %w", err)
	}
	for _, b := range batch {
		if b.Error != nil {
			return chainView{}, fmt.Errorf("x402 onchain: read the authorization state: %w", b.Error)
		}
	}
	if len(stateOut) != 32 || len(balOut) != 32 {
		return chainView{}, fmt.Errorf("x402 onchain: the token at %s does not answer authorizationState/balanceOf (is it an EIP-3009 token?)", f.token.Hex())
	}
	return chainView{used: stateOut[31] != 0, balance: new(big.Int).SetBytes(balOut), relayer: (*big.Int)(&relayerBal), contract: len(code) > 0}, nil
}

// callArg is an eth_call argument.
type callArg struct {
	From *common.Address `json:"from,omitempty"`
	To   common.Address  `json:"to"`
	Data hexutil.Bytes   `json:"data"`
}

// Verify implements x402.Facilitator: the local checks, then the chain's:
// the authorization unused (exact.ReasonNonceAlreadyUsed) and the payer's
// balance at least the amount (ReasonInsufficientBalance). A relayer
// without gas (a zero balance, or below MinRelayerBalance) is an
// *UnavailableError: the payment is not refused, it cannot be settled now.
func (f *Facilitator) Verify(ctx context.Context, payload x402.PaymentPayload, req x402.PaymentRequirements) (x402.VerifyResponse, error) {
	pm, err := f.check(payload, req)
	if err != nil {
		return invalid(pm, err), nil
	}
	v, err := f.view(ctx, pm)
	if err != nil {
		return x402.VerifyResponse{}, &UnavailableError{Reason: UnavailableRPC, Err: err}
	}
	if r := v.refusal(pm); r != nil {
		return invalid(pm, r), nil
	}
	if r := f.overBudget(pm); r != nil {
		return invalid(pm, r), nil
	}
	if err := f.relayerCanPay(v.relayer); err != nil {
		return x402.VerifyResponse{}, err
	}
	if pm.sigErr != nil {
		// A contract wallet's signature: the token's ERC-1271 check decides.
		if _, _, refusal, err := f.simulate(ctx, pm); err != nil {
			return x402.VerifyResponse{}, err
		} else if refusal != nil {
			return invalid(pm, refusal), nil
		}
	}
	return x402.VerifyResponse{IsValid: true, Payer: pm.payer}, nil
}

func (v chainView) refusal(pm *payment) *exact.VerifyError {
	if pm.sigErr != nil && !v.contract {
		return pm.sigErr
	}
	if v.used {
		return refuse(exact.ReasonNonceAlreadyUsed, "the authorization was already used or canceled on chain")
	}
	if v.balance.Cmp(pm.value) < 0 {
		return refuse(ReasonInsufficientBalance, "the payer's balance (%s) is below the amount (%s)", v.balance, pm.value)
	}
	return nil
}

func invalid(pm *payment, err error) x402.VerifyResponse {
	payer := ""
	if pm != nil {
		payer = pm.payer
	}
	var ve *exact.VerifyError
	if errors.As(err, &ve) {
		return x402.VerifyResponse{IsValid: false, InvalidReason: ve.Reason, InvalidMessage: ve.Message, Payer: payer}
	}
	return x402.VerifyResponse{IsValid: false, InvalidReason: exact.ReasonInvalidPayload, InvalidMessage: err.Error(), Payer: payer}
}

func failed(pm *payment, req x402.PaymentRequirements, reason, msg string) x402.SettleResponse {
	payer := ""
	if pm != nil {
		payer = pm.payer
	}
	return x402.SettleResponse{Success: false, ErrorReason: reason, ErrorMessage: msg, Payer: payer, Network: req.Network}
}

// Settle implements x402.Facilitator. A payment refused by the local or
// chain checks, by its payer's balance less its settlements in flight, by
// its payer's revert budget, or by the simulation, is answered Success
// false before any transaction (see the package doc). An authorization
// already used on chain by a transfer of this payment (same payer, payTo and amount) gets that settlement back;
// otherwise it is refused (exact.ReasonNonceAlreadyUsed). A transaction
// sent and not confirmed within ctx is answered Success false with
// ReasonSettlementPending and its hash; the facilitator goes on following
// it (see the package doc). The relayer's gas, the fee cap or
// the RPC endpoint failing is an *UnavailableError.
func (f *Facilitator) Settle(ctx context.Context, payload x402.PaymentPayload, req x402.PaymentRequirements) (x402.SettleResponse, error) {
	if f.bg.Err() != nil {
		return x402.SettleResponse{}, &UnavailableError{Reason: UnavailableClosed, Err: errors.New("x402 onchain: the facilitator is closed")}
	}
	pm, err := f.check(payload, req)
	if err != nil {
		vr := invalid(pm, err)
		return failed(pm, req, vr.InvalidReason, vr.InvalidMessage), nil
	}
	// One settlement per authorization at a time in this process.
	type result struct {
		resp x402.SettleResponse
		err  error
	}
	ch := f.flight.DoChan(pm.key, func() (any, error) {
		resp, err := f.settle(ctx, pm, req)
		return result{resp, err}, nil
	})
	answer := func(r singleflight.Result) (x402.SettleResponse, error) {
		res := r.Val.(result)
		if r.Shared && res.err == nil && res.resp.Success && !sameTransfer(res.resp, req) {
			return failed(pm, req, exact.ReasonNonceAlreadyUsed, "the authorization was settled for another payment"), nil
		}
		return res.resp, res.err
	}
	select {
	case r := <-ch:
		return answer(r)
	case <-ctx.Done():
		// A settlement cut short by ctx answers at once (pending, with its
		// transaction, if one was sent): wait a moment for that answer.
		select {
		case r := <-ch:
			return answer(r)
		case <-time.After(pendingGrace):
			return x402.SettleResponse{}, fmt.Errorf("x402 onchain: settle: %w", ctx.Err())
		}
	}
}

// pendingGrace is how long a Settle whose context ended waits for the
// settlement's own answer (which carries the transaction hash, if any).
const pendingGrace = 2 * time.Second

func sameTransfer(resp x402.SettleResponse, req x402.PaymentRequirements) bool {
	if resp.Extra == nil {
		return true
	}
	payTo, _ := resp.Extra["payTo"].(string)
	return payTo == "" || wire.EqualAddressFold(payTo, req.PayTo)
}

func (f *Facilitator) settle(ctx context.Context, pm *payment, req x402.PaymentRequirements) (x402.SettleResponse, error) {
	if tr := f.following(pm.key); tr != nil {
		// Sent by an earlier settlement of this authorization whose caller
		// stopped waiting, and not confirmed yet: await that transaction
		// rather than send another (or answer from a receipt short of its
		// confirmations). It is still in flight for its payer.
		f.payers.hold(pm)
		defer f.payers.drop(pm)
		return f.settleTracked(ctx, pm, req, tr)
	}
	v, err := f.view(ctx, pm)
	if err != nil {
		return x402.SettleResponse{}, &UnavailableError{Reason: UnavailableRPC, Err: err}
	}
	if v.used {
		return f.settledBefore(ctx, pm, req)
	}
	if r := v.refusal(pm); r != nil {
		return failed(pm, req, r.Reason, r.Message), nil
	}
	if r := f.overBudget(pm); r != nil {
		return failed(pm, req, r.Reason, r.Message), nil
	}
	if err := f.relayerCanPay(v.relayer); err != nil {
		return x402.SettleResponse{}, err
	}
	unlock, r, err := f.admit(ctx, pm)
	if err != nil {
		return x402.SettleResponse{}, err
	}
	if r != nil {
		return failed(pm, req, r.Reason, r.Message), nil
	}
	defer f.payers.drop(pm)
	// The payer's lock is held until the transaction is in the node's
	// pool: the payer's next admission then reads a pending state that
	// shows it, or sees it unsent, never both halves of a change.
	tr, refusal, err := f.launch(ctx, pm)
	unlock()
	if err != nil {
		return x402.SettleResponse{}, err
	}
	if refusal != nil {
		return simulationRefused(pm, req, refusal), nil
	}
	return f.settleTracked(ctx, pm, req, tr)
}

// simulationRefused answers a settlement the simulation refused. The
// authorization was unused at the latest block: if the pending state says
// it is used, a transaction using it (another instance's, the payer's) is
// waiting to be mined, and its fate decides (ReasonSettlementPending).
func simulationRefused(pm *payment, req x402.PaymentRequirements, refusal *exact.VerifyError) x402.SettleResponse {
	if refusal.Reason == exact.ReasonNonceAlreadyUsed {
		return failed(pm, req, ReasonSettlementPending, "a transaction using the authorization is waiting to be mined")
	}
	return failed(pm, req, refusal.Reason, refusal.Message)
}

// overBudget refuses the payments of a payer whose settlement
// transactions reverted Config.MaxPayerReverts times within
// Config.RevertWindow.
func (f *Facilitator) overBudget(pm *payment) *exact.VerifyError {
	if f.cfg.MaxPayerReverts < 0 {
		return nil
	}
	if n := f.payers.reverts(pm.from, time.Now().Add(-f.cfg.RevertWindow)); n >= f.cfg.MaxPayerReverts {
		return refuse(ReasonRevertBudgetExhausted, "%d settlement transactions of this payer reverted within %s; its payments are refused for now", n, f.cfg.RevertWindow)
	}
	return nil
}

// admit puts pm's settlement in flight for its payer if the payer's
// balance covers it together with the payer's other settlements in
// flight, and returns with the payer's lock held (unlock releases it);
// else it refuses it (ReasonInsufficientBalance). Under the payer's lock,
// the balance is read at the pending block (the node's pool included),
// and the amounts of the other settlements in flight that the pending
// state does not show spent yet are set against it (see admitLocked). An
// authorization the pending state shows used (a transaction of it is in
// the pool) is answered ReasonSettlementPending. The caller drops pm once
// its settlement is over.
func (f *Facilitator) admit(ctx context.Context, pm *payment) (unlock func(), refusal *exact.VerifyError, err error) {
	unlock, err = f.payers.lock(ctx, pm.from)
	if err != nil {
		return nil, nil, fmt.Errorf("x402 onchain: wait for the payer's other settlements: %w", err)
	}
	refusal, err = f.admitLocked(ctx, pm)
	if refusal != nil || err != nil {
		unlock()
		return nil, refusal, err
	}
	return unlock, nil, nil
}

// admitLocked is admit under the payer's lock. Counting every other
// settlement in flight as unspent is never wrong (at worst a refusal), and
// settles a payer whose balance covers them all in one read; only a payer
// short of that has the others' authorizations read.
func (f *Facilitator) admitLocked(ctx context.Context, pm *payment) (*exact.VerifyError, error) {
	others := f.payers.inFlight(pm.from, pm.key)
	unspent := new(big.Int)
	for _, o := range others {
		unspent.Add(unspent, o.value)
	}
	balance, own, err := f.balancePending(ctx, pm)
	if err == nil && !own && unspent.Sign() > 0 && new(big.Int).Sub(balance, unspent).Cmp(pm.value) < 0 {
		// Which of the others the pending state shows spent, and then
		// the balance again: a transfer landing between the two reads is
		// counted twice, never missed.
		var used []bool
		if used, err = f.usedPending(ctx, pm.from, others); err == nil {
			unspent.SetInt64(0)
			for i, o := range others {
				if !used[i] {
					unspent.Add(unspent, o.value)
				}
			}
			balance, own, err = f.balancePending(ctx, pm)
		}
	}
	if err != nil {
		return nil, &UnavailableError{Reason: UnavailableRPC, Err: err}
	}
	if own {
		return refuse(ReasonSettlementPending, "a transaction using the authorization is waiting to be mined"), nil
	}
	if free := new(big.Int).Sub(balance, unspent); free.Cmp(pm.value) < 0 {
		if unspent.Sign() == 0 {
			return refuse(ReasonInsufficientBalance, "the payer's balance (%s) is below the amount (%s)", balance, pm.value), nil
		}
		return refuse(ReasonInsufficientBalance, "the payer's balance (%s) less its settlements in flight (%s) is below the amount (%s)",
			balance, unspent, pm.value), nil
	}
	f.payers.hold(pm)
	return nil, nil
}

// usedPending reads authorizationState(from, nonce) of each of fls at the
// pending block.
func (f *Facilitator) usedPending(ctx context.Context, from common.Address, fls []held) ([]bool, error) {
	outs := make([]hexutil.Bytes, len(fls))
	batch := make([]rpc.BatchElem, len(fls))
	for i, fl := range fls {
		data, err := f.abi.Pack("authorizationState", from, fl.nonce)
		if err != nil {
			return nil, err
		}
		batch[i] = rpc.BatchElem{Method: "eth_call", Args: []any{callArg{To: f.token, Data: data}, "pending"}, Result: &outs[i]}
	}
	if err := f.rpc.BatchCallContext(ctx, batch); err != nil {
		return nil, fmt.Errorf("x402 onchain: read the payer's authorizations in flight: %w", err)
	}
	used := make([]bool, len(fls))
	for i, b := range batch {
		if b.Error != nil {
			return nil, fmt.Errorf("x402 onchain: read the payer's authorizations in flight: %w", b.Error)
		}
		if len(outs[i]) != 32 {
			return nil, fmt.Errorf("x402 onchain: the token at %s does not answer authorizationState", f.token.Hex())
		}
		used[i] = outs[i][31] != 0
	}
	return used, nil
}

// balancePending reads, at the pending block, the balance of pm's payer
// and whether pm's authorization is used there (a transaction using it is
// in the node's pool).
func (f *Facilitator) balancePending(ctx context.Context, pm *payment) (balance *big.Int, used bool, err error) {
	balData, err := f.abi.Pack("balanceOf", pm.from)
	if err != nil {
		return nil, false, err
	}
	stateData, err := f.abi.Pack("authorizationState", pm.from, pm.nonce)
	if err != nil {
		return nil, false, err
	}
	var balOut, stateOut hexutil.Bytes
	batch := []rpc.BatchElem{
		{Method: "eth_call", Args: []any{callArg{To: f.token, Data: balData}, "pending"}, Result: &balOut},
		{Method: "eth_call", Args: []any{callArg{To: f.token, Data: stateData}, "pending"}, Result: &stateOut},
	}
	if err := f.rpc.BatchCallContext(ctx, batch); err != nil {
		return nil, false, fmt.Errorf("x402 onchain: read the payer's pending balance: %w", err)
	}
	for _, b := range batch {
		if b.Error != nil {
			return nil, false, fmt.Errorf("x402 onchain: read the payer's pending balance: %w", b.Error)
		}
	}
	if len(balOut) != 32 || len(stateOut) != 32 {
		return nil, false, fmt.Errorf("x402 onchain: the token at %s does not answer balanceOf/authorizationState", f.token.Hex())
	}
	return new(big.Int).SetBytes(balOut), stateOut[31] != 0, nil
}

// launch simulates pm's transfer, sends it and starts following it; or
// answers the refusal of the simulation.
func (f *Facilitator) launch(ctx context.Context, pm *payment) (*tracker, *exact.VerifyError, error) {
	data, gas, refusal, err := f.simulate(ctx, pm)
	if err != nil || refusal != nil {
		return nil, refusal, err
	}
	fe, err := f.fees(ctx, false)
	if err != nil {
		return nil, nil, err
	}
	if err := f.affordable(ctx, gas, fe); err != nil {
		return nil, nil, err
	}
	s, err := f.relayer.send(ctx, f.token, data, gas, fe)
	if err != nil {
		return nil, nil, err
	}
	f.log.Info("x402 onchain: settlement sent", "transaction", s.tx.Hash().Hex(), "nonce", s.tx.Nonce(), "payer", pm.payer, "amount", pm.value.String())
	return f.follow(pm, s), nil, nil
}

// settleTracked answers from the fate of tr, the transaction of pm's
// transfer, sending the transfer again (simulated again) when the
// relayer's nonce went to another transaction.
func (f *Facilitator) settleTracked(ctx context.Context, pm *payment, req x402.PaymentRequirements, tr *tracker) (x402.SettleResponse, error) {
	for attempt := 1; ; attempt++ {
		if tr == nil {
			var refusal *exact.VerifyError
			var err error
			if tr, refusal, err = f.launch(ctx, pm); err != nil {
				return x402.SettleResponse{}, err
			} else if refusal != nil {
				return simulationRefused(pm, req, refusal), nil
			}
		}
		rcpt, err := tr.wait(ctx)
		tx := tr.tx
		tr = nil
		switch {
		case err != nil:
			// Not confirmed in time: the transaction is still followed
			// (broadcast again if dropped); the caller presents the
			// payment again later, or asks Status.
			pending := failed(pm, req, ReasonSettlementPending, "the transaction was sent and is not confirmed yet")
			pending.Transaction = tx.Hash().Hex()
			return pending, nil
		case rcpt == nil:
			// The relayer's nonce went to another transaction (the key used
			// elsewhere, an operator's replacement): if the authorization is
			// still unused, send it again with a new nonce.
			v, err := f.view(ctx, pm)
			if err != nil {
				return x402.SettleResponse{}, &UnavailableError{Reason: UnavailableRPC, Err: err}
			}
			if v.used || attempt >= maxResends {
				return f.afterRevert(ctx, pm, req, "the settlement transaction was replaced")
			}
			f.log.Warn("x402 onchain: settlement transaction replaced by another of the relayer; sending it again", "transaction", tx.Hash().Hex(), "nonce", tx.Nonce())
			continue
		case rcpt.Status != types.ReceiptStatusSuccessful:
			return f.afterRevert(ctx, pm, req, "the settlement transaction "+rcpt.TxHash.Hex()+" reverted")
		}
		return f.fromReceipt(pm, req, rcpt)
	}
}

// tracker follows one settlement transaction until it is mined with its
// confirmations, or its nonce is taken, or the facilitator is closed.
type tracker struct {
	tx   *types.Transaction // as first sent
	done chan struct{}      // closed when rcpt and err are set
	rcpt *types.Receipt
	err  error
}

// wait returns the tracker's outcome, or ctx's error if ctx ends first
// (the tracker goes on).
func (t *tracker) wait(ctx context.Context) (*types.Receipt, error) {
	select {
	case <-t.done:
		return t.rcpt, t.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// follow starts following s, the transaction of pm, in a goroutine of
// its own that lives until the transaction's fate is known or Close: a
// settlement whose caller stopped waiting is still broadcast again if the
// node drops it, replaced if it is stuck, and forgotten by Pending once
// mined. Meanwhile pm stays in flight for its payer; a revert counts
// against the payer's budget (Config.MaxPayerReverts).
func (f *Facilitator) follow(pm *payment, s sent) *tracker {
	key := pm.key
	t := &tracker{tx: s.tx, done: make(chan struct{})}
	f.trackMu.Lock()
	if f.closed {
		// Close has begun (a settlement still in flight at shutdown): the
		// transaction is in the node's pool; the authorization's status
		// tells what becomes of it.
		f.trackMu.Unlock()
		t.err = fmt.Errorf("x402 onchain: the facilitator is closed: %w", context.Canceled)
		close(t.done)
		return t
	}
	f.tracking[key] = t
	f.trackers.Add(1) // under trackMu, so never concurrent with Close's Wait
	f.trackMu.Unlock()
	f.payers.hold(pm)
	go func() {
		defer f.trackers.Done()
		defer f.payers.drop(pm)
		t.rcpt, t.err = f.await(f.bg, s)
		if t.err == nil && t.rcpt != nil && t.rcpt.Status != types.ReceiptStatusSuccessful {
			now := time.Now()
			f.payers.reverted(pm.from, now, now.Add(-f.cfg.RevertWindow))
			f.log.Warn("x402 onchain: settlement transaction reverted; counted against the payer", "transaction", t.rcpt.TxHash.Hex(), "payer", pm.payer)
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

// following returns the tracker of the authorization key's transaction,
// if one is followed.
func (f *Facilitator) following(key string) *tracker {
	f.trackMu.Lock()
	defer f.trackMu.Unlock()
	return f.tracking[key]
}

// maxResends bounds how many times one settlement is sent with a new nonce
// after its transaction was replaced.
const maxResends = 3

// simulate estimates the gas of pm's transfer (eth_estimateGas runs it)
// against the pending block, so that the transactions waiting in the
// node's pool (other instances' settlements, the payer's own transfers)
// count: the calldata and the gas limit (with DefaultGasMargin), or the
// refusal the token's revert means.
func (f *Facilitator) simulate(ctx context.Context, pm *payment) (data []byte, gas uint64, refusal *exact.VerifyError, err error) {
	data, err = f.calldata(pm)
	if err != nil {
		return nil, 0, nil, err
	}
	var est hexutil.Uint64
	err = f.rpc.CallContext(ctx, &est, "eth_estimateGas", callArg{From: &f.relayer.addr, To: f.token, Data: data}, "pending")
	gas = uint64(est)
	if err != nil {
		if text, ok := revertText(err); ok {
			return nil, 0, refuse(revertReason(text), "the transfer would revert: %s", clip.Bytes(text, 200)), nil
		}
		return nil, 0, nil, &UnavailableError{Reason: UnavailableRPC, Err: fmt.Errorf("simulate the transfer: %w", err)}
	}
	return data, gas + gas*DefaultGasMargin/100, nil, nil
}

// afterRevert answers a settlement whose own transaction did not transfer:
// if the authorization was used meanwhile (by another transaction), that
// settlement, else a failure.
func (f *Facilitator) afterRevert(ctx context.Context, pm *payment, req x402.PaymentRequirements, msg string) (x402.SettleResponse, error) {
	v, err := f.view(ctx, pm)
	if err != nil {
		return x402.SettleResponse{}, &UnavailableError{Reason: UnavailableRPC, Err: err}
	}
	if v.used {
		return f.settledBefore(ctx, pm, req)
	}
	return failed(pm, req, ReasonTransactionFailed, msg), nil
}

// settledBefore answers a payment whose authorization the chain says is
// used: the original settlement when it transferred this payment.
func (f *Facilitator) settledBefore(ctx context.Context, pm *payment, req x402.PaymentRequirements) (x402.SettleResponse, error) {
	st, confirmed, err := f.status(ctx, pm)
	if err != nil {
		return x402.SettleResponse{}, &UnavailableError{Reason: UnavailableRPC, Err: err}
	}
	if st.Transaction == "" || !strings.EqualFold(st.Payer, pm.from.Hex()) || !strings.EqualFold(st.PayTo, req.PayTo) || st.Amount != normAmount(req.Amount) {
		return failed(pm, req, exact.ReasonNonceAlreadyUsed, "the authorization was already used or canceled on chain"), nil
	}
	if !confirmed {
		// Mined by a transaction this process does not follow (another
		// instance's, or before a restart): reported once confirmed.
		pending := failed(pm, req, ReasonSettlementPending, fmt.Sprintf("the transaction is mined and does not have its %d confirmations yet", f.cfg.Confirmations))
		pending.Transaction = st.Transaction
		return pending, nil
	}
	return x402.SettleResponse{Success: true, Payer: pm.payer, Transaction: st.Transaction, Network: req.Network, Amount: req.Amount,
		Extra: map[string]any{"payTo": st.PayTo}}, nil
}

func normAmount(s string) string {
	if b, ok := new(big.Int).SetString(s, 10); ok {
		return b.String()
	}
	return s
}

// fromReceipt checks a successful receipt's events: AuthorizationUsed(from,
// nonce) and, right after it, Transfer(from, payTo, amount) from the token.
func (f *Facilitator) fromReceipt(pm *payment, req x402.PaymentRequirements, rcpt *types.Receipt) (x402.SettleResponse, error) {
	tr, ok := transferOf(rcpt.Logs, f.token, pm.from, pm.nonce)
	hash := rcpt.TxHash.Hex()
	if !ok || tr.to != pm.to || !wire.EqualAddressFold(tr.to.Hex(), req.PayTo) || tr.value.Cmp(pm.value) != 0 {
		f.log.Error("x402 onchain: the settlement's events are not the payment", "transaction", hash, "payer", pm.payer)
		r := failed(pm, req, ReasonTransferEventMismatch, "the transaction's Transfer event is not the payment")
		r.Transaction = hash
		return r, nil
	}
	f.log.Info("x402 onchain: settled", "transaction", hash, "block", rcpt.BlockNumber.Uint64(), "payer", pm.payer, "amount", pm.value.String())
	return x402.SettleResponse{Success: true, Payer: pm.payer, Transaction: hash, Network: req.Network, Amount: req.Amount,
		Extra: map[string]any{"payTo": tr.to.Hex()}}, nil
}

// transfer is a Transfer event.
type transfer struct {
	to    common.Address
	value *big.Int
}

// transferOf finds, in a transaction's logs, the token's
// AuthorizationUsed(from, nonce) and the Transfer from `from` that follows
// it.
func transferOf(logs []*types.Log, token, from common.Address, nonce [32]byte) (transfer, bool) {
	for i, l := range logs {
		if l.Address != token || len(l.Topics) != 3 || l.Topics[0] != topicAuthorizationUsed ||
			common.BytesToAddress(l.Topics[1][:]) != from || l.Topics[2] != common.Hash(nonce) {
			continue
		}
		for _, t := range logs[i+1:] {
			if t.Address == token && len(t.Topics) == 3 && t.Topics[0] == topicTransfer && common.BytesToAddress(t.Topics[1][:]) == from && len(t.Data) == 32 {
				return transfer{to: common.BytesToAddress(t.Topics[2][:]), value: new(big.Int).SetBytes(t.Data)}, true
			}
		}
	}
	return transfer{}, false
}

// calldata encodes the transferWithAuthorization call of pm: the (v, r, s)
// form for an EOA's signature under FormVRS, else the bytes form.
func (f *Facilitator) calldata(pm *payment) ([]byte, error) {
	if len(pm.sig) == 65 && f.cfg.Form == FormVRS && pm.sigErr == nil {
		v := pm.sig[64]
		if v < 27 {
			v += 27
		}
		var r, s [32]byte
		copy(r[:], pm.sig[:32])
		copy(s[:], pm.sig[32:64])
		return f.abi.Pack("transferWithAuthorization", pm.from, pm.to, pm.value, pm.validAfter, pm.validBef, pm.nonce, v, r, s)
	}
	sig := pm.sig
	if len(sig) == 65 && sig[64] < 27 {
		sig = append([]byte(nil), sig...)
		sig[64] += 27
	}
	return f.abi.Pack("transferWithAuthorization0", pm.from, pm.to, pm.value, pm.validAfter, pm.validBef, pm.nonce, sig)
}

// fees returns the EIP-1559 fees of a settlement: the node's suggested
// tip (within MaxPriorityFeePerGas) and twice the base fee plus the tip
// (within MaxFeePerGas), reused for FeeTTL unless fresh. A base fee above
// the cap is an *UnavailableError.
func (f *Facilitator) fees(ctx context.Context, fresh bool) (fees, error) {
	f.feeMu.Lock()
	defer f.feeMu.Unlock()
	if !fresh && f.feeData.feeCap != nil && time.Since(f.feeAt) < f.cfg.FeeTTL {
		return f.feeData, nil
	}
	head, err := f.client.HeaderByNumber(ctx, nil)
	if err != nil {
		return fees{}, &UnavailableError{Reason: UnavailableRPC, Err: fmt.Errorf("read the latest block: %w", err)}
	}
	tip, err := f.client.SuggestGasTipCap(ctx)
	if err != nil {
		return fees{}, &UnavailableError{Reason: UnavailableRPC, Err: fmt.Errorf("read the priority fee: %w", err)}
	}
	if f.cfg.MaxPriorityFeePerGas != nil && tip.Cmp(f.cfg.MaxPriorityFeePerGas) > 0 {
		tip = new(big.Int).Set(f.cfg.MaxPriorityFeePerGas)
	}
	base := head.BaseFee
	if base == nil {
		base = big.NewInt(0)
	}
	feeCap := new(big.Int).Add(new(big.Int).Mul(base, big.NewInt(2)), tip)
	if c := f.cfg.MaxFeePerGas; c != nil {
		if base.Cmp(c) >= 0 {
			return fees{}, &UnavailableError{Reason: UnavailableFeeCap, Err: fmt.Errorf("the base fee (%s wei) is at or above the fee cap (%s wei)", base, c)}
		}
		if feeCap.Cmp(c) > 0 {
			feeCap = new(big.Int).Set(c)
		}
		if tip.Cmp(feeCap) > 0 {
			tip = new(big.Int).Set(feeCap)
		}
	}
	f.feeData, f.feeAt = fees{tip: tip, feeCap: feeCap}, time.Now()
	return f.feeData, nil
}

// affordable refuses a settlement the relayer cannot pay for (or that
// would take its balance under MinRelayerBalance), before sending it.
func (f *Facilitator) affordable(ctx context.Context, gas uint64, fe fees) error {
	if f.cfg.MinRelayerBalance == nil {
		return nil // the node refuses with "insufficient funds" if need be
	}
	b, err := f.client.BalanceAt(ctx, f.relayer.addr, nil)
	if err != nil {
		return &UnavailableError{Reason: UnavailableRPC, Err: fmt.Errorf("read the relayer's balance: %w", err)}
	}
	need := new(big.Int).Mul(new(big.Int).SetUint64(gas), fe.feeCap)
	need.Add(need, f.cfg.MinRelayerBalance)
	if b.Cmp(need) < 0 {
		return &UnavailableError{Reason: UnavailableOutOfGas, Err: fmt.Errorf("%w: relayer %s holds %s wei, below the minimum %s wei plus this settlement's gas", ErrRelayerOutOfGas, f.relayer.addr.Hex(), b, f.cfg.MinRelayerBalance)}
	}
	return nil
}

// Status implements x402.StatusChecker: see StatusReader.Status.
func (f *Facilitator) Status(ctx context.Context, payload x402.PaymentPayload, req x402.PaymentRequirements) (x402.AuthorizationStatus, error) {
	return f.reader.Status(ctx, payload, req)
}

// status reads what the chain says of pm's authorization; confirmed is
// false when the transaction that used it lacks its confirmations.
func (f *Facilitator) status(ctx context.Context, pm *payment) (st x402.AuthorizationStatus, confirmed bool, err error) {
	return f.reader.status(ctx, pm.from, pm.nonce, pm.validBef)
}

// Scheme implements x402.Mechanism: the on-chain facilitator settles the
// exact scheme.
func (f *Facilitator) Scheme() string { return x402.SchemeExact }

// Networks implements x402.Mechanism: the one network it settles on.
func (f *Facilitator) Networks() []string { return []string{f.network.CAIP2} }

// Supported implements x402.Facilitator: the exact scheme on the network,
// for x402 v2 and v1, with the relayer as signer.
func (f *Facilitator) Supported(ctx context.Context) (x402.SupportedResponse, error) {
	if err := ctx.Err(); err != nil {
		return x402.SupportedResponse{}, err
	}
	return x402.SupportedResponse{
		Kinds: []x402.SupportedKind{
			{X402Version: 2, Scheme: x402.SchemeExact, Network: f.network.CAIP2},
			{X402Version: 1, Scheme: x402.SchemeExact, Network: f.network.V1Name},
		},
		Extensions: []string{},
		Signers:    map[string][]string{"eip155:*": {f.relayer.addr.Hex()}},
	}, nil
}

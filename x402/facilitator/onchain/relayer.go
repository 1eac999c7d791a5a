package onchain

import (
	"context"
	"crypto/ecdsa"
	"errors"
	"fmt"
	"math/big"
	"strings"
	"sync"
	"time"

	ethereum "github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/ethclient"
	"github.com/ethereum/go-ethereum/rpc"
)

// UnavailableError is a settlement the facilitator could not attempt for a
// reason of its own (the relayer's gas, the fee cap, the RPC endpoint):
// nothing was sent, the payer is not at fault, and the right answer is 503
// with Retry-After.
type UnavailableError struct {
	Reason string // a short code, e.g. "relayer_out_of_gas"
	Err    error
}

// Error implements error.
func (e *UnavailableError) Error() string {
	if e.Err == nil {
		return "x402 onchain: " + e.Reason
	}
	return "x402 onchain: " + e.Reason + ": " + e.Err.Error()
}

// Unwrap returns the cause.
func (e *UnavailableError) Unwrap() error { return e.Err }

// Unavailable reports true: the facilitator is temporarily unable to settle.
func (e *UnavailableError) Unavailable() bool { return true }

// Reasons of UnavailableError.
const (
	UnavailableOutOfGas = "relayer_out_of_gas"
	UnavailableFeeCap   = "fee_above_cap"
	UnavailableRPC      = "rpc_unavailable"
	UnavailableClosed   = "facilitator_closed" // Close has been called
)

// ErrRelayerOutOfGas is wrapped by the UnavailableError of a relayer whose
// native balance cannot pay for a settlement's gas.
var ErrRelayerOutOfGas = errors.New("the relayer's balance cannot pay for the gas of a settlement")

// relayer sends transactions from one key with contiguous nonces.
//
// The nonce of the next transaction is read from the node's pending nonce
// on first use and after any send the node refuses for its nonce; it is
// advanced only once the node took a transaction (or may have: a transport
// error keeps the nonce, and the transaction is broadcast again while it
// is awaited). Sends are serialised, so concurrent settlements get
// consecutive nonces and none is skipped.
type relayer struct {
	key     *ecdsa.PrivateKey
	addr    common.Address
	signer  types.Signer
	chainID *big.Int
	client  *ethclient.Client

	mu      sync.Mutex
	next    uint64
	synced  bool
	pending map[uint64]common.Hash // nonce → latest transaction sent with it, until mined
}

func newRelayer(key *ecdsa.PrivateKey, chainID *big.Int, client *ethclient.Client) *relayer {
	return &relayer{
		key: key, addr: crypto.PubkeyToAddress(key.PublicKey), signer: types.LatestSignerForChainID(chainID),
		chainID: chainID, client: client, pending: map[uint64]common.Hash{},
	}
}

// fees are the EIP-1559 fee fields of a transaction.
type fees struct {
	tip, feeCap *big.Int
}

// sendKind classifies a node's answer to eth_sendRawTransaction.
type sendKind int

const (
	sendTaken       sendKind = iota // the node took it (or already had it)
	sendMaybe                       // no answer: it may have been taken
	sendBadNonce                    // refused for its nonce: resynchronise
	sendNoFunds                     // refused: the relayer cannot pay for gas
	sendUnderpriced                 // refused: fees too low (the base fee)
	sendOccupied                    // refused: the nonce holds another pending transaction, with fees this one does not outbid
	sendRefused                     // refused for another reason
)

func classifySend(err error) sendKind {
	if err == nil {
		return sendTaken
	}
	var rpcErr rpc.Error
	if !errors.As(err, &rpcErr) {
		var httpErr rpc.HTTPError
		if errors.As(err, &httpErr) && httpErr.StatusCode < 500 {
			return sendRefused
		}
		return sendMaybe
	}
	msg := strings.ToLower(err.Error())
	switch {
	case strings.Contains(msg, "already known"), strings.Contains(msg, "already imported"):
		return sendTaken
	case strings.Contains(msg, "nonce too low"), strings.Contains(msg, "nonce too high"), strings.Contains(msg, "nonce has already been used"):
		return sendBadNonce
	case strings.Contains(msg, "insufficient funds"):
		return sendNoFunds
	case strings.Contains(msg, "replacement transaction underpriced"), strings.Contains(msg, "replacement fee too low"):
		return sendOccupied
	case strings.Contains(msg, "underpriced"), strings.Contains(msg, "fee too low"), strings.Contains(msg, "less than block base fee"),
		strings.Contains(msg, "lower than the base fee"):
		return sendUnderpriced
	}
	return sendRefused
}

// sent is a transaction this relayer signed and sent.
type sent struct {
	tx    *types.Transaction
	at    time.Time
	fresh bool // taken by the node (false: the send had no answer)
}

// send signs a transaction with the next nonce and sends it. A refusal
// for the nonce resynchronises it from the node and tries again (at most
// three times).
func (r *relayer) send(ctx context.Context, to common.Address, data []byte, gas uint64, f fees) (sent, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for attempt := 0; ; attempt++ {
		if !r.synced {
			n, err := r.client.PendingNonceAt(ctx, r.addr)
			if err != nil {
				return sent{}, &UnavailableError{Reason: UnavailableRPC, Err: fmt.Errorf("read the relayer's pending nonce: %w", err)}
			}
			r.next, r.synced = n, true
		}
		tx, err := types.SignNewTx(r.key, r.signer, &types.DynamicFeeTx{
			ChainID: r.chainID, Nonce: r.next, GasTipCap: f.tip, GasFeeCap: f.feeCap, Gas: gas, To: &to, Data: data,
		})
		if err != nil {
			return sent{}, fmt.Errorf("x402 onchain: sign the settlement transaction: %w", err)
		}
		err = r.client.SendTransaction(ctx, tx)
		switch classifySend(err) {
		case sendTaken, sendMaybe:
			r.pending[tx.Nonce()] = tx.Hash()
			r.next++
			return sent{tx: tx, at: time.Now(), fresh: err == nil}, nil
		case sendBadNonce, sendOccupied:
			// A new transaction whose nonce is taken (by another process
			// using the same key, or a transaction sent by hand): read the
			// pending nonce again, which counts it.
			r.synced = false
			if attempt < 3 {
				continue
			}
			return sent{}, &UnavailableError{Reason: UnavailableRPC, Err: fmt.Errorf("the node keeps refusing the relayer's nonce: %w", err)}
		case sendNoFunds:
			return sent{}, &UnavailableError{Reason: UnavailableOutOfGas, Err: ErrRelayerOutOfGas}
		case sendUnderpriced:
			return sent{}, &UnavailableError{Reason: UnavailableFeeCap, Err: fmt.Errorf("the node refused the fees: %w", err)}
		default:
			return sent{}, fmt.Errorf("x402 onchain: the node refused the settlement transaction: %w", err)
		}
	}
}

// replace signs the same transaction (same nonce) with other fees and
// sends it: a replacement of a transaction that is stuck.
func (r *relayer) replace(ctx context.Context, old *types.Transaction, f fees) (*types.Transaction, error) {
	tx, err := types.SignNewTx(r.key, r.signer, &types.DynamicFeeTx{
		ChainID: r.chainID, Nonce: old.Nonce(), GasTipCap: f.tip, GasFeeCap: f.feeCap, Gas: old.Gas(), To: old.To(), Data: old.Data(),
	})
	if err != nil {
		return nil, fmt.Errorf("x402 onchain: sign a replacement: %w", err)
	}
	if err := r.client.SendTransaction(ctx, tx); classifySend(err) != sendTaken && classifySend(err) != sendMaybe {
		return nil, fmt.Errorf("x402 onchain: send a replacement: %w", err)
	}
	r.mu.Lock()
	if _, ok := r.pending[tx.Nonce()]; ok {
		r.pending[tx.Nonce()] = tx.Hash()
	}
	r.mu.Unlock()
	return tx, nil
}

// done forgets a nonce whose transaction was mined (or whose nonce was
// taken by another transaction).
func (r *relayer) done(nonce uint64) {
	r.mu.Lock()
	delete(r.pending, nonce)
	r.mu.Unlock()
}

// prune forgets the nonces below mined (the relayer's mined transaction
// count): their transactions are on chain.
func (r *relayer) prune(mined uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for n := range r.pending {
		if n < mined {
			delete(r.pending, n)
		}
	}
}

// pendingCount is the number of transactions sent and not yet mined.
func (r *relayer) pendingCount() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.pending)
}

// await waits for one of txs (the transaction and its replacements,
// newest last) to be mined with cfg.Confirmations confirmations,
// broadcasting the newest again when the node seems to have dropped it and
// replacing it with higher fees (within the cap) when it is stuck. The
// receipt is read again at every poll until it is confirmed: a receipt
// that vanishes (its block reorganised away) sends the wait back to
// awaiting the transaction, which is broadcast again if the node no longer
// has it. It returns the confirmed receipt, or (nil, nil) when the nonce
// was taken by a transaction that is not one of them, or the context's
// error.
func (f *Facilitator) await(ctx context.Context, s sent) (*types.Receipt, error) {
	txs := []*types.Transaction{s.tx}
	lastSend := s.at
	var seen *types.Receipt // the last receipt read, while unconfirmed
	// Poll soon after the send (a chain that mines at once answers within
	// milliseconds), then less and less often, up to PollInterval.
	poll := min(5*time.Millisecond, f.cfg.PollInterval)
	first := true
	for {
		if !first {
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-time.After(poll):
			}
			poll = min(poll*2, f.cfg.PollInterval)
		}
		first = false
		rcpt, err := f.receiptOf(ctx, txs)
		if err != nil {
			return nil, err
		}
		if rcpt != nil {
			ok, err := f.confirmed(ctx, rcpt)
			if err != nil {
				return nil, err
			}
			if ok {
				f.relayer.done(s.tx.Nonce())
				return rcpt, nil
			}
			if seen != nil && seen.BlockHash != rcpt.BlockHash {
				f.log.Warn("x402 onchain: settlement transaction moved to another block by a reorganisation", "transaction", rcpt.TxHash.Hex(), "block", rcpt.BlockNumber.Uint64())
			}
			// Mined and not confirmed yet: the resend clock restarts, so a
			// transaction reorganised away is given the usual time to be
			// mined again before it is broadcast again.
			seen, lastSend = rcpt, time.Now()
			continue
		}
		if seen != nil {
			f.log.Warn("x402 onchain: settlement transaction's block reorganised away before its confirmations; awaiting it again", "transaction", seen.TxHash.Hex(), "block", seen.BlockNumber.Uint64())
			seen = nil
		}
		if time.Since(lastSend) < f.cfg.ResendAfter {
			continue
		}
		// Not mined for a while: was the nonce taken by another transaction?
		mined, err := f.client.NonceAt(ctx, f.relayer.addr, nil)
		if err != nil {
			continue
		}
		if mined > s.tx.Nonce() {
			// One more look for our receipts (mined in between), then give up.
			rcpt, err := f.receiptOf(ctx, txs)
			if err != nil {
				return nil, err
			}
			if rcpt != nil {
				seen, lastSend = rcpt, time.Now()
				continue
			}
			f.relayer.done(s.tx.Nonce())
			return nil, nil
		}
		newest := txs[len(txs)-1]
		_, isPending, err := f.client.TransactionByHash(ctx, newest.Hash())
		switch {
		case errors.Is(err, ethereum.NotFound):
			// Dropped by the node: broadcast it again.
			f.log.Warn("x402 onchain: settlement transaction dropped by the node; broadcasting it again", "transaction", newest.Hash().Hex(), "nonce", newest.Nonce())
			if k := classifySend(f.client.SendTransaction(ctx, newest)); k == sendUnderpriced || k == sendOccupied {
				if tx := f.bump(ctx, newest); tx != nil {
					txs = append(txs, tx)
				}
			}
		case err == nil && isPending:
			// Known but stuck: replace it with higher fees, within the cap.
			if tx := f.bump(ctx, newest); tx != nil {
				txs = append(txs, tx)
			}
		}
		lastSend = time.Now()
	}
}

// receiptOf returns the receipt of one of txs (the newest first), nil when
// none is mined, or the context's error. Other read errors are logged and
// count as not mined.
func (f *Facilitator) receiptOf(ctx context.Context, txs []*types.Transaction) (*types.Receipt, error) {
	for i := len(txs) - 1; i >= 0; i-- {
		rcpt, err := f.client.TransactionReceipt(ctx, txs[i].Hash())
		if err == nil {
			return rcpt, nil
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if !errors.Is(err, ethereum.NotFound) {
			f.log.Warn("x402 onchain: reading a receipt failed; retrying", "transaction", txs[i].Hash().Hex(), "error", err)
		}
	}
	return nil, nil
}

// bump replaces tx with fees 12.5 % higher (the least a node accepts) and
// at least the current ones, within the cap; nil when it cannot.
func (f *Facilitator) bump(ctx context.Context, tx *types.Transaction) *types.Transaction {
	cur, err := f.fees(ctx, true)
	if err != nil {
		return nil
	}
	raise := func(old, now *big.Int) *big.Int {
		b := new(big.Int).Mul(old, big.NewInt(1125))
		b.Div(b, big.NewInt(1000))
		b.Add(b, big.NewInt(1))
		if now.Cmp(b) > 0 {
			return new(big.Int).Set(now)
		}
		return b
	}
	nf := fees{tip: raise(tx.GasTipCap(), cur.tip), feeCap: raise(tx.GasFeeCap(), cur.feeCap)}
	if f.cfg.MaxFeePerGas != nil && nf.feeCap.Cmp(f.cfg.MaxFeePerGas) > 0 {
		if tx.GasFeeCap().Cmp(f.cfg.MaxFeePerGas) >= 0 {
			return nil
		}
		nf.feeCap = new(big.Int).Set(f.cfg.MaxFeePerGas)
	}
	if nf.tip.Cmp(nf.feeCap) > 0 {
		nf.tip = new(big.Int).Set(nf.feeCap)
	}
	ntx, err := f.relayer.replace(ctx, tx, nf)
	if err != nil {
		f.log.Warn("x402 onchain: replacing a stuck settlement transaction failed", "transaction", tx.Hash().Hex(), "error", err)
		return nil
	}
	f.log.Warn("x402 onchain: stuck settlement transaction replaced with higher fees", "old", tx.Hash().Hex(), "new", ntx.Hash().Hex(), "nonce", tx.Nonce())
	return ntx
}

// confirmed reports whether rcpt's block has cfg.Confirmations
// confirmations (see StatusReader.confirmed).
func (f *Facilitator) confirmed(ctx context.Context, rcpt *types.Receipt) (bool, error) {
	return f.reader.confirmed(ctx, rcpt)
}

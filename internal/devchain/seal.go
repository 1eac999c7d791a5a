package devchain

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"slices"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/consensus/misc/eip1559"
	"github.com/ethereum/go-ethereum/consensus/misc/eip4844"
	"github.com/ethereum/go-ethereum/core"
	"github.com/ethereum/go-ethereum/core/rawdb"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/core/vm"
	"github.com/ethereum/go-ethereum/params"
)

// Limits of the transactions held for a nonce gap.
const (
	maxQueuedPerSender = 64
	maxQueued          = 1024
)

// txFeeCap is the largest fee (gas × fee cap) of a transaction accepted
// over JSON-RPC: 1 ETH, go-ethereum's default, against mistyped fees.
var txFeeCap = big.NewInt(params.Ether)

// errAlreadyKnown is the answer to a transaction sent twice, in
// go-ethereum's words (clients match them).
var errAlreadyKnown = errors.New("already known")

// submit admits a signed transaction: mined at once in a block of its own
// when its nonce is the sender's next one (the sender's transactions held
// for the nonces after it follow in the next block), held when its nonce
// is ahead, refused with the execution's error (nonce too low, insufficient
// funds for gas * price + value, ...) otherwise. A transaction that
// reverts is mined, with a failed receipt.
func (c *Chain) submit(ctx context.Context, tx *types.Transaction) error {
	if tx.Type() == types.BlobTxType {
		return errors.New("transaction type not supported: blob transactions are not accepted by this chain")
	}
	from, err := types.Sender(c.signer, tx)
	if err != nil {
		return fmt.Errorf("invalid sender: %w", err)
	}
	fee := new(big.Int).Mul(tx.GasFeeCap(), new(big.Int).SetUint64(tx.Gas()))
	if fee.Cmp(txFeeCap) > 0 {
		return fmt.Errorf("tx fee (%s wei) exceeds the configured cap (1 ether)", fee)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.knownLocked(tx.Hash()) {
		return errAlreadyKnown
	}
	st, err := c.bc.State()
	if err != nil {
		return fmt.Errorf("state: %w", err)
	}
	if next := st.GetNonce(from); tx.Nonce() > next {
		return c.queueLocked(from, tx)
	}
	_, errs, err := c.sealLocked(ctx, []*types.Transaction{tx}, uint64(time.Now().Unix()))
	if err != nil {
		return err
	}
	if errs[0] != nil {
		return errs[0]
	}
	c.promoteLocked(ctx, from)
	return nil
}

// knownLocked reports whether hash is mined or held.
func (c *Chain) knownLocked(hash common.Hash) bool {
	if tx, _, _, _ := rawdb.ReadCanonicalTransaction(c.db, hash); tx != nil {
		return true
	}
	return c.queuedTx(hash) != nil
}

// queuedTx returns the held transaction of hash, or nil.
func (c *Chain) queuedTx(hash common.Hash) *types.Transaction {
	for _, txs := range c.queued {
		for _, tx := range txs {
			if tx.Hash() == hash {
				return tx
			}
		}
	}
	return nil
}

// queueLocked holds tx until its sender's nonce reaches it; a held
// transaction of the same nonce is replaced.
func (c *Chain) queueLocked(from common.Address, tx *types.Transaction) error {
	txs := c.queued[from]
	i, found := slices.BinarySearchFunc(txs, tx.Nonce(), func(t *types.Transaction, n uint64) int {
		switch {
		case t.Nonce() < n:
			return -1
		case t.Nonce() > n:
			return 1
		}
		return 0
	})
	if found {
		if tx.GasFeeCap().Cmp(txs[i].GasFeeCap()) <= 0 || tx.GasTipCap().Cmp(txs[i].GasTipCap()) <= 0 {
			return errors.New("replacement transaction underpriced")
		}
		txs[i] = tx
		return nil
	}
	total := 0
	for _, q := range c.queued {
		total += len(q)
	}
	if len(txs) >= maxQueuedPerSender || total >= maxQueued {
		return fmt.Errorf("nonce too high: transaction nonce %d is ahead of the account's, and too many transactions wait for a nonce gap", tx.Nonce())
	}
	c.queued[from] = slices.Insert(txs, i, tx)
	c.log.Debug("devchain: transaction held for a nonce gap", "hash", tx.Hash(), "from", from, "nonce", tx.Nonce())
	return nil
}

// promoteLocked mines the held transactions of from whose turn came, in
// as many blocks as they need. One that fails for another reason than a
// full block is dropped (those after it wait again).
func (c *Chain) promoteLocked(ctx context.Context, from common.Address) {
	for range maxQueuedPerSender {
		st, err := c.bc.State()
		if err != nil {
			return
		}
		next := st.GetNonce(from)
		var ready []*types.Transaction
		rest := c.queued[from][:0]
		for _, tx := range c.queued[from] {
			switch {
			case tx.Nonce() < next:
				// Its nonce was used meanwhile: it can never be mined.
			case tx.Nonce() == next+uint64(len(ready)):
				ready = append(ready, tx)
				rest = append(rest, tx)
			default:
				rest = append(rest, tx)
			}
		}
		c.queued[from] = rest
		if len(ready) == 0 {
			break
		}
		_, errs, err := c.sealLocked(ctx, ready, uint64(time.Now().Unix()))
		if err != nil {
			c.log.Warn("devchain: sealing held transactions failed", "from", from, "err", err)
			break
		}
		mined := false
		for i, tx := range ready {
			switch {
			case errs[i] == nil:
				mined = true
			case !errors.Is(errs[i], core.ErrGasLimitReached):
				c.log.Warn("devchain: a held transaction failed when its turn came; dropped", "hash", tx.Hash(), "err", errs[i])
				c.queued[from] = slices.DeleteFunc(c.queued[from], func(t *types.Transaction) bool { return t == tx })
			}
		}
		if !mined {
			break
		}
	}
	st, err := c.bc.State()
	if err != nil {
		return
	}
	next := st.GetNonce(from)
	c.queued[from] = slices.DeleteFunc(c.queued[from], func(tx *types.Transaction) bool { return tx.Nonce() < next })
	if len(c.queued[from]) == 0 {
		delete(c.queued, from)
	}
}

// sealLocked builds a block on the head with txs at timestamp (the
// parent's plus one when not later), the way go-ethereum's miner does,
// and inserts it. A transaction that cannot be included (errs[i]) is left
// out; when txs were given and none could be, no block is sealed.
func (c *Chain) sealLocked(ctx context.Context, txs []*types.Transaction, timestamp uint64) (*types.Block, []error, error) {
	parent := c.bc.CurrentBlock()
	if timestamp <= parent.Time {
		timestamp = parent.Time + 1
	}
	header := &types.Header{
		ParentHash: parent.Hash(),
		Number:     new(big.Int).Add(parent.Number, common.Big1),
		GasLimit:   core.CalcGasLimit(parent.GasLimit, gasCeil),
		Time:       timestamp,
		BaseFee:    eip1559.CalcBaseFee(c.config, parent),
	}
	if err := c.engine.Prepare(c.bc, header); err != nil {
		return nil, nil, fmt.Errorf("prepare block %d: %w", header.Number, err)
	}
	if c.config.IsCancun(header.Number, header.Time) {
		excess := eip4844.CalcExcessBlobGas(c.config, parent, header.Time)
		header.BlobGasUsed, header.ExcessBlobGas = new(uint64), &excess
		header.ParentBeaconRoot = new(common.Hash)
	}
	statedb, err := c.bc.StateAtForkBoundary(parent, header)
	if err != nil {
		return nil, nil, fmt.Errorf("state of block %d: %w", parent.Number, err)
	}
	coinbase := header.Coinbase
	evm := vm.NewEVM(core.NewEVMBlockContext(header, c.bc, &coinbase), statedb, c.config, vm.Config{})
	defer evm.Release()
	core.PreExecution(ctx, header.ParentBeaconRoot, parent, c.config, evm, header.Number, header.Time)

	gp := core.NewGasPool(header.GasLimit)
	errs := make([]error, len(txs))
	var included []*types.Transaction
	var receipts []*types.Receipt
	var logs []*types.Log
	for i, tx := range txs {
		snap, gpSnap := statedb.Snapshot(), gp.Snapshot()
		statedb.SetTxContext(tx.Hash(), len(included), uint32(len(included)+1))
		r, _, err := core.ApplyTransaction(ctx, evm, gp, statedb, header, tx)
		if err != nil {
			statedb.RevertToSnapshot(snap)
			gp.Set(gpSnap)
			errs[i] = err
			continue
		}
		header.GasUsed = gp.Used()
		included = append(included, tx)
		receipts = append(receipts, r)
		logs = append(logs, r.Logs...)
	}
	if len(txs) > 0 && len(included) == 0 {
		return nil, errs, nil
	}
	body := types.Body{Transactions: included}
	if c.config.IsShanghai(header.Number, header.Time) {
		body.Withdrawals = make([]*types.Withdrawal, 0)
	}
	requests, _, err := core.PostExecution(ctx, c.config, header.Number, header.Time, logs, body.Withdrawals, evm, uint32(len(included)+1))
	if err != nil {
		return nil, nil, fmt.Errorf("block %d: %w", header.Number, err)
	}
	if requests != nil {
		h := types.CalcRequestsHash(requests)
		header.RequestsHash = &h
	}
	c.engine.Finalize(c.bc, header, statedb, &body)
	block := core.AssembleBlock(c.bc, header, statedb, &body, receipts, nil)
	if err := statedb.Error(); err != nil {
		return nil, nil, fmt.Errorf("block %d: state: %w", header.Number, err)
	}
	if _, err := c.bc.InsertChain(types.Blocks{block}); err != nil {
		return nil, nil, fmt.Errorf("insert block %d: %w", header.Number, err)
	}
	rawdb.WriteTxLookupEntriesByBlock(c.db, block)
	if len(included) > 0 {
		c.log.Debug("devchain: block sealed", "number", block.NumberU64(), "transactions", len(included), "gas_used", block.GasUsed())
	}
	return block, errs, nil
}

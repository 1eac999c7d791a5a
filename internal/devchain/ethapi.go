package devchain

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"time"

	"github.com/ethereum/go-ethereum/accounts/abi"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/common/math"
	"github.com/ethereum/go-ethereum/consensus/misc/eip4844"
	"github.com/ethereum/go-ethereum/core"
	"github.com/ethereum/go-ethereum/core/rawdb"
	"github.com/ethereum/go-ethereum/core/state"
	"github.com/ethereum/go-ethereum/core/tracing"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/core/vm"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/eth/gasestimator"
	"github.com/ethereum/go-ethereum/event"
	"github.com/ethereum/go-ethereum/params"
	"github.com/ethereum/go-ethereum/rpc"
	"github.com/holiman/uint256"
)

// Bounds of the calls served, go-ethereum's defaults.
const (
	rpcGasCap     = 50_000_000      // gas of eth_call and eth_estimateGas
	rpcEVMTimeout = 5 * time.Second // run time of one eth_call
	maxLogBlocks  = 100_000         // blocks one eth_getLogs scans
)

// header returns the header bnh names: latest, pending (this chain mines
// every executable transaction at once, so pending is latest), safe and
// finalized are the head; nil, nil when there is no such block.
func (c *Chain) header(bnh rpc.BlockNumberOrHash) (*types.Header, error) {
	if hash, ok := bnh.Hash(); ok {
		h := c.bc.GetHeaderByHash(hash)
		if h == nil {
			return nil, nil
		}
		if bnh.RequireCanonical && c.bc.GetCanonicalHash(h.Number.Uint64()) != hash {
			return nil, fmt.Errorf("hash %s is not currently canonical", hash)
		}
		return h, nil
	}
	n, ok := bnh.Number()
	if !ok {
		return nil, errors.New("invalid arguments; neither block nor hash specified")
	}
	return c.headerByNumber(n), nil
}

// headerByNumber returns the header of n, or nil.
func (c *Chain) headerByNumber(n rpc.BlockNumber) *types.Header {
	switch n {
	case rpc.LatestBlockNumber, rpc.PendingBlockNumber, rpc.SafeBlockNumber, rpc.FinalizedBlockNumber:
		return c.bc.CurrentBlock()
	case rpc.EarliestBlockNumber:
		return c.bc.GetHeaderByNumber(0)
	}
	if n < 0 {
		return nil
	}
	return c.bc.GetHeaderByNumber(uint64(n))
}

// stateAt returns the state after the block bnh names, and its header.
func (c *Chain) stateAt(bnh rpc.BlockNumberOrHash) (*state.StateDB, *types.Header, error) {
	h, err := c.header(bnh)
	if err != nil {
		return nil, nil, err
	}
	if h == nil {
		return nil, nil, errors.New("header not found")
	}
	st, err := c.bc.StateAt(h.Root, h.Number, h.Time)
	if err != nil {
		return nil, nil, fmt.Errorf("state of block %d: %w", h.Number, err)
	}
	return st, h, nil
}

// latest is the block tag of a call that gives none.
func latest(bnh *rpc.BlockNumberOrHash) rpc.BlockNumberOrHash {
	if bnh == nil {
		return rpc.BlockNumberOrHashWithNumber(rpc.LatestBlockNumber)
	}
	return *bnh
}

// ethAPI is the eth_ namespace.
type ethAPI struct{ c *Chain }

// ChainId is eth_chainId.
func (a *ethAPI) ChainId() *hexutil.Big { return (*hexutil.Big)(a.c.config.ChainID) }

// BlockNumber is eth_blockNumber.
func (a *ethAPI) BlockNumber() hexutil.Uint64 {
	return hexutil.Uint64(a.c.bc.CurrentBlock().Number.Uint64())
}

// Syncing is eth_syncing: never.
func (a *ethAPI) Syncing() bool { return false }

// Accounts is eth_accounts: the node holds no keys.
func (a *ethAPI) Accounts() []common.Address { return []common.Address{} }

// MaxPriorityFeePerGas is eth_maxPriorityFeePerGas: go-ethereum's gas
// price oracle over the recent blocks.
func (a *ethAPI) MaxPriorityFeePerGas(ctx context.Context) (*hexutil.Big, error) {
	tip, err := a.c.oracle.SuggestTipCap(ctx)
	if err != nil {
		return nil, err
	}
	return (*hexutil.Big)(tip), nil
}

// GasPrice is eth_gasPrice: the suggested tip plus the head's base fee.
func (a *ethAPI) GasPrice(ctx context.Context) (*hexutil.Big, error) {
	tip, err := a.c.oracle.SuggestTipCap(ctx)
	if err != nil {
		return nil, err
	}
	if fee := a.c.bc.CurrentBlock().BaseFee; fee != nil {
		tip.Add(tip, fee)
	}
	return (*hexutil.Big)(tip), nil
}

// feeHistoryResult is eth_feeHistory's answer.
type feeHistoryResult struct {
	OldestBlock      *hexutil.Big     `json:"oldestBlock"`
	Reward           [][]*hexutil.Big `json:"reward,omitempty"`
	BaseFee          []*hexutil.Big   `json:"baseFeePerGas,omitempty"`
	GasUsedRatio     []float64        `json:"gasUsedRatio"`
	BlobBaseFee      []*hexutil.Big   `json:"baseFeePerBlobGas,omitempty"`
	BlobGasUsedRatio []float64        `json:"blobGasUsedRatio,omitempty"`
}

// FeeHistory is eth_feeHistory, from go-ethereum's gas price oracle.
func (a *ethAPI) FeeHistory(ctx context.Context, blockCount math.HexOrDecimal64, lastBlock rpc.BlockNumber, rewardPercentiles []float64) (*feeHistoryResult, error) {
	oldest, reward, baseFee, gasUsed, blobBaseFee, blobGasUsed, err := a.c.oracle.FeeHistory(ctx, uint64(blockCount), lastBlock, rewardPercentiles)
	if err != nil {
		return nil, err
	}
	big := func(xs []*big.Int) []*hexutil.Big {
		out := make([]*hexutil.Big, len(xs))
		for i, x := range xs {
			out[i] = (*hexutil.Big)(x)
		}
		return out
	}
	res := &feeHistoryResult{OldestBlock: (*hexutil.Big)(oldest), GasUsedRatio: gasUsed, BlobGasUsedRatio: blobGasUsed}
	if reward != nil {
		res.Reward = make([][]*hexutil.Big, len(reward))
		for i, r := range reward {
			res.Reward[i] = big(r)
		}
	}
	if baseFee != nil {
		res.BaseFee = big(baseFee)
	}
	if blobBaseFee != nil {
		res.BlobBaseFee = big(blobBaseFee)
	}
	return res, nil
}

// GetBalance is eth_getBalance.
func (a *ethAPI) GetBalance(address common.Address, bnh rpc.BlockNumberOrHash) (*hexutil.Big, error) {
	st, _, err := a.c.stateAt(bnh)
	if err != nil {
		return nil, err
	}
	return (*hexutil.Big)(st.GetBalance(address).ToBig()), nil
}

// GetTransactionCount is eth_getTransactionCount.
func (a *ethAPI) GetTransactionCount(address common.Address, bnh rpc.BlockNumberOrHash) (*hexutil.Uint64, error) {
	st, _, err := a.c.stateAt(bnh)
	if err != nil {
		return nil, err
	}
	n := hexutil.Uint64(st.GetNonce(address))
	return &n, nil
}

// GetCode is eth_getCode.
func (a *ethAPI) GetCode(address common.Address, bnh rpc.BlockNumberOrHash) (hexutil.Bytes, error) {
	st, _, err := a.c.stateAt(bnh)
	if err != nil {
		return nil, err
	}
	return st.GetCode(address), nil
}

// GetStorageAt is eth_getStorageAt.
func (a *ethAPI) GetStorageAt(address common.Address, key string, bnh rpc.BlockNumberOrHash) (hexutil.Bytes, error) {
	k, err := hexutil.DecodeBig(key)
	if err != nil || k.BitLen() > 256 {
		h, herr := hexutil.Decode(key)
		if herr != nil || len(h) > 32 {
			return nil, fmt.Errorf("unable to decode storage key: %q", key)
		}
		k = new(big.Int).SetBytes(h)
	}
	st, _, err := a.c.stateAt(bnh)
	if err != nil {
		return nil, err
	}
	v := st.GetState(address, common.BigToHash(k))
	return v[:], nil
}

// callArgs are the arguments of eth_call and eth_estimateGas.
type callArgs struct {
	From                 *common.Address              `json:"from"`
	To                   *common.Address              `json:"to"`
	Gas                  *hexutil.Uint64              `json:"gas"`
	GasPrice             *hexutil.Big                 `json:"gasPrice"`
	MaxFeePerGas         *hexutil.Big                 `json:"maxFeePerGas"`
	MaxPriorityFeePerGas *hexutil.Big                 `json:"maxPriorityFeePerGas"`
	Value                *hexutil.Big                 `json:"value"`
	Nonce                *hexutil.Uint64              `json:"nonce"`
	Data                 *hexutil.Bytes               `json:"data"`
	Input                *hexutil.Bytes               `json:"input"`
	AccessList           *types.AccessList            `json:"accessList"`
	AuthorizationList    []types.SetCodeAuthorization `json:"authorizationList"`
	ChainID              *hexutil.Big                 `json:"chainId"`
}

// message is the message args describe, executed on a block of baseFee
// with gas when args give none.
func (args *callArgs) message(baseFee *big.Int, gas uint64) (*core.Message, error) {
	if args.GasPrice != nil && (args.MaxFeePerGas != nil || args.MaxPriorityFeePerGas != nil) {
		return nil, errors.New("both gasPrice and (maxFeePerGas or maxPriorityFeePerGas) specified")
	}
	if args.ChainID != nil && args.ChainID.ToInt().Cmp(big.NewInt(ChainID)) != 0 {
		return nil, fmt.Errorf("chainId does not match node's (have=%v, want=%d)", args.ChainID.ToInt(), ChainID)
	}
	var data []byte
	switch {
	case args.Input != nil && args.Data != nil && string(*args.Input) != string(*args.Data):
		return nil, errors.New(`both "data" and "input" are set and not equal. Please use "input" to pass transaction call data`)
	case args.Input != nil:
		data = *args.Input
	case args.Data != nil:
		data = *args.Data
	}
	u := func(b *hexutil.Big) (*uint256.Int, error) {
		if b == nil {
			return new(uint256.Int), nil
		}
		v, overflow := uint256.FromBig(b.ToInt())
		if overflow || b.ToInt().Sign() < 0 {
			return nil, fmt.Errorf("value %v out of range", b.ToInt())
		}
		return v, nil
	}
	msg := &core.Message{To: args.To, Data: data, GasLimit: gas, SetCodeAuthorizations: args.AuthorizationList}
	if args.From != nil {
		msg.From = *args.From
	}
	if args.Gas != nil {
		msg.GasLimit = uint64(*args.Gas)
	}
	if args.Nonce != nil {
		msg.Nonce = uint64(*args.Nonce)
	}
	if args.AccessList != nil {
		msg.AccessList = *args.AccessList
	}
	var err error
	if msg.Value, err = u(args.Value); err != nil {
		return nil, err
	}
	if args.GasPrice != nil {
		if msg.GasPrice, err = u(args.GasPrice); err != nil {
			return nil, err
		}
		msg.GasFeeCap, msg.GasTipCap = msg.GasPrice, msg.GasPrice
	} else {
		if msg.GasFeeCap, err = u(args.MaxFeePerGas); err != nil {
			return nil, err
		}
		if msg.GasTipCap, err = u(args.MaxPriorityFeePerGas); err != nil {
			return nil, err
		}
		msg.GasPrice = new(uint256.Int)
		if !msg.GasFeeCap.IsZero() || !msg.GasTipCap.IsZero() {
			// The price paid: the tip over the base fee, up to the fee cap.
			bf, _ := uint256.FromBig(baseFee)
			msg.GasPrice.Add(msg.GasTipCap, bf)
			if msg.GasPrice.Gt(msg.GasFeeCap) {
				msg.GasPrice.Set(msg.GasFeeCap)
			}
		}
	}
	return msg.SkipNonceCheck().SkipEOACheck().SkipGasLimitCapCheck(), nil
}

// overrideAccount changes an account for one call (eth_call's and
// eth_estimateGas's state overrides).
type overrideAccount struct {
	Nonce     *hexutil.Uint64             `json:"nonce"`
	Code      *hexutil.Bytes              `json:"code"`
	Balance   *hexutil.Big                `json:"balance"`
	State     map[common.Hash]common.Hash `json:"state"`
	StateDiff map[common.Hash]common.Hash `json:"stateDiff"`
}

// stateOverride is the state overrides of a call, by address.
type stateOverride map[common.Address]overrideAccount

// apply writes the overrides into st.
func (o *stateOverride) apply(st *state.StateDB) error {
	if o == nil {
		return nil
	}
	for addr, acct := range *o {
		if acct.State != nil && acct.StateDiff != nil {
			return fmt.Errorf("account %s has both 'state' and 'stateDiff'", addr.Hex())
		}
		if acct.Nonce != nil {
			st.SetNonce(addr, uint64(*acct.Nonce), tracing.NonceChangeUnspecified)
		}
		if acct.Code != nil {
			st.SetCode(addr, *acct.Code, tracing.CodeChangeUnspecified)
		}
		if acct.Balance != nil {
			b, overflow := uint256.FromBig(acct.Balance.ToInt())
			if overflow {
				return fmt.Errorf("account %s: balance out of range", addr.Hex())
			}
			st.SetBalance(addr, b, tracing.BalanceChangeUnspecified)
		}
		if acct.State != nil {
			st.SetStorage(addr, acct.State)
		}
		for k, v := range acct.StateDiff {
			st.SetState(addr, k, v)
		}
	}
	st.Finalise(params.Rules{})
	return nil
}

// revertError is a call's revert as a JSON-RPC error: code 3, message
// "execution reverted" with the decoded reason, the revert data as data.
type revertError struct {
	msg  string
	data string
}

// newRevertError is the revert error of a call that returned data.
func newRevertError(data []byte) *revertError {
	msg := vm.ErrExecutionReverted.Error()
	if reason, err := abi.UnpackRevert(data); err == nil {
		msg += ": " + reason
	}
	return &revertError{msg: msg, data: hexutil.Encode(data)}
}

// Error implements error.
func (e *revertError) Error() string { return e.msg }

// ErrorCode implements rpc.Error.
func (e *revertError) ErrorCode() int { return 3 }

// ErrorData implements rpc.DataError.
func (e *revertError) ErrorData() any { return e.data }

// Call is eth_call(args, block = latest, overrides).
func (a *ethAPI) Call(ctx context.Context, args callArgs, bnh *rpc.BlockNumberOrHash, overrides *stateOverride) (hexutil.Bytes, error) {
	st, header, err := a.c.stateAt(latest(bnh))
	if err != nil {
		return nil, err
	}
	if err := overrides.apply(st); err != nil {
		return nil, err
	}
	msg, err := args.message(header.BaseFee, rpcGasCap)
	if err != nil {
		return nil, err
	}
	msg.SkipExecutionGasCapCheck()
	ctx, cancel := context.WithTimeout(ctx, rpcEVMTimeout)
	defer cancel()
	blockCtx := core.NewEVMBlockContext(header, a.c.bc, nil)
	if msg.GasPrice.IsZero() {
		blockCtx.BaseFee = new(big.Int)
	}
	evm := vm.NewEVM(blockCtx, st, a.c.config, vm.Config{NoBaseFee: true})
	defer evm.Release()
	go func() {
		<-ctx.Done()
		evm.Cancel()
	}()
	res, err := core.ApplyMessage(evm, msg, core.NewGasPool(rpcGasCap))
	if err := st.Error(); err != nil {
		return nil, err
	}
	if evm.Cancelled() {
		return nil, fmt.Errorf("execution aborted (timeout = %v)", rpcEVMTimeout)
	}
	if err != nil {
		return nil, fmt.Errorf("err: %w (supplied gas %d)", err, msg.GasLimit)
	}
	if errors.Is(res.Err, vm.ErrExecutionReverted) {
		return nil, newRevertError(res.Revert())
	}
	return res.Return(), res.Err
}

// EstimateGas is eth_estimateGas(args, block = latest, overrides), by
// go-ethereum's estimator.
func (a *ethAPI) EstimateGas(ctx context.Context, args callArgs, bnh *rpc.BlockNumberOrHash, overrides *stateOverride) (hexutil.Uint64, error) {
	st, header, err := a.c.stateAt(latest(bnh))
	if err != nil {
		return 0, err
	}
	if err := overrides.apply(st); err != nil {
		return 0, err
	}
	msg, err := args.message(header.BaseFee, 0)
	if err != nil {
		return 0, err
	}
	gas, revert, err := gasestimator.Estimate(ctx, msg, &gasestimator.Options{
		Config: a.c.config, Chain: a.c.bc, Header: header, State: st, ErrorRatio: 0.015,
	}, rpcGasCap)
	if err != nil {
		if len(revert) > 0 {
			return 0, newRevertError(revert)
		}
		return 0, err
	}
	return hexutil.Uint64(gas), nil
}

// SendRawTransaction is eth_sendRawTransaction: the transaction is mined
// before the answer (see Chain.submit).
func (a *ethAPI) SendRawTransaction(ctx context.Context, input hexutil.Bytes) (common.Hash, error) {
	tx := new(types.Transaction)
	if err := tx.UnmarshalBinary(input); err != nil {
		return common.Hash{}, err
	}
	if err := a.c.submit(ctx, tx); err != nil {
		return common.Hash{}, err
	}
	return tx.Hash(), nil
}

// GetTransactionByHash is eth_getTransactionByHash: null when unknown.
func (a *ethAPI) GetTransactionByHash(hash common.Hash) (json.RawMessage, error) {
	tx, blockHash, number, index := rawdb.ReadCanonicalTransaction(a.c.db, hash)
	if tx == nil {
		a.c.mu.Lock()
		held := a.c.queuedTx(hash)
		a.c.mu.Unlock()
		if held == nil {
			return json.RawMessage("null"), nil
		}
		return a.c.rpcTx(held, nil, 0)
	}
	h := a.c.bc.GetHeader(blockHash, number)
	if h == nil {
		return json.RawMessage("null"), nil
	}
	return a.c.rpcTx(tx, h, index)
}

// GetTransactionReceipt is eth_getTransactionReceipt: null until mined.
func (a *ethAPI) GetTransactionReceipt(hash common.Hash) (json.RawMessage, error) {
	tx, blockHash, number, index := rawdb.ReadCanonicalTransaction(a.c.db, hash)
	if tx == nil {
		return json.RawMessage("null"), nil
	}
	receipts := a.c.bc.GetReceiptsByHash(blockHash)
	if int(index) >= len(receipts) {
		return nil, fmt.Errorf("receipt of %s: block %d has %d receipts", hash, number, len(receipts))
	}
	return a.c.rpcReceipt(tx, receipts[index])
}

// GetBlockByNumber is eth_getBlockByNumber: null when there is no such
// block.
func (a *ethAPI) GetBlockByNumber(n rpc.BlockNumber, fullTx bool) (json.RawMessage, error) {
	h := a.c.headerByNumber(n)
	if h == nil {
		return json.RawMessage("null"), nil
	}
	return a.c.rpcBlock(a.c.bc.GetBlock(h.Hash(), h.Number.Uint64()), fullTx)
}

// GetBlockByHash is eth_getBlockByHash: null when unknown.
func (a *ethAPI) GetBlockByHash(hash common.Hash, fullTx bool) (json.RawMessage, error) {
	return a.c.rpcBlock(a.c.bc.GetBlockByHash(hash), fullTx)
}

// GetBlockReceipts is eth_getBlockReceipts: null when there is no such
// block.
func (a *ethAPI) GetBlockReceipts(bnh rpc.BlockNumberOrHash) ([]json.RawMessage, error) {
	h, err := a.c.header(bnh)
	if err != nil || h == nil {
		return nil, err
	}
	block := a.c.bc.GetBlock(h.Hash(), h.Number.Uint64())
	receipts := a.c.bc.GetReceiptsByHash(h.Hash())
	if block == nil || len(receipts) != len(block.Transactions()) {
		return nil, fmt.Errorf("receipts of block %d not found", h.Number)
	}
	out := make([]json.RawMessage, len(receipts))
	for i, tx := range block.Transactions() {
		if out[i], err = a.c.rpcReceipt(tx, receipts[i]); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// GetBlockTransactionCountByNumber is
// eth_getBlockTransactionCountByNumber: null when there is no such block.
func (a *ethAPI) GetBlockTransactionCountByNumber(n rpc.BlockNumber) *hexutil.Uint {
	h := a.c.headerByNumber(n)
	if h == nil {
		return nil
	}
	count := hexutil.Uint(len(a.c.bc.GetBody(h.Hash()).Transactions))
	return &count
}

// GetBlockTransactionCountByHash is eth_getBlockTransactionCountByHash:
// null when the block is unknown.
func (a *ethAPI) GetBlockTransactionCountByHash(hash common.Hash) *hexutil.Uint {
	body := a.c.bc.GetBody(hash)
	if body == nil {
		return nil
	}
	count := hexutil.Uint(len(body.Transactions))
	return &count
}

// GetTransactionByBlockNumberAndIndex is
// eth_getTransactionByBlockNumberAndIndex: null when there is none.
func (a *ethAPI) GetTransactionByBlockNumberAndIndex(n rpc.BlockNumber, index hexutil.Uint) (json.RawMessage, error) {
	h := a.c.headerByNumber(n)
	if h == nil {
		return json.RawMessage("null"), nil
	}
	return a.GetTransactionByBlockHashAndIndex(h.Hash(), index)
}

// GetTransactionByBlockHashAndIndex is
// eth_getTransactionByBlockHashAndIndex: null when there is none.
func (a *ethAPI) GetTransactionByBlockHashAndIndex(hash common.Hash, index hexutil.Uint) (json.RawMessage, error) {
	block := a.c.bc.GetBlockByHash(hash)
	if block == nil || int(index) >= len(block.Transactions()) {
		return json.RawMessage("null"), nil
	}
	return a.c.rpcTx(block.Transactions()[index], block.Header(), uint64(index))
}

// BlobBaseFee is eth_blobBaseFee: the head's blob base fee.
func (a *ethAPI) BlobBaseFee() *hexutil.Big {
	head := a.c.bc.CurrentBlock()
	if head.ExcessBlobGas == nil {
		return (*hexutil.Big)(new(big.Int))
	}
	return (*hexutil.Big)(eip4844.CalcBlobFee(a.c.config, head))
}

// Coinbase is eth_coinbase: the fee recipient of the blocks sealed.
func (a *ethAPI) Coinbase() common.Address { return common.Address{} }

// filterArgs are eth_getLogs's criteria.
type filterArgs struct {
	BlockHash *common.Hash               `json:"blockHash"`
	FromBlock *rpc.BlockNumber           `json:"fromBlock"`
	ToBlock   *rpc.BlockNumber           `json:"toBlock"`
	Address   hashOrList[common.Address] `json:"address"`
	Topics    []hashOrList[common.Hash]  `json:"topics"`
}

// hashOrList is a filter position: null (anything), one value, or a list
// of values (any of them).
type hashOrList[T common.Address | common.Hash] []T

// UnmarshalJSON implements json.Unmarshaler.
func (l *hashOrList[T]) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*l = nil
		return nil
	}
	if len(b) > 0 && b[0] == '[' {
		var xs []*T
		if err := json.Unmarshal(b, &xs); err != nil {
			return err
		}
		for _, x := range xs {
			if x != nil {
				*l = append(*l, *x)
			}
		}
		return nil
	}
	var x T
	if err := json.Unmarshal(b, &x); err != nil {
		return err
	}
	*l = hashOrList[T]{x}
	return nil
}

// match reports whether l allows v.
func (l hashOrList[T]) match(v T) bool {
	if len(l) == 0 {
		return true
	}
	for _, x := range l {
		if x == v {
			return true
		}
	}
	return false
}

// GetLogs is eth_getLogs.
func (a *ethAPI) GetLogs(ctx context.Context, crit filterArgs) ([]*types.Log, error) {
	if crit.BlockHash != nil {
		if crit.FromBlock != nil || crit.ToBlock != nil {
			return nil, errors.New("invalid argument: blockHash and fromBlock/toBlock are mutually exclusive")
		}
		h := a.c.bc.GetHeaderByHash(*crit.BlockHash)
		if h == nil {
			return nil, errors.New("unknown block")
		}
		return a.c.logs(ctx, crit, h.Number.Uint64(), h.Number.Uint64())
	}
	from, to := a.c.logRange(crit)
	if from > to {
		return nil, errors.New("invalid block range")
	}
	return a.c.logs(ctx, crit, from, to)
}

// logRange is the blocks crit's fromBlock and toBlock name (the head
// when absent, or beyond it).
func (c *Chain) logRange(crit filterArgs) (uint64, uint64) {
	bound := func(n *rpc.BlockNumber) uint64 {
		head := c.bc.CurrentBlock().Number.Uint64()
		if n == nil {
			return head
		}
		if h := c.headerByNumber(*n); h != nil {
			return h.Number.Uint64()
		}
		return head
	}
	return bound(crit.FromBlock), bound(crit.ToBlock)
}

// logs returns the logs of the canonical blocks from..to that crit
// matches.
func (c *Chain) logs(ctx context.Context, crit filterArgs, from, to uint64) ([]*types.Log, error) {
	if to-from >= maxLogBlocks {
		return nil, fmt.Errorf("query exceeds max block range %d", maxLogBlocks)
	}
	out := []*types.Log{}
	for n := from; n <= to; n++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		h := c.bc.GetHeaderByNumber(n)
		if h == nil || !bloomMatch(h.Bloom, crit) {
			continue
		}
		for _, r := range c.bc.GetReceiptsByHash(h.Hash()) {
			for _, l := range r.Logs {
				if logMatch(l, crit) {
					out = append(out, l)
				}
			}
		}
	}
	return out, nil
}

// bloomMatch reports whether a block's bloom may hold logs crit matches.
func bloomMatch(bloom types.Bloom, crit filterArgs) bool {
	if len(crit.Address) > 0 {
		ok := false
		for _, addr := range crit.Address {
			ok = ok || types.BloomLookup(bloom, addr)
		}
		if !ok {
			return false
		}
	}
	for _, set := range crit.Topics {
		if len(set) == 0 {
			continue
		}
		ok := false
		for _, t := range set {
			ok = ok || types.BloomLookup(bloom, t)
		}
		if !ok {
			return false
		}
	}
	return true
}

// logMatch reports whether l matches crit.
func logMatch(l *types.Log, crit filterArgs) bool {
	if !crit.Address.match(l.Address) {
		return false
	}
	if len(crit.Topics) > len(l.Topics) {
		for _, set := range crit.Topics[len(l.Topics):] {
			if len(set) > 0 {
				return false
			}
		}
	}
	for i, set := range crit.Topics {
		if i < len(l.Topics) && !set.match(l.Topics[i]) {
			return false
		}
	}
	return true
}

// withFields is the JSON object base with fields added or replaced.
func withFields(base []byte, fields map[string]any) (json.RawMessage, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(base, &m); err != nil {
		return nil, err
	}
	for k, v := range fields {
		b, err := json.Marshal(v)
		if err != nil {
			return nil, err
		}
		m[k] = b
	}
	return json.Marshal(m)
}

// rpcTx is tx as JSON-RPC answers it: mined in the block of h at index,
// or waiting when h is nil.
func (c *Chain) rpcTx(tx *types.Transaction, h *types.Header, index uint64) (json.RawMessage, error) {
	base, err := tx.MarshalJSON()
	if err != nil {
		return nil, err
	}
	from, _ := types.Sender(c.signer, tx)
	f := map[string]any{"from": from, "blockHash": nil, "blockNumber": nil, "transactionIndex": nil}
	if h != nil {
		f["blockHash"], f["blockNumber"], f["transactionIndex"] = h.Hash(), (*hexutil.Big)(h.Number), hexutil.Uint64(index)
	}
	if tx.Type() != types.LegacyTxType {
		price := tx.GasFeeCap()
		if h != nil && h.BaseFee != nil {
			if p := new(big.Int).Add(tx.GasTipCap(), h.BaseFee); p.Cmp(price) < 0 {
				price = p
			}
		}
		f["gasPrice"] = (*hexutil.Big)(price)
	}
	return withFields(base, f)
}

// rpcReceipt is the receipt r of tx as JSON-RPC answers it.
func (c *Chain) rpcReceipt(tx *types.Transaction, r *types.Receipt) (json.RawMessage, error) {
	base, err := r.MarshalJSON()
	if err != nil {
		return nil, err
	}
	from, _ := types.Sender(c.signer, tx)
	f := map[string]any{"from": from, "to": tx.To(), "contractAddress": nil}
	if r.ContractAddress != (common.Address{}) {
		f["contractAddress"] = r.ContractAddress
	}
	if r.Logs == nil {
		f["logs"] = []*types.Log{}
	}
	return withFields(base, f)
}

// rpcBlock is b as JSON-RPC answers it, with its transactions in full or
// their hashes; null for a nil block.
func (c *Chain) rpcBlock(b *types.Block, fullTx bool) (json.RawMessage, error) {
	if b == nil {
		return json.RawMessage("null"), nil
	}
	base, err := json.Marshal(b.Header())
	if err != nil {
		return nil, err
	}
	txs := make([]any, len(b.Transactions()))
	for i, tx := range b.Transactions() {
		if !fullTx {
			txs[i] = tx.Hash()
			continue
		}
		if txs[i], err = c.rpcTx(tx, b.Header(), uint64(i)); err != nil {
			return nil, err
		}
	}
	f := map[string]any{"transactions": txs, "uncles": []common.Hash{}, "size": hexutil.Uint64(b.Size())}
	if b.Withdrawals() != nil {
		f["withdrawals"] = b.Withdrawals()
	}
	return withFields(base, f)
}

// netAPI is the net_ namespace.
type netAPI struct{ c *Chain }

// Version is net_version: the chain id.
func (a *netAPI) Version() string { return a.c.config.ChainID.String() }

// Listening is net_listening.
func (a *netAPI) Listening() bool { return true }

// PeerCount is net_peerCount: the chain has no peers.
func (a *netAPI) PeerCount() hexutil.Uint { return 0 }

// web3API is the web3_ namespace.
type web3API struct{}

// ClientVersion is web3_clientVersion.
func (web3API) ClientVersion() string { return "svc-devchain" }

// Sha3 is web3_sha3: the Keccak-256 of input.
func (web3API) Sha3(input hexutil.Bytes) hexutil.Bytes { return crypto.Keccak256(input) }

// txpoolAPI is the txpool_ namespace: nothing is pending (transactions
// are mined as they arrive); queued are those waiting for a nonce gap.
type txpoolAPI struct{ c *Chain }

// Status is txpool_status.
func (a *txpoolAPI) Status() map[string]hexutil.Uint {
	a.c.mu.Lock()
	defer a.c.mu.Unlock()
	n := 0
	for _, txs := range a.c.queued {
		n += len(txs)
	}
	return map[string]hexutil.Uint{"pending": 0, "queued": hexutil.Uint(n)}
}

// oracleBackend is the chain as go-ethereum's gas price oracle reads it.
type oracleBackend struct{ c *Chain }

// HeaderByNumber returns the header of n.
func (b oracleBackend) HeaderByNumber(_ context.Context, n rpc.BlockNumber) (*types.Header, error) {
	if h := b.c.headerByNumber(n); h != nil {
		return h, nil
	}
	return nil, errors.New("header not found")
}

// BlockByNumber returns the block of n.
func (b oracleBackend) BlockByNumber(_ context.Context, n rpc.BlockNumber) (*types.Block, error) {
	if h := b.c.headerByNumber(n); h != nil {
		if block := b.c.bc.GetBlock(h.Hash(), h.Number.Uint64()); block != nil {
			return block, nil
		}
	}
	return nil, errors.New("block not found")
}

// GetReceipts returns the receipts of the block of hash.
func (b oracleBackend) GetReceipts(_ context.Context, hash common.Hash) (types.Receipts, error) {
	return b.c.bc.GetReceiptsByHash(hash), nil
}

// Pending is nil: there is no pending block apart from the head.
func (b oracleBackend) Pending() (*types.Block, types.Receipts, *state.StateDB) { return nil, nil, nil }

// ChainConfig returns the chain's configuration.
func (b oracleBackend) ChainConfig() *params.ChainConfig { return b.c.config }

// SubscribeChainHeadEvent subscribes ch to the new heads.
func (b oracleBackend) SubscribeChainHeadEvent(ch chan<- core.ChainHeadEvent) event.Subscription {
	return b.c.bc.SubscribeChainHeadEvent(ch)
}

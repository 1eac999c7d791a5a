package claimer

import (
	"context"
	"fmt"
	"math/big"
	"strings"
	"sync"

	ethereum "github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/accounts/abi"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"

	"github.com/seed1284c1d2/svc/x402/batch"
)

// Chain is what the claimer reads of the chain: views through eth_call
// and the receipts of the facilitator's transactions (for their gas). An
// *ethclient.Client is one.
type Chain interface {
	CallContract(ctx context.Context, call ethereum.CallMsg, blockNumber *big.Int) ([]byte, error)
	TransactionReceipt(ctx context.Context, txHash common.Hash) (*types.Receipt, error)
}

// Multicall3Address is Multicall3's address, the same on every chain.
const Multicall3Address = "0xcA11bde05977b3631167028862bE2a173976CA11"

// multicallABIJSON is Multicall3's tryAggregate.
const multicallABIJSON = `[{"type":"function","name":"tryAggregate","stateMutability":"payable",
"inputs":[{"name":"requireSuccess","type":"bool"},{"name":"calls","type":"tuple[]","components":[{"name":"target","type":"address"},{"name":"callData","type":"bytes"}]}],
"outputs":[{"name":"returnData","type":"tuple[]","components":[{"name":"success","type":"bool"},{"name":"returnData","type":"bytes"}]}]}]`

var multicallABI = sync.OnceValues(func() (abi.ABI, error) { return abi.JSON(strings.NewReader(multicallABIJSON)) })

// viewsPerCall bounds the channels read in one eth_call (three views
// each).
const viewsPerCall = 300

type mcCall struct {
	Target   common.Address
	CallData []byte
}

// ReadChannels reads the escrow's view of each channel of ids, at the
// canonical escrow and Multicall3 addresses, a few hundred channels a
// Multicall3 call.
func ReadChannels(ctx context.Context, chain Chain, ids []common.Hash) (map[common.Hash]batch.OnChain, error) {
	return reader{chain: chain, escrow: common.HexToAddress(batch.SettlementAddress), multicall: common.HexToAddress(Multicall3Address)}.views(ctx, ids)
}

// reader reads the escrow's views.
type reader struct {
	chain     Chain
	escrow    common.Address
	multicall common.Address
}

// views reads the escrow's view of each channel, viewsPerCall channels a
// Multicall3 call; every read of one call is of the same block.
func (r reader) views(ctx context.Context, ids []common.Hash) (map[common.Hash]batch.OnChain, error) {
	out := make(map[common.Hash]batch.OnChain, len(ids))
	mc, err := multicallABI()
	if err != nil {
		return nil, fmt.Errorf("claimer: multicall ABI: %w", err)
	}
	for start := 0; start < len(ids); start += viewsPerCall {
		chunk := ids[start:min(len(ids), start+viewsPerCall)]
		calls := make([]mcCall, 0, 3*len(chunk))
		for _, id := range chunk {
			v, err := batch.ChannelViewCalls(id)
			if err != nil {
				return nil, err
			}
			for _, c := range v {
				calls = append(calls, mcCall{r.escrow, c})
			}
		}
		data, err := mc.Pack("tryAggregate", true, calls)
		if err != nil {
			return nil, fmt.Errorf("claimer: pack tryAggregate: %w", err)
		}
		raw, err := r.chain.CallContract(ctx, ethereum.CallMsg{To: &r.multicall, Data: data}, nil)
		if err != nil {
			return nil, fmt.Errorf("claimer: read %d channels through Multicall3: %w", len(chunk), err)
		}
		res, err := mc.Unpack("tryAggregate", raw)
		if err != nil || len(res) != 1 {
			return nil, fmt.Errorf("claimer: decode tryAggregate: %v", err)
		}
		rows, ok := res[0].([]struct {
			Success    bool    `json:"success"`
			ReturnData []uint8 `json:"returnData"`
		})
		if !ok || len(rows) != len(calls) {
			return nil, fmt.Errorf("claimer: tryAggregate answered %d results for %d calls", len(rows), len(calls))
		}
		for i, id := range chunk {
			st, err := batch.DecodeChannelViews([3][]byte{rows[3*i].ReturnData, rows[3*i+1].ReturnData, rows[3*i+2].ReturnData})
			if err != nil {
				return nil, fmt.Errorf("claimer: channel %s: %w", id, err)
			}
			out[id] = st
		}
	}
	return out, nil
}

// unsettled returns what the escrow holds claimed and not yet swept for
// receiver in token (receivers(receiver, token): totalClaimed -
// totalSettled).
func (r reader) unsettled(ctx context.Context, receiver, token common.Address) (*big.Int, error) {
	a := batch.SettlementABI()
	data, err := a.Pack("receivers", receiver, token)
	if err != nil {
		return nil, fmt.Errorf("claimer: pack receivers: %w", err)
	}
	raw, err := r.chain.CallContract(ctx, ethereum.CallMsg{To: &r.escrow, Data: data}, nil)
	if err != nil {
		return nil, fmt.Errorf("claimer: read receivers(%s): %w", receiver, err)
	}
	res, err := a.Unpack("receivers", raw)
	if err != nil || len(res) != 2 {
		return nil, fmt.Errorf("claimer: decode receivers: %v", err)
	}
	claimed, ok1 := res[0].(*big.Int)
	settled, ok2 := res[1].(*big.Int)
	if !ok1 || !ok2 {
		return nil, fmt.Errorf("claimer: decode receivers: unexpected types")
	}
	return new(big.Int).Sub(claimed, settled), nil
}

// gasUsed returns the gas of the transaction hash (0 when its receipt
// cannot be read).
func (r reader) gasUsed(ctx context.Context, hash string) uint64 {
	if !isTxHash(hash) {
		return 0
	}
	rc, err := r.chain.TransactionReceipt(ctx, common.HexToHash(hash))
	if err != nil || rc == nil {
		return 0
	}
	return rc.GasUsed
}

func isTxHash(s string) bool {
	if len(s) != 66 || !strings.HasPrefix(s, "0x") {
		return false
	}
	for _, c := range s[2:] {
		if !strings.ContainsRune("0123456789abcdefABCDEF", c) {
			return false
		}
	}
	return true
}

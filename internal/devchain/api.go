package devchain

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"strconv"
	"strings"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
)

// maxAdvance bounds one move of the clock (a mistyped unit should not
// throw the chain centuries ahead).
const maxAdvance = 10 * 365 * 24 * time.Hour

// Quantity is a JSON-RPC argument given as a JSON number, a decimal string
// or a 0x-prefixed hex string (hardhat and anvil accept all three).
type Quantity struct{ big.Int }

// UnmarshalJSON implements json.Unmarshaler.
func (q *Quantity) UnmarshalJSON(b []byte) error {
	s := strings.TrimSpace(string(b))
	if strings.HasPrefix(s, `"`) {
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
	}
	var ok bool
	if strings.HasPrefix(s, "0x") || strings.HasPrefix(s, "0X") {
		_, ok = q.SetString(s[2:], 16)
	} else {
		_, ok = q.SetString(s, 10)
	}
	if !ok || s == "" || q.Sign() < 0 {
		return fmt.Errorf("want a non-negative integer (number, decimal or 0x-hex string), got %.40s", s)
	}
	return nil
}

// evmAPI is the evm_ namespace of anvil and hardhat, as far as the clock
// goes.
type evmAPI struct{ c *Chain }

// IncreaseTime is evm_increaseTime(seconds): unlike anvil, which applies
// the offset to the next block, it seals that block at once; it returns
// the seconds advanced.
func (a *evmAPI) IncreaseTime(ctx context.Context, seconds Quantity) (hexutil.Uint64, error) {
	d, err := advanceArg(seconds)
	if err != nil {
		return 0, err
	}
	if _, err := a.c.Advance(ctx, d); err != nil {
		return 0, err
	}
	return hexutil.Uint64(d / time.Second), nil
}

// Mine is evm_mine: it seals one block.
func (a *evmAPI) Mine(ctx context.Context) (string, error) {
	if _, err := a.c.Mine(ctx); err != nil {
		return "", err
	}
	return "0x0", nil
}

// devchainAPI is the devchain_ namespace: the faucet and the clock.
type devchainAPI struct{ c *Chain }

// FundResult is devchain_fund's answer.
type FundResult struct {
	Transactions []common.Hash `json:"transactions"`
	USDCBalance  *hexutil.Big  `json:"usdcBalance"`
}

// Fund is devchain_fund(address, usdcAtomic, wei): see Chain.Fund.
func (a *devchainAPI) Fund(ctx context.Context, addr common.Address, usdc Quantity, wei *Quantity) (*FundResult, error) {
	var w *big.Int
	if wei != nil {
		w = &wei.Int
	}
	hashes, err := a.c.Fund(ctx, addr, &usdc.Int, w)
	if err != nil {
		return nil, err
	}
	bal, err := a.c.USDCBalance(ctx, addr)
	if err != nil {
		return nil, err
	}
	return &FundResult{Transactions: hashes, USDCBalance: (*hexutil.Big)(bal)}, nil
}

// AdvanceResult is devchain_advance's answer.
type AdvanceResult struct {
	Block     hexutil.Uint64 `json:"block"`
	Timestamp hexutil.Uint64 `json:"timestamp"`
}

// Advance is devchain_advance(seconds): see Chain.Advance.
func (a *devchainAPI) Advance(ctx context.Context, seconds Quantity) (*AdvanceResult, error) {
	d, err := advanceArg(seconds)
	if err != nil {
		return nil, err
	}
	ts, err := a.c.Advance(ctx, d)
	if err != nil {
		return nil, err
	}
	return &AdvanceResult{Block: hexutil.Uint64(a.c.bc.CurrentBlock().Number.Uint64()), Timestamp: hexutil.Uint64(ts)}, nil
}

func advanceArg(seconds Quantity) (time.Duration, error) {
	if !seconds.IsInt64() || seconds.Int64() < 1 || seconds.Int64() > int64(maxAdvance/time.Second) {
		return 0, errors.New("seconds: want a whole number of seconds from 1 to " + strconv.FormatInt(int64(maxAdvance/time.Second), 10))
	}
	return time.Duration(seconds.Int64()) * time.Second, nil
}

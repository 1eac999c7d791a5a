package onchain

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"strings"

	ethereum "github.com/ethereum/go-ethereum"
	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"
	"github.com/ethereum/go-ethereum/ethclient"

	"github.com/seed1284c1d2/svc/x402/internal/clip"
	"github.com/seed1284c1d2/svc/x402/internal/evmaddr"
)

// Settled is a settlement a ledger recorded, to compare with the chain.
type Settled struct {
	Transaction string // 0x + 64 hex
	Token       string // the token contract
	Payer       string // authorization.from
	Nonce       string // authorization nonce, 0x + 64 hex
	PayTo       string // the wallet due; "" leaves the payee unchecked
	Amount      string // atomic units, decimal
}

// Mismatch kinds of CheckSettled.
const (
	MismatchNoTransaction  = "no_transaction"      // the record has no (well-formed) transaction hash
	MismatchNotFound       = "transaction_unknown" // the chain has no receipt for it
	MismatchReverted       = "reverted"            // receipt status 0
	MismatchNoTransfer     = "no_transfer"         // no AuthorizationUsed(payer, nonce) + Transfer in it
	MismatchPayTo          = "payto_differs"
	MismatchAmount         = "amount_differs"
	MismatchMalformedEntry = "malformed_entry" // payer, nonce or amount unreadable
)

// Mismatch is a recorded settlement the chain does not confirm.
type Mismatch struct {
	Kind   string // one of the Mismatch constants
	Detail string
}

// CheckSettled compares one recorded settlement with the chain: the
// transaction's receipt must have status 1 and carry the token's
// AuthorizationUsed(payer, nonce) followed by a Transfer from payer to
// payTo of the amount. It returns nil when they agree, the mismatch
// otherwise, and an error when the chain could not be asked.
func CheckSettled(ctx context.Context, c *ethclient.Client, s Settled) (*Mismatch, error) {
	if !isTxHash(s.Transaction) {
		return &Mismatch{MismatchNoTransaction, fmt.Sprintf("transaction %q is not a chain transaction hash", clip.Bytes(s.Transaction, 80))}, nil
	}
	token, ok1 := evmaddr.Parse(s.Token)
	payer, ok2 := evmaddr.Parse(s.Payer)
	var nonce [32]byte
	ok3 := evmaddr.DecodeHex(nonce[:], s.Nonce)
	amount, ok4 := new(big.Int).SetString(s.Amount, 10)
	if !ok1 || !ok2 || !ok3 || !ok4 {
		return &Mismatch{MismatchMalformedEntry, "token, payer, nonce or amount is malformed"}, nil
	}
	rcpt, err := c.TransactionReceipt(ctx, common.HexToHash(s.Transaction))
	if errors.Is(err, ethereum.NotFound) {
		return &Mismatch{MismatchNotFound, "no receipt for " + s.Transaction}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("x402 onchain: receipt of %s: %w", s.Transaction, err)
	}
	if rcpt.Status != types.ReceiptStatusSuccessful {
		return &Mismatch{MismatchReverted, fmt.Sprintf("%s reverted (block %d)", s.Transaction, rcpt.BlockNumber)}, nil
	}
	tr, ok := transferOf(rcpt.Logs, token, payer, nonce)
	switch {
	case !ok:
		return &Mismatch{MismatchNoTransfer, fmt.Sprintf("%s has no transfer of authorization %s of %s", s.Transaction, s.Nonce, s.Payer)}, nil
	case s.PayTo != "" && !strings.EqualFold(tr.to.Hex(), s.PayTo):
		return &Mismatch{MismatchPayTo, fmt.Sprintf("paid %s, recorded %s", tr.to.Hex(), s.PayTo)}, nil
	case tr.value.Cmp(amount) != 0:
		return &Mismatch{MismatchAmount, fmt.Sprintf("transferred %s, recorded %s", tr.value, s.Amount)}, nil
	}
	return nil, nil
}

func isTxHash(s string) bool {
	var h [32]byte
	return evmaddr.DecodeHex(h[:], s)
}

// Reconciliation is the outcome of Reconcile for rows of type R.
type Reconciliation[R any] struct {
	Checked    int // settlements compared with the chain
	NoPayee    int // of them, those compared without a payee (Settled.PayTo "")
	Mismatches []Found[R]
}

// Found is a row whose settlement the chain does not confirm.
type Found[R any] struct {
	Row      R
	Mismatch Mismatch
}

// Reconcile compares with the chain of c every settlement that each
// yields, with the caller's row it comes from, one at a time: each may
// stream its rows from a database, the chain is asked between two of them.
// The mismatches are returned in the order of the rows. An error of each
// or of yield's callers stops the comparison and is returned; an error of
// the chain is returned wrapped, prefixed "reconcile: ".
func Reconcile[R any](ctx context.Context, c *ethclient.Client, each func(yield func(row R, s Settled) error) error) (Reconciliation[R], error) {
	var out Reconciliation[R]
	err := each(func(row R, s Settled) error {
		out.Checked++
		if s.PayTo == "" {
			out.NoPayee++
		}
		m, err := CheckSettled(ctx, c, s)
		if err != nil {
			return fmt.Errorf("reconcile: %w", err)
		}
		if m != nil {
			out.Mismatches = append(out.Mismatches, Found[R]{Row: row, Mismatch: *m})
		}
		return nil
	})
	return out, err
}

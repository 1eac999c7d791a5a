package onchain_test

import (
	"bytes"
	"context"
	"log/slog"
	"math/big"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/core/types"

	"github.com/seed1284c1d2/svc/internal/anviltest"
	"github.com/seed1284c1d2/svc/x402/exact"
	"github.com/seed1284c1d2/svc/x402/facilitator/onchain"
)

// syncBuffer is a bytes.Buffer safe for concurrent writes (a log sink).
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestTransferEventNotThePaymentIsRefused: a token that keeps a fee on
// transfer (TestFeeUSDC in TestUSDC's place) lets the simulation and the
// transaction succeed, but its Transfer to payTo is one unit short: the
// facilitator does not report the payment settled (it answers the event
// mismatch with the transaction, and logs an error), presenting it again
// is refused, and Status tells the amount the chain actually moved.
func TestTransferEventNotThePaymentIsRefused(t *testing.T) {
	e := newEnv(t, anviltest.Options{})
	var logs syncBuffer
	f := e.facilitator(t, func(c *onchain.Config) { c.Logger = slog.New(slog.NewTextHandler(&logs, nil)) })
	ctx := context.Background()
	req := requirements(t, "0.05")
	payload, p := pay(t, e.payerKey, req, time.Now())
	e.chain.InstallFeeToken(t)
	beforeTo := e.chain.TokenBalance(t, payTo)

	if vr, err := f.Verify(ctx, payload, req); err != nil || !vr.IsValid {
		t.Fatalf("verify: %+v %v (the fee token takes the authorization)", vr, err)
	}
	sr, err := f.Settle(ctx, payload, req)
	if err != nil {
		t.Fatal(err)
	}
	if sr.Success || sr.ErrorReason != onchain.ReasonTransferEventMismatch || len(sr.Transaction) != 66 {
		t.Fatalf("settle with a short Transfer: %+v; want a refusal %s with the transaction", sr, onchain.ReasonTransferEventMismatch)
	}
	// The chain did run it: the authorization is used, payTo got one unit
	// less than the amount.
	rcpt := e.chain.WaitReceipt(t, common.HexToHash(sr.Transaction))
	if rcpt.Status != types.ReceiptStatusSuccessful || !e.chain.AuthorizationState(t, e.payer, nonceOf(t, p)) {
		t.Fatalf("the fee token's transfer did not go through (status %d)", rcpt.Status)
	}
	short := new(big.Int).Sub(amount(t, req), big.NewInt(1))
	if got := new(big.Int).Sub(e.chain.TokenBalance(t, payTo), beforeTo); got.Cmp(short) != 0 {
		t.Fatalf("payTo got %s, want %s", got, short)
	}
	if !strings.Contains(logs.String(), "level=ERROR") || !strings.Contains(logs.String(), sr.Transaction) {
		t.Fatalf("no error logged for the mismatch:\n%s", logs.String())
	}

	again, err := f.Settle(ctx, payload, req)
	if err != nil || again.Success || again.ErrorReason != exact.ReasonNonceAlreadyUsed {
		t.Fatalf("presented again: %+v %v; want %s", again, err, exact.ReasonNonceAlreadyUsed)
	}
	st, err := f.Status(ctx, payload, req)
	if err != nil || !st.Used || st.Transaction != sr.Transaction || st.Amount != short.String() || !strings.EqualFold(st.PayTo, payTo.Hex()) {
		t.Fatalf("status: %+v %v; want used by %s for %s", st, err, sr.Transaction, short)
	}
}

// TestEventCheckOfAlteredReceipts: the receipt of a real settlement on
// anvil is the payment; the same receipt with any of its events altered —
// another payee, amount, payer, nonce or emitting contract, an event
// missing, or the Transfer before the AuthorizationUsed — is not, and the
// settlement is refused with the event mismatch.
func TestEventCheckOfAlteredReceipts(t *testing.T) {
	e := newEnv(t, anviltest.Options{})
	f := e.facilitator(t, nil)
	req := requirements(t, "0.04")
	payload, p := pay(t, e.payerKey, req, time.Now())
	sr, err := f.Settle(context.Background(), payload, req)
	if err != nil {
		t.Fatal(err)
	}
	honest := checkSettled(t, e, sr, p, req)
	used, transfer := -1, -1
	for i, l := range honest.Logs {
		switch l.Topics[0] {
		case e.chain.ABI.Events["AuthorizationUsed"].ID:
			used = i
		case e.chain.ABI.Events["Transfer"].ID:
			transfer = i
		}
	}
	if used < 0 || transfer < 0 || len(honest.Logs) != 2 {
		t.Fatalf("the settlement's logs: %d (AuthorizationUsed %d, Transfer %d)", len(honest.Logs), used, transfer)
	}
	other := common.HexToAddress("0x00000000000000000000000000000000000000aa")
	word := func(a common.Address) common.Hash { return common.BytesToHash(a.Bytes()) }

	got, err := f.SettlementOf(payload, req, honest)
	if err != nil || !got.Success || got.Transaction != honest.TxHash.Hex() {
		t.Fatalf("the honest receipt: %+v %v", got, err)
	}
	for name, alter := range map[string]func(logs []*types.Log) []*types.Log{
		"payee": func(logs []*types.Log) []*types.Log { logs[transfer].Topics[2] = word(other); return logs },
		"amount": func(logs []*types.Log) []*types.Log {
			logs[transfer].Data = common.LeftPadBytes(new(big.Int).Sub(amount(t, req), big.NewInt(1)).Bytes(), 32)
			return logs
		},
		"transfer payer": func(logs []*types.Log) []*types.Log { logs[transfer].Topics[1] = word(other); return logs },
		"authorizer":     func(logs []*types.Log) []*types.Log { logs[used].Topics[1] = word(other); return logs },
		"nonce":          func(logs []*types.Log) []*types.Log { logs[used].Topics[2][31] ^= 1; return logs },
		"transfer contract": func(logs []*types.Log) []*types.Log {
			logs[transfer].Address = other
			return logs
		},
		"authorization contract": func(logs []*types.Log) []*types.Log { logs[used].Address = other; return logs },
		"no AuthorizationUsed":   func(logs []*types.Log) []*types.Log { return []*types.Log{logs[transfer]} },
		"no Transfer":            func(logs []*types.Log) []*types.Log { return []*types.Log{logs[used]} },
		"Transfer first":         func(logs []*types.Log) []*types.Log { return []*types.Log{logs[transfer], logs[used]} },
		"no events":              func([]*types.Log) []*types.Log { return nil },
	} {
		altered := *honest
		altered.Logs = alter(copyLogs(honest.Logs))
		got, err := f.SettlementOf(payload, req, &altered)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got.Success || got.ErrorReason != onchain.ReasonTransferEventMismatch || got.Transaction != honest.TxHash.Hex() {
			t.Errorf("%s altered: %+v; want a refusal %s", name, got, onchain.ReasonTransferEventMismatch)
		}
	}
	// The unaltered receipt is still the payment (the copies were deep).
	if got, _ := f.SettlementOf(payload, req, honest); !got.Success {
		t.Fatalf("the honest receipt after the alterations: %+v", got)
	}
}

// copyLogs copies logs deeply enough to alter their address, topics and
// data.
func copyLogs(logs []*types.Log) []*types.Log {
	out := make([]*types.Log, len(logs))
	for i, l := range logs {
		c := *l
		c.Topics = append([]common.Hash(nil), l.Topics...)
		c.Data = append([]byte(nil), l.Data...)
		out[i] = &c
	}
	return out
}

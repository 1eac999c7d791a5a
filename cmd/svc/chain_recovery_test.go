package main

import (
	"context"
	"encoding/hex"
	"fmt"
	"log/slog"
	"math/big"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"

	"github.com/seed1284c1d2/svc/internal/anviltest"
	"github.com/seed1284c1d2/svc/x402"
	"github.com/seed1284c1d2/svc/x402/client"
	"github.com/seed1284c1d2/svc/x402/engine"
	"github.com/seed1284c1d2/svc/x402/exact"
	"github.com/seed1284c1d2/svc/x402/facilitator"
	"github.com/seed1284c1d2/svc/x402/facilitator/onchain"
)

// plainChainFacilitator is a facilitator that settles on chain and does not
// deduplicate: svc's on-chain facilitator with its deduplication taken
// away. A settlement presented for an authorization the chain says is used
// is answered "nonce already used", its own earlier settlement included,
// as a plain chain-backed facilitator answers.
type plainChainFacilitator struct {
	*onchain.Facilitator
	saidUsed atomic.Int64 // settlements answered "nonce already used"
}

// Settle implements x402.Facilitator.
func (f *plainChainFacilitator) Settle(ctx context.Context, payload x402.PaymentPayload, req x402.PaymentRequirements) (x402.SettleResponse, error) {
	if st, err := f.Facilitator.Status(ctx, payload, req); err == nil && st.Used {
		f.saidUsed.Add(1)
		return x402.SettleResponse{Success: false, ErrorReason: exact.ReasonNonceAlreadyUsed, Network: req.Network,
			ErrorMessage: "the authorization was already used or canceled on chain"}, nil
	}
	return f.Facilitator.Settle(ctx, payload, req)
}

// chainAttempt is one paid call of the kill test: signed before it is sent.
type chainAttempt struct {
	header, nonce, body string
	answer              []byte // the 200's body, when the client received one
	tx                  string // its PAYMENT-RESPONSE transaction
}

// TestChainKillNineWithNonDeduplicatingFacilitator: `svc serve
// --facilitator-url … --rpc-url …` settles through a facilitator that
// does not deduplicate (it settles on anvil, one block a second, and
// answers "nonce already used" to a settlement presented again). Under
// paid load it is killed (SIGKILL) three times, each time while a
// settlement transaction is in flight, and restarted on the same SQLite
// file. Recovery asks the chain through --rpc-url: afterwards no payment
// is unknown or in flight, every authorization used on chain has exactly
// one ledger row with the chain's transaction and no other has one,
// payTo received exactly the ledger's total, and presenting again each
// settled payment gets 200 with the recorded answer and transaction.
func TestChainKillNineWithNonDeduplicatingFacilitator(t *testing.T) {
	w := newChainWorld(t, anviltest.Options{BlockTime: 1})
	ctx := context.Background()
	of, err := onchain.New(ctx, onchain.Config{RPCURL: w.chain.URL, Network: x402.NetworkBase, RelayerKey: w.relayerKey,
		PollInterval: 20 * time.Millisecond, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(of.Close)
	plain := &plainChainFacilitator{Facilitator: of}
	fac := httptest.NewServer(facilitator.Handler(plain))
	t.Cleanup(fac.Close)
	reader, err := onchain.NewStatusReader(ctx, onchain.StatusConfig{RPCURL: w.chain.URL, Network: x402.NetworkBase})
	if err != nil {
		t.Fatal(err)
	}
	signer, err := client.ParseSigner(hex.EncodeToString(crypto.FromECDSA(w.payerKey)))
	if err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(t.TempDir(), "svc.db")
	start := func(name string) *chainProc {
		return w.svc(t, name, nil, "serve", "--addr", "127.0.0.1:0", "--db", db, "--unpaid-rate", "-1", "--log-level", "info",
			"--facilitator-url", fac.URL, "--rpc-url", w.chain.URL, "--pay-to", chainPayTo.Hex(), "--settle-timeout", "10s")
	}
	c := clusterHTTP(t)
	payToBefore := w.chain.TokenBalance(t, chainPayTo)

	const kills, workers = 3, 6
	var (
		mu       sync.Mutex
		attempts []*chainAttempt
	)
	srv := start("svc serve 0")
	if !strings.Contains(srv.out.String(), "recovery:    backed by the chain") {
		t.Fatalf("the banner does not say recovery is backed by the chain:\n%s", srv.out.String())
	}
	pr := clusterOffer(t, c, srv.base)
	for k := range kills {
		stop := make(chan struct{})
		var wg sync.WaitGroup
		for range workers {
			wg.Go(func() {
				hc := &http.Client{Timeout: 30 * time.Second}
				defer hc.CloseIdleConnections()
				for i := 0; i < 200; i++ {
					select {
					case <-stop:
						return
					default:
					}
					header, nonce, err := clusterSign(signer, pr)
					if err != nil {
						t.Error(err)
						return
					}
					at := &chainAttempt{header: header, nonce: nonce, body: clusterBody(clusterAddress())}
					mu.Lock()
					attempts = append(attempts, at)
					mu.Unlock()
					a, err := clusterDo(context.Background(), hc, http.MethodPost, srv.base+clusterToolPath, at.body, at.header)
					if err != nil {
						return // killed
					}
					if a.status == http.StatusOK {
						sr, err := a.settlement()
						if err != nil || !sr.Success {
							t.Errorf("200 without a settlement: %s %v", a, err)
							return
						}
						mu.Lock()
						at.answer, at.tx = a.body, sr.Transaction
						mu.Unlock()
					}
				}
			})
		}
		// Kill at a random point of the load, while a settlement
		// transaction is sent and not mined.
		time.Sleep(time.Duration(1000+rand.IntN(2000)) * time.Millisecond)
		clusterEventually(t, 20*time.Second, func() string {
			if of.Pending() == 0 {
				return "no settlement transaction in flight"
			}
			return ""
		})
		srv.kill(t)
		close(stop)
		wg.Wait()
		srv = start(fmt.Sprintf("svc serve %d", k+1))
	}

	// Recovery resolves what the kills interrupted.
	var l clusterLedger
	clusterEventually(t, 2*faultRecoveryTimeout, func() string {
		l = clusterSQLiteLedger(t, db)
		if s := l.states(); s[engine.StateReserved]+s[engine.StateSettling]+s[engine.StateUnknown] > 0 {
			return fmt.Sprintf("payments by state %v: want none reserved, settling or unknown", s)
		}
		return ""
	})
	clusterCheckSettledRecorded(t, l)
	rows := map[string]clusterLedgerRow{}
	for _, r := range l.rows {
		if _, dup := rows[strings.ToLower(r.Nonce)]; dup {
			t.Fatalf("nonce %s has two ledger rows", r.Nonce)
		}
		rows[strings.ToLower(r.Nonce)] = r
	}
	req := pr.Accepts[0]
	settled, interrupted := 0, 0
	for _, at := range attempts {
		var nonce [32]byte
		copy(nonce[:], common.FromHex(at.nonce))
		row, recorded := rows[strings.ToLower(at.nonce)]
		if !w.chain.AuthorizationState(t, common.HexToAddress(signer.Address()), nonce) {
			if recorded {
				t.Fatalf("nonce %s has a ledger row (%s) and is unused on chain", at.nonce, row.Tx)
			}
			continue
		}
		settled++
		if !recorded {
			t.Fatalf("nonce %s was settled on chain and has no ledger row", at.nonce)
		}
		payload, err := x402.DecodePaymentPayload(at.header)
		if err != nil {
			t.Fatal(err)
		}
		st, err := reader.Status(ctx, payload, req)
		if err != nil || st.Transaction != row.Tx {
			t.Fatalf("nonce %s: ledger transaction %s, the chain's %+v %v", at.nonce, row.Tx, st, err)
		}
		if at.answer == nil {
			interrupted++
		} else if at.tx != row.Tx {
			t.Fatalf("nonce %s: the client was answered transaction %s, the ledger has %s", at.nonce, at.tx, row.Tx)
		}
		// The client presents the payment again: the recorded answer.
		p := &faultPayment{header: at.header, nonce: at.nonce, body: at.body, payer: signer.Address()}
		a := faultRetry(t, c, srv.base, p, 30*time.Second)
		sr, err := a.settlement()
		if a.status != http.StatusOK || err != nil || sr.Transaction != row.Tx {
			t.Fatalf("nonce %s presented again: %s (settlement %+v %v), want 200 with %s", at.nonce, a, sr, err, row.Tx)
		}
		if at.answer != nil && string(a.body) != string(at.answer) {
			t.Fatalf("nonce %s presented again: %s, first answered %s", at.nonce, a.body, at.answer)
		}
	}
	if settled != len(l.rows) {
		t.Fatalf("%d authorizations used on chain, %d ledger rows", settled, len(l.rows))
	}
	received := new(big.Int).Sub(w.chain.TokenBalance(t, chainPayTo), payToBefore)
	if want := big.NewInt(int64(settled) * 10_000); received.Cmp(want) != 0 {
		t.Fatalf("payTo received %s, the ledger holds %s", received, want)
	}
	if interrupted == 0 {
		t.Fatal("no kill interrupted a settlement: the test proves nothing")
	}
	t.Logf("%d kills: %d paid calls sent, %d settled on chain (%d without their answer reaching the client, recovered from the chain), "+
		"%d settlements presented again answered \"nonce already used\"", kills, len(attempts), settled, interrupted, plain.saidUsed.Load())
}

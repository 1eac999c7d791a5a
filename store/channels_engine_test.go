package store_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math/big"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"

	"github.com/seed1284c1d2/svc/ledger"
	"github.com/seed1284c1d2/svc/store"
	"github.com/seed1284c1d2/svc/x402"
	"github.com/seed1284c1d2/svc/x402/batch"
	batchserver "github.com/seed1284c1d2/svc/x402/batch/server"
	"github.com/seed1284c1d2/svc/x402/engine"
)

// noFacilitator fails the test when asked anything: every voucher of the
// test is checked locally against the channel's fresh mirror.
type noFacilitator struct{ t *testing.T }

func (f noFacilitator) Verify(context.Context, x402.PaymentPayload, x402.PaymentRequirements) (x402.VerifyResponse, error) {
	f.t.Error("the facilitator was asked to verify a voucher the record can check")
	return x402.VerifyResponse{}, fmt.Errorf("no facilitator")
}

func (f noFacilitator) Settle(context.Context, x402.PaymentPayload, x402.PaymentRequirements) (x402.SettleResponse, error) {
	f.t.Error("the facilitator was asked to settle a voucher")
	return x402.SettleResponse{}, fmt.Errorf("no facilitator")
}

func (f noFacilitator) Supported(context.Context) (x402.SupportedResponse, error) {
	return x402.SupportedResponse{}, nil
}

// TestBatchTwoEnginesOnePostgres: two payment engines, each with its own
// connection pool to one PostgreSQL database and its own batch-settlement
// scheme (as two svc instances are), take vouchers of one channel from
// many callers at once. Every voucher is charged at most once, the
// charges are consecutive (each the previous plus the price), the
// channel's charged amount is their sum, the ledger holds one row per
// charge, and no channel is left held.
func TestBatchTwoEnginesOnePostgres(t *testing.T) {
	ctx := context.Background()
	dsn := pgSchemaDSN(t)
	var stores [2]store.Store
	for i := range stores {
		s, err := store.OpenPostgres(ctx, dsn)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Close() })
		stores[i] = s
	}
	payer, _ := crypto.GenerateKey()
	auth, _ := crypto.GenerateKey()
	payTo := common.HexToAddress("0x00000000000000000000000000000000000000aa")
	var engines [2]*engine.Engine
	var offer *engine.Offer
	for i := range engines {
		srv, err := batchserver.New(batchserver.Config{Facilitator: noFacilitator{t}, Store: stores[i].Channels(), Key: auth})
		if err != nil {
			t.Fatal(err)
		}
		e, err := engine.New(engine.Config{Schemes: []x402.ServerScheme{srv}, Journal: stores[i], Instance: fmt.Sprintf("instance-%d", i), PayerBurst: -1,
			Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(e.Close)
		engines[i] = e
		if offer, err = e.NewOffer("POST /api/tool", "tool", x402.Route{Price: "0.001", PayTo: payTo.Hex()}); err != nil {
			t.Fatal(err)
		}
	}
	req := offer.PaymentRequired.Accepts[0]
	payerAddr := crypto.PubkeyToAddress(payer.PublicKey)
	ch := batch.Channel{Payer: payerAddr, PayerAuthorizer: payerAddr, Receiver: payTo, ReceiverAuthorizer: crypto.PubkeyToAddress(auth.PublicKey),
		Token: common.HexToAddress(req.Asset), WithdrawDelay: 900}
	d := batch.NewDomain(8453)
	id := d.ChannelID(ch)
	price := int64(1000)
	voucher := func(max int64) batch.Payload {
		p, err := batch.NewVoucherPayload(payer, d, ch, big.NewInt(max))
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	// The channel as a deposit left it: one charge, a fresh mirror.
	first := voucher(price)
	sig := common.FromHex(first.Voucher.Signature)
	seed := batch.ChannelRecord{Network: x402.NetworkBase, ID: id, Channel: ch, Charged: big.NewInt(price), SignedMax: big.NewInt(price), Signature: sig,
		OnChain:  batch.OnChain{Balance: big.NewInt(1_000_000_000), TotalClaimed: new(big.Int), WithdrawAmount: new(big.Int), RefundNonce: new(big.Int)},
		SyncedAt: time.Now(), LastRequestAt: time.Now()}
	if ok, err := stores[0].Channels().Commit(ctx, seed, new(big.Int), ""); err != nil || !ok {
		t.Fatalf("seed: %v %v", ok, err)
	}

	const want = 30 // charges
	var (
		paid    sync.Map // max → the call that paid it
		count   atomic.Int64
		runs    atomic.Int64
		attempt atomic.Int64
	)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for count.Load() < want {
				h, _, err := stores[g%2].Channels().Channel(ctx, x402.NetworkBase, id)
				if err != nil {
					t.Error(err)
					return
				}
				max := h.Charged.Int64() + price
				raw, _ := json.Marshal(voucher(max))
				n := attempt.Add(1)
				call := engine.Call{Offer: offer, Fingerprint: fmt.Sprintf("call-%d", n), Transport: "http",
					Payment: &x402.PaymentPayload{X402Version: 2, Accepted: req, Payload: raw}}
				out := engines[g%2].Serve(ctx, call, func(context.Context) (engine.Answer, error) {
					runs.Add(1)
					return engine.Answer{Status: 200, Body: []byte(fmt.Sprintf(`{"call":%d}`, n))}, nil
				})
				if out.Kind == engine.Paid {
					if prev, dup := paid.LoadOrStore(max, n); dup {
						t.Errorf("the voucher of %d was charged twice (calls %v and %d)", max, prev, n)
					}
					count.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	var maxes []int64
	paid.Range(func(k, _ any) bool { maxes = append(maxes, k.(int64)); return true })
	sort.Slice(maxes, func(i, j int) bool { return maxes[i] < maxes[j] })
	for i, m := range maxes {
		if m != price*int64(i+2) {
			t.Fatalf("the charges are not consecutive: %v", maxes)
		}
	}
	h, _, err := stores[1].Channels().Channel(ctx, x402.NetworkBase, id)
	if err != nil {
		t.Fatal(err)
	}
	total := price * int64(len(maxes)+1)
	if h.Charged.Int64() != total || h.SignedMax.Int64() != total || h.Holder != "" {
		t.Fatalf("the channel: charged %v, signed %v, holder %q; want %d charged by %d vouchers", h.Charged, h.SignedMax, h.Holder, total, len(maxes))
	}
	var rows int
	var sum int64
	err = stores[0].EachSettlement(ctx, time.Now().Add(-time.Hour), time.Now().Add(time.Hour), func(s ledger.Settlement) error {
		rows++
		var v int64
		fmt.Sscan(s.Amount, &v)
		sum += v
		return nil
	})
	if err != nil || rows != len(maxes) || sum != price*int64(len(maxes)) {
		t.Fatalf("the ledger: %d rows summing %d (%v), want %d", rows, sum, err, len(maxes))
	}
	t.Logf("%d vouchers charged by two engines from %d attempts (%d runs)", len(maxes), attempt.Load(), runs.Load())
}

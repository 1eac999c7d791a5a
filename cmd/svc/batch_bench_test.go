package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/big"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/jackc/pgx/v5"

	"github.com/seed1284c1d2/svc/store"
	"github.com/seed1284c1d2/svc/x402"
	"github.com/seed1284c1d2/svc/x402/batch"
	batchserver "github.com/seed1284c1d2/svc/x402/batch/server"
	"github.com/seed1284c1d2/svc/x402/client"
	"github.com/seed1284c1d2/svc/x402/engine"
	"github.com/seed1284c1d2/svc/x402/exact"
	exactserver "github.com/seed1284c1d2/svc/x402/exact/server"
	"github.com/seed1284c1d2/svc/x402/facilitator"
	"github.com/seed1284c1d2/svc/x402/nethttp"
)

// benchPayers is how many payers (and, with batch-settlement, channels)
// call at once in BenchmarkPaidCallSchemes.
const benchPayers = 64

// BenchmarkPaidCallSchemes measures paid calls per second over a real
// HTTP server on 127.0.0.1, with the payment engine journaling every
// step in SQLite (svc's default store), for each scheme in the same run:
// exact, checked locally and settled by the local facilitator (dev mode),
// and batch-settlement vouchers, checked locally against the channel's
// record and charged by a compare-and-set in the same database.
// benchPayers payers call at once, each one call after the other (a
// channel's vouchers are sequential); payments are signed before the
// clock starts. The figure is calls/s.
//
// The same runs on PostgreSQL (one instance) when SVC_TEST_DATABASE_URL
// names a database the benchmark may create a schema in.
func BenchmarkPaidCallSchemes(b *testing.B) {
	for _, db := range []string{"sqlite", "postgres"} {
		for _, scheme := range []string{x402.SchemeExact, batch.Scheme} {
			b.Run(db+"/"+scheme, func(b *testing.B) { benchPaidScheme(b, db, scheme) })
		}
	}
}

// benchStore opens an empty store of dialect db for b.
func benchStore(b *testing.B, db string) store.Store {
	b.Helper()
	ctx := context.Background()
	var st store.Store
	var err error
	if db == "sqlite" {
		st, err = store.OpenSQLite(ctx, filepath.Join(b.TempDir(), "svc.db"))
	} else {
		base := os.Getenv(clusterPGEnv)
		if base == "" {
			b.Skip(clusterPGEnv + " is not set: no PostgreSQL figures")
		}
		var r [6]byte
		_, _ = rand.Read(r[:])
		schema := "svc_bench_" + hex.EncodeToString(r[:])
		admin := func(stmt string) {
			c, err := pgx.Connect(ctx, base)
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close(ctx)
			if _, err := c.Exec(ctx, stmt); err != nil {
				b.Fatal(err)
			}
		}
		admin("CREATE SCHEMA " + schema)
		b.Cleanup(func() { admin("DROP SCHEMA " + schema + " CASCADE") })
		u, _ := url.Parse(base)
		q := u.Query()
		q.Set("search_path", schema)
		u.RawQuery = q.Encode()
		st, err = store.OpenPostgres(ctx, u.String())
	}
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = st.Close() })
	return st
}

func benchPaidScheme(b *testing.B, db, scheme string) {
	ctx := context.Background()
	st := benchStore(b, db)
	signers := exact.NewSignerCache(4096)
	local, err := facilitator.NewLocal(facilitator.LocalConfig{Networks: []string{x402.NetworkBase}, Verifier: exact.Verifier{Signers: signers}})
	if err != nil {
		b.Fatal(err)
	}
	ex, err := exactserver.New(exactserver.Config{Facilitator: local, Verifier: &exact.Verifier{Signers: signers}, SkipFacilitatorVerify: true, Deduplicates: true})
	if err != nil {
		b.Fatal(err)
	}
	auth, _ := crypto.GenerateKey()
	bs, err := batchserver.New(batchserver.Config{Facilitator: local, Store: st.Channels(), Key: auth})
	if err != nil {
		b.Fatal(err)
	}
	eng, err := engine.New(engine.Config{Schemes: []x402.ServerScheme{bs, ex}, Journal: st, Logger: slog.New(slog.DiscardHandler), PayerBurst: -1})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(eng.Close)
	payTo := common.HexToAddress(clusterPayTo)
	offer, err := eng.NewOffer("POST /api/tool", "tool", x402.Route{Price: "0.001", PayTo: payTo.Hex()})
	if err != nil {
		b.Fatal(err)
	}
	mw, err := nethttp.New(nethttp.Config{Engine: eng, Offer: func(*http.Request) (*engine.Offer, bool) { return offer, true }})
	if err != nil {
		b.Fatal(err)
	}
	answer := []byte(`{"ok":true}`)
	srv := httptest.NewServer(mw.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(answer)
	})))
	b.Cleanup(srv.Close)
	var req x402.PaymentRequirements
	for _, a := range offer.PaymentRequired.Accepts {
		if a.Scheme == scheme {
			req = a
		}
	}

	// Every payment, signed now: per payer, its calls in order.
	per := (b.N + benchPayers - 1) / benchPayers
	headers := make([][]string, benchPayers)
	for p := range headers {
		key, _ := crypto.GenerateKey()
		headers[p] = benchPayments(b, ctx, st, scheme, req, key, per)
	}
	tr := &http.Transport{MaxIdleConnsPerHost: benchPayers}
	b.Cleanup(tr.CloseIdleConnections)
	hc := &http.Client{Transport: tr, Timeout: 30 * time.Second}
	b.ResetTimer()
	var wg sync.WaitGroup
	for p := range benchPayers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range per {
				if p*per+i >= b.N {
					return
				}
				r, _ := http.NewRequest(http.MethodPost, srv.URL+"/api/tool", strings.NewReader(fmt.Sprintf(`{"i":%d}`, i)))
				r.Header.Set("Content-Type", "application/json")
				r.Header.Set(x402.HeaderPaymentSignature, headers[p][i])
				resp, err := hc.Do(r)
				if err != nil {
					b.Error(err)
					return
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					b.Errorf("%s payer %d call %d: %d %s", scheme, p, i, resp.StatusCode, resp.Header.Get(x402.HeaderPaymentRequired))
					return
				}
			}
		}()
	}
	wg.Wait()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "calls/s")
}

// benchPayments signs n payments of req by key, in order: exact
// authorizations, or the vouchers of a channel whose record a deposit
// left in st (a fresh mirror of the escrow, the first charge made).
func benchPayments(b *testing.B, ctx context.Context, st store.Store, scheme string, req x402.PaymentRequirements, key *ecdsa.PrivateKey, n int) []string {
	b.Helper()
	out := make([]string, n)
	encode := func(raw []byte) string {
		h, err := x402.EncodeHeader(x402.PaymentPayload{X402Version: 2, Accepted: req, Payload: raw})
		if err != nil {
			b.Fatal(err)
		}
		return h
	}
	if scheme == x402.SchemeExact {
		signer, err := client.ParseSigner(common.Bytes2Hex(crypto.FromECDSA(key)))
		if err != nil {
			b.Fatal(err)
		}
		for i := range out {
			ep, err := signer.NewPayload(req, time.Now(), time.Hour)
			if err != nil {
				b.Fatal(err)
			}
			raw, _ := json.Marshal(ep)
			out[i] = encode(raw)
		}
		return out
	}
	addr := crypto.PubkeyToAddress(key.PublicKey)
	extra, err := batch.ParseExtra(req.Extra)
	if err != nil {
		b.Fatal(err)
	}
	ch := batch.Channel{Payer: addr, PayerAuthorizer: addr, Receiver: common.HexToAddress(req.PayTo), ReceiverAuthorizer: common.HexToAddress(extra.ReceiverAuthorizer),
		Token: common.HexToAddress(req.Asset), WithdrawDelay: extra.WithdrawDelay}
	d := batch.NewDomain(8453)
	price, _ := new(big.Int).SetString(req.Amount, 10)
	first, err := batch.NewVoucherPayload(key, d, ch, price)
	if err != nil {
		b.Fatal(err)
	}
	rec := batch.ChannelRecord{Network: x402.NetworkBase, ID: d.ChannelID(ch), Channel: ch, Charged: price, SignedMax: price,
		Signature: common.FromHex(first.Voucher.Signature), SyncedAt: time.Now(), LastRequestAt: time.Now(),
		OnChain: batch.OnChain{Balance: new(big.Int).Lsh(big.NewInt(1), 100), TotalClaimed: new(big.Int), WithdrawAmount: new(big.Int), RefundNonce: new(big.Int)}}
	if ok, err := st.Channels().Commit(ctx, rec, new(big.Int), ""); err != nil || !ok {
		b.Fatalf("seed the channel: %v %v", ok, err)
	}
	for i := range out {
		max := new(big.Int).Mul(price, big.NewInt(int64(i+2)))
		p, err := batch.NewVoucherPayload(key, d, ch, max)
		if err != nil {
			b.Fatal(err)
		}
		raw, _ := json.Marshal(p)
		out[i] = encode(raw)
	}
	return out
}

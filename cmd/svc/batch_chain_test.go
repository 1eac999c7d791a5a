package main

// The batch-settlement proofs: real svc processes selling with
// --schemes batch-settlement, the official TypeScript facilitator with
// @x402/evm's batch-settlement scheme, the official @x402/fetch client
// with the scheme's client, our own client (x402/batch/client), and the
// escrow on anvil. Skipped under -short and without Node.js.

import (
	"bufio"
	"bytes"
	"context"
	"crypto/ecdsa"
	"encoding/json"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"

	"github.com/seed1284c1d2/svc/internal/anviltest"
	"github.com/seed1284c1d2/svc/tools"
	"github.com/seed1284c1d2/svc/x402"
	"github.com/seed1284c1d2/svc/x402/batch"
	batchserver "github.com/seed1284c1d2/svc/x402/batch/server"
)

// batchWorld is a chain world with the official facilitator serving
// batch-settlement, whose receiver authorizer is svc's.
type batchWorld struct {
	*chainWorld
	authKey *ecdsa.PrivateKey
	tsf     *chainProc
}

func newBatchWorld(t *testing.T) *batchWorld {
	t.Helper()
	w := &batchWorld{chainWorld: newChainWorld(t, anviltest.Options{})}
	w.authKey, _ = anviltest.NewKey(t)
	w.tsf = w.nodeApp(t, "ts facilitator", "ts-facilitator.mjs", "RPC_URL="+w.chain.URL, "RELAYER_KEY="+keyHex(w.relayerKey),
		"AUTHORIZER_KEY="+keyHex(w.authKey), "TUNED=1")
	return w
}

// serveBatch starts `svc serve --schemes batch-settlement` (min deposit
// $0.1) settling through the official facilitator.
func (w *batchWorld) serveBatch(t *testing.T, db string, env []string, extra ...string) *chainProc {
	t.Helper()
	args := append([]string{"serve", "--addr", "127.0.0.1:0", "--db", db, "--unpaid-rate", "-1", "--log-level", "info",
		"--facilitator-url", w.tsf.base, "--pay-to", chainPayTo.Hex(), "--schemes", "batch-settlement", "--min-deposit", "0.1",
		"--receiver-authorizer-key-env", "BATCH_TEST_AUTH_KEY", "--rpc-url", w.chain.URL}, extra...)
	return w.svc(t, "svc serve", append(env, "BATCH_TEST_AUTH_KEY="+keyHex(w.authKey)), args...)
}

// batchCall is one call batch-pay.mjs pays.
type batchCall struct {
	Method string          `json:"method"`
	URL    string          `json:"url"`
	Body   json.RawMessage `json:"body,omitempty"`
}

// batchPayOfficial pays calls, in order, with the official @x402/fetch
// client and @x402/evm's batch-settlement client scheme (one process, one
// channel).
func (w *chainWorld) batchPayOfficial(t *testing.T, calls []batchCall) []chainPaid {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var in bytes.Buffer
	for _, c := range calls {
		b, _ := json.Marshal(c)
		in.Write(append(b, '\n'))
	}
	cmd := exec.CommandContext(ctx, w.node, "batch-pay.mjs")
	cmd.Dir = w.dir
	cmd.Env = append(clusterEnv(), "E2E_PRIVATE_KEY="+keyHex(w.payerKey), "RPC_URL="+w.chain.URL)
	cmd.Stdin = &in
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("batch-pay.mjs: %v\n%s", err, stderr.String())
	}
	var res []chainPaid
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var p chainPaid
		if err := json.Unmarshal(sc.Bytes(), &p); err != nil || p.Error != "" {
			t.Fatalf("batch-pay.mjs answer %q: %v %s\nstderr: %s", sc.Text(), err, p.Error, stderr.String())
		}
		res = append(res, p)
	}
	if len(res) != len(calls) {
		t.Fatalf("batch-pay.mjs answered %d of %d calls\nstderr: %s", len(res), len(calls), stderr.String())
	}
	return res
}

// batchTools returns n paid tools that need no terminal, with their
// example inputs, of distinct prices where the catalog has them.
func batchTools(t testing.TB, n int) []*tools.Tool {
	t.Helper()
	cat, err := tools.New(tools.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var out []*tools.Tool
	seen := map[int64]bool{}
	for pass := 0; pass < 2 && len(out) < n; pass++ {
		for _, tl := range cat.All() {
			if len(out) == n {
				break
			}
			if tl.Terminal || tl.Method != http.MethodPost || len(tl.ExampleInput) == 0 || (pass == 0 && seen[tl.PriceAtomic]) || containsTool(out, tl) {
				continue
			}
			seen[tl.PriceAtomic] = true
			out = append(out, tl)
		}
	}
	if len(out) < n {
		t.Fatalf("only %d tools to call", len(out))
	}
	return out
}

func containsTool(ts []*tools.Tool, t *tools.Tool) bool {
	for _, x := range ts {
		if x.Key == t.Key {
			return true
		}
	}
	return false
}

// batchChannel reads a channel's record from the server's SQLite store.
func batchChannel(t *testing.T, db string, id common.Hash) (batchserver.Held, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := openStoreReadOnly(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	h, found, err := st.Channels().Channel(ctx, x402.NetworkBase, id)
	if err != nil {
		t.Fatal(err)
	}
	return h, found
}

// facilitatorSettle posts a server-authored payload (claim, settle) to the
// official facilitator's /settle.
func (w *batchWorld) facilitatorSettle(t *testing.T, req x402.PaymentRequirements, payload any) x402.SettleResponse {
	t.Helper()
	raw, _ := json.Marshal(payload)
	body, _ := json.Marshal(map[string]any{"x402Version": 2, "paymentPayload": x402.PaymentPayload{X402Version: 2, Accepted: req, Payload: raw}, "paymentRequirements": req})
	resp, err := http.Post(w.tsf.base+"/settle", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var sr x402.SettleResponse
	if err := json.Unmarshal(b, &sr); err != nil || !sr.Success {
		t.Fatalf("facilitator settle: %d %s", resp.StatusCode, b)
	}
	return sr
}

// TestChainBatchServeOfficialClient: the official @x402/fetch client with
// @x402/evm's batch-settlement scheme pays `svc serve --schemes
// batch-settlement` (the official facilitator behind it) for calls of
// three tools at three prices: a deposit on chain, then vouchers answered
// with an empty transaction and the request's charge, and a top-up
// deposit when the balance runs short; the
// channel's record holds exactly the sum of the prices, as does the
// ledger; the latest voucher, claimed through the official facilitator
// with svc's receiver authorizer, and swept, pays payTo exactly that sum.
func TestChainBatchServeOfficialClient(t *testing.T) {
	w := newBatchWorld(t)
	db := filepath.Join(t.TempDir(), "svc.db")
	srv := w.serveBatch(t, db, nil)
	if strings.Contains(srv.out.String(), keyHex(w.authKey)[2:]) {
		t.Fatal("the server printed the receiver authorizer's key")
	}
	ts := batchTools(t, 3)
	const rounds = 4
	var calls []batchCall
	var want int64
	for i := range rounds * len(ts) {
		tl := ts[i%len(ts)]
		calls = append(calls, batchCall{Method: http.MethodPost, URL: srv.base + tl.Path, Body: tl.ExampleInput})
		want += tl.PriceAtomic
	}
	payerBefore := w.chain.TokenBalance(t, w.payer)
	res := w.batchPayOfficial(t, calls)
	var channelID string
	deposits := 0
	for i, r := range res {
		tl := ts[i%len(ts)]
		if r.Status != http.StatusOK || r.PaymentResponse == nil || !r.PaymentResponse.Success {
			t.Fatalf("call %d (%s): %d %s %+v", i, tl.Key, r.Status, r.Body, r.PaymentResponse)
		}
		re, err := batch.ParseResponseExtra(r.PaymentResponse.Extra)
		if err != nil || re.ChannelState == nil || re.ChargedAmount != fmt.Sprint(tl.PriceAtomic) {
			t.Fatalf("call %d (%s): the response's extra %+v %v, want the charge %d", i, tl.Key, r.PaymentResponse.Extra, err, tl.PriceAtomic)
		}
		channelID = re.ChannelState.ChannelID
		// A deposit (the first call, and a top-up once the balance runs
		// short) names its transaction and amount; a voucher neither.
		if r.PaymentResponse.Transaction != "" {
			if r.PaymentResponse.Amount != "100000" {
				t.Fatalf("call %d: a deposit's payment response %+v", i, r.PaymentResponse)
			}
			deposits++
		} else if r.PaymentResponse.Amount != "" {
			t.Fatalf("call %d: a voucher's payment response %+v", i, r.PaymentResponse)
		}
		if i == 0 && deposits != 1 {
			t.Fatalf("the first call is not the deposit's: %+v", r.PaymentResponse)
		}
	}
	// The prices sum past the first deposit ($0.1): one top-up.
	if deposits != 2 {
		t.Fatalf("%d deposits for %d calls summing %d, want 2", deposits, len(res), want)
	}
	last, _ := batch.ParseResponseExtra(res[len(res)-1].PaymentResponse.Extra)
	if last.ChannelState.ChargedCumulativeAmount != fmt.Sprint(want) || last.ChannelState.Balance != "200000" {
		t.Fatalf("the last snapshot: %+v, want charged %d", last.ChannelState, want)
	}
	if got := new(big.Int).Sub(payerBefore, w.chain.TokenBalance(t, w.payer)); got.Int64() != 200_000 {
		t.Fatalf("the payer paid %s on chain, want the deposits alone", got)
	}
	id := common.HexToHash(channelID)
	if oc := anviltest.EscrowChannel(t, w.chain.Client, id); oc.Balance.Int64() != 200_000 || oc.TotalClaimed.Sign() != 0 {
		t.Fatalf("the escrow: %+v", oc)
	}
	h, found := batchChannel(t, db, id)
	if !found || h.Charged.Int64() != want || h.SignedMax.Int64() != want || h.Holder != "" || !strings.EqualFold(h.Channel.Payer.Hex(), w.payer.Hex()) {
		t.Fatalf("the channel's record: %+v (found %v), want charged %d", h, found, want)
	}
	l := clusterSQLiteLedger(t, db)
	var sum int64
	for _, r := range l.rows {
		var v int64
		fmt.Sscan(r.Amount, &v)
		sum += v
	}
	if len(l.rows) != len(calls) || sum != want {
		t.Fatalf("the ledger: %d rows summing %d, want %d summing %d", len(l.rows), sum, len(calls), want)
	}

	// The vouchers are money: the latest, claimed with svc's receiver
	// authorizer through the official facilitator, then swept.
	ctx := context.Background()
	st, err := openStoreReadOnly(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	recs, err := st.Channels().Claimable(ctx, x402.NetworkBase, 10)
	_ = st.Close()
	if err != nil || len(recs) != 1 || recs[0].ID != id {
		t.Fatalf("claimable: %d %v", len(recs), err)
	}
	d := batch.NewDomain(8453)
	c := batch.Claim{Channel: recs[0].Channel, MaxClaimableAmount: recs[0].SignedMax, Signature: recs[0].Signature, TotalClaimed: recs[0].Charged}
	sig, err := d.SignClaimBatch(w.authKey, d.ClaimEntries([]batch.Claim{c}))
	if err != nil {
		t.Fatal(err)
	}
	req, err := batch.NewRequirements(batch.Offer{Network: x402.NetworkBase, Amount: "1", PayTo: chainPayTo.Hex(), ReceiverAuthorizer: recs[0].Channel.ReceiverAuthorizer, WithdrawDelay: 900})
	if err != nil {
		t.Fatal(err)
	}
	w.facilitatorSettle(t, req, batch.ClaimPayload{Type: batch.TypeClaim, Claims: []batch.VoucherClaim{c.Row()}, ClaimAuthorizerSignature: sig})
	if oc := anviltest.EscrowChannel(t, w.chain.Client, id); oc.TotalClaimed.Int64() != want {
		t.Fatalf("the escrow's totalClaimed after the claim: %s, want %d", oc.TotalClaimed, want)
	}
	payToBefore := w.chain.TokenBalance(t, chainPayTo)
	w.facilitatorSettle(t, req, batch.SettlePayload{Type: batch.TypeSettle, Receiver: chainPayTo.Hex(), Token: req.Asset})
	if got := new(big.Int).Sub(w.chain.TokenBalance(t, chainPayTo), payToBefore); got.Int64() != want {
		t.Fatalf("payTo swept %s, want %d", got, want)
	}
}

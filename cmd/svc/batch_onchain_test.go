package main

import (
	"bufio"
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
	"github.com/seed1284c1d2/svc/x402/batch"
)

// TestChainBatchOnchainClaimerAndRefund: the official @x402/fetch client
// with @x402/evm's batch-settlement scheme pays `svc serve --settle onchain
// --schemes batch-settlement` (svc's own facilitator and relayer, svc's
// claimer) for calls of mixed tools: one deposit on chain, then vouchers;
// the claimer claims what was charged and sweeps it, so payTo receives
// exactly the sum of the prices; the client's cooperative refund returns
// the payer the rest of the deposit, running no tool.
func TestChainBatchOnchainClaimerAndRefund(t *testing.T) {
	w := newBatchWorld(t)
	db := filepath.Join(t.TempDir(), "svc.db")
	srv := w.serveOnchain(t, db, []string{"BATCH_TEST_AUTH_KEY=" + keyHex(w.authKey)},
		"--schemes", "batch-settlement", "--min-deposit", "1", "--receiver-authorizer-key-env", "BATCH_TEST_AUTH_KEY",
		"--claim-interval", "1s", "--claim-threshold", "0.000001", "--claim-idle", "0")
	if strings.Contains(srv.out.String(), keyHex(w.authKey)[2:]) {
		t.Fatal("the server printed the receiver authorizer's key")
	}
	ts := batchTools(t, 3)
	const calls = 200
	var reqs []batchCall
	var want int64
	for i := range calls {
		tl := ts[i%len(ts)]
		reqs = append(reqs, batchCall{Method: http.MethodPost, URL: srv.base + tl.Path, Body: tl.ExampleInput})
		want += tl.PriceAtomic
	}
	payerBefore := w.chain.TokenBalance(t, w.payer)
	payToBefore := w.chain.TokenBalance(t, chainPayTo)
	// One client process (its channel lives in its memory) pays the calls,
	// then, once the claimer has claimed, asks for the refund.
	cl := w.officialBatchClient(t)
	var res []chainPaid
	for _, r := range reqs {
		res = append(res, cl.pay(t, r))
	}
	var id common.Hash
	deposits := 0
	for i, r := range res {
		if r.Status != http.StatusOK || r.PaymentResponse == nil || !r.PaymentResponse.Success {
			t.Fatalf("call %d: %d %s %+v", i, r.Status, r.Body, r.PaymentResponse)
		}
		re, err := batch.ParseResponseExtra(r.PaymentResponse.Extra)
		if err != nil || re.ChannelState == nil {
			t.Fatalf("call %d: extra %+v %v", i, r.PaymentResponse.Extra, err)
		}
		id = common.HexToHash(re.ChannelState.ChannelID)
		if r.PaymentResponse.Transaction != "" {
			deposits++
		}
	}
	if deposits < 1 || res[0].PaymentResponse.Transaction == "" {
		t.Fatalf("%d deposits, the first call's %+v: want the first call to deposit", deposits, res[0].PaymentResponse)
	}
	deposit := new(big.Int).Sub(payerBefore, w.chain.TokenBalance(t, w.payer))

	// The claimer claims the channel on every pass (a threshold of one
	// atomic unit: whatever is unclaimed), while the calls go on and after
	// the last, and sweeps each claim to payTo.
	deadline := time.Now().Add(90 * time.Second)
	for {
		oc := anviltest.EscrowChannel(t, w.chain.Client, id)
		swept := new(big.Int).Sub(w.chain.TokenBalance(t, chainPayTo), payToBefore)
		if oc.TotalClaimed.Int64() == want && swept.Int64() == want {
			break
		}
		if oc.TotalClaimed.Int64() > want || swept.Int64() > want {
			t.Fatalf("claimed %s, swept %s: more than the %d charged", oc.TotalClaimed, swept, want)
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 90 s: claimed %s, swept %s, want %d\n%s", oc.TotalClaimed, swept, want, srv.out.String())
		}
		time.Sleep(200 * time.Millisecond)
	}

	// The cooperative refund: no tool runs, the payer gets the rest.
	out := cl.refund(t, srv.base+"/api/session-state")
	paid := new(big.Int).Sub(payerBefore, w.chain.TokenBalance(t, w.payer))
	if paid.Int64() != want {
		t.Fatalf("after the refund the payer has paid %s (deposit %s), want exactly the %d charged; refund: %s", paid, deposit, want, out)
	}
	if oc := anviltest.EscrowChannel(t, w.chain.Client, id); oc.Balance.Int64() != want || oc.TotalClaimed.Int64() != want {
		t.Fatalf("the escrow after the refund: %+v", oc)
	}
	l := clusterSQLiteLedger(t, db)
	if len(l.rows) != calls {
		t.Fatalf("the ledger has %d rows, want %d (the refund is no paid call); last %+v", len(l.rows), calls, l.rows[len(l.rows)-1])
	}
	// svc reconcile counts the channel charges apart and checks the
	// claimed channel against the escrow.
	out, code := runSvc(t, "reconcile", "--db", db, "--rpc-url", w.chain.URL)
	if code != 0 || !strings.Contains(out, "0 mismatches") || !strings.Contains(out, fmt.Sprintf("%d batch-settlement channel charges (%d atomic units)", calls, want)) ||
		!strings.Contains(out, "1 claimed channels checked") {
		t.Fatalf("svc reconcile: exit %d\n%s", code, out)
	}
}

// officialBatchClient is one process of batch-pay.mjs, driven a line at a
// time.
type officialBatchClient struct {
	in  io.WriteCloser
	out *bufio.Scanner
}

func (w *chainWorld) officialBatchClient(t *testing.T) *officialBatchClient {
	t.Helper()
	cmd := exec.Command(w.node, "batch-pay.mjs")
	cmd.Dir = w.dir
	cmd.Env = append(clusterEnv(), "E2E_PRIVATE_KEY="+keyHex(w.payerKey), "RPC_URL="+w.chain.URL)
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = in.Close()
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		if t.Failed() {
			t.Logf("batch-pay.mjs stderr: %s", stderr.String())
		}
	})
	sc := bufio.NewScanner(out)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	return &officialBatchClient{in: in, out: sc}
}

// line sends v and returns the answer's line.
func (c *officialBatchClient) line(t *testing.T, v any) []byte {
	t.Helper()
	b, _ := json.Marshal(v)
	if _, err := c.in.Write(append(b, '\n')); err != nil {
		t.Fatal(err)
	}
	if !c.out.Scan() {
		t.Fatalf("batch-pay.mjs ended: %v", c.out.Err())
	}
	return c.out.Bytes()
}

// pay pays one call.
func (c *officialBatchClient) pay(t *testing.T, call batchCall) chainPaid {
	t.Helper()
	var p chainPaid
	if b := c.line(t, call); json.Unmarshal(b, &p) != nil || p.Error != "" {
		t.Fatalf("batch-pay.mjs answer %q", b)
	}
	return p
}

// refund asks the client's cooperative refund at url.
func (c *officialBatchClient) refund(t *testing.T, url string) string {
	t.Helper()
	b := c.line(t, map[string]string{"refund": url})
	if strings.Contains(string(b), `"error"`) {
		t.Fatalf("batch-pay.mjs refund: %s", b)
	}
	return string(b)
}

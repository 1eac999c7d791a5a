package client_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/crypto"

	"github.com/seed1284c1d2/svc/internal/anviltest"
	"github.com/seed1284c1d2/svc/x402"
	"github.com/seed1284c1d2/svc/x402/batch"
	batchclient "github.com/seed1284c1d2/svc/x402/batch/client"
	"github.com/seed1284c1d2/svc/x402/client"
)

var expressListening = regexp.MustCompile(`listening on (http://127\.0\.0\.1:\d+)`)

// startExpress runs e2e/chain/batch-express.mjs (the official express
// server, batch-settlement server scheme and facilitator) and returns its
// base URL.
func startExpress(t *testing.T, env ...string) string {
	t.Helper()
	node, dir := anviltest.Setup(t)
	cmd := exec.Command(node, "batch-express.mjs")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-done
	})
	url := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if m := expressListening.FindStringSubmatch(sc.Text()); m != nil {
				url <- m[1]
			}
		}
	}()
	select {
	case u := <-url:
		return u
	case <-done:
		t.Fatal("batch-express.mjs exited before listening")
	case <-time.After(60 * time.Second):
		t.Fatal("batch-express.mjs did not listen within 60 s")
	}
	return ""
}

func hexKey(t *testing.T) (string, common.Address) {
	k, a := anviltest.NewKey(t)
	return hexutil.Encode(crypto.FromECDSA(k)), a
}

// TestBatchPaysOfficialExpressServer: this package's scheme, through
// x402/client's Transport, pays the official @x402/express server with the
// official batch-settlement server scheme and facilitator on anvil with
// our escrow: one deposit, then vouchers answered 200 whose payment
// responses keep the state file; a state file rolled back to a stale
// charge is corrected by the server's corrective 402 and the call still
// succeeds; the official channel manager's claim and sweep pay payTo
// exactly the sum of the prices, and a cooperative refund returns the
// remainder to the payer.
func TestBatchPaysOfficialExpressServer(t *testing.T) {
	c := anviltest.Start(t, anviltest.Options{})
	relayerHex, relayerAddr := hexKey(t)
	authHex, _ := hexKey(t)
	payer, payerAddr := anviltest.NewKey(t)
	_, payTo := anviltest.NewKey(t)
	c.SetBalance(t, relayerAddr, anviltest.Ether(10))
	c.Mint(t, payerAddr, big.NewInt(1_000_000))
	base := startExpress(t, "RPC_URL="+c.URL, "RELAYER_KEY="+relayerHex, "AUTHORIZER_KEY="+authHex, "PAY_TO="+payTo.Hex(), "PRICE=1000")

	dir := t.TempDir()
	scheme, err := batchclient.New(batchclient.Config{Key: payer, Dir: dir, Deposit: big.NewInt(100_000)})
	if err != nil {
		t.Fatal(err)
	}
	httpc := client.New(nil, client.WithSchemes(scheme))
	var paidReq x402.PaymentRequirements
	call := func(i int, hc *http.Client) *x402.SettleResponse {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, base+"/api/paid", strings.NewReader(fmt.Sprintf(`{"i":%d}`, i)))
		req.Header.Set("Content-Type", "application/json")
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusOK {
			pr, _ := client.PaymentRequiredOf(resp)
			t.Fatalf("call %d: %d %s (%s)", i, resp.StatusCode, body, pr.Error)
		}
		sr, err := client.PaymentResponse(resp)
		if err != nil {
			t.Fatalf("call %d: %v", i, err)
		}
		return sr
	}

	// The offer, as an unpaid request sees it.
	resp, err := http.Post(base+"/api/paid", "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	pr, err := client.PaymentRequiredOf(resp)
	resp.Body.Close()
	if err != nil || len(pr.Accepts) == 0 || pr.Accepts[0].Scheme != batch.Scheme {
		t.Fatalf("the offer: %+v, %v", pr, err)
	}
	paidReq = pr.Accepts[0]
	price, _ := new(big.Int).SetString(paidReq.Amount, 10)

	const n = 10
	first := call(0, httpc)
	if first.Transaction == "" || first.Amount != "100000" {
		t.Fatalf("the first call's payment response is not the deposit's: %+v", first)
	}
	for i := 1; i < n; i++ {
		if sr := call(i, httpc); sr.Transaction != "" {
			t.Fatalf("call %d: a voucher's payment response names transaction %s", i, sr.Transaction)
		}
	}
	st, err := scheme.State(paidReq)
	if err != nil {
		t.Fatal(err)
	}
	want := new(big.Int).Mul(price, big.NewInt(n))
	if st.Charged != want.String() || st.Balance != "100000" || st.Pending != "" {
		t.Fatalf("the state file after %d calls: %+v, want charged %s", n, st, want)
	}

	// A state file from before the last call: the server's corrective 402
	// resynchronises it and the call is paid once more.
	files, _ := os.ReadDir(dir)
	if len(files) != 1 {
		t.Fatalf("state files: %v", files)
	}
	path := dir + "/" + files[0].Name()
	raw, _ := os.ReadFile(path)
	stale := bytes.Replace(raw, []byte(`"chargedCumulativeAmount": "`+want.String()+`"`), []byte(`"chargedCumulativeAmount": "`+new(big.Int).Sub(want, price).String()+`"`), 1)
	if bytes.Equal(stale, raw) {
		t.Fatal("could not roll the state file back")
	}
	if err := os.WriteFile(path, stale, 0o600); err != nil {
		t.Fatal(err)
	}
	call(n, httpc)
	want.Add(want, price)
	if st, _ = scheme.State(paidReq); st.Charged != want.String() {
		t.Fatalf("after the corrective 402: charged %s, want %s", st.Charged, want)
	}

	// The official channel manager claims and sweeps: payTo holds the sum
	// of the prices.
	cr, err := http.Post(base+"/admin/claim", "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	cb, _ := io.ReadAll(cr.Body)
	cr.Body.Close()
	if cr.StatusCode != http.StatusOK {
		t.Fatalf("claim: %d %s", cr.StatusCode, cb)
	}
	if got := c.TokenBalance(t, payTo); got.Cmp(want) != 0 {
		t.Fatalf("payTo holds %s after the claim (%s), want %s", got, cb, want)
	}
	id := common.HexToHash(st.ChannelID)
	if oc := anviltest.EscrowChannel(t, c.Client, id); oc.TotalClaimed.Cmp(want) != 0 {
		t.Fatalf("the escrow's totalClaimed %s, want %s", oc.TotalClaimed, want)
	}

	// A cooperative refund of everything left.
	before := c.TokenBalance(t, payerAddr)
	sr := call(n+1, client.New(nil, client.WithSchemes(scheme.Refunder(nil))))
	left := new(big.Int).Sub(big.NewInt(100_000), want)
	if got := new(big.Int).Sub(c.TokenBalance(t, payerAddr), before); got.Cmp(left) != 0 {
		t.Fatalf("the payer got %s back (%+v), want %s", got, sr, left)
	}
	if st, _ = scheme.State(paidReq); st.Pending != "" {
		t.Fatalf("the state after the refund: %+v", st)
	}
	raw, _ = json.Marshal(st)
	t.Logf("%d calls of %s, payTo swept %s, refunded %s; state %s", n+1, price, want, left, raw)
}

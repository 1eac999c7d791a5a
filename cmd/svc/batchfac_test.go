package main

import (
	"context"
	"encoding/json"
	"io"
	"math/big"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"

	"github.com/seed1284c1d2/svc/internal/anviltest"
	"github.com/seed1284c1d2/svc/internal/envflag"
	"github.com/seed1284c1d2/svc/x402"
	"github.com/seed1284c1d2/svc/x402/batch"
)

// batchFetched is what batch-fetch.mjs reports.
type batchFetched struct {
	Calls []struct {
		Status          int                  `json:"status"`
		PaymentResponse *x402.SettleResponse `json:"paymentResponse"`
	} `json:"calls"`
	Claim struct {
		Status int             `json:"status"`
		Body   json.RawMessage `json:"body"`
	} `json:"claim"`
	Refund *x402.SettleResponse `json:"refund"`
	Error  string               `json:"error"`
}

// TestChainFacilitatorBatchOfficialPeers: `svc facilitator` with a
// receiver authorizer key serves batch-settlement beside exact; the
// official @x402/express server with the official batch-settlement server
// scheme delegates its receiver authorizer to it, and the official
// @x402/fetch + @x402/evm batch client pays four calls (a deposit of ten
// prices, then vouchers); the official channel manager's claim and sweep
// (signed by svc facilitator) pay payTo exactly the four prices, and the
// official client's cooperative refund returns the other six to the payer.
func TestChainFacilitatorBatchOfficialPeers(t *testing.T) {
	w := newChainWorld(t, anviltest.Options{})
	authKey, authAddr := anviltest.NewKey(t)
	_, payTo := anviltest.NewKey(t)
	const token = "chain-test-token-0123456789"
	fac := w.svc(t, "svc facilitator", []string{"CHAIN_TEST_RELAYER_KEY=" + keyHex(w.relayerKey), "CHAIN_TEST_TOKEN=" + token, "CHAIN_TEST_AUTH_KEY=" + keyHex(authKey)},
		"facilitator", "--addr", "127.0.0.1:0", "--rpc-url", w.chain.URL, "--relayer-key-env", "CHAIN_TEST_RELAYER_KEY", "--token-env", "CHAIN_TEST_TOKEN",
		"--receiver-authorizer-key-env", "CHAIN_TEST_AUTH_KEY")

	// /supported: both schemes, the receiver authorizer, the relayer.
	req, _ := http.NewRequest(http.MethodGet, fac.base+"/supported", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var sup x402.SupportedResponse
	err = json.NewDecoder(resp.Body).Decode(&sup)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	schemes := map[string]map[string]any{}
	for _, k := range sup.Kinds {
		if k.X402Version == 2 {
			schemes[k.Scheme] = k.Extra
		}
	}
	if _, ok := schemes[x402.SchemeExact]; !ok || schemes[batch.Scheme]["receiverAuthorizer"] != authAddr.Hex() || sup.Signers["eip155:*"][0] != w.relayer.Hex() {
		t.Fatalf("supported: %+v", sup)
	}

	app := w.nodeApp(t, "batch express", "batch-express.mjs", "FACILITATOR_URL="+fac.base, "FACILITATOR_TOKEN="+token, "PAY_TO="+payTo.Hex(), "PRICE=1000")
	payer0 := w.chain.TokenBalance(t, w.payer)

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, w.node, "batch-fetch.mjs", app.base, "4")
	cmd.Dir = w.dir
	cmd.Env = append(clusterEnv(), "E2E_PRIVATE_KEY="+keyHex(w.payerKey), "RPC_URL="+w.chain.URL)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	var res batchFetched
	if jerr := json.Unmarshal(out, &res); jerr != nil || res.Error != "" || len(res.Calls) != 4 {
		t.Fatalf("batch-fetch.mjs: %v %s (exit %v)\nstdout: %s\nstderr: %s", jerr, res.Error, err, out, stderr.String())
	}
	for i, c := range res.Calls {
		pr := c.PaymentResponse
		if c.Status != http.StatusOK || pr == nil || !pr.Success {
			t.Fatalf("call %d: %d %+v", i, c.Status, pr)
		}
		if deposit := i == 0; deposit != (pr.Transaction != "") {
			t.Fatalf("call %d: transaction %q (only the first, the deposit, has one)", i, pr.Transaction)
		}
	}
	if first := res.Calls[0].PaymentResponse; first.Amount != "10000" {
		t.Fatalf("the deposit: %+v, want 10000 deposited (the client's ten prices)", first)
	}
	if res.Claim.Status != http.StatusOK || res.Refund == nil || !res.Refund.Success || res.Refund.Amount != "6000" {
		t.Fatalf("claim %d %s; refund %+v", res.Claim.Status, res.Claim.Body, res.Refund)
	}
	if got := w.chain.TokenBalance(t, payTo); got.Int64() != 4000 {
		t.Fatalf("payTo holds %s, want 4000 (four calls of 1000)", got)
	}
	if spent := new(big.Int).Sub(payer0, w.chain.TokenBalance(t, w.payer)); spent.Int64() != 4000 {
		t.Fatalf("the payer spent %s, want 4000", spent)
	}
	cs, err := batch.ParseResponseExtra(res.Calls[3].PaymentResponse.Extra)
	if err != nil || cs.ChannelState == nil {
		t.Fatalf("the last call's extra: %+v %v", res.Calls[3].PaymentResponse.Extra, err)
	}
	st := anviltest.EscrowChannel(t, w.chain.Client, common.HexToHash(cs.ChannelState.ChannelID))
	if st.Balance.Int64() != 4000 || st.TotalClaimed.Int64() != 4000 || st.RefundNonce.Int64() != 1 {
		t.Fatalf("the escrow's channel: %+v", st)
	}
	if strings.Contains(fac.out.String(), strings.TrimPrefix(keyHex(authKey), "0x")) {
		t.Fatal("svc facilitator printed the receiver authorizer key")
	}
}

// TestReceiverAuthorizerKeyFlags: the receiver authorizer key is optional
// (none when neither flag nor SVC_RECEIVER_AUTHORIZER_KEY is set); a named
// variable that is empty, a key given in place of a variable's name, a
// malformed key or a missing key file stop `svc facilitator` with exit
// status 2 before any chain is touched, and never print the key.
func TestReceiverAuthorizerKeyFlags(t *testing.T) {
	const key = "0x4c0883a69102937d6231471b5dbb6204fe5129617082792ae468d01a3f362318"
	const auth = "0x8da4ef21b864d2cc526dbdb2a120bd2874c36c9d2a1e8e1fbc0c6f7e8c2fd1e2"
	base := map[string]string{"SVC_RELAYER_KEY": key, "SVC_FACILITATOR_TOKEN": "0123456789abcdef0123"}
	with := func(kv ...string) map[string]string {
		m := map[string]string{}
		for k, v := range base {
			m[k] = v
		}
		for i := 0; i+1 < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	rpc := []string{"facilitator", "--rpc-url", "http://127.0.0.1:1"}
	for name, tc := range map[string]struct {
		args []string
		env  map[string]string
	}{
		"named variable empty": {append(rpc, "--receiver-authorizer-key-env", "AUTH_KEY"), with()},
		"key as the name":      {append(rpc, "--receiver-authorizer-key-env", auth), with()},
		"malformed key":        {append(rpc, "--receiver-authorizer-key-env", "AUTH_KEY"), with("AUTH_KEY", auth[:40])},
		"malformed default":    {rpc, with("SVC_RECEIVER_AUTHORIZER_KEY", "0xzz"+auth[4:])},
		"missing file":         {append(rpc, "--receiver-authorizer-key-file", t.TempDir()+"/none"), with()},
	} {
		var stderr strings.Builder
		if code := run(context.Background(), tc.args, io.Discard, &stderr, envOf(tc.env)); code != 2 {
			t.Errorf("%s: exit %d, want 2\n%s", name, code, stderr.String())
		}
		if strings.Contains(stderr.String(), auth[6:26]) {
			t.Errorf("%s: the key was printed:\n%s", name, stderr.String())
		}
	}

	// Read from the default variable, from a named one, from a file, or none.
	keyFile := t.TempDir() + "/auth.key"
	if err := os.WriteFile(keyFile, []byte(auth+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct {
		env  map[string]string
		args []string
		want bool
	}{
		"none":      {map[string]string{}, nil, false},
		"default":   {map[string]string{"SVC_RECEIVER_AUTHORIZER_KEY": auth}, nil, true},
		"named":     {map[string]string{"AUTH_KEY": auth}, []string{"--receiver-authorizer-key-env", "AUTH_KEY"}, true},
		"no 0x":     {map[string]string{"AUTH_KEY": auth[2:]}, []string{"--receiver-authorizer-key-env", "AUTH_KEY"}, true},
		"other var": {map[string]string{"OTHER": auth}, nil, false},
		"file":      {map[string]string{}, []string{"--receiver-authorizer-key-file", keyFile}, true},
	} {
		f := envflag.New("test", io.Discard, envOf(tc.env), "test")
		a := addAuthorizerFlags(f)
		if err := f.Parse(tc.args); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if err := a.check(envOf(tc.env)); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if (a.key != nil) != tc.want {
			t.Errorf("%s: key read %v, want %v", name, a.key != nil, tc.want)
		}
	}
}

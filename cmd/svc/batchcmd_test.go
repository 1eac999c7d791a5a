package main

import (
	"bytes"
	"context"
	"encoding/json"
	"math/big"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common/hexutil"

	"github.com/seed1284c1d2/svc/internal/anviltest"
	"github.com/seed1284c1d2/svc/store"
	"github.com/seed1284c1d2/svc/x402"
	"github.com/seed1284c1d2/svc/x402/batch"
	"github.com/seed1284c1d2/svc/x402/batch/claimer"
	"github.com/seed1284c1d2/svc/x402/facilitator"
)

// svc batch status and svc batch refund against anvil and the official
// facilitator: a channel claimed by the claimer into the store's claim
// log is listed, refused flags are usage errors, a dry run changes
// nothing, and the refund returns the payer what was not charged.
func TestBatchStatusAndRefundCommands(t *testing.T) {
	node, dir := anviltest.Setup(t)
	c := anviltest.Start(t, anviltest.Options{})
	relayer, relayerAddr := anviltest.NewKey(t)
	c.SetBalance(t, relayerAddr, anviltest.Ether(10))
	cmd := exec.Command(node, "ts-facilitator.mjs")
	cmd.Dir = dir
	cmd.Env = append(clusterEnv(), "RPC_URL="+c.URL, "RELAYER_KEY="+keyHex(relayer), "BATCH=1", "TUNED=1")
	facURL := chainStart(t, "batch facilitator", cmd).base
	fac, err := facilitator.NewHTTP(facilitator.HTTPConfig{URL: facURL})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()

	authKey, authAddr := anviltest.NewKey(t)
	_, payTo := anviltest.NewKey(t)
	req, err := batch.NewRequirements(batch.Offer{Network: x402.NetworkBase, Amount: "1000", PayTo: payTo.Hex(), ReceiverAuthorizer: authAddr, WithdrawDelay: 900})
	if err != nil {
		t.Fatal(err)
	}
	payerKey, payer := anviltest.NewKey(t)
	c.Mint(t, payer, big.NewInt(100_000))
	ch, _, err := batch.NewChannel(payerKey, req, anviltest.RandomSalt(t))
	if err != nil {
		t.Fatal(err)
	}
	dep, err := batch.NewDepositPayload(payerKey, req, ch, big.NewInt(1000), big.NewInt(100_000), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(dep)
	if resp, err := fac.Settle(ctx, x402.PaymentPayload{X402Version: 2, Accepted: req, Payload: raw}, req); err != nil || !resp.Success {
		t.Fatalf("deposit: %+v, %v", resp, err)
	}
	d := batch.NewDomain(anviltest.ChainID)
	id := d.ChannelID(ch)
	sig, err := d.SignVoucher(payerKey, id, big.NewInt(8000))
	if err != nil {
		t.Fatal(err)
	}

	// The server's claimer claims 7000 into the store's claim log.
	db := filepath.Join(t.TempDir(), "svc.db")
	st, err := store.Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	chans := claimer.NewMemoryChannels()
	chans.Put(batch.ChannelRecord{Network: x402.NetworkBase, ID: id, Channel: ch, Charged: big.NewInt(7000), SignedMax: big.NewInt(8000),
		Signature: hexutil.MustDecode(sig), LastRequestAt: time.Now()})
	cl, err := claimer.New(claimer.Config{Network: x402.NetworkBase, Channels: chans, Log: st.BatchClaims(), Facilitator: fac, Chain: c.Client, AuthorizerKey: authKey})
	if err != nil {
		t.Fatal(err)
	}
	if rep, err := cl.ClaimNow(ctx); err != nil || rep.Channels != 1 {
		t.Fatalf("claim: %+v, %v", rep, err)
	}
	_ = st.Close()

	env := map[string]string{"SVC_RECEIVER_AUTHORIZER_KEY": keyHex(authKey)}
	getenv := func(k string) string { return env[k] }
	svc := func(args ...string) (int, string, string) {
		var out, errOut bytes.Buffer
		code := run(ctx, args, &out, &errOut, getenv)
		return code, out.String(), errOut.String()
	}
	flags := []string{"--db", db, "--rpc-url", c.URL}

	code, out, errOut := svc(append([]string{"batch", "status", "--json"}, flags...)...)
	if code != 0 {
		t.Fatalf("status: %d %s", code, errOut)
	}
	var status struct {
		Unclaimed string `json:"unclaimed"`
		Pending   []any  `json:"pendingClaims"`
		Recent    []struct {
			State    string `json:"state"`
			Channels int    `json:"channels"`
			Tx       string `json:"tx"`
		} `json:"recentClaims"`
	}
	if err := json.Unmarshal([]byte(out), &status); err != nil {
		t.Fatalf("status --json: %v\n%s", err, out)
	}
	if status.Unclaimed != "0" || len(status.Pending) != 0 || len(status.Recent) != 1 || status.Recent[0].State != "done" || status.Recent[0].Channels != 1 || status.Recent[0].Tx == "" {
		t.Fatalf("status: %+v", status)
	}

	for _, bad := range [][]string{
		{"batch", "refund"},
		{"batch", "refund", "--channel", "0x12"},
		{"batch", "refund", "--idle", "-1h"},
		{"batch", "nope"},
	} {
		if code, _, errOut := svc(append(bad, flags...)...); code != 2 {
			t.Errorf("%v: exit %d, want 2 (usage)\n%s", bad, code, errOut)
		}
	}
	if code, _, errOut := svc(append([]string{"batch", "refund", "--idle", "1h", "--facilitator-url", facURL}, "--db", db, "--rpc-url", c.URL)...); code != 0 {
		t.Fatalf("refund of nothing idle: %d %s", code, errOut)
	}
	time.Sleep(10 * time.Millisecond)
	code, out, errOut = svc(append([]string{"batch", "refund", "--idle", "1ms", "--dry-run", "--json"}, flags...)...)
	if code != 0 {
		t.Fatalf("dry run: %d %s", code, errOut)
	}
	var dry struct {
		DryRun   bool `json:"dryRun"`
		Channels []struct {
			ChannelID string `json:"channelId"`
			Refund    string `json:"refund"`
		} `json:"channels"`
	}
	if err := json.Unmarshal([]byte(out), &dry); err != nil || !dry.DryRun || len(dry.Channels) != 1 || dry.Channels[0].Refund != "93000" ||
		!strings.EqualFold(dry.Channels[0].ChannelID, id.Hex()) {
		t.Fatalf("dry run: %+v, %v\n%s", dry, err, out)
	}
	if got := anviltest.EscrowChannel(t, c.Client, id); got.Balance.Int64() != 100_000 {
		t.Fatalf("the dry run changed the channel: %+v", got)
	}
	code, out, errOut = svc(append([]string{"batch", "refund", "--idle", "1ms", "--facilitator-url", facURL}, flags...)...)
	if code != 0 || !strings.Contains(out, "refunded 93000") {
		t.Fatalf("refund: %d\n%s\n%s", code, out, errOut)
	}
	if got := c.TokenBalance(t, payer); got.Int64() != 93_000 {
		t.Fatalf("the payer holds %s after the refund, want 93000", got)
	}
	if got := anviltest.EscrowChannel(t, c.Client, id); got.Balance.Int64() != 7000 || got.TotalClaimed.Int64() != 7000 {
		t.Fatalf("the channel after the refund: %+v", got)
	}
}

package claimer_test

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"encoding/json"
	"math/big"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/seed1284c1d2/svc/internal/anviltest"
	"github.com/seed1284c1d2/svc/x402"
	"github.com/seed1284c1d2/svc/x402/batch"
	"github.com/seed1284c1d2/svc/x402/batch/claimer"
	"github.com/seed1284c1d2/svc/x402/facilitator"
)

// env is anvil with the scheme's contracts, the official TypeScript
// facilitator (batch-settlement and exact) over HTTP on it, and a
// server's receiver authorizer and payTo.
type env struct {
	chain      *anviltest.Chain
	facURL     string
	fac        *facilitator.HTTP
	relayerHex string
	authKey    *ecdsa.PrivateKey
	authAddr   common.Address
	payTo      common.Address
	req        x402.PaymentRequirements
	domain     batch.Domain
}

const price = 1000 // per-request maximum of the offer

func newEnv(t testing.TB) *env {
	t.Helper()
	c := anviltest.Start(t, anviltest.Options{})
	relayer, relayerAddr := anviltest.NewKey(t)
	c.SetBalance(t, relayerAddr, anviltest.Ether(100))
	e := &env{chain: c, relayerHex: hexutil.Encode(crypto.FromECDSA(relayer)), domain: batch.NewDomain(anviltest.ChainID)}
	e.authKey, e.authAddr = anviltest.NewKey(t)
	_, e.payTo = anviltest.NewKey(t)
	var err error
	e.req, err = batch.NewRequirements(batch.Offer{Network: x402.NetworkBase, Amount: "1000", PayTo: e.payTo.Hex(), ReceiverAuthorizer: e.authAddr, WithdrawDelay: 900})
	if err != nil {
		t.Fatal(err)
	}
	e.facURL = startFacilitator(t, c.URL, e.relayerHex)
	if e.fac, err = facilitator.NewHTTP(facilitator.HTTPConfig{URL: e.facURL}); err != nil {
		t.Fatal(err)
	}
	return e
}

// startFacilitator runs the official facilitator (e2e/chain/ts-facilitator.mjs
// with batch-settlement and no receiver authorizer of its own) against rpcURL
// and returns its URL; it is stopped when the test ends.
func startFacilitator(t testing.TB, rpcURL, relayerHex string) string {
	t.Helper()
	node, dir := anviltest.Setup(t)
	cmd := exec.Command(node, "ts-facilitator.mjs")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "RPC_URL="+rpcURL, "RELAYER_KEY="+relayerHex, "BATCH=1", "TUNED=1")
	cmd.Stderr = os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
	})
	line := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if s := sc.Text(); strings.HasPrefix(s, "listening on ") {
				line <- strings.TrimPrefix(s, "listening on ")
			}
		}
	}()
	select {
	case u := <-line:
		return u
	case <-time.After(60 * time.Second):
		t.Fatal("ts-facilitator.mjs did not listen within 60 s")
	}
	return ""
}

// wrap puts a payload into a PaymentPayload of req.
func wrap(t testing.TB, req x402.PaymentRequirements, payload any) x402.PaymentPayload {
	t.Helper()
	raw, err := json.Marshal(payload)
	if err != nil {
		t.Fatal(err)
	}
	return x402.PaymentPayload{X402Version: 2, Accepted: req, Payload: raw}
}

// payer is one payer's channel.
type payer struct {
	key        *ecdsa.PrivateKey
	addr       common.Address
	ch         batch.Channel
	id         common.Hash
	depositGas uint64
	charged    *big.Int
	last       batch.Payload
}

// open funds a new payer with deposit test USDC and deposits it into a
// new channel through the official facilitator.
func (e *env) open(t testing.TB, deposit int64) *payer {
	t.Helper()
	key, addr := anviltest.NewKey(t)
	e.chain.Mint(t, addr, big.NewInt(deposit))
	ch, _, err := batch.NewChannel(key, e.req, anviltest.RandomSalt(t))
	if err != nil {
		t.Fatal(err)
	}
	p := &payer{key: key, addr: addr, ch: ch, id: e.domain.ChannelID(ch), charged: new(big.Int)}
	dep, err := batch.NewDepositPayload(key, e.req, ch, big.NewInt(price), big.NewInt(deposit), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	resp, err := e.fac.Settle(context.Background(), wrap(t, e.req, dep), e.req)
	if err != nil || !resp.Success {
		t.Fatalf("deposit through the official facilitator: %+v, %v", resp, err)
	}
	p.depositGas = e.chain.WaitReceipt(t, common.HexToHash(resp.Transaction)).GasUsed
	p.last = dep
	return p
}

// serve charges calls requests of the channel as a server does: before
// each, the payer signs a voucher whose ceiling is the charged total plus
// the offer's maximum; the server charges a dynamic price at most that.
// It returns the server's record after the last one.
func (e *env) serve(t testing.TB, p *payer, calls int, at time.Time) batch.ChannelRecord {
	t.Helper()
	for i := 0; i < calls; i++ {
		ceiling := new(big.Int).Add(p.charged, big.NewInt(price))
		v, err := batch.NewVoucherPayload(p.key, e.domain, p.ch, ceiling)
		if err != nil {
			t.Fatal(err)
		}
		p.last = v
		p.charged.Add(p.charged, big.NewInt(int64(price-100*(i%3))))
	}
	return e.record(t, p, at)
}

// record is the server's record of p's channel.
func (e *env) record(t testing.TB, p *payer, at time.Time) batch.ChannelRecord {
	t.Helper()
	max, _ := new(big.Int).SetString(p.last.Voucher.MaxClaimableAmount, 10)
	return batch.ChannelRecord{Network: x402.NetworkBase, ID: p.id, Channel: p.ch, Charged: new(big.Int).Set(p.charged), SignedMax: max,
		Signature: hexutil.MustDecode(p.last.Voucher.Signature), OnChain: anviltest.EscrowChannel(t, e.chain.Client, p.id), SyncedAt: at.Add(-time.Hour), LastRequestAt: at}
}

// clock is a settable clock.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// newClaimer returns a claimer of the env's network on chans and log.
func (e *env) newClaimer(t testing.TB, chans claimer.Channels, log claimer.Log, pol claimer.Policy, clk *clock, reg prometheus.Registerer) *claimer.Claimer {
	t.Helper()
	cfg := claimer.Config{Network: x402.NetworkBase, Channels: chans, Log: log, Facilitator: e.fac, Chain: e.chain.Client,
		AuthorizerKey: e.authKey, Policy: pol, Registerer: reg, Owner: "instance-1"}
	if clk != nil {
		cfg.Now = clk.Now
	}
	c, err := claimer.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// sum adds amounts.
func sum(vs ...*big.Int) *big.Int {
	out := new(big.Int)
	for _, v := range vs {
		out.Add(out, v)
	}
	return out
}

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/big"
	"net/http"
	"os/exec"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"

	"github.com/seed1284c1d2/svc/internal/anviltest"
	"github.com/seed1284c1d2/svc/x402"
)

// chainBenchConcurrency is the number of settlements in flight.
const chainBenchConcurrency = 16

// BenchmarkChainFacilitators measures settlements per second over the x402
// facilitator HTTP API (POST /settle), 16 at a time, from authorizations
// signed beforehand, on one anvil (automine): `svc facilitator` next to
// the official TypeScript facilitator (@x402/core + @x402/evm, viem
// wallet) as configured by default and tuned (viem's nonce manager, 20 ms
// receipt polling), each with a relayer of its own. It reports the rate, the
// failed settlements, and checks each relayer's nonces: every transaction
// it sent is mined (latest nonce = pending nonce = transactions sent).
//
//	go test -run XXX -bench ChainFacilitators -benchtime 400x ./cmd/svc
func BenchmarkChainFacilitators(b *testing.B) {
	if testing.Short() {
		b.Skip("runs anvil, svc and node processes")
	}
	bin := filepath.Join(b.TempDir(), "svc")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		b.Fatalf("go build: %v\n%s", err, out)
	}
	w := startChainWorld(b, bin, anviltest.Options{})
	const token = "chain-bench-token-0123456789"
	svcKey, svcRelayer := anviltest.NewKey(b)
	tsKey, tsRelayer := anviltest.NewKey(b)
	w.chain.SetBalance(b, svcRelayer, anviltest.Ether(100))
	w.chain.SetBalance(b, tsRelayer, anviltest.Ether(100))
	svcFac := w.svc(b, "svc facilitator", []string{"CHAIN_TEST_RELAYER_KEY=" + keyHex(svcKey), "CHAIN_TEST_TOKEN=" + token},
		"facilitator", "--addr", "127.0.0.1:0", "--rpc-url", w.chain.URL, "--relayer-key-env", "CHAIN_TEST_RELAYER_KEY", "--token-env", "CHAIN_TEST_TOKEN", "--log-level", "warn")
	tsFac := w.nodeApp(b, "ts facilitator", "ts-facilitator.mjs", "RPC_URL="+w.chain.URL, "RELAYER_KEY="+keyHex(tsKey))
	tunedKey, tunedRelayer := anviltest.NewKey(b)
	w.chain.SetBalance(b, tunedRelayer, anviltest.Ether(100))
	tunedFac := w.nodeApp(b, "ts facilitator (tuned)", "ts-facilitator.mjs", "RPC_URL="+w.chain.URL, "RELAYER_KEY="+keyHex(tunedKey), "TUNED=1")
	for _, f := range []struct {
		name, url string
		relayer   common.Address
	}{{"svc", svcFac.base, svcRelayer}, {"official-ts", tsFac.base, tsRelayer}, {"official-ts-tuned", tunedFac.base, tunedRelayer}} {
		b.Run(f.name, func(b *testing.B) {
			payerKey, payer := anviltest.NewKey(b)
			w.chain.Mint(b, payer, big.NewInt(int64(b.N)*10_000+1))
			bodies := make([][]byte, b.N)
			for i := range bodies {
				bodies[i] = []byte(chainSettleBody(b, payerKey))
			}
			relayer := f.relayer
			ctx := context.Background()
			n0, err := w.chain.Client.NonceAt(ctx, relayer, nil)
			if err != nil {
				b.Fatal(err)
			}
			tr := &http.Transport{MaxIdleConnsPerHost: chainBenchConcurrency}
			defer tr.CloseIdleConnections()
			c := &http.Client{Transport: tr, Timeout: 5 * time.Minute}
			var next, failed atomic.Int64
			var firstFailure atomic.Pointer[string]
			var wg sync.WaitGroup
			b.ResetTimer()
			start := time.Now()
			for range chainBenchConcurrency {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for {
						i := int(next.Add(1) - 1)
						if i >= b.N {
							return
						}
						if why := chainBenchSettle(c, f.url, token, bodies[i]); why != "" {
							if failed.Add(1) == 1 {
								firstFailure.Store(&why)
							}
						}
					}
				}()
			}
			wg.Wait()
			elapsed := time.Since(start)
			b.StopTimer()
			b.ReportMetric(float64(int64(b.N)-failed.Load())/elapsed.Seconds(), "settlements/s")
			b.ReportMetric(float64(failed.Load()), "failed")
			if p := firstFailure.Load(); p != nil {
				b.Logf("%s: %d of %d settlements failed; the first: %s", f.name, failed.Load(), b.N, *p)
			}
			latest, _ := w.chain.Client.NonceAt(ctx, relayer, nil)
			pending, _ := w.chain.Client.PendingNonceAt(ctx, relayer)
			b.ReportMetric(float64(latest-n0), "txs")
			if pending != latest {
				b.Errorf("%s: %d transactions stuck (pending nonce %d, latest %d)", f.name, pending-latest, pending, latest)
			}
			if f.name == "svc" && failed.Load() > 0 {
				b.Errorf("svc: %d settlements failed", failed.Load())
			}
		})
	}
}

// chainBenchSettle posts one /settle and returns "" when it succeeded,
// else why not.
func chainBenchSettle(c *http.Client, base, token string, body []byte) string {
	req, err := http.NewRequest(http.MethodPost, base+"/settle", bytes.NewReader(body))
	if err != nil {
		return err.Error()
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := c.Do(req)
	if err != nil {
		return err.Error()
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return err.Error()
	}
	var sr x402.SettleResponse
	if json.Unmarshal(raw, &sr) == nil && resp.StatusCode == http.StatusOK && sr.Success {
		return ""
	}
	return fmt.Sprintf("HTTP %d: %.300s", resp.StatusCode, raw)
}

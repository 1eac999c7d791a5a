package main

import (
	"bytes"
	"net/http"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/seed1284c1d2/svc/internal/anviltest"
	"github.com/seed1284c1d2/svc/x402"
	batchclient "github.com/seed1284c1d2/svc/x402/batch/client"
	"github.com/seed1284c1d2/svc/x402/client"
)

// BenchmarkChainPaidCallLatency measures the latency of one paid call,
// one at a time, to `svc serve --settle onchain --schemes
// exact,batch-settlement` on anvil mining a block every second: an exact
// call waits for its transfer's block; a voucher call (after the channel's
// deposit, made before the timer starts) touches no chain. It reports the
// p50 and p99 of each, in milliseconds.
//
//	go test -run XXX -bench ChainPaidCallLatency -benchtime 30x ./cmd/svc
func BenchmarkChainPaidCallLatency(b *testing.B) {
	if testing.Short() {
		b.Skip("runs anvil and svc processes")
	}
	bin := filepath.Join(b.TempDir(), "svc")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		b.Fatalf("go build: %v\n%s", err, out)
	}
	w := startChainWorld(b, bin, anviltest.Options{BlockTime: 1})
	authKey, _ := anviltest.NewKey(b)
	srv := w.svc(b, "svc serve", []string{"CHAIN_TEST_RELAYER_KEY=" + keyHex(w.relayerKey), "BATCH_TEST_AUTH_KEY=" + keyHex(authKey)},
		"serve", "--addr", "127.0.0.1:0", "--db", filepath.Join(b.TempDir(), "svc.db"), "--unpaid-rate", "-1", "--log-level", "warn",
		"--settle", "onchain", "--rpc-url", w.chain.URL, "--relayer-key-env", "CHAIN_TEST_RELAYER_KEY", "--pay-to", chainPayTo.Hex(),
		"--schemes", "exact,batch-settlement", "--receiver-authorizer-key-env", "BATCH_TEST_AUTH_KEY", "--payer-burst", "100000")
	tl := batchTools(b, 1)[0]
	url := srv.base + tl.Path
	signer, err := client.NewSigner(w.payerKey)
	if err != nil {
		b.Fatal(err)
	}
	exactClient := client.New(signer, client.WithMaxAmount("$0.1"))
	bs, err := batchclient.New(batchclient.Config{Key: w.payerKey, Dir: b.TempDir()})
	if err != nil {
		b.Fatal(err)
	}
	voucherClient := client.New(signer, client.WithMaxAmount("$0.1"), client.WithSchemes(bs))
	call := func(b *testing.B, c *http.Client, scheme string) time.Duration {
		start := time.Now()
		resp, err := c.Post(url, "application/json", bytes.NewReader(tl.ExampleInput))
		if err != nil {
			b.Fatal(err)
		}
		d := time.Since(start)
		pr, err := client.PaymentResponse(resp)
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK || err != nil || pr == nil || !pr.Success {
			b.Fatalf("%s call: %d %v %+v", scheme, resp.StatusCode, err, pr)
		}
		return d
	}
	for _, s := range []struct {
		name   string
		c      *http.Client
		scheme string
	}{{"exact", exactClient, x402.SchemeExact}, {"voucher", voucherClient, "batch-settlement"}} {
		b.Run(s.name, func(b *testing.B) {
			call(b, s.c, s.scheme) // the voucher client's deposit; a first exact transfer
			lat := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for range b.N {
				lat = append(lat, call(b, s.c, s.scheme))
			}
			b.StopTimer()
			slices.Sort(lat)
			q := func(p float64) float64 { return float64(lat[int(p*float64(len(lat)-1))].Microseconds()) / 1000 }
			b.ReportMetric(q(0.5), "p50-ms")
			b.ReportMetric(q(0.99), "p99-ms")
		})
	}
}

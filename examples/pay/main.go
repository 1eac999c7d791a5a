// Command pay pays for one call with the Go x402 client (package
// x402/client): the client sends the request, answers the 402 by signing
// an EIP-3009 authorization for the price (never above -max), and replays
// the request with the payment. The payer's private key comes from an
// environment variable, never from the command line.
//
//	export PAYER_KEY=0x…   # any key against a dev-mode server: nothing settles
//	go run ./examples/pay -url http://127.0.0.1:8080/api/risk-levels \
//	    -body '{"entry":3500,"direction":"long","slPct":0.05,"tpPct":0.04}'
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/seed1284c1d2/svc/x402/client"
)

func main() {
	target := flag.String("url", "http://127.0.0.1:8080/api/session-state", "URL of the paid resource")
	body := flag.String("body", "", "JSON body: the request is a POST when set, a GET otherwise")
	keyEnv := flag.String("key-env", "PAYER_KEY", "name of the environment variable holding the payer's private key")
	maxUSD := flag.String("max", "0.10", "never pay more than this many USD for the call")
	flag.Parse()
	if err := run(context.Background(), *target, *body, *keyEnv, *maxUSD); err != nil {
		fmt.Fprintln(os.Stderr, "pay:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, target, body, keyEnv, maxUSD string) error {
	signer, err := client.ParseSigner(os.Getenv(keyEnv))
	if err != nil {
		return fmt.Errorf("the key in $%s: %w", keyEnv, err)
	}
	// An *http.Client whose transport pays: use it like any other.
	hc := client.New(signer, client.WithMaxAmount("$"+maxUSD))
	hc.Timeout = time.Minute

	method, rd := http.MethodGet, io.Reader(nil)
	if body != "" {
		method, rd = http.MethodPost, strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, target, rd)
	if err != nil {
		return err
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	fmt.Printf("status: %d\nanswer: %s\n", resp.StatusCode, strings.TrimSpace(string(answer)))
	// The settlement: the transaction, the network and who paid.
	if sr, err := client.PaymentResponse(resp); err == nil {
		fmt.Printf("paid by %s on %s, transaction %s\n", sr.Payer, sr.Network, sr.Transaction)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("the server answered %d", resp.StatusCode)
	}
	return nil
}

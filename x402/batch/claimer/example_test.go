package claimer_test

import (
	"context"
	"fmt"
	"math/big"
	"time"

	"github.com/ethereum/go-ethereum/crypto"
	"github.com/ethereum/go-ethereum/ethclient"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/seed1284c1d2/svc/x402"
	"github.com/seed1284c1d2/svc/x402/batch/claimer"
	"github.com/seed1284c1d2/svc/x402/facilitator"
)

// A claimer of Base: it claims once 5 USDC are unclaimed, or a channel has
// been idle for six hours, or at once when a payer starts a withdrawal;
// it sweeps after each claim. A server passes its channel store and the
// store's claim log (store.Store.BatchClaims) instead of the memory ones.
func Example() {
	ec, err := ethclient.Dial("http://127.0.0.1:8545")
	if err != nil {
		fmt.Println(err)
		return
	}
	fac, err := facilitator.NewHTTP(facilitator.HTTPConfig{URL: "http://127.0.0.1:4022"})
	if err != nil {
		fmt.Println(err)
		return
	}
	key, _ := crypto.GenerateKey() // the receiver authorizer's key
	c, err := claimer.New(claimer.Config{
		Network: x402.NetworkBase, Channels: claimer.NewMemoryChannels(), Log: claimer.NewMemoryLog(),
		Facilitator: fac, Chain: ec, AuthorizerKey: key, Registerer: prometheus.NewRegistry(),
		Policy: claimer.Policy{Threshold: big.NewInt(5_000_000), IdleAfter: 6 * time.Hour},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = c.Run(ctx) }()
}

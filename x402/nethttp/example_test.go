package nethttp_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"

	"github.com/seed1284c1d2/svc/x402"
	"github.com/seed1284c1d2/svc/x402/client"
	"github.com/seed1284c1d2/svc/x402/engine"
	"github.com/seed1284c1d2/svc/x402/exact"
	exactserver "github.com/seed1284c1d2/svc/x402/exact/server"
	"github.com/seed1284c1d2/svc/x402/facilitator"
	"github.com/seed1284c1d2/svc/x402/nethttp"
)

// The lower-level assembly that package paywall does in one call: a
// facilitator (here the local one of dev mode: it verifies for real and
// settles nothing on chain), the exact scheme settling through it, the
// engine with the scheme and its journal (here in memory:
// use package store for one that survives a crash) and recovery running,
// the offer of a route, and the middleware.
func Example() {
	const payTo = "0x209693Bc6afc0C5328bA36FaF03C514EF312287C"
	fac, _ := facilitator.NewLocal(facilitator.LocalConfig{PayTo: payTo, Verifier: exact.Verifier{}})
	scheme, err := exactserver.New(exactserver.Config{Facilitator: fac, SkipFacilitatorVerify: true, Deduplicates: true})
	if err != nil {
		panic(err)
	}
	eng, err := engine.New(engine.Config{Schemes: []x402.ServerScheme{scheme}})
	if err != nil {
		panic(err)
	}
	defer eng.Close()
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	go eng.Run(ctx) // recovery, for as long as the server serves

	offer, _ := eng.NewOffer("GET /joke", "joke", x402.Route{Price: "0.001", PayTo: payTo})
	mw, err := nethttp.New(nethttp.Config{
		Engine: eng,
		Offer: func(r *http.Request) (*engine.Offer, bool) {
			return offer, r.Method == http.MethodGet && r.URL.Path == "/joke"
		},
	})
	if err != nil {
		panic(err)
	}
	srv := httptest.NewServer(mw.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "a paid joke")
	})))
	defer srv.Close()

	payer, _ := client.ParseSigner("ac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80")
	resp, err := client.New(payer).Get(srv.URL + "/joke")
	if err != nil {
		panic(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	fmt.Println(resp.StatusCode, string(body))
	// Output: 200 a paid joke
}

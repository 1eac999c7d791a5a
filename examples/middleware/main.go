// Command middleware charges for its own handlers with the x402 middleware
// (package x402/nethttp) on a plain http.ServeMux: GET /hello is free, GET
// /fortune costs $0.001 in USDC on Base. It runs in dev mode: the local
// facilitator verifies payment signatures for real but settles nothing on
// chain, and the journal is in memory.
//
//	go run ./examples/middleware -addr 127.0.0.1:8091
//	curl -i http://127.0.0.1:8091/fortune     # 402 with PAYMENT-REQUIRED
//
// For production, use facilitator.NewHTTP and a durable journal (package
// store).
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/seed1284c1d2/svc/x402"
	"github.com/seed1284c1d2/svc/x402/engine"
	"github.com/seed1284c1d2/svc/x402/exact"
	"github.com/seed1284c1d2/svc/x402/facilitator"
	"github.com/seed1284c1d2/svc/x402/nethttp"
)

// payTo receives the payments (any valid address in dev mode).
const payTo = "0x209693Bc6afc0C5328bA36FaF03C514EF312287C"

func main() {
	addr := flag.String("addr", "127.0.0.1:8091", "listen address")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *addr); err != nil {
		fmt.Fprintln(os.Stderr, "middleware:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, addr string) error {
	fac, err := facilitator.NewLocal(facilitator.LocalConfig{PayTo: payTo, Verifier: exact.Verifier{}})
	if err != nil {
		return err
	}
	// The engine verifies, journals, runs the handler and settles; nil
	// Journal means in memory.
	eng, err := engine.New(engine.Config{Facilitator: fac, SkipFacilitatorVerify: true, Deduplicates: true})
	if err != nil {
		return err
	}
	defer eng.Close()
	fortune, err := engine.NewOffer("GET /fortune", "fortune", x402.Route{
		Price:    "0.001",
		PayTo:    payTo,
		Resource: x402.ResourceInfo{Description: "a fortune", MimeType: "application/json"},
	})
	if err != nil {
		return err
	}
	pay, err := nethttp.New(nethttp.Config{
		Engine: eng,
		Offer: func(r *http.Request) (*engine.Offer, bool) {
			return fortune, r.URL.Path == "/fortune"
		},
	})
	if err != nil {
		return err
	}

	mux := http.NewServeMux()
	mux.HandleFunc("GET /hello", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, map[string]string{"hello": "free"})
	})
	mux.HandleFunc("GET /fortune", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, map[string]string{"fortune": "a paid answer arrives only after its payment settles"})
	})

	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: pay.Wrap(mux), ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	fmt.Printf("listening on http://%s: GET /hello is free, GET /fortune costs $0.001 (dev mode)\n", ln.Addr())
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		return err
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

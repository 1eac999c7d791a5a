// Command middleware charges for its own handlers with x402 in one call
// (package paywall) on a plain http.ServeMux: GET /hello is free, GET
// /fortune costs $0.001 in USDC on Base. It runs in dev mode: a local
// facilitator verifies payment signatures for real but settles nothing on
// chain. The payment journal is a SQLite file (-journal), so that a retry
// of a paid call after a restart gets its recorded answer.
//
//	go run ./examples/middleware -addr 127.0.0.1:8091
//	curl -i http://127.0.0.1:8091/fortune     # 402 with PAYMENT-REQUIRED
//	svc pay --key-env PAYER_KEY http://127.0.0.1:8091/fortune
//
// For production, replace Dev with FacilitatorURL (or the on-chain
// facilitator of x402/facilitator/onchain) and give your own PayTo.
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

	"github.com/seed1284c1d2/svc/paywall"
)

// payTo receives the payments (any valid address in dev mode).
const payTo = "0x209693Bc6afc0C5328bA36FaF03C514EF312287C"

func main() {
	addr := flag.String("addr", "127.0.0.1:8091", "listen address")
	journal := flag.String("journal", paywall.DefaultJournal, "payment journal (SQLite file)")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *addr, *journal); err != nil {
		fmt.Fprintln(os.Stderr, "middleware:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, addr, journal string) error {
	pay, err := paywall.New(ctx, paywall.Config{
		Routes: paywall.Routes{
			"GET /fortune": {Price: "$0.001", Description: "a fortune"},
		},
		PayTo:   payTo,
		Dev:     true,
		Journal: journal,
	})
	if err != nil {
		return err
	}
	defer pay.Close()

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

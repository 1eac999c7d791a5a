// Command embed runs svc's reference server (package httpserver) inside
// your own program: the thirteen paid tools over HTTP with x402, /health
// and /metrics, in dev mode — the local facilitator verifies payment
// signatures for real but settles nothing on chain, and the gold tools
// read the simulated terminal.
//
//	go run ./examples/embed -addr 127.0.0.1:8090
//
// For production, replace facilitator.NewLocal by facilitator.NewHTTP with
// your facilitator's URL, and name your own payTo wallet.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/seed1284c1d2/svc/httpserver"
	"github.com/seed1284c1d2/svc/store"
	"github.com/seed1284c1d2/svc/tools"
	"github.com/seed1284c1d2/svc/x402/exact"
	"github.com/seed1284c1d2/svc/x402/facilitator"
	"github.com/seed1284c1d2/svc/xau"
)

// payTo receives the payments. In dev mode nothing moves, so any valid
// address will do; use your own wallet in production.
const payTo = "0x209693Bc6afc0C5328bA36FaF03C514EF312287C"

func main() {
	addr := flag.String("addr", "127.0.0.1:8090", "listen address (loopback: dev mode refuses anything else)")
	dir := flag.String("dir", "", "directory of the SQLite payment journal (default: a new temporary directory)")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, *addr, *dir); err != nil {
		fmt.Fprintln(os.Stderr, "embed:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, addr, dir string) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	base := "http://" + ln.Addr().String()

	if dir == "" {
		if dir, err = os.MkdirTemp("", "svc-embed-"); err != nil {
			return err
		}
		defer os.RemoveAll(dir)
	}
	// The payment journal: every step of a payment is stored before it
	// happens.
	st, err := store.Open(ctx, filepath.Join(dir, "svc.db"))
	if err != nil {
		return err
	}
	defer st.Close()

	catalog, err := tools.New(tools.Options{BaseURL: base})
	if err != nil {
		return err
	}
	fac, err := facilitator.NewLocal(facilitator.LocalConfig{PayTo: payTo, Verifier: exact.Verifier{}})
	if err != nil {
		return err
	}
	terminal, err := xau.NewSimulated(xau.SimConfig{})
	if err != nil {
		return err
	}
	srv, err := httpserver.New(httpserver.Config{
		Catalog:       catalog,
		Terminal:      terminal,
		Facilitator:   fac,
		Store:         st,
		PayTo:         payTo,
		PublicBaseURL: base,
		DevMode:       true,
		Addr:          ln.Addr().String(),
	})
	if err != nil {
		return err
	}

	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	fmt.Printf("listening on %s (dev mode: nothing settles on chain); try: curl -i %s/api/session-state\n", base, base)
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		return err
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

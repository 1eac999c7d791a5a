package onchain

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/seed1284c1d2/svc/x402"
	"github.com/seed1284c1d2/svc/x402/facilitator"
)

// ServerOptions configure Handler.
type ServerOptions struct {
	// Auth wraps the facilitator API (/verify, /settle, /supported): it
	// passes on the requests of the clients allowed to spend the
	// relayer's gas and answers the others. Required.
	Auth func(http.Handler) http.Handler
	// Mask, when set, rewrites every error answered to a client (the RPC
	// client's errors repeat the endpoint's URL, API key included); it
	// must keep the error's kind (errors.Is/As see through it).
	Mask func(error) error
	// Serve, when set, is the facilitator answering /verify, /settle and
	// /supported instead of f alone: a facilitator.Mux of f and the
	// schemes sharing its relayer (Facilitator.Batch). /ready and /metrics
	// still report f's relayer.
	Serve x402.Facilitator
}

// Handler serves f as an x402 facilitator: /verify, /settle and
// /supported behind opts.Auth; /health (alive), /ready (503 when the
// relayer cannot pay for gas or the chain does not answer) and /metrics
// (relayer balance and pending transactions, Prometheus text) without it.
func (f *Facilitator) Handler(opts ServerOptions) http.Handler {
	mask := opts.Mask
	if mask == nil {
		mask = func(err error) error { return err }
	}
	var served x402.Facilitator = f
	if opts.Serve != nil {
		served = opts.Serve
	}
	authed := opts.Auth(facilitator.Handler(maskedFacilitator{Facilitator: served, mask: mask}))
	mux := http.NewServeMux()
	mux.Handle("POST /verify", authed)
	mux.Handle("POST /settle", authed)
	mux.Handle("GET /supported", authed)
	mux.HandleFunc("GET /health", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{"ok": true})
	})
	mux.HandleFunc("GET /ready", func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
		defer cancel()
		if err := f.Ready(ctx); err != nil {
			w.Header().Set("Retry-After", "30")
			writeJSON(w, http.StatusServiceUnavailable, map[string]any{"ready": false, "error": mask(err).Error()})
			return
		}
		writeJSON(w, http.StatusOK, map[string]any{"ready": true})
	})
	mux.HandleFunc("GET /metrics", func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
		defer cancel()
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		fmt.Fprintf(w, "# HELP svc_relayer_pending_transactions Settlement transactions sent and not yet mined.\n# TYPE svc_relayer_pending_transactions gauge\nsvc_relayer_pending_transactions %d\n", f.Pending())
		if b, err := f.RelayerBalance(ctx); err == nil {
			fmt.Fprintf(w, "# HELP svc_relayer_balance_wei Native balance of the relayer (pays the gas).\n# TYPE svc_relayer_balance_wei gauge\nsvc_relayer_balance_wei %s\n", b)
		}
	})
	return mux
}

// maskedFacilitator is the facilitator whose errors, answered to the
// API's clients, pass through mask.
type maskedFacilitator struct {
	x402.Facilitator
	mask func(error) error
}

// Verify implements x402.Facilitator.
func (f maskedFacilitator) Verify(ctx context.Context, payload x402.PaymentPayload, req x402.PaymentRequirements) (x402.VerifyResponse, error) {
	r, err := f.Facilitator.Verify(ctx, payload, req)
	return r, f.masked(err)
}

// Settle implements x402.Facilitator.
func (f maskedFacilitator) Settle(ctx context.Context, payload x402.PaymentPayload, req x402.PaymentRequirements) (x402.SettleResponse, error) {
	r, err := f.Facilitator.Settle(ctx, payload, req)
	return r, f.masked(err)
}

// Supported implements x402.Facilitator.
func (f maskedFacilitator) Supported(ctx context.Context) (x402.SupportedResponse, error) {
	r, err := f.Facilitator.Supported(ctx)
	return r, f.masked(err)
}

func (f maskedFacilitator) masked(err error) error {
	if err == nil {
		return nil
	}
	return f.mask(err)
}

// writeJSON writes v as a JSON answer that is not cached.
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

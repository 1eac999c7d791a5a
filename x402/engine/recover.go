package engine

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/seed1284c1d2/svc/x402"
	"github.com/seed1284c1d2/svc/x402/internal/clip"
)

// Run keeps this instance alive in the journal and runs recovery: once at
// once, then every RecoverEvery (and when Kick asks), until ctx ends; then
// it leaves the journal (a clean stop: its rows are taken over at once by
// the next recovery anywhere). It returns ctx's error. Only one Run per
// engine may be active.
func (e *Engine) Run(ctx context.Context) error {
	e.mu.Lock()
	if e.running {
		e.mu.Unlock()
		return errors.New("engine: Run is already active")
	}
	e.running = true
	e.mu.Unlock()
	defer func() {
		e.mu.Lock()
		e.running = false
		e.mu.Unlock()
	}()
	// Heartbeats run on their own: a recovery round waiting on a slow
	// facilitator must not make this instance look dead to the others.
	e.heartbeat(ctx)
	beats := make(chan struct{})
	go func() {
		defer close(beats)
		t := time.NewTicker(e.cfg.Heartbeat)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				e.heartbeat(ctx)
			}
		}
	}()
	e.recoverLogged(ctx)
	rec := time.NewTicker(e.cfg.RecoverEvery)
	defer rec.Stop()
	for {
		select {
		case <-ctx.Done():
			<-beats
			lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			if err := e.journal.Leave(lctx, e.instance); err != nil {
				e.log.Warn("x402: leaving the payment journal failed", "error", err)
			}
			cancel()
			return ctx.Err()
		case <-rec.C:
			e.recoverLogged(ctx)
		case <-e.kick:
			e.recoverLogged(ctx)
		}
	}
}

// Kick asks Run for a recovery round soon (coalesced; a no-op without Run).
//
// Kicks are taken at most once a second: retries of a payment in
// progress cannot keep recovery running back to back.
func (e *Engine) Kick() {
	now := time.Now().UnixNano()
	last := e.lastKick.Load()
	if now-last < int64(time.Second) || !e.lastKick.CompareAndSwap(last, now) {
		return
	}
	select {
	case e.kick <- struct{}{}:
	default:
	}
}

func (e *Engine) heartbeat(ctx context.Context) {
	hctx, cancel := context.WithTimeout(ctx, e.cfg.Heartbeat*2)
	defer cancel()
	if err := e.journal.Heartbeat(hctx, e.instance, e.cfg.Now()); err != nil && ctx.Err() == nil {
		e.log.Warn("x402: payment journal heartbeat failed", "error", err)
	}
}

func (e *Engine) recoverLogged(ctx context.Context) {
	rep, err := e.Recover(ctx)
	if err != nil && ctx.Err() == nil {
		e.log.Warn("x402: payment recovery failed; it runs again", "error", err)
	}
	if rep.Released+rep.Settled+rep.Unknown+rep.Failed > 0 {
		e.log.Info("x402: payment recovery", "released", rep.Released, "settled", rep.Settled,
			"unknown", rep.Unknown, "failed", rep.Failed, "unresolved", rep.Unresolved)
	}
}

// RecoveryReport says what one recovery round did.
type RecoveryReport struct {
	Released   int // abandoned reservations and never-settled rows freed
	Settled    int // settling rows confirmed and recorded
	Failed     int // settling rows refused for good
	Unknown    int // settling rows that could not be told: for the operator
	Unresolved int // settling rows left for a later round (facilitator down)
}

// Recover runs one recovery round (see the package documentation): it is
// idempotent and safe on several instances at once. Run calls it; tests
// and operators may too.
func (e *Engine) Recover(ctx context.Context) (RecoveryReport, error) {
	var rep RecoveryReport
	for {
		now := e.cfg.Now()
		claimed, released, err := e.journal.Recover(ctx, e.instance, now, now.Add(-e.cfg.DeadAfter),
			now.Add(e.cfg.SettleTimeout+leaseMargin), recoverBatch)
		rep.Released += released
		if e.cfg.Observe != nil {
			for range released { // abandoned reservations: nothing was settled
				e.cfg.Observe(Event{Kind: Refused, Reason: "abandoned", Recovered: true})
			}
		}
		if err != nil {
			return rep, fmt.Errorf("engine: recover: %w", err)
		}
		// The batch is resolved at once, so that every row is resolved
		// within the lease it was claimed with.
		results := make([]State, len(claimed))
		var wg sync.WaitGroup
		for i, rec := range claimed {
			wg.Go(func() { results[i] = e.resolve(ctx, rec) })
		}
		wg.Wait()
		for _, st := range results {
			switch st {
			case StateSettled:
				rep.Settled++
			case StateReleased:
				rep.Released++
			case StateFailed:
				rep.Failed++
			case StateUnknown:
				rep.Unknown++
			default:
				rep.Unresolved++
			}
		}
		if len(claimed) < recoverBatch || ctx.Err() != nil {
			return rep, ctx.Err()
		}
	}
}

// resolve settles the fate of one claimed settling row and returns its new
// state (StateSettling: left for a later round).
func (e *Engine) resolve(ctx context.Context, rec Record) State {
	log := e.log.With("key", clip.Bytes(rec.Key, 200), "resource", rec.Resource, "request_id", rec.RequestID,
		"payer", clip.Bytes(rec.Payer, 42), "nonce", clip.Bytes(rec.Nonce, 66), "amount", rec.Amount, "recovery", true)
	var payload x402.PaymentPayload
	var req x402.PaymentRequirements
	if err := errors.Join(json.Unmarshal(rec.Payload, &payload), json.Unmarshal(rec.Requirements, &req)); err != nil {
		return e.markUnknown(ctx, log, rec, "the journaled payment cannot be read: "+clip.Bytes(err.Error(), 100))
	}
	scheme := e.scheme(req)
	if scheme == nil {
		return e.markUnknown(ctx, log, rec, "no payment scheme is registered for "+clip.Bytes(req.Scheme, 40)+" on "+clip.Bytes(req.Network, 40))
	}
	sctx, cancel := context.WithTimeout(ctx, e.cfg.SettleTimeout)
	defer cancel()
	st := scheme.Resolve(sctx, payload, req, rec.Payer)
	switch st.Status {
	case x402.Settled:
		sr := st.Response
		sr.Success = true
		if !st.Verbatim {
			e.completeSettlement(&sr, req, rec.Payer)
		}
		return e.recoverSettled(ctx, log, rec, sr)
	case x402.Released:
		return e.recoverRelease(ctx, log, rec, st.Reason)
	case x402.Unknown:
		return e.markUnknown(ctx, log, rec, st.Reason)
	}
	log.Warn("x402: recovery: the settlement is undecided; retrying later", "reason", clip.Bytes(st.Reason, 200))
	return StateSettling
}

func (e *Engine) recoverSettled(ctx context.Context, log *slog.Logger, rec Record, sr x402.SettleResponse) State {
	if err := e.journal.Settle(ctx, rec.Key, sr, e.cfg.Now()); err != nil {
		log.Error("x402: recovery: recording a settlement failed; retrying later", "transaction", clip.Bytes(sr.Transaction, 100), "error", err)
		return StateSettling
	}
	log.Info("x402: recovery: settlement recorded", "transaction", clip.Bytes(sr.Transaction, 100))
	e.observeRecovered(rec, Paid, "", cmp.Or(sr.Amount, rec.Amount))
	return StateSettled
}

func (e *Engine) recoverRelease(ctx context.Context, log *slog.Logger, rec Record, reason string) State {
	if err := e.journal.Release(ctx, rec.Key, e.instance, reason, false); err != nil {
		log.Error("x402: recovery: releasing failed; retrying later", "error", err)
		return StateSettling
	}
	log.Info("x402: recovery: released (nothing was settled)", "reason", reason)
	e.observeRecovered(rec, Refused, reason, "")
	return StateReleased
}

func (e *Engine) markUnknown(ctx context.Context, log *slog.Logger, rec Record, reason string) State {
	if err := e.journal.MarkUnknown(ctx, rec.Key, e.instance, reason); err != nil {
		log.Error("x402: recovery: marking unknown failed; retrying later", "error", err)
		return StateSettling
	}
	log.Error("x402: recovery: payment state unknown; reconcile it", "reason", reason)
	e.observeRecovered(rec, Unavailable, reason, "")
	return StateUnknown
}

func (e *Engine) observeRecovered(rec Record, kind OutcomeKind, reason, amount string) {
	if e.cfg.Observe == nil {
		return
	}
	ev := Event{Kind: kind, Resource: rec.Resource, Product: rec.Product, Transport: rec.Transport,
		Reason: reason, Network: rec.Network, Asset: rec.Asset, Amount: amount, Recovered: true}
	var req struct {
		Scheme string `json:"scheme"`
	}
	if json.Unmarshal(rec.Requirements, &req) == nil {
		ev.Scheme = req.Scheme
	}
	e.cfg.Observe(ev)
}

package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/seed1284c1d2/svc/x402"
	"github.com/seed1284c1d2/svc/x402/exact"
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
	sctx, cancel := context.WithTimeout(ctx, e.cfg.SettleTimeout)
	defer cancel()
	sc := e.StatusChecker()
	if sc != nil {
		if st, decided := e.byStatus(sctx, log, sc, rec, payload, req); decided {
			return st
		}
		// Unused and still valid: present the settlement again.
	}
	sr, err := e.cfg.Facilitator.Settle(sctx, payload, req)
	switch {
	case err != nil:
		log.Warn("x402: recovery: settling again failed; retrying later", "error", err)
		return StateSettling
	case sr.Success:
		e.completeSettlement(&sr, req, rec.Payer)
		return e.recoverSettled(ctx, log, rec, sr)
	case sr.Transaction != "" || sr.ErrorReason == ReasonSettlementPending:
		log.Warn("x402: recovery: settlement still pending; retrying later", "reason", clip.Bytes(sr.ErrorReason, 80))
		return StateSettling
	case e.cfg.Deduplicates && sr.ErrorReason != exact.ReasonNonceAlreadyUsed:
		// A deduplicating facilitator would have returned the original
		// success: nothing was settled.
		return e.recoverRelease(ctx, log, rec, "settling again refused: "+clip.Bytes(sr.ErrorReason, 100))
	case sc != nil:
		// A facilitator that does not deduplicate refuses our own
		// settlement too ("already used", a reverted second transfer):
		// the status query tells whose it was, now that it was refused.
		if st, decided := e.byStatus(sctx, log, sc, rec, payload, req); decided {
			return st
		}
		log.Warn("x402: recovery: settling again was refused and the authorization is unused and valid; retrying later",
			"reason", clip.Bytes(sr.ErrorReason, 80))
		return StateSettling
	case sr.ErrorReason == exact.ReasonNonceAlreadyUsed:
		// A facilitator that does not deduplicate says this of our own
		// settlement too: not proof either way.
		return e.markUnknown(ctx, log, rec, "settling again: "+sr.ErrorReason)
	default:
		// Another facilitator may refuse a settlement it made (the funds
		// moved already): not proof either way.
		return e.markUnknown(ctx, log, rec, "settling again refused: "+clip.Bytes(sr.ErrorReason, 100))
	}
}

// byStatus resolves rec from the status query sc: settled when the
// authorization was used by a transfer of the amount to payTo, unknown
// when it was used otherwise, released when it is unused and expired (it
// can never be used). A failed query leaves the row for a later round.
// decided is false when the authorization is unused and still valid.
func (e *Engine) byStatus(ctx context.Context, log *slog.Logger, sc x402.StatusChecker, rec Record, payload x402.PaymentPayload, req x402.PaymentRequirements) (st State, decided bool) {
	as, err := sc.Status(ctx, payload, req)
	switch {
	case err != nil:
		log.Warn("x402: recovery: the status query failed; retrying later", "error", err)
		return StateSettling, true
	case as.Used && as.Transaction != "" && e.paysUs(as, rec):
		sr := x402.SettleResponse{Success: true, Transaction: as.Transaction, Network: rec.Network, Payer: rec.Payer, Amount: rec.Amount}
		return e.recoverSettled(ctx, log, rec, sr), true
	case as.Used:
		return e.markUnknown(ctx, log, rec, "the authorization was used, but not by a transfer of the amount to payTo"), true
	case as.Expired:
		return e.recoverRelease(ctx, log, rec, "never settled, and expired"), true
	}
	return StateSettling, false
}

// StatusChecker returns the status query recovery asks what became of an
// interrupted settlement: Config.Status, else the facilitator when it
// implements x402.StatusChecker, else nil (recovery then presents the
// settlement again and relies on the facilitator deduplicating).
func (e *Engine) StatusChecker() x402.StatusChecker {
	if e.cfg.Status != nil {
		return e.cfg.Status
	}
	sc, _ := e.cfg.Facilitator.(x402.StatusChecker)
	return sc
}

// paysUs reports whether a status's transfer is the payment rec expects.
func (e *Engine) paysUs(st x402.AuthorizationStatus, rec Record) bool {
	if st.PayTo != "" && !strings.EqualFold(st.PayTo, rec.PayTo) {
		return false
	}
	if st.Amount != "" && !sameAmount(st.Amount, rec.Amount) {
		return false
	}
	return st.PayTo != "" && st.Amount != ""
}

func (e *Engine) recoverSettled(ctx context.Context, log *slog.Logger, rec Record, sr x402.SettleResponse) State {
	if err := e.journal.Settle(ctx, rec.Key, sr, e.cfg.Now()); err != nil {
		log.Error("x402: recovery: recording a settlement failed; retrying later", "transaction", clip.Bytes(sr.Transaction, 100), "error", err)
		return StateSettling
	}
	log.Info("x402: recovery: settlement recorded", "transaction", clip.Bytes(sr.Transaction, 100))
	e.observeRecovered(rec, Paid, "", sr.Amount)
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
	e.cfg.Observe(Event{Kind: kind, Resource: rec.Resource, Product: rec.Product, Transport: rec.Transport,
		Reason: reason, Network: rec.Network, Asset: rec.Asset, Amount: amount, Recovered: true})
}

// sameAmount compares two decimal amounts numerically (leading zeros aside).
func sameAmount(a, b string) bool {
	return strings.TrimLeft(a, "0") == strings.TrimLeft(b, "0")
}

package httpserver

import (
	"context"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/seed1284c1d2/svc/store"
)

// Retrying ledger appends. A payment that settled is the client's: its
// ledger record drives the club tiers and referral credit, so an append that
// fails (a database restart, a full disk, a lost connection) is not the end
// of it. The settlement waits in memory and is appended again, with growing
// pauses, until it is recorded or ledgerRetryFor has passed; Shutdown tries
// every waiting one once more. Appends are idempotent per authorization
// nonce, so a retry never records a payment twice. What is still not
// recorded in the end (or does not fit in the queue) is logged with
// everything needed to reconcile it by hand, as the first failure was.
//
// With a spool (Config.LedgerSpool, ledgerspool.go) the waiting
// settlements are on disk too: they are retried for as long as the
// process runs (no ledgerRetryFor limit), what Shutdown cannot record stays
// in the spool, and the next start queues it again.
const (
	// ledgerRetryFirst is the first pause before a retry; it doubles up to
	// ledgerRetryMax.
	ledgerRetryFirst = 250 * time.Millisecond
	ledgerRetryMax   = 30 * time.Second
	// ledgerRetryFor is how long a settlement is retried.
	ledgerRetryFor = 15 * time.Minute
	// ledgerRetryQueue bounds the settlements waiting for a retry.
	ledgerRetryQueue = 10000
	// ledgerAppendTimeout bounds one retried append.
	ledgerAppendTimeout = 5 * time.Second
)

// pendingSettlement is a settlement waiting for its ledger record.
type pendingSettlement struct {
	st        store.Settlement
	requestID string
	first     time.Time // first failure
	next      time.Time // next attempt
	pause     time.Duration
	attempts  int
}

// ledgerRetry holds and retries the settlements whose append failed. Its
// goroutine runs only while something waits.
type ledgerRetry struct {
	s *Server
	// now is the wall clock of the retry schedule (the server's Config.Now
	// may be a fixed test clock; pauses are real time).
	now func() time.Time

	// spool, when set, keeps the queue on disk; it is set before any use
	// and closed by drain. rewritten is when the loop last rewrote it.
	spool     *ledgerSpool
	rewritten time.Time

	mu     sync.Mutex
	queue  []*pendingSettlement
	done   chan struct{} // non-nil while the loop runs; closed when it ends
	closed bool
	wake   chan struct{} // a new entry or Shutdown: look again
}

func newLedgerRetry(s *Server) *ledgerRetry {
	return &ledgerRetry{s: s, now: time.Now, wake: make(chan struct{}, 1)}
}

// add queues st after its first append failed (once per authorization:
// a replay's failed append does not queue it twice).
func (l *ledgerRetry) add(st store.Settlement, requestID string) {
	now := l.now()
	l.mu.Lock()
	if l.queuedLocked(st) {
		l.mu.Unlock()
		return
	}
	if l.closed || len(l.queue) >= ledgerRetryQueue {
		l.mu.Unlock()
		l.s.metrics.ledgerLost.Add(1)
		l.s.log.Error("ledger: the settled payment is not retried (shutting down or too many waiting); reconcile it by hand",
			ledgerAttrs(st, requestID)...)
		return
	}
	p := &pendingSettlement{st: st, requestID: requestID, first: now, next: now.Add(ledgerRetryFirst), pause: ledgerRetryFirst}
	l.queue = append(l.queue, p)
	if l.spool != nil {
		if err := l.spool.add(spoolEntryOf(p)); err != nil {
			l.s.log.Error("ledger: the settled payment waits in memory only: the spool cannot be written",
				append(ledgerAttrs(st, requestID), "error", err)...)
		}
	}
	l.startLocked()
	l.mu.Unlock()
}

// recover queues the settlements found in the spool at start, for an
// attempt right away.
func (l *ledgerRetry) recover(entries []spoolEntry) {
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, e := range entries {
		st := e.settlement()
		if l.queuedLocked(st) {
			continue
		}
		first := e.FirstFailure
		if first.IsZero() {
			first = now
		}
		l.queue = append(l.queue, &pendingSettlement{st: st, requestID: e.RequestID, first: first, next: now, pause: ledgerRetryFirst})
	}
	if len(l.queue) > 0 {
		l.startLocked()
	}
}

// startLocked publishes the queue's length and makes sure the loop runs
// and looks at the queue again; l.mu is held.
func (l *ledgerRetry) startLocked() {
	l.s.metrics.ledgerPending.Store(int64(len(l.queue)))
	if l.done == nil {
		l.done = make(chan struct{})
		go l.loop(l.done)
	}
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// queuedLocked reports whether a settlement of the same payment
// authorization as st (the ledger's idempotency key) waits; l.mu is held.
func (l *ledgerRetry) queuedLocked(st store.Settlement) bool {
	return slices.ContainsFunc(l.queue, func(q *pendingSettlement) bool {
		return strings.EqualFold(q.st.Nonce, st.Nonce) && strings.EqualFold(q.st.Payer, st.Payer) &&
			q.st.Network == st.Network && strings.EqualFold(q.st.Asset, st.Asset)
	})
}

// rewriteSpoolLocked writes the queue to the spool; l.mu is held.
func (l *ledgerRetry) rewriteSpoolLocked() {
	if l.spool == nil {
		return
	}
	entries := make([]spoolEntry, 0, len(l.queue))
	for _, p := range l.queue {
		entries = append(entries, spoolEntryOf(p))
	}
	if err := l.spool.rewrite(entries); err != nil {
		l.s.log.Error("ledger: rewriting the spool failed; a recorded settlement may be appended again at the next start (harmless: appends are idempotent)",
			"error", err)
	}
}

// loop retries the queue until it is empty or closed, then closes done.
func (l *ledgerRetry) loop(done chan struct{}) {
	defer close(done)
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		l.mu.Lock()
		if l.closed || len(l.queue) == 0 {
			l.done = nil
			l.mu.Unlock()
			return
		}
		// The entry due first.
		due := 0
		for i, p := range l.queue {
			if p.next.Before(l.queue[due].next) {
				due = i
			}
		}
		p := l.queue[due]
		wait := p.next.Sub(l.now())
		l.mu.Unlock()

		if wait > 0 {
			timer.Reset(wait)
			select {
			case <-timer.C:
			case <-l.wake:
				// Since Go 1.23 a stopped timer delivers no stale value:
				// Stop alone is enough before the next Reset.
				timer.Stop()
				continue // a new entry may be due sooner, or Shutdown began
			}
		}
		ok := l.try(p)
		l.mu.Lock()
		if ok || (l.spool == nil && l.now().Sub(p.first) >= ledgerRetryFor) {
			for i, q := range l.queue {
				if q == p {
					l.queue = append(l.queue[:i], l.queue[i+1:]...)
					break
				}
			}
			// The spool drops recorded entries at most once a second (and
			// when the queue empties): a long queue draining after an
			// outage is not rewritten per entry. One recorded but still in
			// the file is appended again, harmlessly, after a crash.
			if len(l.queue) == 0 || l.now().Sub(l.rewritten) >= time.Second {
				l.rewriteSpoolLocked()
				l.rewritten = l.now()
			}
			if !ok {
				l.s.metrics.ledgerLost.Add(1)
				l.s.log.Error("ledger: giving up recording a settled payment; reconcile it by hand",
					append(ledgerAttrs(p.st, p.requestID), "attempts", p.attempts)...)
			}
		} else {
			p.pause = min(2*p.pause, ledgerRetryMax)
			p.next = l.now().Add(p.pause)
		}
		l.s.metrics.ledgerPending.Store(int64(len(l.queue)))
		l.mu.Unlock()
	}
}

// try appends p once and reports whether it is recorded.
func (l *ledgerRetry) try(p *pendingSettlement) bool {
	ctx, cancel := context.WithTimeout(context.Background(), ledgerAppendTimeout)
	defer cancel()
	p.attempts++
	if _, err := l.s.cfg.Store.Append(ctx, p.st); err != nil {
		l.s.log.Warn("ledger: retrying a settled payment failed", "tool", p.st.ToolKey, "request_id", p.requestID,
			"attempts", p.attempts, "error", err)
		return false
	}
	l.s.log.Info("ledger: settled payment recorded after a retry", "tool", p.st.ToolKey, "request_id", p.requestID, "attempts", p.attempts)
	return true
}

// drain stops the retries and tries every waiting settlement once more
// (until ctx ends); what is left is logged for reconciliation.
func (l *ledgerRetry) drain(ctx context.Context) {
	l.mu.Lock()
	l.closed = true
	done := l.done
	l.mu.Unlock()
	select {
	case l.wake <- struct{}{}:
	default:
	}
	if done != nil { // let an append in progress finish
		select {
		case <-done:
		case <-ctx.Done():
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	queue := l.queue
	l.queue = nil
	for _, p := range queue {
		recorded := false
		if ctx.Err() == nil {
			actx, cancel := context.WithTimeout(ctx, ledgerAppendTimeout)
			_, err := l.s.cfg.Store.Append(actx, p.st)
			cancel()
			recorded = err == nil
		}
		switch {
		case recorded:
		case l.spool != nil:
			l.queue = append(l.queue, p)
			l.s.log.Warn("ledger: stopping with a settled payment not recorded; it stays in the spool and is recorded at the next start",
				append(ledgerAttrs(p.st, p.requestID), "attempts", p.attempts+1, "spool", l.spool.path)...)
		default:
			l.s.metrics.ledgerLost.Add(1)
			l.s.log.Error("ledger: stopping with a settled payment not recorded; reconcile it by hand",
				append(ledgerAttrs(p.st, p.requestID), "attempts", p.attempts+1)...)
		}
	}
	if l.spool != nil {
		l.rewriteSpoolLocked()
		if err := l.spool.close(); err != nil {
			l.s.log.Error("ledger: closing the spool", "error", err)
		}
		l.spool = nil
	}
	l.queue = nil
	l.s.metrics.ledgerPending.Store(0)
}

// ledgerAttrs are the log attributes that identify a settlement.
func ledgerAttrs(st store.Settlement, requestID string) []any {
	return []any{"tool", st.ToolKey, "request_id", requestID,
		"payer", truncate(st.Payer, 42), "nonce", truncate(st.Nonce, 66), "amount", st.Amount, "network", st.Network,
		"transaction", truncate(st.Transaction, 100), "ref", st.RefCode}
}

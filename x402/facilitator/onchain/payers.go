package onchain

import (
	"context"
	"math/big"
	"sync"
	"time"

	"github.com/ethereum/go-ethereum/common"
)

// payers is the facilitator's account of each payer (of its one token):
// the settlements admitted and not yet known to be mined or failed (in
// flight), and the settlement transactions of the payer's payments that
// reverted recently. A payer's admissions are serialised by a lock of its
// own, so that two settlements of one payer never both count a balance
// only one of them can spend; payers do not wait for each other.
type payers struct {
	mu sync.Mutex
	by map[common.Address]*payerState
}

// payerState is one payer's account. It is forgotten once nothing is in
// flight, nobody holds or awaits its lock, and no revert is remembered.
type payerState struct {
	gate     chan struct{}    // holds one token while an admission runs
	users    int              // goroutines holding or awaiting gate
	inflight map[string]*held // by authorization key
	reverts  []time.Time      // reverted settlement transactions, oldest first
}

// held is one admitted settlement: its authorization nonce and amount.
// holds counts who keeps it in flight (the Settle call that admitted or
// joined it, the goroutine following its transaction).
type held struct {
	nonce [32]byte
	value *big.Int
	holds int
}

func newPayers() *payers { return &payers{by: map[common.Address]*payerState{}} }

// state returns addr's account, created if need be; p.mu is held.
func (p *payers) state(addr common.Address) *payerState {
	st := p.by[addr]
	if st == nil {
		st = &payerState{gate: make(chan struct{}, 1), inflight: map[string]*held{}}
		p.by[addr] = st
	}
	return st
}

// forget drops addr's account when nothing is left in it; p.mu is held.
func (p *payers) forget(addr common.Address, st *payerState) {
	if st.users == 0 && len(st.inflight) == 0 && len(st.reverts) == 0 {
		delete(p.by, addr)
	}
}

// lock takes addr's admission lock, or fails with ctx's error. The
// returned function releases it.
func (p *payers) lock(ctx context.Context, addr common.Address) (unlock func(), err error) {
	p.mu.Lock()
	st := p.state(addr)
	st.users++
	p.mu.Unlock()
	done := func() {
		p.mu.Lock()
		st.users--
		p.forget(addr, st)
		p.mu.Unlock()
	}
	select {
	case st.gate <- struct{}{}:
		return func() { <-st.gate; done() }, nil
	case <-ctx.Done():
		done()
		return nil, ctx.Err()
	}
}

// inFlight returns addr's settlements in flight other than the
// authorization key's.
func (p *payers) inFlight(addr common.Address, key string) []held {
	p.mu.Lock()
	defer p.mu.Unlock()
	st := p.by[addr]
	if st == nil {
		return nil
	}
	out := make([]held, 0, len(st.inflight))
	for k, fl := range st.inflight {
		if k != key {
			out = append(out, held{nonce: fl.nonce, value: fl.value})
		}
	}
	return out
}

// hold keeps the settlement of pm in flight (adding it if need be) until
// a matching drop.
func (p *payers) hold(pm *payment) {
	p.mu.Lock()
	defer p.mu.Unlock()
	st := p.state(pm.from)
	fl := st.inflight[pm.key]
	if fl == nil {
		fl = &held{nonce: pm.nonce, value: new(big.Int).Set(pm.value)}
		st.inflight[pm.key] = fl
	}
	fl.holds++
}

// drop ends one hold of pm's settlement; the last one takes it out of
// flight.
func (p *payers) drop(pm *payment) {
	p.mu.Lock()
	defer p.mu.Unlock()
	st := p.by[pm.from]
	if st == nil {
		return
	}
	if fl := st.inflight[pm.key]; fl != nil {
		if fl.holds--; fl.holds <= 0 {
			delete(st.inflight, pm.key)
		}
	}
	p.forget(pm.from, st)
}

// reverted records a reverted settlement transaction of addr's at now,
// and forgets every payer's reverts older than since.
func (p *payers) reverted(addr common.Address, now, since time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for a, st := range p.by {
		st.reverts = recent(st.reverts, since)
		p.forget(a, st)
	}
	st := p.state(addr)
	st.reverts = append(st.reverts, now)
}

// reverts returns the number of addr's reverted settlement transactions
// since since.
func (p *payers) reverts(addr common.Address, since time.Time) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	st := p.by[addr]
	if st == nil {
		return 0
	}
	st.reverts = recent(st.reverts, since)
	n := len(st.reverts)
	p.forget(addr, st)
	return n
}

// recent drops the times before since from ts (sorted, oldest first).
func recent(ts []time.Time, since time.Time) []time.Time {
	i := 0
	for i < len(ts) && ts[i].Before(since) {
		i++
	}
	return ts[i:]
}

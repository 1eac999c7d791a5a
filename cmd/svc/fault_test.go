package main

// The fault-injection proof of the payment engine's invariants (see the
// payment engine design): real `svc serve` processes in production mode
// against the stub facilitator (a process of its own, whose journal says
// what was settled), killed with SIGKILL at each step of a payment, with
// the store refusing writes, with a slow facilitator, and two instances
// sharing a store while one dies. Afterwards the stub's journal is held
// against the store's ledger and payment journal, and the clients retry
// their payments.
//
// Each store-backed test runs on SQLite (a file in t.TempDir()) and on
// PostgreSQL (a schema of its own in SVC_TEST_DATABASE_URL; skipped when
// unset). None runs under -short.

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	svc "github.com/seed1284c1d2/svc"
	"github.com/seed1284c1d2/svc/x402"
	"github.com/seed1284c1d2/svc/x402/client"
	"github.com/seed1284c1d2/svc/x402/engine"
	"github.com/seed1284c1d2/svc/x402/exact"
)

// faultKinds are the store backends every fault test runs on.
var faultKinds = []string{"sqlite", "postgres"}

// faultDuringSettle names the kill while /settle is in flight at the
// facilitator (not a stall point of the engine).
const faultDuringSettle = "during-settle"

// faultRecoveryTimeout bounds the wait for recovery after a restart: a
// dead owner is noticed 10 s after its last heartbeat, recovery runs every
// 5 s.
const faultRecoveryTimeout = 60 * time.Second

// faultSkipShort skips the fault tests under -short.
func faultSkipShort(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: fault injection kills real svc serve processes and waits for recovery, tens of seconds (the full go test runs it)")
	}
}

// faultStore is the store of one fault test.
type faultStore struct {
	kind string // "sqlite" or "postgres"
	db   string // the --db value
}

// newFaultStore returns a fresh store of kind (PostgreSQL skips without
// SVC_TEST_DATABASE_URL).
func newFaultStore(t *testing.T, kind string) faultStore {
	t.Helper()
	if kind == "sqlite" {
		return faultStore{kind: kind, db: filepath.Join(t.TempDir(), "svc.db")}
	}
	return faultStore{kind: kind, db: clusterPGDSN(t)}
}

// ledger reads the ledger and the payment journal.
func (s faultStore) ledger(t *testing.T) clusterLedger {
	t.Helper()
	if s.kind == "sqlite" {
		return clusterSQLiteLedger(t, s.db)
	}
	return clusterPGLedger(t, s.db)
}

// exec runs statements on the store, next to the live servers.
func (s faultStore) exec(t *testing.T, stmts ...string) {
	t.Helper()
	if s.kind == "sqlite" {
		clusterSQLiteExec(t, s.db, stmts...)
		return
	}
	for _, st := range stmts {
		clusterPGExec(t, s.db, st)
	}
}

// refuse installs a trigger named name refusing, with an error, the
// statements of event ("UPDATE" or "INSERT") on table for which the SQL
// condition when (on NEW) holds: the store is "down" for those writes.
func (s faultStore) refuse(t *testing.T, name, event, table, when string) {
	t.Helper()
	if s.kind == "sqlite" {
		s.exec(t, fmt.Sprintf(`CREATE TRIGGER %s BEFORE %s ON %s FOR EACH ROW WHEN %s BEGIN SELECT RAISE(ABORT, 'store down for the test'); END`,
			name, event, table, when))
		return
	}
	s.exec(t,
		fmt.Sprintf(`CREATE FUNCTION %s() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'store down for the test'; END $$`, name),
		fmt.Sprintf(`CREATE TRIGGER %s BEFORE %s ON %s FOR EACH ROW WHEN (%s) EXECUTE FUNCTION %s()`, name, event, table, when, name))
}

// restore drops the trigger of refuse: the store is back.
func (s faultStore) restore(t *testing.T, name, table string) {
	t.Helper()
	if s.kind == "sqlite" {
		s.exec(t, "DROP TRIGGER "+name)
		return
	}
	s.exec(t, fmt.Sprintf("DROP TRIGGER %s ON %s", name, table), fmt.Sprintf("DROP FUNCTION %s()", name))
}

// owners returns the engine instances recorded alive in the store.
func (s faultStore) owners(t *testing.T) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var q clusterQuerier
	if s.kind == "sqlite" {
		db, err := sql.Open("sqlite", s.db+"?_pragma=query_only(1)&_pragma=busy_timeout(5000)")
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		q = sqlQuerier{db}
	} else {
		c, err := pgx.Connect(ctx, s.db)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close(ctx)
		q = pgQuerier{c}
	}
	rows, err := q.query(ctx, `SELECT owner FROM engine_instances`)
	if err != nil {
		t.Fatalf("read engine_instances: %v", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var o string
		if err := rows.Scan(&o); err != nil {
			t.Fatal(err)
		}
		out = append(out, o)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// faultPayment is one signed payment for one request, presented as many
// times as a test likes (same header, same body).
type faultPayment struct {
	payer   string
	header  string
	nonce   string
	address string // the request's address
	body    string
	// ans and err are the answer to the first presentation (err: none
	// came, e.g. the server was killed).
	ans clusterAnswer
	err error
}

// faultPay signs n payments of the offer, each by a new payer when signer
// is nil, for a fresh request each.
func faultPay(t *testing.T, pr x402.PaymentRequired, n int, signer *client.Signer) []*faultPayment {
	t.Helper()
	ps := make([]*faultPayment, n)
	for i := range ps {
		s := signer
		if s == nil {
			s = clusterSigner(t)
		}
		h, nonce := clusterMustSign(t, s, pr)
		a := clusterAddress()
		ps[i] = &faultPayment{payer: s.Address(), header: h, nonce: strings.ToLower(nonce), address: a, body: clusterBody(a)}
	}
	return ps
}

// faultLaunch presents every payment once, concurrently, to base with a
// client without time limit (the calls may stall until their server is
// killed); wait waits for all of them.
func faultLaunch(base string, ps []*faultPayment) (wait func()) {
	tr := &http.Transport{MaxIdleConnsPerHost: 64}
	c := &http.Client{Transport: tr}
	var wg sync.WaitGroup
	for _, p := range ps {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p.ans, p.err = clusterDo(context.Background(), c, http.MethodPost, base+clusterToolPath, p.body, p.header)
		}()
	}
	return func() { wg.Wait(); tr.CloseIdleConnections() }
}

// faultRetry presents p again (same header, same body) until a final
// answer: 503 payment_in_progress and 503 settlement_pending are waited
// out (polling, within timeout); anything else is returned.
func faultRetry(t *testing.T, c *http.Client, base string, p *faultPayment, timeout time.Duration) clusterAnswer {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		a := clusterMust(t, c, http.MethodPost, base+clusterToolPath, p.body, p.header)
		interim := (a.status == http.StatusServiceUnavailable && a.reason() == engine.ReasonPaymentInProgress) ||
			(a.status == http.StatusServiceUnavailable && faultProblemCode(a) == engine.ReasonSettlementPending)
		if !interim {
			return a
		}
		if a.header.Get("Retry-After") == "" {
			t.Fatalf("retry of nonce %s: %s without Retry-After", p.nonce, a)
		}
		if time.Now().After(deadline) {
			t.Fatalf("retry of nonce %s: still %s after %v", p.nonce, a, timeout)
		}
		time.Sleep(250 * time.Millisecond)
	}
}

// faultProblemCode is the code of a problem answer ("" if none).
func faultProblemCode(a clusterAnswer) string {
	var p struct {
		Code string `json:"code"`
	}
	if json.Unmarshal(a.body, &p) != nil {
		return ""
	}
	return p.Code
}

// faultCheckPaid fails the test unless a is the 200 of p's request paid
// by the stub's settlement line (same transaction and payer), with body
// want when want is not nil, and otherwise a valid tool answer for p's
// address.
func faultCheckPaid(t *testing.T, what string, p *faultPayment, a clusterAnswer, line stubJournalLine, want []byte) {
	t.Helper()
	if a.status != http.StatusOK {
		t.Fatalf("%s (nonce %s): %s, want 200", what, p.nonce, a)
	}
	sr, err := a.settlement()
	if err != nil || !sr.Success || sr.Transaction != line.Transaction || !strings.EqualFold(sr.Payer, p.payer) {
		t.Fatalf("%s (nonce %s): PAYMENT-RESPONSE %+v (%v), want the stub's transaction %s by %s", what, p.nonce, sr, err, line.Transaction, p.payer)
	}
	if want != nil && string(a.body) != string(want) {
		t.Fatalf("%s (nonce %s): body %s, want the answer of an equivalent call %s", what, p.nonce, a.body, want)
	}
	faultCheckAnswer(t, what, p, a.body)
}

// faultCheckAnswer fails the test unless body is the tool's answer for p's
// address.
func faultCheckAnswer(t *testing.T, what string, p *faultPayment, body []byte) {
	t.Helper()
	want, err := svc.EVMAddressSyntax(context.Background(), svc.EVMAddressSyntaxRequest{Address: p.address})
	if err != nil {
		t.Fatal(err)
	}
	var got svc.EVMAddressSyntaxResponse
	if err := json.Unmarshal(body, &got); err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("%s (nonce %s): body %s is not the tool's answer %+v for %s (%v)", what, p.nonce, body, want, p.address, err)
	}
}

// faultReferences returns, for each payment, the body of an equivalent
// call: its request paid by a new payment (which settles and is recorded
// like any other). The calls run concurrently.
func faultReferences(t *testing.T, c *http.Client, base string, pr x402.PaymentRequired, ps []*faultPayment) [][]byte {
	t.Helper()
	others := faultPay(t, pr, len(ps), nil)
	out := make([][]byte, len(ps))
	errs := make([]error, len(ps))
	var wg sync.WaitGroup
	for i, p := range ps {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			a, err := clusterDo(ctx, c, http.MethodPost, base+clusterToolPath, p.body, others[i].header)
			switch {
			case err != nil:
				errs[i] = err
			case a.status != http.StatusOK:
				errs[i] = fmt.Errorf("the equivalent call of nonce %s's request: %s", p.nonce, a)
			default:
				out[i] = a.body
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// faultMismatch compares what the stub settled with the store: "" when
// every journal line has exactly one ledger row (same transaction, payer,
// amount, tool), every ledger row has its journal line, and the ledger
// matches the settled payments one to one; otherwise what differs. A
// nonce the stub settled twice fails the test at once.
func faultMismatch(t *testing.T, stub *clusterStub, l clusterLedger) string {
	t.Helper()
	lines := stub.byNonce(t)
	rows := map[string][]clusterLedgerRow{}
	for _, r := range l.rows {
		rows[strings.ToLower(r.Nonce)] = append(rows[strings.ToLower(r.Nonce)], r)
	}
	for nonce, line := range lines {
		rs := rows[nonce]
		if len(rs) != 1 {
			return fmt.Sprintf("the stub settled nonce %s (transaction %s); the ledger has %d rows for it (payment %v)", nonce, line.Transaction, len(rs), l.stateOfNonce(nonce))
		}
		r := rs[0]
		if r.Tx != line.Transaction || !strings.EqualFold(r.Payer, line.Payer) || r.Amount != line.Amount || r.ToolKey != clusterToolKey {
			return fmt.Sprintf("ledger row %+v does not match the stub's settlement %+v", r, line)
		}
		if st := l.stateOfNonce(nonce); st != engine.StateSettled {
			return fmt.Sprintf("nonce %s: settled by the stub, %v in the payment journal", nonce, st)
		}
	}
	for nonce, rs := range rows {
		if _, ok := lines[nonce]; !ok {
			return fmt.Sprintf("ledger rows %+v for nonce %s, which the stub never settled", rs, nonce)
		}
	}
	for key, st := range l.payments {
		if st == engine.StateSettled && len(rows[key[strings.LastIndex(key, "/")+1:]]) != 1 {
			return fmt.Sprintf("payment %s settled without its ledger row", key)
		}
	}
	return ""
}

// faultStates returns "" when no payment of l is in any of states,
// otherwise the states counted.
func faultStates(l clusterLedger, states ...engine.State) string {
	st := l.states()
	for _, s := range states {
		if st[s] > 0 {
			return fmt.Sprintf("payments by state %v: want none %v", st, s)
		}
	}
	return ""
}

// faultWaitStub polls the stub's statistics until cond holds.
func faultWaitStub(t *testing.T, c *http.Client, stub *clusterStub, timeout time.Duration, what string, cond func(stubStats) bool) {
	t.Helper()
	clusterEventually(t, timeout, func() string {
		if st := stub.stats(t, c); !cond(st) {
			return fmt.Sprintf("the stub facilitator: %s: %+v", what, st)
		}
		return ""
	})
}

// TestCrashAtPaymentSteps kills `svc serve` (SIGKILL) while 16 concurrent
// paid calls are stopped at one step of the payment engine — the settling
// row committed (before /settle), /settle answered (before the settled
// row), the settled row and ledger entry committed (before the answer) —
// or while their /settle is in flight at a facilitator that takes 1.5 s,
// with two more calls stopped before settling (their payer's /verify held
// at the facilitator). The store is checked as the kill left it, then
// svc is restarted and, once recovery ran:
//   - every settlement of the facilitator's journal has exactly one ledger
//     row with its transaction, and the ledger nothing else;
//   - nothing was settled twice (one journal line per nonce);
//   - each of the 16 payments, presented again by its client, is answered
//     200 with the recorded answer (byte for byte that of an equivalent
//     call) and a PAYMENT-RESPONSE carrying the facilitator's transaction;
//   - the two payments killed before settling were never settled, are
//     released, and can be paid again.
//
// After the kill at settle-returned, two instances restart at once on the
// store, so that their recoveries race for the same payments.
func TestCrashAtPaymentSteps(t *testing.T) {
	faultSkipShort(t)
	for _, kind := range faultKinds {
		t.Run(kind, func(t *testing.T) {
			for _, point := range []string{engine.HookSettlingCommitted, faultDuringSettle, engine.HookSettleReturned, engine.HookSettledCommitted} {
				t.Run(point, func(t *testing.T) {
					t.Parallel()
					faultCrashAt(t, kind, point)
				})
			}
		})
	}
}

func faultCrashAt(t *testing.T, kind, point string) {
	const calls, held = 16, 2
	st := newFaultStore(t, kind)
	opts := clusterStubOptions{}
	stallAt := point
	if point == faultDuringSettle {
		opts.settleDelay, stallAt = 1500*time.Millisecond, ""
	}
	stub := clusterStartStub(t, opts)
	c := clusterHTTP(t)
	first := clusterStartWith(t, "first", st.db, clusterOptions{facilitator: stub.base, stallAt: stallAt})
	pr := clusterOffer(t, c, first.base)

	heldSigner := clusterSigner(t)
	stub.hold(t, c, heldSigner.Address())
	heldPs := faultPay(t, pr, held, heldSigner)
	ps := faultPay(t, pr, calls, nil)
	wait := faultLaunch(first.base, append(append([]*faultPayment(nil), heldPs...), ps...))

	// Every call at the step, and the held ones at the stub's /verify.
	if point == faultDuringSettle {
		faultWaitStub(t, c, stub, 30*time.Second, fmt.Sprintf("want %d settlements in flight and %d verifications", calls, calls+held),
			func(s stubStats) bool { return s.InFlight == calls && s.VerifyCalls >= calls+held })
	} else {
		clusterEventually(t, 30*time.Second, func() string {
			if n, st := len(first.stalled(point)), stub.stats(t, c); n != calls || st.VerifyCalls < calls+held {
				return fmt.Sprintf("%d of %d calls stalled at %s; the stub saw %d verifications, want %d", n, calls, point, st.VerifyCalls, calls+held)
			}
			return ""
		})
	}
	first.kill(t)
	wait()
	for _, p := range append(append([]*faultPayment(nil), heldPs...), ps...) {
		if p.err == nil {
			t.Fatalf("a call was answered before the kill (nonce %s): %s", p.nonce, p.ans)
		}
	}
	if point == faultDuringSettle { // the transactions in flight land
		faultWaitStub(t, c, stub, 30*time.Second, "want no settlement in flight", func(s stubStats) bool { return s.InFlight == 0 })
	}

	// The store as the kill left it.
	l := st.ledger(t)
	lines := stub.byNonce(t)
	wantState, wantLines := engine.StateSettling, calls
	switch point {
	case engine.HookSettlingCommitted:
		wantLines = 0 // invariant 1: the intent is durable, nothing is settled yet
	case engine.HookSettledCommitted:
		wantState = engine.StateSettled
	}
	if len(lines) != wantLines {
		t.Fatalf("killed at %s: the stub settled %d payments, want %d", point, len(lines), wantLines)
	}
	for _, p := range ps {
		if s := l.stateOfNonce(p.nonce); s != wantState {
			t.Fatalf("killed at %s: payment %s is %v, want %v (journal %v)", point, p.nonce, s, wantState, l.states())
		}
	}
	for _, p := range heldPs {
		if s := l.stateOfNonce(p.nonce); s != engine.StateReserved {
			t.Fatalf("killed before settling: payment %s is %v, want reserved", p.nonce, s)
		}
	}
	if wantState == engine.StateSettled {
		if msg := faultMismatch(t, stub, l); msg != "" { // invariant 2
			t.Fatalf("killed at %s: %s", point, msg)
		}
	} else if len(l.rows) != 0 {
		t.Fatalf("killed at %s: ledger rows %+v before anything was recorded settled", point, l.rows)
	}
	t.Logf("killed at %s: the stub had settled %d payments; the journal %v", point, len(lines), l.states())

	// Restart; recovery resolves every interrupted payment. After a kill at
	// settle-returned two instances restart at once: their recoveries race
	// for the same rows (invariant 5).
	stub.release(t, c)
	before := stub.stats(t, c)
	restart := time.Now()
	var nodes []*clusterNode
	for i := range 1 + faultBool(point == engine.HookSettleReturned) {
		nodes = append(nodes, clusterStartWith(t, fmt.Sprintf("restarted%d", i), st.db, clusterOptions{facilitator: stub.base}))
	}
	took := clusterEventually(t, faultRecoveryTimeout, func() string {
		l := st.ledger(t)
		if msg := faultStates(l, engine.StateReserved, engine.StateSettling, engine.StateUnknown, engine.StateFailed); msg != "" {
			return msg
		}
		if n := len(stub.lines(t)); n != calls {
			return fmt.Sprintf("the stub settled %d payments, want %d", n, calls)
		}
		return faultMismatch(t, stub, l)
	})
	after := stub.stats(t, c)
	t.Logf("recovered by %d instance(s) %v after the restart (%v polling); /settle calls during recovery: %d",
		len(nodes), time.Since(restart).Round(time.Millisecond), took.Round(time.Millisecond), after.SettleCalls-before.SettleCalls)
	lines = stub.byNonce(t)
	for _, p := range heldPs {
		if _, ok := lines[p.nonce]; ok {
			t.Fatalf("payment %s, killed before settling, was settled", p.nonce)
		}
		if s := st.ledger(t).stateOfNonce(p.nonce); s != engine.StateReleased {
			t.Fatalf("payment %s, killed before settling: %v after recovery, want released", p.nonce, s)
		}
	}
	wantRecovered := int64(calls)
	if point == engine.HookSettledCommitted {
		wantRecovered = 0
	}
	var recSettled, recReleased int64
	for _, n := range nodes {
		v, _ := clusterMetricSample(t, c, n.base, "svc_x402_recovered_total", `result="settled"`)
		recSettled += v
		v, _ = clusterMetricSample(t, c, n.base, "svc_x402_recovered_total", `result="released"`)
		recReleased += v
	}
	if recSettled != wantRecovered {
		t.Errorf("svc_x402_recovered_total{result=\"settled\"} = %d over the restarted instances, want %d", recSettled, wantRecovered)
	}
	if recReleased != held {
		t.Errorf("svc_x402_recovered_total{result=\"released\"} = %d over the restarted instances, want %d (the abandoned reservations)", recReleased, held)
	}

	// The clients retry: the recorded answer, the facilitator's transaction.
	refs := faultReferences(t, c, nodes[0].base, pr, ps)
	for i, p := range ps {
		n := nodes[i%len(nodes)]
		a := faultRetry(t, c, n.base, p, 10*time.Second)
		faultCheckPaid(t, "retry after the kill at "+point+" on "+n.name, p, a, lines[p.nonce], refs[i])
	}
	// Invariant 4: a recovered authorization is not admitted for another
	// request.
	for _, n := range nodes {
		other := clusterMust(t, c, http.MethodPost, n.base+clusterToolPath, clusterBody(clusterAddress()), ps[0].header)
		if other.status != http.StatusPaymentRequired || other.reason() != exact.ReasonNonceAlreadyUsed {
			t.Fatalf("a recovered authorization presented for another request on %s: %s, want 402 %s", n.name, other, exact.ReasonNonceAlreadyUsed)
		}
	}
	// The payments killed before settling can be paid again.
	for _, p := range heldPs {
		a := faultRetry(t, c, nodes[len(nodes)-1].base, p, 10*time.Second)
		line, ok := stub.byNonce(t)[p.nonce]
		if !ok {
			t.Fatalf("payment %s paid again: %s, and the stub did not settle it", p.nonce, a)
		}
		faultCheckPaid(t, "payment killed before settling, presented again", p, a, line, nil)
	}
	clusterStop(t, c, nodes...)
	l = st.ledger(t)
	if msg := faultMismatch(t, stub, l); msg != "" {
		t.Fatal(msg)
	}
	if n, want := len(l.rows), 2*calls+held; n != want {
		t.Fatalf("%d ledger rows, want %d (the %d killed, their %d equivalent calls, the %d paid again)", n, want, calls, calls, held)
	}
	if msg := faultStates(l, engine.StateReserved, engine.StateSettling, engine.StateUnknown, engine.StateFailed, engine.StateReleased); msg != "" {
		t.Fatal(msg)
	}
}

// faultBool is 1 for true, 0 for false.
func faultBool(b bool) int {
	if b {
		return 1
	}
	return 0
}

// TestFaultSlowSettleWithinTimeout: a facilitator taking 40 s to settle, within
// svc's 60 s settle timeout, ends in a 200 carrying its transaction, and
// the ledger row is there when the answer arrives.
func TestFaultSlowSettleWithinTimeout(t *testing.T) {
	faultSkipShort(t)
	for _, kind := range faultKinds {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			const delay = 40 * time.Second
			st := newFaultStore(t, kind)
			stub := clusterStartStub(t, clusterStubOptions{settleDelay: delay})
			c := clusterHTTP(t)
			n := clusterStartWith(t, "svc", st.db, clusterOptions{facilitator: stub.base, settleTimeout: 60 * time.Second})
			pr := clusterOffer(t, c, n.base)
			p := faultPay(t, pr, 1, nil)[0]
			slow := &http.Client{Transport: c.Transport, Timeout: 3 * time.Minute}
			start := time.Now()
			a := clusterMust(t, slow, http.MethodPost, n.base+clusterToolPath, p.body, p.header)
			took := time.Since(start)
			line, ok := stub.byNonce(t)[p.nonce]
			if !ok {
				t.Fatalf("after %v: %s, and the stub has no settlement", took, a)
			}
			faultCheckPaid(t, "slow settlement", p, a, line, nil)
			if took < delay {
				t.Fatalf("answered in %v, before the settlement could finish (%v)", took, delay)
			}
			if msg := faultMismatch(t, stub, st.ledger(t)); msg != "" {
				t.Fatalf("when the answer arrived: %s", msg)
			}
			t.Logf("a %v settlement answered 200 in %v", delay, took.Round(time.Millisecond))
			clusterStop(t, c, n)
		})
	}
}

// TestFaultStoreDownBeforeSettling: the store refuses the settling state (a
// trigger on the payments table). The paid call is answered 503, the
// facilitator is never asked to settle, and once the store is back the
// same payment for the same request is paid normally.
func TestFaultStoreDownBeforeSettling(t *testing.T) {
	faultSkipShort(t)
	for _, kind := range faultKinds {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			st := newFaultStore(t, kind)
			stub := clusterStartStub(t, clusterStubOptions{})
			c := clusterHTTP(t)
			n := clusterStartWith(t, "svc", st.db, clusterOptions{facilitator: stub.base})
			pr := clusterOffer(t, c, n.base)
			st.refuse(t, "fault_refuse_settling", "UPDATE", "payments", fmt.Sprintf("NEW.state = %d", engine.StateSettling))
			p := faultPay(t, pr, 1, nil)[0]
			a := clusterMust(t, c, http.MethodPost, n.base+clusterToolPath, p.body, p.header)
			if a.status != http.StatusServiceUnavailable || faultProblemCode(a) != engine.ReasonStoreUnavailable {
				t.Fatalf("paid call with the store refusing settling: %s, want 503 %s", a, engine.ReasonStoreUnavailable)
			}
			if a.header.Get(x402.HeaderPaymentResponse) != "" {
				t.Fatalf("503 with a PAYMENT-RESPONSE: %s", a.header.Get(x402.HeaderPaymentResponse))
			}
			if s := stub.stats(t, c); s.SettleCalls != 0 || s.Settled != 0 {
				t.Fatalf("the facilitator was asked to settle without a durable intent: %+v", s)
			}
			l := st.ledger(t)
			if len(l.rows) != 0 || l.stateOfNonce(p.nonce) == engine.StateSettling || l.stateOfNonce(p.nonce) == engine.StateSettled {
				t.Fatalf("after the refusal: ledger %+v, payment %v", l.rows, l.stateOfNonce(p.nonce))
			}
			t.Logf("refused: %s; the payment is %v", a, l.stateOfNonce(p.nonce))

			st.restore(t, "fault_refuse_settling", "payments")
			again := faultRetry(t, c, n.base, p, 30*time.Second)
			line, ok := stub.byNonce(t)[p.nonce]
			if !ok {
				t.Fatalf("the payment presented again once the store is back: %s, not settled", again)
			}
			faultCheckPaid(t, "the payment presented again once the store is back", p, again, line, nil)
			if msg := faultMismatch(t, stub, st.ledger(t)); msg != "" {
				t.Fatal(msg)
			}
			clusterStop(t, c, n)
		})
	}
}

// TestFaultStoreDownAfterSettling: the facilitator settles, then the store
// refuses to record it — the settled update of the payment, or the ledger
// insert of the same commit (a trigger). The client gets 503
// settlement_pending, the payment stays settling with no ledger row (the
// settled state never goes without its ledger entry), and the client's
// retry is told to wait and never settles again. Then the store comes
// back, either under the same process (which records the settlement it
// holds) or only after that process was killed (the restarted instance's
// recovery records it: the facilitator's original result, presented
// again). Either way the ledger row appears with the facilitator's
// transaction and the retry gets 200 with the recorded answer.
func TestFaultStoreDownAfterSettling(t *testing.T) {
	faultSkipShort(t)
	for _, kind := range faultKinds {
		for _, v := range []struct{ name, event, table, when string }{
			{"settled-update-refused", "UPDATE", "payments", fmt.Sprintf("NEW.state = %d", engine.StateSettled)},
			{"ledger-insert-refused", "INSERT", "settlements", "1 = 1"},
		} {
			for _, crash := range []bool{false, true} {
				name := kind + "/" + v.name + "/store-back"
				if crash {
					name = kind + "/" + v.name + "/killed-then-store-back"
				}
				t.Run(name, func(t *testing.T) {
					t.Parallel()
					faultStoreDownAfterSettling(t, kind, v.event, v.table, v.when, crash)
				})
			}
		}
	}
}

func faultStoreDownAfterSettling(t *testing.T, kind, event, table, when string, crash bool) {
	st := newFaultStore(t, kind)
	stub := clusterStartStub(t, clusterStubOptions{})
	c := clusterHTTP(t)
	n := clusterStartWith(t, "first", st.db, clusterOptions{facilitator: stub.base})
	pr := clusterOffer(t, c, n.base)
	p := faultPay(t, pr, 1, nil)[0]
	want := faultReferences(t, c, n.base, pr, []*faultPayment{p})[0]
	st.refuse(t, "fault_refuse_settled", event, table, when)

	start := time.Now()
	a := clusterMust(t, c, http.MethodPost, n.base+clusterToolPath, p.body, p.header)
	if a.status != http.StatusServiceUnavailable || faultProblemCode(a) != engine.ReasonSettlementPending || a.header.Get("Retry-After") == "" {
		t.Fatalf("paid call, settled and not recordable: %s (Retry-After %q), want 503 %s with Retry-After",
			a, a.header.Get("Retry-After"), engine.ReasonSettlementPending)
	}
	line, ok := stub.byNonce(t)[p.nonce]
	if !ok {
		t.Fatalf("503 %s but the stub did not settle", engine.ReasonSettlementPending)
	}
	l := st.ledger(t)
	if s := l.stateOfNonce(p.nonce); s != engine.StateSettling || l.byNonce()[p.nonce] != 0 {
		t.Fatalf("store down after settling: payment %v with %d ledger rows, want settling and none", s, l.byNonce()[p.nonce])
	}
	// The client retries while the store is still down: wait, never a
	// second settlement.
	r := clusterMust(t, c, http.MethodPost, n.base+clusterToolPath, p.body, p.header)
	inProgress := r.status == http.StatusServiceUnavailable && r.reason() == engine.ReasonPaymentInProgress
	pending := r.status == http.StatusServiceUnavailable && faultProblemCode(r) == engine.ReasonSettlementPending
	if !inProgress && !pending || r.header.Get("Retry-After") == "" {
		t.Fatalf("retry while the store is down: %s, want 503 %s or %s with Retry-After", r, engine.ReasonPaymentInProgress, engine.ReasonSettlementPending)
	}
	t.Logf("first answer after %v: %s; retry while down: %d %s%s", time.Since(start).Round(time.Millisecond), a,
		r.status, r.reason(), faultProblemCode(r))

	if crash {
		n.kill(t)
		st.restore(t, "fault_refuse_settled", table)
		n = clusterStartWith(t, "second", st.db, clusterOptions{facilitator: stub.base})
	} else {
		st.restore(t, "fault_refuse_settled", table)
	}
	took := clusterEventually(t, faultRecoveryTimeout, func() string { return faultMismatch(t, stub, st.ledger(t)) })
	t.Logf("recorded %v after the store came back", took.Round(time.Millisecond))
	again := faultRetry(t, c, n.base, p, 10*time.Second)
	faultCheckPaid(t, "retry once the store is back", p, again, line, want)
	if crash {
		if v, _ := clusterMetricSample(t, c, n.base, "svc_x402_recovered_total", `result="settled"`); v != 1 {
			t.Errorf("svc_x402_recovered_total{result=\"settled\"} = %d, want 1", v)
		}
	}
	clusterStop(t, c, n)
	if msg := faultMismatch(t, stub, st.ledger(t)); msg != "" {
		t.Fatal(msg)
	}
	if got := len(stub.lines(t)); got != 2 {
		t.Fatalf("the stub settled %d payments, want 2 (the payment and its equivalent call)", got)
	}
}

// TestFaultFacilitatorFailsAtSettle: /settle fails without a decision —
// the facilitator is down (503, nothing settled), or it settled and its
// answer was lost (the connection closed). The client gets 503
// settlement_pending and, while the payment is settling, "in progress";
// once the facilitator works again and the payment's lease has ended,
// recovery presents the settlement again: a first settlement in the first
// case, the original one (same transaction) in the second. The ledger row
// appears and the client's retry gets 200 with the recorded answer. svc
// runs with a 5 s settle timeout: the lease (timeout + 15 s) is what
// recovery waits for.
func TestFaultFacilitatorFailsAtSettle(t *testing.T) {
	faultSkipShort(t)
	for _, kind := range faultKinds {
		for _, mode := range []string{stubFaultDown, stubFaultLost} {
			t.Run(kind+"/"+mode, func(t *testing.T) {
				t.Parallel()
				st := newFaultStore(t, kind)
				stub := clusterStartStub(t, clusterStubOptions{})
				c := clusterHTTP(t)
				n := clusterStartWith(t, "svc", st.db, clusterOptions{facilitator: stub.base, settleTimeout: 5 * time.Second})
				pr := clusterOffer(t, c, n.base)
				p := faultPay(t, pr, 1, nil)[0]
				want := faultReferences(t, c, n.base, pr, []*faultPayment{p})[0]

				stub.settleFault(t, c, mode)
				start := time.Now()
				a := clusterMust(t, c, http.MethodPost, n.base+clusterToolPath, p.body, p.header)
				if a.status != http.StatusServiceUnavailable || faultProblemCode(a) != engine.ReasonSettlementPending {
					t.Fatalf("paid call, /settle failing (%s): %s, want 503 %s", mode, a, engine.ReasonSettlementPending)
				}
				stub.settleFault(t, c, "")
				_, settled := stub.byNonce(t)[p.nonce]
				if settled != (mode == stubFaultLost) {
					t.Fatalf("/settle failing (%s): settled by the stub: %v", mode, settled)
				}
				if s := st.ledger(t).stateOfNonce(p.nonce); s != engine.StateSettling {
					t.Fatalf("after /settle failed: payment %v, want settling", s)
				}
				r := clusterMust(t, c, http.MethodPost, n.base+clusterToolPath, p.body, p.header)
				if r.status != http.StatusServiceUnavailable || r.reason() != engine.ReasonPaymentInProgress || r.header.Get("Retry-After") == "" {
					t.Fatalf("retry while settling: %s, want 503 %s with Retry-After", r, engine.ReasonPaymentInProgress)
				}
				clusterEventually(t, faultRecoveryTimeout, func() string {
					if _, ok := stub.byNonce(t)[p.nonce]; !ok {
						return "the stub has not settled the payment"
					}
					return faultMismatch(t, stub, st.ledger(t))
				})
				t.Logf("%s: answered %d %s, recorded %v after the paid call", mode, a.status, faultProblemCode(a), time.Since(start).Round(100*time.Millisecond))
				line := stub.byNonce(t)[p.nonce]
				again := faultRetry(t, c, n.base, p, 10*time.Second)
				faultCheckPaid(t, "retry after recovery", p, again, line, want)
				if v, _ := clusterMetricSample(t, c, n.base, "svc_x402_recovered_total", `result="settled"`); v != 1 {
					t.Errorf("svc_x402_recovered_total{result=\"settled\"} = %d, want 1", v)
				}
				clusterStop(t, c, n)
				if got := len(stub.lines(t)); got != 2 {
					t.Fatalf("the stub settled %d payments, want 2 (the payment and its equivalent call)", got)
				}
			})
		}
	}
}

// TestFaultHeartbeatsLost: two instances share a store whose
// engine_instances table refuses the heartbeats of instance A (a trigger),
// so that B takes A for dead while A, alive, has two payments in flight:
// one settling at a facilitator that takes 30 s, one reserved (its
// payer's /verify held at the facilitator). B's recovery wrongly takes
// both over: it releases the reservation and presents the in-flight
// settlement again. Nothing may break: the settling payment is settled
// once (the facilitator returns the original result), recorded once, and
// its client gets 200; the reserved payment, released under A's feet, is
// not settled by A (its move to settling is refused) and, presented again,
// is paid once. (A refusing its own heartbeat also stops its own
// recovery: an instance that cannot record itself alive does not recover.)
func TestFaultHeartbeatsLost(t *testing.T) {
	faultSkipShort(t)
	for _, kind := range faultKinds {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			const delay = 30 * time.Second
			st := newFaultStore(t, kind)
			stub := clusterStartStub(t, clusterStubOptions{settleDelay: delay})
			c := clusterHTTP(t)
			a := clusterStartWith(t, "A", st.db, clusterOptions{facilitator: stub.base})
			var ownerA string
			clusterEventually(t, 10*time.Second, func() string {
				o := st.owners(t)
				if len(o) != 1 {
					return fmt.Sprintf("engine instances %q, want A's alone", o)
				}
				ownerA = o[0]
				return ""
			})
			b := clusterStartWith(t, "B", st.db, clusterOptions{facilitator: stub.base})
			pr := clusterOffer(t, c, a.base)
			heldSigner := clusterSigner(t)
			settling := faultPay(t, pr, 1, nil)[0]
			reserved := faultPay(t, pr, 1, heldSigner)[0]
			stub.hold(t, c, heldSigner.Address())
			st.refuse(t, "fault_refuse_heartbeat", "INSERT", "engine_instances", "NEW.owner = '"+strings.ReplaceAll(ownerA, "'", "''")+"'")
			start := time.Now()
			wait := faultLaunch(a.base, []*faultPayment{settling, reserved})

			// B presents the settlement again while the first is in flight,
			// and releases the reservation.
			clusterEventually(t, faultRecoveryTimeout, func() string {
				s := stub.stats(t, c)
				if s.SettleCalls < 2 || s.InFlight != 1 {
					return fmt.Sprintf("want the settlement presented again while in flight: %+v", s)
				}
				if st := st.ledger(t).stateOfNonce(reserved.nonce); st != engine.StateReleased {
					return fmt.Sprintf("the held payment is %v, want released by recovery", st)
				}
				return ""
			})
			t.Logf("B took A's payments over %v after A's heartbeats stopped", time.Since(start).Round(100*time.Millisecond))
			stub.release(t, c)
			wait()
			if settling.err != nil {
				t.Fatalf("the settling payment's call: %v", settling.err)
			}
			lines := stub.byNonce(t)
			faultCheckPaid(t, "the payment settling when recovery took it over", settling, settling.ans, lines[settling.nonce], nil)
			if reserved.err != nil || reserved.ans.status == http.StatusOK {
				t.Fatalf("the payment released under A's feet: %v %s, want a refusal", reserved.err, reserved.ans)
			}
			if _, ok := lines[reserved.nonce]; ok {
				t.Fatalf("the payment released under A's feet was settled: %s", reserved.ans)
			}
			t.Logf("the payment released under A's feet was answered %s", reserved.ans)
			st.restore(t, "fault_refuse_heartbeat", "engine_instances")
			stub.settleDelay(t, c, 0)
			again := faultRetry(t, c, b.base, reserved, 10*time.Second)
			line, ok := stub.byNonce(t)[reserved.nonce]
			if !ok {
				t.Fatalf("the released payment presented again: %s, not settled", again)
			}
			faultCheckPaid(t, "the released payment presented again", reserved, again, line, nil)
			if v, _ := clusterMetricSample(t, c, b.base, "svc_x402_recovered_total", `result="settled"`); v != 1 {
				t.Errorf("B: svc_x402_recovered_total{result=\"settled\"} = %d, want 1", v)
			}
			clusterStop(t, c, a, b)
			l := st.ledger(t)
			if msg := faultMismatch(t, stub, l); msg != "" {
				t.Fatal(msg)
			}
			if len(l.rows) != 2 {
				t.Fatalf("%d ledger rows, want 2", len(l.rows))
			}
		})
	}
}

// TestClusterKillOneInstanceUnderPaidLoad runs two `svc serve` instances on
// one store under paid load (8 clients each, a fresh payment per call, a
// facilitator taking 50 ms per settlement), kills one with SIGKILL in the
// middle, and keeps the load on the other. The survivor's recovery takes
// over the dead instance's payments: every settlement of the facilitator
// has exactly one ledger row, every 200 a client received has its ledger
// row with its transaction, and every payment the kill interrupted,
// presented again to the survivor, is answered 200 (its recorded answer,
// or a first one if it had not settled) — never settled twice. PostgreSQL,
// and SQLite with both processes on one database file.
func TestClusterKillOneInstanceUnderPaidLoad(t *testing.T) {
	faultSkipShort(t)
	for _, kind := range faultKinds {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			faultKillOneOfTwo(t, kind)
		})
	}
}

func faultKillOneOfTwo(t *testing.T, kind string) {
	const workers = 8
	st := newFaultStore(t, kind)
	stub := clusterStartStub(t, clusterStubOptions{settleDelay: 50 * time.Millisecond})
	c := clusterHTTP(t)
	dir := t.TempDir()
	a := clusterStartWith(t, "A", st.db, clusterOptions{facilitator: stub.base, dir: dir})
	b := clusterStartWith(t, "B", st.db, clusterOptions{facilitator: stub.base, dir: dir})
	pr := clusterOffer(t, c, a.base)

	var (
		mu          sync.Mutex
		done        []*faultPayment // answered
		interrupted []*faultPayment // no answer (A was killed)
		unexpected  []string
		okA         atomic.Int64
		killed      atomic.Bool
		wg          sync.WaitGroup
	)
	stopA, stopB := make(chan struct{}), make(chan struct{})
	loadStart := time.Now()
	for _, n := range []*clusterNode{a, b} {
		stop := stopA
		if n == b {
			stop = stopB
		}
		for range workers {
			s := clusterSigner(t)
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; i < 2000 && time.Since(loadStart) < 60*time.Second; i++ {
					select {
					case <-stop:
						return
					default:
					}
					h, nonce, err := clusterSign(s, pr)
					if err != nil {
						mu.Lock()
						unexpected = append(unexpected, err.Error())
						mu.Unlock()
						return
					}
					addr := clusterAddress()
					p := &faultPayment{payer: s.Address(), header: h, nonce: strings.ToLower(nonce), address: addr, body: clusterBody(addr)}
					ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
					p.ans, p.err = clusterDo(ctx, c, http.MethodPost, n.base+clusterToolPath, p.body, p.header)
					cancel()
					mu.Lock()
					switch {
					case p.err != nil && n == a && killed.Load():
						interrupted = append(interrupted, p)
					case p.err != nil:
						unexpected = append(unexpected, fmt.Sprintf("%s: %v", n.name, p.err))
					case p.ans.status != http.StatusOK:
						unexpected = append(unexpected, fmt.Sprintf("%s: %s", n.name, p.ans))
					default:
						done = append(done, p)
					}
					mu.Unlock()
					if p.err != nil || p.ans.status != http.StatusOK {
						return
					}
					if n == a {
						okA.Add(1)
					}
				}
			}()
		}
	}
	// Kill A in the middle: after a second of load and at least 40 answers.
	clusterEventually(t, 20*time.Second, func() string {
		if time.Since(loadStart) < time.Second || okA.Load() < 40 {
			return fmt.Sprintf("%d paid calls answered by A", okA.Load())
		}
		return ""
	})
	killed.Store(true)
	a.kill(t)
	killedAt := time.Since(loadStart)
	close(stopA)
	time.Sleep(2 * time.Second) // load on B alone for a while: not a wait for a condition
	close(stopB)
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	if len(unexpected) > 0 {
		t.Fatalf("%d unexpected answers, first: %s", len(unexpected), unexpected[0])
	}
	t.Logf("A killed after %v: %d answers received, %d calls interrupted; the journal: %v",
		killedAt.Round(time.Millisecond), len(done), len(interrupted), st.ledger(t).states())

	took := clusterEventually(t, faultRecoveryTimeout, func() string {
		l := st.ledger(t)
		if msg := faultStates(l, engine.StateReserved, engine.StateSettling, engine.StateUnknown, engine.StateFailed); msg != "" {
			return msg
		}
		return faultMismatch(t, stub, l)
	})
	t.Logf("B recovered A's payments in %v", took.Round(time.Millisecond))
	lines := stub.byNonce(t)
	for _, p := range done {
		line, ok := lines[p.nonce]
		if !ok {
			t.Fatalf("a 200 received (nonce %s) was never settled by the stub", p.nonce)
		}
		faultCheckPaid(t, "a 200 received under load", p, p.ans, line, nil)
	}
	for _, p := range interrupted {
		r := faultRetry(t, c, b.base, p, 20*time.Second)
		line, ok := stub.byNonce(t)[p.nonce]
		if !ok {
			t.Fatalf("an interrupted payment presented again to B: %s, and the stub did not settle it", r)
		}
		faultCheckPaid(t, "an interrupted payment presented again to B", p, r, line, nil)
	}
	clusterStop(t, c, b)
	l := st.ledger(t)
	if msg := faultMismatch(t, stub, l); msg != "" {
		t.Fatal(msg)
	}
	if msg := faultStates(l, engine.StateReserved, engine.StateSettling, engine.StateUnknown, engine.StateFailed, engine.StateReleased); msg != "" {
		t.Fatal(msg)
	}
	if n := len(l.rows); n != len(done)+len(interrupted) {
		t.Fatalf("%d ledger rows for %d answers and %d interrupted payments paid again", n, len(done), len(interrupted))
	}
}

// TestCrashUnknownWithoutDeduplication: against a facilitator that does
// not deduplicate (a settlement presented again is "nonce already used"),
// svc is killed after /settle answered and before the settlement was
// recorded. Recovery cannot tell whether the authorization was used by
// this payment: the payments become unknown — counted in /metrics, kept
// across restarts, no ledger row invented — and nothing is settled twice.
func TestCrashUnknownWithoutDeduplication(t *testing.T) {
	faultSkipShort(t)
	for _, kind := range faultKinds {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			const calls = 4
			st := newFaultStore(t, kind)
			stub := clusterStartStub(t, clusterStubOptions{noDedup: true})
			c := clusterHTTP(t)
			first := clusterStartWith(t, "first", st.db, clusterOptions{facilitator: stub.base, stallAt: engine.HookSettleReturned})
			pr := clusterOffer(t, c, first.base)
			ps := faultPay(t, pr, calls, nil)
			wait := faultLaunch(first.base, ps)
			clusterEventually(t, 30*time.Second, func() string {
				if n := len(first.stalled(engine.HookSettleReturned)); n != calls {
					return fmt.Sprintf("%d of %d calls stalled", n, calls)
				}
				return ""
			})
			first.kill(t)
			wait()
			if n := len(stub.byNonce(t)); n != calls {
				t.Fatalf("the stub settled %d payments, want %d", n, calls)
			}

			second := clusterStartWith(t, "second", st.db, clusterOptions{facilitator: stub.base})
			clusterEventually(t, faultRecoveryTimeout, func() string {
				l := st.ledger(t)
				for _, p := range ps {
					if s := l.stateOfNonce(p.nonce); s != engine.StateUnknown {
						return fmt.Sprintf("payment %s is %v, want unknown (journal %v)", p.nonce, s, l.states())
					}
				}
				return ""
			})
			checkUnknown := func(n *clusterNode) {
				t.Helper()
				l := st.ledger(t)
				if len(l.rows) != 0 {
					t.Fatalf("ledger rows %+v for payments recovery could not confirm", l.rows)
				}
				if s := l.states(); s[engine.StateUnknown] != calls || len(s) != 1 {
					t.Fatalf("payments by state %v, want %d unknown", s, calls)
				}
				if v, ok := clusterMetricSample(t, c, n.base, "svc_x402_payments", `state="unknown"`); !ok || v != calls {
					t.Fatalf("%s: svc_x402_payments{state=\"unknown\"} = %d (exposed %v), want %d", n.name, v, ok, calls)
				}
				if got := len(stub.byNonce(t)); got != calls {
					t.Fatalf("the stub settled %d payments, want %d", got, calls)
				}
			}
			checkUnknown(second)
			if v, _ := clusterMetricSample(t, c, second.base, "svc_x402_recovered_total", `result="unknown"`); v != calls {
				t.Errorf("svc_x402_recovered_total{result=\"unknown\"} = %d, want %d", v, calls)
			}
			// The client presents its payment again: no answer invented,
			// nothing settled again.
			r := clusterMust(t, c, http.MethodPost, second.base+clusterToolPath, ps[0].body, ps[0].header)
			if r.status == http.StatusOK {
				t.Fatalf("an unknown payment presented again was answered 200: %s", r)
			}
			t.Logf("an unknown payment presented again: %s", r)
			checkUnknown(second)

			// Kept across a restart; recovery leaves them alone.
			clusterStop(t, c, second)
			third := clusterStartWith(t, "third", st.db, clusterOptions{facilitator: stub.base})
			checkUnknown(third)
			clusterStop(t, c, third)
		})
	}
}

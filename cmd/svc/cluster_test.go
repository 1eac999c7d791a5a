package main

// Multi-process tests of the durable state: two `svc serve` processes
// sharing one PostgreSQL, a SIGKILL in the middle of a paid-call load
// against SQLite, and parallel payments with a burst of replays of one
// authorization. The fault-injection proof of the payment engine (a kill
// at each step of a payment, the store refusing writes, a slow
// facilitator) is in fault_test.go. Each runs real processes built from this
// package (once per test binary) against real databases; PostgreSQL comes
// from SVC_TEST_DATABASE_URL, each test in a schema of its own.

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/seed1284c1d2/svc/x402"
	"github.com/seed1284c1d2/svc/x402/client"
	"github.com/seed1284c1d2/svc/x402/engine"
	"github.com/seed1284c1d2/svc/x402/exact"
	"github.com/seed1284c1d2/svc/x402/facilitator"
)

// TestMain gives the cluster tests a directory to build the svc binary in
// (once, on first use) and removes it after the run.
//
// With SVC_STUB_FACILITATOR set, the test binary is the stub facilitator
// of the fault-injection tests instead (stub_facilitator_test.go).
func TestMain(m *testing.M) {
	if os.Getenv(stubEnv) != "" {
		os.Exit(runStubFacilitator())
	}
	dir, err := os.MkdirTemp("", "svc-cluster-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "cluster tests: temporary directory:", err)
		os.Exit(1)
	}
	clusterBin.dir = dir
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// TestClusterTwoInstancesSharePostgres runs two `svc serve` processes on
// different ports with the same PostgreSQL schema. A payment settled by A is
// refused by B (and A) as a replay when presented for another request, and
// replayed idempotently by B (the recorded answer, no second settlement) for
// the same request. A referral code created on A and used by a paid call on
// B converts identically on both; the ledger, club status and referral
// counts agree on both instances.
func TestClusterTwoInstancesSharePostgres(t *testing.T) {
	dsn := clusterPGDSN(t)
	a := clusterStart(t, "A", dsn)
	b := clusterStart(t, "B", dsn)
	c := clusterHTTP(t)
	for _, n := range []*clusterNode{a, b} {
		var h struct {
			DevMode bool `json:"devMode"`
			Store   struct {
				Status string `json:"status"`
				Kind   string `json:"kind"`
			} `json:"store"`
		}
		clusterGetJSON(t, c, n.base+"/health", http.StatusOK, &h)
		if !h.DevMode || h.Store.Kind != "postgres" || h.Store.Status != "up" {
			t.Fatalf("%s health %+v", n.name, h)
		}
	}
	if a.base == b.base {
		t.Fatalf("both instances on %s", a.base)
	}
	pr := clusterOffer(t, c, a.base)
	if prB := clusterOffer(t, c, b.base); !reflect.DeepEqual(pr.Accepts, prB.Accepts) {
		t.Fatalf("the instances offer different terms:\nA %+v\nB %+v", pr.Accepts, prB.Accepts)
	}
	payer, owner := clusterSigner(t), clusterSigner(t)

	// A payment accepted by A.
	pay, nonce := clusterMustSign(t, payer, pr)
	req1 := clusterBody(clusterAddress())
	first := clusterMust(t, c, http.MethodPost, a.base+clusterToolPath, req1, pay)
	if first.status != http.StatusOK {
		t.Fatalf("paid call on A: %s", first)
	}
	st1, err := first.settlement()
	if err != nil || !st1.Success || !strings.HasPrefix(st1.Transaction, facilitator.LocalTransactionPrefix) || !strings.EqualFold(st1.Payer, payer.Address()) {
		t.Fatalf("A's payment response %+v %v", st1, err)
	}

	// The same authorization for another request: a replay, on B and on A.
	for _, n := range []*clusterNode{b, a} {
		other := clusterMust(t, c, http.MethodPost, n.base+clusterToolPath, clusterBody(clusterAddress()), pay)
		if other.status != http.StatusPaymentRequired || other.reason() != exact.ReasonNonceAlreadyUsed {
			t.Fatalf("replay for another request on %s: %s, want 402 %s", n.name, other, exact.ReasonNonceAlreadyUsed)
		}
		if other.header.Get(x402.HeaderPaymentResponse) != "" {
			t.Fatalf("replay on %s reached settlement: %s", n.name, other.header.Get(x402.HeaderPaymentResponse))
		}
	}
	// The same authorization for the same request on B: the recorded answer.
	again := clusterMust(t, c, http.MethodPost, b.base+clusterToolPath, req1, pay)
	if again.status != http.StatusOK || !bytes.Equal(again.body, first.body) {
		t.Fatalf("idempotent replay on B: %s, want the answer A gave: %s", again, first.body)
	}
	if st2, err := again.settlement(); err != nil || st2.Transaction != st1.Transaction || !st2.Success {
		t.Fatalf("B's replayed payment response %+v %v, want transaction %s", st2, err, st1.Transaction)
	}
	if sa, sb := clusterMetric(t, c, a.base, "svc_x402_settlements_total"), clusterMetric(t, c, b.base, "svc_x402_settlements_total"); sa != 1 || sb != 0 {
		t.Fatalf("settlements: A %d, B %d; want 1 and 0 (B must not settle a replay)", sa, sb)
	}

	// A referral code created on A is known to B.
	walletBody := `{"wallet":"` + owner.Address() + `"}`
	var created struct {
		Code        string `json:"code"`
		OwnerWallet string `json:"ownerWallet"`
		Created     bool   `json:"created"`
	}
	ca := clusterMust(t, c, http.MethodPost, a.base+"/api/club/referral/create", walletBody, "")
	if ca.status != http.StatusCreated || clusterUnmarshal(ca.body, &created) != nil || !created.Created || created.OwnerWallet != owner.Address() {
		t.Fatalf("referral create on A: %s", ca)
	}
	code := created.Code
	cb := clusterMust(t, c, http.MethodPost, b.base+"/api/club/referral/create", walletBody, "")
	if cb.status != http.StatusOK || clusterUnmarshal(cb.body, &created) != nil || created.Created || created.Code != code {
		t.Fatalf("referral create again on B: %s, want 200 with code %s", cb, code)
	}
	var rs struct {
		ReferredPayers int64 `json:"referredPayers"`
		PaidCalls      int64 `json:"paidCalls"`
	}
	clusterGetJSON(t, c, b.base+"/api/club/referral/"+code, http.StatusOK, &rs)
	if rs.ReferredPayers != 0 || rs.PaidCalls != 0 {
		t.Fatalf("fresh code on B: %+v", rs)
	}

	// A paid call on B carrying the code, and a self-referral on A.
	pay2, nonce2 := clusterMustSign(t, payer, pr)
	if r := clusterMust(t, c, http.MethodPost, b.base+clusterToolPath+"?ref="+code, clusterBody(clusterAddress()), pay2); r.status != http.StatusOK {
		t.Fatalf("referred paid call on B: %s", r)
	}
	pay3, nonce3 := clusterMustSign(t, owner, pr)
	if r := clusterMust(t, c, http.MethodPost, a.base+clusterToolPath+"?ref="+code, clusterBody(clusterAddress()), pay3); r.status != http.StatusOK {
		t.Fatalf("self-referred paid call on A: %s", r)
	}

	// The ledger: one row per settled payment, with the code.
	l := clusterPGLedger(t, dsn)
	if len(l.rows) != 3 {
		t.Fatalf("ledger rows %+v, want 3", l.rows)
	}
	wantRef := map[string]struct{ payer, ref string }{
		strings.ToLower(nonce):  {payer.Address(), ""},
		strings.ToLower(nonce2): {payer.Address(), code},
		strings.ToLower(nonce3): {owner.Address(), code},
	}
	for _, r := range l.rows {
		w, ok := wantRef[r.Nonce]
		if !ok || !strings.EqualFold(r.Payer, w.payer) || r.RefCode != w.ref || r.ToolKey != clusterToolKey || r.Amount != clusterToolAmount ||
			r.Network != pr.Accepts[0].Network || !strings.HasPrefix(r.Tx, facilitator.LocalTransactionPrefix) {
			t.Fatalf("ledger row %+v, want %+v", r, w)
		}
		delete(wantRef, r.Nonce)
	}
	if st := l.states(); st[engine.StateSettled] != 3 || len(st) != 1 {
		t.Fatalf("payments by state %v, want 3 settled and nothing else", st)
	}
	clusterCheckSettledRecorded(t, l)

	// Club status and referral counts agree on both instances.
	status := func(n *clusterNode, wallet string) clusterStatus {
		var s clusterStatus
		s.raw = clusterGetJSON(t, c, n.base+"/api/club/status?wallet="+wallet, http.StatusOK, &s)
		return s
	}
	for _, w := range []struct {
		wallet                                      string
		paid, referredPayers, referredCalls, toolsN int64
	}{
		{payer.Address(), 2, 0, 0, 1},
		{owner.Address(), 1, 1, 1, 1}, // the self-referral is not counted
	} {
		sa, sb := status(a, w.wallet), status(b, w.wallet)
		if sa.PaidCalls != w.paid || sa.ToolsBought != w.toolsN || sa.ReferredPayers != w.referredPayers || sa.ReferredPaidCalls != w.referredCalls {
			t.Fatalf("status of %s on A: %s", w.wallet, sa.raw)
		}
		if ja, jb := clusterSameBase(sa.raw, a.base, b.base), clusterSameBase(sb.raw, a.base, b.base); ja != jb {
			t.Fatalf("status of %s differs between the instances:\nA %s\nB %s", w.wallet, ja, jb)
		}
	}
	var ra, rb []byte
	ra = clusterGetJSON(t, c, a.base+"/api/club/referral/"+code, http.StatusOK, &rs)
	if rs.ReferredPayers != 1 || rs.PaidCalls != 1 {
		t.Fatalf("referral %s on A: %s, want 1 referred payer and 1 paid call", code, ra)
	}
	rb = clusterGetJSON(t, c, b.base+"/api/club/referral/"+code, http.StatusOK, &rs)
	if ja, jb := clusterSameBase(ra, a.base, b.base), clusterSameBase(rb, a.base, b.base); ja != jb {
		t.Fatalf("referral %s differs between the instances:\nA %s\nB %s", code, ja, jb)
	}
	clusterStop(t, c, a, b)
}

// clusterStatus is the part of GET /api/club/status the tests check.
type clusterStatus struct {
	PaidCalls         int64 `json:"paidCalls"`
	ToolsBought       int64 `json:"toolsBought"`
	ReferredPayers    int64 `json:"referredPayers"`
	ReferredPaidCalls int64 `json:"referredPaidCalls"`
	raw               []byte
}

// clusterSameBase replaces both instances' base URLs by one placeholder,
// the longer first (neither can then corrupt the other).
func clusterSameBase(body []byte, baseA, baseB string) string {
	s := string(body)
	if len(baseB) > len(baseA) {
		baseA, baseB = baseB, baseA
	}
	s = strings.ReplaceAll(s, baseA, "{base}")
	return strings.ReplaceAll(s, baseB, "{base}")
}

// TestDurabilitySIGKILLDuringPaidLoadSQLite runs paid calls from 6
// concurrent Go clients (client.New, one payer each, a fresh nonce per
// call) against `svc serve` on a SQLite file, kills the server with SIGKILL
// in the middle of the load, restarts it on the same file, and checks in
// the database that every 200 the clients received has its ledger row (same
// nonce, payer and transaction as the PAYMENT-RESPONSE said), that no
// payment is recorded twice, that the ledger and the settled payments of
// the journal match one to one, and that recovery resolves every payment
// the kill interrupted; the restarted server still replays a received
// answer and refuses its authorization for another request.
func TestDurabilitySIGKILLDuringPaidLoadSQLite(t *testing.T) {
	dbPath := filepath.Join(t.TempDir(), "data", "svc.db")
	first := clusterStart(t, "first", dbPath)
	c := clusterHTTP(t)
	pr := clusterOffer(t, c, first.base)

	type success struct {
		payer, nonce, tx, header, body string
		answer                         []byte
	}
	const workers = 6
	var (
		mu         sync.Mutex
		oks        []success
		unexpected []string
		okCount    atomic.Int64
		killed     atomic.Bool
		wg         sync.WaitGroup
	)
	stop := make(chan struct{})
	loadStart := time.Now()
	hardStop := loadStart.Add(10 * time.Second)
	signers := make([]*client.Signer, workers)
	for w := range workers {
		signers[w] = clusterSigner(t)
		capture := &clusterCapture{base: c.Transport}
		hc := client.New(signers[w], client.WithBase(capture))
		hc.Timeout = 10 * time.Second
		wg.Add(1)
		go func(s *client.Signer) {
			defer wg.Done()
			fail := func(format string, args ...any) {
				if killed.Load() {
					return // the server is gone: errors are expected
				}
				mu.Lock()
				unexpected = append(unexpected, fmt.Sprintf(format, args...))
				mu.Unlock()
			}
			for i := 0; i < 5000 && time.Now().Before(hardStop); i++ {
				select {
				case <-stop:
					return
				default:
				}
				body := clusterBody(clusterAddress())
				req, err := http.NewRequest(http.MethodPost, first.base+clusterToolPath, strings.NewReader(body))
				if err != nil {
					fail("request: %v", err)
					return
				}
				req.Header.Set("Content-Type", "application/json")
				capture.last = ""
				resp, err := hc.Do(req)
				if err != nil {
					fail("paid call: %v", err)
					return
				}
				answer, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				if err != nil {
					fail("paid call body: %v", err)
					return
				}
				if resp.StatusCode != http.StatusOK {
					fail("paid call: %d %s", resp.StatusCode, answer)
					return
				}
				sr, err := client.PaymentResponse(resp)
				if err != nil || !sr.Success {
					fail("payment response %+v %v", sr, err)
					return
				}
				nonce, err := clusterNonceOf(capture.last)
				if err != nil {
					fail("the payment sent: %v", err)
					return
				}
				mu.Lock()
				oks = append(oks, success{payer: s.Address(), nonce: nonce, tx: sr.Transaction, header: capture.last, body: body, answer: answer})
				mu.Unlock()
				okCount.Add(1)
			}
		}(signers[w])
	}

	// Kill in the middle: after a second of load and at least 25 answers.
	for time.Since(loadStart) < time.Second || okCount.Load() < 25 {
		if time.Since(loadStart) > 5*time.Second {
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	killed.Store(true)
	first.kill(t)
	killedAfter := time.Since(loadStart)
	close(stop)
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	if len(unexpected) > 0 {
		t.Fatalf("%d unexpected failures before the kill, first: %s", len(unexpected), unexpected[0])
	}
	if len(oks) < 10 {
		t.Fatalf("only %d paid calls succeeded before the kill at %v: the load did not run", len(oks), killedAfter)
	}
	if strings.Contains(first.out.String(), "did not record it") {
		t.Fatalf("the journal refused a settled payment before the kill:\n%s", first.out.String())
	}

	// Restart on the same file; the ledger is read from the database.
	second := clusterStart(t, "restarted", dbPath)
	var h struct {
		Store struct {
			Status string `json:"status"`
			Kind   string `json:"kind"`
		} `json:"store"`
	}
	clusterGetJSON(t, c, second.base+"/health", http.StatusOK, &h)
	if h.Store.Kind != "sqlite" || h.Store.Status != "up" {
		t.Fatalf("restarted health %+v", h)
	}
	l := clusterSQLiteLedger(t, dbPath)
	rows := map[string]clusterLedgerRow{}
	for nonce, n := range l.byNonce() {
		if n != 1 {
			t.Fatalf("nonce %s recorded %d times", nonce, n)
		}
	}
	for _, r := range l.rows {
		rows[r.Nonce] = r
		if st := l.payments[clusterNonceKey(pr, r.Payer, r.Nonce)]; st != engine.StateSettled {
			t.Fatalf("ledger row %+v: its authorization is %v in the payment journal, want settled", r, st)
		}
	}
	seen := map[string]bool{}
	for _, s := range oks {
		if seen[s.nonce] {
			t.Fatalf("the client sent nonce %s twice", s.nonce)
		}
		seen[s.nonce] = true
		r, ok := rows[strings.ToLower(s.nonce)]
		if !ok {
			t.Fatalf("a 200 the client received (nonce %s, transaction %s) has no ledger row after the SIGKILL", s.nonce, s.tx)
		}
		if !strings.EqualFold(r.Payer, s.payer) || r.Tx != s.tx || r.ToolKey != clusterToolKey || r.Amount != clusterToolAmount {
			t.Fatalf("ledger row %+v does not match the 200 received: payer %s transaction %s", r, s.payer, s.tx)
		}
	}
	extra := len(l.rows) - len(oks)
	if extra < 0 || extra > workers {
		t.Fatalf("%d ledger rows for %d answers received: at most %d calls were in flight", len(l.rows), len(oks), workers)
	}
	// Settled means recorded: no authorization is settled in the payment
	// journal without its ledger row, and no ledger row lacks a settled
	// authorization.
	clusterCheckSettledRecorded(t, l)
	byState := l.states()
	inFlight := byState[engine.StateReserved] + byState[engine.StateSettling]
	t.Logf("killed after %v: %d answers received, %d ledger rows (%d settled without the answer reaching the client), "+
		"%d payments left reserved and %d settling",
		killedAfter.Round(time.Millisecond), len(oks), len(l.rows), extra, byState[engine.StateReserved], byState[engine.StateSettling])
	if inFlight > workers {
		t.Fatalf("%d payments left in flight by the kill (%v); at most %d calls were in flight", inFlight, byState, workers)
	}
	// Recovery resolves what the kill interrupted: reservations released,
	// settling payments settled (and recorded) or released.
	clusterEventually(t, 45*time.Second, func() string {
		l = clusterSQLiteLedger(t, dbPath)
		if st := l.states(); st[engine.StateReserved]+st[engine.StateSettling] > 0 || st[engine.StateUnknown] > 0 {
			return fmt.Sprintf("payments by state after the restart: %v, want none reserved, settling or unknown", st)
		}
		return ""
	})
	clusterCheckSettledRecorded(t, l)
	for nonce, n := range l.byNonce() {
		if n != 1 {
			t.Fatalf("nonce %s recorded %d times after recovery", nonce, n)
		}
	}

	// The restarted server replays a received answer and refuses its
	// authorization for another request.
	s0 := oks[0]
	replay := clusterMust(t, c, http.MethodPost, second.base+clusterToolPath, s0.body, s0.header)
	if replay.status != http.StatusOK || !bytes.Equal(replay.body, s0.answer) {
		t.Fatalf("replay after the restart: %s, want %s", replay, s0.answer)
	}
	other := clusterMust(t, c, http.MethodPost, second.base+clusterToolPath, clusterBody(clusterAddress()), s0.header)
	if other.status != http.StatusPaymentRequired || other.reason() != exact.ReasonNonceAlreadyUsed {
		t.Fatalf("the same authorization for another request after the restart: %s", other)
	}
	// A new paid call settles, and the club counts the payer's ledger rows.
	hc := client.New(signers[0], client.WithBase(c.Transport))
	resp, err := hc.Post(second.base+clusterToolPath, "application/json", strings.NewReader(clusterBody(clusterAddress())))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("paid call after the restart: %d", resp.StatusCode)
	}
	var want int64 = 1
	for _, r := range l.rows {
		if strings.EqualFold(r.Payer, signers[0].Address()) {
			want++
		}
	}
	var st clusterStatus
	clusterGetJSON(t, c, second.base+"/api/club/status?wallet="+signers[0].Address(), http.StatusOK, &st)
	if st.PaidCalls != want {
		t.Fatalf("club status of %s: %d paid calls, the ledger has %d", signers[0].Address(), st.PaidCalls, want)
	}
	clusterStop(t, c, second)
	if n := len(clusterSQLiteLedger(t, dbPath).rows); n != len(l.rows)+1 {
		t.Fatalf("%d ledger rows after the new call, want %d", n, len(l.rows)+1)
	}
}

// clusterCapture remembers the last PAYMENT-SIGNATURE a Go client sent
// through it (one client per goroutine: no locking).
type clusterCapture struct {
	base http.RoundTripper
	last string
}

// RoundTrip implements http.RoundTripper.
func (c *clusterCapture) RoundTrip(r *http.Request) (*http.Response, error) {
	if h := r.Header.Get(x402.HeaderPaymentSignature); h != "" {
		c.last = h
	}
	return c.base.RoundTrip(r)
}

// TestConcurrencyOneSettlementPerNonce sends 200 paid calls with distinct
// nonces from 16 workers while a burst of 50 parallel presentations of one
// signed authorization (half for one request, half for another) arrives,
// against one instance and against two instances sharing PostgreSQL.
// Exactly one settlement per nonce: every distinct-nonce call settles once;
// of the burst exactly one presentation runs the handler and settles (the
// servers' settlement counters sum to 201 and the ledger holds one row per
// nonce), the other presentations of the same request get the recorded
// answer or "payment in progress", those of the other request are refused,
// and no presentation reaches the local facilitator's settlement twice (a
// second settlement would be refused there and answered with a failing
// PAYMENT-RESPONSE).
func TestConcurrencyOneSettlementPerNonce(t *testing.T) {
	for _, tc := range []struct {
		name  string
		nodes int
	}{{"one instance", 1}, {"two instances", 2}} {
		t.Run(tc.name, func(t *testing.T) { clusterConcurrency(t, tc.nodes) })
	}
}

func clusterConcurrency(t *testing.T, nodes int) {
	const calls, workers, burst = 200, 16, 50
	dsn := clusterPGDSN(t)
	var ns []*clusterNode
	for i := range nodes {
		ns = append(ns, clusterStart(t, fmt.Sprintf("node%d", i), dsn))
	}
	c := clusterHTTP(t)
	pr := clusterOffer(t, c, ns[0].base)

	type result struct {
		nonce, body string
		node, req   int
		ans         clusterAnswer
		err         error
	}
	replayer := clusterSigner(t)
	burstPay, burstNonce := clusterMustSign(t, replayer, pr)
	burstBodies := [2]string{clusterBody(clusterAddress()), clusterBody(clusterAddress())}
	paid := make([]result, calls)
	replays := make([]result, burst)
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
	defer cancel()
	start := make(chan struct{})
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		s := clusterSigner(t)
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			for {
				i := int(next.Add(1)) - 1
				if i >= calls {
					return
				}
				r := result{node: i % len(ns), body: clusterBody(clusterAddress())}
				var h string
				if h, r.nonce, r.err = clusterSign(s, pr); r.err == nil {
					r.ans, r.err = clusterDo(ctx, c, http.MethodPost, ns[r.node].base+clusterToolPath, r.body, h)
				}
				paid[i] = r
			}
		}()
	}
	for j := range burst {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := result{node: j % len(ns), req: (j / len(ns)) % 2, nonce: burstNonce}
			r.body = burstBodies[r.req]
			<-start
			r.ans, r.err = clusterDo(ctx, c, http.MethodPost, ns[r.node].base+clusterToolPath, r.body, burstPay)
			replays[j] = r
		}()
	}
	t0 := time.Now()
	close(start)
	wg.Wait()
	elapsed := time.Since(t0)

	sent := map[string]bool{strings.ToLower(burstNonce): true}
	for i, r := range paid {
		if r.err != nil {
			t.Fatalf("paid call %d: %v", i, r.err)
		}
		st, err := r.ans.settlement()
		if r.ans.status != http.StatusOK || err != nil || !st.Success {
			t.Fatalf("paid call %d on node%d: %s (payment response %+v %v)", i, r.node, r.ans, st, err)
		}
		if sent[strings.ToLower(r.nonce)] {
			t.Fatalf("nonce %s sent twice", r.nonce)
		}
		sent[strings.ToLower(r.nonce)] = true
	}

	// The burst: one winner request; its answer is the only 200 body.
	winner, winnerTx := -1, ""
	var winnerBody []byte
	counts := map[string]int{}
	for j, r := range replays {
		if r.err != nil {
			t.Fatalf("replay %d: %v", j, r.err)
		}
		switch r.ans.status {
		case http.StatusOK:
			st, err := r.ans.settlement()
			if err != nil || !st.Success {
				t.Fatalf("replay %d answered 200 without a successful payment response: %+v %v", j, st, err)
			}
			if winner == -1 {
				winner, winnerTx, winnerBody = r.req, st.Transaction, r.ans.body
			}
			if r.req != winner || st.Transaction != winnerTx || !bytes.Equal(r.ans.body, winnerBody) {
				t.Fatalf("the burst got 200s for two requests or two answers:\n%s (tx %s)\n%s (tx %s)", winnerBody, winnerTx, r.ans.body, st.Transaction)
			}
			counts["200"]++
		case http.StatusPaymentRequired:
			if v := r.ans.header.Get(x402.HeaderPaymentResponse); v != "" {
				t.Fatalf("replay %d reached settlement and failed there (a second settlement attempt): %s", j, r.ans)
			}
			reason := r.ans.reason()
			if reason != exact.ReasonNonceAlreadyUsed {
				t.Fatalf("replay %d: %s, want 402 %s", j, r.ans, exact.ReasonNonceAlreadyUsed)
			}
			counts["402 "+reason]++
		case http.StatusServiceUnavailable:
			if reason := r.ans.reason(); reason != engine.ReasonPaymentInProgress || r.ans.header.Get("Retry-After") == "" {
				t.Fatalf("replay %d: %s, want 503 %s with Retry-After", j, r.ans, engine.ReasonPaymentInProgress)
			}
			counts["503 "+engine.ReasonPaymentInProgress]++
		default:
			t.Fatalf("replay %d: %s", j, r.ans)
		}
	}
	if winner == -1 {
		t.Fatalf("no presentation of the burst settled: %v", counts)
	}
	for j, r := range replays {
		// The winning request's other presentations found it settled
		// (recorded answer) or in progress, never "already used".
		if r.req == winner && r.ans.status == http.StatusPaymentRequired {
			t.Fatalf("replay %d of the settled request: %s", j, r.ans)
		}
	}
	t.Logf("%d paid calls and a burst of %d replays over %d instance(s) in %v (%.0f calls/s); burst answers %v",
		calls, burst, len(ns), elapsed.Round(time.Millisecond), float64(calls+burst)/elapsed.Seconds(), counts)

	// Afterwards, on every instance: the winning request is replayed, the
	// other refused.
	for _, n := range ns {
		again := clusterMust(t, c, http.MethodPost, n.base+clusterToolPath, burstBodies[winner], burstPay)
		if st, err := again.settlement(); again.status != http.StatusOK || !bytes.Equal(again.body, winnerBody) || err != nil || st.Transaction != winnerTx {
			t.Fatalf("replay of the settled request on %s: %s", n.name, again)
		}
		if other := clusterMust(t, c, http.MethodPost, n.base+clusterToolPath, burstBodies[1-winner], burstPay); other.status != http.StatusPaymentRequired ||
			other.reason() != exact.ReasonNonceAlreadyUsed {
			t.Fatalf("the other request on %s: %s", n.name, other)
		}
	}

	// Exactly one handler run and settlement per nonce.
	var settled int64
	for _, n := range ns {
		settled += clusterMetric(t, c, n.base, "svc_x402_settlements_total")
	}
	if settled != calls+1 {
		t.Fatalf("the instances settled %d payments, want %d", settled, calls+1)
	}
	l := clusterPGLedger(t, dsn)
	if len(l.rows) != calls+1 {
		t.Fatalf("%d ledger rows, want %d", len(l.rows), calls+1)
	}
	for nonce, n := range l.byNonce() {
		if n != 1 || !sent[nonce] {
			t.Fatalf("nonce %s: %d ledger rows (sent: %v)", nonce, n, sent[nonce])
		}
	}
	for _, r := range l.rows {
		if r.Nonce == strings.ToLower(burstNonce) && (!strings.EqualFold(r.Payer, replayer.Address()) || r.Tx != winnerTx) {
			t.Fatalf("the burst's ledger row %+v, want payer %s transaction %s", r, replayer.Address(), winnerTx)
		}
	}
	if st := l.states(); st[engine.StateSettled] != calls+1 || len(st) != 1 {
		t.Fatalf("payments by state %v, want %d settled and nothing else", st, calls+1)
	}
	clusterCheckSettledRecorded(t, l)
	clusterStop(t, c, ns...)
}

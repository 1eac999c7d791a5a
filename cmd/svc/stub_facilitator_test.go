package main

// A stub x402 facilitator for the fault-injection tests, run as a process
// of its own: the test binary re-executed with SVC_STUB_FACILITATOR set
// (TestMain hands over to runStubFacilitator). Killing `svc serve` must
// never take the facilitator down with it, and what the facilitator
// settled must be readable after the fact: every settlement is one JSON
// line of a journal file, synced to disk before /settle answers.
//
// The stub verifies payments for real (exact.Verifier: signatures, amounts,
// time window), refuses an authorization it already settled at /verify,
// and at /settle answers a settlement presented again with its original
// result (deduplication, as the payment engine's recovery expects) or, in
// the non-deduplicating mode, with "nonce already used" (as the chain
// would). Settling takes a configurable time, during which a chain
// transaction would be in flight: it completes even if the caller goes
// away.

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/seed1284c1d2/svc/x402"
	"github.com/seed1284c1d2/svc/x402/exact"
	"github.com/seed1284c1d2/svc/x402/facilitator"
)

// Environment of the stub process.
const (
	// stubEnv, when set, makes the test binary run the stub and exit.
	stubEnv = "SVC_STUB_FACILITATOR"
	// stubEnvJournal is the journal file (created if absent, appended to,
	// read back at start: a restarted stub remembers its settlements).
	stubEnvJournal = "SVC_STUB_JOURNAL"
	// stubEnvSettleDelay is how long each new settlement takes (a Go
	// duration; 0 by default).
	stubEnvSettleDelay = "SVC_STUB_SETTLE_DELAY"
	// stubEnvNoDedup, set to 1, makes the stub answer "nonce already used"
	// to a settlement presented again instead of its original result.
	stubEnvNoDedup = "SVC_STUB_NO_DEDUP"
)

// stubTxPrefix starts the stub's transaction hashes' derivation (the hash
// itself is 0x + 64 hex digits, as on chain).
const stubTxPrefix = "svc stub facilitator settlement"

// stubJournalLine is one settlement in the stub's journal.
type stubJournalLine struct {
	Key         string    `json:"key"` // exact.NonceKey
	Network     string    `json:"network"`
	Asset       string    `json:"asset"`
	Payer       string    `json:"payer"`
	PayTo       string    `json:"payTo"`
	Amount      string    `json:"amount"`
	Nonce       string    `json:"nonce"`
	Signature   string    `json:"signature"`
	Transaction string    `json:"transaction"`
	SettledAt   time.Time `json:"settledAt"`
}

// response is the settlement's SettleResponse, as /settle answered it.
func (l stubJournalLine) response() x402.SettleResponse {
	return x402.SettleResponse{Success: true, Payer: l.Payer, Transaction: l.Transaction, Network: l.Network, Amount: l.Amount}
}

// stubFacilitator is the stub's x402.Facilitator. Safe for concurrent use.
type stubFacilitator struct {
	verifier exact.Verifier
	delay    atomic.Int64 // time.Duration of each new settlement
	dedup    bool
	journal  *os.File

	keys sync.Map // NonceKey → *sync.Mutex: one settlement at a time per authorization

	mu      sync.Mutex
	settled map[string]stubJournalLine // by NonceKey
	held    map[string]chan struct{}   // lower-case payer → closed on release

	settleCalls, verifyCalls, inFlight atomic.Int64
	// settleFault is the failure /settle simulates: "" (none),
	// stubFaultDown or stubFaultLost.
	settleFault atomic.Value
}

// Failures of /settle the stub can simulate (POST /_stub/settle-fault?mode=).
const (
	// stubFaultDown: /settle answers 503 and settles nothing.
	stubFaultDown = "down"
	// stubFaultLost: /settle settles (journaled), then the connection is
	// closed without an answer: the answer is lost on the way back.
	stubFaultLost = "lost"
)

// serveSettle serves POST /settle through inner, or simulates the
// configured failure.
func (f *stubFacilitator) serveSettle(inner http.Handler, w http.ResponseWriter, r *http.Request) {
	mode, _ := f.settleFault.Load().(string)
	switch mode {
	case stubFaultDown:
		f.settleCalls.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = w.Write([]byte(`{"error":"stub: the facilitator is down"}` + "\n"))
	case stubFaultLost:
		inner.ServeHTTP(httptest.NewRecorder(), r)
		hj, ok := w.(http.Hijacker)
		if !ok {
			panic("stub: the connection cannot be hijacked")
		}
		conn, _, err := hj.Hijack()
		if err == nil {
			_ = conn.Close()
		}
	default:
		inner.ServeHTTP(w, r)
	}
}

// serveSettleFault sets the failure /settle simulates (?mode=, empty for
// none).
func (f *stubFacilitator) serveSettleFault(w http.ResponseWriter, r *http.Request) {
	mode := r.URL.Query().Get("mode")
	if mode != "" && mode != stubFaultDown && mode != stubFaultLost {
		http.Error(w, "mode: want down, lost or nothing", http.StatusBadRequest)
		return
	}
	f.settleFault.Store(mode)
	w.WriteHeader(http.StatusNoContent)
}

var _ x402.Facilitator = (*stubFacilitator)(nil)

// runStubFacilitator is the stub process's main: it serves on 127.0.0.1:0,
// prints "stub facilitator listening on http://…" on stdout, and serves
// until killed. It returns the exit code.
func runStubFacilitator() int {
	fail := func(err error) int {
		fmt.Fprintln(os.Stderr, "stub facilitator:", err)
		return 1
	}
	f := &stubFacilitator{dedup: os.Getenv(stubEnvNoDedup) != "1", settled: map[string]stubJournalLine{}, held: map[string]chan struct{}{}}
	if d := os.Getenv(stubEnvSettleDelay); d != "" {
		v, err := time.ParseDuration(d)
		if err != nil {
			return fail(fmt.Errorf("%s: %w", stubEnvSettleDelay, err))
		}
		f.delay.Store(int64(v))
	}
	path := os.Getenv(stubEnvJournal)
	if path == "" {
		return fail(errors.New(stubEnvJournal + " is not set"))
	}
	lines, err := readStubJournal(path)
	if err != nil {
		return fail(err)
	}
	for _, l := range lines {
		f.settled[l.Key] = l
	}
	if f.journal, err = os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600); err != nil {
		return fail(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fail(err)
	}
	mux := http.NewServeMux()
	// The stub deduplicates by authorization itself; the handler's own
	// payment-identifier memory would hide the non-deduplicating mode.
	inner := facilitator.NewHandler(f, facilitator.HandlerConfig{IdentifierTTL: -1})
	mux.Handle("/", inner)
	mux.HandleFunc("POST /settle", func(w http.ResponseWriter, r *http.Request) { f.serveSettle(inner, w, r) })
	mux.HandleFunc("POST /_stub/settle-fault", f.serveSettleFault)
	mux.HandleFunc("POST /_stub/settle-delay", f.serveSettleDelay)
	mux.HandleFunc("POST /_stub/hold", f.serveHold)
	mux.HandleFunc("POST /_stub/release", f.serveRelease)
	mux.HandleFunc("GET /_stub/stats", f.serveStats)
	fmt.Printf("stub facilitator listening on http://%s (settle delay %v, deduplicating %v, %d settlements known)\n",
		ln.Addr(), time.Duration(f.delay.Load()), f.dedup, len(lines))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	return fail(srv.Serve(ln))
}

// Supported implements x402.Facilitator: exact on Base, v2 and v1.
func (f *stubFacilitator) Supported(context.Context) (x402.SupportedResponse, error) {
	n, _ := x402.LookupNetwork(x402.NetworkBase)
	return x402.SupportedResponse{Kinds: []x402.SupportedKind{
		{X402Version: 2, Scheme: x402.SchemeExact, Network: n.CAIP2},
		{X402Version: 1, Scheme: x402.SchemeExact, Network: n.V1Name},
	}, Signers: map[string][]string{}}, nil
}

// Verify implements x402.Facilitator: the local checks, and an
// authorization already settled is refused. A held payer's verification
// waits for the release (or for the caller to go away).
func (f *stubFacilitator) Verify(ctx context.Context, payload x402.PaymentPayload, req x402.PaymentRequirements) (x402.VerifyResponse, error) {
	f.verifyCalls.Add(1)
	payer, err := f.verifier.Verify(payload, req)
	if err != nil {
		return stubInvalid(payer, err), nil
	}
	f.mu.Lock()
	hold := f.held[strings.ToLower(payer)]
	f.mu.Unlock()
	if hold != nil {
		select {
		case <-hold:
		case <-ctx.Done():
			return x402.VerifyResponse{}, fmt.Errorf("stub: held verification abandoned: %w", ctx.Err())
		}
	}
	key, _ := stubKey(payload, req)
	f.mu.Lock()
	_, used := f.settled[key]
	f.mu.Unlock()
	if used {
		return x402.VerifyResponse{IsValid: false, InvalidReason: exact.ReasonNonceAlreadyUsed, InvalidMessage: "stub: this authorization was already settled", Payer: payer}, nil
	}
	return x402.VerifyResponse{IsValid: true, Payer: payer}, nil
}

// Settle implements x402.Facilitator. A settlement of an authorization
// already settled gets the original result (the same payment: signature
// and requirements) or "nonce already used" (another payment, or the
// non-deduplicating mode); it never writes a second journal line. A new
// one is checked, takes the configured delay whatever the caller does,
// and is journaled (synced) before the answer.
func (f *stubFacilitator) Settle(ctx context.Context, payload x402.PaymentPayload, req x402.PaymentRequirements) (x402.SettleResponse, error) {
	f.settleCalls.Add(1)
	key, ep := stubKey(payload, req)
	if key == "" {
		return x402.SettleResponse{Success: false, ErrorReason: exact.ReasonInvalidPayload, Network: req.Network}, nil
	}
	lock, _ := f.keys.LoadOrStore(key, &sync.Mutex{})
	lock.(*sync.Mutex).Lock()
	defer lock.(*sync.Mutex).Unlock()

	f.mu.Lock()
	prev, done := f.settled[key]
	f.mu.Unlock()
	if done {
		same := strings.EqualFold(prev.Signature, ep.Signature) && strings.EqualFold(prev.PayTo, req.PayTo) &&
			prev.Amount == req.Amount && strings.EqualFold(prev.Asset, req.Asset)
		if f.dedup && same {
			return prev.response(), nil
		}
		return x402.SettleResponse{Success: false, ErrorReason: exact.ReasonNonceAlreadyUsed, ErrorMessage: "stub: authorization already used",
			Payer: prev.Payer, Network: req.Network}, nil
	}
	payer, err := f.verifier.Verify(payload, req)
	if err != nil {
		vr := stubInvalid(payer, err)
		return x402.SettleResponse{Success: false, ErrorReason: vr.InvalidReason, ErrorMessage: vr.InvalidMessage, Payer: payer, Network: req.Network}, nil
	}
	f.inFlight.Add(1)
	defer f.inFlight.Add(-1)
	if d := time.Duration(f.delay.Load()); d > 0 {
		time.Sleep(d) // a transaction in flight: the caller leaving does not recall it
	}
	sum := sha256.Sum256([]byte(stubTxPrefix + "\x00" + key + "\x00" + strings.ToLower(ep.Signature)))
	line := stubJournalLine{Key: key, Network: req.Network, Asset: req.Asset, Payer: payer, PayTo: req.PayTo, Amount: req.Amount,
		Nonce: ep.Authorization.Nonce, Signature: ep.Signature, Transaction: "0x" + hex.EncodeToString(sum[:]), SettledAt: time.Now().UTC()}
	b, err := json.Marshal(line)
	if err != nil {
		return x402.SettleResponse{}, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, err := f.journal.Write(append(b, '\n')); err != nil {
		return x402.SettleResponse{}, fmt.Errorf("stub: journal: %w", err)
	}
	if err := f.journal.Sync(); err != nil {
		return x402.SettleResponse{}, fmt.Errorf("stub: journal sync: %w", err)
	}
	f.settled[key] = line
	return line.response(), nil
}

// serveSettleDelay sets the time each new settlement takes (?d=, a Go
// duration).
func (f *stubFacilitator) serveSettleDelay(w http.ResponseWriter, r *http.Request) {
	d, err := time.ParseDuration(r.URL.Query().Get("d"))
	if err != nil || d < 0 {
		http.Error(w, "d: want a duration", http.StatusBadRequest)
		return
	}
	f.delay.Store(int64(d))
	w.WriteHeader(http.StatusNoContent)
}

// serveHold holds the verifications of ?payer= until /_stub/release.
func (f *stubFacilitator) serveHold(w http.ResponseWriter, r *http.Request) {
	payer := strings.ToLower(r.URL.Query().Get("payer"))
	if !x402.IsValidAddress(payer) {
		http.Error(w, "payer: want an address", http.StatusBadRequest)
		return
	}
	f.mu.Lock()
	if f.held[payer] == nil {
		f.held[payer] = make(chan struct{})
	}
	f.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

// serveRelease releases every held payer.
func (f *stubFacilitator) serveRelease(w http.ResponseWriter, _ *http.Request) {
	f.mu.Lock()
	for p, ch := range f.held {
		close(ch)
		delete(f.held, p)
	}
	f.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

// stubStats is the answer of GET /_stub/stats.
type stubStats struct {
	VerifyCalls int64 `json:"verifyCalls"`
	SettleCalls int64 `json:"settleCalls"`
	InFlight    int64 `json:"inFlight"` // new settlements under way (in their delay)
	Settled     int   `json:"settled"`
}

func (f *stubFacilitator) serveStats(w http.ResponseWriter, _ *http.Request) {
	f.mu.Lock()
	st := stubStats{VerifyCalls: f.verifyCalls.Load(), SettleCalls: f.settleCalls.Load(), InFlight: f.inFlight.Load(), Settled: len(f.settled)}
	f.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(st)
}

// stubKey returns the authorization key of a payment and its parsed
// payload ("" when the payload is not an EIP-3009 authorization).
func stubKey(payload x402.PaymentPayload, req x402.PaymentRequirements) (string, exact.ExactEVMPayload) {
	ep, err := exact.ParseExactEVMPayload(payload.Payload)
	if err != nil {
		return "", ep
	}
	return exact.NonceKey(req.Network, req.Asset, ep.Authorization.From, ep.Authorization.Nonce), ep
}

// stubInvalid turns a Verifier error into a refusal.
func stubInvalid(payer string, err error) x402.VerifyResponse {
	var ve *exact.VerifyError
	if errors.As(err, &ve) {
		return x402.VerifyResponse{IsValid: false, InvalidReason: ve.Reason, InvalidMessage: ve.Message, Payer: payer}
	}
	return x402.VerifyResponse{IsValid: false, InvalidReason: x402.ReasonUnexpectedVerifyError, InvalidMessage: err.Error(), Payer: payer}
}

// readStubJournal reads a stub journal (absent: empty). A torn last line
// (a crash while writing: no final newline) is ignored; any other bad line
// is an error.
func readStubJournal(path string) ([]stubJournalLine, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []stubJournalLine
	parts := bytes.Split(data, []byte("\n"))
	for i, b := range parts {
		if len(bytes.TrimSpace(b)) == 0 {
			continue
		}
		var l stubJournalLine
		if err := json.Unmarshal(b, &l); err != nil {
			if i == len(parts)-1 {
				break // torn: never answered, never a settlement
			}
			return nil, fmt.Errorf("%s line %d: %w", path, i+1, err)
		}
		out = append(out, l)
	}
	return out, nil
}

// clusterStub is a running stub facilitator process.
type clusterStub struct {
	base    string
	journal string
	cmd     *exec.Cmd
	out     *clusterLog
	exited  chan struct{}
	waitErr error
}

// clusterStubOptions configures a stub process.
type clusterStubOptions struct {
	settleDelay time.Duration
	noDedup     bool
	// journal is the journal file; empty means a new one in t.TempDir().
	journal string
}

var clusterStubListeningRE = regexp.MustCompile(`stub facilitator listening on (http://127\.0\.0\.1:[0-9]+)`)

// clusterStartStub starts the stub facilitator (this test binary run
// again) and waits for its address. It is killed at cleanup.
func clusterStartStub(t *testing.T, o clusterStubOptions) *clusterStub {
	t.Helper()
	if o.journal == "" {
		o.journal = t.TempDir() + "/stub-journal.jsonl"
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(self)
	cmd.Env = append(clusterEnv(), stubEnv+"=1", stubEnvJournal+"="+o.journal, stubEnvSettleDelay+"="+o.settleDelay.String())
	if o.noDedup {
		cmd.Env = append(cmd.Env, stubEnvNoDedup+"=1")
	}
	s := &clusterStub{journal: o.journal, cmd: cmd, out: &clusterLog{}, exited: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = s.out, s.out
	if err := cmd.Start(); err != nil {
		t.Fatalf("start the stub facilitator: %v", err)
	}
	go func() { s.waitErr = cmd.Wait(); close(s.exited) }()
	t.Cleanup(func() {
		select {
		case <-s.exited:
		default:
			_ = cmd.Process.Kill()
			<-s.exited
		}
		if t.Failed() {
			t.Logf("output of the stub facilitator:\n%s", clusterTail(s.out.String(), 4000))
		}
	})
	deadline := time.Now().Add(30 * time.Second)
	for {
		if m := clusterStubListeningRE.FindStringSubmatch(s.out.String()); m != nil {
			s.base = m[1]
			return s
		}
		select {
		case <-s.exited:
			t.Fatalf("the stub facilitator exited before listening (%v):\n%s", s.waitErr, s.out.String())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("the stub facilitator did not print its address:\n%s", s.out.String())
		}
	}
}

// lines reads the stub's journal.
func (s *clusterStub) lines(t *testing.T) []stubJournalLine {
	t.Helper()
	l, err := readStubJournal(s.journal)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// byNonce indexes the journal by lower-case nonce, failing the test on a
// nonce settled twice.
func (s *clusterStub) byNonce(t *testing.T) map[string]stubJournalLine {
	t.Helper()
	m := map[string]stubJournalLine{}
	for _, l := range s.lines(t) {
		n := strings.ToLower(l.Nonce)
		if _, dup := m[n]; dup {
			t.Fatalf("the facilitator settled nonce %s twice", n)
		}
		m[n] = l
	}
	return m
}

// stats reads GET /_stub/stats.
func (s *clusterStub) stats(t *testing.T, c *http.Client) stubStats {
	t.Helper()
	var st stubStats
	clusterGetJSON(t, c, s.base+"/_stub/stats", http.StatusOK, &st)
	return st
}

// hold makes the stub's /verify of payer wait until release.
func (s *clusterStub) hold(t *testing.T, c *http.Client, payer string) {
	t.Helper()
	if a := clusterMust(t, c, http.MethodPost, s.base+"/_stub/hold?payer="+payer, "", ""); a.status != http.StatusNoContent {
		t.Fatalf("hold %s: %s", payer, a)
	}
}

// settleFault makes /settle simulate a failure (stubFaultDown,
// stubFaultLost) or, with "", work again.
func (s *clusterStub) settleFault(t *testing.T, c *http.Client, mode string) {
	t.Helper()
	if a := clusterMust(t, c, http.MethodPost, s.base+"/_stub/settle-fault?mode="+mode, "", ""); a.status != http.StatusNoContent {
		t.Fatalf("settle fault %q: %s", mode, a)
	}
}

// settleDelay sets the time each new settlement takes from now on.
func (s *clusterStub) settleDelay(t *testing.T, c *http.Client, d time.Duration) {
	t.Helper()
	if a := clusterMust(t, c, http.MethodPost, s.base+"/_stub/settle-delay?d="+d.String(), "", ""); a.status != http.StatusNoContent {
		t.Fatalf("settle delay %v: %s", d, a)
	}
}

// release lets every held verification go on.
func (s *clusterStub) release(t *testing.T, c *http.Client) {
	t.Helper()
	if a := clusterMust(t, c, http.MethodPost, s.base+"/_stub/release", "", ""); a.status != http.StatusNoContent {
		t.Fatalf("release: %s", a)
	}
}

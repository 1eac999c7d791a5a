package engine_test

import (
	"context"
	"crypto/ecdsa"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/big"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"
	"github.com/ethereum/go-ethereum/common/hexutil"
	"github.com/ethereum/go-ethereum/crypto"
	"github.com/leanovate/gopter"
	"github.com/leanovate/gopter/gen"
	"github.com/leanovate/gopter/prop"

	"github.com/seed1284c1d2/svc/internal/schemetest"
	"github.com/seed1284c1d2/svc/x402"
	"github.com/seed1284c1d2/svc/x402/engine"
	"github.com/seed1284c1d2/svc/x402/exact"
	exactserver "github.com/seed1284c1d2/svc/x402/exact/server"
)

const (
	// testKeyHex is the payer's key (a public test key).
	testKeyHex = "ac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80"
	// testPayTo receives the payments.
	testPayTo = "0x70997970C51812dc3A010C7d01b50e0d17dc79C8"
	// testOther is an address that is not the payTo.
	testOther = "0x000000000000000000000000000000000000dEaD"
	// testAmount is the offer's price in atomic units (0.0025 USDC).
	testAmount = "2500"
)

// fakeClock is a settable clock.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// settleMode says what chainFacilitator does with a settlement of an
// authorization it has not settled yet.
type settleMode int

const (
	settleOK       settleMode = iota // settles and answers
	settleLost                       // settles, but the answer is lost (an error)
	settleTimeout                    // nothing happens; the call times out
	settleRefuse                     // refused before anything reached the chain
	settleSaysUsed                   // a facilitator that does not deduplicate: "already used", always
)

func (m settleMode) String() string {
	return [...]string{"ok", "lost", "timeout", "refuse", "says-used"}[m]
}

// chainFacilitator models a deduplicating facilitator in front of a
// chain: an authorization is transferred at most once, and presenting it
// again returns the original result (except in settleSaysUsed mode). With
// a journal, it checks on every Settle that a settling row exists (no
// settle without a durable intent).
type chainFacilitator struct {
	journal engine.Journal

	verifies atomic.Int64
	settles  atomic.Int64 // Settle calls

	mu         sync.Mutex
	mode       settleMode
	used       map[string]x402.SettleResponse // by journal key
	transfers  int
	violations []string
}

func newChain(j engine.Journal) *chainFacilitator {
	return &chainFacilitator{journal: j, used: map[string]x402.SettleResponse{}}
}

func paymentKey(p x402.PaymentPayload, req x402.PaymentRequirements) (string, exact.ExactEVMPayload, error) {
	ep, err := exact.ParseExactEVMPayload(p.Payload)
	if err != nil {
		return "", ep, err
	}
	return exact.NonceKey(req.Network, req.Asset, ep.Authorization.From, ep.Authorization.Nonce), ep, nil
}

func (f *chainFacilitator) Verify(_ context.Context, p x402.PaymentPayload, req x402.PaymentRequirements) (x402.VerifyResponse, error) {
	f.verifies.Add(1)
	key, ep, err := paymentKey(p, req)
	if err != nil {
		return x402.VerifyResponse{IsValid: false, InvalidReason: exact.ReasonInvalidPayload}, nil
	}
	f.mu.Lock()
	_, used := f.used[key]
	f.mu.Unlock()
	if used {
		return x402.VerifyResponse{IsValid: false, InvalidReason: exact.ReasonNonceAlreadyUsed, Payer: ep.Authorization.From}, nil
	}
	return x402.VerifyResponse{IsValid: true, Payer: ep.Authorization.From}, nil
}

func (f *chainFacilitator) Settle(ctx context.Context, p x402.PaymentPayload, req x402.PaymentRequirements) (x402.SettleResponse, error) {
	f.settles.Add(1)
	key, ep, err := paymentKey(p, req)
	if err != nil {
		return x402.SettleResponse{}, fmt.Errorf("chain: %w", err)
	}
	if f.journal != nil {
		rec, err := f.journal.Get(ctx, key)
		if err != nil || rec.State != engine.StateSettling {
			f.mu.Lock()
			f.violations = append(f.violations, fmt.Sprintf("settle of %s without a settling row (%s, %v)", key, rec.State, err))
			f.mu.Unlock()
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.mode == settleSaysUsed {
		return x402.SettleResponse{Success: false, ErrorReason: exact.ReasonNonceAlreadyUsed, Network: req.Network}, nil
	}
	if sr, ok := f.used[key]; ok {
		return sr, nil
	}
	switch f.mode {
	case settleTimeout:
		return x402.SettleResponse{}, fmt.Errorf("chain: %w", context.DeadlineExceeded)
	case settleRefuse:
		return x402.SettleResponse{Success: false, ErrorReason: "invalid_exact_evm_insufficient_balance", Network: req.Network}, nil
	}
	f.transfers++
	sr := x402.SettleResponse{Success: true, Transaction: fmt.Sprintf("0x%064x", f.transfers), Network: req.Network,
		Payer: ep.Authorization.From, Amount: req.Amount}
	f.used[key] = sr
	if f.mode == settleLost {
		return x402.SettleResponse{}, errors.New("chain: connection reset after the transaction was sent")
	}
	return sr, nil
}

func (f *chainFacilitator) Supported(context.Context) (x402.SupportedResponse, error) {
	return x402.SupportedResponse{}, nil
}

func (f *chainFacilitator) setMode(m settleMode) {
	f.mu.Lock()
	f.mode = m
	f.mu.Unlock()
}

// state returns the transfers made and the invariant violations seen.
func (f *chainFacilitator) state() (transfers int, violations []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.transfers, append([]string(nil), f.violations...)
}

// transaction returns the transaction of an authorization, "" if unused.
func (f *chainFacilitator) transaction(key string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.used[key].Transaction
}

// statusFacilitator is a chainFacilitator that also answers status
// queries: truthfully, or as override says.
type statusFacilitator struct {
	*chainFacilitator
	now      func() time.Time
	statuses atomic.Int64
	override func(truth x402.AuthorizationStatus) (x402.AuthorizationStatus, error)
}

var _ x402.StatusChecker = (*statusFacilitator)(nil)

func (f *statusFacilitator) Status(_ context.Context, p x402.PaymentPayload, req x402.PaymentRequirements) (x402.AuthorizationStatus, error) {
	f.statuses.Add(1)
	key, ep, err := paymentKey(p, req)
	if err != nil {
		return x402.AuthorizationStatus{}, fmt.Errorf("status: %w", err)
	}
	var st x402.AuthorizationStatus
	vb, _ := new(big.Int).SetString(ep.Authorization.ValidBefore, 10)
	st.Expired = vb != nil && vb.Cmp(big.NewInt(f.now().Unix())) <= 0
	f.mu.Lock()
	sr, used := f.used[key]
	f.mu.Unlock()
	if used {
		st.Used, st.Transaction = true, sr.Transaction
		st.Payer, st.PayTo, st.Amount, st.Asset, st.Network = ep.Authorization.From, req.PayTo, req.Amount, req.Asset, req.Network
	}
	if f.override != nil {
		return f.override(st)
	}
	return st, nil
}

// faultyJournal fails chosen journal methods.
type faultyJournal struct {
	engine.Journal
	mu   sync.Mutex
	fail map[string]int // method → failures left (negative: always)
}

var errInjected = errors.New("injected journal failure")

func (j *faultyJournal) failing(method string, n int) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.fail == nil {
		j.fail = map[string]int{}
	}
	j.fail[method] = n
}

func (j *faultyJournal) fault(method string) error {
	j.mu.Lock()
	defer j.mu.Unlock()
	n := j.fail[method]
	if n == 0 {
		return nil
	}
	if n > 0 {
		j.fail[method] = n - 1
	}
	return fmt.Errorf("journal %s: %w", method, errInjected)
}

func (j *faultyJournal) Reserve(ctx context.Context, r engine.Reservation, maxAttempts int) (engine.Record, error) {
	if err := j.fault("Reserve"); err != nil {
		return engine.Record{}, err
	}
	return j.Journal.Reserve(ctx, r, maxAttempts)
}

func (j *faultyJournal) Settling(ctx context.Context, key, owner string, s engine.Settling) error {
	if err := j.fault("Settling"); err != nil {
		return err
	}
	return j.Journal.Settling(ctx, key, owner, s)
}

func (j *faultyJournal) Settle(ctx context.Context, key string, sr x402.SettleResponse, at time.Time) error {
	if err := j.fault("Settle"); err != nil {
		return err
	}
	return j.Journal.Settle(ctx, key, sr, at)
}

// harness holds what the engines of one test share: a clock, a
// MemoryJournal, the offer, the payer's key and the observed events.
type harness struct {
	t       *testing.T
	clock   *fakeClock
	journal *engine.MemoryJournal
	offer   *engine.Offer
	payer   *ecdsa.PrivateKey

	mu     sync.Mutex
	events []engine.Event
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	key, err := crypto.HexToECDSA(testKeyHex)
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{
		t:       t,
		clock:   &fakeClock{t: time.Now().Truncate(time.Second)},
		journal: engine.NewMemoryJournal(),
		payer:   key,
	}
	h.offer = h.newOffer(x402.Route{Price: "0.0025", PayTo: testPayTo})
	return h
}

// newOffer builds the offer of routes with the exact scheme.
func (h *harness) newOffer(routes ...x402.Route) *engine.Offer {
	return schemetest.ExactOffer(h.t, "POST /api/tool", "tool", routes...)
}

// exact is the exact scheme settling through fac, on the harness's
// clock, edited by edit.
func (h *harness) exact(fac x402.Facilitator, edit ...func(c *exactserver.Config)) *exactserver.Server {
	h.t.Helper()
	cfg := exactserver.Config{Facilitator: fac, Now: h.clock.Now}
	for _, ed := range edit {
		ed(&cfg)
	}
	s, err := exactserver.New(cfg)
	if err != nil {
		h.t.Fatal(err)
	}
	return s
}

// withExact is an engine edit registering h.exact(fac, edit...) as its
// only scheme.
func (h *harness) withExact(fac x402.Facilitator, edit ...func(c *exactserver.Config)) func(c *engine.Config) {
	s := h.exact(fac, edit...)
	return func(c *engine.Config) { c.Schemes = []x402.ServerScheme{s} }
}

// newEngine builds an engine named instance on the harness's journal and
// clock.
func (h *harness) newEngine(fac x402.Facilitator, instance string, mutate ...func(c *engine.Config)) *engine.Engine {
	h.t.Helper()
	cfg := engine.Config{
		Schemes:  []x402.ServerScheme{h.exact(fac)},
		Journal:  h.journal,
		Now:      h.clock.Now,
		Instance: instance,
		Logger:   slog.New(slog.DiscardHandler),
		Observe: func(ev engine.Event) {
			h.mu.Lock()
			h.events = append(h.events, ev)
			h.mu.Unlock()
		},
	}
	for _, m := range mutate {
		m(&cfg)
	}
	e, err := engine.New(cfg)
	if err != nil {
		h.t.Fatal(err)
	}
	return e
}

func (h *harness) req() x402.PaymentRequirements { return h.offer.PaymentRequired.Accepts[0] }

// sign signs a payment of the offer valid for validity from now.
func (h *harness) sign(validity time.Duration) x402.PaymentPayload {
	h.t.Helper()
	p, err := exact.NewPayload(h.payer, h.req(), h.clock.Now(), validity)
	if err != nil {
		h.t.Fatal(err)
	}
	return h.wrap(p)
}

func (h *harness) wrap(p exact.ExactEVMPayload) x402.PaymentPayload {
	h.t.Helper()
	raw, err := json.Marshal(p)
	if err != nil {
		h.t.Fatal(err)
	}
	return x402.PaymentPayload{X402Version: 2, Accepted: h.req(), Payload: raw}
}

// keyOf is the journal key of a payment.
func (h *harness) keyOf(p x402.PaymentPayload) string {
	h.t.Helper()
	key, _, err := paymentKey(p, h.req())
	if err != nil {
		h.t.Fatal(err)
	}
	return key
}

// row returns the journal row of a payment.
func (h *harness) row(p x402.PaymentPayload) engine.Record {
	h.t.Helper()
	rec, err := h.journal.Get(context.Background(), h.keyOf(p))
	if err != nil {
		h.t.Fatalf("journal row: %v", err)
	}
	return rec
}

func (h *harness) call(p x402.PaymentPayload, fingerprint string) engine.Call {
	return engine.Call{Offer: h.offer, Fingerprint: fingerprint, Payment: &p, Transport: "test", RequestID: "req-" + fingerprint}
}

// observed returns the events seen so far.
func (h *harness) observed() []engine.Event {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]engine.Event(nil), h.events...)
}

// runs counts the calls of the run functions it makes.
type runs struct{ n atomic.Int64 }

// answer returns a run function answering body.
func (r *runs) answer(body string) engine.RunFunc {
	return func(context.Context) (engine.Answer, error) {
		r.n.Add(1)
		return engine.Answer{Status: 200, Header: map[string][]string{"Content-Type": {"application/json"}}, Body: []byte(body)}, nil
	}
}

// fail returns a run function failing with an answer.
func (r *runs) fail() engine.RunFunc {
	return func(context.Context) (engine.Answer, error) {
		r.n.Add(1)
		return engine.Answer{Status: 503, Body: []byte(`{"title":"down"}`)}, errors.New("upstream down")
	}
}

// panics returns a run function that panics.
func (r *runs) panics() engine.RunFunc {
	return func(context.Context) (engine.Answer, error) {
		r.n.Add(1)
		panic("the tool broke")
	}
}

func wantKind(t *testing.T, out engine.Outcome, kind engine.OutcomeKind, reason string) {
	t.Helper()
	if out.Kind != kind || out.Reason != reason {
		t.Fatalf("outcome %s %q (err %v), want %s %q", out.Kind, out.Reason, out.Err, kind, reason)
	}
}

// TestPaymentRequired checks a call without payment: the offer with the
// reason, or the call's own PaymentRequired when it sets one.
func TestPaymentRequired(t *testing.T) {
	h := newHarness(t)
	chain := newChain(nil)
	e := h.newEngine(chain, "a")
	var r runs
	out := e.Serve(context.Background(), engine.Call{Offer: h.offer, Transport: "test"}, r.answer("{}"))
	wantKind(t, out, engine.PaymentRequired, engine.ReasonPaymentRequired)
	if pr := out.PaymentRequired; pr == nil || pr.X402Version != 2 || pr.Error != engine.ReasonPaymentRequired || len(pr.Accepts) != 1 ||
		pr.Accepts[0].Amount != testAmount || out.Version != 2 {
		t.Fatalf("payment required %+v", out.PaymentRequired)
	}
	own := h.offer.PaymentRequired
	own.Resource.URL = "https://api.example.com/api/tool?x=1"
	out = e.Serve(context.Background(), engine.Call{Offer: h.offer, PaymentRequired: &own}, r.answer("{}"))
	if out.PaymentRequired.Resource.URL != own.Resource.URL || h.offer.PaymentRequired.Resource.URL != "" {
		t.Fatalf("resource %q (offer's %q)", out.PaymentRequired.Resource.URL, h.offer.PaymentRequired.Resource.URL)
	}
	if r.n.Load() != 0 || chain.verifies.Load() != 0 {
		t.Fatal("an unpaid call ran or reached the facilitator")
	}
}

// TestReplayOnlyToSameFingerprint checks that a settled payment's recorded
// answer and settlement are replayed to the same fingerprint only; another
// fingerprint is refused as a used authorization; nothing runs or settles
// again.
func TestReplayOnlyToSameFingerprint(t *testing.T) {
	h := newHarness(t)
	chain := newChain(h.journal)
	e := h.newEngine(chain, "a")
	p := h.sign(0)
	var r runs
	paid := e.Serve(context.Background(), h.call(p, "A"), r.answer(`{"n":1}`))
	wantKind(t, paid, engine.Paid, "")
	if string(paid.Answer.Body) != `{"n":1}` || !paid.Settlement.Success || paid.Settlement.Transaction == "" ||
		paid.Key != h.keyOf(p) || !strings.EqualFold(paid.Payer, crypto.PubkeyToAddress(h.payer.PublicKey).Hex()) {
		t.Fatalf("paid %+v", paid)
	}
	for range 2 {
		again := e.Serve(context.Background(), h.call(p, "A"), r.answer(`{"n":2}`))
		wantKind(t, again, engine.Replayed, "")
		if !reflect.DeepEqual(again.Answer, paid.Answer) || !reflect.DeepEqual(again.Settlement, paid.Settlement) {
			t.Fatalf("replay %+v %+v, paid %+v %+v", again.Answer, again.Settlement, paid.Answer, paid.Settlement)
		}
	}
	other := e.Serve(context.Background(), h.call(p, "B"), r.answer(`{"n":3}`))
	wantKind(t, other, engine.Refused, exact.ReasonNonceAlreadyUsed)
	if other.PaymentRequired == nil || other.PaymentRequired.Error != exact.ReasonNonceAlreadyUsed || other.Answer != nil {
		t.Fatalf("refusal %+v", other)
	}
	if r.n.Load() != 1 || chain.settles.Load() != 1 || chain.verifies.Load() != 1 || len(h.journal.Ledger()) != 1 {
		t.Fatalf("runs %d settles %d verifies %d ledger %d", r.n.Load(), chain.settles.Load(), chain.verifies.Load(), len(h.journal.Ledger()))
	}
	// Another engine on the same journal (another instance) replays too.
	e2 := h.newEngine(chain, "b")
	wantKind(t, e2.Serve(context.Background(), h.call(p, "A"), r.answer("{}")), engine.Replayed, "")
	wantKind(t, e2.Serve(context.Background(), h.call(p, "B"), r.answer("{}")), engine.Refused, exact.ReasonNonceAlreadyUsed)
	if _, v := chain.state(); len(v) != 0 {
		t.Fatal(v)
	}
}

// TestRetention checks what a payment's row keeps and how long: the
// answer for AnswerRetention whatever validBefore says (even 2^256−1), the
// key until validBefore capped by KeyRetention; once the answer is
// forgotten, the payment is no longer replayed.
func TestRetention(t *testing.T) {
	h := newHarness(t)
	chain := newChain(h.journal)
	const answerFor, keyFor = 2 * time.Hour, 48 * time.Hour
	e := h.newEngine(chain, "a", func(c *engine.Config) { c.AnswerRetention, c.KeyRetention = answerFor, keyFor })
	var r runs

	// validBefore = 2^256 − 1, signed as such.
	req := h.req()
	n, ok := x402.LookupNetwork(req.Network)
	if !ok {
		t.Fatal("unknown network")
	}
	n.EIP712Name, n.EIP712Version = req.Extra["name"].(string), req.Extra["version"].(string)
	nonce, err := exact.NewNonce()
	if err != nil {
		t.Fatal(err)
	}
	maxUint256 := new(big.Int).Sub(new(big.Int).Lsh(big.NewInt(1), 256), big.NewInt(1)).String()
	auth := exact.Authorization{From: crypto.PubkeyToAddress(h.payer.PublicKey).Hex(), To: req.PayTo, Value: req.Amount,
		ValidAfter: "0", ValidBefore: maxUint256, Nonce: nonce}
	sig, err := exact.SignAuthorization(h.payer, n, req.Asset, auth)
	if err != nil {
		t.Fatal(err)
	}
	far := h.wrap(exact.ExactEVMPayload{Signature: sig, Authorization: auth})
	now := h.clock.Now()
	wantKind(t, e.Serve(context.Background(), h.call(far, "A"), r.answer("{}")), engine.Paid, "")
	rec := h.row(far)
	if !rec.AnswerUntil.Equal(now.Add(answerFor)) || rec.KeepUntil.After(now.Add(keyFor)) || rec.KeepUntil.Before(now) {
		t.Fatalf("answer until %s, keep until %s; now %s", rec.AnswerUntil, rec.KeepUntil, now)
	}

	// A short validBefore bounds the key's retention.
	short := h.sign(10 * time.Minute)
	wantKind(t, e.Serve(context.Background(), h.call(short, "A"), r.answer("{}")), engine.Paid, "")
	ep, _ := exact.ParseExactEVMPayload(short.Payload)
	vb, _ := new(big.Int).SetString(ep.Authorization.ValidBefore, 10)
	if rec := h.row(short); !rec.KeepUntil.Equal(time.Unix(vb.Int64(), 0)) || !rec.AnswerUntil.Equal(now.Add(answerFor)) {
		t.Fatalf("short: keep until %s, validBefore %s", rec.KeepUntil, time.Unix(vb.Int64(), 0))
	}

	// Past the answer's retention, the answer is forgotten and the payment
	// refused as used (the key is kept).
	h.clock.Advance(answerFor + time.Minute)
	if got, err := h.journal.Prune(context.Background(), h.clock.Now(), engine.PruneOptions{}); err != nil || got.Forgotten != 1 {
		t.Fatalf("prune: %d forgotten, %v", got.Forgotten, err)
	}
	wantKind(t, e.Serve(context.Background(), h.call(far, "A"), r.answer("{}")), engine.Refused, exact.ReasonNonceAlreadyUsed)
	if r.n.Load() != 2 || chain.settles.Load() != 2 {
		t.Fatalf("runs %d settles %d", r.n.Load(), chain.settles.Load())
	}
}

// pendingRow leaves a settling row owned by engine a (which never beats,
// so it counts as dead): the facilitator settles in mode, and its answer
// does not come back (settleLost) or nothing happens (settleTimeout).
func pendingRow(t *testing.T, h *harness, chain *chainFacilitator, a *engine.Engine, mode settleMode, fingerprint string) x402.PaymentPayload {
	t.Helper()
	p := h.sign(time.Hour)
	chain.setMode(mode)
	defer chain.setMode(settleOK)
	var r runs
	out := a.Serve(context.Background(), h.call(p, fingerprint), r.answer(`{"fp":"`+fingerprint+`"}`))
	wantKind(t, out, engine.Pending, engine.ReasonSettlementPending)
	if rec := h.row(p); rec.State != engine.StateSettling || rec.Owner != a.Instance() {
		t.Fatalf("row %s owned by %q", rec.State, rec.Owner)
	}
	return p
}

// TestSettleErrorIsPending checks a settlement without a decision: Pending
// (the answer withheld), the row stays settling with the answer, and the
// same request is in progress without a second settlement.
func TestSettleErrorIsPending(t *testing.T) {
	h := newHarness(t)
	chain := newChain(h.journal)
	e := h.newEngine(chain, "a")
	p := h.sign(time.Hour)
	chain.setMode(settleTimeout)
	var r runs
	out := e.Serve(context.Background(), h.call(p, "A"), r.answer(`{"secret":1}`))
	wantKind(t, out, engine.Pending, engine.ReasonSettlementPending)
	if out.Answer != nil || out.Settlement != nil || out.RetryAfter <= 0 || !errors.Is(out.Err, context.DeadlineExceeded) {
		t.Fatalf("pending %+v", out)
	}
	rec := h.row(p)
	if rec.State != engine.StateSettling || rec.Answer == nil || string(rec.Answer.Body) != `{"secret":1}` ||
		len(rec.Payload) == 0 || len(rec.Requirements) == 0 {
		t.Fatalf("row %+v", rec)
	}
	chain.setMode(settleOK)
	again := e.Serve(context.Background(), h.call(p, "A"), r.answer("{}"))
	wantKind(t, again, engine.InProgress, engine.ReasonPaymentInProgress)
	if again.RetryAfter < time.Second || again.RetryAfter > 5*time.Second || again.PaymentRequired == nil {
		t.Fatalf("in progress %+v", again)
	}
	wantKind(t, e.Serve(context.Background(), h.call(p, "B"), r.answer("{}")), engine.Refused, exact.ReasonNonceAlreadyUsed)
	if r.n.Load() != 1 || chain.settles.Load() != 1 {
		t.Fatalf("runs %d settles %d", r.n.Load(), chain.settles.Load())
	}
	if rec := h.row(p); rec.State != engine.StateSettling {
		t.Fatalf("row %s", rec.State)
	}
}

// TestSettleRefusals checks the facilitator's refusals: "already used"
// fails the row for good; a refusal with a transaction stays settling; any
// other refusal releases it (one attempt). A refusal that may have
// reached the chain is pending, not failed.
func TestSettleRefusals(t *testing.T) {
	for _, tc := range []struct {
		name     string
		resp     x402.SettleResponse
		state    engine.State
		attempts int
	}{
		{"already used", x402.SettleResponse{ErrorReason: exact.ReasonNonceAlreadyUsed}, engine.StateFailed, 0},
		{"with a transaction", x402.SettleResponse{ErrorReason: "reverted", Transaction: "0xabc"}, engine.StateSettling, 0},
		{"pending", x402.SettleResponse{ErrorReason: engine.ReasonSettlementPending}, engine.StateSettling, 0},
		{"insufficient funds", x402.SettleResponse{ErrorReason: "invalid_exact_evm_insufficient_balance"}, engine.StateReleased, 1},
		{"no reason", x402.SettleResponse{}, engine.StateReleased, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			fac := &scriptedFacilitator{settle: func() (x402.SettleResponse, error) { return tc.resp, nil }}
			e := h.newEngine(fac, "a")
			p := h.sign(time.Hour)
			var r runs
			out := e.Serve(context.Background(), h.call(p, "A"), r.answer(`{"secret":1}`))
			reason := tc.resp.ErrorReason
			if reason == "" {
				reason = x402.ReasonUnexpectedSettleError
			}
			if tc.state == engine.StateSettling {
				// Maybe on chain: the client is told to come back with the
				// same payment, never to pay again.
				wantKind(t, out, engine.Pending, engine.ReasonSettlementPending)
				if out.Answer != nil || out.RetryAfter <= 0 {
					t.Fatalf("outcome %+v", out)
				}
			} else {
				wantKind(t, out, engine.SettleFailed, reason)
				if out.Answer != nil || out.Settlement == nil || out.Settlement.Success || out.Settlement.ErrorReason != reason ||
					out.Settlement.Transaction != "" || out.Settlement.Network != h.req().Network {
					t.Fatalf("outcome %+v, settlement %+v", out, out.Settlement)
				}
			}
			if rec := h.row(p); rec.State != tc.state || rec.Attempts != tc.attempts {
				t.Fatalf("row %s with %d attempts, want %s with %d", rec.State, rec.Attempts, tc.state, tc.attempts)
			}
			if len(h.journal.Ledger()) != 0 {
				t.Fatal("a refused settlement reached the ledger")
			}
		})
	}
}

// scriptedFacilitator verifies everything and settles as settle says.
type scriptedFacilitator struct {
	settle  func() (x402.SettleResponse, error)
	settles atomic.Int64
}

func (f *scriptedFacilitator) Verify(context.Context, x402.PaymentPayload, x402.PaymentRequirements) (x402.VerifyResponse, error) {
	return x402.VerifyResponse{IsValid: true}, nil
}

func (f *scriptedFacilitator) Settle(context.Context, x402.PaymentPayload, x402.PaymentRequirements) (x402.SettleResponse, error) {
	f.settles.Add(1)
	return f.settle()
}

func (f *scriptedFacilitator) Supported(context.Context) (x402.SupportedResponse, error) {
	return x402.SupportedResponse{}, nil
}

// TestRecoverPresentsAgain checks recovery of a settling row whose owner
// is dead with a deduplicating facilitator that cannot tell a status: the
// settlement is presented again, the original result comes back, and the
// row is settled with one ledger entry; the client's retry then gets the
// recorded answer. While the owner lives, nothing is taken.
func TestRecoverPresentsAgain(t *testing.T) {
	h := newHarness(t)
	chain := newChain(h.journal)
	a := h.newEngine(chain, "a")
	b := h.newEngine(chain, "b")
	ctx := context.Background()
	if err := h.journal.Heartbeat(ctx, "a", h.clock.Now()); err != nil {
		t.Fatal(err)
	}
	p := pendingRow(t, h, chain, a, settleLost, "A")
	tx := chain.transaction(h.keyOf(p))

	// The owner is alive and its lease runs: nothing to do.
	rep, err := b.Recover(ctx)
	if err != nil || rep != (engine.RecoveryReport{}) {
		t.Fatalf("recovery with a live owner: %+v %v", rep, err)
	}
	if rec := h.row(p); rec.State != engine.StateSettling || rec.Owner != "a" {
		t.Fatalf("row %s owned by %q", rec.State, rec.Owner)
	}
	// The owner stops beating: it is dead after DeadAfter.
	h.clock.Advance(engine.DefaultDeadAfter + time.Second)
	rep, err = b.Recover(ctx)
	if err != nil || rep != (engine.RecoveryReport{Settled: 1}) {
		t.Fatalf("recovery: %+v %v", rep, err)
	}
	rec := h.row(p)
	if rec.State != engine.StateSettled || rec.Settlement == nil || rec.Settlement.Transaction != tx {
		t.Fatalf("row %s, settlement %+v (chain tx %s)", rec.State, rec.Settlement, tx)
	}
	ledger := h.journal.Ledger()
	if len(ledger) != 1 || ledger[0].Transaction != tx || ledger[0].Amount != testAmount || ledger[0].Product != "tool" {
		t.Fatalf("ledger %+v", ledger)
	}
	if transfers, v := chain.state(); transfers != 1 || len(v) != 0 || chain.settles.Load() != 2 {
		t.Fatalf("transfers %d, settles %d, violations %v", transfers, chain.settles.Load(), v)
	}
	var r runs
	out := b.Serve(ctx, h.call(p, "A"), r.answer("{}"))
	wantKind(t, out, engine.Replayed, "")
	if string(out.Answer.Body) != `{"fp":"A"}` || out.Settlement.Transaction != tx || r.n.Load() != 0 {
		t.Fatalf("replay %+v", out)
	}
	var recovered []engine.Event
	for _, ev := range h.observed() {
		if ev.Recovered {
			recovered = append(recovered, ev)
		}
	}
	if len(recovered) != 1 || recovered[0].Kind != engine.Paid || recovered[0].Amount != testAmount || recovered[0].Product != "tool" ||
		recovered[0].Transport != "test" || recovered[0].Network != h.req().Network {
		t.Fatalf("recovery events %+v", recovered)
	}
}

// TestRecoverAlreadyUsedIsUnknown checks that an "already used" answer to
// a settlement presented again (a facilitator that does not deduplicate)
// makes the row unknown: counted, listed, never dropped.
func TestRecoverAlreadyUsedIsUnknown(t *testing.T) {
	h := newHarness(t)
	chain := newChain(h.journal)
	a := h.newEngine(chain, "a")
	b := h.newEngine(chain, "b")
	ctx := context.Background()
	p := pendingRow(t, h, chain, a, settleLost, "A")
	chain.setMode(settleSaysUsed)
	rep, err := b.Recover(ctx)
	if err != nil || rep != (engine.RecoveryReport{Unknown: 1}) {
		t.Fatalf("recovery: %+v %v", rep, err)
	}
	rec := h.row(p)
	if rec.State != engine.StateUnknown || !strings.Contains(rec.Reason, exact.ReasonNonceAlreadyUsed) || rec.Answer == nil {
		t.Fatalf("row %s %q", rec.State, rec.Reason)
	}
	if list, err := h.journal.List(ctx, engine.StateUnknown, 10); err != nil || len(list) != 1 || list[0].Key != rec.Key {
		t.Fatalf("unknown rows %+v %v", list, err)
	}
	if counts, _ := h.journal.Counts(ctx); counts[engine.StateUnknown] != 1 {
		t.Fatalf("counts %v", counts)
	}
	// The same request is told the payment is being reconciled (never to
	// pay again), another request is refused: the payment is not proven.
	var r runs
	wantKind(t, b.Serve(ctx, h.call(p, "A"), r.answer("{}")), engine.Pending, engine.ReasonPaymentUnresolved)
	wantKind(t, b.Serve(ctx, h.call(p, "B"), r.answer("{}")), engine.Refused, exact.ReasonNonceAlreadyUsed)
	if r.n.Load() != 0 {
		t.Fatal("an unknown payment ran again")
	}
	// Recovery leaves it alone, and pruning keeps it, however late.
	h.clock.Advance(time.Hour)
	if rep, err := b.Recover(ctx); err != nil || rep != (engine.RecoveryReport{}) {
		t.Fatalf("second recovery: %+v %v", rep, err)
	}
	if _, err := h.journal.Prune(ctx, h.clock.Now().Add(365*24*time.Hour), engine.PruneOptions{}); err != nil {
		t.Fatal(err)
	}
	if rec := h.row(p); rec.State != engine.StateUnknown {
		t.Fatalf("row %s", rec.State)
	}
	if len(h.journal.Ledger()) != 0 {
		t.Fatal("an unknown payment reached the ledger")
	}
	var unknown []engine.Event
	for _, ev := range h.observed() {
		if ev.Recovered {
			unknown = append(unknown, ev)
		}
	}
	if len(unknown) != 1 || unknown[0].Kind != engine.Unavailable || unknown[0].Reason == "" {
		t.Fatalf("recovery events %+v", unknown)
	}
}

// TestRecoverWithStatus checks recovery with a facilitator that tells an
// authorization's status: used by a transaction paying us settles the row
// (without presenting it again); used otherwise is unknown; unused and
// expired is released; unused and valid is presented again; a failed
// query leaves the row for later.
func TestRecoverWithStatus(t *testing.T) {
	type edit func(st x402.AuthorizationStatus) (x402.AuthorizationStatus, error)
	for _, tc := range []struct {
		name     string
		mode     settleMode // of the original settlement
		override edit
		expire   bool
		report   engine.RecoveryReport
		state    engine.State
		settles  int64 // Settle calls during recovery
	}{
		{"used paying us", settleLost, nil, false, engine.RecoveryReport{Settled: 1}, engine.StateSettled, 0},
		{"used, payTo in other case", settleLost, func(st x402.AuthorizationStatus) (x402.AuthorizationStatus, error) {
			st.PayTo = strings.ToLower(st.PayTo)
			st.Amount = "0" + st.Amount
			return st, nil
		}, false, engine.RecoveryReport{Settled: 1}, engine.StateSettled, 0},
		{"used paying another", settleLost, func(st x402.AuthorizationStatus) (x402.AuthorizationStatus, error) {
			st.PayTo = testOther
			return st, nil
		}, false, engine.RecoveryReport{Unknown: 1}, engine.StateUnknown, 0},
		{"used for another amount", settleLost, func(st x402.AuthorizationStatus) (x402.AuthorizationStatus, error) {
			st.Amount = "1"
			return st, nil
		}, false, engine.RecoveryReport{Unknown: 1}, engine.StateUnknown, 0},
		{"used, transfer not told", settleLost, func(st x402.AuthorizationStatus) (x402.AuthorizationStatus, error) {
			st.PayTo, st.Amount = "", ""
			return st, nil
		}, false, engine.RecoveryReport{Unknown: 1}, engine.StateUnknown, 0},
		{"used without a transaction", settleLost, func(st x402.AuthorizationStatus) (x402.AuthorizationStatus, error) {
			st.Transaction = ""
			return st, nil
		}, false, engine.RecoveryReport{Unknown: 1}, engine.StateUnknown, 0},
		{"unused and expired", settleTimeout, nil, true, engine.RecoveryReport{Released: 1}, engine.StateReleased, 0},
		{"unused and valid", settleTimeout, nil, false, engine.RecoveryReport{Settled: 1}, engine.StateSettled, 1},
		{"status fails", settleLost, func(x402.AuthorizationStatus) (x402.AuthorizationStatus, error) {
			return x402.AuthorizationStatus{}, errors.New("status endpoint down")
		}, false, engine.RecoveryReport{Unresolved: 1}, engine.StateSettling, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t)
			chain := newChain(h.journal)
			fac := &statusFacilitator{chainFacilitator: chain, now: h.clock.Now}
			a := h.newEngine(fac, "a")
			b := h.newEngine(fac, "b")
			p := pendingRow(t, h, chain, a, tc.mode, "A")
			fac.override = tc.override
			if tc.expire {
				h.clock.Advance(2 * time.Hour)
			}
			before := chain.settles.Load()
			rep, err := b.Recover(context.Background())
			if err != nil || rep != tc.report {
				t.Fatalf("recovery %+v %v, want %+v", rep, err, tc.report)
			}
			rec := h.row(p)
			if rec.State != tc.state || fac.statuses.Load() != 1 || chain.settles.Load()-before != tc.settles {
				t.Fatalf("row %s (%q), %d status queries, %d settles", rec.State, rec.Reason, fac.statuses.Load(), chain.settles.Load()-before)
			}
			ledger := h.journal.Ledger()
			if settled := tc.state == engine.StateSettled; settled != (len(ledger) == 1) || len(ledger) > 1 {
				t.Fatalf("state %s with ledger %+v", rec.State, ledger)
			}
			if tc.state == engine.StateSettled && (ledger[0].Transaction != chain.transaction(rec.Key) || rec.Settlement.Transaction != ledger[0].Transaction) {
				t.Fatalf("ledger %+v, settlement %+v", ledger, rec.Settlement)
			}
			if transfers, v := chain.state(); transfers > 1 || len(v) != 0 {
				t.Fatalf("transfers %d, violations %v", transfers, v)
			}
		})
	}
}

// TestRecoverReleasesAbandonedReservation checks that a reservation whose
// owner died is released (not counted as an attempt) once the owner is
// dead, and that the owner, should it come back, cannot settle it.
func TestRecoverReleasesAbandonedReservation(t *testing.T) {
	h := newHarness(t)
	chain := newChain(h.journal)
	a := h.newEngine(chain, "a")
	b := h.newEngine(chain, "b")
	ctx := context.Background()
	if err := h.journal.Heartbeat(ctx, "a", h.clock.Now()); err != nil {
		t.Fatal(err)
	}
	p := h.sign(time.Hour)
	entered, resume := make(chan struct{}), make(chan struct{})
	outc := make(chan engine.Outcome, 1)
	go func() {
		outc <- a.Serve(ctx, h.call(p, "A"), func(context.Context) (engine.Answer, error) {
			close(entered)
			<-resume
			return engine.Answer{Status: 200, Body: []byte("late")}, nil
		})
	}()
	<-entered
	if rep, err := b.Recover(ctx); err != nil || rep != (engine.RecoveryReport{}) {
		t.Fatalf("recovery with a live owner: %+v %v", rep, err)
	}
	h.clock.Advance(engine.DefaultDeadAfter + time.Second)
	if rep, err := b.Recover(ctx); err != nil || rep != (engine.RecoveryReport{Released: 1}) {
		t.Fatalf("recovery: %+v %v", rep, err)
	}
	if rec := h.row(p); rec.State != engine.StateReleased || rec.Attempts != 0 || rec.Reason != "abandoned" {
		t.Fatalf("row %s, %d attempts, %q", rec.State, rec.Attempts, rec.Reason)
	}
	// The old owner's call ends: it must not settle a row it lost.
	close(resume)
	out := <-outc
	wantKind(t, out, engine.Unavailable, engine.ReasonStoreUnavailable)
	if !errors.Is(out.Err, engine.ErrState) || chain.settles.Load() != 0 {
		t.Fatalf("err %v, settles %d", out.Err, chain.settles.Load())
	}
	// The payment is admitted again.
	var r runs
	wantKind(t, b.Serve(ctx, h.call(p, "A"), r.answer("{}")), engine.Paid, "")
	if _, v := chain.state(); len(v) != 0 {
		t.Fatal(v)
	}
}

// TestRecoverIdempotent checks that recovery run by two engines at once
// resolves each row exactly once, and that running it again, on either,
// changes nothing.
func TestRecoverIdempotent(t *testing.T) {
	h := newHarness(t)
	chain := newChain(h.journal)
	a := h.newEngine(chain, "a")
	const n = 12
	var pays []x402.PaymentPayload
	for i := range n {
		mode := settleLost
		if i%2 == 1 {
			mode = settleTimeout
		}
		pays = append(pays, pendingRow(t, h, chain, a, mode, fmt.Sprint(i)))
	}
	// And an abandoned reservation.
	abandoned := h.sign(time.Hour)
	now := h.clock.Now()
	if _, err := h.journal.Reserve(context.Background(), engine.Reservation{
		Key: h.keyOf(abandoned), Network: h.req().Network, Asset: h.req().Asset, Payer: "0xp", Nonce: "0xn", Amount: testAmount,
		Owner: "a", LeaseUntil: now.Add(time.Hour), KeepUntil: now.Add(time.Hour), Now: now,
	}, 3); err != nil {
		t.Fatal(err)
	}
	settlesBefore := chain.settles.Load()
	engines := []*engine.Engine{h.newEngine(chain, "b"), h.newEngine(chain, "c")}
	round := func() engine.RecoveryReport {
		reps := make([]engine.RecoveryReport, len(engines))
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i, e := range engines {
			wg.Go(func() {
				<-start
				var err error
				if reps[i], err = e.Recover(context.Background()); err != nil {
					reps[i].Unresolved = -1000
				}
			})
		}
		close(start)
		wg.Wait()
		var sum engine.RecoveryReport
		for _, r := range reps {
			sum.Released += r.Released
			sum.Settled += r.Settled
			sum.Failed += r.Failed
			sum.Unknown += r.Unknown
			sum.Unresolved += r.Unresolved
		}
		return sum
	}
	if rep := round(); rep != (engine.RecoveryReport{Settled: n, Released: 1}) {
		t.Fatalf("first round %+v", rep)
	}
	if got := chain.settles.Load() - settlesBefore; got != n {
		t.Fatalf("%d settlements presented for %d rows", got, n)
	}
	snapshot := func() []engine.Record {
		var all []engine.Record
		for _, s := range engine.States() {
			rows, err := h.journal.List(context.Background(), s, 1000)
			if err != nil {
				t.Fatal(err)
			}
			all = append(all, rows...)
		}
		return all
	}
	before, ledger := snapshot(), h.journal.Ledger()
	h.clock.Advance(time.Hour) // every lease and owner long gone
	for range 2 {
		if rep := round(); rep != (engine.RecoveryReport{}) {
			t.Fatalf("next round %+v", rep)
		}
	}
	if after := snapshot(); !reflect.DeepEqual(before, after) {
		t.Fatalf("recovery changed the journal:\nbefore %+v\nafter  %+v", before, after)
	}
	if !reflect.DeepEqual(ledger, h.journal.Ledger()) || len(ledger) != n {
		t.Fatalf("ledger %d entries, then %d", len(ledger), len(h.journal.Ledger()))
	}
	if transfers, v := chain.state(); transfers != n || len(v) != 0 || chain.settles.Load()-settlesBefore != n {
		t.Fatalf("transfers %d, settles %d, violations %v", transfers, chain.settles.Load()-settlesBefore, v)
	}
	for _, p := range pays {
		if rec := h.row(p); rec.State != engine.StateSettled || rec.Settlement.Transaction != chain.transaction(rec.Key) {
			t.Fatalf("row %s %+v", rec.State, rec.Settlement)
		}
	}
}

// TestJournalFailures checks the journal failing at each step: at Reserve
// nothing runs; at Settling the facilitator's Settle is never called and
// the row is released; at Settle (the settled state) a brief failure is
// retried, and a lasting one leaves the row settling (Pending) for
// recovery, which records it once the journal is back.
func TestJournalFailures(t *testing.T) {
	ctx := context.Background()
	setup := func(t *testing.T, mutate ...func(c *engine.Config)) (*harness, *faultyJournal, *chainFacilitator, *engine.Engine, *[]string) {
		h := newHarness(t)
		j := &faultyJournal{Journal: h.journal}
		chain := newChain(h.journal)
		var mu sync.Mutex
		hooks := &[]string{}
		e := h.newEngine(chain, "a", append([]func(*engine.Config){func(c *engine.Config) {
			c.Journal = j
			c.Hook = func(point, _ string) {
				mu.Lock()
				*hooks = append(*hooks, point)
				mu.Unlock()
			}
		}}, mutate...)...)
		return h, j, chain, e, hooks
	}
	t.Run("reserve", func(t *testing.T) {
		h, j, chain, e, _ := setup(t)
		j.failing("Reserve", 1)
		p := h.sign(time.Hour)
		var r runs
		out := e.Serve(ctx, h.call(p, "A"), r.answer("{}"))
		wantKind(t, out, engine.Unavailable, engine.ReasonStoreUnavailable)
		if !errors.Is(out.Err, errInjected) || r.n.Load() != 0 || chain.verifies.Load() != 0 || chain.settles.Load() != 0 {
			t.Fatalf("err %v, runs %d, verifies %d, settles %d", out.Err, r.n.Load(), chain.verifies.Load(), chain.settles.Load())
		}
		wantKind(t, e.Serve(ctx, h.call(p, "A"), r.answer("{}")), engine.Paid, "")
	})
	t.Run("settling", func(t *testing.T) {
		h, j, chain, e, hooks := setup(t)
		j.failing("Settling", 1)
		p := h.sign(time.Hour)
		var r runs
		out := e.Serve(ctx, h.call(p, "A"), r.answer("{}"))
		wantKind(t, out, engine.Unavailable, engine.ReasonStoreUnavailable)
		if !errors.Is(out.Err, errInjected) || r.n.Load() != 1 || chain.settles.Load() != 0 || len(*hooks) != 0 {
			t.Fatalf("err %v, runs %d, settles %d, hooks %v", out.Err, r.n.Load(), chain.settles.Load(), *hooks)
		}
		if rec := h.row(p); rec.State != engine.StateReleased || rec.Attempts != 0 || rec.Answer != nil {
			t.Fatalf("row %s, %d attempts", rec.State, rec.Attempts)
		}
		wantKind(t, e.Serve(ctx, h.call(p, "A"), r.answer("{}")), engine.Paid, "")
		if want := []string{engine.HookSettlingCommitted, engine.HookSettleReturned, engine.HookSettledCommitted}; !reflect.DeepEqual(*hooks, want) {
			t.Fatalf("hooks %v, want %v", *hooks, want)
		}
	})
	t.Run("settled, briefly", func(t *testing.T) {
		h, j, chain, e, _ := setup(t)
		j.failing("Settle", 2)
		p := h.sign(time.Hour)
		var r runs
		wantKind(t, e.Serve(ctx, h.call(p, "A"), r.answer("{}")), engine.Paid, "")
		if rec := h.row(p); rec.State != engine.StateSettled || len(h.journal.Ledger()) != 1 || chain.settles.Load() != 1 {
			t.Fatalf("row %s, ledger %d, settles %d", rec.State, len(h.journal.Ledger()), chain.settles.Load())
		}
	})
	t.Run("settled, lasting", func(t *testing.T) {
		h, j, chain, e, hooks := setup(t, func(c *engine.Config) { c.SettleTimeout = 200 * time.Millisecond })
		j.failing("Settle", -1)
		p := h.sign(time.Hour)
		var r runs
		out := e.Serve(ctx, h.call(p, "A"), r.answer(`{"n":1}`))
		wantKind(t, out, engine.Pending, engine.ReasonSettlementPending)
		if out.Answer != nil || !errors.Is(out.Err, errInjected) {
			t.Fatalf("pending %+v", out)
		}
		if want := []string{engine.HookSettlingCommitted, engine.HookSettleReturned}; !reflect.DeepEqual(*hooks, want) {
			t.Fatalf("hooks %v, want %v", *hooks, want)
		}
		if rec := h.row(p); rec.State != engine.StateSettling || len(h.journal.Ledger()) != 0 {
			t.Fatalf("row %s", rec.State)
		}
		wantKind(t, e.Serve(ctx, h.call(p, "A"), r.answer("{}")), engine.InProgress, engine.ReasonPaymentInProgress)
		// The journal is back; the lease ends; recovery (on the same
		// instance) records the settlement.
		j.failing("Settle", 0)
		h.clock.Advance(time.Minute)
		if rep, err := e.Recover(ctx); err != nil || rep != (engine.RecoveryReport{Settled: 1}) {
			t.Fatalf("recovery %+v %v", rep, err)
		}
		if transfers, _ := chain.state(); transfers != 1 || len(h.journal.Ledger()) != 1 {
			t.Fatalf("transfers %d, ledger %d", transfers, len(h.journal.Ledger()))
		}
		out = e.Serve(ctx, h.call(p, "A"), r.answer("{}"))
		wantKind(t, out, engine.Replayed, "")
		if string(out.Answer.Body) != `{"n":1}` || r.n.Load() != 1 {
			t.Fatalf("replay %s, runs %d", out.Answer.Body, r.n.Load())
		}
	})
}

// TestRunFailures checks a run that fails, panics or runs out of time:
// RunFailed, nothing settled, the row released with one attempt more.
func TestRunFailures(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t)
	chain := newChain(h.journal)
	e := h.newEngine(chain, "a", func(c *engine.Config) { c.RunTimeout, c.MaxAttempts = 30*time.Millisecond, 5 })
	p := h.sign(time.Hour)
	var r runs

	out := e.Serve(ctx, h.call(p, "A"), r.fail())
	wantKind(t, out, engine.RunFailed, "")
	if out.Answer == nil || out.Answer.Status != 503 || out.Err == nil || out.Err.Error() != "upstream down" {
		t.Fatalf("failed run %+v", out)
	}

	out = e.Serve(ctx, h.call(p, "A"), r.panics())
	wantKind(t, out, engine.RunFailed, "")
	if out.Answer != nil || out.Err == nil || !strings.Contains(out.Err.Error(), "panicked") {
		t.Fatalf("panicking run %+v", out)
	}

	var deadline bool
	out = e.Serve(ctx, h.call(p, "A"), func(ctx context.Context) (engine.Answer, error) {
		_, deadline = ctx.Deadline()
		<-ctx.Done()
		return engine.Answer{}, ctx.Err()
	})
	wantKind(t, out, engine.RunFailed, "")
	if !deadline || !errors.Is(out.Err, context.DeadlineExceeded) || out.Answer != nil {
		t.Fatalf("timed-out run: deadline %v, %+v", deadline, out)
	}

	if rec := h.row(p); rec.State != engine.StateReleased || rec.Attempts != 3 {
		t.Fatalf("row %s, %d attempts", rec.State, rec.Attempts)
	}
	if chain.settles.Load() != 0 || len(h.journal.Ledger()) != 0 {
		t.Fatal("a failed run was settled")
	}
	wantKind(t, e.Serve(ctx, h.call(p, "A"), r.answer("{}")), engine.Paid, "")
}

// transientErr is a run error that says it is not the payer's fault.
type transientErr struct{}

func (transientErr) Error() string   { return "terminal went down" }
func (transientErr) Transient() bool { return true }

// TestUncountedFailures: a transient run failure and a caller that left do
// not use up the authorization's attempts; the payment still buys later.
func TestUncountedFailures(t *testing.T) {
	h := newHarness(t)
	chain := newChain(h.journal)
	e := h.newEngine(chain, "a", func(c *engine.Config) { c.MaxAttempts = 1 })
	p := h.sign(time.Hour)
	for range 3 {
		out := e.Serve(context.Background(), h.call(p, "A"), func(context.Context) (engine.Answer, error) {
			return engine.Answer{}, fmt.Errorf("run: %w", transientErr{})
		})
		wantKind(t, out, engine.RunFailed, "")
	}
	for range 3 {
		ctx, cancel := context.WithCancel(context.Background())
		out := e.Serve(ctx, h.call(p, "A"), func(context.Context) (engine.Answer, error) {
			cancel() // the caller leaves while the tool runs
			return engine.Answer{}, errors.New("interrupted")
		})
		wantKind(t, out, engine.RunFailed, "")
	}
	if rec := h.row(p); rec.State != engine.StateReleased || rec.Attempts != 0 {
		t.Fatalf("row %s with %d attempts, want released with 0", rec.State, rec.Attempts)
	}
	var r runs
	wantKind(t, e.Serve(context.Background(), h.call(p, "A"), r.answer("{}")), engine.Paid, "")
}

// TestAttemptsExhausted checks that an authorization is admitted at most
// MaxAttempts times without settlement, then refused before the
// facilitator; for another request it is a used authorization.
func TestAttemptsExhausted(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t)
	chain := newChain(h.journal)
	e := h.newEngine(chain, "a", func(c *engine.Config) { c.MaxAttempts = 2 })
	p := h.sign(time.Hour)
	var r runs
	for range 2 {
		wantKind(t, e.Serve(ctx, h.call(p, "A"), r.fail()), engine.RunFailed, "")
	}
	wantKind(t, e.Serve(ctx, h.call(p, "A"), r.answer("{}")), engine.Refused, engine.ReasonAttemptsExhausted)
	wantKind(t, e.Serve(ctx, h.call(p, "B"), r.answer("{}")), engine.Refused, exact.ReasonNonceAlreadyUsed)
	if r.n.Load() != 2 || chain.verifies.Load() != 2 {
		t.Fatalf("runs %d verifies %d", r.n.Load(), chain.verifies.Load())
	}
}

// TestObserve checks the events of every outcome, and of recovery.
func TestObserve(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t)
	chain := newChain(h.journal)
	e := h.newEngine(chain, "a")
	var r runs
	e.Serve(ctx, engine.Call{Offer: h.offer, Transport: "test"}, r.answer("{}"))
	bad := h.sign(time.Hour)
	bad.Accepted.Amount = "1"
	e.Serve(ctx, h.call(bad, "A"), r.answer("{}"))
	p := h.sign(time.Hour)
	e.Serve(ctx, h.call(p, "A"), r.fail())
	e.Serve(ctx, h.call(p, "A"), r.answer("{}"))
	e.Serve(ctx, h.call(p, "A"), r.answer("{}"))
	pendingRow(t, h, chain, e, settleLost, "B")
	h.clock.Advance(time.Hour)
	if _, err := e.Recover(ctx); err != nil {
		t.Fatal(err)
	}
	want := []engine.Event{
		{Kind: engine.PaymentRequired, Reason: engine.ReasonPaymentRequired},
		{Kind: engine.Refused, Reason: engine.ReasonNoMatchingRequirements},
		{Kind: engine.RunFailed},
		{Kind: engine.Paid, Network: h.req().Network, Asset: h.req().Asset, Amount: testAmount, Scheme: h.req().Scheme},
		{Kind: engine.Replayed},
		{Kind: engine.Pending, Reason: engine.ReasonSettlementPending},
		{Kind: engine.Paid, Network: h.req().Network, Asset: strings.ToLower(h.req().Asset), Amount: testAmount, Scheme: h.req().Scheme, Recovered: true},
	}
	got := h.observed()
	if len(got) != len(want) {
		t.Fatalf("%d events, want %d: %+v", len(got), len(want), got)
	}
	for i := range want {
		want[i].Resource, want[i].Product, want[i].Transport = "POST /api/tool", "tool", "test"
		if !strings.EqualFold(got[i].Asset, want[i].Asset) {
			t.Errorf("event %d asset %q, want %q", i, got[i].Asset, want[i].Asset)
		}
		got[i].Asset, want[i].Asset = "", ""
		if got[i] != want[i] {
			t.Errorf("event %d\n got %+v\nwant %+v", i, got[i], want[i])
		}
	}
}

// TestRun checks Engine.Run: it recovers at once and when kicked, keeps the
// instance alive in the journal (its rows are not taken), refuses a second
// Run, and on its end leaves the journal, so that its rows are taken at
// once.
func TestRun(t *testing.T) {
	h := newHarness(t)
	chain := newChain(h.journal)
	a := h.newEngine(chain, "a")
	b := h.newEngine(chain, "b", func(c *engine.Config) { c.Heartbeat, c.DeadAfter, c.RecoverEvery = time.Hour, 2*time.Hour, time.Hour })
	c := h.newEngine(chain, "c")
	first := pendingRow(t, h, chain, a, settleLost, "A")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- b.Run(ctx) }()
	waitState := func(p x402.PaymentPayload, s engine.State) {
		t.Helper()
		deadline := time.After(5 * time.Second)
		for h.row(p).State != s {
			select {
			case <-deadline:
				t.Fatalf("row %s, want %s", h.row(p).State, s)
			case <-time.After(time.Millisecond):
			}
		}
	}
	waitState(first, engine.StateSettled)
	if err := b.Run(ctx); err == nil {
		t.Fatal("a second Run was accepted")
	}
	second := pendingRow(t, h, chain, a, settleLost, "B")
	b.Kick()
	waitState(second, engine.StateSettled)

	// b is alive: a reservation it holds is not taken.
	now := h.clock.Now()
	held := h.sign(time.Hour)
	res := engine.Reservation{Key: h.keyOf(held), Network: h.req().Network, Asset: h.req().Asset, Payer: "0xp", Nonce: "0xn",
		Amount: testAmount, Owner: "b", LeaseUntil: now.Add(time.Hour), KeepUntil: now.Add(time.Hour), Now: now}
	if _, err := h.journal.Reserve(context.Background(), res, 3); err != nil {
		t.Fatal(err)
	}
	if rep, err := c.Recover(context.Background()); err != nil || rep.Released != 0 {
		t.Fatalf("recovery beside a live owner: %+v %v", rep, err)
	}
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Run returned %v", err)
	}
	if rep, err := c.Recover(context.Background()); err != nil || rep.Released != 1 {
		t.Fatalf("recovery after the owner left: %+v %v", rep, err)
	}
	if transfers, v := chain.state(); transfers != 2 || len(v) != 0 || len(h.journal.Ledger()) != 2 {
		t.Fatalf("transfers %d, ledger %d, violations %v", transfers, len(h.journal.Ledger()), v)
	}
}

// TestConcurrentServe checks one payment served for one request by many
// goroutines on two engines: one run, one settlement; the others are in
// progress or replayed.
func TestConcurrentServe(t *testing.T) {
	h := newHarness(t)
	chain := newChain(h.journal)
	engines := []*engine.Engine{h.newEngine(chain, "a"), h.newEngine(chain, "b")}
	p := h.sign(time.Hour)
	var r runs
	const n = 40
	outs := make([]engine.Outcome, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			outs[i] = engines[i%2].Serve(context.Background(), h.call(p, "A"), r.answer(`{"ok":true}`))
		})
	}
	close(start)
	wg.Wait()
	kinds := map[engine.OutcomeKind]int{}
	for _, o := range outs {
		kinds[o.Kind]++
	}
	if kinds[engine.Paid] != 1 || kinds[engine.Paid]+kinds[engine.Replayed]+kinds[engine.InProgress] != n {
		t.Fatalf("outcomes %v", kinds)
	}
	if transfers, v := chain.state(); r.n.Load() != 1 || chain.settles.Load() != 1 || transfers != 1 || len(v) != 0 || len(h.journal.Ledger()) != 1 {
		t.Fatalf("runs %d settles %d ledger %d violations %v", r.n.Load(), chain.settles.Load(), len(h.journal.Ledger()), v)
	}
}

// step is one event in the life of an authorization: a call (for request
// A or B, whose run succeeds, fails or panics) or a recovery round after
// the leases ended, with the facilitator settling in mode meanwhile.
type step struct {
	Recover bool
	Request int // 0: A, 1: B
	Run     int // 0: answers, 1: fails, 2: panics
	Mode    settleMode
}

func (s step) String() string {
	if s.Recover {
		return "recover/" + s.Mode.String()
	}
	return fmt.Sprintf("call %c run=%d settle=%s", 'A'+s.Request, s.Run, s.Mode)
}

// TestOneAuthorizationProperties checks, for any sequence of calls and
// recovery rounds of one authorization, with or without a facilitator
// that tells statuses: the facilitator settles only behind a settling
// row; at most one call is paid; a replay goes only to the request that
// was paid, with its answer and settlement; the row never leaves settled,
// is settled exactly when the ledger has its one entry, and is never
// released or failed once the transfer happened; a settled authorization
// never runs again; attempts stay within MaxAttempts.
func TestOneAuthorizationProperties(t *testing.T) {
	params := gopter.DefaultTestParameters()
	params.MinSuccessfulTests = 150
	params.MaxSize = 24
	props := gopter.NewProperties(params)
	stepGen := gopter.CombineGens(
		gen.Weighted([]gen.WeightedGen{{Weight: 1, Gen: gen.Const(true)}, {Weight: 3, Gen: gen.Const(false)}}),
		gen.IntRange(0, 1),
		gen.Weighted([]gen.WeightedGen{{Weight: 4, Gen: gen.Const(0)}, {Weight: 1, Gen: gen.Const(1)}, {Weight: 1, Gen: gen.Const(2)}}),
		gen.IntRange(int(settleOK), int(settleRefuse)),
	).Map(func(v []any) step {
		return step{Recover: v[0].(bool), Request: v[1].(int), Run: v[2].(int), Mode: settleMode(v[3].(int))}
	})
	const maxAttempts = 3
	props.Property("one authorization", prop.ForAll(func(withStatus bool, steps []step) string {
		h := newHarness(t)
		chain := newChain(h.journal)
		var fac x402.Facilitator = chain
		if withStatus {
			fac = &statusFacilitator{chainFacilitator: chain, now: h.clock.Now}
		}
		e := h.newEngine(fac, "a", func(c *engine.Config) {
			c.MaxAttempts = maxAttempts
			c.Observe = nil
		})
		ctx := context.Background()
		p := h.sign(24 * time.Hour)
		key := h.keyOf(p)
		fingerprints := []string{"A", "B"}
		var (
			paid        *engine.Outcome
			paidFor     string
			wasSettled  bool
			transferred bool
		)
		for i, s := range steps {
			chain.setMode(s.Mode)
			var out engine.Outcome
			var ran atomic.Int64
			if s.Recover {
				h.clock.Advance(2 * time.Minute)
				if _, err := e.Recover(ctx); err != nil {
					return fmt.Sprintf("step %d %s: recover: %v", i, s, err)
				}
			} else {
				fp := fingerprints[s.Request]
				body := fmt.Sprintf(`{"step":%d,"fp":%q}`, i, fp)
				out = e.Serve(ctx, h.call(p, fp), func(context.Context) (engine.Answer, error) {
					ran.Add(1)
					switch s.Run {
					case 1:
						return engine.Answer{Status: 500}, errors.New("failed")
					case 2:
						panic("broken")
					}
					return engine.Answer{Status: 200, Body: []byte(body)}, nil
				})
				if wasSettled && ran.Load() != 0 {
					return fmt.Sprintf("step %d %s: a settled authorization ran again", i, s)
				}
				switch out.Kind {
				case engine.Paid:
					if paid != nil {
						return fmt.Sprintf("step %d %s: paid twice", i, s)
					}
					o := out
					paid, paidFor = &o, fp
					if string(out.Answer.Body) != body {
						return fmt.Sprintf("step %d %s: paid answer %s", i, s, out.Answer.Body)
					}
				case engine.Replayed:
					if fp != paidFor && paid != nil {
						return fmt.Sprintf("step %d %s: replayed to %s, paid for %s", i, s, fp, paidFor)
					}
				}
			}
			rec, err := h.journal.Get(ctx, key)
			if err != nil && !errors.Is(err, engine.ErrNotFound) {
				return fmt.Sprintf("step %d %s: get: %v", i, s, err)
			}
			transfers, violations := chain.state()
			transferred = transferred || transfers > 0
			ledger := h.journal.Ledger()
			switch {
			case len(violations) != 0:
				return fmt.Sprintf("step %d %s: %v", i, s, violations)
			case transfers > 1 || len(ledger) > 1:
				return fmt.Sprintf("step %d %s: %d transfers, %d ledger entries", i, s, transfers, len(ledger))
			case wasSettled && rec.State != engine.StateSettled:
				return fmt.Sprintf("step %d %s: left settled for %s", i, s, rec.State)
			case (rec.State == engine.StateSettled) != (len(ledger) == 1):
				return fmt.Sprintf("step %d %s: state %s with %d ledger entries", i, s, rec.State, len(ledger))
			case transferred && (rec.State == engine.StateReleased || rec.State == engine.StateFailed || err != nil):
				return fmt.Sprintf("step %d %s: transferred, yet %s (%q)", i, s, rec.State, rec.Reason)
			case rec.Attempts > maxAttempts:
				return fmt.Sprintf("step %d %s: %d attempts", i, s, rec.Attempts)
			}
			if rec.State == engine.StateSettled {
				wasSettled = true
				if rec.Settlement == nil || rec.Settlement.Transaction != chain.transaction(key) || rec.Answer == nil {
					return fmt.Sprintf("step %d %s: settled row %+v", i, s, rec)
				}
				if paid != nil && (rec.RequestHash != paidFor || !reflect.DeepEqual(rec.Answer, paid.Answer)) {
					return fmt.Sprintf("step %d %s: the row's answer is not the paid one", i, s)
				}
				if ledger[0].Transaction != rec.Settlement.Transaction {
					return fmt.Sprintf("step %d %s: ledger %+v", i, s, ledger[0])
				}
			}
			if out.Kind == engine.Replayed {
				if !wasSettled || rec.RequestHash != fingerprints[s.Request] || !reflect.DeepEqual(out.Answer, rec.Answer) ||
					out.Settlement.Transaction != rec.Settlement.Transaction {
					return fmt.Sprintf("step %d %s: replay %+v of row %+v", i, s, out, rec)
				}
			}
		}
		return ""
	}, gen.Bool(), gen.SliceOf(stepGen)))
	props.TestingRun(t)
}

// TestObserveMultiNetworkOffer checks the event of a payment on the second
// network of an offer: its network and asset are those of the requirement
// paid.
func TestObserveMultiNetworkOffer(t *testing.T) {
	h := newHarness(t)
	offer := h.newOffer(x402.Route{Price: "0.0025", PayTo: testPayTo}, x402.Route{Price: "0.0025", PayTo: testPayTo, Network: x402.NetworkBaseSepolia})
	h.offer = offer
	sepolia := offer.PaymentRequired.Accepts[1]
	ep, err := exact.NewPayload(h.payer, sepolia, h.clock.Now(), 0)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(ep)
	p := x402.PaymentPayload{X402Version: 2, Accepted: sepolia, Payload: raw}
	e := h.newEngine(newChain(h.journal), "a")
	var r runs
	wantKind(t, e.Serve(context.Background(), h.call(p, "A"), r.answer("{}")), engine.Paid, "")
	ev := h.observed()
	if len(ev) != 1 || ev[0].Network != x402.NetworkBaseSepolia || !strings.EqualFold(ev[0].Asset, sepolia.Asset) {
		t.Fatalf("event %+v, want network %s asset %s", ev, x402.NetworkBaseSepolia, sepolia.Asset)
	}
}

// walletChain is chainFacilitator whose verify checks signatures as a
// token with ERC-1271 does: wallet, a smart-contract wallet, accepts the
// signatures of owner; any other payer must have signed itself.
type walletChain struct {
	*chainFacilitator
	wallet, owner string
	calls         atomic.Int64 // Verify calls, refused ones included
}

func (f *walletChain) Verify(ctx context.Context, p x402.PaymentPayload, req x402.PaymentRequirements) (x402.VerifyResponse, error) {
	f.calls.Add(1)
	ep, err := exact.ParseExactEVMPayload(p.Payload)
	n, ok := x402.LookupNetwork(req.Network)
	if err != nil || !ok {
		return x402.VerifyResponse{IsValid: false, InvalidReason: exact.ReasonInvalidPayload}, nil
	}
	a := ep.Authorization
	digest, err := exact.AuthorizationDigest(exact.Domain(n), a)
	if err != nil {
		return x402.VerifyResponse{IsValid: false, InvalidReason: exact.ReasonInvalidPayload}, nil
	}
	sig := common.FromHex(ep.Signature)
	signer, err := exact.RecoverSigner(digest[:], sig)
	want := a.From
	if strings.EqualFold(a.From, f.wallet) {
		want = f.owner
	}
	if err != nil || !strings.EqualFold(signer.Hex(), want) {
		return x402.VerifyResponse{IsValid: false, InvalidReason: exact.ReasonInvalidSignature, Payer: a.From}, nil
	}
	return f.chainFacilitator.Verify(ctx, p, req)
}

// TestContractWallets: with ContractWallets, a payment from a
// smart-contract wallet signed by its owner (a signature the local checks
// cannot accept) is left to the facilitator's verify and paid; without it,
// it is refused locally. Forged signatures for the wallet's authorization,
// refused by the facilitator, do not use up its attempts: the genuine
// payment with the same nonce is still paid. Every other local check still
// runs before the facilitator, and the option needs the facilitator's
// verify.
func TestContractWallets(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t)
	owner := h.payer
	stranger, err := crypto.GenerateKey()
	if err != nil {
		t.Fatal(err)
	}
	wallet := "0x1111111111111111111111111111111111111111"
	n, _ := x402.LookupNetwork(h.req().Network)
	// walletPayment is a payment from the wallet with nonce, signed by key.
	walletPayment := func(key *ecdsa.PrivateKey, nonce string) x402.PaymentPayload {
		t.Helper()
		p, err := exact.NewPayload(owner, h.req(), h.clock.Now(), time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		p.Authorization.From, p.Authorization.Nonce = wallet, nonce
		digest, err := exact.AuthorizationDigest(exact.Domain(n), p.Authorization)
		if err != nil {
			t.Fatal(err)
		}
		sig, err := crypto.Sign(digest[:], key)
		if err != nil {
			t.Fatal(err)
		}
		sig[64] += 27
		p.Signature = hexutil.Encode(sig)
		return h.wrap(p)
	}
	nonce, err := exact.NewNonce()
	if err != nil {
		t.Fatal(err)
	}

	fac := &walletChain{chainFacilitator: newChain(h.journal), wallet: wallet, owner: crypto.PubkeyToAddress(owner.PublicKey).Hex()}
	var r runs
	strict := h.newEngine(fac, "strict")
	wantKind(t, strict.Serve(ctx, h.call(walletPayment(owner, nonce), "A"), r.answer("{}")), engine.Refused, exact.ReasonInvalidSignature)
	if fac.calls.Load() != 0 {
		t.Fatal("a signature refused locally reached the facilitator")
	}

	e := h.newEngine(fac, "wallets", h.withExact(fac, func(c *exactserver.Config) { c.ContractWallets = true }),
		func(c *engine.Config) { c.MaxAttempts = 1 })
	for range 3 {
		wantKind(t, e.Serve(ctx, h.call(walletPayment(stranger, nonce), "A"), r.answer("{}")), engine.Refused, exact.ReasonInvalidSignature)
	}
	if rec := h.row(walletPayment(owner, nonce)); rec.State != engine.StateReleased || rec.Attempts != 0 {
		t.Fatalf("after forged signatures: row %s with %d attempts, want released with 0", rec.State, rec.Attempts)
	}
	if r.n.Load() != 0 {
		t.Fatalf("the tool ran %d times for forged signatures", r.n.Load())
	}
	paid := walletPayment(owner, nonce)
	out := e.Serve(ctx, h.call(paid, "A"), r.answer(`{"ok":true}`))
	wantKind(t, out, engine.Paid, "")
	if out.Settlement == nil || !strings.EqualFold(out.Payer, wallet) || r.n.Load() != 1 {
		t.Fatalf("the wallet's payment: %+v (runs %d)", out, r.n.Load())
	}
	// The same payment again gets the recorded answer; the same
	// authorization with a signature nobody checked does not.
	if out := e.Serve(ctx, h.call(paid, "A"), r.answer("{}")); out.Kind != engine.Replayed || string(out.Answer.Body) != `{"ok":true}` {
		t.Fatalf("replay of the wallet's payment: %+v", out)
	}
	var ep exact.ExactEVMPayload
	if err := json.Unmarshal(paid.Payload, &ep); err != nil {
		t.Fatal(err)
	}
	ep.Signature = "0xabcdef"
	wantKind(t, e.Serve(ctx, h.call(h.wrap(ep), "A"), r.answer("{}")), engine.Refused, exact.ReasonNonceAlreadyUsed)
	if r.n.Load() != 1 {
		t.Fatalf("the tool ran %d times", r.n.Load())
	}
	// Other local checks still come first.
	before := fac.calls.Load()
	p, err := exact.NewPayload(owner, h.req(), h.clock.Now(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	p.Authorization.Value = "1"
	wantKind(t, e.Serve(ctx, h.call(h.wrap(p), "B"), r.answer("{}")), engine.Refused, exact.ReasonValueMismatch)
	p.Authorization.Value, p.Signature = testAmount, "0xnothex"
	wantKind(t, e.Serve(ctx, h.call(h.wrap(p), "B"), r.answer("{}")), engine.Refused, exact.ReasonSignatureFormat)
	if fac.calls.Load() != before {
		t.Fatal("a payment refused by the local checks reached the facilitator")
	}

	if _, err := exactserver.New(exactserver.Config{Facilitator: fac, ContractWallets: true, SkipFacilitatorVerify: true}); err == nil {
		t.Fatal("ContractWallets with SkipFacilitatorVerify accepted")
	}
}

package client_test

import (
	"context"
	"crypto/ecdsa"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/crypto"

	"github.com/seed1284c1d2/svc/internal/nodetest"
	"github.com/seed1284c1d2/svc/internal/schemetest"
	"github.com/seed1284c1d2/svc/x402"
	"github.com/seed1284c1d2/svc/x402/engine"
	"github.com/seed1284c1d2/svc/x402/exact"
	exactserver "github.com/seed1284c1d2/svc/x402/exact/server"
	"github.com/seed1284c1d2/svc/x402/facilitator"
	"github.com/seed1284c1d2/svc/x402/nethttp"
)

// e2eScriptTimeout bounds one node client run.
const e2eScriptTimeout = 45 * time.Second

// e2eSetup finds node and the e2e/ folder and installs its locked
// dependencies when e2e/node_modules lacks them. It returns the node
// binary and the folder.
func e2eSetup(t *testing.T) (node, dir string) {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("..", "..", "e2e"))
	if err != nil {
		t.Fatal(err)
	}
	return nodetest.Setup(t, 20, dir, "@x402/fetch", "@x402/evm", "@x402/core", "viem", "x402-fetch"), dir
}

// e2eResult is what a client run reports (the JSON the e2e/ scripts print).
type e2eResult struct {
	Status               int                   `json:"status"`
	Body                 json.RawMessage       `json:"body"`
	PaymentResponse      *x402.SettleResponse  `json:"paymentResponse"`
	PaymentRequired      *x402.PaymentRequired `json:"paymentRequired"`
	ExposeHeaders        string                `json:"exposeHeaders"`
	HasV2PaymentResponse bool                  `json:"hasV2PaymentResponse"`
	First                *e2eResult            `json:"first"`
	Error                string                `json:"error"`
}

// e2eRunNode runs one of the e2e/ scripts and decodes its report.
func e2eRunNode(t *testing.T, node, dir, script string, args ...string) e2eResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), e2eScriptTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, append([]string{script}, args...)...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "E2E_PRIVATE_KEY=0x"+mwKeyHex)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	var res e2eResult
	if jerr := json.Unmarshal(out, &res); jerr != nil {
		t.Fatalf("node %s %v: %v (exit %v)\nstdout: %s\nstderr: %s", script, args, jerr, err, out, stderr.String())
	}
	if res.Error != "" || err != nil {
		t.Fatalf("node %s %v failed: %s (exit %v)\nstderr: %s", script, args, res.Error, err, stderr.String())
	}
	return res
}

// e2eServer is the paid server of the end-to-end tests: the engine and its
// net/http binding in front of a tool that counts its runs per "case"
// query parameter (also the request id the journal records), and the
// facilitator.Local served over HTTP on a second listener and reached
// through facilitator.HTTP. Settlements are read from the engine's
// MemoryJournal.
type e2eServer struct {
	app, facilitator *httptest.Server
	local            *facilitator.Local
	journal          *engine.MemoryJournal

	mu   sync.Mutex
	runs map[string]*atomic.Int64
}

func newE2EServer(t *testing.T) *e2eServer {
	t.Helper()
	local, err := facilitator.NewLocal(facilitator.LocalConfig{Networks: []string{x402.NetworkBase}, PayTo: mwPayTo})
	if err != nil {
		t.Fatal(err)
	}
	s := &e2eServer{local: local, journal: engine.NewMemoryJournal(), runs: map[string]*atomic.Int64{}}
	s.facilitator = httptest.NewServer(facilitator.Handler(local))
	t.Cleanup(s.facilitator.Close)
	hf, err := facilitator.NewHTTP(facilitator.HTTPConfig{URL: s.facilitator.URL, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	logger := slog.New(slog.DiscardHandler)
	eng, err := engine.New(engine.Config{Schemes: schemetest.Exact(t, exactserver.Config{Facilitator: hf}), Journal: s.journal, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	offer := mwTerms(t)
	mw, err := nethttp.New(nethttp.Config{
		Engine:    eng,
		Offer:     func(*http.Request) (*engine.Offer, bool) { return offer, true },
		RequestID: func(r *http.Request) string { return r.URL.Query().Get("case") },
		Logger:    logger,
	})
	if err != nil {
		t.Fatal(err)
	}
	s.app = httptest.NewServer(mw.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c := r.URL.Query().Get("case")
		n := s.counter(c).Add(1)
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"ok": true, "case": c, "run": n})
	})))
	t.Cleanup(s.app.Close)
	return s
}

func (s *e2eServer) counter(c string) *atomic.Int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	n, ok := s.runs[c]
	if !ok {
		n = &atomic.Int64{}
		s.runs[c] = n
	}
	return n
}

// events returns the settled journal rows of a case.
func (s *e2eServer) events(t testing.TB, c string) []engine.Record {
	t.Helper()
	return mwSettled(t, s.journal, func(r engine.Record) bool { return r.RequestID == c })
}

// url is the tool's URL for a case.
func (s *e2eServer) url(c string) string { return s.app.URL + "/tool?case=" + c }

// e2eCase is one scenario every paying client goes through.
type e2eCase struct {
	mode   string
	status int    // final status
	reason string // PAYMENT-REQUIRED error of a refusal
}

// e2eCases are the scenarios of the suite, shared by the official v2 client
// and the Go Transport.
func e2eCases() []e2eCase {
	return []e2eCase{
		{"pay", http.StatusOK, ""},
		{"tamper-value", http.StatusPaymentRequired, exact.ReasonValueMismatch},
		{"tamper-deadline", http.StatusPaymentRequired, exact.ReasonInvalidSignature},
		{"tamper-accepted", http.StatusPaymentRequired, engine.ReasonNoMatchingRequirements},
		{"wrong-recipient", http.StatusPaymentRequired, exact.ReasonRecipientMismatch},
		{"expired", http.StatusPaymentRequired, exact.ReasonValidBefore},
		{"wrong-network", http.StatusPaymentRequired, engine.ReasonNoMatchingRequirements},
		{"replay", http.StatusPaymentRequired, exact.ReasonNonceAlreadyUsed},
		{"replay-same", http.StatusOK, ""},
	}
}

// e2eCheck asserts a case's outcome on the server and in the client's
// report: status and reason, the tool's runs and the settlements.
func e2eCheck(t *testing.T, s *e2eServer, caseID string, tc e2eCase, res e2eResult) {
	t.Helper()
	if res.Status != tc.status {
		t.Fatalf("status %d, want %d; body %s; payment required %+v", res.Status, tc.status, res.Body, res.PaymentRequired)
	}
	runs := s.counter(caseID).Load()
	settled := len(s.events(t, caseID))
	switch tc.mode {
	case "replay", "replay-same":
		if res.First == nil || res.First.Status != http.StatusOK || res.First.PaymentResponse == nil || !res.First.PaymentResponse.Success {
			t.Fatalf("first payment: %+v", res.First)
		}
		if runs != 1 || settled != 1 {
			t.Fatalf("first request: %d runs, %d settlements; want 1, 1", runs, settled)
		}
	case "pay":
		if runs != 1 || settled != 1 {
			t.Fatalf("%d runs, %d settlements; want 1, 1", runs, settled)
		}
	default:
		if runs != 0 || settled != 0 {
			t.Fatalf("refused payment ran the tool %d times, settled %d", runs, settled)
		}
	}
	if tc.mode == "replay" {
		if n := s.counter(caseID + "-2").Load(); n != 0 || len(s.events(t, caseID+"-2")) != 0 {
			t.Fatalf("the replayed payment ran the tool %d times for another request", n)
		}
	}
	if tc.status == http.StatusOK {
		pr := res.PaymentResponse
		if pr == nil || !pr.Success || pr.Network != x402.NetworkBase || !strings.HasPrefix(pr.Transaction, facilitator.LocalTransactionPrefix) ||
			!strings.EqualFold(pr.Payer, mwPayer) {
			t.Fatalf("payment response %+v", pr)
		}
		var body struct {
			OK   bool   `json:"ok"`
			Case string `json:"case"`
			Run  int    `json:"run"`
		}
		if err := json.Unmarshal(res.Body, &body); err != nil || !body.OK || body.Case != caseID || body.Run != 1 {
			t.Fatalf("body %s", res.Body)
		}
		if tc.mode == "replay-same" && (string(res.Body) != string(res.First.Body) || res.PaymentResponse.Transaction != res.First.PaymentResponse.Transaction) {
			t.Fatalf("replay answer %s differs from the first %s", res.Body, res.First.Body)
		}
		return
	}
	if res.PaymentRequired == nil || res.PaymentRequired.Error != tc.reason {
		t.Fatalf("refusal %+v, want reason %q", res.PaymentRequired, tc.reason)
	}
	if res.PaymentResponse != nil {
		t.Fatalf("a refused payment has a payment response %+v", res.PaymentResponse)
	}
}

// e2eErrNoPayment is returned by the Go runner when no payment was sent.
var e2eErrNoPayment = errors.New("no PAYMENT-SIGNATURE was sent")

// Fixtures shared by the client, v1 and end-to-end tests.
const (
	// mwKeyHex is the payer's key: the first development key of Hardhat and
	// Anvil, a public test key.
	mwKeyHex = "ac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80"
	// mwPayer is its address.
	mwPayer = "0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266"
	// mwPayTo receives the payments.
	mwPayTo = "0x70997970C51812dc3A010C7d01b50e0d17dc79C8"
	// mwOther is an address that is not the payTo.
	mwOther = "0x000000000000000000000000000000000000dEaD"
	// mwPrice is the test route's price (2500 atomic units of USDC).
	mwPrice  = "0.0025"
	mwAmount = "2500"
)

func mwKey(t testing.TB) *ecdsa.PrivateKey {
	t.Helper()
	k, err := crypto.HexToECDSA(mwKeyHex)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// mwTerms is the offer of the paid test route.
func mwTerms(t testing.TB) *engine.Offer {
	t.Helper()
	return schemetest.ExactOffer(t, "GET /tool", "tool", x402.Route{
		Price:    mwPrice,
		PayTo:    mwPayTo,
		Resource: x402.ResourceInfo{Description: "test tool", MimeType: "application/json"},
		Bazaar: &x402.BazaarInfo{
			Method:        "GET",
			InputExample:  map[string]any{"x": "1"},
			OutputExample: map[string]any{"ok": true},
		},
	})
}

// mwSettled returns the settled rows of a journal that keep says to keep.
func mwSettled(t testing.TB, j engine.Journal, keep func(engine.Record) bool) []engine.Record {
	t.Helper()
	recs, err := j.List(context.Background(), engine.StateSettled, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	out := []engine.Record{}
	for _, r := range recs {
		if keep(r) {
			out = append(out, r)
		}
	}
	return out
}

// mwFacilitator wraps a facilitator, counts its successful settlements and
// can replace its verify answer.
type mwFacilitator struct {
	inner   x402.Facilitator
	settles atomic.Int64

	mu         sync.Mutex
	verifyResp *x402.VerifyResponse
}

func (f *mwFacilitator) Verify(ctx context.Context, p x402.PaymentPayload, r x402.PaymentRequirements) (x402.VerifyResponse, error) {
	f.mu.Lock()
	resp := f.verifyResp
	f.mu.Unlock()
	if resp != nil {
		return *resp, nil
	}
	return f.inner.Verify(ctx, p, r)
}

func (f *mwFacilitator) Settle(ctx context.Context, p x402.PaymentPayload, r x402.PaymentRequirements) (x402.SettleResponse, error) {
	sr, err := f.inner.Settle(ctx, p, r)
	if err == nil && sr.Success {
		f.settles.Add(1)
	}
	return sr, err
}

func (f *mwFacilitator) Supported(ctx context.Context) (x402.SupportedResponse, error) {
	return f.inner.Supported(ctx)
}

func (f *mwFacilitator) set(fn func(f *mwFacilitator)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fn(f)
}

// mwEnv is a paid test server on 127.0.0.1 for the client tests: the
// engine (MemoryJournal, facilitator.Local behind mwFacilitator) and its
// net/http binding in front of mwEnv.tool; /free is not priced.
type mwEnv struct {
	t       testing.TB
	srv     *httptest.Server
	fac     *mwFacilitator
	journal *engine.MemoryJournal
	runs    atomic.Int64 // paid handler runs
}

// tool answers {"ok":true,"x":…,"run":n,"body":…}.
func (e *mwEnv) tool(w http.ResponseWriter, r *http.Request) {
	n := e.runs.Add(1)
	body, _ := io.ReadAll(r.Body)
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"ok": true, "x": r.URL.Query().Get("x"), "run": n, "body": string(body)})
}

func newMWEnv(t *testing.T) *mwEnv {
	t.Helper()
	local, err := facilitator.NewLocal(facilitator.LocalConfig{})
	if err != nil {
		t.Fatal(err)
	}
	e := &mwEnv{t: t, fac: &mwFacilitator{inner: local}, journal: engine.NewMemoryJournal()}
	logger := slog.New(slog.DiscardHandler)
	eng, err := engine.New(engine.Config{Schemes: schemetest.Exact(t, exactserver.Config{Facilitator: e.fac}), Journal: e.journal, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	offer := mwTerms(t)
	mw, err := nethttp.New(nethttp.Config{
		Engine: eng,
		Offer: func(r *http.Request) (*engine.Offer, bool) {
			if r.URL.Path == "/free" {
				return nil, false
			}
			return offer, true
		},
		Logger: logger,
	})
	if err != nil {
		t.Fatal(err)
	}
	e.srv = httptest.NewServer(mw.Wrap(http.HandlerFunc(e.tool)))
	t.Cleanup(e.srv.Close)
	return e
}

// events returns the settled journal rows.
func (e *mwEnv) events() []engine.Record {
	e.t.Helper()
	return mwSettled(e.t, e.journal, func(engine.Record) bool { return true })
}

package x402_test

import (
	"context"
	"encoding/json"
	"errors"
	"github.com/seed1284c1d2/svc/internal/nodetest"
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

	"github.com/seed1284c1d2/svc/x402"
)

// e2eScriptTimeout bounds one node client run.
const e2eScriptTimeout = 45 * time.Second

// e2eSkipOrFail skips the test, or fails it when CI=true.
func e2eSkipOrFail(t *testing.T, format string, args ...any) {
	t.Helper()
	nodetest.SkipOrFail(t, format, args...)
}

// e2eSetup finds node and the e2e/ folder and installs its locked
// dependencies when e2e/node_modules lacks them. It returns the node
// binary and the folder.
func e2eSetup(t *testing.T) (node, dir string) {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("..", "e2e"))
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

// e2eServer is the paid server of the end-to-end tests: the middleware in
// front of a tool that counts its runs per "case" query parameter, and the
// LocalFacilitator served over HTTP on a second listener and reached
// through HTTPFacilitator.
type e2eServer struct {
	app, facilitator *httptest.Server
	local            *x402.LocalFacilitator

	mu      sync.Mutex
	runs    map[string]*atomic.Int64
	settled map[string][]x402.SettledEvent
}

func newE2EServer(t *testing.T) *e2eServer {
	t.Helper()
	local, err := x402.NewLocalFacilitator(x402.LocalFacilitatorConfig{Networks: []string{x402.NetworkBase}, PayTo: mwPayTo})
	if err != nil {
		t.Fatal(err)
	}
	s := &e2eServer{local: local, runs: map[string]*atomic.Int64{}, settled: map[string][]x402.SettledEvent{}}
	s.facilitator = httptest.NewServer(x402.FacilitatorHandler(local))
	t.Cleanup(s.facilitator.Close)
	hf, err := x402.NewHTTPFacilitator(x402.HTTPFacilitatorConfig{URL: s.facilitator.URL, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	terms := mwTerms(t)
	mw, err := x402.NewMiddleware(x402.Config{
		Facilitator: hf,
		Terms:       func(*http.Request) (x402.Terms, bool) { return terms, true },
		RequestID:   func(r *http.Request) string { return r.URL.Query().Get("case") },
		OnSettled: func(_ context.Context, ev x402.SettledEvent) {
			if ev.Replay { // a replayed answer re-announces; not a new settlement
				return
			}
			s.mu.Lock()
			s.settled[ev.RequestID] = append(s.settled[ev.RequestID], ev)
			s.mu.Unlock()
		},
		Logger: slog.New(slog.DiscardHandler),
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

func (s *e2eServer) events(c string) []x402.SettledEvent {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]x402.SettledEvent(nil), s.settled[c]...)
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
		{"tamper-value", http.StatusPaymentRequired, x402.ReasonValueMismatch},
		{"tamper-deadline", http.StatusPaymentRequired, x402.ReasonInvalidSignature},
		{"tamper-accepted", http.StatusPaymentRequired, x402.ErrorNoMatchingRequirements},
		{"wrong-recipient", http.StatusPaymentRequired, x402.ReasonRecipientMismatch},
		{"expired", http.StatusPaymentRequired, x402.ReasonValidBefore},
		{"wrong-network", http.StatusPaymentRequired, x402.ErrorNoMatchingRequirements},
		{"replay", http.StatusPaymentRequired, x402.ReasonNonceAlreadyUsed},
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
	settled := len(s.events(caseID))
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
		if n := s.counter(caseID + "-2").Load(); n != 0 || len(s.events(caseID+"-2")) != 0 {
			t.Fatalf("the replayed payment ran the tool %d times for another request", n)
		}
	}
	if tc.status == http.StatusOK {
		pr := res.PaymentResponse
		if pr == nil || !pr.Success || pr.Network != x402.NetworkBase || !strings.HasPrefix(pr.Transaction, x402.LocalTransactionPrefix) ||
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

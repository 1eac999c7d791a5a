package a2a

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/seed1284c1d2/svc/internal/schemetest"
	"github.com/seed1284c1d2/svc/tools"
	"github.com/seed1284c1d2/svc/tools/sell"
	"github.com/seed1284c1d2/svc/x402"
	x402a2a "github.com/seed1284c1d2/svc/x402/a2a"
	"github.com/seed1284c1d2/svc/x402/client"
	"github.com/seed1284c1d2/svc/x402/engine"
	"github.com/seed1284c1d2/svc/x402/exact"
	exactserver "github.com/seed1284c1d2/svc/x402/exact/server"
	"github.com/seed1284c1d2/svc/x402/facilitator"
	"github.com/seed1284c1d2/svc/xau"
)

// payKeyHex is the payer's key in the payment tests (a well-known test key,
// 0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266); nothing touches a chain.
const payKeyHex = "ac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80"

// countingTerminal counts the quotes asked of a terminal.
type countingTerminal struct {
	*xau.Switchable
	quotes atomic.Int64
}

func (c *countingTerminal) Quote(ctx context.Context, symbol string) (xau.Quote, error) {
	c.quotes.Add(1)
	return c.Switchable.Quote(ctx, symbol)
}

// payEnv is a selling server on 127.0.0.1: the real catalog, discovery
// Service and payment engine (local facilitator, memory journal), a
// simulated terminal behind a switch, and discovery's agent card.
type payEnv struct {
	*testEnv
	eng     *engine.Engine
	journal *engine.MemoryJournal
	fac     *facilitator.Local
	term    *countingTerminal
	signer  *client.Signer
	// httpOffer is the HTTP offer of risk-levels, to pay over "HTTP"
	// through the same engine.
	httpOffer *engine.Offer
	// seen records the requests reaching /a2a.
	seen *seenRequests
}

// seenRequest is what a request to /a2a said: its JSON-RPC method, its
// A2A-Version header and its extension headers.
type seenRequest struct {
	method, version, extensions, legacyExtensions string
}

// seenRequests records the requests reaching /a2a.
type seenRequests struct {
	mu   sync.Mutex
	list []seenRequest
}

func (s *seenRequests) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var m struct{ Method string }
		_ = json.Unmarshal(body, &m)
		s.mu.Lock()
		s.list = append(s.list, seenRequest{m.Method, r.Header.Get("A2A-Version"), r.Header.Get("A2A-Extensions"), r.Header.Get("X-A2A-Extensions")})
		s.mu.Unlock()
		r.Body = io.NopCloser(bytes.NewReader(body))
		h.ServeHTTP(w, r)
	})
}

// take returns the requests seen since the last take.
func (s *seenRequests) take() []seenRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	l := s.list
	s.list = nil
	return l
}

// paySetup is what a selling server is built from: the handler's options
// and the shop's configuration (its Offers is the options' Engine).
type paySetup struct {
	Options
	Sell sell.Config
}

// newTestShop builds the shop of cfg, failing t on an error.
func newTestShop(t testing.TB, cfg sell.Config) *sell.Shop {
	t.Helper()
	shop, err := sell.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return shop
}

// newPayEnv starts a selling server; mutate adjusts the setup.
func newPayEnv(t *testing.T, mutate ...func(*paySetup)) *payEnv {
	t.Helper()
	env := &payEnv{testEnv: &testEnv{}}
	mux := http.NewServeMux()
	env.srv = httptest.NewUnstartedServer(mux)
	base := "http://" + env.srv.Listener.Addr().String()
	env.cat, env.s = newRealSurfaces(t, base)
	sim, err := xau.NewSimulated(xau.SimConfig{Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	env.term = &countingTerminal{Switchable: xau.NewSwitchable(sim)}
	env.fac, err = facilitator.NewLocal(facilitator.LocalConfig{PayTo: testPayTo})
	if err != nil {
		t.Fatal(err)
	}
	env.journal = engine.NewMemoryJournal()
	env.eng, err = engine.New(engine.Config{Schemes: schemetest.Exact(t, exactserver.Config{Facilitator: env.fac, SkipFacilitatorVerify: true}), Journal: env.journal,
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	env.signer, err = client.ParseSigner(payKeyHex)
	if err != nil {
		t.Fatal(err)
	}
	setup := paySetup{Options: Options{Engine: env.eng}, Sell: sell.Config{
		Catalog: env.cat,
		PayTo:   testPayTo,
		Env:     tools.Env{Terminal: env.term},
		TerminalCheck: func(context.Context) error {
			if env.term.IsDown() {
				return xau.ErrUnavailable
			}
			return nil
		},
	}}
	for _, m := range mutate {
		m(&setup)
	}
	setup.Sell.Offers = setup.Engine
	opts := setup.Options
	opts.Shop = newTestShop(t, setup.Sell)
	h, err := newHandler(env.s, opts)
	if err != nil {
		t.Fatal(err)
	}
	env.h = h
	env.seen = &seenRequests{}
	mux.Handle("/a2a", env.seen.wrap(h))
	mux.Handle("GET /.well-known/agent-card.json", env.s.AgentCardHandler())
	env.srv.Start()
	t.Cleanup(env.srv.Close)

	rl, _ := env.cat.ByKey("risk-levels")
	route, err := rl.PaymentRoute(env.cat.Network(), testPayTo, rl.URL)
	if err != nil {
		t.Fatal(err)
	}
	env.httpOffer, err = env.eng.NewOffer("POST /api/risk-levels", rl.Key, route)
	if err != nil {
		t.Fatal(err)
	}
	return env
}

// riskInput is a valid risk-levels input.
var riskInput = obj{"entry": 3500, "direction": "long", "slPct": 0.05, "tpPct": 0.04}

// saleMessage is a user message asking for a paid tool, in v's shape.
func saleMessage(v version, id, tool string, input any) obj {
	return dataMessage(v, id, obj{"tool": tool, "input": input})
}

// payingMessage is a user message on task carrying a payment, in v's shape.
func payingMessage(v version, id, taskID string, payload any) obj {
	m := textMessage(v, id, "Here is the payment authorization.")
	m["taskId"] = taskID
	m["metadata"] = obj{x402a2a.MetaStatus: x402a2a.StatusPaymentSubmitted, x402a2a.MetaPayload: payload}
	return m
}

// payMessage is a message of the payment flow as the tests read it.
type payMessage struct {
	Kind      string                     `json:"kind"`
	MessageID string                     `json:"messageId"`
	TaskID    string                     `json:"taskId"`
	ContextID string                     `json:"contextId"`
	Role      string                     `json:"role"`
	Parts     []wirePart                 `json:"parts"`
	Metadata  map[string]json.RawMessage `json:"metadata"`
}

// payTask is a task of the payment flow as the tests read it.
type payTask struct {
	Kind      string `json:"kind"`
	ID        string `json:"id"`
	ContextID string `json:"contextId"`
	Status    struct {
		State     string      `json:"state"`
		Message   *payMessage `json:"message"`
		Timestamp string      `json:"timestamp"`
	} `json:"status"`
	Artifacts []struct {
		ArtifactID string     `json:"artifactId"`
		Name       string     `json:"name"`
		Parts      []wirePart `json:"parts"`
	} `json:"artifacts"`
	History []payMessage `json:"history"`
}

// meta reads one metadata member of the status message into v; false when
// absent.
func (p payTask) meta(t *testing.T, key string, v any) bool {
	t.Helper()
	if p.Status.Message == nil {
		return false
	}
	raw, ok := p.Status.Message.Metadata[key]
	if !ok {
		return false
	}
	if err := json.Unmarshal(raw, v); err != nil {
		t.Fatalf("metadata %s: %v in %s", key, err, raw)
	}
	return true
}

// paymentStatus is the status message's x402.payment.status ("" if none).
func (p payTask) paymentStatus(t *testing.T) string {
	var s string
	p.meta(t, x402a2a.MetaStatus, &s)
	return s
}

// paymentError is the status message's x402.payment.error ("" if none).
func (p payTask) paymentError(t *testing.T) string {
	var s string
	p.meta(t, x402a2a.MetaError, &s)
	return s
}

// required is the status message's x402.payment.required.
func (p payTask) required(t *testing.T) x402.PaymentRequired {
	t.Helper()
	var pr x402.PaymentRequired
	if !p.meta(t, x402a2a.MetaRequired, &pr) {
		t.Fatalf("task %s (%s): no %s", p.ID, p.Status.State, x402a2a.MetaRequired)
	}
	return pr
}

// receipts is the status message's x402.payment.receipts.
func (p payTask) receipts(t *testing.T) []x402.SettleResponse {
	var rs []x402.SettleResponse
	p.meta(t, x402a2a.MetaReceipts, &rs)
	return rs
}

// output is the data part of the answer artifact.
func (p payTask) output(t *testing.T) json.RawMessage {
	t.Helper()
	if len(p.Artifacts) != 1 || len(p.Artifacts[0].Parts) == 0 || p.Artifacts[0].Parts[0].Data == nil {
		t.Fatalf("task %s: want one artifact with a data part, got %+v", p.ID, p.Artifacts)
	}
	return p.Artifacts[0].Parts[0].Data
}

// decodePayTask reads a task result (SendMessage's {"task": ...} in 1.0
// when wrapped) and checks the version's shape.
func decodePayTask(t *testing.T, v version, result json.RawMessage, wrapped bool) payTask {
	t.Helper()
	if wrapped && v == v10 {
		var w map[string]json.RawMessage
		if err := json.Unmarshal(result, &w); err != nil || w["task"] == nil {
			t.Fatalf(`1.0 SendMessage result must be {"task": ...}, got %s`, result)
		}
		result = w["task"]
	}
	var p payTask
	if err := json.Unmarshal(result, &p); err != nil {
		t.Fatalf("task: %v in %s", err, result)
	}
	if (v == v03) != (p.Kind == "task") || p.ID == "" || p.ContextID == "" {
		t.Fatalf("task shape for %s: %s", v, result)
	}
	if m := p.Status.Message; m != nil {
		wantRole := map[version]string{v10: "ROLE_AGENT", v03: "agent"}[v]
		if m.Role != wantRole || m.TaskID != p.ID || m.ContextID != p.ContextID || (v == v03) != (m.Kind == "message") {
			t.Fatalf("status message %+v of task %s", m, p.ID)
		}
		checkParts(t, v, m.Parts)
	}
	return p
}

// state spells s in version v.
func state(v version, s taskState) string { return s.name(v) }

// send sends message to /a2a with the extension activated and returns the
// task.
func (env *payEnv) send(t *testing.T, v version, message obj) payTask {
	t.Helper()
	ex := env.sendRaw(t, v, message)
	if ex.resp.Error != nil {
		t.Fatalf("%s: %s", sendMethod(v), ex.raw)
	}
	return decodePayTask(t, v, ex.resp.Result, true)
}

// sendRaw sends message and returns the exchange.
func (env *payEnv) sendRaw(t *testing.T, v version, message obj) exchange {
	t.Helper()
	return env.postWith(t, v, request(t, `1`, sendMethod(v), obj{"message": message}), true)
}

// postWith posts a JSON-RPC body in version v, with or without the
// extension activation header.
func (env *payEnv) postWith(t *testing.T, v version, body string, activate bool) exchange {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, env.srv.URL+"/a2a", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if v == v10 {
		req.Header.Set("A2A-Version", "1.0")
		if activate {
			req.Header.Set("A2A-Extensions", x402a2a.ExtensionURI)
		}
	} else if activate {
		req.Header.Set("X-A2A-Extensions", x402a2a.ExtensionURI)
	}
	res, err := env.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	ex := exchange{status: res.StatusCode, header: res.Header, raw: raw}
	if err := json.Unmarshal(raw, &ex.resp); err != nil {
		t.Fatalf("answer is not JSON: %v\n%s", err, raw)
	}
	return ex
}

// get reads a task back.
func (env *payEnv) get(t *testing.T, v version, id string) payTask {
	t.Helper()
	ex := env.postWith(t, v, request(t, `2`, getMethod(v), obj{"id": id}), true)
	if ex.resp.Error != nil {
		t.Fatalf("%s: %s", getMethod(v), ex.raw)
	}
	return decodePayTask(t, v, ex.resp.Result, false)
}

// pay signs a payment of the first requirement of pr; tamper, when set,
// changes the authorization after signing.
func (env *payEnv) pay(t *testing.T, pr x402.PaymentRequired, tamper func(*exact.ExactEVMPayload)) x402.PaymentPayload {
	t.Helper()
	if len(pr.Accepts) == 0 {
		t.Fatalf("no requirement in %+v", pr)
	}
	ep, err := env.signer.NewPayload(pr.Accepts[0], time.Now(), 0)
	if err != nil {
		t.Fatal(err)
	}
	if tamper != nil {
		tamper(&ep)
	}
	raw, err := json.Marshal(ep)
	if err != nil {
		t.Fatal(err)
	}
	res := pr.Resource
	return x402.PaymentPayload{X402Version: 2, Resource: &res, Accepted: pr.Accepts[0], Payload: raw}
}

// rows returns the journal rows in state s.
func (env *payEnv) rows(t *testing.T, s engine.State) []engine.Record {
	t.Helper()
	recs, err := env.journal.List(context.Background(), s, 100)
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

// settled is the number of settlements of the local facilitator.
func (env *payEnv) settled() int { return len(env.fac.Settlements()) }

// invoke runs a tool directly (no payment), for comparing answers.
func invoke(t *testing.T, cat *tools.Catalog, env tools.Env, key string, input any) json.RawMessage {
	t.Helper()
	tool, ok := cat.ByKey(key)
	if !ok {
		t.Fatalf("no tool %s", key)
	}
	in, err := json.Marshal(input)
	if err != nil {
		t.Fatal(err)
	}
	out, err := tool.Invoke(context.Background(), env, in)
	if err != nil {
		t.Fatalf("%s: %v", key, err)
	}
	return out
}

// sameJSON reports whether a and b encode the same value.
func sameJSON(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}

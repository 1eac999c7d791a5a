package mcp_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/seed1284c1d2/svc/discovery"
	"github.com/seed1284c1d2/svc/discovery/mcp"
	"github.com/seed1284c1d2/svc/httpserver"
	"github.com/seed1284c1d2/svc/internal/schemetest"
	"github.com/seed1284c1d2/svc/store"
	"github.com/seed1284c1d2/svc/tools"
	"github.com/seed1284c1d2/svc/tools/sell"
	"github.com/seed1284c1d2/svc/x402"
	"github.com/seed1284c1d2/svc/x402/client"
	"github.com/seed1284c1d2/svc/x402/engine"
	"github.com/seed1284c1d2/svc/x402/exact"
	exactserver "github.com/seed1284c1d2/svc/x402/exact/server"
	"github.com/seed1284c1d2/svc/x402/facilitator"
	x402mcp "github.com/seed1284c1d2/svc/x402/mcp"
	"github.com/seed1284c1d2/svc/xau"
)

// testPayerKey is the payer of the tests: the well-known first key of the
// x402 repository's Go tests (0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266).
// It holds nothing anywhere that matters; no chain is contacted.
const testPayerKey = "0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80"

// paidEnv is the reference server as cmd/svc assembles it: the paid HTTP
// routes and /mcp on one real listener on 127.0.0.1, sharing one payment
// engine over a real journal (PostgreSQL when SVC_TEST_DATABASE_URL is set,
// else SQLite) and the local facilitator, which verifies signatures for
// real and settles nothing on chain.
type paidEnv struct {
	*testEnv
	engine   *engine.Engine
	journal  engine.Journal
	local    *facilitator.Local
	terminal *xau.Switchable
	signer   *client.Signer
	// handler is the server's whole handler, for in-process benchmarks.
	handler http.Handler
}

// paidOptions vary the paid environment.
type paidOptions struct {
	// facilitator wraps the local facilitator (a failing settlement).
	facilitator func(*facilitator.Local) x402.Facilitator
	// memory uses an in-memory journal instead of the store.
	memory bool
	// logger receives the server's logs; nil discards them.
	logger *slog.Logger
	// sdkOnly leaves every paid call to the SDK (no fast path).
	sdkOnly bool
	// symbolCheck replaces the symbol preflight (nil: the default, a
	// health cache over the terminal).
	symbolCheck func(ctx context.Context, symbol string) error
	// payerBurst and payerRefill are the engine's payer budget (zero: the
	// defaults).
	payerBurst  int
	payerRefill time.Duration
	// regexTimeout is the Env's RegexTimeout (zero: the default).
	regexTimeout time.Duration
	// observe, when set, is the engine's Observe.
	observe func(engine.Event)
	// schemes, when set, returns the engine's schemes given the exact
	// one (nil: exact alone).
	schemes func(exact x402.ServerScheme) []x402.ServerScheme
}

// openPaidStore opens the journal of a test: PostgreSQL when
// SVC_TEST_DATABASE_URL is set, else a SQLite file in a temporary folder.
func openPaidStore(t testing.TB) store.Store {
	t.Helper()
	dsn := os.Getenv("SVC_TEST_DATABASE_URL")
	if dsn == "" || testing.Short() { // -short: SQLite, not PostgreSQL
		dsn = filepath.Join(t.TempDir(), "svc.db")
	}
	st, err := store.Open(context.Background(), dsn)
	if err != nil {
		t.Fatalf("store: %v", err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return st
}

// newPaidEnv starts the server of a paid test.
func newPaidEnv(t testing.TB, o paidOptions) *paidEnv {
	t.Helper()
	log := o.logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + ln.Addr().String()
	cat, err := tools.New(tools.Options{BaseURL: base})
	if err != nil {
		t.Fatal(err)
	}
	local, err := facilitator.NewLocal(facilitator.LocalConfig{Networks: []string{x402.NetworkBase}, PayTo: testPayTo})
	if err != nil {
		t.Fatal(err)
	}
	var fac x402.Facilitator = local
	if o.facilitator != nil {
		fac = o.facilitator(local)
	}
	st := openPaidStore(t)
	var journal engine.Journal = st
	if o.memory {
		journal = engine.NewMemoryJournal()
	}
	schemes := schemetest.Exact(t, exactserver.Config{Facilitator: fac, SkipFacilitatorVerify: true})
	if o.schemes != nil {
		schemes = o.schemes(schemes[0])
	}
	eng, err := engine.New(engine.Config{Schemes: schemes, Journal: journal, Logger: log,
		PayerBurst: o.payerBurst, PayerRefill: o.payerRefill, Observe: o.observe})
	if err != nil {
		t.Fatal(err)
	}
	sim, err := xau.NewSimulated(xau.SimConfig{Seed: 11})
	if err != nil {
		t.Fatal(err)
	}
	term := xau.NewSwitchable(sim)
	disc, err := discovery.New(discovery.Config{Catalog: cat, BaseURL: base, PayTo: testPayTo, DevMode: true})
	if err != nil {
		t.Fatal(err)
	}
	shop, err := sell.New(sell.Config{Offers: eng, Catalog: cat, PayTo: testPayTo,
		Env:           tools.Env{Terminal: term, RegexTimeout: o.regexTimeout},
		TerminalCheck: xau.NewHealthCache(term, time.Millisecond, nil).Check,
		SymbolCheck:   o.symbolCheck,
	})
	if err != nil {
		t.Fatal(err)
	}
	h, err := mcp.NewHandler(disc, mcp.Options{
		BaseURL: base, Logger: log,
		Engine: eng, Shop: shop,
		RequestID: httpserver.RequestIDOf,
		RefCode:   func(r *http.Request) string { return r.Header.Get("X-Ref") },
	})
	if err != nil {
		t.Fatal(err)
	}
	if o.sdkOnly {
		mcp.DisableFastPath(h)
	}
	srv, err := httpserver.New(httpserver.Config{
		Catalog: cat, Terminal: term, HealthTTL: time.Millisecond,
		Facilitator: fac, Store: st, Engine: eng,
		PayTo: testPayTo, PublicBaseURL: base, DevMode: true,
		RateLimit: -1, UnpaidRate: -1,
		Routes: []httpserver.Route{{Pattern: "/mcp", Handler: h, Free: true}},
		Logger: log,
	})
	if err != nil {
		t.Fatal(err)
	}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	})
	signer, err := client.ParseSigner(testPayerKey)
	if err != nil {
		t.Fatal(err)
	}
	return &paidEnv{
		testEnv: &testEnv{url: base + "/mcp", base: base, catalog: cat, svc: disc},
		engine:  eng, journal: journal, local: local, terminal: term, signer: signer,
		handler: srv.Handler(),
	}
}

// era is how a raw test request speaks MCP.
type era int

const (
	// legacy: MCP-Protocol-Version 2025-06-18, no _meta triple (the
	// tool-result binding).
	legacy era = iota
	// modern: 2026-07-28 without the x402 extension (the tool-result
	// binding).
	modern
	// extension: 2026-07-28 advertising org.x402/payment (the extension
	// binding).
	extension
)

func (e era) String() string { return [...]string{"legacy", "modern", "extension"}[e] }

// callTool sends one raw tools/call of name with args and the extra
// _meta members, in era, and returns the HTTP status and the result (nil
// for a JSON-RPC error, which fails the test).
func (e *paidEnv) callTool(t testing.TB, er era, name string, args any, meta map[string]any) map[string]any {
	t.Helper()
	res, status := e.rawCall(t, er, name, args, meta, nil)
	if status != http.StatusOK || res.Error != nil {
		t.Fatalf("%s %s: status %d, error %+v", er, name, status, res.Error)
	}
	var out map[string]any
	if err := json.Unmarshal(res.Result, &out); err != nil {
		t.Fatalf("%s %s: result %s: %v", er, name, res.Result, err)
	}
	return out
}

// rawCall sends one tools/call and returns the decoded JSON-RPC response.
func (e *paidEnv) rawCall(t testing.TB, er era, name string, args any, meta map[string]any, headers map[string]string) (rpcResponse, int) {
	t.Helper()
	body, h := e.requestOf(t, er, name, args, meta)
	for k, v := range headers {
		h[k] = v
	}
	rep := e.post(t, body, h)
	return rep.rpc(t), rep.status
}

// requestOf is the body and the MCP headers of one tools/call of name
// with args and the extra _meta members, in era.
func (e *paidEnv) requestOf(t testing.TB, er era, name string, args any, meta map[string]any) (string, map[string]string) {
	t.Helper()
	m := map[string]any{}
	for k, v := range meta {
		m[k] = v
	}
	h := map[string]string{"MCP-Protocol-Version": "2025-06-18"}
	if er != legacy {
		caps := map[string]any{}
		if er == extension {
			caps["extensions"] = map[string]any{x402mcp.ExtensionPayment: map[string]any{}}
		}
		m["io.modelcontextprotocol/protocolVersion"] = "2026-07-28"
		m["io.modelcontextprotocol/clientCapabilities"] = caps
		m["io.modelcontextprotocol/clientInfo"] = map[string]any{"name": "raw-test", "version": "1.0.0"}
		h = modernHeaders("tools/call", name)
	}
	params := map[string]any{"name": name}
	if args != nil {
		params["arguments"] = args
	}
	if len(m) > 0 {
		params["_meta"] = m
	}
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": params})
	if err != nil {
		t.Fatal(err)
	}
	return string(body), h
}

// offerOf extracts the PaymentRequired of an unpaid answer in either
// binding, failing the test when there is none.
func offerOf(t testing.TB, result map[string]any) x402.PaymentRequired {
	t.Helper()
	var raw any
	switch {
	case result["resultType"] == x402mcp.ResultTypePaymentRequired:
		raw = result["paymentRequired"]
	case result["isError"] == true && result["structuredContent"] != nil:
		raw = result["structuredContent"]
	default:
		t.Fatalf("no payment requirement in %s", mustJSON(t, result))
	}
	var pr x402.PaymentRequired
	if err := json.Unmarshal(mustJSON(t, raw), &pr); err != nil || len(pr.Accepts) == 0 {
		t.Fatalf("payment requirement %s: %v", mustJSON(t, raw), err)
	}
	return pr
}

// sign builds a payment of the first requirement of pr.
func (e *paidEnv) sign(t testing.TB, pr x402.PaymentRequired) x402.PaymentPayload {
	t.Helper()
	req := pr.Accepts[0]
	ep, err := e.signer.NewPayload(req, time.Now(), 0)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := json.Marshal(ep)
	if err != nil {
		t.Fatal(err)
	}
	res := pr.Resource
	return x402.PaymentPayload{X402Version: x402.Version, Resource: &res, Accepted: req, Payload: raw, Extensions: pr.Extensions}
}

// asObject is a payment as the specification sends it: a JSON object.
func asObject(t testing.TB, p x402.PaymentPayload) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(mustJSON(t, p), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// asBase64 is a payment as Cloudflare's client sends it: base64 of its
// JSON.
func asBase64(t testing.TB, p x402.PaymentPayload) string {
	t.Helper()
	return base64.StdEncoding.EncodeToString(mustJSON(t, p))
}

// settlementOf reads result._meta["x402/payment-response"].
func settlementOf(t testing.TB, result map[string]any) (x402.SettleResponse, bool) {
	t.Helper()
	meta, _ := result["_meta"].(map[string]any)
	raw, ok := meta[x402mcp.MetaPaymentResponse]
	if !ok {
		return x402.SettleResponse{}, false
	}
	var sr x402.SettleResponse
	if err := json.Unmarshal(mustJSON(t, raw), &sr); err != nil {
		t.Fatalf("payment response %s: %v", mustJSON(t, raw), err)
	}
	return sr, true
}

// record returns the journal row of a payment.
func (e *paidEnv) record(t testing.TB, p x402.PaymentPayload) engine.Record {
	t.Helper()
	ep, err := exact.ParseExactEVMPayload(p.Payload)
	if err != nil {
		t.Fatal(err)
	}
	key := exact.NonceKey(p.Accepted.Network, p.Accepted.Asset, ep.Authorization.From, ep.Authorization.Nonce)
	rec, err := e.journal.Get(context.Background(), key)
	if err != nil {
		t.Fatalf("journal row of the payment: %v", err)
	}
	return rec
}

// notJournaled checks that the journal has no row for p.
func (e *paidEnv) notJournaled(t testing.TB, p x402.PaymentPayload) {
	t.Helper()
	ep, err := exact.ParseExactEVMPayload(p.Payload)
	if err != nil {
		t.Fatal(err)
	}
	key := exact.NonceKey(p.Accepted.Network, p.Accepted.Asset, ep.Authorization.From, ep.Authorization.Nonce)
	if rec, err := e.journal.Get(context.Background(), key); !errors.Is(err, engine.ErrNotFound) {
		t.Fatalf("the payment was journaled (%v): %+v", err, rec)
	}
}

// settleFailing is a facilitator whose settlements are refused.
type settleFailing struct{ x402.Facilitator }

func (f settleFailing) Settle(_ context.Context, _ x402.PaymentPayload, req x402.PaymentRequirements) (x402.SettleResponse, error) {
	return x402.SettleResponse{Success: false, ErrorReason: "invalid_exact_evm_insufficient_balance", Network: req.Network}, nil
}

// paidTool returns the catalog tool of an MCP tool name.
func (e *paidEnv) paidTool(t testing.TB, name string) *tools.Tool {
	t.Helper()
	tl, ok := e.catalog.ByOperationID(name)
	if !ok {
		t.Fatalf("no paid tool %s in the catalog", name)
	}
	return tl
}

// exampleArgs are a tool's example input as arguments.
func (e *paidEnv) exampleArgs(t testing.TB, name string) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(e.paidTool(t, name).ExampleInput, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// text is the first text content of a result.
func text(t testing.TB, result map[string]any) string {
	t.Helper()
	content, _ := result["content"].([]any)
	if len(content) == 0 {
		t.Fatalf("no content in %s", mustJSON(t, result))
	}
	first, _ := content[0].(map[string]any)
	s, _ := first["text"].(string)
	return s
}

// settleErroring is a facilitator whose settlements end without a
// decision (the transaction may have gone out).
type settleErroring struct{ x402.Facilitator }

func (f settleErroring) Settle(context.Context, x402.PaymentPayload, x402.PaymentRequirements) (x402.SettleResponse, error) {
	return x402.SettleResponse{}, errors.New("facilitator connection reset")
}

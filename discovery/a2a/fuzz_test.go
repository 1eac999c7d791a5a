package a2a

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/seed1284c1d2/svc/internal/schemetest"
	"github.com/seed1284c1d2/svc/tools"
	"github.com/seed1284c1d2/svc/tools/sell"
	x402a2a "github.com/seed1284c1d2/svc/x402/a2a"
	"github.com/seed1284c1d2/svc/x402/engine"
	exactserver "github.com/seed1284c1d2/svc/x402/exact/server"
	"github.com/seed1284c1d2/svc/x402/facilitator"
	"github.com/seed1284c1d2/svc/xau"
)

// FuzzA2A posts arbitrary bodies to the JSON-RPC endpoint, as an A2A 1.0
// client (A2A-Version: 1.0) and as a 0.3 one (no header), to a discovery
// handler and to a selling one (real engine, local facilitator, x402
// extension activated). Whatever the body: no panic and no 5xx; every answer is a JSON-RPC 2.0 object in
// application/json, an error object carrying an integer code. An input that
// takes more than 10 s is reported as a hang. (Run with -fuzzminimizetime
// of a few seconds: minimizing these long JSON inputs is slow.)
func FuzzA2A(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":{"messageId":"m1","role":"ROLE_USER","parts":[{"text":"stop loss for a long at 3500"}]}}}`,
		`{"jsonrpc":"2.0","id":"x","method":"message/send","params":{"message":{"kind":"message","messageId":"m1","role":"user","parts":[{"kind":"data","data":{"tool":"risk-levels","input":{"entry":3500,"direction":"long","slPct":0.05,"tpPct":0.04}}}]}}}`,
		`{"jsonrpc":"2.0","id":2,"method":"GetTask","params":{"id":"nope"}}`,
		`{"jsonrpc":"2.0","id":3,"method":"tasks/cancel","params":{"id":"t"}}`,
		`{"jsonrpc":"2.0","id":4,"method":"SendMessage","params":{"message":{"messageId":"m2","role":"ROLE_USER","taskId":"t","parts":[{"text":"pay"}],"metadata":{"x402.payment.status":"payment-submitted","x402.payment.payload":{"x402Version":2,"accepted":{"scheme":"exact","network":"eip155:8453"},"payload":{}}}}}}`,
		`{"jsonrpc":"2.0","id":5,"method":"message/send","params":{"message":{"kind":"message","messageId":"m3","role":"user","parts":[{"kind":"data","data":{"tool":"xau-quote","input":{}}}],"metadata":{"x402.payment.payload":"eyJ4NDAyVmVyc2lvbiI6Mn0="}}}}`,
		`[{"jsonrpc":"2.0","id":1,"method":"x"}]`, `{"jsonrpc":"1.0"}`, `{}`, `null`, `{"id":{}}`, ``, `{"jsonrpc":"2.0","method":"SendMessage"}`,
	} {
		for _, sell := range []bool{false, true} {
			f.Add(s, true, sell)
			f.Add(s, false, sell)
		}
	}
	cat, s := newRealSurfaces(f, "http://127.0.0.1:8080")
	free, err := newHandler(s, Options{})
	if err != nil {
		f.Fatal(err)
	}
	fac, err := facilitator.NewLocal(facilitator.LocalConfig{PayTo: testPayTo})
	if err != nil {
		f.Fatal(err)
	}
	eng, err := engine.New(engine.Config{Schemes: schemetest.Exact(f, exactserver.Config{Facilitator: fac, SkipFacilitatorVerify: true}), Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		f.Fatal(err)
	}
	sim, err := xau.NewSimulated(xau.SimConfig{Seed: 1})
	if err != nil {
		f.Fatal(err)
	}
	selling, err := newHandler(s, Options{Engine: eng, Shop: newTestShop(f, sell.Config{Offers: eng, Catalog: cat, PayTo: testPayTo, Env: tools.Env{Terminal: sim}})})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, body string, v10, sell bool) {
		wd := time.AfterFunc(10*time.Second, func() { panic(fmt.Sprintf("slow input %q v10=%v sell=%v", body, v10, sell)) })
		defer wd.Stop()
		req := httptest.NewRequest(http.MethodPost, "/a2a", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		if v10 {
			req.Header.Set("A2A-Version", "1.0")
		}
		h := free
		if sell {
			h = selling
			req.Header.Set("A2A-Extensions", x402a2a.ExtensionURI)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code >= 500 {
			t.Fatalf("%q: status %d: %s", body, rec.Code, rec.Body)
		}
		if rec.Code == http.StatusNoContent {
			return // a notification
		}
		if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
			t.Fatalf("%q: Content-Type %q", body, ct)
		}
		var resp struct {
			JSONRPC string `json:"jsonrpc"`
			Error   *struct {
				Code *int `json:"code"`
			} `json:"error"`
			Result json.RawMessage `json:"result"`
		}
		if err := json.Unmarshal(rec.Body.Bytes(), &resp); err != nil || resp.JSONRPC != "2.0" {
			t.Fatalf("%q: answer %s is not a JSON-RPC 2.0 object (%v)", body, rec.Body, err)
		}
		if (resp.Error == nil) == (resp.Result == nil) || (resp.Error != nil && resp.Error.Code == nil) {
			t.Fatalf("%q: answer %s has not exactly one of result and error{code}", body, rec.Body)
		}
	})
}

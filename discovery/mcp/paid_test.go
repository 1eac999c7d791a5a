package mcp_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"reflect"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/seed1284c1d2/svc/discovery/mcp"
	"github.com/seed1284c1d2/svc/internal/schemetest"
	"github.com/seed1284c1d2/svc/tools"
	"github.com/seed1284c1d2/svc/tools/sell"
	"github.com/seed1284c1d2/svc/x402"
	"github.com/seed1284c1d2/svc/x402/engine"
	"github.com/seed1284c1d2/svc/x402/exact"
	exactserver "github.com/seed1284c1d2/svc/x402/exact/server"
	"github.com/seed1284c1d2/svc/x402/facilitator"
	x402mcp "github.com/seed1284c1d2/svc/x402/mcp"
)

var eras = []era{legacy, modern, extension}

// TestPaidToolList checks that tools/list offers every paid tool next to
// the discovery tools: named by operation id, with title, description and
// price, schemas from the descriptor, annotations, and the price, network
// and payment terms in _meta (Cloudflare's agents-x402 keys included); and
// that server/discover declares the org.x402/payment extension.
func TestPaidToolList(t *testing.T) {
	eachPath(t, paidOptions{}, func(t *testing.T, e *paidEnv) {
		for _, er := range []era{legacy, modern} {
			body := legacyRequest(t, 1, "tools/list", map[string]any{})
			h := map[string]string{"MCP-Protocol-Version": "2025-06-18"}
			if er == modern {
				body, h = modernRequest(t, 1, "tools/list", nil), modernHeaders("tools/list", "")
			}
			res := e.post(t, body, h).rpc(t)
			var list struct {
				Tools []map[string]any `json:"tools"`
			}
			if err := json.Unmarshal(res.Result, &list); err != nil {
				t.Fatal(err)
			}
			byName := map[string]map[string]any{}
			for _, tl := range list.Tools {
				byName[tl["name"].(string)] = tl
			}
			if len(list.Tools) != len(toolNames)+e.catalog.Len() {
				t.Fatalf("%s: %d tools listed, want %d discovery + %d paid", er, len(list.Tools), len(toolNames), e.catalog.Len())
			}
			for _, name := range toolNames {
				if byName[name] == nil {
					t.Fatalf("%s: discovery tool %s missing", er, name)
				}
			}
			for _, tool := range e.catalog.All() {
				got := byName[tool.OperationID]
				if got == nil {
					t.Fatalf("%s: paid tool %s missing", er, tool.OperationID)
				}
				if got["title"] != tool.Name || !strings.Contains(got["description"].(string), tool.Price+" USDC per call") {
					t.Errorf("%s: title %v, description %v", tool.OperationID, got["title"], got["description"])
				}
				ann := got["annotations"].(map[string]any)
				if ann["readOnlyHint"] != true || ann["destructiveHint"] != false ||
					ann["idempotentHint"] != !tool.Terminal || ann["openWorldHint"] != tool.Terminal {
					t.Errorf("%s annotations %v", tool.OperationID, ann)
				}
				in := got["inputSchema"].(map[string]any)
				var want map[string]any
				if err := json.Unmarshal(tool.InputSchema, &want); err != nil {
					t.Fatal(err)
				}
				delete(want, "$schema")
				if !reflect.DeepEqual(in, want) {
					t.Errorf("%s: inputSchema %s, want the descriptor's", tool.OperationID, mustJSON(t, in))
				}
				out := got["outputSchema"].(map[string]any)
				anyOf, _ := out["anyOf"].([]any)
				if out["type"] != "object" || len(anyOf) != 2 || anyOf[0].(map[string]any)["properties"] == nil ||
					!reflect.DeepEqual(anyOf[1].(map[string]any)["required"], []any{"x402Version", "accepts"}) {
					t.Errorf("%s: outputSchema %s", tool.OperationID, mustJSON(t, out))
				}
				meta := got["_meta"].(map[string]any)
				price, _ := strconv.ParseFloat(tool.Price, 64)
				terms, _ := meta[mcp.MetaPrice].(map[string]any)
				if meta[x402mcp.MetaAgentsPaymentRequired] != true || meta[x402mcp.MetaAgentsPriceUSD] != price ||
					terms["priceUsd"] != tool.Price || terms["network"] != x402.NetworkBase || terms["payTo"] != testPayTo ||
					terms["amount"] != strconv.FormatInt(tool.PriceAtomic, 10) || terms["resource"] != e.base+"/mcp#"+tool.OperationID {
					t.Errorf("%s: _meta %v", tool.OperationID, meta)
				}
			}
		}
		res := e.post(t, modernRequest(t, 2, "server/discover", nil), modernHeaders("server/discover", "")).rpc(t)
		var disc struct {
			Capabilities struct {
				Extensions map[string]any `json:"extensions"`
			} `json:"capabilities"`
		}
		if err := json.Unmarshal(res.Result, &disc); err != nil {
			t.Fatal(err)
		}
		if _, ok := disc.Capabilities.Extensions[x402mcp.ExtensionPayment]; !ok {
			t.Fatalf("server/discover does not declare %s: %s", x402mcp.ExtensionPayment, res.Result)
		}
	})
}

// TestUnpaidCall checks the answer to a call without payment in both
// bindings: the tool-result binding (isError, the PaymentRequired as
// structuredContent, as text and in _meta["x402/error"]; resultType
// complete on 2026-07-28) and the extension binding (resultType
// payment_required with paymentRequired). Nothing is journaled.
func TestUnpaidCall(t *testing.T) {
	eachPath(t, paidOptions{}, func(t *testing.T, e *paidEnv) {
		tool := e.paidTool(t, "risk_levels")
		for _, er := range eras {
			t.Run(er.String(), func(t *testing.T) {
				res := e.callTool(t, er, "risk_levels", e.exampleArgs(t, "risk_levels"), nil)
				pr := offerOf(t, res)
				if pr.X402Version != 2 || pr.Error != engine.ReasonPaymentRequired || pr.Resource.URL != e.base+"/mcp#risk_levels" ||
					pr.Accepts[0].Amount != strconv.FormatInt(tool.PriceAtomic, 10) || pr.Accepts[0].PayTo != testPayTo ||
					pr.Accepts[0].Network != x402.NetworkBase {
					t.Fatalf("payment requirement %s", mustJSON(t, pr))
				}
				bz, _ := pr.Extensions["bazaar"].(map[string]any)
				input, _ := mustMap(bz["info"])["input"].(map[string]any)
				if input["type"] != "mcp" || input["toolName"] != "risk_levels" || input["inputSchema"] == nil {
					t.Fatalf("bazaar extension %s", mustJSON(t, bz))
				}
				meta, _ := res["_meta"].(map[string]any)
				switch er {
				case extension:
					if res["isError"] != nil || res["content"] != nil || meta[x402mcp.MetaPaymentError] != nil {
						t.Fatalf("extension binding answer %s", mustJSON(t, res))
					}
				default:
					if res["isError"] != true || !reflect.DeepEqual(generic(t, []byte(text(t, res))), res["structuredContent"]) ||
						!reflect.DeepEqual(meta[x402mcp.MetaPaymentError], res["structuredContent"]) {
						t.Fatalf("tool-result binding answer %s", mustJSON(t, res))
					}
					if wantType := map[era]any{legacy: nil, modern: "complete"}[er]; res["resultType"] != wantType {
						t.Fatalf("resultType %v, want %v", res["resultType"], wantType)
					}
				}
			})
		}
	})
}

func mustMap(v any) map[string]any {
	m, _ := v.(map[string]any)
	return m
}

// noPaymentAsked checks a tool error that asks for no payment.
func noPaymentAsked(t *testing.T, res map[string]any, want string) {
	t.Helper()
	meta, _ := res["_meta"].(map[string]any)
	if res["isError"] != true || res["structuredContent"] != nil || meta[x402mcp.MetaPaymentError] != nil ||
		res["resultType"] == x402mcp.ResultTypePaymentRequired {
		t.Fatalf("want a plain tool error, got %s", mustJSON(t, res))
	}
	if got := text(t, res); !strings.Contains(got, want) {
		t.Fatalf("tool error %q does not contain %q", got, want)
	}
}

// TestInvalidArgumentsAskNoPayment: arguments the tool's decoder refuses
// are a tool error naming the field, with no payment requirement, in every
// binding, even when a payment is presented (nothing is journaled).
func TestInvalidArgumentsAskNoPayment(t *testing.T) {
	eachPath(t, paidOptions{}, func(t *testing.T, e *paidEnv) {
		valid := e.exampleArgs(t, "risk_levels")
		pay := e.sign(t, offerOf(t, e.callTool(t, legacy, "risk_levels", valid, nil)))
		bad := e.exampleArgs(t, "risk_levels")
		bad["entry"] = -5
		typo := e.exampleArgs(t, "risk_levels")
		typo["colour"] = "red"
		for _, er := range eras {
			for _, c := range []struct {
				name, field string
				args        any
			}{
				{"risk_levels", "entry", bad},
				{"risk_levels", "colour", typo},
				{"risk_levels", "direction", map[string]any{"entry": 3500}},
				{"xau_bars", "count", map[string]any{"count": "many"}},
				{"session_state", "dateTime", map[string]any{"dateTime": "yesterday"}},
				{"session_state", `unknown field "datetime"`, map[string]any{"datetime": "2025-06-04T07:15:00Z"}},
				{"xau_bars", `unknown field "cnt"`, map[string]any{"cnt": 20}},
				{"xau_quote", `"EURUSD" is not served by the trading terminal`, map[string]any{"symbol": "EURUSD"}},
			} {
				noPaymentAsked(t, e.callTool(t, er, c.name, c.args, nil), c.field)
				noPaymentAsked(t, e.callTool(t, er, c.name, c.args, map[string]any{x402mcp.MetaPayment: asObject(t, pay)}), c.field)
			}
		}
		e.notJournaled(t, pay)
	})
}

// TestTerminalDownAsksNoPayment: with the trading terminal down, the gold
// tools answer a tool error and ask for no payment (a payment presented is
// not taken); once it is back, they ask for payment again.
func TestTerminalDownAsksNoPayment(t *testing.T) {
	eachPath(t, paidOptions{}, func(t *testing.T, e *paidEnv) {
		pay := e.sign(t, offerOf(t, e.callTool(t, legacy, "xau_quote", map[string]any{}, nil)))
		e.terminal.SetDown(true)
		time.Sleep(5 * time.Millisecond) // past the health cache's TTL
		for _, er := range eras {
			for _, name := range []string{"xau_quote", "xau_bars", "xau_market_state"} {
				noPaymentAsked(t, e.callTool(t, er, name, map[string]any{}, nil), "terminal is unavailable")
			}
			noPaymentAsked(t, e.callTool(t, er, "xau_quote", map[string]any{}, map[string]any{x402mcp.MetaPayment: asObject(t, pay)}), "no payment was requested")
		}
		e.notJournaled(t, pay)
		e.terminal.SetDown(false)
		time.Sleep(5 * time.Millisecond)
		offerOf(t, e.callTool(t, modern, "xau_quote", map[string]any{}, nil))
	})
}

// TestPaidCall pays a call in each binding, with the payment as an object
// (the specification) and as a base64 string (Cloudflare's client): the
// tool's output comes back as structuredContent and text, the settlement
// in _meta["x402/payment-response"], and the journal row says mcp.
func TestPaidCall(t *testing.T) {
	eachPath(t, paidOptions{}, func(t *testing.T, e *paidEnv) {
		tool := e.paidTool(t, "risk_levels")
		args := e.exampleArgs(t, "risk_levels")
		want, err := tool.Invoke(context.Background(), tools.Env{}, mustJSON(t, args))
		if err != nil {
			t.Fatal(err)
		}
		call, err := tool.DecodeJSON(context.Background(), mustJSON(t, args))
		if err != nil {
			t.Fatal(err)
		}
		for _, er := range eras {
			for _, form := range []string{"object", "base64"} {
				t.Run(er.String()+"/"+form, func(t *testing.T) {
					p := e.sign(t, offerOf(t, e.callTool(t, er, "risk_levels", args, nil)))
					var payment any = asObject(t, p)
					if form == "base64" {
						payment = asBase64(t, p)
					}
					res := e.callTool(t, er, "risk_levels", args, map[string]any{x402mcp.MetaPayment: payment})
					if res["isError"] != nil || !reflect.DeepEqual(res["structuredContent"], generic(t, want)) || text(t, res) != string(want) {
						t.Fatalf("paid answer %s, want %s", mustJSON(t, res), want)
					}
					if wantType := map[era]any{legacy: nil, modern: "complete", extension: "complete"}[er]; res["resultType"] != wantType {
						t.Fatalf("resultType %v, want %v", res["resultType"], wantType)
					}
					sr, ok := settlementOf(t, res)
					if !ok || !sr.Success || sr.Network != x402.NetworkBase || sr.Payer != e.signer.Address() || sr.Transaction == "" {
						t.Fatalf("settlement %+v (present %v)", sr, ok)
					}
					rec := e.record(t, p)
					if rec.State != engine.StateSettled || rec.Transport != x402mcp.Transport || rec.Product != tool.Key ||
						rec.Resource != "tools/call risk_levels" || rec.RequestHash != mcp.Fingerprint("risk_levels", call.Input()) {
						t.Fatalf("journal row %+v", rec)
					}
				})
			}
		}
	})
}

// TestReplayAndReuse: the same payment for the same call gets the recorded
// answer and the same settlement (one settlement in all); for another call
// (other arguments, another tool of the same price) it is refused, with
// the payment requirement again.
func TestReplayAndReuse(t *testing.T) {
	eachPath(t, paidOptions{}, func(t *testing.T, e *paidEnv) {
		args := e.exampleArgs(t, "risk_levels")
		p := e.sign(t, offerOf(t, e.callTool(t, modern, "risk_levels", args, nil)))
		first := e.callTool(t, modern, "risk_levels", args, map[string]any{x402mcp.MetaPayment: asObject(t, p)})
		firstSR, _ := settlementOf(t, first)
		for _, er := range eras {
			again := e.callTool(t, er, "risk_levels", args, map[string]any{x402mcp.MetaPayment: asBase64(t, p)})
			sr, ok := settlementOf(t, again)
			if !reflect.DeepEqual(again["structuredContent"], first["structuredContent"]) || !ok || sr.Transaction != firstSR.Transaction {
				t.Fatalf("%s replay: %s, first %s", er, mustJSON(t, again), mustJSON(t, first))
			}
		}
		other := e.exampleArgs(t, "risk_levels")
		other["entry"] = 3600
		for _, er := range eras {
			for name, a := range map[string]map[string]any{"risk_levels": other, "session_state": {}} {
				if e.paidTool(t, name).Price != e.paidTool(t, "risk_levels").Price {
					t.Fatalf("%s is not priced as risk_levels", name)
				}
				pr := offerOf(t, e.callTool(t, er, name, a, map[string]any{x402mcp.MetaPayment: asObject(t, p)}))
				if pr.Error != exact.ReasonNonceAlreadyUsed {
					t.Fatalf("%s %s with a used payment: error %q", er, name, pr.Error)
				}
			}
		}
		if n := settlementsOf(e, p); n != 1 {
			t.Fatalf("%d settlements of one authorization", n)
		}
	})
}

// settlementsOf counts the local facilitator's settlements of p.
func settlementsOf(e *paidEnv, p x402.PaymentPayload) int {
	ep, _ := exact.ParseExactEVMPayload(p.Payload)
	n := 0
	for _, s := range e.local.Settlements() {
		if strings.EqualFold(s.Nonce, ep.Authorization.Nonce) {
			n++
		}
	}
	return n
}

// TestOneAuthorizationOneTransport: an authorization that bought an HTTP
// call cannot buy the same tool's MCP call (nor the reverse), because the
// engine, shared by both, fingerprints each transport's calls apart.
func TestOneAuthorizationOneTransport(t *testing.T) {
	eachPath(t, paidOptions{}, func(t *testing.T, e *paidEnv) {
		args := e.exampleArgs(t, "risk_levels")
		body := string(mustJSON(t, args))

		httpPay := func(p x402.PaymentPayload) *http.Response {
			t.Helper()
			hv, err := x402.EncodeHeader(p)
			if err != nil {
				t.Fatal(err)
			}
			req, err := http.NewRequest(http.MethodPost, e.base+"/api/risk-levels", strings.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set(x402.HeaderPaymentSignature, hv)
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			_ = res.Body.Close()
			return res
		}
		// The HTTP offer of the tool: its requirements equal the MCP ones.
		res, err := http.Post(e.base+"/api/risk-levels", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		_ = res.Body.Close()
		httpOffer, err := x402.DecodePaymentRequired(res.Header.Get(x402.HeaderPaymentRequired))
		if err != nil {
			t.Fatal(err)
		}
		mcpOffer := offerOf(t, e.callTool(t, legacy, "risk_levels", args, nil))
		if !reflect.DeepEqual(httpOffer.Accepts, mcpOffer.Accepts) {
			t.Fatalf("HTTP accepts %s, MCP accepts %s", mustJSON(t, httpOffer.Accepts), mustJSON(t, mcpOffer.Accepts))
		}

		viaHTTP := e.sign(t, httpOffer)
		if res := httpPay(viaHTTP); res.StatusCode != http.StatusOK {
			t.Fatalf("HTTP paid call: %d", res.StatusCode)
		}
		if rec := e.record(t, viaHTTP); rec.Transport != "http" || rec.State != engine.StateSettled {
			t.Fatalf("HTTP journal row %+v", rec)
		}
		for _, er := range eras {
			pr := offerOf(t, e.callTool(t, er, "risk_levels", args, map[string]any{x402mcp.MetaPayment: asObject(t, viaHTTP)}))
			if pr.Error != exact.ReasonNonceAlreadyUsed {
				t.Fatalf("%s: an HTTP authorization on MCP: error %q", er, pr.Error)
			}
		}

		viaMCP := e.sign(t, mcpOffer)
		if r := e.callTool(t, modern, "risk_levels", args, map[string]any{x402mcp.MetaPayment: asObject(t, viaMCP)}); r["isError"] != nil {
			t.Fatalf("MCP paid call: %s", mustJSON(t, r))
		}
		res = httpPay(viaMCP)
		pr, err := x402.DecodePaymentRequired(res.Header.Get(x402.HeaderPaymentRequired))
		if res.StatusCode != http.StatusPaymentRequired || err != nil || pr.Error != exact.ReasonNonceAlreadyUsed {
			t.Fatalf("an MCP authorization on HTTP: %d %q %v", res.StatusCode, pr.Error, err)
		}
		if settlementsOf(e, viaHTTP) != 1 || settlementsOf(e, viaMCP) != 1 {
			t.Fatal("an authorization settled more than once")
		}
	})
}

// TestTamperedPayment: a payment altered after signing is refused with the
// verification's reason and the payment requirement again, in each
// binding; nothing runs or settles.
func TestTamperedPayment(t *testing.T) {
	eachPath(t, paidOptions{}, func(t *testing.T, e *paidEnv) {
		args := e.exampleArgs(t, "risk_levels")
		for _, er := range eras {
			for _, c := range []struct {
				name, reason string
				edit         func(*exact.ExactEVMPayload, *x402.PaymentPayload)
			}{
				{"value", exact.ReasonValueMismatch, func(ep *exact.ExactEVMPayload, _ *x402.PaymentPayload) { ep.Authorization.Value = "1" }},
				{"deadline", exact.ReasonInvalidSignature, func(ep *exact.ExactEVMPayload, _ *x402.PaymentPayload) {
					ep.Authorization.ValidBefore = strconv.FormatInt(time.Now().Add(2*time.Hour).Unix(), 10)
				}},
				{"recipient", exact.ReasonRecipientMismatch, func(ep *exact.ExactEVMPayload, _ *x402.PaymentPayload) {
					ep.Authorization.To = "0x70997970C51812dc3A010C7d01b50e0d17dc79C8"
				}},
				{"accepted", engine.ReasonNoMatchingRequirements, func(_ *exact.ExactEVMPayload, p *x402.PaymentPayload) { p.Accepted.Amount = "1" }},
			} {
				p := e.sign(t, offerOf(t, e.callTool(t, er, "risk_levels", args, nil)))
				ep, err := exact.ParseExactEVMPayload(p.Payload)
				if err != nil {
					t.Fatal(err)
				}
				c.edit(&ep, &p)
				p.Payload = mustJSON(t, ep)
				res := e.callTool(t, er, "risk_levels", args, map[string]any{x402mcp.MetaPayment: asObject(t, p)})
				if pr := offerOf(t, res); pr.Error != c.reason {
					t.Fatalf("%s tampered %s: error %q, want %q", er, c.name, pr.Error, c.reason)
				}
				if _, ok := settlementOf(t, res); ok || settlementsOf(e, p) != 0 {
					t.Fatalf("%s tampered %s settled", er, c.name)
				}
			}
		}
	})
}

// TestMalformedPayment: a _meta["x402/payment"] that is no payment payload
// (a number, bad base64, base64 of something else, an object without
// accepted) gets the payment requirement with the reason invalid_payment.
func TestMalformedPayment(t *testing.T) {
	eachPath(t, paidOptions{}, func(t *testing.T, e *paidEnv) {
		args := e.exampleArgs(t, "risk_levels")
		for _, er := range eras {
			for _, v := range []any{
				42, "not base64 at all!", base64.StdEncoding.EncodeToString([]byte(`[1,2]`)),
				map[string]any{"x402Version": 2, "payload": map[string]any{}},
				map[string]any{"x402Version": 1, "accepted": map[string]any{"scheme": "exact", "network": "eip155:8453"}, "payload": map[string]any{}},
			} {
				pr := offerOf(t, e.callTool(t, er, "risk_levels", args, map[string]any{x402mcp.MetaPayment: v}))
				if pr.Error != x402mcp.ReasonInvalidPayment {
					t.Fatalf("%s payment %v: error %q", er, v, pr.Error)
				}
			}
		}
	})
}

// TestSettlementFailure: a settlement the facilitator refuses withholds
// the answer: the payment requirement with the reason, and the failed
// settlement in _meta["x402/payment-response"].
func TestSettlementFailure(t *testing.T) {
	eachPath(t, paidOptions{facilitator: func(l *facilitator.Local) x402.Facilitator { return settleFailing{l} }}, func(t *testing.T, e *paidEnv) {
		args := e.exampleArgs(t, "risk_levels")
		for _, er := range eras {
			p := e.sign(t, offerOf(t, e.callTool(t, er, "risk_levels", args, nil)))
			res := e.callTool(t, er, "risk_levels", args, map[string]any{x402mcp.MetaPayment: asObject(t, p)})
			pr := offerOf(t, res)
			sr, ok := settlementOf(t, res)
			if pr.Error != "invalid_exact_evm_insufficient_balance" || !ok || sr.Success || sr.ErrorReason != pr.Error {
				t.Fatalf("%s: %s", er, mustJSON(t, res))
			}
			if sc := mustMap(res["structuredContent"]); sc["stopDistance"] != nil || (er == extension && sc != nil) {
				t.Fatalf("%s: the answer leaked with a failed settlement: %s", er, mustJSON(t, res))
			}
		}
	})
}

// TestRunFailureChargesNothing: a paid call whose tool fails after the
// payment was verified (a symbol the terminal does not serve, which a
// stale symbol check let through) is a tool error without a payment
// requirement, and nothing is settled.
func TestRunFailureChargesNothing(t *testing.T) {
	stale := func(context.Context, string) error { return nil }
	eachPath(t, paidOptions{symbolCheck: stale}, func(t *testing.T, e *paidEnv) {
		args := map[string]any{"symbol": "EURUSD"}
		for _, er := range eras {
			p := e.sign(t, offerOf(t, e.callTool(t, er, "xau_quote", args, nil)))
			res := e.callTool(t, er, "xau_quote", args, map[string]any{x402mcp.MetaPayment: asObject(t, p)})
			noPaymentAsked(t, res, "nothing was charged")
			if rec := e.record(t, p); rec.State != engine.StateReleased || settlementsOf(e, p) != 0 {
				t.Fatalf("%s: journal row %+v", er, rec)
			}
		}
	})
}

// eachPath runs f against a server answering paid calls itself (fast) and
// against one leaving them to the SDK: both must behave the same.
func eachPath(t *testing.T, o paidOptions, f func(t *testing.T, e *paidEnv)) {
	t.Helper()
	for _, sdkOnly := range []bool{false, true} {
		t.Run(map[bool]string{false: "fast", true: "sdk"}[sdkOnly], func(t *testing.T) {
			o.sdkOnly = sdkOnly
			f(t, newPaidEnv(t, o))
		})
	}
}

// TestFastPathMatchesSDK sends the same calls to a server answering paid
// calls itself (x402/mcp's direct answers) and to one leaving them to the
// SDK, in every era (legacy, 2026-07-28, the extension binding) and for
// every answer the direct path gives (unpaid, invalid arguments, no
// arguments, a malformed payment, paid, replayed, a payment of another
// call, a tampered payment, the terminal down): status, headers
// and results must be the same (but for each server's own URL and
// settlement ids), and the direct path must spare the SDK's per-request
// allocations.
func TestFastPathMatchesSDK(t *testing.T) {
	fast, slow := newPaidEnv(t, paidOptions{}), newPaidEnv(t, paidOptions{sdkOnly: true})
	args := fast.exampleArgs(t, "risk_levels")
	bad := fast.exampleArgs(t, "risk_levels")
	bad["entry"] = "many"
	type answer struct {
		status        int
		contentType   string
		cacheControl  string
		normalizedRPC any
	}
	do := func(e *paidEnv, er era, name string, a any, meta func(e *paidEnv) map[string]any) answer {
		t.Helper()
		var m map[string]any
		if meta != nil {
			m = meta(e)
		}
		body, h := e.requestOf(t, er, name, a, m)
		rep := e.post(t, body, h)
		text := strings.ReplaceAll(string(rep.body), e.base, "BASE")
		var v any
		if err := json.Unmarshal([]byte(text), &v); err != nil {
			t.Fatalf("%s: %s", er, rep.body)
		}
		if sr := mustMap(mustMap(mustMap(v)["result"])["_meta"])[x402mcp.MetaPaymentResponse]; sr != nil {
			mustMap(sr)["transaction"] = "TX"
		}
		return answer{rep.status, rep.header.Get("Content-Type"), rep.header.Get("Cache-Control"), v}
	}
	payOnce := func(er era) func(e *paidEnv) map[string]any {
		return func(e *paidEnv) map[string]any {
			p := e.sign(t, offerOf(t, e.callTool(t, er, "risk_levels", args, nil)))
			return map[string]any{x402mcp.MetaPayment: asBase64(t, p)}
		}
	}
	// paidBefore pays for args first and sends that payment again: for
	// args, the recorded answer; for other arguments, a refusal.
	paidBefore := func(er era) func(e *paidEnv) map[string]any {
		return func(e *paidEnv) map[string]any {
			p := e.sign(t, offerOf(t, e.callTool(t, er, "risk_levels", args, nil)))
			meta := map[string]any{x402mcp.MetaPayment: asObject(t, p)}
			e.callTool(t, er, "risk_levels", args, meta)
			return meta
		}
	}
	// tampered is a payment of another amount than the one asked.
	tampered := func(er era) func(e *paidEnv) map[string]any {
		return func(e *paidEnv) map[string]any {
			pr := offerOf(t, e.callTool(t, er, "risk_levels", args, nil))
			pr.Accepts[0].Amount = "1"
			return map[string]any{x402mcp.MetaPayment: asObject(t, e.sign(t, pr))}
		}
	}
	other := fast.exampleArgs(t, "risk_levels")
	other["entry"] = 3600
	for _, er := range eras {
		for _, c := range []struct {
			name string
			tool string
			args any
			meta func(e *paidEnv) map[string]any
		}{
			{"unpaid", "risk_levels", args, nil},
			{"invalid", "risk_levels", bad, nil},
			{"no arguments", "session_state", nil, nil},
			{"malformed payment", "risk_levels", args, func(*paidEnv) map[string]any { return map[string]any{x402mcp.MetaPayment: true} }},
			{"paid", "risk_levels", args, payOnce(er)},
			{"replayed", "risk_levels", args, paidBefore(er)},
			{"payment of another call", "risk_levels", other, paidBefore(er)},
			{"tampered payment", "risk_levels", args, tampered(er)},
			{"terminal down", "xau_quote", map[string]any{}, func(e *paidEnv) map[string]any { e.terminal.SetDown(true); return nil }},
		} {
			f, s := do(fast, er, c.tool, c.args, c.meta), do(slow, er, c.tool, c.args, c.meta)
			if !reflect.DeepEqual(f, s) {
				t.Errorf("%s %s:\nfast %+v\nsdk  %+v", er, c.name, f, s)
			}
		}
	}
	allocated := func(e *paidEnv) uint64 {
		body, h := e.requestOf(t, modern, "risk_levels", args, nil)
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		for range 20 {
			req := httptest.NewRequest(http.MethodPost, "/mcp", strings.NewReader(body))
			for k, v := range h {
				req.Header.Set(k, v)
			}
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			e.handler.ServeHTTP(httptest.NewRecorder(), req)
		}
		runtime.ReadMemStats(&after)
		return (after.TotalAlloc - before.TotalAlloc) / 20
	}
	if f, s := allocated(fast), allocated(slow); f > s/3 {
		t.Fatalf("an unpaid call allocates %d bytes on the fast path, %d through the SDK", f, s)
	}
}

// TestSellingOptions: a handler that sells needs a catalog and a valid
// wallet, and every tool priced on its network.
func TestSellingOptions(t *testing.T) {
	cat, err := tools.New(tools.Options{})
	if err != nil {
		t.Fatal(err)
	}
	local, err := facilitator.NewLocal(facilitator.LocalConfig{})
	if err != nil {
		t.Fatal(err)
	}
	eng, err := engine.New(engine.Config{Schemes: schemetest.Exact(t, exactserver.Config{Facilitator: local})})
	if err != nil {
		t.Fatal(err)
	}
	s := newSurfaces(t, cat, "http://127.0.0.1:8080")
	// sellWith builds a handler selling with a shop of cfg (none without
	// Offers).
	sellWith := func(cfg sell.Config, opts mcp.Options) error {
		if cfg.Offers != nil {
			shop, err := sell.New(cfg)
			if err != nil {
				return err
			}
			opts.Shop = shop
		}
		_, err := mcp.NewHandler(s, opts)
		return err
	}
	for _, c := range []struct {
		name string
		cfg  sell.Config
		opts mcp.Options
		want string
	}{
		{"no shop", sell.Config{}, mcp.Options{Engine: eng}, "Shop is required"},
		{"no catalog", sell.Config{Offers: eng, PayTo: testPayTo}, mcp.Options{Engine: eng}, "Catalog is required"},
		{"no wallet", sell.Config{Offers: eng, Catalog: cat}, mcp.Options{Engine: eng}, "PayTo"},
		{"bad wallet", sell.Config{Offers: eng, Catalog: cat, PayTo: "0x1234"}, mcp.Options{Engine: eng}, "PayTo"},
		{"unknown network", sell.Config{Offers: eng, Catalog: cat, PayTo: testPayTo, Network: "eip155:999999"}, mcp.Options{Engine: eng}, "unknown payment network"},
		{"other network", sell.Config{Offers: eng, Catalog: cat, PayTo: testPayTo, Network: "eip155:84532"}, mcp.Options{Engine: eng}, "priced on network"},
		{"negative timeout", sell.Config{Offers: eng, Catalog: cat, PayTo: testPayTo}, mcp.Options{Engine: eng, ToolTimeout: -time.Second}, "negative"},
	} {
		if err := sellWith(c.cfg, c.opts); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one containing %q", c.name, err, c.want)
		}
	}
	if err := sellWith(sell.Config{Offers: eng, Catalog: cat, PayTo: testPayTo}, mcp.Options{Engine: eng}); err != nil {
		t.Fatalf("valid selling options: %v", err)
	}
}

// TestEveryToolIsSold buys each catalog tool over MCP with its example
// input. Each offer must be Latin-1 text: Cloudflare's client encodes the
// payment, which echoes the offer's resource and extensions, with btoa,
// which refuses anything else.
func TestEveryToolIsSold(t *testing.T) {
	eachPath(t, paidOptions{}, func(t *testing.T, e *paidEnv) {
		for _, tool := range e.catalog.All() {
			args := e.exampleArgs(t, tool.OperationID)
			res := e.callTool(t, legacy, tool.OperationID, args, nil)
			for _, r := range text(t, res) {
				if r > 0xFF {
					t.Fatalf("%s: the offer has %q, outside Latin-1", tool.OperationID, r)
				}
			}
			p := e.sign(t, offerOf(t, res))
			paid := e.callTool(t, modern, tool.OperationID, args, map[string]any{x402mcp.MetaPayment: asBase64(t, p)})
			if sr, ok := settlementOf(t, paid); paid["isError"] != nil || !ok || !sr.Success {
				t.Fatalf("%s: %s", tool.OperationID, mustJSON(t, paid))
			}
		}
	})
}

// TestSettlementUndecided: a settlement that ends without a decision
// withholds the answer with a tool error saying to call again (no payment
// asked); the same call with the same payment meanwhile is told the
// payment is in progress, with the requirement and that reason. (The
// journal is in memory: rows left settling in a shared database would be
// picked up by the recovery of other tests' engines.)
func TestSettlementUndecided(t *testing.T) {
	o := paidOptions{memory: true, facilitator: func(l *facilitator.Local) x402.Facilitator { return settleErroring{l} }}
	eachPath(t, o, func(t *testing.T, e *paidEnv) {
		args := e.exampleArgs(t, "risk_levels")
		for _, er := range eras {
			p := e.sign(t, offerOf(t, e.callTool(t, er, "risk_levels", args, nil)))
			meta := map[string]any{x402mcp.MetaPayment: asObject(t, p)}
			noPaymentAsked(t, e.callTool(t, er, "risk_levels", args, meta), "call again with the same arguments and the same payment")
			if pr := offerOf(t, e.callTool(t, er, "risk_levels", args, meta)); pr.Error != engine.ReasonPaymentInProgress {
				t.Fatalf("%s: retry during settlement: error %q", er, pr.Error)
			}
			if rec := e.record(t, p); rec.State != engine.StateSettling {
				t.Fatalf("%s: journal row %+v", er, rec)
			}
		}
	})
}

package httpserver_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/seed1284c1d2/svc/store"
	"github.com/seed1284c1d2/svc/x402"
	"github.com/seed1284c1d2/svc/x402/client"
	"github.com/seed1284c1d2/svc/x402/engine"
	"github.com/seed1284c1d2/svc/x402/exact"
	"github.com/seed1284c1d2/svc/x402/facilitator"
	"github.com/seed1284c1d2/svc/xau"
)

// paidRoutes is the table of paid routes, written out independently of
// the tools package, with each price in USDC atomic units.
var paidRoutes = []struct {
	key, method, path, atomic string
	gold                      bool
}{
	{"session-state", "GET", "/api/session-state", "5000", false},
	{"risk-levels", "POST", "/api/risk-levels", "5000", false},
	{"strategy-grade", "POST", "/api/strategy-grade", "20000", false},
	{"xau-quote", "GET", "/api/xau/quote", "10000", true},
	{"xau-bars", "GET", "/api/xau/bars", "20000", true},
	{"xau-market-state", "GET", "/api/xau/market-state", "30000", true},
	{"csv-profile", "POST", "/api/csv-profile", "2500", false},
	{"json-shape", "POST", "/api/json-shape", "2500", false},
	{"jwt-decode", "POST", "/api/jwt-decode", "2500", false},
	{"tick-pnl", "POST", "/api/tick-pnl", "50000", false},
	{"evm-address-syntax", "POST", "/api/evm-address-syntax", "10000", false},
	{"ohlcv-state", "POST", "/api/ohlcv-state", "2500", false},
	{"regex-test", "POST", "/api/regex-test", "3400", false},
}

// TestPaymentRequiredEveryRoute: an unpaid request with valid input on each
// of the 13 routes gets a 402 whose PAYMENT-REQUIRED carries x402Version 2,
// eip155:8453, Base USDC, the payTo and the exact atomic price, with the
// bazaar extension describing the tool.
func TestPaymentRequiredEveryRoute(t *testing.T) {
	f := newFixture(t, fixtureOptions{})
	if n := f.cat.Len(); n != len(paidRoutes) {
		t.Fatalf("catalog has %d tools, want %d", n, len(paidRoutes))
	}
	for _, rt := range paidRoutes {
		t.Run(rt.key, func(t *testing.T) {
			tool := f.tool(t, rt.key)
			if tool.Method != rt.method || tool.Path != rt.path {
				t.Fatalf("tool %s is %s %s, want %s %s", rt.key, tool.Method, tool.Path, rt.method, rt.path)
			}
			resp, body := do(t, f.request(t, tool, string(tool.ExampleInput)))
			if resp.StatusCode != http.StatusPaymentRequired {
				t.Fatalf("status %d, want 402; body %s", resp.StatusCode, body)
			}
			pr, err := client.PaymentRequiredOf(resp)
			if err != nil {
				t.Fatalf("PAYMENT-REQUIRED: %v", err)
			}
			if pr.X402Version != 2 || pr.Error != engine.ReasonPaymentRequired || len(pr.Accepts) != 1 {
				t.Fatalf("payment required %+v", pr)
			}
			a := pr.Accepts[0]
			if a.Scheme != "exact" || a.Network != "eip155:8453" || a.Asset != baseUSDC || a.PayTo != testPayTo || a.Amount != rt.atomic {
				t.Fatalf("requirements %+v, want exact eip155:8453 %s to %s amount %s", a, baseUSDC, testPayTo, rt.atomic)
			}
			if a.Extra["name"] != "USD Coin" || a.Extra["version"] != "2" {
				t.Fatalf("EIP-712 domain in extra %+v", a.Extra)
			}
			if pr.Resource.URL != f.url+rt.path || pr.Resource.MimeType != "application/json" || pr.Resource.Description == "" {
				t.Fatalf("resource %+v, want URL %s", pr.Resource, f.url+rt.path)
			}
			bz, ok := pr.Extensions[x402.BazaarExtensionKey].(map[string]any)
			if !ok {
				t.Fatalf("no bazaar extension in %+v", pr.Extensions)
			}
			info, _ := bz["info"].(map[string]any)
			input, _ := info["input"].(map[string]any)
			if input["method"] != rt.method || input["type"] != "http" {
				t.Fatalf("bazaar input %+v", input)
			}
			if _, ok := bz["schema"].(map[string]any); !ok {
				t.Fatalf("bazaar extension without schema: %+v", bz)
			}
			// The JSON body is the v1 offer (v1 clients and body-reading
			// agents): the same price and recipient in v1 names.
			var pb x402.PaymentRequiredV1
			if err := json.Unmarshal(body, &pb); err != nil || pb.X402Version != 1 || len(pb.Accepts) != 1 ||
				pb.Accepts[0].MaxAmountRequired != rt.atomic || pb.Accepts[0].Network != "base" ||
				!strings.EqualFold(pb.Accepts[0].PayTo, pr.Accepts[0].PayTo) {
				t.Fatalf("402 body %s: %v", body, err)
			}
		})
	}
}

// TestOfferMatchesMiddleware: the recorded offer served to unpaid requests
// is the one the x402 middleware writes (compared with a server whose
// resource URLs follow the request, which the middleware answers itself),
// and a refused payment gets the same offer with its reason.
func TestOfferMatchesMiddleware(t *testing.T) {
	recorded := newFixture(t, fixtureOptions{})
	live := newFixture(t, fixtureOptions{requestBaseURL: true})
	for _, key := range []string{"risk-levels", "xau-bars"} {
		tool := recorded.tool(t, key)
		r1, b1 := do(t, recorded.request(t, tool, string(tool.ExampleInput)))
		r2, b2 := do(t, live.request(t, tool, string(tool.ExampleInput)))
		p1, err1 := client.PaymentRequiredOf(r1)
		p2, err2 := client.PaymentRequiredOf(r2)
		if err1 != nil || err2 != nil || r1.StatusCode != 402 || r2.StatusCode != 402 {
			t.Fatalf("%s: %d %v / %d %v", key, r1.StatusCode, err1, r2.StatusCode, err2)
		}
		if !strings.HasPrefix(p2.Resource.URL, live.url+tool.Path) {
			t.Fatalf("%s: live resource URL %q", key, p2.Resource.URL)
		}
		p2.Resource.URL = recorded.url + tool.Path
		j1, _ := json.Marshal(p1)
		j2, _ := json.Marshal(p2)
		if string(j1) != string(j2) {
			t.Fatalf("%s: recorded offer\n%s\ndiffers from the middleware's\n%s", key, j1, j2)
		}
		for _, h := range []string{"Content-Type", "Cache-Control", "Access-Control-Expose-Headers"} {
			if r1.Header.Get(h) != r2.Header.Get(h) || r1.Header.Get(h) == "" {
				t.Fatalf("%s: header %s %q vs %q", key, h, r1.Header.Get(h), r2.Header.Get(h))
			}
		}
		var body1, body2 x402.PaymentRequiredV1
		if json.Unmarshal(b1, &body1) != nil || json.Unmarshal(b2, &body2) != nil || body1.X402Version != 1 || len(body1.Accepts) != len(body2.Accepts) {
			t.Fatalf("%s: bodies %s / %s", key, b1, b2)
		}
		// A refused payment is answered by the middleware with the same
		// offer and its reason.
		payer := newPayer(t)
		ep, err := payer.NewPayload(p1.Accepts[0], testNow(), 0) // validity long past
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := json.Marshal(ep)
		hdr, _ := x402.EncodeHeader(x402.PaymentPayload{X402Version: 2, Accepted: p1.Accepts[0], Payload: raw})
		req := recorded.request(t, tool, string(tool.ExampleInput))
		req.Header.Set(x402.HeaderPaymentSignature, hdr)
		r3, b3 := do(t, req)
		p3, err := client.PaymentRequiredOf(r3)
		if err != nil || r3.StatusCode != 402 || p3.Error != exact.ReasonValidBefore || p3.Resource.URL != p1.Resource.URL {
			t.Fatalf("%s: expired payment: %d %+v %v %s", key, r3.StatusCode, p3, err, b3)
		}
	}
}

// invalidCases are inputs each route must refuse with 400 before any 402,
// and a field the problem must name (with the rule, where given).
var invalidCases = []struct {
	key, input, rawQuery string // rawQuery for GET tools
	field, rule          string
}{
	{key: "session-state", rawQuery: "dateTime=notadate", field: "dateTime"},
	{key: "session-state", rawQuery: "dateTime=a&dateTime=b", field: "dateTime", rule: "repeated"},
	{key: "session-state", rawQuery: "datetime=2025-06-04T07:15:00Z", field: "datetime", rule: "unknown_field"},
	{key: "xau-bars", rawQuery: "cnt=20&ref=x&src=y", field: "cnt", rule: "unknown_field"},
	{key: "xau-quote", rawQuery: "symbol=EURUSD", field: "symbol", rule: "unknown_symbol"},
	{key: "risk-levels", input: `{"entry":-1,"direction":"up","slPct":0.05,"tpPct":0.04}`, field: "entry"},
	{key: "risk-levels", input: `{"entry":-1,"direction":"up","slPct":0.05,"tpPct":0.04}`, field: "direction"},
	{key: "risk-levels", input: `{"entry":3500,"direction":"long","slPct":0.05,"tpPct":0.04,"slpct":1}`, field: "slpct", rule: "unknown_field"},
	{key: "risk-levels", input: `{"entry":3500,`, field: "", rule: "json"},
	{key: "strategy-grade", input: `{"trades":10,"profitFactor":1.2,"winRatePct":150,"maxDrawdownPct":5,"walkForwardPassPct":50}`, field: "winRatePct"},
	{key: "xau-quote", rawQuery: "symbol=" + queryEscape("bad sym"), field: "symbol"},
	{key: "xau-bars", rawQuery: "count=abc", field: "count", rule: "integer"},
	{key: "xau-bars", rawQuery: "count=5", field: "count"},
	{key: "xau-bars", rawQuery: "timeframe=M2", field: "timeframe"},
	{key: "xau-market-state", rawQuery: "count=20", field: "count"},
	{key: "xau-market-state", rawQuery: "count=abc", field: "count", rule: "integer"},
	{key: "csv-profile", input: `{}`, field: "csv", rule: "required"},
	{key: "json-shape", input: `{"value":1,"maxDepth":99}`, field: "maxDepth"},
	{key: "jwt-decode", input: `{"token":"abc"}`, field: "token"},
	{key: "tick-pnl", input: `{"entry":100,"exit":101,"contracts":2,"tickSize":0,"tickValue":12.5,"direction":"long"}`, field: "tickSize"},
	{key: "evm-address-syntax", input: `{}`, field: "address", rule: "required"},
	{key: "ohlcv-state", input: `{"bars":[{"open":100,"high":99,"low":98,"close":100}]}`, field: "bars[0].high"},
	{key: "regex-test", input: `{"pattern":"a","flags":"v","text":"a"}`, field: "flags"},
}

// TestInvalidInputBefore402: invalid input on every route is a 400
// problem+json naming the field, with no payment offer.
func TestInvalidInputBefore402(t *testing.T) {
	f := newFixture(t, fixtureOptions{})
	covered := map[string]bool{}
	for _, tc := range invalidCases {
		covered[tc.key] = true
		t.Run(tc.key+"/"+tc.field, func(t *testing.T) {
			tool := f.tool(t, tc.key)
			var req *http.Request
			if tool.Method == http.MethodGet {
				req = f.rawQueryRequest(t, tool.Path, tc.rawQuery)
			} else {
				req = f.request(t, tool, tc.input)
			}
			resp, body := do(t, req)
			p := mustProblem(t, resp, body, http.StatusBadRequest)
			if resp.Header.Get(x402.HeaderPaymentRequired) != "" {
				t.Fatal("a 400 carries a PAYMENT-REQUIRED offer")
			}
			if p.Code != "invalid_input" || !p.hasField(tc.field, tc.rule) {
				t.Fatalf("problem %s does not name field %q rule %q", body, tc.field, tc.rule)
			}
			if p.Instance != tool.Path || p.RequestID == "" || p.RequestID != resp.Header.Get("X-Request-Id") {
				t.Fatalf("instance %q request id %q (header %q)", p.Instance, p.RequestID, resp.Header.Get("X-Request-Id"))
			}
			if tc.rule == "unknown_field" {
				allowed := "allowed fields: entry, direction, slPct, tpPct"
				if tool.Method == http.MethodGet {
					allowed = "allowed parameters: " + strings.Join(tool.Fields, ", ") + ", ref, src"
				}
				for _, e := range p.Errors {
					if e.Rule == "unknown_field" && !strings.Contains(e.Message, allowed) {
						t.Fatalf("unknown field message %q does not list the allowed fields (%s)", e.Message, allowed)
					}
				}
			}
		})
	}
	for _, rt := range paidRoutes {
		if !covered[rt.key] {
			t.Errorf("no invalid-input case for %s", rt.key)
		}
	}
}

// TestAcceptedInputsAsk402: inputs the tools accept are offered for
// payment, not refused: the ISO 8601 forms of dateTime (an unencoded "+"
// arrives as a space), null for an optional member, the empty candidate
// address, attribution parameters on any route. A POST tool's query takes
// nothing else.
func TestAcceptedInputsAsk402(t *testing.T) {
	f := newFixture(t, fixtureOptions{})
	for _, q := range []string{
		"dateTime=2025-03-31T09:15:00+0200", "dateTime=2025-03-31T09:15:00%2B02", "dateTime=20250331T071500Z",
		"dateTime=20250331T091500%2B0200", "dateTime=20250331T071500,5Z&ref=ABC&src=agent",
	} {
		resp, body := do(t, f.rawQueryRequest(t, "/api/session-state", q))
		if resp.StatusCode != http.StatusPaymentRequired {
			t.Errorf("session-state?%s: %d %s", q, resp.StatusCode, body)
		}
	}
	for key, input := range map[string]string{
		"evm-address-syntax": `{"address":""}`,
		"csv-profile":        `{"csv":"a,b\n1,2","delimiter":null,"hasHeader":null}`,
		"json-shape":         `{"value":{},"maxDepth":null,"maxPaths":null}`,
		"regex-test":         `{"pattern":"a","text":"a","flags":null}`,
	} {
		tool := f.tool(t, key)
		resp, body := do(t, f.request(t, tool, input))
		if resp.StatusCode != http.StatusPaymentRequired {
			t.Errorf("%s %s: %d %s", key, input, resp.StatusCode, body)
		}
		req := f.request(t, tool, input)
		req.URL.RawQuery = "ref=ABC&src=agent"
		if resp, body := do(t, req); resp.StatusCode != http.StatusPaymentRequired {
			t.Errorf("%s with attribution: %d %s", key, resp.StatusCode, body)
		}
		req = f.request(t, tool, input)
		req.URL.RawQuery = "address=0x00"
		resp, body = do(t, req)
		if p := mustProblem(t, resp, body, http.StatusBadRequest); !p.hasField("address", "unknown_field") {
			t.Errorf("%s with a query parameter: %s", key, body)
		}
	}
}

// TestGoldTerminalDown503: with the terminal down, the three gold routes
// answer 503 before any 402; the other routes still offer payment.
func TestGoldTerminalDown503(t *testing.T) {
	sw := xau.NewSwitchable(simulated(t))
	sw.SetDown(true)
	f := newFixture(t, fixtureOptions{terminal: sw})
	for _, rt := range paidRoutes {
		tool := f.tool(t, rt.key)
		resp, body := do(t, f.request(t, tool, string(tool.ExampleInput)))
		if !rt.gold {
			if resp.StatusCode != http.StatusPaymentRequired {
				t.Fatalf("%s: status %d with the terminal down, want 402", rt.key, resp.StatusCode)
			}
			continue
		}
		p := mustProblem(t, resp, body, http.StatusServiceUnavailable)
		if p.Code != "unavailable" || resp.Header.Get(x402.HeaderPaymentRequired) != "" {
			t.Fatalf("%s: problem %s, PAYMENT-REQUIRED %q", rt.key, body, resp.Header.Get(x402.HeaderPaymentRequired))
		}
	}
	// Invalid input is still reported as such, not as 503.
	resp, body := do(t, f.rawQueryRequest(t, "/api/xau/bars", "count=abc"))
	mustProblem(t, resp, body, http.StatusBadRequest)
}

// responseFields are the published answer fields per tool, with their JSON
// types ("number", "integer", "string", "boolean", "object", "array").
var responseFields = map[string]map[string]string{
	"session-state":      {"timezone": "string", "london": "boolean", "newYork": "boolean", "asia": "boolean", "minuteOfDay": "integer"},
	"risk-levels":        {"entry": "number", "direction": "string", "stop": "number", "target": "number", "riskReward": "number"},
	"strategy-grade":     {"score": "number", "components": "object", "components.sample": "number", "components.pf": "number", "components.drawdown": "number", "components.walkForward": "number"},
	"xau-quote":          {"symbol": "string", "bid": "number", "ask": "number", "spread": "number", "time": "string", "last": "number"},
	"xau-bars":           {"symbol": "string", "timeframe": "string", "count": "integer", "bars": "array", "bars.0.time": "string", "bars.0.open": "number", "bars.0.high": "number", "bars.0.low": "number", "bars.0.close": "number", "bars.0.tick_volume": "integer"},
	"xau-market-state":   {"symbol": "string", "trend": "string", "atr": "number", "realizedVolPct": "number", "rangePosition": "number", "returnPct": "number"},
	"csv-profile":        {"delimiter": "string", "rows": "integer", "columnCount": "integer", "columns": "array", "columns.0.name": "string", "columns.0.inferredType": "string", "columns.0.nonEmpty": "integer", "columns.0.missing": "integer", "columns.0.uniqueCount": "integer"},
	"json-shape":         {"rootType": "string", "pathCount": "integer", "paths": "array", "paths.0.path": "string", "paths.0.types": "array", "paths.0.occurrences": "integer"},
	"jwt-decode":         {"header": "object", "payload": "object", "verified": "boolean"},
	"tick-pnl":           {"ticks": "number", "pnl": "number"},
	"evm-address-syntax": {"valid": "boolean"},
	"ohlcv-state":        {"returnPct": "number", "rangePosition": "number", "atr": "number"},
	"regex-test":         {"matched": "boolean", "matches": "array"},
}

// jsonAt returns the value at a dotted path ("bars.0.open").
func jsonAt(v any, path string) (any, bool) {
	for _, seg := range strings.Split(path, ".") {
		switch t := v.(type) {
		case map[string]any:
			var ok bool
			if v, ok = t[seg]; !ok {
				return nil, false
			}
		case []any:
			if seg != "0" || len(t) == 0 {
				return nil, false
			}
			v = t[0]
		default:
			return nil, false
		}
	}
	return v, true
}

// jsonKind names the JSON type of a value decoded with UseNumber.
func jsonKind(v any, want string) bool {
	switch t := v.(type) {
	case json.Number:
		if want == "integer" {
			_, err := t.Int64()
			return err == nil
		}
		return want == "number"
	case string:
		return want == "string"
	case bool:
		return want == "boolean"
	case map[string]any:
		return want == "object"
	case []any:
		return want == "array"
	}
	return false
}

// checkFields checks the published fields of a tool's answer.
func checkFields(t *testing.T, key string, body []byte) map[string]any {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(string(body)))
	dec.UseNumber()
	var out map[string]any
	if err := dec.Decode(&out); err != nil {
		t.Fatalf("%s: body %s: %v", key, body, err)
	}
	for path, kind := range responseFields[key] {
		v, ok := jsonAt(out, path)
		if !ok {
			t.Fatalf("%s: answer lacks %s: %s", key, path, body)
		}
		if !jsonKind(v, kind) {
			t.Fatalf("%s: %s is %v (%T), want a JSON %s", key, path, v, v, kind)
		}
	}
	return out
}

// TestPaidCallEveryRouteGoClient: the Go paying client gets 200 with the
// published fields and a PAYMENT-RESPONSE on every route, and each
// settled call is one ledger row.
func TestPaidCallEveryRouteGoClient(t *testing.T) {
	f := newFixture(t, fixtureOptions{})
	payer := newPayer(t)
	for _, rt := range paidRoutes {
		t.Run(rt.key, func(t *testing.T) {
			tool := f.tool(t, rt.key)
			resp, body := pay(t, payer, f.request(t, tool, string(tool.ExampleInput)))
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("status %d, body %s", resp.StatusCode, body)
			}
			if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
				t.Fatalf("Content-Type %q", ct)
			}
			sr, err := client.PaymentResponse(resp)
			if err != nil {
				t.Fatalf("PAYMENT-RESPONSE: %v", err)
			}
			if !sr.Success || sr.Network != x402.NetworkBase || sr.Amount != rt.atomic || !strings.EqualFold(sr.Payer, payer.Address()) ||
				!strings.HasPrefix(sr.Transaction, facilitator.LocalTransactionPrefix) || sr.Extra["onChain"] != false {
				t.Fatalf("settlement %+v", sr)
			}
			checkFields(t, rt.key, body)
		})
	}
	// Exact values of the published example.
	resp, body := pay(t, payer, f.request(t, f.tool(t, "risk-levels"), `{"entry":3500,"direction":"long","slPct":0.05,"tpPct":0.04}`))
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `"stop":3498.25`) || !strings.Contains(string(body), `"target":3501.4`) || !strings.Contains(string(body), `"riskReward":0.8`) {
		t.Fatalf("risk levels example: %d %s", resp.StatusCode, body)
	}

	ctx := context.Background()
	ps, err := f.st.PayerStats(ctx, payer.Address())
	if err != nil {
		t.Fatal(err)
	}
	if ps.PaidCalls != int64(len(paidRoutes)+1) || ps.Tools != int64(len(paidRoutes)) {
		t.Fatalf("ledger: %d paid calls over %d tools, want %d over %d", ps.PaidCalls, ps.Tools, len(paidRoutes)+1, len(paidRoutes))
	}
	if got := len(f.local.Settlements()); got != len(paidRoutes)+1 {
		t.Fatalf("facilitator settled %d payments, want %d", got, len(paidRoutes)+1)
	}
}

// TestLedgerReferral: a paid call carrying ?ref= (or X-Ref) is attributed
// to the code's owner in the ledger; the ledger row carries the payment's
// nonce (appending the same payment again is a no-op).
func TestLedgerReferral(t *testing.T) {
	f := newFixture(t, fixtureOptions{})
	ctx := context.Background()
	owner := newPayer(t)
	ref, err := f.st.PutReferral(ctx, owner.Address(), testNow())
	if err != nil {
		t.Fatal(err)
	}
	tool := f.tool(t, "evm-address-syntax")
	payerA, payerB := newPayer(t), newPayer(t)

	req := f.request(t, tool, `{"address":"0x209693Bc6afc0C5328bA36FaF03C514EF312287C"}`)
	req.URL.RawQuery = "ref=" + ref.Code + "&src=test"
	if resp, body := pay(t, payerA, req); resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d %s", resp.StatusCode, body)
	}
	req = f.request(t, tool, `{"address":"0x209693Bc6afc0C5328bA36FaF03C514EF312287C"}`)
	req.Header.Set("X-Ref", strings.ToLower(ref.Code))
	if resp, body := pay(t, payerB, req); resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d %s", resp.StatusCode, body)
	}
	rs, err := f.st.ReferralStats(ctx, ref.Code)
	if err != nil {
		t.Fatal(err)
	}
	if rs.ReferredPayers != 2 || rs.PaidCalls != 2 {
		t.Fatalf("referral stats %+v, want 2 payers, 2 calls", rs)
	}

	// The recorded row is keyed by the authorization's nonce: appending
	// the settlement the facilitator made once more inserts nothing.
	var last facilitator.Settlement
	for _, s := range f.local.Settlements() {
		if strings.EqualFold(s.Payer, payerB.Address()) {
			last = s
		}
	}
	inserted, err := f.st.Append(ctx, store.Settlement{Payer: last.Payer, ToolKey: tool.Key, Amount: last.Amount, Asset: last.Asset,
		Network: last.Network, Transaction: last.Transaction, Nonce: last.Nonce, SettledAt: last.SettledAt})
	if err != nil || inserted {
		t.Fatalf("re-appending the settled payment: inserted %v, err %v (the ledger row lacks the nonce?)", inserted, err)
	}
}

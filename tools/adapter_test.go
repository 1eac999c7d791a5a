package tools_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/seed1284c1d2/svc"
	"github.com/seed1284c1d2/svc/tools"
	"github.com/seed1284c1d2/svc/xau"
)

// post builds a POST request with a JSON body.
func post(path, body string) *http.Request {
	r := httptest.NewRequest(http.MethodPost, path, strings.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	return r
}

// svcErr returns err as an *svc.Error or fails the test.
func svcErr(t *testing.T, err error) *svc.Error {
	t.Helper()
	var e *svc.Error
	if !errors.As(err, &e) {
		t.Fatalf("error %v (%T) is not an *svc.Error", err, err)
	}
	return e
}

// only asserts that err is of kind k with exactly one field error.
func only(t *testing.T, err error, k svc.ErrorKind, field, rule string) svc.FieldError {
	t.Helper()
	e := svcErr(t, err)
	if e.Kind != k || len(e.Fields) != 1 || e.Fields[0].Field != field || e.Fields[0].Rule != rule {
		t.Fatalf("error %v: kind %s fields %+v; want %s, one error on %q rule %q", err, e.Kind, e.Fields, k, field, rule)
	}
	return e.Fields[0]
}

func tool(t *testing.T, c *tools.Catalog, key string) *tools.Tool {
	t.Helper()
	tl, ok := c.ByKey(key)
	if !ok {
		t.Fatalf("no tool %s", key)
	}
	return tl
}

func TestBodyUnknownFieldListsTheAllowedFields(t *testing.T) {
	c := newCatalog(t, tools.Options{})
	rl := tool(t, c, "risk-levels")
	_, err := rl.Decode(context.Background(), post(rl.Path, `{"entry":3500,"direction":"long","slPct":0.05,"tpPct":0.04,"stopPct":1}`))
	fe := only(t, err, svc.KindInvalid, "stopPct", tools.RuleUnknownField)
	if !strings.Contains(fe.Message, `unknown field "stopPct"; allowed fields: entry, direction, slPct, tpPct`) {
		t.Errorf("message %q", fe.Message)
	}
	// Member names are matched exactly, unlike encoding/json.
	_, err = rl.Decode(context.Background(), post(rl.Path, `{"Entry":3500,"direction":"long","slPct":0.05,"tpPct":0.04}`))
	if !fieldError(err, "Entry", tools.RuleUnknownField) || !fieldError(err, "entry", tools.RuleRequired) {
		t.Errorf("case-folded member: %v", err)
	}
}

func TestBodyMalformedJSON(t *testing.T) {
	c := newCatalog(t, tools.Options{})
	rl := tool(t, c, "risk-levels")
	ctx := context.Background()
	for _, tc := range []struct{ body, want string }{
		{"{\"entry\": 3500,\n \"direction\": long}", "malformed JSON at line 2, column 15 (byte offset 30): invalid character 'l' looking for beginning of value"},
		{`{"entry": 35`, "malformed JSON at line 1, column 13 (byte offset 12): unexpected end of input"},
		{`{"entry":3500,}`, "malformed JSON at line 1, column 15 (byte offset 14): invalid character '}' looking for beginning of object key string"},
		{`{"entry":3500,"direction":"long","slPct":0.05,"tpPct":0.04} {}`, "unexpected data after the JSON object at line 1, column 61 (byte offset 60)"},
		{`{"entry":3500,"direction":"long","slPct":0.05,"tpPct":0.04} x`, "unexpected data after the JSON object"},
	} {
		_, err := rl.Decode(ctx, post(rl.Path, tc.body))
		fe := only(t, err, svc.KindInvalid, "", tools.RuleJSON)
		if !strings.Contains(fe.Message, tc.want) {
			t.Errorf("body %q: message %q, want it to contain %q", tc.body, fe.Message, tc.want)
		}
	}
	for _, body := range []string{`[1,2]`, `"text"`, `42`, `null`} {
		_, err := rl.Decode(ctx, post(rl.Path, body))
		fe := only(t, err, svc.KindInvalid, "", "object")
		if !strings.Contains(fe.Message, "must be a JSON object") {
			t.Errorf("%s: %q", body, fe.Message)
		}
	}
	_, err := rl.Decode(ctx, post(rl.Path, `{"entry":1,"entry":2,"direction":"long","slPct":0.05,"tpPct":0.04}`))
	only(t, err, svc.KindInvalid, "entry", tools.RuleDuplicateField)
}

func TestBodyEmptyListsTheRequiredFields(t *testing.T) {
	c := newCatalog(t, tools.Options{})
	rl := tool(t, c, "risk-levels")
	for _, body := range []string{"", "  \n", "{}"} {
		_, err := rl.Decode(context.Background(), post(rl.Path, body))
		e := svcErr(t, err)
		var got []string
		for _, f := range e.Fields {
			if f.Rule != tools.RuleRequired {
				t.Errorf("unexpected rule %+v", f)
			}
			got = append(got, f.Field)
		}
		if e.Kind != svc.KindInvalid || strings.Join(got, ",") != "entry,direction,slPct,tpPct" {
			t.Errorf("body %q: %v", body, err)
		}
	}
	var nilBody http.Request = *post(rl.Path, "")
	nilBody.Body = nil
	if _, err := rl.Decode(context.Background(), &nilBody); !fieldError(err, "entry", tools.RuleRequired) {
		t.Errorf("nil body: %v", err)
	}
}

func TestBodyTooLarge(t *testing.T) {
	c := newCatalog(t, tools.Options{BodyLimit: 1024})
	csv := tool(t, c, "csv-profile")
	ctx := context.Background()
	big := `{"csv":"` + strings.Repeat("a,b\\n", 300) + `"}`
	// Announced by Content-Length.
	_, err := csv.Decode(ctx, post(csv.Path, big))
	fe := only(t, err, svc.KindTooLarge, "", tools.RuleMaxBytes)
	if !strings.Contains(fe.Message, "1024 bytes") {
		t.Errorf("message %q", fe.Message)
	}
	// Unannounced (chunked): counted while reading.
	r := post(csv.Path, "")
	r.Body, r.ContentLength = io.NopCloser(strings.NewReader(big)), -1
	_, err = csv.Decode(ctx, r)
	only(t, err, svc.KindTooLarge, "", tools.RuleMaxBytes)
	// A smaller http.MaxBytesReader installed by the server.
	r = post(csv.Path, big)
	r.Body = http.MaxBytesReader(httptest.NewRecorder(), r.Body, 100)
	r.ContentLength = -1
	_, err = csv.Decode(ctx, r)
	only(t, err, svc.KindTooLarge, "", tools.RuleMaxBytes)
	// Exactly at the limit is fine.
	atLimit := `{"csv":"` + strings.Repeat("x", 1024-10) + `"}`
	if len(atLimit) != 1024 {
		t.Fatalf("fixture of %d bytes", len(atLimit))
	}
	if _, err := csv.Decode(ctx, post(csv.Path, atLimit)); err != nil {
		t.Errorf("body at the limit: %v", err)
	}
	// DecodeJSON leaves limits to the transport.
	if _, err := csv.DecodeJSON(ctx, json.RawMessage(big)); err != nil {
		t.Errorf("DecodeJSON: %v", err)
	}
}

func TestBodyContentTypeIsLenient(t *testing.T) {
	c := newCatalog(t, tools.Options{})
	tp := tool(t, c, "tick-pnl")
	ctx := context.Background()
	body := `{"entry":100,"exit":101,"contracts":2,"tickSize":0.25,"tickValue":12.5,"direction":"long"}`
	for _, ct := range []string{"", "application/json; charset=utf-8", "text/plain", "application/x-www-form-urlencoded", "application/vnd.api+json"} {
		r := post(tp.Path, body)
		r.Header.Set("Content-Type", ct)
		if _, err := tp.Decode(ctx, r); err != nil {
			t.Errorf("Content-Type %q: %v", ct, err)
		}
	}
	// A BOM is ignored.
	if _, err := tp.Decode(ctx, post(tp.Path, "\uFEFF"+body)); err != nil {
		t.Errorf("BOM: %v", err)
	}
	// A malformed body under a non-JSON type says how it was read.
	r := post(tp.Path, "entry=100&exit=101")
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	_, err := tp.Decode(ctx, r)
	fe := only(t, err, svc.KindInvalid, "", tools.RuleJSON)
	if !strings.Contains(fe.Message, "read as JSON whatever its Content-Type") {
		t.Errorf("message %q", fe.Message)
	}
	r = post(tp.Path, body)
	r.Header.Set("Content-Encoding", "gzip")
	_, err = tp.Decode(ctx, r)
	only(t, err, svc.KindInvalid, "", tools.RuleContentEncoding)
}

func TestBodyTypesAndPaths(t *testing.T) {
	c := newCatalog(t, tools.Options{})
	ctx := context.Background()
	ohlcv := tool(t, c, "ohlcv-state")
	// Every structural error is reported, with its path; past 20 they are
	// summarised.
	var b strings.Builder
	b.WriteString(`{"bars":[`)
	for i := range 30 {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString(`{"open":100,"high":102,"low":99,"close":101,"x":1}`)
	}
	b.WriteString(`]}`)
	_, err := ohlcv.Decode(ctx, post(ohlcv.Path, b.String()))
	e := svcErr(t, err)
	if len(e.Fields) != 21 || e.Fields[0].Field != "bars[0].x" || e.Fields[19].Field != "bars[19].x" || e.Fields[20].Rule != tools.RuleTooManyErrors {
		t.Errorf("fields %+v", e.Fields)
	}
	_, err = ohlcv.Decode(ctx, post(ohlcv.Path, `{"bars":[{"open":100,"high":{"a":[1]},"low":99,"close":101},{"open":100,"high":102,"low":[99],"close":"101"}]}`))
	e = svcErr(t, err)
	if len(e.Fields) != 2 || !fieldError(err, "bars[0].high", "number") || !fieldError(err, "bars[1].low", "number") {
		t.Errorf("type errors %+v", e.Fields)
	}
	if !strings.Contains(e.Fields[0].Message, "must be a number, got an object") {
		t.Errorf("message %q", e.Fields[0].Message)
	}
	// A container of the wrong type is skipped whole and the walk goes on.
	_, err = ohlcv.Decode(ctx, post(ohlcv.Path, `{"bars":[[1,[2,{"a":3}]],{"open":{"x":[1,{}]},"high":102,"low":99,"close":101,"y":0}],"z":1}`))
	if e := svcErr(t, err); len(e.Fields) != 4 || !fieldError(err, "bars[0]", "object") || !fieldError(err, "bars[1].open", "number") ||
		!fieldError(err, "bars[1].y", tools.RuleUnknownField) || !fieldError(err, "z", tools.RuleUnknownField) {
		t.Errorf("skipped containers: %+v", e.Fields)
	}
	_, err = ohlcv.Decode(ctx, post(ohlcv.Path, `{"bars":{"open":[1]}}`))
	only(t, err, svc.KindInvalid, "bars", "array")
	// Numbers as decimal strings are read exactly.
	rl := tool(t, c, "risk-levels")
	call, err := rl.Decode(ctx, post(rl.Path, `{"entry":"3500.5","direction":"short","slPct":"0.1","tpPct":0.2}`))
	if err != nil {
		t.Fatal(err)
	}
	out, err := call.RunJSON(ctx, tools.Env{})
	if err != nil || !strings.Contains(string(out), `"stop":3504.0005,"target":3493.499`) {
		t.Errorf("decimal strings: %s %v", out, err)
	}
	_, err = rl.Decode(ctx, post(rl.Path, `{"entry":"35OO","direction":"short","slPct":"0.1","tpPct":0.2}`))
	only(t, err, svc.KindInvalid, "entry", "number")
	_, err = rl.Decode(ctx, post(rl.Path, `{"entry":1e999,"direction":"short","slPct":0.1,"tpPct":0.2}`))
	only(t, err, svc.KindInvalid, "entry", "max_magnitude")
	// The empty address is a candidate: an answer (valid false), not a 400.
	ev := tool(t, c, "evm-address-syntax")
	call, err = ev.Decode(ctx, post(ev.Path, `{"address":""}`))
	if err != nil {
		t.Fatalf("empty address: %v", err)
	}
	if out, err := call.RunJSON(ctx, tools.Env{}); err != nil || !strings.Contains(string(out), `"valid":false`) || !strings.Contains(string(out), `"reasonCode":"empty"`) {
		t.Errorf("empty address: %s %v", out, err)
	}
	// json_shape's value is any JSON value, null included.
	js := tool(t, c, "json-shape")
	for _, v := range []string{"null", "0", `"s"`, "[[]]", `{"a":{"b":null}}`} {
		call, err := js.Decode(ctx, post(js.Path, `{"value":`+v+`}`))
		if err != nil {
			t.Errorf("value %s: %v", v, err)
			continue
		}
		out, _ := call.RunJSON(ctx, tools.Env{})
		var resp svc.JSONShapeResponse
		if err := json.Unmarshal(out, &resp); err != nil || resp.PathCount == 0 {
			t.Errorf("value %s: %s", v, out)
		}
	}
}

func TestQueryInputs(t *testing.T) {
	c := newCatalog(t, tools.Options{})
	ctx := context.Background()
	bars := tool(t, c, "xau-bars")
	get := func(q string) (*tools.Call, error) {
		return bars.Decode(ctx, httptest.NewRequest(http.MethodGet, bars.Path+q, nil))
	}
	_, err := get("?count=abc")
	fe := only(t, err, svc.KindInvalid, "count", "integer")
	if fe.Message != `count: must be an integer, got "abc"` {
		t.Errorf("message %q", fe.Message)
	}
	for _, q := range []string{"?count=10.5", "?count=1e2", "?count=99999999999999999999"} {
		_, err := get(q)
		only(t, err, svc.KindInvalid, "count", "integer")
	}
	_, err = get("?count=10&count=20")
	only(t, err, svc.KindInvalid, "count", tools.RuleRepeated)
	_, err = get("?count=5")
	only(t, err, svc.KindInvalid, "count", "min")
	_, err = get("?timeframe=M2&count=600")
	if !fieldError(err, "timeframe", "oneof") || !fieldError(err, "count", "max") {
		t.Errorf("all rules at once: %v", err)
	}
	_, err = get("?count=%zz")
	only(t, err, svc.KindInvalid, "", tools.RuleQuery)
	// Attribution parameters are accepted (even repeated), empty values
	// are absent.
	call, err := get("?timeframe=&count=20&ref=abc&src=mcp&src=x")
	if err != nil {
		t.Fatal(err)
	}
	req := call.Request().(svc.XAUBarsRequest)
	if req.Timeframe != "" || req.Count == nil || *req.Count != 20 {
		t.Errorf("request %+v", req)
	}
	if got := string(call.Input()); got != `{"count":20}` {
		t.Errorf("input %s", got)
	}
	// Unknown parameters are invalid: a typo or a case difference is
	// named, with the allowed parameters and the one meant.
	_, err = get("?count=20&Count=1")
	fe = only(t, err, svc.KindInvalid, "Count", tools.RuleUnknownField)
	if !strings.Contains(fe.Message, `unknown query parameter "Count"; allowed parameters: timeframe, count, ref, src`) ||
		!strings.Contains(fe.Message, `did you mean "count"?`) {
		t.Errorf("message %q", fe.Message)
	}
	_, err = get("?cnt=20&tf=H1")
	if e := svcErr(t, err); len(e.Fields) != 2 || !fieldError(err, "cnt", tools.RuleUnknownField) || !fieldError(err, "tf", tools.RuleUnknownField) {
		t.Errorf("two unknown parameters: %v", err)
	}
	// A body is ignored on a GET tool; a POST tool's query string takes
	// only the attribution parameters.
	r := httptest.NewRequest(http.MethodGet, bars.Path+"?count=30", strings.NewReader(`{"count":"x"}`))
	if _, err := bars.Decode(ctx, r); err != nil {
		t.Errorf("GET with a body: %v", err)
	}
	rl := tool(t, c, "risk-levels")
	body := `{"entry":3500,"direction":"long","slPct":0.05,"tpPct":0.04}`
	if _, err := rl.Decode(ctx, post(rl.Path+"?ref=x&src=y", body)); err != nil {
		t.Errorf("POST with attribution: %v", err)
	}
	_, err = rl.Decode(ctx, post(rl.Path+"?entry=abc&ref=x", body))
	fe = only(t, err, svc.KindInvalid, "entry", tools.RuleUnknownField)
	if !strings.Contains(fe.Message, "reads its input from the JSON body") {
		t.Errorf("message %q", fe.Message)
	}
	_, err = rl.DecodeBody(ctx, post(rl.Path+"?entry=abc", body), []byte(body))
	only(t, err, svc.KindInvalid, "entry", tools.RuleUnknownField)
	// session_state: an unencoded "+" arrives as a space and still works.
	ss := tool(t, c, "session-state")
	call, err = ss.Decode(ctx, httptest.NewRequest(http.MethodGet, ss.Path+"?dateTime=2025-03-31T09:15:00+02:00", nil))
	if err != nil {
		t.Fatal(err)
	}
	out, err := call.RunJSON(ctx, tools.Env{})
	if err != nil || !strings.Contains(string(out), `"london":true,"newYork":false,"asia":false,"minuteOfDay":555`) {
		t.Errorf("session: %s %v", out, err)
	}
	_, err = ss.Decode(ctx, httptest.NewRequest(http.MethodGet, ss.Path+"?dateTime=soon", nil))
	only(t, err, svc.KindInvalid, "dateTime", "datetime")
}

func TestQueryOf(t *testing.T) {
	q, err := tools.QueryOf(json.RawMessage(`{"count":50,"timeframe":"M15","flag":true,"gone":null,"n":"a b"}`))
	if err != nil || q.Encode() != "count=50&flag=true&n=a+b&timeframe=M15" {
		t.Errorf("QueryOf: %v %v", q.Encode(), err)
	}
	if _, err := tools.QueryOf(json.RawMessage(`{"bars":[1]}`)); err == nil {
		t.Error("QueryOf accepted an array")
	}
	if q, err := tools.QueryOf(nil); err != nil || len(q) != 0 {
		t.Errorf("QueryOf(nil): %v %v", q, err)
	}
}

func TestDecodeJSONEmptyInput(t *testing.T) {
	c := newCatalog(t, tools.Options{})
	ctx := context.Background()
	q := tool(t, c, "xau-quote")
	for _, in := range []string{"", "null", " {} "} {
		if _, err := q.DecodeJSON(ctx, json.RawMessage(in)); err != nil {
			t.Errorf("%q: %v", in, err)
		}
	}
	ev := tool(t, c, "evm-address-syntax")
	_, err := ev.DecodeJSON(ctx, json.RawMessage("null"))
	only(t, err, svc.KindInvalid, "address", tools.RuleRequired)
}

// TestValidationIsTheRootPackages checks that the adapter reports exactly
// what the root functions report.
func TestValidationIsTheRootPackages(t *testing.T) {
	c := newCatalog(t, tools.Options{})
	ctx := context.Background()
	check := func(key, input string, root func() error) {
		t.Helper()
		_, got := tool(t, c, key).DecodeJSON(ctx, json.RawMessage(input))
		want := root()
		if want == nil || got == nil {
			t.Fatalf("%s %s: adapter %v, root %v: both must fail", key, input, got, want)
		}
		g, w := svcErr(t, got), svcErr(t, want)
		if g.Kind != w.Kind || !reflect.DeepEqual(g.Fields, w.Fields) {
			t.Errorf("%s %s:\nadapter %s %+v\nroot    %s %+v", key, input, g.Kind, g.Fields, w.Kind, w.Fields)
		}
	}
	check("risk-levels", `{"entry":3500,"direction":"long","slPct":100,"tpPct":0.04}`, func() error {
		_, err := svc.RiskLevels(ctx, svc.RiskLevelsRequest{Entry: svc.N(3500), Direction: svc.Long, SlPct: svc.N(100), TpPct: svc.MustNumber("0.04")})
		return err
	})
	check("xau-bars", `{"timeframe":"W1","count":9}`, func() error {
		_, err := svc.XAUBars(ctx, nil, svc.XAUBarsRequest{Timeframe: "W1", Count: new(9)})
		return err
	})
	check("xau-market-state", `{"count":501}`, func() error {
		_, err := svc.XAUMarketState(ctx, nil, svc.XAUMarketStateRequest{Count: new(501)})
		return err
	})
	check("xau-quote", `{"symbol":"XAU USD"}`, func() error {
		_, err := svc.XAUQuote(ctx, nil, svc.XAUQuoteRequest{Symbol: "XAU USD"})
		return err
	})
	for _, in := range []svc.RegexTestRequest{
		{Pattern: "a", Flags: "gvx", Text: "a"},
		{Pattern: "a(", Text: "a"},
		{Pattern: "a", Text: strings.Repeat("b", 1<<20+1)},
		{Pattern: strings.Repeat("a", 5000), Text: strings.Repeat("b", 1<<20+1)},
		{Pattern: `\p{Emoji}`, Flags: "u", Text: "a"},
	} {
		raw, _ := json.Marshal(in)
		check("regex-test", string(raw), func() error { _, err := svc.RegexTest(ctx, in); return err })
	}
	check("jwt-decode", `{"token":"`+strings.Repeat("a", 70000)+`"}`, func() error {
		_, err := svc.JWTDecode(ctx, svc.JWTDecodeRequest{Token: strings.Repeat("a", 70000)})
		return err
	})
	check("csv-profile", `{"csv":"a,b\n\"x,1","delimiter":","}`, func() error {
		_, err := svc.CSVProfile(ctx, svc.CSVProfileRequest{CSV: "a,b\n\"x,1", Delimiter: ","})
		return err
	})
}

func TestRunUsesTheEnv(t *testing.T) {
	c := newCatalog(t, tools.Options{})
	ctx := context.Background()
	clock := func() time.Time { return time.Date(2025, 6, 5, 0, 0, 0, 0, time.UTC) }

	// session_state without dateTime: the Env's clock.
	ss := tool(t, c, "session-state")
	call, err := ss.DecodeJSON(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	out, err := call.RunJSON(ctx, tools.Env{Now: clock})
	if err != nil || !strings.Contains(string(out), `"utc":"2025-06-05T00:00:00Z"`) {
		t.Errorf("session_state: %s %v", out, err)
	}

	// jwt_decode: expired against the Env's clock (exp is 2025-06-05T00:00Z).
	jwt := tool(t, c, "jwt-decode")
	call, err = jwt.DecodeJSON(ctx, jwt.ExampleInput)
	if err != nil {
		t.Fatal(err)
	}
	out, err = call.RunJSON(ctx, tools.Env{Now: clock})
	if err != nil || !strings.Contains(string(out), `"expired":true`) {
		t.Errorf("jwt_decode: %s %v", out, err)
	}

	// regex_test: a catastrophic pattern decodes at once (nothing is
	// matched before payment) and times out under the Env's limit.
	rt := tool(t, c, "regex-test")
	start := time.Now()
	call, err = rt.DecodeJSON(ctx, json.RawMessage(`{"pattern":"(a+)+$","text":"`+strings.Repeat("a", 40)+`b"}`))
	if err != nil {
		t.Fatal(err)
	}
	// Matching 40 a's against (a+)+$ takes 2^40 steps: hours, so a bound
	// of a minute tells "not matched" from "matched" on any machine,
	// however loaded.
	if d := time.Since(start); d > time.Minute {
		t.Errorf("decoding took %v: it must not match", d)
	}
	_, err = call.Run(ctx, tools.Env{RegexTimeout: 20 * time.Millisecond})
	if svc.KindOf(err) != svc.KindTimeout || !strings.Contains(err.Error(), "20ms") {
		t.Errorf("regex: %v; want a timeout under the Env's 20ms limit", err)
	}
}

func TestRunGoldTools(t *testing.T) {
	c := newCatalog(t, tools.Options{})
	ctx := context.Background()
	now := func() time.Time { return time.Date(2025, 6, 4, 13, 45, 0, 0, time.UTC) }
	sim, err := xau.NewSimulated(xau.SimConfig{Seed: 3, Now: now, Symbol: "XAUUSD.a"})
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"xau-quote", "xau-bars", "xau-market-state"} {
		tl := tool(t, c, key)
		call, err := tl.Decode(ctx, httptest.NewRequest(http.MethodGet, tl.Path, nil))
		if err != nil {
			t.Fatalf("%s: %v", key, err)
		}
		// No terminal configured, a terminal that is down.
		if _, err := call.Run(ctx, tools.Env{}); svc.KindOf(err) != svc.KindUnavailable {
			t.Errorf("%s without a terminal: %v", key, err)
		}
		down := xau.NewScripted(now)
		down.SetDown(true)
		if _, err := call.Run(ctx, tools.Env{Terminal: down, DefaultSymbol: "XAUUSD"}); svc.KindOf(err) != svc.KindUnavailable {
			t.Errorf("%s with a terminal down: %v", key, err)
		}
		if calls := down.Calls(); calls.Quote+calls.Bars != 1 {
			t.Errorf("%s: terminal calls %+v, want one", key, calls)
		}
		// The operator's default symbol.
		out, err := call.RunJSON(ctx, tools.Env{Terminal: sim, DefaultSymbol: "XAUUSD.a"})
		if err != nil || !strings.Contains(string(out), `"symbol":"XAUUSD.a"`) || !strings.Contains(string(out), `"source":"simulated"`) {
			t.Errorf("%s: %.200s %v", key, out, err)
		}
	}
	// Decoding never touches a terminal: it has none to touch; a request
	// the terminal rejects fails only when run.
	q := tool(t, c, "xau-quote")
	call, err := q.Decode(ctx, httptest.NewRequest(http.MethodGet, q.Path+"?symbol=EURUSD", nil))
	if err != nil {
		t.Fatal(err)
	}
	_, err = call.Run(ctx, tools.Env{Terminal: sim})
	only(t, err, svc.KindInvalid, "symbol", "unknown_symbol")
}

func TestPureToolsComputeOnce(t *testing.T) {
	c := newCatalog(t, tools.Options{})
	ctx := context.Background()
	ohlcv := tool(t, c, "ohlcv-state")
	call, err := ohlcv.DecodeJSON(ctx, ohlcv.ExampleInput)
	if err != nil {
		t.Fatal(err)
	}
	a, err1 := call.Run(ctx, tools.Env{})
	b, err2 := call.Run(ctx, tools.Env{Now: time.Now})
	if err1 != nil || err2 != nil || !reflect.DeepEqual(a, b) {
		t.Fatalf("runs differ: %v %v", err1, err2)
	}
	if _, ok := a.(svc.OHLCVStateResponse); !ok {
		t.Fatalf("Run returned %T", a)
	}
	if _, ok := call.Request().(svc.OHLCVStateRequest); !ok || call.Tool() != ohlcv {
		t.Fatalf("Request %T, Tool %v", call.Request(), call.Tool())
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := call.Run(cancelled, tools.Env{}); svc.KindOf(err) != svc.KindTimeout {
		t.Errorf("cancelled run: %v", err)
	}
	out, err := ohlcv.Invoke(ctx, tools.Env{}, ohlcv.ExampleInput)
	if err != nil || !bytes.Equal(out, ohlcv.OutputExample) {
		t.Errorf("Invoke: %s %v", out, err)
	}
	if _, err := ohlcv.Invoke(ctx, tools.Env{}, json.RawMessage(`{}`)); svc.KindOf(err) != svc.KindInvalid {
		t.Errorf("Invoke of invalid input: %v", err)
	}
}

func TestInputIsCanonical(t *testing.T) {
	c := newCatalog(t, tools.Options{})
	tp := tool(t, c, "tick-pnl")
	call, err := tp.DecodeJSON(context.Background(), json.RawMessage(`{ "direction":"short", "entry":"100.50", "exit":1e2, "contracts":2, "tickSize":0.25, "tickValue":12.5 }`))
	if err != nil {
		t.Fatal(err)
	}
	if got := string(call.Input()); got != `{"entry":100.5,"exit":100,"contracts":2,"tickSize":0.25,"tickValue":12.5,"direction":"short"}` {
		t.Errorf("input %s", got)
	}
	req := call.Request().(svc.TickPnLRequest)
	if !req.Entry.Decimal().Equal(decimal.RequireFromString("100.5")) {
		t.Errorf("entry %v", req.Entry)
	}
}

// TestNullOptionalMembers: on every tool, null for an optional member
// means "not given" (the call is the one without it, and the schema says
// the member may be null), and null for a required member is a type
// error naming it.
func TestNullOptionalMembers(t *testing.T) {
	c := newCatalog(t, tools.Options{})
	ctx := context.Background()
	for _, tl := range c.All() {
		var schema struct {
			Properties map[string]struct {
				Type any `json:"type"`
			} `json:"properties"`
			Required []string `json:"required"`
		}
		if err := json.Unmarshal(tl.InputSchema, &schema); err != nil {
			t.Fatal(err)
		}
		var example map[string]json.RawMessage
		if err := json.Unmarshal(tl.ExampleInput, &example); err != nil {
			t.Fatal(err)
		}
		for name, prop := range schema.Properties {
			in := map[string]json.RawMessage{}
			for k, v := range example {
				in[k] = v
			}
			in[name] = json.RawMessage("null")
			_, err := tl.DecodeJSON(ctx, nullJSON(t, in))
			if slices.Contains(schema.Required, name) {
				if prop.Type == nil {
					continue // any JSON value, null included (json_shape's value)
				}
				typ, _ := prop.Type.(string)
				if !fieldError(err, name, typ) {
					t.Errorf("%s: null for the required %s: %v", tl.Key, name, err)
				}
				continue
			}
			types, _ := prop.Type.([]any)
			if prop.Type != nil && !slices.Contains(types, any("null")) {
				t.Errorf("%s: the schema of the optional %s does not allow null: %v", tl.Key, name, prop.Type)
			}
			if err != nil {
				t.Errorf("%s: null for the optional %s: %v", tl.Key, name, err)
				continue
			}
			delete(in, name)
			// The same call as without the member, with the member's name
			// escaped too.
			want, err := tl.DecodeJSON(ctx, nullJSON(t, in))
			if err != nil {
				t.Fatal(err)
			}
			slow := strings.Replace(string(nullJSON(t, in)), "{", `{"`+escapeFirst(name)+`":null,`, 1)
			if len(in) == 0 {
				slow = `{"` + escapeFirst(name) + `":null}`
			}
			got, err := tl.DecodeJSON(ctx, json.RawMessage(slow))
			if err != nil {
				t.Errorf("%s: %s: %v", tl.Key, slow, err)
				continue
			}
			if string(got.Input()) != string(want.Input()) {
				t.Errorf("%s: null %s gives %s, without it %s", tl.Key, name, got.Input(), want.Input())
			}
		}
	}
}

// escapeFirst writes the first letter of name as a \u escape, which keeps
// the name and sends the document down the decoder's slow path.
func escapeFirst(name string) string {
	return fmt.Sprintf(`\u%04x`, name[0]) + name[1:]
}

// nullJSON encodes v or fails the test.
func nullJSON(t *testing.T, v any) json.RawMessage {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

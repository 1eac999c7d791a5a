package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/seed1284c1d2/svc"
	"github.com/seed1284c1d2/svc/xau"
)

// direct runs a root tool on a JSON input decoded with plain encoding/json,
// bypassing the adapter.
func direct[Req, Resp any](f func(context.Context, Req) (Resp, error), set func(*Req, Env)) func(context.Context, Env, []byte) (any, error) {
	return func(ctx context.Context, env Env, in []byte) (any, error) {
		var req Req
		if err := json.Unmarshal(in, &req); err != nil {
			return nil, err
		}
		if set != nil {
			set(&req, env)
		}
		return f(ctx, req)
	}
}

// directGold is direct for a terminal-backed tool.
func directGold[Req, Resp any](f func(context.Context, xau.Terminal, Req) (Resp, error)) func(context.Context, Env, []byte) (any, error) {
	return func(ctx context.Context, env Env, in []byte) (any, error) {
		var req Req
		if err := json.Unmarshal(in, &req); err != nil {
			return nil, err
		}
		return f(ctx, env.Terminal, req)
	}
}

// TestOutputExamplesDoNotDrift re-runs every tool on its example input,
// with a fresh example Env (a new simulated terminal), both through the
// adapter and by calling the root function directly: both must give the
// stored output example byte for byte.
func TestOutputExamplesDoNotDrift(t *testing.T) {
	roots := map[string]func(context.Context, Env, []byte) (any, error){
		"session-state":      direct(svc.SessionState, func(r *svc.SessionStateRequest, e Env) { r.Now = e.Now() }),
		"risk-levels":        direct(svc.RiskLevels, nil),
		"strategy-grade":     direct(svc.StrategyGrade, nil),
		"xau-quote":          directGold(svc.XAUQuote),
		"xau-bars":           directGold(svc.XAUBars),
		"xau-market-state":   directGold(svc.XAUMarketState),
		"csv-profile":        direct(svc.CSVProfile, nil),
		"json-shape":         direct(svc.JSONShape, nil),
		"jwt-decode":         direct(svc.JWTDecode, func(r *svc.JWTDecodeRequest, e Env) { r.Now = e.Now() }),
		"tick-pnl":           direct(svc.TickPnL, nil),
		"evm-address-syntax": direct(svc.EVMAddressSyntax, nil),
		"ohlcv-state":        direct(svc.OHLCVState, nil),
		"regex-test":         direct(svc.RegexTest, func(r *svc.RegexTestRequest, e Env) { r.Timeout = e.RegexTimeout }),
	}
	c, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, tool := range c.All() {
		env, err := exampleEnv()
		if err != nil {
			t.Fatal(err)
		}
		out, err := tool.Invoke(ctx, env, tool.ExampleInput)
		if err != nil || !bytes.Equal(out, tool.OutputExample) {
			t.Errorf("%s: adapter output drifted:\n%s\nstored:\n%s\n%v", tool.Key, out, tool.OutputExample, err)
		}
		root, ok := roots[tool.Key]
		if !ok {
			t.Errorf("%s: no direct call in the test table", tool.Key)
			continue
		}
		resp, err := root(ctx, env, tool.ExampleInput)
		if err != nil {
			t.Errorf("%s: root call: %v", tool.Key, err)
			continue
		}
		raw, err := encodeJSON(resp)
		if err != nil || !bytes.Equal(raw, tool.OutputExample) {
			t.Errorf("%s: the root function gives\n%s\nstored:\n%s", tool.Key, raw, tool.OutputExample)
		}
	}
	if len(roots) != c.Len() {
		t.Errorf("test table has %d tools, catalog %d", len(roots), c.Len())
	}
}

// TestExamplesUseAFixedClock guards the example Env itself.
func TestExamplesUseAFixedClock(t *testing.T) {
	a, err := exampleEnv()
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Millisecond)
	b, _ := exampleEnv()
	if !a.Now().Equal(b.Now()) || a.Now().Weekday() != time.Wednesday {
		t.Fatalf("example clock moves or is not a weekday: %v %v", a.Now(), b.Now())
	}
	qa, err := a.Terminal.Quote(context.Background(), svc.DefaultGoldSymbol)
	if err != nil {
		t.Fatal(err)
	}
	qb, _ := b.Terminal.Quote(context.Background(), svc.DefaultGoldSymbol)
	if !qa.Bid.Equal(qb.Bid) || qa.Source != xau.SourceSimulated {
		t.Fatalf("example terminal is not deterministic: %v %v", qa, qb)
	}
}

func TestProbeNeverPassesAGoldRequestThatTheToolRejects(t *testing.T) {
	ctx := context.Background()
	check := probe(svc.XAUBars)
	if err := check(ctx, svc.XAUBarsRequest{}); err != nil {
		t.Errorf("valid request: %v", err)
	}
	if err := check(ctx, svc.XAUBarsRequest{Timeframe: "D1"}); svc.KindOf(err) != svc.KindInvalid {
		t.Errorf("invalid request: %v", err)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if err := check(cancelled, svc.XAUBarsRequest{}); svc.KindOf(err) != svc.KindTimeout {
		t.Errorf("cancelled: %v", err)
	}
	answers := probe(func(context.Context, xau.Terminal, svc.XAUBarsRequest) (int, error) { return 1, nil })
	if err := answers(ctx, svc.XAUBarsRequest{}); svc.KindOf(err) != svc.KindInternal {
		t.Errorf("a tool answering without its terminal: %v", err)
	}
}

func TestShapeOf(t *testing.T) {
	type inner struct {
		A int `json:"a"`
	}
	type ok struct {
		S    string          `json:"s"`
		P    *int            `json:"p,omitempty"`
		N    svc.Number      `json:"n,omitzero"`
		R    json.RawMessage `json:"r"`
		L    []inner         `json:"l"`
		Skip string          `json:"-"`
		Dash string          `json:"-,"`
		Bare bool
	}
	sh, err := shapeOf(reflect.TypeFor[ok]())
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(sh.names(), ","); got != "s,p,n,r,l,-,Bare" {
		t.Errorf("names %s", got)
	}
	var req []string
	for _, f := range sh.fields {
		if f.required {
			req = append(req, f.name)
		}
	}
	if strings.Join(req, ",") != "s,r,l,-,Bare" {
		t.Errorf("required %v", req)
	}
	if s, _, err := sh.lookup("l[].a"); err != nil || s.kind != kindInteger {
		t.Errorf("lookup: %v %v", s, err)
	}
	for _, path := range []string{"l.a", "x", "s[]"} {
		if _, _, err := sh.lookup(path); err == nil {
			t.Errorf("lookup(%q) succeeded", path)
		}
	}
	for _, bad := range []reflect.Type{
		reflect.TypeFor[struct{ F float64 }](),
		reflect.TypeFor[struct{ M map[string]int }](),
		reflect.TypeFor[struct{ T time.Time }](),
		reflect.TypeFor[struct{ I any }](),
	} {
		if _, err := shapeOf(bad); err == nil {
			t.Errorf("shapeOf(%v) accepted", bad)
		}
	}
	if got := splitPath("bars[].open"); !slices.Equal(got, []string{"bars", "[]", "open"}) {
		t.Errorf("splitPath %v", got)
	}
	if got := splitPath("m[][]"); !slices.Equal(got, []string{"m", "[]", "[]"}) {
		t.Errorf("splitPath %v", got)
	}
}

func TestApplyTags(t *testing.T) {
	num := &shape{kind: kindNumber}
	str := &shape{kind: kindString}
	arr := &shape{kind: kindArray, elem: &shape{kind: kindInteger}}
	s := &jsonschema.Schema{}
	if req, err := applyTags(s, num, "required,gt=0,lte=100,integer"); err != nil || !req ||
		*s.ExclusiveMinimum != 0 || *s.Maximum != 100 || *s.MultipleOf != 1 {
		t.Errorf("number: %v %v %+v", req, err, s)
	}
	s = &jsonschema.Schema{}
	if _, err := applyTags(s, str, "required,oneof=a b,max=5"); err != nil || s.MinLength != nil || *s.MaxLength != 5 || len(s.Enum) != 2 {
		t.Errorf("string: %v %+v", err, s)
	}
	s = &jsonschema.Schema{}
	if _, err := applyTags(s, str, "max_bytes=7"); err != nil || *s.MaxLength != 7 {
		t.Errorf("string bytes: %v %+v", err, s)
	}
	s = &jsonschema.Schema{Items: &jsonschema.Schema{}}
	if _, err := applyTags(s, arr, "required,min=1,max=3"); err != nil || *s.MinItems != 1 || *s.MaxItems != 3 {
		t.Errorf("array: %v %+v", err, s)
	}
	for _, bad := range []struct {
		sh  *shape
		tag string
	}{{num, "email"}, {str, "gt=0"}, {num, "max_bytes=3"}, {num, "min=x"}, {str, "integer"}, {num, "dive"}, {num, "dgt=0"}, {arr, "oneof=a b"}} {
		if _, err := applyTags(&jsonschema.Schema{}, bad.sh, bad.tag); err == nil {
			t.Errorf("tag %q on %s accepted", bad.tag, bad.sh.kind)
		}
	}
}

func TestCheckMeta(t *testing.T) {
	good := func() *entry {
		e, err := define(def[svc.XAUBarsRequest, svc.XAUBarsResponse]{meta: meta{
			key: "xau-bars", operationID: "xau_bars", name: "n", description: "d", tags: []string{"t"},
			method: "GET", path: "/api/x", price: "0.01", location: InputQuery,
		}})()
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	if err := checkMeta(good()); err != nil {
		t.Fatalf("good meta: %v", err)
	}
	for name, mutate := range map[string]func(*entry){
		"key":      func(e *entry) { e.key = "xau_bars" },
		"method":   func(e *entry) { e.method = "POST" },
		"path":     func(e *entry) { e.path = "/x" },
		"price":    func(e *entry) { e.price = "0" },
		"no tags":  func(e *entry) { e.tags = nil },
		"location": func(e *entry) { e.location = InputBody },
	} {
		e := good()
		mutate(e)
		if err := checkMeta(e); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	// A GET tool cannot take an array in its query.
	e, err := define(def[svc.OHLCVStateRequest, svc.OHLCVStateResponse]{meta: meta{
		key: "ohlcv-state", operationID: "ohlcv_state", name: "n", description: "d", tags: []string{"t"},
		method: "GET", path: "/api/x", price: "0.01", location: InputQuery,
	}})()
	if err != nil {
		t.Fatal(err)
	}
	if err := checkMeta(e); err == nil || !strings.Contains(err.Error(), "query string cannot carry") {
		t.Errorf("array in a query: %v", err)
	}
}

func TestQueryDocumentTypes(t *testing.T) {
	type req struct {
		B  bool       `json:"b,omitempty"`
		N  svc.Number `json:"n,omitzero"`
		U  *uint8     `json:"u,omitempty"`
		S  string     `json:"s,omitempty"`
		L  []int      `json:"l,omitempty"`
		Ok *bool      `json:"ok,omitempty"`
	}
	sh, err := shapeOf(reflect.TypeFor[req]())
	if err != nil {
		t.Fatal(err)
	}
	doc, errs := queryDocument(map[string][]string{"b": {"TRUE"}, "n": {"1e2"}, "u": {"255"}, "s": {`a"b`}, "ok": {""}}, sh)
	if len(errs) != 0 || string(doc) != `{"b":true,"n":100,"s":"a\"b","u":255}` {
		t.Errorf("doc %s errs %v", doc, errs)
	}
	_, errs = queryDocument(map[string][]string{"b": {"maybe"}, "n": {"x"}, "u": {"256"}, "l": {"1"}}, sh)
	var rules []string
	for _, e := range errs {
		rules = append(rules, e.Field+":"+e.Rule)
	}
	if strings.Join(rules, ",") != "b:boolean,n:number,u:integer,l:array" {
		t.Errorf("rules %v", rules)
	}
}

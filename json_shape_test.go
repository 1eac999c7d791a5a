package svc_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/leanovate/gopter"
	"github.com/leanovate/gopter/prop"

	"github.com/seed1284c1d2/svc"
	"github.com/seed1284c1d2/svc/svctest"
)

func jsonShapeTest(t *testing.T, value string, maxDepth, maxPaths int) svc.JSONShapeResponse {
	t.Helper()
	req := svc.JSONShapeRequest{Value: json.RawMessage(value)}
	if maxDepth > 0 {
		req.MaxDepth = &maxDepth
	}
	if maxPaths > 0 {
		req.MaxPaths = &maxPaths
	}
	resp, err := svc.JSONShape(context.Background(), req)
	if err != nil {
		t.Fatalf("JSONShape(%.60q): %v", value, err)
	}
	return resp
}

// jsonShapeLines renders paths one per line: path types occurrences.
func jsonShapeLines(resp svc.JSONShapeResponse) string {
	var b strings.Builder
	for _, p := range resp.Paths {
		fmt.Fprintf(&b, "%s %s %d\n", p.Path, strings.Join(p.Types, ","), p.Occurrences)
	}
	return b.String()
}

func TestJSONShapeFullResponse(t *testing.T) {
	resp := jsonShapeTest(t, `{"items":[{"id":1,"tags":["a"]},{"id":2.5,"tags":[]}],"next":null}`, 0, 0)
	want := `{"rootType":"object","pathCount":7,"paths":[` +
		`{"path":"$","types":["object"],"occurrences":1},` +
		`{"path":"$.items","types":["array"],"occurrences":1},` +
		`{"path":"$.items[]","types":["object"],"occurrences":2},` +
		`{"path":"$.items[].id","types":["integer","number"],"occurrences":2},` +
		`{"path":"$.items[].tags","types":["array"],"occurrences":2},` +
		`{"path":"$.items[].tags[]","types":["string"],"occurrences":1},` +
		`{"path":"$.next","types":["null"],"occurrences":1}],` +
		`"maxDepth":8,"maxPaths":500,"maxDepthSeen":4,"depthLimited":false,"pathsTruncated":false}`
	if got := csvJSONString(resp); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

func TestJSONShapePathNotation(t *testing.T) {
	value := `{"a":1,"b c":2,"é":3,"q\"x":4,"":5,"$ok":6,"_":7,"1a":8,"a1_$":9,"back\\slash":10,` +
		`"nl\n":11,"<&>":12,"\u2028":13,"a.b":14,"日本":15,"\u0041\u00e9":16}`
	want := `$ object 1
$.a integer 1
$["b c"] integer 1
$["é"] integer 1
$["q\"x"] integer 1
$[""] integer 1
$.$ok integer 1
$._ integer 1
$["1a"] integer 1
$.a1_$ integer 1
$["back\\slash"] integer 1
$["nl\n"] integer 1
$["<&>"] integer 1
$["\u2028"] integer 1
$["a.b"] integer 1
$["日本"] integer 1
$["Aé"] integer 1
`
	if got := jsonShapeLines(jsonShapeTest(t, value, 0, 0)); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

func TestJSONShapeArrays(t *testing.T) {
	got := jsonShapeLines(jsonShapeTest(t, `[[1,2],[3,[4]],[],"x"]`, 0, 0))
	want := `$ array 1
$[] array,string 4
$[][] array,integer 4
$[][][] integer 1
`
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	// Mixed types are listed once each, sorted by name.
	resp := jsonShapeTest(t, `[1,"a",null,true,1.5,{},[],false,2]`, 0, 0)
	if p := resp.Paths[1]; p.Path != "$[]" || strings.Join(p.Types, " ") != "array boolean integer null number object string" || p.Occurrences != 9 {
		t.Errorf("got %+v", p)
	}
	// Occurrences count every value at the path; members absent from some
	// elements count only where present.
	got = jsonShapeLines(jsonShapeTest(t, `[{"a":1},{"a":"x","b":null},{"b":2}]`, 0, 0))
	want = `$ array 1
$[] object 3
$[].a integer,string 2
$[].b integer,null 2
`
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

func TestJSONShapeNumbers(t *testing.T) {
	tests := map[string]string{
		"1": "integer", "-0": "integer", "0": "integer", "12345678901234567890123": "integer",
		"1.0": "number", "1e2": "number", "1E+2": "number", "-0.0": "number", "2.5e-3": "number",
	}
	for lit, want := range tests {
		resp := jsonShapeTest(t, lit, 0, 0)
		if resp.RootType != want || resp.PathCount != 1 || resp.Paths[0].Types[0] != want {
			t.Errorf("%s: %s", lit, csvJSONString(resp))
		}
	}
	for lit, want := range map[string]string{"null": "null", "true": "boolean", "false": "boolean", `"s"`: "string", "{}": "object", "[]": "array"} {
		if resp := jsonShapeTest(t, " \n"+lit+"\t", 0, 0); resp.RootType != want || resp.Paths[0].Path != "$" {
			t.Errorf("%s: %s", lit, csvJSONString(resp))
		}
	}
}

func TestJSONShapeMemberNames(t *testing.T) {
	// Escaped and plain spellings of a name are one path; a repeated name
	// counts each occurrence.
	got := jsonShapeLines(jsonShapeTest(t, `{"a":1,"\u0061":"x","a":null,"\/":true}`, 0, 0))
	want := "$ object 1\n$.a integer,null,string 3\n$[\"/\"] boolean 1\n"
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	// Surrogate pairs join; a lone surrogate and invalid UTF-8 become U+FFFD.
	got = jsonShapeLines(jsonShapeTest(t, "{\"\\ud83d\\ude00\":1,\"\\ud800\":2,\"\xff\":3,\"\\ud800\\u0041\":4}", 0, 0))
	want = "$ object 1\n$[\"😀\"] integer 1\n$[\"\uFFFD\"] integer 2\n$[\"\uFFFDA\"] integer 1\n"
	if got != want {
		t.Errorf("got\n%q\nwant\n%q", got, want)
	}
	// Control characters in names use JSON escapes.
	got = jsonShapeLines(jsonShapeTest(t, `{"\u0001\b\f\r\t":1}`, 0, 0))
	if want := "$ object 1\n$[\"\\u0001\\b\\f\\r\\t\"] integer 1\n"; got != want {
		t.Errorf("got %q want %q", got, want)
	}
}

func TestJSONShapeDepthLimit(t *testing.T) {
	resp := jsonShapeTest(t, `{"a":{"b":{"c":1}},"e":{},"f":[]}`, 1, 0)
	if got, want := jsonShapeLines(resp), "$ object 1\n$.a object 1\n$.e object 1\n$.f array 1\n"; got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	if !resp.DepthLimited || resp.MaxDepthSeen != 3 || resp.MaxDepth != 1 {
		t.Errorf("flags %s", csvJSONString(resp))
	}
	// Empty containers at the limit lose nothing.
	resp = jsonShapeTest(t, `{"a":{},"b":[],"c":1}`, 1, 0)
	if resp.DepthLimited || resp.PathCount != 4 || resp.MaxDepthSeen != 1 {
		t.Errorf("flags %s", csvJSONString(resp))
	}
	resp = jsonShapeTest(t, `[[[1]]]`, 2, 0)
	if got := jsonShapeLines(resp); got != "$ array 1\n$[] array 1\n$[][] array 1\n" || !resp.DepthLimited || resp.MaxDepthSeen != 3 {
		t.Errorf("got %s %s", got, csvJSONString(resp))
	}
	// Default 8: a value at depth 8 is listed, its children are not.
	deep := strings.Repeat("[", 10) + strings.Repeat("]", 10)
	resp = jsonShapeTest(t, deep, 0, 0)
	if resp.PathCount != 9 || resp.Paths[8].Path != "$"+strings.Repeat("[]", 8) || !resp.DepthLimited || resp.MaxDepthSeen != 9 {
		t.Errorf("got %s", csvJSONString(resp))
	}
	resp = jsonShapeTest(t, deep, 12, 0)
	if resp.PathCount != 10 || resp.DepthLimited {
		t.Errorf("got %s", csvJSONString(resp))
	}
}

func TestJSONShapePathLimit(t *testing.T) {
	var obj strings.Builder
	obj.WriteString("{")
	for i := range 20 {
		if i > 0 {
			obj.WriteString(",")
		}
		fmt.Fprintf(&obj, `"k%d":%d`, i, i)
	}
	obj.WriteString("}")
	value := "[" + obj.String() + "," + obj.String() + "," + obj.String() + "]"
	resp := jsonShapeTest(t, value, 0, 10)
	if resp.PathCount != 10 || len(resp.Paths) != 10 || !resp.PathsTruncated || resp.MaxPaths != 10 {
		t.Fatalf("got %s", csvJSONString(resp))
	}
	// Listed paths keep counting every occurrence.
	if p := resp.Paths[9]; p.Path != "$[].k7" || p.Occurrences != 3 {
		t.Errorf("last path %+v", p)
	}
	resp = jsonShapeTest(t, value, 0, 22)
	if resp.PathCount != 22 || resp.PathsTruncated {
		t.Errorf("got %s", csvJSONString(resp))
	}
	// The path text is capped at 1 MiB.
	long := strings.Repeat("n", 300_000)
	resp = jsonShapeTest(t, `{"`+long+`":{"a":1,"b":2,"c":3,"d":4},"z":true}`, 0, 0)
	total := 0
	for _, p := range resp.Paths {
		total += len(p.Path)
	}
	if !resp.PathsTruncated || total > 1<<20 || resp.PathCount != 5 || resp.Paths[4].Path != "$.z" {
		t.Errorf("pathCount %d text %d truncated %v", resp.PathCount, total, resp.PathsTruncated)
	}
}

func TestJSONShapeDeepNesting(t *testing.T) {
	for _, n := range []int{9999, 10000, 10001} {
		value := strings.Repeat("[", n) + strings.Repeat("]", n)
		_, err := svc.JSONShape(context.Background(), svc.JSONShapeRequest{Value: json.RawMessage(value)})
		if (err == nil) != json.Valid([]byte(value)) {
			t.Errorf("depth %d: err %v, json.Valid %v", n, err, json.Valid([]byte(value)))
		}
	}
	value := strings.Repeat(`{"a":`, 10001) + "1" + strings.Repeat("}", 10001)
	_, err := svc.JSONShape(context.Background(), svc.JSONShapeRequest{Value: json.RawMessage(value)})
	if msg := csvTestFieldError(t, err, "value", "json"); !strings.Contains(msg, "nesting deeper than 10000") {
		t.Errorf("message %q", msg)
	}
}

func TestJSONShapeInvalid(t *testing.T) {
	tests := []struct {
		value  string
		offset string
	}{
		{`{"a":}`, "offset 5:"},
		{`{"a" 1}`, "offset 5:"},
		{`[1,]`, "offset 3:"},
		{`[1 2]`, "offset 3:"},
		{`{"a":1,}`, "offset 7:"},
		{`{a:1}`, "offset 1:"},
		{`01`, "offset 1:"},
		{`-`, "offset 1:"},
		{`1.`, "offset 2:"},
		{`1e`, "offset 2:"},
		{`.5`, "offset 0:"},
		{`+1`, "offset 0:"},
		{`tru`, "offset 3:"},
		{`nul1`, "offset 3:"},
		{`"abc`, "offset 4:"},
		{"\"a\tb\"", "offset 2:"},
		{`"\x"`, "offset 2:"},
		{`"\u12g4"`, "offset 5:"},
		{`[1] [2]`, "offset 4:"},
		{`{"a":1`, "offset 6:"},
		{`NaN`, "offset 0:"},
		{"\xef\xbb\xbf{}", "offset 0:"},
	}
	for _, tt := range tests {
		_, err := svc.JSONShape(context.Background(), svc.JSONShapeRequest{Value: json.RawMessage(tt.value)})
		if json.Valid([]byte(tt.value)) {
			t.Fatalf("%q is valid JSON", tt.value)
		}
		msg := csvTestFieldError(t, err, "value", "json")
		if !strings.Contains(msg, "invalid JSON at "+tt.offset) {
			t.Errorf("%q: message %q, want %q", tt.value, msg, tt.offset)
		}
	}
}

func TestJSONShapeRequestErrors(t *testing.T) {
	for _, v := range []json.RawMessage{nil, {}, json.RawMessage("  \n")} {
		_, err := svc.JSONShape(context.Background(), svc.JSONShapeRequest{Value: v})
		csvTestFieldError(t, err, "value", "required")
	}
	for _, tt := range []struct {
		depth, paths int
		field, rule  string
	}{
		{0, 500, "maxDepth", "min"}, {13, 500, "maxDepth", "max"},
		{8, 9, "maxPaths", "min"}, {8, 1001, "maxPaths", "max"},
	} {
		_, err := svc.JSONShape(context.Background(), svc.JSONShapeRequest{
			Value: json.RawMessage(`1`), MaxDepth: &tt.depth, MaxPaths: &tt.paths})
		csvTestFieldError(t, err, tt.field, tt.rule)
	}
	// Decoded from a request body: null is a value, absence is not.
	var req svc.JSONShapeRequest
	if err := json.Unmarshal([]byte(`{"value":null,"maxDepth":3}`), &req); err != nil {
		t.Fatal(err)
	}
	if resp, err := svc.JSONShape(context.Background(), req); err != nil || resp.RootType != "null" || resp.MaxDepth != 3 {
		t.Errorf("null value: %v %+v", err, resp)
	}
	req = svc.JSONShapeRequest{}
	if err := json.Unmarshal([]byte(`{"maxPaths":20}`), &req); err != nil {
		t.Fatal(err)
	}
	_, err := svc.JSONShape(context.Background(), req)
	csvTestFieldError(t, err, "value", "required")
}

func TestJSONShapeCanceled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := svc.JSONShape(ctx, svc.JSONShapeRequest{Value: json.RawMessage(`1`)}); svc.KindOf(err) != svc.KindTimeout {
		t.Errorf("err %v", err)
	}
	doc := svctest.GenerateJSON(2<<20, 1)
	_, err := svc.JSONShape(&csvTestCancelLater{Context: context.Background(), after: 1}, svc.JSONShapeRequest{Value: doc})
	if svc.KindOf(err) != svc.KindTimeout || !errors.Is(err, context.Canceled) {
		t.Errorf("err %v", err)
	}
}

func TestJSONShapeGeneratedDocument(t *testing.T) {
	doc := svctest.GenerateJSON(1<<20, 3)
	if !bytes.Equal(doc, svctest.GenerateJSON(1<<20, 3)) || !json.Valid(doc) || len(doc) < 1<<20 {
		t.Fatal("GenerateJSON must be deterministic valid JSON of the requested size")
	}
	resp := jsonShapeTest(t, string(doc), 0, 0)
	if msg := jsonShapeOracleCompare(doc, 8, 500, resp); msg != "" {
		t.Error(msg)
	}
	var paths []string
	for _, p := range resp.Paths {
		paths = append(paths, p.Path)
	}
	for _, want := range []string{"$[].owner.roles[]", `$[]["created at"]`, "$[].matrix[][]", "$[].ratio"} {
		if !slices.Contains(paths, want) {
			t.Errorf("missing path %s in %v", want, paths)
		}
	}
}

// jsonShapeCheckInvariants returns "" when resp is self-consistent.
func jsonShapeCheckInvariants(resp svc.JSONShapeResponse) string {
	if resp.PathCount != len(resp.Paths) || resp.PathCount > resp.MaxPaths || resp.PathCount < 1 {
		return fmt.Sprintf("pathCount %d, %d paths, maxPaths %d", resp.PathCount, len(resp.Paths), resp.MaxPaths)
	}
	if p := resp.Paths[0]; p.Path != "$" || p.Occurrences != 1 || len(p.Types) != 1 || p.Types[0] != resp.RootType {
		return fmt.Sprintf("first path %+v, rootType %s", p, resp.RootType)
	}
	seen := map[string]bool{}
	for _, p := range resp.Paths {
		if seen[p.Path] {
			return "repeated path " + p.Path
		}
		seen[p.Path] = true
		if p.Occurrences < 1 || len(p.Types) == 0 || !sort.StringsAreSorted(p.Types) || len(slices.Compact(slices.Clone(p.Types))) != len(p.Types) {
			return fmt.Sprintf("path %+v", p)
		}
	}
	return ""
}

// The oracle walks json.Decoder tokens (UseNumber) and quotes names with
// json.Encoder: independent of the scanner under test.
var jsonShapeOracleIdent = regexp.MustCompile(`^[A-Za-z_$][A-Za-z0-9_$]*$`)

type jsonShapeOracle struct {
	dec                     *json.Decoder
	maxDepth, maxPaths      int
	order                   []string
	types                   map[string]map[string]bool
	occ                     map[string]int
	text                    int
	depthLimited, truncated bool
	maxSeen                 int
}

func (o *jsonShapeOracle) list(path string) bool {
	if _, ok := o.occ[path]; ok {
		return true
	}
	if len(o.order) >= o.maxPaths || o.text+len(path) > 1<<20 {
		o.truncated = true
		return false
	}
	o.order = append(o.order, path)
	o.occ[path] = 0
	o.types[path] = map[string]bool{}
	o.text += len(path)
	return true
}

func (o *jsonShapeOracle) walk(depth int, path string, listed bool) error {
	tok, err := o.dec.Token()
	if err != nil {
		return err
	}
	o.maxSeen = max(o.maxSeen, depth)
	var typ string
	switch v := tok.(type) {
	case json.Delim:
		typ = map[json.Delim]string{'{': "object", '[': "array"}[v]
	case string:
		typ = "string"
	case json.Number:
		typ = "number"
		if !strings.ContainsAny(string(v), ".eE") {
			typ = "integer"
		}
	case bool:
		typ = "boolean"
	case nil:
		typ = "null"
	}
	if listed {
		o.occ[path]++
		o.types[path][typ] = true
	}
	if typ != "object" && typ != "array" {
		return nil
	}
	for o.dec.More() {
		if listed && depth >= o.maxDepth {
			o.depthLimited = true
		}
		child := path + "[]"
		if typ == "object" {
			key, err := o.dec.Token()
			if err != nil {
				return err
			}
			name := key.(string)
			if jsonShapeOracleIdent.MatchString(name) {
				child = path + "." + name
			} else {
				var b bytes.Buffer
				enc := json.NewEncoder(&b)
				enc.SetEscapeHTML(false)
				if err := enc.Encode(name); err != nil {
					return err
				}
				child = path + "[" + strings.TrimSuffix(b.String(), "\n") + "]"
			}
		}
		childListed := listed && depth < o.maxDepth && o.list(child)
		if err := o.walk(depth+1, child, childListed); err != nil {
			return err
		}
	}
	_, err = o.dec.Token() // the closing delimiter
	return err
}

// jsonShapeOracleCompare returns "" when resp matches the oracle's shape
// of the valid JSON data.
func jsonShapeOracleCompare(data []byte, maxDepth, maxPaths int, resp svc.JSONShapeResponse) string {
	o := &jsonShapeOracle{dec: json.NewDecoder(bytes.NewReader(data)), maxDepth: maxDepth, maxPaths: maxPaths,
		types: map[string]map[string]bool{}, occ: map[string]int{}}
	o.dec.UseNumber()
	o.list("$")
	if err := o.walk(0, "$", true); err != nil {
		return fmt.Sprintf("oracle: %v", err)
	}
	if _, err := o.dec.Token(); err != io.EOF {
		return fmt.Sprintf("oracle: trailing data: %v", err)
	}
	var want []svc.JSONShapePath
	for _, p := range o.order {
		var types []string
		for t := range o.types[p] {
			types = append(types, t)
		}
		sort.Strings(types)
		want = append(want, svc.JSONShapePath{Path: p, Types: types, Occurrences: o.occ[p]})
	}
	if got, w := csvJSONString(resp.Paths), csvJSONString(want); got != w {
		return fmt.Sprintf("paths\n got  %.2000s\n want %.2000s", got, w)
	}
	if resp.DepthLimited != o.depthLimited || resp.PathsTruncated != o.truncated || resp.MaxDepthSeen != o.maxSeen ||
		resp.MaxDepth != maxDepth || resp.MaxPaths != maxPaths {
		return fmt.Sprintf("flags %s, oracle depthLimited %v truncated %v maxSeen %d",
			csvJSONString(resp), o.depthLimited, o.truncated, o.maxSeen)
	}
	return ""
}

func TestJSONShapeProperties(t *testing.T) {
	params := gopter.DefaultTestParameters()
	params.MinSuccessfulTests = 500
	properties := gopter.NewProperties(params)
	properties.Property("shapes are consistent and agree with the token oracle", prop.ForAll(
		func(req svc.JSONShapeRequest) string {
			resp, err := svc.JSONShape(context.Background(), req)
			if err != nil {
				return fmt.Sprintf("valid request rejected: %v", err)
			}
			if msg := jsonShapeCheckInvariants(resp); msg != "" {
				return msg
			}
			depth, paths := svc.JSONShapeDefaultMaxDepth, svc.JSONShapeDefaultMaxPaths
			if req.MaxDepth != nil {
				depth = *req.MaxDepth
			}
			if req.MaxPaths != nil {
				paths = *req.MaxPaths
			}
			return jsonShapeOracleCompare(req.Value, depth, paths, resp)
		},
		svctest.JSONShapeRequest(),
	))
	properties.TestingRun(t)
}

func FuzzJSONShape(f *testing.F) {
	f.Add([]byte(`{"items":[{"id":1,"tags":["a"]},{"id":2.5}],"next":null}`), uint8(7), uint16(490))
	f.Add([]byte(`[[1,2],[3,[4]],[],"x",-0,1e2,1.0]`), uint8(1), uint16(0))
	f.Add([]byte(`{"a":1,"\u0061":"x","b c":{"é":[true,false]},"":null}`), uint8(0), uint16(5))
	f.Add([]byte("{\"\\ud800\":1,\"\xff\":2,\"\\ud83d\\ude00\":3}"), uint8(11), uint16(990))
	f.Add([]byte(`{"a":}`), uint8(7), uint16(490))
	f.Add([]byte(` "\u12g4" `), uint8(7), uint16(490))
	f.Fuzz(func(t *testing.T, data []byte, depth uint8, paths uint16) {
		maxDepth, maxPaths := 1+int(depth)%12, 10+int(paths)%991
		resp, err := svc.JSONShape(context.Background(), svc.JSONShapeRequest{
			Value: json.RawMessage(data), MaxDepth: &maxDepth, MaxPaths: &maxPaths})
		if valid := json.Valid(data); valid != (err == nil) {
			t.Fatalf("json.Valid %v, JSONShape error %v", valid, err)
		}
		if err != nil {
			var e *svc.Error
			if !errors.As(err, &e) || e.Kind != svc.KindInvalid || len(e.Fields) != 1 || e.Fields[0].Field != "value" {
				t.Fatalf("error %v", err)
			}
			return
		}
		if msg := jsonShapeCheckInvariants(resp); msg != "" {
			t.Fatal(msg)
		}
		if msg := jsonShapeOracleCompare(data, maxDepth, maxPaths, resp); msg != "" {
			t.Fatal(msg)
		}
	})
}

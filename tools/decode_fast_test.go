package tools

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/seed1284c1d2/svc"
)

// fastEntries returns every descriptor's entry with its example input.
func fastEntries(t testing.TB) []*builtEntry {
	t.Helper()
	list, err := builtEntries()
	if err != nil {
		t.Fatal(err)
	}
	return list
}

// fastAgree checks the fast path's promises on one document: fastCheck
// and fastCheckDecode accept only what the walker finds nothing wrong
// with, and fastDecode and fastCheckDecode fill the request exactly as
// encoding/json does. It reports whether
// each fast step accepted the document.
func fastAgree(t testing.TB, e *entry, doc []byte) (checked, decoded bool) {
	t.Helper()
	checked = fastCheck(doc, e.shape)
	errs, _, fatal := walkDocument(doc, e.shape, "")
	if checked && (fatal != nil || len(errs) > 0) {
		t.Fatalf("%s: fastCheck accepted %q, the walker reports %v %v", e.key, doc, errs, fatal)
	}
	// The one-pass fastCheckDecode: it accepts only clean documents, and
	// decodes them as encoding/json does.
	fused := reflect.New(e.reqType)
	if fastCheckDecode(doc, e.shape, fused.Elem()) {
		if fatal != nil || len(errs) > 0 {
			t.Fatalf("%s: fastCheckDecode accepted %q, the walker reports %v %v", e.key, doc, errs, fatal)
		}
		want := reflect.New(e.reqType)
		if err := json.Unmarshal(doc, want.Interface()); err != nil || !reflect.DeepEqual(fused.Elem().Interface(), want.Elem().Interface()) {
			t.Fatalf("%s: %q: fastCheckDecode gave %+v, encoding/json %+v (%v)", e.key, doc, fused.Elem().Interface(), want.Elem().Interface(), err)
		}
	} else if checked && e.shape.fastDecodable && fastDecode(doc, e.shape, reflect.New(e.reqType).Elem()) {
		t.Fatalf("%s: %q: fastCheck and fastDecode take it, fastCheckDecode does not", e.key, doc)
	}
	if fatal != nil || slices.ContainsFunc(errs, func(fe svc.FieldError) bool { return fe.Rule != RuleRequired }) {
		return checked, false // prepare never sees such a document
	}
	fast := reflect.New(e.reqType)
	decoded = fastDecode(doc, e.shape, fast.Elem())
	slow := reflect.New(e.reqType)
	err := json.Unmarshal(doc, slow.Interface())
	if decoded && (err != nil || !reflect.DeepEqual(fast.Elem().Interface(), slow.Elem().Interface())) {
		t.Fatalf("%s: %q: fastDecode gave %+v, encoding/json %+v (%v)", e.key, doc, fast.Elem().Interface(), slow.Elem().Interface(), err)
	}
	return checked, decoded
}

// scalarVariants replace a value in the mutated documents.
var scalarVariants = []string{
	`null`, `true`, `false`, `0`, `-0`, `-1`, `1.5`, `1e3`, `1E+2`, `-2.5e-3`, `12345678901234567890`, `123456789012345678`,
	`-12345678901234567`, `0.00000000000000001`, `1e999`, `"x"`, `""`, `"12"`, `" 12"`, `"1e2"`, `"-0.5"`, `"+1"`, `".5"`, `"5."`,
	`"\u0031"`, `"\ud800"`, `"a\"b"`, `"\u2212" `, `"−5"`, `[]`, `{}`, `[1,"a",null]`, `{"a":[1,{"b":null}]}`, `01`, `1.`, `-`,
	`tru`, `nul`, `"unterminated`, `"ctl` + "\x01" + `"`, `"bad\q"`, `"\u12"`, "\"\xff\xfe\"", `2147483648`, `-9223372036854775809`,
	`4294967296`, `long`, `"long"`, `"short"`, `"LONG"`,
}

// docVariants returns documents derived from the JSON value raw: the value
// itself, and for objects each member removed, doubled, renamed, with an
// escaped key, with each member's value replaced by the scalar variants
// and by the variants of its own value (depth permitting); for arrays,
// emptied, the first element mutated, doubled and removed.
func docVariants(raw json.RawMessage, depth int) []string {
	raw = bytes.TrimSpace(raw)
	out := []string{string(raw)}
	if depth == 0 || len(raw) == 0 {
		return out
	}
	switch raw[0] {
	case '{':
		var m map[string]json.RawMessage
		if json.Unmarshal(raw, &m) != nil {
			return out
		}
		keys := sortedKeys(m)
		obj := func(members []string) string { return "{" + strings.Join(members, ",") + "}" }
		member := func(k string, v string) string { b, _ := json.Marshal(k); return string(b) + ":" + v }
		base := make([]string, len(keys))
		for i, k := range keys {
			base[i] = member(k, string(m[k]))
		}
		out = append(out, obj(nil), " \n\t"+strings.Join(strings.Split(obj(base), ","), " ,\r\n ")+"\n ")
		out = append(out, obj(append(slices.Clone(base), `"zz":1`)), obj(append(slices.Clone(base), `"`+strings.ToUpper(keys[0])+`":1`)))
		for i, k := range keys {
			out = append(out, obj(slices.Delete(slices.Clone(base), i, i+1)))
			out = append(out, obj(append(slices.Clone(base), base[i])))
			esc := slices.Clone(base)
			esc[i] = fmt.Sprintf(`"\u%04x%s":%s`, k[0], k[1:], m[k])
			out = append(out, obj(esc))
			for _, v := range scalarVariants {
				alt := slices.Clone(base)
				alt[i] = member(k, v)
				out = append(out, obj(alt))
			}
			for _, v := range docVariants(m[k], depth-1)[1:] {
				alt := slices.Clone(base)
				alt[i] = member(k, v)
				out = append(out, obj(alt))
			}
		}
	case '[':
		var elems []json.RawMessage
		if json.Unmarshal(raw, &elems) != nil || len(elems) == 0 {
			return out
		}
		rest := make([]string, len(elems)-1)
		for i, e := range elems[1:] {
			rest[i] = string(e)
		}
		out = append(out, "[]", "[ ]", "["+strings.Join(rest, ",")+"]", "["+string(elems[0])+","+string(raw[1:]))
		for _, v := range append(slices.Clone(scalarVariants), docVariants(elems[0], depth-1)[1:]...) {
			out = append(out, "["+strings.Join(append([]string{v}, rest...), ",")+"]")
		}
	}
	return out
}

// TestFastPathAgreesWithTheWalker derives thousands of documents, right
// and wrong, from every tool's example input and checks that the fast path
// accepts only clean ones and decodes them exactly as encoding/json.
func TestFastPathAgreesWithTheWalker(t *testing.T) {
	for _, e := range fastEntries(t) {
		t.Run(e.key, func(t *testing.T) {
			if c, d := fastAgree(t, e.entry, e.exampleInput); !c || !d {
				t.Fatalf("the example input %s is not taken by the fast path (check %v, decode %v)", e.exampleInput, c, d)
			}
			docs := docVariants(e.exampleInput, 3)
			docs = append(docs, "", "  ", "null", "[]", `"x"`, "{", "{}", "{} x", "{}{}", string(e.exampleInput)+" ,",
				string(e.exampleInput[:len(e.exampleInput)-1]), "\uFEFF"+string(e.exampleInput), string(e.exampleInput)+"\n\t ")
			var checked, decoded int
			for _, doc := range docs {
				c, d := fastAgree(t, e.entry, []byte(doc))
				if c {
					checked++
				}
				if d {
					decoded++
				}
			}
			t.Logf("%d documents: %d taken by fastCheck, %d by fastDecode", len(docs), checked, decoded)
			if checked < 2 || decoded < 2 {
				t.Errorf("the fast path took too few documents (%d, %d)", checked, decoded)
			}
		})
	}
}

// TestFastDecodeTypes covers the Go types the request types do not all
// use: pointers, nested slices and structs, integers of every size, raw
// JSON, and the types fastDecode leaves to encoding/json.
func TestFastDecodeTypes(t *testing.T) {
	type inner struct {
		A int8    `json:"a"`
		U *uint16 `json:"u,omitempty"`
	}
	type req struct {
		S  string          `json:"s"`
		B  *bool           `json:"b,omitempty"`
		L  []inner         `json:"l"`
		LL [][]int64       `json:"ll,omitempty"`
		R  json.RawMessage `json:"r,omitempty"`
		RP *json.RawMessage
		P  *inner `json:"p,omitempty"`
	}
	sh, err := shapeOf(reflect.TypeFor[req]())
	if err != nil {
		t.Fatal(err)
	}
	if !sh.fastDecodable {
		t.Fatal("req is not fast-decodable")
	}
	e := &entry{meta: meta{key: "test"}, reqType: reflect.TypeFor[req](), shape: sh}
	good := []string{
		`{"s":"a\u00e9\n","b":true,"l":[{"a":-128,"u":65535},{"a":127}],"ll":[[1],[],[-9223372036854775808]],"r":{"x":[1, 2]},"RP":null,"p":{"a":0}}`,
		`{"s":"","b":null,"l":[],"r":null,"RP":[true],"p":null}`,
		`{"s":"` + "\xff" + `","l":[{"a":1,"u":null}],"RP":"x","r":  "y"  }`,
	}
	for _, doc := range good {
		if c, d := fastAgree(t, e, []byte(doc)); !c || !d {
			t.Errorf("%s: check %v, decode %v", doc, c, d)
		}
	}
	for _, doc := range []string{`{"s":"x","l":[{"a":128}]}`, `{"s":"x","l":[{"a":1,"u":-1}]}`, `{"s":"x","l":[{"a":1.0}]}`, `{"s":"x","l":null}`} {
		if c, _ := fastAgree(t, e, []byte(doc)); c {
			t.Errorf("%s: taken by fastCheck", doc)
		}
	}
	for _, doc := range docVariants(json.RawMessage(good[0]), 3) {
		fastAgree(t, e, []byte(doc))
	}

	type textual struct {
		D textDirection `json:"d"`
	}
	type stringOpt struct {
		N int `json:"n,string"`
	}
	type bytesField struct {
		B []byte `json:"b"`
	}
	for _, typ := range []reflect.Type{reflect.TypeFor[textual](), reflect.TypeFor[stringOpt](), reflect.TypeFor[bytesField]()} {
		sh, err := shapeOf(typ)
		if err != nil {
			t.Fatal(err)
		}
		if sh.fastDecodable {
			t.Errorf("%v is fast-decodable", typ)
		}
	}
}

// textDirection decodes itself from text.
type textDirection string

func (d *textDirection) UnmarshalText(b []byte) error {
	*d = textDirection(strings.ToLower(string(b)))
	return nil
}

// FuzzFastPath checks the fast path's promises on arbitrary documents
// against the request types of risk_levels, ohlcv_state and json_shape.
func FuzzFastPath(f *testing.F) {
	entries := fastEntries(f)
	var picked []*builtEntry
	for _, e := range entries {
		switch e.key {
		case "risk-levels", "ohlcv-state", "json-shape", "regex-test":
			picked = append(picked, e)
			f.Add(string(e.exampleInput))
		}
	}
	for _, s := range []string{`{"entry":"3500","direction":"long","slPct":5e-2,"tpPct":"0.04"}`, `{"value":[{"a":"\u0000"}]}`, `{"bars":[]}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, doc string) {
		for _, e := range picked {
			fastAgree(t, e.entry, []byte(doc))
		}
	})
}

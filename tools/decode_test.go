package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/seed1284c1d2/svc"
)

// decodeEntries returns every descriptor's entry with its example input.
func decodeEntries(t testing.TB) []*builtEntry {
	t.Helper()
	list, err := builtEntries()
	if err != nil {
		t.Fatal(err)
	}
	return list
}

// stdSyntaxError is encoding/json's account of a malformed document: the
// message and the offset of the offending byte, as the decoder reports
// them ("unexpected end of input" at the end).
func stdSyntaxError(doc []byte) (string, int64, bool) {
	err := json.NewDecoder(bytes.NewReader(doc)).Decode(new(json.RawMessage))
	var se *json.SyntaxError
	switch {
	case errors.As(err, &se) && !strings.HasPrefix(se.Error(), "unexpected end of JSON input"):
		return se.Error(), max(se.Offset-1, 0), true
	case err != nil:
		return "unexpected end of input", int64(len(doc)), true
	}
	return "", 0, false
}

// fieldsOf returns the field errors of a *svc.Error (one holding err's
// message otherwise).
func fieldsOf(err error) []svc.FieldError {
	if e, ok := errors.AsType[*svc.Error](err); ok && len(e.Fields) > 0 {
		return e.Fields
	}
	return []svc.FieldError{{Message: err.Error()}}
}

// agree checks the decoder against encoding/json, the reference, on one
// document: it reports a document malformed exactly when encoding/json
// does (with encoding/json's wording and position); a document it accepts
// (or whose only errors are missing members) encoding/json also decodes,
// refusing unknown members, into the very same request. It reports
// whether the document was accepted.
func agree(t testing.TB, e *entry, doc []byte) bool {
	t.Helper()
	got := reflect.New(e.reqType)
	errs, undecodable, fatal := decodeDocument(&walkerPool{}, doc, e.shape, got.Elem(), "")
	whole := doc
	if len(bytes.TrimSpace(doc)) == 0 {
		whole = []byte("{}")
	}
	if msg, off, bad := stdSyntaxError(whole); bad {
		if fatal == nil {
			t.Fatalf("%s: %q: encoding/json finds it malformed (%s), the decoder does not", e.key, doc, msg)
		}
		if m := fieldsOf(fatal); len(m) == 1 && strings.HasPrefix(m[0].Message, "malformed JSON") {
			if want := fmt.Sprintf("malformed JSON at %s: %s", position(whole, off), msg); m[0].Message != want {
				t.Fatalf("%s: %q: the decoder says %q, encoding/json %q", e.key, doc, m[0].Message, want)
			}
		}
		return false
	}
	if fatal != nil {
		var top any
		_ = json.Unmarshal(whole, &top)
		if _, ok := top.(map[string]any); ok && !strings.HasPrefix(fieldsOf(fatal)[0].Message, "unexpected data after") {
			t.Fatalf("%s: %q: well-formed object refused as %v", e.key, doc, fatal)
		}
		return false
	}
	if undecodable != nil || slices.ContainsFunc(errs, func(fe svc.FieldError) bool { return fe.Rule != RuleRequired }) {
		return false // never decoded
	}
	want := reflect.New(e.reqType)
	dec := json.NewDecoder(bytes.NewReader(whole))
	dec.DisallowUnknownFields()
	if err := dec.Decode(want.Interface()); err != nil || !reflect.DeepEqual(got.Elem().Interface(), want.Elem().Interface()) {
		t.Fatalf("%s: %q: the decoder gave %+v, encoding/json %+v (%v)", e.key, doc, got.Elem().Interface(), want.Elem().Interface(), err)
	}
	return len(errs) == 0
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

// TestDecodeAgreesWithEncodingJSON derives thousands of documents, right
// and wrong, from every tool's example input and checks the decoder
// against encoding/json on each.
func TestDecodeAgreesWithEncodingJSON(t *testing.T) {
	for _, e := range decodeEntries(t) {
		t.Run(e.key, func(t *testing.T) {
			if !agree(t, e.entry, e.exampleInput) {
				t.Fatalf("the example input %s is refused", e.exampleInput)
			}
			docs := docVariants(e.exampleInput, 3)
			docs = append(docs, "", "  ", "null", "[]", `"x"`, "{", "{}", "{} x", "{}{}", string(e.exampleInput)+" ,",
				string(e.exampleInput[:len(e.exampleInput)-1]), "\uFEFF"+string(e.exampleInput), string(e.exampleInput)+"\n\t ")
			accepted := 0
			for _, doc := range docs {
				if agree(t, e.entry, []byte(doc)) {
					accepted++
				}
			}
			t.Logf("%d documents: %d accepted", len(docs), accepted)
			if accepted < 2 {
				t.Errorf("the decoder accepted too few documents (%d)", accepted)
			}
		})
	}
}

// TestDecodeTypes covers the Go types the request types do not all use:
// pointers, nested slices and structs, integers of every size, raw JSON, a
// string type decoding itself from text; and the types the decoder
// refuses to derive a shape from.
func TestDecodeTypes(t *testing.T) {
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
		P  *inner        `json:"p,omitempty"`
		D  textDirection `json:"d,omitempty"`
	}
	sh, err := shapeOf(reflect.TypeFor[req]())
	if err != nil {
		t.Fatal(err)
	}
	e := &entry{meta: meta{key: "test"}, reqType: reflect.TypeFor[req](), shape: sh}
	good := []string{
		`{"s":"a\u00e9\n","b":true,"l":[{"a":-128,"u":65535},{"a":127}],"ll":[[1],[],[-9223372036854775808]],"r":{"x":[1, 2]},"RP":null,"p":{"a":0},"d":"LONG"}`,
		`{"s":"","b":null,"l":[],"r":null,"RP":[true],"p":null,"d":"\u0053hort"}`,
		`{"s":"` + "\xff" + `","l":[{"a":1,"u":null}],"RP":"x","r":  "y"  }`,
		`{"s":"x","l":[],"r":{"a":1,"a":2},"RP":{"b":1,"b":2}}`,
	}
	for _, doc := range good {
		if !agree(t, e, []byte(doc)) {
			t.Errorf("%s: refused", doc)
		}
	}
	for _, doc := range []string{`{"s":"x","l":[{"a":128}]}`, `{"s":"x","l":[{"a":1,"u":-1}]}`, `{"s":"x","l":[{"a":1.0}]}`, `{"s":"x","l":null}`,
		`{"s":"x","l":[],"s":"y"}`, `{"s":"x","l":[],"S":"y"}`} {
		if agree(t, e, []byte(doc)) {
			t.Errorf("%s: accepted", doc)
		}
	}
	for _, doc := range docVariants(json.RawMessage(good[0]), 3) {
		agree(t, e, []byte(doc))
	}

	type stringOpt struct {
		N int `json:"n,string"`
	}
	type bytesField struct {
		B []byte `json:"b"`
	}
	type selfDecoding struct {
		N json.Number `json:"n"`
		T time.Time   `json:"t"`
	}
	for _, typ := range []reflect.Type{reflect.TypeFor[stringOpt](), reflect.TypeFor[bytesField](), reflect.TypeFor[selfDecoding]()} {
		if _, err := shapeOf(typ); err == nil {
			t.Errorf("%v has a shape", typ)
		}
	}
}

// textDirection decodes itself from text.
type textDirection string

func (d *textDirection) UnmarshalText(b []byte) error {
	*d = textDirection(strings.ToLower(string(b)))
	return nil
}

// FuzzDecode checks the decoder against encoding/json on arbitrary
// documents, with the request types of risk_levels, ohlcv_state,
// json_shape and regex_test.
func FuzzDecode(f *testing.F) {
	var picked []*builtEntry
	for _, e := range decodeEntries(f) {
		switch e.key {
		case "risk-levels", "ohlcv-state", "json-shape", "regex-test":
			picked = append(picked, e)
			f.Add(string(e.exampleInput))
		}
	}
	for _, s := range []string{`{"entry":"3500","direction":"long","slPct":5e-2,"tpPct":"0.04"}`, `{"value":[{"a":"\u0000"}]}`, `{"bars":[]}`, `{{`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, doc string) {
		for _, e := range picked {
			agree(t, e.entry, []byte(doc))
		}
	})
}

// TestDecodeConcurrently decodes different documents on one tool from
// many goroutines at once: each gets its own request or its own error,
// whatever the walkers the tool keeps for reuse held before.
func TestDecodeConcurrently(t *testing.T) {
	c, err := New(Options{})
	if err != nil {
		t.Fatal(err)
	}
	tl, ok := c.ByKey("risk-levels")
	if !ok {
		t.Fatal("no risk-levels tool")
	}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := range 8 {
		wg.Go(func() {
			for i := range 200 {
				entry := fmt.Sprintf("%d.%d", 3000+g, i)
				call, err := tl.DecodeJSON(context.Background(), json.RawMessage(`{"entry":`+entry+`,"direction":"long","slPct":0.05,"tpPct":0.04}`))
				if err != nil {
					errs <- fmt.Errorf("entry %s: %v", entry, err)
					return
				}
				var in struct{ Entry json.Number }
				if err := json.Unmarshal(call.Input(), &in); err != nil || string(in.Entry) != strings.TrimRight(strings.TrimRight(entry, "0"), ".") {
					errs <- fmt.Errorf("entry %s decoded as %s (%v)", entry, call.Input(), err)
					return
				}
				bad := fmt.Sprintf(`{"entry":%d,"direction":"long","slPct":0.05,"tpPct":0.04,"g%d":1}`, i, g)
				_, err = tl.DecodeJSON(context.Background(), json.RawMessage(bad))
				if fe := fieldsOf(err); len(fe) != 1 || fe[0].Field != fmt.Sprintf("g%d", g) || fe[0].Rule != RuleUnknownField {
					errs <- fmt.Errorf("%s: %v", bad, err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

package jsonlex

import (
	"encoding/json"
	"testing"
)

// nesting returns the deepest bracket nesting of valid JSON b (brackets
// inside strings not counted).
func nesting(b []byte) int {
	depth, top, inStr := 0, 0, false
	for i := 0; i < len(b); i++ {
		c := b[i]
		switch {
		case inStr && c == '\\':
			i++
		case c == '"':
			inStr = !inStr
		case !inStr && (c == '{' || c == '['):
			depth++
			top = max(top, depth)
		case !inStr && (c == '}' || c == ']'):
			depth--
		}
	}
	return top
}

// skipAll reports whether b is one value Skip accepts, with only white
// space after it.
func skipAll(b []byte, maxDepth int) bool {
	l := Lexer{Src: b}
	if !l.Skip(0, maxDepth) {
		return false
	}
	l.WS()
	return l.I == len(b)
}

var seeds = []string{
	`{}`, `[]`, `""`, `0`, `-0`, `-0.5e+10`, `1E3`, `true`, `false`, `null`, ` {"a" : [1, 2.5, "x\u00e9\n", {"b": null}] } `,
	`{"a":1,}`, `[1,]`, `01`, `1.`, `.5`, `-`, `+1`, `"\x"`, `"\u12g4"`, "\"a\x01\"", `tru`, `nulls`, `{"a" 1}`, `[1 2]`,
	`{"a":{"b":{"c":[[[[]]]]}}}`, "\"\xff\xfe\"", `"\ud800"`, `1e`, `1e+`, `[-]`, `{"":""}`, `[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]`,
}

// TestSkipAgreesWithEncodingJSON: Skip accepts exactly the documents
// encoding/json finds valid (within its depth bound).
func TestSkipAgreesWithEncodingJSON(t *testing.T) {
	for _, s := range seeds {
		check(t, []byte(s))
	}
	if skipAll([]byte(`[[[1]]]`), 2) {
		t.Error("Skip went deeper than its bound")
	}
	if !skipAll([]byte(`[[[1]]]`), 3) {
		t.Error("Skip refused a document within its bound")
	}
}

func check(t *testing.T, b []byte) {
	t.Helper()
	got, valid := skipAll(b, 64), json.Valid(b)
	if got && !valid {
		t.Fatalf("Skip accepts %q, encoding/json does not", b)
	}
	if !got && valid && nesting(b) <= 64 {
		t.Fatalf("Skip refuses %q, encoding/json accepts it", b)
	}
}

// FuzzSkip compares Skip with json.Valid on arbitrary bytes.
func FuzzSkip(f *testing.F) {
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) { check(t, b) })
}

// TestNumberAndStr checks the tokens on their own: what Number and Str
// consume and what they report.
func TestNumberAndStr(t *testing.T) {
	for _, c := range []struct {
		in   string
		lit  string
		ok   bool
		rest int
	}{{"-12.5e3,", "-12.5e3", true, 1}, {"0x", "0", true, 1}, {"00", "0", true, 1}, {"-", "", false, 1}, {"1.e5", "", false, 4}} {
		l := Lexer{Src: []byte(c.in)}
		lit, ok := l.Number()
		if string(lit) != c.lit || ok != c.ok || (ok && len(c.in)-l.I != c.rest) {
			t.Errorf("Number(%q) = %q %v, %d left", c.in, lit, ok, len(c.in)-l.I)
		}
	}
	for _, c := range []struct {
		in          string
		escaped, ok bool
	}{{`"abc"`, false, true}, {`"a\"b"`, true, true}, {`"\u00e9"`, true, true}, {`"abc`, false, false}, {`x`, false, false}, {"\"\t\"", false, false}} {
		l := Lexer{Src: []byte(c.in)}
		escaped, ok := l.Str()
		if escaped != c.escaped || ok != c.ok || (ok && l.I != len(c.in)) {
			t.Errorf("Str(%q) = %v %v at %d", c.in, escaped, ok, l.I)
		}
	}
}

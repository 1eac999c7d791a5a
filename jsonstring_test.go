package svc

import (
	"bytes"
	"encoding/json"
	"testing"
	"unicode/utf8"
)

// marshalString is s as encoding/json writes it without HTML escaping.
func marshalString(t testing.TB, s string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(s); err != nil {
		t.Fatal(err)
	}
	return string(bytes.TrimSuffix(b.Bytes(), []byte("\n")))
}

func TestAppendJSONStringAsEncodingJSON(t *testing.T) {
	for _, s := range []string{"", "plain", `q"b\`, "\b\f\n\r\t\x00\x1f\x7f", "<&>", "é日本🙂", "\u2028\u2029",
		"bad\xffutf8\xc3", "\xed\xa0", "x\xed\xa0\x80y"[:3]} {
		want := marshalString(t, s)
		if got := string(appendJSONString(nil, s)); got != want {
			t.Errorf("%q: string %s, want %s", s, got, want)
		}
		if got := string(appendJSONString([]byte("p"), []byte(s))); got != "p"+want {
			t.Errorf("%q: bytes %s, want p%s", s, got, want)
		}
	}
}

func TestAppendJSONStringSurrogates(t *testing.T) {
	// U+D800 and U+DFFF in WTF-8, between ordinary text.
	s := "a\xed\xa0\x80b\xed\xbf\xbf"
	if got, want := string(appendJSONString(nil, s)), `"a\ud800b\udfff"`; got != want {
		t.Errorf("%s, want %s", got, want)
	}
}

func FuzzAppendJSONString(f *testing.F) {
	for _, s := range []string{"", "a\"b", "\x00\u2028", "\xed\xa0\x80", "\xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := appendJSONString(nil, s)
		var back string
		if err := json.Unmarshal(got, &back); err != nil {
			t.Fatalf("%q → %s: not a JSON string: %v", s, got, err)
		}
		if utf8.ValidString(s) {
			if back != s {
				t.Fatalf("%q → %s → %q", s, got, back)
			}
			if want := marshalString(t, s); string(got) != want {
				t.Fatalf("%q → %s, encoding/json writes %s", s, got, want)
			}
		}
	})
}

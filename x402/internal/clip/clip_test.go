package clip

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestBytes(t *testing.T) {
	for _, c := range []struct {
		in   string
		n    int
		want string
	}{
		{"", 3, ""},
		{"abc", 3, "abc"},
		{"abcd", 3, "abc…"},
		{"aé", 2, "a…"}, // é is two bytes: not split
		{"日本", 4, "日…"},
		{"日本", 2, "…"},
		{"abc", 0, "…"},
		{"abc", -1, "…"},
	} {
		if got := Bytes(c.in, c.n); got != c.want {
			t.Errorf("Bytes(%q, %d) = %q, want %q", c.in, c.n, got, c.want)
		}
	}
}

// FuzzBytes: the result is valid UTF-8 when the input is, is a prefix of
// it (but for the ellipsis) and respects its bound.
func FuzzBytes(f *testing.F) {
	for _, s := range []string{"", "abc", "héllo wörld", "日本語です", "\xff\xfe"} {
		f.Add(s, 3)
	}
	f.Fuzz(func(t *testing.T, s string, n int) {
		n %= 64
		got := Bytes(s, n)
		body, cut := strings.CutSuffix(got, Ellipsis)
		if !strings.HasPrefix(s, body) || (!cut && got != s) {
			t.Fatalf("Bytes(%q, %d) = %q: not a prefix", s, n, got)
		}
		if utf8.ValidString(s) && !utf8.ValidString(got) {
			t.Fatalf("Bytes(%q, %d) = %q: invalid UTF-8", s, n, got)
		}
		if len(body) > max(n, 0) {
			t.Fatalf("Bytes(%q, %d) = %q: over the bound", s, n, got)
		}
	})
}

package clip

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestRunes(t *testing.T) {
	for _, c := range []struct {
		in   string
		n    int
		want string
	}{
		{"", 3, ""},
		{"abc", 3, "abc"},
		{"abcd", 3, "abc…"},
		{"héllo", 2, "hé…"},
		{"日本語", 3, "日本語"},
		{"日本語です", 3, "日本語…"},
		{"abc", 0, "…"},
	} {
		if got := Runes(c.in, c.n); got != c.want {
			t.Errorf("Runes(%q, %d) = %q, want %q", c.in, c.n, got, c.want)
		}
	}
}

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

// FuzzClip: both results are valid UTF-8 when the input is, are prefixes
// of it (but for the ellipsis) and respect their bounds.
func FuzzClip(f *testing.F) {
	for _, s := range []string{"", "abc", "héllo wörld", "日本語です", "\xff\xfe"} {
		f.Add(s, 3)
	}
	f.Fuzz(func(t *testing.T, s string, n int) {
		n %= 64
		for name, got := range map[string]string{"Runes": Runes(s, max(n, 0)), "Bytes": Bytes(s, n)} {
			body, cut := strings.CutSuffix(got, Ellipsis)
			if !strings.HasPrefix(s, body) || (!cut && got != s) {
				t.Fatalf("%s(%q, %d) = %q: not a prefix", name, s, n, got)
			}
			if utf8.ValidString(s) && !utf8.ValidString(got) {
				t.Fatalf("%s(%q, %d) = %q: invalid UTF-8", name, s, n, got)
			}
		}
		if got := Bytes(s, n); len(strings.TrimSuffix(got, Ellipsis)) > max(n, 0) {
			t.Fatalf("Bytes(%q, %d) = %q: over the bound", s, n, got)
		}
		if got := Runes(s, max(n, 0)); utf8.RuneCountInString(strings.TrimSuffix(got, Ellipsis)) > max(n, 0) {
			t.Fatalf("Runes(%q, %d) = %q: over the bound", s, n, got)
		}
	})
}

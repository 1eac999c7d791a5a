// Package clip shortens text echoed in messages (user input quoted in an
// error, a path in a log line) so that no message repeats much input.
package clip

import "unicode/utf8"

// Ellipsis is appended to text that was shortened.
const Ellipsis = "…"

// Runes returns at most n runes of s, followed by Ellipsis when s was
// longer.
func Runes(s string, n int) string {
	i := 0
	for j := range s {
		if i == n {
			return s[:j] + Ellipsis
		}
		i++
	}
	return s
}

// Bytes returns at most n bytes of s, cut on a rune boundary, followed by
// Ellipsis when s was longer.
func Bytes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := max(n, 0)
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i] + Ellipsis
}

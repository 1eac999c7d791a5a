// Package clip shortens text the x402 packages echo in messages (a
// facilitator's reason, a client's value) so that no message repeats much
// input. The x402 tree imports nothing of svc's outside it: this is its
// own copy of what svc's internal/clip does for the rest of svc.
package clip

import "unicode/utf8"

// Ellipsis is appended to text that was shortened.
const Ellipsis = "…"

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

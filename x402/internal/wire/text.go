package wire

// TruncForMsg returns at most n bytes of s (on a rune boundary), with "…" appended
// when it was cut: user input echoed in messages stays short.
func TruncForMsg(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := n
	for i > 0 && !isRuneStart(s[i]) {
		i--
	}
	return s[:i] + "…"
}

func isRuneStart(b byte) bool { return b&0xC0 != 0x80 }

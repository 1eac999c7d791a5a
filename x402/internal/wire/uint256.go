package wire

import (
	"math/big"
	"strings"
)

// IsASCIIDigits reports whether s is non-empty and made of ASCII digits only.
func IsASCIIDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// maxUint256Digits is the number of decimal digits of 2^256-1.
const maxUint256Digits = 78

// ParseUint256 parses a decimal integer string (ASCII digits only, no sign,
// leading zeros allowed) that fits in 256 bits into a big-endian 32-byte
// word. ok is false for anything else.
func ParseUint256(s string) (w [32]byte, ok bool) {
	if !IsASCIIDigits(s) {
		return w, false
	}
	t := strings.TrimLeft(s, "0")
	if len(t) > maxUint256Digits {
		return w, false
	}
	if len(t) <= 19 {
		var v uint64
		for i := 0; i < len(t); i++ {
			v = v*10 + uint64(t[i]-'0')
		}
		for i := 0; i < 8; i++ {
			w[31-i] = byte(v >> (8 * i))
		}
		return w, true
	}
	var b big.Int
	if _, good := b.SetString(t, 10); !good || b.BitLen() > 256 {
		return w, false
	}
	b.FillBytes(w[:])
	return w, true
}

// CompareUint256 compares two big-endian words.
func CompareUint256(a, b [32]byte) int {
	for i := range a {
		if a[i] != b[i] {
			if a[i] < b[i] {
				return -1
			}
			return 1
		}
	}
	return 0
}

// Uint256FromUint64 returns v as a big-endian word.
func Uint256FromUint64(v uint64) (w [32]byte) {
	for i := 0; i < 8; i++ {
		w[31-i] = byte(v >> (8 * i))
	}
	return w
}

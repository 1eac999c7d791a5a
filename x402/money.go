package x402

import (
	"errors"
	"fmt"
	"math/big"
	"strings"
)

// maxPriceLen bounds the length of a price or atomic amount string, so that
// parsing never works on unbounded input. 78 digits hold any uint256.
const maxPriceLen = 80

// maxDecimals bounds the decimals accepted by PriceToAtomic/AtomicToPrice.
const maxDecimals = 36

// ErrPriceTooFine is wrapped by PriceToAtomic's error when the price has
// more fractional digits than the asset's decimals allow.
var ErrPriceTooFine = errors.New("price finer than the asset's smallest unit")

// PriceToAtomic converts a decimal price ("0.0034", or "$0.0034") to the
// asset's atomic units as a decimal string, exactly: with 6 decimals
// "0.0034" → "3400", "0.005" → "5000", "1.50" → "1500000".
//
// Accepted syntax: an optional leading "$", then digits, optionally a "."
// followed by at least one digit. Signs, exponents, spaces, "_" and any other
// character are refused, as are zero prices and prices with non-zero digits
// beyond the asset's smallest unit (ErrPriceTooFine; trailing zeros are fine:
// "0.0050000" is 5000).
func PriceToAtomic(price string, decimals int) (string, error) {
	if decimals < 0 || decimals > maxDecimals {
		return "", fmt.Errorf("x402: price: decimals %d out of range 0..%d", decimals, maxDecimals)
	}
	s := strings.TrimPrefix(price, "$")
	if s == "" {
		return "", errors.New("x402: price: empty")
	}
	if len(s) > maxPriceLen {
		return "", fmt.Errorf("x402: price: longer than %d characters", maxPriceLen)
	}
	intPart, frac, hasDot := strings.Cut(s, ".")
	if !isASCIIDigits(intPart) || (hasDot && !isASCIIDigits(frac)) {
		return "", fmt.Errorf("x402: price %q: not a plain positive decimal (digits, optionally '.' and digits)", truncForMsg(price, 32))
	}
	frac = strings.TrimRight(frac, "0")
	if len(frac) > decimals {
		return "", fmt.Errorf("x402: price %q: %w (%d decimals)", truncForMsg(price, 32), ErrPriceTooFine, decimals)
	}
	digits := intPart + frac + strings.Repeat("0", decimals-len(frac))
	digits = strings.TrimLeft(digits, "0")
	if digits == "" {
		return "", fmt.Errorf("x402: price %q: must be greater than zero", truncForMsg(price, 32))
	}
	return digits, nil
}

// AtomicToPrice converts an atomic amount ("3400") back to a decimal price
// with the given decimals ("0.0034"), in its shortest exact form (no
// trailing zeros, no trailing "."). It is the inverse of PriceToAtomic for
// display. The amount must be a non-negative decimal integer.
func AtomicToPrice(atomic string, decimals int) (string, error) {
	if decimals < 0 || decimals > maxDecimals {
		return "", fmt.Errorf("x402: amount: decimals %d out of range 0..%d", decimals, maxDecimals)
	}
	if len(atomic) > maxPriceLen || !isASCIIDigits(atomic) {
		return "", fmt.Errorf("x402: amount %q: not a decimal integer", truncForMsg(atomic, 32))
	}
	a := strings.TrimLeft(atomic, "0")
	if len(a) <= decimals {
		a = strings.Repeat("0", decimals-len(a)+1) + a
	}
	intPart, frac := a[:len(a)-decimals], strings.TrimRight(a[len(a)-decimals:], "0")
	if frac == "" {
		return intPart, nil
	}
	return intPart + "." + frac, nil
}

// isASCIIDigits reports whether s is non-empty and made of ASCII digits only.
func isASCIIDigits(s string) bool {
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

// parseUint256 parses a decimal integer string (ASCII digits only, no sign,
// leading zeros allowed) that fits in 256 bits into a big-endian 32-byte
// word. ok is false for anything else.
func parseUint256(s string) (w [32]byte, ok bool) {
	if !isASCIIDigits(s) {
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

// compareUint256 compares two big-endian words.
func compareUint256(a, b [32]byte) int {
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

// uint256FromUint64 returns v as a big-endian word.
func uint256FromUint64(v uint64) (w [32]byte) {
	for i := 0; i < 8; i++ {
		w[31-i] = byte(v >> (8 * i))
	}
	return w
}

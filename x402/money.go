package x402

import (
	"errors"
	"fmt"
	"strings"

	"github.com/seed1284c1d2/svc/x402/internal/clip"
	"github.com/seed1284c1d2/svc/x402/internal/wire"
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
	if !wire.IsASCIIDigits(intPart) || (hasDot && !wire.IsASCIIDigits(frac)) {
		return "", fmt.Errorf("x402: price %q: not a plain positive decimal (digits, optionally '.' and digits)", clip.Bytes(price, 32))
	}
	frac = strings.TrimRight(frac, "0")
	if len(frac) > decimals {
		return "", fmt.Errorf("x402: price %q: %w (%d decimals)", clip.Bytes(price, 32), ErrPriceTooFine, decimals)
	}
	digits := intPart + frac + strings.Repeat("0", decimals-len(frac))
	digits = strings.TrimLeft(digits, "0")
	if digits == "" {
		return "", fmt.Errorf("x402: price %q: must be greater than zero", clip.Bytes(price, 32))
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
	if len(atomic) > maxPriceLen || !wire.IsASCIIDigits(atomic) {
		return "", fmt.Errorf("x402: amount %q: not a decimal integer", clip.Bytes(atomic, 32))
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

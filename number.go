package svc

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strings"

	"github.com/shopspring/decimal"

	"github.com/seed1284c1d2/svc/internal/clip"
)

// Limits on numbers accepted as input. They keep exact arithmetic cheap: a
// hostile "1e999999999" must not turn into a gigabyte-long decimal.
const (
	// maxNumberLiteral is the longest accepted number literal, in bytes.
	maxNumberLiteral = 100
	// maxMagnitudeExp bounds |x| < 10^maxMagnitudeExp.
	maxMagnitudeExp = 30
	// maxFractionDigits bounds the digits after the decimal point.
	maxFractionDigits = 30
	// resultPlaces is where non-terminating results are rounded (half-even).
	resultPlaces = 8
	// exactPlaces is the precision used to detect that a quotient terminates.
	exactPlaces = 48
)

// Number is an exact decimal used for every numeric input and output of the
// tools. It decodes from a JSON number or from a JSON string holding a
// decimal ("3500.5"), rejects NaN and infinities, and encodes as a plain JSON
// number without binary float noise (3498.25, never 3498.2500000000005).
//
// The zero Number is "not set": it encodes as null and fails a required
// rule. Make one with N, NewNumber, ParseNumber or NumberFromFloat.
//
// Every Number within the input bounds of the tools (|x| < 1e30, at most
// 30 decimal places) reads back exactly what it writes. Larger ones still
// encode exactly, as plain numbers that may be longer than the 100 bytes
// ParseNumber accepts (1e100 writes 101 digits).
type Number struct {
	d   decimal.Decimal
	set bool
}

// NewNumber returns a Number holding d.
func NewNumber(d decimal.Decimal) Number { return Number{d: d, set: true} }

// N returns a Number from an int64; handy in examples and tests.
func N(i int64) Number { return NewNumber(decimal.NewFromInt(i)) }

// ParseNumber parses a decimal literal such as "3500", "-0.05" or "1e3".
// NaN, infinities, empty strings and literals longer than 100 bytes are
// rejected.
func ParseNumber(s string) (Number, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return Number{}, fmt.Errorf("empty number")
	}
	if len(s) > maxNumberLiteral {
		return Number{}, fmt.Errorf("number literal longer than %d characters", maxNumberLiteral)
	}
	switch strings.ToLower(strings.TrimLeft(s, "+-")) {
	case "nan", "inf", "infinity":
		return Number{}, fmt.Errorf("%q is not a finite number", s)
	}
	d, err := decimal.NewFromString(s)
	if err != nil {
		return Number{}, fmt.Errorf("%q is not a decimal number", clip.Runes(s, 24))
	}
	return NewNumber(d), nil
}

// MustNumber is ParseNumber that panics on error; for constants in code and
// tests only, never for user input.
func MustNumber(s string) Number {
	n, err := ParseNumber(s)
	if err != nil {
		panic(err)
	}
	return n
}

// NumberFromFloat returns the Number with the shortest decimal form that
// round-trips f (0.1 gives 0.1, not 0.1000000000000000055…). NaN and
// infinities yield an unset Number.
func NumberFromFloat(f float64) Number {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return Number{}
	}
	return NewNumber(decimal.NewFromFloat(f))
}

// IsSet reports whether the Number holds a value.
func (n Number) IsSet() bool { return n.set }

// Decimal returns the value (zero when unset).
func (n Number) Decimal() decimal.Decimal { return n.d }

// Float64 returns the nearest float64 (0 when unset).
func (n Number) Float64() float64 {
	f, _ := n.d.Float64()
	return f
}

// String returns the plain decimal form without exponent or trailing zeros,
// or "null" when unset.
func (n Number) String() string {
	if !n.set {
		return "null"
	}
	return n.d.String()
}

// MarshalJSON encodes the Number as a JSON number literal (null when unset).
func (n Number) MarshalJSON() ([]byte, error) {
	return []byte(n.String()), nil
}

// UnmarshalJSON accepts a JSON number, a JSON string holding a decimal, or
// null (which leaves the Number unset so a required rule can report it).
func (n *Number) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if bytes.Equal(b, []byte("null")) {
		*n = Number{}
		return nil
	}
	s := string(b)
	if len(b) > 0 && b[0] == '"' {
		if err := json.Unmarshal(b, &s); err != nil {
			return fmt.Errorf("number: %w", err)
		}
	} else if len(b) == 0 || !(b[0] == '-' || (b[0] >= '0' && b[0] <= '9')) {
		return fmt.Errorf("expected a number, got %s", clip.Runes(s, 16))
	}
	v, err := ParseNumber(s)
	if err != nil {
		return err
	}
	*n = v
	return nil
}

// checkRange records a rule violation when n is too large or too precise to
// be a sensible price, size or percentage.
func (n Number) checkRange(fe *fieldErrors, field string) bool {
	if !n.set {
		return true
	}
	if !belowPow10(n.d, maxMagnitudeExp) {
		fe.add(field, "max_magnitude", "must be smaller than 1e%d in absolute value", maxMagnitudeExp)
		return false
	}
	if n.d.Exponent() < -maxFractionDigits && !n.d.Equal(n.d.Round(maxFractionDigits)) {
		fe.add(field, "max_precision", "must have at most %d decimal places", maxFractionDigits)
		return false
	}
	return true
}

// belowPow10 reports whether |d| < 10^k, exactly and (for coefficients
// that fit in an int64) without allocating: d = c·10^e is below 10^k when
// c has at most k − e digits.
func belowPow10(d decimal.Decimal, k int32) bool {
	if d.IsZero() {
		return true
	}
	return int64(d.NumDigits())+int64(d.Exponent()) <= int64(k)
}

// percent is 1/100 as an exact decimal: multiply by it instead of dividing
// by 100, which decimal.Div would truncate at its package precision.
var percent = decimal.New(1, -2)

// quo divides a by b. A terminating quotient is returned exactly; any other
// is rounded half-even to 8 decimal places. b must not be zero.
func quo(a, b decimal.Decimal) decimal.Decimal {
	q, r := a.QuoRem(b, exactPlaces)
	if r.IsZero() {
		return q
	}
	return roundHalfEvenInexact(q, a.Sign()*b.Sign(), resultPlaces)
}

// roundHalfEvenInexact rounds a truncated value q (whose true value lies
// strictly beyond q in the direction of sign) half-even to places. Because
// the true value is never exactly on a tie, a truncated tie rounds away.
func roundHalfEvenInexact(q decimal.Decimal, sign int, places int32) decimal.Decimal {
	nudge := decimal.New(int64(sign), -exactPlaces-2)
	return q.Add(nudge).RoundBank(places)
}

// round8 rounds a possibly inexact float-derived or long decimal to the
// standard 8 places, half-even, and drops trailing zeros.
func round8(d decimal.Decimal) decimal.Decimal { return d.RoundBank(resultPlaces) }

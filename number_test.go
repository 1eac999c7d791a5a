package svc

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"testing"

	"github.com/leanovate/gopter"
	"github.com/leanovate/gopter/gen"
	"github.com/leanovate/gopter/prop"
	"github.com/shopspring/decimal"
)

// TestBelowPow10 compares the digit-count test with the exact comparison
// |d| < 10^k it replaces, on coefficients of every size around the
// boundaries (±(10^n − 1), ±10^n, ±(10^n + 1)) and random ones.
func TestBelowPow10(t *testing.T) {
	ref := func(d decimal.Decimal, k int32) bool { return d.Abs().Cmp(decimal.New(1, k)) < 0 }
	p := gopter.DefaultTestParameters()
	p.MinSuccessfulTests = 20000
	props := gopter.NewProperties(p)
	props.Property("belowPow10(d, k) == |d| < 10^k", prop.ForAll(
		func(n int, delta int64, neg bool, exp, k int32, seed uint64) bool {
			c := decimal.New(1, int32(n)).BigInt() // 10^n
			switch {
			case delta == 2: // a random coefficient of up to n+1 digits
				r := rand.New(rand.NewPCG(seed, 1))
				c = decimal.NewFromFloat(r.Float64()).Mul(decimal.New(1, int32(n+1))).Truncate(0).BigInt()
			default:
				c.Add(c, decimal.NewFromInt(delta).BigInt())
			}
			if neg {
				c.Neg(c)
			}
			d := decimal.NewFromBigInt(c, exp)
			return belowPow10(d, k) == ref(d, k)
		},
		gen.IntRange(0, 40), gen.Int64Range(-1, 2), gen.Bool(), gen.Int32Range(-20, 20), gen.Int32Range(-5, 35), gen.UInt64(),
	))
	props.TestingRun(t)
	for _, tc := range []struct {
		s    string
		k    int32
		want bool
	}{{"0", 0, true}, {"0.0000", -3, true}, {"99.99999999", 2, true}, {"100", 2, false}, {"1e30", 30, false},
		{"999999999999999999999999999999", 30, true}, {"-1e30", 30, false}, {"9.9e29", 30, true}} {
		if got := belowPow10(decimal.RequireFromString(tc.s), tc.k); got != tc.want {
			t.Errorf("belowPow10(%s, %d) = %v, want %v", tc.s, tc.k, got, tc.want)
		}
	}
}

// FuzzNumber: no input makes Number.UnmarshalJSON panic or hang; what it
// accepts encodes as a plain JSON number (no exponent, no NaN) that reads
// back to the same value whenever it is within the input bounds, and a
// decimal in a JSON string reads as the bare literal does.
func FuzzNumber(f *testing.F) {
	for _, s := range []string{`3500`, `-0.05`, `"3500.25"`, `1e3`, `1E-30`, `null`, `"NaN"`, `"inf"`, `1e999999999`,
		`0.000000000000000000000000000001`, `"  7 "`, `-0`, `"\u0031"`, `[]`, `"1e30"`, `99999999999999999999999999999`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		var n Number
		if err := n.UnmarshalJSON(in); err != nil {
			return
		}
		out, err := n.MarshalJSON()
		if err != nil {
			t.Fatalf("%q: MarshalJSON: %v", in, err)
		}
		if !n.IsSet() {
			if string(out) != "null" {
				t.Fatalf("%q: unset Number encodes as %s", in, out)
			}
			return
		}
		if bytes.ContainsAny(out, "eE\"") || !json.Valid(out) {
			t.Fatalf("%q: encodes as %.200s, not a plain JSON number", in, out)
		}
		if len(out) > maxNumberLiteral {
			// Too long to read back; only values outside the input
			// bounds may be that long.
			var fe fieldErrors
			if n.checkRange(&fe, "x") {
				t.Fatalf("%q: within the input bounds but encodes in %d bytes", in, len(out))
			}
			return
		}
		var back Number
		if err := back.UnmarshalJSON(out); err != nil || !back.Decimal().Equal(n.Decimal()) {
			t.Fatalf("%q: %s reads back as %v (%v)", in, out, back, err)
		}
		var s string
		if json.Unmarshal(in, &s) == nil { // a string form: the literal inside reads the same
			if p, err := ParseNumber(s); err != nil || !p.Decimal().Equal(n.Decimal()) {
				t.Fatalf("%q: ParseNumber(%q) = %v, %v", in, s, p, err)
			}
		}
	})
}

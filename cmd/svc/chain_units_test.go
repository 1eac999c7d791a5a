package main

import (
	"math/big"
	"testing"
)

func TestDecimalUnits(t *testing.T) {
	for in, want := range map[string]string{"1": "1000000000", "1.5": "1500000000", "0.000000001": "1", "0": "0", " 2 ": "2000000000"} {
		got, err := decimalUnits(in, 9)
		if err != nil || got.String() != want {
			t.Errorf("%q: %v %v, want %s", in, got, err, want)
		}
	}
	if got, err := decimalUnits("", 9); got != nil || err != nil {
		t.Errorf("empty: %v %v", got, err)
	}
	for _, bad := range []string{"-1", "1e9", "0.0000000001", "abc", "1/2"} {
		if _, err := decimalUnits(bad, 9); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

// FuzzDecimalUnits: never a panic; an accepted amount is a non-negative
// integer that the same number of decimals reads back.
func FuzzDecimalUnits(f *testing.F) {
	for _, s := range []string{"1", "0.5", "", "-1", "1e3", "123456789.123456789"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := decimalUnits(s, 9)
		if err != nil || v == nil {
			return
		}
		if v.Sign() < 0 {
			t.Fatalf("%q gave %s", s, v)
		}
		back, err := decimalUnits(new(big.Rat).SetFrac(v, big.NewInt(1_000_000_000)).FloatString(9), 9)
		if err != nil || back.Cmp(v) != 0 {
			t.Fatalf("%q gave %s, read back as %v %v", s, v, back, err)
		}
	})
}

package jsregex

import (
	"errors"
	"slices"
	"testing"

	"github.com/dlclark/regexp2"
)

// TestCompileGroupsAndNames checks the group count and names of a
// translation and that regexp2 accepts its source.
func TestCompileGroupsAndNames(t *testing.T) {
	p, err := Compile(`(?<year>\d{4})-(\d{2})(?:-(?<day>\d{2}))?`, Flags{Global: true})
	if err != nil {
		t.Fatal(err)
	}
	if p.Groups != 3 || !slices.Equal(p.Names, []string{"year", "", "day"}) {
		t.Fatalf("groups %d names %q", p.Groups, p.Names)
	}
	re, err := regexp2.Compile(p.Source, regexp2.ECMAScript)
	if err != nil {
		t.Fatalf("regexp2 rejects %q: %v", p.Source, err)
	}
	_, engine, _ := p.Subject("on 2025-03-31")
	m, err := re.FindRunesMatch(engine)
	if err != nil || m == nil || m.Index != 3 || m.Length != 10 {
		t.Fatalf("match %v, %v", m, err)
	}
}

// TestCompileErrors checks that syntax errors and unsupported constructs
// are PatternErrors with the position of the problem.
func TestCompileErrors(t *testing.T) {
	for _, c := range []struct {
		pattern     string
		flags       Flags
		pos         int
		unsupported bool
	}{
		{`(a`, Flags{}, 2, false},
		{`a{2,1}`, Flags{}, 6, false},
		{`\k<x>(?<y>a)`, Flags{}, 0, false},
		{`\p{Emoji}`, Flags{Unicode: true}, 1, true},
		{`(?i:a)`, Flags{}, 2, false},
	} {
		_, err := Compile(c.pattern, c.flags)
		var pe *PatternError
		if !errors.As(err, &pe) {
			t.Errorf("%q: error %v, want a *PatternError", c.pattern, err)
			continue
		}
		if pe.Unsupported != c.unsupported || pe.Pos != c.pos || pe.Msg == "" {
			t.Errorf("%q: %+v, want position %d, unsupported %v", c.pattern, pe, c.pos, c.unsupported)
		}
	}
}

// TestUnitsRoundTrip checks the UTF-16 view of texts: astral characters
// are pairs, lone surrogates (WTF-8) survive, code points combine pairs.
func TestUnitsRoundTrip(t *testing.T) {
	for _, s := range []string{"", "abc", "😀a", "a\xed\xa0\x80b", "é😀\xed\xbf\xbf"} {
		if got := UnitString(Units(s)); got != s {
			t.Errorf("UnitString(Units(%q)) = %q", s, got)
		}
	}
	u := Units("😀a")
	if len(u) != 3 {
		t.Fatalf("Units(😀a) has %d units", len(u))
	}
	cps, toUnit := CodePoints(u)
	if !slices.Equal(cps, []rune{'😀', 'a'}) || !slices.Equal(toUnit, []int{0, 2, 3}) {
		t.Fatalf("CodePoints = %q %v", cps, toUnit)
	}
}

// FuzzCompile: no pattern makes Compile panic; a refusal is a PatternError
// whose position lies within the pattern, and an accepted pattern's
// translation compiles in regexp2 with the groups it announces.
func FuzzCompile(f *testing.F) {
	for _, s := range []string{`a+`, `(?<n>x)\k<n>`, `[\p{L}--a]`, `(?<=a)b`, `\u{1F600}`, `((a)|b)+`, `(`, `a{2,1}`, `[z-a]`, `\c`, `(?:)*`} {
		f.Add(s, uint8(0))
		f.Add(s, uint8(0x7f))
	}
	f.Fuzz(func(t *testing.T, pattern string, bits uint8) {
		if len(pattern) > 256 {
			return
		}
		flags := Flags{HasIndices: bits&1 != 0, Global: bits&2 != 0, IgnoreCase: bits&4 != 0,
			Multiline: bits&8 != 0, DotAll: bits&16 != 0, Unicode: bits&32 != 0, Sticky: bits&64 != 0}
		p, err := Compile(pattern, flags)
		if err != nil {
			var pe *PatternError
			if !errors.As(err, &pe) {
				t.Fatalf("%q: error %v is not a PatternError", pattern, err)
			}
			if pe.Pos < 0 || pe.Pos > len(Units(pattern)) || pe.Msg == "" {
				t.Fatalf("%q: %+v", pattern, pe)
			}
			return
		}
		re, err := regexp2.Compile(p.Source, regexp2.ECMAScript)
		if err != nil {
			t.Fatalf("%q: regexp2 rejects the translation %q: %v", pattern, p.Source, err)
		}
		if len(p.Names) != p.Groups || len(re.GetGroupNumbers()) < p.Groups+1 {
			t.Fatalf("%q: %d groups, names %q, regexp2 groups %v", pattern, p.Groups, p.Names, re.GetGroupNumbers())
		}
	})
}

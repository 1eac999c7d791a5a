// Package jsregex translates JavaScript regular expressions into patterns
// for github.com/dlclark/regexp2 (ECMAScript mode) that match as V8 does.
//
// It covers the ECMA-262 2024 syntax as Node 20 accepts it, with the
// web-compatibility rules of Annex B without the u flag; \d \w \s, the dot
// and \b as defined by ECMA-262; case-insensitive matching by the
// Canonicalize rules (simple case folding with u, upper-case mapping
// without it, applied to the text by [Program.Subject]); JavaScript's
// left-to-right group numbering, the reset of a quantified group's captures
// at each iteration and the rejection of empty optional iterations;
// lookbehind matched right to left; Unicode property escapes from Go's
// Unicode tables. A construct it cannot reproduce exactly is a
// [PatternError] with Unsupported set, never a different answer.
//
// Texts and patterns are sequences of UTF-16 code units held in runes
// ([Units]); with the u flag they are code points ([CodePoints]).
package jsregex

import "unicode/utf8"

// MidPairLead and MidPairTrail stand for the halves of a surrogate pair
// when a caller checks whether a unicode-mode pattern matches between them
// (V8 tries that position): they are above U+10FFFF, so no class of a
// translation matches them, as no unicode-mode V8 class matches half of a
// pair.
const (
	MidPairLead  = regexMaxRune + 1
	MidPairTrail = regexMaxRune + 2
)

// Program is a translated pattern.
type Program struct {
	// Source is the regexp2 pattern, to compile with regexp2.ECMAScript.
	Source string
	// Groups is the number of capturing groups.
	Groups int
	// Names holds the group names: Names[k-1] is the name of group k, ""
	// for an unnamed group.
	Names []string
	// Flags are the flags the pattern was compiled with.
	Flags Flags
}

// Compile parses a JavaScript pattern (the source between the slashes, a
// Go string whose lone surrogates are in WTF-8) and translates it. A
// pattern JavaScript rejects, or one this package does not translate, is a
// *PatternError. The work is bounded by the size of the pattern and the
// translation limits; the first call with the u or i flag also builds the
// Unicode tables it needs.
func Compile(pattern string, flags Flags) (*Program, error) {
	src := Units(pattern)
	if flags.Unicode {
		src, _ = CodePoints(src)
	}
	parsed, err := regexParse(src, flags)
	if err != nil {
		return nil, err
	}
	word := regexWordSet
	if flags.Unicode && flags.IgnoreCase {
		word = regexWordSet.union(regexSetChars(0x017F, 0x212A))
	}
	source, err := regexTranslate(parsed, flags, word)
	if err != nil {
		return nil, err
	}
	if flags.IgnoreCase {
		regexFolds() // build the fold tables now rather than while matching
	}
	return &Program{Source: source, Groups: parsed.ngroups, Names: parsed.names[1:], Flags: flags}, nil
}

// Subject prepares a text for matching with the program: units are the
// text's UTF-16 code units; engine is what regexp2 must search (code
// points with the u flag, case-folded with the i flag); toUnit maps an
// index of engine (and its end) to a code unit index, nil when they are
// equal.
func (p *Program) Subject(text string) (units, engine []rune, toUnit []int) {
	units = Units(text)
	engine = units
	if p.Flags.Unicode {
		engine, toUnit = CodePoints(units)
	}
	if p.Flags.IgnoreCase {
		fold := regexFolds()[regexBoolIndex(p.Flags.Unicode)]
		mapped := make([]rune, len(engine))
		for i, c := range engine {
			mapped[i] = fold.rep(c)
		}
		engine = mapped
	}
	return units, engine, toUnit
}

// Units decodes s into UTF-16 code units (as rune values). A surrogate
// encoded on its own in 3 bytes (WTF-8) becomes that code unit; any other
// invalid byte becomes U+FFFD.
func Units(s string) []rune {
	units := make([]rune, 0, len(s))
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			units = append(units, rune(c))
			i++
			continue
		}
		if c == 0xED && i+2 < len(s) && s[i+1] >= 0xA0 && s[i+1] <= 0xBF && s[i+2]&0xC0 == 0x80 {
			units = append(units, rune(c&0x0F)<<12|rune(s[i+1]&0x3F)<<6|rune(s[i+2]&0x3F))
			i += 3
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		if r > 0xFFFF {
			r -= 0x10000
			units = append(units, 0xD800+(r>>10), 0xDC00+(r&0x3FF))
			continue
		}
		units = append(units, r)
	}
	return units
}

// CodePoints combines surrogate pairs of units into code points. When
// there are pairs, toUnit maps each code point index (and the end) to its
// code unit index; otherwise it is nil and the indices are equal.
func CodePoints(units []rune) (cps []rune, toUnit []int) {
	pairs := false
	for i := 0; i+1 < len(units); i++ {
		if isLead(units[i]) && isTrail(units[i+1]) {
			pairs = true
			break
		}
	}
	if !pairs {
		return units, nil
	}
	cps = make([]rune, 0, len(units))
	toUnit = make([]int, 0, len(units)+1)
	for i := 0; i < len(units); i++ {
		toUnit = append(toUnit, i)
		if isLead(units[i]) && i+1 < len(units) && isTrail(units[i+1]) {
			cps = append(cps, 0x10000+(units[i]-0xD800)<<10+(units[i+1]-0xDC00))
			i++
			continue
		}
		cps = append(cps, units[i])
	}
	toUnit = append(toUnit, len(units))
	return cps, toUnit
}

func isLead(c rune) bool  { return c >= 0xD800 && c <= 0xDBFF }
func isTrail(c rune) bool { return c >= 0xDC00 && c <= 0xDFFF }

// UnitString encodes code units as a Go string: pairs as UTF-8, lone
// surrogates as WTF-8.
func UnitString(units []rune) string {
	b := make([]byte, 0, len(units))
	for i := 0; i < len(units); i++ {
		c := units[i]
		switch {
		case isLead(c) && i+1 < len(units) && isTrail(units[i+1]):
			b = utf8.AppendRune(b, 0x10000+(c-0xD800)<<10+(units[i+1]-0xDC00))
			i++
		case c >= 0xD800 && c <= 0xDFFF:
			b = append(b, 0xE0|byte(c>>12), 0x80|byte(c>>6)&0x3F, 0x80|byte(c)&0x3F)
		default:
			b = utf8.AppendRune(b, c)
		}
	}
	return string(b)
}

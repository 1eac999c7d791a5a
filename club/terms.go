package club

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/cases"
	"golang.org/x/text/language"
	"golang.org/x/text/unicode/norm"
)

// Terms are the lounge's roles and interests: free-form words that every
// consumer of the listing can show as they are, in HTML, Markdown, JSON or
// a terminal, without escaping. A term is normalized, then checked:
//
//  1. Refused outright: more than 256 bytes as sent, text that is not
//     UTF-8, control characters (Cc), bidirectional controls (U+200E,
//     U+200F, U+061C, U+202A–U+202E, U+2066–U+2069) and '<' or '>'.
//  2. Normalized: Unicode NFC, lower case (Unicode's default case mapping,
//     then NFC again), and every run of white space, '_' and dashes (Pd)
//     becomes one '-', dropped at either end. "  Data_Scientist " and
//     "data – scientist" are both "data-scientist".
//  3. Checked: 1 to MaxTermChars characters; letters (L) and decimal digits
//     (Nd) of any script, combining marks (Mn, Mc) after a letter or digit,
//     at most maxMarkRun in a row, and '-' between them. Invisible
//     characters (default-ignorable code points such as U+3164 HANGUL
//     FILLER, variation selectors) are refused although Unicode files some
//     of them as letters or marks.
//
// So a term never contains markup or punctuation a renderer acts on (no
// '<', '&', '*', '_', '[', '`', '#', '|', '.', ':', '/', quotes or spaces),
// never starts with '-' (a Markdown list item) and cannot reorder the text
// around it. It matches TermPattern.
const (
	// MaxTermChars bounds a normalized role or interest, in characters.
	MaxTermChars = 32
	// MaxInterestItems bounds the items of a check-in's interests array as
	// sent (before duplicates are dropped); MaxInterests bounds what is kept.
	MaxInterestItems = 64
	// TermPattern is a regular expression (ECMA-262 with the u flag, and
	// Go's RE2) that every normalized term matches.
	TermPattern = `^` + termRegexp + `$`
	// maxTermInputBytes bounds a role or interest as sent, before it is
	// normalized, so that no work is spent on a long one.
	maxTermInputBytes = 256
	// maxMarkRun bounds consecutive combining marks (enough for the
	// scripts that stack two or three; no "Zalgo" text).
	maxMarkRun = 3
)

// termRegexp is TermPattern without its anchors.
const termRegexp = `[\p{L}\p{Nd}][\p{L}\p{Mn}\p{Mc}\p{Nd}]*(?:-[\p{L}\p{Nd}][\p{L}\p{Mn}\p{Mc}\p{Nd}]*)*`

// termRules describes the term rules in one sentence, for the manifest
// and error messages.
const termRules = "letters and digits of any script, with combining marks after them, and '-' between words"

// termProblem is a broken term rule: the rule's name and what is wrong.
type termProblem struct {
	rule, reason string
}

// normalizeTerm returns the normalized form of a role or an interest (see
// the term rules above), or the first rule it breaks.
func normalizeTerm(raw string) (string, *termProblem) {
	if len(raw) > maxTermInputBytes {
		return "", &termProblem{RuleMax, fmt.Sprintf("has %d bytes as sent; at most %d", len(raw), maxTermInputBytes)}
	}
	if !utf8.ValidString(raw) {
		return "", &termProblem{RulePrintable, "must be valid UTF-8"}
	}
	for _, r := range raw {
		if p := refusedRune(r); p != nil {
			return "", p
		}
	}
	s := norm.NFC.String(cases.Lower(language.Und).String(norm.NFC.String(raw)))

	var b strings.Builder
	b.Grow(len(s))
	sep := false
	for _, r := range s {
		if unicode.IsSpace(r) || r == '_' || unicode.Is(unicode.Pd, r) {
			sep = true
			continue
		}
		if sep && b.Len() > 0 {
			b.WriteByte('-')
		}
		sep = false
		b.WriteRune(r)
	}
	t := b.String()

	n := utf8.RuneCountInString(t)
	switch {
	case n == 0:
		return "", &termProblem{RuleMin, "must contain a letter or a digit"}
	case n > MaxTermChars:
		return "", &termProblem{RuleMax, fmt.Sprintf("has %d characters once normalized; at most %d", n, MaxTermChars)}
	}
	marks := 0
	start := true // at the start of a word: a mark cannot follow
	for _, r := range t {
		switch {
		case r == '-':
			start, marks = true, 0
		case invisible(r):
			return "", &termProblem{RuleCharset, fmt.Sprintf("must not contain the invisible character U+%04X", r)}
		case unicode.IsLetter(r) || unicode.Is(unicode.Nd, r):
			start, marks = false, 0
		case unicode.In(r, unicode.Mn, unicode.Mc):
			if start {
				return "", &termProblem{RuleCharset, fmt.Sprintf("has the combining mark U+%04X where a letter or digit must come first", r)}
			}
			if marks++; marks > maxMarkRun {
				return "", &termProblem{RuleCharset, fmt.Sprintf("has more than %d combining marks in a row", maxMarkRun)}
			}
		default:
			return "", &termProblem{RuleCharset, fmt.Sprintf("must not contain %s: a term is %s", describeRune(r), termRules)}
		}
	}
	return t, nil
}

// refusedRune names the rule a character breaks wherever it appears in
// free text (role, interests, agentName), or nil.
func refusedRune(r rune) *termProblem {
	switch {
	case unicode.Is(unicode.Cc, r):
		return &termProblem{RuleControl, fmt.Sprintf("must not contain control characters (found U+%04X)", r)}
	case unicode.Is(unicode.Bidi_Control, r):
		return &termProblem{RuleBidi, fmt.Sprintf("must not contain bidirectional controls (found U+%04X), which reorder the text around them", r)}
	case r == '<' || r == '>':
		return &termProblem{RuleNoHTML, "must not contain '<' or '>' (no HTML)"}
	}
	return nil
}

// invisible reports whether r is a default-ignorable code point: drawn as
// nothing by most renderers (format characters, fillers, variation
// selectors), whatever its general category.
func invisible(r rune) bool {
	return unicode.In(r, unicode.Cf, unicode.Other_Default_Ignorable_Code_Point, unicode.Variation_Selector)
}

// describeRune shows a character in a message: quoted when printable,
// with its code point.
func describeRune(r rune) string {
	if unicode.IsPrint(r) {
		return fmt.Sprintf("%q (U+%04X)", r, r)
	}
	return fmt.Sprintf("U+%04X", r)
}

package club

import (
	"bytes"
	"encoding/json"
	"math/rand"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/leanovate/gopter"
	"github.com/leanovate/gopter/gen"
	"github.com/leanovate/gopter/prop"
	"golang.org/x/text/unicode/norm"

	"github.com/seed1284c1d2/svc/internal/nodetest"
)

// termPattern is the published pattern, compiled by Go's RE2.
var termPattern = regexp.MustCompile(TermPattern)

// renderHazards are characters that mean something to an HTML, Markdown
// or terminal renderer, or hide or reorder text; no stored term has one.
const renderHazards = "<>&\"'`*_[](){}#!|~\\/.:;=+ \t\n\r\u00a0\u00ad\u200b\u200c\u200d\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u061c\u3164\ufe0f\ufeff"

// checkTerm fails unless t is a well-formed stored term: it matches the
// published pattern, has 1 to MaxTermChars characters, is in NFC and lower
// case, holds no render hazard, no invisible character and no run of more
// than maxMarkRun combining marks, and normalizes to itself.
func checkTerm(t string) string {
	n := utf8.RuneCountInString(t)
	switch {
	case !termPattern.MatchString(t):
		return "does not match TermPattern"
	case n < 1 || n > MaxTermChars:
		return "has a length out of bounds"
	case !norm.NFC.IsNormalString(t):
		return "is not NFC"
	case strings.ContainsAny(t, renderHazards):
		return "holds a render hazard"
	}
	marks := 0
	for _, r := range t {
		if invisible(r) {
			return "holds an invisible character"
		}
		if unicode.In(r, unicode.Mn, unicode.Mc) {
			if marks++; marks > maxMarkRun {
				return "stacks too many marks"
			}
		} else {
			marks = 0
		}
	}
	if again, p := normalizeTerm(t); p != nil || again != t {
		return "does not normalize to itself"
	}
	return ""
}

// termRune generates characters a term may or may not hold: letters of
// several scripts in both cases, digits, combining marks, separators and
// every kind of hazard.
func termRune() gopter.Gen {
	return gen.Weighted([]gen.WeightedGen{
		{Weight: 8, Gen: gen.RuneRange('a', 'z')},
		{Weight: 4, Gen: gen.RuneRange('A', 'Z')},
		{Weight: 2, Gen: gen.RuneRange('0', '9')},
		{Weight: 2, Gen: gen.RuneRange('\u0391', '\u03c9')}, // Greek, both cases
		{Weight: 1, Gen: gen.RuneRange('\u0410', '\u044f')}, // Cyrillic, both cases
		{Weight: 1, Gen: gen.RuneRange('\u30a1', '\u30f6')}, // Katakana
		{Weight: 1, Gen: gen.RuneRange('\u0915', '\u0939')}, // Devanagari consonants
		{Weight: 1, Gen: gen.RuneRange('\u0660', '\u0669')}, // Arabic-Indic digits
		{Weight: 2, Gen: gen.RuneRange('\u0300', '\u036f')}, // combining marks
		{Weight: 1, Gen: gen.OneConstOf('\u093f', '\u094d', '\u0e31', '\u0e48')},
		{Weight: 3, Gen: gen.OneConstOf(' ', '_', '-', '\u2013', '\u2014', '\u3000', '\u00a0')},
		{Weight: 1, Gen: gen.OneConstOf('İ', 'ß', 'Σ', 'ǅ', 'ﬁ', 'Å', 'Ω', 'K')},
		{Weight: 2, Gen: gen.RuneRange(' ', '~')}, // ASCII punctuation among others
		{Weight: 1, Gen: gen.OneConstOf('\x00', '\t', '\n', '\x7f', '\u0085', '\u202e', '\u2066', '\u200e', '\u061c',
			'\u200b', '\u200d', '\u00ad', '\u3164', '\ufe0f', '\ufeff', '\U000e0041', '\U0001f600', '\ufffd')},
	})
}

// termString generates strings of termRune, short and long.
func termString() gopter.Gen {
	return gen.SliceOf(termRune()).Map(func(rs []rune) string { return string(rs) })
}

// asciiWords generates 1 to 4 words of ASCII letters and digits.
func asciiWords() gopter.Gen {
	word := gen.SliceOfN(6, gen.Weighted([]gen.WeightedGen{
		{Weight: 5, Gen: gen.RuneRange('a', 'z')},
		{Weight: 3, Gen: gen.RuneRange('A', 'Z')},
		{Weight: 2, Gen: gen.RuneRange('0', '9')},
	})).Map(func(rs []rune) string { return string(rs) })
	return gen.SliceOfN(4, word).SuchThat(func(ws []string) bool { return len(ws) > 0 })
}

func TestTermProperties(t *testing.T) {
	params := gopter.DefaultTestParameters()
	params.MinSuccessfulTests = 2000
	params.MaxSize = 48
	props := gopter.NewProperties(params)

	props.Property("an accepted term is well formed and stable", prop.ForAll(func(s string) string {
		term, p := normalizeTerm(s)
		if p != nil {
			if term != "" || p.rule == "" || p.reason == "" {
				return "a refusal carries a term or lacks its rule"
			}
			return ""
		}
		return checkTerm(term)
	}, termString()))

	props.Property("letters of any script between separators are accepted", prop.ForAll(func(rs []rune) bool {
		s := string(rs)
		words := strings.FieldsFunc(s, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
		length := len(words) - 1
		for _, w := range words {
			length += utf8.RuneCountInString(w)
		}
		term, p := normalizeTerm(s)
		switch {
		case len(words) == 0:
			return p != nil && p.rule == RuleMin
		case length > MaxTermChars:
			return p != nil && p.rule == RuleMax
		}
		return p == nil && checkTerm(term) == "" && utf8.RuneCountInString(term) == length
	}, gen.SliceOf(gen.Weighted([]gen.WeightedGen{
		{Weight: 6, Gen: gen.RuneRange('a', 'z')},
		{Weight: 3, Gen: gen.RuneRange('A', 'Z')},
		{Weight: 1, Gen: gen.RuneRange('\u0391', '\u03a1')}, // Greek capitals (U+03A2 is unassigned)
		{Weight: 1, Gen: gen.RuneRange('\u03a3', '\u03c9')},
		{Weight: 2, Gen: gen.RuneRange('\u3041', '\u3096')}, // Hiragana
		{Weight: 1, Gen: gen.RuneRange('0', '9')},
		{Weight: 3, Gen: gen.OneConstOf(' ', '_', '-', '\u2013', '\u3000')},
	}))))

	props.Property("control, bidi, '<' and '>' are always refused", prop.ForAll(func(s string) bool {
		_, p := normalizeTerm(s)
		hazard := strings.ContainsFunc(s, func(r rune) bool {
			return unicode.Is(unicode.Cc, r) || unicode.Is(unicode.Bidi_Control, r) || r == '<' || r == '>'
		})
		return !hazard || p != nil
	}, termString()))

	props.Property("control, bidi and '<' anywhere are refused by name", prop.ForAll(func(words []string, at int, bad rune) bool {
		s := strings.Join(words, " ")
		i := at % (len(s) + 1)
		_, p := normalizeTerm(s[:i] + string(bad) + s[i:])
		want := map[rune]string{'\x00': RuleControl, '\n': RuleControl, '\u202e': RuleBidi, '\u2067': RuleBidi, '<': RuleNoHTML, '>': RuleNoHTML}[bad]
		return p != nil && p.rule == want
	}, asciiWords(), gen.IntRange(0, 64), gen.OneConstOf('\x00', '\n', '\u202e', '\u2067', '<', '>')))

	props.Property("case and separators do not matter", prop.ForAll(func(words []string, seps []string) bool {
		joined := strings.Join(words, "-")
		want, p := normalizeTerm(joined)
		if utf8.RuneCountInString(joined) > MaxTermChars {
			return p != nil && p.rule == RuleMax
		}
		if p != nil || want != strings.ToLower(joined) {
			return false
		}
		var b strings.Builder
		b.WriteString(seps[0])
		for i, w := range words {
			if i > 0 {
				b.WriteString(seps[i%len(seps)])
			}
			b.WriteString(strings.ToUpper(w))
		}
		b.WriteString(seps[len(seps)-1])
		got, p := normalizeTerm(b.String())
		return p == nil && got == want
	}, asciiWords(), gen.SliceOfN(3, gen.OneConstOf(" ", "_", "  ", " - ", "\u2013", "\u3000", "__", "\u00a0")).SuchThat(func(s []string) bool { return len(s) > 0 })))

	props.Property("duplicates by normal form: interests keep the first of each", prop.ForAll(func(words []string) bool {
		c := &Club{}
		var fe fieldErrors
		in := append(append([]string{}, words...), strings.ToUpper(strings.Join(words, " ")), strings.Join(words, "_"))
		e := c.validateCheckIn(&fe, CheckInRequest{Wallet: "0x" + strings.Repeat("ab", 20), Interests: in}, nil)
		if len(fe) > 0 {
			return utf8.RuneCountInString(strings.Join(words, "-")) > MaxTermChars || len(words) > MaxInterests
		}
		seen := map[string]bool{}
		for _, term := range e.Interests {
			if seen[term] || checkTerm(term) != "" {
				return false
			}
			seen[term] = true
		}
		want, _ := normalizeTerm(strings.Join(words, " "))
		return seen[want] && seen[strings.ToLower(words[0])]
	}, asciiWords()))

	props.TestingRun(t)
}

// TestTermExamples pins the normalization of a few terms a person would
// write.
func TestTermExamples(t *testing.T) {
	for in, want := range map[string]string{
		"developer": "developer", "  Data Scientist ": "data-scientist", "on_chain": "on-chain",
		"MARKET – MAKER": "market-maker", "x402": "x402", "Ｘ４０２": "ｘ４０２", "Σοφία": "σοφία",
		"e\u0301te\u0301": "été", "データ": "データ", "İstanbul": "i̇stanbul", "-lead-": "lead",
		"क्षि": "क्षि", "Straße": "straße",
	} {
		got, p := normalizeTerm(in)
		if p != nil || got != want {
			t.Errorf("normalizeTerm(%q) = %q, %+v; want %q", in, got, p, want)
		}
	}
	for in, rule := range map[string]string{
		"": RuleMin, " - ": RuleMin, "c++": RuleCharset, "node.js": RuleCharset, "a/b": RuleCharset,
		"#tag": RuleCharset, "**bold**": RuleCharset, "a&b": RuleCharset, "🙂": RuleCharset,
		"a\u0301\u0301\u0301\u0301\u0301": RuleCharset, "\u3164": RuleCharset, "ab\u00ad": RuleCharset,
		"a\u202eb": RuleBidi, "a\tb": RuleControl, "<i>": RuleNoHTML, "\xff": RulePrintable,
		strings.Repeat("ab", MaxTermChars): RuleMax,
	} {
		if got, p := normalizeTerm(in); p == nil || p.rule != rule {
			t.Errorf("normalizeTerm(%q) = %q, %+v; want rule %s", in, got, p, rule)
		}
	}
}

// FuzzNormalizeTerm: any input is either refused with a rule or becomes a
// well-formed, stable term; nothing panics.
func FuzzNormalizeTerm(f *testing.F) {
	for _, s := range []string{"developer", " Data Scientist ", "on_chain", "Σοφία", "e\u0301", "a\u202eb", "<b>", "\u3164",
		"c++", "İ", "a\u0301\u0301\u0301\u0301", "\xff", "--", strings.Repeat("z", MaxTermChars+1)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		term, p := normalizeTerm(s)
		if p != nil {
			switch p.rule {
			case RulePrintable, RuleControl, RuleBidi, RuleNoHTML, RuleMin, RuleMax, RuleCharset:
			default:
				t.Fatalf("normalizeTerm(%q): unknown rule %q", s, p.rule)
			}
			if term != "" || p.reason == "" {
				t.Fatalf("normalizeTerm(%q) = %q, %+v", s, term, p)
			}
			return
		}
		if why := checkTerm(term); why != "" {
			t.Fatalf("normalizeTerm(%q) = %q, which %s", s, term, why)
		}
	})
}

// BenchmarkNormalizeTerm measures the normalization of typical roles and
// interests (ASCII, spaced and cased, non-Latin).
func BenchmarkNormalizeTerm(b *testing.B) {
	for _, in := range []string{"developer", "  Data Scientist ", "Σοφία", "データ-分析"} {
		b.Run(in, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, p := normalizeTerm(in); p != nil {
					b.Fatal(p.reason)
				}
			}
		})
	}
}

// TestTermPatternInJavaScript: the published pattern means the same in
// JavaScript (ECMA-262 with the u flag, as JSON Schema validators compile
// it) as in Go: every stored term matches it in Node, and strings that are
// not terms do not.
func TestTermPatternInJavaScript(t *testing.T) {
	if testing.Short() {
		t.Skip("runs node: skipped under -short")
	}
	node := nodetest.Node(t, 18)
	terms := []string{"developer", "data-scientist", "σοφία", "データ", "été", "i̇stanbul", "क्षि", "x402", "٣٤"}
	params := gopter.DefaultGenParameters().WithSize(24)
	params.Rng = rand.New(rand.NewSource(1))
	strs := termString()
	for len(terms) < 400 {
		v, ok := strs(params).Retrieve()
		if !ok {
			continue
		}
		if term, p := normalizeTerm(v.(string)); p == nil {
			terms = append(terms, term)
		}
	}
	notTerms := []string{"", "-a", "a-", "a--b", "a b", "<b>", "a.b", "a_b", "\u0301a", "A*", "[x](y)", "🙂"}
	samples := append(append([]string{}, terms...), notTerms...)
	in, err := json.Marshal(map[string]any{"pattern": TermPattern, "samples": samples})
	if err != nil {
		t.Fatal(err)
	}
	script := `let d='';process.stdin.on('data',c=>d+=c).on('end',()=>{const {pattern,samples}=JSON.parse(d);const re=new RegExp(pattern,'u');process.stdout.write(JSON.stringify(samples.map(s=>re.test(s))))})`
	cmd := exec.Command(node, "-e", script)
	cmd.Stdin = bytes.NewReader(in)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node: %v", err)
	}
	var js []bool
	if err := json.Unmarshal(out, &js); err != nil || len(js) != len(samples) {
		t.Fatalf("node answered %s (%v)", out, err)
	}
	for i, s := range samples {
		want := i < len(terms)
		if js[i] != want || termPattern.MatchString(s) != want {
			t.Errorf("%q: JavaScript %v, Go %v, want %v", s, js[i], termPattern.MatchString(s), want)
		}
	}
}

package discovery

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// Text analysis of the finder: tokenisation, stop words, Porter stemming
// and the restricted Damerau-Levenshtein distance used for typo tolerance.

const (
	// findMaxQueryBytes bounds the query text analysed; the HTTP layer
	// already limits q to 500 characters (at most 2000 bytes of UTF-8).
	findMaxQueryBytes = 2000
	// findMaxTokens bounds the tokens of a query (matched tokens are kept
	// in a 64-bit mask).
	findMaxTokens = 64
	// findMaxWordRunes drops longer words (hashes, base64 blobs) that are
	// not recognised as an address or a JWT.
	findMaxWordRunes = 40
	// findMaxWordBytes bounds the ASCII words the typo search handles.
	findMaxWordBytes = findMaxWordRunes
)

// findToken is one token of an analysed text: the lower-cased surface
// form as written (or the word a recognised literal stands for) and its
// stem.
type findToken struct {
	surface string
	stem    string
}

// findTokenize splits s into lower-case tokens: runs of Unicode letters and
// digits, split further at camelCase humps ("slPct" → sl, pct; "JSONShape"
// → json, shape; a hump is a split only when both sides have two letters
// or more, so "PnL" stays pnl) and at letter/digit boundaries ("eip55" →
// eip, 55; "rfc3339" → rfc, 3339), except that one letter followed by
// digits stays whole ("M15", "H1": chart timeframes). Anything else
// (punctuation, "_", "-", "&", spaces) separates tokens.
//
// Two literals are recognised before splitting: a word "0x" followed by
// four or more hex digits becomes the tokens "0x" and "address", and a
// word starting with "eyJ" (base64url of `{"`, the start of every JWT
// segment) of ten characters or more becomes "jwt". Other words longer
// than findMaxWordRunes runes are dropped.
//
// With limit > 0 (queries) at most the first findMaxQueryBytes bytes of s
// are read and at most limit tokens are returned; limit ≤ 0 (documents) reads
// everything.
func findTokenize(s string, limit int) []string {
	if limit <= 0 {
		limit = int(^uint(0) >> 1)
	} else if len(s) > findMaxQueryBytes {
		cut := findMaxQueryBytes
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut]
	}
	out := make([]string, 0, 8)
	var runes []rune
	i := 0
	for i < len(s) && len(out) < limit {
		r, size := utf8.DecodeRuneInString(s[i:])
		if !findIsWordRune(r) {
			i += size
			continue
		}
		start := i
		for i < len(s) {
			r, size = utf8.DecodeRuneInString(s[i:])
			if !findIsWordRune(r) {
				break
			}
			i += size
		}
		word := s[start:i]
		switch {
		case findIsHexAddress(word):
			out = append(out, "0x", "address")
		case len(word) >= 10 && strings.HasPrefix(word, "eyJ"):
			out = append(out, "jwt")
		case utf8.RuneCountInString(word) > findMaxWordRunes:
			// a hash, a signature, a blob: not vocabulary
		default:
			runes = append(runes[:0], []rune(word)...)
			out = findSplitWord(out, runes)
		}
	}
	if len(out) > limit {
		out = out[:limit]
	}
	return out
}

func findIsWordRune(r rune) bool {
	return unicode.IsLetter(r) || unicode.IsDigit(r)
}

// findIsHexAddress reports whether w is "0x" followed by four or more hex
// digits: an EVM address or a prefix of one.
func findIsHexAddress(w string) bool {
	if len(w) < 6 || w[0] != '0' || (w[1] != 'x' && w[1] != 'X') {
		return false
	}
	for i := 2; i < len(w); i++ {
		c := w[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}

// findSplitWord appends the lower-cased pieces of one word to out.
func findSplitWord(out []string, w []rune) []string {
	if len(w) == 2 && w[0] == '0' && (w[1] == 'x' || w[1] == 'X') {
		return append(out, "0x")
	}
	// One letter then digits: a timeframe such as M5 or H1.
	if len(w) >= 2 && len(w) <= 4 && unicode.IsLetter(w[0]) && findAllDigits(w[1:]) {
		return append(out, strings.ToLower(string(w)))
	}
	start := 0
	for i := 1; i < len(w); i++ {
		prev, cur := w[i-1], w[i]
		split := false
		switch {
		case unicode.IsDigit(prev) != unicode.IsDigit(cur):
			split = true
		case unicode.IsLower(prev) && unicode.IsUpper(cur):
			split = findLettersAround(w, start, i)
		case unicode.IsUpper(prev) && unicode.IsUpper(cur) && i+1 < len(w) && unicode.IsLower(w[i+1]):
			split = findLettersAround(w, start, i)
		}
		if split {
			out = append(out, strings.ToLower(string(w[start:i])))
			start = i
		}
	}
	return append(out, strings.ToLower(string(w[start:])))
}

func findAllDigits(rs []rune) bool {
	for _, r := range rs {
		if !unicode.IsDigit(r) {
			return false
		}
	}
	return true
}

// findLettersAround reports whether a camelCase split at i leaves at
// least two letters on each side (the right side runs to the next hump or
// digit).
func findLettersAround(w []rune, start, i int) bool {
	if i-start < 2 {
		return false
	}
	n := 1
	for j := i + 1; j < len(w) && unicode.IsLetter(w[j]) && !unicode.IsUpper(w[j]); j++ {
		n++
	}
	if n >= 2 {
		return true
	}
	// An acronym run ("PnLX") counts up to the next lower-case letter.
	for j := i + 1; j < len(w) && unicode.IsUpper(w[j]); j++ {
		n++
	}
	return n >= 2
}

// findIsStopWord reports whether a lower-case token carries no topic:
// English function words and the request verbs every query uses ("show
// me", "I need", "please get").
func findIsStopWord(t string) bool {
	switch t {
	case "a", "about", "above", "after", "again", "all", "also", "am", "an", "and", "any", "are", "as", "at",
		"be", "been", "before", "being", "both", "but", "by",
		"can", "could", "did", "do", "does", "doing", "done", "each", "else", "enough", "even", "ever", "every",
		"few", "find", "for", "from", "get", "gets", "give", "go", "going", "got",
		"had", "has", "have", "having", "he", "help", "her", "here", "him", "his", "how", "i", "if", "in", "into", "is", "it", "its", "itself",
		"just", "know", "let", "like", "look", "looks", "make", "many", "me", "mine", "more", "most", "much", "must", "my", "myself",
		"need", "needs", "no", "nor", "not", "now", "of", "off", "ok", "on", "once", "one", "only", "or", "other", "our", "ours", "out", "own",
		"please", "pls", "quite", "really", "right", "same", "she", "should", "show", "so", "some", "such", "sure",
		"tell", "than", "that", "the", "their", "them", "then", "there", "these", "they", "this", "those", "through", "to", "too",
		"us", "use", "using", "very", "via", "want", "was", "way", "we", "well", "were", "what", "whats", "when", "where", "whether", "which", "while", "who", "whom", "whose", "why",
		"will", "with", "would", "yet", "you", "your", "yours":
		return true
	}
	return false
}

// findStem returns the Porter stem of a lower-case token. Tokens that are
// not plain ASCII letters (digits, accents, other scripts) and tokens of
// two letters or fewer are returned unchanged.
func findStem(t string) string {
	if len(t) <= 2 {
		return t
	}
	for i := 0; i < len(t); i++ {
		if t[i] < 'a' || t[i] > 'z' {
			return t
		}
	}
	z := porter{b: []byte(t), k: len(t) - 1}
	z.step1ab()
	if z.k > 0 {
		z.step1c()
		z.step2()
		z.step3()
		z.step4()
		z.step5()
	}
	return string(z.b[:z.k+1])
}

// porter is the state of the Porter (1980) stemming algorithm, with the
// two later revisions of its reference implementation (bli → ble, logi →
// log). b[0..k] is the word; j marks the end of the stem during a step.
type porter struct {
	b    []byte
	k, j int
}

// cons reports whether b[i] is a consonant: not a vowel, and y only after
// a vowel or at the start.
func (z *porter) cons(i int) bool {
	switch z.b[i] {
	case 'a', 'e', 'i', 'o', 'u':
		return false
	case 'y':
		return i == 0 || !z.cons(i-1)
	}
	return true
}

// m is the measure of b[0..j]: the number of vowel-consonant sequences in
// [C](VC)^m[V].
func (z *porter) m() int {
	n, i := 0, 0
	for ; i <= z.j && z.cons(i); i++ {
	}
	for i <= z.j {
		for ; i <= z.j && !z.cons(i); i++ {
		}
		if i > z.j {
			return n
		}
		for ; i <= z.j && z.cons(i); i++ {
		}
		n++
	}
	return n
}

func (z *porter) vowelInStem() bool {
	for i := 0; i <= z.j; i++ {
		if !z.cons(i) {
			return true
		}
	}
	return false
}

// doublec reports whether b[i-1..i] is a double consonant.
func (z *porter) doublec(i int) bool {
	return i >= 1 && z.b[i] == z.b[i-1] && z.cons(i)
}

// cvc reports whether b[i-2..i] is consonant-vowel-consonant with the last
// consonant not w, x or y (hop, not how).
func (z *porter) cvc(i int) bool {
	if i < 2 || !z.cons(i) || z.cons(i-1) || !z.cons(i-2) {
		return false
	}
	switch z.b[i] {
	case 'w', 'x', 'y':
		return false
	}
	return true
}

// ends reports whether b[0..k] ends with s and, if so, sets j before it.
func (z *porter) ends(s string) bool {
	l := len(s)
	if l > z.k+1 || string(z.b[z.k-l+1:z.k+1]) != s {
		return false
	}
	z.j = z.k - l
	return true
}

// setto replaces b[j+1..k] with s.
func (z *porter) setto(s string) {
	z.b = append(z.b[:z.j+1], s...)
	z.k = z.j + len(s)
}

// r replaces the suffix with s when the stem's measure is positive.
func (z *porter) r(s string) {
	if z.m() > 0 {
		z.setto(s)
	}
}

// step1ab removes plurals and -ed or -ing.
func (z *porter) step1ab() {
	if z.b[z.k] == 's' {
		switch {
		case z.ends("sses"):
			z.k -= 2
		case z.ends("ies"):
			z.setto("i")
		case z.k >= 1 && z.b[z.k-1] != 's':
			z.k--
		}
	}
	if z.ends("eed") {
		if z.m() > 0 {
			z.k--
		}
		return
	}
	if (z.ends("ed") || z.ends("ing")) && z.vowelInStem() {
		z.k = z.j
		switch {
		case z.ends("at"):
			z.setto("ate")
		case z.ends("bl"):
			z.setto("ble")
		case z.ends("iz"):
			z.setto("ize")
		case z.doublec(z.k):
			switch z.b[z.k] {
			case 'l', 's', 'z':
			default:
				z.k--
			}
		default:
			z.j = z.k
			if z.m() == 1 && z.cvc(z.k) {
				z.setto("e")
			}
		}
	}
}

// step1c turns a terminal y into i when there is another vowel in the stem.
func (z *porter) step1c() {
	if z.ends("y") && z.vowelInStem() {
		z.b[z.k] = 'i'
	}
}

// porterRule is one suffix replacement of steps 2 and 3.
type porterRule struct{ suffix, repl string }

// apply replaces the first suffix of rules that b ends with (when the
// measure allows) and stops at the first suffix found.
func (z *porter) apply(rules []porterRule) {
	for _, r := range rules {
		if z.ends(r.suffix) {
			z.r(r.repl)
			return
		}
	}
}

// step2 maps double suffixes to single ones (-ization → -ize).
func (z *porter) step2() {
	if z.k < 1 {
		return
	}
	switch z.b[z.k-1] {
	case 'a':
		z.apply([]porterRule{{"ational", "ate"}, {"tional", "tion"}})
	case 'c':
		z.apply([]porterRule{{"enci", "ence"}, {"anci", "ance"}})
	case 'e':
		z.apply([]porterRule{{"izer", "ize"}})
	case 'l':
		z.apply([]porterRule{{"bli", "ble"}, {"alli", "al"}, {"entli", "ent"}, {"eli", "e"}, {"ousli", "ous"}})
	case 'o':
		z.apply([]porterRule{{"ization", "ize"}, {"ation", "ate"}, {"ator", "ate"}})
	case 's':
		z.apply([]porterRule{{"alism", "al"}, {"iveness", "ive"}, {"fulness", "ful"}, {"ousness", "ous"}})
	case 't':
		z.apply([]porterRule{{"aliti", "al"}, {"iviti", "ive"}, {"biliti", "ble"}})
	case 'g':
		z.apply([]porterRule{{"logi", "log"}})
	}
}

// step3 deals with -ic-, -full, -ness and the like.
func (z *porter) step3() {
	switch z.b[z.k] {
	case 'e':
		z.apply([]porterRule{{"icate", "ic"}, {"ative", ""}, {"alize", "al"}})
	case 'i':
		z.apply([]porterRule{{"iciti", "ic"}})
	case 'l':
		z.apply([]porterRule{{"ical", "ic"}, {"ful", ""}})
	case 's':
		z.apply([]porterRule{{"ness", ""}})
	}
}

// step4 removes -ant, -ence and the like when the measure is above 1.
func (z *porter) step4() {
	if z.k < 1 {
		return
	}
	found := false
	switch z.b[z.k-1] {
	case 'a':
		found = z.ends("al")
	case 'c':
		found = z.ends("ance") || z.ends("ence")
	case 'e':
		found = z.ends("er")
	case 'i':
		found = z.ends("ic")
	case 'l':
		found = z.ends("able") || z.ends("ible")
	case 'n':
		found = z.ends("ant") || z.ends("ement") || z.ends("ment") || z.ends("ent")
	case 'o':
		found = z.ends("ion") && z.j >= 0 && (z.b[z.j] == 's' || z.b[z.j] == 't') || z.ends("ou")
	case 's':
		found = z.ends("ism")
	case 't':
		found = z.ends("ate") || z.ends("iti")
	case 'u':
		found = z.ends("ous")
	case 'v':
		found = z.ends("ive")
	case 'z':
		found = z.ends("ize")
	}
	if found && z.m() > 1 {
		z.k = z.j
	}
}

// step5 removes a final -e and reduces -ll when the measure is above 1.
func (z *porter) step5() {
	z.j = z.k
	if z.b[z.k] == 'e' {
		a := z.m()
		if a > 1 || a == 1 && !z.cvc(z.k-1) {
			z.k--
		}
	}
	if z.b[z.k] == 'l' && z.doublec(z.k) && z.m() > 1 {
		z.k--
	}
}

// findOSA returns the optimal string alignment distance (Damerau-
// Levenshtein with adjacent transpositions, no substring edited twice)
// between two ASCII strings, or limit+1 when it exceeds limit.
func findOSA(a, b string, limit int) int {
	la, lb := len(a), len(b)
	if d := la - lb; d > limit || -d > limit {
		return limit + 1
	}
	if la == 0 || lb == 0 {
		return la + lb
	}
	// Three rows of at most 32+1 cells (tokens are short; longer ones are
	// compared in a heap buffer).
	var buf [3 * 33]int
	var cells []int
	if lb+1 <= 33 {
		cells = buf[:3*(lb+1)]
	} else {
		cells = make([]int, 3*(lb+1))
	}
	prev2, prev, cur := cells[:lb+1], cells[lb+1:2*(lb+1)], cells[2*(lb+1):]
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= la; i++ {
		cur[0] = i
		rowMin := cur[0]
		for j := 1; j <= lb; j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			v := min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				v = min(v, prev2[j-2]+1)
			}
			cur[j] = v
			rowMin = min(rowMin, v)
		}
		if rowMin > limit {
			return limit + 1
		}
		prev2, prev, cur = prev, cur, prev2
	}
	if prev[lb] > limit {
		return limit + 1
	}
	return prev[lb]
}

// findIsASCII reports whether s holds only ASCII bytes.
func findIsASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// findDeletes calls fn with every string obtained from s (ASCII) by
// deleting exactly one byte, then, when depth is 2, two bytes. Duplicates
// may be reported more than once.
func findDeletes(s string, depth int, fn func(string)) {
	for i := 0; i < len(s); i++ {
		d1 := s[:i] + s[i+1:]
		fn(d1)
		if depth >= 2 {
			for j := i; j < len(d1); j++ {
				fn(d1[:j] + d1[j+1:])
			}
		}
	}
}

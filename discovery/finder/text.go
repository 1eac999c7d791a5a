package finder

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/kljensen/snowball/english"
	"github.com/kljensen/snowball/french"
	"github.com/kljensen/snowball/russian"
	"github.com/kljensen/snowball/spanish"
)

// Text analysis of the finder: tokenisation, stop words, Snowball stemming
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
// me", "I need", "please get"), the Snowball stop words of French, Spanish
// and Russian, and the commonest function words, request verbs and "now"
// of German, Italian and Portuguese.
func findIsStopWord(t string) bool {
	if len(t) == 0 {
		return true
	}
	if t[0] < utf8.RuneSelf && findIsEnglishStopWord(t) {
		return true
	}
	return french.IsStopWord(t) || spanish.IsStopWord(t) || russian.IsStopWord(t) || findIsOtherStopWord(t)
}

func findIsEnglishStopWord(t string) bool {
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

// findIsOtherStopWord holds the function words Snowball has no list for
// here (German, Italian, Portuguese) and request verbs and "now" in the
// languages of the evaluation sets.
func findIsOtherStopWord(t string) bool {
	switch t {
	// German
	case "der", "die", "das", "den", "dem", "des", "ein", "eine", "einen", "einem", "einer", "eines", "und", "oder",
		"ist", "sind", "war", "mein", "meine", "meinen", "meinem", "meiner", "dein", "deine", "ich", "du", "er", "sie",
		"wir", "ihr", "mir", "mich", "mit", "von", "für", "auf", "aus", "bei", "im", "zu", "zum", "zur", "um",
		"wie", "was", "wo", "wer", "welche", "welcher", "nicht", "kein", "keine", "dieser", "diese", "dieses", "diesen",
		"ob", "auch", "noch", "nach", "über", "unter", "vor", "hat", "habe", "haben", "wird", "werden", "kann",
		"jetzt", "gerade", "bitte", "zeig", "zeige", "gib", "finde", "berechne", "berechnen",
		// Italian
		"il", "lo", "gli", "di", "della", "dello", "dei", "delle", "dell", "dal", "nel", "nella", "su", "per", "tra", "fra",
		"è", "che", "chi", "mio", "miei", "mie", "questo", "questa", "quello", "quella", "non", "adesso", "ora",
		"mi", "ti", "ci", "si", "sono", "sei", "ho", "hanno", "calcola", "mostra", "dammi", "trova",
		// Portuguese
		"uma", "uns", "umas", "do", "da", "dos", "em", "na", "nas", "é", "meu", "minha", "meus", "minhas",
		"isto", "essa", "não", "agora", "qual", "quais", "tem", "mostre", "calcule",
		// French and Spanish request verbs and "now"
		"maintenant", "actuellement", "calculer", "donne", "montre", "trouve", "ahora", "calcula", "calcular", "dame", "muestra",
		// Russian request verbs and "now"
		"сейчас", "покажи", "найди", "дай", "посчитай", "рассчитай":
		return true
	}
	return false
}

// findLang is a language the finder analyses text in: the three it stems
// with Snowball besides English, and the languages it indexes as written.
type findLang uint8

const (
	findEnglish findLang = iota
	findFrench
	findSpanish
	findRussian
	// findAsWritten is a language without a stemmer here (German,
	// Italian, Portuguese, ...): its words are indexed as written.
	findAsWritten
)

// findLangOf maps an ISO 639-1 code to the language the finder analyses
// it as.
func findLangOf(code string) findLang {
	switch code {
	case "en":
		return findEnglish
	case "fr":
		return findFrench
	case "es":
		return findSpanish
	case "ru":
		return findRussian
	}
	return findAsWritten
}

// findStem returns the English Snowball stem of a lower-case token.
// Tokens that are not plain ASCII letters (digits, accents, other
// scripts) and tokens of two letters or fewer are returned unchanged.
func findStem(t string) string {
	if len(t) <= 2 {
		return t
	}
	for i := 0; i < len(t); i++ {
		if t[i] < 'a' || t[i] > 'z' {
			return t
		}
	}
	return english.Stem(t, true)
}

// findStemIn returns the stem of a lower-case token in lang: English as
// findStem, French, Spanish and Russian with their Snowball stemmers
// (Russian only for Cyrillic words), the token itself otherwise.
func findStemIn(t string, lang findLang) string {
	switch {
	case lang == findEnglish:
		return findStem(t)
	case utf8.RuneCountInString(t) <= 2:
		return t
	case lang == findFrench:
		return french.Stem(t, true)
	case lang == findSpanish:
		return spanish.Stem(t, true)
	case lang == findRussian && findIsCyrillic(t):
		return russian.Stem(t, true)
	}
	return t
}

// findIsCyrillic reports whether the first letter of t is Cyrillic.
func findIsCyrillic(t string) bool {
	r, _ := utf8.DecodeRuneInString(t)
	return unicode.Is(unicode.Cyrillic, r)
}

// findQueryLang guesses the language of a query's Latin-script words from
// its function words (those English does not share): French or Spanish
// when it has more of one's than of the other's, English otherwise. Cyrillic words are always Russian.
func findQueryLang(toks []string) findLang {
	fr, es := 0, 0
	for _, t := range toks {
		if findIsEnglishStopWord(t) {
			continue // "a", "me", "no": no clue
		}
		if french.IsStopWord(t) {
			fr++
		}
		if spanish.IsStopWord(t) {
			es++
		}
	}
	switch {
	case fr > es:
		return findFrench
	case es > fr:
		return findSpanish
	}
	return findEnglish
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

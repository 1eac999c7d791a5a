package finder

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"slices"
	"strings"

	"github.com/seed1284c1d2/svc/tools"
)

// Doc is what the finder knows about one tool.
type Doc struct {
	// Key identifies the tool in matches ("risk-levels"); keys should be
	// unique. Its hyphen-separated words are indexed with the name.
	Key string
	// Name is the short human name ("Risk levels"); the heaviest field.
	Name string
	// Description is the long description; the lightest field.
	Description string
	// Tags are the tool's categories ("trading", "risk").
	Tags []string
	// Fields are the input field names ("entry", "slPct"); camelCase and
	// snake_case are split into words.
	Fields []string
	// Synonyms are extra words and phrases users write for this tool
	// ("stop loss", "take profit"), by ISO 639-1 language code (see
	// Synonyms): English, French, Spanish and Russian phrases
	// are stemmed in their language, the others indexed as written.
	Synonyms map[string][]string
}

// Match is one ranked tool.
type Match struct {
	// Key is the Doc's key.
	Key string `json:"key"`
	// Score is the relevance in (0, 1): raw/(raw + 3 + 3m) of the raw
	// BM25F-and-phrase score, where m counts the query's topical words the
	// document leaves unexplained, rounded to 4 decimals. It is comparable
	// across queries (0.5 is a match worth one strong term that explains
	// the whole query) but it is not a probability.
	Score float64 `json:"score"`
	// MatchedTokens are the query's tokens (lower case, in query order,
	// each once) that contributed to the match: as written when they were
	// found through stemming, a typo correction or a compound split, or
	// the words a recognised literal stands for ("0x", "address" for an
	// address; "jwt" for a token).
	MatchedTokens []string `json:"matchedTokens"`
	// Corrected says that every matched token was found only through a
	// typo correction ("chek my etherium adress"): a weaker kind of match,
	// which /api/route and /api/try hold to a higher score.
	Corrected bool `json:"corrected,omitempty"`
}

// Field weights and BM25F parameters. Every indexed field of a document
// counts its term occurrences with weight w, length-normalised with b
// against the field's mean length over all documents. The short fields
// (name and key, tags, synonyms, field names) are sets: a word counts once
// however many synonyms repeat it; the description counts occurrences.
const (
	findWeightName        = 5.0
	findWeightTags        = 3.5
	findWeightSynonyms    = 2.5
	findWeightFields      = 2.0
	findWeightDescription = 1.0

	findBName        = 0.3
	findBTags        = 0.3
	findBSynonyms    = 0.5
	findBFields      = 0.3
	findBDescription = 0.75

	// findK1 is BM25's term-frequency saturation.
	findK1 = 1.2

	// findPhraseBoost is the bonus per word of a multi-word synonym (or
	// name) found contiguously in the query, scaled by the phrase's
	// rarity among the documents.
	findPhraseBoost = 1.0

	// Penalties of approximate matches: a compound split ("stoploss"), a
	// typo at distance 1 and at distance 2.
	findCompoundFactor = 0.9
	findTypoFactor1    = 0.7
	findTypoFactor2    = 0.5
	// findRelatedFactor is the factor of a word found through its word
	// class ("candles" → bar).
	findRelatedFactor = 0.8
	// findTypoCandidates bounds the vocabulary terms a typo may stand for.
	findTypoCandidates = 3

	// findScoreHalf is the raw score normalised to 0.5 when every topical
	// word of the query matched.
	findScoreHalf = 3.0
	// findMissWeight is what each topical query word a document does not
	// match adds to the normalisation, and findWeakMiss the part of it
	// for a word matched only through a typo correction or only in the
	// description.
	findMissWeight = 3.0
	findWeakMiss   = 0.5
)

const (
	findFieldName = iota
	findFieldTags
	findFieldSynonyms
	findFieldFields
	findFieldDescription
	findFieldCount
)

// Index ranks documents for natural-language queries.
//
// Text is tokenised (lower case, Unicode letters and digits, camelCase,
// snake_case and kebab-case split), stemmed with Snowball and stripped of
// stop words (English, French, Spanish, Russian, German, Italian and
// Portuguese function words). Documents are English, their synonyms in
// any language: English, French, Spanish and Russian synonyms are stemmed
// in their language, the others indexed as written. A query's Latin words
// are stemmed in the language its function words point to (French or
// Spanish, else English), then in English, then looked up as written;
// Cyrillic words are stemmed in Russian.
//
// A document is scored with BM25F (k1 = 1.2) over weighted fields, name
// and key 5, tags 3.5, synonyms 2.5, input field names 2, description 1,
// with a soft document frequency (a term counts fully in a tool's name or
// tags, partly as a synonym, field name or description word), plus a
// phrase bonus for every multi-word synonym or name found contiguously in
// the query (1 per word, scaled by the phrase's rarity; stop words are
// kept for phrases, so "what time" and "p&l" match). The raw score r
// becomes r/(r + 3 + 3m), where m counts the query's topical words the
// document leaves unexplained (a word explained only by a typo correction
// or only by the description counts half): a need from another domain
// that shares one word with a tool scores low.
//
// Query words the index does not know are tried, in order, as a compound
// of two words of the documents ("stoploss" → stop loss, factor 0.9) and
// as a typo: restricted Damerau-Levenshtein distance ≤ 1 for words of 4
// to 7 letters, ≤ 2 from 8 letters, against the index vocabulary (factor
// 0.7 at distance 1, 0.5 at 2; words under 6 letters keep their first
// letter). A word also searches the other words of its class in
// findWordClasses ("candles" → bar, factor 0.8). Two literals are
// recognised: an 0x-prefixed hex string (an address) and a JWT.
//
// An Index is immutable after New and safe for concurrent use. The
// work of a query is bounded: at most 2000 bytes and 64 tokens are read.
type Index struct {
	keys []string
	// terms maps a stem to its id; stems[id] is the reverse.
	terms map[string]int32
	stems []string
	// postings[id] holds the BM25F weight of the term in each document
	// containing it.
	postings [][]findPosting
	// phrases maps the first stem of a multi-word phrase to the phrases
	// starting with it.
	phrases map[string][]findPhrase
	// related maps a term id to the ids of the other indexed words of its
	// word class (findWordClasses).
	related map[int32][]int32
	// memo holds the stems of the words of the documents (and, in
	// English, of the stop words), so that the common words of queries
	// are not stemmed again.
	memo map[findMemoKey]string
	// deletes maps every term of three letters or more, and each string
	// obtained from it by deleting one letter (two for terms of six or
	// more), to the term ids: a symmetric-delete typo index.
	deletes map[string][]int32
	// building is true during New only.
	building bool
}

type findMemoKey struct {
	lang findLang
	word string
}

// stemIn returns findStemIn(t, lang), from the memo when the word is known;
// while the index is built it fills the memo.
func (f *Index) stemIn(t string, lang findLang) string {
	k := findMemoKey{lang, t}
	if st, ok := f.memo[k]; ok {
		return st
	}
	st := findStemIn(t, lang)
	if f.building {
		f.memo[k] = st
	}
	return st
}

type findPosting struct {
	doc int32
	w   float64
	// named says the term is in the document's name, tags, synonyms or
	// field names, not only in its description.
	named bool
}

type findPhrase struct {
	stems []string
	docs  []int32
	bonus float64
}

// New indexes docs. The docs are not retained.
func New(docs []Doc) *Index {
	f := &Index{
		keys:    make([]string, len(docs)),
		terms:   map[string]int32{},
		phrases: map[string][]findPhrase{},
		deletes: map[string][]int32{},
		related: map[int32][]int32{},
		memo:    map[findMemoKey]string{},

		building: true,
	}
	defer func() { f.building = false }()
	n := len(docs)
	// Term frequencies per document and field, and field lengths.
	type fieldStats struct {
		tf  map[string]int
		len int
	}
	stats := make([][findFieldCount]fieldStats, n)
	var totalLen [findFieldCount]float64
	add := func(d, field int, text string, lang findLang) {
		st := &stats[d][field]
		if st.tf == nil {
			st.tf = map[string]int{}
		}
		for _, tok := range findTokenize(text, 0) {
			stem := f.stemIn(tok, lang)
			if !findIsScoringToken(tok) || findIsStopWord(stem) {
				continue
			}
			if field != findFieldDescription && st.tf[stem] > 0 {
				continue // short fields are sets of words
			}
			st.tf[stem]++
			st.len++
			totalLen[field]++
		}
	}
	// Phrases: the doc set of each distinct stem sequence.
	phraseDocs := map[string][]int32{}
	var phraseOrder []string
	addPhrase := func(d int, text string, lang findLang) {
		toks := findTokenize(text, 0)
		if len(toks) < 2 {
			return
		}
		stems := make([]string, len(toks))
		topical := false
		for i, t := range toks {
			stems[i] = f.stemIn(t, lang)
			topical = topical || !findIsStopWord(t)
		}
		if !topical {
			return // "find all" says nothing about a tool
		}
		k := strings.Join(stems, " ")
		ds, seen := phraseDocs[k]
		if !seen {
			phraseOrder = append(phraseOrder, k)
		}
		if !slices.Contains(ds, int32(d)) {
			phraseDocs[k] = append(ds, int32(d))
		}
	}
	for d, doc := range docs {
		f.keys[d] = doc.Key
		keyWords := strings.ReplaceAll(doc.Key, "-", " ")
		add(d, findFieldName, doc.Name, findEnglish)
		add(d, findFieldName, keyWords, findEnglish)
		addPhrase(d, doc.Name, findEnglish)
		addPhrase(d, keyWords, findEnglish)
		for _, t := range doc.Tags {
			add(d, findFieldTags, t, findEnglish)
		}
		for _, code := range findSortedKeys(doc.Synonyms) {
			lang := findLangOf(code)
			for _, s := range doc.Synonyms[code] {
				add(d, findFieldSynonyms, s, lang)
				addPhrase(d, s, lang)
			}
		}
		for _, fl := range doc.Fields {
			add(d, findFieldFields, fl, findEnglish)
		}
		add(d, findFieldDescription, doc.Description, findEnglish)
	}

	// BM25F: weighted, length-normalised term frequency per document.
	weights := [findFieldCount]float64{findWeightName, findWeightTags, findWeightSynonyms, findWeightFields, findWeightDescription}
	bs := [findFieldCount]float64{findBName, findBTags, findBSynonyms, findBFields, findBDescription}
	var avgLen [findFieldCount]float64
	for fl := range avgLen {
		avgLen[fl] = 1
		if n > 0 && totalLen[fl] > 0 {
			avgLen[fl] = totalLen[fl] / float64(n)
		}
	}
	tfw := map[string][]findPosting{}
	var order []string
	for d := range stats {
		docTF := map[string]float64{}
		var docOrder []string
		named := map[string]bool{}
		for fl := range stats[d] {
			st := stats[d][fl]
			norm := 1 - bs[fl] + bs[fl]*float64(st.len)/avgLen[fl]
			for _, t := range findSortedKeys(st.tf) {
				if _, ok := docTF[t]; !ok {
					docOrder = append(docOrder, t)
				}
				docTF[t] += weights[fl] * float64(st.tf[t]) / norm
				named[t] = named[t] || fl != findFieldDescription
			}
		}
		for _, t := range docOrder {
			if _, ok := tfw[t]; !ok {
				order = append(order, t)
			}
			tfw[t] = append(tfw[t], findPosting{doc: int32(d), w: docTF[t], named: named[t]})
		}
	}
	slices.Sort(order)
	f.stems = order
	f.postings = make([][]findPosting, len(order))
	for id, t := range order {
		f.terms[t] = int32(id)
		ps := tfw[t]
		// Soft document frequency: a document counts fully when the term
		// is in its name or tags, partly when it is only a synonym, a
		// field name or a word of the description, so that a passing
		// mention elsewhere does not make a tool's own name common.
		var df float64
		for _, p := range ps {
			df += min(1, p.w/findWeightTags)
		}
		idf := findIDF(n, df)
		for i := range ps {
			x := ps[i].w
			ps[i].w = idf * x * (findK1 + 1) / (x + findK1)
		}
		f.postings[id] = ps
	}

	// Phrase bonuses, scaled by rarity relative to a phrase of one doc.
	maxIDF := findIDF(n, 1)
	for _, k := range phraseOrder {
		stems := strings.Split(k, " ")
		ds := phraseDocs[k]
		bonus := findPhraseBoost * float64(len(stems))
		if maxIDF > 0 {
			bonus *= findIDF(n, float64(len(ds))) / maxIDF
		}
		f.phrases[stems[0]] = append(f.phrases[stems[0]], findPhrase{stems: stems, docs: ds, bonus: bonus})
	}

	// Word classes, restricted to indexed words.
	for _, class := range findWordClasses() {
		var ids []int32
		for _, w := range class {
			if id, ok := f.terms[findStem(w)]; ok && !slices.Contains(ids, id) {
				ids = append(ids, id)
			}
		}
		for _, id := range ids {
			for _, other := range ids {
				if other != id {
					f.related[id] = append(f.related[id], other)
				}
			}
		}
	}

	// Symmetric-delete typo index.
	for id, t := range f.stems {
		if len(t) < 3 || !findIsASCII(t) {
			continue
		}
		depth := 1
		if len(t) >= 6 {
			depth = 2
		}
		f.addDelete(t, int32(id))
		findDeletes(t, depth, func(v string) {
			if len(v) >= 2 {
				f.addDelete(v, int32(id))
			}
		})
	}
	return f
}

func (f *Index) addDelete(v string, id int32) {
	ids := f.deletes[v]
	if len(ids) > 0 && ids[len(ids)-1] == id {
		return
	}
	f.deletes[v] = append(ids, id)
}

// findIDF is BM25's inverse document frequency, always positive.
func findIDF(n int, df float64) float64 {
	return math.Log(1 + (float64(n)-df+0.5)/(df+0.5))
}

func findSortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// findIsScoringToken reports whether a token is a search term: not a stop
// word, not a bare number, not a single character.
func findIsScoringToken(t string) bool {
	if len(t) < 2 || findIsStopWord(t) {
		return false
	}
	for i := 0; i < len(t); i++ {
		if t[i] < '0' || t[i] > '9' {
			return true
		}
	}
	return false
}

// findQueryTerm is a vocabulary term found in a query.
type findQueryTerm struct {
	id     int32
	factor float64
	mask   uint64
}

// Find ranks the documents for q and returns at most limit matches (every
// match when limit ≤ 0), best first; ties are broken by key. Documents
// sharing nothing with the query are not returned, so an empty, blank or
// stop-word-only query has no matches.
func (f *Index) Find(q string, limit int) []Match {
	toks := findTokenize(q, findMaxTokens)
	if len(toks) == 0 || len(f.keys) == 0 {
		return nil
	}
	var qterms []findQueryTerm
	addOne := func(id int32, factor float64, tok int) {
		bit := uint64(1) << uint(tok)
		for i := range qterms {
			if qterms[i].id == id {
				qterms[i].factor = max(qterms[i].factor, factor)
				qterms[i].mask |= bit
				return
			}
		}
		qterms = append(qterms, findQueryTerm{id: id, factor: factor, mask: bit})
	}
	addTerm := func(id int32, factor float64, tok int) {
		addOne(id, factor, tok)
		for _, r := range f.related[id] {
			addOne(r, factor*findRelatedFactor, tok)
		}
	}
	// seq is the stem sequence phrases are matched against (stop words
	// and numbers included, typos corrected); seqTok maps it to tokens.
	seq := make([]string, 0, len(toks)+2)
	seqTok := make([]int, 0, len(toks)+2)
	var corrected uint64 // tokens found through a typo correction
	var content uint64   // the query's topical tokens
	lang := findQueryLang(toks)
	for i, t := range toks {
		st := f.stemIn(t, findEnglish)
		if !findIsScoringToken(t) || findIsStopWord(st) {
			seq, seqTok = append(seq, st), append(seqTok, i)
			continue
		}
		content |= uint64(1) << uint(i)
		// The stem in the query's language, then in English, then the
		// word as written (a stem indexed as written, or a word of a
		// language without a stemmer).
		qlang := lang
		if findIsCyrillic(t) {
			qlang = findRussian
		}
		if qlang != findEnglish {
			if ls := f.stemIn(t, qlang); ls != st {
				if id, ok := f.terms[ls]; ok {
					addTerm(id, 1, i)
					seq, seqTok = append(seq, ls), append(seqTok, i)
					continue
				}
			}
		}
		if id, ok := f.terms[st]; ok {
			addTerm(id, 1, i)
			seq, seqTok = append(seq, st), append(seqTok, i)
			continue
		}
		if id, ok := f.terms[t]; ok {
			addTerm(id, 1, i)
			seq, seqTok = append(seq, t), append(seqTok, i)
			continue
		}
		if a, b, ok := f.splitCompound(t); ok {
			addTerm(a, findCompoundFactor, i)
			addTerm(b, findCompoundFactor, i)
			seq, seqTok = append(seq, f.stems[a], f.stems[b]), append(seqTok, i, i)
			continue
		}
		if cands, d := f.typo(st, t); len(cands) > 0 {
			factor := findTypoFactor1
			if d > 1 {
				factor = findTypoFactor2
			}
			for _, id := range cands {
				addTerm(id, factor, i)
			}
			corrected |= uint64(1) << uint(i)
			seq, seqTok = append(seq, f.stems[cands[0]]), append(seqTok, i)
			continue
		}
		seq, seqTok = append(seq, st), append(seqTok, i)
	}

	scores := make([]float64, len(f.keys))
	masks := make([]uint64, len(f.keys))
	named := make([]uint64, len(f.keys)) // tokens matched outside the description
	for _, qt := range qterms {
		for _, p := range f.postings[qt.id] {
			scores[p.doc] += qt.factor * p.w
			masks[p.doc] |= qt.mask
			if p.named {
				named[p.doc] |= qt.mask
			}
		}
	}
	var applied []*findPhrase
	for i := range seq {
		cands := f.phrases[seq[i]]
		for c := range cands {
			ph := &cands[c]
			if i+len(ph.stems) > len(seq) || !slices.Equal(ph.stems, seq[i:i+len(ph.stems)]) || slices.Contains(applied, ph) {
				continue
			}
			applied = append(applied, ph)
			var bits uint64
			for _, tk := range seqTok[i : i+len(ph.stems)] {
				bits |= uint64(1) << uint(tk)
			}
			for _, d := range ph.docs {
				scores[d] += ph.bonus
				masks[d] |= bits
				named[d] |= bits
			}
		}
	}

	// Every topical query token a document leaves unexplained counts
	// against it, and a token explained only by a typo correction or only
	// by a word of the description counts in part, so that a need from
	// another domain sharing a word with a tool ("order a pizza") scores
	// low.
	for d, s := range scores {
		if s <= 0 {
			continue
		}
		miss := float64(bits.OnesCount64(content &^ masks[d]))
		miss += findWeakMiss * float64(bits.OnesCount64(content&masks[d]&(corrected|^named[d])))
		scores[d] = s / (s + findScoreHalf + findMissWeight*miss)
	}
	order := make([]int, 0, len(f.keys))
	for d, s := range scores {
		if s > 0 {
			order = append(order, d)
		}
	}
	slices.SortFunc(order, func(a, b int) int {
		switch {
		case scores[a] > scores[b]:
			return -1
		case scores[a] < scores[b]:
			return 1
		}
		if c := strings.Compare(f.keys[a], f.keys[b]); c != 0 {
			return c
		}
		return a - b
	})
	if limit > 0 && len(order) > limit {
		order = order[:limit]
	}
	out := make([]Match, len(order))
	for i, d := range order {
		out[i] = Match{
			Key:           f.keys[d],
			Score:         math.Round(scores[d]*1e4) / 1e4,
			MatchedTokens: findMaskTokens(toks, masks[d]),
			Corrected:     masks[d]&^corrected == 0,
		}
	}
	return out
}

// findMaskTokens lists the tokens whose bits are set, each once.
func findMaskTokens(toks []string, mask uint64) []string {
	out := make([]string, 0, 4)
	for i, t := range toks {
		if mask&(uint64(1)<<uint(i)) != 0 && !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	return out
}

// splitCompound splits an unknown ASCII word of six letters or more into
// two words of the documents ("stoploss" → stop, loss), preferring the
// most balanced split.
func (f *Index) splitCompound(t string) (a, b int32, ok bool) {
	if len(t) < 6 || !findIsASCII(t) {
		return 0, 0, false
	}
	best := 0
	for i := 2; i <= len(t)-2; i++ {
		left, right := t[:i], t[i:]
		if findIsStopWord(left) || findIsStopWord(right) || !findIsScoringToken(left) || !findIsScoringToken(right) {
			continue
		}
		// Both parts are words of the documents as written (their stems
		// are in the memo): no stemming per split.
		sa, okA := f.memo[findMemoKey{findEnglish, left}]
		sb, okB := f.memo[findMemoKey{findEnglish, right}]
		if !okA || !okB {
			continue
		}
		ia, okA := f.terms[sa]
		ib, okB := f.terms[sb]
		if !okA || !okB {
			continue
		}
		if bal := min(i, len(t)-i); bal > best {
			best, a, b, ok = bal, ia, ib, true
		}
	}
	return a, b, ok
}

// typo returns the vocabulary terms closest to the stem of a word (or,
// failing that, to the word as written) within the distance the word's
// length allows: 1 from 4 letters, 2 from 8. Words under 6 letters keep
// their first letter. At most findTypoCandidates terms are returned, in
// lexical order, with their distance.
func (f *Index) typo(stem, surface string) ([]int32, int) {
	if len(surface) < 4 || !findIsASCII(surface) {
		return nil, 0
	}
	maxD := 1
	if len(surface) >= 8 {
		maxD = 2
	}
	firstLetter := len(surface) < 6
	cands, d := f.typoOf(stem, maxD, firstLetter)
	if len(cands) == 0 && surface != stem {
		cands, d = f.typoOf(surface, maxD, firstLetter)
	}
	return cands, d
}

func (f *Index) typoOf(s string, maxD int, firstLetter bool) ([]int32, int) {
	if len(s) < 3 || !findIsASCII(s) {
		return nil, 0
	}
	best := maxD + 1
	var cands []int32
	check := func(v []byte) {
		for _, id := range f.deletes[string(v)] { // no allocation for the lookup
			term := f.stems[id]
			if len(term) < 3 || (firstLetter && term[0] != s[0]) || slices.Contains(cands, id) {
				continue
			}
			d := findOSA(s, term, maxD)
			if d == 0 || d > maxD || d > best {
				continue
			}
			if d < best {
				best, cands = d, cands[:0]
			}
			cands = append(cands, id)
		}
	}
	// The word itself, then every string with one letter deleted, then
	// (distance 2) two letters: the query side of the symmetric-delete
	// index, built in a stack buffer.
	var arr [findMaxWordBytes]byte
	if len(s) > len(arr) {
		return nil, 0
	}
	check(append(arr[:0], s...))
	for i := 0; i < len(s); i++ {
		d1 := append(append(arr[:0], s[:i]...), s[i+1:]...)
		check(d1)
		if maxD < 2 {
			continue
		}
		var arr2 [findMaxWordBytes]byte
		for j := i; j < len(d1); j++ {
			check(append(append(arr2[:0], d1[:j]...), d1[j+1:]...))
		}
	}
	if len(cands) == 0 {
		return nil, 0
	}
	slices.SortFunc(cands, func(a, b int32) int { return strings.Compare(f.stems[a], f.stems[b]) })
	if len(cands) > findTypoCandidates {
		cands = cands[:findTypoCandidates]
	}
	return cands, best
}

// DocsFromTools returns the finder documents of catalog tools (for
// example tools.Catalog.All()): key, name, description, tags and input
// field names from each tool, and its synonyms from Synonyms. A tool
// without English synonyms there, or with a malformed table (see
// checkSynonyms), is an error: the index would not find it by the words
// people use.
func DocsFromTools(ts []*tools.Tool) ([]Doc, error) {
	synonyms := Synonyms()
	docs := make([]Doc, 0, len(ts))
	for _, t := range ts {
		if err := checkSynonyms(synonyms[t.Key]); err != nil {
			return nil, fmt.Errorf("finder: tool %s: %w", t.Key, err)
		}
		docs = append(docs, Doc{
			Key:         t.Key,
			Name:        t.Name,
			Description: t.Description,
			Tags:        slices.Clone(t.Tags),
			Fields:      slices.Clone(t.Fields),
			Synonyms:    synonyms[t.Key],
		})
	}
	return docs, nil
}

// checkSynonyms checks one tool's synonyms: English ones at least, keyed
// by ISO 639-1 codes (two lower-case letters), each phrase lower case and
// not blank.
func checkSynonyms(m map[string][]string) error {
	if len(m["en"]) == 0 {
		return errors.New("no English synonyms")
	}
	for lang, words := range m {
		if len(lang) != 2 || lang[0] < 'a' || lang[0] > 'z' || lang[1] < 'a' || lang[1] > 'z' {
			return fmt.Errorf("synonym language %q is not an ISO 639-1 code", lang)
		}
		for _, w := range words {
			if strings.TrimSpace(w) == "" || w != strings.ToLower(w) {
				return fmt.Errorf("synonym %q (%s) is blank or not lower case", w, lang)
			}
		}
	}
	return nil
}

package finder

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/seed1284c1d2/svc/tools"
)

// findSpecDocs are the 13 paid tools described in words of their own,
// independent of the tools package's names and descriptions, with the
// finder's synonyms of each tool.
func findSpecDocs() []Doc {
	docs := []Doc{
		{Key: "session-state", Name: "Trading session state", Tags: []string{"trading", "time"}, Fields: []string{"dateTime"},
			Description: "Trading-session state in the Europe/Vienna time zone: whether the London, New York and Asia sessions are open at an instant and the minute of the day. Sessions are defined in their home zones (London 08:00-16:30 Europe/London, New York 08:00-17:00 America/New_York, Asia 09:00-15:00 Asia/Tokyo), closed on Saturday and Sunday. dateTime is an ISO-8601 timestamp; default is the current time."},
		{Key: "risk-levels", Name: "Risk levels", Tags: []string{"trading", "risk"}, Fields: []string{"entry", "direction", "slPct", "tpPct"},
			Description: "Risk-level calculator: stop and target prices from an entry price, a direction (long or short) and a stop percentage and a target percentage of entry. riskReward is the ratio of target distance to stop distance. Example: 3500 long 0.05/0.04 gives stop 3498.25, target 3501.4, riskReward 0.8."},
		{Key: "strategy-grade", Name: "Strategy grade", Tags: []string{"trading", "risk"}, Fields: []string{"trades", "profitFactor", "winRatePct", "maxDrawdownPct", "walkForwardPassPct"},
			Description: "Strategy-robustness calculator: a score on 0-100 with components sample, pf, drawdown and walkForward from the number of trades, the profit factor, the win rate, the maximum drawdown and the walk-forward pass rate, a letter grade and warnings for weak evidence."},
		{Key: "xau-quote", Name: "Gold quote (XAUUSD)", Tags: []string{"gold", "trading", "market-data"}, Fields: []string{"symbol"},
			Description: "Gold (XAUUSD) quote from a read-only local trading terminal: symbol, bid, ask, spread, last price and time (ISO-8601 UTC timestamp). symbol is the terminal symbol; default is the configured gold symbol."},
		{Key: "xau-bars", Name: "Gold bars (XAUUSD)", Tags: []string{"gold", "trading", "market-data"}, Fields: []string{"timeframe", "count"},
			Description: "Gold (XAUUSD) bars from a read-only local trading terminal: symbol, timeframe, count and bars with time, open, high, low, close and tick_volume, oldest first. timeframe one of M1, M5, M15, H1; count 10 to 500."},
		{Key: "xau-market-state", Name: "Gold market state (XAUUSD)", Tags: []string{"gold", "trading", "market-data"}, Fields: []string{"timeframe", "count"},
			Description: "Computed gold market state from the terminal's bars: trend (up, down or flat from the least-squares slope of closes), atr (Wilder ATR 14), realizedVolPct, rangePosition and returnPct, trend slope and the session flags. timeframe one of M1, M5, M15, H1; count 30 to 500."},
		{Key: "csv-profile", Name: "CSV profile", Tags: []string{"data"}, Fields: []string{"csv", "delimiter", "hasHeader"},
			Description: "Local data profiling of supplied CSV text: the delimiter used (auto, comma, semicolon, tab, pipe), rows, columnCount and per column its name, inferredType, nonEmpty, missing, uniqueCount and numeric count, min, max, mean. Does not call an external API or retain data."},
		{Key: "json-shape", Name: "JSON shape", Tags: []string{"data"}, Fields: []string{"value", "maxDepth", "maxPaths"},
			Description: "Local profiling of a supplied JSON value: rootType, pathCount and paths, each with its path string, types and occurrences. The root is written $, object members are appended with a dot and name, array elements as []."},
		{Key: "jwt-decode", Name: "JWT decode", Tags: []string{"utility", "security"}, Fields: []string{"token"},
			Description: "Decodes a JWT without verifying its signature: header and payload objects, verified always false, time claims (exp, nbf, iat) and whether the token is expired."},
		{Key: "tick-pnl", Name: "Tick PnL", Tags: []string{"trading", "risk"}, Fields: []string{"entry", "exit", "contracts", "tickSize", "tickValue", "direction"},
			Description: "Tick profit/loss calculator: ticks is the price move divided by tickSize, and pnl is ticks multiplied by tickValue and contracts. Example: 100 to 101, 2 contracts, 0.25/12.5, long gives ticks 4, pnl 100."},
		{Key: "evm-address-syntax", Name: "EVM address syntax", Tags: []string{"crypto", "utility"}, Fields: []string{"address"},
			Description: "EVM address syntax check: valid iff the candidate 20-byte address is exactly 0x followed by 40 hex digits; also the EIP-55 checksum status and the checksummed form. No network access."},
		{Key: "ohlcv-state", Name: "OHLCV state", Tags: []string{"trading", "data"}, Fields: []string{"bars"},
			Description: "OHLCV statistics for supplied bars (items carry open, high, low, close): returnPct, rangePosition and atr (mean true range over all bars)."},
		{Key: "regex-test", Name: "Regex test", Tags: []string{"utility", "regex"}, Fields: []string{"pattern", "flags", "text"},
			Description: "Runs a JavaScript regular expression (pattern and flags) against supplied text: matched and matches, with the g flag every matched substring, without it the first match."},
	}
	synonyms := Synonyms()
	for i := range docs {
		docs[i].Synonyms = synonyms[docs[i].Key]
	}
	return docs
}

// findCatalogDocs are the documents of the tools package's catalog, the
// ones a server indexes.
func findCatalogDocs(t testing.TB) []Doc {
	t.Helper()
	c, err := tools.New(tools.Options{})
	if err != nil {
		t.Fatalf("tools.New: %v", err)
	}
	docs, err := DocsFromTools(c.All())
	if err != nil {
		t.Fatalf("DocsFromTools: %v", err)
	}
	return docs
}

// routeOffTopic returns the off-topic needs of the router's evaluation:
// the tuning half and the held-out half.
func routeOffTopic(t testing.TB) (tune, holdout []string) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", "route_offtopic.json"))
	if err != nil {
		t.Fatalf("read route_offtopic.json: %v", err)
	}
	var set struct {
		Tune    []string `json:"tune"`
		Holdout []string `json:"holdout"`
	}
	if err := json.Unmarshal(raw, &set); err != nil {
		t.Fatalf("decode route_offtopic.json: %v", err)
	}
	return set.Tune, set.Holdout
}

type findIntent struct {
	Query string `json:"query"`
	Key   string `json:"key"`
}

func findLoadIntents(t testing.TB, name string) []findIntent {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatalf("read %s: %v", name, err)
	}
	var set struct {
		Intents []findIntent `json:"intents"`
	}
	if err := json.Unmarshal(raw, &set); err != nil {
		t.Fatalf("decode %s: %v", name, err)
	}
	return set.Intents
}

type findEvalResult struct {
	n, top1 int
	mrr     float64
	misses  []string
}

func (r findEvalResult) accuracy() float64 { return float64(r.top1) / float64(r.n) }

func findEvaluate(f *Index, intents []findIntent) findEvalResult {
	r := findEvalResult{n: len(intents)}
	for _, in := range intents {
		ms := f.Find(in.Query, 0)
		rank := slices.IndexFunc(ms, func(m Match) bool { return m.Key == in.Key })
		if rank == 0 {
			r.top1++
		} else {
			got := "nothing"
			if len(ms) > 0 {
				got = fmt.Sprintf("%s %.3f", ms[0].Key, ms[0].Score)
			}
			r.misses = append(r.misses, fmt.Sprintf("%q: want %s (rank %d), got %s", in.Query, in.Key, rank+1, got))
		}
		if rank >= 0 {
			r.mrr += 1 / float64(rank+1)
		}
	}
	r.mrr /= float64(len(intents))
	return r
}

func TestFindEvalSetIsBalanced(t *testing.T) {
	keys := map[string]bool{}
	for _, d := range findSpecDocs() {
		keys[d.Key] = true
	}
	eval := findLoadIntents(t, "find_eval.json")
	hold := findLoadIntents(t, "find_holdout.json")
	if len(eval) < 120 {
		t.Errorf("eval set has %d intents, want at least 120", len(eval))
	}
	perKey := map[string]int{}
	seen := map[string]bool{}
	for _, in := range append(slices.Clone(eval), hold...) {
		if !keys[in.Key] {
			t.Errorf("intent %q is labelled with unknown key %q", in.Query, in.Key)
		}
		q := strings.ToLower(in.Query)
		if seen[q] {
			t.Errorf("intent %q appears twice", in.Query)
		}
		seen[q] = true
	}
	for _, in := range eval {
		perKey[in.Key]++
	}
	for k := range keys {
		if perKey[k] < 7 {
			t.Errorf("eval set has %d intents for %s, want at least 7", perKey[k], k)
		}
	}
	if share := float64(len(hold)) / float64(len(eval)+len(hold)); share < 0.15 {
		t.Errorf("holdout is %.0f%% of all intents, want about 20%%", share*100)
	}
}

// TestFindEval measures the ranking over the labelled intents, on the
// specification's documents and on the tools catalog's, and requires
// top-1 accuracy ≥ 0.95 and MRR ≥ 0.95 on the eval set (the tuning half),
// and ≥ 0.90 on the holdout set (never used for tuning), so that tuning
// cannot buy the first at the cost of the second unnoticed.
func TestFindEval(t *testing.T) {
	eval := findLoadIntents(t, "find_eval.json")
	hold := findLoadIntents(t, "find_holdout.json")
	for _, c := range []struct {
		name string
		docs []Doc
	}{
		{"spec", findSpecDocs()},
		{"catalog", findCatalogDocs(t)},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := New(c.docs)
			r := findEvaluate(f, eval)
			h := findEvaluate(f, hold)
			t.Logf("eval:    %d intents, top-1 accuracy %.3f (%d/%d), MRR %.3f", r.n, r.accuracy(), r.top1, r.n, r.mrr)
			t.Logf("holdout: %d intents, top-1 accuracy %.3f (%d/%d), MRR %.3f", h.n, h.accuracy(), h.top1, h.n, h.mrr)
			for _, m := range r.misses {
				t.Logf("eval miss: %s", m)
			}
			for _, m := range h.misses {
				t.Logf("holdout miss: %s", m)
			}
			if r.accuracy() < 0.95 {
				t.Errorf("top-1 accuracy %.3f, want ≥ 0.95", r.accuracy())
			}
			if h.accuracy() < 0.90 {
				t.Errorf("holdout top-1 accuracy %.3f, want ≥ 0.90", h.accuracy())
			}
			if r.mrr < 0.95 {
				t.Errorf("MRR %.3f, want ≥ 0.95", r.mrr)
			}
		})
	}
}

func TestFindTokenize(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []string
	}{
		{"slPct", []string{"sl", "pct"}},
		{"tick_pnl", []string{"tick", "pnl"}},
		{"maxDrawdownPct", []string{"max", "drawdown", "pct"}},
		{"JSONShape", []string{"json", "shape"}},
		{"Tick PnL", []string{"tick", "pnl"}},
		{"xau-market-state", []string{"xau", "market", "state"}},
		{"EIP-55 eip55 rfc3339", []string{"eip", "55", "eip", "55", "rfc", "3339"}},
		{"M15 H1 bars", []string{"m15", "h1", "bars"}},
		{"p&l, R:R?", []string{"p", "l", "r", "r"}},
		{"  Stop-Loss  at 3,500.25 ", []string{"stop", "loss", "at", "3", "500", "25"}},
		{"Größe ÄNDERN naïve", []string{"größe", "ändern", "naïve"}},
		{"0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed ok", []string{"0x", "address", "ok"}},
		{"0x address", []string{"0x", "address"}},
		{"Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.sig", []string{"bearer", "jwt", "jwt", "sig"}},
		{"hash " + strings.Repeat("ab", 30), []string{"hash"}},
		{"", nil},
		{" \t\n ,;-_ ", nil},
	} {
		got := findTokenize(c.in, findMaxTokens)
		if !slices.Equal(got, c.want) && !(len(got) == 0 && len(c.want) == 0) {
			t.Errorf("findTokenize(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestFindTokenizeBounds(t *testing.T) {
	long := strings.Repeat("gold ", 1000)
	if got := findTokenize(long, findMaxTokens); len(got) != findMaxTokens {
		t.Errorf("query tokens = %d, want the cap %d", len(got), findMaxTokens)
	}
	if got := findTokenize(long, 0); len(got) != 1000 {
		t.Errorf("document tokens = %d, want 1000 (no cap)", len(got))
	}
	// The byte cap cuts on a rune boundary.
	multi := strings.Repeat("é", findMaxQueryBytes)
	for _, tok := range findTokenize(multi, findMaxTokens) {
		if strings.ContainsRune(tok, '\uFFFD') {
			t.Fatalf("token %q holds a broken rune", tok)
		}
	}
}

func TestFindStem(t *testing.T) {
	// Outputs of the English Snowball stemmer (Porter2) on words of the
	// Porter vocabulary and of the tools.
	for in, want := range map[string]string{
		"caresses": "caress", "ponies": "poni", "ties": "tie", "caress": "caress", "cats": "cat",
		"feed": "feed", "agreed": "agre", "plastered": "plaster", "bled": "bled", "motoring": "motor",
		"sing": "sing", "conflated": "conflat", "troubled": "troubl", "sized": "size", "hopping": "hop",
		"tanned": "tan", "falling": "fall", "hissing": "hiss", "fizzed": "fizz", "failing": "fail",
		"filing": "file", "happy": "happi", "sky": "sky", "relational": "relat", "conditional": "condit",
		"rational": "ration", "digitizer": "digit", "operator": "oper", "hopefulness": "hope",
		"goodness": "good", "allowance": "allow", "inference": "infer", "adjustable": "adjust",
		"replacement": "replac", "adoption": "adopt", "effective": "effect", "generalizations": "general",
		"oscillators": "oscil", "controll": "control", "roll": "roll", "probate": "probat", "rate": "rate",
		"cease": "ceas", "validate": "valid", "validation": "valid", "validator": "valid",
		"candles": "candl", "trending": "trend", "sessions": "session", "decoding": "decod", "decoder": "decod",
		"volatility": "volatil", "volatile": "volatil", "expression": "express",
		// Left alone: short, digits, non-ASCII.
		"sl": "sl", "m15": "m15", "größe": "größe",
	} {
		if got := findStem(in); got != want {
			t.Errorf("findStem(%q) = %q, want %q", in, got, want)
		}
	}
	// French, Spanish and Russian words are stemmed in their language,
	// so that inflections meet.
	for _, c := range []struct {
		lang findLang
		a, b string
	}{
		{findFrench, "bougies", "bougie"},
		{findFrench, "stratégies", "stratégie"},
		{findSpanish, "velas", "vela"},
		{findSpanish, "estrategias", "estrategia"},
		{findRussian, "свечам", "свечи"},
		{findRussian, "золота", "золото"},
	} {
		if x, y := findStemIn(c.a, c.lang), findStemIn(c.b, c.lang); x != y {
			t.Errorf("stems of %q and %q differ: %q, %q", c.a, c.b, x, y)
		}
	}
	// Languages without a stemmer here, and Latin words in Russian, are
	// left as written.
	for _, c := range []struct {
		lang findLang
		w    string
	}{{findAsWritten, "kerzen"}, {findRussian, "candles"}, {findFrench, "or"}} {
		if got := findStemIn(c.w, c.lang); got != c.w {
			t.Errorf("findStemIn(%q) = %q, want it as written", c.w, got)
		}
	}
}

func TestFindQueryLang(t *testing.T) {
	for q, want := range map[string]findLang{
		"la session de Londres est-elle ouverte ?": findFrench,
		"velas del oro de la última hora":          findSpanish,
		"is the london market open":                findEnglish,
		"a stop loss for me, no target":            findEnglish, // "a", "me", "no" are English too
		"aktueller Goldpreis":                      findEnglish,
	} {
		if got := findQueryLang(findTokenize(q, findMaxTokens)); got != want {
			t.Errorf("findQueryLang(%q) = %d, want %d", q, got, want)
		}
	}
}

func TestFindStopWords(t *testing.T) {
	for _, w := range []string{"the", "is", "what", "my", "please", "show"} {
		if !findIsStopWord(w) {
			t.Errorf("%q should be a stop word", w)
		}
	}
	for _, w := range []string{"der", "calcule", "la", "сейчас", "jetzt"} {
		if !findIsStopWord(w) {
			t.Errorf("%q should be a stop word", w)
		}
	}
	for _, w := range []string{"gold", "stop", "open", "up", "down", "last", "price", "oro", "bougies", "золото"} {
		if findIsStopWord(w) {
			t.Errorf("%q should not be a stop word", w)
		}
	}
}

func TestFindOSA(t *testing.T) {
	for _, c := range []struct {
		a, b  string
		limit int
		want  int
	}{
		{"regex", "regex", 2, 0},
		{"regx", "regex", 2, 1}, // insertion
		{"chek", "check", 2, 1}, // insertion
		{"teh", "the", 2, 1},    // transposition
		{"etherium", "ethereum", 2, 1},
		{"adress", "address", 2, 1},
		{"calculat", "calcul", 2, 2},
		{"kitten", "sitting", 3, 3},
		{"kitten", "sitting", 2, 3}, // beyond the limit: limit+1
		{"ca", "abc", 3, 3},         // OSA, not unrestricted Damerau (which gives 2)
		{"", "abc", 3, 3},
		{"abcdefgh", "ab", 2, 3},
	} {
		if got := findOSA(c.a, c.b, c.limit); got != c.want {
			t.Errorf("findOSA(%q, %q, %d) = %d, want %d", c.a, c.b, c.limit, got, c.want)
		}
	}
	long := strings.Repeat("a", 40)
	if got := findOSA(long, long[:39]+"b", 2); got != 1 {
		t.Errorf("findOSA on 40 letters = %d, want 1", got)
	}
}

func findTop(t *testing.T, f *Index, q string) Match {
	t.Helper()
	ms := f.Find(q, 5)
	if len(ms) == 0 {
		t.Fatalf("Find(%q) found nothing", q)
	}
	return ms[0]
}

func TestFindTypoTolerance(t *testing.T) {
	f := New(findSpecDocs())
	for q, want := range map[string]string{
		"regx":                    "regex-test",
		"regular expresion":       "regex-test",
		"chek my etherium adress": "evm-address-syntax",
		"stratgy grade":           "strategy-grade",
		"jwt decodr":              "jwt-decode",
		"volatilty of gold":       "xau-market-state",
		"stoploss":                "risk-levels", // compound split
	} {
		if m := findTop(t, f, q); m.Key != want {
			t.Errorf("Find(%q) top = %s, want %s", q, m.Key, want)
		}
	}
	// The typed form is reported.
	m := findTop(t, f, "regx")
	if !slices.Equal(m.MatchedTokens, []string{"regx"}) {
		t.Errorf("matched tokens of regx = %q", m.MatchedTokens)
	}
	// Too short to be corrected, and no first-letter change under 6 letters.
	for _, q := range []string{"rgx", "xegex"} {
		if ms := f.Find(q, 5); len(ms) != 0 {
			t.Errorf("Find(%q) = %v, want no match", q, ms)
		}
	}
}

func TestFindTypoDistance(t *testing.T) {
	f := New([]Doc{{Key: "a", Name: "candlestick"}, {Key: "b", Name: "walk"}})
	for q, want := range map[string]int{
		"candlestik": 1, // distance 1
		"cnadlestik": 2, // distance 2, 10 letters
		"wakl":       1, // transposition, 4 letters
	} {
		ms := f.Find(q, 0)
		if len(ms) != 1 {
			t.Errorf("Find(%q) = %v, want one match", q, ms)
			continue
		}
		_, d := f.typo(findStem(findTokenize(q, 0)[0]), q)
		if d != want {
			t.Errorf("typo distance of %q = %d, want %d", q, d, want)
		}
	}
	for _, q := range []string{"cnadlstck", "wlka", "wal"} { // distance 3; 2 on 4 letters; 3 letters
		if ms := f.Find(q, 0); len(ms) != 0 {
			t.Errorf("Find(%q) = %v, want no match", q, ms)
		}
	}
	// An exact hit outranks a typo hit.
	g := New([]Doc{{Key: "a", Name: "trend"}, {Key: "b", Name: "tread"}})
	if m := g.Find("trend", 0); len(m) != 1 || m[0].Key != "a" {
		t.Errorf("Find(trend) = %v, want only a", m)
	}
}

func TestFindEmptyQueries(t *testing.T) {
	f := New(findSpecDocs())
	for _, q := range []string{"", " ", "\t\n  ", "?!.,;", "the of and is", "what is it", "12345"} {
		if ms := f.Find(q, 5); len(ms) != 0 {
			t.Errorf("Find(%q) = %v, want no matches", q, ms)
		}
	}
	if ms := New(nil).Find("gold", 5); len(ms) != 0 {
		t.Errorf("empty finder found %v", ms)
	}
}

func TestFindLimitAndScores(t *testing.T) {
	f := New(findSpecDocs())
	all := f.Find("gold trading price bars data", 0)
	if len(all) < 6 {
		t.Fatalf("broad query matched only %d tools", len(all))
	}
	for _, limit := range []int{1, 2, 5, 20} {
		got := f.Find("gold trading price bars data", limit)
		if len(got) != min(limit, len(all)) {
			t.Errorf("limit %d: %d matches", limit, len(got))
		}
		if !slices.EqualFunc(got, all[:len(got)], func(a, b Match) bool { return a.Key == b.Key }) {
			t.Errorf("limit %d: %v is not a prefix of %v", limit, got, all)
		}
	}
	for i, m := range all {
		if m.Score <= 0 || m.Score >= 1 || math.IsNaN(m.Score) {
			t.Errorf("score %v out of (0, 1)", m.Score)
		}
		if i > 0 && m.Score > all[i-1].Score {
			t.Errorf("scores not descending: %v", all)
		}
		if len(m.MatchedTokens) == 0 {
			t.Errorf("%s matched without tokens", m.Key)
		}
	}
	// Matched tokens are the query's, in order, each once.
	m := findTop(t, f, "Gold gold PRICE now")
	// "now" is a stop word, matched here as part of the phrase "price now".
	if m.Key != "xau-quote" || !slices.Equal(m.MatchedTokens, []string{"gold", "price", "now"}) {
		t.Errorf("Find(Gold gold PRICE now) top = %+v", m)
	}
}

func TestFindTieBreakByKey(t *testing.T) {
	f := New([]Doc{{Key: "zeta", Name: "gold"}, {Key: "alpha", Name: "gold"}, {Key: "mid", Name: "gold"}})
	got := f.Find("gold", 0)
	keys := make([]string, len(got))
	for i, m := range got {
		keys[i] = m.Key
	}
	if !slices.Equal(keys, []string{"alpha", "mid", "zeta"}) {
		t.Errorf("tie order = %v, want alpha mid zeta", keys)
	}
	if got[0].Score != got[2].Score {
		t.Errorf("equal documents scored %v and %v", got[0].Score, got[2].Score)
	}
}

func TestFindFieldWeights(t *testing.T) {
	// The same word in a heavier field ranks higher (every document has
	// fields of the same lengths, so only the weights differ).
	fields := []string{"name", "tags", "syn", "fields", "desc"}
	var docs []Doc
	for i, key := range fields {
		w := func(field int) string {
			if field == i {
				return "beacon"
			}
			return fmt.Sprintf("%s%c", key, 'a'+field)
		}
		docs = append(docs, Doc{Key: key, Name: w(0), Tags: []string{w(1)}, Synonyms: map[string][]string{"en": {w(2)}}, Fields: []string{w(3)}, Description: w(4)})
	}
	var keys []string
	for _, m := range New(docs).Find("beacon", 0) {
		keys = append(keys, m.Key)
	}
	if !slices.Equal(keys, fields) {
		t.Errorf("field order = %v, want %v", keys, fields)
	}
}

func TestFindPhraseBonus(t *testing.T) {
	f := New([]Doc{
		{Key: "a", Name: "one", Synonyms: map[string][]string{"en": {"stop loss"}}},
		{Key: "b", Name: "two", Synonyms: map[string][]string{"en": {"loss", "stop"}}},
	})
	ms := f.Find("stop loss", 0)
	if len(ms) != 2 || ms[0].Key != "a" {
		t.Fatalf("Find(stop loss) = %v, want a first", ms)
	}
	// A phrase of stop words only is no signal.
	if ms := New([]Doc{{Key: "a", Name: "one", Synonyms: map[string][]string{"en": {"find all"}}}}).Find("find all", 0); len(ms) != 0 {
		t.Errorf("Find(find all) = %v, want nothing", ms)
	}
	// Not contiguous: no bonus, a tie broken by key.
	ms = f.Find("loss stop", 0)
	if len(ms) != 2 || ms[0].Score != ms[1].Score {
		t.Errorf("Find(loss stop) = %v, want equal scores", ms)
	}
}

func TestFindConcepts(t *testing.T) {
	f := New(findSpecDocs())
	for q, want := range map[string]string{
		"stop loss":          "risk-levels",
		"take profit":        "risk-levels",
		"gold":               "xau-quote",
		"bid ask":            "xau-quote",
		"candles":            "xau-bars",
		"validate wallet":    "evm-address-syntax",
		"decode token":       "jwt-decode",
		"p&l":                "tick-pnl",
		"walk forward":       "strategy-grade",
		"london open":        "session-state",
		"spreadsheet":        "csv-profile",
		"json structure":     "json-shape",
		"regular expression": "regex-test",
	} {
		if m := findTop(t, f, q); m.Key != want {
			t.Errorf("Find(%q) top = %s, want %s", q, m.Key, want)
		}
	}
	// "gold" reaches every gold tool.
	var gold []string
	for _, m := range f.Find("gold", 3) {
		gold = append(gold, m.Key)
	}
	slices.Sort(gold)
	if !slices.Equal(gold, []string{"xau-bars", "xau-market-state", "xau-quote"}) {
		t.Errorf("Find(gold) top 3 = %v", gold)
	}
}

func TestFindDeterministic(t *testing.T) {
	docs := findSpecDocs()
	f1, f2 := New(docs), New(docs)
	for _, in := range findLoadIntents(t, "find_eval.json") {
		a, b, c := f1.Find(in.Query, 0), f1.Find(in.Query, 0), f2.Find(in.Query, 0)
		if !findSameMatches(a, b) || !findSameMatches(a, c) {
			t.Fatalf("Find(%q) differs between calls or finders:\n%v\n%v\n%v", in.Query, a, b, c)
		}
	}
}

func findSameMatches(a, b []Match) bool {
	return slices.EqualFunc(a, b, func(x, y Match) bool {
		return x.Key == y.Key && x.Score == y.Score && slices.Equal(x.MatchedTokens, y.MatchedTokens)
	})
}

func TestFindDocsAreNotRetained(t *testing.T) {
	docs := findSpecDocs()
	f := New(docs)
	before := f.Find("stop loss", 3)
	for i := range docs {
		docs[i].Name, docs[i].Synonyms, docs[i].Description = "x", nil, ""
	}
	if after := f.Find("stop loss", 3); !findSameMatches(before, after) {
		t.Errorf("changing the docs changed the finder: %v → %v", before, after)
	}
}

func TestFindConcurrent(t *testing.T) {
	f := New(findSpecDocs())
	intents := findLoadIntents(t, "find_eval.json")
	want := make([][]Match, len(intents))
	for i, in := range intents {
		want[i] = f.Find(in.Query, 5)
	}
	var wg sync.WaitGroup
	errs := make(chan string, 8)
	for g := range 8 {
		wg.Go(func() {
			for i := range intents {
				j := (i + g*17) % len(intents)
				if got := f.Find(intents[j].Query, 5); !findSameMatches(got, want[j]) {
					select {
					case errs <- fmt.Sprintf("Find(%q) = %v, want %v", intents[j].Query, got, want[j]):
					default:
					}
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}

func TestFindLongQueryIsBounded(t *testing.T) {
	f := New(findSpecDocs())
	q := strings.Repeat("chek my etherium adress and the gold price ", 200)
	ms := f.Find(q, 3)
	if len(ms) == 0 || ms[0].Key != "evm-address-syntax" {
		t.Errorf("long query top = %v", ms)
	}
	// Garbage never panics.
	for _, q := range []string{strings.Repeat("\xff", 600), strings.Repeat("a", 5000), strings.Repeat("é", 3000), "\x00\x01"} {
		_ = f.Find(q, 5)
	}
}

func TestDocsFromTools(t *testing.T) {
	c, err := tools.New(tools.Options{})
	if err != nil {
		t.Fatal(err)
	}
	docs, err := DocsFromTools(c.All())
	if err != nil {
		t.Fatal(err)
	}
	synonyms := Synonyms()
	if len(docs) != c.Len() || len(synonyms) != c.Len() {
		t.Fatalf("%d docs for %d tools", len(docs), c.Len())
	}
	for i, tl := range c.All() {
		d := docs[i]
		if d.Key != tl.Key || d.Name != tl.Name || d.Description != tl.Description ||
			!slices.Equal(d.Tags, tl.Tags) || !slices.Equal(d.Fields, tl.Fields) {
			t.Errorf("doc %d = %+v does not mirror tool %s", i, d, tl.Key)
		}
		if len(d.Synonyms["en"]) == 0 || len(d.Synonyms) != len(synonyms[tl.Key]) {
			t.Errorf("doc %s does not carry the tool's synonyms", tl.Key)
		}
		if len(tl.Tags) > 0 {
			d.Tags[0] = "changed"
			if tl.Tags[0] == "changed" {
				t.Errorf("DocsFromTools shares the tags of %s", tl.Key)
			}
		}
	}
}

func ExampleIndex_Find() {
	f := New([]Doc{
		{Key: "risk-levels", Name: "Risk levels", Tags: []string{"trading", "risk"},
			Fields: []string{"entry", "direction", "slPct", "tpPct"}, Synonyms: map[string][]string{"en": {"stop loss", "stoploss", "take profit", "sl", "tp"}},
			Description: "Stop and target prices from an entry price, a direction and percentages."},
		{Key: "tick-pnl", Name: "Tick PnL", Tags: []string{"trading", "risk"},
			Fields: []string{"entry", "exit", "contracts", "tickSize", "tickValue", "direction"}, Synonyms: map[string][]string{"en": {"futures", "p&l", "profit and loss", "profit"}},
			Description: "Profit or loss of a futures trade in ticks and money."},
		{Key: "regex-test", Name: "Regex test", Tags: []string{"utility", "regex"},
			Fields: []string{"pattern", "flags", "text"}, Synonyms: map[string][]string{"en": {"regex", "regular expression", "pattern"}},
			Description: "Runs a JavaScript regular expression on a text."},
	})
	for _, q := range []string{"where do I put my stoploss and take-profit?", "regx", "the"} {
		fmt.Printf("%q:\n", q)
		for _, m := range f.Find(q, 3) {
			fmt.Printf("  %s %.2f %q\n", m.Key, m.Score, m.MatchedTokens)
		}
	}
	// Output:
	// "where do I put my stoploss and take-profit?":
	//   risk-levels 0.52 ["stoploss" "take" "profit"]
	//   tick-pnl 0.09 ["profit"]
	// "regx":
	//   regex-test 0.23 ["regx"]
	// "the":
}

// Every tool of the catalog has its synonyms: English ones at least,
// lower-case phrases keyed by ISO 639-1 codes; each call of Synonyms
// returns a table of its own.
func TestEveryToolHasSynonyms(t *testing.T) {
	c, err := tools.New(tools.Options{})
	if err != nil {
		t.Fatal(err)
	}
	table := Synonyms()
	for _, tool := range c.All() {
		syn := table[tool.Key]
		if len(syn["en"]) == 0 {
			t.Errorf("%s has no English synonyms", tool.Key)
		}
		for lang, words := range syn {
			for _, w := range words {
				if w != strings.ToLower(w) || strings.TrimSpace(w) == "" {
					t.Errorf("%s: synonym %q (%s) is not a lower-case phrase", tool.Key, w, lang)
				}
			}
		}
		if err := checkSynonyms(syn); err != nil {
			t.Errorf("%s: %v", tool.Key, err)
		}
	}
	for key := range table {
		if _, ok := c.ByKey(key); !ok {
			t.Errorf("synonyms of %q, which is not a tool", key)
		}
	}
	table["risk-levels"]["en"][0] = "changed"
	if Synonyms()["risk-levels"]["en"][0] == "changed" {
		t.Error("calls of Synonyms share their tables")
	}
}

// checkSynonyms refuses a table a tool could not be found by.
func TestCheckSynonyms(t *testing.T) {
	good := func() map[string][]string { return map[string][]string{"en": {"gold bars"}, "fr": {"bougies"}} }
	if err := checkSynonyms(good()); err != nil {
		t.Fatalf("good table: %v", err)
	}
	for name, mutate := range map[string]func(map[string][]string) map[string][]string{
		"no synonyms":   func(map[string][]string) map[string][]string { return nil },
		"no English":    func(m map[string][]string) map[string][]string { delete(m, "en"); return m },
		"language code": func(m map[string][]string) map[string][]string { m["french"] = []string{"bougies"}; return m },
		"upper case":    func(m map[string][]string) map[string][]string { m["en"] = []string{"Gold"}; return m },
		"blank synonym": func(m map[string][]string) map[string][]string { m["fr"] = []string{" "}; return m },
	} {
		if err := checkSynonyms(mutate(good())); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

package finder

import (
	"fmt"
	"sort"
	"testing"
	"time"
	"unicode/utf8"
)

// FuzzFind: no query makes the finder panic or hang; it returns at most
// limit matches, each a catalog key once, with scores in (0, 1) in
// non-increasing order.
func FuzzFind(f *testing.F) {
	for _, q := range []string{"stop loss for a long", "gold price now", "reggex tester", "csvprofile", "ATR", "", "   ",
		"¿qué hora abre Londres?", "\x00\xff", "a a a a a a a a a a a a a a a a a a a a a a a a a a a a a a a a a a a a a a a a",
		"supercalifragilisticexpialidocious-risk_reward/pnl.tick", "la session de Londres est-elle ouverte ?",
		"velas del oro de la última hora", "статистика по моим свечам OHLC", "明天东京的天气怎么样", "Gold-Kerzen der letzten Stunde"} {
		f.Add(q, 5)
	}
	fd := New(findCatalogDocs(f))
	keys := map[string]bool{}
	for _, d := range findCatalogDocs(f) {
		keys[d.Key] = true
	}
	f.Fuzz(func(t *testing.T, q string, limit int) {
		limit = limit%20 + 1
		if limit < 1 {
			limit += 20
		}
		wd := time.AfterFunc(10*time.Second, func() { panic(fmt.Sprintf("slow query %q", q)) })
		defer wd.Stop()
		ms := fd.Find(q, limit)
		if len(ms) > limit {
			t.Fatalf("%q: %d matches for limit %d", q, len(ms), limit)
		}
		seen := map[string]bool{}
		for _, m := range ms {
			if !keys[m.Key] || seen[m.Key] {
				t.Fatalf("%q: match %q unknown or repeated in %+v", q, m.Key, ms)
			}
			seen[m.Key] = true
			if !(m.Score > 0 && m.Score < 1) {
				t.Fatalf("%q: score %v of %s", q, m.Score, m.Key)
			}
		}
		if !sort.SliceIsSorted(ms, func(i, j int) bool { return ms[i].Score > ms[j].Score }) {
			t.Fatalf("%q: matches not by score: %+v", q, ms)
		}
	})
}

// FuzzFindStem: the stemmers never panic, in any language, on any word the
// tokenizer can produce, and a stem is valid UTF-8.
func FuzzFindStem(f *testing.F) {
	for _, w := range []string{"bougies", "estrategias", "свечам", "größe", "naïve", "ŉ", "ǅ", "ﬁ", "a\u0301", "x"} {
		f.Add(w)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, w := range findTokenize(s, findMaxTokens) {
			for _, lang := range []findLang{findEnglish, findFrench, findSpanish, findRussian, findAsWritten} {
				if st := findStemIn(w, lang); !utf8.ValidString(st) {
					t.Fatalf("stem of %q in %d is not UTF-8: %q", w, lang, st)
				}
			}
		}
	})
}

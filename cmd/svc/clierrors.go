package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
)

// errServerDown says that nothing listens at a server's URL.
var errServerDown = errors.New("no svc server answers")

// jsonInputError checks the value of --json and says where it breaks: the
// byte position (from 1) and what was found there.
func jsonInputError(s string) error {
	var v any
	err := json.Unmarshal([]byte(s), &v)
	if err == nil {
		if _, ok := v.(map[string]any); !ok {
			return usageError("--json must be a JSON object ({...}) holding the tool's input")
		}
		return nil
	}
	var se *json.SyntaxError
	if errors.As(err, &se) {
		pos := int(se.Offset)
		if pos > len(s) {
			pos = len(s)
		}
		return usageError(fmt.Sprintf("--json is not valid JSON at byte %d (%s): %s", pos, jsonContext(s, pos), se.Error()))
	}
	return usageError(fmt.Sprintf("--json is not valid JSON: %v", err))
}

// jsonContext shows the few bytes before pos, where a JSON syntax error
// was found, with a marker.
func jsonContext(s string, pos int) string {
	start := pos - 20
	if start < 0 {
		start = 0
	}
	return fmt.Sprintf("%q ← here", s[start:pos])
}

// closestKeys returns the known keys nearest to key (by edit distance, at
// most a third of the key's length, at least 2), or those sharing a word
// with it; best first, at most three.
func closestKeys(key string, keys []string) []string {
	type cand struct {
		key  string
		dist int
	}
	limit := len(key) / 3
	if limit < 2 {
		limit = 2
	}
	var cs []cand
	for _, k := range keys {
		d := editDistance(key, k)
		if d > limit {
			shared := false
			for _, w := range strings.Split(key, "-") {
				if len(w) >= 3 && strings.Contains(k, w) {
					shared = true
				}
			}
			if !shared {
				continue
			}
		}
		cs = append(cs, cand{k, d})
	}
	sort.SliceStable(cs, func(i, j int) bool { return cs[i].dist < cs[j].dist })
	var out []string
	for i := 0; i < len(cs) && i < 3; i++ {
		out = append(out, cs[i].key)
	}
	return out
}

// editDistance is the Levenshtein distance between a and b, in bytes.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

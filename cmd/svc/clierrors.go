package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/ethereum/go-ethereum/common"

	"github.com/seed1284c1d2/svc/internal/clip"
	"github.com/seed1284c1d2/svc/internal/envflag"
	"github.com/seed1284c1d2/svc/internal/evmaddr"
	"github.com/seed1284c1d2/svc/x402"
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
			return envflag.UsageError("--json must be a JSON object ({...}) holding the tool's input")
		}
		return nil
	}
	var se *json.SyntaxError
	if errors.As(err, &se) {
		pos := int(se.Offset)
		if pos > len(s) {
			pos = len(s)
		}
		return envflag.UsageError(fmt.Sprintf("--json is not valid JSON at byte %d (%s): %s", pos, jsonContext(s, pos), se.Error()))
	}
	return envflag.UsageError(fmt.Sprintf("--json is not valid JSON: %v", err))
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

// payToError checks an address flag (a wallet that receives payments):
// 0x and 40 hex digits, not the zero address, and the EIP-55 checksum when
// the letters are of both cases. A wrong checksum names the right spelling
// of the same digits, with the warning that it more often means a
// mistyped digit than a mistyped case.
func payToError(flagName, s string) error {
	s = strings.TrimSpace(s)
	a, ok := evmaddr.Parse(s)
	switch {
	case !ok:
		return envflag.UsageError(fmt.Sprintf("%s %q is not an address: want 0x followed by 40 hex digits", flagName, clip.Runes(s, 60)))
	case a == (common.Address{}):
		return envflag.UsageError(fmt.Sprintf("%s %s is the zero address: payments sent there are lost", flagName, s))
	case evmaddr.SpellingOf(s, a.Hex()) == evmaddr.BadChecksum:
		return envflag.UsageError(fmt.Sprintf("%s %s has a wrong EIP-55 checksum (the case of its letters): these digits spelled with their checksum are %s; "+
			"a wrong checksum usually means a mistyped digit, so check the address itself before using that spelling", flagName, s, a.Hex()))
	case !x402.IsValidAddress(s):
		return envflag.UsageError(fmt.Sprintf("%s %s: give it in lower case or in its EIP-55 form %s", flagName, s, a.Hex()))
	}
	return nil
}

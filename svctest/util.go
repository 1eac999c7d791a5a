package svctest

import (
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math/rand"
	"strings"
	"time"

	"github.com/leanovate/gopter"
	"golang.org/x/crypto/sha3"

	"github.com/seed1284c1d2/svc"
)

// This file holds the generators of the utility tools: jwt_decode,
// evm_address_syntax and regex_test.

// JWTDecodeRequest generates valid compact JWS tokens: a header object (alg
// among HS256, RS256, ES256, EdDSA and none, usually typ "JWT", sometimes a
// kid and extra members) and a payload object (registered claims such as
// sub, iss and aud, NumericDate claims exp, nbf and iat, integers beyond
// 2^53, decimals, nested objects, arrays, null, non-ASCII and escaped
// strings), each encoded as compact JSON (as encoding/json writes it) in
// base64url, mostly without padding and sometimes with it. The signature
// is 16 to 64 random bytes, or empty when alg is "none". Now is a fixed
// instant between 2000 and 2040 so that expired and notYetValid are
// deterministic. The token is sometimes wrapped in white space or prefixed
// with "Bearer ".
func JWTDecodeRequest() gopter.Gen {
	return func(p *gopter.GenParameters) *gopter.GenResult {
		r := p.Rng
		header, payload := utilJWTObjects(r)
		h, err := json.Marshal(header)
		if err != nil {
			panic(err) // generated values always marshal
		}
		pl, err := json.Marshal(payload)
		if err != nil {
			panic(err)
		}
		enc := base64.RawURLEncoding
		if r.Intn(5) == 0 {
			enc = base64.URLEncoding // padded
		}
		var sig []byte
		if header["alg"] != "none" {
			sig = make([]byte, 16+r.Intn(49))
			r.Read(sig)
		}
		tok := enc.EncodeToString(h) + "." + enc.EncodeToString(pl) + "." + base64.RawURLEncoding.EncodeToString(sig)
		switch r.Intn(8) {
		case 0:
			tok = "  " + tok + "\n"
		case 1:
			tok = "Bearer " + tok
		}
		now := time.Unix(946684800+r.Int63n(40*365*24*3600), 0).UTC()
		return gopter.NewGenResult(svc.JWTDecodeRequest{Token: tok, Now: now}, gopter.NoShrinker)
	}
}

// utilJWTObjects draws a header and a payload.
func utilJWTObjects(r *rand.Rand) (map[string]any, map[string]any) {
	algs := []string{"HS256", "RS256", "ES256", "EdDSA", "none"}
	header := map[string]any{"alg": algs[r.Intn(len(algs))]}
	if r.Intn(4) > 0 {
		header["typ"] = "JWT"
	}
	if r.Intn(2) == 0 {
		header["kid"] = fmt.Sprintf("key-%d", r.Intn(1000))
	}
	if r.Intn(5) == 0 {
		header["x5t"] = utilWord(r)
	}
	payload := map[string]any{}
	if r.Intn(4) > 0 {
		payload["sub"] = utilWord(r)
	}
	if r.Intn(2) == 0 {
		payload["iss"] = "https://issuer.example/" + utilWord(r)
	}
	if r.Intn(3) == 0 {
		payload["aud"] = []any{utilWord(r), utilWord(r)}
	}
	base := int64(946684800 + r.Int63n(40*365*24*3600))
	for _, c := range []string{"iat", "nbf", "exp"} {
		if r.Intn(3) > 0 {
			payload[c] = base + r.Int63n(7*24*3600) - 3600
		}
	}
	if r.Intn(3) == 0 {
		payload["big"] = json.Number(fmt.Sprintf("%d%09d", 9007199254+r.Int63n(1e6), r.Int63n(1e9)))
	}
	if r.Intn(3) == 0 {
		payload["ratio"] = json.Number(fmt.Sprintf("%d.%03d", r.Intn(100), r.Intn(1000)))
	}
	if r.Intn(3) == 0 {
		payload["nested"] = map[string]any{"roles": []any{"admin", utilWord(r)}, "active": r.Intn(2) == 0, "none": nil}
	}
	return header, payload
}

// utilWord draws a short string, sometimes with characters JSON escapes.
func utilWord(r *rand.Rand) string {
	words := []string{"alice", "bob", "Zoë", "日本", "a\"quote", "back\\slash", "tab\there", "<tag>&", "😀", "x"}
	return words[r.Intn(len(words))]
}

// EVMAddressSyntaxRequest generates syntactically valid addresses ("0x" and
// 40 hex digits) of random bytes, about a quarter each all lower case, all
// upper case, EIP-55 checksummed (computed here with Keccak-256,
// independently of svc) and in random mixed case; one in twenty is the
// zero address.
func EVMAddressSyntaxRequest() gopter.Gen {
	return func(p *gopter.GenParameters) *gopter.GenResult {
		r := p.Rng
		b := make([]byte, 20)
		if r.Intn(20) > 0 {
			r.Read(b)
		}
		h := hex.EncodeToString(b)
		switch r.Intn(4) {
		case 1:
			h = strings.ToUpper(h)
		case 2:
			h = utilEIP55(h)
		case 3:
			c := []byte(h)
			for i := range c {
				if c[i] >= 'a' && r.Intn(2) == 0 {
					c[i] -= 'a' - 'A'
				}
			}
			h = string(c)
		}
		return gopter.NewGenResult(svc.EVMAddressSyntaxRequest{Address: "0x" + h}, gopter.NoShrinker)
	}
}

// utilEIP55 returns the EIP-55 mixed-case form of 40 hex digits (without
// "0x"): letter i is upper case when nibble i of the legacy Keccak-256 of
// the lower-case digits is 8 or more. It is an independent implementation
// for tests.
func utilEIP55(hexDigits string) string {
	lower := strings.ToLower(hexDigits)
	k := sha3.NewLegacyKeccak256()
	k.Write([]byte(lower))
	sum := k.Sum(nil)
	out := []byte(lower)
	for i, c := range out {
		n := sum[i/2] >> 4
		if i%2 == 1 {
			n = sum[i/2] & 0x0f
		}
		if c >= 'a' && n >= 8 {
			out[i] = c - 'a' + 'A'
		}
	}
	return string(out)
}

// RegexTestRequest generates safe regex_test requests: patterns from a
// small grammar (literals, escapes, ., \d \w \s \b, classes, groups,
// named and non-capturing groups, lookahead, alternation, and the
// quantifiers ?, *, +, {m,n} and their lazy forms applied to single
// characters or to groups without quantifiers inside, so that matching
// never backtracks catastrophically), flags drawn from d, g, i, m, s, u, y,
// and a text of up to 60 characters drawn from the pattern's alphabet plus
// line breaks, spaces, accented letters and an emoji. Every request passes
// validation.
func RegexTestRequest() gopter.Gen {
	return func(p *gopter.GenParameters) *gopter.GenResult {
		r := p.Rng
		g := &utilRegexGen{r: r}
		pattern := g.alternation(0)
		var flags strings.Builder
		for _, f := range "dgimsuy" {
			if r.Intn(3) == 0 {
				flags.WriteRune(f)
			}
		}
		alphabet := []string{"a", "b", "c", "A", "B", "x", "1", "2", " ", "-", "_", "\n", "é", "ß", "😀", ".", "ab", "abc"}
		var text strings.Builder
		for n := r.Intn(25); n > 0; n-- {
			text.WriteString(alphabet[r.Intn(len(alphabet))])
		}
		return gopter.NewGenResult(svc.RegexTestRequest{Pattern: pattern, Flags: flags.String(), Text: text.String()}, gopter.NoShrinker)
	}
}

// utilRegexGen builds patterns of RegexTestRequest.
type utilRegexGen struct {
	r      *rand.Rand
	groups int
}

func (g *utilRegexGen) alternation(depth int) string {
	n := 1
	if g.r.Intn(4) == 0 {
		n = 2 + g.r.Intn(2)
	}
	parts := make([]string, n)
	for i := range parts {
		parts[i] = g.sequence(depth)
	}
	return strings.Join(parts, "|")
}

func (g *utilRegexGen) sequence(depth int) string {
	var b strings.Builder
	for n := 1 + g.r.Intn(4); n > 0; n-- {
		b.WriteString(g.term(depth))
	}
	return b.String()
}

func (g *utilRegexGen) term(depth int) string {
	singles := []string{"a", "b", "c", "x", "1", "\\d", "\\w", "\\s", ".", "[a-c]", "[^x]", "[ab1]", "\\.", "-", "é", "\\u0041", "\\x62"}
	quants := []string{"?", "*", "+", "{1,2}", "{0,3}", "{2}"}
	r := g.r
	switch k := r.Intn(10); {
	case k < 6 || depth >= 2:
		t := singles[r.Intn(len(singles))]
		if r.Intn(3) == 0 {
			t += quants[r.Intn(len(quants))]
			if r.Intn(3) == 0 {
				t += "?"
			}
		}
		return t
	case k == 6:
		return []string{"^", "$", "\\b"}[r.Intn(3)]
	default:
		inner := g.flat()
		var t string
		switch r.Intn(4) {
		case 0:
			t = "(?:" + inner + ")"
		case 1:
			g.groups++
			t = fmt.Sprintf("(?<n%d>%s)", g.groups, inner)
		case 2:
			t = "(?=" + inner + ")"
			return t
		default:
			g.groups++
			t = "(" + inner + ")"
		}
		if r.Intn(3) == 0 {
			t += quants[r.Intn(len(quants))]
		}
		return t
	}
}

// flat returns a group body without quantifiers: one or two alternatives
// of one to three characters.
func (g *utilRegexGen) flat() string {
	atoms := []string{"a", "b", "c", "x", "1", "\\d", "\\w", "[ab]", "é"}
	alt := func() string {
		var b strings.Builder
		for n := 1 + g.r.Intn(3); n > 0; n-- {
			b.WriteString(atoms[g.r.Intn(len(atoms))])
		}
		return b.String()
	}
	if g.r.Intn(3) == 0 {
		return alt() + "|" + alt()
	}
	return alt()
}

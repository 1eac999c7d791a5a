package svc_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/leanovate/gopter"
	"github.com/leanovate/gopter/prop"

	"github.com/seed1284c1d2/svc"
	"github.com/seed1284c1d2/svc/svctest"
)

func regexRun(t *testing.T, pattern, flags, text string) svc.RegexTestResponse {
	t.Helper()
	// a generous limit: the race detector slows matching down tenfold
	resp, err := svc.RegexTest(context.Background(), svc.RegexTestRequest{Pattern: pattern, Flags: flags, Text: text, Timeout: 30 * time.Second})
	if err != nil {
		t.Fatalf("/%.60s/%s on %.60q: %v", pattern, flags, text, err)
	}
	return resp
}

// TestRegexTestJSON pins the JSON form of a response.
func TestRegexTestJSON(t *testing.T) {
	r := regexRun(t, `(?<key>\w+)=(\d+)?`, "g", "a=1 b= c=33")
	want := `{"matched":true,"matches":["a=1","b=","c=33"],"details":[` +
		`{"index":0,"match":"a=1","groups":["a","1"],"namedGroups":{"key":"a"}},` +
		`{"index":4,"match":"b=","groups":["b",null],"namedGroups":{"key":"b"}},` +
		`{"index":7,"match":"c=33","groups":["c","33"],"namedGroups":{"key":"c"}}],` +
		`"truncated":false,"flags":"g","groupCount":2}`
	if got := utilJSON(t, r); got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	r = regexRun(t, `x`, "", "abc")
	if got, want := utilJSON(t, r), `{"matched":false,"matches":[],"details":[],"truncated":false,"flags":"","groupCount":0}`; got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

func TestRegexTestFirstMatchWithoutGlobal(t *testing.T) {
	r := regexRun(t, `\d+`, "", "a 12 345")
	if !r.Matched || len(r.Matches) != 1 || r.Matches[0] != "12" || r.Details[0].Index != 2 {
		t.Errorf("%+v", r)
	}
}

func TestRegexTestFlagsNormalized(t *testing.T) {
	if r := regexRun(t, `a`, "yusmigd", "a"); r.Flags != "dgimsuy" {
		t.Errorf("flags %q", r.Flags)
	}
}

// TestRegexTestUTF16Indices: indices count UTF-16 code units, with or
// without the u flag.
func TestRegexTestUTF16Indices(t *testing.T) {
	for _, flags := range []string{"d", "du"} {
		r := regexRun(t, `(b)`, flags, "😀é😀b")
		if d := r.Details[0]; d.Index != 5 || d.Indices[0][0] != 5 || d.Indices[1][1] != 6 {
			t.Errorf("flags %s: %+v", flags, d)
		}
	}
	r := regexRun(t, `^.$`, "", "😀")
	if r.Matched {
		t.Error("without u the dot matches one code unit, not an emoji")
	}
	if r := regexRun(t, `^.$`, "u", "😀"); !r.Matched {
		t.Error("with u the dot matches a code point")
	}
}

// TestRegexTestLoneSurrogates: a match splitting a surrogate pair is kept
// as WTF-8 in Go and written as a \u escape in JSON; WTF-8 input is read
// back as the same code unit.
func TestRegexTestLoneSurrogates(t *testing.T) {
	r := regexRun(t, `.`, "g", "😀")
	if len(r.Matches) != 2 || r.Matches[0] != "\xed\xa0\xbd" || r.Matches[1] != "\xed\xb8\x80" {
		t.Fatalf("%q", r.Matches)
	}
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"matches":["\ud83d","\ude00"]`) || !utf8.Valid(b) {
		t.Errorf("JSON %s", b)
	}
	r = regexRun(t, `\uD83D`, "", "a"+r.Matches[0]+"b")
	if !r.Matched || r.Details[0].Index != 1 {
		t.Errorf("WTF-8 input: %+v", r)
	}
}

// TestRegexTestV8MidPairQuirk: V8's unicode-mode search also tries the
// position inside a surrogate pair; an empty match there is reported like
// V8 does.
func TestRegexTestV8MidPairQuirk(t *testing.T) {
	r := regexRun(t, `\B`, "gu", "b😁ſ")
	var idx []int
	for _, d := range r.Details {
		idx = append(idx, d.Index)
	}
	if len(idx) != 3 || idx[0] != 2 || idx[1] != 3 || idx[2] != 4 {
		t.Errorf("indices %v, V8 gives [2 3 4]", idx)
	}
}

func TestRegexTestEmptyMatchesAdvance(t *testing.T) {
	for _, c := range []struct {
		pattern, flags, text string
		want                 []string
	}{
		{`a*`, "g", "baaa", []string{"", "aaa", ""}},
		{`(?:)`, "g", "ab", []string{"", "", ""}},
		{``, "g", "😀", []string{"", "", ""}},
		{``, "gu", "😀", []string{"", ""}},
		{`a|`, "gy", "aab", []string{"a", "a", "", ""}},
	} {
		r := regexRun(t, c.pattern, c.flags, c.text)
		if strings.Join(r.Matches, ",") != strings.Join(c.want, ",") || len(r.Matches) != len(c.want) {
			t.Errorf("/%s/%s on %q: %q, want %q", c.pattern, c.flags, c.text, r.Matches, c.want)
		}
	}
}

func TestRegexTestSticky(t *testing.T) {
	if r := regexRun(t, `b`, "y", "ab"); r.Matched {
		t.Error("sticky must match at 0 only")
	}
	r := regexRun(t, `\d`, "gy", "12a3")
	if strings.Join(r.Matches, ",") != "1,2" {
		t.Errorf("%q", r.Matches)
	}
}

func TestRegexTestFlagErrors(t *testing.T) {
	for _, c := range []struct{ flags, msg string }{
		{"v", "flags: flag v (unicodeSets) is not supported by this engine; use u"},
		{"gg", `flags: flag 'g' appears more than once`},
		{"x", `flags: unknown flag "x"; the flags are d, g, i, m, s, u and y`},
		{"G", `flags: unknown flag "G"`},
	} {
		_, err := svc.RegexTest(context.Background(), svc.RegexTestRequest{Pattern: "a", Flags: c.flags, Text: "a"})
		f := utilWantField(t, err, svc.KindInvalid, "flags", "regex_flags")
		if !strings.HasPrefix(f.Message, c.msg) {
			t.Errorf("%q: message %q", c.flags, f.Message)
		}
	}
	_, err := svc.RegexTest(context.Background(), svc.RegexTestRequest{Pattern: "a", Flags: "xvgg", Text: "a"})
	var e *svc.Error
	if !errors.As(err, &e) || len(e.Fields) != 3 {
		t.Errorf("want the three flag problems at once: %v", err)
	}
}

func TestRegexTestPatternErrors(t *testing.T) {
	for _, c := range []struct{ pattern, flags, rule, msg string }{
		{`(a`, "", "regex_syntax", "pattern: invalid regular expression: unterminated group (at character 2)"},
		{`a)`, "", "regex_syntax", "unmatched ')' (at character 1)"},
		{`[b-a]`, "", "regex_syntax", "range out of order in character class"},
		{`a{2,1}`, "", "regex_syntax", "numbers out of order in {} quantifier"},
		{`*`, "", "regex_syntax", "nothing to repeat (at character 0)"},
		{`(?<n>a)(?<n>b)`, "", "regex_syntax", `duplicate capture group name "n"`},
		{`\k<x>(?<n>a)`, "", "regex_syntax", `no group named "x"`},
		{`\a`, "u", "regex_syntax", "invalid escape"},
		{`\p{Nope}`, "u", "regex_syntax", `invalid property name "Nope"`},
		{`(?i:a)`, "", "regex_syntax", "invalid group"},
		{`\p{Emoji}`, "u", "regex_unsupported", `property "Emoji" is not supported by this engine`},
		{`\p{scx=Latn}`, "u", "regex_unsupported", "is not supported by this engine"},
		{`(a*)(?:\1|b)*`, "", "regex_unsupported", "a backreference to group 1, which can capture the empty string"},
	} {
		_, err := svc.RegexTest(context.Background(), svc.RegexTestRequest{Pattern: c.pattern, Flags: c.flags, Text: "a"})
		f := utilWantField(t, err, svc.KindInvalid, "pattern", c.rule)
		if !strings.Contains(f.Message, c.msg) {
			t.Errorf("/%s/%s: message %q does not contain %q", c.pattern, c.flags, f.Message, c.msg)
		}
	}
}

func TestRegexTestAnnexBWithoutUnicode(t *testing.T) {
	for _, c := range []struct{ pattern, text, want string }{
		{`a{`, "a{", "a{"},
		{`]`, "]", "]"},
		{`\8`, "8", "8"},
		{`\1`, "\x01", "\x01"},
		{`\c`, `\c`, `\c`},
		{`\k<a>`, "k<a>", "k<a>"},
		{`[\d-z]+`, "1-z", "1-z"},
	} {
		r := regexRun(t, c.pattern, "", c.text)
		if !r.Matched || r.Matches[0] != c.want {
			t.Errorf("/%s/ on %q: %+v", c.pattern, c.text, r)
		}
	}
}

func TestRegexTestCaseInsensitive(t *testing.T) {
	for _, c := range []struct {
		pattern, flags, text string
		want                 bool
	}{
		{`k`, "i", "\u212a", false}, // Kelvin sign: no simple upper-case mapping to K
		{`k`, "iu", "\u212a", true}, // but the same simple case folding
		{`\u017f`, "i", "s", false},
		{`\u017f`, "iu", "S", true},
		{`\u00df`, "iu", "\u1e9e", true},
		{`\u1f80`, "i", "\u1f88", false}, // its full upper case has two characters
		{`(a)\1`, "i", "aA", true},
		{`\w`, "iu", "\u017f", true},
		{`\W`, "iu", "S", false},
		{`[^k]`, "iu", "K", false},
	} {
		if r := regexRun(t, c.pattern, c.flags, c.text); r.Matched != c.want {
			t.Errorf("/%s/%s on %q: matched %v, want %v", c.pattern, c.flags, c.text, r.Matched, c.want)
		}
	}
}

func TestRegexTestQuantifiedGroupsFollowJavaScript(t *testing.T) {
	r := regexRun(t, `(z)((a+)?(b+)?(c))*`, "", "zaacbbbcac")
	got := utilJSON(t, r.Details[0].Groups)
	if want := `["z","ac","a",null,"c"]`; got != want {
		t.Errorf("groups %s, want %s (ECMA-262 example)", got, want)
	}
	if r := regexRun(t, `(?:|a)*`, "", "aaa"); r.Matches[0] != "aaa" {
		t.Errorf("empty iterations are rejected in JavaScript: %q", r.Matches)
	}
	if r := regexRun(t, `(a*)*`, "", "b"); r.Details[0].Groups[0] != nil {
		t.Errorf("group of a rejected empty iteration must be undefined: %+v", r.Details[0])
	}
}

func TestRegexTestTooLarge(t *testing.T) {
	_, err := svc.RegexTest(context.Background(), svc.RegexTestRequest{Pattern: strings.Repeat("a", 4<<10+1), Text: "a"})
	utilWantField(t, err, svc.KindTooLarge, "pattern", "max_bytes")
	_, err = svc.RegexTest(context.Background(), svc.RegexTestRequest{Pattern: "a", Text: strings.Repeat("a", 1<<20+1)})
	utilWantField(t, err, svc.KindTooLarge, "text", "max_bytes")
	// the limits themselves are accepted
	r := regexRun(t, strings.Repeat("a", 4<<10), "", strings.Repeat("a", 1<<20))
	if !r.Matched {
		t.Error("4 KiB pattern on 1 MiB text should match")
	}
}

func TestRegexTestTruncated(t *testing.T) {
	r := regexRun(t, `a`, "g", strings.Repeat("a", 10001))
	if !r.Truncated || len(r.Matches) != 10000 || len(r.Details) != 10000 {
		t.Errorf("truncated %v, %d matches", r.Truncated, len(r.Matches))
	}
	if r := regexRun(t, `a`, "g", strings.Repeat("a", 10000)); r.Truncated || len(r.Matches) != 10000 {
		t.Errorf("exactly 10000 matches are not truncated: %v %d", r.Truncated, len(r.Matches))
	}
	// every match captures the rest of the text: the 8 MiB output limit stops it
	r = regexRun(t, `(?=([\s\S]*))`, "g", strings.Repeat("x", 1<<17))
	if !r.Truncated || len(r.Matches) >= 10000 {
		t.Errorf("output limit: truncated %v, %d matches", r.Truncated, len(r.Matches))
	}
}

// regexCatastrophic is (a+)+$ on 5000 a's and a b: exponential
// backtracking.
var regexCatastrophic = svc.RegexTestRequest{Pattern: `(a+)+$`, Text: strings.Repeat("a", 5000) + "b"}

func TestRegexTestReDoSTimesOut(t *testing.T) {
	for _, limit := range []time.Duration{0, 30 * time.Millisecond} {
		req := regexCatastrophic
		req.Timeout = limit
		start := time.Now()
		_, err := svc.RegexTest(context.Background(), req)
		elapsed := time.Since(start)
		var e *svc.Error
		if !errors.As(err, &e) || e.Kind != svc.KindTimeout {
			t.Fatalf("want a timeout, got %v", err)
		}
		want := limit
		if want == 0 {
			want = svc.RegexDefaultTimeout
		}
		if !strings.Contains(e.Message, "within the "+want.String()+" time limit") {
			t.Errorf("message %q", e.Message)
		}
		if elapsed > want+time.Second { // generous: the limit is measured by the benchmark
			t.Errorf("took %v for a %v limit", elapsed, want)
		}
	}
}

func TestRegexTestContextDeadline(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	req := regexCatastrophic
	req.Timeout = time.Minute
	start := time.Now()
	_, err := svc.RegexTest(ctx, req)
	if svc.KindOf(err) != svc.KindTimeout || time.Since(start) > 5*time.Second {
		t.Fatalf("want a timeout at the context deadline, got %v after %v", err, time.Since(start))
	}
	canceled, cancel2 := context.WithCancel(context.Background())
	cancel2()
	if _, err := svc.RegexTest(canceled, svc.RegexTestRequest{Pattern: "a", Text: "a"}); svc.KindOf(err) != svc.KindTimeout {
		t.Fatalf("canceled context: %v", err)
	}
}

func TestRegexTestRequestJSON(t *testing.T) {
	var req svc.RegexTestRequest
	if err := json.Unmarshal([]byte(`{"pattern":"a+","flags":"g","text":"caat","Timeout":5}`), &req); err != nil {
		t.Fatal(err)
	}
	if req.Pattern != "a+" || req.Flags != "g" || req.Text != "caat" || req.Timeout != 0 {
		t.Errorf("%+v", req)
	}
}

// regexUnits returns s as UTF-16 code units, reading WTF-8 surrogates as
// code units and any other invalid byte as U+FFFD, as RegexTest does.
func regexUnits(s string) []uint16 {
	var u []uint16
	for i := 0; i < len(s); {
		if s[i] == 0xED && i+2 < len(s) && s[i+1] >= 0xA0 && s[i+1] <= 0xBF && s[i+2]&0xC0 == 0x80 {
			u = append(u, uint16(s[i]&0x0F)<<12|uint16(s[i+1]&0x3F)<<6|uint16(s[i+2]&0x3F))
			i += 3
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		u = utf16.AppendRune(u, r)
		i += size
	}
	return u
}

// regexCheckInvariants checks a response against its text: matched iff
// there are matches, one detail per match, and every match and group is
// the text at its index.
func regexCheckInvariants(text string, r svc.RegexTestResponse) string {
	if r.Matched != (len(r.Matches) > 0) || len(r.Details) != len(r.Matches) {
		return "matched/matches/details disagree"
	}
	units := regexUnits(text)
	at := func(i int, s string) bool {
		su := regexUnits(s)
		if i < 0 || i+len(su) > len(units) {
			return false
		}
		for k, c := range su {
			if units[i+k] != c {
				return false
			}
		}
		return true
	}
	last := -1
	for i, d := range r.Details {
		if d.Match != r.Matches[i] || !at(d.Index, d.Match) {
			return "match is not the text at its index"
		}
		if d.Index < last {
			return "matches out of order"
		}
		last = d.Index
		if d.Indices != nil {
			for k, g := range d.Groups {
				p := d.Indices[k+1]
				if (g == nil) != (p == nil) || (g != nil && (!at(p[0], *g) || p[1]-p[0] != len(regexUnits(*g)))) {
					return "group is not the text at its indices"
				}
			}
		}
	}
	return ""
}

// propertyRegexTimeout is the time limit of the property tests' calls:
// they check what is matched, and the default limit (100 ms) can be hit by
// a small pattern on a loaded machine.
const propertyRegexTimeout = 10 * time.Second

func TestRegexTestProperties(t *testing.T) {
	params := gopter.DefaultTestParameters()
	params.MinSuccessfulTests = 500
	properties := gopter.NewProperties(params)
	properties.Property("matched iff matches, and every match is the text at its index", prop.ForAll(
		func(req svc.RegexTestRequest) string {
			req.Timeout = propertyRegexTimeout
			r, err := svc.RegexTest(context.Background(), req)
			if err != nil {
				return err.Error()
			}
			return regexCheckInvariants(req.Text, r)
		},
		svctest.RegexTestRequest(),
	))
	properties.Property("without g there is at most one match, the first of the g search", prop.ForAll(
		func(req svc.RegexTestRequest) bool {
			req.Timeout = propertyRegexTimeout
			one := req
			one.Flags = strings.ReplaceAll(req.Flags, "g", "")
			all := req
			if !strings.Contains(all.Flags, "g") {
				all.Flags += "g"
			}
			r1, err1 := svc.RegexTest(context.Background(), one)
			rg, err2 := svc.RegexTest(context.Background(), all)
			if err1 != nil || err2 != nil || len(r1.Matches) > 1 || r1.Matched != rg.Matched {
				return false
			}
			return !r1.Matched || (r1.Details[0].Index == rg.Details[0].Index && r1.Matches[0] == rg.Matches[0])
		},
		svctest.RegexTestRequest(),
	))
	properties.TestingRun(t)
}

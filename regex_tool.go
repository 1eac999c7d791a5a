package svc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"sync/atomic"
	"time"

	"github.com/dlclark/regexp2"

	"github.com/seed1284c1d2/svc/internal/clip"
	"github.com/seed1284c1d2/svc/internal/jsregex"
)

// Limits of RegexTest.
const (
	// RegexDefaultTimeout is the time limit of a RegexTest call when the
	// request sets none.
	RegexDefaultTimeout = 100 * time.Millisecond
	// regexMaxMatches is the number of matches returned at most.
	regexMaxMatches = 10000
	// regexMaxOutputBytes bounds the text returned in matches and groups.
	regexMaxOutputBytes = 8 << 20
)

// RegexTestRequest is the input of RegexTest.
type RegexTestRequest struct {
	// Pattern is the JavaScript regular expression source, without the
	// slashes: "(\\d+)-(\\d+)" for /(\d+)-(\d+)/. At most 4 KiB. The empty
	// pattern is valid (like new RegExp("")) and matches the empty string.
	Pattern string `json:"pattern" validate:"max_bytes=4096"`
	// Flags are JavaScript flags, each at most once, in any order: d
	// (indices), g (global), i (ignore case), m (multiline), s (dotAll), u
	// (unicode), y (sticky). Optional.
	Flags string `json:"flags,omitempty"`
	// Text is the string to search; at most 1 MiB. It may be empty.
	Text string `json:"text" validate:"max_bytes=1048576"`
	// Timeout is the time limit of the call (compilation and all matches
	// together); zero or negative means RegexDefaultTimeout. It is set by
	// the operator and is never read from JSON.
	Timeout time.Duration `json:"-"`
}

// RegexMatch is one match. Index and Indices count UTF-16 code units, like
// JavaScript's match.index and lastIndex.
type RegexMatch struct {
	// Index is where the match starts.
	Index int `json:"index"`
	// Match is the matched substring (match[0] in JavaScript).
	Match string `json:"match"`
	// Groups holds the capture groups 1..n in order; nil (JSON null) for a
	// group that did not take part in the match (undefined in JavaScript).
	Groups []*string `json:"groups"`
	// NamedGroups maps each group name of the pattern to its capture (nil
	// when the group did not take part); omitted when the pattern has no
	// named group.
	NamedGroups map[string]*string `json:"namedGroups,omitempty"`
	// Indices, with the d flag only, holds [start, end] of the match and of
	// each group (nil for a group that did not take part), like
	// JavaScript's match.indices.
	Indices [][]int `json:"indices,omitempty"`
}

// RegexTestResponse is the output of RegexTest.
type RegexTestResponse struct {
	// Matched reports whether there is at least one match.
	Matched bool `json:"matched"`
	// Matches are the matched substrings: with the g flag all of them, as
	// text.match(re) returns; without it the first match only. Never nil.
	Matches []string `json:"matches"`
	// Details has one entry per element of Matches.
	Details []RegexMatch `json:"details"`
	// Truncated is true when matching stopped after 10 000 matches or 8 MiB
	// of returned text; Matches then holds those found so far.
	Truncated bool `json:"truncated"`
	// Flags are the flags in canonical order ("dgimsuy").
	Flags string `json:"flags"`
	// GroupCount is the number of capture groups of the pattern.
	GroupCount int `json:"groupCount"`
}

// RegexTest runs a JavaScript regular expression on a text, with the
// semantics of String.prototype.match and RegExp.prototype.exec in V8.
//
// Matching: without the g flag the first match is returned, with its
// capture groups. With g, matching restarts where the previous match ended
// and returns every match, as text.match(re) does; after an empty match
// the search moves on by one UTF-16 code unit (by one code point with the
// u flag), as JavaScript's AdvanceStringIndex does. With y (sticky) a match
// must start exactly where the search starts (0, then the end of the
// previous match with g), so g+y returns a run of adjacent matches. Like
// V8, a search with u and without y also tries the position between the
// two halves of a surrogate pair, where only an empty match made of
// assertions such as \B or (?<!x) can succeed: V8 reports such a match
// there (index inside the pair) and so does RegexTest.
//
// Indices are in UTF-16 code units, as in JavaScript: "😀a".indexOf("a")
// is 2. Without the u flag the pattern and the text are sequences of code
// units, so /^.$/ does not match "😀" and /./g splits it into two lone
// surrogates; with u they are code points. A lone surrogate in a returned
// string is kept as its 3-byte WTF-8 form in Go and written as a \uXXXX
// escape in JSON, exactly as JSON.stringify writes it; lone surrogates in
// the input (WTF-8) are read the same way.
//
// The engine is github.com/dlclark/regexp2 (ECMAScript mode), driven by a
// translation of the JavaScript pattern that reproduces V8's results: the
// ECMA-262 2024 syntax, as Node 20 accepts it (so the ES2025 modifiers
// (?i:...) and duplicate group names are syntax errors), with the
// web-compatibility rules of Annex B without u (legacy octal escapes,
// literal braces, \c quirks); \d \w \s, the dot and
// \b as defined by ECMA-262; case-insensitive matching by the
// Canonicalize rules of ECMA-262 (simple case folding with u, upper-case
// mapping without it); JavaScript's left-to-right group numbering, the reset
// of a quantified group's captures at each iteration and the rejection of
// empty optional iterations; lookbehind matched right to left. Unicode
// property escapes (\p{...}, u flag) cover every General_Category and
// Script value and most binary properties; the data is Go's Unicode 15.0,
// so characters assigned later can differ from a newer V8. Constructs this
// engine cannot reproduce exactly are rejected, never answered differently:
// the v flag, Script_Extensions and the binary properties without data in
// Go (Emoji, Extended_Pictographic, Case_Ignorable, Changes_When_*, XID_*,
// Bidi_Mirrored, Default_Ignorable_Code_Point), a backreference to a group
// that can capture the empty string at the start of a quantified group that
// can match the empty string, and a pattern whose translation exceeds
// 256 KiB (about 30 \p{L} escapes, or groups nested hundreds deep).
//
// Errors: an unknown, repeated or v flag is invalid input on field "flags"
// (rule "regex_flags"); a pattern JavaScript rejects is invalid input on
// field "pattern" (rule "regex_syntax", with the reason and the position);
// an unsupported construct likewise (rule "regex_unsupported"). A pattern
// over 4 KiB or a text over 1 MiB is KindTooLarge (rule "max_bytes").
// The specification marks pattern and text as required, but a Go string
// cannot tell an absent field from an empty one: RegexTest accepts the
// empty pattern (a valid regular expression, as new RegExp("") is) and the
// empty text; a JSON adapter that must reject absent fields checks their
// presence itself.
//
// Time limit: compilation and every match of a g search together run under
// req.Timeout (default 100 ms) and the context's deadline, whichever is
// earlier. Parsing and translating the pattern come first and are not
// counted: they are bounded by the size limits (a few milliseconds at
// most), plus, once per process, building the Unicode tables they need. Past it the call returns a
// KindTimeout error at once (within a few milliseconds of the limit), which
// is what a catastrophically backtracking pattern such as (a+)+$ on
// "aaaa…b" produces. The matcher itself stops at its next check: regexp2
// checks its own MatchTimeout against a clock that ticks every 100 ms, so
// the abandoned matching goroutine may burn CPU for up to about 0.2 s more
// before it exits. (regexp2's only finer knob, SetTimeoutCheckPeriod, is a
// package-level setting that this library must not change.)
//
// Output limits: at most 10 000 matches and 8 MiB of returned text; beyond
// them the response holds the matches so far and truncated is true.
func RegexTest(ctx context.Context, req RegexTestRequest) (RegexTestResponse, error) {
	if err := ctx.Err(); err != nil {
		return RegexTestResponse{}, errorf(KindTimeout, err, "regex_test: %v", err)
	}
	limit := req.Timeout
	if limit <= 0 {
		limit = RegexDefaultTimeout
	}
	prog, err := req.prepare()
	if err != nil {
		return RegexTestResponse{}, err
	}
	if err := ctx.Err(); err != nil {
		return RegexTestResponse{}, errorf(KindTimeout, err, "regex_test: %v", err)
	}

	start := time.Now()
	deadline := start.Add(limit)
	ctxFirst := false
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline, ctxFirst = d, true
	}
	type outcome struct {
		resp RegexTestResponse
		err  error
	}
	done := make(chan outcome, 1)
	var stop atomic.Bool
	go func() {
		defer func() {
			if r := recover(); r != nil {
				done <- outcome{err: errorf(KindInternal, fmt.Errorf("regex_test panic: %v", r), "regex_test: internal error")}
			}
		}()
		resp, err := regexRun(prog, req.Text, deadline, limit, &stop)
		done <- outcome{resp, err}
	}()
	timer := time.NewTimer(time.Until(deadline))
	defer timer.Stop()
	select {
	case o := <-done:
		return o.resp, o.err
	case <-timer.C:
		stop.Store(true)
		if ctxFirst {
			return RegexTestResponse{}, errorf(KindTimeout, context.DeadlineExceeded,
				"regex_test: the caller's deadline passed before matching finished")
		}
		return RegexTestResponse{}, regexTimeoutError(limit, nil)
	case <-ctx.Done():
		stop.Store(true)
		return RegexTestResponse{}, errorf(KindTimeout, ctx.Err(), "regex_test: stopped: %v", ctx.Err())
	}
}

// Validate reports whether RegexTest accepts req, without matching: the
// sizes, the flags and the pattern's syntax. It returns the error RegexTest
// returns for them, or nil.
func (req *RegexTestRequest) Validate() error {
	_, err := req.prepare()
	return err
}

// regexTestTags are the compiled validate tags of RegexTestRequest.
var regexTestTags = compileTags[RegexTestRequest]()

// prepare checks the sizes and the flags and translates the pattern.
func (req *RegexTestRequest) prepare() (*jsregex.Program, error) {
	var fe fieldErrors
	regexTestTags.check(&fe, "", req)
	if err := fe.tooLarge("input too large"); err != nil {
		return nil, err
	}
	flags := regexParseFlags(&fe, req.Flags)
	if err := fe.err(); err != nil {
		return nil, err
	}
	return regexPrepare(req.Pattern, flags)
}

// regexTimeoutError is the error of a call that ran past its time limit.
func regexTimeoutError(limit time.Duration, cause error) *Error {
	return errorf(KindTimeout, cause,
		"regex_test: matching did not finish within the %v time limit; the pattern probably backtracks catastrophically on this text (nested quantifiers such as (a+)+ or overlapping alternatives such as (a|a)*)",
		limit)
}

// regexParseFlags parses the flags, recording every problem in fe.
func regexParseFlags(fe *fieldErrors, s string) jsregex.Flags {
	var f jsregex.Flags
	seen := make(map[rune]bool)
	for _, c := range s {
		if seen[c] {
			fe.add("flags", "regex_flags", "flag %q appears more than once", c)
			continue
		}
		seen[c] = true
		switch c {
		case 'd':
			f.HasIndices = true
		case 'g':
			f.Global = true
		case 'i':
			f.IgnoreCase = true
		case 'm':
			f.Multiline = true
		case 's':
			f.DotAll = true
		case 'u':
			f.Unicode = true
		case 'y':
			f.Sticky = true
		case 'v':
			fe.add("flags", "regex_flags", "flag v (unicodeSets) is not supported by this engine; use u")
		default:
			fe.add("flags", "regex_flags", "unknown flag %q; the flags are d, g, i, m, s, u and y", clip.Runes(string(c), 1))
		}
	}
	return f
}

// regexPrepare translates a pattern. Its work is bounded by the pattern
// size limit and the translation limits; the first call also builds the
// Unicode tables it needs.
func regexPrepare(pattern string, flags jsregex.Flags) (prog *jsregex.Program, err error) {
	defer func() {
		if r := recover(); r != nil { // a bug, never the user's fault
			prog, err = nil, errorf(KindInternal, fmt.Errorf("regex_test panic: %v", r), "regex_test: internal error")
		}
	}()
	prog, err = jsregex.Compile(pattern, flags)
	if err != nil {
		return nil, regexPatternFieldError(err)
	}
	return prog, nil
}

// regexPatternFieldError turns a parse or translation error into an
// invalid-input error on field "pattern".
func regexPatternFieldError(err error) error {
	var pe *jsregex.PatternError
	if !errors.As(err, &pe) {
		return errorf(KindInternal, err, "regex_test: internal error")
	}
	if pe.Unsupported {
		return InvalidField("pattern", "regex_unsupported", "%s (at character %d)", pe.Msg, pe.Pos)
	}
	return InvalidField("pattern", "regex_syntax", "invalid regular expression: %s (at character %d)", pe.Msg, pe.Pos)
}

// regexRun compiles the translated pattern and collects the matches; it
// stops early when stop is set (the caller has given up) and fails past
// deadline.
func regexRun(prog *jsregex.Program, text string, deadline time.Time, limit time.Duration, stop *atomic.Bool) (RegexTestResponse, error) {
	flags := prog.Flags
	re, err := regexp2.Compile(prog.Source, regexp2.ECMAScript)
	if err != nil {
		return RegexTestResponse{}, errorf(KindInternal, fmt.Errorf("regexp2 rejected the translation %q: %w", clip.Runes(prog.Source, 200), err),
			"regex_test: internal error while compiling the pattern")
	}
	units, engine, toUnit := prog.Subject(text)
	unit := func(i int) int {
		if toUnit == nil {
			return i
		}
		return toUnit[i]
	}
	resp := RegexTestResponse{Matches: []string{}, Details: []RegexMatch{}, Flags: flags.String(), GroupCount: prog.Groups}
	spans := make([]regexSpan, prog.Groups+1)

	// V8 quirk: without the sticky flag, V8's unicode-mode search also
	// tries the position between the two halves of a surrogate pair, and a
	// pattern that can match the empty string there (\B, a negative
	// lookaround...) matches at that index. mid reports whether the
	// pattern does, with the groups it sets.
	var astral []int // code point indices of the characters above U+FFFF
	var mid *regexp2.Match
	if flags.Unicode && !flags.Sticky && toUnit != nil {
		for i := 0; i+1 < len(toUnit); i++ {
			if toUnit[i+1]-toUnit[i] == 2 {
				astral = append(astral, i)
			}
		}
		re.MatchTimeout = max(time.Until(deadline), time.Millisecond)
		m, err := re.FindRunesMatchStartingAt([]rune{jsregex.MidPairLead, jsregex.MidPairTrail}, 1)
		if err != nil {
			return RegexTestResponse{}, regexTimeoutError(limit, err)
		}
		if m != nil && m.Index == 1 {
			mid = m
		}
	}

	out := 0
	pos := 0
	for {
		if stop.Load() {
			return RegexTestResponse{}, regexTimeoutError(limit, nil)
		}
		remaining := time.Until(deadline)
		if remaining <= 0 {
			return RegexTestResponse{}, regexTimeoutError(limit, nil)
		}
		re.MatchTimeout = remaining
		m, err := re.FindRunesMatchStartingAt(engine, pos)
		if err != nil { // regexp2 fails only on its own timeout
			return RegexTestResponse{}, regexTimeoutError(limit, err)
		}
		var next int
		found := m != nil
		if found {
			regexSpans(spans, m, unit, -1)
			next = m.Index + m.Length
			if m.Length == 0 {
				next++ // AdvanceStringIndex: one code unit, or one code point with u
			}
		}
		if mid != nil {
			end := len(engine)
			if found {
				end = m.Index
			}
			if i := sort.SearchInts(astral, pos); i < len(astral) && astral[i] < end {
				at := unit(astral[i]) + 1
				regexSpans(spans, mid, unit, at)
				found, next = true, astral[i]+1
			}
		}
		if !found {
			break
		}
		if len(resp.Matches) == regexMaxMatches {
			resp.Truncated = true
			break
		}
		d, size := regexDetail(spans, units, prog.Names, flags.HasIndices)
		out += size
		if out > regexMaxOutputBytes {
			resp.Truncated = true
			break
		}
		resp.Matches = append(resp.Matches, d.Match)
		resp.Details = append(resp.Details, d)
		if !flags.Global || next > len(engine) {
			break
		}
		pos = next
	}
	resp.Matched = len(resp.Matches) > 0
	return resp, nil
}

// regexSpan is a match or group position in UTF-16 code units; start is
// -1 for a group that did not take part.
type regexSpan struct{ start, end int }

// regexSpans fills spans from a regexp2 match. With at ≥ 0 (the probe
// between surrogate halves) every span is the empty string at that index.
func regexSpans(spans []regexSpan, m *regexp2.Match, unit func(int) int, at int) {
	if at >= 0 {
		spans[0] = regexSpan{at, at}
	} else {
		spans[0] = regexSpan{unit(m.Index), unit(m.Index + m.Length)}
	}
	for k := 1; k < len(spans); k++ {
		g := m.GroupByNumber(k)
		switch {
		case g == nil || len(g.Captures) == 0:
			spans[k] = regexSpan{-1, -1}
		case at >= 0:
			spans[k] = regexSpan{at, at}
		default:
			spans[k] = regexSpan{unit(g.Index), unit(g.Index + g.Length)}
		}
	}
}

// regexDetail builds the match entry of spans; size counts the code units
// of the returned strings.
func regexDetail(spans []regexSpan, units []rune, names []string, indices bool) (RegexMatch, int) {
	n := len(spans) - 1
	d := RegexMatch{Index: spans[0].start, Match: jsregex.UnitString(units[spans[0].start:spans[0].end]), Groups: make([]*string, n)}
	size := spans[0].end - spans[0].start
	if indices {
		d.Indices = make([][]int, n+1)
		d.Indices[0] = []int{spans[0].start, spans[0].end}
	}
	for k := 1; k <= n; k++ {
		sp := spans[k]
		if sp.start < 0 {
			continue
		}
		s := jsregex.UnitString(units[sp.start:sp.end])
		d.Groups[k-1] = &s
		size += sp.end - sp.start
		if indices {
			d.Indices[k] = []int{sp.start, sp.end}
		}
	}
	for k, name := range names {
		if name == "" {
			continue
		}
		if d.NamedGroups == nil {
			d.NamedGroups = make(map[string]*string)
		}
		d.NamedGroups[name] = d.Groups[k]
	}
	return d, size
}

// regexJSONString is a string whose JSON form writes WTF-8 surrogates as
// \uXXXX escapes, like JSON.stringify.
type regexJSONString string

// MarshalJSON implements json.Marshaler.
func (s regexJSONString) MarshalJSON() ([]byte, error) {
	return appendJSONString(nil, s), nil
}

func regexJSONPtr(s *string) *regexJSONString {
	if s == nil {
		return nil
	}
	v := regexJSONString(*s)
	return &v
}

// MarshalJSON writes the match with lone surrogates as \uXXXX escapes.
func (m RegexMatch) MarshalJSON() ([]byte, error) {
	type wire struct {
		Index       int                         `json:"index"`
		Match       regexJSONString             `json:"match"`
		Groups      []*regexJSONString          `json:"groups"`
		NamedGroups map[string]*regexJSONString `json:"namedGroups,omitempty"`
		Indices     [][]int                     `json:"indices,omitempty"`
	}
	w := wire{Index: m.Index, Match: regexJSONString(m.Match), Groups: make([]*regexJSONString, len(m.Groups)), Indices: m.Indices}
	for i, g := range m.Groups {
		w.Groups[i] = regexJSONPtr(g)
	}
	if m.NamedGroups != nil {
		w.NamedGroups = make(map[string]*regexJSONString, len(m.NamedGroups))
		for k, v := range m.NamedGroups {
			w.NamedGroups[k] = regexJSONPtr(v)
		}
	}
	return json.Marshal(w)
}

// MarshalJSON writes the response with lone surrogates as \uXXXX escapes.
func (r RegexTestResponse) MarshalJSON() ([]byte, error) {
	type wire struct {
		Matched    bool              `json:"matched"`
		Matches    []regexJSONString `json:"matches"`
		Details    []RegexMatch      `json:"details"`
		Truncated  bool              `json:"truncated"`
		Flags      string            `json:"flags"`
		GroupCount int               `json:"groupCount"`
	}
	w := wire{Matched: r.Matched, Matches: make([]regexJSONString, len(r.Matches)), Details: r.Details,
		Truncated: r.Truncated, Flags: r.Flags, GroupCount: r.GroupCount}
	if w.Details == nil {
		w.Details = []RegexMatch{}
	}
	for i, s := range r.Matches {
		w.Matches[i] = regexJSONString(s)
	}
	return json.Marshal(w)
}

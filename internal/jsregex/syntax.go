package jsregex

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/seed1284c1d2/svc/internal/clip"
)

// This file parses JavaScript regular expression source (ECMA-262 2024
// grammar with the web-compatibility rules of Annex B when the u flag is
// off) into a tree that emit.go translates for regexp2.

// regexOp is the kind of a regexNode.
type regexOp uint8

const (
	regexOpEmpty     regexOp = iota // matches the empty string
	regexOpChar                     // one character of set (or, with neg, not of set)
	regexOpSeq                      // subs in order
	regexOpAlt                      // subs as alternatives, tried in order
	regexOpCapture                  // capturing group number group around subs[0]
	regexOpLook                     // lookahead/lookbehind (behind, neg) around subs[0]
	regexOpBegin                    // ^
	regexOpEnd                      // $
	regexOpWordB                    // \b, or \B with neg
	regexOpBackref                  // \N or \k<name> (group)
	regexOpQuant                    // subs[0]{min,max}, max < 0 is unbounded
	regexOpReset                    // translator only: clears the groups of a quantified atom
	regexOpBackrefNE                // translator only: \N that fails when group N is unset
	regexOpRefUnset                 // translator only: asserts that group N is unset
)

// regexNode is a node of the parsed pattern. Nodes are not modified after
// construction, so the translator may share them.
type regexNode struct {
	op     regexOp
	set    regexSet // regexOpChar, in the original (not case-folded) domain
	neg    bool     // regexOpChar: [^...]; regexOpLook: negative; regexOpWordB: \B
	behind bool     // regexOpLook
	subs   []*regexNode
	min    int
	max    int
	greedy bool
	// resetEach (translator only) makes every iteration of a quantifier
	// clear its groups, even when at most one iteration remains.
	resetEach bool
	group     int    // regexOpCapture, regexOpBackref
	name      string // regexOpBackref by name, resolved after parsing
	groups    []int  // regexOpReset
	pos       int    // source position, for messages

	propsDone           bool
	nullable, zeroWidth bool
	captures            []int
	capturesDone        bool
}

// Flags are the flags of a JavaScript regular expression that this
// package supports: d, g, i, m, s, u and y (not v).
type Flags struct {
	// HasIndices is d: matches report the indices of their groups.
	HasIndices bool
	// Global is g: every match, not only the first.
	Global bool
	// IgnoreCase is i: case-insensitive matching.
	IgnoreCase bool
	// Multiline is m: ^ and $ match at line breaks.
	Multiline bool
	// DotAll is s: the dot matches line terminators.
	DotAll bool
	// Unicode is u: the pattern and the text are code points.
	Unicode bool
	// Sticky is y: a match must start at the current position.
	Sticky bool
}

// String returns the flags in the canonical order of RegExp.prototype.flags.
func (f Flags) String() string {
	var b strings.Builder
	for _, x := range []struct {
		on bool
		c  byte
	}{{f.HasIndices, 'd'}, {f.Global, 'g'}, {f.IgnoreCase, 'i'}, {f.Multiline, 'm'},
		{f.DotAll, 's'}, {f.Unicode, 'u'}, {f.Sticky, 'y'}} {
		if x.on {
			b.WriteByte(x.c)
		}
	}
	return b.String()
}

// PatternError is a pattern Compile rejects: a syntax error of JavaScript
// (Unsupported false) or a construct this package cannot translate so that
// it matches as in V8 (Unsupported true).
type PatternError struct {
	// Msg says what is wrong, without the position.
	Msg string
	// Pos counts source characters (UTF-16 code units without the u
	// flag, code points with it) from 0.
	Pos int
	// Unsupported marks a valid pattern this package does not translate.
	Unsupported bool
}

// Error implements error.
func (e *PatternError) Error() string {
	return fmt.Sprintf("%s at position %d", e.Msg, e.Pos)
}

// regexParsed is a parsed pattern.
type regexParsed struct {
	root    *regexNode
	ngroups int
	names   []string     // names[k] is the name of group k ("" if unnamed); names[0] unused
	bodies  []*regexNode // bodies[k] is the pattern inside group k; bodies[0] unused
}

// regexParser is a recursive-descent parser over source characters.
type regexParser struct {
	src     []rune
	pos     int
	flags   Flags
	named   bool // [+NamedCaptureGroups]: u flag or a named group somewhere
	ngroups int  // capturing groups in the whole pattern (pre-scanned)
	opened  int  // capturing groups opened so far
	names   []string
	nameIdx map[string]int
	refs    []*regexNode
	refOpen [][]int // the groups open at each of refs
	open    []int   // capturing groups open at the current position
	maxChar rune
	depth   int
}

// regexMaxDepth bounds the nesting of groups and classes in a pattern.
const regexMaxDepth = 256

// regexParse parses pattern source (already decoded into UTF-16 code units
// or, with the u flag, code points).
func regexParse(src []rune, flags Flags) (*regexParsed, error) {
	p := &regexParser{src: src, flags: flags, nameIdx: make(map[string]int), maxChar: 0xFFFF}
	if flags.Unicode {
		p.maxChar = regexMaxRune
	}
	var hasNamed bool
	p.ngroups, hasNamed = regexScanGroups(src)
	p.named = flags.Unicode || hasNamed
	p.names = make([]string, p.ngroups+1)
	root, err := p.disjunction()
	if err != nil {
		return nil, err
	}
	if p.pos < len(p.src) { // only ')' stops a top-level disjunction
		return nil, p.errorf("unmatched ')'")
	}
	for i, r := range p.refs {
		k, ok := p.nameIdx[r.name]
		if !ok {
			return nil, &PatternError{Msg: fmt.Sprintf("invalid named capture referenced: no group named %q", clip.Runes(r.name, 32)), Pos: r.pos}
		}
		r.group = k
		if slices.Contains(p.refOpen[i], k) {
			r.op = regexOpEmpty // a reference inside its own group, see atomEscape
		}
	}
	bodies := make([]*regexNode, p.opened+1)
	var walk func(*regexNode)
	walk = func(n *regexNode) {
		if n.op == regexOpCapture && n.group < len(bodies) {
			bodies[n.group] = n.subs[0]
		}
		for _, s := range n.subs {
			walk(s)
		}
	}
	walk(root)
	return &regexParsed{root: root, ngroups: p.opened, names: p.names, bodies: bodies}, nil
}

// regexScanGroups counts the capturing groups of a pattern and reports
// whether one is named, skipping escapes and character classes.
func regexScanGroups(src []rune) (n int, named bool) {
	for i := 0; i < len(src); i++ {
		switch src[i] {
		case '\\':
			i++
		case '[':
			for i++; i < len(src) && src[i] != ']'; i++ {
				if src[i] == '\\' {
					i++
				}
			}
		case '(':
			if i+1 < len(src) && src[i+1] == '?' {
				if i+3 < len(src) && src[i+2] == '<' && src[i+3] != '=' && src[i+3] != '!' {
					n++
					named = true
				}
				continue
			}
			n++
		}
	}
	return n, named
}

func (p *regexParser) errorf(format string, args ...any) *PatternError {
	return &PatternError{Msg: fmt.Sprintf(format, args...), Pos: p.pos}
}

func (p *regexParser) more() bool { return p.pos < len(p.src) }

func (p *regexParser) peek() rune {
	if p.pos < len(p.src) {
		return p.src[p.pos]
	}
	return -1
}

func (p *regexParser) peekAt(i int) rune {
	if p.pos+i < len(p.src) {
		return p.src[p.pos+i]
	}
	return -1
}

func (p *regexParser) disjunction() (*regexNode, error) {
	p.depth++
	defer func() { p.depth-- }()
	if p.depth > regexMaxDepth {
		return nil, &PatternError{Msg: fmt.Sprintf("groups nested more than %d deep", regexMaxDepth), Pos: p.pos, Unsupported: true}
	}
	var alts []*regexNode
	for {
		a, err := p.alternative()
		if err != nil {
			return nil, err
		}
		alts = append(alts, a)
		if p.peek() != '|' {
			break
		}
		p.pos++
	}
	if len(alts) == 1 {
		return alts[0], nil
	}
	return &regexNode{op: regexOpAlt, subs: alts}, nil
}

func (p *regexParser) alternative() (*regexNode, error) {
	var terms []*regexNode
	for p.more() && p.peek() != '|' && p.peek() != ')' {
		t, err := p.term()
		if err != nil {
			return nil, err
		}
		terms = append(terms, t)
	}
	switch len(terms) {
	case 0:
		return &regexNode{op: regexOpEmpty}, nil
	case 1:
		return terms[0], nil
	}
	return &regexNode{op: regexOpSeq, subs: terms}, nil
}

// term parses an assertion or an atom with its optional quantifier.
func (p *regexParser) term() (*regexNode, error) {
	start := p.pos
	c := p.peek()
	var atom *regexNode
	// quantifiable: 0 = no (nothing to repeat), 1 = yes, 2 = invalid quantifier
	quantifiable := 1
	var err error
	switch c {
	case '^':
		p.pos++
		atom, quantifiable = &regexNode{op: regexOpBegin, pos: start}, 0
	case '$':
		p.pos++
		atom, quantifiable = &regexNode{op: regexOpEnd, pos: start}, 0
	case '\\':
		if n := p.peekAt(1); n == 'b' || n == 'B' {
			p.pos += 2
			atom, quantifiable = &regexNode{op: regexOpWordB, neg: n == 'B', pos: start}, 0
		} else {
			atom, err = p.atomEscape()
		}
	case '(':
		atom, quantifiable, err = p.group()
	case '.':
		p.pos++
		atom = p.charNode(p.dotSet(), start)
	case '[':
		atom, err = p.class()
	case '*', '+', '?':
		return nil, p.errorf("nothing to repeat")
	case '{':
		if _, _, _, ok := p.braced(p.pos); ok {
			return nil, p.errorf("nothing to repeat")
		}
		if p.flags.Unicode {
			return nil, p.errorf("lone quantifier brackets")
		}
		p.pos++
		atom = p.charNode(regexSetOf('{', '{'), start)
	case '}', ']':
		if p.flags.Unicode {
			return nil, p.errorf("lone quantifier brackets")
		}
		p.pos++
		atom = p.charNode(regexSetOf(c, c), start)
	default:
		p.pos++
		atom = p.charNode(regexSetOf(c, c), start)
	}
	if err != nil {
		return nil, err
	}
	qpos := p.pos
	min, max, greedy, ok, err := p.quantifier()
	if err != nil || !ok {
		return atom, err
	}
	switch quantifiable {
	case 0:
		p.pos = qpos
		return nil, p.errorf("nothing to repeat")
	case 2:
		p.pos = qpos
		return nil, p.errorf("invalid quantifier")
	}
	return &regexNode{op: regexOpQuant, subs: []*regexNode{atom}, min: min, max: max, greedy: greedy, pos: qpos}, nil
}

func (p *regexParser) charNode(s regexSet, pos int) *regexNode {
	return &regexNode{op: regexOpChar, set: s, pos: pos}
}

// dotSet is the set of the dot: everything, or everything but the line
// terminators without the s flag.
func (p *regexParser) dotSet() regexSet {
	if p.flags.DotAll {
		return regexSetOf(0, p.maxChar)
	}
	return regexLineTerminators.negate(p.maxChar)
}

// regexMaxCount is where quantifier bounds saturate (V8 does the same at
// 2^31 - 1).
const regexMaxCount = math.MaxInt32

// quantifier parses *, +, ?, {n}, {n,}, {n,m} and a lazy '?'.
func (p *regexParser) quantifier() (min, max int, greedy, ok bool, err error) {
	switch p.peek() {
	case '*':
		min, max = 0, -1
		p.pos++
	case '+':
		min, max = 1, -1
		p.pos++
	case '?':
		min, max = 0, 1
		p.pos++
	case '{':
		var end int
		min, max, end, ok = p.braced(p.pos)
		if !ok {
			if p.flags.Unicode {
				return 0, 0, false, false, p.errorf("incomplete quantifier")
			}
			return 0, 0, false, false, nil // a literal '{' (Annex B)
		}
		p.pos = end
	default:
		return 0, 0, false, false, nil
	}
	greedy = true
	if p.peek() == '?' {
		greedy = false
		p.pos++
	}
	if max >= 0 && min > max {
		return 0, 0, false, false, p.errorf("numbers out of order in {} quantifier")
	}
	return min, max, greedy, true, nil
}

// braced parses {n}, {n,} or {n,m} at i without moving; end is the
// position after '}'.
func (p *regexParser) braced(i int) (min, max, end int, ok bool) {
	s := p.src
	if i >= len(s) || s[i] != '{' {
		return 0, 0, 0, false
	}
	i++
	min, i, ok = regexDecimal(s, i)
	if !ok {
		return 0, 0, 0, false
	}
	max = min
	if i < len(s) && s[i] == ',' {
		i++
		if i < len(s) && s[i] == '}' {
			max = -1
		} else {
			max, i, ok = regexDecimal(s, i)
			if !ok {
				return 0, 0, 0, false
			}
		}
	}
	if i >= len(s) || s[i] != '}' {
		return 0, 0, 0, false
	}
	return min, max, i + 1, true
}

// regexDecimal reads decimal digits at i, saturating at regexMaxCount.
func regexDecimal(s []rune, i int) (v, end int, ok bool) {
	start := i
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		if v < regexMaxCount {
			v = v*10 + int(s[i]-'0')
			if v > regexMaxCount {
				v = regexMaxCount
			}
		}
		i++
	}
	return v, i, i > start
}

// group parses a parenthesised construct at '('.
func (p *regexParser) group() (*regexNode, int, error) {
	start := p.pos
	p.pos++
	node := &regexNode{pos: start}
	quantifiable := 1
	if p.peek() == '?' {
		switch p.peekAt(1) {
		case ':':
			p.pos += 2
			node = nil
		case '=', '!':
			node.op, node.neg = regexOpLook, p.peekAt(1) == '!'
			p.pos += 2
			if p.flags.Unicode {
				quantifiable = 2
			}
		case '<':
			if n := p.peekAt(2); n == '=' || n == '!' {
				node.op, node.behind, node.neg = regexOpLook, true, n == '!'
				p.pos += 3
				quantifiable = 2
				break
			}
			p.pos += 2
			name, err := p.groupName()
			if err != nil {
				return nil, 0, err
			}
			p.opened++
			node.op, node.group = regexOpCapture, p.opened
			if _, dup := p.nameIdx[name]; dup {
				return nil, 0, &PatternError{Msg: fmt.Sprintf("duplicate capture group name %q", clip.Runes(name, 32)), Pos: start}
			}
			p.nameIdx[name] = p.opened
			if p.opened < len(p.names) {
				p.names[p.opened] = name
			}
		default:
			p.pos++
			return nil, 0, p.errorf("invalid group")
		}
	} else {
		p.opened++
		node.op, node.group = regexOpCapture, p.opened
	}
	if node != nil && node.op == regexOpCapture {
		p.open = append(p.open, node.group)
		defer func() { p.open = p.open[:len(p.open)-1] }()
	}
	inner, err := p.disjunction()
	if err != nil {
		return nil, 0, err
	}
	if p.peek() != ')' {
		return nil, 0, p.errorf("unterminated group")
	}
	p.pos++
	if node == nil {
		return inner, quantifiable, nil
	}
	node.subs = []*regexNode{inner}
	return node, quantifiable, nil
}

// groupName parses "name>" after "(?<" or "\k<".
func (p *regexParser) groupName() (string, error) {
	ids := regexIdentifierSets()
	var b strings.Builder
	first := true
	for {
		if !p.more() {
			return "", p.errorf("invalid capture group name")
		}
		c := p.peek()
		if c == '>' {
			p.pos++
			break
		}
		p.pos++
		if c == '\\' {
			if p.peek() != 'u' {
				return "", p.errorf("invalid capture group name")
			}
			p.pos++
			v, ok := p.unicodeEscape(true)
			if !ok {
				return "", p.errorf("invalid Unicode escape in capture group name")
			}
			c = v
		} else if !p.flags.Unicode && c >= 0xD800 && c <= 0xDBFF {
			if t := p.peek(); t >= 0xDC00 && t <= 0xDFFF {
				p.pos++
				c = 0x10000 + (c-0xD800)<<10 + (t - 0xDC00)
			}
		}
		ok := c == '$' || c == '_'
		if first {
			ok = ok || ids[0].contains(c)
		} else {
			ok = ok || c == 0x200C || c == 0x200D || ids[1].contains(c)
		}
		if !ok || (c >= 0xD800 && c <= 0xDFFF) {
			return "", p.errorf("invalid capture group name")
		}
		b.WriteRune(c)
		first = false
	}
	if first {
		return "", p.errorf("invalid capture group name")
	}
	return b.String(), nil
}

// atomEscape parses an escape outside a class, at '\\'.
func (p *regexParser) atomEscape() (*regexNode, error) {
	start := p.pos
	p.pos++
	if !p.more() {
		return nil, p.errorf("\\ at end of pattern")
	}
	c := p.peek()
	switch {
	case c == 'd' || c == 'D' || c == 's' || c == 'S' || c == 'w' || c == 'W':
		p.pos++
		return p.charNode(p.classEscapeSet(c), start), nil
	case (c == 'p' || c == 'P') && p.flags.Unicode:
		s, err := p.property()
		if err != nil {
			return nil, err
		}
		return p.charNode(s, start), nil
	case c >= '1' && c <= '9':
		v, end, _ := regexDecimal(p.src, p.pos)
		if v <= p.ngroups {
			p.pos = end
			if slices.Contains(p.open, v) {
				// Inside the group it refers to, a reference can only be
				// undefined and match the empty string; V8 compiles it as
				// nothing, which matters for the surrogate-pair check of
				// backreferences (see regexEmitter.backref).
				return &regexNode{op: regexOpEmpty, pos: start}, nil
			}
			return &regexNode{op: regexOpBackref, group: v, pos: start}, nil
		}
		if p.flags.Unicode {
			return nil, p.errorf("invalid escape: no group %d", v)
		}
		if c >= '8' {
			p.pos++
			return p.charNode(regexSetOf(c, c), start), nil
		}
		o := p.legacyOctal()
		return p.charNode(regexSetOf(o, o), start), nil
	case c == '0':
		if d := p.peekAt(1); d >= '0' && d <= '9' {
			if p.flags.Unicode {
				return nil, p.errorf("invalid decimal escape")
			}
			v := p.legacyOctal()
			return p.charNode(regexSetOf(v, v), start), nil
		}
		p.pos++
		return p.charNode(regexSetOf(0, 0), start), nil
	case c == 'k' && p.named:
		p.pos++
		if p.peek() != '<' {
			return nil, p.errorf("invalid named reference")
		}
		p.pos++
		name, err := p.groupName()
		if err != nil {
			return nil, p.errorf("invalid named reference")
		}
		n := &regexNode{op: regexOpBackref, name: name, pos: start}
		p.refs = append(p.refs, n)
		p.refOpen = append(p.refOpen, slices.Clone(p.open))
		return n, nil
	}
	v, err := p.characterEscape(false)
	if err != nil {
		return nil, err
	}
	return p.charNode(regexSetOf(v, v), start), nil
}

// legacyOctal parses a LegacyOctalEscapeSequence (Annex B) at p.pos, which
// holds an octal digit: up to three octal digits with a value of at most
// 0377.
func (p *regexParser) legacyOctal() rune {
	v := rune(0)
	n := 0
	for n < 3 && p.more() && p.peek() >= '0' && p.peek() <= '7' {
		nv := v*8 + (p.peek() - '0')
		if nv > 0377 {
			break
		}
		v = nv
		p.pos++
		n++
	}
	return v
}

// characterEscape parses a CharacterEscape (or a ClassEscape's character
// part) after '\\', at the escaped character.
func (p *regexParser) characterEscape(inClass bool) (rune, error) {
	c := p.peek()
	switch c {
	case 'f':
		p.pos++
		return 0x0C, nil
	case 'n':
		p.pos++
		return 0x0A, nil
	case 'r':
		p.pos++
		return 0x0D, nil
	case 't':
		p.pos++
		return 0x09, nil
	case 'v':
		p.pos++
		return 0x0B, nil
	case 'c':
		l := p.peekAt(1)
		if 'a' <= l && l <= 'z' || 'A' <= l && l <= 'Z' ||
			(inClass && !p.flags.Unicode && ('0' <= l && l <= '9' || l == '_')) {
			p.pos += 2
			return l % 32, nil
		}
		if p.flags.Unicode {
			return 0, p.errorf("invalid unicode escape")
		}
		return '\\', nil // the backslash is literal and 'c' is read next (Annex B)
	case 'x':
		if h1, h2 := regexHex(p.peekAt(1)), regexHex(p.peekAt(2)); h1 >= 0 && h2 >= 0 {
			p.pos += 3
			return rune(h1*16 + h2), nil
		}
		if p.flags.Unicode {
			return 0, p.errorf("invalid escape")
		}
		p.pos++
		return 'x', nil
	case 'u':
		p.pos++
		if v, ok := p.unicodeEscape(p.flags.Unicode); ok {
			return v, nil
		}
		if p.flags.Unicode {
			return 0, p.errorf("invalid Unicode escape")
		}
		return 'u', nil
	}
	if p.flags.Unicode {
		if strings.ContainsRune(`^$\.*+?()[]{}|/`, c) || (inClass && c == '-') {
			p.pos++
			return c, nil
		}
		return 0, p.errorf("invalid escape")
	}
	if c == 'k' && p.named { // only reached inside a class
		return 0, p.errorf("invalid escape")
	}
	p.pos++
	return c, nil
}

// unicodeEscape parses what follows "\u": XXXX, and in unicode mode {X…}
// and a surrogate pair \uXXXX\uXXXX. p.pos is restored when it fails.
func (p *regexParser) unicodeEscape(unicodeMode bool) (rune, bool) {
	save := p.pos
	if unicodeMode && p.peek() == '{' {
		p.pos++
		v := 0
		n := 0
		for p.more() && regexHex(p.peek()) >= 0 {
			v = v*16 + regexHex(p.peek())
			if v > regexMaxRune {
				p.pos = save
				return 0, false
			}
			p.pos++
			n++
		}
		if n == 0 || p.peek() != '}' {
			p.pos = save
			return 0, false
		}
		p.pos++
		return rune(v), true
	}
	v, ok := p.hex4(p.pos)
	if !ok {
		return 0, false
	}
	p.pos += 4
	if unicodeMode && v >= 0xD800 && v <= 0xDBFF && p.peek() == '\\' && p.peekAt(1) == 'u' {
		if t, ok := p.hex4(p.pos + 2); ok && t >= 0xDC00 && t <= 0xDFFF {
			p.pos += 6
			return 0x10000 + (v-0xD800)<<10 + (t - 0xDC00), true
		}
	}
	return v, true
}

func (p *regexParser) hex4(i int) (rune, bool) {
	if i+4 > len(p.src) {
		return 0, false
	}
	v := 0
	for j := i; j < i+4; j++ {
		h := regexHex(p.src[j])
		if h < 0 {
			return 0, false
		}
		v = v*16 + h
	}
	return rune(v), true
}

func regexHex(c rune) int {
	switch {
	case '0' <= c && c <= '9':
		return int(c - '0')
	case 'a' <= c && c <= 'f':
		return int(c-'a') + 10
	case 'A' <= c && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}

// classEscapeSet returns the set of \d \D \s \S \w \W. With the u and i
// flags, \w also holds the characters whose simple case folding is a basic
// word character (U+017F and U+212A), as ECMA-262 requires.
func (p *regexParser) classEscapeSet(c rune) regexSet {
	var s regexSet
	switch c {
	case 'd', 'D':
		s = regexDigitSet
	case 's', 'S':
		s = regexSpaceSet
	case 'w', 'W':
		s = p.wordSet()
	}
	if c == 'D' || c == 'S' || c == 'W' {
		return s.negate(p.maxChar)
	}
	return s
}

// wordSet is WordCharacters of ECMA-262 for the flags.
func (p *regexParser) wordSet() regexSet {
	if p.flags.Unicode && p.flags.IgnoreCase {
		return regexWordSet.union(regexSetChars(0x017F, 0x212A))
	}
	return regexWordSet
}

// property parses \p{...} or \P{...} at 'p' / 'P'.
func (p *regexParser) property() (regexSet, error) {
	negate := p.peek() == 'P'
	start := p.pos
	p.pos++
	if p.peek() != '{' {
		return nil, p.errorf("invalid property name")
	}
	p.pos++
	var b strings.Builder
	for p.more() && p.peek() != '}' {
		c := p.peek()
		if !(c == '_' || c == '=' || '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z') {
			return nil, p.errorf("invalid property name")
		}
		b.WriteRune(c)
		p.pos++
	}
	if !p.more() {
		return nil, p.errorf("invalid property name")
	}
	p.pos++
	s, res := regexProperty(b.String())
	switch res {
	case regexPropertyInvalid:
		return nil, &PatternError{Msg: fmt.Sprintf("invalid property name %q", clip.Runes(b.String(), 40)), Pos: start}
	case regexPropertyUnsupported:
		return nil, &PatternError{Msg: fmt.Sprintf("property %q is not supported by this engine (its data is not in Go's Unicode tables)", clip.Runes(b.String(), 40)), Pos: start, Unsupported: true}
	}
	if negate {
		s = s.negate(regexMaxRune)
	}
	return s, nil
}

// class parses a character class at '['.
func (p *regexParser) class() (*regexNode, error) {
	start := p.pos
	p.pos++
	node := &regexNode{op: regexOpChar, pos: start}
	if p.peek() == '^' {
		node.neg = true
		p.pos++
	}
	var parts []regexRange
	for {
		if !p.more() {
			return nil, &PatternError{Msg: "unterminated character class", Pos: start}
		}
		if p.peek() == ']' {
			p.pos++
			break
		}
		a, aSet, err := p.classAtom()
		if err != nil {
			return nil, err
		}
		if p.peek() == '-' && p.peekAt(1) != ']' && p.peekAt(1) != -1 {
			dash := p.pos
			p.pos++
			b, bSet, err := p.classAtom()
			if err != nil {
				return nil, err
			}
			if aSet != nil || bSet != nil {
				if p.flags.Unicode {
					p.pos = dash
					return nil, p.errorf("invalid character class: a range cannot start or end with a class escape")
				}
				parts = append(parts, regexRange{'-', '-'})
				parts = append(parts, regexAtomRanges(a, aSet)...)
				parts = append(parts, regexAtomRanges(b, bSet)...)
				continue
			}
			if a > b {
				p.pos = dash
				return nil, p.errorf("range out of order in character class")
			}
			parts = append(parts, regexRange{a, b})
			continue
		}
		parts = append(parts, regexAtomRanges(a, aSet)...)
	}
	node.set = regexNormalize(parts)
	return node, nil
}

func regexAtomRanges(c rune, s regexSet) []regexRange {
	if s != nil {
		return s
	}
	return []regexRange{{c, c}}
}

// classAtom parses one class atom: a character, or a class escape set
// (returned non-nil).
func (p *regexParser) classAtom() (rune, regexSet, error) {
	c := p.peek()
	if c != '\\' {
		p.pos++
		return c, nil, nil
	}
	p.pos++
	if !p.more() {
		return 0, nil, p.errorf("\\ at end of pattern")
	}
	c = p.peek()
	switch {
	case c == 'b':
		p.pos++
		return 0x08, nil, nil
	case c == '-' && p.flags.Unicode:
		p.pos++
		return '-', nil, nil
	case c == 'd' || c == 'D' || c == 's' || c == 'S' || c == 'w' || c == 'W':
		p.pos++
		s := p.classEscapeSet(c)
		if s == nil {
			s = regexSet{}
		}
		return 0, s, nil
	case (c == 'p' || c == 'P') && p.flags.Unicode:
		s, err := p.property()
		if s == nil {
			s = regexSet{}
		}
		return 0, s, err
	case c >= '0' && c <= '9':
		if p.flags.Unicode {
			if c == '0' && !(p.peekAt(1) >= '0' && p.peekAt(1) <= '9') {
				p.pos++
				return 0, nil, nil
			}
			return 0, nil, p.errorf("invalid class escape")
		}
		if c >= '8' {
			p.pos++
			return c, nil, nil
		}
		return p.legacyOctal(), nil, nil
	}
	v, err := p.characterEscape(true)
	return v, nil, err
}

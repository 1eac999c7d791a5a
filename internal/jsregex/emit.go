package jsregex

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// This file translates a parsed JavaScript pattern into a regexp2 pattern
// (compiled with regexp2.ECMAScript only) whose matches are the matches V8
// finds. The translation spells out every JavaScript rule instead of
// relying on regexp2's options, whose .NET semantics differ:
//
//   - Characters and classes become explicit code point sets: \d \w \s, the
//     dot and \p{...} follow ECMA-262, not .NET.
//   - The i flag is not passed to regexp2 (its case folding is .NET's).
//     Instead the text is mapped to canonical representatives of the
//     JavaScript case-insensitive classes (regexFold) and the pattern's
//     sets are mapped likewise, so literals, classes and backreferences
//     compare exactly as Canonicalize of ECMA-262 does.
//   - ^ $ with the m flag, \b and \B become lookarounds over the JavaScript
//     line terminators and word characters.
//   - Capturing groups are numbered explicitly ((?<1>...)) in JavaScript's
//     left-to-right order, named or not.
//   - Each iteration of a quantified atom first clears the groups inside it
//     ((?(k)(?<-k>)) pops the previous iteration's capture), as JavaScript
//     resets them.
//   - JavaScript rejects an optional iteration that matches the empty
//     string and backtracks into the atom; .NET accepts it as the last
//     iteration. When that can make a difference the optional iterations
//     use the atom's non-empty restriction (regexEmitter.ne), which keeps
//     the atom's order of alternatives and its captures.
//   - Inside a lookbehind everything runs right to left, in JavaScript as in
//     .NET; the pieces the translator builds are ordered accordingly.
//   - V8 details beyond ECMA-262 are reproduced: a unicode-mode search also
//     tries positions inside a surrogate pair (see MidPairLead; classes
//     are therefore always written as positive ranges up to U+10FFFF), a
//     unicode-mode backreference fails when it ends inside a pair, and a
//     backreference inside its own group is nothing at all.

// regexMaxEmitted bounds the translated pattern, in bytes: 256 KiB, which
// regexp2 compiles in about 40 ms (one \p{L} takes 8 KiB).
const regexMaxEmitted = 256 << 10

// regexMaxNodes bounds the nodes the non-empty restriction may create.
const regexMaxNodes = 20000

// regexLoopBound is a count no text can exhaust (the text is at most
// 1 MiB, hence at most 2^20 UTF-16 code units): a larger bound on the
// iterations of an atom that always consumes is the same as no bound.
const regexLoopBound = 1 << 21

// regexEmitter writes the regexp2 pattern.
type regexEmitter struct {
	b       strings.Builder
	bodies  []*regexNode
	flags   Flags
	fold    *regexFold
	wordCls string
	nodes   int
	emitted map[int]bool
	err     *PatternError
}

// regexTranslate returns the regexp2 source of a parsed pattern.
func regexTranslate(p *regexParsed, flags Flags, word regexSet) (string, error) {
	e := &regexEmitter{flags: flags, emitted: make(map[int]bool), bodies: p.bodies}
	if flags.IgnoreCase {
		e.fold = regexFolds()[regexBoolIndex(flags.Unicode)]
	}
	e.wordCls = e.setString(word, false) // mapped like any set under the i flag
	if flags.Sticky {
		e.b.WriteString(`\G`)
	}
	e.b.WriteString("(?:")
	e.emit(p.root, false)
	e.b.WriteString(")")
	var missing []int
	for k := 1; k <= p.ngroups; k++ {
		if !e.emitted[k] {
			missing = append(missing, k)
		}
	}
	if len(missing) > 0 { // groups the translation dropped must still exist
		e.b.WriteString("(?:(?!)")
		for _, k := range missing {
			fmt.Fprintf(&e.b, "(?<%d>)", k)
		}
		e.b.WriteString(")?")
	}
	if e.err == nil && e.b.Len() > regexMaxEmitted {
		e.err = &PatternError{Msg: "pattern is too complex for this engine (its translation exceeds 256 KiB)", Unsupported: true}
	}
	if e.err != nil {
		return "", e.err
	}
	return e.b.String(), nil
}

func regexBoolIndex(b bool) int {
	if b {
		return 1
	}
	return 0
}

func (e *regexEmitter) fail(pos int, format string, args ...any) {
	if e.err == nil {
		e.err = &PatternError{Msg: fmt.Sprintf(format, args...), Pos: pos, Unsupported: true}
	}
}

func (e *regexEmitter) emit(n *regexNode, bw bool) {
	if e.err != nil {
		return
	}
	if e.b.Len() > regexMaxEmitted {
		e.fail(n.pos, "pattern is too complex for this engine (its translation exceeds 256 KiB)")
		return
	}
	switch n.op {
	case regexOpEmpty:
	case regexOpChar:
		e.b.WriteString(e.setString(n.set, n.neg))
	case regexOpSeq:
		for _, s := range n.subs {
			e.emit(s, bw)
		}
	case regexOpAlt:
		e.b.WriteString("(?:")
		for i, s := range n.subs {
			if i > 0 {
				e.b.WriteByte('|')
			}
			e.emit(s, bw)
		}
		e.b.WriteByte(')')
	case regexOpCapture:
		e.emitted[n.group] = true
		fmt.Fprintf(&e.b, "(?<%d>", n.group)
		e.emit(n.subs[0], bw)
		e.b.WriteByte(')')
	case regexOpLook:
		switch {
		case !n.behind && !n.neg:
			e.b.WriteString("(?=")
		case !n.behind:
			e.b.WriteString("(?!")
		case !n.neg:
			e.b.WriteString("(?<=")
		default:
			e.b.WriteString("(?<!")
		}
		e.emit(n.subs[0], n.behind)
		e.b.WriteByte(')')
	case regexOpBegin:
		if e.flags.Multiline {
			e.b.WriteString(`(?<![^\u000A\u000D\u2028\u2029])`)
		} else {
			e.b.WriteString(`^`)
		}
	case regexOpEnd:
		if e.flags.Multiline {
			e.b.WriteString(`(?![^\u000A\u000D\u2028\u2029])`)
		} else {
			e.b.WriteString(`$`)
		}
	case regexOpWordB:
		w := e.wordCls
		if n.neg {
			e.b.WriteString("(?:(?<=" + w + ")(?=" + w + ")|(?<!" + w + ")(?!" + w + "))")
		} else {
			e.b.WriteString("(?:(?<=" + w + ")(?!" + w + ")|(?<!" + w + ")(?=" + w + "))")
		}
	case regexOpBackref:
		e.backref(fmt.Sprintf(`(?:\%d)`, n.group), bw)
	case regexOpBackrefNE:
		e.backref(fmt.Sprintf(`(?(%d)(?:\%d)|(?!))`, n.group, n.group), bw)
	case regexOpRefUnset:
		fmt.Fprintf(&e.b, `(?(%d)(?!)|)`, n.group)
	case regexOpReset:
		for _, k := range n.groups {
			fmt.Fprintf(&e.b, "(?(%d)(?<-%d>))", k, k)
		}
	case regexOpQuant:
		e.quant(n, bw)
	}
}

// regexNotMidPair fails between two values above U+10FFFF, the stand-ins
// for the halves of a surrogate pair (see MidPairLead).
const regexNotMidPair = "(?!(?<=[^\\u0000-\U0010FFFF])(?=[^\\u0000-\U0010FFFF]))"

// backref writes a backreference. With the u flag V8 also checks that a
// backreference does not end between the halves of a surrogate pair (so
// even an empty one fails there); the check is written on the side where
// the backreference ends.
func (e *regexEmitter) backref(ref string, bw bool) {
	switch {
	case !e.flags.Unicode:
		e.b.WriteString(ref)
	case bw:
		e.b.WriteString("(?:" + regexNotMidPair + ref + ")")
	default:
		e.b.WriteString("(?:" + ref + regexNotMidPair + ")")
	}
}

// quant emits a quantified atom with JavaScript's iteration rules.
func (e *regexEmitter) quant(n *regexNode, bw bool) {
	y := n.subs[0]
	if n.max == 0 {
		return
	}
	groups := y.captureList()
	reset := ""
	if (n.max < 0 || n.max > 1 || n.resetEach) && len(groups) > 0 {
		var b strings.Builder
		for _, k := range groups {
			fmt.Fprintf(&b, "(?(%d)(?<-%d>))", k, k)
		}
		reset = b.String()
	}
	body := func(x *regexNode) {
		e.b.WriteString("(?:")
		if !bw {
			e.b.WriteString(reset)
		}
		e.emit(x, bw)
		if bw {
			e.b.WriteString(reset)
		}
		e.b.WriteByte(')')
	}
	switch {
	case !y.isNullable():
		min, max := n.min, n.max
		if min > regexLoopBound {
			min = regexLoopBound
		}
		if max > regexLoopBound {
			max = -1
		}
		body(y)
		e.b.WriteString(regexSuffix(min, max, n.greedy))
	case y.isZeroWidth():
		// Optional iterations of an atom that cannot consume are always
		// rejected; only the mandatory ones run, and when the atom has a
		// single way to match they all give the same result.
		if n.min == 0 {
			return
		}
		min := n.min
		if y.singleChoice() {
			min = 1
		}
		body(y)
		e.b.WriteString(regexSuffix(min, min, true))
	case len(groups) == 0 && y.emptyLast():
		// Without captures, accepting an empty last iteration (.NET) ends
		// in the same state as rejecting it (JavaScript).
		max := n.max
		if max > regexLoopBound {
			max = -1
		}
		body(y)
		e.b.WriteString(regexSuffix(n.min, max, n.greedy))
	default:
		ny, err := e.ne(y, bw)
		if err != nil {
			if e.err == nil {
				e.err = err
			}
			return
		}
		e.b.WriteString("(?:")
		mandatory := func() {
			if n.min > 0 {
				body(y)
				e.b.WriteString(regexSuffix(n.min, n.min, true))
			}
		}
		optional := func() {
			if ny == nil {
				return
			}
			rest := -1
			if n.max >= 0 && n.max-n.min <= regexLoopBound {
				rest = n.max - n.min
			}
			body(ny)
			e.b.WriteString(regexSuffix(0, rest, n.greedy))
		}
		if bw {
			optional()
			mandatory()
		} else {
			mandatory()
			optional()
		}
		e.b.WriteByte(')')
	}
}

// regexSuffix writes a .NET quantifier.
func regexSuffix(min, max int, greedy bool) string {
	var q string
	switch {
	case min == 1 && max == 1:
		return ""
	case min == 0 && max < 0:
		q = "*"
	case min == 1 && max < 0:
		q = "+"
	case min == 0 && max == 1:
		q = "?"
	case max < 0:
		q = "{" + strconv.Itoa(min) + ",}"
	case min == max:
		q = "{" + strconv.Itoa(min) + "}"
	default:
		q = "{" + strconv.Itoa(min) + "," + strconv.Itoa(max) + "}"
	}
	if !greedy {
		q += "?"
	}
	return q
}

// setString returns a regexp2 atom matching one character of s (or, with
// neg, one character not in s), after case mapping. The class is always
// written as positive ranges within U+0000..U+10FFFF, so that values above
// U+10FFFF, which callers use as stand-ins for the halves of a surrogate
// pair (see MidPairLead), match no class.
func (e *regexEmitter) setString(s regexSet, neg bool) string {
	if e.fold != nil {
		s = e.fold.mapSet(s)
	}
	if neg {
		s = s.negate(regexMaxRune)
	}
	if len(s) == 0 {
		return "(?!)"
	}
	if c, ok := s.single(); ok {
		return regexEscapeRune(c)
	}
	var b strings.Builder
	b.WriteByte('[')
	for _, r := range s {
		b.WriteString(regexEscapeRune(r.lo))
		if r.hi != r.lo {
			if r.hi > r.lo+1 {
				b.WriteByte('-')
			}
			b.WriteString(regexEscapeRune(r.hi))
		}
	}
	b.WriteByte(']')
	return b.String()
}

// regexEscapeRune writes c for regexp2: \uXXXX in the BMP (surrogates
// included), the literal character above it.
func regexEscapeRune(c rune) string {
	if c <= 0xFFFF {
		return fmt.Sprintf(`\u%04X`, c)
	}
	var buf [utf8.UTFMax]byte
	n := utf8.EncodeRune(buf[:], c)
	return string(buf[:n])
}

// Node properties, computed once per node.

func (n *regexNode) computeProps() {
	if n.propsDone {
		return
	}
	switch n.op {
	case regexOpChar, regexOpBackrefNE:
		n.nullable, n.zeroWidth = false, false
	case regexOpEmpty, regexOpBegin, regexOpEnd, regexOpWordB, regexOpLook, regexOpReset, regexOpRefUnset:
		n.nullable, n.zeroWidth = true, true
	case regexOpBackref:
		n.nullable, n.zeroWidth = true, false
	case regexOpCapture:
		n.nullable, n.zeroWidth = n.subs[0].isNullable(), n.subs[0].isZeroWidth()
	case regexOpSeq:
		n.nullable, n.zeroWidth = true, true
		for _, s := range n.subs {
			n.nullable = n.nullable && s.isNullable()
			n.zeroWidth = n.zeroWidth && s.isZeroWidth()
		}
	case regexOpAlt:
		n.nullable, n.zeroWidth = false, true
		for _, s := range n.subs {
			n.nullable = n.nullable || s.isNullable()
			n.zeroWidth = n.zeroWidth && s.isZeroWidth()
		}
	case regexOpQuant:
		if n.max == 0 {
			n.nullable, n.zeroWidth = true, true
		} else {
			n.nullable = n.min == 0 || n.subs[0].isNullable()
			n.zeroWidth = n.subs[0].isZeroWidth()
		}
	}
	n.propsDone = true
}

// isNullable reports whether n can match the empty string.
func (n *regexNode) isNullable() bool { n.computeProps(); return n.nullable }

// isZeroWidth reports whether n never consumes a character.
func (n *regexNode) isZeroWidth() bool { n.computeProps(); return n.zeroWidth }

// captureList returns the sorted group numbers captured inside n.
func (n *regexNode) captureList() []int {
	if n.capturesDone {
		return n.captures
	}
	seen := map[int]bool{}
	var walk func(*regexNode)
	walk = func(x *regexNode) {
		if x.op == regexOpCapture {
			seen[x.group] = true
		}
		for _, s := range x.subs {
			walk(s)
		}
	}
	walk(n)
	for k := range seen {
		n.captures = append(n.captures, k)
	}
	sort.Ints(n.captures)
	n.capturesDone = true
	return n.captures
}

// singleChoice reports whether a zero-width node has only one way to
// match (lookarounds are atomic; optional iterations of a zero-width atom
// are always rejected).
func (n *regexNode) singleChoice() bool {
	switch n.op {
	case regexOpEmpty, regexOpBegin, regexOpEnd, regexOpWordB, regexOpLook, regexOpReset, regexOpRefUnset:
		return true
	case regexOpCapture, regexOpQuant:
		return n.subs[0].singleChoice()
	case regexOpSeq:
		for _, s := range n.subs {
			if !s.singleChoice() {
				return false
			}
		}
		return true
	case regexOpAlt:
		return false
	}
	return false
}

// emptyLast reports whether, among the ways n can match in order of
// preference, no non-empty match comes after an empty one. For such an
// atom without captures, .NET's acceptance of an empty last iteration
// leads to the same result as JavaScript's rejection of it.
func (n *regexNode) emptyLast() bool {
	switch n.op {
	case regexOpChar, regexOpBackref, regexOpEmpty, regexOpBegin, regexOpEnd, regexOpWordB,
		regexOpLook, regexOpReset, regexOpBackrefNE, regexOpRefUnset:
		return true
	case regexOpCapture:
		return n.subs[0].emptyLast()
	case regexOpAlt:
		seenNullable := false
		for _, s := range n.subs {
			if seenNullable && !s.isZeroWidth() {
				return false
			}
			if !s.emptyLast() {
				return false
			}
			if s.isNullable() {
				seenNullable = true
			}
		}
		return true
	case regexOpQuant:
		y := n.subs[0]
		if n.max == 0 || y.isZeroWidth() {
			return true
		}
		if !y.isNullable() {
			return n.greedy || n.min >= 1
		}
		return false
	case regexOpSeq:
		if !n.isNullable() {
			return true
		}
		consuming := 0
		for _, s := range n.subs {
			if s.isZeroWidth() {
				if !s.singleChoice() {
					return false
				}
				continue
			}
			consuming++
			if consuming > 1 || !s.emptyLast() {
				return false
			}
		}
		return true
	}
	return false
}

// The non-empty restriction ne(x) matches exactly the non-empty matches of
// x, in x's order of preference and with x's captures (a capturing group
// may then appear more than once, which explicit group numbers allow). It
// is nil when x can never consume. Backreferences cannot be split into
// their empty and non-empty cases; a quantified atom that needs it is
// rejected as unsupported.

func (e *regexEmitter) newNode(n regexNode) (*regexNode, *PatternError) {
	e.nodes++
	if e.nodes > regexMaxNodes {
		return nil, &PatternError{Msg: "pattern is too complex for this engine (quantified groups that can match the empty string expand too much)", Pos: n.pos, Unsupported: true}
	}
	return &n, nil
}

func (e *regexEmitter) ne(x *regexNode, bw bool) (*regexNode, *PatternError) {
	switch x.op {
	case regexOpChar, regexOpBackrefNE:
		return x, nil
	case regexOpEmpty, regexOpBegin, regexOpEnd, regexOpWordB, regexOpLook, regexOpReset, regexOpRefUnset:
		return nil, nil
	case regexOpBackref:
		cs, err := e.choices(x, bw)
		if err != nil || len(cs) < 2 {
			return nil, err
		}
		return cs[0], nil
	case regexOpCapture:
		in, err := e.ne(x.subs[0], bw)
		if in == nil || err != nil {
			return nil, err
		}
		return e.newNode(regexNode{op: regexOpCapture, group: x.group, subs: []*regexNode{in}, pos: x.pos})
	case regexOpAlt:
		var alts []*regexNode
		for _, s := range x.subs {
			a, err := e.ne(s, bw)
			if err != nil {
				return nil, err
			}
			if a != nil {
				alts = append(alts, a)
			}
		}
		return e.altOf(alts, x.pos)
	case regexOpQuant:
		y := x.subs[0]
		switch {
		case x.max == 0 || y.isZeroWidth():
			return nil, nil
		case !y.isNullable():
			if x.min >= 1 {
				return x, nil
			}
			return e.newNode(regexNode{op: regexOpQuant, subs: x.subs, min: 1, max: x.max, greedy: x.greedy, resetEach: x.resetEach, pos: x.pos})
		case x.min == 0:
			ny, err := e.ne(y, bw)
			if ny == nil || err != nil {
				return nil, err
			}
			return e.newNode(regexNode{op: regexOpQuant, subs: []*regexNode{ny}, min: 1, max: x.max, greedy: x.greedy, resetEach: x.resetEach, pos: x.pos})
		}
		items, err := e.unroll(x, bw)
		if err != nil {
			return nil, err
		}
		return e.neSeq(items, bw)
	case regexOpSeq:
		return e.neSeq(regexEvalOrder(x.subs, bw), bw)
	}
	return nil, nil
}

// regexEvalOrder returns items in matching order: reversed inside a
// lookbehind.
func regexEvalOrder(items []*regexNode, bw bool) []*regexNode {
	out := make([]*regexNode, len(items))
	copy(out, items)
	if bw {
		for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
			out[i], out[j] = out[j], out[i]
		}
	}
	return out
}

// seqOf builds a sequence from items in matching order.
func (e *regexEmitter) seqOf(items []*regexNode, bw bool, pos int) (*regexNode, *PatternError) {
	var flat []*regexNode
	for _, it := range items {
		if it.op == regexOpSeq {
			flat = append(flat, regexEvalOrder(it.subs, bw)...)
		} else if it.op != regexOpEmpty {
			flat = append(flat, it)
		}
	}
	switch len(flat) {
	case 0:
		return e.newNode(regexNode{op: regexOpEmpty, pos: pos})
	case 1:
		return flat[0], nil
	}
	return e.newNode(regexNode{op: regexOpSeq, subs: regexEvalOrder(flat, bw), pos: pos})
}

func (e *regexEmitter) altOf(alts []*regexNode, pos int) (*regexNode, *PatternError) {
	switch len(alts) {
	case 0:
		return nil, nil
	case 1:
		return alts[0], nil
	}
	return e.newNode(regexNode{op: regexOpAlt, subs: alts, pos: pos})
}

// unroll returns a quantifier whose atom can match the empty string and
// whose minimum is at least 1 as a sequence in matching order: the
// mandatory iterations (each clearing the atom's groups first) and then
// the optional rest.
func (e *regexEmitter) unroll(x *regexNode, bw bool) ([]*regexNode, *PatternError) {
	const maxUnroll = 16
	if x.min > maxUnroll {
		return nil, &PatternError{Msg: fmt.Sprintf("a group that can match the empty string, repeated at least %d times inside another quantifier, is not supported by this engine", x.min), Pos: x.pos, Unsupported: true}
	}
	y := x.subs[0]
	groups := y.captureList()
	var items []*regexNode
	for i := 0; i < x.min; i++ {
		if len(groups) > 0 && i > 0 {
			r, err := e.newNode(regexNode{op: regexOpReset, groups: groups, pos: x.pos})
			if err != nil {
				return nil, err
			}
			items = append(items, r)
		}
		items = append(items, y)
	}
	if x.max != x.min {
		rest := -1
		if x.max >= 0 {
			rest = x.max - x.min
		}
		// the optional iterations come after at least one other, so each
		// clears the groups first even when only one remains
		tail, err := e.newNode(regexNode{op: regexOpQuant, subs: x.subs, min: 0, max: rest, greedy: x.greedy, resetEach: true, pos: x.pos})
		if err != nil {
			return nil, err
		}
		items = append(items, tail)
	}
	return items, nil
}

// neSeq is the non-empty restriction of a sequence given in matching order.
func (e *regexEmitter) neSeq(items []*regexNode, bw bool) (*regexNode, *PatternError) {
	// flatten nested sequences
	var flat []*regexNode
	for _, it := range items {
		if it.op == regexOpSeq {
			flat = append(flat, regexEvalOrder(it.subs, bw)...)
		} else {
			flat = append(flat, it)
		}
	}
	i := 0
	for i < len(flat) && flat[i].isZeroWidth() {
		i++
	}
	if i == len(flat) {
		return nil, nil
	}
	prefix, head, rest := flat[:i], flat[i], flat[i+1:]
	pos := head.pos
	if !head.isNullable() {
		return e.seqOf(flat, bw, pos)
	}
	choices, err := e.choices(head, bw)
	if err != nil {
		return nil, err
	}
	var alts []*regexNode
	for _, c := range choices {
		var alt *regexNode
		switch {
		case !c.isNullable():
			alt, err = e.seqOf(append([]*regexNode{c}, rest...), bw, pos)
		case c.isZeroWidth():
			var r *regexNode
			r, err = e.neSeq(rest, bw)
			if r != nil && err == nil {
				alt, err = e.seqOf([]*regexNode{c, r}, bw, pos)
			}
		default:
			alt, err = e.neSeq(append([]*regexNode{c}, rest...), bw)
		}
		if err != nil {
			return nil, err
		}
		if alt != nil {
			alts = append(alts, alt)
		}
	}
	body, err := e.altOf(alts, pos)
	if body == nil || err != nil {
		return nil, err
	}
	return e.seqOf(append(append([]*regexNode{}, prefix...), body), bw, pos)
}

// choices splits a node that can match both empty and non-empty into its
// alternatives, in order of preference; each is smaller than the node.
func (e *regexEmitter) choices(x *regexNode, bw bool) ([]*regexNode, *PatternError) {
	switch x.op {
	case regexOpAlt:
		return x.subs, nil
	case regexOpCapture:
		inner, err := e.choices(x.subs[0], bw)
		if err != nil {
			return nil, err
		}
		out := make([]*regexNode, 0, len(inner))
		for _, c := range inner {
			w, err := e.newNode(regexNode{op: regexOpCapture, group: x.group, subs: []*regexNode{c}, pos: x.pos})
			if err != nil {
				return nil, err
			}
			out = append(out, w)
		}
		return out, nil
	case regexOpQuant:
		if x.min == 0 {
			empty, err := e.newNode(regexNode{op: regexOpEmpty, pos: x.pos})
			if err != nil {
				return nil, err
			}
			loop, err := e.ne(x, bw)
			if err != nil {
				return nil, err
			}
			if loop == nil {
				return []*regexNode{empty}, nil
			}
			if x.greedy {
				return []*regexNode{loop, empty}, nil
			}
			return []*regexNode{empty, loop}, nil
		}
		items, err := e.unroll(x, bw)
		if err != nil {
			return nil, err
		}
		return e.seqChoices(items, bw)
	case regexOpSeq:
		return e.seqChoices(regexEvalOrder(x.subs, bw), bw)
	case regexOpBackref:
		// A backreference matches the empty string when its group is unset
		// and its capture otherwise. When the group cannot capture the
		// empty string the two cases are told apart by whether the group is
		// set; they exclude each other, so their order does not matter.
		body := e.bodies[x.group]
		switch {
		case body == nil || body.isZeroWidth():
			return e.oneNode(regexNode{op: regexOpEmpty, pos: x.pos})
		case body.isNullable():
			return nil, &PatternError{Msg: fmt.Sprintf("a backreference to group %d, which can capture the empty string, at the start of a quantified group that can match the empty string is not supported by this engine", x.group), Pos: x.pos, Unsupported: true}
		}
		ne, err := e.newNode(regexNode{op: regexOpBackrefNE, group: x.group, pos: x.pos})
		if err != nil {
			return nil, err
		}
		unset, err := e.newNode(regexNode{op: regexOpRefUnset, group: x.group, pos: x.pos})
		if err != nil {
			return nil, err
		}
		return []*regexNode{ne, unset}, nil
	}
	return []*regexNode{x}, nil
}

// oneNode returns a single new node as a list of choices.
func (e *regexEmitter) oneNode(n regexNode) ([]*regexNode, *PatternError) {
	x, err := e.newNode(n)
	if err != nil {
		return nil, err
	}
	return []*regexNode{x}, nil
}

// seqChoices splits a sequence (in matching order) by the choices of its
// first element that can consume.
func (e *regexEmitter) seqChoices(items []*regexNode, bw bool) ([]*regexNode, *PatternError) {
	i := 0
	for i < len(items) && items[i].isZeroWidth() {
		i++
	}
	if i == len(items) || !items[i].isNullable() {
		s, err := e.seqOf(items, bw, 0)
		if err != nil {
			return nil, err
		}
		return []*regexNode{s}, nil
	}
	cs, err := e.choices(items[i], bw)
	if err != nil {
		return nil, err
	}
	out := make([]*regexNode, 0, len(cs))
	for _, c := range cs {
		parts := append(append(append([]*regexNode{}, items[:i]...), c), items[i+1:]...)
		s, err := e.seqOf(parts, bw, c.pos)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

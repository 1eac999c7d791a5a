package jsregex

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"unicode"
)

// TestRegexFoldTables checks the case-insensitive tables: representatives
// are idempotent, members of their class, and known equivalences hold.
func TestRegexFoldTables(t *testing.T) {
	folds := regexFolds()
	for mode, f := range folds {
		for c := rune(0); c <= 0xFFFF; c++ {
			r := f.rep(c)
			if f.rep(r) != r {
				t.Fatalf("mode %d: rep(rep(%U)) = %U, not %U", mode, c, f.rep(r), r)
			}
		}
	}
	nonU, u := folds[0], folds[1]
	for _, c := range []struct {
		a, b        rune
		same, sameU bool
	}{
		{'a', 'A', true, true},
		{'k', 0x212A, false, true}, // Kelvin sign
		{'s', 0x17F, false, true},  // long s
		{0xDF, 0x1E9E, false, true},
		{0x3C3, 0x3C2, true, true}, // σ ς: same upper case Σ
		{'i', 0x130, false, false},
		{'i', 0x131, false, false},
		{0x1F80, 0x1F88, false, true},
		{0x10400, 0x10428, false, true}, // Deseret (astral)
		{0xB5, 0x3BC, true, true},       // micro sign and mu
	} {
		if got := nonU.rep(c.a) == nonU.rep(c.b); got != c.same && c.a <= 0xFFFF && c.b <= 0xFFFF {
			t.Errorf("non-unicode %U ~ %U: %v, want %v", c.a, c.b, got, c.same)
		}
		if got := u.rep(c.a) == u.rep(c.b); got != c.sameU {
			t.Errorf("unicode %U ~ %U: %v, want %v", c.a, c.b, got, c.sameU)
		}
	}
	// mapSet adds exactly the representatives of the members
	s := u.mapSet(regexSetOf('k', 'k'))
	if !s.contains(u.rep('k')) || !s.contains('k') {
		t.Errorf("mapSet(k) = %v", s)
	}
}

// TestRegexFoldAgreesWithV8 compares the case-insensitive classes of every
// BMP character with V8 (node): each member of a class must match the
// class's first member under /i (without and with u), and each single
// character upper/lower-case mapping of a character must match it iff it is
// in the same class. Characters that Go's Unicode 15.0 tables leave
// unassigned are skipped, on both sides of a mapping: node may know a newer
// Unicode (U+0264 gained the capital U+A7CB in Unicode 16).
func TestRegexFoldAgreesWithV8(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: compares the fold tables with Node.js (V8) (the full go test runs it)")
	}
	node, err := exec.LookPath("node")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("node is not on PATH: %v", err)
		}
		t.Skipf("skipping the comparison with V8: node is not on PATH (%v)", err)
	}
	assigned := func(c rune) bool {
		return unicode.In(c, unicode.L, unicode.M, unicode.N, unicode.P, unicode.S, unicode.Z, unicode.Cc, unicode.Cf, unicode.Co)
	}
	type class struct {
		Flags   string  `json:"flags"`
		Members []int32 `json:"members"`
	}
	var classes []class
	var singles []int32
	for mode, f := range regexFolds() {
		byRep := map[rune][]int32{}
		for c := rune(0); c <= 0xFFFF; c++ {
			if c >= 0xD800 && c <= 0xDFFF || !assigned(c) {
				continue
			}
			byRep[f.rep(c)] = append(byRep[f.rep(c)], int32(c))
		}
		for _, m := range byRep {
			if len(m) > 1 {
				classes = append(classes, class{Flags: []string{"i", "iu"}[mode], Members: m})
			} else if mode == 1 {
				singles = append(singles, m[0])
			}
		}
	}
	in, err := json.Marshal(map[string]any{"classes": classes, "singles": singles})
	if err != nil {
		t.Fatal(err)
	}
	script := `
const data = JSON.parse(require('fs').readFileSync(0, 'utf8'));
const esc = (c) => '\\u' + c.toString(16).padStart(4, '0');
const bad = [];
const rep = new Map();
for (const k of data.classes) for (const m of k.members) rep.set(k.flags + m, k.members[0]);
const same = (flags, a, b) => (rep.get(flags + a) ?? a) === (rep.get(flags + b) ?? b);
const check = (flags, c) => {
  for (const s of [String.fromCharCode(c).toUpperCase(), String.fromCharCode(c).toLowerCase()]) {
    if (s.length !== 1 || s === String.fromCharCode(c)) continue;
    const d = s.charCodeAt(0);
    if (!data.assigned.includes(d) && !rep.has(flags + d) && !data.singles.includes(d)) continue;
    const got = new RegExp('^' + esc(c) + '$', flags).test(s);
    if (got !== same(flags, c, d)) bad.push(flags + ' ' + esc(c) + ' vs ' + esc(d) + ': V8 ' + got);
  }
};
data.assigned = [];
for (const k of data.classes) {
  const re = new RegExp('^' + esc(k.members[0]) + '$', k.flags);
  for (const m of k.members) if (!re.test(String.fromCharCode(m))) bad.push(k.flags + ' ' + esc(m) + ' !~ ' + esc(k.members[0]));
  for (const m of k.members) check(k.flags, m);
}
for (const c of data.singles) { check('i', c); check('iu', c); }
console.log(JSON.stringify(bad));
`
	dir := t.TempDir()
	path := filepath.Join(dir, "fold.js")
	if err := os.WriteFile(path, []byte(script), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(node, path)
	cmd.Stdin = strings.NewReader(string(in))
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node: %v", err)
	}
	var bad []string
	if err := json.Unmarshal(out, &bad); err != nil {
		t.Fatalf("node output: %v: %s", err, out)
	}
	t.Logf("%d classes and %d single characters compared with V8", len(classes), len(singles))
	if len(bad) > 0 {
		t.Errorf("%d differences from V8:\n%s", len(bad), strings.Join(bad, "\n"))
	}
}

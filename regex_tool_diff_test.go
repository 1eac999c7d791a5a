package svc_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/seed1284c1d2/svc"
)

// regexCorpusCase is one case of testdata/regex/corpus.json.
type regexCorpusCase struct {
	Name        string `json:"name"`
	Pattern     string `json:"pattern"`
	Flags       string `json:"flags"`
	Text        string `json:"text"`
	Unsupported bool   `json:"unsupported"`
}

// regexV8Detail and regexV8Result are the shape node_eval.js prints; our
// results are brought into the same shape to be compared.
type regexV8Detail struct {
	Index       int                `json:"index"`
	Match       string             `json:"match"`
	Groups      []*string          `json:"groups"`
	NamedGroups map[string]*string `json:"namedGroups,omitempty"`
	Indices     [][]int            `json:"indices,omitempty"`
}

type regexV8Result struct {
	Error   bool            `json:"error"`
	Message string          `json:"message,omitempty"`
	Matched bool            `json:"matched"`
	Matches []string        `json:"matches"`
	Details []regexV8Detail `json:"details"`
}

// regexCorpusPath is the committed corpus, or another one named by the
// environment variable REGEX_DIFF_CORPUS (for example a large generated
// corpus when hunting differences).
func regexCorpusPath() string {
	if p := os.Getenv("REGEX_DIFF_CORPUS"); p != "" {
		return p
	}
	return "testdata/regex/corpus.json"
}

func regexLoadCorpus(t *testing.T) []regexCorpusCase {
	t.Helper()
	raw, err := os.ReadFile(regexCorpusPath())
	if err != nil {
		t.Fatal(err)
	}
	var corpus struct {
		Cases []regexCorpusCase `json:"cases"`
	}
	if err := json.Unmarshal(raw, &corpus); err != nil {
		t.Fatalf("%s: %v", regexCorpusPath(), err)
	}
	return corpus.Cases
}

// regexNodeResults runs node_eval.js on the corpus, or skips the test when
// node is not installed (fails instead when CI is "true").
func regexNodeResults(t *testing.T) []regexV8Result {
	t.Helper()
	node, err := exec.LookPath("node")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("node is not on PATH (%v); CI must run the differential test against V8", err)
		}
		t.Skipf("skipping the differential test against V8: node is not on PATH (%v)", err)
	}
	cmd := exec.Command(node, "testdata/regex/node_eval.js", regexCorpusPath())
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node_eval.js: %v\n%s", err, stderr.String())
	}
	var res []regexV8Result
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("node_eval.js output: %v", err)
	}
	return res
}

// regexMarkLone writes lone surrogates (WTF-8 in our strings) as
// <lone:xxxx>, the form node_eval.js uses.
func regexMarkLone(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		if s[i] == 0xED && i+2 < len(s) && s[i+1] >= 0xA0 && s[i+1] <= 0xBF {
			u := rune(s[i]&0x0F)<<12 | rune(s[i+1]&0x3F)<<6 | rune(s[i+2]&0x3F)
			fmt.Fprintf(&b, "<lone:%x>", u)
			i += 3
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		b.WriteRune(r)
		i += size
	}
	return b.String()
}

func regexMarkLonePtr(s *string) *string {
	if s == nil {
		return nil
	}
	v := regexMarkLone(*s)
	return &v
}

// regexAsV8 runs RegexTest on a case and brings the result into the V8
// shape; err is returned for rejected cases.
func regexAsV8(c regexCorpusCase) (regexV8Result, error) {
	resp, err := svc.RegexTest(context.Background(), svc.RegexTestRequest{
		Pattern: c.Pattern, Flags: c.Flags, Text: c.Text, Timeout: 5 * time.Second,
	})
	if err != nil {
		return regexV8Result{Error: true}, err
	}
	r := regexV8Result{Matched: resp.Matched, Matches: []string{}, Details: []regexV8Detail{}}
	for _, m := range resp.Matches {
		r.Matches = append(r.Matches, regexMarkLone(m))
	}
	for _, d := range resp.Details {
		v := regexV8Detail{Index: d.Index, Match: regexMarkLone(d.Match), Groups: []*string{}, Indices: d.Indices}
		for _, g := range d.Groups {
			v.Groups = append(v.Groups, regexMarkLonePtr(g))
		}
		if d.NamedGroups != nil {
			v.NamedGroups = map[string]*string{}
			for k, g := range d.NamedGroups {
				v.NamedGroups[k] = regexMarkLonePtr(g)
			}
		}
		r.Details = append(r.Details, v)
	}
	return r, nil
}

// TestRegexTestDifferentialV8 compares RegexTest with V8 on the committed
// corpus: every supported case must agree exactly (matched, matches, index,
// groups, named groups, indices; or both reject the pattern), and every
// case marked unsupported must be rejected as such.
func TestRegexTestDifferentialV8(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: runs the corpus in Node.js (V8) (the full go test runs it)")
	}
	cases := regexLoadCorpus(t)
	v8 := regexNodeResults(t)
	if len(v8) != len(cases) {
		t.Fatalf("node_eval.js returned %d results for %d cases", len(v8), len(cases))
	}
	compared, rejectedBoth, unsupported := 0, 0, 0
	for i, c := range cases {
		label := fmt.Sprintf("case %d %q (/%s/%s)", i, c.Name, c.Pattern, c.Flags)
		got, err := regexAsV8(c)
		if c.Unsupported {
			unsupported++
			var e *svc.Error
			if !errors.As(err, &e) || e.Kind != svc.KindInvalid || len(e.Fields) == 0 ||
				(e.Fields[0].Rule != "regex_unsupported" && e.Fields[0].Rule != "regex_flags") {
				t.Errorf("%s: want a regex_unsupported rejection, got %v (response %+v)", label, err, got)
			}
			continue
		}
		compared++
		want := v8[i]
		want.Message = ""
		if want.Error {
			rejectedBoth++
			if err == nil {
				t.Errorf("%s: V8 rejects the pattern (%s) but RegexTest accepted it: %+v", label, v8[i].Message, got)
			} else if k := svc.KindOf(err); k != svc.KindInvalid {
				t.Errorf("%s: V8 rejects the pattern; RegexTest failed with kind %s: %v", label, k, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: V8 accepts the pattern but RegexTest failed: %v", label, err)
			continue
		}
		if !reflect.DeepEqual(got, want) {
			g, _ := json.Marshal(got)
			w, _ := json.Marshal(want)
			t.Errorf("%s differs from V8:\n  text %q\n  got  %s\n  want %s", label, c.Text, g, w)
		}
	}
	t.Logf("%d cases compared with V8 (%d rejected by both), %d unsupported cases rejected", compared, rejectedBoth, unsupported)
	if os.Getenv("REGEX_DIFF_CORPUS") != "" {
		return
	}
	if compared < 200 {
		t.Errorf("only %d compared cases; the corpus must hold at least 200", compared)
	}
	if unsupported > compared/20 {
		t.Errorf("%d unsupported cases for %d compared: unsupported constructs must stay few", unsupported, compared)
	}
}

package tools_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/seed1284c1d2/svc"
	"github.com/seed1284c1d2/svc/tools"
)

// The rules of a tool's input are written once, as validate tags in the
// root package; the tools enforce them and the input schemas publish them.
// These tests hold the two sides together through the public surface: every
// rule an input schema publishes is enforced (an input breaking it is
// refused before payment, naming the field and the rule), and every rule of
// the schema's kind that a tool enforces is published.

// publishedRule is one rule an input schema states about a member: the
// keyword, its value, the rule codes that enforce it.
type publishedRule struct {
	path    string // "entry", "bars[].open"
	keyword string
	value   any
}

// ruleCodes maps a schema keyword to the rule codes that may enforce it.
var ruleCodes = map[string][]string{
	"required":         {"required"},
	"minLength":        {"required", "min"},
	"maxLength":        {"max", "max_bytes"},
	"exclusiveMinimum": {"gt"},
	"minimum":          {"gte", "min"},
	"exclusiveMaximum": {"lt"},
	"maximum":          {"lte", "max"},
	"multipleOf":       {"integer"},
	"enum":             {"oneof"},
	"minItems":         {"min"},
	"maxItems":         {"max"},
	"type":             {"integer"}, // "type": "integer"
}

// publishedRules walks an input schema and returns its rules.
func publishedRules(s map[string]any, path string) []publishedRule {
	var out []publishedRule
	for kw := range ruleCodes {
		if v, ok := s[kw]; ok && kw != "required" && kw != "type" {
			out = append(out, publishedRule{path, kw, v})
		}
	}
	if s["type"] == "integer" || slices.Contains(anys(s["type"]), any("integer")) {
		out = append(out, publishedRule{path, "type", "integer"})
	}
	if req, ok := s["required"].([]any); ok {
		for _, name := range req {
			out = append(out, publishedRule{join(path, name.(string)), "required", true})
		}
	}
	if props, ok := s["properties"].(map[string]any); ok {
		for name, p := range props {
			out = append(out, publishedRules(p.(map[string]any), join(path, name))...)
		}
	}
	if items, ok := s["items"].(map[string]any); ok {
		out = append(out, publishedRules(items, path+"[]")...)
	}
	slices.SortFunc(out, func(a, b publishedRule) int {
		return strings.Compare(a.path+" "+a.keyword, b.path+" "+b.keyword)
	})
	return out
}

// anys returns v as a slice, nil when it is not one.
func anys(v any) []any {
	s, _ := v.([]any)
	return s
}

func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

// setAt sets (or, with del, deletes) the member at path in the decoded
// example doc, using the first element of every array on the way.
func setAt(doc map[string]any, path string, v any, del bool) {
	segs := strings.Split(strings.ReplaceAll(path, "[]", ".[]"), ".")
	var cur any = doc
	for i, seg := range segs {
		last := i == len(segs)-1
		switch c := cur.(type) {
		case map[string]any:
			if last {
				if del {
					delete(c, seg)
				} else {
					c[seg] = v
				}
				return
			}
			next, ok := c[seg]
			if !ok || next == nil {
				if segs[i+1] == "[]" {
					next = []any{map[string]any{}}
				} else {
					next = map[string]any{}
				}
				c[seg] = next
			}
			cur = next
		case []any:
			if last || len(c) == 0 {
				return
			}
			cur = c[0]
		}
	}
}

// concrete turns a descriptor path into the field path of an error about
// the member setAt changed: "bars[].open" → "bars[0].open".
func concrete(path string) string { return strings.ReplaceAll(path, "[]", "[0]") }

// violation returns a value that breaks the rule, or ok false when the rule
// cannot be broken by a value alone.
func violation(r publishedRule, example map[string]any) (v any, del, ok bool) {
	num := func() float64 { f, _ := r.value.(float64); return f }
	switch r.keyword {
	case "required":
		return nil, true, true
	case "minLength":
		return "", false, num() == 1
	case "maxLength":
		return strings.Repeat("a", int(num())+1), false, true
	case "exclusiveMinimum":
		return num(), false, true
	case "minimum":
		return num() - 1, false, true
	case "exclusiveMaximum":
		return num(), false, true
	case "maximum":
		return num() + 1, false, true
	case "type":
		return 0.5, false, true
	case "multipleOf":
		return 0.5 * num(), false, num() == 1
	case "enum":
		return "not-one-of-them", false, true
	case "minItems":
		return []any{}, false, num() == 1
	case "maxItems":
		arr, _ := example[strings.TrimSuffix(r.path, "[]")].([]any)
		if len(arr) == 0 || strings.Contains(r.path, ".") {
			return nil, false, false
		}
		items := make([]any, int(num())+1)
		for i := range items {
			items[i] = arr[0]
		}
		return items, false, true
	}
	return nil, false, false
}

func decodeExample(t *testing.T, tl *tools.Tool) map[string]any {
	t.Helper()
	var doc map[string]any
	if err := json.Unmarshal(tl.ExampleInput, &doc); err != nil {
		t.Fatalf("%s: example: %v", tl.Key, err)
	}
	return doc
}

// fieldErrors returns the field errors of a refused input.
func fieldErrors(err error) []svc.FieldError {
	var e *svc.Error
	if errors.As(err, &e) {
		return e.Fields
	}
	return nil
}

func TestPublishedRulesAreEnforced(t *testing.T) {
	ctx := context.Background()
	cat, err := tools.New(tools.Options{})
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, tl := range cat.All() {
		if _, err := tl.DecodeJSON(ctx, tl.ExampleInput); err != nil {
			t.Fatalf("%s: the example is refused: %v", tl.Key, err)
		}
		for _, r := range publishedRules(tl.InputSchemaMap(), "") {
			doc := decodeExample(t, tl)
			v, del, ok := violation(r, doc)
			if !ok {
				continue
			}
			setAt(doc, r.path, v, del)
			in, _ := json.Marshal(doc)
			_, err := tl.DecodeJSON(ctx, in)
			want := concrete(r.path)
			found := slices.ContainsFunc(fieldErrors(err), func(f svc.FieldError) bool {
				return f.Field == want && slices.Contains(ruleCodes[r.keyword], f.Rule)
			})
			if !found {
				t.Errorf("%s: %s %s=%v is published, but an input breaking it (%s) gets %v", tl.Key, r.path, r.keyword, r.value, cut(string(in), 200), err)
			}
			checked++
		}
	}
	t.Logf("%d published rules broken and refused", checked)
	if checked < 40 {
		t.Fatalf("only %d published rules checked", checked)
	}
}

// indexRE matches the element indices of an error's field path.
var indexRE = regexp.MustCompile(`\[\d+\]`)

func TestEnforcedRulesArePublished(t *testing.T) {
	ctx := context.Background()
	cat, err := tools.New(tools.Options{})
	if err != nil {
		t.Fatal(err)
	}
	// Values that break one rule or another: out of every bound, of the
	// wrong precision, empty, unknown, too long.
	values := []any{-1, 0, 0.5, 1, 2.5, 9, 11, 99, 100, 100.5, 101, 499, 501, 10001, 1e31, "1e-40",
		"", "x", "not-one-of-them", strings.Repeat("y", 70), nil, []any{}, true}
	rng := rand.New(rand.NewPCG(1, 2))
	for _, tl := range cat.All() {
		published := map[string]map[string]bool{} // path → rule codes
		var paths []string
		for _, r := range publishedRules(tl.InputSchemaMap(), "") {
			if published[r.path] == nil {
				published[r.path] = map[string]bool{}
			}
			for _, c := range ruleCodes[r.keyword] {
				published[r.path][c] = true
			}
		}
		props := map[string]bool{}
		collectPaths(tl.InputSchemaMap(), "", props)
		for p := range props {
			paths = append(paths, p)
		}
		slices.Sort(paths)
		seen := map[string]bool{}
		for range 400 {
			doc := decodeExample(t, tl)
			for range 1 + rng.IntN(2) {
				p := paths[rng.IntN(len(paths))]
				if rng.IntN(6) == 0 {
					setAt(doc, p, nil, true)
				} else {
					setAt(doc, p, values[rng.IntN(len(values))], false)
				}
			}
			in, _ := json.Marshal(doc)
			_, err := tl.DecodeJSON(ctx, in)
			for _, f := range fieldErrors(err) {
				path := indexRE.ReplaceAllString(f.Field, "[]")
				if !schemaRules[f.Rule] || inWords[tl.Key+" "+path+" "+f.Rule] {
					continue // a rule no schema keyword states (a rule across fields, a parse): described in words
				}
				seen[path+" "+f.Rule] = true
				if !published[path][f.Rule] {
					t.Errorf("%s: input %s is refused by rule %s on %s, which the input schema does not publish", tl.Key, cut(string(in), 200), f.Rule, f.Field)
				}
			}
		}
		t.Logf("%s: %d published rules broken and refused", tl.Key, len(seen))
		if len(seen) == 0 && len(published) > 0 {
			t.Errorf("%s: no published rule was ever broken by the random inputs", tl.Key)
		}
	}
}

// inWords are the rules with a schema rule code that their schema states
// in words only: csv_profile's delimiter is one of five names or any single
// character ("oneof"), which no enum can list.
var inWords = map[string]bool{"csv-profile delimiter oneof": true}

// schemaRules are the rule codes a schema keyword can state.
var schemaRules = func() map[string]bool {
	m := map[string]bool{}
	for _, codes := range ruleCodes {
		for _, c := range codes {
			m[c] = true
		}
	}
	return m
}()

// collectPaths gathers the descriptor paths of every member of a schema.
func collectPaths(s map[string]any, path string, out map[string]bool) {
	if props, ok := s["properties"].(map[string]any); ok {
		for name, p := range props {
			out[join(path, name)] = true
			collectPaths(p.(map[string]any), join(path, name), out)
		}
	}
	if items, ok := s["items"].(map[string]any); ok {
		collectPaths(items, path+"[]", out)
	}
}

func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return fmt.Sprintf("%s… (%d bytes)", s[:n], len(s))
}

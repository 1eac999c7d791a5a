package club_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/seed1284c1d2/svc/club"
)

// compileSchema compiles a published JSON Schema (draft 2020-12, formats
// asserted).
func compileSchema(t *testing.T, name string, schema map[string]any) *jsonschema.Schema {
	t.Helper()
	raw, err := json.Marshal(schema)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	if err := c.AddResource(name, doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile(name)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return s
}

// validateJSON fails unless raw is valid under s.
func validateJSON(t *testing.T, s *jsonschema.Schema, what string, raw []byte) {
	t.Helper()
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if err := s.Validate(inst); err != nil {
		t.Fatalf("%s %s: %v", what, raw, err)
	}
}

// TestPublishedSchemas: the schemas the interface description publishes
// compile, every accepted check-in body is valid under the body's, and the
// answers served (with terms of several scripts) are valid under theirs.
func TestPublishedSchemas(t *testing.T) {
	body := compileSchema(t, "check-in.json", club.CheckInSchema())
	result := compileSchema(t, "check-in-result.json", club.CheckInResultSchema())
	list := compileSchema(t, "lounge.json", club.LoungeListSchema())

	f := newFixture(t, openSQLite(t), newClock(), unlimited)
	for i, b := range []string{
		`{"wallet":"` + wallet(1) + `"}`,
		`{"wallet":"` + wallet(2) + `","agentName":"Ana (bot)","role":"Data Scientist","interests":["On_Chain","Σοφία","データ","x402","X402"]}`,
		`{"wallet":"` + wallet(3) + `","role":"","interests":[]}`,
		`{"wallet":"` + wallet(4) + `","role":"  Explorer ","interests":["utilities","e\u0301te\u0301","क्षि"]}`,
	} {
		validateJSON(t, body, "check-in body", []byte(b))
		r := f.post(t, club.CheckInPath, b)
		if r.status != http.StatusOK {
			t.Fatalf("check-in %d: %s", i, r)
		}
		validateJSON(t, result, "check-in answer", r.body)
	}
	r := f.get(t, club.LoungePath)
	validateJSON(t, list, "lounge", r.body)
	var l club.LoungeList
	decode(t, r, http.StatusOK, &l)
	if l.Count != 4 {
		t.Fatalf("lounge %s", r.body)
	}
	// The body schema refuses what it can express.
	for _, bad := range []string{`{}`, `{"wallet":"0x1"}`, `{"wallet":"` + wallet(1) + `","ip":"1.2.3.4"}`, `{"wallet":"` + wallet(1) + `","interests":"x"}`} {
		inst, _ := jsonschema.UnmarshalJSON(bytes.NewReader([]byte(bad)))
		if body.Validate(inst) == nil {
			t.Fatalf("check-in schema accepts %s", bad)
		}
	}
}

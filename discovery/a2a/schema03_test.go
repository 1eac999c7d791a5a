package a2a

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// schema03 compiles a definition of the A2A 0.3.0 JSON Schema (testdata).
func schema03(t *testing.T, def string) *jsonschema.Schema {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "a2a-v0.3.0.schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	if err := c.AddResource("a2a.json", doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile("a2a.json#/definitions/" + def)
	if err != nil {
		t.Fatalf("compiling %s: %v", def, err)
	}
	return s
}

// validate03 checks a raw answer against a 0.3 definition.
func validate03(t *testing.T, s *jsonschema.Schema, what string, raw []byte) {
	t.Helper()
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if err := s.Validate(inst); err != nil {
		t.Fatalf("%s does not conform to the A2A 0.3.0 schema: %v\n%s", what, err, raw)
	}
}

// Every A2A 0.3 answer conforms to the published A2A 0.3.0 JSON Schema.
func TestV03AnswersConformToSchema(t *testing.T) {
	env := newTestEnv(t, Options{})
	send := schema03(t, "SendMessageSuccessResponse")
	get := schema03(t, "GetTaskSuccessResponse")
	errResp := schema03(t, "JSONRPCErrorResponse")
	var firstID string
	for _, m := range []obj{
		textMessage(v03, "a", "Find a tool to profile CSV data"),
		textMessage(v03, "b", "catalog"),
		textMessage(v03, "c", "qwzx plmk vbnj"),
		dataMessage(v03, "d", obj{"query": "risk levels", "input": obj{"entry": -1}}),
		dataMessage(v03, "e", obj{"action": "find", "query": "gold"}),
		dataMessage(v03, "f", obj{"action": "tool", "key": "regex-test"}),
		textMessage(v10, "g", "1.0-shaped input, 0.3 answer: decode a JWT"),
	} {
		m["contextId"] = "ctx-1"
		ex := env.post(t, "-", request(t, `"s"`, "message/send", obj{"message": m, "configuration": obj{"blocking": true, "acceptedOutputModes": []string{}}}))
		validate03(t, send, "message/send", ex.raw)
		task := decodeTask(t, v03, ex.resp.Result, true)
		if firstID == "" {
			firstID = task.ID
			// The schema has teeth: 1.0 names in a 0.3 answer are refused.
			for _, bad := range [][2]string{{`"state":"completed"`, `"state":"TASK_STATE_COMPLETED"`}, {`"kind":"task",`, ``}, {`"role":"user"`, `"role":"ROLE_USER"`}} {
				inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(bytes.Replace(ex.raw, []byte(bad[0]), []byte(bad[1]), 1)))
				if err != nil || !bytes.Contains(ex.raw, []byte(bad[0])) {
					t.Fatalf("mutation %q: %v", bad[0], err)
				}
				if send.Validate(inst) == nil {
					t.Fatalf("the schema accepted %s", bad[1])
				}
			}
		}
	}
	for _, hl := range []any{nil, 0, 1} {
		p := obj{"id": firstID}
		if hl != nil {
			p["historyLength"] = hl
		}
		validate03(t, get, "tasks/get", env.post(t, "0.3", request(t, `3`, "tasks/get", p)).raw)
	}
	for _, body := range []string{
		`{"jsonrpc":"2.0","id":1,"method":`,
		`[]`,
		`{"jsonrpc":"2.0","id":1}`,
		request(t, `1`, "tasks/list", obj{}),
		request(t, `1`, "message/send", obj{}),
		request(t, `1`, "message/send", obj{"message": textMessage(v03, "x", "a"), "configuration": obj{"pushNotificationConfig": obj{"url": "https://e.x"}}}),
		request(t, `1`, "message/send", obj{"message": dataMessage(v03, "x", obj{"qeury": 1})}),
		request(t, `1`, "message/send", obj{"message": obj{"kind": "message", "messageId": "x", "role": "user", "parts": []any{obj{"kind": "file", "file": obj{"uri": "https://e.x/a"}}}}}),
		request(t, `1`, "tasks/get", obj{"id": "nope"}),
		request(t, `1`, "tasks/cancel", obj{"id": firstID}),
		request(t, `1`, "message/stream", obj{}),
		request(t, `1`, "tasks/pushNotificationConfig/get", obj{"id": firstID}),
		request(t, `1`, "agent/getAuthenticatedExtendedCard", nil),
	} {
		ex := env.post(t, "-", body)
		if ex.resp.Error == nil {
			t.Fatalf("%s: no error", body)
		}
		validate03(t, errResp, "error answer", ex.raw)
	}
	ex := env.post(t, "0.9", request(t, `1`, "tasks/get", obj{"id": "x"}))
	validate03(t, errResp, "version error", ex.raw)
}

// The tasks of a paid call conform to the A2A 0.3.0 schema in every state:
// input-required, completed (with the answer), failed, canceled; and so do
// tasks/get and tasks/cancel on them.
func TestV03PaidCallConformsToSchema(t *testing.T) {
	env := newPayEnv(t)
	send := schema03(t, "SendMessageSuccessResponse")
	get := schema03(t, "GetTaskSuccessResponse")
	cancel := schema03(t, "CancelTaskSuccessResponse")
	sendRaw := func(m obj) []byte {
		t.Helper()
		ex := env.sendRaw(t, v03, m)
		validate03(t, send, "message/send", ex.raw)
		return ex.raw
	}
	first := env.send(t, v03, saleMessage(v03, "m1", "risk-levels", riskInput))
	sendRaw(saleMessage(v03, "m2", "risk-levels", riskInput))
	payment := env.pay(t, first.required(t), nil)
	sendRaw(payingMessage(v03, "m3", first.ID, payment))
	validate03(t, get, "tasks/get", env.postWith(t, v03, request(t, `2`, "tasks/get", obj{"id": first.ID}), true).raw)
	other := env.send(t, v03, saleMessage(v03, "m4", "risk-levels", obj{"entry": 1, "direction": "long", "slPct": 0.05, "tpPct": 0.04}))
	sendRaw(payingMessage(v03, "m5", other.ID, payment)) // refused: failed
	pending := env.send(t, v03, saleMessage(v03, "m6", "risk-levels", riskInput))
	validate03(t, cancel, "tasks/cancel", env.postWith(t, v03, request(t, `3`, "tasks/cancel", obj{"id": pending.ID}), true).raw)
	env.term.SetDown(true)
	sendRaw(saleMessage(v03, "m7", "xau-quote", obj{}))
}

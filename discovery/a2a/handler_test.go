package a2a

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/seed1284c1d2/svc/discovery"
)

var bothVersions = []version{v10, v03}

// planOf returns the call-plan artifact of a task: the plan and the summary.
func planOf(t *testing.T, task wireTask) (discovery.RoutePlan, string) {
	t.Helper()
	if len(task.Artifacts) != 1 || task.Artifacts[0].Name != "call-plan" || task.Artifacts[0].ArtifactID == "" {
		t.Fatalf("want one call-plan artifact, got %+v", task.Artifacts)
	}
	parts := task.Artifacts[0].Parts
	if len(parts) != 2 || parts[0].Data == nil || parts[1].Text == nil {
		t.Fatalf("call-plan parts must be [data, text]: %+v", parts)
	}
	var plan discovery.RoutePlan
	if err := json.Unmarshal(parts[0].Data, &plan); err != nil {
		t.Fatalf("plan: %v in %s", err, parts[0].Data)
	}
	return plan, *parts[1].Text
}

func TestSendMessageTextYieldsRoutePlan(t *testing.T) {
	env := newTestEnv(t, Options{})
	for _, v := range bothVersions {
		t.Run(v.String(), func(t *testing.T) {
			const need = "Find a tool to profile CSV data"
			res := env.call(t, header(v), sendMethod(v), obj{"message": textMessage(v, "m-1", need)})
			task := decodeTask(t, v, res, true)
			plan, summary := planOf(t, task)
			want, err := env.s.Route(t.Context(), need, nil)
			if err != nil {
				t.Fatal(err)
			}
			if !plan.Matched || plan.Tool != want.Tool || plan.URL != want.URL || plan.Method != want.Method || plan.Query != need {
				t.Fatalf("plan %+v, want the Route plan %+v", plan, want)
			}
			if plan.Tool != "csv-profile" {
				t.Fatalf("best tool %q for %q, want csv-profile", plan.Tool, need)
			}
			tool, ok := env.cat.ByKey("csv-profile")
			if !ok {
				t.Fatal("csv-profile not in the catalog")
			}
			for _, s := range []string{tool.Name, "csv-profile", tool.URL, tool.Method, string(plan.Price.USD), "402", "x402", "PAYMENT-SIGNATURE", plan.Network} {
				if !strings.Contains(summary, s) {
					t.Fatalf("summary %q lacks %q", summary, s)
				}
			}
			if v == v10 {
				p := task.Artifacts[0].Parts
				if p[0].MediaType != "application/json" || p[1].MediaType != "text/plain" {
					t.Fatalf("1.0 media types %q, %q", p[0].MediaType, p[1].MediaType)
				}
			}
			if len(task.History) != 1 {
				t.Fatalf("history %+v, want the user message", task.History)
			}
			h := task.History[0]
			if h.MessageID != "m-1" || h.TaskID != task.ID || h.ContextID != task.ContextID || len(h.Parts) != 1 || *h.Parts[0].Text != need {
				t.Fatalf("history message %+v", h)
			}
		})
	}
}

func TestSendMessageKeepsContextID(t *testing.T) {
	env := newTestEnv(t, Options{})
	for _, v := range bothVersions {
		t.Run(v.String(), func(t *testing.T) {
			m := textMessage(v, "m-ctx", "stop loss and take profit levels")
			m["contextId"] = "ctx-" + v.String()
			task := decodeTask(t, v, env.call(t, header(v), sendMethod(v), obj{"message": m}), true)
			if task.ContextID != "ctx-"+v.String() {
				t.Fatalf("contextId %q, want the caller's", task.ContextID)
			}
			plan, _ := planOf(t, task)
			if plan.Tool != "risk-levels" {
				t.Fatalf("tool %q, want risk-levels", plan.Tool)
			}
			// Without a contextId, each task gets a fresh one.
			a := decodeTask(t, v, env.call(t, header(v), sendMethod(v), obj{"message": textMessage(v, "a", "decode a JWT")}), true)
			b := decodeTask(t, v, env.call(t, header(v), sendMethod(v), obj{"message": textMessage(v, "b", "decode a JWT")}), true)
			if a.ContextID == b.ContextID || a.ID == b.ID || a.ContextID == a.ID {
				t.Fatalf("ids not fresh: %s/%s %s/%s", a.ID, a.ContextID, b.ID, b.ContextID)
			}
		})
	}
}

func TestSendMessageDataPartRoutesWithInput(t *testing.T) {
	env := newTestEnv(t, Options{})
	tool, _ := env.cat.ByKey("risk-levels")
	for _, v := range bothVersions {
		t.Run(v.String(), func(t *testing.T) {
			// A valid input: the tool's example.
			var example any
			if err := json.Unmarshal(tool.ExampleInput, &example); err != nil {
				t.Fatal(err)
			}
			res := env.call(t, header(v), sendMethod(v), obj{"message": dataMessage(v, "d-1", obj{"query": "risk levels", "input": example})})
			plan, summary := planOf(t, decodeTask(t, v, res, true))
			if plan.Tool != "risk-levels" || !plan.InputValid || plan.InputSource != "caller" {
				t.Fatalf("plan with a valid input: tool %q valid %v source %q", plan.Tool, plan.InputValid, plan.InputSource)
			}
			if strings.Contains(summary, "invalid") {
				t.Fatalf("summary %q", summary)
			}
			// An invalid input: the plan says so before anyone pays.
			res = env.call(t, header(v), sendMethod(v), obj{"message": dataMessage(v, "d-2", obj{"query": "risk levels", "input": obj{"entry": -1}})})
			plan, summary = planOf(t, decodeTask(t, v, res, true))
			if plan.InputValid || len(plan.InputErrors) == 0 {
				t.Fatalf("an invalid input passed: %+v", plan)
			}
			if !strings.Contains(summary, "invalid") || !strings.Contains(summary, plan.InputErrors[0].Field) {
				t.Fatalf("summary %q does not name the invalid field %q", summary, plan.InputErrors[0].Field)
			}
		})
	}
}

func TestSendMessageTextAndDataQuery(t *testing.T) {
	env := newTestEnv(t, Options{})
	// The data part's query wins over the text; the text alone is the query otherwise.
	m := textMessage(v10, "td", "Find a tool to profile CSV data")
	m["parts"] = append(m["parts"].([]any), obj{"data": obj{"query": "validate an EVM wallet address"}})
	plan, _ := planOf(t, decodeTask(t, v10, env.call(t, "1.0", "SendMessage", obj{"message": m}), true))
	if plan.Tool != "evm-address-syntax" {
		t.Fatalf("tool %q, want evm-address-syntax (the data part's query)", plan.Tool)
	}
	// Several text parts are joined.
	m = textMessage(v03, "tt", "I need")
	m["parts"] = append(m["parts"].([]any), obj{"kind": "text", "text": "to decode a JWT token"})
	plan, _ = planOf(t, decodeTask(t, v03, env.call(t, "-", "message/send", obj{"message": m}), true))
	if plan.Tool != "jwt-decode" || plan.Query != "I need\nto decode a JWT token" {
		t.Fatalf("tool %q query %q", plan.Tool, plan.Query)
	}
}

func TestSendMessageNoMatch(t *testing.T) {
	env := newTestEnv(t, Options{})
	for _, v := range bothVersions {
		res := env.call(t, header(v), sendMethod(v), obj{"message": textMessage(v, "nm", "qwzx plmk vbnj")})
		task := decodeTask(t, v, res, true)
		plan, summary := planOf(t, task)
		if plan.Matched || plan.Tool != "" {
			t.Fatalf("%s: a bread recipe matched %q", v, plan.Tool)
		}
		if !strings.Contains(summary, "catalog") {
			t.Fatalf("%s: summary %q does not point to the catalog", v, summary)
		}
	}
}

func TestSendMessageCatalog(t *testing.T) {
	env := newTestEnv(t, Options{})
	all := env.cat.All()
	for _, v := range bothVersions {
		for _, text := range []string{"catalog", "List tools", "show me all the tools!", "what tools do you have?", "Tool catalogue please"} {
			task := decodeTask(t, v, env.call(t, header(v), sendMethod(v), obj{"message": textMessage(v, "c", text)}), true)
			if len(task.Artifacts) != 1 || task.Artifacts[0].Name != "catalog" {
				t.Fatalf("%s %q: artifacts %+v", v, text, task.Artifacts)
			}
			var page discovery.CatalogPage
			if err := json.Unmarshal(task.Artifacts[0].Parts[0].Data, &page); err != nil {
				t.Fatal(err)
			}
			if page.Total != len(all) || len(page.Items) != len(all) || page.Items[0].Key != all[0].Key {
				t.Fatalf("%s %q: page total %d items %d, want %d", v, text, page.Total, len(page.Items), len(all))
			}
			summary := *task.Artifacts[0].Parts[1].Text
			for _, tool := range all {
				if !strings.Contains(summary, tool.Key) {
					t.Fatalf("summary %q lacks %s", summary, tool.Key)
				}
			}
		}
		// A data part pages and filters.
		task := decodeTask(t, v, env.call(t, header(v), sendMethod(v), obj{"message": dataMessage(v, "c", obj{"action": "catalog", "offset": 1, "limit": 2})}), true)
		var page discovery.CatalogPage
		if err := json.Unmarshal(task.Artifacts[0].Parts[0].Data, &page); err != nil {
			t.Fatal(err)
		}
		if page.Offset != 1 || page.Limit != 2 || len(page.Items) != 2 || page.Items[0].Key != all[1].Key {
			t.Fatalf("%s: paged catalog %+v", v, page)
		}
	}
	// A kind of tools: by tag, else by the finder.
	for text, prefix := range map[string]string{"Show the gold tools": "xau-", "list data tools": "", "show me the jwt tools": "jwt-"} {
		task := decodeTask(t, v10, env.call(t, "1.0", "SendMessage", obj{"message": textMessage(v10, "c", text)}), true)
		var page discovery.CatalogPage
		if task.Artifacts[0].Name != "catalog" || json.Unmarshal(task.Artifacts[0].Parts[0].Data, &page) != nil || page.Total == 0 || page.Total >= len(all) {
			t.Fatalf("%q: %s %+v", text, task.Artifacts[0].Name, page)
		}
		for _, it := range page.Items {
			if !strings.HasPrefix(it.Key, prefix) {
				t.Fatalf("%q listed %s", text, it.Key)
			}
		}
	}
	// A need that mentions tools is still routed.
	task := decodeTask(t, v10, env.call(t, "1.0", "SendMessage", obj{"message": textMessage(v10, "c", "list tools for gold prices")}), true)
	if task.Artifacts[0].Name != "call-plan" {
		t.Fatalf("a need was answered with %q", task.Artifacts[0].Name)
	}
}

func TestSendMessageFindAndToolActions(t *testing.T) {
	env := newTestEnv(t, Options{})
	for _, v := range bothVersions {
		task := decodeTask(t, v, env.call(t, header(v), sendMethod(v), obj{"message": dataMessage(v, "f", obj{"action": "find", "query": "gold price", "limit": 2})}), true)
		if task.Artifacts[0].Name != "matches" {
			t.Fatalf("artifact %q", task.Artifacts[0].Name)
		}
		var found discovery.FindResult
		if err := json.Unmarshal(task.Artifacts[0].Parts[0].Data, &found); err != nil {
			t.Fatal(err)
		}
		if len(found.Matches) != 2 || !strings.HasPrefix(found.Matches[0].Key, "xau-") {
			t.Fatalf("find gold: %+v", found.Matches)
		}
		task = decodeTask(t, v, env.call(t, header(v), sendMethod(v), obj{"message": dataMessage(v, "k", obj{"action": "tool", "key": "/api/jwt-decode"})}), true)
		if task.Artifacts[0].Name != "tool" {
			t.Fatalf("artifact %q", task.Artifacts[0].Name)
		}
		var item struct{ Key, URL string }
		if err := json.Unmarshal(task.Artifacts[0].Parts[0].Data, &item); err != nil {
			t.Fatal(err)
		}
		if item.Key != "jwt-decode" || !strings.Contains(*task.Artifacts[0].Parts[1].Text, item.URL) {
			t.Fatalf("tool item %+v, summary %q", item, *task.Artifacts[0].Parts[1].Text)
		}
	}
}

func TestGetTaskBothVersions(t *testing.T) {
	env := newTestEnv(t, Options{})
	for _, created := range bothVersions {
		sent := decodeTask(t, created, env.call(t, header(created), sendMethod(created), obj{"message": textMessage(created, "g", "profile a JSON document shape")}), true)
		for _, v := range bothVersions {
			// A task created in one version reads back in either.
			got := decodeTask(t, v, env.call(t, header(v), getMethod(v), obj{"id": sent.ID}), false)
			if got.ID != sent.ID || got.ContextID != sent.ContextID || got.Status.Timestamp != sent.Status.Timestamp {
				t.Fatalf("created in %s, read in %s: %+v vs %+v", created, v, got, sent)
			}
			gp, _ := planOf(t, got)
			sp, _ := planOf(t, sent)
			if gp.Tool != sp.Tool || got.Artifacts[0].ArtifactID != sent.Artifacts[0].ArtifactID || len(got.History) != 1 {
				t.Fatalf("task read back differs: %+v", got)
			}
			// historyLength 0 omits the history.
			raw := env.call(t, header(v), getMethod(v), obj{"id": sent.ID, "historyLength": 0})
			if strings.Contains(string(raw), `"history"`) {
				t.Fatalf("historyLength 0 kept the history: %s", raw)
			}
			if got := decodeTask(t, v, env.call(t, header(v), getMethod(v), obj{"id": sent.ID, "historyLength": 5}), false); len(got.History) != 1 {
				t.Fatalf("historyLength 5: %d messages", len(got.History))
			}
		}
	}
	// SendMessage honours configuration.historyLength too.
	raw := env.call(t, "1.0", "SendMessage", obj{"message": textMessage(v10, "h", "decode a JWT"), "configuration": obj{"historyLength": 0, "returnImmediately": true}})
	if strings.Contains(string(raw), `"history"`) {
		t.Fatalf("configuration.historyLength 0 kept the history: %s", raw)
	}
}

func TestAcceptedOutputModes(t *testing.T) {
	env := newTestEnv(t, Options{})
	for _, v := range bothVersions {
		cfg := obj{"acceptedOutputModes": []string{"text/plain"}}
		if v == v03 {
			cfg["blocking"] = true
		}
		task := decodeTask(t, v, env.call(t, header(v), sendMethod(v), obj{"message": textMessage(v, "o", "decode a JWT"), "configuration": cfg}), true)
		if p := task.Artifacts[0].Parts; len(p) != 1 || p[0].Text == nil {
			t.Fatalf("text/plain only: parts %+v", p)
		}
		cfg["acceptedOutputModes"] = []string{"application/*"}
		task = decodeTask(t, v, env.call(t, header(v), sendMethod(v), obj{"message": textMessage(v, "o", "decode a JWT"), "configuration": cfg}), true)
		if p := task.Artifacts[0].Parts; len(p) != 1 || p[0].Data == nil {
			t.Fatalf("application/* only: parts %+v", p)
		}
		cfg["acceptedOutputModes"] = []string{}
		task = decodeTask(t, v, env.call(t, header(v), sendMethod(v), obj{"message": textMessage(v, "o", "decode a JWT"), "configuration": cfg}), true)
		if len(task.Artifacts[0].Parts) != 2 {
			t.Fatalf("empty acceptedOutputModes must accept everything")
		}
		cfg["acceptedOutputModes"] = []string{"image/png"}
		ex := env.callErr(t, header(v), sendMethod(v), obj{"message": textMessage(v, "o", "decode a JWT"), "configuration": cfg}, CodeContentTypeNotSupported)
		if v == v10 && reason(t, ex) != "CONTENT_TYPE_NOT_SUPPORTED" {
			t.Fatalf("reason %q", reason(t, ex))
		}
	}
}

func TestListTasks(t *testing.T) {
	env := newTestEnv(t, Options{})
	env.call(t, "1.0", "SendMessage", obj{"message": textMessage(v10, "l", "decode a JWT")})
	for _, tc := range []struct {
		params any
		size   int
	}{{nil, 50}, {obj{}, 50}, {obj{"pageSize": 7, "status": "TASK_STATE_COMPLETED", "contextId": "x", "historyLength": 0, "includeArtifacts": true, "statusTimestampAfter": "2026-01-02T03:04:05.5Z"}, 7}, {obj{"pageSize": 100}, 100}} {
		raw := env.call(t, "1.0", "ListTasks", tc.params)
		want := `{"tasks":[],"nextPageToken":"","pageSize":` + itoa(tc.size) + `,"totalSize":0}`
		if string(raw) != want {
			t.Fatalf("ListTasks %v = %s, want %s", tc.params, raw, want)
		}
	}
	for _, tc := range []struct {
		params any
		field  string
	}{
		{obj{"pageSize": 0}, "params.pageSize"},
		{obj{"pageSize": 101}, "params.pageSize"},
		{obj{"pageSize": "ten"}, "params.pageSize"},
		{obj{"pageToken": "abc"}, "params.pageToken"},
		{obj{"status": "completed"}, "params.status"},
		{obj{"historyLength": -1}, "params.historyLength"},
		{obj{"statusTimestampAfter": "yesterday"}, "params.statusTimestampAfter"},
	} {
		ex := env.callErr(t, "1.0", "ListTasks", tc.params, CodeInvalidParams)
		if f := violations(t, v10, ex); len(f) != 1 || f[0].Field != tc.field {
			t.Fatalf("ListTasks %v: violations %+v, want %s", tc.params, f, tc.field)
		}
	}
	// 0.3 has no tasks/list over JSON-RPC.
	env.callErr(t, "-", "tasks/list", obj{}, CodeMethodNotFound)
}

func itoa(n int) string { b, _ := json.Marshal(n); return string(b) }

func TestTaskNotFoundAndNotCancelable(t *testing.T) {
	env := newTestEnv(t, Options{})
	for _, v := range bothVersions {
		for _, method := range []string{getMethod(v), cancelMethod(v)} {
			ex := env.callErr(t, header(v), method, obj{"id": "no-such-task"}, CodeTaskNotFound)
			if v == v10 {
				if reason(t, ex) != "TASK_NOT_FOUND" {
					t.Fatalf("%s: reason %q", method, reason(t, ex))
				}
			} else {
				var d errorData03
				if err := json.Unmarshal(ex.resp.Error.Data, &d); err != nil || d.TaskID != "no-such-task" {
					t.Fatalf("%s: 0.3 data %s", method, ex.resp.Error.Data)
				}
			}
		}
		task := decodeTask(t, v, env.call(t, header(v), sendMethod(v), obj{"message": textMessage(v, "x", "decode a JWT")}), true)
		ex := env.callErr(t, header(v), cancelMethod(v), obj{"id": task.ID}, CodeTaskNotCancelable)
		if v == v10 && reason(t, ex) != "TASK_NOT_CANCELABLE" {
			t.Fatalf("reason %q", reason(t, ex))
		}
		// A message to a completed task: -32004; to an unknown one: -32001.
		m := textMessage(v, "y", "and now the gold price")
		m["taskId"] = task.ID
		ex = env.callErr(t, header(v), sendMethod(v), obj{"message": m}, CodeUnsupportedOperation)
		if v == v10 && reason(t, ex) != "UNSUPPORTED_OPERATION" {
			t.Fatalf("reason %q", reason(t, ex))
		}
		m["taskId"] = "gone"
		env.callErr(t, header(v), sendMethod(v), obj{"message": m}, CodeTaskNotFound)
	}
}

func TestUnsupportedMethods(t *testing.T) {
	env := newTestEnv(t, Options{})
	for _, tc := range []struct {
		version, method, reason string
		code                    int
	}{
		{"1.0", "SendStreamingMessage", "UNSUPPORTED_OPERATION", CodeUnsupportedOperation},
		{"1.0", "SubscribeToTask", "UNSUPPORTED_OPERATION", CodeUnsupportedOperation},
		{"1.0", "GetExtendedAgentCard", "UNSUPPORTED_OPERATION", CodeUnsupportedOperation},
		{"1.0", "CreateTaskPushNotificationConfig", "PUSH_NOTIFICATION_NOT_SUPPORTED", CodePushNotificationNotSupported},
		{"1.0", "GetTaskPushNotificationConfig", "PUSH_NOTIFICATION_NOT_SUPPORTED", CodePushNotificationNotSupported},
		{"1.0", "ListTaskPushNotificationConfigs", "PUSH_NOTIFICATION_NOT_SUPPORTED", CodePushNotificationNotSupported},
		{"1.0", "DeleteTaskPushNotificationConfig", "PUSH_NOTIFICATION_NOT_SUPPORTED", CodePushNotificationNotSupported},
		{"-", "message/stream", "", CodeUnsupportedOperation},
		{"-", "tasks/resubscribe", "", CodeUnsupportedOperation},
		{"-", "agent/getAuthenticatedExtendedCard", "", CodeUnsupportedOperation},
		{"-", "tasks/pushNotificationConfig/set", "", CodePushNotificationNotSupported},
		{"-", "tasks/pushNotificationConfig/get", "", CodePushNotificationNotSupported},
		{"-", "tasks/pushNotificationConfig/list", "", CodePushNotificationNotSupported},
		{"-", "tasks/pushNotificationConfig/delete", "", CodePushNotificationNotSupported},
	} {
		ex := env.callErr(t, tc.version, tc.method, obj{"id": "t"}, tc.code)
		if tc.version == "1.0" && reason(t, ex) != tc.reason {
			t.Fatalf("%s: reason %q, want %q", tc.method, reason(t, ex), tc.reason)
		}
		if tc.version == "-" && strings.HasPrefix(string(ex.resp.Error.Data), "[") {
			t.Fatalf("%s: 0.3 error data is an array: %s", tc.method, ex.raw)
		}
	}
	// A push configuration inside a send is refused too, in both versions.
	env.callErr(t, "1.0", "SendMessage", obj{"message": textMessage(v10, "p", "decode a JWT"),
		"configuration": obj{"taskPushNotificationConfig": obj{"url": "https://example.com/hook"}}}, CodePushNotificationNotSupported)
	env.callErr(t, "-", "message/send", obj{"message": textMessage(v03, "p", "decode a JWT"),
		"configuration": obj{"pushNotificationConfig": obj{"url": "https://example.com/hook"}}}, CodePushNotificationNotSupported)
}

func TestMethodNotFound(t *testing.T) {
	env := newTestEnv(t, Options{})
	for _, tc := range []struct{ version, method string }{
		{"1.0", "sendMessage"}, {"1.0", "Tasks/Get"}, {"-", "tasks/list"}, {"-", "rpc.discover"}, {"0.3", "QuerySkill"}, {"1.0", "message/sendx"},
	} {
		ex := env.callErr(t, tc.version, tc.method, obj{}, CodeMethodNotFound)
		if !strings.Contains(ex.resp.Error.Message, tc.method) {
			t.Fatalf("message %q does not name the method", ex.resp.Error.Message)
		}
	}
}

func TestInvalidParams(t *testing.T) {
	env := newTestEnv(t, Options{})
	for _, v := range bothVersions {
		good := textMessage(v, "ok", "decode a JWT")
		with := func(k string, val any) obj {
			m := obj{}
			for key, x := range good {
				m[key] = x
			}
			if val == nil {
				delete(m, k)
			} else {
				m[k] = val
			}
			return obj{"message": m}
		}
		for _, tc := range []struct {
			method string
			params any
			field  string
			rule   string
		}{
			{sendMethod(v), nil, "params", "required"},
			{sendMethod(v), []any{1, 2}, "params", "object"},
			{sendMethod(v), obj{}, "message", "required"},
			{sendMethod(v), obj{"message": "hello"}, "message", "object"},
			{sendMethod(v), with("messageId", nil), "message.messageId", "required"},
			{sendMethod(v), with("messageId", 12), "message.messageId", "string"},
			{sendMethod(v), with("messageId", strings.Repeat("m", 300)), "message.messageId", "max"},
			{sendMethod(v), with("role", nil), "message.role", "required"},
			{sendMethod(v), with("role", "ROLE_ROBOT"), "message.role", "oneof"},
			{sendMethod(v), with("kind", "task"), "message.kind", "oneof"},
			{sendMethod(v), with("parts", []any{}), "message.parts", "required"},
			{sendMethod(v), with("parts", "text"), "message.parts", "array"},
			{sendMethod(v), with("parts", []any{"text"}), "message.parts[0]", "object"},
			{sendMethod(v), with("parts", []any{obj{}}), "message.parts[0]", "required"},
			{sendMethod(v), with("parts", []any{obj{"text": "a", "data": obj{}}}), "message.parts[0]", "oneof"},
			{sendMethod(v), with("parts", []any{obj{"kind": "text"}}), "message.parts[0].text", "string"},
			{sendMethod(v), with("parts", []any{obj{"text": 5}}), "message.parts[0].text", "string"},
			{sendMethod(v), with("parts", []any{obj{"kind": "video", "text": "x"}}), "message.parts[0].kind", "oneof"},
			{sendMethod(v), with("parts", []any{obj{"data": []any{1}}}), "message.parts[0].data", "object"},
			{sendMethod(v), with("parts", []any{obj{"data": obj{"qeury": "x"}}}), "message.parts[0].data.qeury", "unknown_field"},
			{sendMethod(v), with("parts", []any{obj{"text": `{"qeury": "x"}`}}), "message.parts[0].text.qeury", "unknown_field"},
			{sendMethod(v), with("parts", []any{obj{"text": `{"input": {"entry": 1}}`}}), "message.parts", "required"},
			{sendMethod(v), with("parts", []any{obj{"data": obj{"action": "buy"}}}), "message.parts[0].data.action", "oneof"},
			{sendMethod(v), with("parts", []any{obj{"data": obj{"limit": "3"}}}), "message.parts[0].data.limit", "integer"},
			{sendMethod(v), with("parts", []any{obj{"data": obj{"query": "a"}}, obj{"data": obj{"query": "b"}}}), "message.parts[1].data", "max"},
			{sendMethod(v), with("parts", []any{obj{"text": "   "}}), "message.parts", "required"},
			{sendMethod(v), with("parts", []any{obj{"data": obj{"action": "find"}}}), "message.parts[0].data.query", "required"},
			{sendMethod(v), with("parts", []any{obj{"text": "decode a JWT"}, obj{"data": obj{"query": " "}}}), "message.parts[1].data.query", "required"},
			{sendMethod(v), with("parts", []any{obj{"data": obj{"action": "catalog", "offset": -1}}}), "message.parts[0].data.offset", "min"},
			{sendMethod(v), with("parts", []any{obj{"data": obj{"action": "find", "query": "gold", "limit": 99}}}), "message.parts[0].data.limit", "range"},
			{sendMethod(v), with("parts", []any{obj{"data": obj{"action": "find", "query": strings.Repeat("gold ", 200)}}}), "message.parts[0].data.query", "max"},
			{sendMethod(v), with("parts", []any{obj{"data": obj{"action": "tool", "key": "no-such-tool"}}}), "message.parts[0].data.key", "unknown"},
			{sendMethod(v), with("parts", []any{obj{"data": obj{"query": "risk levels", "input": []any{1}}}}), "input", "object"},
			{sendMethod(v), with("parts", []any{obj{"data": obj{"action": "tool"}}}), "message.parts[0].data.key", "required"},
			{sendMethod(v), with("parts", []any{obj{"text": "x", "metadata": "m"}}), "message.parts[0].metadata", "object"},
			{sendMethod(v), with("metadata", []any{}), "message.metadata", "object"},
			{sendMethod(v), obj{"message": good, "configuration": obj{"historyLength": -1}}, "params.configuration.historyLength", "min"},
			{sendMethod(v), obj{"message": good, "configuration": obj{"acceptedOutputModes": "text/plain"}}, "params.configuration.acceptedOutputModes", "array"},
			{sendMethod(v), obj{"message": good, "metadata": 3}, "params.metadata", "object"},
			{getMethod(v), nil, "params", "required"},
			{getMethod(v), obj{}, "params.id", "required"},
			{getMethod(v), obj{"id": 7}, "params.id", "string"},
			{getMethod(v), obj{"id": "x", "historyLength": -2}, "params.historyLength", "min"},
			{getMethod(v), obj{"id": "x", "historyLength": 1.5}, "params.historyLength", "integer"},
			{cancelMethod(v), obj{"id": ""}, "params.id", "required"},
		} {
			ex := env.callErr(t, header(v), tc.method, tc.params, CodeInvalidParams)
			f := violations(t, v, ex)
			if len(f) != 1 || f[0].Field != tc.field || f[0].Rule != tc.rule || f[0].Message == "" {
				t.Fatalf("%s %s %v: violations %+v, want field %s rule %s\n%s", v, tc.method, tc.params, f, tc.field, tc.rule, ex.raw)
			}
			if !strings.Contains(ex.resp.Error.Message, tc.field) {
				t.Fatalf("message %q does not name %s", ex.resp.Error.Message, tc.field)
			}
		}
		// A query the router refuses (too long) is -32602 naming the query.
		long := strings.Repeat("csv ", 200)
		ex := env.callErr(t, header(v), sendMethod(v), obj{"message": textMessage(v, "q", long)}, CodeInvalidParams)
		if f := violations(t, v, ex); len(f) == 0 || !strings.HasPrefix(f[0].Field, "query") {
			t.Fatalf("long query: %+v", f)
		}
		// File parts are a content type this agent does not read.
		for _, p := range []obj{{"kind": "file", "file": obj{"uri": "https://example.com/a.csv"}}, {"url": "https://example.com/a.csv"}, {"raw": "YWJj", "mediaType": "text/csv"}, {"file": obj{"bytes": "YWJj"}}} {
			ex := env.callErr(t, header(v), sendMethod(v), with("parts", []any{p}), CodeContentTypeNotSupported)
			if v == v10 && reason(t, ex) != "CONTENT_TYPE_NOT_SUPPORTED" {
				t.Fatalf("reason %q", reason(t, ex))
			}
		}
	}
}

func TestBothInputShapesInBothVersions(t *testing.T) {
	env := newTestEnv(t, Options{})
	// 1.0 method with 0.3-shaped input, and the reverse: answered in the method's version.
	task := decodeTask(t, v10, env.call(t, "1.0", "SendMessage", obj{"message": textMessage(v03, "s1", "decode a JWT")}), true)
	if plan, _ := planOf(t, task); plan.Tool != "jwt-decode" {
		t.Fatalf("tool %q", plan.Tool)
	}
	task = decodeTask(t, v03, env.call(t, "-", "message/send", obj{"message": textMessage(v10, "s2", "decode a JWT")}), true)
	if plan, _ := planOf(t, task); plan.Tool != "jwt-decode" {
		t.Fatalf("tool %q", plan.Tool)
	}
	// Lower-case and mixed roles, the agent role, extra members, mediaType on a text part.
	m := obj{"messageId": "s3", "role": "User", "parts": []any{obj{"text": "decode a JWT", "mediaType": "text/plain"}},
		"extensions": []string{"https://example.com/ext"}, "referenceTaskIds": []string{"t0"}, "metadata": obj{"k": "v"}, "futureField": 1}
	raw := env.call(t, "1.0", "SendMessage", obj{"message": m, "tenant": "", "metadata": obj{"a": 1}})
	if !strings.Contains(string(raw), `"extensions":["https://example.com/ext"]`) || !strings.Contains(string(raw), `"metadata":{"k":"v"}`) {
		t.Fatalf("message members not kept in history: %s", raw)
	}
}

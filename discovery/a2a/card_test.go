package a2a

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/seed1284c1d2/svc/discovery/documents"
)

// The agent card (built by package discovery) must describe what this
// handler does.
func TestAgentCardMatchesHandler(t *testing.T) {
	env := newTestEnv(t, Options{})
	var card documents.AgentCard
	if err := json.Unmarshal(env.s.AgentCard(), &card); err != nil {
		t.Fatal(err)
	}
	if card.Capabilities.Streaming || card.Capabilities.PushNotifications || card.Capabilities.ExtendedAgentCard {
		t.Fatalf("card capabilities %+v: the handler streams nothing, pushes nothing, has no extended card", card.Capabilities)
	}
	if card.URL != env.srv.URL+"/a2a" || card.PreferredTransport != "JSONRPC" || card.ProtocolVersion != "0.3" {
		t.Fatalf("0.3 fields: url %q transport %q version %q", card.URL, card.PreferredTransport, card.ProtocolVersion)
	}
	versions := map[string]version{"1.0": v10, "0.3": v03}
	if len(card.SupportedInterfaces) != 2 || card.SupportedInterfaces[0].ProtocolVersion != "1.0" {
		t.Fatalf("interfaces %+v, want 1.0 then 0.3", card.SupportedInterfaces)
	}
	for _, in := range card.SupportedInterfaces {
		v, ok := versions[in.ProtocolVersion]
		if !ok || in.ProtocolBinding != "JSONRPC" || in.URL != card.URL {
			t.Fatalf("interface %+v", in)
		}
		// The interface's URL answers in its version, with its version header.
		req, _ := http.NewRequest(http.MethodPost, in.URL, strings.NewReader(request(t, `1`, sendMethod(v), obj{"message": textMessage(v, "m", "decode a JWT")})))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("A2A-Version", in.ProtocolVersion)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var r rpcResponse
		err = json.NewDecoder(res.Body).Decode(&r)
		res.Body.Close()
		if err != nil || r.Error != nil {
			t.Fatalf("%s at %s: %v %+v", in.ProtocolVersion, in.URL, err, r.Error)
		}
		decodeTask(t, v, r.Result, true)
	}
	for _, m := range card.DefaultInputModes {
		if m != mediaText && m != mediaJSON {
			t.Fatalf("input mode %q is not read", m)
		}
	}
	for _, m := range card.DefaultOutputModes {
		if m != mediaText && m != mediaJSON {
			t.Fatalf("output mode %q is not produced", m)
		}
	}
}

// Every example the card's free skills give works, sent as a text part in
// either version.
func TestAgentCardExamplesWork(t *testing.T) {
	env := newTestEnv(t, Options{})
	var card documents.AgentCard
	if err := json.Unmarshal(env.s.AgentCard(), &card); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, skill := range card.Skills {
		if slices.Contains(skill.Tags, "paid") {
			continue // a data part buying the tool: TestPaymentCard sends it to a selling agent
		}
		for _, ex := range skill.Examples {
			for _, v := range bothVersions {
				task := decodeTask(t, v, env.call(t, header(v), sendMethod(v), obj{"message": textMessage(v, "ex", ex)}), true)
				a := task.Artifacts[0]
				switch {
				case skill.ID == "catalog":
					if a.Name != "catalog" {
						t.Fatalf("%s example %q answered %q", skill.ID, ex, a.Name)
					}
				default:
					plan, _ := planOf(t, task)
					if !plan.Matched {
						t.Fatalf("%s example %q matched nothing", skill.ID, ex)
					}
					if strings.HasPrefix(ex, "{") && (plan.InputSource != "caller" || !plan.InputValid) {
						t.Fatalf("%s example %q: input %s valid %v %+v", skill.ID, ex, plan.InputSource, plan.InputValid, plan.InputErrors)
					}
				}
				n++
			}
		}
	}
	if n < 10 {
		t.Fatalf("only %d examples", n)
	}
}

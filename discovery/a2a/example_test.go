package a2a_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/seed1284c1d2/svc/discovery"
	"github.com/seed1284c1d2/svc/discovery/a2a"
	"github.com/seed1284c1d2/svc/tools"
)

// A 1.0 client sends a need; the answer is a completed task whose
// "call-plan" artifact holds the route plan and a one-line summary.
func ExampleNewHandler() {
	const base = "https://svc.example.com"
	cat, err := tools.New(tools.Options{BaseURL: base})
	if err != nil {
		panic(err)
	}
	s, err := discovery.New(discovery.Config{Catalog: cat, BaseURL: base, PayTo: "0x209693Bc6afc0C5328bA36FaF03C514EF312287C", DevMode: true})
	if err != nil {
		panic(err)
	}
	h, err := a2a.NewHandler(s, a2a.Options{})
	if err != nil {
		panic(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/a2a", h)
	mux.Handle("GET /.well-known/agent-card.json", s.AgentCardHandler())

	body := `{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":` +
		`{"messageId":"m-1","role":"ROLE_USER","parts":[{"text":"Find a tool to profile CSV data"}]}}}`
	req := httptest.NewRequest(http.MethodPost, "/a2a", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("A2A-Version", "1.0")
	rec := httptest.NewRecorder()
	mux.ServeHTTP(rec, req)

	var resp struct {
		Result struct {
			Task struct {
				Status    struct{ State string }
				Artifacts []struct {
					Name  string
					Parts []struct {
						Data map[string]any
						Text string
					}
				}
			}
		}
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &resp); err != nil {
		panic(err)
	}
	task := resp.Result.Task
	fmt.Println(task.Status.State)
	fmt.Println(task.Artifacts[0].Name, task.Artifacts[0].Parts[0].Data["tool"])
	fmt.Println(task.Artifacts[0].Parts[1].Text)
	// Output:
	// TASK_STATE_COMPLETED
	// call-plan csv-profile
	// Best tool: CSV profile (csv-profile). Price: 0.0025 USDC per call on eip155:8453. Call POST https://svc.example.com/api/csv-profile; it answers HTTP 402 with PAYMENT-REQUIRED: sign the x402 v2 payment and retry the same request with the PAYMENT-SIGNATURE header.
}

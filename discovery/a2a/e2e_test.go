package a2a

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/seed1284c1d2/svc/internal/nodetest"
)

// The official A2A JavaScript clients against the handler: the scripts and
// the locked packages are in e2e/a2a (see its README.md).

// e2eInstallTimeout bounds `npm ci`; e2eScriptTimeout one client run.
const (
	e2eInstallTimeout = 5 * time.Minute
	e2eScriptTimeout  = 60 * time.Second
)

// e2ePackages are the locked client packages and the versions that must be
// installed (the npm alias a2a-sdk-03 is @a2a-js/sdk 0.3.14).
var e2ePackages = [][2]string{{"@a2a-js/sdk", "1.3.0"}, {"a2a-sdk-03", "0.3.14"},
	{"@x402/core", "2.27.0"}, {"@x402/evm", "2.27.0"}, {"viem", "2.57.20"}}

// e2eSetup finds node (20 or later) and e2e/a2a, installing the locked
// clients with `npm ci` when node_modules lacks them or holds other versions.
func e2eSetup(t *testing.T) (node, dir string) {
	t.Helper()
	node = nodetest.Node(t, 20)
	dir, err := filepath.Abs(filepath.Join("..", "..", "e2e", "a2a"))
	if err != nil {
		t.Fatal(err)
	}
	nodetest.Install(t, dir, func() bool { return e2eInstalled(dir) })
	return node, dir
}

// e2eInstalled reports whether the clients are installed at the locked versions.
func e2eInstalled(dir string) bool {
	for _, p := range e2ePackages {
		b, err := os.ReadFile(filepath.Join(dir, "node_modules", filepath.FromSlash(p[0]), "package.json"))
		if err != nil {
			return false
		}
		var pkg struct{ Version string }
		if json.Unmarshal(b, &pkg) != nil || pkg.Version != p[1] {
			return false
		}
	}
	return true
}

// e2eTask is a task as the script reports it, normalised across the SDKs.
type e2eTask struct {
	Kind      string `json:"kind"`
	ID        string `json:"id"`
	ContextID string `json:"contextId"`
	State     string `json:"state"`
	Artifacts []struct {
		ArtifactID string `json:"artifactId"`
		Name       string `json:"name"`
		Parts      []struct {
			Kind  string          `json:"kind"`
			Value json.RawMessage `json:"value"`
		} `json:"parts"`
	} `json:"artifacts"`
	History []struct {
		MessageID string `json:"messageId"`
		TaskID    string `json:"taskId"`
		Role      string `json:"role"`
	} `json:"history"`
}

// e2eReport is what a2a-client.mjs prints.
type e2eReport struct {
	Mode     string  `json:"mode"`
	Send     e2eTask `json:"send"`
	Get      e2eTask `json:"get"`
	Catalog  e2eTask `json:"catalog"`
	NotFound struct {
		Name    string `json:"name"`
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"notFound"`
	Error string `json:"error"`
}

// e2eRun runs the script in one mode and decodes its report.
func e2eRun(t *testing.T, node, dir string, args ...string) e2eReport {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), e2eScriptTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, append([]string{"a2a-client.mjs"}, args...)...)
	cmd.Dir = dir
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	var rep e2eReport
	if jerr := json.Unmarshal(out, &rep); jerr != nil {
		t.Fatalf("node a2a-client.mjs %v: %v (exit %v)\nstdout: %s\nstderr: %s", args, jerr, err, out, stderr.String())
	}
	if rep.Error != "" || err != nil {
		t.Fatalf("node a2a-client.mjs %v failed: %s (exit %v)\nstderr: %s", args, rep.Error, err, stderr.String())
	}
	return rep
}

// e2eCall is a request the server saw: the JSON-RPC method and the header.
type e2eCall struct{ method, version string }

// e2eRecorder records the calls reaching /a2a.
type e2eRecorder struct {
	mu    sync.Mutex
	calls []e2eCall
}

func (r *e2eRecorder) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		var m struct{ Method string }
		_ = json.Unmarshal(body, &m)
		r.mu.Lock()
		r.calls = append(r.calls, e2eCall{m.Method, req.Header.Get("A2A-Version")})
		r.mu.Unlock()
		req.Body = io.NopCloser(bytes.NewReader(body))
		h.ServeHTTP(w, req)
	})
}

func (r *e2eRecorder) take() []e2eCall {
	r.mu.Lock()
	defer r.mu.Unlock()
	c := r.calls
	r.calls = nil
	return c
}

func TestE2EOfficialClients(t *testing.T) {
	node, dir := e2eSetup(t)
	mux := http.NewServeMux()
	srv := httptest.NewUnstartedServer(mux)
	base := "http://" + srv.Listener.Addr().String()
	cat, s := newRealSurfaces(t, base)
	h, err := NewHandler(s, Options{})
	if err != nil {
		t.Fatal(err)
	}
	rec := &e2eRecorder{}
	mux.Handle("POST /a2a", rec.wrap(h))
	card := s.AgentCardHandler()
	mux.Handle("GET /.well-known/agent-card.json", card)
	// A pure 0.3 card (the hybrid card without supportedInterfaces), to
	// drive the 1.3.0 client's legacy transport.
	mux.HandleFunc("GET /legacy-card.json", func(w http.ResponseWriter, r *http.Request) {
		cr := httptest.NewRecorder()
		card.ServeHTTP(cr, httptest.NewRequest(http.MethodGet, "/.well-known/agent-card.json", nil))
		var c map[string]json.RawMessage
		if err := json.Unmarshal(cr.Body.Bytes(), &c); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		delete(c, "supportedInterfaces")
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(c)
	})
	srv.Start()
	defer srv.Close()

	csv, ok := cat.ByKey("csv-profile")
	if !ok {
		t.Fatal("csv-profile is not in the catalog")
	}
	for _, tc := range []struct {
		name      string
		args      []string
		methods   []string
		header    string
		completed string
	}{
		{"1.3.0 default, hybrid card", []string{"v1", base}, []string{"SendMessage", "GetTask"}, "1.0", "TASK_STATE_COMPLETED"},
		{"1.3.0 legacyCompat, hybrid card", []string{"v1-legacy", base}, []string{"SendMessage", "GetTask"}, "1.0", "TASK_STATE_COMPLETED"},
		{"1.3.0 legacyCompat, 0.3 card", []string{"v1-legacy", base, "/legacy-card.json"}, []string{"message/send", "tasks/get"}, "0.3", "TASK_STATE_COMPLETED"},
		{"0.3.14, hybrid card", []string{"v03", base}, []string{"message/send", "tasks/get"}, "", "completed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep := e2eRun(t, node, dir, tc.args...)
			send := rep.Send
			if send.Kind != "task" || send.State != tc.completed || send.ID == "" || send.ContextID == "" {
				t.Fatalf("send: %+v", send)
			}
			if len(send.Artifacts) != 1 || send.Artifacts[0].Name != "call-plan" || len(send.Artifacts[0].Parts) != 2 {
				t.Fatalf("send artifacts: %+v", send.Artifacts)
			}
			parts := send.Artifacts[0].Parts
			var plan struct {
				Matched bool   `json:"matched"`
				Tool    string `json:"tool"`
				URL     string `json:"url"`
				Method  string `json:"method"`
			}
			if parts[0].Kind != "data" || json.Unmarshal(parts[0].Value, &plan) != nil {
				t.Fatalf("first part: %s %s", parts[0].Kind, parts[0].Value)
			}
			if !plan.Matched || plan.Tool != "csv-profile" || plan.URL != csv.URL || plan.Method != csv.Method {
				t.Fatalf("plan %+v, want csv-profile at %s %s", plan, csv.Method, csv.URL)
			}
			var summary string
			if parts[1].Kind != "text" || json.Unmarshal(parts[1].Value, &summary) != nil || !strings.Contains(summary, csv.URL) || !strings.Contains(summary, "PAYMENT-SIGNATURE") {
				t.Fatalf("second part: %s %s", parts[1].Kind, parts[1].Value)
			}
			if len(send.History) != 1 || send.History[0].TaskID != send.ID || !strings.HasPrefix(send.History[0].MessageID, "e2e-") {
				t.Fatalf("history %+v", send.History)
			}
			got := rep.Get
			if got.ID != send.ID || got.ContextID != send.ContextID || got.State != tc.completed || len(got.Artifacts) != 1 ||
				got.Artifacts[0].ArtifactID != send.Artifacts[0].ArtifactID || string(got.Artifacts[0].Parts[0].Value) != string(parts[0].Value) {
				t.Fatalf("getTask %+v differs from the sent task %+v", got, send)
			}
			if len(rep.Catalog.Artifacts) != 1 || rep.Catalog.Artifacts[0].Name != "catalog" {
				t.Fatalf("catalog: %+v", rep.Catalog)
			}
			var page struct {
				Total int               `json:"total"`
				Items []json.RawMessage `json:"items"`
			}
			if err := json.Unmarshal(rep.Catalog.Artifacts[0].Parts[0].Value, &page); err != nil || len(page.Items) != 3 || page.Total != len(cat.All()) {
				t.Fatalf("catalog page: %v %s", err, rep.Catalog.Artifacts[0].Parts[0].Value)
			}
			if !strings.Contains(rep.NotFound.Name, "TaskNotFound") || rep.NotFound.Code != CodeTaskNotFound {
				t.Fatalf("unknown task: %+v", rep.NotFound)
			}
			calls := rec.take()
			want := []e2eCall{}
			for _, m := range []string{tc.methods[0], tc.methods[1], tc.methods[0], tc.methods[1]} {
				want = append(want, e2eCall{m, tc.header})
			}
			if !slices.Equal(calls, want) {
				t.Fatalf("the server saw %v, want %v", calls, want)
			}
		})
	}
}

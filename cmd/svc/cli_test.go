package main

import (
	"context"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// runBin runs the svc binary with args and extra environment variables
// (the SVC_* ones of the test's own environment are dropped) and returns
// its exit code and combined output. A server it starts is stopped after
// timeout.
func runBin(t *testing.T, bin string, env []string, timeout time.Duration, args ...string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = t.TempDir()
	cmd.Env = append(clusterEnv(), env...)
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode(), string(out)
	} else if err != nil {
		t.Fatalf("svc %v: %v", args, err)
	}
	return 0, string(out)
}

// TestServeRefusesSilentDevMode runs the binary: any production setting
// without a facilitator URL is refused with what is missing, unless --dev
// says dev mode is meant.
func TestServeRefusesSilentDevMode(t *testing.T) {
	bin := clusterBinary(t)
	for name, tc := range map[string]struct {
		args []string
		env  []string
		want string
	}{
		"payTo":                 {[]string{"--pay-to", clusterPayTo}, nil, "--pay-to (SVC_PAY_TO)"},
		"payTo from the env":    {nil, []string{"SVC_PAY_TO=" + clusterPayTo}, "--pay-to (SVC_PAY_TO)"},
		"public base URL":       {[]string{"--base-url", "https://tools.example.com"}, nil, "a non-loopback --base-url"},
		"trusted proxy":         {[]string{"--trusted-proxy", "127.0.0.1/32"}, nil, "--trusted-proxy"},
		"PostgreSQL":            {[]string{"--db", "postgres://postgres@127.0.0.1:5432/test"}, nil, "a PostgreSQL --db"},
		"MT5 bridge":            {[]string{"--bridge-url", "http://127.0.0.1:8765"}, []string{"SVC_MT5_BRIDGE_TOKEN=tok-12345"}, "an MT5 bridge"},
		"facilitator header":    {nil, []string{"SVC_FACILITATOR_AUTH_HEADER=X-Key: abcdef"}, "--facilitator-auth-header"},
		"the issue's example":   {[]string{"--base-url", "https://tools.example.com", "--pay-to", clusterPayTo, "--trusted-proxy", "127.0.0.1/32"}, nil, "--pay-to (SVC_PAY_TO), a non-loopback --base-url (SVC_BASE_URL), --trusted-proxy"},
		"dev and a facilitator": {[]string{"--dev", "--facilitator-url", "https://f.example", "--pay-to", clusterPayTo}, nil, "--dev and --facilitator-url contradict"},
	} {
		t.Run(name, func(t *testing.T) {
			code, out := runBin(t, bin, tc.env, 30*time.Second, append([]string{"serve", "--addr", "127.0.0.1:0"}, tc.args...)...)
			if code != 2 || !strings.Contains(out, tc.want) {
				t.Fatalf("exit %d, output lacks %q:\n%s", code, tc.want, out)
			}
			if !strings.Contains(tc.want, "contradict") && (!strings.Contains(out, "--facilitator-url (SVC_FACILITATOR_URL)") || !strings.Contains(out, "--dev")) {
				t.Fatalf("the refusal does not say what to do:\n%s", out)
			}
			if strings.Contains(out, "listening on") {
				t.Fatalf("started anyway:\n%s", out)
			}
		})
	}
	// --dev (or SVC_DEV) keeps dev mode on purpose; a loopback base URL
	// alone is no production setting.
	for name, tc := range map[string]struct {
		args []string
		env  []string
	}{
		"--dev with a payTo":   {[]string{"--dev", "--pay-to", clusterPayTo}, nil},
		"SVC_DEV with a proxy": {[]string{"--trusted-proxy", "127.0.0.1/32"}, []string{"SVC_DEV=true"}},
		"loopback base URL":    {[]string{"--base-url", "http://localhost:8080"}, nil},
	} {
		t.Run(name, func(t *testing.T) {
			n := clusterStartArgs(t, name, tc.env, append([]string{"serve", "--addr", "127.0.0.1:0", "--db", filepath.Join(t.TempDir(), "svc.db")}, tc.args...)...)
			if !strings.Contains(n.out.String(), "DEV MODE") {
				t.Fatalf("not in dev mode:\n%s", n.out.String())
			}
		})
	}
}

// clusterStartArgs starts the binary with args (a server) and waits for the
// banner; it is killed at cleanup.
func clusterStartArgs(t *testing.T, name string, env []string, args ...string) *clusterNode {
	t.Helper()
	bin := clusterBinary(t)
	cmd := exec.Command(bin, args...)
	cmd.Dir = t.TempDir()
	cmd.Env = append(clusterEnv(), env...)
	n := &clusterNode{name: name, cmd: cmd, out: &clusterLog{}, exited: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = n.out, n.out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { n.waitErr = cmd.Wait(); close(n.exited) }()
	t.Cleanup(func() {
		select {
		case <-n.exited:
		default:
			_ = cmd.Process.Kill()
			<-n.exited
		}
	})
	n.base = waitListening(t, n.out, n.exited)
	return n
}

// TestServeHelpByTopic checks that `svc serve -h` lists every flag once,
// under topics, in a fixed order.
func TestServeHelpByTopic(t *testing.T) {
	bin := clusterBinary(t)
	code, out := runBin(t, bin, nil, 30*time.Second, "serve", "-h")
	if code != 0 {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	last := -1
	for _, g := range serveFlagGroups {
		i := strings.Index(out, "\n"+g.Title+":\n")
		if i < 0 || i < last {
			t.Fatalf("topic %q missing or out of order:\n%s", g.Title, out)
		}
		last = i
	}
	if strings.Contains(out, "\nOther:\n") {
		t.Errorf("flags outside every topic:\n%s", out)
	}
	flagRE := regexp.MustCompile(`(?m)^  --([a-z0-9-]+)`)
	count := map[string]int{}
	for _, m := range flagRE.FindAllStringSubmatch(out, -1) {
		count[m[1]]++
	}
	if len(count) < 30 {
		t.Fatalf("only %d flags listed:\n%s", len(count), out)
	}
	for name, n := range count {
		if n != 1 {
			t.Errorf("--%s listed %d times", name, n)
		}
	}
}

// TestCLIErrorsSayWhatToDo runs `svc call` and `svc tools` against no
// server and against a dev server.
func TestCLIErrorsSayWhatToDo(t *testing.T) {
	bin := clusterBinary(t)
	key := []string{"PAYER=" + randomKey(t)}
	code, out := runBin(t, bin, key, 30*time.Second, "call", "risk-levels", "--key-env", "PAYER", "--url", "http://127.0.0.1:1")
	if code != 1 || !strings.Contains(out, "no svc server answers at http://127.0.0.1:1") || !strings.Contains(out, "--url (SVC_URL)") {
		t.Fatalf("server down: exit %d\n%s", code, out)
	}
	code, out = runBin(t, bin, append(key, "SVC_URL=http://127.0.0.1:1"), 30*time.Second, "call", "risk-levels", "--key-env", "PAYER")
	if code != 1 || !strings.Contains(out, "no svc server answers at http://127.0.0.1:1") {
		t.Fatalf("server down (SVC_URL): exit %d\n%s", code, out)
	}
	code, out = runBin(t, bin, nil, 30*time.Second, "call", "--frobnicate")
	if code != 2 || strings.Count(out, "frobnicate") != 1 || !strings.Contains(out, "svc call -h") {
		t.Fatalf("unknown flag: exit %d\n%s", code, out)
	}

	n := clusterStartArgs(t, "dev", nil, "serve", "--addr", "127.0.0.1:0", "--db", filepath.Join(t.TempDir(), "svc.db"))
	input := `{"entry":3500,"direction":"long","slPct":0.05,"tpPct":0.04}`
	for name, tc := range map[string]struct {
		args []string
		code int
		want []string
	}{
		"did you mean":    {[]string{"call", "risk-level", "--json", input}, 2, []string{`no tool "risk-level"`, "did you mean risk-levels?"}},
		"prefix":          {[]string{"call", "xau", "--json", "{}"}, 2, []string{"did you mean xau-", "xau-quote"}},
		"json position":   {[]string{"call", "risk-levels", "--json", `{"entry":3500,"direction":long}`}, 2, []string{"--json is not valid JSON at byte 27", "invalid character 'l'"}},
		"json not object": {[]string{"call", "risk-levels", "--json", `[1]`}, 2, []string{"--json must be a JSON object"}},
		"spend cap":       {[]string{"call", "risk-levels", "--json", input, "--max", "0.001"}, 2, []string{"risk-levels costs $0.005 a call, over the spend cap of $0.001", "--max 0.005"}},
		"paid":            {[]string{"call", "risk-levels", "--json", input}, 0, []string{`"status": 200`}},
	} {
		t.Run(name, func(t *testing.T) {
			args := append(tc.args, "--key-env", "PAYER", "--url", n.base)
			code, out := runBin(t, bin, key, 60*time.Second, args...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d:\n%s", code, tc.code, out)
			}
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Fatalf("output lacks %q:\n%s", w, out)
				}
			}
		})
	}
	// A store error has one "store:" prefix.
	code, out = runBin(t, bin, nil, 60*time.Second, "payments", "--db", "postgres://postgres@127.0.0.1:1/x?sslmode=disable")
	if code != 1 || !strings.HasPrefix(out, "svc: store: postgres") || strings.Contains(out, "store: store:") {
		t.Fatalf("store error: exit %d\n%s", code, out)
	}
}

func TestClosestKeys(t *testing.T) {
	keys := []string{"risk-levels", "tick-pnl", "xau-quote", "xau-bars", "xau-market-state", "regex-test", "csv-profile"}
	for in, want := range map[string]string{
		"risk-level":  "risk-levels",
		"riks-levels": "risk-levels",
		"tickpnl":     "tick-pnl",
		"xau":         "xau-bars xau-quote xau-market-state",
		"regex":       "regex-test",
		"weather":     "",
	} {
		if got := strings.Join(closestKeys(in, keys), " "); got != want {
			t.Errorf("closestKeys(%q) = %q, want %q", in, got, want)
		}
	}
}

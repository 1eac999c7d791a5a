package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Credentials given to svc in the secrets test, one per place a credential
// can be configured. None may appear on a free surface, in a log line, in
// the banner or in an error.
const (
	secFacUser   = "facuserSECRETa1"     // facilitator URL user name
	secFacPass   = "facpassSECRETb2"     // facilitator URL password
	secFacToken  = "factokenSECRETc3"    // facilitator URL query parameter
	secHeader    = "hdrtokenSECRETd4"    // facilitator auth header
	secPGPass    = "pgpassSECRETe5"      // database URL password
	secPGQuery   = "pgqpassSECRETf6"     // database URL password parameter
	secBridge    = "bridgetokenSECRETg7" // MT5 bridge token (environment)
	secBridgeDir = "bridgepathSECRETh8"  // MT5 bridge URL path (a key some deployments put there)
	secPayerHex  = "5ec4e7000000000000000000000000000000000000000000000000000000beef"
	secPayerEnvN = "SVC_TEST_PAYER_KEY"
)

// allSecrets lists every credential of the secrets test.
func allSecrets() []string {
	return []string{secFacUser, secFacPass, secFacToken, secHeader, secPGPass, secPGQuery, secBridge, secBridgeDir, secPayerHex}
}

// assertNoSecret fails when text holds a credential (also base64- or
// URL-encoded).
func assertNoSecret(t *testing.T, where, text string) {
	t.Helper()
	for _, s := range allSecrets() {
		for _, form := range []string{s, url.QueryEscape(s), base64.StdEncoding.EncodeToString([]byte(s))} {
			if strings.Contains(text, form) {
				i := strings.Index(text, form)
				lo, hi := max(0, i-120), min(len(text), i+len(form)+40)
				t.Errorf("%s holds the credential %q: …%s…", where, s, text[lo:hi])
			}
		}
	}
}

// secretDSN returns the database of the secrets test with a password in
// its user info and as a query parameter: a fresh PostgreSQL schema when
// SVC_TEST_DATABASE_URL is set (the trust authentication ignores the
// passwords), else a SQLite file.
func secretDSN(t *testing.T) (dsn string, postgres bool) {
	t.Helper()
	if os.Getenv(clusterPGEnv) == "" {
		t.Logf("%s is not set: the database password is checked in the error runs only, the server uses SQLite", clusterPGEnv)
		return filepath.Join(t.TempDir(), "svc.db"), false
	}
	u, err := url.Parse(clusterPGDSN(t))
	if err != nil {
		t.Fatal(err)
	}
	u.User = url.UserPassword(u.User.Username(), secPGPass)
	q := u.Query()
	q.Set("password", secPGQuery)
	u.RawQuery = q.Encode()
	return u.String(), true
}

// TestSecretsNeverLeave starts the real binary with a credential in every
// option that takes one (the facilitator URL's user info and query, the
// facilitator auth header, the database URL's password and password
// parameter, the bridge token in the environment and a key in the bridge URL's path), crawls every free route
// the OpenAPI document lists plus MCP (initialize, tools/list) and A2A,
// pays for a call with `svc call` (the payer's key in the environment),
// then checks that no credential appears in any answer (bodies and
// headers, the PAYMENT-REQUIRED header decoded), in the logs (debug
// level), in the banner or in the output of `svc call`. Then it runs the
// error paths that used to echo a credential.
func TestSecretsNeverLeave(t *testing.T) {
	bin := clusterBinary(t)
	stub := clusterStartStub(t, clusterStubOptions{})
	fu, _ := url.Parse(stub.base)
	fu.User = url.UserPassword(secFacUser, secFacPass)
	fu.RawQuery = url.Values{"token": {secFacToken}}.Encode()
	facURL := fu.String()
	dsn, _ := secretDSN(t)

	cmd := exec.Command(bin, "serve", "--addr", "127.0.0.1:0", "--facilitator-url", facURL, "--pay-to", clusterPayTo,
		"--log-level", "debug", "--shutdown-timeout", "5s", "--unpaid-rate", "-1", "--rate", "-1")
	cmd.Dir = t.TempDir()
	cmd.Env = append(clusterEnv(),
		"SVC_FACILITATOR_AUTH_HEADER=Authorization: Bearer "+secHeader,
		"SVC_DATABASE_URL="+dsn,
		"SVC_MT5_BRIDGE_URL=http://127.0.0.1:1/"+secBridgeDir,
		"SVC_MT5_BRIDGE_TOKEN="+secBridge,
	)
	out := &clusterLog{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		select {
		case <-exited:
		default:
			_ = cmd.Process.Kill()
			<-exited
		}
	})
	base := waitListening(t, out, exited)
	c := &http.Client{Timeout: 30 * time.Second}

	var seen strings.Builder // every answer, headers and bodies
	record := func(what string, resp *http.Response, body []byte) {
		seen.WriteString(what + "\n")
		for k, vs := range resp.Header {
			for _, v := range vs {
				seen.WriteString(k + ": " + v + "\n")
				if k == "Payment-Required" || k == "Payment-Response" {
					if d, err := base64.StdEncoding.DecodeString(v); err == nil {
						seen.Write(d)
						seen.WriteByte('\n')
					}
				}
			}
		}
		seen.Write(body)
		seen.WriteByte('\n')
	}
	do := func(method, path, ctype, body string, hdr map[string]string) (*http.Response, []byte) {
		t.Helper()
		req, err := http.NewRequest(method, base+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		if ctype != "" {
			req.Header.Set("Content-Type", ctype)
		}
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		resp, err := c.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		record(method+" "+path, resp, b)
		return resp, b
	}

	// Every operation of the OpenAPI document: free routes, and the paid
	// ones unpaid (their 400 or 402).
	_, oas := do("GET", "/openapi.json", "", "", nil)
	var doc struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.Unmarshal(oas, &doc); err != nil {
		t.Fatal(err)
	}
	param := regexp.MustCompile(`\{[^}]+\}`)
	crawled := 0
	for path, ops := range doc.Paths {
		p := param.ReplaceAllString(path, "abc")
		for method := range ops {
			switch strings.ToUpper(method) {
			case "GET":
				do("GET", p+"?q=stop+loss+for+a+long", "", "", nil)
				do("GET", p, "", "", map[string]string{"Accept": "text/html"})
			case "POST":
				if p == "/mcp" || p == "/a2a" {
					continue
				}
				do("POST", p, "application/json", `{"query":"risk levels"}`, nil)
			}
			crawled++
		}
	}
	if crawled < 30 {
		t.Fatalf("only %d operations crawled", crawled)
	}
	for _, p := range []string{"/", "/llms.txt", "/robots.txt", "/server.json", "/health", "/metrics", "/.well-known/agent-card.json", "/no-such-page"} {
		do("GET", p, "", "", nil)
	}

	// MCP: initialize, then tools/list (and resources/list) in the session.
	mcpHdr := map[string]string{"Accept": "application/json, text/event-stream"}
	resp, _ := do("POST", "/mcp", "application/json",
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"secrets-test","version":"1"}}}`, mcpHdr)
	if resp.StatusCode != 200 {
		t.Fatalf("MCP initialize: %d", resp.StatusCode)
	}
	if sid := resp.Header.Get("Mcp-Session-Id"); sid != "" {
		mcpHdr["Mcp-Session-Id"] = sid
	}
	mcpHdr["Mcp-Protocol-Version"] = "2025-06-18"
	do("POST", "/mcp", "application/json", `{"jsonrpc":"2.0","method":"notifications/initialized"}`, mcpHdr)
	_, tl := do("POST", "/mcp", "application/json", `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`, mcpHdr)
	if !bytes.Contains(tl, []byte("risk_levels")) {
		t.Fatalf("MCP tools/list: %s", tl)
	}
	do("POST", "/mcp", "application/json", `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"risk_levels","arguments":{"entry":3500,"direction":"long","slPct":0.05,"tpPct":0.04}}}`, mcpHdr)
	// A gold tool with the bridge down: the terminal error (which names the
	// bridge URL) is logged.
	if _, q := do("POST", "/mcp", "application/json", `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"xau_quote","arguments":{}}}`, mcpHdr); !bytes.Contains(q, []byte("terminal is unavailable")) {
		t.Fatalf("MCP xau_quote with the bridge down: %s", q)
	}
	// A2A: a message asking for a tool, and a paid tool unpaid.
	do("POST", "/a2a", "application/json", `{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"role":"user","messageId":"m1","parts":[{"kind":"text","text":"stop loss for a long at 3500"}]}}}`, nil)
	do("POST", "/a2a", "application/json", `{"jsonrpc":"2.0","id":2,"method":"message/send","params":{"message":{"role":"user","messageId":"m2","parts":[{"kind":"data","data":{"tool":"risk-levels","input":{"entry":3500,"direction":"long","slPct":0.05,"tpPct":0.04}}}]}}}`, nil)

	// A paid call through the facilitator (which is sent the URL's
	// credentials and the header), with the payer's key in the environment.
	call := exec.Command(bin, "call", "risk-levels", "--url", base, "--key-env", secPayerEnvN,
		"--json", `{"entry":3500,"direction":"long","slPct":0.05,"tpPct":0.04}`)
	call.Env = append(clusterEnv(), secPayerEnvN+"=0x"+secPayerHex)
	callOut, err := call.CombinedOutput()
	if err != nil || !bytes.Contains(callOut, []byte(`"success": true`)) {
		t.Fatalf("svc call: %v\n%s", err, callOut)
	}
	assertNoSecret(t, "the output of svc call", string(callOut))

	// The documents name the facilitator by its scheme and host alone.
	_, manifest := do("GET", "/.well-known/x402", "", "", nil)
	if !bytes.Contains(manifest, []byte(`"facilitator": "`+stub.base+`"`)) {
		t.Errorf("the x402 manifest does not name the facilitator as %s", stub.base)
	}

	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(30 * time.Second):
		t.Fatal("svc serve did not stop")
	}
	logs := out.String()
	if !strings.Contains(logs, "level=DEBUG") || !strings.Contains(logs, "published as "+stub.base) {
		t.Errorf("the logs lack the debug lines or the banner's facilitator line:\n%s", clusterTail(logs, 3000))
	}
	assertNoSecret(t, "the answers of the free routes, MCP and A2A", seen.String())
	assertNoSecret(t, "the banner and the logs", logs)
}

// TestSecretsNeverInErrors runs the error paths of svc with credentials
// in the options: none may be repeated in the error.
func TestSecretsNeverInErrors(t *testing.T) {
	bin := clusterBinary(t)
	fac := "http://" + secFacUser + ":" + secFacPass + "@127.0.0.1:1/x?token=" + secFacToken
	pg := "postgres://postgres:" + secPGPass + "@127.0.0.1:1/x?sslmode=disable&password=" + secPGQuery
	cases := []struct {
		name string
		args []string
		env  []string
		code int
		want string
	}{
		{"facilitator URL not http", []string{"serve", "--facilitator-url", "ftp://" + secFacUser + ":" + secFacPass + "@h/?token=" + secFacToken, "--pay-to", clusterPayTo},
			nil, 2, "--facilitator-url is not an absolute http(s) URL"},
		{"facilitator URL with a fragment", []string{"serve", "--facilitator-url", fac + "#" + secFacToken, "--pay-to", clusterPayTo},
			nil, 2, "--facilitator-url is not an absolute http(s) URL"},
		{"store unreachable", []string{"serve", "--addr", "127.0.0.1:0", "--facilitator-url", fac, "--pay-to", clusterPayTo, "--db", pg},
			[]string{"SVC_FACILITATOR_AUTH_HEADER=Authorization: Bearer " + secHeader}, 1, "store: postgres"},
		{"base URL with credentials", []string{"serve", "--base-url", "https://" + secFacUser + ":" + secFacPass + "@tools.example.com", "--facilitator-url", fac, "--pay-to", clusterPayTo},
			nil, 2, "--base-url must not carry credentials"},
		{"base URL with a query", []string{"serve", "--base-url", "https://tools.example.com/?token=" + secFacToken, "--facilitator-url", fac, "--pay-to", clusterPayTo},
			nil, 2, "--base-url must not carry a query"},
		{"public facilitator URL with a query", []string{"serve", "--facilitator-url", fac, "--pay-to", clusterPayTo, "--public-facilitator-url", "https://f.example/?token=" + secFacToken},
			nil, 2, "--public-facilitator-url must not carry a query"},
		{"auth header without facilitator", []string{"serve", "--pay-to", clusterPayTo},
			[]string{"SVC_FACILITATOR_AUTH_HEADER=Authorization: Bearer " + secHeader}, 2, "no way to settle payments"},
		{"bridge token instead of its variable", []string{"serve", "--facilitator-url", fac, "--pay-to", clusterPayTo, "--bridge-url", "http://127.0.0.1:1", "--bridge-token-env", "Bearer " + secBridge},
			nil, 2, "--bridge-token-env takes the name"},
		{"name-shaped bridge token instead of its variable", []string{"serve", "--facilitator-url", fac, "--pay-to", clusterPayTo, "--bridge-url", "http://127.0.0.1:1", "--bridge-token-env", secBridge},
			nil, 2, "--terminal bridge needs the bridge token in the variable --bridge-token-env names"},
		{"key instead of its variable", []string{"call", "risk-levels", "--key-env", "0x" + secPayerHex}, nil, 2, "looks like a key"},
		{"key without 0x instead of its variable", []string{"call", "risk-levels", "--key-env", secPayerHex}, nil, 2, "looks like a key"},
		{"payments on an unreachable store", []string{"payments", "--db", pg}, nil, 1, "store: postgres"},
		{"bad flag value next to credentials", []string{"serve", "--facilitator-url", fac, "--pay-to", clusterPayTo, "--rate", "fast"}, nil, 2, "invalid value"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, bin, tc.args...)
			cmd.Dir = t.TempDir()
			cmd.Env = append(clusterEnv(), tc.env...)
			out, err := cmd.CombinedOutput()
			code := 0
			if ee, ok := err.(*exec.ExitError); ok {
				code = ee.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			if code != tc.code || !strings.Contains(string(out), tc.want) {
				t.Fatalf("exit %d (want %d), output lacks %q:\n%s", code, tc.code, tc.want, out)
			}
			if strings.Count(string(out), "svc:") != 1 {
				t.Errorf("the error is not printed exactly once:\n%s", out)
			}
			assertNoSecret(t, "the error", string(out))
		})
	}
}

func TestKeyEnvError(t *testing.T) {
	for name, ok := range map[string]bool{
		"PAYER_KEY": true, "_K1": true, "k": true,
		"0x" + secPayerHex: false, secPayerHex: false, "PAYER KEY": false, "1ABC": false, "$PAYER": false,
	} {
		err := keyEnvError(name)
		if (err == nil) != ok {
			t.Errorf("keyEnvError(%q) = %v", name, err)
		}
		if err != nil && strings.Contains(err.Error(), name) {
			t.Errorf("keyEnvError repeats %q: %v", name, err)
		}
	}
}

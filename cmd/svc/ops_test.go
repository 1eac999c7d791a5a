package main

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
)

// TestTokenAuth: the token as a bearer token passes, as a Basic password
// only where Basic is accepted; anything else is 401 with a challenge.
func TestTokenAuth(t *testing.T) {
	const token = "0123456789abcdef-admin"
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "ok") })
	for _, c := range []struct {
		name   string
		basic  bool
		header func(r *http.Request)
		want   int
	}{
		{"bearer", false, func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+token) }, 200},
		{"bearer where basic is accepted", true, func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+token) }, 200},
		{"basic password", true, func(r *http.Request) { r.SetBasicAuth("operator", token) }, 200},
		{"basic where only bearer is", false, func(r *http.Request) { r.SetBasicAuth("operator", token) }, 401},
		{"wrong bearer", true, func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+token+"x") }, 401},
		{"wrong basic password", true, func(r *http.Request) { r.SetBasicAuth(token, "nope") }, 401},
		{"none", true, func(*http.Request) {}, 401},
	} {
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
		c.header(req)
		tokenAuth(ok, token, "svc admin", c.basic).ServeHTTP(rec, req)
		if rec.Code != c.want {
			t.Errorf("%s: %d, want %d", c.name, rec.Code, c.want)
		}
		challenge := rec.Header().Get("WWW-Authenticate")
		if c.want == 401 && (challenge == "" || strings.Contains(rec.Body.String(), token)) {
			t.Errorf("%s: challenge %q, body %s", c.name, challenge, rec.Body)
		}
		if c.want == 401 && c.basic != strings.HasPrefix(challenge, "Basic ") {
			t.Errorf("%s: challenge %q", c.name, challenge)
		}
	}
}

// TestAdminTokenFlags: the token comes from the variable --admin-token-env
// names, or $SVC_ADMIN_TOKEN; a short token, one without --admin-addr, or
// a token given in place of a name is refused without being repeated.
func TestAdminTokenFlags(t *testing.T) {
	const token = "s3cret-admin-token-0123"
	const wordToken = "s3cretADMINtoken0123"
	admin := []string{"--dev", "--admin-addr", "127.0.0.1:0"}
	c, err := parseServe(append(admin, "--admin-token-env", "OPS_TOKEN"), io.Discard, envOf(map[string]string{"OPS_TOKEN": token}))
	if err != nil || c.adminToken != token {
		t.Fatalf("--admin-token-env: %v, token %q", err, c.adminToken)
	}
	if c, err = parseServe(admin, io.Discard, envOf(map[string]string{"SVC_ADMIN_TOKEN": token})); err != nil || c.adminToken != token {
		t.Fatalf("$SVC_ADMIN_TOKEN: %v, token %q", err, c.adminToken)
	}
	if c, err = parseServe(admin, io.Discard, envOf(nil)); err != nil || c.adminToken != "" {
		t.Fatalf("no token: %v, token %q", err, c.adminToken)
	}
	for name, args := range map[string][]string{
		"short":           append(admin, "--admin-token-env", "SHORT"),
		"no admin-addr":   {"--dev", "--admin-token-env", "OPS_TOKEN"},
		"token as a name": append(admin, "--admin-token-env", token),
		// A token of letters, digits and _ has the shape of a name: it is
		// looked up, found empty, and must not be repeated either.
		"name-shaped token as a name": append(admin, "--admin-token-env", wordToken),
	} {
		_, err := parseServe(args, io.Discard, envOf(map[string]string{"OPS_TOKEN": token, "SHORT": "tooshort"}))
		if err == nil || strings.Contains(err.Error(), token) || strings.Contains(err.Error(), wordToken) || strings.Contains(err.Error(), "tooshort") {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// TestAdminListenerToken: with a token, every route of the admin listener
// answers 401 without it; the bearer token and the Basic password open
// /metrics and the dashboard; the public port is unaffected.
func TestAdminListenerToken(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the server (skipped under -short)")
	}
	const token = "s3cret-admin-token-0123"
	db := filepath.Join(t.TempDir(), "svc.db")
	ctx, cancel := context.WithCancel(context.Background())
	stderr := &lockedBuffer{}
	done := make(chan struct{})
	var code int
	go func() {
		defer close(done)
		code = run(ctx, []string{"serve", "--dev", "--addr", "127.0.0.1:0", "--admin-addr", "127.0.0.1:0", "--db", db},
			io.Discard, stderr, envOf(map[string]string{"SVC_ADMIN_TOKEN": token}))
	}()
	t.Cleanup(func() {
		cancel()
		<-done
		if code != 0 {
			t.Errorf("serve exit %d:\n%s", code, stderr.String())
		}
	})
	base := waitListening(t, stderr, done)
	m := adminRE.FindStringSubmatch(stderr.String())
	if m == nil {
		t.Fatalf("no admin listener in the log:\n%s", stderr.String())
	}
	admin := "http://" + m[1]
	get := func(url string, auth func(*http.Request)) int {
		t.Helper()
		req, err := http.NewRequest(http.MethodGet, url, nil)
		if err != nil {
			t.Fatal(err)
		}
		auth(req)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	none := func(*http.Request) {}
	bearer := func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+token) }
	basic := func(r *http.Request) { r.SetBasicAuth("", token) }
	for _, path := range []string{"/metrics", "/", "/debug/pprof/", "/readyz"} {
		if got := get(admin+path, none); got != http.StatusUnauthorized {
			t.Errorf("%s without the token: %d", path, got)
		}
	}
	if got := get(admin+"/metrics", bearer); got != http.StatusOK {
		t.Errorf("/metrics with the bearer token: %d", got)
	}
	if got := get(admin+"/", basic); got != http.StatusOK {
		t.Errorf("dashboard with the Basic password: %d", got)
	}
	if got := get(base+"/health", none); got != http.StatusOK {
		t.Errorf("public /health: %d", got)
	}
	if strings.Contains(stderr.String(), token) {
		t.Error("the token was printed")
	}
}

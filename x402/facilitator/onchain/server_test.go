package onchain_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/seed1284c1d2/svc/internal/anviltest"
	"github.com/seed1284c1d2/svc/x402/facilitator/onchain"
)

// maskedErr is what the test's Mask makes of an error: its message
// replaced, its cause kept.
type maskedErr struct{ err error }

func (e maskedErr) Error() string { return "masked" }
func (e maskedErr) Unwrap() error { return e.err }

// TestHandler: the API is behind Auth, the probes and metrics are not,
// and an error answered to a client passes through Mask.
func TestHandler(t *testing.T) {
	e := newEnv(t, anviltest.Options{})
	f := e.facilitator(t, nil)
	srv := httptest.NewServer(f.Handler(onchain.ServerOptions{
		Auth: func(h http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Header.Get("X-Allowed") != "yes" {
					http.Error(w, "no", http.StatusUnauthorized)
					return
				}
				h.ServeHTTP(w, r)
			})
		},
		Mask: func(err error) error { return maskedErr{err} },
	}))
	defer srv.Close()
	get := func(path string, allowed bool) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, srv.URL+path, nil)
		if allowed {
			req.Header.Set("X-Allowed", "yes")
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for _, c := range []struct {
		path    string
		allowed bool
		code    int
		has     string
	}{
		{"/supported", false, http.StatusUnauthorized, "no"},
		{"/supported", true, http.StatusOK, `"kinds"`},
		{"/health", false, http.StatusOK, `{"ok":true}`},
		{"/ready", false, http.StatusOK, `{"ready":true}`},
		{"/metrics", false, http.StatusOK, "svc_relayer_pending_transactions 0\n"},
	} {
		if code, body := get(c.path, c.allowed); code != c.code || !strings.Contains(body, c.has) {
			t.Errorf("GET %s (allowed %v): %d %q, want %d with %q", c.path, c.allowed, code, body, c.code, c.has)
		}
	}
	resp, err := http.Post(srv.URL+"/verify", "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("POST /verify without Auth: %d", resp.StatusCode)
	}
	// With the chain gone, /ready says why, through Mask.
	e.chain.Stop()
	if code, body := get("/ready", false); code != http.StatusServiceUnavailable || !strings.Contains(body, `"error":"masked"`) {
		t.Errorf("/ready without a chain: %d %q", code, body)
	}
}

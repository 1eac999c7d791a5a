package main

import (
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"strings"
	"testing"

	"github.com/seed1284c1d2/svc/internal/anviltest"
)

// TestChainServeProbesHideRPCKey: `svc serve --settle onchain` with an RPC
// URL that carries an API key in its path (as hosted providers issue them)
// never shows that key on /health, /readyz or /metrics, also when the
// endpoint stops answering and the probes report the facilitator down.
func TestChainServeProbesHideRPCKey(t *testing.T) {
	w := newChainWorld(t, anviltest.Options{})
	const apiKey = "k3yF0rTh3Rpc9f2cA1b2C3d4E5f6"
	anvil, err := url.Parse(w.chain.URL)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(anvil)
	provider := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v2/"+apiKey {
			http.NotFound(rw, r)
			return
		}
		r.URL.Path = "/"
		proxy.ServeHTTP(rw, r)
	}))
	rpcURL := provider.URL + "/v2/" + apiKey
	db := filepath.Join(t.TempDir(), "svc.db")
	srv := w.svc(t, "svc serve", []string{"CHAIN_TEST_RELAYER_KEY=" + keyHex(w.relayerKey)},
		"serve", "--addr", "127.0.0.1:0", "--db", db, "--unpaid-rate", "-1", "--log-level", "info",
		"--settle", "onchain", "--rpc-url", rpcURL, "--relayer-key-env", "CHAIN_TEST_RELAYER_KEY", "--pay-to", chainPayTo.Hex())
	c := clusterHTTP(t)
	clusterGetJSON(t, c, srv.base+"/readyz", http.StatusOK, nil)

	// The endpoint goes away: the facilitator is down, and says so
	// without the URL.
	provider.Close()
	for _, path := range []string{"/readyz", "/health"} {
		body := clusterGetJSON(t, c, srv.base+path, http.StatusServiceUnavailable, nil)
		if strings.Contains(string(body), apiKey) {
			t.Errorf("GET %s shows the RPC URL's key:\n%s", path, body)
		}
		if !strings.Contains(string(body), "rpc_unavailable") {
			t.Errorf("GET %s does not say the RPC endpoint is unavailable:\n%s", path, body)
		}
	}
	if m := clusterMust(t, c, http.MethodGet, srv.base+"/metrics", "", ""); strings.Contains(string(m.body), apiKey) {
		t.Errorf("/metrics shows the RPC URL's key")
	}
	if out := srv.out.String(); strings.Contains(out, apiKey) {
		t.Errorf("the server printed the RPC URL's key:\n%s", out)
	}
}

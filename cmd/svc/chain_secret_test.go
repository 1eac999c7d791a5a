package main

import (
	"io"
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
	provider, rpcURL := keyedRPC(t, w, apiKey)
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

// keyedRPC serves w's chain behind a URL with an API key in its path, as
// hosted providers issue them; close the server to make the endpoint go
// away.
func keyedRPC(t *testing.T, w *chainWorld, apiKey string) (*httptest.Server, string) {
	t.Helper()
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
	t.Cleanup(provider.Close)
	return provider, provider.URL + "/v2/" + apiKey
}

// TestChainFacilitatorHidesRPCKey: `svc facilitator` with an RPC URL that
// carries an API key never shows that key on /ready (no token needed), in
// the answer of /settle, or in its log, when the endpoint stops answering.
func TestChainFacilitatorHidesRPCKey(t *testing.T) {
	w := newChainWorld(t, anviltest.Options{})
	const apiKey = "k3yF0rTh3Rpc7e1dB2c3D4e5F6a7"
	const token = "chain-test-token-0123456789"
	provider, rpcURL := keyedRPC(t, w, apiKey)
	fac := w.svc(t, "svc facilitator", []string{"CHAIN_TEST_RELAYER_KEY=" + keyHex(w.relayerKey), "CHAIN_TEST_TOKEN=" + token},
		"facilitator", "--addr", "127.0.0.1:0", "--rpc-url", rpcURL, "--relayer-key-env", "CHAIN_TEST_RELAYER_KEY", "--token-env", "CHAIN_TEST_TOKEN")
	c := clusterHTTP(t)
	if a := clusterMust(t, c, http.MethodGet, fac.base+"/ready", "", ""); a.status != http.StatusOK {
		t.Fatalf("/ready: %s", a)
	}
	provider.Close()
	a := clusterMust(t, c, http.MethodGet, fac.base+"/ready", "", "")
	if a.status != http.StatusServiceUnavailable || strings.Contains(string(a.body), apiKey) || !strings.Contains(string(a.body), "rpc_unavailable") {
		t.Errorf("/ready with the endpoint gone: %s", a)
	}
	req, _ := http.NewRequest(http.MethodPost, fac.base+"/settle", strings.NewReader(chainSettleBody(t, w.payerKey)))
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || strings.Contains(string(body), apiKey) {
		t.Errorf("/settle with the endpoint gone: %d %s", resp.StatusCode, body)
	}
	if out := fac.out.String(); strings.Contains(out, apiKey) || strings.Contains(out, token) {
		t.Errorf("svc facilitator printed a credential:\n%s", out)
	}
}

// TestServeFacilitatorRPCUnreachableHidesKey: `svc serve --facilitator-url
// … --rpc-url …` checks the RPC endpoint at start; an endpoint that does
// not answer stops it with an error naming --rpc-url and never the URL's
// key.
func TestServeFacilitatorRPCUnreachableHidesKey(t *testing.T) {
	const apiKey = "k3yF0rTh3Rpc0d1e2f3a4b5c6d7e"
	gone := httptest.NewServer(http.NotFoundHandler())
	gone.Close()
	out, code := runSvc(t, "serve", "--addr", "127.0.0.1:0", "--db", filepath.Join(t.TempDir(), "svc.db"),
		"--facilitator-url", "http://127.0.0.1:1", "--pay-to", clusterPayTo, "--rpc-url", gone.URL+"/v2/"+apiKey)
	if code == 0 || !strings.Contains(out, "--rpc-url") {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	if strings.Contains(out, apiKey) {
		t.Fatalf("the RPC URL's key was printed:\n%s", out)
	}
}

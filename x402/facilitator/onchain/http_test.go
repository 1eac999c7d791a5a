package onchain_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/ethereum/go-ethereum/common"

	"github.com/seed1284c1d2/svc/internal/anviltest"
	"github.com/seed1284c1d2/svc/x402"
	"github.com/seed1284c1d2/svc/x402/facilitator"
)

// TestServedOverHTTP: the facilitator served by facilitator.Handler settles
// the v2 bodies and the v1 bodies (x402Version 1, network "base",
// maxAmountRequired) that official clients send, and lists both in
// /supported.
func TestServedOverHTTP(t *testing.T) {
	e := newEnv(t, anviltest.Options{})
	srv := httptest.NewServer(facilitator.Handler(e.facilitator(t, nil)))
	t.Cleanup(srv.Close)
	req := requirements(t, "0.01")

	v2, p2 := pay(t, e.payerKey, req, time.Now())
	body2 := mustJSON(t, map[string]any{"x402Version": 2, "paymentPayload": v2, "paymentRequirements": req})

	_, p1 := pay(t, e.payerKey, req, time.Now())
	body1 := mustJSON(t, map[string]any{
		"x402Version":    1,
		"paymentPayload": map[string]any{"x402Version": 1, "scheme": "exact", "network": "base", "payload": p1},
		"paymentRequirements": map[string]any{
			"scheme": "exact", "network": "base", "maxAmountRequired": req.Amount, "resource": "http://127.0.0.1/api/x",
			"description": "", "mimeType": "application/json", "payTo": req.PayTo, "maxTimeoutSeconds": req.MaxTimeoutSeconds,
			"asset": req.Asset, "extra": req.Extra,
		},
	})
	for name, c := range map[string]struct {
		body  []byte
		nonce string
	}{"v2": {body2, p2.Authorization.Nonce}, "v1": {body1, p1.Authorization.Nonce}} {
		for _, op := range []string{"/verify", "/settle"} {
			resp, err := http.Post(srv.URL+op, "application/json", strings.NewReader(string(c.body)))
			if err != nil {
				t.Fatal(err)
			}
			raw, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("%s %s: %d %s", name, op, resp.StatusCode, raw)
			}
			var out struct {
				IsValid     bool   `json:"isValid"`
				Success     bool   `json:"success"`
				Transaction string `json:"transaction"`
			}
			if err := json.Unmarshal(raw, &out); err != nil {
				t.Fatal(err)
			}
			if op == "/verify" && !out.IsValid || op == "/settle" && (!out.Success || len(out.Transaction) != 66) {
				t.Fatalf("%s %s: %s", name, op, raw)
			}
		}
		if !e.chain.AuthorizationState(t, e.payer, common.HexToHash(c.nonce)) {
			t.Fatalf("%s: the authorization is not used on chain", name)
		}
	}
	resp, err := http.Get(srv.URL + "/supported")
	if err != nil {
		t.Fatal(err)
	}
	var sup x402.SupportedResponse
	err = json.NewDecoder(resp.Body).Decode(&sup)
	resp.Body.Close()
	if err != nil || len(sup.Kinds) != 2 || sup.Kinds[0].Network != x402.NetworkBase || sup.Kinds[1].Network != "base" ||
		len(sup.Signers["eip155:*"]) != 1 || sup.Signers["eip155:*"][0] != e.relayer.Hex() {
		t.Fatalf("/supported: %+v %v", sup, err)
	}
}

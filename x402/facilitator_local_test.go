package x402

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
)

func newTestLocal(t testing.TB, cfg LocalFacilitatorConfig) *LocalFacilitator {
	t.Helper()
	if cfg.Now == nil {
		cfg.Now = testClock
	}
	f, err := NewLocalFacilitator(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

var localTxPattern = regexp.MustCompile(`^local-dev:[0-9a-f]{64}$`)

func TestLocalFacilitatorVerifySettle(t *testing.T) {
	ctx := context.Background()
	f := newTestLocal(t, LocalFacilitatorConfig{})
	key := vecKey(t)
	req := testRequirements(t, NetworkBase)
	payload, p := testPayment(t, key, req)

	vr, err := f.Verify(ctx, payload, req)
	if err != nil || !vr.IsValid || vr.Payer != vecAddrB || vr.InvalidReason != "" {
		t.Fatalf("verify: %+v, %v", vr, err)
	}
	sr, err := f.Settle(ctx, payload, req)
	if err != nil || !sr.Success {
		t.Fatalf("settle: %+v, %v", sr, err)
	}
	if !localTxPattern.MatchString(sr.Transaction) || strings.HasPrefix(sr.Transaction, "0x") {
		t.Fatalf("transaction id %q", sr.Transaction)
	}
	if sr.Network != NetworkBase || sr.Payer != vecAddrB || sr.Amount != "3400" ||
		sr.Extra["onChain"] != false || sr.Extra["note"] != LocalSettlementNote {
		t.Fatalf("settle response %+v", sr)
	}
	// Deterministic: the same authorization has the same id.
	if id := localTransactionID(req.Network, p); id != sr.Transaction {
		t.Fatalf("id %s vs %s", id, sr.Transaction)
	}
	// The authorization is spent: verify and settle now refuse it.
	vr, err = f.Verify(ctx, payload, req)
	if err != nil || vr.IsValid || vr.InvalidReason != ReasonNonceAlreadyUsed || vr.Payer != vecAddrB {
		t.Fatalf("verify after settle: %+v, %v", vr, err)
	}
	sr2, err := f.Settle(ctx, payload, req)
	if err != nil || sr2.Success || sr2.ErrorReason != ReasonNonceAlreadyUsed || sr2.Transaction != "" || sr2.Network != NetworkBase {
		t.Fatalf("second settle: %+v, %v", sr2, err)
	}
	st := f.Settlements()
	if len(st) != 1 || st[0].Transaction != sr.Transaction || st[0].Payer != vecAddrB || st[0].Amount != "3400" ||
		st[0].Nonce != p.Authorization.Nonce || !st[0].SettledAt.Equal(testNow) || st[0].PayTo != req.PayTo {
		t.Fatalf("settlements %+v", st)
	}
	st[0].Amount = "changed"
	if f.Settlements()[0].Amount != "3400" {
		t.Fatal("Settlements shares its slice")
	}
}

func TestLocalFacilitatorRefusals(t *testing.T) {
	ctx := context.Background()
	key := vecKey(t)
	req := testRequirements(t, NetworkBase)
	payload, _ := testPayment(t, key, req)

	// Invalid signature → IsValid false with the reason, nil error; settle too.
	f := newTestLocal(t, LocalFacilitatorConfig{})
	bad := req
	bad.Amount = "3401"
	vr, err := f.Verify(ctx, payload, bad)
	if err != nil || vr.IsValid || vr.InvalidReason != ReasonRequirementsMismatch {
		t.Fatalf("verify: %+v, %v", vr, err)
	}
	sr, err := f.Settle(ctx, payload, bad)
	if err != nil || sr.Success || sr.ErrorReason != ReasonRequirementsMismatch || sr.Network != NetworkBase {
		t.Fatalf("settle: %+v, %v", sr, err)
	}
	if len(f.Settlements()) != 0 {
		t.Fatal("refused payment recorded")
	}

	// Network restriction.
	f = newTestLocal(t, LocalFacilitatorConfig{Networks: []string{"base-sepolia"}})
	if vr, _ := f.Verify(ctx, payload, req); vr.IsValid || vr.InvalidReason != ReasonInvalidNetwork {
		t.Fatalf("network restriction: %+v", vr)
	}
	// PayTo restriction.
	f = newTestLocal(t, LocalFacilitatorConfig{PayTo: vecATo})
	if vr, _ := f.Verify(ctx, payload, req); vr.IsValid || vr.InvalidReason != ReasonRecipientMismatch {
		t.Fatalf("payTo restriction: %+v", vr)
	}
	// Bad configuration.
	if _, err := NewLocalFacilitator(LocalFacilitatorConfig{Networks: []string{"eip155:1"}}); err == nil {
		t.Fatal("unknown network accepted")
	}
	if _, err := NewLocalFacilitator(LocalFacilitatorConfig{PayTo: "0x1"}); err == nil {
		t.Fatal("bad payTo accepted")
	}
	// Cancelled context.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := f.Verify(cctx, payload, req); err == nil {
		t.Fatal("cancelled verify")
	}
}

func TestLocalFacilitatorConcurrentSettleOnce(t *testing.T) {
	f := newTestLocal(t, LocalFacilitatorConfig{})
	req := testRequirements(t, NetworkBase)
	payload, _ := testPayment(t, vecKey(t), req)
	var wg sync.WaitGroup
	var mu sync.Mutex
	wins := 0
	for i := 0; i < 20; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sr, err := f.Settle(context.Background(), payload, req)
			if err != nil {
				t.Error(err)
				return
			}
			if sr.Success {
				mu.Lock()
				wins++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if wins != 1 || len(f.Settlements()) != 1 {
		t.Fatalf("%d successful settlements", wins)
	}
}

func TestLocalFacilitatorSupported(t *testing.T) {
	f := newTestLocal(t, LocalFacilitatorConfig{})
	s, err := f.Supported(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(s)
	want := `{"kinds":[{"x402Version":2,"scheme":"exact","network":"eip155:8453"},{"x402Version":2,"scheme":"exact","network":"eip155:84532"},` +
		`{"x402Version":1,"scheme":"exact","network":"base"},{"x402Version":1,"scheme":"exact","network":"base-sepolia"}]}`
	if string(b) != want {
		t.Fatalf("supported\n got %s\nwant %s", b, want)
	}
}

func postJSON(t *testing.T, url, body string) (int, []byte) {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

func TestFacilitatorHandler(t *testing.T) {
	f := newTestLocal(t, LocalFacilitatorConfig{})
	srv := httptest.NewServer(FacilitatorHandler(f))
	defer srv.Close()
	req := testRequirements(t, NetworkBase)
	payload, p := testPayment(t, vecKey(t), req)
	body, _ := json.Marshal(VerifyRequest{X402Version: 2, PaymentPayload: payload, PaymentRequirements: req})

	status, out := postJSON(t, srv.URL+"/verify", string(body))
	if status != 200 || !bytes.Contains(out, []byte(`"isValid":true`)) {
		t.Fatalf("verify: %d %s", status, out)
	}
	// A refused payment is a 200 with isValid false.
	badReq := req
	badReq.PayTo = vecATo
	badBody, _ := json.Marshal(VerifyRequest{X402Version: 2, PaymentPayload: payload, PaymentRequirements: badReq})
	status, out = postJSON(t, srv.URL+"/verify", string(badBody))
	if status != 200 || !bytes.Contains(out, []byte(`"isValid":false`)) || !bytes.Contains(out, []byte(ReasonRequirementsMismatch)) {
		t.Fatalf("refused verify: %d %s", status, out)
	}

	// v1 body: same authorization, v1 shapes, settles.
	v1 := map[string]any{
		"x402Version":    1,
		"paymentPayload": map[string]any{"x402Version": 1, "scheme": "exact", "network": "base", "payload": p},
		"paymentRequirements": map[string]any{
			"scheme": "exact", "network": "base", "maxAmountRequired": "3400", "resource": "http://x/y", "description": "", "mimeType": "",
			"payTo": req.PayTo, "maxTimeoutSeconds": req.MaxTimeoutSeconds, "asset": req.Asset, "extra": req.Extra,
		},
	}
	v1Body, _ := json.Marshal(v1)
	status, out = postJSON(t, srv.URL+"/settle", string(v1Body))
	if status != 200 || !bytes.Contains(out, []byte(`"success":true`)) || !bytes.Contains(out, []byte(`"network":"base"`)) {
		t.Fatalf("v1 settle: %d %s", status, out)
	}
	// The v2 body of the same authorization is now refused as used.
	status, out = postJSON(t, srv.URL+"/settle", string(body))
	if status != 200 || !bytes.Contains(out, []byte(`"success":false`)) || !bytes.Contains(out, []byte(ReasonNonceAlreadyUsed)) {
		t.Fatalf("second settle: %d %s", status, out)
	}

	for name, c := range map[string]struct {
		body   string
		status int
	}{
		"not json":             {"nope", 400},
		"array":                {"[]", 400},
		"no version":           {`{"paymentPayload":{},"paymentRequirements":{}}`, 400},
		"version 3":            {`{"x402Version":3,"paymentPayload":{},"paymentRequirements":{}}`, 400},
		"no payload":           {`{"x402Version":2,"paymentRequirements":{}}`, 400},
		"payload string":       {`{"x402Version":2,"paymentPayload":"x","paymentRequirements":{}}`, 400},
		"version disagreement": {`{"x402Version":2,"paymentPayload":{"x402Version":1},"paymentRequirements":{}}`, 400},
		"wrong types":          {`{"x402Version":2,"paymentPayload":{"x402Version":"2"},"paymentRequirements":{}}`, 400},
		"trailing garbage":     {string(body) + "x", 400},
		"too large":            {`{"x402Version":2,"pad":"` + strings.Repeat("x", MaxFacilitatorRequestBytes) + `"}`, 413},
	} {
		status, out := postJSON(t, srv.URL+"/verify", c.body)
		if status != c.status || !bytes.Contains(out, []byte(`"error"`)) {
			t.Errorf("%s: %d %s", name, status, out)
		}
	}
	resp, err := http.Get(srv.URL + "/verify")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Fatalf("GET /verify: %d", resp.StatusCode)
	}
}

// failingFacilitator cannot decide anything.
type failingFacilitator struct{}

func (failingFacilitator) Verify(context.Context, PaymentPayload, PaymentRequirements) (VerifyResponse, error) {
	return VerifyResponse{}, errors.New("chain unreachable")
}

func (failingFacilitator) Settle(context.Context, PaymentPayload, PaymentRequirements) (SettleResponse, error) {
	return SettleResponse{}, errors.New("chain unreachable")
}

func (failingFacilitator) Supported(context.Context) (SupportedResponse, error) {
	return SupportedResponse{}, errors.New("chain unreachable")
}

func TestFacilitatorHandlerErrorsAre500(t *testing.T) {
	srv := httptest.NewServer(FacilitatorHandler(failingFacilitator{}))
	defer srv.Close()
	req := testRequirements(t, NetworkBase)
	payload, _ := testPayment(t, vecKey(t), req)
	body, _ := json.Marshal(VerifyRequest{X402Version: 2, PaymentPayload: payload, PaymentRequirements: req})
	for _, path := range []string{"/verify", "/settle"} {
		status, out := postJSON(t, srv.URL+path, string(body))
		if status != 500 || !bytes.Contains(out, []byte("chain unreachable")) {
			t.Errorf("%s: %d %s", path, status, out)
		}
	}
	resp, err := http.Get(srv.URL + "/supported")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 500 {
		t.Fatalf("supported: %d", resp.StatusCode)
	}
	// Through the HTTP client, these are FacilitatorErrors.
	f, _ := NewHTTPFacilitator(HTTPFacilitatorConfig{URL: srv.URL})
	_, err = f.Verify(context.Background(), payload, req)
	var fe *FacilitatorError
	if !errors.As(err, &fe) || fe.StatusCode != 500 || !strings.Contains(fe.Message, "chain unreachable") {
		t.Fatalf("client: %v", err)
	}
}

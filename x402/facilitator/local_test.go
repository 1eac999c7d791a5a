package facilitator

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/seed1284c1d2/svc/x402"
	"github.com/seed1284c1d2/svc/x402/exact"
)

func newTestLocal(t testing.TB, cfg LocalConfig) *Local {
	t.Helper()
	if cfg.Now == nil {
		cfg.Now = testClock
	}
	f, err := NewLocal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

var localTxPattern = regexp.MustCompile(`^local-dev:[0-9a-f]{64}$`)

func TestLocalFacilitatorVerifySettle(t *testing.T) {
	ctx := context.Background()
	f := newTestLocal(t, LocalConfig{})
	key := vecKey(t)
	req := testRequirements(t, x402.NetworkBase)
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
	if sr.Network != x402.NetworkBase || sr.Payer != vecAddrB || sr.Amount != "3400" ||
		sr.Extra["onChain"] != false || sr.Extra["note"] != LocalSettlementNote {
		t.Fatalf("settle response %+v", sr)
	}
	// Deterministic: the same authorization has the same id.
	if id := localTransactionID(req.Network, p); id != sr.Transaction {
		t.Fatalf("id %s vs %s", id, sr.Transaction)
	}
	// The authorization is spent: verify refuses it; settling it again
	// for the same requirements returns the original settlement.
	vr, err = f.Verify(ctx, payload, req)
	if err != nil || vr.IsValid || vr.InvalidReason != exact.ReasonNonceAlreadyUsed || vr.Payer != vecAddrB {
		t.Fatalf("verify after settle: %+v, %v", vr, err)
	}
	sr2, err := f.Settle(ctx, payload, req)
	if err != nil || !reflect.DeepEqual(sr2, sr) {
		t.Fatalf("second settle: %+v, %v; want %+v", sr2, err, sr)
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
	req := testRequirements(t, x402.NetworkBase)
	payload, _ := testPayment(t, key, req)

	// Invalid signature → IsValid false with the reason, nil error; settle too.
	f := newTestLocal(t, LocalConfig{})
	bad := req
	bad.Amount = "3401"
	vr, err := f.Verify(ctx, payload, bad)
	if err != nil || vr.IsValid || vr.InvalidReason != exact.ReasonRequirementsMismatch {
		t.Fatalf("verify: %+v, %v", vr, err)
	}
	sr, err := f.Settle(ctx, payload, bad)
	if err != nil || sr.Success || sr.ErrorReason != exact.ReasonRequirementsMismatch || sr.Network != x402.NetworkBase {
		t.Fatalf("settle: %+v, %v", sr, err)
	}
	if len(f.Settlements()) != 0 {
		t.Fatal("refused payment recorded")
	}

	// Network restriction.
	f = newTestLocal(t, LocalConfig{Networks: []string{"base-sepolia"}})
	if vr, _ := f.Verify(ctx, payload, req); vr.IsValid || vr.InvalidReason != x402.ReasonInvalidNetwork {
		t.Fatalf("network restriction: %+v", vr)
	}
	// PayTo restriction.
	f = newTestLocal(t, LocalConfig{PayTo: vecATo})
	if vr, _ := f.Verify(ctx, payload, req); vr.IsValid || vr.InvalidReason != exact.ReasonRecipientMismatch {
		t.Fatalf("payTo restriction: %+v", vr)
	}
	// Bad configuration.
	if _, err := NewLocal(LocalConfig{Networks: []string{"eip155:1"}}); err == nil {
		t.Fatal("unknown network accepted")
	}
	if _, err := NewLocal(LocalConfig{PayTo: "0x1"}); err == nil {
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
	f := newTestLocal(t, LocalConfig{})
	req := testRequirements(t, x402.NetworkBase)
	payload, _ := testPayment(t, vecKey(t), req)
	var wg sync.WaitGroup
	var mu sync.Mutex
	txs := map[string]int{}
	for i := 0; i < 20; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sr, err := f.Settle(context.Background(), payload, req)
			if err != nil || !sr.Success {
				t.Errorf("settle: %+v, %v", sr, err)
				return
			}
			mu.Lock()
			txs[sr.Transaction]++
			mu.Unlock()
		}()
	}
	wg.Wait()
	// One settlement; every caller gets it.
	if len(txs) != 1 || len(f.Settlements()) != 1 {
		t.Fatalf("transactions %v, %d settlements recorded", txs, len(f.Settlements()))
	}
}

func TestLocalFacilitatorSupported(t *testing.T) {
	f := newTestLocal(t, LocalConfig{})
	s, err := f.Supported(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(s)
	want := `{"kinds":[{"x402Version":2,"scheme":"exact","network":"eip155:8453"},{"x402Version":2,"scheme":"exact","network":"eip155:84532"},` +
		`{"x402Version":1,"scheme":"exact","network":"base"},{"x402Version":1,"scheme":"exact","network":"base-sepolia"}],"extensions":["payment-identifier"]}`
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
	f := newTestLocal(t, LocalConfig{})
	srv := httptest.NewServer(Handler(f))
	defer srv.Close()
	req := testRequirements(t, x402.NetworkBase)
	payload, p := testPayment(t, vecKey(t), req)
	body, _ := json.Marshal(x402.VerifyRequest{X402Version: 2, PaymentPayload: payload, PaymentRequirements: req})

	status, out := postJSON(t, srv.URL+"/verify", string(body))
	if status != 200 || !bytes.Contains(out, []byte(`"isValid":true`)) {
		t.Fatalf("verify: %d %s", status, out)
	}
	// A refused payment is a 200 with isValid false.
	badReq := req
	badReq.PayTo = vecATo
	badBody, _ := json.Marshal(x402.VerifyRequest{X402Version: 2, PaymentPayload: payload, PaymentRequirements: badReq})
	status, out = postJSON(t, srv.URL+"/verify", string(badBody))
	if status != 200 || !bytes.Contains(out, []byte(`"isValid":false`)) || !bytes.Contains(out, []byte(exact.ReasonRequirementsMismatch)) {
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
	// The v2 body of the same authorization for the same requirements
	// gets the original settlement; for another amount it is refused as
	// used.
	status, out2 := postJSON(t, srv.URL+"/settle", string(body))
	if status != 200 || !bytes.Equal(out2, out) {
		t.Fatalf("second settle: %d %s, want %s", status, out2, out)
	}
	otherReq := req
	otherReq.Amount = "1"
	otherBody, _ := json.Marshal(x402.VerifyRequest{X402Version: 2, PaymentPayload: payload, PaymentRequirements: otherReq})
	status, out = postJSON(t, srv.URL+"/settle", string(otherBody))
	if status != 200 || !bytes.Contains(out, []byte(`"success":false`)) || !bytes.Contains(out, []byte(exact.ReasonNonceAlreadyUsed)) {
		t.Fatalf("settle for other requirements: %d %s", status, out)
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
		"too large":            {`{"x402Version":2,"pad":"` + strings.Repeat("x", MaxRequestBytes) + `"}`, 413},
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

func (failingFacilitator) Verify(context.Context, x402.PaymentPayload, x402.PaymentRequirements) (x402.VerifyResponse, error) {
	return x402.VerifyResponse{}, errors.New("chain unreachable")
}

func (failingFacilitator) Settle(context.Context, x402.PaymentPayload, x402.PaymentRequirements) (x402.SettleResponse, error) {
	return x402.SettleResponse{}, errors.New("chain unreachable")
}

func (failingFacilitator) Supported(context.Context) (x402.SupportedResponse, error) {
	return x402.SupportedResponse{}, errors.New("chain unreachable")
}

func TestFacilitatorHandlerErrorsAre500(t *testing.T) {
	srv := httptest.NewServer(Handler(failingFacilitator{}))
	defer srv.Close()
	req := testRequirements(t, x402.NetworkBase)
	payload, _ := testPayment(t, vecKey(t), req)
	body, _ := json.Marshal(x402.VerifyRequest{X402Version: 2, PaymentPayload: payload, PaymentRequirements: req})
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
	f, _ := NewHTTP(HTTPConfig{URL: srv.URL})
	_, err = f.Verify(context.Background(), payload, req)
	var fe *Error
	if !errors.As(err, &fe) || fe.StatusCode != 500 || !strings.Contains(fe.Message, "chain unreachable") {
		t.Fatalf("client: %v", err)
	}
}

// movableClock is a test clock that can be moved forward.
type movableClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *movableClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *movableClock) Add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// validBeforeTime returns the authorization's validBefore as a time.
func validBeforeTime(t *testing.T, p exact.ExactEVMPayload) time.Time {
	t.Helper()
	vb, err := strconv.ParseInt(p.Authorization.ValidBefore, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return time.Unix(vb, 0)
}

// withSignature returns payload with its exact EVM payload's signature
// replaced.
func withSignature(t *testing.T, req x402.PaymentRequirements, p exact.ExactEVMPayload, sig string) x402.PaymentPayload {
	t.Helper()
	p.Signature = sig
	return wrapPayment(t, req, p)
}

// TestLocalFacilitatorDeduplicates checks that a settled authorization
// presented again for the same requirements gets the original settlement,
// even once expired and with another encoding of its signature, and that
// other requirements and verification are refused as a used nonce.
func TestLocalFacilitatorDeduplicates(t *testing.T) {
	ctx := context.Background()
	clock := &movableClock{t: testNow}
	f := newTestLocal(t, LocalConfig{Now: clock.Now})
	req := testRequirements(t, x402.NetworkBase)
	payload, p := testPayment(t, vecKey(t), req)
	orig, err := f.Settle(ctx, payload, req)
	if err != nil || !orig.Success {
		t.Fatalf("settle: %+v, %v", orig, err)
	}

	// The same, re-encoded (a v1 network name, upper-case addresses): the
	// original.
	again := req
	again.Network = "base"
	again.PayTo = req.PayTo[:2] + strings.ToUpper(req.PayTo[2:])
	if sr, err := f.Settle(ctx, payload, again); err != nil || !reflect.DeepEqual(sr, orig) {
		t.Fatalf("same requirements re-encoded: %+v, %v", sr, err)
	}
	// Another valid encoding of the signature (v = 0/1): verified, then
	// the original.
	sig := p.Signature
	v := sig[len(sig)-2:]
	alt := map[string]string{"1b": "00", "1c": "01"}[v]
	if alt == "" {
		t.Fatalf("signature v %s", v)
	}
	if sr, err := f.Settle(ctx, withSignature(t, req, p, sig[:len(sig)-2]+alt), req); err != nil || !reflect.DeepEqual(sr, orig) {
		t.Fatalf("another signature encoding: %+v, %v", sr, err)
	}
	// A forged signature of the same authorization is not answered with
	// the settlement.
	forged := sig[:4] + strings.Map(func(r rune) rune {
		if r == 'a' {
			return 'b'
		}
		return r
	}, sig[4:])
	if forged == sig {
		t.Fatal("the forgery is the signature")
	}
	if sr, err := f.Settle(ctx, withSignature(t, req, p, forged), req); err != nil || sr.Success || sr.Transaction != "" {
		t.Fatalf("forged signature: %+v, %v", sr, err)
	}
	// Other requirements: refused as a used nonce (also for a payTo or an
	// amount the authorization does not match).
	for name, mut := range map[string]func(*x402.PaymentRequirements){
		"amount": func(r *x402.PaymentRequirements) { r.Amount = "5000" },
		"payTo":  func(r *x402.PaymentRequirements) { r.PayTo = vecATo },
	} {
		other := req
		mut(&other)
		sr, err := f.Settle(ctx, payload, other)
		if err != nil || sr.Success || sr.ErrorReason != exact.ReasonNonceAlreadyUsed || sr.Transaction != "" || sr.Payer != vecAddrB {
			t.Fatalf("%s: %+v, %v", name, sr, err)
		}
	}
	// Verify stays invalid: used nonce.
	if vr, err := f.Verify(ctx, payload, req); err != nil || vr.IsValid || vr.InvalidReason != exact.ReasonNonceAlreadyUsed {
		t.Fatalf("verify: %+v, %v", vr, err)
	}

	// After validBefore: the same payment still gets the original (crash
	// recovery presents it again late); verify still says used.
	clock.Add(validBeforeTime(t, p).Sub(testNow) + time.Hour)
	if sr, err := f.Settle(ctx, payload, req); err != nil || !reflect.DeepEqual(sr, orig) {
		t.Fatalf("expired, presented again: %+v, %v", sr, err)
	}
	if vr, err := f.Verify(ctx, payload, req); err != nil || vr.IsValid || vr.InvalidReason != exact.ReasonNonceAlreadyUsed {
		t.Fatalf("verify expired: %+v, %v", vr, err)
	}
	if n := len(f.Settlements()); n != 1 {
		t.Fatalf("%d settlements recorded", n)
	}
	// The answers are copies.
	sr, _ := f.Settle(ctx, payload, req)
	sr.Extra["onChain"] = true
	if sr2, _ := f.Settle(ctx, payload, req); sr2.Extra["onChain"] != false {
		t.Fatal("the recorded response is shared")
	}
}

func TestLocalFacilitatorStatus(t *testing.T) {
	ctx := context.Background()
	clock := &movableClock{t: testNow}
	f := newTestLocal(t, LocalConfig{Now: clock.Now})
	var _ x402.StatusChecker = f
	req := testRequirements(t, x402.NetworkBase)
	payload, p := testPayment(t, vecKey(t), req)
	unused, _ := testPayment(t, newTestKey(t), req)

	st, err := f.Status(ctx, payload, req)
	if err != nil || st != (x402.AuthorizationStatus{}) {
		t.Fatalf("before settling: %+v, %v", st, err)
	}
	sr, err := f.Settle(ctx, payload, req)
	if err != nil || !sr.Success {
		t.Fatalf("settle: %+v, %v", sr, err)
	}
	want := x402.AuthorizationStatus{Used: true, Transaction: sr.Transaction, Payer: vecAddrB, PayTo: req.PayTo, Amount: "3400", Asset: req.Asset, Network: x402.NetworkBase}
	st, err = f.Status(ctx, payload, req)
	if err != nil || st != want {
		t.Fatalf("settled: %+v, %v; want %+v", st, err, want)
	}
	// Whatever the requirements ask, Status says what was transferred; the
	// v1 network name finds the same authorization.
	other := req
	other.Amount = "1"
	other.Network = "base"
	if st, err := f.Status(ctx, payload, other); err != nil || st != want {
		t.Fatalf("other requirements: %+v, %v", st, err)
	}
	if st, err := f.Status(ctx, unused, req); err != nil || st.Used || st.Expired {
		t.Fatalf("unused: %+v, %v", st, err)
	}

	// At validBefore the authorization can never be used again.
	clock.Add(validBeforeTime(t, p).Sub(testNow) - time.Second)
	if st, _ := f.Status(ctx, unused, req); st.Expired {
		t.Fatal("expired a second before validBefore")
	}
	clock.Add(time.Second)
	if st, err := f.Status(ctx, unused, req); err != nil || st.Used || !st.Expired {
		t.Fatalf("unused, expired: %+v, %v", st, err)
	}
	want.Expired = true
	if st, err := f.Status(ctx, payload, req); err != nil || st != want {
		t.Fatalf("settled, expired: %+v, %v", st, err)
	}

	// Errors.
	bad := payload
	bad.Payload = json.RawMessage(`{"signature":"0x"}`)
	if _, err := f.Status(ctx, bad, req); err == nil || !strings.Contains(err.Error(), "status") {
		t.Fatalf("payload without authorization: %v", err)
	}
	p.Authorization.ValidBefore = "soon"
	if _, err := f.Status(ctx, wrapPayment(t, req, p), req); err == nil {
		t.Fatal("non-numeric validBefore accepted")
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := f.Status(cctx, payload, req); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v", err)
	}
}

// withIdentifier returns payload carrying payment identifier id.
func withIdentifier(payload x402.PaymentPayload, id string) x402.PaymentPayload {
	payload.Extensions = map[string]any{x402.ExtensionPaymentIdentifier: map[string]any{"info": map[string]any{"required": false, "id": id}}}
	return payload
}

const (
	testPaymentID  = "pay_7d5d747be160e280504c099d984bcfe0"
	testPaymentID2 = "pay_00000000000000000000000000000002"
)

func TestLocalFacilitatorPaymentIdentifier(t *testing.T) {
	ctx := context.Background()
	f := newTestLocal(t, LocalConfig{})
	req := testRequirements(t, x402.NetworkBase)
	p1, _ := testPayment(t, vecKey(t), req)
	p2, _ := testPayment(t, newTestKey(t), req)
	a := withIdentifier(p1, testPaymentID)

	orig, err := f.Settle(ctx, a, req)
	if err != nil || !orig.Success {
		t.Fatalf("settle: %+v, %v", orig, err)
	}
	// Same identifier, same payment: the original.
	if sr, err := f.Settle(ctx, a, req); err != nil || !reflect.DeepEqual(sr, orig) {
		t.Fatalf("again: %+v, %v", sr, err)
	}
	// Same identifier, another payment: conflict, for settle and verify,
	// and nothing settled.
	b := withIdentifier(p2, testPaymentID)
	if sr, err := f.Settle(ctx, b, req); err != nil || sr.Success || sr.ErrorReason != x402.ReasonPaymentIdentifierConflict {
		t.Fatalf("conflict: %+v, %v", sr, err)
	}
	if vr, err := f.Verify(ctx, b, req); err != nil || vr.IsValid || vr.InvalidReason != x402.ReasonPaymentIdentifierConflict {
		t.Fatalf("verify conflict: %+v, %v", vr, err)
	}
	// The same payment for other requirements under the same identifier is
	// another payment too.
	other := req
	other.Amount = "5000"
	if sr, err := f.Settle(ctx, a, other); err != nil || sr.Success || sr.ErrorReason != x402.ReasonPaymentIdentifierConflict {
		t.Fatalf("other requirements: %+v, %v", sr, err)
	}
	// Identifiers are scoped by payTo: another merchant's client may use
	// the same one.
	reqB := req
	reqB.PayTo = vecATo
	pB, _ := testPayment(t, newTestKey(t), reqB)
	if sr, err := f.Settle(ctx, withIdentifier(pB, testPaymentID), reqB); err != nil || !sr.Success {
		t.Fatalf("same identifier, another payTo: %+v, %v", sr, err)
	}
	// The other payment under its own identifier, or none, settles.
	if sr, err := f.Settle(ctx, withIdentifier(p2, testPaymentID2), req); err != nil || !sr.Success || sr.Transaction == orig.Transaction {
		t.Fatalf("second payment: %+v, %v", sr, err)
	}
	// The first payment presented again under a new identifier: the
	// original (deduplicated by authorization), and the identifier is now
	// bound to it.
	const id3 = "pay_33333333333333333333333333333333"
	if sr, err := f.Settle(ctx, withIdentifier(p1, id3), req); err != nil || !reflect.DeepEqual(sr, orig) {
		t.Fatalf("new identifier: %+v, %v", sr, err)
	}
	if sr, _ := f.Settle(ctx, withIdentifier(p2, id3), req); sr.ErrorReason != x402.ReasonPaymentIdentifierConflict {
		t.Fatalf("identifier bound at re-presentation: %+v", sr)
	}
	// Malformed identifiers are refused.
	for _, id := range []any{"short", strings.Repeat("x", 129), "pay_with spaces_0123456789", "pay_ünïcödé_0123456789", 12345678901234567} {
		bad := p1
		bad.Extensions = map[string]any{x402.ExtensionPaymentIdentifier: map[string]any{"info": map[string]any{"id": id}}}
		if sr, err := f.Settle(ctx, bad, req); err != nil || sr.Success || sr.ErrorReason != x402.ReasonInvalidPaymentIdentifier {
			t.Errorf("id %v: %+v, %v", id, sr, err)
		}
		if vr, err := f.Verify(ctx, bad, req); err != nil || vr.IsValid || vr.InvalidReason != x402.ReasonInvalidPaymentIdentifier {
			t.Errorf("verify id %v: %+v, %v", id, vr, err)
		}
	}
	if n := len(f.Settlements()); n != 3 {
		t.Fatalf("%d settlements", n)
	}
}

// countingFacilitator counts the settlements it passes to f; when gate is
// set, each waits for it.
type countingFacilitator struct {
	x402.Facilitator
	settles atomic.Int32
	gate    chan struct{}
}

func (c *countingFacilitator) Settle(ctx context.Context, p x402.PaymentPayload, r x402.PaymentRequirements) (x402.SettleResponse, error) {
	c.settles.Add(1)
	if c.gate != nil {
		<-c.gate
	}
	return c.Facilitator.Settle(ctx, p, r)
}

// refusingFacilitator refuses every settlement.
type refusingFacilitator struct{ x402.Facilitator }

func (refusingFacilitator) Settle(_ context.Context, _ x402.PaymentPayload, r x402.PaymentRequirements) (x402.SettleResponse, error) {
	return x402.SettleResponse{Success: false, ErrorReason: "insufficient_funds", Network: r.Network}, nil
}

func settleBody(t *testing.T, payload x402.PaymentPayload, req x402.PaymentRequirements) string {
	t.Helper()
	b, err := json.Marshal(x402.VerifyRequest{X402Version: 2, PaymentPayload: payload, PaymentRequirements: req})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestFacilitatorHandlerPaymentIdentifier(t *testing.T) {
	clock := &movableClock{t: testNow}
	local := newTestLocal(t, LocalConfig{})
	inner := &countingFacilitator{Facilitator: local}
	srv := httptest.NewServer(NewHandler(inner, HandlerConfig{Now: clock.Now, IdentifierTTL: time.Hour, MaxIdentifiers: 2}))
	defer srv.Close()
	req := testRequirements(t, x402.NetworkBase)
	p1, _ := testPayment(t, vecKey(t), req)
	p2, _ := testPayment(t, newTestKey(t), req)
	a := withIdentifier(p1, testPaymentID)

	status, first := postJSON(t, srv.URL+"/settle", settleBody(t, a, req))
	if status != 200 || !bytes.Contains(first, []byte(`"success":true`)) {
		t.Fatalf("settle: %d %s", status, first)
	}
	// Same identifier, same payment: the remembered answer, f not called.
	status, out := postJSON(t, srv.URL+"/settle", settleBody(t, a, req))
	if status != 200 || !bytes.Equal(out, first) || inner.settles.Load() != 1 {
		t.Fatalf("again: %d %s (%d settles)", status, out, inner.settles.Load())
	}
	// Same identifier, another payment: 409, for settle and verify.
	b := withIdentifier(p2, testPaymentID)
	status, out = postJSON(t, srv.URL+"/settle", settleBody(t, b, req))
	if status != http.StatusConflict || !bytes.Contains(out, []byte(x402.ReasonPaymentIdentifierConflict)) || !bytes.Contains(out, []byte(`"success":false`)) {
		t.Fatalf("conflict: %d %s", status, out)
	}
	status, out = postJSON(t, srv.URL+"/verify", settleBody(t, b, req))
	if status != http.StatusConflict || !bytes.Contains(out, []byte(x402.ReasonPaymentIdentifierConflict)) || !bytes.Contains(out, []byte(`"isValid":false`)) {
		t.Fatalf("verify conflict: %d %s", status, out)
	}
	if inner.settles.Load() != 1 {
		t.Fatalf("%d settles", inner.settles.Load())
	}
	// Through HTTP the 409 is a refusal, not an error.
	hf := newTestHTTPFacilitator(t, srv.URL, nil)
	if sr, err := hf.Settle(context.Background(), b, req); err != nil || sr.Success || sr.ErrorReason != x402.ReasonPaymentIdentifierConflict {
		t.Fatalf("client conflict: %+v, %v", sr, err)
	}
	// Malformed identifier: 400 with the reason.
	status, out = postJSON(t, srv.URL+"/settle", settleBody(t, withIdentifier(p2, "bad id"), req))
	if status != http.StatusBadRequest || !bytes.Contains(out, []byte(x402.ReasonInvalidPaymentIdentifier)) {
		t.Fatalf("malformed: %d %s", status, out)
	}
	status, out = postJSON(t, srv.URL+"/verify", settleBody(t, withIdentifier(p2, "bad id"), req))
	if status != http.StatusBadRequest || !bytes.Contains(out, []byte(x402.ReasonInvalidPaymentIdentifier)) {
		t.Fatalf("verify malformed: %d %s", status, out)
	}
	// /supported lists the extension once.
	sup, err := hf.Supported(context.Background())
	if err != nil || strings.Count(strings.Join(sup.Extensions, ","), x402.ExtensionPaymentIdentifier) != 1 {
		t.Fatalf("supported: %+v, %v", sup, err)
	}

	// Forgotten after IdentifierTTL: the request reaches f again (which
	// has its own memory of the identifier).
	clock.Add(time.Hour + time.Second)
	status, out = postJSON(t, srv.URL+"/settle", settleBody(t, b, req))
	if status != http.StatusConflict || inner.settles.Load() != 2 {
		t.Fatalf("after TTL: %d %s (%d settles)", status, out, inner.settles.Load())
	}
	// At most MaxIdentifiers (2) are remembered, the oldest forgotten first.
	ids := []string{testPaymentID2, "pay_33333333333333333333333333333333", "pay_44444444444444444444444444444444"}
	for _, id := range ids {
		if status, out := postJSON(t, srv.URL+"/settle", settleBody(t, withIdentifier(p1, id), req)); status != 200 || !bytes.Contains(out, []byte(`"success":true`)) {
			t.Fatalf("settle under %s: %d %s", id, status, out)
		}
	}
	n := inner.settles.Load()
	postJSON(t, srv.URL+"/settle", settleBody(t, withIdentifier(p1, ids[2]), req))
	if inner.settles.Load() != n {
		t.Fatal("the newest identifier was forgotten")
	}
	postJSON(t, srv.URL+"/settle", settleBody(t, withIdentifier(p1, ids[0]), req))
	if inner.settles.Load() != n+1 {
		t.Fatal("the oldest identifier was kept beyond MaxIdentifiers")
	}
	// Identifiers are scoped by payTo: a remembered one is free for
	// another receiver.
	reqB := req
	reqB.PayTo = vecATo
	pB, _ := testPayment(t, newTestKey(t), reqB)
	if status, out := postJSON(t, srv.URL+"/settle", settleBody(t, withIdentifier(pB, ids[2]), reqB)); status != 200 || !bytes.Contains(out, []byte(`"success":true`)) {
		t.Fatalf("another payTo: %d %s", status, out)
	}
}

func TestFacilitatorHandlerPaymentIdentifierFailuresAndConcurrency(t *testing.T) {
	req := testRequirements(t, x402.NetworkBase)
	p1, _ := testPayment(t, vecKey(t), req)
	p2, _ := testPayment(t, newTestKey(t), req)

	// A refused settlement is not remembered: the client may retry under
	// the same identifier with another payment.
	refusing := &countingFacilitator{Facilitator: refusingFacilitator{newTestLocal(t, LocalConfig{})}}
	srv := httptest.NewServer(Handler(refusing))
	defer srv.Close()
	for _, p := range []x402.PaymentPayload{p1, p2} {
		status, out := postJSON(t, srv.URL+"/settle", settleBody(t, withIdentifier(p, testPaymentID), req))
		if status != 200 || !bytes.Contains(out, []byte("insufficient_funds")) {
			t.Fatalf("refused: %d %s", status, out)
		}
	}
	if refusing.settles.Load() != 2 {
		t.Fatalf("%d settles", refusing.settles.Load())
	}
	// Nor an error.
	srvErr := httptest.NewServer(Handler(failingFacilitator{}))
	defer srvErr.Close()
	if status, _ := postJSON(t, srvErr.URL+"/settle", settleBody(t, withIdentifier(p1, testPaymentID), req)); status != 500 {
		t.Fatalf("error: %d", status)
	}

	// Concurrent settlements under one identifier: one reaches f, all get
	// its answer.
	gated := &countingFacilitator{Facilitator: newTestLocal(t, LocalConfig{}), gate: make(chan struct{})}
	srv2 := httptest.NewServer(Handler(gated))
	defer srv2.Close()
	body := settleBody(t, withIdentifier(p1, testPaymentID), req)
	var wg sync.WaitGroup
	outs := make([][]byte, 8)
	for i := range outs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			status, out := postJSON(t, srv2.URL+"/settle", body)
			if status != 200 {
				t.Errorf("concurrent settle: %d %s", status, out)
			}
			outs[i] = out
		}()
	}
	for gated.settles.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(50 * time.Millisecond) // let the others queue behind it
	close(gated.gate)
	wg.Wait()
	if gated.settles.Load() != 1 {
		t.Fatalf("%d settles reached the facilitator", gated.settles.Load())
	}
	for _, out := range outs {
		if !bytes.Equal(out, outs[0]) || !bytes.Contains(out, []byte(`"success":true`)) {
			t.Fatalf("answers differ: %s vs %s", out, outs[0])
		}
	}

	// Deduplication off: every settlement reaches f.
	counting := &countingFacilitator{Facilitator: newTestLocal(t, LocalConfig{})}
	srv3 := httptest.NewServer(NewHandler(counting, HandlerConfig{IdentifierTTL: -1}))
	defer srv3.Close()
	for range 2 {
		postJSON(t, srv3.URL+"/settle", body)
	}
	if counting.settles.Load() != 2 {
		t.Fatalf("dedup off: %d settles", counting.settles.Load())
	}
}

func TestPaymentIdentifierHelpers(t *testing.T) {
	req := testRequirements(t, x402.NetworkBase)
	payload, _ := testPayment(t, vecKey(t), req)

	// Declaration.
	d := x402.DeclarePaymentIdentifier(true)
	raw, _ := json.Marshal(d)
	var decl struct {
		Info   map[string]any `json:"info"`
		Schema map[string]any `json:"schema"`
	}
	if err := json.Unmarshal(raw, &decl); err != nil || decl.Info["required"] != true || decl.Schema["type"] != "object" || len(decl.Info) != 1 {
		t.Fatalf("declaration %s", raw)
	}

	// Extraction.
	for _, c := range []struct {
		ext  any
		id   string
		fail bool
	}{
		{nil, "", false},
		{map[string]any{"info": map[string]any{"required": true}}, "", false},
		{map[string]any{"info": map[string]any{"id": testPaymentID}}, testPaymentID, false},
		{map[string]any{"info": map[string]any{"id": nil}}, "", false},
		{"string", "", true},
		{map[string]any{"info": "x"}, "", true},
		{map[string]any{"info": map[string]any{"id": 7}}, "", true},
		{map[string]any{"info": map[string]any{"id": "0123456789abcde"}}, "", true},                   // 15 characters
		{map[string]any{"info": map[string]any{"id": "0123456789abcdef"}}, "0123456789abcdef", false}, // 16
		{map[string]any{"info": map[string]any{"id": strings.Repeat("a", 128)}}, strings.Repeat("a", 128), false},
		{map[string]any{"info": map[string]any{"id": "pay_0123456789abcdef/"}}, "", true},
	} {
		p := payload
		if c.ext != nil {
			p.Extensions = map[string]any{x402.ExtensionPaymentIdentifier: c.ext}
		}
		id, err := x402.PaymentIdentifierOf(p)
		if id != c.id || (err != nil) != c.fail {
			t.Errorf("%v: %q, %v", c.ext, id, err)
		}
	}

	// WithPaymentIdentifier keeps the client's identifier.
	client := withIdentifier(payload, testPaymentID)
	got, id, err := WithPaymentIdentifier(client, req)
	if err != nil || id != testPaymentID || !reflect.DeepEqual(got, client) {
		t.Fatalf("kept: %q %v", id, err)
	}
	// Without one it derives one from the authorization: valid, the same
	// every time, another for another authorization; payload untouched,
	// the echoed declaration kept.
	payload.Extensions = map[string]any{"bazaar": map[string]any{"x": 1}, x402.ExtensionPaymentIdentifier: x402.DeclarePaymentIdentifier(true)}
	got, id, err = WithPaymentIdentifier(payload, req)
	if err != nil || !x402.ValidPaymentIdentifier(id) {
		t.Fatalf("derived: %q %v", id, err)
	}
	if back, err := x402.PaymentIdentifierOf(got); err != nil || back != id {
		t.Fatalf("derived id not carried: %q %v", back, err)
	}
	if got.Extensions["bazaar"] == nil || got.Extensions[x402.ExtensionPaymentIdentifier].(map[string]any)["info"].(map[string]any)["required"] != true ||
		got.Extensions[x402.ExtensionPaymentIdentifier].(map[string]any)["schema"] == nil {
		t.Fatalf("extensions %+v", got.Extensions)
	}
	if back, _ := x402.PaymentIdentifierOf(payload); back != "" {
		t.Fatal("the payload was modified")
	}
	// Re-encoded (v1 network name, a fresh round trip through JSON), the
	// same identifier.
	var rt x402.PaymentPayload
	b, _ := json.Marshal(payload)
	_ = json.Unmarshal(b, &rt)
	v1req := req
	v1req.Network = "base"
	if _, id2, err := WithPaymentIdentifier(rt, v1req); err != nil || id2 != id {
		t.Fatalf("re-derived %q, want %q (%v)", id2, id, err)
	}
	other, _ := testPayment(t, newTestKey(t), req)
	if _, id3, _ := WithPaymentIdentifier(other, req); id3 == id || !x402.ValidPaymentIdentifier(id3) {
		t.Fatalf("another authorization: %q", id3)
	}
	// Not an EIP-3009 payload: derived from the payload itself.
	odd := payload
	odd.Payload = json.RawMessage(`{"transaction": "abc"}`)
	_, id4, err := WithPaymentIdentifier(odd, req)
	odd.Payload = json.RawMessage(`{"transaction":"abc"}`)
	if _, id5, _ := WithPaymentIdentifier(odd, req); err != nil || id4 != id5 || !x402.ValidPaymentIdentifier(id4) || id4 == id {
		t.Fatalf("raw payload: %q %q %v", id4, id5, err)
	}
	odd.Payload = nil
	if _, _, err := WithPaymentIdentifier(odd, req); err == nil {
		t.Fatal("no payload: no error")
	}
	// A malformed identifier is an error.
	if _, _, err := WithPaymentIdentifier(withIdentifier(payload, "short"), req); err == nil {
		t.Fatal("malformed identifier kept")
	}

	// End to end: the derived identifier makes a handler deduplicate the
	// re-presented settlement.
	local := &countingFacilitator{Facilitator: newTestLocal(t, LocalConfig{})}
	srv := httptest.NewServer(Handler(local))
	defer srv.Close()
	hf := newTestHTTPFacilitator(t, srv.URL, nil)
	first, err := hf.Settle(context.Background(), got, req)
	if err != nil || !first.Success {
		t.Fatalf("settle: %+v %v", first, err)
	}
	again, _, _ := WithPaymentIdentifier(rt, req)
	if sr, err := hf.Settle(context.Background(), again, req); err != nil || !reflect.DeepEqual(sr, first) || local.settles.Load() != 1 {
		t.Fatalf("re-presented: %+v %v (%d settles)", sr, err, local.settles.Load())
	}
}

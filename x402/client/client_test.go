package client_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/seed1284c1d2/svc/x402"
	"github.com/seed1284c1d2/svc/x402/client"
)

func clSigner(t testing.TB) *client.Signer {
	t.Helper()
	s, err := client.ParseSigner("0x" + mwKeyHex)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// clCounting counts the requests and the payment headers it forwards.
type clCounting struct {
	base     http.RoundTripper
	requests atomic.Int64
	payments atomic.Int64
}

func (c *clCounting) RoundTrip(r *http.Request) (*http.Response, error) {
	c.requests.Add(1)
	if r.Header.Get(x402.HeaderPaymentSignature) != "" || r.Header.Get(x402.HeaderV1Payment) != "" {
		c.payments.Add(1)
	}
	return c.base.RoundTrip(r)
}

func clGet(t *testing.T, c *http.Client, method, url, body string) (*http.Response, []byte, error) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		// A reader NewRequest does not know: no GetBody, so the Transport
		// must buffer it to send it again.
		rd = io.MultiReader(strings.NewReader(body))
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, b, nil
}

// TestTransportPays checks that the Go client pays a 402 once, replays the
// body, and exposes the settlement.
func TestTransportPays(t *testing.T) {
	e := newMWEnv(t)
	cnt := &clCounting{base: http.DefaultTransport}
	c := client.New(clSigner(t), client.WithBase(cnt))
	resp, body, err := clGet(t, c, "POST", e.srv.URL+"/tool?x=go", `{"n":1}`)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 {
		t.Fatalf("status %d: %s", resp.StatusCode, body)
	}
	var m map[string]any
	if err := json.Unmarshal(body, &m); err != nil || m["x"] != "go" || m["body"] != `{"n":1}` {
		t.Fatalf("body %s (%v)", body, err)
	}
	sr, err := client.PaymentResponse(resp)
	if err != nil || !sr.Success || sr.Network != x402.NetworkBase || !strings.EqualFold(sr.Payer, mwPayer) {
		t.Fatalf("PaymentResponse %+v, %v", sr, err)
	}
	if cnt.requests.Load() != 2 || cnt.payments.Load() != 1 || e.runs.Load() != 1 || e.fac.settles.Load() != 1 {
		t.Fatalf("requests %d payments %d runs %d settles %d", cnt.requests.Load(), cnt.payments.Load(), e.runs.Load(), e.fac.settles.Load())
	}
	// A free answer passes through untouched, with no payment response.
	resp, _, err = clGet(t, c, "GET", e.srv.URL+"/free", "")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("free: %v", err)
	}
	if _, err := client.PaymentResponse(resp); !errors.Is(err, client.ErrNoPaymentResponse) {
		t.Fatalf("PaymentResponse of a free answer: %v", err)
	}
}

// TestTransportPaysOnce checks that the client never pays twice: a second
// 402 is returned as is, and a request already carrying a payment is sent
// without paying.
func TestTransportPaysOnce(t *testing.T) {
	e := newMWEnv(t)
	e.fac.set(func(f *mwFacilitator) {
		f.verifyResp = &x402.VerifyResponse{IsValid: false, InvalidReason: "invalid_exact_evm_insufficient_balance"}
	})
	cnt := &clCounting{base: http.DefaultTransport}
	c := client.New(clSigner(t), client.WithBase(cnt))
	resp, _, err := clGet(t, c, "GET", e.srv.URL+"/tool", "")
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 402 || cnt.requests.Load() != 2 || cnt.payments.Load() != 1 {
		t.Fatalf("status %d requests %d payments %d", resp.StatusCode, cnt.requests.Load(), cnt.payments.Load())
	}
	pr, err := client.PaymentRequiredOf(resp)
	if err != nil || pr.Error != "invalid_exact_evm_insufficient_balance" {
		t.Fatalf("refusal reason %q, %v", pr.Error, err)
	}
	req, _ := http.NewRequest("GET", e.srv.URL+"/tool", nil)
	req.Header.Set(x402.HeaderPaymentSignature, "e30=")
	resp, err = c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 400 || cnt.requests.Load() != 3 || cnt.payments.Load() != 2 {
		t.Fatalf("pre-paid request: status %d requests %d", resp.StatusCode, cnt.requests.Load())
	}
}

// TestTransportRefuses checks the typed errors when no requirement is
// acceptable; nothing is signed or sent again.
func TestTransportRefuses(t *testing.T) {
	e := newMWEnv(t)
	cases := []struct {
		name string
		opts []client.Option
		want error
	}{
		{"amount over dollars", []client.Option{client.WithMaxAmount("$0.002")}, client.ErrAmountOverMax},
		{"amount over atomic", []client.Option{client.WithMaxAmount("2499")}, client.ErrAmountOverMax},
		{"network", []client.Option{client.WithNetworks(x402.NetworkBaseSepolia)}, client.ErrNetworkNotAllowed},
		{"asset", []client.Option{client.WithAssets(mwOther)}, client.ErrAssetNotAllowed},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cnt := &clCounting{base: http.DefaultTransport}
			c := client.New(clSigner(t), append(tc.opts, client.WithBase(cnt))...)
			_, _, err := clGet(t, c, "GET", e.srv.URL+"/tool", "")
			var nae *client.NoAcceptableError
			if !errors.Is(err, client.ErrNoAcceptableRequirements) || !errors.Is(err, tc.want) || !errors.As(err, &nae) || len(nae.Rejected) != 1 {
				t.Fatalf("err %v, want %v", err, tc.want)
			}
			if cnt.requests.Load() != 1 || cnt.payments.Load() != 0 {
				t.Fatalf("requests %d payments %d", cnt.requests.Load(), cnt.payments.Load())
			}
		})
	}
	for _, max := range []string{"2500", "$0.0025", "$1"} {
		c := client.New(clSigner(t), client.WithMaxAmount(max))
		resp, body, err := clGet(t, c, "GET", e.srv.URL+"/tool?x="+max, "")
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("max %s: %v %s", max, err, body)
		}
	}
	if _, _, err := clGet(t, client.New(clSigner(t), client.WithMaxAmount("lots")), "GET", e.srv.URL+"/tool", ""); err == nil {
		t.Fatal("a malformed MaxAmount was accepted")
	}
	if _, _, err := clGet(t, client.New(nil), "GET", e.srv.URL+"/tool", ""); !errors.Is(err, client.ErrNoSigner) {
		t.Fatalf("no signer: %v", err)
	}
	if e.runs.Load() != 3 {
		t.Fatalf("runs %d, want 3", e.runs.Load())
	}
}

// clV1Only hides PAYMENT-REQUIRED from the middleware's answers, turning
// the server into a v1-only one from the client's point of view.
type clV1Only struct{ http.ResponseWriter }

func (w clV1Only) WriteHeader(status int) {
	w.Header().Del(x402.HeaderPaymentRequired)
	w.ResponseWriter.WriteHeader(status)
}

// TestTransportV1Fallback checks that without PAYMENT-REQUIRED the client
// reads the v1 body and pays with X-PAYMENT.
func TestTransportV1Fallback(t *testing.T) {
	e := newMWEnv(t)
	v1 := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get(x402.HeaderPaymentSignature) != "" {
			http.Error(w, "v2 payment sent to a v1 server", http.StatusTeapot)
			return
		}
		proxy, _ := http.NewRequest(r.Method, e.srv.URL+r.URL.RequestURI(), r.Body)
		proxy.Header = r.Header.Clone()
		resp, err := http.DefaultTransport.RoundTrip(proxy)
		if err != nil {
			http.Error(w, err.Error(), 502)
			return
		}
		defer resp.Body.Close()
		for k, v := range resp.Header {
			w.Header()[k] = v
		}
		cw := clV1Only{w}
		cw.WriteHeader(resp.StatusCode)
		_, _ = io.Copy(w, resp.Body)
	}))
	t.Cleanup(v1.Close)
	c := client.New(clSigner(t))
	resp, body, err := clGet(t, c, "GET", v1.URL+"/tool?x=v1", "")
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("v1: %v %s", err, body)
	}
	sr, err := client.PaymentResponse(resp)
	if err != nil || !sr.Success || sr.Network != "base" {
		t.Fatalf("X-PAYMENT-RESPONSE %+v %v", sr, err)
	}
	if ev := e.events(); len(ev) != 1 || ev[0].X402Version != 1 {
		t.Fatalf("events %+v", ev)
	}
}

// TestTransportOther402 checks that a 402 without x402 content is handed
// back untouched, and that a broken PAYMENT-REQUIRED is a typed error.
func TestTransportOther402(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/broken" {
			w.Header().Set(x402.HeaderPaymentRequired, "!!!")
		}
		w.WriteHeader(402)
		_, _ = io.WriteString(w, "pay me somehow")
	}))
	t.Cleanup(srv.Close)
	c := client.New(clSigner(t))
	resp, body, err := clGet(t, c, "GET", srv.URL+"/plain", "")
	if err != nil || resp.StatusCode != 402 || string(body) != "pay me somehow" {
		t.Fatalf("plain 402: %v %q", err, body)
	}
	if _, _, err := clGet(t, c, "GET", srv.URL+"/broken", ""); !errors.Is(err, client.ErrInvalidPaymentRequired) {
		t.Fatalf("broken header: %v", err)
	}
}

// TestTransportChoosesFirstAcceptable checks the choice among several
// offers and the reasons given for the others.
func TestTransportChoosesFirstAcceptable(t *testing.T) {
	base, err := x402.Route{Price: "0.01", PayTo: mwPayTo}.Requirements()
	if err != nil {
		t.Fatal(err)
	}
	sepolia, _ := x402.Route{Price: "0.01", PayTo: mwPayTo, Network: "base-sepolia"}.Requirements()
	upto := base
	upto.Scheme = "upto"
	noDomain := base
	noDomain.Extra = nil
	dear, _ := x402.Route{Price: "5", PayTo: mwPayTo}.Requirements()
	tr := &client.Transport{}
	i, err := tr.Choose([]x402.PaymentRequirements{upto, sepolia, noDomain, dear, base})
	if err != nil || i != 4 {
		t.Fatalf("Choose = %d, %v", i, err)
	}
	_, err = tr.Choose([]x402.PaymentRequirements{upto, sepolia, noDomain, dear})
	var nae *client.NoAcceptableError
	if !errors.As(err, &nae) || len(nae.Rejected) != 4 {
		t.Fatalf("err %v", err)
	}
	for i, want := range []error{client.ErrSchemeNotSupported, client.ErrNetworkNotAllowed, client.ErrInvalidRequirements, client.ErrAmountOverMax} {
		if !errors.Is(nae.Rejected[i].Err, want) || nae.Rejected[i].Index != i {
			t.Errorf("rejected[%d] = %+v, want %v", i, nae.Rejected[i], want)
		}
	}
	tr.Networks = []string{"base-sepolia", "base"}
	if i, err := tr.Choose([]x402.PaymentRequirements{sepolia, base}); err != nil || i != 0 {
		t.Fatalf("two networks allowed: %d %v", i, err)
	}
}

// TestSignerHidesKey checks that no formatting or logging of a Signer
// shows the private key.
func TestSignerHidesKey(t *testing.T) {
	s := clSigner(t)
	if s.Address() != mwPayer {
		t.Fatalf("address %s", s.Address())
	}
	var logged bytes.Buffer
	slog.New(slog.NewJSONHandler(&logged, nil)).Info("pay", "signer", s)
	outputs := []string{
		fmt.Sprintf("%v|%+v|%#v|%s", s, s, s, s),
		fmt.Sprintf("%v|%+v|%#v", *s, *s, *s),
		logged.String(),
	}
	if b, err := json.Marshal(s); err == nil {
		outputs = append(outputs, string(b))
	}
	k := mwKey(t)
	for _, out := range outputs {
		if strings.Contains(strings.ToLower(out), mwKeyHex) || strings.Contains(out, k.D.String()) {
			t.Fatalf("the private key leaks: %s", out)
		}
	}
	if !strings.Contains(outputs[0], mwPayer) || !strings.Contains(outputs[2], mwPayer) {
		t.Fatalf("the address is not shown: %v", outputs)
	}
	if _, err := client.ParseSigner(mwKeyHex[:60] + "zzzz"); err == nil || strings.Contains(err.Error(), mwKeyHex[:60]) {
		t.Fatalf("ParseSigner error %v", err)
	}
	if _, err := client.NewSigner(nil); err == nil {
		t.Fatal("nil key accepted")
	}
	p, err := s.NewPayload(x402.PaymentRequirements{Scheme: "exact", Network: x402.NetworkBase, Amount: "1", Asset: "0x833589fCD6eDb6E08f4c7C32D4f71b54bdA02913", PayTo: mwPayTo, MaxTimeoutSeconds: 60, Extra: map[string]any{"name": "USD Coin", "version": "2"}}, time.Now(), 0)
	if err != nil || !strings.EqualFold(p.Authorization.From, mwPayer) {
		t.Fatalf("NewPayload: %+v %v", p, err)
	}
}

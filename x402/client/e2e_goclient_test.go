package client_test

import (
	"encoding/json"
	"io"
	"math/big"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/seed1284c1d2/svc/x402"
	"github.com/seed1284c1d2/svc/x402/client"
	"github.com/seed1284c1d2/svc/x402/exact"
)

// e2eTamper is the Go client's counterpart of the attack modes of
// e2e/pay-v2.mjs: a round tripper under the Transport that rewrites the
// payment it sends, and remembers the header it sent.
type e2eTamper struct {
	base http.RoundTripper
	fn   func(p *x402.PaymentPayload) error

	mu   sync.Mutex
	sent string
}

func (e *e2eTamper) RoundTrip(r *http.Request) (*http.Response, error) {
	h := r.Header.Get(x402.HeaderPaymentSignature)
	if h != "" && e.fn != nil {
		p, err := x402.DecodePaymentPayload(h)
		if err != nil {
			return nil, err
		}
		if err := e.fn(&p); err != nil {
			return nil, err
		}
		if h, err = x402.EncodeHeader(p); err != nil {
			return nil, err
		}
		r = r.Clone(r.Context())
		r.Header.Set(x402.HeaderPaymentSignature, h)
	}
	if h != "" {
		e.mu.Lock()
		e.sent = h
		e.mu.Unlock()
	}
	return e.base.RoundTrip(r)
}

// e2eEditAuthorization changes the signed authorization without signing
// again.
func e2eEditAuthorization(edit func(a *exact.Authorization)) func(p *x402.PaymentPayload) error {
	return func(p *x402.PaymentPayload) error {
		ep, err := exact.ParseExactEVMPayload(p.Payload)
		if err != nil {
			return err
		}
		edit(&ep.Authorization)
		p.Payload, err = json.Marshal(ep)
		return err
	}
}

// e2eSignOther signs, with the payer's key, a payment of other instead of
// the accepted requirement; presentOther also claims other as accepted.
func e2eSignOther(t *testing.T, other x402.PaymentRequirements, presentOther bool) func(p *x402.PaymentPayload) error {
	key := mwKey(t)
	return func(p *x402.PaymentPayload) error {
		ep, err := exact.NewPayload(key, other, time.Now(), 0)
		if err != nil {
			return err
		}
		if p.Payload, err = json.Marshal(ep); err != nil {
			return err
		}
		if presentOther {
			p.Accepted = other
		}
		return nil
	}
}

// e2eGoRun runs one scenario with the Go Transport.
func e2eGoRun(t *testing.T, s *e2eServer, mode, caseID string) e2eResult {
	t.Helper()
	base := mwTerms(t).PaymentRequired.Accepts[0]
	tamper := &e2eTamper{base: http.DefaultTransport}
	tr := &client.Transport{Base: tamper, Signer: clSigner(t)}
	switch mode {
	case "pay", "replay", "replay-same":
	case "tamper-value":
		tamper.fn = e2eEditAuthorization(func(a *exact.Authorization) {
			v, _ := new(big.Int).SetString(a.Value, 10)
			a.Value = v.Sub(v, big.NewInt(1)).String()
		})
	case "tamper-deadline":
		tamper.fn = e2eEditAuthorization(func(a *exact.Authorization) {
			v, _ := new(big.Int).SetString(a.ValidBefore, 10)
			a.ValidBefore = v.Add(v, big.NewInt(3600)).String()
		})
	case "tamper-accepted":
		cheap := base
		cheap.Amount = "1"
		tamper.fn = e2eSignOther(t, cheap, true)
	case "wrong-recipient":
		other := base
		other.PayTo = mwOther
		tamper.fn = e2eSignOther(t, other, false)
	case "expired":
		tr.Now = func() time.Time { return time.Now().Add(-2 * time.Hour) }
	case "wrong-network":
		sepolia, err := x402.Route{Price: mwPrice, PayTo: mwPayTo, Network: x402.NetworkBaseSepolia}.Requirements()
		if err != nil {
			t.Fatal(err)
		}
		tamper.fn = e2eSignOther(t, sepolia, true)
	default:
		t.Fatalf("unknown mode %q", mode)
	}
	first := e2eGoDo(t, &http.Client{Transport: tr}, s.url(caseID), "")
	if mode != "replay" && mode != "replay-same" {
		return first
	}
	tamper.mu.Lock()
	sent := tamper.sent
	tamper.mu.Unlock()
	if sent == "" {
		t.Fatal(e2eErrNoPayment)
	}
	target := s.url(caseID)
	if mode == "replay" {
		target = s.url(caseID + "-2")
	}
	again := e2eGoDo(t, http.DefaultClient, target, sent)
	again.First = &first
	return again
}

// e2eGoDo sends a GET (with a payment header when given) and reports as
// the e2e/ scripts do.
func e2eGoDo(t *testing.T, c *http.Client, url, payment string) e2eResult {
	t.Helper()
	req, err := http.NewRequest("GET", url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if payment != "" {
		req.Header.Set(x402.HeaderPaymentSignature, payment)
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	res := e2eResult{Status: resp.StatusCode, Body: body, ExposeHeaders: resp.Header.Get("Access-Control-Expose-Headers")}
	if sr, err := client.PaymentResponse(resp); err == nil {
		res.PaymentResponse = sr
	}
	if resp.StatusCode == http.StatusPaymentRequired {
		if pr, err := client.PaymentRequiredOf(resp); err == nil {
			res.PaymentRequired = &pr
		}
	}
	return res
}

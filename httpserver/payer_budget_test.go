package httpserver_test

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/seed1284c1d2/svc/tools"
	"github.com/seed1284c1d2/svc/x402"
	"github.com/seed1284c1d2/svc/x402/client"
	"github.com/seed1284c1d2/svc/x402/exact"
)

// catastrophic is a regex_test input that runs into its time limit.
var catastrophic = `{"pattern":"(a+)+$","text":"` + strings.Repeat("a", 40) + `!"}`

// paidWith sends req with the PAYMENT-SIGNATURE header.
func paidWith(t *testing.T, req *http.Request, header string) (*http.Response, []byte) {
	t.Helper()
	req.Header.Set(x402.HeaderPaymentSignature, header)
	return do(t, req)
}

// TestPayerTimeoutsThrottled: a payer whose paid calls keep timing out on
// its own pathological input, each with a fresh authorization, is answered
// 429 with Retry-After, before the tool runs again, once its budget is
// spent; nothing is settled, and other payers are not affected.
func TestPayerTimeoutsThrottled(t *testing.T) {
	const burst, calls = 3, 200
	f := newFixture(t, fixtureOptions{env: tools.Env{RegexTimeout: 20 * time.Millisecond}, payerBurst: burst, payerRefill: time.Hour})
	regex := f.tool(t, "regex-test")
	attacker := newPayer(t)
	offer := func() x402.PaymentRequirements {
		resp, body := do(t, f.request(t, regex, catastrophic))
		pr, err := client.PaymentRequiredOf(resp)
		if err != nil || resp.StatusCode != http.StatusPaymentRequired {
			t.Fatalf("offer: %d %v %s", resp.StatusCode, err, body)
		}
		return pr.Accepts[0]
	}()

	statuses := map[int]int{}
	for range calls {
		resp, body := paidWith(t, f.request(t, regex, catastrophic), signedHeader(t, attacker, offer, nil))
		statuses[resp.StatusCode]++
		if resp.StatusCode == http.StatusTooManyRequests {
			p := mustProblem(t, resp, body, http.StatusTooManyRequests)
			if p.Code != "rate_limited" || resp.Header.Get("Retry-After") == "" || !strings.Contains(p.Detail, "nothing was run or charged") {
				t.Fatalf("throttled answer: %s (Retry-After %q)", body, resp.Header.Get("Retry-After"))
			}
		}
	}
	// Each 504 is one run of the tool: the runs stop at the budget.
	if statuses[http.StatusGatewayTimeout] != burst || statuses[http.StatusTooManyRequests] != calls-burst {
		t.Fatalf("statuses %v, want %d × 504 then 429", statuses, burst)
	}
	// A cheap call of the same payer is throttled too: the budget is the
	// payer's, not the input's.
	resp, body := pay(t, attacker, f.request(t, regex, `{"pattern":"a","text":"a"}`))
	mustProblem(t, resp, body, http.StatusTooManyRequests)

	// Another payer's calls run: its own timed-out call, then a good one.
	other := newPayer(t)
	resp, body = pay(t, other, f.request(t, regex, catastrophic))
	mustProblem(t, resp, body, http.StatusGatewayTimeout)
	resp, body = pay(t, other, f.request(t, regex, `{"pattern":"a","text":"a"}`))
	if resp.StatusCode != http.StatusOK || resp.Header.Get(x402.HeaderPaymentResponse) == "" {
		t.Fatalf("another payer: %d %s", resp.StatusCode, body)
	}
	if n := len(f.local.Settlements()); n != 1 {
		t.Fatalf("%d settlements, want 1", n)
	}
	if v, ok := scrape(t, f.url+"/metrics").value("svc_rate_limited_total", nil); !ok || v != calls-burst+1 {
		t.Fatalf("svc_rate_limited_total %v, want the throttled payer's %d calls", v, calls-burst+1)
	}
}

// TestPayerTimeoutsAtOnceBounded: the same attack with every authorization
// sent at once: the runs are bounded by the payer's budget and its calls at
// once, the other calls answered 429.
func TestPayerTimeoutsAtOnceBounded(t *testing.T) {
	const burst, concurrency, calls = 3, 4, 100
	f := newFixture(t, fixtureOptions{env: tools.Env{RegexTimeout: 20 * time.Millisecond},
		payerBurst: burst, payerRefill: time.Hour, payerConcurrency: concurrency})
	regex := f.tool(t, "regex-test")
	attacker := newPayer(t)
	resp, body := do(t, f.request(t, regex, catastrophic))
	pr, err := client.PaymentRequiredOf(resp)
	if err != nil {
		t.Fatalf("offer: %v %s", err, body)
	}
	headers := make([]string, calls)
	for i := range headers {
		headers[i] = signedHeader(t, attacker, pr.Accepts[0], nil)
	}
	var mu sync.Mutex
	statuses := map[int]int{}
	var wg sync.WaitGroup
	start := make(chan struct{})
	for _, h := range headers {
		req := f.request(t, regex, catastrophic)
		wg.Go(func() {
			<-start
			req.Header.Set(x402.HeaderPaymentSignature, h)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Error(err)
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			mu.Lock()
			statuses[resp.StatusCode]++
			mu.Unlock()
		})
	}
	close(start)
	wg.Wait()
	// A run starts while the payer has a token and fewer than concurrency
	// calls running, and a token is taken when a run fails.
	runs := statuses[http.StatusGatewayTimeout]
	if runs < burst || runs > burst-1+concurrency || runs+statuses[http.StatusTooManyRequests] != calls {
		t.Fatalf("statuses %v, want %d to %d runs (504), the rest 429", statuses, burst, burst-1+concurrency)
	}
	if n := len(f.local.Settlements()); n != 0 {
		t.Fatalf("%d settlements", n)
	}
}

// TestRetryReformattedGetsRecordedAnswer: the same payment sent again with
// the same input formatted otherwise (spaces, a trailing newline, members
// in another order, query parameters in another order) gets the recorded
// answer, with no second settlement; with another value it is refused as a
// used authorization.
func TestRetryReformattedGetsRecordedAnswer(t *testing.T) {
	f := newFixture(t, fixtureOptions{})
	payer := newPayer(t)

	evm := f.tool(t, "evm-address-syntax")
	const address = "0xaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	first := f.request(t, evm, `{"address":"`+address+`"}`)
	header := paymentHeader(t, payer, first)
	resp, answer := paidWith(t, first, header)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("first call: %d %s", resp.StatusCode, answer)
	}
	receipt := resp.Header.Get(x402.HeaderPaymentResponse)
	for _, body := range []string{
		`{"address": "` + address + `"}`,
		`{"address":"` + address + `"}` + "\n",
		"\t{\r\n  \"address\" :\n\"" + address + "\"\n}\n",
	} {
		resp, got := paidWith(t, f.request(t, evm, body), header)
		if resp.StatusCode != http.StatusOK || !bytes.Equal(got, answer) || resp.Header.Get(x402.HeaderPaymentResponse) != receipt {
			t.Fatalf("retry with %q: %d %s", body, resp.StatusCode, got)
		}
	}

	risk := f.tool(t, "risk-levels")
	first = f.request(t, risk, `{"entry":3500,"direction":"long","slPct":0.05,"tpPct":0.04}`)
	header = paymentHeader(t, payer, first)
	resp, answer = paidWith(t, first, header)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("first call: %d %s", resp.StatusCode, answer)
	}
	for _, body := range []string{
		`{"tpPct":0.04,"slPct":0.05,"direction":"long","entry":3500}`,
		`{ "direction" : "long", "entry" : 3500.0, "tpPct" : 0.040, "slPct" : 0.05 }` + "\n",
	} {
		resp, got := paidWith(t, f.request(t, risk, body), header)
		if resp.StatusCode != http.StatusOK || !bytes.Equal(got, answer) {
			t.Fatalf("retry with %q: %d %s", body, resp.StatusCode, got)
		}
	}
	resp, got := paidWith(t, f.request(t, risk, `{"entry":3501,"direction":"long","slPct":0.05,"tpPct":0.04}`), header)
	wantUsed(t, resp, got)

	bars := f.tool(t, "xau-bars")
	first = f.rawQueryRequest(t, bars.Path, "timeframe=M5&count=20")
	header = paymentHeader(t, payer, first)
	resp, answer = paidWith(t, first, header)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("first call: %d %s", resp.StatusCode, answer)
	}
	resp, got = paidWith(t, f.rawQueryRequest(t, bars.Path, "count=20&timeframe=M5"), header)
	if resp.StatusCode != http.StatusOK || !bytes.Equal(got, answer) {
		t.Fatalf("retry with the parameters reordered: %d %s", resp.StatusCode, got)
	}
	resp, got = paidWith(t, f.rawQueryRequest(t, bars.Path, "count=21&timeframe=M5"), header)
	wantUsed(t, resp, got)

	if n := len(f.local.Settlements()); n != 3 {
		t.Fatalf("%d settlements, want 3", n)
	}
}

// wantUsed checks a 402 refusing a used authorization.
func wantUsed(t *testing.T, resp *http.Response, body []byte) {
	t.Helper()
	pr, err := client.PaymentRequiredOf(resp)
	if resp.StatusCode != http.StatusPaymentRequired || err != nil || pr.Error != exact.ReasonNonceAlreadyUsed {
		t.Fatalf("another value with the same payment: %d %+v %v %s", resp.StatusCode, pr, err, body)
	}
}

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"

	"github.com/seed1284c1d2/svc/x402"
)

// startDevServe runs `svc serve` in dev mode in this process and returns
// its base URL.
func startDevServe(t *testing.T) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	stderr := &lockedBuffer{}
	done := make(chan struct{})
	var code int
	go func() {
		defer close(done)
		code = run(ctx, []string{"serve", "--addr", "127.0.0.1:0", "--db", t.TempDir() + "/svc.db", "--unpaid-rate", "-1"}, io.Discard, stderr, envOf(nil))
	}()
	t.Cleanup(func() {
		cancel()
		<-done
		if code != 0 {
			t.Errorf("serve exit %d:\n%s", code, stderr.String())
		}
	})
	return waitListening(t, stderr, done)
}

// TestPayAnyServer: svc pay pays one request with curl's habits (-d, -H,
// -X), prints the body and a line about the payment, answers a retry of
// the same call again, prints the offer without paying on --dry-run, and
// refuses a price over the cap without paying.
func TestPayAnyServer(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the server (skipped under -short)")
	}
	base := startDevServe(t)
	env := envOf(map[string]string{"PAY_TEST_KEY": randomKey(t)})
	body := `{"entry": 3500, "direction": "long", "slPct": 0.05, "tpPct": 0.04}`
	pay := func(args ...string) (int, string, string) {
		var out, errOut bytes.Buffer
		code := run(context.Background(), append([]string{"pay"}, args...), &out, &errOut, env)
		return code, out.String(), errOut.String()
	}

	code, out, errOut := pay("-d", body, "-H", "X-Test: 1", "--key-env", "PAY_TEST_KEY", base+"/api/risk-levels")
	if code != 0 || !strings.Contains(out, `"stop":3498.25`) || !strings.Contains(errOut, "svc pay: paid 0.005 USDC on eip155:8453") {
		t.Fatalf("svc pay: exit %d\nstdout %s\nstderr %s", code, out, errOut)
	}

	code, out, errOut = pay("--json", "-X", "GET", "--key-env", "PAY_TEST_KEY", base+"/api/session-state?dateTime=2026-01-05T10:00:00Z")
	var res payOutput
	if err := json.Unmarshal([]byte(out), &res); code != 0 || err != nil || res.Status != 200 || res.Settlement == nil || !res.Settlement.Success {
		t.Fatalf("svc pay --json: exit %d (%v)\n%s\n%s", code, err, out, errOut)
	}

	code, out, errOut = pay("--dry-run", "-d", body, base+"/api/risk-levels")
	res = payOutput{}
	if err := json.Unmarshal([]byte(out), &res); code != 0 || err != nil || res.Status != 402 || res.Offer == nil || res.WouldPay == nil ||
		res.WouldPay.Amount != "5000" || res.WouldPay.Scheme != x402.SchemeExact {
		t.Fatalf("svc pay --dry-run: exit %d (%v)\n%s\n%s", code, err, out, errOut)
	}
	if strings.Contains(errOut, "paid") {
		t.Fatalf("a dry run paid: %s", errOut)
	}

	code, out, errOut = pay("--max", "0.001", "-d", body, "--key-env", "PAY_TEST_KEY", base+"/api/risk-levels")
	if code != 2 || !strings.Contains(errOut, "over the spend cap of $0.001 (nothing was paid)") || out != "" {
		t.Fatalf("svc pay over the cap: exit %d\n%s\n%s", code, out, errOut)
	}

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--key-env", "PAY_TEST_KEY"}, "needs the URL"},
		{[]string{"--key-env", "PAY_TEST_KEY", "ftp://x"}, "is not an http(s) URL"},
		{[]string{base + "/api/risk-levels"}, "--key-env names"},
		{[]string{"--key-env", "PAY_TEST_KEY", "--scheme", "upto", base}, "pays \"exact\" or \"batch-settlement\" only"},
		{[]string{"--key-env", "PAY_TEST_KEY", "--refund", base}, "--deposit and --refund are for --scheme batch-settlement"},
		{[]string{"--key-env", "PAY_TEST_KEY", "--scheme", "batch-settlement", "--deposit", "lots", base}, "--deposit \"lots\" is not an amount of dollars"},
		{[]string{"--key-env", "PAY_TEST_KEY", "-H", "nocolon", base}, "want 'Name: value'"},
		{[]string{"--key-env", "PAY_TEST_KEY", "-d", "@/nonexistent/body.json", base}, "-d @/nonexistent/body.json"},
	} {
		if code, _, errOut := pay(tc.args...); code != 2 || !strings.Contains(errOut, tc.want) {
			t.Errorf("svc pay %v: exit %d, %q lacks %q", tc.args, code, errOut, tc.want)
		}
	}

	// svc call is for svc's catalog; a base URL ending in /api gets a hint.
	var o, e bytes.Buffer
	if code := run(context.Background(), []string{"call", "risk-levels", "--url", base + "/api", "--key-env", "PAY_TEST_KEY", "--json", body}, &o, &e, env); code != 2 ||
		!strings.Contains(e.String(), "--url takes the base URL without /api (e.g. --url "+base+")") || !strings.Contains(e.String(), "svc pay URL") {
		t.Fatalf("svc call --url …/api: exit %d: %s", code, e.String())
	}
}

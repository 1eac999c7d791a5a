package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/html"

	"github.com/seed1284c1d2/svc/club"
	"github.com/seed1284c1d2/svc/ledger"
	"github.com/seed1284c1d2/svc/store"
	"github.com/seed1284c1d2/svc/tools"
	"github.com/seed1284c1d2/svc/x402"
	"github.com/seed1284c1d2/svc/x402/client"
)

// envDashboardArtifacts names a directory where the dashboard test keeps
// its screenshot (default: the test's temporary directory).
const envDashboardArtifacts = "SVC_TEST_ARTIFACTS"

var adminRE = regexp.MustCompile(`admin: +http://(127\.0\.0\.1:[0-9]+)`)

// chromiumPath finds headless Chromium: skip without it, fail under CI.
func chromiumPath(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("chromium not found (install Debian's chromium package; .ci/run does)")
	}
	t.Skip("chromium not found: install Debian's chromium package to run the dashboard test")
	return ""
}

// chromium runs headless Chromium with args on u and returns its stdout.
func chromium(t *testing.T, bin, u string, args ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	all := append([]string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
		"--user-data-dir=" + t.TempDir(), "--hide-scrollbars"}, args...)
	cmd := exec.CommandContext(ctx, bin, append(all, u)...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium %v: %v\n%s", args, err, errOut.String())
	}
	return out.Bytes()
}

// payTool pays one call of the tool key on base with signer, ref as the
// referral code when not empty.
func payTool(t *testing.T, cat *tools.Catalog, base, key, ref string, signer *client.Signer) {
	t.Helper()
	tool, ok := cat.ByKey(key)
	if !ok {
		t.Fatalf("no tool %s", key)
	}
	target := base + tool.Path
	var body io.Reader
	q := url.Values{}
	if tool.Method == http.MethodGet {
		qq, err := tools.QueryOf(tool.ExampleInput)
		if err != nil {
			t.Fatal(err)
		}
		q = qq
	} else {
		body = bytes.NewReader(tool.ExampleInput)
	}
	if ref != "" {
		q.Set("ref", ref)
	}
	if len(q) > 0 {
		target += "?" + q.Encode()
	}
	req, err := http.NewRequest(tool.Method, target, body)
	if err != nil {
		t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := client.New(signer, client.WithMaxAmount("$0.10")).Do(req)
	if err != nil {
		t.Fatalf("paying %s: %v", key, err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get(x402.HeaderPaymentResponse) == "" {
		t.Fatalf("paid %s: %d %s", key, resp.StatusCode, b)
	}
}

// TestDashboardShowsTheLedger starts svc serve with an admin listener,
// pays real calls (the Go client, a real signature; dev mode settles
// nothing on chain), adds one on-chain settlement to the ledger, and loads
// the dashboard in headless Chromium: every revenue figure it shows is the
// one `svc ledger` prints for the same period. A screenshot is kept.
func TestDashboardShowsTheLedger(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the server and headless Chromium (skipped under -short)")
	}
	bin := chromiumPath(t)
	dir := t.TempDir()
	db := filepath.Join(dir, "svc.db")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stderr := &lockedBuffer{}
	done := make(chan struct{})
	var code int
	go func() {
		defer close(done)
		code = run(ctx, []string{"serve", "--addr", "127.0.0.1:0", "--admin-addr", "127.0.0.1:0", "--db", db}, io.Discard, stderr, envOf(nil))
	}()
	t.Cleanup(func() {
		cancel()
		<-done
		if code != 0 {
			t.Errorf("serve exit %d:\n%s", code, stderr.String())
		}
	})
	base := waitListening(t, stderr, done)
	m := adminRE.FindStringSubmatch(stderr.String())
	if m == nil {
		t.Fatalf("no admin listener in the log:\n%s", stderr.String())
	}
	admin := "http://" + m[1]

	// Metrics moved to the admin listener.
	if resp, err := http.Get(base + "/metrics"); err != nil || resp.StatusCode != http.StatusNotFound {
		t.Fatalf("public /metrics with --admin-addr: %v %v", resp, err)
	}

	cat, err := tools.New(tools.Options{})
	if err != nil {
		t.Fatal(err)
	}
	payer, err := client.ParseSigner(strings.TrimPrefix(randomKey(t), "0x"))
	if err != nil {
		t.Fatal(err)
	}
	referrer := "0x209693Bc6afc0C5328bA36FaF03C514EF312287C"
	ref, _ := club.ReferralCode(referrer)
	if resp, err := http.Post(base+"/api/risk-levels", "application/json", strings.NewReader(`{}`)); err == nil {
		resp.Body.Close() // an invalid call: 400, no 402
	}
	payTool(t, cat, base, "risk-levels", ref, payer)
	payTool(t, cat, base, "risk-levels", "", payer)
	payTool(t, cat, base, "evm-address-syntax", ref, payer)
	payTool(t, cat, base, "tick-pnl", "", payer)

	// One settlement made on chain (a real transaction hash), recorded in
	// the ledger as an import would.
	st, err := store.Open(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	baseNet, _ := x402.LookupNetwork(x402.NetworkBase)
	if _, err := st.Append(ctx, store.Settlement{Payer: payer.Address(), ToolKey: "risk-levels", Amount: "2500000",
		Asset: baseNet.USDC, Network: x402.NetworkBase, Transaction: "0x" + strings.Repeat("ab", 32),
		Nonce: "0x" + strings.Repeat("cd", 32), RefCode: ref, Route: "POST /api/risk-levels", Transport: "http", SettledAt: now}); err != nil {
		t.Fatal(err)
	}
	// And one charge to a batch-settlement channel (a voucher: no
	// transaction; its claim comes later).
	if _, err := st.Append(ctx, store.Settlement{Payer: payer.Address(), ToolKey: "tick-pnl", Amount: "1000",
		Asset: baseNet.USDC, Network: x402.NetworkBase, Nonce: "0x" + strings.Repeat("ef", 32) + ":1000:voucher",
		Route: "POST /api/tick-pnl", Transport: "http", SettledAt: now}); err != nil {
		t.Fatal(err)
	}
	_ = st.Close()

	from := now.Add(-48 * time.Hour).Format(ledger.DayLayout)
	to := now.Add(24 * time.Hour).Format(ledger.DayLayout)
	var out, errOut bytes.Buffer
	if c := run(ctx, []string{"ledger", "--db", db, "--from", from, "--to", to, "--format", "json"}, &out, &errOut, envOf(nil)); c != 0 {
		t.Fatalf("svc ledger exit %d: %s", c, errOut.String())
	}
	var rep ledger.Report
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("ledger json: %v\n%s", err, out.String())
	}
	if rep.Total.Calls != 2 || rep.Total.DevCalls != 4 || len(rep.Entries) != 6 || rep.Total.ChargeCalls != 1 || rep.Total.ChargeAmountUSDC != "0.001000" {
		t.Fatalf("ledger totals %+v (%d entries)", rep.Total, len(rep.Entries))
	}

	page := admin + "/?from=" + from + "&to=" + to
	doc, err := html.Parse(bytes.NewReader(chromium(t, bin, page, "--dump-dom")))
	if err != nil {
		t.Fatal(err)
	}
	d := dom{doc}
	for id, want := range map[string]string{
		"total-amount": rep.Total.AmountUSDC, "total-calls": itoa(rep.Total.Calls),
		"total-dev-amount": rep.Total.DevAmountUSDC, "total-dev-calls": itoa(rep.Total.DevCalls),
		"total-charge-amount": rep.Total.ChargeAmountUSDC, "total-charge-calls": itoa(rep.Total.ChargeCalls),
		"period-from": rep.From.Format(time.RFC3339), "period-to": rep.To.Format(time.RFC3339),
		"store-status": "up", "facilitator-status": "up", "terminal-status": "up",
	} {
		if got := d.textByID(id); got != want {
			t.Fatalf("dashboard #%s = %q, the ledger says %q", id, got, want)
		}
	}
	checkTotals := func(attr string, want []ledger.Total) {
		t.Helper()
		rows := d.rows(attr)
		if len(rows) != len(want) {
			t.Fatalf("dashboard has %d rows of %s, the ledger %d: %v", len(rows), attr, len(want), rows)
		}
		for _, w := range want {
			got := rows[w.Key]
			if got["calls"] != itoa(w.Calls) || got["amount"] != w.AmountUSDC || got["dev-calls"] != itoa(w.DevCalls) || got["dev-amount"] != w.DevAmountUSDC {
				t.Fatalf("dashboard %s %s = %v, the ledger says %+v", attr, w.Key, got, w)
			}
		}
	}
	checkTotals("data-tool", rep.ByTool)
	checkTotals("data-day", rep.ByDay)
	checkTotals("data-ref", rep.ByRef)
	if len(rep.ByRef) != 1 || rep.ByRef[0].Key != ref || rep.ByRef[0].Calls != 1 || rep.ByRef[0].DevCalls != 2 {
		t.Fatalf("ledger referral totals %+v", rep.ByRef)
	}

	// Conversion: the calls this server sold (its dev-mode rows) per tool,
	// and the 402s it offered (the client's first, unpaid try of each).
	conv := d.rows("data-route")
	served := map[string]int64{}
	for _, tt := range rep.ByTool {
		served[tt.Key] = tt.DevCalls
	}
	for _, key := range []string{"risk-levels", "evm-address-syntax", "tick-pnl"} {
		tool, _ := cat.ByKey(key)
		row := conv[tool.Path]
		if row["paid"] != itoa(served[key]) || row["required"] != itoa(served[key]) || row["rate"] != "100.0%" {
			t.Fatalf("conversion of %s: %v (served %d)", key, row, served[key])
		}
	}
	if got := d.rows("data-state")["settled"]["rows"]; got != "4" {
		t.Fatalf("journal settled rows %q, want 4", got)
	}

	// The free stats read the server's counters: the same 402s and paid
	// calls as the dashboard's conversion.
	var stats struct {
		PaymentRequired int64 `json:"paymentRequired"`
		Settled         int64 `json:"settled"`
	}
	if c := getJSON(t, base+"/api/amplifier/stats", &stats); c != http.StatusOK || stats.Settled != 4 || stats.PaymentRequired != 4 {
		t.Fatalf("stats %d %+v, want 4 paid calls after 4 402s", c, stats)
	}
	// The public OpenAPI document does not offer /metrics, now on the
	// admin listener.
	var oas struct {
		Paths map[string]any `json:"paths"`
	}
	if c := getJSON(t, base+"/openapi.json", &oas); c != http.StatusOK || oas.Paths["/metrics"] != nil || oas.Paths["/readyz"] == nil {
		t.Fatalf("openapi %d: /metrics %v, /readyz %v", c, oas.Paths["/metrics"] != nil, oas.Paths["/readyz"] != nil)
	}

	// The screenshot, kept as an artifact.
	shots := os.Getenv(envDashboardArtifacts)
	if shots == "" {
		shots = t.TempDir()
	} else if err := os.MkdirAll(shots, 0o755); err != nil {
		t.Fatal(err)
	}
	shot := filepath.Join(shots, "dashboard.png")
	chromium(t, bin, page, "--screenshot="+shot, "--window-size=1400,1800")
	png, err := os.ReadFile(shot)
	if err != nil || len(png) < 1000 || !bytes.HasPrefix(png, []byte("\x89PNG")) {
		t.Fatalf("screenshot %s: %v (%d bytes)", shot, err, len(png))
	}
	t.Logf("dashboard screenshot: %s", shot)
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// dom reads figures out of a parsed page.
type dom struct{ root *html.Node }

func (d dom) walk(f func(n *html.Node)) {
	var rec func(n *html.Node)
	rec = func(n *html.Node) {
		f(n)
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			rec(c)
		}
	}
	rec(d.root)
}

func attr(n *html.Node, name string) (string, bool) {
	for _, a := range n.Attr {
		if a.Key == name {
			return a.Val, true
		}
	}
	return "", false
}

func text(n *html.Node) string {
	var b strings.Builder
	var rec func(n *html.Node)
	rec = func(n *html.Node) {
		if n.Type == html.TextNode {
			b.WriteString(n.Data)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			rec(c)
		}
	}
	rec(n)
	return strings.TrimSpace(b.String())
}

// textByID is the text of the element with id.
func (d dom) textByID(id string) string {
	var out string
	d.walk(func(n *html.Node) {
		if v, ok := attr(n, "id"); ok && v == id && n.Type == html.ElementNode {
			out = text(n)
		}
	})
	return out
}

// rows maps the value of the attribute key of every <tr> carrying it to
// its cells' texts by class (the last class word).
func (d dom) rows(key string) map[string]map[string]string {
	out := map[string]map[string]string{}
	d.walk(func(n *html.Node) {
		if n.Type != html.ElementNode || n.Data != "tr" {
			return
		}
		k, ok := attr(n, key)
		if !ok {
			return
		}
		cells := map[string]string{}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			if c.Type == html.ElementNode && c.Data == "td" {
				if cls, ok := attr(c, "class"); ok {
					f := strings.Fields(cls)
					cells[f[len(f)-1]] = text(c)
				}
			}
		}
		out[k] = cells
	})
	return out
}

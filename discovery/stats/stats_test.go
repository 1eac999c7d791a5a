package stats

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/seed1284c1d2/svc/x402"
)

// testClock is a settable clock.
type testClock struct{ ns atomic.Int64 }

func (c *testClock) now() time.Time      { return time.Unix(0, c.ns.Load()).UTC() }
func (c *testClock) set(t time.Time)     { c.ns.Store(t.UnixNano()) }
func (c *testClock) add(d time.Duration) { c.ns.Add(int64(d)) }
func countOf(cs []Count, name string) int64 {
	for _, c := range cs {
		if c.Name == name {
			return c.Count
		}
	}
	return 0
}

func newReq(method, target, ua string) *http.Request {
	r := httptest.NewRequest(method, target, nil)
	if ua != "" {
		r.Header.Set("User-Agent", ua)
	}
	return r
}

func TestStatsCounts(t *testing.T) {
	var clk testClock
	clk.set(time.Date(2025, 6, 4, 13, 45, 0, 0, time.UTC))
	st := New(clk.now, nil)
	st.Observe("/api/find", newReq("GET", "/api/find?q=gold&src=Partner.One", "Mozilla/5.0 (X11) Gecko/20100101 Firefox/128.0"), 200)
	st.Observe("/api/find", newReq("GET", "/api/find?q=x&src=partner.one", "curl/8.5"), 400)
	st.Observe("/api/risk-levels", newReq("POST", "/api/risk-levels", "x402-fetch/2.27"), 402)
	paid := newReq("POST", "/api/risk-levels", "node")
	paid.Header.Set(x402.HeaderPaymentSignature, "eyJ4NDAyVmVyc2lvbiI6Mn0=")
	st.Observe("/api/risk-levels", paid, 200)
	st.Traffic().Route("/api/risk-levels", KindPaid).Settled()
	st.Observe("/mcp", newReq("POST", "/mcp", "python-httpx"), 200)
	st.Observe("/a2a", newReq("POST", "/a2a", ""), 200)
	st.Observe("", newReq("GET", "/nope", "Googlebot/2.1"), 404)
	st.Observe("/.well-known/x402", newReq("GET", "/.well-known/x402", "Mozilla/5.0 (compatible; bingbot/2.0)"), 304)
	st.Traffic().Route("/mcp", KindFree).PaymentRequired() // a payment asked for over MCP
	clk.add(10 * time.Second)

	snap := st.Snapshot("amplifier", "test")
	if !snap.OK || snap.Surface != "amplifier" || snap.Purpose != "test" || snap.Since != "2025-06-04T13:45:00Z" || snap.UptimeSeconds != 10 {
		t.Errorf("header: %+v", snap)
	}
	if snap.Requests != 8 || snap.RequestsPerMinute != 8 || snap.PaymentRequired != 2 || snap.Settled != 1 {
		t.Errorf("requests %d rpm %d 402 %d settled %d", snap.Requests, snap.RequestsPerMinute, snap.PaymentRequired, snap.Settled)
	}
	if countOf(snap.Routes, "/api/find") != 2 || countOf(snap.Routes, "/api/risk-levels") != 2 || countOf(snap.Routes, "unmatched") != 1 {
		t.Errorf("routes %v", snap.Routes)
	}
	if snap.Routes[0].Count < snap.Routes[len(snap.Routes)-1].Count {
		t.Errorf("routes not sorted by count: %v", snap.Routes)
	}
	if countOf(snap.Sources, "partner.one") != 2 || len(snap.Sources) != 1 {
		t.Errorf("sources %v", snap.Sources)
	}
	wantKinds := map[string]int64{ClientBrowser: 1, ClientOther: 1, ClientX402: 2, ClientMCP: 1, ClientA2A: 1, ClientCrawler: 2}
	for k, n := range wantKinds {
		if snap.Clients[k] != n {
			t.Errorf("clients[%s] = %d, want %d (%v)", k, snap.Clients[k], n, snap.Clients)
		}
	}
	if len(snap.Clients) != 6 {
		t.Errorf("clients %v", snap.Clients)
	}
	if snap.Status["2xx"] != 4 || snap.Status["4xx"] != 3 || snap.Status["3xx"] != 1 {
		t.Errorf("status %v", snap.Status)
	}
	if snap.DiscoveryHits != 1 {
		t.Errorf("discovery hits %d", snap.DiscoveryHits)
	}
}

func TestStatsSlidingMinute(t *testing.T) {
	var clk testClock
	t0 := time.Date(2025, 6, 4, 13, 45, 0, 0, time.UTC)
	clk.set(t0)
	st := New(clk.now, nil)
	obs := func(n int) {
		for range n {
			st.Observe("/api/find", nil, 200)
		}
	}
	rpm := func() int64 { return st.Snapshot("x", "").RequestsPerMinute }
	obs(5)
	clk.add(30 * time.Second)
	obs(3)
	if got := rpm(); got != 8 {
		t.Errorf("at +30 s: %d, want 8", got)
	}
	clk.set(t0.Add(59 * time.Second))
	if got := rpm(); got != 8 {
		t.Errorf("at +59 s: %d, want 8", got)
	}
	clk.set(t0.Add(60 * time.Second))
	if got := rpm(); got != 3 {
		t.Errorf("at +60 s: %d, want 3 (the first second left the window)", got)
	}
	obs(2) // reuses the bucket of t0 (same second modulo 60)
	if got := rpm(); got != 5 {
		t.Errorf("at +60 s after 2 more: %d, want 5", got)
	}
	clk.set(t0.Add(91 * time.Second))
	if got := rpm(); got != 2 {
		t.Errorf("at +91 s: %d, want 2", got)
	}
	clk.set(t0.Add(10 * time.Minute))
	if got := rpm(); got != 0 {
		t.Errorf("after 10 min: %d, want 0", got)
	}
	if st.Snapshot("x", "").Requests != 10 {
		t.Error("the total is not a window")
	}
}

func TestStatsSourceCap(t *testing.T) {
	st := New(nil, nil)
	for i := range MaxSources + 50 {
		st.Observe("/api/try", newReq("GET", fmt.Sprintf("/api/try?src=agent-%d", i), ""), 200)
	}
	st.Observe("/api/try", newReq("GET", "/api/try?src=agent-0", ""), 200)
	snap := st.Snapshot("x", "")
	if len(snap.Sources) != MaxSources+1 {
		t.Fatalf("%d sources, want %d + other", len(snap.Sources), MaxSources)
	}
	if countOf(snap.Sources, "other") != 50 || countOf(snap.Sources, "agent-0") != 2 {
		t.Errorf("other %d agent-0 %d", countOf(snap.Sources, "other"), countOf(snap.Sources, "agent-0"))
	}
	if snap.Sources[len(snap.Sources)-1].Name != "other" {
		t.Error("other is not last")
	}
}

func TestSanitizeSource(t *testing.T) {
	cases := map[string]string{
		"Partner.One":    "partner.one",
		"news_letter-7":  "news_letter-7",
		"<script>x</sc>": "scriptxsc",
		"0x209693Bc6afc0C5328bA36FaF03C514EF312287C": "redacted",
		"wallet-209693bc6afc0c5328":                  "redacted",
		"alice@example.com":                          "redacted",
		"!!!":                                        "invalid",
		strings.Repeat("z", 100):                     strings.Repeat("z", MaxSourceLen),
		strings.Repeat("a", 16):                      "redacted",
		"ünïcode":                                    "ncode",
		"deadbeef-cafe":                              "deadbeef-cafe",
	}
	for in, want := range cases {
		if got := SanitizeSource(in); got != want {
			t.Errorf("SanitizeSource(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestClientKind(t *testing.T) {
	cases := []struct{ route, ua, want string }{
		{"/mcp", "anything", ClientMCP},
		{"/a2a", "", ClientA2A},
		{"/api/find", "mcp-remote/0.1", ClientMCP},
		{"/api/find", "@modelcontextprotocol/sdk", ClientMCP},
		{"/api/find", "a2a-js/1.3.0", ClientA2A},
		{"/api/find", "x402-axios/2.0", ClientX402},
		{"/api/find", "Mozilla/5.0 (Macintosh) AppleWebKit/605.1.15 Version/17.0 Safari/605.1.15", ClientBrowser},
		{"/api/find", "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)", ClientCrawler},
		{"/api/find", "Mozilla/5.0 HeadlessChrome/120", ClientCrawler},
		{"/api/find", "zgrab/0.x censys scanner", ClientCrawler},
		{"/api/find", "curl/8.5.0", ClientOther},
		{"/api/find", "", ClientOther},
	}
	for _, c := range cases {
		if got := ClientKind(newReq("GET", "/x", c.ua), c.route); got != c.want {
			t.Errorf("%s %q: %s, want %s", c.route, c.ua, got, c.want)
		}
	}
	r := newReq("GET", "/x", "Mozilla/5.0 Chrome/120")
	r.Header.Set(x402.HeaderV1Payment, "e30=")
	if ClientKind(r, "/api/xau/quote") != ClientX402 {
		t.Error("X-PAYMENT is an x402 client")
	}
}

func TestStatsMiddleware(t *testing.T) {
	st := New(nil, nil)
	mux := http.NewServeMux()
	mux.HandleFunc("POST /api/risk-levels", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get(x402.HeaderPaymentSignature) == "" {
			w.WriteHeader(http.StatusPaymentRequired)
			return
		}
		w.Header().Set(x402.HeaderPaymentResponse, "eyJzdWNjZXNzIjp0cnVlfQ==")
		_, _ = w.Write([]byte(`{}`))
	})
	mux.HandleFunc("GET /api/club/referral/{code}", func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte(`{}`)) })
	srv := httptest.NewServer(st.Middleware(mux))
	defer srv.Close()
	send := func(method, path string, hdr map[string]string) {
		req, _ := http.NewRequest(method, srv.URL+path, nil)
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	send("POST", "/api/risk-levels", nil)
	send("POST", "/api/risk-levels", map[string]string{x402.HeaderPaymentSignature: "e30="})
	send("GET", "/api/club/referral/SECRETCODE42", nil)
	send("GET", "/nothing-here", nil)
	snap := st.Snapshot("x", "")
	if snap.Requests != 4 || snap.PaymentRequired != 1 || snap.Settled != 1 {
		t.Errorf("requests %d 402 %d settled %d", snap.Requests, snap.PaymentRequired, snap.Settled)
	}
	if countOf(snap.Routes, "/api/risk-levels") != 2 || countOf(snap.Routes, "/api/club/referral/{code}") != 1 || countOf(snap.Routes, "unmatched") != 1 {
		t.Errorf("routes %v", snap.Routes)
	}
	b, _ := json.Marshal(snap)
	if strings.Contains(string(b), "SECRETCODE42") || strings.Contains(string(b), "nothing-here") {
		t.Errorf("a raw path leaked into the stats: %s", b)
	}
}

func TestStatsConcurrent(t *testing.T) {
	st := New(nil, nil)
	var wg sync.WaitGroup
	const workers, each = 8, 2000
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := newReq("GET", fmt.Sprintf("/api/find?src=w%d", w), "curl/8")
			for i := range each {
				st.Observe(fmt.Sprintf("/r%d", i%4), r, 200+(i%2)*202)
			}
		}()
	}
	wg.Wait()
	snap := st.Snapshot("x", "")
	if snap.Requests != workers*each || snap.PaymentRequired != workers*each/2 || snap.RequestsPerMinute != workers*each {
		t.Errorf("requests %d 402 %d rpm %d", snap.Requests, snap.PaymentRequired, snap.RequestsPerMinute)
	}
	var sum int64
	for _, c := range snap.Sources {
		sum += c.Count
	}
	if sum != workers*each || len(snap.Sources) != workers {
		t.Errorf("sources %v", snap.Sources)
	}
}

// BenchmarkStatsObserveParallel measures Observe under parallel load
// (route label and src already admitted, as in steady state).
func BenchmarkStatsObserveParallel(b *testing.B) {
	st := New(nil, nil)
	routes := []string{"/api/find", "/api/route", "/api/risk-levels", "/.well-known/x402"}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		r := newReq("GET", "/api/find?q=gold&src=partner", "Mozilla/5.0 (X11) Firefox/128.0")
		i := 0
		for pb.Next() {
			st.Observe(routes[i%len(routes)], r, 200)
			i++
		}
	})
}

// BenchmarkStatsObserveParallelNoSrc is the common case: no src parameter.
func BenchmarkStatsObserveParallelNoSrc(b *testing.B) {
	st := New(nil, nil)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		r := newReq("GET", "/api/find?q=gold", "curl/8.5")
		for pb.Next() {
			st.Observe("/api/find", r, 200)
		}
	})
}

// BenchmarkStatsObserveServedParallel is what a server that counts its
// answers in the Traffic adds per answer: the src value, the client kind
// and the per-minute window.
func BenchmarkStatsObserveServedParallel(b *testing.B) {
	st := New(nil, nil)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		r := newReq("GET", "/api/find?q=gold&src=partner", "Mozilla/5.0 (X11) Firefox/128.0")
		r.Pattern = "GET /api/find"
		h := http.Header{}
		for pb.Next() {
			st.ObserveServed(r, 200, h)
		}
	})
}

// TestStatsReadTraffic: a server that counts its answers in the Traffic
// (as httpserver does) and calls ObserveServed gets snapshots of its
// requests, classes, routes, 402s and settlements, each event counted
// once, with the src values, client kinds and window ObserveServed adds.
func TestStatsReadTraffic(t *testing.T) {
	traffic := NewTraffic()
	st := New(nil, traffic)
	find, pnl := traffic.Route("/api/find", KindFree), traffic.Route("/api/tick-pnl", KindPaid)
	traffic.Route("/api/unused", KindFree)
	for _, c := range []int{200, 200, 200, 200, 400} {
		find.Observe(http.MethodGet, c)
	}
	for _, c := range []int{200, 402, 402} {
		pnl.Observe(http.MethodPost, c)
	}
	pnl.PaymentRequired()
	pnl.PaymentRequired()
	pnl.Settled()
	r := httptest.NewRequest(http.MethodGet, "/api/find?src=newsletter", nil)
	r.Pattern = "GET /api/find"
	r.Header.Set("User-Agent", "Mozilla/5.0 (X11) Gecko/20100101 Firefox/120.0")
	st.ObserveServed(r, 200, http.Header{})
	paid := httptest.NewRequest(http.MethodPost, "/api/tick-pnl", nil)
	paid.Pattern = "POST /api/tick-pnl"
	st.ObserveServed(paid, 402, http.Header{})
	snap := st.Snapshot("amplifier", "test")
	if snap.Requests != 8 || snap.PaymentRequired != 2 || snap.Settled != 1 || snap.Status["2xx"] != 5 || snap.Status["4xx"] != 3 {
		t.Fatalf("snapshot counts %+v", snap)
	}
	if len(snap.Routes) != 2 || snap.Routes[0] != (Count{Name: "/api/find", Count: 5}) || snap.Routes[1] != (Count{Name: "/api/tick-pnl", Count: 3}) {
		t.Fatalf("routes %+v", snap.Routes)
	}
	if len(snap.Sources) != 1 || snap.Sources[0] != (Count{Name: "newsletter", Count: 1}) {
		t.Fatalf("sources %+v", snap.Sources)
	}
	if snap.Clients[ClientBrowser] != 1 || snap.RequestsPerMinute != 2 {
		t.Fatalf("clients %v, per minute %d", snap.Clients, snap.RequestsPerMinute)
	}
}

package httpserver_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/seed1284c1d2/svc/httpserver"
	"github.com/seed1284c1d2/svc/x402"
	"github.com/seed1284c1d2/svc/x402/client"
)

// echoRoute is a free POST route answering the length of the body it read.
func echoRoute() httpserver.Route {
	return httpserver.Route{Pattern: "POST /api/echo", Free: true, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, err := io.ReadAll(r.Body)
		if err != nil {
			httpserver.WriteError(w, r, err)
			return
		}
		_, _ = fmt.Fprintf(w, "%d", len(b))
	})}
}

// fromAddr returns an HTTP transport whose connections come from the
// loopback address ip (127.0.0.2, ...): another client for the server.
func fromAddr(ip string) *http.Transport {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: 5 * time.Second}
	return &http.Transport{DialContext: d.DialContext, DisableKeepAlives: true}
}

// slowBody is a raw connection sending a request whose body it trickles.
type slowBody struct {
	conn net.Conn
	mu   sync.Mutex
}

// startSlowBody connects from ip, sends the headers of a POST to path
// declaring length bytes of body, then first bytes at once; trickle sends
// more later.
func startSlowBody(t *testing.T, ip, base, path string, length, first int) *slowBody {
	t.Helper()
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: 5 * time.Second}
	conn, err := d.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	head := "POST " + path + " HTTP/1.1\r\nHost: " + strings.TrimPrefix(base, "http://") +
		"\r\nContent-Type: application/json\r\nContent-Length: " + strconv.Itoa(length) + "\r\n\r\n"
	if _, err := conn.Write([]byte(head)); err != nil {
		t.Fatal(err)
	}
	sb := &slowBody{conn: conn}
	sb.send(first)
	return sb
}

// send writes n more bytes of body (errors ignored: the server may have
// answered and closed).
func (sb *slowBody) send(n int) {
	sb.mu.Lock()
	defer sb.mu.Unlock()
	_ = sb.conn.SetWriteDeadline(time.Now().Add(2 * time.Second))
	_, _ = sb.conn.Write([]byte(strings.Repeat("a", n)))
}

// answer reads the server's answer, waiting at most d; status 0 when none
// came.
func (sb *slowBody) answer(d time.Duration) (int, http.Header, string) {
	_ = sb.conn.SetReadDeadline(time.Now().Add(d))
	resp, err := http.ReadResponse(bufio.NewReader(sb.conn), nil)
	if err != nil {
		return 0, nil, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.Close { // read into the response, not its header
		resp.Header.Set("Connection", "close")
	}
	return resp.StatusCode, resp.Header, string(b)
}

// TestSlowBodiesOfOneAddressLeaveTheOthersServed: one address declares
// 2 MiB bodies on the paid and free POST routes and trickles them, some
// after a fast first MiB; meanwhile another address's small POSTs, unpaid,
// paid and free, all get their normal answers, and the slow address is
// held to its share of the body memory.
func TestSlowBodiesOfOneAddressLeaveTheOthersServed(t *testing.T) {
	f := newFixture(t, fixtureOptions{routes: []httpserver.Route{echoRoute()}})
	const declared = 2 << 20
	var slow []*slowBody
	for range 6 {
		slow = append(slow, startSlowBody(t, "127.0.0.1", f.url, "/api/csv-profile", declared, 1024))
		slow = append(slow, startSlowBody(t, "127.0.0.1", f.url, "/api/echo", declared, 1024))
	}
	var fast []*slowBody // the first MiB at once, then a trickle
	for range 4 {
		fast = append(fast, startSlowBody(t, "127.0.0.1", f.url, "/api/csv-profile", declared, 1<<20))
		fast = append(fast, startSlowBody(t, "127.0.0.1", f.url, "/api/echo", declared, 1<<20))
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { // 1 KiB/s on each
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				for _, sb := range append(slow, fast...) {
					sb.send(1024)
				}
			}
		}
	}()
	time.Sleep(300 * time.Millisecond) // the slow bodies are being read

	other := &http.Client{Transport: fromAddr("127.0.0.2"), Timeout: 20 * time.Second}
	payer := newPayer(t)
	paying := client.New(payer, client.WithMaxAmount("$0.10"), client.WithBase(fromAddr("127.0.0.2")))
	tool := f.tool(t, "csv-profile")
	for i := range 3 {
		resp, body := doWith(t, other, f.request(t, tool, `{"csv":"a,b\n1,2"}`))
		if resp.StatusCode != http.StatusPaymentRequired || resp.Header.Get(x402.HeaderPaymentRequired) == "" {
			t.Fatalf("unpaid POST %d from another address: %d %s", i, resp.StatusCode, body)
		}
		resp, body = doWith(t, paying, f.request(t, tool, `{"csv":"a,b\n1,`+strconv.Itoa(i)+`"}`))
		if sr, err := client.PaymentResponse(resp); resp.StatusCode != http.StatusOK || err != nil || !sr.Success {
			t.Fatalf("paid POST %d from another address: %d %s", i, resp.StatusCode, body)
		}
		req, _ := http.NewRequest(http.MethodPost, f.url+"/api/echo", strings.NewReader(`{"x":1}`))
		resp, body = doWith(t, other, req)
		if resp.StatusCode != http.StatusOK || string(body) != "7" {
			t.Fatalf("free POST %d from another address: %d %s", i, resp.StatusCode, body)
		}
	}
	// The slow address holds at most its share (a quarter of 16 MiB): of
	// its eight fast bodies, those past it were refused with Retry-After.
	refused := 0
	for _, sb := range fast {
		status, h, body := sb.answer(5 * time.Second)
		if status == 0 {
			continue // still being read, within the share
		}
		if status != http.StatusTooManyRequests || h.Get("Retry-After") == "" || !strings.Contains(body, `"rate_limited"`) {
			t.Fatalf("a fast body of the slow address: %d %v %s", status, h, body)
		}
		refused++
	}
	if refused < len(fast)-4 {
		t.Fatalf("%d of the slow address's %d bodies of 1 MiB were refused; its share holds 4 MiB", refused, len(fast))
	}
}

// TestSlowBodyCut: a body arriving below the minimum rate is cut with 408
// after the grace period and its connection closed, on a paid route and on
// a free one, long before the read timeout.
func TestSlowBodyCut(t *testing.T) {
	f := newFixture(t, fixtureOptions{routes: []httpserver.Route{echoRoute()}})
	for _, path := range []string{"/api/csv-profile", "/api/echo"} {
		t.Run(path, func(t *testing.T) {
			t.Parallel()
			sb := startSlowBody(t, "127.0.0.1", f.url, path, 64<<10, 100)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			go func() {
				for {
					select {
					case <-ctx.Done():
						return
					case <-time.After(500 * time.Millisecond):
						sb.send(100) // 200 bytes/s
					}
				}
			}()
			status, h, body := sb.answer(15 * time.Second)
			if status != http.StatusRequestTimeout || !strings.Contains(body, `"request_timeout"`) || h.Get("Connection") != "close" {
				t.Fatalf("slow body: %d %v %s", status, h, body)
			}
		})
	}
}

// TestBodyMemoryFull503: bodies of several addresses filling the body
// memory (a free route's body counts four times its size) make the next one
// wait, then get 503 with Retry-After; once they are gone the memory is
// whole again.
func TestBodyMemoryFull503(t *testing.T) {
	const limit = 1 << 20
	f := newFixture(t, fixtureOptions{bodyLimit: limit, bodyMemory: 16 << 20, routes: []httpserver.Route{echoRoute()}})
	var held []*slowBody
	for i := range 4 {
		held = append(held, startSlowBody(t, "127.0.0."+strconv.Itoa(2+i), f.url, "/api/echo", limit, limit-1))
	}
	time.Sleep(300 * time.Millisecond)
	other := &http.Client{Transport: fromAddr("127.0.0.9"), Timeout: 20 * time.Second}
	req, _ := http.NewRequest(http.MethodPost, f.url+"/api/echo", strings.NewReader(`{"x":1}`))
	resp, body := doWith(t, other, req)
	p := mustProblem(t, resp, body, http.StatusServiceUnavailable)
	if p.Code != "server_busy" || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("budget full: %s, Retry-After %q", body, resp.Header.Get("Retry-After"))
	}
	for _, sb := range held {
		sb.send(1)
		if status, _, body := sb.answer(5 * time.Second); status != http.StatusOK || body != strconv.Itoa(limit) {
			t.Fatalf("a held body, completed: %d %s", status, body)
		}
	}
	req, _ = http.NewRequest(http.MethodPost, f.url+"/api/echo", strings.NewReader(`{"x":1}`))
	if resp, body := doWith(t, other, req); resp.StatusCode != http.StatusOK {
		t.Fatalf("after the held bodies: %d %s", resp.StatusCode, body)
	}
}

// TestFreeBodyRatePerAddress: the body bytes one address sends to the free
// routes are limited (429 with Retry-After past the burst); another address
// is not affected.
func TestFreeBodyRatePerAddress(t *testing.T) {
	const limit = 64 << 10
	f := newFixture(t, fixtureOptions{bodyLimit: limit, bodyRate: 1024, routes: []httpserver.Route{echoRoute()}})
	big := strings.Repeat("a", limit)
	post := func(c *http.Client) (*http.Response, []byte) {
		req, _ := http.NewRequest(http.MethodPost, f.url+"/api/echo", strings.NewReader(big))
		return doWith(t, c, req)
	}
	one := &http.Client{Transport: fromAddr("127.0.0.2"), Timeout: 20 * time.Second}
	for i := range 2 { // the burst: twice the body limit
		if resp, body := post(one); resp.StatusCode != http.StatusOK {
			t.Fatalf("body %d within the burst: %d %s", i, resp.StatusCode, body)
		}
	}
	resp, body := post(one)
	p := mustProblem(t, resp, body, http.StatusTooManyRequests)
	if p.Code != "rate_limited" || resp.Header.Get("Retry-After") == "" {
		t.Fatalf("past the burst: %s", body)
	}
	two := &http.Client{Transport: fromAddr("127.0.0.3"), Timeout: 20 * time.Second}
	if resp, body := post(two); resp.StatusCode != http.StatusOK {
		t.Fatalf("another address: %d %s", resp.StatusCode, body)
	}
}

// TestFreeBodyRateRefusesDeclaredBodiesUnread: a body whose declared
// length is past its address's body rate is refused with 429 before the
// server reads a byte of it, and the connection is closed; a body of
// unknown length (chunked) is charged once read.
func TestFreeBodyRateRefusesDeclaredBodiesUnread(t *testing.T) {
	const limit = 1 << 20
	f := newFixture(t, fixtureOptions{bodyLimit: limit, bodyRate: 1024, routes: []httpserver.Route{echoRoute()}})
	one := &http.Client{Transport: fromAddr("127.0.0.4"), Timeout: 20 * time.Second}
	for i := range 2 { // the burst: twice the body limit, sent chunked
		req, _ := http.NewRequest(http.MethodPost, f.url+"/api/echo", io.MultiReader(strings.NewReader(strings.Repeat("a", limit))))
		// A reader of unknown length: the body goes chunked.
		req.ContentLength = -1
		if resp, body := doWith(t, one, req); resp.StatusCode != http.StatusOK {
			t.Fatalf("chunked body %d within the burst: %d %s", i, resp.StatusCode, body)
		}
	}
	// Declared, never sent: the answer comes at once, not after the
	// minimum-rate grace or the read timeout.
	sb := startSlowBody(t, "127.0.0.4", f.url, "/api/echo", limit, 0)
	start := time.Now()
	status, header, body := sb.answer(4 * time.Second)
	if status != http.StatusTooManyRequests || header.Get("Retry-After") == "" || !strings.Contains(body, "request-body bytes") {
		t.Fatalf("a declared body past the rate: %d %v %s", status, header, body)
	}
	if header.Get("Connection") != "close" {
		t.Fatalf("the connection stays open for an unread body: %v", header)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("the refusal waited %v for the body", d)
	}
	// A client sending a whole body past the rate reads the answer, not a
	// reset of the connection it is still writing to.
	for i := range 5 {
		req, _ := http.NewRequest(http.MethodPost, f.url+"/api/echo", strings.NewReader(strings.Repeat("c", limit)))
		resp, err := one.Do(req)
		if err != nil {
			t.Fatalf("body %d past the rate: %v", i, err)
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusTooManyRequests {
			t.Fatalf("body %d past the rate: %d", i, resp.StatusCode)
		}
	}
	// Another address is not affected.
	two := &http.Client{Transport: fromAddr("127.0.0.5"), Timeout: 20 * time.Second}
	req, _ := http.NewRequest(http.MethodPost, f.url+"/api/echo", strings.NewReader(strings.Repeat("b", limit)))
	if resp, body := doWith(t, two, req); resp.StatusCode != http.StatusOK {
		t.Fatalf("another address: %d %s", resp.StatusCode, body)
	}
}

// TestLargeFreeBodiesHandledInTurn: free-route requests with a body over
// LargeBody are handled at most Config.LargeBodyWork at once, the others
// waiting their turn (503 past the wait), while small requests are
// handled meanwhile.
func TestLargeFreeBodiesHandledInTurn(t *testing.T) {
	var running, most atomic.Int64
	hold := make(chan struct{})
	slow := httpserver.Route{Pattern: "POST /api/slow", Free: true, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := running.Add(1)
		defer running.Add(-1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		if r.ContentLength > httpserver.LargeBody {
			<-hold
		}
		_, _ = io.Copy(io.Discard, r.Body)
		_, _ = fmt.Fprint(w, r.ContentLength)
	})}
	f := newFixture(t, fixtureOptions{largeBodyWork: 2, bodyRate: -1, routes: []httpserver.Route{slow}})
	big := strings.Repeat("a", httpserver.LargeBody+1)
	type answer struct {
		status int
		body   string
	}
	answers := make(chan answer, 4)
	for i := range 4 {
		go func() {
			c := &http.Client{Transport: fromAddr(fmt.Sprintf("127.0.1.%d", i+1)), Timeout: 20 * time.Second}
			req, _ := http.NewRequest(http.MethodPost, f.url+"/api/slow", strings.NewReader(big))
			resp, err := c.Do(req)
			if err != nil {
				answers <- answer{0, err.Error()}
				return
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			answers <- answer{resp.StatusCode, string(b)}
		}()
	}
	// Two run, two wait: past the wait one of them is 503 busy, and
	// meanwhile a small request is answered.
	deadline := time.Now().Add(10 * time.Second)
	for running.Load() < 2 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	req, _ := http.NewRequest(http.MethodPost, f.url+"/api/slow", strings.NewReader("small"))
	if resp, body := doWith(t, &http.Client{Transport: fromAddr("127.0.1.9"), Timeout: 5 * time.Second}, req); resp.StatusCode != http.StatusOK || string(body) != "5" {
		t.Fatalf("a small request while large ones are handled: %d %s", resp.StatusCode, body)
	}
	for range 2 {
		a := <-answers
		if a.status != http.StatusServiceUnavailable || !strings.Contains(a.body, "large requests") {
			t.Fatalf("a large request past its turn: %d %s", a.status, a.body)
		}
	}
	close(hold)
	for range 2 {
		if a := <-answers; a.status != http.StatusOK {
			t.Fatalf("a large request in its turn: %d %s", a.status, a.body)
		}
	}
	if most.Load() > 3 { // two large ones and the small one
		t.Fatalf("%d requests handled at once", most.Load())
	}
}

// doWith sends req with c and returns the answer and its body.
func doWith(t *testing.T, c *http.Client, req *http.Request) (*http.Response, []byte) {
	t.Helper()
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", req.Method, req.URL, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, b
}

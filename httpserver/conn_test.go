package httpserver

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/textproto"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/seed1284c1d2/svc/store"
	"github.com/seed1284c1d2/svc/tools"
	"github.com/seed1284c1d2/svc/x402"
	"github.com/seed1284c1d2/svc/xau"
)

// countingConn records the write calls made on a connection.
type countingConn struct {
	net.Conn
	mu     sync.Mutex
	writes []int
}

func (c *countingConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	c.writes = append(c.writes, len(p))
	c.mu.Unlock()
	return c.Conn.Write(p)
}

// takeWrites returns the sizes of the writes since the last call.
func (c *countingConn) takeWrites() []int {
	c.mu.Lock()
	defer c.mu.Unlock()
	w := c.writes
	c.writes = nil
	return w
}

// countingListener hands out countingConns.
type countingListener struct {
	net.Listener
	conns chan *countingConn
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	cc := &countingConn{Conn: c}
	l.conns <- cc
	return cc, nil
}

// newConnTestServer builds a dev-mode server with a fixed public URL.
func newConnTestServer(t *testing.T, addr string, mw func(http.Handler) http.Handler) *Server {
	t.Helper()
	cat, err := tools.New(tools.Options{})
	if err != nil {
		t.Fatal(err)
	}
	const payTo = "0x209693Bc6afc0C5328bA36FaF03C514EF312287C"
	local, err := x402.NewLocalFacilitator(x402.LocalFacilitatorConfig{PayTo: payTo})
	if err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(t.Context(), filepath.Join(t.TempDir(), "svc.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	sim, err := xau.NewSimulated(xau.SimConfig{Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := New(Config{Catalog: cat, Facilitator: local, Store: st, PayTo: payTo, PublicBaseURL: "http://" + addr,
		Logger: slog.New(slog.DiscardHandler), Addr: addr, Terminal: sim, Middleware: mw})
	if err != nil {
		t.Fatal(err)
	}
	return srv
}

// startConnTestServer serves a newConnTestServer (with Config.Middleware
// mw, nil for none) on a new 127.0.0.1 listener, passed through wrap when
// set, until the test ends; it returns the server and its address.
func startConnTestServer(t *testing.T, wrap func(net.Listener) net.Listener, mw func(http.Handler) http.Handler) (*Server, string) {
	t.Helper()
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := inner.Addr().String()
	srv := newConnTestServer(t, addr, mw)
	ln := inner
	if wrap != nil {
		ln = wrap(inner)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		if err := <-done; !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("Serve: %v", err)
		}
	})
	return srv, addr
}

// readAnswer reads one HTTP/1.1 answer and returns its raw bytes.
func readAnswer(t *testing.T, br *bufio.Reader) (status int, header textproto.MIMEHeader, body []byte) {
	t.Helper()
	tp := textproto.NewReader(br)
	line, err := tp.ReadLine()
	if err != nil {
		t.Fatal(err)
	}
	if status, err = strconv.Atoi(strings.Fields(line)[1]); err != nil {
		t.Fatal(err)
	}
	if header, err = tp.ReadMIMEHeader(); err != nil {
		t.Fatal(err)
	}
	n, err := strconv.Atoi(header.Get("Content-Length"))
	if err != nil {
		t.Fatalf("no Content-Length: %v", header)
	}
	body = make([]byte, n)
	if _, err := io.ReadFull(br, body); err != nil {
		t.Fatal(err)
	}
	return status, header, body
}

// TestPaymentRequiredIsOneWrite: over a real connection, the recorded 402
// leaves in one write call (with the same header and body as through
// Handler, where nothing is coalesced), and the connection goes on serving
// other answers normally.
func TestPaymentRequiredIsOneWrite(t *testing.T) {
	conns := make(chan *countingConn, 4)
	srv, addr := startConnTestServer(t, func(inner net.Listener) net.Listener {
		return &countingListener{Listener: inner, conns: conns}
	}, nil)

	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	server := <-conns
	br := bufio.NewReader(c)
	const body = `{"entry":3500,"direction":"long","slPct":0.05,"tpPct":0.04}`
	post := func(b string) {
		t.Helper()
		req := "POST /api/risk-levels HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nX-Request-Id: conn-test\r\nContent-Length: " +
			strconv.Itoa(len(b)) + "\r\n\r\n" + b
		if _, err := io.WriteString(c, req); err != nil {
			t.Fatal(err)
		}
	}

	// The same offer through Handler, for comparison.
	rec := httptest.NewRecorder()
	hreq := httptest.NewRequest(http.MethodPost, "/api/risk-levels", strings.NewReader(body))
	hreq.Header.Set("X-Request-Id", "conn-test")
	srv.Handler().ServeHTTP(rec, hreq)
	if rec.Code != http.StatusPaymentRequired {
		t.Fatalf("Handler: status %d", rec.Code)
	}

	for round := range 3 {
		post(body)
		status, header, got := readAnswer(t, br)
		if status != http.StatusPaymentRequired {
			t.Fatalf("round %d: status %d: %s", round, status, got)
		}
		writes := server.takeWrites()
		if len(writes) != 1 {
			t.Errorf("round %d: the 402 left in %d writes %v, want 1", round, len(writes), writes)
		}
		if !bytes.Equal(got, rec.Body.Bytes()) {
			t.Errorf("round %d: body differs from Handler's", round)
		}
		for k, v := range rec.Header() {
			if strings.Join(header[k], "\n") != strings.Join(v, "\n") {
				t.Errorf("round %d: header %s = %q, Handler's %q", round, k, header[k], v)
			}
		}
		if len(header) != len(rec.Header())+1 || header.Get("Date") == "" { // + Date, which net/http adds
			t.Errorf("round %d: headers %v, Handler's %v", round, header, rec.Header())
		}
	}

	// Every tool's 402, with request ids of both extremes (answers that
	// fit net/http's 4 KiB write buffer and answers that overflow it),
	// leaves in one write call.
	for _, tool := range srv.cfg.Catalog.All() {
		for _, id := range []string{"a", strings.Repeat("x", 128)} {
			req := tool.Method + " " + tool.Path
			in := string(tool.ExampleInput)
			if tool.InputLocation == tools.InputQuery {
				call, err := tool.DecodeJSON(t.Context(), tool.ExampleInput)
				if err != nil {
					t.Fatal(err)
				}
				req += "?" + call.Query().Encode()
				in = ""
			}
			req += " HTTP/1.1\r\nHost: x\r\nX-Request-Id: " + id + "\r\nContent-Length: " + strconv.Itoa(len(in)) + "\r\n\r\n" + in
			if _, err := io.WriteString(c, req); err != nil {
				t.Fatal(err)
			}
			status, header, got := readAnswer(t, br)
			if status != http.StatusPaymentRequired {
				t.Fatalf("%s: status %d: %s", tool.Key, status, got)
			}
			size := 0
			for k, vs := range header {
				for _, v := range vs {
					size += len(k) + len(v) + 4
				}
			}
			if writes := server.takeWrites(); len(writes) != 1 {
				t.Errorf("%s (request id of %d bytes, header %d bytes, body %d): the 402 left in %d writes %v, want 1",
					tool.Key, len(id), size, len(got), len(writes), writes)
			}
		}
	}

	// Other answers on the same connection are untouched.
	post(`{"entry":3500}`)
	if status, _, got := readAnswer(t, br); status != http.StatusBadRequest || !bytes.Contains(got, []byte("direction")) {
		t.Fatalf("invalid input: %d %s", status, got)
	}
	if _, err := io.WriteString(c, "GET /health HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	if status, _, _ := readAnswer(t, br); status != http.StatusOK && status != http.StatusServiceUnavailable {
		t.Fatalf("health: %d", status)
	}
}

// pipeConn is one end of a net.Pipe that records its writes and can
// close its writing side.
type pipeConn struct {
	net.Conn
	out         bytes.Buffer
	writes      int
	closedWrite bool
}

func (p *pipeConn) Write(b []byte) (int, error) { p.writes++; return p.out.Write(b) }
func (p *pipeConn) CloseWrite() error           { p.closedWrite = true; return nil }

func newTestCoalescingConn() (*coalescingConn, *pipeConn) {
	a, b := net.Pipe()
	_ = b.Close()
	pc := &pipeConn{Conn: a}
	pool := &sync.Pool{New: func() any { s := make([]byte, 0, 16); return &s }}
	return &coalescingConn{Conn: pc, pool: pool}, pc
}

func TestCoalescingConn(t *testing.T) {
	c, pc := newTestCoalescingConn()
	_, _ = c.Write([]byte("a"))
	if pc.writes != 1 {
		t.Fatalf("writes %d: a connection not held writes through", pc.writes)
	}
	c.hold()
	for _, s := range []string{"bb", "ccc", strings.Repeat("d", 100)} {
		if n, err := c.Write([]byte(s)); n != len(s) || err != nil {
			t.Fatalf("held Write: %d %v", n, err)
		}
	}
	if pc.writes != 1 {
		t.Fatalf("writes %d while held", pc.writes)
	}
	if err := c.release(); err != nil {
		t.Fatal(err)
	}
	if pc.writes != 2 || pc.out.String() != "abbccc"+strings.Repeat("d", 100) {
		t.Fatalf("after release: %d writes, %q", pc.writes, pc.out.String())
	}
	if err := c.release(); err != nil || pc.writes != 2 {
		t.Fatalf("a second release wrote: %v %d", err, pc.writes)
	}

	// Past maxHeldBytes the held bytes go out and the rest goes through.
	c, pc = newTestCoalescingConn()
	c.hold()
	big := bytes.Repeat([]byte("x"), maxHeldBytes)
	_, _ = c.Write([]byte("head"))
	_, _ = c.Write(big)
	if pc.writes != 2 || pc.out.Len() != 4+maxHeldBytes {
		t.Fatalf("over the bound: %d writes, %d bytes", pc.writes, pc.out.Len())
	}
	_ = c.release()

	// ReadFrom while held is held too; CloseWrite and Close flush.
	c, pc = newTestCoalescingConn()
	c.hold()
	if n, err := c.ReadFrom(strings.NewReader("from")); n != 4 || err != nil || pc.writes != 0 {
		t.Fatalf("held ReadFrom: %d %v, %d writes", n, err, pc.writes)
	}
	if err := c.CloseWrite(); err != nil || !pc.closedWrite || pc.out.String() != "from" {
		t.Fatalf("CloseWrite: %v %v %q", err, pc.closedWrite, pc.out.String())
	}
	c.hold()
	_, _ = c.Write([]byte("!"))
	_ = c.Close()
	if pc.out.String() != "from!" {
		t.Fatalf("Close lost held bytes: %q", pc.out.String())
	}
	if c.NetConn() != pc {
		t.Fatal("NetConn")
	}
}

// TestCanonicalHeaderNames: the constants read on every request are the
// canonical forms of the names they stand for.
func TestCanonicalHeaderNames(t *testing.T) {
	for name, canonical := range map[string]string{
		x402.HeaderPaymentSignature: canonicalPaymentSignature,
		x402.HeaderV1Payment:        canonicalV1Payment,
		"X-Content-Type-Options":    canonicalNosniff,
		HeaderRequestID:             HeaderRequestID,
	} {
		if got := textproto.CanonicalMIMEHeaderKey(name); got != canonical {
			t.Errorf("%s: canonical %s, the constant says %s", name, got, canonical)
		}
	}
	r := httptest.NewRequest(http.MethodPost, "/", nil)
	if !unpaid(r) {
		t.Error("a request without payment is paid")
	}
	for _, h := range []string{x402.HeaderPaymentSignature, x402.HeaderV1Payment} {
		r := httptest.NewRequest(http.MethodPost, "/", nil)
		r.Header.Set(h, "x")
		if unpaid(r) {
			t.Errorf("a request with %s is unpaid", h)
		}
	}
}

// TestLatencyBucket: the bucket search agrees with sort.SearchFloat64s on
// the bounds, around them and far past them.
func TestLatencyBucket(t *testing.T) {
	ds := []time.Duration{0, -time.Second, time.Nanosecond, time.Hour}
	for _, ub := range latencyBuckets {
		d := time.Duration(ub * float64(time.Second))
		ds = append(ds, d-1, d, d+1)
	}
	for _, d := range ds {
		if got, want := latencyBucket(d), sort.SearchFloat64s(latencyBuckets[:], d.Seconds()); got != want {
			t.Errorf("latencyBucket(%v) = %d, want %d", d, got, want)
		}
	}
}

// TestRouteMetricsConcurrent counts answers from many goroutines, new
// method and status pairs included.
func TestRouteMetricsConcurrent(t *testing.T) {
	m := newMetrics(time.Now())
	rm := m.route("/x", "paid")
	methods := []string{http.MethodGet, http.MethodPost, "BREW"}
	codes := []int{200, 400, 402, 503}
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 1000 {
				rm.observe(methods[(g+i)%len(methods)], codes[i%len(codes)], time.Millisecond)
			}
		})
	}
	wg.Wait()
	var total uint64
	for _, c := range *rm.byStatus.Load() {
		total += c.n.Load()
	}
	if total != 8000 || rm.count.Load() != 8000 || len(*rm.byStatus.Load()) != len(methods)*len(codes) {
		t.Fatalf("total %d, count %d, series %d", total, rm.count.Load(), len(*rm.byStatus.Load()))
	}
	var buf bytes.Buffer
	if err := m.write(&buf, time.Now()); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), `svc_http_requests_total{route="/x",kind="paid",method="OTHER",status="402"} `) {
		t.Errorf("exposition:\n%s", buf.String())
	}
}

func TestSpliceHead(t *testing.T) {
	c, pc := newTestCoalescingConn()
	if c.spliceHead([]byte("A: b\r\n")) {
		t.Fatal("spliced while not held")
	}
	c.hold()
	_, _ = c.Write([]byte("HTTP/1.1 402 Payment Required\r\nContent-Length: 2\r\n")) // head not complete yet
	if c.spliceHead([]byte("A: b\r\n")) {
		t.Fatal("spliced into an incomplete head")
	}
	_, _ = c.Write([]byte("\r\n{}"))
	if !c.spliceHead([]byte("A: b\r\nC: d\r\n")) {
		t.Fatal("no splice into a complete head")
	}
	_ = c.release()
	if want := "HTTP/1.1 402 Payment Required\r\nContent-Length: 2\r\nA: b\r\nC: d\r\n\r\n{}"; pc.out.String() != want {
		t.Fatalf("spliced answer %q, want %q", pc.out.String(), want)
	}

	// Held bytes that are not an HTTP/1.x head (an HTTP/2 frame, say).
	c, pc = newTestCoalescingConn()
	c.hold()
	_, _ = c.Write([]byte("\x00\x00\x04\x01\x04\x00\x00\x00\x01\r\n\r\n"))
	if c.spliceHead([]byte("A: b\r\n")) {
		t.Fatal("spliced into bytes that are not a head")
	}
	c.abandon()
	if pc.writes != 0 {
		t.Fatalf("abandon wrote %d times", pc.writes)
	}
	if _, err := pc.Conn.Write([]byte("x")); err == nil {
		t.Fatal("abandon left the connection open")
	}
}

// rawAnswer reads one answer's head as sent (field lines in order) and
// its body (Content-Length bytes, none when noBody).
func rawAnswer(t *testing.T, br *bufio.Reader, noBody bool) (status string, fields []string, body []byte) {
	t.Helper()
	tp := textproto.NewReader(br)
	status, err := tp.ReadLine()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for {
		line, err := tp.ReadLine()
		if err != nil {
			t.Fatal(err)
		}
		if line == "" {
			break
		}
		fields = append(fields, line)
		if k, v, _ := strings.Cut(line, ": "); k == "Content-Length" {
			if n, err = strconv.Atoi(v); err != nil {
				t.Fatal(err)
			}
		}
	}
	if noBody {
		return status, fields, nil
	}
	body = make([]byte, n)
	if _, err := io.ReadFull(br, body); err != nil {
		t.Fatal(err)
	}
	return status, fields, body
}

// TestOfferSplice: the 402 whose offer lines are spliced into net/http's
// head is, field for field, the answer of the plain path (Handler): over
// keep-alive, pipelined, HTTP/1.0, Connection: close and HEAD requests,
// with each field once and the body intact.
func TestOfferSplice(t *testing.T) {
	srv, addr := startConnTestServer(t, nil, nil)

	// want: the fields of the plain path's answer for tool, as lines.
	want := func(tool *tools.Tool, method, target, body string) (fields map[string]string, respBody []byte) {
		t.Helper()
		rec := httptest.NewRecorder()
		req := httptest.NewRequest(method, target, strings.NewReader(body))
		req.Header.Set(HeaderRequestID, "splice")
		srv.Handler().ServeHTTP(rec, req)
		if rec.Code != http.StatusPaymentRequired {
			t.Fatalf("%s: Handler answered %d: %s", tool.Key, rec.Code, rec.Body)
		}
		fields = map[string]string{}
		for k, vs := range rec.Header() {
			if len(vs) != 1 {
				t.Fatalf("%s: Handler's %s has %d values", tool.Key, k, len(vs))
			}
			fields[k] = vs[0]
		}
		return fields, rec.Body.Bytes()
	}
	check := func(name string, fields []string, wantFields map[string]string, extra ...string) {
		t.Helper()
		seen := map[string]bool{}
		for _, line := range fields {
			k, v, ok := strings.Cut(line, ": ")
			if !ok {
				t.Errorf("%s: malformed field line %q", name, line)
				continue
			}
			if seen[k] {
				t.Errorf("%s: field %s sent twice", name, k)
			}
			seen[k] = true
			if w, ok := wantFields[k]; ok && v != w {
				t.Errorf("%s: %s = %.60q, plain path %.60q", name, k, v, w)
			}
			if _, ok := wantFields[k]; !ok && k != "Date" && !slices.Contains(extra, k) {
				t.Errorf("%s: unexpected field %s", name, k)
			}
		}
		for k := range wantFields {
			if !seen[k] {
				t.Errorf("%s: field %s missing", name, k)
			}
		}
		if !seen["Date"] {
			t.Errorf("%s: no Date", name)
		}
	}
	dial := func() (net.Conn, *bufio.Reader) {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Close() })
		_ = c.SetDeadline(time.Now().Add(10 * time.Second))
		return c, bufio.NewReader(c)
	}
	request := func(tool *tools.Tool, method, proto string, extra string) (target, body, raw string) {
		target, body = tool.Path, string(tool.ExampleInput)
		if tool.InputLocation == tools.InputQuery {
			call, err := tool.DecodeJSON(t.Context(), tool.ExampleInput)
			if err != nil {
				t.Fatal(err)
			}
			target += "?" + call.Query().Encode()
			body = ""
		}
		raw = method + " " + target + " " + proto + "\r\nHost: x\r\nX-Request-Id: splice\r\n" + extra +
			"Content-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n" + body
		return target, body, raw
	}

	// Every tool, twice each over one keep-alive connection, the second
	// pair pipelined (both requests in one write).
	c, br := dial()
	for _, tool := range srv.cfg.Catalog.All() {
		target, body, raw := request(tool, tool.Method, "HTTP/1.1", "")
		wantFields, wantBody := want(tool, tool.Method, target, body)
		for range 2 {
			if _, err := io.WriteString(c, raw); err != nil {
				t.Fatal(err)
			}
			status, fields, got := rawAnswer(t, br, false)
			if status != "HTTP/1.1 402 Payment Required" || !bytes.Equal(got, wantBody) {
				t.Fatalf("%s: %s, body %s", tool.Key, status, got)
			}
			check(tool.Key, fields, wantFields)
		}
	}
	tool := srv.cfg.Catalog.All()[0]
	target, body, raw := request(tool, tool.Method, "HTTP/1.1", "")
	wantFields, wantBody := want(tool, tool.Method, target, body)
	if _, err := io.WriteString(c, raw+raw); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		status, fields, got := rawAnswer(t, br, false)
		if status != "HTTP/1.1 402 Payment Required" || !bytes.Equal(got, wantBody) {
			t.Fatalf("pipelined #%d: %s, body %s", i, status, got)
		}
		check("pipelined", fields, wantFields)
	}

	// Expect: 100-continue on a tool with a body: the interim answer, then
	// the offer.
	{
		tool, ok := srv.cfg.Catalog.ByKey("risk-levels")
		if !ok {
			t.Fatal("no risk-levels tool")
		}
		target, body, raw := request(tool, tool.Method, "HTTP/1.1", "Expect: 100-continue\r\n")
		wantFields, wantBody := want(tool, tool.Method, target, body)
		c, br := dial()
		if _, err := io.WriteString(c, raw); err != nil {
			t.Fatal(err)
		}
		if status, fields, _ := rawAnswer(t, br, true); status != "HTTP/1.1 100 Continue" || len(fields) != 0 {
			t.Fatalf("100-continue: %s %q", status, fields)
		}
		status, fields, got := rawAnswer(t, br, false)
		if status != "HTTP/1.1 402 Payment Required" || !bytes.Equal(got, wantBody) {
			t.Fatalf("100-continue: %s, body %s", status, got)
		}
		check("100-continue", fields, wantFields)
	}

	// Connection: close, and HTTP/1.0: the offer, then the connection ends.
	for _, tc := range []struct{ name, proto, extra string }{
		{"close", "HTTP/1.1", "Connection: close\r\n"},
		{"http/1.0", "HTTP/1.0", ""},
	} {
		c, br := dial()
		_, _, raw := request(tool, tool.Method, tc.proto, tc.extra)
		if _, err := io.WriteString(c, raw); err != nil {
			t.Fatal(err)
		}
		status, fields, got := rawAnswer(t, br, false)
		if !strings.HasSuffix(status, " 402 Payment Required") || !bytes.Equal(got, wantBody) {
			t.Fatalf("%s: %s, body %s", tc.name, status, got)
		}
		check(tc.name, fields, wantFields, "Connection")
		if n, err := br.Read(make([]byte, 1)); n != 0 || err == nil {
			t.Errorf("%s: the connection stayed open (%d, %v)", tc.name, n, err)
		}
	}

	// HEAD on a GET tool: the offer's head, no body.
	for _, tool := range srv.cfg.Catalog.All() {
		if tool.Method != http.MethodGet {
			continue
		}
		target, body, raw := request(tool, http.MethodHead, "HTTP/1.1", "")
		wantFields, _ := want(tool, http.MethodHead, target, body)
		c, br := dial()
		if _, err := io.WriteString(c, raw); err != nil {
			t.Fatal(err)
		}
		status, fields, _ := rawAnswer(t, br, true)
		if status != "HTTP/1.1 402 Payment Required" {
			t.Fatalf("HEAD %s: %s", tool.Key, status)
		}
		check("HEAD "+tool.Key, fields, wantFields)
		// The next answer on the connection starts right after the head.
		if _, err := io.WriteString(c, "GET /health HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
		if status, _, _ := rawAnswer(t, br, false); !strings.HasPrefix(status, "HTTP/1.1 200") && !strings.HasPrefix(status, "HTTP/1.1 503") {
			t.Fatalf("after HEAD: %s", status)
		}
		break
	}
}

// TestIncompleteHoldDropped: held bytes waiting for their splice never
// leave as they are, not even when the connection closes in between.
func TestIncompleteHoldDropped(t *testing.T) {
	c, pc := newTestCoalescingConn()
	c.holdIncomplete()
	_, _ = c.Write([]byte("HTTP/1.1 402 Payment Required\r\nContent-Length: 0\r\n\r\n"))
	_ = c.Close()
	if pc.writes != 0 {
		t.Fatalf("an incomplete head left on Close: %q", pc.out.String())
	}

	c, pc = newTestCoalescingConn()
	c.holdIncomplete()
	_, _ = c.Write([]byte("HTTP/1.1 402 Payment Required\r\nContent-Length: 0\r\n\r\n"))
	if err := c.release(); !errors.Is(err, errIncompleteAnswer) || pc.writes != 0 {
		t.Fatalf("release of an incomplete head: %v, %d writes", err, pc.writes)
	}
	c.holdIncomplete()
	_, _ = c.Write([]byte("HTTP/1.1 402 Payment Required\r\nContent-Length: 0\r\n\r\n"))
	if !c.spliceHead([]byte("A: b\r\n")) {
		t.Fatal("no splice")
	}
	if err := c.release(); err != nil || pc.out.String() != "HTTP/1.1 402 Payment Required\r\nContent-Length: 0\r\nA: b\r\n\r\n" {
		t.Fatalf("release after the splice: %v %q", err, pc.out.String())
	}
}

// TestOfferBehindBufferingMiddleware: behind a Config.Middleware whose
// writer holds the answer until the handler returns, the 402 is whole
// (every offer field, the body) over a real connection.
func TestOfferBehindBufferingMiddleware(t *testing.T) {
	_, addr := startConnTestServer(t, nil, func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			held := &offerRecorder{header: w.Header()} // holds status and body
			next.ServeHTTP(held, r)
			if held.status != 0 {
				w.WriteHeader(held.status)
			}
			_, _ = w.Write(held.body.Bytes())
		})
	})
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	br := bufio.NewReader(c)
	const body = `{"entry":3500,"direction":"long","slPct":0.05,"tpPct":0.04}`
	for range 2 {
		if _, err := io.WriteString(c, "POST /api/risk-levels HTTP/1.1\r\nHost: x\r\nContent-Length: "+strconv.Itoa(len(body))+"\r\n\r\n"+body); err != nil {
			t.Fatal(err)
		}
		status, header, got := readAnswer(t, br)
		if status != http.StatusPaymentRequired || header.Get("Payment-Required") == "" || header.Get("Content-Type") != "application/json" ||
			!bytes.Contains(got, []byte(`"x402Version":1`)) {
			t.Fatalf("402 behind the middleware: %d %v %s", status, header, got)
		}
	}
}

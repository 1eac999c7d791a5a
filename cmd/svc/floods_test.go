package main

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// floodClient is an HTTP client whose connections come from the loopback
// address ip: one client address for the server.
func floodClient(ip string) *http.Client {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: 5 * time.Second}
	return &http.Client{Timeout: 60 * time.Second, Transport: &http.Transport{DialContext: d.DialContext, DisableKeepAlives: true}}
}

// floodAnswer is one answer of a flood: status (0: the server closed the
// connection before answering) and body length.
type floodAnswer struct {
	status int
	bytes  int
}

// flood sends body to path once from each of n client addresses at once
// (127.<net>.x.y) and returns the answers.
func flood(base, path string, body []byte, n, net int) []floodAnswer {
	out := make([]floodAnswer, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			c := floodClient(fmt.Sprintf("127.%d.%d.%d", net, 1+i/250, 1+i%250))
			req, _ := http.NewRequest(http.MethodPost, base+path, bytes.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			resp, err := c.Do(req)
			if err != nil {
				return
			}
			defer resp.Body.Close()
			b, _ := io.Copy(io.Discard, resp.Body)
			out[i] = floodAnswer{status: resp.StatusCode, bytes: int(b)}
		})
	}
	wg.Wait()
	return out
}

// livezProbe asks GET /livez every 50 ms (within the free-route rate) from its own address and keeps the
// latencies of the current phase.
type livezProbe struct {
	mu    sync.Mutex
	lat   []time.Duration
	fails int
	stop  chan struct{}
	done  chan struct{}
}

func startLivezProbe(base string) *livezProbe {
	p := &livezProbe{stop: make(chan struct{}), done: make(chan struct{})}
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP("127.0.0.250")}}
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DialContext: d.DialContext}}
	go func() {
		defer close(p.done)
		for {
			select {
			case <-p.stop:
				return
			case <-time.After(50 * time.Millisecond):
			}
			start := time.Now()
			resp, err := c.Get(base + "/livez")
			ok := err == nil && resp.StatusCode == http.StatusOK
			if err == nil {
				_, _ = io.Copy(io.Discard, resp.Body)
				_ = resp.Body.Close()
			}
			p.mu.Lock()
			if ok {
				p.lat = append(p.lat, time.Since(start))
			} else {
				p.fails++
			}
			p.mu.Unlock()
		}
	}()
	return p
}

// phase returns the latencies since the last phase and starts a new one.
func (p *livezProbe) phase() (lat []time.Duration, fails int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	lat, fails, p.lat, p.fails = p.lat, p.fails, nil, 0
	slices.Sort(lat)
	return lat, fails
}

func (p *livezProbe) close() { close(p.stop); <-p.done }

// quantile of sorted latencies.
func quantile(lat []time.Duration, q float64) time.Duration {
	if len(lat) == 0 {
		return 0
	}
	return lat[min(len(lat)-1, int(q*float64(len(lat))))]
}

// peakRSS reads the peak resident set (VmHWM) of process pid, in bytes.
func peakRSS(t *testing.T, pid int) int64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Skipf("no /proc status: %v", err)
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				t.Fatalf("VmHWM %q: %v", v, err)
			}
			return kb << 10
		}
	}
	t.Fatal("no VmHWM in /proc status")
	return 0
}

// TestFloodsKeepMemoryBounded runs the floods of large bodies and batches
// against a real `svc serve` with its defaults: every answer is a bounded
// refusal or a normal answer, the process's peak RSS stays under 300 MB,
// and one address's A2A messages are held to its body rate. /livez
// latencies during each flood are logged (-v), not asserted.
func TestFloodsKeepMemoryBounded(t *testing.T) {
	n := clusterStart(t, "floods", filepath.Join(t.TempDir(), "svc.db"))
	pid := n.cmd.Process.Pid
	probe := startLivezProbe(n.base)
	defer probe.close()
	time.Sleep(200 * time.Millisecond)
	report := func(name string) {
		lat, fails := probe.phase()
		t.Logf("%-28s /livez: %d probes, p50 %v, p99 %v, max %v, %d failed; peak RSS so far %d MB", name, len(lat),
			quantile(lat, .5).Round(time.Microsecond), quantile(lat, .99).Round(time.Microsecond), quantile(lat, 1).Round(time.Microsecond), fails, peakRSS(t, pid)>>20)
	}
	report("idle")
	allowed := func(name string, answers []floodAnswer, ok ...int) map[int]int {
		t.Helper()
		count := map[int]int{}
		for _, a := range answers {
			count[a.status]++
			if a.status != 0 && !slices.Contains(ok, a.status) {
				t.Errorf("%s: status %d (%d bytes)", name, a.status, a.bytes)
			}
			if a.status != http.StatusOK && a.bytes > 4096 {
				t.Errorf("%s: a refusal of %d bytes", name, a.bytes)
			}
		}
		t.Logf("%-28s statuses %v", name, count)
		return count
	}

	// MCP: the batch of 14,000 tools/call (1.8 MB), six at once.
	msgs := make([]string, 14000)
	for i := range msgs {
		msgs[i] = `{"jsonrpc":"2.0","id":` + strconv.Itoa(i) + `,"method":"tools/call","params":{"name":"find_tool","arguments":{"query":"decode a jwt token"}}}`
	}
	batch := []byte("[" + strings.Join(msgs, ",") + "]")
	allowed("mcp batch 1.8 MB x 6", flood(n.base, "/mcp", batch, 6, 1), http.StatusBadRequest, http.StatusServiceUnavailable)
	report("mcp batch 1.8 MB x 6")

	// 2 MiB bodies from 192 addresses on /api/route, /mcp and /a2a.
	big := func(prefix, suffix string, size int) []byte {
		return []byte(prefix + strings.Repeat("a", size-len(prefix)-len(suffix)) + suffix)
	}
	route := big(`{"query":"profile a csv","input":{"csv":"`, `"}}`, 2<<20)
	allowed("api/route 2 MiB x 192", flood(n.base, "/api/route", route, 192, 2), http.StatusRequestEntityTooLarge)
	report("api/route 2 MiB x 192")
	mcpBody := big(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"find_tool","arguments":{"query":"`, `"}}}`, 2<<20)
	allowed("mcp 2 MiB x 192", flood(n.base, "/mcp", mcpBody, 192, 3), http.StatusOK, http.StatusServiceUnavailable, http.StatusTooManyRequests)
	report("mcp 2 MiB x 192")
	a2aBody := big(`{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message","messageId":"m1","role":"user","parts":[{"kind":"data","data":{"query":"profile a csv","input":{"csv":"`, `"}}}]}}}`, 1<<20)
	allowed("a2a 1 MiB x 192", flood(n.base, "/a2a", a2aBody, 192, 4), http.StatusOK, http.StatusServiceUnavailable, http.StatusTooManyRequests)
	report("a2a 1 MiB x 192")

	// One address's A2A work is bounded by its body rate (1 MiB/s, a burst
	// of 4 MiB): of 12 messages of 1 MiB sent back to back, at most the
	// burst and what the rate refilled meanwhile are served.
	one := floodClient("127.0.5.1")
	start := time.Now()
	served := 0
	for range 12 {
		resp, err := one.Post(n.base+"/a2a", "application/json", bytes.NewReader(a2aBody))
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		switch resp.StatusCode {
		case http.StatusOK:
			served++
		case http.StatusTooManyRequests:
			if resp.Header.Get("Retry-After") == "" {
				t.Fatal("429 without Retry-After")
			}
		default:
			t.Fatalf("a2a message from one address: %d", resp.StatusCode)
		}
	}
	if most := 4 + int(time.Since(start).Seconds()) + 1; served > most {
		t.Fatalf("one address got %d messages of 1 MiB served in %v; its body rate allows %d", served, time.Since(start), most)
	}
	t.Logf("one address, 12 A2A messages of 1 MiB back to back in %v: %d served", time.Since(start).Round(time.Millisecond), served)
	report("a2a one address")

	// Each message of an MCP batch counts against the address's free-route
	// rate (30/s, a burst of 300): of 40 batches of 16 back to back, at most
	// the burst and what the rate refilled meanwhile are served.
	msgs = msgs[:16]
	for i := range msgs {
		msgs[i] = `{"jsonrpc":"2.0","id":` + strconv.Itoa(i) + `,"method":"tools/call","params":{"name":"find_tool","arguments":{"query":"decode a jwt token"}}}`
	}
	batch = []byte("[" + strings.Join(msgs, ",") + "]")
	start = time.Now()
	served = 0
	for range 40 {
		req, _ := http.NewRequest(http.MethodPost, n.base+"/mcp", bytes.NewReader(batch))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		resp, err := floodClient("127.0.6.1").Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		switch resp.StatusCode {
		case http.StatusOK:
			served++
		case http.StatusTooManyRequests:
		default:
			t.Fatalf("an MCP batch of 16: %d", resp.StatusCode)
		}
	}
	if most := (300 + 30*(int(time.Since(start).Seconds())+1)) / 16; served > most || served == 0 {
		t.Fatalf("one address got %d batches of 16 served in %v; its rate allows %d", served, time.Since(start), most)
	}
	t.Logf("one address, 40 MCP batches of 16 back to back in %v: %d served", time.Since(start).Round(time.Millisecond), served)

	if rss := peakRSS(t, pid); rss >= 300<<20 {
		t.Fatalf("peak RSS of svc serve %d MB, want < 300 MB", rss>>20)
	}
}

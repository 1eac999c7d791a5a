package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// flood sends requests with large bodies from many clients at once and
// measures what it costs the server: its peak resident memory (VmHWM of
// --pid) and how long a probe (/health by default) takes meanwhile. It
// prints one JSON line. The kinds of flood:
//
//   - ohlcv: valid unpaid calls of a paid route (each one validated before
//     its 402), --size bytes;
//   - route: POST /api/route with an input of --size bytes;
//   - mcp: a tools/call of find_tool on /mcp whose query is --size bytes;
//   - mcp-batch: a JSON-RPC batch of 14,000 tools/call on /mcp (1.8 MB);
//   - a2a: an A2A message/send on /a2a with a data part of --size bytes.
//
// With --addrs, each client connects from its own loopback address
// (127.x.y.z, Linux): the per-address limits are then not what is measured.
func flood(args []string) error {
	fs := flag.NewFlagSet("flood", flag.ContinueOnError)
	url := fs.String("url", "", "base URL of the server (required)")
	kind := fs.String("kind", "ohlcv", "ohlcv, route, mcp, mcp-batch or a2a")
	path := fs.String("path", "/api/ohlcv-state", "paid route of the ohlcv flood")
	clients := fs.Int("clients", 64, "parallel clients")
	size := fs.Int("size", 2<<20-1024, "body size in bytes")
	duration := fs.Duration("duration", 20*time.Second, "how long to flood")
	pid := fs.Int("pid", 0, "the server's process id, for its memory (required)")
	addrs := fs.Bool("addrs", false, "one loopback source address per client (127.x.y.z)")
	probe := fs.String("probe", "/health", "path probed with GET during the flood")
	every := fs.Duration("probe-every", 100*time.Millisecond, "how often the probe is sent")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *url == "" || *pid <= 0 {
		return fmt.Errorf("flood: --url and --pid are required")
	}
	var body []byte
	switch *kind {
	case "ohlcv":
		body = ohlcvBody(*size)
	case "route":
		*path, body = "/api/route", padded(`{"query":"profile a csv","input":{"csv":"`, `"}}`, *size)
	case "mcp":
		*path, body = "/mcp", padded(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"find_tool","arguments":{"query":"`, `"}}}`, *size)
	case "mcp-batch":
		msgs := make([]string, 14000)
		for i := range msgs {
			msgs[i] = `{"jsonrpc":"2.0","id":` + strconv.Itoa(i) + `,"method":"tools/call","params":{"name":"find_tool","arguments":{"query":"decode a jwt token"}}}`
		}
		*path, body = "/mcp", []byte("["+strings.Join(msgs, ",")+"]")
	case "a2a":
		*path, body = "/a2a", padded(`{"jsonrpc":"2.0","id":1,"method":"message/send","params":{"message":{"kind":"message","messageId":"m1","role":"user","parts":[{"kind":"data","data":{"query":"profile a csv","input":{"csv":"`, `"}}}]}}}`, *size)
	default:
		return fmt.Errorf("flood: unknown --kind %q", *kind)
	}
	ctx, cancel := context.WithTimeout(context.Background(), *duration)
	defer cancel()
	var wg sync.WaitGroup
	var mu sync.Mutex
	statuses := map[int]int{}
	var sent atomic.Int64
	for i := range *clients {
		client := &http.Client{Timeout: 60 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: *clients}}
		if *addrs {
			client.Transport = fromAddr(fmt.Sprintf("127.1.%d.%d", 1+i/250, 1+i%250))
		}
		wg.Go(func() {
			for ctx.Err() == nil {
				req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimRight(*url, "/")+*path, bytes.NewReader(body))
				if err != nil {
					return
				}
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Accept", "application/json, text/event-stream")
				resp, err := client.Do(req)
				if err != nil {
					continue
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				_ = resp.Body.Close()
				sent.Add(1)
				mu.Lock()
				statuses[resp.StatusCode]++
				mu.Unlock()
			}
		})
	}
	// The probe, once every --probe-every, during the flood.
	var health []time.Duration
	healthFailures := 0
	tick := time.NewTicker(*every)
	defer tick.Stop()
	hc := &http.Client{Timeout: 10 * time.Second}
	if *addrs {
		hc.Transport = fromAddr("127.0.0.250")
	}
loop:
	for {
		select {
		case <-ctx.Done():
			break loop
		case <-tick.C:
			start := time.Now()
			resp, err := hc.Get(strings.TrimRight(*url, "/") + *probe)
			if err != nil {
				healthFailures++
				continue
			}
			if resp.StatusCode != http.StatusOK {
				healthFailures++
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
			health = append(health, time.Since(start))
		}
	}
	wg.Wait()
	hwm, rss, err := procMemory(*pid)
	if err != nil {
		return err
	}
	slices.Sort(health)
	pct := func(p float64) float64 {
		if len(health) == 0 {
			return 0
		}
		return float64(health[int(p*float64(len(health)-1))].Microseconds()) / 1000
	}
	out := map[string]any{
		"kind": *kind, "probe": *probe, "clients": *clients, "bodyBytes": len(body), "seconds": duration.Seconds(), "requests": sent.Load(), "statuses": statuses,
		"peakRssMiB": hwm / 1024, "rssMiB": rss / 1024, "healthChecks": len(health), "healthFailures": healthFailures,
		"healthP50Ms": pct(0.5), "healthP99Ms": pct(0.99), "healthMaxMs": pct(1),
	}
	return json.NewEncoder(os.Stdout).Encode(out)
}

// padded is prefix, then "a" up to size bytes with suffix.
func padded(prefix, suffix string, size int) []byte {
	return []byte(prefix + strings.Repeat("a", max(size-len(prefix)-len(suffix), 0)) + suffix)
}

// fromAddr is a transport whose connections come from the loopback
// address ip.
func fromAddr(ip string) *http.Transport {
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}, Timeout: 5 * time.Second}
	return &http.Transport{DialContext: d.DialContext}
}

// ohlcvBody is a valid ohlcv-state input of about size bytes.
func ohlcvBody(size int) []byte {
	const bar = `{"time":"2025-06-04T07:15:00Z","open":2345.123456789,"high":2346.123456789,"low":2344.123456789,"close":2345.623456789,"volume":1234.5}`
	n := min((size-16)/(len(bar)+1), 10000)
	var b bytes.Buffer
	b.WriteString(`{"bars":[`)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(bar)
	}
	b.WriteString(`]}`)
	// Pad with spaces (valid JSON) up to the size.
	if pad := size - b.Len(); pad > 0 {
		b.Write(bytes.Repeat([]byte(" "), pad))
	}
	return b.Bytes()
}

// procMemory reads VmHWM and VmRSS (KiB) of a process.
func procMemory(pid int) (hwm, rss int64, err error) {
	f, err := os.Open("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, 0, fmt.Errorf("flood: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 2 {
			continue
		}
		v, _ := strconv.ParseInt(fields[1], 10, 64)
		switch fields[0] {
		case "VmHWM:":
			hwm = v
		case "VmRSS:":
			rss = v
		}
	}
	return hwm, rss, sc.Err()
}

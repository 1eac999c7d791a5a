package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// flood sends unpaid requests with large bodies from many clients at once
// (each one validated before its 402: the costly case of a paid route) and
// measures what it costs the server: its peak resident memory (VmHWM of
// --pid) and how long /health takes meanwhile. It prints one JSON line.
func flood(args []string) error {
	fs := flag.NewFlagSet("flood", flag.ContinueOnError)
	url := fs.String("url", "", "base URL of the server (required)")
	path := fs.String("path", "/api/ohlcv-state", "paid route to flood with POSTs")
	clients := fs.Int("clients", 64, "parallel clients")
	size := fs.Int("size", 2<<20-1024, "body size in bytes (a valid ohlcv-state input of about that size)")
	duration := fs.Duration("duration", 20*time.Second, "how long to flood")
	pid := fs.Int("pid", 0, "the server's process id, for its memory (required)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *url == "" || *pid <= 0 {
		return fmt.Errorf("flood: --url and --pid are required")
	}
	body := ohlcvBody(*size)
	ctx, cancel := context.WithTimeout(context.Background(), *duration)
	defer cancel()
	client := &http.Client{Timeout: 60 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: *clients}}
	var wg sync.WaitGroup
	var mu sync.Mutex
	statuses := map[int]int{}
	var sent atomic.Int64
	for range *clients {
		wg.Go(func() {
			for ctx.Err() == nil {
				req, err := http.NewRequestWithContext(ctx, http.MethodPost, strings.TrimRight(*url, "/")+*path, bytes.NewReader(body))
				if err != nil {
					return
				}
				req.Header.Set("Content-Type", "application/json")
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
	// /health, once every 100 ms, during the flood.
	var health []time.Duration
	healthFailures := 0
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	hc := &http.Client{Timeout: 10 * time.Second}
loop:
	for {
		select {
		case <-ctx.Done():
			break loop
		case <-tick.C:
			start := time.Now()
			resp, err := hc.Get(strings.TrimRight(*url, "/") + "/health")
			if err != nil {
				healthFailures++
				continue
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
		"clients": *clients, "bodyBytes": len(body), "seconds": duration.Seconds(), "requests": sent.Load(), "statuses": statuses,
		"peakRssMiB": hwm / 1024, "rssMiB": rss / 1024, "healthChecks": len(health), "healthFailures": healthFailures,
		"healthP50Ms": pct(0.5), "healthP99Ms": pct(0.99), "healthMaxMs": pct(1),
	}
	return json.NewEncoder(os.Stdout).Encode(out)
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

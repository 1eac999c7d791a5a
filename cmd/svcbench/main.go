// Command svcbench measures the svc server from a second process: a small
// closed-loop HTTP load generator, and a bare net/http handler to compare
// against in the same run (bench/run.sh drives both).
//
// Usage:
//
//	svcbench bare [--addr 127.0.0.1:0]
//	    serve a bare handler (a fixed small JSON answer) and print its URL
//	svcbench load --url URL [--method GET] [--body JSON] [--duration 10s]
//	              [--concurrency 16] [--pay-key-env VAR --prepay N]
//	    send requests for the duration and print one JSON line:
//	    {name, requests, seconds, rps, p50Ms, p90Ms, p99Ms, maxMs, statuses}
//	svcbench facilitator [--addr 127.0.0.1:0]
//	    serve svc's local facilitator over the facilitator HTTP API (for
//	    the @x402/express comparison, bench/express/express-402.mjs)
//	svcbench replay --url URL [--method POST] [--body JSON] [--addr 127.0.0.1:0]
//	    fetch one answer of URL and serve exactly it (status, header, body)
//	    to every request: the ceiling of an answer of that size, for the
//	    402 comparison (the same bytes with no processing at all)
//	svcbench sign --url URL [--method POST] [--body JSON] --pay-key-env VAR
//	              --n N --out FILE
//	    sign N payments of the URL's offer, one PAYMENT-SIGNATURE value a
//	    line (for wrk, see bench/paid.lua)
//	svcbench flood --url URL --pid PID [--clients 64] [--size 2MiB]
//	               [--duration 20s] [--path /api/ohlcv-state]
//	               [--kind ohlcv|route|mcp|mcp-batch|a2a] [--addrs]
//	               [--probe /health] [--probe-every 100ms]
//	    flood a route with large bodies from many clients (each from its
//	    own loopback address with --addrs) and print the server's peak
//	    resident memory and the probe's latency meanwhile (bench/flood.sh,
//	    bench/floods.sh)
//	svcbench ledger-gen --db PATH [--rows 10000000] [--days 365] [--end 2026-11-01]
//	    write a SQLite store whose ledger holds that many settled payments
//	    (bench/ledger.sh measures svc ledger and the dashboard on it)
//
// With --pay-key-env, each request carries a fresh x402 payment: the load
// generator reads the offer of one unpaid request, signs N payments before
// the clock starts (signing is not what is measured), and stops early when
// they run out.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/seed1284c1d2/svc/x402"
	"github.com/seed1284c1d2/svc/x402/client"
	"github.com/seed1284c1d2/svc/x402/facilitator"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: svcbench bare|load|sign|facilitator|replay|flood|ledger-gen [flags]")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "bare":
		err = bare(os.Args[2:])
	case "load":
		err = load(os.Args[2:])
	case "sign":
		err = sign(os.Args[2:])
	case "facilitator":
		err = runFacilitator(os.Args[2:])
	case "replay":
		err = replay(os.Args[2:])
	case "flood":
		err = flood(os.Args[2:])
	case "ledger-gen":
		err = ledgerGen(os.Args[2:])
	default:
		err = fmt.Errorf("unknown command %q", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "svcbench:", err)
		os.Exit(1)
	}
}

// runFacilitator serves a facilitator.Local over HTTP.
func runFacilitator(args []string) error {
	fs := flag.NewFlagSet("facilitator", flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:0", "listen address")
	if err := fs.Parse(args); err != nil {
		return err
	}
	local, err := facilitator.NewLocal(facilitator.LocalConfig{})
	if err != nil {
		return err
	}
	return serveUntilSignal(*addr, facilitator.Handler(local))
}

// serveUntilSignal serves h on addr, printing its URL, until SIGINT or
// SIGTERM.
func serveUntilSignal(addr string, h http.Handler) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	fmt.Printf("listening on http://%s\n", ln.Addr())
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		_ = srv.Close()
	}()
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// replay records one answer of a URL and serves it, unchanged, to every
// request (reading the request body first, as a handler would).
func replay(args []string) error {
	fs := flag.NewFlagSet("replay", flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:0", "listen address")
	target := fs.String("url", "", "URL whose answer is replayed")
	method := fs.String("method", http.MethodGet, "HTTP method")
	body := fs.String("body", "", "JSON body")
	if err := fs.Parse(args); err != nil {
		return err
	}
	req, err := http.NewRequest(*method, *target, strings.NewReader(*body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("recording %s: %w", *target, err)
	}
	recorded, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if err != nil {
		return fmt.Errorf("recording %s: %w", *target, err)
	}
	header := resp.Header.Clone()
	header.Del("Date")
	status := resp.StatusCode
	return serveUntilSignal(*addr, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		h := w.Header()
		for k, v := range header {
			h[k] = v
		}
		w.WriteHeader(status)
		_, _ = w.Write(recorded)
	}))
}

// bare serves the baseline: the least a Go HTTP server can do per request.
func bare(args []string) error {
	fs := flag.NewFlagSet("bare", flag.ContinueOnError)
	addr := fs.String("addr", "127.0.0.1:0", "listen address")
	if err := fs.Parse(args); err != nil {
		return err
	}
	body := []byte(`{"ok":true}` + "\n")
	return serveUntilSignal(*addr, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(body)
	}))
}

// report is what load prints.
type report struct {
	Name     string         `json:"name"`
	Requests int            `json:"requests"`
	Seconds  float64        `json:"seconds"`
	RPS      float64        `json:"rps"`
	P50Ms    float64        `json:"p50Ms"`
	P90Ms    float64        `json:"p90Ms"`
	P99Ms    float64        `json:"p99Ms"`
	MaxMs    float64        `json:"maxMs"`
	Errors   int            `json:"errors"`
	Statuses map[string]int `json:"statuses"`
}

func load(args []string) error {
	fs := flag.NewFlagSet("load", flag.ContinueOnError)
	name := fs.String("name", "", "label of the run")
	target := fs.String("url", "", "URL to load")
	method := fs.String("method", http.MethodGet, "HTTP method")
	body := fs.String("body", "", "JSON body")
	duration := fs.Duration("duration", 10*time.Second, "measurement time")
	warmup := fs.Duration("warmup", time.Second, "unmeasured warm-up time")
	conc := fs.Int("concurrency", 16, "requests in flight")
	keyEnv := fs.String("pay-key-env", "", "environment variable with a payer key: pay every request")
	prepay := fs.Int("prepay", 20000, "payments signed in advance (with --pay-key-env)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *target == "" {
		return errors.New("--url is required")
	}
	if *name == "" {
		*name = *method + " " + *target
	}
	tr := &http.Transport{MaxIdleConns: *conc * 2, MaxIdleConnsPerHost: *conc * 2, IdleConnTimeout: time.Minute}
	hc := &http.Client{Transport: tr, Timeout: 30 * time.Second}
	newReq := func() (*http.Request, error) {
		var b io.Reader
		if *body != "" {
			b = strings.NewReader(*body)
		}
		req, err := http.NewRequest(*method, *target, b)
		if err == nil && *body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		return req, err
	}

	var payments []string
	if *keyEnv != "" {
		var err error
		if payments, err = signPayments(hc, newReq, os.Getenv(*keyEnv), *prepay); err != nil {
			return err
		}
	}
	var next atomic.Int64
	payment := func() (string, bool) {
		if payments == nil {
			return "", true
		}
		i := next.Add(1) - 1
		if int(i) >= len(payments) {
			return "", false
		}
		return payments[i], true
	}

	run := func(d time.Duration, record bool) report {
		var (
			mu        sync.Mutex
			latencies []time.Duration
			statuses  = map[string]int{}
			errs      int
		)
		deadline := time.Now().Add(d)
		start := time.Now()
		var wg sync.WaitGroup
		for range *conc {
			wg.Add(1)
			go func() {
				defer wg.Done()
				var lat []time.Duration
				st := map[string]int{}
				e := 0
				for time.Now().Before(deadline) {
					p, ok := payment()
					if !ok {
						break
					}
					req, err := newReq()
					if err != nil {
						e++
						continue
					}
					if p != "" {
						req.Header.Set(x402.HeaderPaymentSignature, p)
					}
					t0 := time.Now()
					resp, err := hc.Do(req)
					if err != nil {
						e++
						continue
					}
					_, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
					lat = append(lat, time.Since(t0))
					st[fmt.Sprint(resp.StatusCode)]++
				}
				mu.Lock()
				latencies = append(latencies, lat...)
				for k, v := range st {
					statuses[k] += v
				}
				errs += e
				mu.Unlock()
			}()
		}
		wg.Wait()
		elapsed := time.Since(start)
		r := report{Name: *name, Requests: len(latencies), Seconds: elapsed.Seconds(), Errors: errs, Statuses: statuses}
		if !record || len(latencies) == 0 {
			return r
		}
		slices.Sort(latencies)
		pct := func(p float64) float64 {
			i := int(float64(len(latencies)-1) * p)
			return float64(latencies[i].Microseconds()) / 1000
		}
		r.RPS = float64(len(latencies)) / elapsed.Seconds()
		r.P50Ms, r.P90Ms, r.P99Ms, r.MaxMs = pct(0.50), pct(0.90), pct(0.99), pct(1)
		return r
	}
	if *warmup > 0 && payments == nil {
		run(*warmup, false)
	}
	r := run(*duration, true)
	return json.NewEncoder(os.Stdout).Encode(r)
}

// sign writes pre-signed payment headers to a file, one a line.
func sign(args []string) error {
	fs := flag.NewFlagSet("sign", flag.ContinueOnError)
	target := fs.String("url", "", "URL whose offer to pay")
	method := fs.String("method", http.MethodPost, "HTTP method")
	body := fs.String("body", "", "JSON body")
	keyEnv := fs.String("pay-key-env", "", "environment variable with the payer key")
	n := fs.Int("n", 10000, "number of payments")
	out := fs.String("out", "", "output file")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *target == "" || *keyEnv == "" || *out == "" {
		return errors.New("--url, --pay-key-env and --out are required")
	}
	newReq := func() (*http.Request, error) {
		var b io.Reader
		if *body != "" {
			b = strings.NewReader(*body)
		}
		return http.NewRequest(*method, *target, b)
	}
	payments, err := signPayments(http.DefaultClient, newReq, os.Getenv(*keyEnv), *n)
	if err != nil {
		return err
	}
	return os.WriteFile(*out, []byte(strings.Join(payments, "\n")+"\n"), 0o600)
}

// signPayments reads the offer of one unpaid request and signs n payments
// of it with the key.
func signPayments(hc *http.Client, newReq func() (*http.Request, error), key string, n int) ([]string, error) {
	signer, err := client.ParseSigner(strings.TrimSpace(key))
	if err != nil {
		return nil, fmt.Errorf("payer key: %w", err)
	}
	req, err := newReq()
	if err != nil {
		return nil, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	pr, err := client.PaymentRequiredOf(resp)
	if err != nil {
		return nil, fmt.Errorf("reading the offer (status %d): %w", resp.StatusCode, err)
	}
	accepted := pr.Accepts[0]
	out := make([]string, n)
	var wg sync.WaitGroup
	var firstErr error
	var once sync.Once
	workers := 4
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n; i += workers {
				ep, err := signer.NewPayload(accepted, time.Now(), 0)
				if err != nil {
					once.Do(func() { firstErr = err })
					return
				}
				raw, _ := json.Marshal(ep)
				h, err := x402.EncodeHeader(x402.PaymentPayload{X402Version: 2, Resource: &pr.Resource, Accepted: accepted, Payload: raw})
				if err != nil {
					once.Do(func() { firstErr = err })
					return
				}
				out[i] = h
			}
		}()
	}
	wg.Wait()
	if firstErr != nil {
		return nil, firstErr
	}
	return out, nil
}

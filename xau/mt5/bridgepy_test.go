package mt5

import (
	"bytes"
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/seed1284c1d2/svc/xau"
)

// lockedBuffer collects a child process's output safely.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestBridgePyContract runs the reference bridge, bridge/bridge.py, under
// python3 with a stub MetaTrader5 module (bridge/testdata/stub, server clock
// at UTC+2) and checks the Go client against it: the two sides of the
// contract agree on paths, token, JSON shapes, time zones and errors.
// Skipped without python3.
func TestBridgePyContract(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: runs the Python bridge in a subprocess (the full go test runs it)")
	}
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 not installed")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	stub, err := filepath.Abs("bridge/testdata/stub")
	if err != nil {
		t.Fatal(err)
	}
	var out lockedBuffer
	cmd := exec.Command(python, "-B", "bridge/bridge.py")
	cmd.Env = append(os.Environ(),
		"PYTHONPATH="+stub,
		"BRIDGE_TOKEN="+testBridgeToken,
		"MT5_SERVER_TZ=+02:00",
		"BRIDGE_ADDR=127.0.0.1",
		"BRIDGE_PORT="+strconv.Itoa(port),
		"BRIDGE_SYMBOLS=XAUUSD",
	)
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		if t.Failed() {
			t.Logf("bridge.py output:\n%s", out.String())
		}
	})
	client, err := New(Config{BaseURL: "http://127.0.0.1:" + strconv.Itoa(port), Token: testBridgeToken})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var h xau.Health
	deadline := time.Now().Add(15 * time.Second)
	for {
		h, err = client.Health(ctx)
		if err == nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("bridge.py never became healthy: %v", err)
	}
	if !h.Connected || h.Server != "Stub-Server" || h.Terminal != "MetaTrader 5 build 4755" || h.Lag < 0 || h.Lag > time.Minute {
		t.Fatalf("Health = %+v", h)
	}

	q, err := client.Quote(ctx, "XAUUSD")
	if err != nil {
		t.Fatal(err)
	}
	if !q.Spread.Equal(d("0.23")) || !q.Last.Equal(q.Bid) || !q.Bid.Round(2).Equal(q.Bid) || time.Since(q.Time) > time.Minute || time.Since(q.Time) < 0 {
		t.Fatalf("Quote = %+v (server time must be converted from UTC+2, prices rounded to 2 digits)", q)
	}

	for _, tf := range xau.Timeframes() {
		bars, err := client.Bars(ctx, "XAUUSD", tf, 50)
		if err != nil {
			t.Fatalf("%s: %v", tf, err)
		}
		if len(bars) != 50 {
			t.Fatalf("%s: %d bars", tf, len(bars))
		}
		last := bars[len(bars)-1]
		if now := time.Now(); !last.Time.Equal(tf.Align(now)) && !last.Time.Equal(tf.Align(now.Add(-2*time.Second))) {
			t.Fatalf("%s: last bar %s, want the current period %s", tf, last.Time, tf.Align(now))
		}
		if !last.High.Sub(last.Low).Equal(d("1")) || !last.Close.Sub(last.Open).Equal(d("0.2")) {
			t.Fatalf("%s: last bar %+v", tf, last)
		}
	}

	if _, err := client.Quote(ctx, "EURUSD"); !errors.Is(err, xau.ErrUnknownSymbol) {
		t.Fatalf("unknown symbol: %v", err)
	}
	if _, err := client.Bars(ctx, "EURUSD", xau.M5, 10); !errors.Is(err, xau.ErrUnknownSymbol) {
		t.Fatalf("unknown symbol bars: %v", err)
	}
	wrong, err := New(Config{BaseURL: "http://127.0.0.1:" + strconv.Itoa(port), Token: "not-the-right-token"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = wrong.Quote(ctx, "XAUUSD")
	wantUnavailable(t, "wrong token", err, "bridge rejected token")
}

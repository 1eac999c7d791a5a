package bodybudget_test

import (
	"bytes"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/seed1284c1d2/svc/internal/bodybudget"
)

// serve starts a server on 127.0.0.1 whose handler reads bodies with b
// (weight 1, limit 64 KiB) for the client key of the X-Client header and
// holds them until release is closed; it answers 200 with the length or
// the error.
func serve(t *testing.T, b *bodybudget.Budget, release chan struct{}) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, done, err := b.Read(w, r, r.Header.Get("X-Client"), 64<<10, 1)
		if err != nil {
			status := http.StatusServiceUnavailable
			var mbe *http.MaxBytesError
			switch {
			case errors.As(err, &mbe):
				status = http.StatusRequestEntityTooLarge
			case errors.Is(err, bodybudget.ErrClientBusy):
				status = http.StatusTooManyRequests
			case errors.Is(err, bodybudget.ErrTooSlow):
				status = http.StatusRequestTimeout
			}
			http.Error(w, err.Error(), status)
			return
		}
		defer done()
		if r.Header.Get("X-Hold") != "" {
			<-release
		}
		_, _ = io.WriteString(w, strconv.Itoa(len(body)))
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

func post(t *testing.T, url, client string, body []byte, hold bool) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	req.Header.Set("X-Client", client)
	if hold {
		req.Header.Set("X-Hold", "1")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	return resp.StatusCode
}

// TestBudgetAccounting: bodies held count against the budget and their
// client's share; a client past its share waits, then is refused, while
// another is served; everything is given back once the bodies are done;
// a body over the limit is refused whether it is announced or not.
func TestBudgetAccounting(t *testing.T) {
	b, err := bodybudget.New(bodybudget.Config{Memory: 256 << 10, PerClient: 64 << 10, Wait: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	url := serve(t, b, release)
	body := bytes.Repeat([]byte("a"), 60<<10)

	var wg sync.WaitGroup
	wg.Go(func() {
		if s := post(t, url, "a", body, true); s != http.StatusOK {
			t.Errorf("held body: %d", s)
		}
	})
	deadline := time.Now().Add(5 * time.Second)
	for b.Used() != 60<<10 {
		if time.Now().After(deadline) {
			t.Fatalf("used %d, want the held body's %d", b.Used(), 60<<10)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if s := post(t, url, "a", body, false); s != http.StatusTooManyRequests {
		t.Fatalf("client a past its share: %d", s)
	}
	if s := post(t, url, "b", body, false); s != http.StatusOK {
		t.Fatalf("client b: %d", s)
	}
	close(release)
	wg.Wait()
	if u := b.Used(); u != 0 {
		t.Fatalf("used %d after every body is done", u)
	}
	if s := post(t, url, "a", bytes.Repeat([]byte("a"), 65<<10), false); s != http.StatusRequestEntityTooLarge {
		t.Fatalf("announced body over the limit: %d", s)
	}
	req, _ := http.NewRequest(http.MethodPost, url, io.MultiReader(bytes.NewReader(bytes.Repeat([]byte("a"), 65<<10))))
	req.ContentLength = -1
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Fatalf("chunked body over the limit: %d", resp.StatusCode)
	}
	if u := b.Used(); u != 0 {
		t.Fatalf("used %d after the refusals", u)
	}
}

// TestBudgetWeight: a body read with weight n takes n times its size.
func TestBudgetWeight(t *testing.T) {
	b, err := bodybudget.New(bodybudget.Config{Memory: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan int64, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, done, err := b.Read(w, r, "k", 64<<10, 4)
		if err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		got <- b.Used()
		done()
	}))
	defer srv.Close()
	if s := post(t, srv.URL, "k", bytes.Repeat([]byte("a"), 1000), false); s != http.StatusOK {
		t.Fatalf("status %d", s)
	}
	if u := <-got; u != 4000 {
		t.Fatalf("a 1000-byte body of weight 4 held %d bytes", u)
	}
}

// TestBudgetMinRate: a body trickled below the minimum rate is cut after
// the grace period.
func TestBudgetMinRate(t *testing.T) {
	b, err := bodybudget.New(bodybudget.Config{MinRate: 1 << 10, Grace: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	url := serve(t, b, nil)
	conn, err := net.Dial("tcp", strings.TrimPrefix(url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_, _ = io.WriteString(conn, "POST / HTTP/1.1\r\nHost: x\r\nX-Client: s\r\nContent-Length: 10000\r\n\r\nabc")
	_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	answer, _ := io.ReadAll(conn)
	if !bytes.HasPrefix(answer, []byte("HTTP/1.1 408")) {
		t.Fatalf("answer %.100q", answer)
	}
	if u := b.Used(); u != 0 {
		t.Fatalf("used %d after the cut", u)
	}
}

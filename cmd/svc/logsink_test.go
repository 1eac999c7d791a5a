package main

import (
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestLogSink(t *testing.T) {
	out := &lockedBuffer{}
	sink := newLogSink(out)
	log := slog.New(flushOnWarn{Handler: slog.NewTextHandler(sink, nil), sink: sink}).With("svc", "test")

	// Info lines wait in the buffer.
	log.Info("first")
	if out.String() != "" {
		t.Fatalf("an info line went out at once: %q", out.String())
	}
	// A warning goes out at once, with what came before it, in order.
	log.Warn("second")
	got := out.String()
	if !strings.Contains(got, "msg=first") || !strings.Contains(got, "msg=second") || strings.Index(got, "first") > strings.Index(got, "second") {
		t.Fatalf("after a warning: %q", got)
	}

	// The flusher sends what waits within its interval.
	stop := sink.start(10 * time.Millisecond)
	log.Info("third")
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(out.String(), "msg=third") {
		if time.Now().After(deadline) {
			t.Fatal("the flusher did not write the waiting line")
		}
		time.Sleep(5 * time.Millisecond)
	}

	// Concurrent writers: every line arrives whole; stop flushes the rest.
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				log.Info("line", "g", g, "i", i)
			}
		}()
	}
	wg.Wait()
	stop()
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if n := strings.Count(out.String(), "msg=line "); n != 1600 {
		t.Fatalf("%d lines arrived, want 1600", n)
	}
	for _, l := range lines {
		if !strings.HasPrefix(l, "time=") || !strings.Contains(l, "svc=test") {
			t.Fatalf("a broken line: %q", l)
		}
	}
}

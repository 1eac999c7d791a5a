package main

import (
	"bufio"
	"context"
	"io"
	"log/slog"
	"sync"
	"time"
)

// logSinkBuffer is the buffer of a logSink: about 200 access-log lines.
const logSinkBuffer = 64 << 10

// logFlushEvery is how long a log line may wait in a logSink.
const logFlushEvery = 200 * time.Millisecond

// logSink buffers log output on its way to a writer (stderr). With the
// access log on, one write call per request cost a third of the server's
// throughput (BENCHMARKS.md); buffered, lines leave in batches: when the
// buffer is full, at most logFlushEvery after they were written, at once
// for records at Warn and above (see flushOnWarn), and when the server
// stops. It is safe for concurrent use.
type logSink struct {
	mu sync.Mutex
	bw *bufio.Writer
}

func newLogSink(w io.Writer) *logSink {
	return &logSink{bw: bufio.NewWriterSize(w, logSinkBuffer)}
}

// Write buffers p.
func (s *logSink) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.bw.Write(p)
}

// Flush writes what is buffered.
func (s *logSink) Flush() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.bw.Flush()
}

// start flushes every interval until the returned stop is called; stop
// flushes one last time and waits for the flusher to end.
func (s *logSink) start(interval time.Duration) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				_ = s.Flush()
			}
		}
	}()
	return func() {
		cancel()
		<-done
		_ = s.Flush()
	}
}

// flushOnWarn is a slog.Handler that flushes its sink after every record
// at Warn or above, so that a warning or an error is never held back (nor
// the lines before it).
type flushOnWarn struct {
	slog.Handler
	sink *logSink
}

// Handle hands r on, then flushes when r is a warning or an error.
func (h flushOnWarn) Handle(ctx context.Context, r slog.Record) error {
	err := h.Handler.Handle(ctx, r)
	if r.Level >= slog.LevelWarn {
		_ = h.sink.Flush()
	}
	return err
}

// WithAttrs keeps the flushing.
func (h flushOnWarn) WithAttrs(attrs []slog.Attr) slog.Handler {
	return flushOnWarn{Handler: h.Handler.WithAttrs(attrs), sink: h.sink}
}

// WithGroup keeps the flushing.
func (h flushOnWarn) WithGroup(name string) slog.Handler {
	return flushOnWarn{Handler: h.Handler.WithGroup(name), sink: h.sink}
}

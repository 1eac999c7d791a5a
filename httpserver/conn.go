package httpserver

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"net/http"
	"sync"
	"syscall"
)

// Write coalescing for large precomputed answers.
//
// net/http writes an answer through a 4 KiB buffer per connection: an
// answer larger than that leaves in two write calls or more, each one a
// system call and a TCP segment the client wakes up for. A 402 with its
// offer is about 6 KiB (the PAYMENT-REQUIRED header alone is 3 KiB), so on
// loopback the second segment cost as much as the whole input validation.
// The server's connections are therefore wrapped in a coalescingConn; the
// 402 path holds the connection's writes, writes and flushes the answer,
// and releases it: one write call, one segment. Nothing else changes (the
// bytes on the wire are the same); connections of other listeners (TLS,
// or a handler mounted elsewhere) are served without it.
//
// While the 402 is held, the offer's own header lines, recorded once, are
// inserted at the end of the head net/http wrote (spliceHead): net/http
// then handles only the few per-request fields, not the 3 KiB
// PAYMENT-REQUIRED value it would scan for line breaks on every answer.

// coalescingListener wraps the connections it accepts in coalescingConns,
// except TLS connections, which net/http must see as they are.
type coalescingListener struct {
	net.Listener
	pool *sync.Pool // of *[]byte, the hold buffers
}

// Accept waits for the next connection.
func (l *coalescingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	if _, isTLS := c.(*tls.Conn); isTLS {
		return c, nil
	}
	return &coalescingConn{Conn: c, pool: l.pool}, nil
}

// coalescingConn is a connection whose writes can be held and then sent
// in one write call.
type coalescingConn struct {
	net.Conn
	pool *sync.Pool

	mu  sync.Mutex
	buf *[]byte // non-nil while writes are held
	// incomplete marks held bytes that must not leave as they are (a head
	// still waiting for spliceHead): a Close in the meantime drops them.
	incomplete bool
}

// maxHeldBytes bounds the bytes a coalescingConn holds: past it, what is
// held is written out and the rest goes straight through.
const maxHeldBytes = 64 << 10

// hold starts holding writes.
func (c *coalescingConn) hold() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.buf == nil {
		c.buf = c.pool.Get().(*[]byte)
		*c.buf = (*c.buf)[:0]
	}
}

// holdIncomplete starts holding writes that may leave only once
// spliceHead has completed them.
func (c *coalescingConn) holdIncomplete() {
	c.hold()
	c.mu.Lock()
	c.incomplete = true
	c.mu.Unlock()
}

// release writes what was held in one call and stops holding.
func (c *coalescingConn) release() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.flushLocked()
}

// flushLocked writes the held bytes and stops holding; c.mu is held.
func (c *coalescingConn) flushLocked() error {
	if c.buf == nil {
		return nil
	}
	b := c.buf
	c.buf = nil
	var err error
	if c.incomplete {
		c.incomplete = false
		err = errIncompleteAnswer
	} else if len(*b) > 0 {
		_, err = c.Conn.Write(*b)
	}
	if cap(*b) <= maxHeldBytes {
		c.pool.Put(b)
	}
	return err
}

// Write holds p while writes are held, else writes it.
func (c *coalescingConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.buf != nil {
		if len(*c.buf)+len(p) <= maxHeldBytes {
			*c.buf = append(*c.buf, p...)
			return len(p), nil
		}
		if err := c.flushLocked(); err != nil {
			return 0, err
		}
	}
	return c.Conn.Write(p)
}

// ReadFrom keeps the connection's own ReadFrom (sendfile, splice) when
// writes are not held.
func (c *coalescingConn) ReadFrom(r io.Reader) (int64, error) {
	c.mu.Lock()
	rf, ok := c.Conn.(io.ReaderFrom)
	held := c.buf != nil
	c.mu.Unlock()
	if ok && !held {
		return rf.ReadFrom(r)
	}
	return io.Copy(writerOnly{c}, r)
}

// writerOnly hides every method but Write (so that io.Copy does not call
// ReadFrom again).
type writerOnly struct{ io.Writer }

// Close writes what is held, then closes the connection.
func (c *coalescingConn) Close() error {
	c.mu.Lock()
	_ = c.flushLocked()
	c.mu.Unlock()
	return c.Conn.Close()
}

// CloseWrite shuts down the writing side, as *net.TCPConn does (net/http
// uses it when closing a connection gracefully).
func (c *coalescingConn) CloseWrite() error {
	c.mu.Lock()
	err := c.flushLocked()
	c.mu.Unlock()
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		if e := cw.CloseWrite(); err == nil {
			err = e
		}
	}
	return err
}

// SyscallConn returns the raw connection, as *net.TCPConn does.
func (c *coalescingConn) SyscallConn() (syscall.RawConn, error) {
	if sc, ok := c.Conn.(syscall.Conn); ok {
		return sc.SyscallConn()
	}
	return nil, syscall.EINVAL
}

// NetConn returns the wrapped connection.
func (c *coalescingConn) NetConn() net.Conn { return c.Conn }

type coalescingConnKey struct{}

// withCoalescingConn is the http.Server's ConnContext: it makes the
// connection reachable from its requests.
func withCoalescingConn(ctx context.Context, c net.Conn) context.Context {
	if cc, ok := c.(*coalescingConn); ok {
		return context.WithValue(ctx, coalescingConnKey{}, cc)
	}
	return ctx
}

// writeCoalesced writes an answer of known length (header and body) with
// its bytes sent in one write call when the request came through a
// coalescingConn; write must set the header, call WriteHeader and write
// the whole body.
func writeCoalesced(w http.ResponseWriter, r *http.Request, write func()) {
	cc, _ := r.Context().Value(coalescingConnKey{}).(*coalescingConn)
	if cc == nil {
		write()
		return
	}
	cc.hold()
	defer func() { _ = cc.release() }()
	write()
	_ = http.NewResponseController(w).Flush()
}

// spliceHead inserts lines (complete "Name: value\r\n" header lines) at the
// end of the HTTP/1.x response head that starts the held bytes. It reports
// false, changing nothing, when writes are not held or the held bytes do
// not start with a complete head.
func (c *coalescingConn) spliceHead(lines []byte) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.buf == nil {
		return false
	}
	b := *c.buf
	end := bytes.Index(b, []byte("\r\n\r\n"))
	if end < 0 || !bytes.HasPrefix(b, []byte("HTTP/1.")) {
		return false
	}
	at := end + 2 // after the last field's line break, before the empty line
	n := len(b)
	b = append(b, lines...)
	copy(b[at+len(lines):], b[at:n])
	copy(b[at:], lines)
	*c.buf = b
	c.incomplete = false
	return true
}

// errIncompleteAnswer is returned when held bytes were dropped because
// they were not complete.
var errIncompleteAnswer = errors.New("httpserver: an incomplete answer was dropped")

// abandon drops the held bytes and closes the connection.
func (c *coalescingConn) abandon() {
	c.mu.Lock()
	if c.buf != nil && cap(*c.buf) <= maxHeldBytes {
		c.pool.Put(c.buf)
	}
	c.buf = nil
	c.incomplete = false
	c.mu.Unlock()
	_ = c.Conn.Close()
}

package engine

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// The tests of parking idle TLS connections (tlsidle.go), as those of
// plain ones (park_linux_test.go): parked connections are counted with
// the server's own counter, and nothing is timed.

// serveTLSOn serves s over TLS (HTTP/1.1 by ALPN, a self-signed
// certificate) on ln and returns its address; s is shut down when the
// test ends.
func serveTLSOn(t *testing.T, s *Server, ln net.Listener) string {
	t.Helper()
	cfg := &tls.Config{Certificates: []tls.Certificate{selfSigned(t)}, NextProtos: []string{"http/1.1"}}
	done := make(chan error, 1)
	go func() { done <- s.ServeWith(ln, ListenerOptions{TLS: cfg}) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := s.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
		if err := <-done; err != ErrServerClosed {
			t.Errorf("ServeWith returned %v, want ErrServerClosed", err)
		}
	})
	return ln.Addr().String()
}

// startTLSServer serves s over TLS on a fresh loopback port.
func startTLSServer(t *testing.T, s *Server) string {
	t.Helper()
	ln, err := Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return serveTLSOn(t, s, ln)
}

// holdConn is a client's socket whose writes can be held back and sent
// later, whole or in part: several TLS records in one segment, or part of
// one.
type holdConn struct {
	*net.TCPConn
	mu   sync.Mutex
	hold bool
	held []byte
}

func (h *holdConn) Write(p []byte) (int, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.hold {
		h.held = append(h.held, p...)
		return len(p), nil
	}
	return h.TCPConn.Write(p)
}

// release sends the first n held bytes (all of them if n < 0) in one
// write, and keeps holding writes.
func (h *holdConn) release(t *testing.T, n int) {
	t.Helper()
	h.mu.Lock()
	defer h.mu.Unlock()
	if n < 0 || n > len(h.held) {
		n = len(h.held)
	}
	if _, err := h.TCPConn.Write(h.held[:n]); err != nil {
		t.Fatal(err)
	}
	h.held = h.held[n:]
}

// tlsIdle is a TLS client connection to an echo server.
type tlsIdle struct {
	raw *holdConn
	tc  *tls.Conn
	br  *bufio.Reader
}

// openTLSIdle opens n TLS connections to addr that each make one request
// and read its answer.
func openTLSIdle(t *testing.T, addr string, n int) []tlsIdle {
	t.Helper()
	cs := make([]tlsIdle, n)
	for i := range cs {
		raw := &holdConn{TCPConn: dial(t, addr)}
		tc := tls.Client(raw, &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"http/1.1"}})
		if err := tc.Handshake(); err != nil {
			t.Fatal(err)
		}
		cs[i] = tlsIdle{raw, tc, bufio.NewReader(tc)}
		cs[i].get(t, fmt.Sprintf("/c%d/first", i))
	}
	return cs
}

// send writes a GET for path.
func (ic tlsIdle) send(t *testing.T, path string) {
	t.Helper()
	if _, err := io.WriteString(ic.tc, "GET "+path+" HTTP/1.1\r\nHost: a\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
}

// get sends a GET for path and checks that echo answered it.
func (ic tlsIdle) get(t *testing.T, path string) {
	t.Helper()
	ic.send(t, path)
	ic.expect(t, path)
}

// expect reads echo's answer to a GET for path.
func (ic tlsIdle) expect(t *testing.T, path string) {
	t.Helper()
	resp, body := readResponse(t, ic.br, "GET")
	if resp.StatusCode != 200 || !strings.HasPrefix(body, "GET "+path+" ") {
		t.Fatalf("GET %s: %d %q", path, resp.StatusCode, body)
	}
}

// expectEOF checks that the server closed the connection with nothing
// more sent.
func (ic tlsIdle) expectEOF(t *testing.T) {
	t.Helper()
	if rest, err := io.ReadAll(ic.br); err != nil || len(rest) != 0 {
		t.Errorf("read %q, %v; want EOF: the server closes the connection", rest, err)
	}
}

// Idle TLS connections park after their first exchange and are answered
// when they speak again. One that speaks again soon waits on its
// goroutine and parks at the idle notice; one that speaks after a long
// park parks again at once.
func TestTLSConnectionsPark(t *testing.T) {
	const n = 6
	s := &Server{Handler: echo, Limits: Limits{IdleTimeout: time.Hour}}
	s.init()
	s.tm.SetIdleNotice(0)                 // none until the test asks
	s.sparseAfter.Store(int64(time.Hour)) // every wake is soon, until the test says
	addr := startTLSServer(t, s)
	cs := openTLSIdle(t, addr, n)
	waitForParked(t, s, n)
	for i, ic := range cs {
		ic.get(t, fmt.Sprintf("/c%d/soon", i))
	}
	if got := s.stats.parked.Load(); got != 0 {
		t.Errorf("%d connections parked again at once, though woken soon", got)
	}
	s.tm.SetIdleNotice(10 * time.Millisecond)
	waitForParked(t, s, n)
	s.sparseAfter.Store(0)
	s.tm.SetIdleNotice(0)
	for round := 1; round <= 2; round++ {
		for i, ic := range cs {
			ic.get(t, fmt.Sprintf("/c%d/r%d", i, round))
		}
		waitForParked(t, s, n)
	}
	if got := s.OpenConns(); got != n {
		t.Errorf("%d connections open, want %d", got, n)
	}
}

// crypto/tls may hold request bytes already off the socket: whole records
// read with an earlier one (a pipelining client), or plaintext beyond
// what the engine's read buffer took. A connection does not park on its
// socket while it does (it would never wake): the requests are answered,
// and then it parks. Every wake is sparse here, so the connection means
// to park after each request.
func TestTLSHeldBytesAreServedBeforeParking(t *testing.T) {
	t.Run("records", func(t *testing.T) {
		s := &Server{Handler: echo, Limits: Limits{IdleTimeout: time.Hour}}
		s.init()
		s.sparseAfter.Store(0)
		addr := startTLSServer(t, s)
		ic := openTLSIdle(t, addr, 1)[0]
		waitForParked(t, s, 1)
		ic.raw.mu.Lock()
		ic.raw.hold = true
		ic.raw.mu.Unlock()
		ic.send(t, "/one") // a record each, sent in one segment
		ic.send(t, "/two")
		ic.send(t, "/three")
		ic.raw.release(t, -1)
		for _, p := range []string{"/one", "/two", "/three"} {
			ic.expect(t, p)
		}
		waitForParked(t, s, 1)
	})
	t.Run("plaintext", func(t *testing.T) {
		s := &Server{Handler: echo, Limits: Limits{IdleTimeout: time.Hour}}
		s.init()
		s.sparseAfter.Store(0)
		addr := startTLSServer(t, s)
		ic := openTLSIdle(t, addr, 1)[0]
		waitForParked(t, s, 1)
		// One record: a request that fills the read buffer exactly,
		// then another, which crypto/tls keeps decrypted.
		head := "GET /one HTTP/1.1\r\nHost: a\r\nX-Pad: "
		one := head + strings.Repeat("p", readBufSize-len(head)-4) + "\r\n\r\n"
		if _, err := io.WriteString(ic.tc, one+"GET /two HTTP/1.1\r\nHost: a\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
		ic.expect(t, "/one")
		ic.expect(t, "/two")
		waitForParked(t, s, 1)
	})
}

// Part of a record wakes a parked connection, which waits on its
// goroutine for the rest; if the idle notice comes first, it parks again
// with crypto/tls holding the part, and the rest wakes it.
func TestTLSPartialRecordWhileParked(t *testing.T) {
	s := &Server{Handler: echo, Limits: Limits{IdleTimeout: time.Hour}}
	s.init()
	s.tm.SetIdleNotice(0)
	s.sparseAfter.Store(int64(time.Hour))
	addr := startTLSServer(t, s)
	ic := openTLSIdle(t, addr, 1)[0]
	waitForParked(t, s, 1)
	ic.raw.mu.Lock()
	ic.raw.hold = true
	ic.raw.mu.Unlock()
	ic.send(t, "/split")
	ic.raw.release(t, 10) // the record's header and a few bytes
	waitForParked(t, s, 0)
	s.tm.SetIdleNotice(10 * time.Millisecond)
	waitForParked(t, s, 1)
	ic.raw.release(t, -1)
	ic.expect(t, "/split")
	waitForParked(t, s, 1)
}

// A parked TLS connection is closed by the timeout manager at the idle
// timeout, and by Shutdown, with close_notify.
func TestTLSParkedConnectionsClosedByServer(t *testing.T) {
	t.Run("idle timeout", func(t *testing.T) {
		s := &Server{Handler: echo, Limits: Limits{IdleTimeout: time.Hour}}
		addr := startTLSServer(t, s)
		cs := openTLSIdle(t, addr, 3)
		waitForParked(t, s, 3)
		s.tm.SetIdleTimeout(time.Millisecond)
		for _, ic := range cs {
			ic.expectEOF(t)
		}
		waitForParked(t, s, 0)
		waitFor(t, "no open connections", func() bool { return s.OpenConns() == 0 })
	})
	t.Run("Shutdown", func(t *testing.T) {
		s := &Server{Handler: echo, Limits: Limits{IdleTimeout: time.Hour}}
		addr := startTLSServer(t, s)
		cs := openTLSIdle(t, addr, 3)
		waitForParked(t, s, 3)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := s.Shutdown(ctx); err != nil {
			t.Fatalf("Shutdown: %v", err)
		}
		if got := s.OpenConns(); got != 0 {
			t.Errorf("Shutdown returned with %d connections open", got)
		}
		if got := s.stats.parked.Load(); got != 0 {
			t.Errorf("Shutdown returned with %d connections parked", got)
		}
		for _, ic := range cs {
			ic.expectEOF(t)
		}
	})
	t.Run("Drain", func(t *testing.T) {
		s := &Server{Handler: echo, Limits: Limits{IdleTimeout: time.Hour}}
		addr := startTLSServer(t, s)
		cs := openTLSIdle(t, addr, 2)
		waitForParked(t, s, 2)
		drained := make(chan error, 1)
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			drained <- s.Drain(ctx)
		}()
		waitFor(t, "draining", s.draining.Load)
		for i, ic := range cs {
			path := fmt.Sprintf("/c%d/last", i)
			ic.send(t, path)
			resp, body := readResponse(t, ic.br, "GET")
			if resp.StatusCode != 200 || !resp.Close || !strings.HasPrefix(body, "GET "+path+" ") {
				t.Errorf("GET %s while draining: %d, close %v, %q", path, resp.StatusCode, resp.Close, body)
			}
			ic.expectEOF(t)
		}
		if err := <-drained; err != nil {
			t.Errorf("Drain: %v", err)
		}
	})
}

// A client that closes its parked TLS connection has it released.
func TestTLSParkedConnectionReleasedWhenClientCloses(t *testing.T) {
	s := &Server{Handler: echo, Limits: Limits{IdleTimeout: time.Hour}}
	addr := startTLSServer(t, s)
	cs := openTLSIdle(t, addr, 4)
	waitForParked(t, s, 4)
	for i, ic := range cs {
		if i%2 == 1 {
			ic.raw.SetLinger(0) // RST, without close_notify
			ic.raw.Close()
			continue
		}
		ic.tc.Close() // close_notify, then FIN
	}
	waitForParked(t, s, 0)
	waitFor(t, "no open connections", func() bool { return s.OpenConns() == 0 })
}

// A request that arrives as a TLS connection parks, after it found
// nothing held and before its socket is in the park set, wakes it.
func TestTLSRequestArrivingAsConnectionParks(t *testing.T) {
	s := &Server{Handler: echo, Limits: Limits{IdleTimeout: time.Hour}}
	client := make(chan tlsIdle, 1)
	raced := make(chan bool, 1)
	var first atomic.Bool
	first.Store(true)
	s.parkHook = func(c *conn) {
		if c.served == 0 || !first.CompareAndSwap(true, false) {
			return
		}
		ic := <-client
		ic.send(t, "/raced")
		arrived := false
		for deadline := time.Now().Add(10 * time.Second); !arrived && time.Now().Before(deadline); {
			c.peer.Control(func(fd uintptr) {
				n, err := unix.IoctlGetInt(int(fd), unix.SIOCINQ)
				arrived = err == nil && n > 0
			})
			if !arrived {
				time.Sleep(time.Millisecond)
			}
		}
		raced <- arrived
	}
	addr := startTLSServer(t, s)
	ic := openTLSIdle(t, addr, 1)[0]
	client <- ic
	select {
	case ok := <-raced:
		if !ok {
			t.Fatal("the request never reached the server's socket")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the connection never parked")
	}
	ic.expect(t, "/raced")
	waitForParked(t, s, 1)
}

package engine

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// startServer serves s on a fresh loopback port and returns its address.
// The server is shut down when the test ends.
func startServer(t testing.TB, s *Server) string {
	t.Helper()
	ln, err := Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	return serveOn(t, s, ln)
}

func serveOn(t testing.TB, s *Server, ln net.Listener) string {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- s.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := s.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
		if err := <-done; err != ErrServerClosed {
			t.Errorf("Serve returned %v, want ErrServerClosed", err)
		}
	})
	return ln.Addr().String()
}

// echo answers with a description of the request it saw.
var echo = HandlerFunc(func(w ResponseWriter, r *Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		Error(w, 400, err.Error())
		return
	}
	w.Header().Set("Content-Type", "text/plain")
	fmt.Fprintf(writerOnly{w}, "%s %s path=%s query=%s host=%s minor=%d body=%q",
		r.Method, r.Target, r.Path, r.Query, r.Host, r.ProtoMinor, body)
	for _, f := range r.Trailer {
		fmt.Fprintf(writerOnly{w}, " trailer:%s=%s", f.Name, f.Value)
	}
})

// dial opens a client connection with a generous deadline so a broken
// server fails the test instead of hanging it.
func dial(t testing.TB, addr string) *net.TCPConn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	c.SetDeadline(time.Now().Add(10 * time.Second))
	t.Cleanup(func() { c.Close() })
	return c.(*net.TCPConn)
}

// exchange writes raw bytes, half-closes, and returns everything the
// server sends until it closes the connection.
//
// exchange and readResponse are sluicetest.Exchange and ReadResponse,
// copied: package engine's own tests cannot import sluicetest, which
// imports engine. Tests in package engine_test use sluicetest's.
func exchange(t testing.TB, addr, raw string) string {
	t.Helper()
	c := dial(t, addr)
	if _, err := io.WriteString(c, raw); err != nil {
		t.Fatal(err)
	}
	c.CloseWrite()
	b, err := io.ReadAll(c)
	if err != nil {
		t.Fatalf("reading response to %.200q: %v", raw, err)
	}
	return string(b)
}

// readResponse reads one response and its body from br.
func readResponse(t testing.TB, br *bufio.Reader, method string) (*http.Response, string) {
	t.Helper()
	resp, err := http.ReadResponse(br, &http.Request{Method: method})
	if err != nil {
		t.Fatalf("ReadResponse: %v", err)
	}
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("reading body: %v", err)
	}
	return resp, string(b)
}

// statusOf returns the status code of the first response in raw.
func statusOf(raw string) int {
	var code int
	if _, err := fmt.Sscanf(raw, "HTTP/1.1 %d", &code); err != nil {
		return 0
	}
	return code
}

// countingListener wraps accepted connections to count their Write calls.
type countingListener struct {
	net.Listener
	writes atomic.Int64
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &countingConn{Conn: c, n: &l.writes}, nil
}

type countingConn struct {
	net.Conn
	n *atomic.Int64
}

func (c *countingConn) Write(p []byte) (int, error) {
	c.n.Add(1)
	return c.Conn.Write(p)
}

// SyscallConn lets the engine wait for input without a buffer, as it
// does on the connection wrapped.
func (c *countingConn) SyscallConn() (syscall.RawConn, error) {
	return c.Conn.(syscall.Conn).SyscallConn()
}

// waitFor polls cond until it holds or 10s pass; it does not assert timing.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// waitForIdle waits until n of s's connections are idle: done with their
// last request and waiting for the next (s's timeout manager counts them).
func waitForIdle(t testing.TB, s *Server, n int) {
	t.Helper()
	s.init() // orders the test's reads of s.tm after Serve's init
	waitFor(t, fmt.Sprintf("%d idle connections", n), func() bool { return s.tm.Idle() == n })
}

// acceptedListener passes each connection it accepts to the server
// unchanged and also sends it on conns (if there is room), so that a test
// can look at the server's end of a socket.
type acceptedListener struct {
	net.Listener
	conns chan net.Conn
}

func (l *acceptedListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		select {
		case l.conns <- c:
		default:
		}
	}
	return c, err
}

func mustContain(t testing.TB, got string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(got, w) {
			t.Errorf("response lacks %q:\n%s", w, got)
		}
	}
}

func discardLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

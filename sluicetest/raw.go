package sluicetest

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// RawTimeout bounds a connection of Exchange or RoundTrip: a server that
// neither answers nor closes fails the test instead of stalling it. It
// is a bound on a hung test, not a figure the test asserts.
const RawTimeout = time.Minute

// Exchange writes raw, the bytes of one or more requests, on a new
// connection to addr, half-closes it, and returns everything the server
// sends until it closes the connection: what a test of pipelining,
// framing or a refused request reads, byte for byte. addr is a TCP
// address ("127.0.0.1:8080", or a base URL "http://127.0.0.1:8080", as
// Server.URL) or "unix:" and a socket's path. Any error, or the server
// still sending after RawTimeout, fails the test at once.
func Exchange(t testing.TB, addr, raw string) string {
	t.Helper()
	return exchange(t, dialRaw(t, addr), raw)
}

// Exchange is the package's Exchange on a connection from s.Dial: over
// TLS to a TLS server.
func (s *Server) Exchange(t testing.TB, raw string) string {
	t.Helper()
	return exchange(t, s.dialRaw(t), raw)
}

func exchange(t testing.TB, c net.Conn, raw string) string {
	t.Helper()
	defer c.Close()
	if _, err := io.WriteString(c, raw); err != nil {
		t.Fatalf("writing %.200q: %v", raw, err)
	}
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		cw.CloseWrite()
	}
	b, err := io.ReadAll(c)
	if err != nil {
		t.Fatalf("reading the response to %.200q: %v", raw, err)
	}
	return string(b)
}

// RoundTrip writes raw, the bytes of one request, on a new connection to
// addr (as Exchange takes it) and returns the server's response, its
// body read into a string, before it closes the connection. The
// connection stays open for writing meanwhile, so a server waiting for
// more of the request waits. The response is read as one to the method
// raw starts with, so a HEAD's has no body. Any error fails the test at
// once.
func RoundTrip(t testing.TB, addr, raw string) (*http.Response, string) {
	t.Helper()
	return roundTrip(t, dialRaw(t, addr), raw)
}

// RoundTrip is the package's RoundTrip on a connection from s.Dial: over
// TLS to a TLS server.
func (s *Server) RoundTrip(t testing.TB, raw string) (*http.Response, string) {
	t.Helper()
	return roundTrip(t, s.dialRaw(t), raw)
}

func roundTrip(t testing.TB, c net.Conn, raw string) (*http.Response, string) {
	t.Helper()
	defer c.Close()
	return (&Conn{Conn: c, R: bufio.NewReader(c)}).RoundTrip(t, raw)
}

// ReadResponse reads one response to a request with method from br, as
// net/http does, and its body into a string, closing the body: the
// responses on a connection a test keeps open, one after another. Any
// error fails the test at once.
func ReadResponse(t testing.TB, br *bufio.Reader, method string) (*http.Response, string) {
	t.Helper()
	resp, err := http.ReadResponse(br, &http.Request{Method: method})
	if err != nil {
		t.Fatalf("reading the response to %s: %v", method, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("reading the body of the response to %s: %v", method, err)
	}
	return resp, string(b)
}

// dialRaw connects to addr as Exchange takes it, with RawTimeout as the
// connection's deadline.
func dialRaw(t testing.TB, addr string) net.Conn {
	t.Helper()
	network := "tcp"
	if path, ok := strings.CutPrefix(addr, "unix:"); ok {
		network, addr = "unix", path
	} else {
		addr = strings.TrimPrefix(addr, "http://")
	}
	c, err := net.Dial(network, addr)
	if err != nil {
		t.Fatal(err)
	}
	c.SetDeadline(time.Now().Add(RawTimeout))
	return c
}

// dialRaw is s.Dial with RawTimeout as the connection's deadline.
func (s *Server) dialRaw(t testing.TB) net.Conn {
	t.Helper()
	c, err := s.Dial()
	if err != nil {
		t.Fatal(err)
	}
	c.SetDeadline(time.Now().Add(RawTimeout))
	return c
}

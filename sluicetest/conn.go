package sluicetest

import (
	"bufio"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// A Conn is a connection a test keeps open to send requests on one after
// another, as a keep-alive client does, and to read each response when
// it chooses: a request held in flight across a reload, say. Responses
// are read through R, never from the connection itself, so that nothing
// R has buffered is lost. A Conn is used by one goroutine at a time.
type Conn struct {
	net.Conn
	// R reads from the connection: pass it to ReadResponse.
	R *bufio.Reader
}

// Dial opens a Conn to addr, as Exchange takes it, with RawTimeout as its
// deadline, and closes it when the test ends. Failing to connect fails
// the test at once.
func Dial(t testing.TB, addr string) *Conn {
	t.Helper()
	return newConn(t, dialRaw(t, addr))
}

// DialTLS opens a Conn over TLS with cfg to addr, a TCP address
// ("127.0.0.1:8443", or a base URL "https://127.0.0.1:8443"), its
// handshake done, with RawTimeout as its deadline, and closes it when
// the test ends. Its Conn is the *tls.Conn; ConnectionState reports the
// handshake. A failed handshake fails the test at once: a test that
// expects it refused calls tls.Dial itself.
func DialTLS(t testing.TB, addr string, cfg *tls.Config) *Conn {
	t.Helper()
	return newConn(t, dialTLS(t, addr, cfg))
}

// Handshake makes a TLS handshake with cfg to addr, as DialTLS takes it,
// closes the connection and returns what the handshake gave: the
// certificate served, the OCSP response stapled, the version and ALPN
// protocol agreed. It sends no request, so a test may call it in a
// WaitFor loop without leaving connections open. A failed handshake
// fails the test at once.
func Handshake(t testing.TB, addr string, cfg *tls.Config) tls.ConnectionState {
	t.Helper()
	c := dialTLS(t, addr, cfg)
	defer c.Close()
	return c.ConnectionState()
}

// RoundTrip writes raw, the bytes of one request, on c and reads the
// response, its body into a string, as ReadResponse does, with the
// method raw starts with. Any error fails the test at once.
func (c *Conn) RoundTrip(t testing.TB, raw string) (*http.Response, string) {
	t.Helper()
	if _, err := io.WriteString(c.Conn, raw); err != nil {
		t.Fatalf("writing %.200q: %v", raw, err)
	}
	method, _, _ := strings.Cut(raw, " ")
	return ReadResponse(t, c.R, method)
}

// ConnectionState reports the TLS handshake of a Conn from DialTLS; it
// is the zero ConnectionState for a Conn without TLS.
func (c *Conn) ConnectionState() tls.ConnectionState {
	if tc, ok := c.Conn.(*tls.Conn); ok {
		return tc.ConnectionState()
	}
	return tls.ConnectionState{}
}

func newConn(t testing.TB, nc net.Conn) *Conn {
	t.Cleanup(func() { nc.Close() })
	return &Conn{Conn: nc, R: bufio.NewReader(nc)}
}

// dialTLS connects to addr over TLS with cfg, with RawTimeout as the
// connection's deadline, its handshake bounded by it too.
func dialTLS(t testing.TB, addr string, cfg *tls.Config) *tls.Conn {
	t.Helper()
	addr = strings.TrimPrefix(addr, "https://")
	d := &tls.Dialer{NetDialer: &net.Dialer{Deadline: time.Now().Add(RawTimeout)}, Config: cfg}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatalf("TLS handshake with %s: %v", addr, err)
	}
	c.SetDeadline(time.Now().Add(RawTimeout))
	return c.(*tls.Conn)
}

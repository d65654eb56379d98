package proxy

import (
	"bufio"
	"io"
	"net"
	"sync/atomic"
	"testing"

	"github.com/sluice-server/sluice/sluicetest"
)

// firstThenSecond is an upstream whose first connection answers its first
// request with first (a response "first", and maybe more), runs then, and
// answers any later request on it with "late"; every other connection
// answers "second". It counts its connections.
func firstThenSecond(t *testing.T, conns *atomic.Int64, first string, then func(c net.Conn)) string {
	return rawServer(t, func(c net.Conn, br *bufio.Reader) {
		isFirst := conns.Add(1) == 1
		if _, err := readHead(br); err != nil {
			return
		}
		if !isFirst {
			io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\nsecond")
			return
		}
		io.WriteString(c, first)
		then(c)
		for {
			if _, err := readHead(br); err != nil {
				return
			}
			io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nlate")
		}
	})
}

const firstResponse = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nfirst"

// Bytes that come with a response, past the end its framing gives, are
// dropped and the connection closed: never read as the next response,
// nor left to shift the responses that follow on that connection.
func TestBytesPastTheResponse(t *testing.T) {
	var conns atomic.Int64
	// The first response and the extra bytes leave in one write.
	up := firstThenSecond(t, &conns, firstResponse+"HTTP/1.1 200 OK\r\nContent-Length: 8\r\n\r\nsmuggled", func(net.Conn) {})
	srv, _ := front(t, Options{Upstreams: []string{up}, Retries: -1})
	if resp, body := sluicetest.Get(t, srv.URL+"/"); resp.StatusCode != 200 || body != "first" {
		t.Fatalf("first request: %d %q", resp.StatusCode, body)
	}
	if resp, body := sluicetest.Get(t, srv.URL+"/"); resp.StatusCode != 200 || body != "second" {
		t.Fatalf("second request answered %d %q, want %q from a new connection", resp.StatusCode, body, "second")
	}
	if n := conns.Load(); n != 2 {
		t.Errorf("%d upstream connections, want 2", n)
	}
}

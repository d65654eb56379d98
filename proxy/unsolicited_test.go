//go:build linux

package proxy

import (
	"bufio"
	"io"
	"net"
	"sync/atomic"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/sluice-server/sluice/sluicetest"
)

// get fetches path through srv and returns the body, failing the test on
// an error or a status other than 200.
func get(t *testing.T, url string) string {
	t.Helper()
	resp, err := sluicetest.Client.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET %s: %d %q %v", url, resp.StatusCode, body, err)
	}
	return string(body)
}

// firstThenSecond is an upstream whose first connection answers its first
// request with first (a response "first", and maybe more), runs then, and
// answers any later request on it with "late"; every other connection
// answers "second". It counts its connections.
func firstThenSecond(t *testing.T, conns *atomic.Int64, first string, then func(c net.Conn)) string {
	return rawServer(t, func(c net.Conn, br *bufio.Reader) {
		isFirst := conns.Add(1) == 1
		if _, err := readRequestHead(br); err != nil {
			return
		}
		if !isFirst {
			io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\nsecond")
			return
		}
		io.WriteString(c, first)
		then(c)
		for {
			if _, err := readRequestHead(br); err != nil {
				return
			}
			io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nlate")
		}
	})
}

const firstResponse = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nfirst"

// A response an upstream sends on an idle connection, unasked, is never
// taken for the next request's (RFC 9112 §6.3): the peek before reuse
// finds it, the connection is closed, and the request goes on a new one.
func TestUnsolicitedResponseOnIdleConnection(t *testing.T) {
	proceed, sent := make(chan struct{}), make(chan struct{})
	var conns atomic.Int64
	up := firstThenSecond(t, &conns, firstResponse, func(c net.Conn) {
		<-proceed
		io.WriteString(c, "HTTP/1.1 200 OK\r\nContent-Length: 8\r\n\r\nsmuggled")
		close(sent)
	})
	srv, p := front(t, Options{Upstreams: []string{up}, Retries: -1})
	if got := get(t, srv.URL+"/"); got != "first" {
		t.Fatalf("first request: %q", got)
	}
	close(proceed)
	<-sent
	// The bytes are in the idle connection's receive queue before the
	// next request is sent.
	u := p.ups[0]
	sluicetest.WaitFor(t, "the unasked response at the idle connection", func() bool {
		u.mu.Lock()
		defer u.mu.Unlock()
		if len(u.idle) != 1 || u.idle[0].rc == nil {
			return false
		}
		queued := 0
		u.idle[0].rc.Control(func(fd uintptr) { queued, _ = unix.IoctlGetInt(int(fd), unix.SIOCINQ) })
		return queued > 0
	})
	if got := get(t, srv.URL+"/"); got != "second" {
		t.Fatalf("second request answered %q, want %q from a new connection", got, "second")
	}
	if n := conns.Load(); n != 2 {
		t.Errorf("%d upstream connections, want 2", n)
	}
}

// Bytes that come with a response, past the end its framing gives, are
// dropped and the connection closed: never read as the next response,
// nor left to shift the responses that follow on that connection.
func TestBytesPastTheResponse(t *testing.T) {
	var conns atomic.Int64
	// The first response and the extra bytes leave in one write.
	up := firstThenSecond(t, &conns, firstResponse+"HTTP/1.1 200 OK\r\nContent-Length: 8\r\n\r\nsmuggled", func(net.Conn) {})
	srv, _ := front(t, Options{Upstreams: []string{up}, Retries: -1})
	if got := get(t, srv.URL+"/"); got != "first" {
		t.Fatalf("first request: %q", got)
	}
	if got := get(t, srv.URL+"/"); got != "second" {
		t.Fatalf("second request answered %q, want %q from a new connection", got, "second")
	}
	if n := conns.Load(); n != 2 {
		t.Errorf("%d upstream connections, want 2", n)
	}
}

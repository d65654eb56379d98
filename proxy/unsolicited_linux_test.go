package proxy

import (
	"io"
	"net"
	"sync/atomic"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/sluice-server/sluice/sluicetest"
)

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
	if resp, body := sluicetest.Get(t, srv.URL+"/"); resp.StatusCode != 200 || body != "first" {
		t.Fatalf("first request: %d %q", resp.StatusCode, body)
	}
	close(proceed)
	<-sent
	// The bytes are in the idle connection's receive queue before the
	// next request is sent.
	u := p.grp.Hosts()[0]
	sluicetest.WaitFor(t, "the unasked response at the idle connection", func() bool {
		idle := u.Idle()
		if len(idle) != 1 || idle[0].rc == nil {
			return false
		}
		queued := 0
		idle[0].rc.Control(func(fd uintptr) { queued, _ = unix.IoctlGetInt(int(fd), unix.SIOCINQ) })
		return queued > 0
	})
	if resp, body := sluicetest.Get(t, srv.URL+"/"); resp.StatusCode != 200 || body != "second" {
		t.Fatalf("second request answered %d %q, want %q from a new connection", resp.StatusCode, body, "second")
	}
	if n := conns.Load(); n != 2 {
		t.Errorf("%d upstream connections, want 2", n)
	}
}

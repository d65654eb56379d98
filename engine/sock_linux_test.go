package engine

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/sluice-server/sluice/sock"
	"golang.org/x/sys/unix"
)

// A request head that arrives in pieces makes the connection wait through
// the poller; it is answered once complete, and the connection then keeps
// serving.
func TestSlowHeadJoinsPoller(t *testing.T) {
	addr := startServer(t, &Server{Handler: echo})
	before := sock.PolledConns()
	c := dial(t, addr)
	io.WriteString(c, "GET /slow HTTP/1.1\r\n")
	// The server reads the first piece, finds the head incomplete, and
	// waits for more through the poller.
	waitFor(t, "the connection to join the poller", func() bool { return sock.PolledConns() > before })
	io.WriteString(c, "Host: a\r\n\r\n")
	br := bufio.NewReader(c)
	resp, body := readResponse(t, br, "GET")
	if resp.StatusCode != 200 || !strings.HasPrefix(body, "GET /slow ") {
		t.Fatalf("got %d %q", resp.StatusCode, body)
	}
	io.WriteString(c, "GET /again HTTP/1.1\r\nHost: a\r\n\r\n")
	if resp, body = readResponse(t, br, "GET"); resp.StatusCode != 200 || !strings.HasPrefix(body, "GET /again ") {
		t.Fatalf("second request: %d %q", resp.StatusCode, body)
	}
}

// A response larger than the socket buffers (16 MiB; loopback buffers
// hold at most a few) makes the write wait through the poller; every byte
// arrives in order.
func TestLargeResponseToSlowReader(t *testing.T) {
	const size = 16 << 20
	payload := bytes.Repeat([]byte("0123456789abcdef"), size/16)
	addr := startServer(t, &Server{Handler: HandlerFunc(func(w ResponseWriter, r *Request) {
		w.Header().SetContentLength(size)
		for off := 0; off < size; off += 1 << 20 {
			if _, err := w.Write(payload[off : off+1<<20]); err != nil {
				return
			}
		}
	})})
	before := sock.PolledConns()
	c := dial(t, addr)
	io.WriteString(c, "GET / HTTP/1.1\r\nHost: a\r\n\r\n")
	br := bufio.NewReader(c)
	resp, body := readResponse(t, br, "GET")
	if sock.PolledConns() == before {
		t.Error("16 MiB left without the write ever waiting through the poller")
	}
	if resp.StatusCode != 200 || len(body) != size || body != string(payload) {
		t.Fatalf("status %d, %d bytes, intact %v", resp.StatusCode, len(body), body == string(payload))
	}
}

// On a wildcard listener the local address is looked up per connection;
// the remote address is the client's.
func TestSockConnAddresses(t *testing.T) {
	type addrs struct{ local, remote string }
	got := make(chan addrs, 1)
	s := &Server{Handler: HandlerFunc(func(w ResponseWriter, r *Request) {
		got <- addrs{r.LocalAddr.String(), r.RemoteAddr.String()}
		w.WriteString("ok")
	})}
	for _, network := range []struct{ listen, dial string }{
		{"0.0.0.0:0", "127.0.0.1"},
		{"127.0.0.1:0", "127.0.0.1"},
		{"[::1]:0", "::1"},
	} {
		t.Run(network.listen, func(t *testing.T) {
			ln, err := Listen("tcp", network.listen)
			if network.dial == "::1" && (errors.Is(err, syscall.EADDRNOTAVAIL) || errors.Is(err, syscall.EAFNOSUPPORT)) {
				t.Skip("no IPv6 loopback:", err) // a kernel or container without IPv6
			}
			if err != nil {
				t.Fatalf("Listen %s: %v", network.listen, err)
			}
			_, port, _ := net.SplitHostPort(ln.Addr().String())
			srv := &Server{Handler: s.Handler}
			serveOn(t, srv, ln)
			c := dial(t, net.JoinHostPort(network.dial, port))
			fmt.Fprintf(c, "GET / HTTP/1.1\r\nHost: a\r\n\r\n")
			if _, err := c.Read(make([]byte, 256)); err != nil {
				t.Fatal(err)
			}
			a := <-got
			if want := net.JoinHostPort(network.dial, port); a.local != want {
				t.Errorf("LocalAddr %s, want %s", a.local, want)
			}
			if a.remote != c.LocalAddr().String() {
				t.Errorf("RemoteAddr %s, want the client's %s", a.remote, c.LocalAddr())
			}
		})
	}
}

// Closing the listener ends a Serve blocked in Accept.
func TestCloseListenerEndsServe(t *testing.T) {
	ln, err := Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{Handler: echo}
	done := make(chan error, 1)
	go func() { done <- s.Serve(ln) }()
	// Once a connection was served, Serve is back in Accept (or on its way).
	exchange(t, ln.Addr().String(), "GET / HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n")
	ln.Close()
	select {
	case err := <-done:
		if err == nil || err == ErrServerClosed {
			t.Errorf("Serve returned %v, want the listener's error", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Serve did not return after its listener closed")
	}
	s.Close()
}

// Listen refuses an address another socket listens on; ListenShared
// sockets share one, and the kernel spreads connections among them.
func TestListenRefusesBusyAddress(t *testing.T) {
	ln, err := Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	addr := ln.Addr().String()
	if ln2, err := Listen("tcp", addr); !errors.Is(err, syscall.EADDRINUSE) {
		if ln2 != nil {
			ln2.Close()
		}
		t.Fatalf("second Listen on %s: %v, want EADDRINUSE", addr, err)
	}
	if ln2, err := ListenShared("tcp", addr); err == nil {
		ln2.Close()
		t.Fatalf("ListenShared joined %s, which Listen holds alone", addr)
	}

	a, err := ListenShared("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	b, err := ListenShared("tcp", a.Addr().String())
	if err != nil {
		a.Close()
		t.Fatalf("second ListenShared: %v", err)
	}
	hello := func(who string) Handler {
		return HandlerFunc(func(w ResponseWriter, r *Request) { io.WriteString(w, who) })
	}
	serveOn(t, &Server{Handler: hello("a")}, a)
	serveOn(t, &Server{Handler: hello("b")}, b)
	seen := map[string]bool{}
	for i := 0; i < 200 && len(seen) < 2; i++ {
		out := exchange(t, a.Addr().String(), "GET / HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
		seen[out[len(out)-1:]] = true
	}
	if !seen["a"] || !seen["b"] {
		t.Errorf("connections reached %v, want both listeners", seen)
	}
}

// The listener defers accepting (TCP_DEFER_ACCEPT) while most requests
// close their connections, and not while they keep them open (see
// deferaccept.go); it starts not deferring. The test looks at the
// traffic itself (tuneDeferAccept) instead of waiting for the reaper, and
// repeats a round of traffic until the setting follows, since the reaper
// may look at part of a round.
func TestDeferAcceptFollowsTraffic(t *testing.T) {
	s := &Server{Handler: echo, Logger: discardLogger()}
	ln, err := Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := serveOn(t, s, ln)
	deferring := func() bool {
		f, err := sock.ListenerFile(ln) // a descriptor of the same socket
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		v, _ := unix.GetsockoptInt(int(f.Fd()), unix.IPPROTO_TCP, unix.TCP_DEFER_ACCEPT)
		return v > 0
	}
	if deferring() {
		t.Fatal("a new listener defers accepting")
	}
	waitFor(t, "deferring after short connections", func() bool {
		for range deferMinRequests {
			if got := exchange(t, addr, "GET /short HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"); !strings.HasPrefix(got, "HTTP/1.1 200 ") {
				t.Fatalf("short connection: %q", got)
			}
		}
		s.tuneDeferAccept()
		return deferring()
	})
	waitFor(t, "not deferring after keep-alive connections", func() bool {
		for range deferMinRequests / 4 {
			c := dial(t, addr)
			br := bufio.NewReader(c)
			for i := range 4 {
				fmt.Fprintf(c, "GET /ka%d HTTP/1.1\r\nHost: x\r\n\r\n", i)
				if resp, _ := readResponse(t, br, "GET"); resp.StatusCode != 200 {
					t.Fatalf("keep-alive request %d: %d", i, resp.StatusCode)
				}
			}
			c.Close()
		}
		s.tuneDeferAccept()
		return !deferring()
	})
}

// TestControlBesideParking calls the connection's RawConn.Control from
// another goroutine, over and over, while the connection parks, is woken,
// waits in the runtime's poller and parks again (unpoll moves the socket
// to a new descriptor and closes the old). Each call must get an open
// descriptor of this connection: the race detector catches a read of the
// descriptor beside unpoll's replacing it, and getpeername a descriptor
// that is no longer this connection's.
func TestControlBesideParking(t *testing.T) {
	// No idle notice until the test asks; a wake is soon: it waits in
	// the runtime's poller after each answer.
	s, al := parkTestServer(t, time.Hour)
	addr := serveOn(t, s, al)
	ic := openIdle(t, addr, 1)[0]
	waitForParked(t, s, 1)
	sc := (<-al.conns).(*sock.Conn)
	rc, _ := sc.SyscallConn()
	want := ic.c.LocalAddr().(*net.TCPAddr).Port

	stop := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		for calls := 0; ; calls++ {
			select {
			case <-stop:
				if calls == 0 {
					done <- errors.New("Control never ran")
				}
				done <- nil
				return
			default:
			}
			port := -1
			err := rc.Control(func(fd uintptr) {
				if sa, err := unix.Getpeername(int(fd)); err == nil {
					if a, ok := sa.(*unix.SockaddrInet4); ok {
						port = a.Port
					}
				}
			})
			if err == nil && port != want {
				done <- fmt.Errorf("call %d: Control's descriptor is peer port %d's, want %d's", calls, port, want)
				return
			}
		}
	}()
	for round := range 3 {
		ic.get(t, fmt.Sprintf("/soon%d", round))
		waitFor(t, "the connection to wait in the runtime's poller", func() bool { return sc.Polled() })
		s.tm.SetIdleNotice(10 * time.Millisecond)
		waitForParked(t, s, 1)
		s.tm.SetIdleNotice(0)
	}
	close(stop)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

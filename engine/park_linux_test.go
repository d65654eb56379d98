package engine

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/sluice-server/sluice/engine/timeout"
	"github.com/sluice-server/sluice/sock"
	"golang.org/x/sys/unix"
)

// The tests of parking (park.go) count parked connections with the
// server's own counter and wait for it; none asserts how long anything
// takes.

// waitForParked waits until n of s's connections are parked.
func waitForParked(t testing.TB, s *Server, n int64) {
	t.Helper()
	waitFor(t, fmt.Sprintf("%d parked connections", n), func() bool { return s.stats.parked.Load() == n })
}

// idleClient is a client connection that has made requests and reads
// their answers.
type idleClient struct {
	c  *net.TCPConn
	br *bufio.Reader
}

// openIdle opens n connections to addr that each make one request and
// read its answer.
func openIdle(t *testing.T, addr string, n int) []idleClient {
	t.Helper()
	cs := make([]idleClient, n)
	for i := range cs {
		c := dial(t, addr)
		cs[i] = idleClient{c, bufio.NewReader(c)}
		cs[i].get(t, fmt.Sprintf("/c%d/first", i))
	}
	return cs
}

// parkingServer serves echo on a new Server whose connections get no
// idle notice and whose wakes are never late (sparse) until the test says
// otherwise, with hook (if not nil) as its park hook. It opens n client
// connections that have each made one request, waits until all n are
// parked, and returns the clients and the server's end of each socket, in
// the same order.
func parkingServer(t *testing.T, n int, hook func(*conn)) (*Server, []idleClient, []*sock.Conn) {
	t.Helper()
	ln, err := Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	al := &acceptedListener{Listener: ln, conns: make(chan net.Conn, n)}
	s := &Server{Handler: echo, Limits: Limits{IdleTimeout: time.Hour}}
	s.init()
	s.tm.SetIdleNotice(0)
	s.sparseAfter.Store(int64(time.Hour))
	s.parkHook = hook
	addr := serveOn(t, s, al)
	cs := openIdle(t, addr, n) // one at a time, so accepted in this order
	waitForParked(t, s, int64(n))
	server := make([]*sock.Conn, n)
	for i := range server {
		server[i] = (<-al.conns).(*sock.Conn)
	}
	return s, cs, server
}

// parkTestServer returns a Server serving echo whose connections get no
// idle notice and whose wakes are late (sparse) after sparse (0: every
// wake, so that each answer parks again), and a listener that hands on
// what it accepts; the caller sets any hooks and serves it (serveOn).
func parkTestServer(t *testing.T, sparse time.Duration) (*Server, *acceptedListener) {
	t.Helper()
	ln, err := Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	al := &acceptedListener{Listener: ln, conns: make(chan net.Conn, 1)}
	s := &Server{Handler: echo, Limits: Limits{IdleTimeout: time.Hour}}
	s.init()
	s.tm.SetIdleNotice(0)
	s.sparseAfter.Store(int64(sparse))
	return s, al
}

// get sends a GET for path and checks that echo answered it.
func (ic idleClient) get(t *testing.T, path string) {
	t.Helper()
	if _, err := io.WriteString(ic.c, "GET "+path+" HTTP/1.1\r\nHost: a\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	ic.expect(t, path)
}

// expect reads a response of echo to a GET for path.
func (ic idleClient) expect(t *testing.T, path string) {
	t.Helper()
	resp, body := readResponse(t, ic.br, "GET")
	if resp.StatusCode != 200 || !strings.HasPrefix(body, "GET "+path+" ") {
		t.Fatalf("GET %s: %d %q", path, resp.StatusCode, body)
	}
}

// expectEOF checks that the server closed the connection, cleanly and
// with nothing more sent.
func (ic idleClient) expectEOF(t *testing.T) {
	t.Helper()
	if rest, err := io.ReadAll(ic.br); err != nil || len(rest) != 0 {
		t.Errorf("read %q, %v; want EOF: the server closes the connection", rest, err)
	}
}

// Keep-alive connections park after their first exchange, with no
// goroutine, and are answered when they speak again. One that speaks
// again soon waits for its next request in the runtime's poller (which
// its socket then joins) and parks at the idle notice, out of the poller;
// one that speaks after a long park parks again at once.
func TestParkedConnectionsSpeakAgain(t *testing.T) {
	const n = 8
	var polledParks atomic.Int64
	var parked sync.Map // every *conn that parked
	s, cs, server := parkingServer(t, n, func(c *conn) {
		parked.Store(c, true)
		if c.nc.(*sock.Conn).Polled() {
			polledParks.Add(1)
		}
	})
	allNoticed := func() bool {
		all := true
		parked.Range(func(c, _ any) bool {
			all = c.(*conn).th.Noticed()
			return all
		})
		return all
	}
	checkOutOfPoller := func(round int) {
		t.Helper()
		for i, sc := range server {
			if sc.Polled() {
				t.Errorf("round %d: connection %d is parked in the runtime's poller too", round, i)
			}
		}
	}
	// Speaking soon: no idle notice has come.
	for i, ic := range cs {
		ic.get(t, fmt.Sprintf("/c%d/soon", i))
	}
	waitForParked(t, s, 0)
	s.tm.SetIdleNotice(10 * time.Millisecond)
	waitForParked(t, s, n)
	if got := polledParks.Load(); got != n {
		t.Errorf("%d connections parked from the runtime's poller, want %d", got, n)
	}
	checkOutOfPoller(0)
	// Speaking after a long park.
	s.sparseAfter.Store(0)
	for round := 1; round <= 2; round++ {
		waitFor(t, "the idle notice", allNoticed)
		for i, ic := range cs {
			ic.get(t, fmt.Sprintf("/c%d/r%d", i, round))
		}
		waitForParked(t, s, n)
		checkOutOfPoller(round)
	}
	if got := polledParks.Load(); got != n {
		t.Errorf("%d connections parked from the runtime's poller, want %d: those woken after a long park waited there", got, n)
	}
	if got := s.OpenConns(); got != n {
		t.Errorf("%d connections open, want %d", got, n)
	}
}

// A parked connection is closed by the timeout manager at the idle
// timeout, and by Shutdown; both take it out of the park set.
func TestParkedConnectionsClosedByServer(t *testing.T) {
	t.Run("idle timeout", func(t *testing.T) {
		s := &Server{Handler: echo, Limits: Limits{IdleTimeout: time.Hour}}
		addr := startServer(t, s)
		cs := openIdle(t, addr, 3)
		waitForParked(t, s, 3)
		s.tm.SetIdleTimeout(time.Millisecond) // what a crowded server does
		for _, ic := range cs {
			ic.expectEOF(t)
		}
		waitForParked(t, s, 0)
		waitFor(t, "no open connections", func() bool { return s.OpenConns() == 0 })
	})
	t.Run("Shutdown", func(t *testing.T) {
		s := &Server{Handler: echo, Limits: Limits{IdleTimeout: time.Hour}}
		ln, err := Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- s.Serve(ln) }()
		cs := openIdle(t, ln.Addr().String(), 3)
		waitForParked(t, s, 3)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := s.Shutdown(ctx); err != nil {
			t.Fatalf("Shutdown: %v", err)
		}
		if err := <-done; err != ErrServerClosed {
			t.Errorf("Serve: %v", err)
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
}

// A client that closes its parked connection, with a FIN or with a RST,
// has it released: nothing stays parked or open.
func TestParkedConnectionReleasedWhenClientCloses(t *testing.T) {
	s := &Server{Handler: echo, Limits: Limits{IdleTimeout: time.Hour}}
	addr := startServer(t, s)
	cs := openIdle(t, addr, 6)
	waitForParked(t, s, 6)
	for i, ic := range cs {
		if i%2 == 1 {
			ic.c.SetLinger(0) // close sends RST
		}
		ic.c.Close()
	}
	waitForParked(t, s, 0)
	waitFor(t, "no open connections", func() bool { return s.OpenConns() == 0 })
}

// Bytes that arrive as a connection parks, after its last read found
// nothing and before it is parked, wake it: a request is answered, a FIN
// closes it. Both as its socket joins the park set (the park after its
// first exchange) and when it is in the set already (a sparse
// connection parking again, which makes no system call, so only the
// reader's note of the bytes tells it they came).
func TestBytesArrivingAsConnectionParks(t *testing.T) {
	for _, again := range []bool{false, true} {
		name := "joining the set"
		if again {
			name = "in the set"
		}
		t.Run(name, func(t *testing.T) { testBytesArrivingAsConnectionParks(t, again) })
	}
}

func testBytesArrivingAsConnectionParks(t *testing.T, again bool) {
	for _, tc := range []struct {
		name    string
		send    func(ic idleClient)
		arrived func(fd int) bool // the server's socket holds what send sent
	}{
		{"request",
			func(ic idleClient) { io.WriteString(ic.c, "GET /raced HTTP/1.1\r\nHost: a\r\n\r\n") },
			func(fd int) bool { n, err := unix.IoctlGetInt(fd, unix.SIOCINQ); return err == nil && n > 0 }},
		{"FIN",
			func(ic idleClient) { ic.c.CloseWrite() },
			func(fd int) bool {
				p := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLRDHUP}}
				n, err := unix.Poll(p, 0)
				return err == nil && n == 1 && p[0].Revents&unix.POLLRDHUP != 0
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ln, err := Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			al := &acceptedListener{Listener: ln, conns: make(chan net.Conn, 1)}
			s := &Server{Handler: echo, Limits: Limits{IdleTimeout: time.Hour}}
			s.init()
			served := 1
			if again {
				s.sparseAfter.Store(0) // the second request's wake is late: it parks again at once
				served = 2
			}
			client := make(chan idleClient, 1)
			raced := make(chan bool, 1)
			first := true
			// The hook runs on the connection's goroutine, as it parks
			// after its first (or second) exchange, not as it waits for
			// its first request, which it may do parked too.
			s.parkHook = func(c *conn) {
				if !first || c.served != served {
					return
				}
				if again && c.parkFd < 0 {
					t.Error("the socket is not in the park set as it parks again")
				}
				first = false
				tc.send(<-client)
				sc := <-al.conns
				arrived := false
				for deadline := time.Now().Add(10 * time.Second); !arrived && time.Now().Before(deadline); {
					rc, _ := sc.(syscall.Conn).SyscallConn()
					rc.Control(func(fd uintptr) { arrived = tc.arrived(int(fd)) })
					if !arrived {
						time.Sleep(time.Millisecond)
					}
				}
				if again {
					// The set's reader saw them come while the
					// connection was active, and noted it.
					for deadline := time.Now().Add(10 * time.Second); c.parkFlags.Load()&parkPending == 0 && time.Now().Before(deadline); {
						time.Sleep(time.Millisecond)
					}
					if c.parkFlags.Load()&parkPending == 0 {
						t.Error("the park set's reader never noted the bytes")
					}
				}
				raced <- arrived
			}
			addr := serveOn(t, s, al)
			ic := openIdle(t, addr, 1)[0]
			if again {
				waitForParked(t, s, 1)
				ic.get(t, "/second")
			}
			client <- ic
			select {
			case ok := <-raced:
				if !ok {
					t.Fatal("what the client sent never reached the server's socket")
				}
			case <-time.After(10 * time.Second):
				t.Fatal("the connection never parked")
			}
			if tc.name == "FIN" {
				ic.expectEOF(t)
				waitFor(t, "no open connections", func() bool { return s.OpenConns() == 0 })
				return
			}
			ic.expect(t, "/raced")
			waitForParked(t, s, 1)
		})
	}
}

// A connection woken after a long park (longer than the idle notice)
// parks again as soon as it has answered, without waiting in the runtime's
// poller through another idle notice: a client that speaks now and then
// costs a goroutine only while it is answered. Its socket stays in the
// park set from one park to the next, so parking again and waking cost no
// system call.
func TestSparseConnectionParksAgainAtOnce(t *testing.T) {
	ln, err := Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	al := &acceptedListener{Listener: ln, conns: make(chan net.Conn, 1)}
	// The idle notice comes after 50ms.
	s := &Server{Handler: echo, Limits: Limits{IdleTimeout: time.Hour, BusyIdleTimeout: 100 * time.Millisecond, MaxConns: 1000}}
	type park struct {
		c      *conn
		polled bool  // the socket was in the runtime's poller as it parked
		ctls   int64 // parkCtls as it parked
	}
	parks := make(chan park, 10)
	s.parkHook = func(c *conn) {
		if c.served > 0 { // not the wait for its first request
			parks <- park{c, c.nc.(*sock.Conn).Polled(), parkCtls.Load()}
		}
	}
	s.init()
	s.sparseAfter.Store(int64(10 * time.Millisecond)) // shorter than the idle notice the test waits for
	addr := serveOn(t, s, al)
	ic := openIdle(t, addr, 1)[0]
	first := recvWithin(t, "the first park", parks)
	last := first
	for i := range 3 {
		waitFor(t, "the idle notice", first.c.th.Noticed)
		ic.get(t, fmt.Sprintf("/sparse%d", i))
		again := recvWithin(t, "the connection to park again", parks)
		if again.polled {
			t.Fatalf("request %d: the connection waited in the runtime's poller before parking again", i)
		}
		// From the first park the socket may be in the set already (it
		// may have waited parked for its first request); from the
		// second it is.
		if n := again.ctls - last.ctls; i > 0 && n != 0 {
			t.Errorf("request %d: %d epoll_ctl calls on the park set from one park to the next, want 0", i, n)
		}
		last = again
	}
}

// The goroutine that parks a connection in the set may be slow to look
// at the note of bytes that came meanwhile (descheduled on a loaded
// machine, as the hook stands for here): by then the reader may have
// claimed the connection, a runner served it, and the client spoken
// again, noted while the runner was active. That note is the runner's:
// the late goroutine must leave it, or the request waits forever.
func TestLateParkerLeavesTheNextNote(t *testing.T) {
	s, al := parkTestServer(t, 0)
	late := make(chan *conn, 1)
	release := make(chan struct{})
	s.parkedHook = func(c *conn) {
		if c.served == 2 {
			late <- c
			<-release
		}
	}
	addr := serveOn(t, s, al)
	ic := openIdle(t, addr, 1)[0]
	waitForParked(t, s, 1)
	if _, err := io.WriteString(ic.c, "GET /second HTTP/1.1\r\nHost: a\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	c := recvWithin(t, "the connection to park again after its second request", late)
	ic.expect(t, "/second")
	// The reader claims it for this request, a runner answers it and,
	// as it parks, waits for moveMu, which the late goroutine holds.
	ic.get(t, "/third")
	ic.c.SetDeadline(time.Now().Add(10 * time.Second))
	defer ic.c.SetDeadline(time.Time{})
	if _, err := io.WriteString(ic.c, "GET /fourth HTTP/1.1\r\nHost: a\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the reader to note the fourth request", func() bool { return c.parkFlags.Load()&parkPending != 0 })
	close(release)
	resp, body := readResponse(t, ic.br, "GET")
	if resp.StatusCode != 200 || !strings.HasPrefix(body, "GET /fourth ") {
		t.Fatalf("GET /fourth: %d %q", resp.StatusCode, body)
	}
}

// Whether a woken connection is sparse depends on how long it was parked,
// not on the idle notice: at 10,000 busy connections each one waits in the
// park set for its turn, well past sparseAfter, and parks again after every
// answer, with no notice and no trip through the runtime's poller. Here
// every wake is late (sparseAfter 0) and notices are off.
func TestConnectionWokenLateParksAgain(t *testing.T) {
	s, al := parkTestServer(t, 0)
	addr := serveOn(t, s, al)
	ic := openIdle(t, addr, 1)[0]
	waitForParked(t, s, 1)
	sc := (<-al.conns).(*sock.Conn)
	for i := range 3 {
		ic.get(t, fmt.Sprintf("/late%d", i))
		waitForParked(t, s, 1)
		if sc.Polled() {
			t.Fatalf("request %d: the connection waited in the runtime's poller", i)
		}
	}
}

// When many parked connections speak at once, more than there are idle
// runners, the park set's reader hands them on a batch at a time, letting
// each batch's runners finish and return to the idle stack before the
// next: they are served by the runners there are, not each by a new
// goroutine (whose stack grows by copying, to exit when the idle stack is
// full). One processor, as the benchmarks give a server, so that the
// hand-over order is the scheduler's.
func TestWakesReuseRunners(t *testing.T) {
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	const n = 3 * maxIdleRunners
	s := &Server{Handler: echo, Limits: Limits{IdleTimeout: time.Hour}}
	s.init()
	s.sparseAfter.Store(0) // answered, each parks again and frees its runner
	addr := startServer(t, s)
	cs := make([]idleClient, n)
	for i := range cs {
		c := dial(t, addr)
		cs[i] = idleClient{c, bufio.NewReader(c)}
	}
	// All make their first request at once, and all park.
	for i, ic := range cs {
		io.WriteString(ic.c, fmt.Sprintf("GET /c%d/first HTTP/1.1\r\nHost: a\r\n\r\n", i))
	}
	for i, ic := range cs {
		ic.expect(t, fmt.Sprintf("/c%d/first", i))
	}
	waitForParked(t, s, n)
	before := runnersStarted.Load()
	for i, ic := range cs {
		io.WriteString(ic.c, fmt.Sprintf("GET /c%d/again HTTP/1.1\r\nHost: a\r\n\r\n", i))
	}
	for i, ic := range cs {
		ic.expect(t, fmt.Sprintf("/c%d/again", i))
	}
	if started := runnersStarted.Load() - before; started > n/4 {
		t.Errorf("%d new runners for %d connections woken at once, with %d idle runners at most; want few", started, n, maxIdleRunners)
	}
}

// A connection accepted before its request is in (the listener does not
// defer accepting here) waits for it parked, not in the runtime's poller,
// and is answered when it speaks.
func TestNewConnectionWaitsParked(t *testing.T) {
	ln, err := Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if err := sock.SetDeferAccept(ln, false); err != nil {
		t.Fatal(err)
	}
	al := &acceptedListener{Listener: ln, conns: make(chan net.Conn, 1)}
	s := &Server{Handler: echo, Limits: Limits{IdleTimeout: time.Hour}}
	s.init()
	s.tm.SetIdleNotice(0) // it parks at once, not at the notice
	addr := serveOn(t, s, al)
	c := dial(t, addr)
	sc := recvWithin(t, "the connection to be accepted", al.conns).(*sock.Conn)
	waitForParked(t, s, 1)
	if sc.Polled() {
		t.Error("the new connection joined the runtime's poller")
	}
	ic := idleClient{c, bufio.NewReader(c)}
	ic.get(t, "/late")
	waitForParked(t, s, 1) // after its first exchange
}

// A request and the client's FIN that come in one segment are reported in
// one event of the park set, which is edge-triggered and reports neither
// again: the connection answers the request and, seeing the FIN recorded,
// reads on to the end of its input and closes rather than park again.
// (The client corks its socket so that the FIN rides on the request.)
func TestRequestAndFINWhileParked(t *testing.T) {
	s := &Server{Handler: echo, Limits: Limits{IdleTimeout: time.Hour}}
	s.init()
	s.tm.SetIdleNotice(0)
	addr := startServer(t, s)
	for i := range 2 { // once soon after the park, once after a long one
		s.sparseAfter.Store(int64(i) * int64(time.Hour))
		ic := openIdle(t, addr, 1)[0]
		waitForParked(t, s, 1)
		rc, err := ic.c.SyscallConn()
		if err != nil {
			t.Fatal(err)
		}
		rc.Control(func(fd uintptr) { unix.SetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_CORK, 1) })
		io.WriteString(ic.c, "GET /last HTTP/1.1\r\nHost: a\r\n\r\n")
		ic.c.CloseWrite()
		rc.Control(func(fd uintptr) { unix.SetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_CORK, 0) })
		ic.c.SetReadDeadline(time.Now().Add(10 * time.Second))
		ic.expect(t, "/last")
		ic.expectEOF(t)
		waitForParked(t, s, 0)
	}
}

// Requests that arrive while a connection is parked are served in order:
// pipelined ones, one with a body, a head split across packets. The
// connection parks again after them.
func TestPipelinedBytesWhileParked(t *testing.T) {
	s := &Server{Handler: echo, Limits: Limits{IdleTimeout: time.Hour}}
	addr := startServer(t, s)
	ic := openIdle(t, addr, 1)[0]
	waitForParked(t, s, 1)

	io.WriteString(ic.c, "GET /p1 HTTP/1.1\r\nHost: a\r\n\r\nGET /p2 HTTP/1.1\r\nHost: a\r\n\r\nGET /p3 HTTP/1.1\r\nHost: a\r\n\r\n")
	for _, p := range []string{"/p1", "/p2", "/p3"} {
		ic.expect(t, p)
	}
	waitForParked(t, s, 1)

	io.WriteString(ic.c, "POST /body HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\nhel")
	io.WriteString(ic.c, "lo")
	resp, body := readResponse(t, ic.br, "POST")
	if resp.StatusCode != 200 || !strings.HasPrefix(body, "POST /body ") || !strings.Contains(body, `body="hello"`) {
		t.Fatalf("POST while parked: %d %q", resp.StatusCode, body)
	}
	waitForParked(t, s, 1)

	io.WriteString(ic.c, "GET /split HTTP/1.1\r\nHo")
	waitForParked(t, s, 0) // woken by the first part
	io.WriteString(ic.c, "st: a\r\n\r\n")
	ic.expect(t, "/split")
}

// At the descriptor limit, parked connections make room: the longest
// idle is closed and the new connection served.
func TestEMFILEWhileParked(t *testing.T) {
	addr, stderr := startEMFILEChild(t, "parked")
	var cs []idleClient
	for i := range 40 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(20 * time.Second))
		ic := idleClient{c.(*net.TCPConn), bufio.NewReader(c)}
		io.WriteString(c, "GET /parked HTTP/1.1\r\nHost: a\r\n\r\n")
		resp, body := readResponse(t, ic.br, "GET")
		if resp.StatusCode != 200 {
			t.Fatalf("connection %d: %d %q", i, resp.StatusCode, body)
		}
		cs = append(cs, ic)
	}
	if !strings.Contains(stderr.String(), "too many open files") {
		t.Fatalf("the child never hit EMFILE; stderr:\n%.2000s", stderr.String())
	}
	// The first connections were closed to make room; the last one is
	// open, and was served while others were parked.
	cs[0].expectEOF(t)
	last := cs[len(cs)-1]
	io.WriteString(last.c, "GET /parked HTTP/1.1\r\nHost: a\r\n\r\n")
	resp, body := readResponse(t, last.br, "GET")
	if resp.StatusCode != 200 || body == "parked=0" {
		t.Errorf("last connection: %d %q, want 200 and connections parked", resp.StatusCode, body)
	}
}

// The state a parked connection keeps is small: its conn, its socket, its
// timeout handle, the closure of its wait and its slot in the park set.
// The budget leaves room, within the 1 KB an idle connection may cost in
// all (docs/benchmarks.md), for the allocator's size classes and the
// collector's overhead; a field added to these structures must fit it.
func TestParkedStateIsSmall(t *testing.T) {
	sizes := []struct {
		name string
		size uintptr
	}{
		{"conn", reflect.TypeFor[conn]().Size()},
		{"sock.Conn", reflect.TypeFor[sock.Conn]().Size()},
		{"timeout.Handle", reflect.TypeFor[timeout.Handle]().Size()},
		{"parkSlot", reflect.TypeFor[parkSlot]().Size()},
		{"rawWait closure", 2 * reflect.TypeFor[uintptr]().Size()},
	}
	const budget = 512
	var total uintptr
	for _, s := range sizes {
		total += s.size
	}
	if total > budget {
		t.Errorf("a parked connection keeps %d bytes, over the budget of %d: %+v", total, budget, sizes)
	}
}

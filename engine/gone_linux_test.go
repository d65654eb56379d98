package engine

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluice-server/sluice/sock"
)

// latched reports whether the gone set has reported the peer of the
// connection serving w gone.
func latched(w ResponseWriter) bool {
	g := w.(*response).c.gone.Load()
	if g == nil {
		return false
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.peer.done
}

// A connection's socket stays in the gone set from its first watch: the
// next requests' watches add nothing to the set (one epoll_ctl for the
// connection), each gets a new channel, open while the client is there,
// and the last one is told when the client goes.
func TestGoneWatchKeptAcrossRequests(t *testing.T) {
	p := newGoneProbe()
	addr := startServer(t, &Server{Handler: p, Logger: discardLogger()})
	c := dial(t, addr)
	br := bufio.NewReader(c)
	before := goneCtls.Load()
	var gs []<-chan struct{}
	for i := range 5 {
		io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
		g := recvWithin(t, fmt.Sprintf("request %d", i), p.entered)
		for j, old := range gs {
			if g == old {
				t.Fatalf("request %d got request %d's channel", i, j)
			}
		}
		gs = append(gs, g)
		if i == 4 {
			break
		}
		p.release <- struct{}{}
		if recvWithin(t, fmt.Sprintf("request %d", i), p.result) {
			t.Fatalf("request %d told its client went", i)
		}
		readResponse(t, br, "GET")
	}
	if n := goneCtls.Load() - before; n != 1 {
		t.Errorf("%d epoll_ctl calls on the gone set for five watches on one connection, want 1", n)
	}
	c.Close()
	if !recvWithin(t, "the last request to see the client go", p.result) {
		t.Error("the last request not told the client went")
	}
	for i, g := range gs[:4] {
		if closed(g) {
			t.Errorf("request %d's channel closed after its handler returned", i)
		}
	}
}

// A FIN that comes while no request is watched is latched: a watch that
// starts after it closes its channel at once.
func TestGoneLatchedBeforeWatch(t *testing.T) {
	for _, tt := range []struct {
		name  string
		close func(c *net.TCPConn)
	}{
		{"half-close", func(c *net.TCPConn) { c.CloseWrite() }},
		{"reset", func(c *net.TCPConn) { c.SetLinger(0); c.Close() }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			entered, second := make(chan struct{}), make(chan bool, 1)
			h := HandlerFunc(func(w ResponseWriter, r *Request) {
				if string(r.Path) == "/first" {
					w.(GoneNotifier).Gone() // the socket joins the set
					io.WriteString(w, "first")
					return
				}
				close(entered)
				deadline := time.Now().Add(10 * time.Second)
				for !latched(w) && time.Now().Before(deadline) {
					time.Sleep(time.Millisecond)
				}
				second <- closed(w.(GoneNotifier).Gone())
			})
			addr := startServer(t, &Server{Handler: h, Logger: discardLogger()})
			c := dial(t, addr)
			br := bufio.NewReader(c)
			io.WriteString(c, "GET /first HTTP/1.1\r\nHost: x\r\n\r\n")
			readResponse(t, br, "GET")
			io.WriteString(c, "GET /second HTTP/1.1\r\nHost: x\r\n\r\n")
			recvWithin(t, "the second request", entered)
			tt.close(c)
			if !recvWithin(t, "the second request", second) {
				t.Error("a watch started after the peer's FIN was latched: channel open")
			}
		})
	}
}

// A connection that waited in the runtime's poller and then parks moves
// to a new descriptor (see sock.Conn.Unpoll): its socket leaves the gone
// set first, and the next watch adds it anew, under the new descriptor.
func TestGoneWatchAcrossUnpoll(t *testing.T) {
	p := newGoneProbe()
	ln, err := Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	al := &acceptedListener{Listener: ln, conns: make(chan net.Conn, 1)}
	s := &Server{Handler: p, Logger: discardLogger(), Limits: Limits{IdleTimeout: time.Hour}}
	s.init()
	s.tm.SetIdleNotice(0)                 // none until the test asks
	s.sparseAfter.Store(int64(time.Hour)) // a wake is soon: it waits in the runtime's poller after
	addr := serveOn(t, s, al)
	c := dial(t, addr)
	br := bufio.NewReader(c)
	get := func(what string) {
		t.Helper()
		io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
		recvWithin(t, what, p.entered)
		p.release <- struct{}{}
		if recvWithin(t, what, p.result) {
			t.Fatalf("%s told its client went", what)
		}
		readResponse(t, br, "GET")
	}
	before := goneCtls.Load()
	get("the first request")
	sc := (<-al.conns).(*sock.Conn)
	waitForParked(t, s, 1)
	get("the second request")
	waitFor(t, "the connection to wait in the runtime's poller", sc.Polled)
	s.tm.SetIdleNotice(10 * time.Millisecond)
	waitForParked(t, s, 1)
	s.tm.SetIdleNotice(0)
	if sc.Polled() {
		t.Fatal("parked, still in the runtime's poller")
	}
	io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	g := recvWithin(t, "the third request", p.entered)
	if closed(g) {
		t.Fatal("the third request's channel is closed")
	}
	if n := goneCtls.Load() - before; n != 3 {
		t.Errorf("%d epoll_ctl calls on the gone set, want 3 (add, delete before the descriptor changed, add)", n)
	}
	c.Close()
	if !recvWithin(t, "the third request to see the client go", p.result) {
		t.Error("the third request not told the client went")
	}
}

// Many connections watched at once: each handler is told when its own
// client goes, and only then, and the connections still there serve
// watched requests after.
func TestGoneManyConnections(t *testing.T) {
	const n = 200
	type result struct {
		i    int
		gone bool
	}
	entered := make(chan int, n)
	results := make(chan result, n)
	var release sync.Map // request path -> chan struct{}
	h := HandlerFunc(func(w ResponseWriter, r *Request) {
		path := string(r.Path)
		i, _ := strconv.Atoi(strings.Split(path, "/")[1])
		ch, _ := release.LoadOrStore(path, make(chan struct{}))
		g := w.(GoneNotifier).Gone()
		entered <- i
		select {
		case <-g:
			results <- result{i, true}
		case <-ch.(chan struct{}):
			results <- result{i, false}
		}
	})
	addr := startServer(t, &Server{Handler: h, Logger: discardLogger(), Limits: Limits{IdleTimeout: time.Minute}})
	cs := make([]*net.TCPConn, n)
	brs := make([]*bufio.Reader, n)
	send := func(round int, idx []int) {
		t.Helper()
		for _, i := range idx {
			path := fmt.Sprintf("/%d/%d", i, round)
			release.LoadOrStore(path, make(chan struct{}))
			io.WriteString(cs[i], "GET "+path+" HTTP/1.1\r\nHost: x\r\n\r\n")
		}
		for range idx {
			recvWithin(t, "a handler", entered)
		}
	}
	all := make([]int, n)
	for i := range n {
		all[i] = i
		cs[i] = dial(t, addr)
		brs[i] = bufio.NewReader(cs[i])
	}
	// Round 0: every connection watched; the even clients go.
	send(0, all)
	for i := 0; i < n; i += 2 {
		cs[i].Close()
	}
	for range n / 2 {
		r := recvWithin(t, "a handler to see its client go", results)
		if !r.gone || r.i%2 != 0 {
			t.Fatalf("connection %d: told gone %v", r.i, r.gone)
		}
	}
	var odd []int
	for i := 1; i < n; i += 2 {
		odd = append(odd, i)
		v, _ := release.Load(fmt.Sprintf("/%d/0", i))
		close(v.(chan struct{}))
	}
	for range odd {
		if r := recvWithin(t, "a released handler", results); r.gone {
			t.Fatalf("connection %d told its client went; it is there", r.i)
		}
	}
	for _, i := range odd {
		readResponse(t, brs[i], "GET")
	}
	// Round 1: the odd connections serve another watched request; their
	// clients half-close.
	send(1, odd)
	for _, i := range odd {
		cs[i].CloseWrite()
	}
	for range odd {
		if r := recvWithin(t, "a handler to see its client go", results); !r.gone {
			t.Fatalf("connection %d not told its client went", r.i)
		}
	}
}

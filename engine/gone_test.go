package engine

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"testing"
	"time"
)

// goneProbe is a handler that hands each request's Gone channel to the
// test and returns once it closes (reporting true) or release does.
type goneProbe struct {
	entered chan (<-chan struct{})
	release chan struct{}
	result  chan bool
}

func newGoneProbe() *goneProbe {
	return &goneProbe{entered: make(chan (<-chan struct{}), 4), release: make(chan struct{}), result: make(chan bool, 4)}
}

func (p *goneProbe) Serve(w ResponseWriter, r *Request) {
	g := w.(GoneNotifier).Gone()
	if g2 := w.(GoneNotifier).Gone(); g2 != g {
		panic("Gone returned two channels for one request")
	}
	if r.ContentLength != 0 {
		p.entered <- g
		io.Copy(io.Discard, r.Body)
	}
	p.entered <- g
	select {
	case <-g:
		p.result <- true
	case <-p.release:
		p.result <- false
	}
}

// recvWithin receives from ch or fails the test after a generous bound.
func recvWithin[T any](t *testing.T, what string, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(10 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
		panic("unreachable")
	}
}

func closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// The Gone channel closes when the client closes, resets or half-closes
// the connection while the handler runs, on the engine's listener and on
// a net.Listener's connections.
func TestGoneOnClientClose(t *testing.T) {
	skipUnlessLinux(t, "watching for a client that goes")
	for _, tt := range []struct {
		name  string
		close func(c *net.TCPConn)
	}{
		{"close", func(c *net.TCPConn) { c.Close() }},
		{"reset", func(c *net.TCPConn) { c.SetLinger(0); c.Close() }},
		{"half-close", func(c *net.TCPConn) { c.CloseWrite() }},
	} {
		for _, listen := range []string{"engine", "net"} {
			t.Run(tt.name+"/"+listen, func(t *testing.T) {
				p := newGoneProbe()
				var ln net.Listener
				var err error
				if listen == "engine" {
					ln, err = Listen("tcp", "127.0.0.1:0")
				} else {
					ln, err = net.Listen("tcp", "127.0.0.1:0")
				}
				if err != nil {
					t.Fatal(err)
				}
				addr := serveOn(t, &Server{Handler: p, Logger: discardLogger()}, ln)
				c := dial(t, addr)
				io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
				g := recvWithin(t, "the handler", p.entered)
				if closed(g) {
					t.Fatal("Gone closed while the client is connected")
				}
				tt.close(c)
				if !recvWithin(t, "the handler to see the client go", p.result) {
					t.Error("handler released, not told the client went")
				}
			})
		}
	}
}

// Bytes that arrive while the handler runs (the rest of its body, a
// pipelined request) are not a client going.
func TestGoneNotOnBytes(t *testing.T) {
	skipUnlessLinux(t, "watching for a client that goes")
	p := newGoneProbe()
	addr := startServer(t, &Server{Handler: p, Logger: discardLogger()})

	a := dial(t, addr)
	io.WriteString(a, "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\n12345")
	ga := recvWithin(t, "handler A", p.entered) // A watches before the rest arrives
	io.WriteString(a, "67890GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	recvWithin(t, "handler A to read its body", p.entered)

	// B's close reaches the gone set after A's bytes: had those been
	// reported, A's channel would be closed by the time B's is.
	b := dial(t, addr)
	io.WriteString(b, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	recvWithin(t, "handler B", p.entered)
	b.Close()
	if !recvWithin(t, "handler B to see its client go", p.result) {
		t.Fatal("B not told its client went")
	}
	if closed(ga) {
		t.Error("A's Gone closed on bytes from a client still connected")
	}
	p.release <- struct{}{}
	if recvWithin(t, "handler A", p.result) {
		t.Error("A told its client went")
	}
	recvWithin(t, "the pipelined request", p.entered)
	p.release <- struct{}{}
	recvWithin(t, "the pipelined request", p.result)
	br := bufio.NewReader(a) // the two responses go out together
	readResponse(t, br, "POST")
	readResponse(t, br, "GET")
}

// The watch ends with the handler: the next request on the connection
// gets a new channel, open until that client goes.
func TestGoneEndsWithHandler(t *testing.T) {
	skipUnlessLinux(t, "watching for a client that goes")
	p := newGoneProbe()
	addr := startServer(t, &Server{Handler: p, Logger: discardLogger()})
	c := dial(t, addr)
	br := bufio.NewReader(c)
	io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	g1 := recvWithin(t, "the first request", p.entered)
	p.release <- struct{}{}
	recvWithin(t, "the first request", p.result)
	readResponse(t, br, "GET")

	io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	g2 := recvWithin(t, "the second request", p.entered)
	if g2 == g1 {
		t.Fatal("the second request got the first one's channel")
	}
	if closed(g2) {
		t.Fatal("the second request's channel is closed")
	}
	c.Close()
	if !recvWithin(t, "the second request to see the client go", p.result) {
		t.Error("not told the client went")
	}
	if closed(g1) {
		t.Error("the first request's channel closed after its handler returned")
	}
}

// The server giving up on a connection (here Shutdown's grace period
// running out) closes the channel, whether Gone is called before or after.
func TestGoneOnShutdown(t *testing.T) {
	p := newGoneProbe()
	late := make(chan bool, 1)
	lateGo := make(chan struct{})
	mux := HandlerFunc(func(w ResponseWriter, r *Request) {
		if string(r.Path) == "/late" {
			p.entered <- nil
			<-lateGo
			late <- closed(w.(GoneNotifier).Gone())
			return
		}
		p.Serve(w, r)
	})
	srv := &Server{Handler: mux, Logger: discardLogger()}
	ln, err := Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	a := dial(t, ln.Addr().String())
	io.WriteString(a, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	recvWithin(t, "the handler", p.entered)
	b := dial(t, ln.Addr().String())
	io.WriteString(b, "GET /late HTTP/1.1\r\nHost: x\r\n\r\n")
	recvWithin(t, "the late handler", p.entered)

	ctx, cancel := context.WithCancel(context.Background())
	cancel() // no grace at all
	if err := srv.Shutdown(ctx); err != context.Canceled {
		t.Errorf("Shutdown = %v, want context.Canceled", err)
	}
	if !recvWithin(t, "the handler to be told", p.result) {
		t.Error("handler not told the server gave up")
	}
	close(lateGo)
	if !recvWithin(t, "the late handler", late) {
		t.Error("Gone called after the server gave up returned an open channel")
	}
}

// A net/http handler behind FromHTTP sees its request's context
// cancelled, with cause ErrClientGone, when the client goes.
func TestGoneContext(t *testing.T) {
	skipUnlessLinux(t, "watching for a client that goes")
	cause := make(chan error, 1)
	entered := make(chan struct{})
	h := FromHTTP(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		close(entered)
		select {
		case <-r.Context().Done():
			cause <- context.Cause(r.Context())
		case <-time.After(10 * time.Second):
			cause <- nil
		}
	}))
	addr := startServer(t, &Server{Handler: h, Logger: discardLogger()})
	c := dial(t, addr)
	io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	recvWithin(t, "the handler", entered)
	c.Close()
	if err := recvWithin(t, "the handler", cause); err != ErrClientGone {
		t.Errorf("context cause %v, want ErrClientGone", err)
	}
}

// A context that outlives its handler (kept by a goroutine) may still be
// asked for Done: it is cancelled, and starts no watch on a response
// writer that may serve another request by then.
func TestGoneContextAfterHandler(t *testing.T) {
	kept := make(chan context.Context, 1)
	h := FromHTTP(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		kept <- r.Context()
	}))
	addr := startServer(t, &Server{Handler: h, Logger: discardLogger()})
	c := dial(t, addr)
	br := bufio.NewReader(c)
	io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n")
	readResponse(t, br, "GET")
	ctx := <-kept
	io.WriteString(c, "GET / HTTP/1.1\r\nHost: x\r\n\r\n") // the writer serves another request
	readResponse(t, br, "GET")
	<-kept
	select {
	case <-ctx.Done():
	default:
		t.Error("the context of a finished request is not cancelled")
	}
	if cause := context.Cause(ctx); cause != context.Canceled {
		t.Errorf("cause %v, want context.Canceled", cause)
	}
}

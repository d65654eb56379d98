package engine

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"testing"
	"time"
)

// Shutdown stops accepting, closes idle connections, lets the request in
// flight finish with "Connection: close", then returns nil.
func TestShutdownFinishesInFlightRequest(t *testing.T) {
	started, release := make(chan struct{}), make(chan struct{})
	h := HandlerFunc(func(w ResponseWriter, r *Request) {
		if string(r.Path) == "/slow" {
			close(started)
			<-release
		}
		w.WriteString("done " + string(r.Path))
	})
	s := &Server{Handler: h}
	ln, err := Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- s.Serve(ln) }()
	addr := ln.Addr().String()

	idle := dial(t, addr)
	io.WriteString(idle, "GET /first HTTP/1.1\r\nHost: a\r\n\r\n")
	readResponse(t, bufio.NewReader(idle), "GET")

	busy := dial(t, addr)
	io.WriteString(busy, "GET /slow HTTP/1.1\r\nHost: a\r\n\r\n")
	<-started

	shut := make(chan error, 1)
	go func() { shut <- s.Shutdown(context.Background()) }()

	if err := <-served; err != ErrServerClosed {
		t.Errorf("Serve = %v, want ErrServerClosed", err)
	}
	if _, err := idle.Read(make([]byte, 1)); err != io.EOF {
		t.Errorf("idle connection: %v, want EOF", err)
	}
	waitFor(t, "listener to close", func() bool {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
		}
		return err != nil
	})
	select {
	case err := <-shut:
		t.Fatalf("Shutdown returned %v with a request in flight", err)
	default:
	}
	close(release)
	resp, body := readResponse(t, bufio.NewReader(busy), "GET")
	if body != "done /slow" || !resp.Close {
		t.Errorf("in-flight response %q close=%v, want complete and closing", body, resp.Close)
	}
	if err := <-shut; err != nil {
		t.Errorf("Shutdown = %v", err)
	}
}

// When the context ends first, Shutdown interrupts what is left and
// returns the context's error.
func TestShutdownDeadline(t *testing.T) {
	block, inside := make(chan struct{}), make(chan struct{})
	defer close(block)
	h := HandlerFunc(func(w ResponseWriter, r *Request) {
		close(inside)
		io.ReadAll(r.Body) // blocks: the client never sends the body
		<-block
	})
	s := &Server{Handler: h}
	ln, _ := Listen("tcp", "127.0.0.1:0")
	go s.Serve(ln)
	c := dial(t, ln.Addr().String())
	io.WriteString(c, "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 10\r\n\r\n")
	recvWithin(t, "the request to reach the handler", inside)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := s.Shutdown(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Shutdown = %v, want DeadlineExceeded", err)
	}
}

// A connection that has sent nothing is idle: Shutdown closes it at once
// rather than waiting out its HeaderTimeout, and still serves a request
// that has arrived.
func TestShutdownClosesSilentConnection(t *testing.T) {
	s := &Server{Handler: HandlerFunc(func(w ResponseWriter, r *Request) { w.WriteString("ok") }),
		Limits: Limits{HeaderTimeout: time.Minute}}
	// A plain listener accepts at once (Listen's waits for a request's
	// first bytes, about a second for a silent client).
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- s.Serve(ln) }()
	silent := dial(t, ln.Addr().String())
	waitFor(t, "connection to be accepted", func() bool { return s.OpenConns() == 1 })

	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.Shutdown(ctx); err != nil {
		t.Fatalf("Shutdown = %v after %v", err, time.Since(start))
	}
	if _, err := silent.Read(make([]byte, 1)); err != io.EOF {
		t.Errorf("silent connection: %v, want EOF", err)
	}
	if err := <-served; err != ErrServerClosed {
		t.Errorf("Serve = %v", err)
	}
}

// After Shutdown, Serve and ListenAndServe return ErrServerClosed, which
// is net/http's: errors.Is and == recognise it under either name.
// ListenAndServe returns it without listening, so an address taken since
// does not turn it into a listen error.
func TestErrServerClosedAfterShutdown(t *testing.T) {
	s := &Server{Handler: HandlerFunc(func(w ResponseWriter, r *Request) {})}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- s.Serve(ln) }()
	if err := s.Shutdown(context.Background()); err != nil {
		t.Fatalf("Shutdown = %v", err)
	}
	err = <-served
	if !errors.Is(err, http.ErrServerClosed) || !errors.Is(err, ErrServerClosed) || err != http.ErrServerClosed {
		t.Errorf("Serve after Shutdown = %v, want http.ErrServerClosed", err)
	}

	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	if err := s.ListenAndServe(taken.Addr().String()); !errors.Is(err, http.ErrServerClosed) {
		t.Errorf("ListenAndServe after Shutdown = %v, want http.ErrServerClosed", err)
	}
	ln2, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Serve(ln2); !errors.Is(err, http.ErrServerClosed) {
		t.Errorf("Serve after Shutdown = %v, want http.ErrServerClosed", err)
	}
	if _, err := ln2.Accept(); !errors.Is(err, net.ErrClosed) {
		t.Errorf("Serve after Shutdown left its listener open: Accept = %v", err)
	}
}

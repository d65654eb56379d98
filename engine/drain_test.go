package engine

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"
)

// Drain leaves idle keep-alive connections open: a request sent on one
// after the drain began is served, with "Connection: close", and so is
// the request in flight; Drain returns once both connections are gone.
// (Shutdown would close the idle connection under the client.)
func TestDrainServesIdleConnectionsNextRequest(t *testing.T) {
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
	idleR := bufio.NewReader(idle)
	io.WriteString(idle, "GET /first HTTP/1.1\r\nHost: a\r\n\r\n")
	if resp, _ := readResponse(t, idleR, "GET"); resp.Close {
		t.Fatal("first response closes the connection")
	}
	busy := dial(t, addr)
	io.WriteString(busy, "GET /slow HTTP/1.1\r\nHost: a\r\n\r\n")
	<-started
	waitForIdle(t, s, 1)

	drained := make(chan error, 1)
	go func() { drained <- s.Drain(context.Background()) }()
	if err := <-served; err != ErrServerClosed {
		t.Errorf("Serve = %v, want ErrServerClosed", err)
	}
	waitFor(t, "listener to close", func() bool {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
		}
		return err != nil
	})

	io.WriteString(idle, "GET /next HTTP/1.1\r\nHost: a\r\n\r\n")
	resp, body := readResponse(t, idleR, "GET")
	if body != "done /next" || !resp.Close {
		t.Errorf("idle connection's next response %q close=%v, want served and closing", body, resp.Close)
	}
	if _, err := idleR.ReadByte(); err != io.EOF {
		t.Errorf("after its closing response the connection gives %v, want EOF", err)
	}
	select {
	case err := <-drained:
		t.Fatalf("Drain returned %v with a request in flight", err)
	default:
	}
	close(release)
	resp, body = readResponse(t, bufio.NewReader(busy), "GET")
	if body != "done /slow" || !resp.Close {
		t.Errorf("in-flight response %q close=%v, want complete and closing", body, resp.Close)
	}
	if err := <-drained; err != nil {
		t.Errorf("Drain = %v", err)
	}
}

// Connections still idle when Drain's context ends are closed, and Drain
// returns the context's error.
func TestDrainDeadlineClosesIdle(t *testing.T) {
	s := &Server{Handler: HandlerFunc(func(w ResponseWriter, r *Request) { w.WriteString("ok") })}
	ln, err := Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go s.Serve(ln)
	c := dial(t, ln.Addr().String())
	br := bufio.NewReader(c)
	io.WriteString(c, "GET / HTTP/1.1\r\nHost: a\r\n\r\n")
	readResponse(t, br, "GET")
	waitForIdle(t, s, 1)

	ctx, cancel := context.WithCancel(context.Background())
	drained := make(chan error, 1)
	go func() { drained <- s.Drain(ctx) }()
	waitFor(t, "listener to close", func() bool {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err == nil {
			c.Close()
		}
		return err != nil
	})
	c.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
	if _, err := br.ReadByte(); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("idle connection during the drain: %v, want it left open (a read timeout)", err)
	}
	cancel()
	if err := <-drained; err != context.Canceled {
		t.Errorf("Drain = %v, want context.Canceled", err)
	}
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := br.ReadByte(); err != io.EOF {
		t.Errorf("idle connection after the deadline: %v, want EOF", err)
	}
}

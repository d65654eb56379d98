package engine

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"
)

// Connections that follow one another are served by the same goroutine:
// a runner that finished a connection takes the next one.
func TestRunnerServesNextConnection(t *testing.T) {
	s := &Server{Handler: echo, Logger: discardLogger()}
	addr := startServer(t, s)
	before := runnersStarted.Load()
	for i := 0; i < 5; i++ {
		got := exchange(t, addr, "GET /w HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
		if !strings.HasPrefix(got, "HTTP/1.1 200 ") {
			t.Fatalf("request %d: %q", i, got)
		}
		waitFor(t, "the runner to wait for the next connection", func() bool { return s.idleRunnerCount() == 1 })
	}
	if n := runnersStarted.Load() - before; n != 1 {
		t.Errorf("%d runners started for 5 consecutive connections, want 1", n)
	}
}

// A keep-alive connection's idle wait moves off its runner, which returns
// to the pool; idle runners leave when the server shuts down.
func TestIdleRunnersExit(t *testing.T) {
	const n = 4
	inside, release := make(chan struct{}, n), make(chan struct{})
	s := &Server{Logger: discardLogger(), Handler: HandlerFunc(func(w ResponseWriter, r *Request) {
		inside <- struct{}{}
		<-release
		w.WriteString("ok")
	})}
	ln, err := Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Serve(ln) }()
	addr := ln.Addr().String()
	// n requests in the handler at once need n runners.
	conns := make([]net.Conn, n)
	for i := range conns {
		conns[i] = dial(t, addr)
		if _, err := conns[i].Write([]byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n")); err != nil {
			t.Fatal(err)
		}
		<-inside
	}
	close(release)
	for _, c := range conns {
		if _, err := c.Read(make([]byte, 512)); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "the idle connections' runners to return to the pool",
		func() bool { return s.idleRunnerCount() == n })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != ErrServerClosed {
		t.Fatalf("Serve: %v", err)
	}
	waitFor(t, "idle runners to exit", func() bool { return s.idleRunnerCount() == 0 })
}

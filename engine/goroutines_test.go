package engine

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/sluice-server/sluice/sluicetest/stacks"
)

// Connections that follow one another are served by the same goroutine:
// a runner that finished a connection takes the next one.
func TestRunnerServesNextConnection(t *testing.T) {
	s := &Server{Handler: echo, Logger: discardLogger()}
	addr := startServer(t, s)
	before, moves, serving := runnersStarted.Load(), idleMoves.Load(), servingRunners()
	for i := 0; i < 5; i++ {
		got := exchange(t, addr, "GET /w HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
		if !strings.HasPrefix(got, "HTTP/1.1 200 ") {
			t.Fatalf("request %d: %q", i, got)
		}
		waitFor(t, "the runner to wait for the next connection", func() bool {
			return servingRunners() <= serving && s.idleRunnerCount() >= 1
		})
	}
	// A connection that parked before its request came (an idle move)
	// may wake before its runner is back in the pool, and take a new one;
	// otherwise one runner serves all five.
	if n, parked := runnersStarted.Load()-before, idleMoves.Load()-moves; n > 1+parked {
		t.Errorf("%d runners started for 5 consecutive connections (%d parked before their request), want %d", n, parked, 1+parked)
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
	moves, started, serving := idleMoves.Load(), runnersStarted.Load(), servingRunners()
	// n requests in the handler at once need n runners.
	conns := make([]net.Conn, n)
	for i := range conns {
		conns[i] = dial(t, addr)
		if _, err := conns[i].Write([]byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n")); err != nil {
			t.Fatal(err)
		}
		<-inside
	}
	if got := servingRunners() - serving; got < n {
		t.Fatalf("%d runners seen serving with %d requests in the handler, want at least %d", got, n, n)
	}
	close(release)
	for _, c := range conns {
		if _, err := c.Read(make([]byte, 512)); err != nil {
			t.Fatal(err)
		}
	}
	// Every connection's idle wait moves off its runner (idleMoves, a
	// counter, cannot be missed as a passing count can), and then no
	// runner is left serving a connection. Each has returned to the
	// pool, where the reaper may already have stopped some (those idle
	// for runnerIdleTime, on a slow machine). At least n runners were
	// started, more if a connection parked before its request came and
	// woke with no runner idle; at least one, and no more than were
	// started, is idle.
	waitFor(t, "the idle waits to move off their runners",
		func() bool { return idleMoves.Load()-moves >= n })
	waitFor(t, "no runner to be serving a connection",
		func() bool { return servingRunners() <= serving })
	if got, started := s.idleRunnerCount(), runnersStarted.Load()-started; started < n || got < 1 || got > int(started) {
		t.Errorf("%d idle runners of %d started, want 1 to all of them, and at least %d started", got, started, n)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != ErrServerClosed {
		t.Fatalf("Serve: %v", err)
	}
	waitFor(t, "idle runners to exit", func() bool { return s.idleRunnerCount() == 0 })
	// Close the clients' ends and wait for the server's to close, so that
	// nothing of this server (a parked connection woken by a FIN and
	// handed to a new runner) is left to count in the next test.
	for _, c := range conns {
		c.Close()
	}
	waitFor(t, "the connections to close", func() bool { return s.OpenConns() == 0 })
}

// servingRunners counts the goroutines of the process that are runners
// serving a connection (not idle in the pool), from their stacks.
func servingRunners() int {
	count := 0
	for _, g := range strings.Split(stacks.All(), "\n\n") {
		if strings.Contains(g, "engine.(*Server).runConns(") && strings.Contains(g, "engine.(*conn).serve(") {
			count++
		}
	}
	return count
}

package engine

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"strings"
	"testing"
	"time"
)

// gate is a handler that holds each request under /block/ until the test
// lets one through, and answers every request as echo does.
type gate struct {
	inside chan string   // the path of each request that came to the gate
	pass   chan struct{} // one value lets one request through
}

func newGate(n int) *gate {
	return &gate{inside: make(chan string, n), pass: make(chan struct{})}
}

func (g *gate) Serve(w ResponseWriter, r *Request) {
	if strings.HasPrefix(string(r.Path), "/block/") {
		g.inside <- string(r.Path)
		<-g.pass
	}
	echo.Serve(w, r)
}

// blockRound opens n connections to addr, each sending a request that
// the gate holds, waits until all n are held, calls during, lets them all
// through and reads every answer. It returns once no runner of s serves
// a connection.
func blockRound(t *testing.T, s *Server, addr string, g *gate, n int, during func()) {
	t.Helper()
	brs := make([]*bufio.Reader, n)
	for i := range brs {
		c := dial(t, addr)
		brs[i] = bufio.NewReader(c)
		if _, err := io.WriteString(c, fmt.Sprintf("GET /block/%d HTTP/1.1\r\nHost: a\r\n\r\n", i)); err != nil {
			t.Fatal(err)
		}
	}
	for range n {
		recvWithin(t, "a request to reach the handler", g.inside)
	}
	during()
	for range n {
		g.pass <- struct{}{}
	}
	for i, br := range brs {
		path := fmt.Sprintf("/block/%d", i)
		if resp, body := readResponse(t, br, "GET"); resp.StatusCode != 200 || !strings.HasPrefix(body, "GET "+path+" ") {
			t.Fatalf("GET %s: %d %q", path, resp.StatusCode, body)
		}
	}
	waitFor(t, "no runner to serve a connection", func() bool { return s.serving.Load() == 0 })
}

// A burst, burst.at connections served by runners at once, is over when
// that falls to a quarter: then, and only then, the server stops its idle
// runners and returns its memory to the OS, at most once per gap, and a
// release that waits for its gap ends with the server.
func TestBurstEndReleasesMemory(t *testing.T) {
	g := newGate(16)
	s := &Server{Handler: g, Logger: discardLogger(), Limits: Limits{IdleTimeout: time.Hour}}
	s.init()
	s.burst.at, s.burst.quiet, s.burst.gap = 8, 0, 0
	addr := startServer(t, s)

	// Fewer than make a burst: none begins, nothing is released.
	blockRound(t, s, addr, g, 7, func() {
		if s.burst.on.Load() {
			t.Error("a burst is on with 7 connections served at once; 8 make one")
		}
	})
	if s.burst.on.Load() || s.burst.releasing.Load() || s.burst.releases.Load() != 0 {
		t.Fatalf("after 7 connections at once: burst on %v, a release waiting %v, %d done; want none",
			s.burst.on.Load(), s.burst.releasing.Load(), s.burst.releases.Load())
	}

	// A burst: it ends as the runners are done, and the memory goes.
	blockRound(t, s, addr, g, 8, func() {
		if !s.burst.on.Load() {
			t.Error("no burst is on with 8 connections served at once")
		}
	})
	waitFor(t, "the burst's memory to be released", func() bool {
		return s.burst.releases.Load() == 1 && !s.burst.releasing.Load()
	})
	if s.burst.on.Load() {
		t.Error("the burst is still on after it ended")
	}
	// The burst ended with at most 2 connections (a quarter of 8) still
	// served; the runners idle then were stopped.
	if n := s.idleRunnerCount(); n > 2 {
		t.Errorf("%d idle runners after the release, want at most the 2 that were serving as the burst ended", n)
	}

	// Another within the gap waits for it, and gives up as the server
	// stops. The gate hands the new gap to the runners.
	s.burst.gap = int64(time.Hour)
	blockRound(t, s, addr, g, 8, func() {})
	waitFor(t, "the second release to wait for its gap", func() bool { return s.burst.releasing.Load() })
	if n := s.burst.releases.Load(); n != 1 {
		t.Fatalf("%d releases an hour's gap apart, want 1", n)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the waiting release to give up", func() bool { return !s.burst.releasing.Load() })
	if n := s.burst.releases.Load(); n != 1 {
		t.Errorf("%d releases after the server stopped, want 1", n)
	}
}

// One request per connection (Connection: close) over loopback: each
// connection is handed to a runner and counted in and out of serving
// (see goroutines.go), the path a burst's accounting adds to.
func BenchmarkCloseConnections(b *testing.B) {
	s := &Server{Handler: echo, Logger: discardLogger()}
	addr := startServer(b, s)
	req := []byte("GET /b HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n")
	buf := make([]byte, 4096)
	b.ReportAllocs()
	for b.Loop() {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := c.Write(req); err != nil {
			b.Fatal(err)
		}
		for {
			if _, err := c.Read(buf); err != nil {
				break
			}
		}
		c.Close()
	}
}

// What serving's accounting costs a hand-over to a runner.
func BenchmarkServeAccounting(b *testing.B) {
	s := &Server{}
	s.burst.at = burstGoroutines
	for b.Loop() {
		s.serveBegins()
		s.serveEnds()
	}
}

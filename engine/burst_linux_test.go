package engine

import (
	"bufio"
	"fmt"
	"io"
	"testing"
	"time"
)

// A burst of first requests on parked connections, several times what the
// park set's reader hands on at once, is all answered; and handlers that
// block, more of them than the reader hands on at once, hold up none of
// the connections woken after them.
func TestBurstPastBlockedHandlers(t *testing.T) {
	const (
		batch   = 32 // events parkSet.run reads at once
		blocked = batch + 8
		n       = 4 * batch
	)
	g := newGate(blocked)
	s := &Server{Handler: g, Logger: discardLogger(), Limits: Limits{IdleTimeout: time.Hour}}
	addr := startServer(t, s)
	open := func(k int) []idleClient {
		cs := make([]idleClient, k)
		for i := range cs {
			c := dial(t, addr)
			cs[i] = idleClient{c, bufio.NewReader(c)}
		}
		return cs
	}
	slow, fast := open(blocked), open(n)
	// All wait for their first request parked.
	waitForParked(t, s, blocked+n)

	for i, ic := range slow {
		io.WriteString(ic.c, fmt.Sprintf("GET /block/%d HTTP/1.1\r\nHost: a\r\n\r\n", i))
	}
	for range blocked {
		recvWithin(t, "a request to reach the blocking handler", g.inside)
	}
	// The blocking handlers hold their runners; the burst is answered.
	for i, ic := range fast {
		io.WriteString(ic.c, fmt.Sprintf("GET /c%d HTTP/1.1\r\nHost: a\r\n\r\n", i))
	}
	for i, ic := range fast {
		ic.expect(t, fmt.Sprintf("/c%d", i))
	}
	for range blocked {
		g.pass <- struct{}{}
	}
	for i, ic := range slow {
		ic.expect(t, fmt.Sprintf("/block/%d", i))
	}
	// And every connection is answered again.
	for i, ic := range append(fast, slow...) {
		io.WriteString(ic.c, fmt.Sprintf("GET /again%d HTTP/1.1\r\nHost: a\r\n\r\n", i))
	}
	for i, ic := range append(fast, slow...) {
		ic.expect(t, fmt.Sprintf("/again%d", i))
	}
}

// A burst of new connections that outruns the runners waits for its
// requests parked by the accept loop, taking no runner until they come:
// here the accept loop parks from the first (parkNewAt 0). Requests that
// come at once, before or after the accept, and clients that leave at
// once are all served as ever.
func TestNewConnectionsParkOnAccept(t *testing.T) {
	const n = 50
	s := &Server{Handler: echo, Logger: discardLogger(), Limits: Limits{IdleTimeout: time.Hour}}
	s.init()
	s.parkNewAt = 0
	addr := startServer(t, s)
	cs := make([]idleClient, n)
	for i := range cs {
		c := dial(t, addr)
		cs[i] = idleClient{c, bufio.NewReader(c)}
	}
	waitForParked(t, s, n)
	if r := s.runners.Load(); r != 0 {
		t.Errorf("%d runners for %d new connections that sent nothing, want none", r, n)
	}
	for i, ic := range cs {
		io.WriteString(ic.c, fmt.Sprintf("GET /c%d HTTP/1.1\r\nHost: a\r\n\r\n", i))
	}
	for i, ic := range cs {
		ic.expect(t, fmt.Sprintf("/c%d", i))
	}

	// Requests sent as the connection opens, and connections closed at
	// once, with or without a request.
	quick := make([]idleClient, n)
	for i := range quick {
		c := dial(t, addr)
		quick[i] = idleClient{c, bufio.NewReader(c)}
		io.WriteString(c, fmt.Sprintf("GET /q%d HTTP/1.1\r\nHost: a\r\n\r\n", i))
	}
	for i, ic := range quick {
		ic.expect(t, fmt.Sprintf("/q%d", i))
	}
	open := s.open.Load()
	for i := range n {
		c := dial(t, addr)
		if i%2 == 0 {
			io.WriteString(c, "GET /gone HTTP/1.1\r\nHost: a\r\n\r\n")
		}
		c.Close()
	}
	waitFor(t, "the closed connections to close", func() bool { return s.open.Load() <= open })
}

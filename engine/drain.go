package engine

import (
	"context"
	"time"
)

// Drain stops the server without losing a request a client may be
// sending: it closes the listeners, answers every request that arrives
// from now on (in flight, or on a keep-alive connection that was idle)
// with "Connection: close" and ends its connection after the response,
// but leaves idle connections open, since a client may be writing its
// next request on one right now. It returns when the last connection has
// closed. When ctx ends first, the connections still open are closed as
// Shutdown closes them once its context is done (idle ones at once, busy
// ones interrupted), and ctx's error is returned.
//
// A supervisor calls Drain on a worker that others replace: the
// listening sockets they share stay open in the other processes, so the
// connections this one no longer accepts are accepted there.
func (s *Server) Drain(ctx context.Context) error { return s.drain(ctx, ctx) }

// DrainBusy is Drain for a server whose connections may stay busy long
// (WebSocket and other tunnels, event streams, long downloads): for idle
// at most it drains as Drain does; then it closes the connections that
// are idle, as Shutdown does, and lets the busy ones run on until the
// last ends (it returns nil) or ctx ends (they are interrupted, and
// ctx's error is returned). A supervisor calls it on a worker that keeps
// serving its tunnels while others take its new connections.
func (s *Server) DrainBusy(ctx context.Context, idle time.Duration) error {
	first, cancel := context.WithTimeout(ctx, idle)
	defer cancel()
	return s.drain(first, ctx)
}

// drain drains until idle ends, then shuts down within ctx.
func (s *Server) drain(idle, ctx context.Context) error {
	s.init()
	s.draining.Store(true)
	s.mu.Lock()
	for ln := range s.listeners {
		ln.Close()
	}
	s.mu.Unlock()
	s.GoAway() // HTTP/2's "Connection: close"
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for s.open.Load() > 0 {
		select {
		case <-idle.Done():
			if ctx.Err() != nil {
				// Shutdown closes the idle ones at once and interrupts
				// the rest; it may find none left and return nil.
				s.Shutdown(ctx)
				return ctx.Err()
			}
			return s.Shutdown(ctx)
		case <-tick.C:
		}
	}
	return s.Shutdown(ctx)
}

// closing reports whether a request's response must end its connection:
// the server is shutting down or draining.
func (s *Server) closing() bool { return s.closed.Load() || s.draining.Load() }

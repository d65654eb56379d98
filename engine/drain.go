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
func (s *Server) Drain(ctx context.Context) error {
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
		case <-ctx.Done():
			// Shutdown closes the idle ones at once and interrupts the
			// rest; it may find none left and return nil.
			s.Shutdown(ctx)
			return ctx.Err()
		case <-tick.C:
		}
	}
	return s.Shutdown(ctx)
}

// closing reports whether a request's response must end its connection:
// the server is shutting down or draining.
func (s *Server) closing() bool { return s.closed.Load() || s.draining.Load() }

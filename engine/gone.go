package engine

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
)

// GoneNotifier is implemented by ResponseWriters that can tell a handler
// that its response can no longer reach the client, so that work done only
// for that response (a CGI program, a slow back end) can stop. The
// engine's ResponseWriter implements it; a handler asks with a type
// assertion:
//
//	if g, ok := w.(engine.GoneNotifier); ok {
//		select {
//		case <-g.Gone():
//			// stop
//		case <-done:
//		}
//	}
type GoneNotifier interface {
	// Gone returns a channel that is closed once the client has closed or
	// reset the connection, or the server has given up on it (a read or
	// write timeout expired, Shutdown's grace period ran out, or Close
	// was called). Bytes the client sends meanwhile (the request body, a
	// pipelined request) do not count. A client that shuts down only its
	// sending side after its request counts as gone, as it does for
	// nginx.
	//
	// The watch starts with the first call, so a handler that never calls
	// Gone pays nothing for it. Gone may be called from any goroutine
	// while the handler runs and returns the same channel each time. The
	// watch ends when the handler returns: a channel not closed by then
	// is never closed. Where the connection cannot be watched (outside
	// Linux, or a net.Conn without a descriptor) only the server giving
	// up on it closes the channel.
	Gone() <-chan struct{}
}

// ErrClientGone is the cause (see context.Cause) of the cancellation of a
// context from GoneContext when the client has gone.
var ErrClientGone = errors.New("engine: client gone")

// GoneContext returns a copy of parent that is cancelled, with cause
// ErrClientGone, when w's Gone channel closes (if w is a GoneNotifier),
// and when cancel is called, which the caller must do before the handler
// returns. Watching starts only when the context's Done is first called
// before that, so code that never looks at the context pays nothing for
// the watch. FromHTTP gives net/http handlers such a context.
func GoneContext(parent context.Context, w ResponseWriter) (ctx context.Context, cancel context.CancelFunc) {
	inner, cancelCause := context.WithCancelCause(parent)
	g, ok := w.(GoneNotifier)
	if !ok {
		return inner, func() { cancelCause(context.Canceled) }
	}
	gc := &goneContext{Context: inner, cancel: cancelCause, gone: g}
	return gc, gc.end
}

// goneContext is GoneContext's context: Done starts the watch once, unless
// the context has ended (the response writer may then serve another
// request).
type goneContext struct {
	context.Context // the cancellable context Done returns the channel of
	cancel          context.CancelCauseFunc
	gone            GoneNotifier
	settled         atomic.Bool // the watch started, or never will
	mu              sync.Mutex  // orders the watch's start against end
	ended           bool
}

// Done implements context.Context: the first call starts a goroutine that
// cancels the context when the client goes, and ends with the context.
func (c *goneContext) Done() <-chan struct{} {
	if !c.settled.Load() {
		c.mu.Lock()
		if !c.ended && !c.settled.Load() {
			gone := c.gone.Gone()
			done := c.Context.Done()
			go func() {
				select {
				case <-gone:
					c.cancel(ErrClientGone)
				case <-done:
				}
			}()
			c.settled.Store(true)
		}
		c.mu.Unlock()
	}
	return c.Context.Done()
}

// end cancels the context; Done no longer starts a watch.
func (c *goneContext) end() {
	c.mu.Lock()
	c.ended = true
	c.settled.Store(true)
	c.mu.Unlock()
	c.cancel(context.Canceled)
}

// goneWatch is a connection's Gone state. A connection allocates one when
// a handler first asks and keeps it for its later requests: ch and closed
// describe the request in flight, peer the connection's socket, watched
// from that first request until the connection closes (see gone_linux.go).
type goneWatch struct {
	mu     sync.Mutex
	ch     chan struct{} // nil until Gone is called during the request
	closed bool          // ch is closed
	peer   peerWatch     // the platform's watch of the socket, zero for none
}

var _ GoneNotifier = (*response)(nil)

// Gone implements GoneNotifier.
func (w *response) Gone() <-chan struct{} { return w.c.goneChan() }

// goneChan returns the Gone channel of the request in flight on c.
func (c *conn) goneChan() <-chan struct{} {
	w := c.gone.Load()
	if w == nil {
		c.gone.CompareAndSwap(nil, new(goneWatch))
		w = c.gone.Load()
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ch == nil {
		w.ch = make(chan struct{})
		// Expire sets interrupted before it looks for a watch to close:
		// either it finds this one or this sees the flag.
		if c.interrupted.Load() || w.peer.start(c, w) {
			w.fire()
		}
	}
	return w.ch
}

// fire closes the channel. Called with mu held.
func (w *goneWatch) fire() {
	if !w.closed {
		w.closed = true
		close(w.ch)
	}
}

// expireGone closes the Gone channel of the request in flight, if asked
// for: the server gave up on the connection. Called by Expire.
func (c *conn) expireGone() {
	if w := c.gone.Load(); w != nil {
		w.mu.Lock()
		if w.ch != nil {
			w.fire()
		}
		w.mu.Unlock()
	}
}

// endGone ends the watch of the request whose handler returned: its
// channel, if not closed yet, never is. The socket stays watched for the
// connection's next requests.
func (c *conn) endGone() {
	if w := c.gone.Load(); w != nil {
		w.mu.Lock()
		w.ch, w.closed = nil, false
		w.mu.Unlock()
	}
}

// leaveGoneSet stops watching c's socket, before its descriptor changes
// (see sock.Conn.Unpoll); the next watch adds it again. Called on the
// connection's goroutine, between requests, while the socket is open.
func (c *conn) leaveGoneSet() {
	if w := c.gone.Load(); w != nil {
		w.mu.Lock()
		w.peer.leave()
		w.mu.Unlock()
	}
}

// closeGone forgets c's socket watch once the socket is closed. Called as
// the connection ends.
func (c *conn) closeGone() {
	if w := c.gone.Load(); w != nil {
		w.mu.Lock()
		w.peer.closed()
		w.mu.Unlock()
	}
}

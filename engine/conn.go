package engine

import (
	"crypto/tls"
	"errors"
	"io"
	"net"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/sluice-server/sluice/engine/timeout"
	"github.com/sluice-server/sluice/sock"
)

// aLongTimeAgo is a deadline in the past: setting it interrupts blocked I/O.
var aLongTimeAgo = time.Unix(1, 0)

// conn is one client connection, served by one goroutine. While idle it
// holds no session (no buffers); see session.
type conn struct {
	srv *Server
	nc  net.Conn
	rc  syscall.RawConn // nil if nc offers none; then idle reads use a buffer
	th  *timeout.Handle
	h   Handler // the listener's handler (ListenerOptions.Handler) or Server.Handler

	// A TLS connection: tc is nc, served through crypto/tls, so rc is
	// nil (every read and write goes through tc; files are copied, not
	// sent with sendfile); peer is the raw socket beneath it, watched for
	// the client going (see GoneNotifier) and parked while the
	// connection idles (see tlsidle.go), and sock that socket as
	// crypto/tls reads it; tlsState is set once the handshake is done
	// (see handshake) and handed to each request.
	tc       *tls.Conn
	peer     syscall.RawConn
	sock     *tlsSocket
	tlsState *tls.ConnectionState

	s      *session // nil while idle
	rbuf   []byte   // s.rbuf, or a larger buffer for a big request head
	r, w   int      // rbuf[r:w] is received and not yet consumed
	pin    int      // rbuf[:pin] holds the head of the request being served
	served int      // requests served on this connection

	interrupted atomic.Bool // a timeout or shutdown fired
	closeAfter  bool        // close once the current response is sent
	unread      bool        // the client may have sent bytes we did not read
	broken      bool        // a write failed: nothing more can be sent
	resume      bool        // taken over from the park set: go on waiting (see serve)
	sparse      bool        // taken over after a long park: park again when idle (see park.go)
	repark      bool        // rawServe asks readIdle to park at once
	crowded     bool        // many connections speak between its requests: park when idle (see crowd.go)
	parkFailed  bool        // a wait could not park, so crowded does not ask it to (see moveWait)
	nb          bool        // the socket's descriptor (rc's, or peer's under TLS) is non-blocking (see sock.RawConn)
	h2c         bool        // may switch to HTTP/2 with the preface (ListenerOptions.H2C)
	toH2        bool        // switches: the preface came (see serveHead)

	// State for rawWait, bound once so the idle wait does not allocate.
	rawWaitFn func(fd uintptr) bool
	rawN      int
	rawErr    error

	// inline is set while rawServe runs a request inside the poller's
	// read callback, where the connection must not be read (see fill);
	// ended records that such a request ended the connection.
	inline, ended bool

	// A head rawServe parsed but left for run to serve: headN bytes,
	// headErr from parseHead (see readHead).
	headReady bool
	waitMark  uint32 // srv.wakes at its last wake (see crowd.go); beside headReady, in what was padding
	headN     int
	headErr   error

	hasSlot bool // the connection has a slot in the park set (parkSlot)

	// wait is waitActive, waitIdle while blocked for a request,
	// waitMoving once the sweeper asked to move that wait off its
	// goroutine, or waitParked while parked (see park.go); moveMu orders
	// the sweeper's deadline change and Expire against the connection's
	// own.
	wait   atomic.Int32
	moveMu sync.Mutex

	// The connection's slot in the park set, taken when it first parks
	// and kept until it closes (hasSlot), with its generation, the
	// descriptor its socket is in the set under (-1 if none), and what
	// the set's reader saw while the connection was not parked
	// (parkPending, parkPeerDone; see park_linux.go).
	parkSlot, parkGen uint32
	parkFd            int32
	parkFlags         atomic.Uint32
	parkedAt          int64 // when it last parked (monoNow)

	// gone is made when a handler first asks (see GoneNotifier).
	gone atomic.Pointer[goneWatch]

	// h2 is set while the connection serves HTTP/2 (see http2.go).
	h2 atomic.Pointer[http2State]
}

func newConn(srv *Server, nc net.Conn, o *ListenerOptions) *conn {
	c := &conn{srv: srv, nc: nc, h: o.Handler, parkFd: -1, h2c: o.H2C && o.TLS == nil}
	if c.h == nil {
		c.h = srv.Handler
	}
	if o.TLS != nil {
		c.peer, c.nb = sock.RawConn(nc)
		c.sock = &tlsSocket{Conn: nc}
		c.tc = tls.Server(c.sock, o.TLS)
		c.nc = c.tc
	} else {
		c.rc, c.nb = sock.RawConn(nc)
		c.peer = c.rc
	}
	if c.rc != nil {
		c.rawWaitFn = c.rawWait
	}
	c.th = srv.tm.Register(c)
	c.waitMark = srv.wakes.Load()
	return c
}

// handshake runs the TLS handshake of a new TLS connection. It must end
// within HeaderTimeout, as a request head must, or the timeout manager
// closes the connection; until it is done the connection counts as idle,
// so Shutdown and a full server (MaxConns) may close it, as they close a
// new connection that has sent nothing yet. It reports whether the
// handshake succeeded.
func (c *conn) handshake() bool {
	c.th.SetDeadline(c.srv.limits().HeaderTimeout)
	c.th.MarkIdle()
	err := c.tc.Handshake()
	c.th.Clear()
	if err != nil {
		return false
	}
	st := c.tc.ConnectionState()
	c.tlsState = &st
	return true
}

// Expire implements timeout.Owner: it wakes any blocked I/O on the
// connection, which then closes; a parked connection is closed there and
// then. It is called from the sweeper, or by CloseIdle and ExpireAll.
func (c *conn) Expire() {
	if h2 := c.h2.Load(); h2 != nil && h2.ready.Load() && !c.srv.cutting.Load() {
		c.goAway() // idle, or evicted, or the server stops: gracefully
		return
	}
	c.moveMu.Lock()
	if c.wait.CompareAndSwap(waitParked, waitActive) {
		c.moveMu.Unlock()
		c.unpark()
		if c.tc != nil {
			// Closing sends close_notify, a write that may wait (up to
			// crypto/tls's 5 s) for a client that reads nothing: not on
			// the timeout manager's goroutine.
			go c.finish()
			return
		}
		c.finish()
		return
	}
	c.interrupted.Store(true)
	c.nc.SetDeadline(aLongTimeAgo)
	c.moveMu.Unlock()
	c.expireGone()
}

// serve runs the connection until the client or the server ends it, or
// its wait moves off the goroutine. A connection taken over from the park
// set resumes its wait.
func (c *conn) serve() {
	resume := c.resume
	c.resume = false
	c.run(resume)
}

// run is the connection loop; resumed is set on a goroutine that took an
// idle wait over (see IdleNotice).
func (c *conn) run(resumed bool) {
	if c.tc != nil && c.tlsState == nil {
		if !c.handshake() {
			c.finish()
			return
		}
		if c.tlsState.NegotiatedProtocol == "h2" {
			// On a goroutine of its own, which the connection holds for
			// its life: the runner, whose stack the handshake grew, goes
			// back to serve other connections (see goroutines.go).
			go func() {
				c.serveHTTP2(nil)
				c.finish()
			}()
			return
		}
	}
	if resumed {
		switch c.readIdle() {
		case idleMoved:
			return
		case idleClosed:
			c.finish()
			return
		}
	}
	for {
		if c.r == c.w {
			switch c.waitForRequest() {
			case idleMoved:
				return
			case idleClosed:
				c.finish()
				return
			}
		}
		if !c.serveOne() {
			if c.toH2 {
				pre := append([]byte(nil), c.rbuf[c.r:c.w]...)
				c.releaseSession()
				c.serveHTTP2(pre)
			}
			c.finish()
			return
		}
		c.served++
		if c.srv.shuttingDown() {
			c.finish()
			return
		}
	}
}

func (c *conn) acquireSession() {
	c.s = acquireSession()
	c.rbuf = c.s.rbuf
	c.r, c.w, c.pin = 0, 0, 0
}

func (c *conn) releaseSession() {
	if c.s == nil {
		return
	}
	c.dropHeadBuffer()
	releaseSession(c.s)
	c.s, c.rbuf = nil, nil
	c.r, c.w, c.pin = 0, 0, 0
}

// dropHeadBuffer goes back to the session's read buffer if a larger one
// held a big request head, and clears the request's fields, which point
// into the larger one, so the session does not keep it alive.
func (c *conn) dropHeadBuffer() {
	if len(c.rbuf) > 0 && &c.rbuf[0] != &c.s.rbuf[0] {
		clear(c.s.req.Fields[:cap(c.s.req.Fields)])
		c.rbuf = c.s.rbuf
	}
}

// finish sends what is pending, closes the connection and returns its
// resources. When the server chose to close while the client may still be
// sending, it closes gracefully (see linger).
func (c *conn) finish() {
	if c.s != nil && !c.broken {
		if c.interrupted.Load() {
			// A read timed out; the last response (a 408, say) still gets
			// its write timeout.
			c.nc.SetDeadline(time.Time{})
		}
		if c.unread || c.r < c.w {
			// The client may still be sending. Closing with its bytes
			// unread sends RST, which drops output the kernel still
			// holds: so none is held back (no MSG_MORE), and, unless the
			// client was cut off for being slow, the server lingers.
			if c.flush() == nil && !c.interrupted.Load() {
				c.linger()
			}
		} else {
			c.flushBeforeClose()
		}
	}
	c.th.Cancel()
	c.nc.Close()
	c.closeGone()
	c.leavePark()
	c.releaseSession()
	c.srv.connClosed(c)
}

// Lingering close bounds: how long and how much the server reads and drops
// after its last response before closing.
const (
	lingerTime  = 2 * time.Second
	lingerBytes = 256 << 10
)

// linger half-closes the connection and reads what the client still sends
// until it closes its side, for a bounded time. Closing a socket with
// unread input makes the kernel send RST, which can destroy the response
// before the client reads it (RFC 9112 §9.6).
func (c *conn) linger() {
	cw, ok := c.nc.(interface{ CloseWrite() error })
	if !ok || cw.CloseWrite() != nil {
		return
	}
	c.nc.SetReadDeadline(time.Now().Add(lingerTime))
	for total := 0; total < lingerBytes; {
		n, err := c.nc.Read(c.rbuf)
		total += n
		if err != nil {
			return
		}
	}
}

// serveOne reads one request head from the buffer (reading more as
// needed), runs the handler, and finishes the response. It reports whether
// the connection may serve another request.
func (c *conn) serveOne() bool {
	n, err, ok := c.readHead()
	if !ok {
		return false
	}
	return c.serveHead(n, err)
}

// readHead parses the request head at rbuf[r:], reading more as needed
// under HeaderTimeout, and returns its length and parseHead's verdict (nil
// or a *ProtocolError to answer). It reports false if the connection is to
// close at once, a refusal already sent.
func (c *conn) readHead() (n int, err error, ok bool) {
	if c.headReady {
		c.headReady = false
		return c.headN, c.headErr, true
	}
	s := c.s
	req := &s.req
	lim := c.srv.limits()
	// The whole head must arrive in time.
	deadline := c.srv.tm.Now() + int64(lim.HeaderTimeout)
	c.th.SetDeadlineAt(deadline)
	for {
		req.reset()
		n, err = parseHead(c.rbuf[c.r:c.w], req, lim, &s.pathBuf)
		if err != errNeedMore {
			break
		}
		if ferr := c.fillHead(deadline); ferr != nil {
			switch {
			case ferr == errBufferFull: // e.g. a flood of empty lines before the request line
				c.writeError(errHeaderTooLarge)
			case c.interrupted.Load() && c.w > c.r && !c.srv.shuttingDown():
				c.writeError(errRequestTimeout)
			}
			return 0, nil, false
		}
	}
	return n, err, true
}

// serveHead serves the request whose head, n bytes at rbuf[r:], parseHead
// read with verdict err: it runs the handler (or answers the refusal) and
// finishes the response, and reports whether the connection may serve
// another request.
func (c *conn) serveHead(n int, err error) bool {
	s := c.s
	req := &s.req
	perr, _ := err.(*ProtocolError)
	if err != nil && perr == nil {
		return false
	}
	if c.h2cPreface(perr) {
		c.toH2 = true
		return false
	}
	if perr != nil && perr != errExpectation {
		c.writeError(perr)
		return false
	}
	head := c.rbuf[c.r : c.r+n]
	c.r += n
	c.pin = c.r
	c.th.Clear()
	c.srv.stats.requests.Add(1)
	if req.close {
		c.srv.stats.closing.Add(1)
	}

	req.RemoteAddr, req.LocalAddr = c.nc.RemoteAddr(), c.nc.LocalAddr()
	req.TLS = c.tlsState
	resp := &s.resp
	resp.start(c, req)
	body := &s.body
	body.start(c, req)
	req.Body = body

	if req.IsMethod("CONNECT") {
		// The engine does not tunnel: after a 2xx the bytes that follow
		// would be tunnel data, not requests (RFC 9110 §9.3.6). Whatever the
		// handler answers, the connection ends with it; a 2xx is sent
		// without framing fields (see commit).
		c.closeAfter = true
	}
	var refusal *ProtocolError // a head we understood but refuse
	maxBody := c.srv.limits().MaxBodyBytes
	switch {
	case perr != nil:
		refusal = perr
	case !c.srv.knownMethod(req.Method):
		refusal = errUnknownMethod
	case maxBody >= 0 && req.ContentLength > maxBody:
		refusal = errBodyTooLarge
	case c.srv.shuttingDown():
		resp.Header().Set("Connection", "close")
		c.runHandler(resp, req)
	default:
		c.runHandler(resp, req)
	}
	if refusal != nil {
		resp.fail(refusal)
	}
	c.endGone()
	resp.finish()
	if refusal != nil {
		c.refused(refusal, head, resp.bodySent())
	}
	keep := !c.closeAfter && !req.close && !resp.hdr.close && body.discard()
	if !body.done {
		c.unread = true
	}
	c.pin = 0
	if c.r == c.w {
		c.r, c.w = 0, 0
	}
	return keep
}

// runHandler calls the server's handler, turning a panic into a 500.
func (c *conn) runHandler(w *response, r *Request) {
	defer func() {
		if v := recover(); v != nil {
			c.closeAfter = true
			c.srv.stats.panics.Add(1)
			if v != errAbortHandler {
				c.srv.logger().Error("handler panic", "remote", c.nc.RemoteAddr().String(),
					"target", string(r.Target), "panic", v, "stack", string(debug.Stack()))
			}
			if w.committed {
				// Part of the response is out: it must not look complete,
				// so no chunked terminator, and the connection ends.
				w.err = errAborted
			} else {
				w.fail(&ProtocolError{Status: 500, Msg: "internal server error", Close: true})
			}
		}
	}()
	c.h.Serve(w, r)
}

// fillHead reads more of a request head, first sending any output a
// pipelining client may be waiting for. The write has its own timeout,
// after which the head's deadline (on the timeout manager's clock) holds
// again: a partial head that came with the request just answered is
// still cut off in time.
func (c *conn) fillHead(deadline int64) error {
	if len(c.s.out) > 0 { // readHead runs with a session
		err := c.flush()
		c.th.SetDeadlineAt(deadline)
		if err != nil {
			return err
		}
	}
	return c.fill(c.srv.limits().MaxHeaderBytes + 2)
}

// fill reads at least one more byte into rbuf[w:], making room first:
// consumed bytes past pin are reclaimed, and the buffer grows (up to max
// bytes of unconsumed data) when it is full.
func (c *conn) fill(max int) error {
	if c.inline {
		// rawServe serves only what needs no reading; a read here would
		// wait for the poller lock its caller holds.
		return errReadInline
	}
	if c.w == len(c.rbuf) {
		if err := c.makeRoom(max); err != nil {
			return err
		}
	}
	n, err := c.nc.Read(c.rbuf[c.w:])
	c.w += n
	if n > 0 {
		return nil
	}
	if err == nil {
		err = io.ErrNoProgress
	}
	return err
}

var (
	errBufferFull = errors.New("engine: read buffer full")
	errReadInline = errors.New("engine: read while serving from the poller callback")
)

func (c *conn) makeRoom(max int) error {
	if c.r > c.pin {
		n := copy(c.rbuf[c.pin:], c.rbuf[c.r:c.w])
		c.r, c.w = c.pin, c.pin+n
		if c.w < len(c.rbuf) {
			return nil
		}
	}
	unread := c.w - c.r
	if unread >= max {
		return errBufferFull
	}
	size := 2 * len(c.rbuf)
	if size > c.pin+max {
		size = c.pin + max
	}
	// The old buffer stays alive (and out of the pool) as long as the
	// request's slices point into it; the new one holds what is unread.
	nb := make([]byte, size)
	copy(nb, c.rbuf[c.r:c.w])
	c.rbuf = nb
	c.r, c.w, c.pin = 0, unread, 0
	return nil
}

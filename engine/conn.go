package engine

import (
	"errors"
	"io"
	"net"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/sluice-server/sluice/engine/timeout"
	"golang.org/x/sys/unix"
)

// aLongTimeAgo is a deadline in the past: setting it interrupts blocked I/O.
var aLongTimeAgo = time.Unix(1, 0)

// conn is one client connection, served by one goroutine. While idle it
// holds no session (no buffers); see session.
type conn struct {
	srv *Server
	nc  net.Conn
	rc  syscall.RawConn // nil if nc offers none; then idle reads use a buffer
	nb  bool            // rc's descriptor is a non-blocking socket (see sysCall)
	th  *timeout.Handle

	s      *session // nil while idle
	rbuf   []byte   // s.rbuf, or a larger buffer for a big request head
	r, w   int      // rbuf[r:w] is received and not yet consumed
	pin    int      // rbuf[:pin] holds the head of the request being served
	served int      // requests served on this connection

	raddr, laddr net.Addr // nc's addresses, asked for at the first request

	interrupted atomic.Bool // a timeout or shutdown fired
	closeAfter  bool        // close once the current response is sent
	unread      bool        // the client may have sent bytes we did not read
	broken      bool        // a write failed: nothing more can be sent

	// State for rawRead and rawServe, bound once so the idle wait does
	// not allocate.
	rawReadFn  func(fd uintptr) bool
	rawServeFn func(fd uintptr) bool
	rawN       int
	rawErr     error

	// inline is set while rawServe runs a request inside the poller's
	// read callback, where the connection must not be read (see fill);
	// ended records that such a request ended the connection.
	inline, ended bool

	// A head rawServe parsed but left for run to serve: headN bytes,
	// headErr from parseHead (see readHead).
	headReady bool
	headN     int
	headErr   error

	// wait is waitActive, waitIdle while blocked for a request, or
	// waitMoving once the sweeper asked to move that wait to a fresh
	// goroutine; moveMu orders the sweeper's deadline change against the
	// connection's own.
	wait   atomic.Int32
	moveMu sync.Mutex

	// gone is made when a handler first asks (see GoneNotifier).
	gone atomic.Pointer[goneWatch]
}

// Values of conn.wait.
const (
	waitActive = iota
	waitIdle
	waitMoving
)

// Outcomes of an idle wait.
type idleResult int

const (
	idleClosed idleResult = iota // the client left or the server closes
	idleData                     // request bytes are in the buffer
	idleMoved                    // another goroutine carries on waiting
)

func newConn(srv *Server, nc net.Conn) *conn {
	c := &conn{srv: srv, nc: nc}
	if sc, ok := nc.(syscall.Conn); ok {
		if rc, err := sc.SyscallConn(); err == nil {
			c.rc = rc
			c.rawReadFn = c.rawRead
			c.rawServeFn = c.rawServe
		}
	}
	// The net package's sockets are non-blocking; one whose descriptor
	// was made blocking behind its back (Fd of a File from it) would
	// stall a raw call, so the flag is read rather than assumed.
	switch nc.(type) {
	case *sockConn:
		c.nb = true
	case *net.TCPConn, *net.UnixConn:
		if c.rc != nil {
			c.rc.Control(func(fd uintptr) {
				fl, err := unix.FcntlInt(fd, unix.F_GETFL, 0)
				c.nb = err == nil && fl&unix.O_NONBLOCK != 0
			})
		}
	}
	c.th = srv.tm.Register(c)
	return c
}

// IdleNotice implements timeout.Owner: it wakes a connection
// that has waited for a while, so the wait continues on a new goroutine
// whose stack is minimal instead of the one a handler grew. Idle
// connections then cost little memory (see readIdle).
func (c *conn) IdleNotice() {
	c.moveMu.Lock()
	if c.wait.CompareAndSwap(waitIdle, waitMoving) {
		c.nc.SetReadDeadline(aLongTimeAgo)
	}
	c.moveMu.Unlock()
}

// Expire implements timeout.Owner: it wakes any blocked I/O on the
// connection, which then closes. It is called from the sweeper.
func (c *conn) Expire() {
	c.interrupted.Store(true)
	c.nc.SetDeadline(aLongTimeAgo)
	c.expireGone()
}

// serve runs the connection until the client or the server ends it.
func (c *conn) serve() { c.run(false) }

// run is the connection loop; resumed is set on a goroutine that took an
// idle wait over (see IdleNotice).
func (c *conn) run(resumed bool) {
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

// waitForRequest flushes pending output and waits, idle, for the next
// request's first bytes. The session is returned to the pool before the
// wait, or, on a raw connection, kept for the first read and returned
// only if it finds nothing (see rawRead).
func (c *conn) waitForRequest() idleResult {
	if c.flush() != nil {
		return idleClosed
	}
	if c.served == 0 {
		// A new connection's first request may be in already (the
		// listener accepts once its first bytes arrive), so it is not
		// idle yet; HeaderTimeout bounds the wait. If the first read
		// finds nothing, rawRead marks it idle, as nginx's are: Shutdown
		// and the connection limit may then close it.
		c.th.SetDeadline(c.srv.limits.HeaderTimeout)
	} else {
		if c.srv.shuttingDown() {
			return idleClosed
		}
		c.th.SetIdle()
	}
	if c.rc != nil && c.served > 1 && c.s != nil {
		// The next request is often in already: rawRead tries to read it
		// into this session and returns the session to the pool only if
		// there is nothing to read yet.
		c.dropHeadBuffer()
		c.s.reset()
		c.r, c.w, c.pin = 0, 0, 0
	} else {
		c.releaseSession()
	}
	if c.served > 0 && c.srv.shuttingDown() { // Shutdown may have looked before SetIdle
		return idleClosed
	}
	if c.served == 1 && c.rc != nil {
		// After its first exchange a connection waits on a fresh goroutine
		// at once, shedding the stack the handler grew: many connections
		// make one request and then idle (see also IdleNotice).
		idleMoves.Add(1)
		go c.run(true)
		return idleMoved
	}
	return c.readIdle()
}

// readIdle waits for and reads the first bytes of a request. With a raw
// connection it borrows the session only once bytes are ready to read, so
// a waiting connection holds no buffer. If the sweeper interrupts a long
// wait to move it (IdleNotice), readIdle starts a goroutine to go on
// waiting and returns idleMoved: the caller's goroutine must then exit
// without touching c again.
func (c *conn) readIdle() idleResult {
	if c.rc == nil {
		c.acquireSession()
		n, _ := c.nc.Read(c.rbuf)
		c.r, c.w = 0, n
		if n > 0 {
			return idleData
		}
		return idleClosed
	}
	c.rawN, c.rawErr, c.ended = 0, nil, false
	c.wait.Store(waitIdle)
	f := c.rawReadFn
	if c.served > 0 {
		f = c.rawServeFn
	}
	err := c.rc.Read(f)
	if !c.wait.CompareAndSwap(waitIdle, waitActive) {
		// The sweeper set a read deadline to move this wait; undo it once
		// it is done setting it.
		c.moveMu.Lock()
		c.nc.SetReadDeadline(time.Time{})
		c.wait.Store(waitActive)
		c.moveMu.Unlock()
		if err != nil && !c.interrupted.Load() && !c.srv.shuttingDown() {
			idleMoves.Add(1)
			go c.run(true)
			return idleMoved
		}
	}
	if err != nil || c.ended || c.rawErr != nil || c.rawN == 0 {
		return idleClosed
	}
	return idleData
}

// rawRead is called by the runtime poller when the socket may be readable;
// it returns false to keep waiting.
func (c *conn) rawRead(fd uintptr) bool {
	if c.s == nil {
		c.acquireSession()
	}
	for {
		n, err := recv(int(fd), c.rbuf, c.nb)
		switch err {
		case nil:
			c.rawN = n
			c.r, c.w = 0, n
			return true
		case syscall.EINTR:
			continue
		case syscall.EAGAIN:
			c.releaseSession()
			if c.served == 0 {
				c.th.MarkIdle()
			}
			return false
		default:
			c.rawErr = err
			return true
		}
	}
}

// rawServe is the poller's read callback for a connection waiting for its
// next request. It reads what arrived and serves each complete request
// without a body right there, then returns false to wait again, so the
// whole keep-alive loop runs inside one RawConn.Read call. That call keeps
// a readiness notice that arrives while a request is served; a new call
// would drop it, and the socket would have to be read (to EAGAIN) before
// every wait to be sure nothing had come in. A short read means the socket
// was drained, so after serving what it brought rawServe waits without
// reading. It returns true to hand the connection back to run: at end of
// input or on an error, with a request it must not serve here (one with a
// body, a head not all in, a head refused: they read the connection or
// close it), or once a request ended the connection (c.ended).
func (c *conn) rawServe(fd uintptr) bool {
	for {
		if !c.rawRead(fd) {
			return false
		}
		if c.rawErr != nil || c.rawN == 0 {
			return true
		}
		drained := c.rawN < len(c.rbuf)
		for c.r < c.w {
			if !c.serveInline() {
				return true
			}
		}
		// Output goes before any read: a read that finds nothing returns
		// the session, output buffer and all, to the pool.
		if c.flush() != nil || c.srv.shuttingDown() {
			c.ended = true
			return true
		}
		if !drained {
			continue
		}
		c.th.SetIdle()
		c.releaseSession()
		if c.srv.shuttingDown() { // Shutdown may have looked before SetIdle
			c.ended = true
			return true
		}
		return false
	}
}

// serveInline serves the request at the start of the buffer if its head is
// all in, parses without error and announces no body; otherwise it leaves
// the parsed head for readHead and returns false. It also returns false
// once the connection is to end (c.ended).
func (c *conn) serveInline() bool {
	s := c.s
	req := &s.req
	req.reset()
	n, err := parseHead(c.rbuf[c.r:c.w], req, &c.srv.limits, &s.pathBuf)
	if err != nil || req.ContentLength != 0 {
		if err != errNeedMore {
			c.headReady, c.headN, c.headErr = true, n, err
		}
		return false
	}
	c.inline = true
	keep := c.serveHead(n, nil)
	c.inline = false
	c.served++
	if !keep || c.srv.shuttingDown() {
		c.ended = true
		return false
	}
	return true
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
	lim := &c.srv.limits
	c.th.SetDeadline(lim.HeaderTimeout) // the whole head must arrive in time
	for {
		req.reset()
		n, err = parseHead(c.rbuf[c.r:c.w], req, lim, &s.pathBuf)
		if err != errNeedMore {
			break
		}
		if ferr := c.fillHead(); ferr != nil {
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
	if perr != nil && perr != errExpectation {
		c.writeError(perr)
		return false
	}
	head := c.rbuf[c.r : c.r+n]
	c.r += n
	c.pin = c.r
	c.th.Clear()
	c.srv.stats.requests.Add(1)

	if c.raddr == nil {
		c.raddr, c.laddr = c.nc.RemoteAddr(), c.nc.LocalAddr()
	}
	req.RemoteAddr, req.LocalAddr = c.raddr, c.laddr
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
	switch {
	case perr != nil:
		refusal = perr
	case !c.srv.knownMethod(req.Method):
		refusal = errUnknownMethod
	case c.srv.limits.MaxBodyBytes >= 0 && req.ContentLength > c.srv.limits.MaxBodyBytes:
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
	c.srv.Handler.Serve(w, r)
}

// fillHead reads more of a request head, first sending any output a
// pipelining client may be waiting for.
func (c *conn) fillHead() error {
	if err := c.flush(); err != nil {
		return err
	}
	return c.fill(c.srv.limits.MaxHeaderBytes + 2)
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

// flush writes the pending output, under the write timeout.
func (c *conn) flush() error {
	s := c.s
	if s == nil || len(s.out) == 0 {
		return nil
	}
	err := c.write(s.out)
	s.out = s.out[:0]
	return err
}

// write sends b in full under the write timeout.
func (c *conn) write(b []byte) error {
	c.th.SetDeadline(c.srv.limits.WriteTimeout)
	n, err := c.nc.Write(b)
	c.srv.stats.bytesWritten.Add(uint64(n))
	c.th.Clear()
	if err != nil {
		c.closeAfter, c.broken = true, true
	}
	return err
}

// writev sends the pending output followed by p in one system call where
// the platform allows.
func (c *conn) writev(p []byte) error {
	s := c.s
	var err error
	if c.rc != nil {
		err = c.transmit(p, nil, 0, 0, 0)
	} else {
		s.iov = append(s.iov[:0], s.out, p)
		bufs := net.Buffers(s.iov)
		c.th.SetDeadline(c.srv.limits.WriteTimeout)
		var n int64
		n, err = bufs.WriteTo(c.nc)
		c.srv.stats.bytesWritten.Add(uint64(n))
		c.th.Clear()
		s.out = s.out[:0]
		clear(s.iov[:2])
	}
	if err != nil {
		c.closeAfter, c.broken = true, true
	}
	return err
}

// writeError sends a refusal of a request whose head could not be parsed,
// and is always followed by closing the connection.
func (c *conn) writeError(e *ProtocolError) {
	if c.interrupted.Load() {
		c.nc.SetDeadline(time.Time{})
	}
	c.srv.stats.refused.Add(1)
	s := c.s
	b := appendStatusLine(s.out, e.Status)
	b = c.srv.appendServerFields(b)
	b = appendErrorBody(b, e, true)
	s.out = b
	c.closeAfter = true
	c.unread = true
	c.refused(e, c.rbuf[c.r:c.w], errorBodyLen(e))
	c.flush()
}

// appendErrorBody appends Content-Type, Content-Length, optionally
// Connection: close, and a short text body naming the error.
func appendErrorBody(b []byte, e *ProtocolError, close bool) []byte {
	b = append(b, "Content-Type: text/plain; charset=utf-8\r\n"...)
	if close {
		b = append(b, "Connection: close\r\n"...)
	}
	text := statusText(e.Status)
	b = append(b, "Content-Length: "...)
	b = appendInt(b, errorBodyLen(e))
	b = append(b, "\r\n\r\n"...)
	b = append(b, text...)
	b = append(b, ": "...)
	b = append(b, e.Msg...)
	return append(b, '\n')
}

// errorBodyLen is the length of the body appendErrorBody writes for e.
func errorBodyLen(e *ProtocolError) int64 {
	return int64(len(statusText(e.Status)) + 2 + len(e.Msg) + 1)
}

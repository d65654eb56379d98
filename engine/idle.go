package engine

import (
	"syscall"
	"time"

	"github.com/sluice-server/sluice/sock"
)

// The idle wait of a connection: between requests a connection holds no
// session (no buffers), and its wait moves off the goroutine that served
// the last request so that an idle connection costs little memory: it is
// parked, with no goroutine (see park.go), or else goes on on a fresh
// goroutine with a minimal stack. On a raw connection the keep-alive loop
// runs inside the poller's read callback (see rawServe).

// Values of conn.wait.
const (
	waitActive = iota
	waitIdle
	waitMoving
	waitParked
)

// Outcomes of an idle wait.
type idleResult int

const (
	idleClosed idleResult = iota // the client left or the server closes
	idleData                     // request bytes are in the buffer
	idleMoved                    // the wait moved off this goroutine (see moveWait)
)

// IdleNotice implements timeout.Owner: it wakes a connection that has
// waited for a while, so that its wait moves off the goroutine, which may
// have a stack a handler grew: the connection is parked, or its wait
// continues on a new goroutine whose stack is minimal. Idle connections
// then cost little memory (see readIdle).
func (c *conn) IdleNotice() {
	c.moveMu.Lock()
	if c.wait.CompareAndSwap(waitIdle, waitMoving) {
		c.nc.SetReadDeadline(aLongTimeAgo)
	}
	c.moveMu.Unlock()
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
		// A new connection's first request may be in already, so it is
		// not idle yet; HeaderTimeout bounds the wait. If the first read
		// finds nothing, rawRead marks it idle, as nginx's are: Shutdown
		// and the connection limit may then close it.
		c.th.SetDeadline(c.srv.limits().HeaderTimeout)
	} else {
		if c.srv.shuttingDown() {
			return idleClosed
		}
		c.th.SetIdle()
		if c.tlsParks() {
			return c.waitTLS()
		}
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
		// After its first exchange a connection's wait moves off this
		// goroutine at once: many connections make one request and then
		// idle (see also IdleNotice).
		c.moveWait()
		return idleMoved
	}
	return c.readIdle()
}

// parkFirst is the start of waitForRequest and readIdle for a new
// connection, on the accept loop's goroutine (see Server.startNew): it
// reads what has come, and parks c if its request is not in yet. It
// reports whether c parked, and the caller must then leave c alone;
// otherwise c goes to a runner (run with resume unset), which serves
// what the read found, or reads again and finds the end of input, the
// error, or again nothing and then waits in the runtime's poller. Only a
// raw socket of the engine's listener takes this path (see firstRead).
func (c *conn) parkFirst() bool {
	if c.rc == nil || c.served != 0 {
		return false
	}
	c.th.SetDeadline(c.srv.limits().HeaderTimeout)
	read, parked := c.firstRead()
	if read && (c.rawErr != nil || c.rawN == 0) {
		// The end of input, or an error: the runner's read finds it
		// again, with nothing of this one left over.
		c.releaseSession()
		c.rawErr, c.rawN = nil, 0
	}
	if parked {
		idleMoves.Add(1)
	}
	return parked
}

// readIdle waits for and reads the first bytes of a request. With a raw
// connection it borrows the session only once bytes are ready to read, so
// a waiting connection holds no buffer. If the sweeper interrupts a long
// wait to move it (IdleNotice), or rawServe finds a sparse connection
// done, readIdle moves the wait (moveWait) and returns idleMoved: the
// caller's goroutine must then exit without touching c again.
func (c *conn) readIdle() idleResult {
	if c.rc == nil {
		c.acquireSession()
		if c.tlsParks() {
			return c.readTLSIdle()
		}
		n, _ := c.nc.Read(c.rbuf)
		c.r, c.w = 0, n
		if n > 0 {
			return idleData
		}
		return idleClosed
	}
	c.rawN, c.rawErr, c.ended, c.repark = 0, nil, false, false
	if c.served == 0 {
		switch read, parked := c.firstRead(); {
		case parked:
			idleMoves.Add(1)
			return idleMoved
		case read:
			return c.idleOutcome(nil)
		}
	}
	c.wait.Store(waitIdle)
	err := c.rc.Read(c.rawWaitFn)
	if !c.wait.CompareAndSwap(waitIdle, waitActive) {
		// The sweeper set a read deadline to move this wait; undo it once
		// it is done setting it.
		c.moveMu.Lock()
		c.nc.SetReadDeadline(time.Time{})
		c.wait.Store(waitActive)
		c.moveMu.Unlock()
		if err != nil && !c.interrupted.Load() && !c.srv.shuttingDown() {
			c.moveWait()
			return idleMoved
		}
	}
	if c.repark && err == nil {
		c.moveWait()
		return idleMoved
	}
	return c.idleOutcome(err)
}

// idleOutcome is the outcome of an idle wait that ended with err and the
// state its read callback left.
func (c *conn) idleOutcome(err error) idleResult {
	if err != nil || c.ended || c.rawErr != nil || c.rawN == 0 {
		return idleClosed
	}
	return idleData
}

// rawWait is the poller's read callback of an idle wait: rawRead before a
// connection's first request, rawServe after it.
func (c *conn) rawWait(fd uintptr) bool {
	if c.served == 0 {
		return c.rawRead(fd)
	}
	return c.rawServe(fd)
}

// rawRead is called by the runtime poller when the socket may be readable;
// it returns false to keep waiting.
func (c *conn) rawRead(fd uintptr) bool {
	if c.s == nil {
		c.acquireSession()
	}
	for {
		n, err := sock.Recv(int(fd), c.rbuf, c.nb)
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
	for woken := true; ; woken = false {
		if c.parkFd >= 0 {
			// What the park set reported so far, this read takes in.
			c.parkFlags.And(^uint32(parkPending))
		}
		if !c.rawRead(fd) {
			if c.reparks() {
				c.repark = true // woken for bytes already read
				return true
			}
			c.leaveParkSet() // it waits in the runtime's poller
			return false
		}
		if c.rawErr != nil || c.rawN == 0 {
			return true
		}
		if woken {
			c.noteWake()
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
		if c.reparks() {
			// Woken after a long park, or one of a crowd (see
			// crowd.go), and the client has no more to say: park again
			// rather than wait here, on a goroutine, through the idle
			// notice.
			c.repark = true
			return true
		}
		c.leaveParkSet() // it waits in the runtime's poller
		return false
	}
}

// serveInline serves the request at the start of the buffer if its head is
// all in, parses without error and announces neither a body nor an
// Upgrade; otherwise it leaves the parsed head for readHead and returns
// false. It also returns false
// once the connection is to end (c.ended).
func (c *conn) serveInline() bool {
	s := c.s
	req := &s.req
	req.reset()
	n, err := parseHead(c.rbuf[c.r:c.w], req, c.srv.limits(), &s.pathBuf)
	if err != nil || req.ContentLength != 0 || req.upgrade {
		// A body must be read, and a tunnel (Tunneler) reads the
		// connection: neither can be served here.
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

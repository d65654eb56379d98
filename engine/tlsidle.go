package engine

import (
	"errors"
	"net"
	"os"
	"time"
)

// Idle TLS connections. A *tls.Conn has no descriptor to wait on, and a
// goroutine blocked in its Read holds a session (the request's buffers,
// about 19 KB) and a stack the handshake grew: about 45 KB of resident
// memory per idle connection, where nginx spends 15 KB. So an idle TLS
// connection parks too (see park.go): its socket, beneath crypto/tls,
// joins the park set, and the connection holds no goroutine and no
// session while it waits; when the socket becomes readable, a runner
// takes it over and reads through crypto/tls as before.
//
// Parking on the socket is right only while crypto/tls holds nothing the
// engine has yet to read: plaintext it decrypted and kept (a record
// larger than the read buffer), or whole records it read with an earlier
// one (a pipelining client). Those bytes are off the socket already, so
// its readiness would never report them. crypto/tls offers no way to ask,
// so before a connection parks the engine reads through it with the
// socket beneath made to report that a read would wait (tlsSocket.peek):
// crypto/tls then hands over what it holds, or, holding no whole record,
// returns that error, which it treats as temporary (as it treats a
// deadline) and does not keep. What it may still hold then is part of a
// record: the rest of it is still to come on the socket, and wakes the
// connection when it does.
//
// The connection parks when the socket's wait would move off its
// goroutine: after its first exchange, again at once after an exchange it
// was woken for late (sparse; see park.go), and after the idle notice when
// it waited on its goroutine for a busy client's next request (the notice
// sets a read deadline, which crypto/tls returns, also as temporary, with
// its state intact). A busy connection waits on its goroutine, in
// crypto/tls's Read, as before. A parked TLS connection that the timeout
// manager, the connection limit or Shutdown gives up on is closed on a
// goroutine of its own: crypto/tls sends close_notify as it closes, a
// write that may wait.
//
// What a parked TLS connection still holds is crypto/tls's: the Conn,
// its record layer's ciphers and the buffers it keeps for reuse, grown by
// the handshake (docs/benchmarks.md, "Idle TLS connections", has the
// figures). HTTP/2 connections, whose reading goroutine waits in
// crypto/tls's Read for the next frame, do not park.

// tlsSocket is the socket beneath a TLS connection, as crypto/tls reads
// it: while peek is set, Read reports at once that a read would wait. It
// is read by the connection's goroutine only.
type tlsSocket struct {
	net.Conn
	peek bool
}

// Read implements net.Conn. A read deadline's error is a net.Error that
// is temporary, as crypto/tls needs to leave the connection usable after
// it (see readTLSIdle): a socket in the runtime's poller reports it as an
// *os.PathError, which is not one.
func (s *tlsSocket) Read(p []byte) (int, error) {
	if s.peek {
		return 0, errWouldWait
	}
	n, err := s.Conn.Read(p)
	if _, ok := err.(net.Error); !ok && errors.Is(err, os.ErrDeadlineExceeded) {
		err = &net.OpError{Op: "read", Net: "tcp", Source: s.LocalAddr(), Addr: s.RemoteAddr(), Err: os.ErrDeadlineExceeded}
	}
	return n, err
}

// wouldWaitError is what a peeking tlsSocket reads: a temporary timeout,
// so that crypto/tls returns it without marking the connection broken.
type wouldWaitError struct{}

func (wouldWaitError) Error() string   { return "engine: a read would wait" }
func (wouldWaitError) Timeout() bool   { return true }
func (wouldWaitError) Temporary() bool { return true }

var errWouldWait error = wouldWaitError{}

// tlsParks reports whether c is a TLS connection whose idle wait can move
// off its goroutine (and park, where the platform allows).
func (c *conn) tlsParks() bool { return c.tc != nil && c.nb }

// waitTLS is waitForRequest's wait on a TLS connection that parks, after
// a request: the session is kept through it. After a connection's first
// exchange, and after a sparse one's, the connection parks at once if
// crypto/tls holds no request bytes; otherwise it waits on this goroutine
// (readIdle).
func (c *conn) waitTLS() idleResult {
	if c.served == 1 || c.sparse {
		if c.s == nil {
			c.acquireSession()
		} else {
			c.dropHeadBuffer()
			c.s.reset()
			c.r, c.w, c.pin = 0, 0, 0
		}
		switch n, err := c.readTLSHeld(); {
		case n > 0:
			c.r, c.w = 0, n
			return idleData
		case err != nil:
			return idleClosed
		}
		c.releaseSession()
		if c.srv.shuttingDown() { // Shutdown may have looked before SetIdle
			return idleClosed
		}
		c.moveWait()
		return idleMoved
	}
	c.releaseSession()
	if c.srv.shuttingDown() {
		return idleClosed
	}
	return c.readIdle()
}

// readTLSHeld reads into rbuf what crypto/tls holds for c, without
// reading the socket: n > 0 if it held request bytes, n == 0 and a nil
// error if it held none (nothing, or part of a record), or the error
// that ends the connection (the client's close_notify, a bad record).
func (c *conn) readTLSHeld() (int, error) {
	c.sock.peek = true
	n, err := c.tc.Read(c.rbuf)
	c.sock.peek = false
	if errors.Is(err, errWouldWait) {
		err = nil
	}
	return n, err
}

// readTLSIdle waits on this goroutine for the next request bytes of a TLS
// connection that parks, with the session c holds. If the idle notice
// interrupts the wait (IdleNotice), the connection parks and readTLSIdle
// returns idleMoved.
func (c *conn) readTLSIdle() idleResult {
	if !c.sparse {
		// Woken soon after it parked: it waits on this goroutine from
		// now on, until the idle notice parks it again.
		c.leaveParkSet()
	}
	c.wait.Store(waitIdle)
	n, err := c.tc.Read(c.rbuf)
	if !c.wait.CompareAndSwap(waitIdle, waitActive) {
		// The sweeper set a read deadline to move this wait; undo it
		// once it is done setting it.
		c.moveMu.Lock()
		c.nc.SetReadDeadline(time.Time{})
		c.wait.Store(waitActive)
		c.moveMu.Unlock()
		if n == 0 && isTimeout(err) && !c.interrupted.Load() && !c.srv.shuttingDown() {
			// crypto/tls returned no bytes at the deadline, so it
			// holds no whole record: the connection may park.
			c.releaseSession()
			c.moveWait()
			return idleMoved
		}
	}
	c.r, c.w = 0, n
	if n > 0 {
		return idleData
	}
	return idleClosed
}

// isTimeout reports whether err is a read deadline's.
func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

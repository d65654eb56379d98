//go:build unix

package fastcgi

import (
	"errors"
	"io"
	"net"
	"syscall"

	"github.com/sluice-server/sluice/sock"
)

// rawConn makes a connection's reads with sock's raw system calls, as
// the proxy's connection does: a request without a body is written at
// the start of the read that waits for its response (one trip into the
// poller's read for both), a try at reading tells the caller the server
// has paused (so that what was written to the client is flushed before
// waiting), and a peek checks an idle connection.
type rawConn struct {
	nc net.Conn
	rc syscall.RawConn

	// peek makes the next read peek at the connection before it writes
	// pending (see readFd).
	peek bool

	// pending is written by the next read before it waits; sent counts
	// the bytes of the last writeThenRead's that the socket took.
	pending []byte
	sent    int

	// the read in progress: its buffer and result
	p   []byte
	n   int
	err error
	try bool // return at EAGAIN rather than wait

	readFn  func(fd uintptr) bool // bound once, so that calls allocate nothing
	peekFn  func(fd uintptr)
	peekBuf [1]byte
	clean   bool
}

func (r *rawConn) bind(nc net.Conn) {
	r.nc = nc
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return
	}
	r.rc = rc
	r.readFn = r.readFd
	r.peekFn = r.peekFd
}

// writeThenRead writes b and reads the response into p (see read).
func (r *rawConn) writeThenRead(b, p []byte) (int, error) {
	if r.rc == nil {
		n, err := r.nc.Write(b)
		if r.sent = n; err != nil {
			return 0, err
		}
		return r.nc.Read(p)
	}
	r.pending, r.sent, r.peek = b, 0, !noPeek
	return r.read(p)
}

// peeksAtSend reports whether writeThenRead peeks at the connection
// before it writes (so that getConn need not).
func (r *rawConn) peeksAtSend() bool { return r.rc != nil }

// errNotClean is the failure of a writeThenRead whose peek found the
// kept-alive connection closed, or holding bytes nobody asked for:
// nothing was written.
var errNotClean = errors.New("kept-alive connection closed or not clean")

// nothingSent reports whether the socket took no byte of the last
// writeThenRead's: the request cannot have reached the server.
func (r *rawConn) nothingSent() bool { return r.sent == 0 }

// read reads into p as nc.Read does (the poller waits, deadlines apply),
// writing pending first if there is one.
func (r *rawConn) read(p []byte) (int, error) {
	if r.rc == nil {
		return r.nc.Read(p)
	}
	r.p, r.n, r.err, r.try = p, 0, nil, false
	err := r.rc.Read(r.readFn)
	r.p = nil
	if err == nil && r.err == nil && r.pending != nil {
		// The socket took only part of pending: the rest is written
		// as usual, then the response read.
		b := r.pending
		r.pending = nil
		n, err := r.nc.Write(b)
		if r.sent += n; err != nil {
			return 0, err
		}
		return r.read(p)
	}
	r.pending = nil
	switch {
	case err != nil:
		return 0, err
	case r.err != nil:
		return 0, r.err
	case r.n == 0:
		return 0, io.EOF
	}
	return r.n, nil
}

func (r *rawConn) readFd(fd uintptr) bool {
	if r.peek {
		// The peek at a kept-alive connection, here rather than before
		// the call: RawConn.Read forgets the readiness the poller saw
		// before it was called, so a peer's close that came between an
		// earlier peek and this call would never wake the wait below,
		// and a PHP-FPM worker recycled by pm.max_requests, which shuts
		// its side down and drains what is sent until it is closed,
		// would hold the request until its timeout. Peeked after the
		// call began, a close either shows here (nothing is written:
		// the request is sent again on a new connection) or comes
		// later and wakes the wait.
		r.peek = false
		for {
			_, err := sock.Peek(int(fd), r.peekBuf[:])
			if err == syscall.EINTR {
				continue
			}
			if err != syscall.EAGAIN && err != syscall.EWOULDBLOCK {
				r.pending, r.err = nil, errNotClean
				return true
			}
			break
		}
	}
	for len(r.pending) > 0 {
		n, err := sock.Send(int(fd), r.pending, nil, 0, true)
		switch err {
		case nil:
			r.sent += n
			r.pending = r.pending[n:]
			if len(r.pending) == 0 {
				// Sent: the response is a round trip away, so the wait
				// begins without a read tried first (the peek above saw
				// the connection clean after this call began).
				r.pending = nil
				return false
			}
		case syscall.EINTR:
		case syscall.EAGAIN:
			return true // read finishes the write
		default:
			r.pending = nil
			r.err = err
			return true
		}
	}
	for {
		n, err := sock.Recv(int(fd), r.p, true)
		switch err {
		case nil:
			r.n = n
			return true
		case syscall.EINTR:
			continue
		case syscall.EAGAIN:
			if r.try {
				r.err = err
				return true
			}
			return false // the poller waits for more
		}
		r.err = err
		return true
	}
}

// peekClean reports whether nothing is to be read on an idle
// connection: no byte and no end of file. It is one non-blocking
// recv with MSG_PEEK, through Control, so that no deadline (a past one
// included) and no poller state is involved.
func (r *rawConn) peekClean() bool {
	if r.rc == nil {
		return true
	}
	r.clean = false
	if err := r.rc.Control(r.peekFn); err != nil {
		return false
	}
	return r.clean
}

func (r *rawConn) peekFd(fd uintptr) {
	for {
		_, err := sock.Peek(int(fd), r.peekBuf[:])
		if err == syscall.EINTR {
			continue
		}
		r.clean = err == syscall.EAGAIN || err == syscall.EWOULDBLOCK
		return
	}
}

// tryRead reads what is there into p without waiting: n > 0 bytes read,
// ok false when nothing is there yet (or the platform cannot tell), and
// an error or EOF (n == 0, ok true) as a read would report them.
func (r *rawConn) tryRead(p []byte) (n int, ok bool, err error) {
	if r.rc == nil {
		return 0, false, nil
	}
	r.p, r.n, r.err, r.try = p, 0, nil, true
	err = r.rc.Read(r.readFn)
	r.p, r.try = nil, false
	switch {
	case err != nil:
		return 0, true, err
	case r.err == syscall.EAGAIN:
		return 0, false, nil
	case r.err != nil:
		return 0, true, r.err
	case r.n == 0:
		return 0, true, io.EOF
	}
	return r.n, true, nil
}

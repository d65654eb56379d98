//go:build unix

package proxy

import (
	"crypto/tls"
	"io"
	"syscall"

	"github.com/sluice-server/sluice/sock"
)

// bindRaw readies c for peek, once per connection (the bound method
// value is the only allocation).
//
// A TLS connection reads and writes through crypto/tls; only its peek is
// raw, on the socket beneath: a byte there while the connection is idle
// is a record nobody asked for (a response, or the upstream's
// close_notify), and the connection is not reused.
func (c *upConn) bindRaw() {
	if tc, ok := c.nc.(*tls.Conn); ok {
		if sc, ok := tc.NetConn().(syscall.Conn); ok {
			if rc, err := sc.SyscallConn(); err == nil {
				c.peekRC = rc
				c.peekFn = c.peekFd
			}
		}
		return
	}
	sc, ok := c.nc.(syscall.Conn)
	if !ok {
		return
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return
	}
	c.rc, c.peekRC = rc, rc
	c.peekFn = c.peekFd
	c.readFn = c.readFd
	c.writeFn = c.writeFd
}

// read reads from the upstream into p. Like nc.Read (the runtime's
// poller waits when nothing is there, deadlines apply), but its system
// call is sock.Recv's raw one (on Linux): a non-blocking read need not
// tell the scheduler it might block, which otherwise lets the runtime's
// monitor hand the goroutine's processor to another thread when a read
// runs long (a futex wake and a thread switch, at partial load about
// every third request). The descriptor is the net package's, which
// dials non-blocking: the nb that sock's calls are told.
//
// When a request head is pending (see upConn.pending), it is written
// first, inside the same RawConn.Read call, which then waits for the
// poller without trying to read: the response is a round trip away.
// Writing it before that call instead would leave a window in which the
// response's readiness notice could arrive and be dropped by the call's
// start, so the read would have to be tried, and fail with EAGAIN.
func (c *upConn) read(p []byte) (int, error) {
	if c.rc == nil || len(p) == 0 {
		if err := c.writePending(); err != nil {
			return 0, err
		}
		return c.nc.Read(p)
	}
	c.rbuf, c.rn, c.rerr = p, 0, nil
	err := c.rc.Read(c.readFn)
	c.rbuf = nil
	if err == nil && c.rerr == nil && c.pending != nil {
		// The socket took only part of the head: the rest waits for
		// room, then the response is read as usual.
		if err := c.writePending(); err != nil {
			return 0, err
		}
		return c.read(p)
	}
	switch {
	case err != nil:
		return 0, err
	case c.rerr != nil:
		return 0, c.rerr
	case c.rn == 0:
		return 0, io.EOF
	}
	return c.rn, nil
}

func (c *upConn) readFd(fd uintptr) bool {
	for len(c.pending) > 0 {
		b := c.pending
		n, err := sock.Send(int(fd), b, nil, 0, true)
		switch err {
		case nil:
			c.pending = b[n:]
		case syscall.EINTR:
		case syscall.EAGAIN:
			return true // read finishes the write (see read)
		default:
			c.pending = nil
			c.rerr = err
			return true
		}
		if len(c.pending) == 0 {
			c.pending = nil
			return false // sent: wait for the response
		}
	}
	for {
		n, err := sock.Recv(int(fd), c.rbuf, true)
		switch err {
		case nil:
			c.rn = n
			return true
		case syscall.EINTR:
			continue
		case syscall.EAGAIN:
			return false // the poller waits for more
		}
		c.rerr = err
		return true
	}
}

// write writes all of p to the upstream, as nc.Write does, with
// sock.Send's raw system calls (see read).
func (c *upConn) write(p []byte) (int, error) {
	if c.rc == nil || len(p) == 0 {
		return c.nc.Write(p)
	}
	c.wbuf, c.wn, c.werr = p, 0, nil
	err := c.rc.Write(c.writeFn)
	c.wbuf = nil
	if err == nil {
		err = c.werr
	}
	return c.wn, err
}

func (c *upConn) writeFd(fd uintptr) bool {
	for c.wn < len(c.wbuf) {
		b := c.wbuf[c.wn:]
		n, err := sock.Send(int(fd), b, nil, 0, true)
		switch err {
		case nil:
			c.wn += n
		case syscall.EINTR:
		case syscall.EAGAIN:
			return false // the poller waits for room
		default:
			c.werr = err
			return true
		}
	}
	return true
}

// peek reports whether the idle connection is clean: the upstream has
// neither closed it nor sent anything unasked. It is one non-blocking
// recv with MSG_PEEK (sock.Peek), through Control so that no deadline (a
// past one from the last exchange included) and no poller state is
// involved.
func (c *upConn) peek() bool {
	if c.peekRC == nil {
		return true
	}
	c.peekClean = false
	if err := c.peekRC.Control(c.peekFn); err != nil {
		return false
	}
	return c.peekClean
}

// peekFd is the peek's system call: raw, as it cannot block (see read),
// for it is made before every reuse.
func (c *upConn) peekFd(fd uintptr) {
	for {
		_, err := sock.Peek(int(fd), c.peekBuf[:])
		if err == syscall.EINTR {
			continue
		}
		// Nothing to read is the one clean answer: a byte is a response
		// nobody asked for, 0 bytes the upstream's FIN, an error a reset.
		c.peekClean = err == syscall.EAGAIN || err == syscall.EWOULDBLOCK
		return
	}
}

// writePending writes a pending request head with write.
func (c *upConn) writePending() error {
	if c.pending == nil {
		return nil
	}
	b := c.pending
	c.pending = nil
	_, err := c.write(b)
	return err
}

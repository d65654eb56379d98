//go:build unix

package fastcgi

import (
	"net"
	"syscall"
)

// rawConn makes the non-blocking reads a connection needs beside the
// runtime's blocking ones: a peek at an idle connection, and a try at
// reading that tells the caller the server has paused (so that what was
// written to the client is flushed before waiting).
type rawConn struct {
	rc syscall.RawConn

	// the call in progress: its buffer and result
	p     []byte
	n     int
	err   error
	flags int

	fn      func(fd uintptr) bool // bound once, so that calls allocate nothing
	peekBuf [1]byte
}

func (r *rawConn) bind(nc net.Conn) {
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return
	}
	r.rc = rc
	r.fn = r.recv
}

func (r *rawConn) recv(fd uintptr) bool {
	for {
		r.n, _, r.err = syscall.Recvfrom(int(fd), r.p, r.flags|syscall.MSG_DONTWAIT)
		if r.err != syscall.EINTR {
			return true // never wait: the caller does, through the runtime
		}
	}
}

// peekClean reports whether nothing is to be read on the connection: no
// byte and no end of file.
func (r *rawConn) peekClean() bool {
	if r.rc == nil {
		return true
	}
	r.p, r.flags = r.peekBuf[:], syscall.MSG_PEEK
	err := r.rc.Read(r.fn)
	r.p = nil
	return err == nil && r.err == syscall.EAGAIN
}

// tryRead reads what is there into p without waiting: n > 0 bytes read,
// ok false when nothing is there yet (or the platform cannot tell), and
// an error or EOF (n == 0, ok true) as a read would report them.
func (r *rawConn) tryRead(p []byte) (n int, ok bool, err error) {
	if r.rc == nil {
		return 0, false, nil
	}
	r.p, r.flags = p, 0
	err = r.rc.Read(r.fn)
	r.p = nil
	switch {
	case err != nil:
		return 0, true, err
	case r.err == syscall.EAGAIN:
		return 0, false, nil
	case r.err != nil:
		return 0, true, r.err
	}
	return r.n, true, nil
}

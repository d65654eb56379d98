//go:build unix

package proxy

import "syscall"

// bindRaw readies c for peek, once per connection (the bound method
// value is the only allocation).
func (c *upConn) bindRaw() {
	sc, ok := c.nc.(syscall.Conn)
	if !ok {
		return
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return
	}
	c.rc = rc
	c.peekFn = c.peekFd
}

// peek reports whether the idle connection is clean: the upstream has
// neither closed it nor sent anything unasked. It is one non-blocking
// recv with MSG_PEEK, through Control so that no deadline (a past one
// from the last exchange included) and no poller state is involved.
func (c *upConn) peek() bool {
	if c.rc == nil {
		return true
	}
	c.peekClean = false
	if err := c.rc.Control(c.peekFn); err != nil {
		return false
	}
	return c.peekClean
}

func (c *upConn) peekFd(fd uintptr) {
	for {
		_, _, err := syscall.Recvfrom(int(fd), c.peekBuf[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		if err == syscall.EINTR {
			continue
		}
		// Nothing to read is the one clean answer: a byte is a response
		// nobody asked for, 0 bytes the upstream's FIN, an error a reset.
		c.peekClean = err == syscall.EAGAIN || err == syscall.EWOULDBLOCK
		return
	}
}

//go:build unix

package redisstore

import (
	"errors"
	"net"
	"syscall"
)

// alive reports whether nc is open with nothing to read: a read that
// would block. It reads at most one byte, without waiting; a connection
// that had one to give is out of step with its replies, and is not
// alive either.
func alive(nc net.Conn) bool {
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return true
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	var rerr error
	if err := rc.Read(func(fd uintptr) bool {
		var b [1]byte
		_, rerr = syscall.Read(int(fd), b[:])
		return true // done: do not wait for the socket to be readable
	}); err != nil {
		return false
	}
	// No error: the read returned end of file or a byte.
	return errors.Is(rerr, syscall.EAGAIN) || errors.Is(rerr, syscall.EWOULDBLOCK)
}

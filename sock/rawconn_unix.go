//go:build unix

package sock

import (
	"net"
	"syscall"

	"golang.org/x/sys/unix"
)

// RawConn returns nc's RawConn, nil if it has none, and whether its
// descriptor is non-blocking: the nb that Recv, Send and Sendfile take
// for it. The net package's sockets are non-blocking; one whose descriptor
// was made blocking behind its back (Fd of a File from it) would stall a
// raw call, so the flag is read rather than assumed, except for this
// package's own sockets (a *Conn). It may be called from any goroutine.
func RawConn(nc net.Conn) (rc syscall.RawConn, nb bool) {
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return nil, false
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return nil, false
	}
	if ownSocket(nc) {
		return rc, true
	}
	switch nc.(type) {
	case *net.TCPConn, *net.UnixConn:
		rc.Control(func(fd uintptr) {
			fl, err := unix.FcntlInt(fd, unix.F_GETFL, 0)
			nb = err == nil && fl&unix.O_NONBLOCK != 0
		})
	}
	return rc, nb
}

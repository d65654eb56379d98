//go:build unix

package engine

import (
	"net"
	"syscall"

	"golang.org/x/sys/unix"
)

// rawConn returns nc's RawConn, nil if it has none, and whether its
// descriptor is non-blocking (see sysCall). The net package's sockets are
// non-blocking; one whose descriptor was made blocking behind its back
// (Fd of a File from it) would stall a raw call, so the flag is read
// rather than assumed, except for the engine's own sockets (ownSocket).
func rawConn(nc net.Conn) (rc syscall.RawConn, nb bool) {
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

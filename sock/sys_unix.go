//go:build unix && !linux

package sock

import (
	"net"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// On Unix systems other than Linux, Listen returns the net package's
// listeners, and the system calls of this package are the idle wait's
// read (Recv), a plain read(2), Peek and Send; the engine writes through
// the net.Conn.

// ownSocket reports false: no connection comes from a listener of this
// package's own.
func ownSocket(net.Conn) bool { return false }

// Recv reads from the socket fd into p with read(2) and returns the count
// read: 0 with a nil error is the end of input, except for an empty p.
// Errors are the system call's syscall.Errno (syscall.EAGAIN: nothing
// yet). The call is made as one that may block, whatever nb says; p is
// not kept.
func Recv(fd int, p []byte, _ bool) (int, error) {
	n, err := syscall.Read(fd, p)
	if err != nil {
		return 0, err
	}
	return n, nil
}

// Send writes a and then b to the socket fd with a raw sendto(2) each
// (the second only once the first took all of a), with flags, and
// returns how many bytes of the two it took, which may be fewer than
// offered. Either may be empty. Errors are the system call's
// syscall.Errno (syscall.EAGAIN: the socket's buffer is full; EPIPE, not
// SIGPIPE, for a peer gone: the runtime ignores the signal for sockets).
// The calls are raw, whatever nb says: fd must be non-blocking. a and b
// are not kept.
func Send(fd int, a, b []byte, flags int, _ bool) (int, error) {
	n := 0
	for _, p := range [2][]byte{a, b} {
		if len(p) == 0 {
			continue
		}
		r, _, e := syscall.RawSyscall6(unix.SYS_SENDTO, uintptr(fd), uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)), uintptr(flags), 0, 0)
		if e != 0 {
			if n > 0 {
				return n, nil
			}
			return 0, e
		}
		n += int(r)
		if int(r) < len(p) {
			break
		}
	}
	return n, nil
}

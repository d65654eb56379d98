//go:build unix

package sock

import (
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Peek reads from the socket fd into p with one raw recvfrom(2) with
// MSG_PEEK|MSG_DONTWAIT, leaving the bytes in the socket, and returns the
// count: 0 with a nil error is the peer's FIN (or an empty p). It never
// waits, whatever the descriptor's mode: syscall.EAGAIN (or EWOULDBLOCK)
// says nothing has come; other errors are the system call's
// syscall.Errno, syscall.EINTR to try again. A caller asking whether an
// idle connection is clean (nothing unasked, no FIN, no reset) passes a
// one-byte p, and takes EAGAIN alone as clean. p is not kept.
func Peek(fd int, p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	r, _, e := syscall.RawSyscall6(unix.SYS_RECVFROM, uintptr(fd), uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)),
		unix.MSG_PEEK|unix.MSG_DONTWAIT, 0, 0)
	if e != 0 {
		return 0, e
	}
	return int(r), nil
}

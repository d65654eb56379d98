package sock

import (
	"net"
	"os"
	"sync/atomic"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The few system calls made directly on sockets and files, without the
// allocations and indirections of the general wrappers. The unsafe code
// of the package (and of the server built on it) is confined to this
// file and sys_unix.go.
//
// A call on a descriptor the caller says is non-blocking (nb) is made
// with RawSyscall, keeping the goroutine's P; others with Syscall (see
// the package's doc, "System calls").

// sysCall makes the system call trap, raw when nb.
func sysCall(nb bool, trap, a1, a2, a3, a4, a5, a6 uintptr) (uintptr, syscall.Errno) {
	if nb {
		r, _, e := syscall.RawSyscall6(trap, a1, a2, a3, a4, a5, a6)
		return r, e
	}
	r, _, e := syscall.Syscall6(trap, a1, a2, a3, a4, a5, a6)
	return r, e
}

// corkOn and corkOff are TCP_CORK's values, at addresses that do not move.
var corkOn, corkOff int32 = 1, 0

// SetCork sets TCP_CORK on the TCP socket fd if on, clears it if not:
// while it is set, the kernel sends only full segments; clearing it sends
// the rest. nb says fd is non-blocking (see the package's doc). Errors are
// ignored: a socket left uncorked only sends more, smaller segments.
func SetCork(fd int, on, nb bool) {
	v := &corkOff
	if on {
		v = &corkOn
	}
	sysCall(nb, unix.SYS_SETSOCKOPT, uintptr(fd), unix.IPPROTO_TCP, unix.TCP_CORK, uintptr(unsafe.Pointer(v)), 4, 0)
}

// Recv reads from the socket fd into p with one recvfrom(2), which takes a
// shorter path through the kernel than read(2) (no file position lock, no
// VFS layer), and returns the count read: 0 with a nil error is the end of
// input, except for an empty p, which reads nothing. Errors are the system
// call's syscall.Errno: syscall.EAGAIN when a non-blocking socket has
// nothing yet, syscall.EINTR to try again. nb says fd is non-blocking
// (see the package's doc); p is not kept.
func Recv(fd int, p []byte, nb bool) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	r, e := sysCall(nb, unix.SYS_RECVFROM, uintptr(fd), uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)), 0, 0, 0)
	if e != 0 {
		return 0, e
	}
	raceAcquireIO(fd)
	return int(r), nil
}

// Send writes a and then b to the socket fd in one sendmsg(2) with flags
// (unix.MSG_MORE, say; MSG_NOSIGNAL is added), or in one sendto(2) when
// one of them is empty, and returns how many bytes of the two it took,
// which may be fewer than offered. Either may be empty. Errors are the
// system call's syscall.Errno (syscall.EAGAIN: a non-blocking socket's
// buffer is full). nb says fd is non-blocking (see the package's doc); a
// and b are not kept.
func Send(fd int, a, b []byte, flags int, nb bool) (int, error) {
	var iov [2]unix.Iovec
	n := 0
	if len(a) > 0 {
		iov[n].Base = &a[0]
		iov[n].SetLen(len(a))
		n++
	}
	if len(b) > 0 {
		iov[n].Base = &b[0]
		iov[n].SetLen(len(b))
		n++
	}
	return sendIovec(fd, iov[:n], flags, nb)
}

// maxSendVec bounds the buffers one SendVec call offers the kernel; the
// iovec array is on the stack. More are sent by the calls that follow,
// as with any short send.
const maxSendVec = 16

// SendVec writes a and then the buffers of bufs, in order, to the socket
// fd in one sendmsg(2) with flags (MSG_NOSIGNAL is added), or one
// sendto(2) when only one buffer is not empty, and returns how many
// bytes it took, which may be fewer than offered: at most the first
// maxSendVec non-empty buffers are offered at a time. Errors are as
// Send's. nb says fd is non-blocking (see the package's doc); neither a
// nor bufs is kept or changed.
func SendVec(fd int, a []byte, bufs [][]byte, flags int, nb bool) (int, error) {
	var iov [maxSendVec]unix.Iovec
	n := 0
	if len(a) > 0 {
		iov[0].Base = &a[0]
		iov[0].SetLen(len(a))
		n++
	}
	for _, b := range bufs {
		if n == maxSendVec {
			break
		}
		if len(b) > 0 {
			iov[n].Base = &b[0]
			iov[n].SetLen(len(b))
			n++
		}
	}
	return sendIovec(fd, iov[:n], flags, nb)
}

// sendIovec sends the buffers iov describes to the socket fd: one
// sendto(2) without an address for one buffer, which need not copy in
// and check a message header and an iovec array, one sendmsg(2) for
// more, none for none.
func sendIovec(fd int, iov []unix.Iovec, flags int, nb bool) (int, error) {
	if len(iov) == 0 {
		return 0, nil
	}
	raceReleaseIO(fd)
	if len(iov) == 1 {
		r, e := sysCall(nb, unix.SYS_SENDTO, uintptr(fd), uintptr(unsafe.Pointer(iov[0].Base)), uintptr(iov[0].Len), uintptr(flags|unix.MSG_NOSIGNAL), 0, 0)
		if e != 0 {
			return 0, e
		}
		return int(r), nil
	}
	var msg unix.Msghdr
	msg.Iov = &iov[0]
	msg.SetIovlen(len(iov))
	r, e := sysCall(nb, unix.SYS_SENDMSG, uintptr(fd), uintptr(unsafe.Pointer(&msg)), uintptr(flags|unix.MSG_NOSIGNAL), 0, 0, 0)
	if e != 0 {
		return 0, e
	}
	return int(r), nil
}

// accept4 accepts a connection on the non-blocking listening socket fd as
// a non-blocking, close-on-exec descriptor, storing the peer's address in
// rsa.
func accept4(fd int, rsa *unix.RawSockaddrAny) (int, error) {
	l := uint32(unix.SizeofSockaddrAny)
	r, _, e := syscall.RawSyscall6(unix.SYS_ACCEPT4, uintptr(fd), uintptr(unsafe.Pointer(rsa)),
		uintptr(unsafe.Pointer(&l)), unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0, 0)
	if e != 0 {
		return -1, e
	}
	return int(r), nil
}

// setTCPAddr sets a to the IPv4 or IPv6 address in rsa, with ip as the
// storage of a.IP, so it allocates nothing. It reports false for another
// address family.
func setTCPAddr(a *net.TCPAddr, ip *[16]byte, rsa *unix.RawSockaddrAny) bool {
	switch rsa.Addr.Family {
	case unix.AF_INET:
		sa := (*unix.RawSockaddrInet4)(unsafe.Pointer(rsa))
		copy(ip[:4], sa.Addr[:])
		*a = net.TCPAddr{IP: ip[:4:4], Port: networkPort(sa.Port)}
	case unix.AF_INET6:
		sa := (*unix.RawSockaddrInet6)(unsafe.Pointer(rsa))
		copy(ip[:], sa.Addr[:])
		*a = net.TCPAddr{IP: ip[:16:16], Port: networkPort(sa.Port)}
		if sa.Scope_id != 0 {
			a.Zone = zoneName(int(sa.Scope_id))
		}
	default:
		return false
	}
	return true
}

// networkPort converts a port in network byte order, as stored in a
// sockaddr, to a number.
func networkPort(p uint16) int {
	b := (*[2]byte)(unsafe.Pointer(&p))
	return int(b[0])<<8 | int(b[1])
}

// getsockname stores the local address of the socket fd in rsa, which
// must be zero.
func getsockname(fd int, rsa *unix.RawSockaddrAny) error {
	l := uint32(unix.SizeofSockaddrAny)
	_, _, e := syscall.RawSyscall(unix.SYS_GETSOCKNAME, uintptr(fd), uintptr(unsafe.Pointer(rsa)), uintptr(unsafe.Pointer(&l)))
	if e != 0 {
		return e
	}
	return nil
}

// closeSocket closes the non-blocking socket fd. Without SO_LINGER a
// socket's close does not wait (the kernel sends what is queued, then the
// FIN, on its own).
func closeSocket(fd int) error {
	if _, _, e := syscall.RawSyscall(unix.SYS_CLOSE, uintptr(fd), 0, 0); e != 0 {
		return e
	}
	return nil
}

// Sendfile sends up to n bytes of the file in from *off to the socket
// out with sendfile(2), advances *off by what it sent and returns the
// count; 0 with a nil error means the file ends before *off. Errors are
// the system call's syscall.Errno. nb says out is non-blocking and the
// file's bytes are in the page cache (see Resident), so the call cannot
// wait, for the socket or for a disk.
func Sendfile(out, in int, off *int64, n int, nb bool) (int, error) {
	raceReleaseIO(out)
	r, e := sysCall(nb, sysSendfile, uintptr(out), uintptr(in), uintptr(unsafe.Pointer(off)), uintptr(n), 0, 0)
	if e != 0 {
		return 0, e
	}
	return int(r), nil
}

// noCachestat is set once cachestat(2) is found missing (Linux before
// 6.5, or filtered out by seccomp).
var noCachestat atomic.Bool

var pageSize = int64(os.Getpagesize())

// resident reports, by cachestat(2), whether bytes [off, off+n) of the
// file fd are all in the page cache; known is false when the kernel does
// not say (EPERM: the caller neither owns nor may write the file; a file
// system without a page cache). Its cost grows with n (it counts the
// range's pages), so callers ask about bounded ranges.
func resident(fd int, off, n int64) (in, known bool) {
	if n <= 0 || noCachestat.Load() {
		return false, false
	}
	r := unix.CachestatRange{Off: uint64(off), Len: uint64(n)}
	var st unix.Cachestat_t
	_, _, e := syscall.RawSyscall6(unix.SYS_CACHESTAT, uintptr(fd), uintptr(unsafe.Pointer(&r)), uintptr(unsafe.Pointer(&st)), 0, 0, 0)
	if e != 0 {
		if e == syscall.ENOSYS {
			noCachestat.Store(true)
		}
		return false, false
	}
	pages := (off+n+pageSize-1)/pageSize - off/pageSize
	return st.Cache >= uint64(pages), true
}

// EpollCtl adds, changes or deletes fd's entry in the epoll set epfd, as
// epoll_ctl(2) with op does, with ev the entry (nil to delete); errors
// are the system call's syscall.Errno. It never blocks, so it is a raw
// system call (see sysCall), where unix.EpollCtl announces a call that
// may block, whose entry wakes the runtime's monitor thread when it
// sleeps (see EpollReady).
func EpollCtl(epfd, op, fd int, ev *unix.EpollEvent) error {
	_, e := sysCall(true, unix.SYS_EPOLL_CTL, uintptr(epfd), uintptr(op), uintptr(fd), uintptr(unsafe.Pointer(ev)), 0, 0)
	if e != 0 {
		return e
	}
	return nil
}

// EpollReady stores the events ready in the epoll set epfd now into
// events and returns their count, as epoll_wait(2) with a timeout of 0
// does; errors are the system call's syscall.Errno (syscall.EINTR: try
// again). It is the read callback's system call for a set that the
// runtime's poller watches: it never blocks, so it is a raw system call
// (see sysCall), where unix.EpollWait announces a call
// that may block, whose entry wakes the runtime's monitor thread when it
// sleeps, a futex and a thread switch for every batch of events a
// reader takes from the runtime's poller on a server at partial load.
func EpollReady(epfd int, events []unix.EpollEvent) (int, error) {
	if len(events) == 0 {
		return 0, nil
	}
	r, e := sysCall(true, unix.SYS_EPOLL_PWAIT, uintptr(epfd), uintptr(unsafe.Pointer(&events[0])), uintptr(len(events)), 0, 0, 0)
	if e != 0 {
		return 0, e
	}
	return int(r), nil
}

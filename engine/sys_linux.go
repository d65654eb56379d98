package engine

import (
	"net"
	"os"
	"sync/atomic"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The few system calls the engine makes itself on sockets, without the
// allocations and indirections of the general wrappers. The unsafe code
// of the package is confined to this file.
//
// A call on a non-blocking socket returns at once (EAGAIN rather than
// waiting), so it is made with RawSyscall when the caller says the
// descriptor is non-blocking (nb): the goroutine keeps its P through the
// call. syscall.Syscall announces a call that may block, and one that runs
// past a sysmon tick (20 µs; sending 80 KiB over loopback does, as the
// kernel runs the receiving side in the same call) has its P handed to
// another thread, which the goroutine must then win back: two thread
// switches per response. With nb false (a descriptor that may block) the
// calls are made with Syscall, as the syscall package makes them.

// sysCall makes the system call trap, raw when nb (see above).
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

// setCork sets or clears TCP_CORK on the socket fd (see corkAbove).
func setCork(fd int, on, nb bool) {
	v := &corkOff
	if on {
		v = &corkOn
	}
	sysCall(nb, unix.SYS_SETSOCKOPT, uintptr(fd), unix.IPPROTO_TCP, unix.TCP_CORK, uintptr(unsafe.Pointer(v)), 4, 0)
}

// recv reads from a socket with recvfrom(2), which takes a shorter path
// through the kernel than read(2) (no file position lock, no VFS layer).
func recv(fd int, p []byte, nb bool) (int, error) {
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

// send writes a and then b to a socket in one sendmsg(2) with flags
// (MSG_MORE, say), or in one sendto(2) when one of them is empty, and
// returns how many bytes of the two it took. Either may be empty.
func send(fd int, a, b []byte, flags int, nb bool) (int, error) {
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
	if n == 0 {
		return 0, nil
	}
	raceReleaseIO(fd)
	if n == 1 {
		// One buffer: sendto(2) without an address, which need not
		// copy in and check a message header and an iovec array.
		r, e := sysCall(nb, unix.SYS_SENDTO, uintptr(fd), uintptr(unsafe.Pointer(iov[0].Base)), uintptr(iov[0].Len), uintptr(flags|unix.MSG_NOSIGNAL), 0, 0)
		if e != 0 {
			return 0, e
		}
		return int(r), nil
	}
	var msg unix.Msghdr
	msg.Iov = &iov[0]
	msg.SetIovlen(n)
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

// sendfile sends up to n bytes of the file in from *off to the socket
// out with sendfile(2), and advances *off by what it sent. nb says out is
// non-blocking and the file's bytes are in the page cache (see
// residency), so the call should not wait, for the socket or for a disk.
func sendfile(out, in int, off *int64, n int, nb bool) (int, error) {
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

// epollReady returns the events ready in the epoll set epfd now, into
// events, as epoll_wait(2) with a timeout of 0 does. It never blocks, so
// it is a raw system call (see sysCall): unix.EpollWait announces a call
// that may block, whose entry wakes the runtime's monitor thread when it
// sleeps, a futex and a thread switch for every batch of events a
// reader takes from the runtime's poller on a server at partial load.
func epollReady(epfd int, events []unix.EpollEvent) (int, error) {
	if len(events) == 0 {
		return 0, nil
	}
	r, e := sysCall(true, unix.SYS_EPOLL_PWAIT, uintptr(epfd), uintptr(unsafe.Pointer(&events[0])), uintptr(len(events)), 0, 0, 0)
	if e != 0 {
		return 0, e
	}
	return int(r), nil
}

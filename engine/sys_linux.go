package engine

import (
	"net"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// The few system calls the engine makes itself on sockets, without the
// allocations and indirections of the general wrappers. The unsafe code
// of the package is confined to this file.

// recv reads from a socket with recvfrom(2), which takes a shorter path
// through the kernel than read(2) (no file position lock, no VFS layer).
func recv(fd int, p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	r, _, e := syscall.Syscall6(unix.SYS_RECVFROM, uintptr(fd), uintptr(unsafe.Pointer(&p[0])), uintptr(len(p)), 0, 0, 0)
	if e != 0 {
		return 0, e
	}
	raceAcquireIO(fd)
	return int(r), nil
}

// send writes a and then b to a socket in one sendmsg(2) with flags
// (MSG_MORE, say), and returns how many bytes of the two it took. Either
// may be empty.
func send(fd int, a, b []byte, flags int) (int, error) {
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
	var msg unix.Msghdr
	msg.Iov = &iov[0]
	msg.SetIovlen(n)
	r, _, e := syscall.Syscall(unix.SYS_SENDMSG, uintptr(fd), uintptr(unsafe.Pointer(&msg)), uintptr(flags|unix.MSG_NOSIGNAL))
	if e != 0 {
		return 0, e
	}
	return int(r), nil
}

// accept4 accepts a connection on the listening socket fd as a
// non-blocking, close-on-exec descriptor, storing the peer's address in
// rsa.
func accept4(fd int, rsa *unix.RawSockaddrAny) (int, error) {
	l := uint32(unix.SizeofSockaddrAny)
	r, _, e := syscall.Syscall6(unix.SYS_ACCEPT4, uintptr(fd), uintptr(unsafe.Pointer(rsa)),
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

// getsockname sets a, with ip as the storage of a.IP, to the local address
// of the socket fd.
func getsockname(fd int, a *net.TCPAddr, ip *[16]byte) error {
	var rsa unix.RawSockaddrAny
	l := uint32(unix.SizeofSockaddrAny)
	_, _, e := syscall.Syscall(unix.SYS_GETSOCKNAME, uintptr(fd), uintptr(unsafe.Pointer(&rsa)), uintptr(unsafe.Pointer(&l)))
	if e != 0 {
		return e
	}
	if !setTCPAddr(a, ip, &rsa) {
		return unix.EAFNOSUPPORT
	}
	return nil
}

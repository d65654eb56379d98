package sock

import (
	"net"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// ListenerFile returns ln's listening socket as a file to hand to a child
// process (exec.Cmd.ExtraFiles), for ln from Listen or FileListener. The
// file holds a duplicate descriptor, which the caller closes; ln stays
// usable.
//
// The file is made so that handing it over never puts the socket in
// blocking mode: os.File.Fd, which os/exec calls, clears O_NONBLOCK on a
// descriptor the runtime polls, and the flag belongs to the socket, not
// the descriptor, so it would change under every process accepting on
// it. The returned file is not polled, and Fd leaves the flag alone.
func ListenerFile(ln net.Listener) (*os.File, error) {
	var rc syscall.RawConn
	var err error
	switch l := ln.(type) {
	case *tcpListener:
		rc = l.rc
	case syscall.Conn:
		rc, err = l.SyscallConn()
	default:
		return nil, &net.OpError{Op: "file", Net: ln.Addr().Network(), Addr: ln.Addr(), Err: syscall.EINVAL}
	}
	if err != nil {
		return nil, err
	}
	dup := -1
	cerr := rc.Control(func(fd uintptr) {
		dup, err = unix.FcntlInt(fd, unix.F_DUPFD_CLOEXEC, 3)
	})
	if cerr != nil {
		return nil, cerr
	}
	if err != nil {
		return nil, os.NewSyscallError("fcntl", err)
	}
	// os.NewFile polls (and Fd later unblocks) a non-blocking descriptor:
	// clear the flag while the file is made, then set it again.
	unix.SetNonblock(dup, false)
	f := os.NewFile(uintptr(dup), "listener "+ln.Addr().String())
	unix.SetNonblock(dup, true)
	return f, nil
}

// FileListener returns a listener on the listening socket f inherited
// from a parent process (see ListenerFile): for TCP this package's own
// listener, as Listen returns, for a Unix socket net.FileListener's. f is
// not closed; the listener holds a duplicate.
//
// The TCP listener is made for a socket that other processes accept on
// too. Its Accept waits for connections in an epoll set of its own, in
// which the socket is registered with EPOLLEXCLUSIVE, so that a new
// connection wakes one of the waiting processes rather than every one
// (see shared_linux.go); a waiting Accept holds a thread. ListenerFile
// accepts it.
func FileListener(f *os.File) (net.Listener, error) {
	sc, err := f.SyscallConn()
	if err != nil {
		return nil, err
	}
	dup := -1
	var sa unix.Sockaddr
	cerr := sc.Control(func(fd uintptr) {
		if sa, err = unix.Getsockname(int(fd)); err != nil {
			return
		}
		dup, err = unix.FcntlInt(fd, unix.F_DUPFD_CLOEXEC, 3)
	})
	if cerr != nil {
		return nil, cerr
	}
	if err != nil {
		return nil, os.NewSyscallError("getsockname", err)
	}
	var la *net.TCPAddr
	switch a := sa.(type) {
	case *unix.SockaddrInet4:
		la = &net.TCPAddr{IP: net.IPv4(a.Addr[0], a.Addr[1], a.Addr[2], a.Addr[3]), Port: a.Port}
	case *unix.SockaddrInet6:
		la = &net.TCPAddr{IP: append(net.IP(nil), a.Addr[:]...), Port: a.Port}
	default:
		df := os.NewFile(uintptr(dup), f.Name())
		defer df.Close()
		return net.FileListener(df)
	}
	if err := unix.SetNonblock(dup, true); err != nil {
		unix.Close(dup)
		return nil, os.NewSyscallError("fcntl", err)
	}
	s, err := newSharedSocket(dup)
	if err != nil {
		unix.Close(dup)
		return nil, err
	}
	l := &tcpListener{f: s, rc: s, addr: la}
	if !la.IP.IsUnspecified() {
		l.laddr = la
	}
	l.acceptFn = l.step
	return l, nil
}

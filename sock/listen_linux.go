package sock

import (
	"context"
	"io"
	"net"
	"os"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// A TCP listener's connections are accepted and served with direct
// system calls on their non-blocking descriptors (Conn). Go's own
// accept path spends four system calls per connection that a web server
// can do without: getsockname (the local address is the listener's),
// setsockopt TCP_NODELAY (inherited from the listener instead), and the
// epoll_ctl calls that add the descriptor to the runtime's poller and
// remove it at close. A Conn joins the poller only when an operation
// would block. A short connection — its request already in when it is
// accepted, its response fitting the socket buffer — is then served with
// accept4, recvfrom, sendto and close alone, like nginx's (which still
// adds each connection to its epoll set).

// tcpListener is the listener Listen and FileListener return for TCP: its
// Accept returns *Conns. Accept calls are serialised; Close interrupts
// a blocked one.
type tcpListener struct {
	// f is the listening socket and rc its RawConn: an *os.File
	// registered with the poller (Listen's), or a *sharedSocket, which
	// waits in an epoll set of its own (FileListener's).
	f    io.Closer
	rc   syscall.RawConn
	addr *net.TCPAddr
	// laddr is addr when it names one IP (every connection's local
	// address), nil for a wildcard.
	laddr *net.TCPAddr

	mu       sync.Mutex // serialises Accept
	acceptFn func(fd uintptr) bool
	nfd      int // results of acceptFn
	err      error
	rsa      unix.RawSockaddrAny
}

// listenTCP opens a TCP listening socket as Listen describes. Go's
// ListenConfig makes it (address resolution, dual-stack wildcards,
// SO_REUSEADDR, the backlog); its Control hook sets TCP_NODELAY, which
// accepted sockets inherit, SO_REUSEPORT if shared, and keeps a duplicate
// of the descriptor. The Go listener is then closed and the socket lives
// on in the duplicate, served by tcpListener.
func listenTCP(network, addr string, shared bool) (net.Listener, error) {
	dup := -1
	lc := net.ListenConfig{KeepAlive: -1, Control: func(network, address string, c syscall.RawConn) error {
		var serr error
		err := c.Control(func(fd uintptr) {
			if shared {
				if serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_REUSEPORT, 1); serr != nil {
					return
				}
			}
			if serr = unix.SetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_NODELAY, 1); serr != nil {
				return
			}
			dup, serr = unix.FcntlInt(fd, unix.F_DUPFD_CLOEXEC, 3)
		})
		if err != nil {
			return err
		}
		return serr
	}}
	lc.SetMultipathTCP(false) // plain TCP, as clients speak it; MPTCP costs more per accept
	ln, err := lc.Listen(context.Background(), network, addr)
	if err != nil {
		if dup >= 0 {
			unix.Close(dup)
		}
		return nil, err
	}
	la := ln.Addr().(*net.TCPAddr)
	ln.Close() // the socket stays open through dup
	f := os.NewFile(uintptr(dup), "tcp listener "+la.String())
	rc, err := f.SyscallConn()
	if err != nil {
		f.Close()
		return nil, err
	}
	l := &tcpListener{f: f, rc: rc, addr: la}
	if la.IP != nil && !la.IP.IsUnspecified() {
		l.laddr = la
	}
	l.acceptFn = l.step
	return l, nil
}

// Addr implements net.Listener.
func (l *tcpListener) Addr() net.Addr { return l.addr }

// setDeferAccept makes the kernel accept connections yet to come only once
// their first bytes are in, or after about a second without any (as it
// counts SYN-ACK retransmissions), or at once (see SetDeferAccept).
func (l *tcpListener) setDeferAccept(on bool) error {
	v := 0
	if on {
		v = 1
	}
	var err error
	if cerr := l.rc.Control(func(fd uintptr) {
		err = unix.SetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_DEFER_ACCEPT, v)
	}); cerr != nil {
		return cerr
	}
	return os.NewSyscallError("setsockopt", err)
}

// Close implements net.Listener.
func (l *tcpListener) Close() error { return l.f.Close() }

// Accept implements net.Listener: it waits for and returns the next
// connection, a *Conn. Errors are those of a closed listener or of
// accept4(2), as *os.SyscallError.
func (l *tcpListener) Accept() (net.Conn, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for {
		l.nfd, l.err = -1, nil
		if err := l.rc.Read(l.acceptFn); err != nil {
			return nil, &net.OpError{Op: "accept", Net: "tcp", Addr: l.addr, Err: net.ErrClosed}
		}
		if l.err != nil {
			return nil, l.err
		}
		fd := l.nfd
		if fd <= 2 {
			// A process started with standard descriptors closed may get
			// them back for sockets; os.File treats writes to 1 and 2
			// specially (SIGPIPE on EPIPE), so move the socket away.
			nfd, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 3)
			unix.Close(fd)
			if err != nil {
				return nil, os.NewSyscallError("fcntl", err)
			}
			fd = nfd
		}
		c := &Conn{fd: fd}
		if l.laddr != nil {
			c.laddr.Store(l.laddr)
		}
		if !setTCPAddr(&c.raddr, &c.rip, &l.rsa) {
			unix.Close(fd) // not an IP connection; cannot happen on a TCP socket
			continue
		}
		return c, nil
	}
}

// step is called by the poller when the listener may have a connection;
// it returns false to wait.
func (l *tcpListener) step(fd uintptr) bool {
	for {
		nfd, err := accept4(int(fd), &l.rsa)
		switch err {
		case nil:
			l.nfd = nfd
			return true
		case syscall.EINTR, syscall.ECONNABORTED:
			continue // a connection reset while queued is not an error of ours
		case syscall.EAGAIN:
			return false
		default:
			l.err = os.NewSyscallError("accept4", err)
			return true
		}
	}
}

// ownSocket reports whether nc is a connection of this package's TCP
// listener (a Conn), whose descriptor is non-blocking from accept4 on.
func ownSocket(nc net.Conn) bool {
	_, ok := nc.(*Conn)
	return ok
}

package daemon

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/sluice-server/sluice/config"
	"github.com/sluice-server/sluice/sock"
)

// listenFdsStart is the first descriptor systemd passes (SD_LISTEN_FDS_START).
const listenFdsStart = 3

// SocketActivation returns the sockets a service manager passed: the
// LISTEN_FDS descriptors from 3 on, if LISTEN_PID is this process's id;
// nil, and no error, when none were passed. It unsets LISTEN_PID,
// LISTEN_FDS and LISTEN_FDNAMES, so that the processes this one starts
// (workers, a binary upgrade's new master, CGI programs) do not take the
// descriptors for theirs, and marks them close-on-exec. A descriptor that
// is not a listening TCP or Unix stream socket is an error. Call it once,
// early: the descriptors are the process's from then on.
func SocketActivation() (*Activation, error) {
	pid, fds, names := os.Getenv("LISTEN_PID"), os.Getenv("LISTEN_FDS"), os.Getenv("LISTEN_FDNAMES")
	os.Unsetenv("LISTEN_PID")
	os.Unsetenv("LISTEN_FDS")
	os.Unsetenv("LISTEN_FDNAMES")
	if pid == "" || fds == "" {
		return nil, nil
	}
	if p, err := strconv.Atoi(pid); err != nil || p != os.Getpid() {
		return nil, nil // meant for another process
	}
	n, err := strconv.Atoi(fds)
	if err != nil || n < 0 {
		return nil, fmt.Errorf("socket activation: LISTEN_FDS=%q is not a number of descriptors", fds)
	}
	var nameList []string
	if names != "" {
		nameList = strings.Split(names, ":")
	}
	a := &Activation{}
	for i := range n {
		fd := listenFdsStart + i
		unix.CloseOnExec(fd)
		s := &activated{}
		if i < len(nameList) {
			s.name = nameList[i]
		}
		if err := s.open(fd); err != nil {
			a.close()
			return nil, fmt.Errorf("socket activation: descriptor %d (%s): %w", fd, s.name, err)
		}
		a.socks = append(a.socks, s)
	}
	return a, nil
}

// open checks that fd is a listening stream socket and records it.
func (s *activated) open(fd int) error {
	if t, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_TYPE); err != nil {
		return fmt.Errorf("not a socket: %w", err)
	} else if t != unix.SOCK_STREAM {
		return errors.New("not a stream socket")
	}
	if on, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_ACCEPTCONN); err != nil || on == 0 {
		return errors.New("not a listening socket")
	}
	sa, err := unix.Getsockname(fd)
	if err != nil {
		return os.NewSyscallError("getsockname", err)
	}
	switch sa := sa.(type) {
	case *unix.SockaddrInet4:
		s.addr = &net.TCPAddr{IP: net.IP(sa.Addr[:]).To16(), Port: sa.Port}
	case *unix.SockaddrInet6:
		s.addr = &net.TCPAddr{IP: net.IP(sa.Addr[:]), Port: sa.Port}
	case *unix.SockaddrUnix:
		s.addr = &net.UnixAddr{Name: sa.Name, Net: "unix"}
	default:
		return errors.New("neither a TCP nor a Unix socket")
	}
	if _, ok := s.addr.(*net.TCPAddr); ok {
		// As sock.Listen's sockets: accepted connections inherit
		// TCP_NODELAY. (The server that serves the socket decides
		// whether it defers accepting.)
		unix.SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_NODELAY, 1)
	}
	s.f = os.NewFile(uintptr(fd), "activated "+s.addr.String())
	return nil
}

func (a *Activation) close() {
	for _, s := range a.socks {
		s.f.Close()
	}
}

// Listen returns a listener on the socket passed for addr, for
// Server.Listen and supervisor.Master.Listen, or, when none was, opens one
// with the package's Listen. A socket passed matches addr when it is
// bound to it: the same Unix socket path; for TCP the same port (any, for
// a port 0 written) and the same IP address, an unspecified one (":80",
// "0.0.0.0:80", "[::]:80") matching any unspecified one, a host name
// matching any of its addresses. Each call returns a new descriptor on
// the socket, which the caller closes as usual; the socket itself stays
// open in the Activation, so an address a reload drops and a later one
// lists again gets it again. Sockets keep what systemd set on them,
// but TCP ones get TCP_NODELAY, as Listen's do, and the engine's server
// sets TCP_DEFER_ACCEPT as the traffic asks (engine/deferaccept.go).
func (a *Activation) Listen(addr config.Address) (net.Listener, error) {
	if a != nil {
		for _, s := range a.socks {
			if boundTo(s.addr, addr) {
				return sock.FileListener(s.f)
			}
		}
	}
	return Listen(addr)
}

package sock

import (
	"context"
	"errors"
	"net"
	"syscall"
)

// Listen opens a listening socket. network is "tcp", "tcp4", "tcp6" or
// "unix". Like net.Listen, it fails (EADDRINUSE) when another socket
// listens on the address already: a second server started on a busy port
// is refused rather than handed a share of its connections.
//
// On Linux, a TCP listener from Listen serves its connections with fewer
// system calls than one from net.Listen: accepted sockets inherit
// TCP_NODELAY from it, and join the runtime's poller only when an
// operation would block (its Accept returns a *Conn); elsewhere it is
// net.Listen's. Its connections implement net.Conn and syscall.Conn.
// Accepted connections get no TCP keep-alive probes: a server's idle
// timeout already closes connections that stay silent. Accept may be
// called from several goroutines (the calls are serialised); Close
// interrupts a waiting one.
func Listen(network, addr string) (net.Listener, error) {
	return listen(network, addr, false)
}

// ListenShared is Listen with SO_REUSEPORT set on a TCP socket, so several
// processes (workers of one server) may listen on the same address, each
// with its own socket, and the kernel spreads new connections among them.
// Every socket sharing the address must set it, and belong to the same
// user. A Unix socket cannot be shared; for "unix" it is Listen. Outside
// Linux a TCP socket cannot be shared either: ListenShared fails.
func ListenShared(network, addr string) (net.Listener, error) {
	return listen(network, addr, true)
}

func listen(network, addr string, shared bool) (net.Listener, error) {
	if network == "unix" {
		var lc net.ListenConfig
		return lc.Listen(context.Background(), network, addr)
	}
	return listenTCP(network, addr, shared)
}

// SetDeferAccept makes the kernel hand ln's connections yet to come to
// Accept only once their first bytes are in, or after about a second
// without any (as it counts SYN-ACK retransmissions), if on; at once if
// not. ln must come from Listen, ListenShared or FileListener, on Linux:
// for another listener it does nothing and returns errors.ErrUnsupported.
// It may be called beside Accept.
func SetDeferAccept(ln net.Listener, on bool) error {
	if d, ok := ln.(interface{ setDeferAccept(on bool) error }); ok {
		return d.setDeferAccept(on)
	}
	return errors.ErrUnsupported
}

// Temporary reports whether an error from a listener's Accept is worth
// retrying (after a pause; see AcceptBackoff): descriptor or memory
// exhaustion, connections that died in the queue, a timeout.
func Temporary(err error) bool {
	for _, e := range []error{syscall.EMFILE, syscall.ENFILE, syscall.ENOBUFS, syscall.ENOMEM,
		syscall.ECONNABORTED, syscall.ECONNRESET, syscall.EINTR, syscall.EPROTO} {
		if errors.Is(err, e) {
			return true
		}
	}
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

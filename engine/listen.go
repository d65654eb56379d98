package engine

import (
	"context"
	"errors"
	"net"
	"syscall"
)

// Listen opens a listening socket with SO_REUSEPORT set, so several
// processes (workers) may listen on the same address and the kernel
// spreads connections among them. network is "tcp", "tcp4", "tcp6" or
// "unix".
//
// A TCP listener from Listen serves its connections with fewer system
// calls than one from net.Listen (which Serve also accepts): accepted
// sockets inherit TCP_NODELAY from it, and join the runtime's poller only
// when an operation would block (see sock_linux.go). Its connections
// implement net.Conn and syscall.Conn. Accepted connections get no TCP
// keep-alive probes: the engine's idle timeout already closes connections
// that stay silent.
func Listen(network, addr string) (net.Listener, error) {
	if network == "unix" {
		var lc net.ListenConfig
		return lc.Listen(context.Background(), network, addr)
	}
	return listenTCP(network, addr)
}

// temporaryAcceptError reports whether an accept error is worth retrying:
// descriptor or memory exhaustion and connections that died in the queue.
func temporaryAcceptError(err error) bool {
	for _, e := range []error{syscall.EMFILE, syscall.ENFILE, syscall.ENOBUFS, syscall.ENOMEM,
		syscall.ECONNABORTED, syscall.ECONNRESET, syscall.EINTR, syscall.EPROTO} {
		if errors.Is(err, e) {
			return true
		}
	}
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

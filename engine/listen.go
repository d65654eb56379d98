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
// Accepted connections get no TCP keep-alive probes (Go would otherwise
// set four socket options on each): the engine's idle timeout already
// closes connections that stay silent.
func Listen(network, addr string) (net.Listener, error) {
	lc := net.ListenConfig{Control: controlReusePort, KeepAlive: -1}
	if network == "unix" {
		lc.Control = nil
	}
	return lc.Listen(context.Background(), network, addr)
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

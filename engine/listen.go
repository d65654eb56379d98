package engine

import (
	"net"

	"github.com/sluice-server/sluice/sock"
)

// Listen opens a listening socket for Serve: it is sock.Listen, whose
// TCP listeners on Linux accept connections the engine serves with its
// own system calls (see the package's doc, "Platforms"). network is
// "tcp", "tcp4", "tcp6" or "unix". Like net.Listen, it fails (EADDRINUSE)
// when another socket listens on the address already.
func Listen(network, addr string) (net.Listener, error) {
	return sock.Listen(network, addr)
}

// ListenShared is Listen with SO_REUSEPORT set on a TCP socket, so several
// processes (workers of one server) may listen on the same address: it is
// sock.ListenShared. Outside Linux a TCP socket cannot be shared:
// ListenShared fails.
func ListenShared(network, addr string) (net.Listener, error) {
	return sock.ListenShared(network, addr)
}

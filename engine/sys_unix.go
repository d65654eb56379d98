//go:build unix && !linux

package engine

import (
	"net"
	"syscall"
)

// On Unix systems other than Linux, Listen returns the net package's
// listeners, and the engine's one system call of its own is the idle
// wait's read (see rawRead), a plain read(2); writes go through the
// net.Conn (see sendfile_other.go).

// ownSocket reports false: no connection comes from a listener of the
// engine's own.
func ownSocket(net.Conn) bool { return false }

// recv reads from the socket fd with read(2).
func recv(fd int, p []byte, _ bool) (int, error) {
	n, err := syscall.Read(fd, p)
	if err != nil {
		return 0, err
	}
	return n, nil
}

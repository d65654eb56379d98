//go:build !unix

package engine

import (
	"errors"
	"net"
	"syscall"
)

// Without Unix system calls (Windows, say) a connection is served through
// its net.Conn alone: the idle wait reads into a session's buffer, and
// writes go through Write (see sendfile_other.go).

// rawConn returns no RawConn: the idle wait's raw read needs a
// non-blocking descriptor.
func rawConn(net.Conn) (syscall.RawConn, bool) { return nil, false }

// recv is never called: no connection has a RawConn here.
func recv(int, []byte, bool) (int, error) { return 0, errors.ErrUnsupported }

//go:build !unix

package sock

import (
	"errors"
	"net"
	"syscall"
)

// Without Unix system calls (Windows, say) a connection is served through
// its net.Conn alone: the idle wait reads into a session's buffer, and
// writes go through Write.

// RawConn returns no RawConn here: the idle wait's raw read needs a
// non-blocking descriptor.
func RawConn(net.Conn) (syscall.RawConn, bool) { return nil, false }

// Recv is never called here (no connection has a RawConn); it returns
// errors.ErrUnsupported.
func Recv(int, []byte, bool) (int, error) { return 0, errors.ErrUnsupported }

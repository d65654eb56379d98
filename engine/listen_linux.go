package engine

import (
	"net"

	"golang.org/x/sys/unix"
)

// defaultMaxConns is DefaultMaxConns, or three quarters of RLIMIT_NOFILE
// when that is lower.
func defaultMaxConns() int {
	var rl unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &rl); err == nil && rl.Cur > 0 {
		if n := int(rl.Cur * 3 / 4); n < DefaultMaxConns {
			return max(n, 1)
		}
	}
	return DefaultMaxConns
}

// ownSocket reports whether nc is a connection of the engine's own TCP
// listener (a sockConn), whose descriptor is non-blocking from accept4 on.
func ownSocket(nc net.Conn) bool {
	_, ok := nc.(*sockConn)
	return ok
}

package engine

import (
	"syscall"

	"golang.org/x/sys/unix"
)

func controlReusePort(network, address string, c syscall.RawConn) error {
	var serr error
	err := c.Control(func(fd uintptr) {
		serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_REUSEPORT, 1)
	})
	if err != nil {
		return err
	}
	return serr
}

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

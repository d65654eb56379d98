package engine

import "golang.org/x/sys/unix"

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

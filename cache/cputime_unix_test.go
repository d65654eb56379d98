//go:build unix

package cache

import (
	"syscall"
	"time"
)

// cpuTime returns the CPU time the process has used, user and system,
// its garbage collector's included.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

package daemon

import "golang.org/x/sys/unix"

// monotonicUsec returns CLOCK_MONOTONIC in microseconds, as sd_notify's
// MONOTONIC_USEC wants it.
func monotonicUsec() (int64, bool) {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		return 0, false
	}
	return ts.Nano() / 1000, true
}

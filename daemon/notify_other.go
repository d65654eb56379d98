//go:build !linux

package daemon

// monotonicUsec reports no clock: systemd, whose MONOTONIC_USEC it is
// for, runs on Linux.
func monotonicUsec() (int64, bool) { return 0, false }

//go:build unix

package files_test

import "syscall"

// setSockoptInt sets an integer socket option on the descriptor a
// syscall.RawConn's Control hands over.
func setSockoptInt(fd uintptr, level, opt, value int) error {
	return syscall.SetsockoptInt(int(fd), level, opt, value)
}

package files_test

import "syscall"

// setSockoptInt sets an integer socket option on the handle a
// syscall.RawConn's Control hands over.
func setSockoptInt(fd uintptr, level, opt, value int) error {
	return syscall.SetsockoptInt(syscall.Handle(fd), level, opt, value)
}

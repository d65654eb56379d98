//go:build !linux

package daemon

// CloseOnExecInherited marks every descriptor above 2 close-on-exec, so
// that no process this one starts gets one it was not given on purpose
// (see the Linux version). Here it lists /dev/fd, which shows every
// descriptor on macOS and on a BSD with fdescfs mounted; elsewhere it
// marks those /dev/fd shows.
func CloseOnExecInherited() error {
	return cloexecListed("/dev/fd")
}

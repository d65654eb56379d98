//go:build !linux

package daemon

import (
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// CloseOnExecInherited marks every descriptor above 2 close-on-exec, so
// that no process this one starts gets one it was not given on purpose
// (see the Linux version). Here it lists /dev/fd, which shows every
// descriptor on macOS and on a BSD with fdescfs mounted; elsewhere it
// marks those /dev/fd shows.
func CloseOnExecInherited() error {
	d, err := os.Open("/dev/fd")
	if err != nil {
		return err
	}
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		return err
	}
	for _, n := range names {
		if fd, err := strconv.Atoi(n); err == nil && fd > 2 {
			unix.CloseOnExec(fd)
		}
	}
	return nil
}

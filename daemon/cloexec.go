package daemon

import (
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// cloexecListed marks close-on-exec every descriptor above 2 that dir
// (/proc/self/fd, /dev/fd) lists: CloseOnExecInherited's way where
// close_range(2) is missing.
func cloexecListed(dir string) error {
	d, err := os.Open(dir)
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

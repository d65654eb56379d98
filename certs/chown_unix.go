//go:build unix

package certs

import (
	"errors"
	"os"
	"syscall"
)

// chownFile gives the regular file name to uid and gid, unless it is a
// link: a symbolic link is not followed, and a file with other hard links
// is left as it is, for whoever owns the directory could have linked a
// file of root's there.
func chownFile(name string, uid, gid int) error {
	f, err := os.OpenFile(name, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if errors.Is(err, syscall.ELOOP) {
		return nil // a symbolic link put in place since ReadDir
	}
	if err != nil {
		return err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return err
	}
	if st, ok := info.Sys().(*syscall.Stat_t); !info.Mode().IsRegular() || !ok || st.Nlink != 1 {
		return nil
	}
	return f.Chown(uid, gid)
}

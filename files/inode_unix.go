//go:build unix

package files

import (
	"io/fs"
	"syscall"
)

// inode returns the file's inode number, or 0 when fi does not come from
// the operating system (embed.FS, fstest.MapFS).
func inode(fi fs.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Ino)
	}
	return 0
}

//go:build linux && !(386 || arm || mips || mipsle)

package fastcgi

import (
	"io/fs"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// fileID is what revalidate compares: the script's file as resolve's
// stat found it, and its path as a C string.
type fileID struct {
	ok       bool
	path     []byte // Script.Filename, NUL-terminated
	dev, ino uint64
	mode     uint32
	ctime    [2]int64 // seconds, nanoseconds
}

// identify returns fi's identity for revalidate, or one with ok false
// when the file lies on a file system not known to be local (see
// revalidate).
func identify(filename string, fi fs.FileInfo) fileID {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok || !localFS(filename) {
		return fileID{}
	}
	return fileID{
		ok:    true,
		path:  append([]byte(filename), 0),
		dev:   uint64(st.Dev),
		ino:   uint64(st.Ino),
		mode:  st.Mode,
		ctime: [2]int64{int64(st.Ctim.Sec), int64(st.Ctim.Nsec)},
	}
}

// revalidate reports whether the script's file is still the one resolve
// checked: its path (symbolic links followed, as PHP-FPM opens it)
// reaches the same device and inode, of the same type and permissions,
// with the same change time. The kernel sets the change time of an inode
// written, chmodded, linked, unlinked or renamed, so a file removed,
// replaced, rewritten or moved fails it, and so does a path whose
// directories were renamed or replaced unless it still reaches that very
// inode, a file resolve accepted under the root and which has not
// changed since; resolve's full check is made again once resolveFull has
// passed all the same.
//
// The stat is one raw system call (RawSyscall6): entering an ordinary
// system call wakes the runtime's monitor thread (sysmon) from its
// sleep, after which it polls every 20 µs for about a millisecond, some
// 60 wake-ups once a second per script on an otherwise idle server. A
// raw call keeps the goroutine's P in the kernel: a stat of a cached
// path on a local file system returns in a microsecond or two, but one
// on a network file system may wait for its server, and the process
// with it. So identify gives an identity only to files on the local file
// systems localFS names; scripts elsewhere (NFS, CIFS, FUSE, …) are
// checked by resolve again, with ordinary system calls, each second.
func revalidate(id fileID) bool {
	var st unix.Stat_t
	dir := unix.AT_FDCWD // a variable: the constant is negative
	_, _, e := syscall.RawSyscall6(unix.SYS_NEWFSTATAT, uintptr(dir),
		uintptr(unsafe.Pointer(&id.path[0])), uintptr(unsafe.Pointer(&st)), 0, 0, 0)
	return e == 0 && uint64(st.Dev) == id.dev && uint64(st.Ino) == id.ino &&
		st.Mode == id.mode && [2]int64{int64(st.Ctim.Sec), int64(st.Ctim.Nsec)} == id.ctime
}

// localFS reports whether the file name lies on a file system whose
// stat answers from memory or a local disk: ext2/3/4, XFS, Btrfs, tmpfs,
// overlayfs, F2FS, ZFS, squashfs, ramfs. Any other answer, or an error,
// is false.
func localFS(name string) bool {
	var sf unix.Statfs_t
	if unix.Statfs(name, &sf) != nil {
		return false
	}
	switch uint32(sf.Type) {
	case unix.EXT4_SUPER_MAGIC, unix.XFS_SUPER_MAGIC, unix.BTRFS_SUPER_MAGIC,
		unix.TMPFS_MAGIC, unix.OVERLAYFS_SUPER_MAGIC, unix.F2FS_SUPER_MAGIC,
		0x2fc12fc1, // ZFS
		unix.SQUASHFS_MAGIC, unix.RAMFS_MAGIC:
		return true
	}
	return false
}

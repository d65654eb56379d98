//go:build linux || darwin || freebsd || openbsd || netbsd || dragonfly

package disk

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// sharedAcrossProcesses says whether Stores of several processes may
// share a directory: flock(2) serializes them.
const sharedAcrossProcesses = true

// lockFile takes f's exclusive flock, waiting for it.
func lockFile(f *os.File) error {
	for {
		err := unix.Flock(int(f.Fd()), unix.LOCK_EX)
		if !errors.Is(err, unix.EINTR) {
			return err
		}
	}
}

// unlockFile releases f's flock.
func unlockFile(f *os.File) error {
	return unix.Flock(int(f.Fd()), unix.LOCK_UN)
}

// tryLockFile takes f's exclusive flock if no one holds it.
func tryLockFile(f *os.File) bool {
	return unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB) == nil
}

// abandoned reports whether the lock file f of a Store's temporary
// files has no live Store: a Store holds the flock while it is open,
// and the kernel drops it when its process dies.
func abandoned(f *os.File, _ os.FileInfo) bool { return tryLockFile(f) }

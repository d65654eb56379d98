//go:build !(linux || darwin || freebsd || openbsd || netbsd || dragonfly)

package disk

import (
	"os"
	"time"
)

// sharedAcrossProcesses says whether Stores of several processes may
// share a directory: here there is no flock, so only one process may.
const sharedAcrossProcesses = false

func lockFile(*os.File) error   { return nil }
func unlockFile(*os.File) error { return nil }

// abandoned guesses that the lock file of a Store's temporary files is
// its dead Store's when it is over a day old.
func abandoned(_ *os.File, fi os.FileInfo) bool {
	return time.Since(fi.ModTime()) > 24*time.Hour
}

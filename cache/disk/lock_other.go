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

// abandoned guesses that a temporary file nobody wrote to for an hour
// has no live writer.
func abandoned(_ *os.File, fi os.FileInfo) bool {
	return time.Since(fi.ModTime()) > time.Hour
}

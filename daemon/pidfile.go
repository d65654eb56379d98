package daemon

import (
	"os"
	"strconv"
	"strings"
)

// writePidFile writes the process id to path.
func writePidFile(path string) error {
	return os.WriteFile(path, []byte(strconv.Itoa(os.Getpid())+"\n"), 0o644)
}

// removePidFile removes path if it still holds this process's id: a
// server started since with the same pid_file keeps its own.
func removePidFile(path string) {
	if b, err := os.ReadFile(path); err == nil && strings.TrimSpace(string(b)) == strconv.Itoa(os.Getpid()) {
		os.Remove(path)
	}
}

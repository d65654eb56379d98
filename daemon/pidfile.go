package daemon

import (
	"errors"
	"log/slog"
	"os"
	"strconv"
	"strings"
)

// The pid file, as a config's pid_file names it: written by a Server
// (and by a supervisor's master) at start, moved by a reload that
// changes pid_file, removed at shutdown, and read by 'sluice reload',
// 'sluice stop' and 'sluice upgrade' to find the process to signal. One process's id in
// decimal, then a newline.

// ErrNoPid is ReadPidFile's error for a file that holds no process id.
var ErrNoPid = errors.New("no process id")

// WritePidFile writes this process's id to path (mode 0644), replacing
// what it held.
func WritePidFile(path string) error {
	return os.WriteFile(path, []byte(strconv.Itoa(os.Getpid())+"\n"), 0o644)
}

// RemovePidFile removes path if it still holds this process's id: a
// server started since with the same pid_file keeps its own.
func RemovePidFile(path string) {
	if b, err := os.ReadFile(path); err == nil && strings.TrimSpace(string(b)) == strconv.Itoa(os.Getpid()) {
		os.Remove(path)
	}
}

// MovePidFile moves this process's pid file from old to path, as a
// reload that changes pid_file does ("" is none): path is written first,
// then old removed if it still holds this process's id. If path cannot
// be written, old is left as it is and the error returned.
func MovePidFile(old, path string) error {
	if path != "" {
		if err := WritePidFile(path); err != nil {
			return err
		}
	}
	if old != "" {
		RemovePidFile(old)
	}
	return nil
}

// SwitchPidFile moves the pid file from cur to name, as a reload asks
// (MovePidFile), and returns the one in use afterwards: name, or cur,
// with an error logged to log, if name cannot be written. A name equal
// to cur changes nothing.
func SwitchPidFile(cur, name string, log *slog.Logger) string {
	if name == cur {
		return cur
	}
	if err := MovePidFile(cur, name); err != nil {
		log.Error("cannot write the new pid file; keeping the old one", "pid_file", name, "error", err)
		return cur
	}
	return name
}

// ReadPidFile returns the process id path holds. It fails with the
// error of reading the file, or with ErrNoPid if what it holds (spaces
// around it aside) is not a positive decimal number.
func ReadPidFile(path string) (int, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil || n <= 0 {
		return 0, ErrNoPid
	}
	return n, nil
}

// Package machine holds what the benchmark programs ask of the machine
// they run on: a free loopback port, the descriptor limit raised, and
// the client's threads pinned to its cores (the servers having the
// others).
package machine

import (
	"net"
	"os"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

// FreePort returns a loopback TCP port nobody listens on now.
func FreePort() (int, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port, nil
}

// RaiseNofile raises the soft descriptor limit to the hard one (programs
// started later inherit it) and returns it, at most 1<<20; 1024 if the
// limit cannot be read.
func RaiseNofile() int {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		return 1024
	}
	rl.Cur = rl.Max
	syscall.Setrlimit(syscall.RLIMIT_NOFILE, &rl)
	syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl)
	return int(min(rl.Cur, 1<<20))
}

// Pin binds every thread of this process to cpus; threads created later
// inherit the mask. It goes over the threads twice, for those started
// during the first pass. Errors are ignored: an unpinned thread only
// makes the figures noisier.
func Pin(cpus ...int) {
	var set unix.CPUSet
	for _, c := range cpus {
		set.Set(c)
	}
	for range 2 {
		tasks, _ := os.ReadDir("/proc/self/task")
		for _, t := range tasks {
			if tid, err := strconv.Atoi(t.Name()); err == nil {
				unix.SchedSetaffinity(tid, &set)
			}
		}
	}
}

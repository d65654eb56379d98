// Package machine holds what the benchmark programs ask of the machine
// they run on: a free loopback port, the descriptor limit raised, and
// the client's threads pinned to its cores (the servers having the
// others).
package machine

import (
	"os"
	"strconv"
	"syscall"

	"github.com/sluice-server/sluice/sluicetest/freeport"
	"golang.org/x/sys/unix"
)

// FreePort returns a TCP port nobody listens on or connects from now,
// on any local address, chosen below the kernel's ephemeral range so
// that no outgoing connection takes it before the server it is for
// binds it (see package freeport).
func FreePort() (int, error) {
	return freeport.Port()
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

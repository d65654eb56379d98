//go:build linux

package supervisor

import (
	"bytes"
	"log/slog"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Strays: nothing a worker starts outlives it.
//
// A worker's CGI programs lead process groups of their own, which the
// worker kills as each request ends, and the kernel kills a program (its
// parent-death signal) if the worker is killed outright. What a program
// started itself has no such signal, and the worker, killed, cannot kill
// its group: such a process used to be re-parented to init and run on.
// So the master is the child subreaper of everything below it
// (PR_SET_CHILD_SUBREAPER): a process whose parent dies is re-parented
// to the master instead, and the master kills it (SIGKILL) and reaps it.
//
// A stray is a child of the master that the master did not start (its
// workers and the new master of a binary upgrade are its own) and that is
// in a process group other than the master's. That is every process a
// worker's programs leave behind, and one that left its request's
// process group on purpose (setsid, a daemon's double fork) once its
// parent has exited. A stray that is a zombie already is only reaped.
//
// The master looks when a child of its own changes state (SIGCHLD: a
// worker exited, a stray died) and once a second, since a stray that
// arrives alive sends no signal. A look reads the process table (/proc):
// about 15 µs a process here (BenchmarkSweep), so the master paces its
// looks by what the last one cost, to keep them under a thousandth of a
// CPU: once a second up to about 70 processes, less often beyond; after
// a SIGCHLD, no sooner than 50 ms, or ten times the last look's cost,
// after the last.
//
// A child in the master's own group that the master did not start is not
// killed, only reaped once it has exited: the workers of a new master
// that was killed during a binary upgrade come to the master as they die
// with it (they are started in its group). So a program that runs a
// Master must not start processes of its own: their exits would be
// reaped from under their Wait, and those in other groups killed.

// sweepEvery is how often the master looks for strays when no SIGCHLD
// says there may be some, at most; sweepGap how soon after the last
// look a SIGCHLD may have it look again, at least.
const (
	sweepEvery = time.Second
	sweepGap   = 50 * time.Millisecond
)

// strays keeps the master's own children apart from the strays
// re-parented to it. Its methods are safe for concurrent use.
type strays struct {
	mu     sync.Mutex
	on     bool         // the master is a subreaper: it sweeps
	own    map[int]bool // children the master started, until they are reaped
	killed map[int]bool // strays killed and not reaped yet (logged once)
	last   time.Time    // when the last sweep began
	cost   time.Duration
}

// adopt makes the calling process the child subreaper of its
// descendants, so that strays come to it.
func (s *strays) adopt() error {
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return err
	}
	s.mu.Lock()
	s.on = true
	s.mu.Unlock()
	return nil
}

// start starts cmd as one of the master's own children. A sweep cannot
// see the child before it is known to be one.
func (s *strays) start(cmd *exec.Cmd) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := cmd.Start(); err != nil {
		return err
	}
	if s.own == nil {
		s.own = map[int]bool{}
	}
	s.own[cmd.Process.Pid] = true
	return nil
}

// reaped forgets pid, a child of the master's own that its Wait reaped.
func (s *strays) reaped(pid int) {
	s.mu.Lock()
	delete(s.own, pid)
	s.mu.Unlock()
}

// wait returns how long after now the next sweep is due: after a
// SIGCHLD (signalled) or without one. It is never due unless adopt
// succeeded.
func (s *strays) wait(now time.Time, signalled bool) time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.on {
		return time.Duration(1<<63 - 1)
	}
	gap := max(sweepEvery, 1000*s.cost) - sweepEvery/10 // a ticker's tick may come a little early
	if signalled {
		gap = max(sweepGap, 10*s.cost)
	}
	return s.last.Add(gap).Sub(now)
}

// sweep reaps the children the master did not start that have exited,
// and kills (SIGKILL) the strays alive, to be reaped by a later sweep;
// it returns how many strays it found alive. log gets a warning for
// each stray, once. It does nothing unless adopt
// succeeded.
func (s *strays) sweep(log *slog.Logger) (alive int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.on {
		return 0
	}
	s.last = time.Now()
	defer func() { s.cost = time.Since(s.last) }()
	self, group := os.Getpid(), syscall.Getpgrp()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0
	}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || s.own[pid] {
			continue
		}
		p, ok := readStat(pid)
		if !ok || p.ppid != self {
			continue
		}
		var ws unix.WaitStatus
		if r, _ := unix.Wait4(pid, &ws, unix.WNOHANG, nil); r == pid {
			delete(s.killed, pid) // it was dead already
			continue
		}
		if p.pgrp == group {
			continue // not a stray: one of a new master's workers, dying with it, say
		}
		alive++
		if !s.killed[pid] {
			unix.Kill(pid, unix.SIGKILL)
			if s.killed == nil {
				s.killed = map[int]bool{}
			}
			s.killed[pid] = true
			log.Warn("killed a process a worker left behind", "pid", pid, "command", p.comm)
		}
	}
	return alive
}

// finish kills the strays left as the master stops, and what they leave
// in turn, for up to a second; the workers have exited.
func (s *strays) finish(log *slog.Logger) {
	for deadline := time.Now().Add(time.Second); s.sweep(log) > 0 && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
}

// procStat is what a sweep needs of /proc/PID/stat.
type procStat struct {
	comm string // the command's name, as the kernel keeps it (up to 15 bytes)
	ppid int
	pgrp int
}

// readStat reads the process pid's stat; ok is false if it is gone or
// the file cannot be parsed.
func readStat(pid int) (p procStat, ok bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return p, false
	}
	return parseStat(b)
}

// parseStat parses a /proc/PID/stat line: "pid (comm) state ppid pgrp
// ...", where comm may hold spaces and parentheses, so it ends at the
// last ')'.
func parseStat(b []byte) (p procStat, ok bool) {
	open, end := bytes.IndexByte(b, '('), bytes.LastIndexByte(b, ')')
	if open < 0 || end < open {
		return p, false
	}
	f := bytes.Fields(b[end+1:])
	if len(f) < 3 || len(f[0]) != 1 {
		return p, false
	}
	ppid, err1 := strconv.Atoi(string(f[1]))
	pgrp, err2 := strconv.Atoi(string(f[2]))
	if err1 != nil || err2 != nil {
		return p, false
	}
	return procStat{comm: string(b[open+1 : end]), ppid: ppid, pgrp: pgrp}, true
}

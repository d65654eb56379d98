package cgi

import (
	"os"
	"os/exec"
	"runtime"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// sysProcAttr makes the program lead a process group of its own, so
// everything it starts can be killed with it, and has the kernel kill it
// (SIGKILL) if the server dies first: a worker killed by its master or
// by hand has no chance to kill its programs' groups. The parent death
// signal is tied to the thread that started the program, not the
// process, so programs are started from one thread that never exits
// (startProgram).
func sysProcAttr(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// spawner is the goroutine that starts every program, locked to its
// thread for the life of the process.
var spawner struct {
	once sync.Once
	reqs chan spawnRequest
}

type spawnRequest struct {
	cmd  *exec.Cmd
	done chan error
}

// startProgram starts cmd from the spawner's thread (see sysProcAttr).
func startProgram(cmd *exec.Cmd) error {
	spawner.once.Do(func() {
		spawner.reqs = make(chan spawnRequest)
		go func() {
			runtime.LockOSThread() // never unlocked: the thread lives as long as the process
			for r := range spawner.reqs {
				r.done <- r.cmd.Start()
			}
		}()
	})
	done := make(chan error, 1)
	spawner.reqs <- spawnRequest{cmd, done}
	return <-done
}

// killGroup kills the process group p leads. It must not be called
// once p has been reaped.
func killGroup(p *os.Process) {
	syscall.Kill(-p.Pid, syscall.SIGKILL)
}

// waitExited blocks until p has exited without reaping it: while it is
// a zombie its pid, and so its process group id, cannot be reused.
func waitExited(p *os.Process) {
	var info unix.Siginfo
	for {
		err := unix.Waitid(unix.P_PID, p.Pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if err != unix.EINTR {
			return
		}
	}
}

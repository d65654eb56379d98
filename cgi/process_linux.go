package cgi

import (
	"os"
	"os/exec"
	"syscall"

	"golang.org/x/sys/unix"
)

// sysProcAttr makes the program lead a process group of its own, so
// everything it starts can be killed with it.
func sysProcAttr(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
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

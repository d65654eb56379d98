package fpmtest

import "syscall"

// sysProcAttr puts PHP-FPM in a process group of its own, killed with
// the test process should that die first.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

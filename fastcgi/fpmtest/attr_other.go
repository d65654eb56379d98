//go:build unix && !linux

package fpmtest

import "syscall"

// sysProcAttr puts PHP-FPM in a process group of its own.
func sysProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}

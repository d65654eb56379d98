//go:build unix

package files_test

import (
	"os/exec"
	"syscall"
)

// asNobody makes cmd run as uid and gid 65534 (see serveAsNobody).
func asNobody(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
}

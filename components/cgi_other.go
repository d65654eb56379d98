//go:build !linux

package components

import (
	"os"
	"os/exec"
)

// Outside Linux a CGI program is killed alone: its process group is not
// tracked.

func cgiSysProcAttr(*exec.Cmd) {}

func cgiKillGroup(p *os.Process) { p.Kill() }

func cgiWaitExited(*os.Process) {}

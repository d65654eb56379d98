//go:build !linux

package cgi

import (
	"os"
	"os/exec"
)

// Outside Linux a CGI program is killed alone: its process group is not
// tracked.

func sysProcAttr(*exec.Cmd) {}

func startProgram(cmd *exec.Cmd) error { return cmd.Start() }

func killGroup(p *os.Process) { p.Kill() }

func waitExited(*os.Process) {}

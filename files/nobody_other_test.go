//go:build !unix

package files_test

import "os/exec"

// asNobody is never called outside Unix: there os.Geteuid is -1, so
// serveAsNobody serves as the current user without a child process.
func asNobody(*exec.Cmd) {}

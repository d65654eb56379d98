package daemon

import (
	"math"

	"golang.org/x/sys/unix"
)

// CloseOnExecInherited marks every descriptor above 2 close-on-exec, so
// that no process this one starts (a worker, a CGI program, a binary
// upgrade's new master) gets one it was not given on purpose
// (exec.Cmd.ExtraFiles, which clears the flag on the copy the child
// gets). Go opens its own descriptors close-on-exec, but those this
// process inherited open (a shell's, a process manager's, a parent's that
// leaked them) stay open across exec, and would reach every CGI program
// through the master and its workers. The descriptors stay open here: the
// sockets systemd passes (SocketActivation), and those a master hands its
// workers and a new master, are read as before.
//
// The sluice command calls it first thing; a program that runs a Server
// and starts processes of its own may call it as early. It uses
// close_range(2) (Linux 5.11), else lists /proc/self/fd.
func CloseOnExecInherited() error {
	if unix.CloseRange(3, math.MaxUint32, unix.CLOSE_RANGE_CLOEXEC) == nil {
		return nil
	}
	return cloexecListed("/proc/self/fd")
}

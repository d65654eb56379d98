//go:build linux && race

package sock

import "syscall"

// Under the race detector, the syscall package treats every read and
// write as synchronisation ("I/O happens before the read of its data"),
// so a test that learns of a handler's effects through a response sees
// them ordered. This package's own calls (Recv, Send, Sendfile) bypass it;
// these make the same annotations with zero-length calls that the
// syscall package annotates. Race builds only; other builds compile them
// away (race_off.go).

func raceReleaseIO(fd int) { syscall.Write(fd, nil) }

func raceAcquireIO(fd int) { syscall.Read(fd, nil) }

package daemon

import (
	"os"
	"os/exec"
	"os/signal"
	"syscall"

	"golang.org/x/sys/unix"
)

// The first process of a PID namespace (a container's PID 1) has two
// duties no other process has: every orphan in the namespace becomes its
// child, and it must reap them, or their zombies hold their PIDs until
// the namespace ends; and the kernel delivers it only the signals it has
// a handler for. A CGI program that leaves a process behind orphans it
// at every request, so sluice as PID 1 would leak a PID a request.
//
// So sluice, started as PID 1, does what an init such as tini does and
// nothing else (RunAsInit): it runs itself again, with the same arguments, as its
// only child (in a process group of its own, so that a terminal's
// Ctrl-C reaches it once, forwarded), passes on the signals a server
// answers, reaps every process that ends in the namespace, and exits
// with its child's status once the child has exited: the child's exit
// code, or 128 plus the signal that killed it. The kernel then kills
// whatever is left in the namespace. It does not where the child would
// be started with sockets a service manager passed (LISTEN_FDS): they
// name the process they were passed to. A master under it refuses a
// binary upgrade (see UnderInit): roll the container instead.

// underInitEnv is set in the environment of the server PID 1 starts.
const underInitEnv = "SLUICE_UNDER_PID1"

// UnderInit reports whether this process is the server that RunAsInit
// started as PID 1's child. A master there refuses a binary upgrade
// (SIGUSR2): the old master, PID 1's child, exits once the new one
// serves, and PID 1 with it, which would end the namespace and the new
// master in it.
func UnderInit() bool { return os.Getenv(underInitEnv) != "" }

// forwardedSignals are the signals PID 1 passes on to its child: those
// sluice answers (sluice help signals), and SIGQUIT.
var forwardedSignals = []os.Signal{syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP,
	syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGQUIT}

// RunAsInit runs this program again with args (its command line but
// the program name) as the only child of this process if it is PID 1,
// as the comment above says, and returns the child's exit status once
// it has exited; the caller then exits with it. ran is false if this
// process is not PID 1 or should not act as its init (LISTEN_FDS is
// set): the caller goes on as the server. err is set, with ran, if the
// child cannot be started. Only on Linux does it ever run.
func RunAsInit(args []string) (status int, ran bool, err error) {
	if os.Getpid() != 1 || os.Getenv("LISTEN_FDS") != "" {
		return 0, false, nil
	}
	sigs := make(chan os.Signal, 16)
	signal.Notify(sigs, append(forwardedSignals, syscall.SIGCHLD)...)
	cmd := exec.Command("/proc/self/exe", args...)
	cmd.Args[0] = os.Args[0]
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = append(os.Environ(), underInitEnv+"=1")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return 1, true, err
	}
	child := cmd.Process.Pid
	for sig := range sigs {
		if sig != syscall.SIGCHLD {
			cmd.Process.Signal(sig)
			continue
		}
		for {
			var ws unix.WaitStatus
			pid, err := unix.Wait4(-1, &ws, unix.WNOHANG, nil)
			if err == unix.EINTR {
				continue
			}
			if pid <= 0 {
				break
			}
			if pid != child {
				continue // an orphan, reaped
			}
			if ws.Signaled() {
				return 128 + int(ws.Signal()), true, nil
			}
			return ws.ExitStatus(), true, nil
		}
	}
	return 1, true, nil // not reached: sigs is never closed
}

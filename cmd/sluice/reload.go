package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"syscall"

	"github.com/sluice-server/sluice/config"
	"github.com/sluice-server/sluice/daemon"
)

var reloadCommand = command{
	name: "reload",
	synopsis: `sluice reload -c FILE [--pid-file FILE | --pid N]
       sluice reload --pid-file FILE
       sluice reload --pid N

Makes a running 'sluice serve' load its config file again by sending it
SIGHUP. With -c, checks FILE first and sends nothing if it is invalid
(exit status 1, errors as with sluice check), then signals the process
whose id is in the file's pid_file (or --pid-file, or --pid). The server
logs the outcome: a valid config takes over for new requests while those
in flight finish on the old one; an invalid one is rejected and the
running config keeps serving.`,
	setup: signalSetup("reload", syscall.SIGHUP, true),
}

var stopCommand = command{
	name: "stop",
	synopsis: `sluice stop -c FILE [--pid-file FILE | --pid N]
       sluice stop --pid-file FILE
       sluice stop --pid N

Makes a running 'sluice serve' stop gracefully by sending it SIGTERM: it
stops accepting, lets requests in flight finish for up to its shutdown
grace period (see 'sluice help serve'), and exits; a master stops its workers so. With -c,
the process is the one whose id is in the file's pid_file (or
--pid-file, or --pid). See 'sluice help signals'.`,
	setup: signalSetup("stop", syscall.SIGTERM, false),
}

var upgradeCommand = command{
	name: "upgrade",
	synopsis: `sluice upgrade -c FILE [--pid-file FILE | --pid N]
       sluice upgrade --pid-file FILE
       sluice upgrade --pid N

Makes a running master (workers: N) upgrade its binary by sending it
SIGUSR2: it starts the binary at the path it was started from as a new
master that inherits its listening sockets; once the new master's workers
are healthy the old workers drain and the old master exits. Meanwhile the
pid file names the new master and the old one is at FILE.oldbin. A new
binary that fails leaves the old master serving, with the reason logged.
With -c, the process is the one whose id is in the file's pid_file (or
--pid-file, or --pid). See 'sluice help signals'.`,
	setup: signalSetup("upgrade", syscall.SIGUSR2, false),
}

// signalSetup returns the setup of a command that sends sig to the
// server named by -c FILE's pid_file, --pid-file or --pid; check makes -c
// FILE be checked first, and nothing sent if it is invalid.
func signalSetup(name string, sig syscall.Signal, check bool) func(fs *flag.FlagSet) func(stdout, stderr io.Writer) int {
	return func(fs *flag.FlagSet) func(stdout, stderr io.Writer) int {
		file := configFlag(fs)
		pidFile := fs.String("pid-file", "", "read the server's process id from `FILE`")
		pid := fs.Int("pid", 0, "the server's process id `N`")
		return func(stdout, stderr io.Writer) int {
			fromConfig := false // the pid file is -c FILE's pid_file
			if *file == "" && *pidFile == "" && *pid == 0 {
				fmt.Fprintf(stderr, "sluice %s: give -c FILE, --pid-file FILE or --pid N\n", name)
				return exitUsage
			}
			if *pidFile != "" && *pid != 0 {
				fmt.Fprintf(stderr, "sluice %s: give --pid-file or --pid, not both\n", name)
				return exitUsage
			}
			if *file != "" {
				var cfg *config.Config
				if check {
					var code int
					if cfg, code = loadConfig(*file, stderr); cfg == nil {
						return code
					}
				} else {
					var err error
					if cfg, err = config.Load(*file); err != nil {
						fmt.Fprintf(stderr, "sluice %s: %v\n", name, err)
						return exitError
					}
				}
				cfg.Close()
				if *pidFile == "" && *pid == 0 {
					if cfg.PidFile == "" {
						fmt.Fprintf(stderr, "sluice %s: %s sets no pid_file; give --pid-file FILE or --pid N\n", name, *file)
						return exitError
					}
					*pidFile = cfg.PidFile
					fromConfig = true
				}
			}
			// A server started without the file's pid_file (serve
			// --pid-file elsewhere, or before pid_file was set) is not
			// found at it: say how to name it instead.
			hint := ""
			if fromConfig {
				hint = "; if it was started with another pid file (serve --pid-file) or none, give --pid-file FILE or --pid N"
			}
			if *pidFile != "" {
				n, err := daemon.ReadPidFile(*pidFile)
				if errors.Is(err, daemon.ErrNoPid) {
					fmt.Fprintf(stderr, "sluice %s: %s does not hold a process id%s\n", name, *pidFile, hint)
					return exitError
				}
				if err != nil {
					fmt.Fprintf(stderr, "sluice %s: %v (is the server running?%s)\n", name, err, hint)
					return exitError
				}
				*pid = n
			}
			p, err := os.FindProcess(*pid)
			if err == nil {
				err = p.Signal(sig)
			}
			if errors.Is(err, os.ErrProcessDone) && *pidFile != "" {
				fmt.Fprintf(stderr, "sluice %s: process %d, named in %s, is not running: the server is not running, or the pid file is stale%s\n", name, *pid, *pidFile, hint)
				return exitError
			}
			if err != nil {
				fmt.Fprintf(stderr, "sluice %s: process %d: %v\n", name, *pid, err)
				return exitError
			}
			fmt.Fprintf(stdout, "sent %s to process %d\n", sigName[sig], *pid)
			return exitOK
		}
	}
}

var sigName = map[syscall.Signal]string{syscall.SIGHUP: "SIGHUP", syscall.SIGTERM: "SIGTERM", syscall.SIGUSR2: "SIGUSR2"}

// topics are the help topics that are not commands: sluice help TOPIC.
var topics = map[string]string{"signals": signalsHelp}

const signalsHelp = `Signals a running 'sluice serve' answers (its process id is in pid_file):

  SIGTERM, SIGINT  stop gracefully: stop accepting, let requests in flight
                   finish for up to --shutdown-grace (10s), then exit with
                   status 0. A second one ends the process at once.
                   'sluice stop' sends SIGTERM.
  SIGHUP           load the config file again. A valid one takes over; an
                   invalid one is logged and the running config keeps
                   serving. 'sluice reload' checks the file, then sends it.
  SIGUSR1          reopen the log files (after logrotate).

With workers (workers: N or --workers N), the signals go to the master:

  SIGTERM, SIGINT  every worker stops gracefully as above; then the master
                   exits. Workers never outlive the master: they exit when
                   it dies, even by SIGKILL.
  SIGHUP           the master checks the file; if it is valid, it starts
                   new workers with it, and once every one of them answers
                   its health probe, the old workers drain: they stop
                   accepting (the new ones accept on the same sockets, so
                   no connection waiting to be accepted is lost), finish
                   their requests, and answer the next request on each
                   keep-alive connection with "Connection: close"; a
                   connection still idle after --shutdown-grace is closed.
                   An invalid file, or new workers that fail to start,
                   leave the old workers serving, with the reason logged.
  SIGUSR1          the master and every worker reopen their log files.
  SIGUSR2          binary upgrade: the master starts the binary at the path
                   it was started from, with the same arguments, as a new
                   master that inherits the listening sockets and reads the
                   config file again. The pid file is renamed FILE.oldbin
                   and the new master writes FILE. Once the new master's
                   workers answer their health probes, the old workers
                   drain as on SIGHUP and the old master exits. A new
                   master that exits before, or whose workers are not
                   healthy within health.timeout + 30s (it is then
                   killed), leaves the old master serving, FILE naming it
                   again, with the reason logged. Refused while a reload
                   is under way. 'sluice upgrade' sends it.

Workers ignore SIGINT, SIGHUP, SIGUSR1 and SIGUSR2 sent to them directly
(a terminal's Ctrl-C reaches the master, which stops them); SIGTERM stops
one gracefully, and the master replaces it. Without workers SIGUSR2 is
ignored, with a warning logged. See docs/workers.md.

Started as PID 1 (a container's first process), sluice runs the server as
its only child and passes these signals, and SIGQUIT, on to it; it reaps
what ends in the container and exits with the server's status. A binary
upgrade is refused there: replace the container. See docs/deploy.md.
`

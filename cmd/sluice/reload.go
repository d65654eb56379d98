package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"syscall"
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
	setup: func(fs *flag.FlagSet) func(stdout, stderr io.Writer) int {
		file := configFlag(fs)
		pidFile := fs.String("pid-file", "", "read the server's process id from `FILE`")
		pid := fs.Int("pid", 0, "the server's process id `N`")
		return func(stdout, stderr io.Writer) int {
			if *file == "" && *pidFile == "" && *pid == 0 {
				fmt.Fprintln(stderr, "sluice reload: give -c FILE, --pid-file FILE or --pid N")
				return exitUsage
			}
			if *pidFile != "" && *pid != 0 {
				fmt.Fprintln(stderr, "sluice reload: give --pid-file or --pid, not both")
				return exitUsage
			}
			if *file != "" {
				cfg, code := loadConfig(*file, stderr)
				if cfg == nil {
					return code
				}
				cfg.Close()
				if *pidFile == "" && *pid == 0 {
					if cfg.PidFile == "" {
						fmt.Fprintf(stderr, "sluice reload: %s sets no pid_file; give --pid-file FILE or --pid N\n", *file)
						return exitError
					}
					*pidFile = cfg.PidFile
				}
			}
			if *pidFile != "" {
				b, err := os.ReadFile(*pidFile)
				if err != nil {
					fmt.Fprintf(stderr, "sluice reload: %v (is the server running?)\n", err)
					return exitError
				}
				n, err := strconv.Atoi(strings.TrimSpace(string(b)))
				if err != nil || n <= 0 {
					fmt.Fprintf(stderr, "sluice reload: %s does not hold a process id\n", *pidFile)
					return exitError
				}
				*pid = n
			}
			p, err := os.FindProcess(*pid)
			if err == nil {
				err = p.Signal(syscall.SIGHUP)
			}
			if err != nil {
				fmt.Fprintf(stderr, "sluice reload: process %d: %v\n", *pid, err)
				return exitError
			}
			fmt.Fprintf(stdout, "sent SIGHUP to process %d\n", *pid)
			return exitOK
		}
	},
}

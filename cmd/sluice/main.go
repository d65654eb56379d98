// Command sluice is the Sluice web server.
//
//	sluice serve [--root DIR] [--listen ADDR] [--tls-cert FILE --tls-key FILE] [--browse] [--compress] [--server-header VALUE] [--workers N|auto] [--print-config] [--shutdown-grace D]
//	sluice serve -c FILE [--listen ADDR] [--workers N|auto] [--pid-file FILE] [--shutdown-grace D] [--resume]
//	sluice check -c FILE [--explain]
//	sluice graph -c FILE [--svg OUT]
//	sluice fmt -c FILE [-w]
//	sluice convert [--from nginx|caddy] [-o OUT] FILE
//	sluice reload (-c FILE | --pid-file FILE | --pid N)
//	sluice stop (-c FILE | --pid-file FILE | --pid N)
//	sluice upgrade (-c FILE | --pid-file FILE | --pid N)
//	sluice demo [--listen ADDR] [--data DIR]
//	sluice version (or sluice --version)
//	sluice help [COMMAND | signals]
//
// The config file format is described in docs/config.md. The benchmark
// harness is not part of this binary: it is the Go module in bench/ of the
// repository (go -C bench run ./cmd/sluicebench, or make bench), and
// `sluice bench` only says so.
//
// Exit status: 0 on success, including a graceful shutdown on SIGINT or
// SIGTERM (even one that had to cut connections still open after the
// grace period); 1 on a runtime or configuration error (an invalid config
// file prints every error as FILE:LINE:COL: message); 2 on a usage error.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/sluice-server/sluice/daemon"
	"github.com/sluice-server/sluice/daemon/supervisor"
)

// Exit statuses.
const (
	exitOK    = 0
	exitError = 1 // runtime or configuration error
	exitUsage = 2 // bad command line
)

const usageText = `Usage: sluice <command> [flags]

Sluice is a web server and a Go toolkit for building web servers.

Commands:
  serve     serve a directory, or a config file (-c FILE), over HTTP
  check     check a config file; --explain describes its pipelines
  graph     draw a config file's process network (Graphviz DOT or SVG)
  fmt       format a config file canonically, keeping comments
  convert   translate an nginx config or a Caddyfile into a config file
  reload    make a running server load its config file again (SIGHUP)
  stop      make a running server stop gracefully (SIGTERM)
  upgrade   make a running master upgrade its binary (SIGUSR2)
  demo      serve the demo site built into the binary
  version   print the version (also: sluice --version)
  help      print help for a command

Run 'sluice help <command>' or 'sluice <command> --help' for a command's flags,
and 'sluice help signals' for the signals a server answers.

Exit status: 0 on success (including a graceful shutdown on SIGINT or
SIGTERM), 1 on a runtime or configuration error, 2 on a usage error.
The config file format is described in docs/config.md.
`

// benchMoved is what `sluice bench` prints. The harness lives in a module
// of its own so that its plotting and PDF dependencies stay out of the
// server; the command remains only to point there.
const benchMoved = `sluice bench: the benchmark harness is not built into sluice.
From a Sluice repository, run it with
	go -C bench run ./cmd/sluicebench [flags]    (or: make bench)
and see go -C bench run ./cmd/sluicebench --help for its flags.
`

// command is one subcommand. setup defines its flags on fs and returns
// what runs once they are parsed, which returns the exit status.
type command struct {
	name, synopsis string
	setup          func(fs *flag.FlagSet) (exec func(stdout, stderr io.Writer) int)
	operands       bool // takes arguments after its flags (fs.Args)
}

var commands = []command{serveCommand, checkCommand, graphCommand, fmtCommand, convertCommand, reloadCommand, stopCommand, upgradeCommand, demoCommand, versionCommand}

func main() {
	// Before anything starts a process: a descriptor sluice's parent left
	// open must reach no worker and no CGI program.
	if err := daemon.CloseOnExecInherited(); err != nil {
		fmt.Fprintln(os.Stderr, "sluice: warning: cannot mark inherited descriptors close-on-exec:", err)
	}
	if status, ran, err := daemon.RunAsInit(os.Args[1:]); ran { // as a container's PID 1
		if err != nil {
			fmt.Fprintln(os.Stderr, "sluice: as PID 1, cannot start the server:", err)
			os.Exit(exitError)
		}
		os.Exit(status)
	}
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run executes the command line args and returns the exit status.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usageText)
		return exitUsage
	}
	switch name := args[0]; name {
	case supervisor.WorkerCommand: // hidden: how a master starts its workers
		return supervisor.RunWorker(stdout, stderr)
	case "bench":
		fmt.Fprint(stderr, benchMoved)
		return exitUsage
	case "--version", "-version":
		if len(args) > 1 {
			fmt.Fprintf(stderr, "sluice: %s takes no arguments\n", name)
			return exitUsage
		}
		return run([]string{"version"}, stdout, stderr)
	case "help", "-h", "-help", "--help":
		if len(args) > 1 && name == "help" && !isHelp(args[1]) {
			if t, ok := topics[args[1]]; ok {
				fmt.Fprint(stdout, t)
				return exitOK
			}
			if c := lookup(args[1]); c != nil {
				fs := newFlagSet(c)
				c.setup(fs)
				usage(c, fs, stdout)
				return exitOK
			}
			fmt.Fprintf(stderr, "sluice help: unknown command %q\n\n%s", args[1], usageText)
			return exitUsage
		}
		fmt.Fprint(stdout, usageText)
		return exitOK
	default:
		c := lookup(name)
		if c == nil {
			fmt.Fprintf(stderr, "sluice: unknown command %q\n\n%s", name, usageText)
			return exitUsage
		}
		fs := newFlagSet(c)
		exec := c.setup(fs)
		switch err := fs.Parse(args[1:]); {
		case errors.Is(err, flag.ErrHelp):
			usage(c, fs, stdout)
			return exitOK
		case err != nil:
			fmt.Fprintf(stderr, "sluice %s: %v\n\n", c.name, err)
			usage(c, fs, stderr)
			return exitUsage
		case fs.NArg() > 0 && !c.operands:
			fmt.Fprintf(stderr, "sluice %s: unexpected argument %q\n\n", c.name, fs.Arg(0))
			usage(c, fs, stderr)
			return exitUsage
		}
		code := exec(stdout, stderr)
		if code == exitUsage { // exec printed what is wrong
			fmt.Fprintln(stderr)
			usage(c, fs, stderr)
		}
		return code
	}
}

// isHelp reports whether arg asks for help: 'sluice help --help' and
// 'sluice help help' print the general usage as 'sluice help' does.
func isHelp(arg string) bool {
	switch arg {
	case "help", "-h", "-help", "--help":
		return true
	}
	return false
}

func lookup(name string) *command {
	for i := range commands {
		if commands[i].name == name {
			return &commands[i]
		}
	}
	return nil
}

// newFlagSet returns a FlagSet that reports errors to run, not itself.
func newFlagSet(c *command) *flag.FlagSet {
	fs := flag.NewFlagSet("sluice "+c.name, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	return fs
}

// usage prints a command's help to w.
func usage(c *command, fs *flag.FlagSet, w io.Writer) {
	fmt.Fprintf(w, "Usage: %s\n\n", c.synopsis)
	fs.SetOutput(w)
	fs.PrintDefaults()
	fs.SetOutput(io.Discard)
	fmt.Fprint(w, "\nExit status: 0 on success, 1 on a runtime or configuration error, 2 on a usage error.\n")
}

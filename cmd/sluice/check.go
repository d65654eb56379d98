package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"

	"github.com/sluice-server/sluice/components"
	"github.com/sluice-server/sluice/config"
)

// configFlag defines -c and --config on fs.
func configFlag(fs *flag.FlagSet) *string {
	file := fs.String("c", "", "the config `FILE` (YAML or JSON)")
	fs.StringVar(file, "config", "", "same as -c")
	return file
}

// loadConfig loads file for the commands that only read it, printing its
// errors, or its warnings (what serve would warn about, as FILE:LINE:COL:
// warning: message), to stderr. It returns nil and the exit status on
// failure.
func loadConfig(file string, stderr io.Writer) (*config.Config, int) {
	if file == "" {
		fmt.Fprintln(stderr, "sluice: -c FILE is required")
		return nil, exitUsage
	}
	// The components' warnings come back in cfg.Warnings with their
	// positions; logged as well they would be printed twice.
	loader := &config.Loader{Context: components.Context{Logger: slog.New(slog.DiscardHandler)}}
	cfg, err := loader.Load(file)
	if err != nil {
		var errs config.Errors
		if errors.As(err, &errs) {
			fmt.Fprintln(stderr, errs.Error())
		} else {
			fmt.Fprintf(stderr, "sluice: %v\n", withFileFix(err))
		}
		return nil, exitError
	}
	for _, w := range cfg.Warnings {
		fmt.Fprintln(stderr, w)
	}
	return cfg, exitOK
}

var checkCommand = command{
	name: "check",
	synopsis: `sluice check -c FILE [--explain]

Checks the config file FILE: its syntax, keys, components and their
options, and the order of each pipeline; it builds the components, so
missing files and directories are found too. Prints "ok", or every
error as FILE:LINE:COL: message and exits with status 1. What serve would
warn about (a health section with no workers to check; a database no
route queries; a TLS certificate that has expired or is not valid yet;
an include pattern that matches no file; an exact match, such as /api,
over a directory its files serve, where /api/ would serve the tree; a
header condition on a field proxies set, such as X-Forwarded-For, which
any client can send; an htpasswd line whose hash cannot be verified) is
printed as
FILE:LINE:COL: warning: message, with the same text serve logs, and
leaves the status 0. --explain prints
what the file builds instead of "ok": the server settings and the files
it includes, then each route's matches (under its site's hosts) and its
components in the order they run, with their kinds and options.`,
	setup: func(fs *flag.FlagSet) func(stdout, stderr io.Writer) int {
		file := configFlag(fs)
		explain := fs.Bool("explain", false, "describe the routes and pipelines the file builds")
		return func(stdout, stderr io.Writer) int {
			cfg, code := loadConfig(*file, stderr)
			if cfg == nil {
				return code
			}
			defer cfg.Close()
			if *explain {
				if err := cfg.Explain(stdout); err != nil {
					fmt.Fprintf(stderr, "sluice check: %v\n", err)
					return exitError
				}
				return exitOK
			}
			fmt.Fprintln(stdout, "ok")
			return exitOK
		}
	},
}

var graphCommand = command{
	name: "graph",
	synopsis: `sluice graph -c FILE [--svg OUT]

Prints the process network the config file FILE builds as a Graphviz DOT
graph, drawn like the webpipes paper's figures: the front end, the router,
each route's components in order into its output, and the back end.
Pipes that may answer early have a dashed edge to their route's output.
With --svg, renders it to the file OUT with Graphviz's dot command
(Debian package graphviz) instead.`,
	setup: func(fs *flag.FlagSet) func(stdout, stderr io.Writer) int {
		file := configFlag(fs)
		svg := fs.String("svg", "", "render the graph as SVG to the file `OUT` (needs Graphviz's dot)")
		return func(stdout, stderr io.Writer) int {
			cfg, code := loadConfig(*file, stderr)
			if cfg == nil {
				return code
			}
			defer cfg.Close()
			if *svg == "" {
				if err := cfg.Graph(stdout); err != nil {
					fmt.Fprintf(stderr, "sluice graph: %v\n", err)
					return exitError
				}
				return exitOK
			}
			dot, err := exec.LookPath("dot")
			if err != nil {
				fmt.Fprintln(stderr, "sluice graph: --svg needs Graphviz's dot command, which is not installed (Debian: apt install graphviz); without --svg the graph is printed as DOT")
				return exitError
			}
			var in, errOut bytes.Buffer
			cfg.Graph(&in)
			cmd := exec.Command(dot, "-Tsvg", "-o", *svg)
			cmd.Stdin, cmd.Stderr = &in, &errOut
			if err := cmd.Run(); err != nil {
				fmt.Fprintf(stderr, "sluice graph: dot: %v\n%s", err, errOut.Bytes())
				return exitError
			}
			return exitOK
		}
	},
}

var fmtCommand = command{
	name: "fmt",
	synopsis: `sluice fmt -c FILE [-w]

Prints the config file FILE in canonical form: two-space indentation,
lists indented under their key, one space before line comments. Comments,
blank lines between entries and the styles of values are kept: a [flow]
list or {flow} map on one line stays on one line, and one written over
several lines gets one entry a line (a pretty-printed JSON file stays
so); the meaning does not change. With -w, writes the result back to
FILE (when it differs) instead. fmt checks only the YAML syntax; see
sluice check.`,
	setup: func(fs *flag.FlagSet) func(stdout, stderr io.Writer) int {
		file := configFlag(fs)
		write := fs.Bool("w", false, "write the result to FILE instead of printing it")
		return func(stdout, stderr io.Writer) int {
			if *file == "" {
				fmt.Fprintln(stderr, "sluice fmt: -c FILE is required")
				return exitUsage
			}
			data, err := os.ReadFile(*file)
			if err != nil {
				fmt.Fprintf(stderr, "sluice fmt: %v\n", err)
				return exitError
			}
			out, err := config.Format(*file, data)
			if err != nil {
				fmt.Fprintln(stderr, err)
				return exitError
			}
			if !*write {
				stdout.Write(out)
				return exitOK
			}
			if bytes.Equal(out, data) {
				return exitOK
			}
			fi, err := os.Stat(*file)
			if err != nil {
				fmt.Fprintf(stderr, "sluice fmt: %v\n", err)
				return exitError
			}
			if err := os.WriteFile(*file, out, fi.Mode().Perm()); err != nil {
				fmt.Fprintf(stderr, "sluice fmt: %v\n", err)
				return exitError
			}
			return exitOK
		}
	},
}

// withFileFix returns err's text followed by what to do about it, when
// it is a file that cannot be read (config.FileFix).
func withFileFix(err error) string {
	if fix := config.FileFix(err); fix != "" {
		return err.Error() + ": " + fix
	}
	return err.Error()
}

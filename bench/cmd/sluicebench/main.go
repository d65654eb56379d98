// Command sluicebench benchmarks Sluice against the web servers installed
// on this machine and writes a Markdown report with plots to --out DIR,
// or without it to a scratch directory (sluice-bench in $TMPDIR); see
// package bench. From the repository root:
//
//	go -C bench run ./cmd/sluicebench [--quick] [--servers LIST] [--scenarios LIST] [--out DIR]
package main

import (
	"os"

	"github.com/sluice-server/sluice/bench"
)

func main() { os.Exit(bench.Main(os.Args[1:], os.Stdout, os.Stderr)) }

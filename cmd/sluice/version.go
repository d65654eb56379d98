package main

import (
	"flag"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
)

// version is set at build time with -ldflags "-X main.version=v1.2.3";
// otherwise it comes from the module's build information.
var version = ""

var versionCommand = command{
	name:     "version",
	synopsis: "sluice version\n\nPrints the version of sluice and of the Go toolchain that built it.",
	setup: func(*flag.FlagSet) func(stdout, stderr io.Writer) int {
		return func(stdout, _ io.Writer) int {
			fmt.Fprintf(stdout, "sluice %s %s\n", versionString(), runtime.Version())
			return exitOK
		}
	},
}

func versionString() string {
	if version != "" {
		return version
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	v := bi.Main.Version
	for _, s := range bi.Settings {
		if s.Key == "vcs.revision" && len(s.Value) >= 12 {
			v += " " + s.Value[:12]
		}
	}
	return v
}

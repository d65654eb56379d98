package main

import (
	"flag"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"

	"github.com/sluice-server/sluice/config"
)

// version is set at build time: `make build` and `make release` pass
// -ldflags "-X main.version=$(git describe --tags --always --dirty)".
// Empty, the version comes from the build information Go embeds (see
// versionFrom).
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

// "$version" in a config's server_header is this program's version.
func init() { config.Version = versionString }

func versionString() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		bi = nil
	}
	return versionFrom(version, bi)
}

// versionFrom is the version sluice reports: set, the one the build
// stamped with -X main.version; otherwise the main module's version from
// bi — a release's tag for `go install …@v1.2.3`, or the pseudo-version Go
// derives from the checkout it builds in (v0.0.0-DATE-COMMIT, +dirty for
// uncommitted changes) — or, when Go stamped none ("(devel)": a build
// with -buildvcs=false, or from a git worktree, which Go does not read),
// "devel" with the commit if Go recorded it. bi may be nil.
func versionFrom(set string, bi *debug.BuildInfo) string {
	if set != "" {
		return set
	}
	if bi == nil {
		return "unknown"
	}
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	v := "devel"
	var rev string
	var modified bool
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	if rev != "" {
		v += " " + rev[:min(12, len(rev))]
		if modified {
			v += "-dirty"
		}
	}
	return v
}

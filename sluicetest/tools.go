package sluicetest

import (
	"os"
	"os/exec"
	"testing"
)

// NeedTool returns the path of the program name, from the Debian package
// pkg, that the test runs. When the program is missing the test is
// skipped, or, when the environment variable CI is set, fails: .ci/run
// installs every program the tests use, so there a missing one is a
// broken setup that would otherwise pass by testing less.
func NeedTool(t testing.TB, name, pkg string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err == nil {
		return path
	}
	MissingTool(t, name, pkg)
	return ""
}

// MissingTool ends a test that needs name, from the Debian package pkg,
// which is not installed: a skip, or, with CI set, a failure (see
// NeedTool). For what NeedTool cannot look up on the PATH: a program
// found elsewhere, a module of another program (a PHP extension).
func MissingTool(t testing.TB, name, pkg string) {
	t.Helper()
	if os.Getenv("CI") != "" {
		t.Fatalf("%s (%s) is not installed; CI must install it (.ci/run)", name, pkg)
	}
	t.Skipf("%s (%s) is not installed", name, pkg)
}

// HaveTool is NeedTool for a program that only some cases of a test use:
// it returns the program's path, or "" when it is missing outside CI, so
// the test runs its other cases.
func HaveTool(t testing.TB, name, pkg string) string {
	t.Helper()
	if _, err := exec.LookPath(name); err != nil && os.Getenv("CI") == "" {
		return ""
	}
	return NeedTool(t, name, pkg)
}

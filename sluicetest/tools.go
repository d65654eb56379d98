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
	if os.Getenv("CI") != "" {
		t.Fatalf("%s (%s) is not installed; CI must install it (.ci/run)", name, pkg)
	}
	t.Skipf("%s (%s) is not installed", name, pkg)
	return ""
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

//go:build linux

package daemon

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// switchToEnv makes the test binary, re-run by TestSwitchTo, the process
// that drops its privileges (TestSwitchToHelper): the change cannot be
// undone, so it is made in a child, not in the test process.
const switchToEnv = "SLUICE_TEST_SWITCHTO"

// The credentials the child switches to: ids no account on the machine
// need have.
var switchToCreds = credentials{user: "test", uid: 4242, gid: 4343, groups: []int{4343, 4444}}

// switchTo leaves a process run by root with the user's real, effective
// and saved user and group ids, and the user's groups for supplementary
// groups (root's gone), on every thread; and with no way back to root.
func TestSwitchTo(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("switchTo needs root to drop its privileges: run the tests as root to check it")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestSwitchToHelper$")
	cmd.Env = append(os.Environ(), switchToEnv+"=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the child that switched users: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "switched\n") {
		t.Fatalf("the child did not run its checks:\n%s", out)
	}
}

// TestSwitchToHelper is the child of TestSwitchTo: it switches to
// switchToCreds and checks what it runs as, reporting any problem on its
// output and by its exit status.
func TestSwitchToHelper(t *testing.T) {
	if os.Getenv(switchToEnv) != "1" {
		t.Skip("the child process of TestSwitchTo")
	}
	c := switchToCreds
	fail := func(format string, args ...any) {
		fmt.Printf(format+"\n", args...)
		os.Exit(1)
	}
	if err := c.switchTo(); err != nil {
		fail("switchTo: %v", err)
	}
	if r, e, s := unix.Getresuid(); r != c.uid || e != c.uid || s != c.uid {
		fail("user ids (real, effective, saved) %d %d %d; want %d", r, e, s, c.uid)
	}
	if r, e, s := unix.Getresgid(); r != c.gid || e != c.gid || s != c.gid {
		fail("group ids (real, effective, saved) %d %d %d; want %d", r, e, s, c.gid)
	}
	groups, err := syscall.Getgroups()
	if err != nil {
		fail("getgroups: %v", err)
	}
	slices.Sort(groups)
	if !slices.Equal(groups, c.groups) {
		fail("supplementary groups %v; want %v", groups, c.groups)
	}
	if !c.current() {
		fail("current() is false after switchTo")
	}
	// Every thread of the process, not only the one that switched.
	want := map[string]string{
		"Uid:":    fmt.Sprintf("%d\t%d\t%d\t%d", c.uid, c.uid, c.uid, c.uid),
		"Gid:":    fmt.Sprintf("%d\t%d\t%d\t%d", c.gid, c.gid, c.gid, c.gid),
		"Groups:": fmt.Sprintf("%d %d", c.groups[0], c.groups[1]),
	}
	tasks, _ := filepath.Glob("/proc/self/task/*/status")
	if len(tasks) < 2 {
		fail("%d threads: want more to check", len(tasks))
	}
	for _, f := range tasks {
		b, err := os.ReadFile(f)
		if err != nil {
			fail("%v", err)
		}
		for _, line := range strings.Split(string(b), "\n") {
			k, v, _ := strings.Cut(line, "\t")
			if w, ok := want[k]; ok && strings.TrimSpace(v) != w {
				fail("%s: %s %q; want %q", f, k, strings.TrimSpace(v), w)
			}
		}
	}
	// No way back.
	if err := syscall.Setuid(0); err == nil {
		fail("setuid 0 after switchTo succeeded")
	}
	if err := syscall.Setgroups([]int{0}); err == nil {
		fail("setgroups [0] after switchTo succeeded")
	}
	fmt.Println("switched")
	os.Exit(0)
}

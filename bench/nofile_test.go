package bench

import (
	"io"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/sluice-server/sluice/bench/report"
)

// TestRaiseNofileReachesChildren: Go raises its own soft descriptor
// limit at start but gives children the limit it started with; after
// raiseNofile, the programs the harness starts (wrk at 10,000
// connections, the servers) get the raised one. The test starts itself
// again with a soft limit of 1,024, as a shell might, and asks a shell
// started after raiseNofile for its limit.
func TestRaiseNofileReachesChildren(t *testing.T) {
	if os.Getenv("SLUICEBENCH_NOFILE_CHILD") == "1" {
		n := raiseNofile()
		out, err := exec.Command("sh", "-c", "ulimit -Sn").Output()
		if err != nil {
			t.Fatal(err)
		}
		os.Stdout.WriteString("raised " + strconv.Itoa(n) + " child " + strings.TrimSpace(string(out)) + "\n")
		return
	}
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		t.Fatal(err)
	}
	if rl.Max < 10300 {
		t.Skipf("the hard descriptor limit is %d: too low to tell 1,024 from a C10K limit", rl.Max)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("prlimit", "--nofile=1024:"+strconv.FormatUint(rl.Max, 10), exe, "-test.run=^TestRaiseNofileReachesChildren$", "-test.v")
	cmd.Env = append(os.Environ(), "SLUICEBENCH_NOFILE_CHILD=1")
	if _, err := exec.LookPath("prlimit"); err != nil {
		t.Skip("prlimit (util-linux) is not installed")
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	want := "raised " + strconv.FormatUint(min(rl.Max, 1<<20), 10) + " child " + strconv.FormatUint(rl.Max, 10)
	if !strings.Contains(string(out), want+"\n") {
		t.Errorf("output %q, want a line %q", out, want)
	}
}

// TestC10KWrkScenario: c10k-wrk is a scenario of the default run, at
// --conns connections (2,000 with --quick), on the 151-byte page and the
// 80 KB file the docroot holds.
func TestC10KWrkScenario(t *testing.T) {
	if !slices.Contains(defaultScenarios, report.C10KWrk) {
		t.Errorf("default scenarios %q lack %s", defaultScenarios, report.C10KWrk)
	}
	root := t.TempDir()
	if err := makeDocroot(root); err != nil {
		t.Fatal(err)
	}
	for _, pg := range c10kPages {
		name := "index.html"
		if pg.path != pathIndex {
			name = strings.TrimPrefix(pg.path, "/")
		}
		fi, err := os.Stat(root + "/" + name)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Size() != int64(pg.size) {
			t.Errorf("%s: %d bytes, want %d", pg.path, fi.Size(), pg.size)
		}
	}
	if c10kPages[1].size != 81920 {
		t.Errorf("the large page is %d bytes, want 81,920 (80 KB)", c10kPages[1].size)
	}
	o, code := parse([]string{"--quick"}, io.Discard)
	if code != -1 || !slices.Contains(o.scenarios, report.C10KWrk) || o.maxConns != 2000 {
		t.Errorf("--quick: exit %d, scenarios %q, conns %d", code, o.scenarios, o.maxConns)
	}
}

package cachetests

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sluice-server/sluice/components"
	"github.com/sluice-server/sluice/sluicetest"
)

var (
	update  = flag.Bool("update", false, "rewrite baseline.txt with the required tests passed in this run")
	nocache = flag.Bool("nocache", false, "run the suite through the proxy alone (no cache in the route); no baseline check")
)

// baselineFile lists the required tests Sluice passes, one id a line.
const baselineFile = "baseline.txt"

// counts is what testdata/count.mjs prints.
type counts struct {
	Tests          int      `json:"tests"`
	Passed         int      `json:"passed"`
	RequiredFailed int      `json:"required_failed"`
	OptionalFailed int      `json:"optional_failed"`
	ChecksYes      int      `json:"checks_yes"`
	ChecksNo       int      `json:"checks_no"`
	Harness        int      `json:"harness"`
	Setup          int      `json:"setup"`
	Dependency     int      `json:"dependency"`
	Retry          int      `json:"retry"`
	Untested       int      `json:"untested"`
	FailedRequired []string `json:"failed_required"`
	PassedRequired []string `json:"passed_required"`
}

func TestSuite(t *testing.T) {
	if _, ok := components.Lookup("cache"); !ok && !*nocache {
		t.Skip("the cache component is not registered")
	}
	node := sluicetest.NeedTool(t, "node", "nodejs")
	if v := nodeVersion(t, node); !v.atLeast(minNode) {
		sluicetest.MissingTool(t, fmt.Sprintf("node %s or later (not %s)", minNode, v), "nodejs")
	}
	if _, err := os.Stat(filepath.Join("testdata", "node_modules", "undici", "package.json")); err != nil {
		sluicetest.MissingTool(t, "undici (`npm ci` in cache/cachetests/testdata)", "npm")
	}
	dir := t.TempDir()
	sluice := buildSluice(t, dir)
	origin := startOrigin(t, node)

	pipeline := "[cache, {proxy: ORIGIN}]"
	if *nocache {
		pipeline = "[{proxy: ORIGIN}]"
	}
	config := filepath.Join(dir, "sluice.yaml")
	yaml := "listen: 127.0.0.1:0\nroutes:\n  - match: /\n    pipeline: " + strings.Replace(pipeline, "ORIGIN", origin, 1) + "\n"
	if err := os.WriteFile(config, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	addr, sluiceLog := startSluice(t, sluice, config)
	base := "http://" + addr
	// A sluice built with -race reports a data race on its stderr as it
	// finds it, whatever the suite's results.
	defer func() {
		if log := sluiceLog.String(); strings.Contains(log, "WARNING: DATA RACE") {
			i := strings.Index(log, "WARNING: DATA RACE")
			t.Errorf("sluice serve found a data race:\n%s", log[i:min(len(log), i+8000)])
		}
	}()

	first := filepath.Join(dir, "results.json")
	runSuite(t, node, base, first)
	c := count(t, node, first)
	t.Logf("tests passed (required and optimal): %d, required tests failed: %d (of %d tests; optional failed %d, checks yes/no %d/%d, dependency failed %d, setup %d, harness %d)",
		c.Passed, c.RequiredFailed, c.Tests, c.OptionalFailed, c.ChecksYes, c.ChecksNo, c.Dependency, c.Setup, c.Harness)
	t.Logf("required tests failed: %s", strings.Join(c.FailedRequired, " "))
	if *update {
		writeBaseline(t, c.PassedRequired, pipeline)
		return
	}
	if *nocache {
		return
	}

	baseline := readBaseline(t)
	lost := missing(baseline, c.PassedRequired)
	if gained := missing(c.PassedRequired, baseline); len(gained) > 0 {
		t.Logf("%d required tests pass that %s does not list (-update adds them): %s", len(gained), baselineFile, strings.Join(gained, " "))
	}
	if len(lost) == 0 {
		return
	}
	// Run those again, once, with what they depend on: a test of the
	// suite that failed by chance (it pauses and counts seconds) passes.
	again := filepath.Join(dir, "again.json")
	runSuite(t, node, base, again, lost...)
	c = count(t, node, first, again)
	if flaky := missing(lost, missing(baseline, c.PassedRequired)); len(flaky) > 0 {
		t.Logf("failed, then passed when run again: %s", strings.Join(flaky, " "))
	}
	if lost = missing(baseline, c.PassedRequired); len(lost) > 0 {
		t.Errorf("%d required tests that %s lists as passed failed, twice: %s", len(lost), baselineFile, strings.Join(lost, " "))
		b, err := os.ReadFile(again)
		if err != nil {
			t.Fatal(err)
		}
		var results map[string]json.RawMessage
		if err := json.Unmarshal(b, &results); err != nil {
			t.Fatalf("%s: %v", again, err)
		}
		for _, id := range lost {
			if r := string(results[id]); r == "true" {
				t.Logf("%s: passed, but a test it depends on failed", id)
			} else {
				t.Logf("%s: %s", id, r)
			}
		}
	}
}

// minNode is the oldest Node the suite runs on: undici 7, which it
// needs for its tests of interim responses, needs it.
var minNode = version{20, 18, 1}

// version is a Node version: major, minor, patch.
type version [3]int

func (v version) atLeast(w version) bool {
	return slices.Compare(v[:], w[:]) >= 0
}

func (v version) String() string {
	return fmt.Sprintf("%d.%d.%d", v[0], v[1], v[2])
}

// nodeVersion returns the version of the node program.
func nodeVersion(t *testing.T, node string) version {
	t.Helper()
	out, err := exec.Command(node, "--version").Output()
	if err != nil {
		t.Fatalf("node --version: %v", err)
	}
	var v version
	if _, err := fmt.Sscanf(strings.TrimSpace(string(out)), "v%d.%d.%d", &v[0], &v[1], &v[2]); err != nil {
		t.Fatalf("node --version printed %q: %v", out, err)
	}
	return v
}

// buildSluice builds the sluice command into dir, with the race
// detector when the test has it, and returns its path.
func buildSluice(t *testing.T, dir string) string {
	t.Helper()
	bin := filepath.Join(dir, "sluice")
	args := []string{"build", "-o", bin}
	if raceEnabled {
		args = append(args, "-race")
	}
	args = append(args, "github.com/sluice-server/sluice/cmd/sluice")
	out, err := exec.Command("go", args...).CombinedOutput()
	if err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	if raceEnabled && os.Getenv("GORACE") == "" {
		// A race-enabled binary sleeps a second at exit by default.
		t.Setenv("GORACE", "atexit_sleep_ms=100")
	}
	return bin
}

// startOrigin starts the suite's origin server on a free loopback port
// and returns its URL (http://127.0.0.1:PORT). It is killed when the
// test ends.
func startOrigin(t *testing.T, node string) string {
	t.Helper()
	cmd := exec.Command(node, "origin.mjs")
	cmd.Dir = "testdata"
	var stderr syncBuffer
	cmd.Stderr = &stderr
	line := regexp.MustCompile(`^listening (http://127\.0\.0\.1:\d+)/$`)
	url, _ := watch(t, cmd, "the suite's origin server", line, &stderr)
	return url
}

// startSluice runs `sluice serve -c config` and returns the address it
// listens on and its log (stderr). It is killed when the test ends; the
// end of its log is shown if the test fails.
func startSluice(t *testing.T, bin, config string) (string, *syncBuffer) {
	t.Helper()
	cmd := exec.Command(bin, "serve", "-c", config)
	cmd.Env = append(os.Environ(), "SLUICE_ALLOW_ROOT=1") // the suite's config names no user
	var stdout syncBuffer
	cmd.Stdout = &stdout
	line := regexp.MustCompile(`msg=listening addr=(\S+)`)
	return watch(t, cmd, "sluice serve", line, &stdout)
}

// watch starts cmd, reads lines from what it writes to the stream that
// other does not take, and returns the first submatch of the first line
// that matches line, and a buffer that keeps receiving those lines. The
// command is killed when the test ends, and the end of what it wrote is
// logged if the test failed.
func watch(t *testing.T, cmd *exec.Cmd, name string, line *regexp.Regexp, other *syncBuffer) (string, *syncBuffer) {
	t.Helper()
	r, w := io.Pipe()
	log := new(syncBuffer)
	if cmd.Stdout == nil {
		cmd.Stdout = w
	} else {
		cmd.Stderr = w
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	exited := make(chan struct{})
	go func() {
		cmd.Wait()
		w.Close()
		close(exited)
	}()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-exited
		if t.Failed() {
			t.Logf("%s wrote (the last %d lines):\n%s", name, tailLines, tail(log.String()+other.String()))
		}
	})
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(r)
		sent := false
		for sc.Scan() {
			log.Write(append(sc.Bytes(), '\n'))
			if m := line.FindStringSubmatch(sc.Text()); m != nil && !sent {
				found <- m[1]
				sent = true
			}
		}
		io.Copy(io.Discard, r)
		if !sent {
			close(found)
		}
	}()
	select {
	case s, ok := <-found:
		if !ok {
			t.Fatalf("%s exited before it listened: %v\n%s%s", name, cmd.ProcessState, log.String(), other.String())
		}
		return s, log
	case <-time.After(60 * time.Second):
		t.Fatalf("%s did not say it listened within a minute:\n%s%s", name, log.String(), other.String())
	}
	return "", nil
}

// runSuite runs the suite (or the tests ids and their dependencies)
// through the cache at base and writes the results to file.
func runSuite(t *testing.T, node, base, file string, ids ...string) {
	t.Helper()
	// A bound for a hung run only: the whole suite takes about a minute.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, append([]string{"run.mjs", base}, ids...)...)
	cmd.Dir = "testdata"
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("node run.mjs %s: %v\n%s", base, err, stderr.Bytes())
	}
	if stderr.Len() > 0 {
		t.Logf("node run.mjs %s wrote on stderr:\n%s", base, stderr.Bytes())
	}
	if err := os.WriteFile(file, stdout.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// count classifies the results in files (a later file's result for a
// test replacing an earlier one's) with testdata/count.mjs.
func count(t *testing.T, node string, files ...string) counts {
	t.Helper()
	cmd := exec.Command(node, append([]string{"count.mjs"}, files...)...)
	cmd.Dir = "testdata"
	out, err := cmd.Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("node count.mjs: %v\n%s", err, stderr)
	}
	var c counts
	if err := json.Unmarshal(out, &c); err != nil {
		t.Fatalf("node count.mjs printed %q: %v", out, err)
	}
	if c.Tests == 0 || c.Untested == c.Tests {
		t.Fatalf("the suite ran no test: %s", out)
	}
	return c
}

func readBaseline(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile(baselineFile)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, l := range strings.Split(string(b), "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			ids = append(ids, l)
		}
	}
	if len(ids) == 0 {
		t.Fatalf("%s lists no test", baselineFile)
	}
	return ids
}

func writeBaseline(t *testing.T, ids []string, pipeline string) {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "# The required tests of the cache test suite that Sluice passed, %d, with\n", len(ids))
	fmt.Fprintf(&b, "# the pipeline %s: TestSuite fails when one of\n", pipeline)
	b.WriteString("# them fails. Written by go test ./cache/cachetests -run TestSuite -update\n")
	for _, id := range ids {
		b.WriteString(id + "\n")
	}
	if err := os.WriteFile(baselineFile, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote %s: %d required tests passed", baselineFile, len(ids))
}

// missing returns the ids in want that are not in have.
func missing(want, have []string) []string {
	var out []string
	for _, id := range want {
		if !slices.Contains(have, id) {
			out = append(out, id)
		}
	}
	return out
}

// tailLines is how many lines of a server's log a failure shows.
const tailLines = 40

// tail returns the last tailLines lines of s.
func tail(s string) string {
	lines := strings.SplitAfter(strings.TrimSuffix(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-tailLines):], "") + "\n"
}

// syncBuffer is a bytes.Buffer safe for concurrent use.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// A smoke round: Sluice (and nginx, when installed, or always with CI
// set) over h2c and TLS for half a second each, every call answered as
// sent, and the table written with a row for each.
func TestSmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("starts servers")
	}
	bin := filepath.Join(t.TempDir(), "sluice")
	build := exec.Command("go", "build", "-o", bin, "./cmd/sluice")
	build.Dir = "../../.."
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v: %s", err, out)
	}
	nginx := "nginx"
	if _, err := exec.LookPath(nginx); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("CI is set and nginx is missing: %v", err)
		}
		nginx = ""
	}
	core := "1"
	if runtime.NumCPU() < 2 {
		core = "0"
	}
	out := t.TempDir()
	o := options{sluice: bin, nginx: nginx, conns: 4, calls: 16, size: 256,
		duration: 500 * time.Millisecond, warmup: 100 * time.Millisecond,
		rounds: 1, core: core, modes: []string{"h2c", "tls"}, out: out}
	if err := o.check(); err != nil {
		t.Fatal(err)
	}
	sums, err := run(o, "grpcload smoke")
	if err != nil {
		t.Fatal(err)
	}
	want := 2
	if nginx != "" {
		want = 4
	}
	if len(sums) != want {
		t.Fatalf("%d servers measured, want %d", len(sums), want)
	}
	table, err := os.ReadFile(filepath.Join(out, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range sums {
		if len(s.runs) != 1 {
			t.Fatalf("%s %s: %d runs, want 1", s.name, s.mode, len(s.runs))
		}
		r := s.runs[0]
		if r.errs != 0 || r.calls == 0 {
			t.Errorf("%s %s: %d calls answered, %d errors (%s); want some and none", s.name, s.mode, r.calls, r.errs, r.firstErr)
		}
		if r.p50 <= 0 || r.p99 < r.p50 {
			t.Errorf("%s %s: p50 %v, p99 %v", s.name, s.mode, r.p50, r.p99)
		}
		if !strings.Contains(string(table), "| "+s.name+" | ") {
			t.Errorf("README.md has no row for %s:\n%s", s.name, table)
		}
	}
	if nginx != "" && !strings.Contains(string(table), "Sluice's CPU per call over nginx's") {
		t.Errorf("README.md has no ratio:\n%s", table)
	}
}

// The server's CPU includes its children's: nginx's worker runs below
// its master.
func TestDescendants(t *testing.T) {
	cmd := exec.Command("sh", "-c", "sleep 30 & sleep 30 & wait")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		for _, p := range descendants(cmd.Process.Pid) {
			if pr, err := os.FindProcess(p); err == nil {
				pr.Kill()
			}
		}
		cmd.Process.Kill()
		cmd.Wait()
	}()
	deadline := time.Now().Add(10 * time.Second)
	for len(descendants(cmd.Process.Pid)) < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("descendants of sh: %v, want its two sleeps", descendants(cmd.Process.Pid))
		}
		time.Sleep(10 * time.Millisecond)
	}
	if d := descendants(cmd.Process.Pid); len(d) != 2 || slices.Contains(d, cmd.Process.Pid) {
		t.Errorf("descendants of sh: %v, want its two sleeps alone", d)
	}
	if _, err := treeTicks(cmd.Process.Pid); err != nil {
		t.Error(err)
	}
}

func TestCheck(t *testing.T) {
	ok := options{conns: 10, calls: 50, size: 256, rounds: 3, duration: time.Second, core: "1", modes: []string{"h2c", "tls"}}
	for _, tc := range []struct {
		name string
		edit func(*options)
		bad  bool
	}{
		{"defaults", func(*options) {}, false},
		{"no connections", func(o *options) { o.conns = 0 }, true},
		{"fewer calls than connections", func(o *options) { o.calls = 5 }, true},
		{"no rounds", func(o *options) { o.rounds = 0 }, true},
		{"no duration", func(o *options) { o.duration = 0 }, true},
		{"unknown mode", func(o *options) { o.modes = []string{"h3"} }, true},
		{"h2c alone", func(o *options) { o.modes = []string{"h2c"} }, false},
		{"bad core", func(o *options) { o.core = "one" }, true},
	} {
		o := ok
		tc.edit(&o)
		if err := o.check(); (err != nil) != tc.bad {
			t.Errorf("%s: check() = %v, want error %v", tc.name, err, tc.bad)
		}
	}
}

func TestReport(t *testing.T) {
	o := options{conns: 10, calls: 50, size: 256, rounds: 3, duration: time.Second, modes: []string{"h2c"}, core: "1"}
	sums := []summary{
		{name: "sluice", mode: "h2c", version: "sluice devel", runs: []result{{calls: 1000, secs: 1, cpuUS: 30}, {calls: 1200, secs: 1, cpuUS: 20}, {calls: 900, secs: 1, cpuUS: 50}}},
		{name: "nginx", mode: "h2c", version: "nginx/1.22.1", runs: []result{{calls: 800, secs: 1, cpuUS: 40}, {calls: 800, secs: 1, cpuUS: 40, errs: 2, firstErr: "boom"}, {calls: 800, secs: 1, cpuUS: 40}}},
	}
	got := report(o, "grpcload", sums)
	for _, want := range []string{
		"| sluice | sluice devel | h2c (prior knowledge) | 1000 | **30.0** (20.0–50.0) |",
		"| nginx | nginx/1.22.1 | h2c (prior knowledge) | 800 | **40.0** (40.0–40.0) | 0.00 ms | 0.00 ms | 2 |",
		"at most 1 is the target): h2c 0.75.",
		"nginx h2c, first error: boom",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("report lacks %q:\n%s", want, got)
		}
	}
}

func TestCPUList(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []int // nil: an error
	}{
		{"1", []int{1}},
		{"0,2", []int{0, 2}},
		{"0-3,6", []int{0, 1, 2, 3, 6}},
		{"1023", []int{1023}},
		{"", nil},
		{"1,", nil},
		{"-1", nil},
		{"3-1", nil},
		{"1-", nil},
		{"1024", nil},
		{"0-1024", nil},
		{"a", nil},
	} {
		got, err := cpuList(tc.in)
		if tc.want == nil {
			if err == nil {
				t.Errorf("cpuList(%q) = %v, want an error", tc.in, got)
			}
			continue
		}
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("cpuList(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
	}
}

// FuzzCPUList: a list is refused or gives CPUs within bounds, at least
// one, and writing them back one by one parses to the same.
func FuzzCPUList(f *testing.F) {
	for _, s := range []string{"1", "0,2", "0-3,6", "", "3-1", "0-1023", "1,,2"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		cpus, err := cpuList(s)
		if err != nil {
			return
		}
		if len(cpus) == 0 {
			t.Fatalf("cpuList(%q) = no CPUs and no error", s)
		}
		parts := make([]string, len(cpus))
		for i, c := range cpus {
			if c < 0 || c > maxCPU {
				t.Fatalf("cpuList(%q) has CPU %d", s, c)
			}
			parts[i] = strconv.Itoa(c)
		}
		again, err := cpuList(strings.Join(parts, ","))
		if err != nil || !slices.Equal(again, cpus) {
			t.Fatalf("cpuList(%q) = %v, but its rewriting gives %v, %v", s, cpus, again, err)
		}
	})
}

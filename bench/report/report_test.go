package report_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sluice-server/sluice/bench/report"
)

// TestWrite renders a report from made-up samples and checks that each
// section and figure is there. (Few scenarios with figures: rendering
// PNGs is slow under the race detector.)
func TestWrite(t *testing.T) {
	rep := &report.Report{
		Command: "sluicebench --quick", Reproduce: "go -C bench run ./cmd/sluicebench --quick=true",
		Started: time.Now(), Rounds: 2, Duration: time.Second, Sweep: time.Second,
		Peers: []report.PeerInfo{
			{Name: "sluice", About: "it", Version: "dev", Command: "sluice serve"},
			{Name: "nginx", About: "it", Version: "1.22", Command: "nginx", Config: "daemon off;"},
			{Name: "caddy", About: "it", Skipped: "caddy is not installed"},
		},
		Machine:   []string{"CPU: test"},
		PipeBench: "BenchmarkPipeline/Chain-1  1000000  1000 ns/op",
		Notes:     []string{"a note"},
	}
	add := func(sc string, x float64, f func(*report.Sample)) {
		for round := 1; round <= 2; round++ {
			for i, srv := range []string{"sluice", "nginx"} {
				s := report.Sample{Scenario: sc, Server: srv, Round: round, X: x, RPS: 1000 * float64(i+round), OK: 100, CPUus: 10,
					P50ms: 1, P99ms: 2, MeanMs: 1.5, MaxMs: 3, RSS: 1 << 20, MBps: 5}
				if f != nil {
					f(&s)
				}
				rep.Samples = append(rep.Samples, s)
			}
		}
	}
	for _, c := range []float64{1, 10, 100, 1000} {
		add(report.Warp, c, nil)
	}
	add(report.Wrk, 100, nil)
	add(report.AB, 500, func(s *report.Sample) { s.Errors = 5 })
	for _, n := range []float64{1000, 10000} {
		add(report.Idle, n, func(s *report.Sample) { s.PerConn = 4000 })
	}

	dir := t.TempDir()
	path, err := report.Write(dir, rep)
	if err != nil {
		t.Fatal(err)
	}
	md, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"## Headline", "## Warp's", "## Cross-check with wrk",
		"`ab -n 5000 -c 500`", "## Idle memory", "## Chain vs ProcNetwork",
		"skipped: caddy is not installed", "daemon off;", "a note", "--scenarios=warp"} {
		if !strings.Contains(string(md), want) {
			t.Errorf("README.md lacks %q", want)
		}
	}
	for _, fig := range []string{"headline.png", "warp.png", "warp-cpu.png", "idle.png", "results.json"} {
		fi, err := os.Stat(filepath.Join(dir, fig))
		if err != nil || fi.Size() == 0 {
			t.Errorf("%s: %v", fig, err)
		}
		if !strings.Contains(string(md), fig) {
			t.Errorf("README.md does not link %s", fig)
		}
	}
	if strings.Contains(string(md), "## File sizes") {
		t.Error("README.md has a section for a scenario that did not run")
	}
}

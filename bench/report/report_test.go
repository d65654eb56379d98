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
		"skipped: caddy is not installed", "daemon off;", "a note", "--scenarios=warp",
		// The headline's throughput with its latency beside it.
		"| keep-alive c=100 req/s (wrk) | p50 / p99 ms | CPU-µs/req |", "| sluice | 1,500 <sub>1,000–2,000</sub> | 1.00 / 2.00 | 10.0 |",
		"p50 / p99 latency (ms):", "| sluice | 1,500 <sub>1,000–2,000</sub> · 10.0 · 1.00 / 2.00 |",
		"| server CPU-µs/req | p50 / p99 ms |"} {
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

// TestWriteWorkers renders a workers-only report and checks the figures
// it computes: the paper's table beside this run's, the same-run ratio
// from 1 to 2 workers, and the memory per worker.
func TestWriteWorkers(t *testing.T) {
	rep := &report.Report{
		Command: "sluicebench --scenarios workers", Reproduce: "go -C bench run ./cmd/sluicebench",
		Started: time.Now(), Rounds: 2, Duration: time.Second, Sweep: time.Second,
		Scenarios: []string{report.Workers}, ClientCPU: "0", WorkersCPU: "0-1",
		Machine: []string{"sluice commit: abc1234"},
		Peers: []report.PeerInfo{
			{Name: "sluice", About: "base"},
			{Name: "nginx", About: "base"},
			{Name: "apache-default", About: "Apache", Command: "apache2"},
			{Name: "lighttpd", About: "not in this scenario"},
			{Name: "nginx-w1", Base: "nginx", Workers: 1, Command: "nginx"},
			{Name: "nginx-w2", Base: "nginx", Workers: 2, Command: "nginx"},
			{Name: "sluice-w0", Base: "sluice", Workers: 0, Command: "sluice serve"},
			{Name: "sluice-w1", Base: "sluice", Workers: 1, Command: "sluice serve --workers 1"},
			{Name: "sluice-w2", Base: "sluice", Workers: 2, Command: "sluice serve --workers 2"},
			{Name: "sluice-w10", Base: "sluice", Workers: 10, Command: "sluice serve --workers 10"},
		},
	}
	const mib = 1 << 20
	tree := func(workers int, perWorker int64) *report.TreeMemory {
		m := &report.TreeMemory{Master: report.ProcMem{RSS: 10 * mib, PSS: 4 * mib}}
		for range workers {
			m.Workers = append(m.Workers, report.ProcMem{RSS: 10 * mib, PSS: perWorker})
		}
		return m
	}
	for round := 1; round <= 2; round++ {
		for _, v := range []struct {
			name    string
			workers int
			rps     float64
		}{{"sluice-w0", 0, 40000}, {"sluice-w1", 1, 40000}, {"sluice-w2", 2, 60000}, {"sluice-w10", 10, 60000},
			{"nginx-w1", 1, 30000}, {"nginx-w2", 2, 45000}, {"apache-default", 0, 10000}} {
			x := float64(v.workers)
			rps := v.rps * float64(round) // the machine twice as fast in round 2: ratios hold
			rep.Samples = append(rep.Samples,
				report.Sample{Scenario: report.Workers, Server: v.name, Round: round, X: x, Tool: "wrk", RPS: rps, OK: 1000, CPUus: 10},
				report.Sample{Scenario: report.WorkersAB, Server: v.name, Round: round, X: x, Tool: "ab", RPS: 10000, OK: 5000, MBps: 2.097152, MeanMs: 50},
				report.Sample{Scenario: report.WorkersMem, Server: v.name, Round: round, X: x, Tool: "smaps_rollup",
					Fresh: tree(v.workers, 2*mib), Loaded: tree(v.workers, 3*mib)})
		}
	}
	dir := t.TempDir()
	path, err := report.Write(dir, rep)
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	md := string(data)
	for _, want := range []string{
		"at commit abc1234", "## Master and workers", "pinned to CPU 0", "`taskset -c 0-1`",
		// The paper's column, then this run's: 1,000 / 10,000 req/s = 0.100 ms; 2 MB/s = 2.0 Mbytes/sec.
		"| Mean time per request (ms) | 4.206 | **0.100** | 0.197 | **0.100** |",
		"| Transfer rate (Mbytes/sec) | 34 | **2.0** | 729 | **2.0** |",
		"| Failed requests | 28 | **0** |",
		"sluice ×1.50 requests/s", "nginx ×1.50 requests/s",
		// Fresh, 2 workers: master 4 MiB PSS, workers 2 each, total 8.
		"| sluice, 2 workers | 3 | 10.0 | 4.0 | 10.0 | 2.0 | 30.0 | 8.0 |",
		"| sluice, one process | 1 | 10.0 | 4.0 | – | – | 10.0 | 4.0 |",
		"sluice 2.0 MiB fresh, 3.0 MiB after load (total PSS from 1 to 10 workers, ÷ 9)",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("README.md lacks %q", want)
		}
	}
	for _, fig := range []string{"workers-rps.png", "workers-cpu.png", "workers-ab.png", "workers-memory.png"} {
		if fi, err := os.Stat(filepath.Join(dir, fig)); err != nil || fi.Size() == 0 {
			t.Errorf("%s: %v", fig, err)
		}
	}
	if strings.Contains(md, "## Headline") || strings.Contains(md, "| lighttpd |") {
		t.Error("README.md has the headline, or a peer that did not run, in a workers-only report")
	}
	if i, j := strings.Index(md, "| sluice, 10 workers |"), strings.Index(md, "| nginx, 1 worker |"); i < 0 || j < i {
		t.Error("rows are not ordered sluice by workers, then nginx")
	}
}
